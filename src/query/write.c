/* write.c: put, delete and ACL changes: validate everything, one LMDB transaction, then apply
 * to memory under the collection's write lock and publish the revision.
 * Relies on query/engine, store/ and jansson for the chunk record. */
#include "query/write.h"
#include "base/arena.h"
#include "base/cmp.h"
#include "base/mem.h"
#include "base/testhook.h"
#include "base/utf8.h"
#include "query/chunkrec.h"
#include "query/write_int.h"
#include "store/history.h"

#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int write_id_check(const char *id, size_t index, cdn_err_t *err)
{
    char who[40] = "the chunk";
    size_t n, at;
    if (index != WRITE_NO_INDEX)
        snprintf(who, sizeof who, "chunk %zu", index);
    if (!id)
        return cdn_err_set(err, CDN_ERR_INVALID, "%s has no id; every chunk needs one", who);
    n = strlen(id);
    if (n == 0 || n > WRITE_ID_MAX)
        return cdn_err_set(err, CDN_ERR_INVALID, "%s: id must be 1 to %d bytes; got %zu", who,
                           WRITE_ID_MAX, n);
    if (!cdn_utf8_valid(id, n, &at))
        return cdn_err_set(err, CDN_ERR_INVALID, "%s: id is not UTF-8 (byte %zu)", who, at);
    if (cdn_utf8_has_control(id, n, &at))
        return cdn_err_set(err, CDN_ERR_INVALID, "%s: id has a control character at byte %zu", who,
                           at);
    return CDN_OK;
}

static int prep_names(prep_t *p, int which, const char *const *names, size_t n, cdn_arena_t *a,
                      cdn_err_t *err)
{
    char canon[ACL_PRINCIPAL_MAX + 16];
    if (!(p->names[which] = cdn_arena_alloc(a, (n + 1) * sizeof(char *))))
        return cdn_err_set(err, CDN_ERR_NOMEM, "out of memory");
    for (size_t i = 0; i < n; i++) {
        int rc;
        if (!names[i])
            return cdn_err_set(err, CDN_ERR_INVALID, "chunk \"%s\": %s principal %zu is NULL",
                               p->in->id, which ? "denied" : "allowed", i);
        if ((rc = acl_principal_canon(names[i], canon, sizeof canon, err)) != 0) {
            char inner[CDN_ERR_MSG_MAX] = "";
            if (err)
                memcpy(inner, err->msg, sizeof inner);
            inner[sizeof inner - 1] = '\0';
            return cdn_err_set(err, rc, "chunk \"%.100s\": %.150s", p->in->id, inner);
        }
        if (!(p->names[which][p->nnames[which]++] = cdn_arena_strdup(a, canon)))
            return cdn_err_set(err, CDN_ERR_NOMEM, "out of memory");
    }
    return CDN_OK;
}

/* A tag (tenant or label) of chunk p: checked by acl_tag_check, copied into the arena. */
static int prep_tag(prep_t *p, const char *name, const char *what, char **out, cdn_arena_t *a,
                    cdn_err_t *err)
{
    char field[48];
    cdn_err_t inner;
    snprintf(field, sizeof field, "%s", what);
    if (acl_tag_check(name, field, &inner))
        return cdn_err_set(err, inner.code, "chunk \"%.100s\": %.200s", p->in->id, inner.msg);
    if (!(*out = cdn_arena_strdup(a, name)))
        return cdn_err_set(err, CDN_ERR_NOMEM, "out of memory");
    return CDN_OK;
}

int write_prep_tenant(prep_t *p, const char *tenant, const char *object, cdn_arena_t *a,
                      cdn_err_t *err)
{
    char *t = NULL, canon[ACL_PRINCIPAL_MAX + 8];
    cdn_err_t inner;
    int rc = tenant ? prep_tag(p, tenant, "tenant", &t, a, err) : CDN_OK;
    p->tenant = t;
    p->object = NULL;
    if (rc || !object)
        return rc;
    if (acl_object_principal(object, canon, sizeof canon, &inner))
        return cdn_err_set(err, CDN_ERR_INVALID, "chunk \"%.100s\": %.250s", p->in->id, inner.msg);
    if (!(p->object = cdn_arena_strdup(a, object)))
        return cdn_err_set(err, CDN_ERR_NOMEM, "out of memory");
    return CDN_OK;
}

