/* write_acl.c: deleting chunks and changing the ACLs of existing chunks.
 * Relies on the shared write path in write_int.h; same all-or-nothing rules as put. */
#include "base/mem.h"
#include "query/chunkrec.h"
#include "query/write_int.h"
#include "store/history.h"

#include <jansson.h>
#include <string.h>

static int delete_locked(engine_t *e, coll_t *c, const char *const *ids, size_t n, uint32_t *rows,
                         size_t *nrows, uint64_t *rev, cdn_err_t *err)
{
    unsigned char key[COLL_KEY_MAX], rk[8];
    store_txn_t *t;
    int rc = CDN_OK;
    for (size_t i = 0; i < n && rc == CDN_OK; i++)
        rc = write_id_check(ids[i], i, err);
    if (rc || (rc = store_txn_begin(e->store, 1, &t, err)) != 0)
        return rc;
    *nrows = 0;
    for (size_t i = 0; i < n && rc == CDN_OK; i++) {
        size_t klen = coll_chunk_key(c->cfg.id, ids[i], key, sizeof key), vlen;
        const void *v;
        if (store_get(t, STORE_CHUNKS, key, klen, &v, &vlen) != CDN_OK)
            continue; /* already gone (or named twice in this batch) */
        if ((rc = chunkrec_row(v, vlen, &rows[*nrows])) != 0)
            break;
        coll_row_key(c->cfg.id, rows[*nrows], rk);
        (*nrows)++;
        if ((rc = store_del(t, STORE_CHUNKS, key, klen)) == CDN_OK &&
            (rc = store_del(t, STORE_ROWS, rk, 8)) == CDN_OK &&
            (rc = store_del(t, STORE_ACLS, rk, 8)) == CDN_OK)
            rc = history_acl_put(t, c->cfg.id, ids[i], atomic_load(&e->revision) + 1, NULL, 0);
    }
    if (rc) {
        store_txn_abort(t);
        return cdn_err_set(err, rc, "cannot delete: %s", cdn_strerror(rc));
    }
    if (*nrows == 0) { /* nothing to do: no new revision */
        store_txn_abort(t);
        *rev = atomic_load(&e->revision);
        return CDN_OK;
    }
    if ((rc = write_commit(e, t, rev, err)) != 0)
        return rc;
    pthread_rwlock_wrlock(&c->lock);
    for (size_t i = 0; i < *nrows; i++) {
        if (c->hnsw) {
            hnsw_delete(c->hnsw, rows[i]);
            c->hnsw_dirty = 1;
        }
        acl_index_remove(c->acl, rows[i]);
        textidx_delete_doc(c->text, rows[i]);
        c->text_dirty = 1;
        coll_row_clear(c, rows[i]);
        c->live--;
    }
    atomic_store(&e->revision, *rev);
    pthread_rwlock_unlock(&c->lock);
    coll_graph_repair_due(c);
    return CDN_OK;
}

int write_delete(engine_t *e, const char *name, const char *const *ids, size_t n, size_t *deleted,
                 uint64_t *rev, cdn_err_t *err)
{
    uint32_t *rows;
    size_t nrows = 0;
    uint64_t r = 0;
    coll_t *c;
    int rc;
    if (n > WRITE_BATCH_MAX)
        return cdn_err_set(err, CDN_ERR_LIMIT, "batch of %zu ids; the limit is %d", n,
                           WRITE_BATCH_MAX);
    if (!(rows = cdn_malloc((n ? n : 1) * sizeof *rows)))
        return cdn_err_set(err, CDN_ERR_NOMEM, "out of memory");
    pthread_mutex_lock(&e->write_lock);
    if ((rc = engine_coll_get(e, name, &c, err)) == CDN_OK) {
        rc = delete_locked(e, c, ids, n, rows, &nrows, &r, err);
        coll_unref(c);
    }
    pthread_mutex_unlock(&e->write_lock);
    cdn_free(rows);
    if (rc == CDN_OK) {
        if (deleted)
            *deleted = nrows;
        if (rev)
            *rev = r;
    }
    return rc;
}

/* Rewrites one chunk's record and ACL row inside t. */
static int set_one(coll_t *c, store_txn_t *t, prep_t *p, uint64_t rev, cdn_err_t *err)
{
    unsigned char key[COLL_KEY_MAX], rk[8];
    size_t klen = coll_chunk_key(c->cfg.id, p->in->id, key, sizeof key), vlen, reclen;
    const void *v;
    json_t *obj;
    char *rec;
    int rc;
    if (store_get(t, STORE_CHUNKS, key, klen, &v, &vlen) != CDN_OK)
        return cdn_err_set(err, CDN_ERR_NOT_FOUND, "no chunk \"%s\" in collection \"%s\"",
                           p->in->id, c->cfg.name);
    if ((rc = chunkrec_decode(v, vlen, &p->row, &obj)) != 0)
        return cdn_err_set(err, rc, "chunk \"%s\" is stored corrupt", p->in->id);
    chunkrec_access_t acc = write_access(p);
    rc = chunkrec_set_access(obj, &acc) ? CDN_ERR_NOMEM
                                        : chunkrec_reencode(p->row, obj, &rec, &reclen);
    json_decref(obj);
    if (rc)
        return cdn_err_set(err, rc, "out of memory");
    coll_row_key(c->cfg.id, p->row, rk);
    rc = store_put(t, STORE_CHUNKS, key, klen, rec, reclen);
    cdn_free(rec);
    if (rc == CDN_OK)
        rc = store_put(t, STORE_ACLS, rk, 8, p->packed, acl_packed_len(p->packed) * 4);
    if (rc == CDN_OK)
        rc = history_acl_put(t, c->cfg.id, p->in->id, rev, p->packed, acl_packed_len(p->packed));
    return rc ? cdn_err_set(err, rc, "cannot store the ACL: %s", cdn_strerror(rc)) : CDN_OK;
}