int write_prep_acl(prep_t *p, const char *const *allowed, size_t na, const char *const *denied,
                   size_t nd, const char *const *labels, size_t nl, cdn_arena_t *a, cdn_err_t *err)
{
    int rc;
    if (na > ACL_MAX_PRINCIPALS || nd > ACL_MAX_PRINCIPALS || nl > ACL_MAX_PRINCIPALS ||
        na + nd + nl > ACL_MAX_PRINCIPALS)
        return cdn_err_set(err, CDN_ERR_LIMIT,
                           "chunk \"%s\": %zu principals and labels; the limit is %d", p->in->id,
                           na + nd + nl, ACL_MAX_PRINCIPALS);
    if (nl > ACL_LABELS_MAX)
        return cdn_err_set(err, CDN_ERR_LIMIT, "chunk \"%s\": %zu labels; the limit is %d",
                           p->in->id, nl, ACL_LABELS_MAX);
    if ((na && !allowed) || (nd && !denied) || (nl && !labels))
        return cdn_err_set(err, CDN_ERR_INVALID, "chunk \"%s\": principal list is NULL", p->in->id);
    if ((rc = prep_names(p, 0, allowed, na, a, err)) != 0 ||
        (rc = prep_names(p, 1, denied, nd, a, err)) != 0)
        return rc;
    if (!(p->labels = cdn_arena_alloc(a, (nl + 1) * sizeof(char *))))
        return cdn_err_set(err, CDN_ERR_NOMEM, "out of memory");
    for (p->nlabels = 0; p->nlabels < nl; p->nlabels++)
        if ((rc = prep_tag(p, labels[p->nlabels], "label", &p->labels[p->nlabels], a, err)))
            return rc;
    return CDN_OK;
}

static int prep_vector(prep_t *p, const coll_config_t *cfg, cdn_arena_t *a, cdn_err_t *err)
{
    const float *v = p->in->vector;
    char what[WRITE_ID_MAX + 32];
    int rc;
    if (!cfg->dim) {
        if (v)
            return cdn_err_set(err, CDN_ERR_INVALID,
                               "chunk \"%s\" has a vector but collection "
                               "\"%s\" stores none (dim 0)",
                               p->in->id, cfg->name);
        return CDN_OK;
    }
    if (!v)
        return cdn_err_set(err, CDN_ERR_INVALID,
                           "chunk \"%s\" has no vector; collection \"%s\" needs %u values",
                           p->in->id, cfg->name, cfg->dim);
    snprintf(what, sizeof what, "chunk \"%s\": vector", p->in->id);
    if ((rc = vec_check(v, cfg->dim, cfg->metric, what, err)) != 0)
        return rc;
    p->vec = (float *)v;
    if (cfg->metric != VEC_METRIC_COSINE)
        return CDN_OK;
    if (!(p->vec = cdn_arena_alloc(a, cfg->dim * sizeof(float))))
        return cdn_err_set(err, CDN_ERR_NOMEM, "out of memory");
    memcpy(p->vec, v, cfg->dim * sizeof(float));
    vec_normalize(p->vec, cfg->dim);
    return CDN_OK;
}

static int prep_fields(const write_chunk_t *c, const coll_config_t *cfg, cdn_err_t *err)
{
    for (size_t i = 0; i < c->n_fields; i++) {
        size_t f = 0;
        if (!c->field_names[i] || !c->field_values[i])
            return cdn_err_set(err, CDN_ERR_INVALID, "chunk \"%s\": text field %zu is NULL", c->id,
                               i);
        while (f < cfg->n_text && strcmp(cfg->text_fields[f], c->field_names[i]))
            f++;
        if (f == cfg->n_text)
            return cdn_err_set(err, CDN_ERR_INVALID,
                               "chunk \"%s\": \"%s\" is not a text field "
                               "of collection \"%s\"",
                               c->id, c->field_names[i], cfg->name);
        size_t len = strlen(c->field_values[i]), at;
        if (len > WRITE_TEXT_MAX)
            return cdn_err_set(err, CDN_ERR_LIMIT, "chunk \"%s\": field \"%s\" passes %d bytes",
                               c->id, c->field_names[i], WRITE_TEXT_MAX);
        if (!cdn_utf8_valid(c->field_values[i], len, &at))
            return cdn_err_set(err, CDN_ERR_INVALID,
                               "chunk \"%s\": field \"%s\" is not UTF-8 (byte %zu)", c->id,
                               c->field_names[i], at);
        for (size_t j = 0; j < i; j++)
            if (!strcmp(c->field_names[j], c->field_names[i]))
                return cdn_err_set(err, CDN_ERR_INVALID, "chunk \"%s\": field \"%s\" given twice",
                                   c->id, c->field_names[i]);
    }
    return chunkrec_check_metadata(c->id, c->metadata_json, WRITE_METADATA_MAX, err);
}

static int prepare(const coll_config_t *cfg, const write_chunk_t *c, size_t index, prep_t *p,
                   cdn_arena_t *a, cdn_err_t *err)
{
    int rc;
    memset(p, 0, sizeof *p);
    p->in = c;
    if ((rc = write_id_check(c->id, index, err)) != 0 || (rc = prep_vector(p, cfg, a, err)) != 0 ||
        (rc = prep_fields(c, cfg, err)) != 0)
        return rc;
    if ((rc = write_prep_tenant(p, c->tenant, c->object, a, err)) != 0)
        return rc;
    return write_prep_acl(p, c->allowed, c->n_allowed, c->denied, c->n_denied, c->labels,
                          c->n_labels, a, err);
}

int write_check(engine_t *e, const char *name, const write_chunk_t *chunk, cdn_err_t *err)
{
    cdn_arena_t a;
    prep_t p;
    coll_t *c;
    int rc;
    if ((rc = engine_coll_get(e, name, &c, err)) != 0)
        return rc;
    /* The same prepare() a put runs, so a chunk passes here exactly when a put would take it
     * (limits of the batch aside); what it builds is thrown away. */
    cdn_arena_init(&a, 4096, 0);
    rc = prepare(&c->cfg, chunk, WRITE_NO_INDEX, &p, &a, err);
    cdn_arena_free(&a);
    coll_unref(c);
    return rc;
}

static uint32_t sort_unique(uint32_t *v, uint32_t n)
{
    uint32_t j = 0;
    qsort(v, n, sizeof *v, cdn_cmp_u32);
    for (uint32_t i = 0; i < n; i++)
        if (j == 0 || v[j - 1] != v[i])
            v[j++] = v[i];
    return j;
}

/* Interns p's principals (new ones get ids now; the caller persists and, on failure, undoes
 * them) and builds its packed ACL in the arena. Caller holds meta_lock for writing. */
int write_pack_acl(engine_t *e, prep_t *p, cdn_arena_t *a)
{
    uint32_t *ids[2];
    uint32_t n[2];
    char q[ACL_VIEW_NAME_MAX], label[ACL_TAG_MAX + 8], obj[ACL_PRINCIPAL_MAX + 8];
    if (p->object && acl_object_principal(p->object, obj, sizeof obj, NULL))
        return CDN_ERR_INVALID; /* write_prep_tenant checked it */
    for (int w = 0; w < 2; w++) {
        /* the allowed list gains the object's principal, the denied one the labels */
        size_t extra = w ? p->nlabels : p->object != NULL;
        if (!(ids[w] = cdn_arena_alloc(a, (p->nnames[w] + extra + 1) * sizeof(uint32_t))))
            return CDN_ERR_NOMEM;
        for (size_t i = 0; i < p->nnames[w] + extra; i++) {
            int added;
            const char *name = p->names[w][i];
            if (i >= p->nnames[w] && w) { /* a label: denied to the views that hold it */
                snprintf(label, sizeof label, "label:%s", p->labels[i - p->nnames[w]]);
                name = label;
            } else if (i >= p->nnames[w]) {
                name = obj;
            }
            /* names and tags are bounded, so the qualified name always fits */
            if (acl_qualify(p->tenant, name, q, sizeof q) ||
                acl_intern_add(&e->principals, q, &ids[w][i], &added))
                return CDN_ERR_NOMEM;
            if (added && engine_object_perm_note(e, q))
                return CDN_ERR_LIMIT;
            if (!w && acl_object_permission(q))
                p->has_object = 1;
        }
        n[w] = sort_unique(ids[w], (uint32_t)(p->nnames[w] + extra));
    }
    if (!(p->packed = cdn_arena_alloc(a, (2 + n[0] + n[1]) * sizeof(uint32_t))))
        return CDN_ERR_NOMEM;
    p->packed[0] = n[0];
    p->packed[1] = n[1];
    memcpy(p->packed + 2, ids[0], n[0] * sizeof(uint32_t));
    memcpy(p->packed + 2 + n[0], ids[1], n[1] * sizeof(uint32_t));
    return CDN_OK;
}

/* Writes the principals not yet in the store. Ids are never taken back once handed out (a
 * search may already hold one), so a failed write's principals are stored by the next. */
int write_persist_principals(engine_t *e, store_txn_t *t)
{
    for (size_t id = e->principals_saved; id < e->principals.len; id++) {
        const char *name = acl_intern_name(&e->principals, (uint32_t)id);
        unsigned char k[4], v[4];
        int rc;
        store_be32(k, (uint32_t)id);
        store_be32(v, (uint32_t)id);
        if ((rc = store_put(t, STORE_PRINCIPALS, name, strlen(name), v, 4)) != 0 ||
            (rc = store_put(t, STORE_PRINCIPAL_IDS, k, 4, name, strlen(name))) != 0)
            return rc;
    }
    return CDN_OK;
}