/* Reads the tenant and the object each chunk keeps (an ACL change moves a chunk to neither),
 * under the engine's write lock, so no write can change it before set_one stores the ACL. */
static int tenants_of(engine_t *e, coll_t *c, prep_t *p, size_t n, cdn_arena_t *a, cdn_err_t *err)
{
    store_txn_t *t = NULL;
    int rc = store_txn_begin(e->store, 0, &t, err);
    if (rc)
        return rc;
    for (size_t i = 0; i < n && rc == CDN_OK; i++) {
        unsigned char key[COLL_KEY_MAX];
        size_t klen = coll_chunk_key(c->cfg.id, p[i].in->id, key, sizeof key), vlen;
        const void *v;
        json_t *obj;
        if (store_get(t, STORE_CHUNKS, key, klen, &v, &vlen) != CDN_OK)
            rc = cdn_err_set(err, CDN_ERR_NOT_FOUND, "no chunk \"%s\" in collection \"%s\"",
                             p[i].in->id, c->cfg.name);
        else if ((rc = chunkrec_decode(v, vlen, &p[i].row, &obj)) != 0)
            rc = cdn_err_set(err, rc, "chunk \"%s\" is stored corrupt", p[i].in->id);
        else {
            const char *tenant = json_string_value(json_object_get(obj, "tenant"));
            const char *object = json_string_value(json_object_get(obj, "object"));
            if ((tenant && !(p[i].tenant = cdn_arena_strdup(a, tenant))) ||
                (object && !(p[i].object = cdn_arena_strdup(a, object))))
                rc = cdn_err_set(err, CDN_ERR_NOMEM, "out of memory");
            json_decref(obj);
        }
    }
    store_txn_abort(t);
    return rc;
}

static int set_acl_locked(engine_t *e, coll_t *c, const write_acl_t *ch, size_t n, prep_t *p,
                          write_chunk_t *ids, cdn_arena_t *a, uint64_t *rev, cdn_err_t *err)
{
    store_txn_t *t;
    int rc = CDN_OK;
    for (size_t i = 0; i < n && rc == CDN_OK; i++) {
        ids[i].id = ch[i].id;
        p[i].in = &ids[i];
        if ((rc = write_id_check(ch[i].id, i, err)) == CDN_OK)
            rc = write_prep_acl(&p[i], ch[i].allowed, ch[i].n_allowed, ch[i].denied, ch[i].n_denied,
                                ch[i].labels, ch[i].n_labels, a, err);
    }
    if (rc || (rc = tenants_of(e, c, p, n, a, err)) != 0)
        return rc;
    pthread_rwlock_wrlock(&e->meta_lock);
    for (size_t i = 0; i < n && rc == CDN_OK; i++)
        rc = write_pack_acl(e, &p[i], a);
    pthread_rwlock_unlock(&e->meta_lock);
    if (rc == CDN_ERR_LIMIT)
        return cdn_err_set(err, rc, "chunks' objects name more than %d permissions",
                           ENGINE_OBJECT_PERMS_MAX);
    if (rc == CDN_OK && (rc = store_txn_begin(e->store, 1, &t, err)) == CDN_OK) {
        for (size_t i = 0; i < n && rc == CDN_OK; i++)
            rc = set_one(c, t, &p[i], atomic_load(&e->revision) + 1, err);
        if (rc == CDN_OK && (rc = write_persist_principals(e, t)) != 0)
            cdn_err_set(err, rc, "cannot store principals");
        rc = rc ? (store_txn_abort(t), rc) : write_commit(e, t, rev, err);
        if (rc == CDN_OK)
            e->principals_saved = e->principals.len;
    }
    if (rc)
        return rc == CDN_ERR_NOMEM ? cdn_err_set(err, rc, "out of memory") : rc;
    pthread_rwlock_wrlock(&c->lock);
    for (size_t i = 0; i < n; i++) {
        if (p[i].has_object)
            atomic_store(&c->has_objects, 1);
        if (acl_index_set(c->acl, p[i].row, p[i].packed))
            c->broken = 1;
    }
    atomic_store(&e->revision, *rev);
    pthread_rwlock_unlock(&c->lock);
    return CDN_OK;
}

int write_set_acl(engine_t *e, const char *name, const write_acl_t *changes, size_t n,
                  uint64_t *rev, cdn_err_t *err)
{
    cdn_arena_t a;
    prep_t *p;
    write_chunk_t *ids;
    coll_t *c;
    uint64_t r = 0;
    int rc;
    if (n == 0 || n > WRITE_BATCH_MAX)
        return cdn_err_set(err, n ? CDN_ERR_LIMIT : CDN_ERR_INVALID,
                           "ACL batch of %zu changes; give 1 to %d", n, WRITE_BATCH_MAX);
    p = cdn_calloc(n, sizeof *p);
    ids = cdn_calloc(n, sizeof *ids);
    if (!p || !ids) {
        cdn_free(p);
        cdn_free(ids);
        return cdn_err_set(err, CDN_ERR_NOMEM, "out of memory");
    }
    cdn_arena_init(&a, 64 * 1024, 0);
    pthread_mutex_lock(&e->write_lock);
    if ((rc = engine_coll_get(e, name, &c, err)) == CDN_OK) {
        rc = set_acl_locked(e, c, changes, n, p, ids, &a, &r, err);
        coll_unref(c);
    }
    pthread_mutex_unlock(&e->write_lock);
    cdn_arena_free(&a);
    cdn_free(p);
    cdn_free(ids);
    if (rc == CDN_OK && rev)
        *rev = r;
    return rc;
}