static int put_one(engine_t *e, coll_t *c, store_txn_t *t, prep_t *p)
{
    unsigned char key[COLL_KEY_MAX], rk[8];
    size_t klen = coll_chunk_key(c->cfg.id, p->in->id, key, sizeof key);
    const void *old;
    size_t oldlen;
    char *rec = NULL;
    size_t reclen;
    int rc;
    if (store_get(t, STORE_CHUNKS, key, klen, &old, &oldlen) == CDN_OK) {
        if ((rc = chunkrec_row(old, oldlen, &p->old_row)) != 0)
            return rc;
        p->had_old = 1;
        coll_row_key(c->cfg.id, p->old_row, rk);
        store_del(t, STORE_ROWS, rk, 8);
        store_del(t, STORE_ACLS, rk, 8);
    }
    chunkrec_access_t acc = write_access(p);
    if ((rc = chunkrec_encode(p->row, p->in->field_names, p->in->field_values, p->in->n_fields,
                              p->in->metadata_json, &acc, &rec, &reclen)) != 0)
        return rc;
    coll_row_key(c->cfg.id, p->row, rk);
    rc = store_put(t, STORE_CHUNKS, key, klen, rec, reclen);
    cdn_free(rec);
    if (rc == CDN_OK)
        rc = store_put(t, STORE_ROWS, rk, 8, p->in->id, strlen(p->in->id));
    if (rc == CDN_OK)
        rc = store_put(t, STORE_ACLS, rk, 8, p->packed, acl_packed_len(p->packed) * 4);
    if (rc == CDN_OK) /* the revision write_commit will give this write (under write_lock) */
        rc = history_acl_put(t, c->cfg.id, p->in->id, atomic_load(&e->revision) + 1, p->packed,
                             acl_packed_len(p->packed));
    return rc;
}

static int save_next_row(store_txn_t *t, const coll_t *c, uint32_t next)
{
    unsigned char k[8], v[4];
    memcpy(k, "next", 4);
    store_be32(k + 4, c->cfg.id);
    store_be32(v, next);
    return store_put(t, STORE_META, k, 8, v, 4);
}

/* The batch's rows are consecutive (next_row onward), so one gathered write covers them. */
static int write_vectors(coll_t *c, prep_t *p, size_t n, cdn_err_t *err)
{
    const float **rows;
    int rc;
    if (!c->vf || n == 0)
        return CDN_OK;
    if (!(rows = cdn_malloc(n * sizeof *rows)))
        return cdn_err_set(err, CDN_ERR_NOMEM, "out of memory");
    for (size_t i = 0; i < n; i++)
        rows[i] = p[i].vec;
    rc = vecfile_write(c->vf, p[0].row, rows, (uint32_t)n, err);
    cdn_free(rows);
    if (rc == CDN_OK)
        cdn_hook_run(CDN_HOOK_VECTORS_UNSYNCED);
    return rc ? rc : vecfile_sync(c->vf, err);
}

/* Applies a committed put to memory and publishes rev. */
static void apply_put(engine_t *e, coll_t *c, prep_t *p, size_t n, uint32_t next_row, uint64_t rev)
{
    pthread_rwlock_wrlock(&c->lock);
    c->next_row = next_row;
    if (coll_quant_sync(c)) { /* codes out of step: stop using them rather than risk them */
        quant_free(c->quant);
        c->quant = NULL;
    }
    for (size_t i = 0; i < n; i++) {
        if (p[i].had_old) {
            if (c->hnsw)
                hnsw_delete(c->hnsw, p[i].old_row);
            textidx_delete_doc(c->text, p[i].old_row);
            acl_index_remove(c->acl, p[i].old_row);
            coll_row_clear(c, p[i].old_row);
            c->live--;
        }
        if (p[i].has_object)
            atomic_store(&c->has_objects, 1);
        if (acl_index_set(c->acl, p[i].row, p[i].packed) ||
            coll_row_set(c, p[i].row, p[i].in->id) ||
            coll_text_add(c, p[i].row, p[i].in->field_names, p[i].in->field_values,
                          p[i].in->n_fields, p[i].in->metadata_json, NULL))
            c->broken = 1; /* memory disagrees with the store: fail closed until reopened */
        c->live++;
    }
    atomic_store(&e->revision, rev);
    pthread_rwlock_unlock(&c->lock);
}

int write_commit(engine_t *e, store_txn_t *t, uint64_t *rev, cdn_err_t *err)
{
    int rc;
    *rev = atomic_load(&e->revision) + 1;
    if ((rc = store_revision_set(t, *rev)) != 0) {
        store_txn_abort(t);
        return cdn_err_set(err, rc, "cannot record the revision");
    }
    if ((rc = store_txn_commit(t, err)) == CDN_OK)
        cdn_hook_run(CDN_HOOK_COMMITTED);
    return rc;
}

static int put_locked(engine_t *e, coll_t *c, const write_chunk_t *chunks, size_t n, prep_t *p,
                      cdn_arena_t *a, uint64_t *rev, cdn_err_t *err)
{
    uint32_t next_row = c->next_row;
    store_txn_t *t;
    int rc = CDN_OK;
    for (size_t i = 0; i < n && rc == CDN_OK; i++)
        rc = prepare(&c->cfg, &chunks[i], i, &p[i], a, err);
    if (rc)
        return rc;
    if ((uint64_t)next_row + n > UINT32_MAX - 1)
        return cdn_err_set(err, CDN_ERR_LIMIT, "collection \"%s\" is out of row numbers",
                           c->cfg.name);
    pthread_rwlock_wrlock(&e->meta_lock);
    for (size_t i = 0; i < n && rc == CDN_OK; i++) {
        p[i].row = next_row + (uint32_t)i;
        rc = write_pack_acl(e, &p[i], a);
    }
    pthread_rwlock_unlock(&e->meta_lock);
    if (rc == CDN_ERR_LIMIT)
        return cdn_err_set(err, rc, "chunks' objects name more than %d permissions",
                           ENGINE_OBJECT_PERMS_MAX);
    if (rc == CDN_OK && (rc = write_vectors(c, p, n, err)) == CDN_OK &&
        (rc = store_txn_begin(e->store, 1, &t, err)) == CDN_OK) {
        for (size_t i = 0; i < n && rc == CDN_OK; i++)
            rc = put_one(e, c, t, &p[i]);
        if (rc == CDN_OK && (rc = write_persist_principals(e, t)) == CDN_OK)
            rc = save_next_row(t, c, next_row + (uint32_t)n);
        if (rc) {
            store_txn_abort(t);
            cdn_err_set(err, rc, "cannot store the batch: %s", cdn_strerror(rc));
        } else {
            rc = write_commit(e, t, rev, err);
            if (rc == CDN_OK)
                e->principals_saved = e->principals.len;
        }
    }
    if (rc) {
        if (rc == CDN_ERR_NOMEM)
            cdn_err_set(err, rc, "out of memory writing the batch");
        return rc;
    }
    /* Into the graph before the rows become readable, so that any readable row is in it. */
    uint32_t *rows = cdn_malloc(n * sizeof *rows);
    for (size_t i = 0; rows && i < n; i++)
        rows[i] = p[i].row;
    if (!rows || coll_graph_insert(c, rows, n) != CDN_OK)
        c->broken = 1; /* committed but not indexed: fail closed until reopened */
    cdn_free(rows);
    apply_put(e, c, p, n, next_row + (uint32_t)n, *rev);
    coll_graph_repair_due(c);
    return CDN_OK;
}

int write_put(engine_t *e, const char *name, const write_chunk_t *chunks, size_t n, uint64_t *rev,
              cdn_err_t *err)
{
    cdn_arena_t a;
    prep_t *p;
    coll_t *c;
    int rc;
    if (n > WRITE_BATCH_MAX)
        return cdn_err_set(err, CDN_ERR_LIMIT, "batch of %zu chunks; the limit is %d", n,
                           WRITE_BATCH_MAX);
    if (n == 0)
        return cdn_err_set(err, CDN_ERR_INVALID, "empty batch: give at least one chunk");
    if (!(p = cdn_calloc(n, sizeof *p)))
        return cdn_err_set(err, CDN_ERR_NOMEM, "out of memory");
    cdn_arena_init(&a, 256 * 1024, 0);
    /* Look the collection up under the writer lock, so a drop cannot slip in between. */
    pthread_mutex_lock(&e->write_lock);
    if ((rc = engine_coll_get(e, name, &c, err)) == CDN_OK) {
        rc = put_locked(e, c, chunks, n, p, &a, rev, err);
        if (rc == CDN_OK) /* under the write lock, which keeps writers off while it measures */
            coll_graph_calibrate_grown(e->dir, c);
        coll_unref(c);
    }
    pthread_mutex_unlock(&e->write_lock);
    cdn_arena_free(&a);
    cdn_free(p);
    return rc;
}
