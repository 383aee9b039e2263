/* engine.c: opening a data directory, the collection registry and principal lookups.
 * Relies on store/ for durability; collections are loaded whole into memory at open. */
#include "query/engine.h"
#include "base/arena.h"
#include "base/fileio.h"
#include "base/mem.h"
#include "store/dirlock.h"
#include "store/history.h"

#include <errno.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* The free heap after a load from which the open hands memory back (malloc_trim). */
#define ENGINE_TRIM_MIN_FREE ((size_t)16 << 20)

struct prin_ctx {
    acl_intern_t *t;
    int rc;
};

static int load_principal(void *ctx, const void *key, size_t klen, const void *val, size_t vlen)
{
    struct prin_ctx *p = ctx;
    char name[ACL_VIEW_NAME_MAX + 16]; /* principals qualified by a tenant included */
    uint32_t id;
    int added;
    if (klen != 4 || vlen >= sizeof name || store_rd32(key) != p->t->len)
        return p->rc = CDN_ERR_CORRUPT; /* ids are dense and scanned in order */
    memcpy(name, val, vlen);
    name[vlen] = '\0';
    return p->rc = acl_intern_add(p->t, name, &id, &added);
}

static int coll_insert_sorted(engine_t *e, coll_t *c)
{
    size_t i = 0;
    if (cdn_grow((void **)&e->colls, &e->colls_cap, e->ncolls + 1, sizeof(coll_t *)))
        return CDN_ERR_NOMEM;
    while (i < e->ncolls && strcmp(e->colls[i]->cfg.name, c->cfg.name) < 0)
        i++;
    memmove(e->colls + i + 1, e->colls + i, (e->ncolls - i) * sizeof(coll_t *));
    e->colls[i] = c;
    e->ncolls++;
    if (c->cfg.authorizer[0])
        atomic_store(&e->any_delegated, 1);
    return CDN_OK;
}

struct coll_ctx {
    engine_t *e;
    store_txn_t *t;
    cdn_err_t *err;
};

static int names_object(void *ctx, uint32_t id)
{
    engine_t *e = ctx;
    return id < e->principals.len && acl_object_permission(acl_intern_name(&e->principals, id));
}

static int load_collection(void *ctx, const void *key, size_t klen, const void *val, size_t vlen)
{
    struct coll_ctx *cc = ctx;
    coll_config_t cfg;
    coll_t *c;
    int rc;
    (void)key;
    (void)klen;
    if ((rc = coll_config_decode(val, vlen, &cfg, cc->err)) != 0)
        return rc;
    coll_files_sweep(cc->e->dir, &cfg); /* a compaction's other generation, if it stopped */
    if ((rc = coll_load(cc->e->dir, cc->t, &cfg, &c, cc->err)) != 0)
        return rc;
    atomic_store(&c->has_objects, acl_index_allowed_ids(c->acl, names_object, cc->e));
    if ((rc = coll_insert_sorted(cc->e, c)) != 0) {
        coll_unref(c);
        return cdn_err_set(cc->err, rc, "out of memory");
    }
    return CDN_OK;
}

static int load_all(engine_t *e, cdn_err_t *err)
{
    store_txn_t *t;
    const void *v;
    size_t vlen;
    uint64_t rev;
    struct prin_ctx pc = {&e->principals, CDN_OK};
    struct coll_ctx cc = {e, NULL, err};
    int rc = store_txn_begin(e->store, 0, &t, err);
    if (rc)
        return rc;
    cc.t = t;
    if ((rc = store_revision_get(t, &rev)) != 0)
        goto done;
    atomic_store(&e->revision, rev);
    if (store_get(t, STORE_META, "next_coll", 9, &v, &vlen) == CDN_OK && vlen == 4)
        e->next_coll_id = store_rd32(v);
    rc = store_scan_prefix(t, STORE_PRINCIPAL_IDS, "", 0, load_principal, &pc);
    if (rc) {
        cdn_err_set(err, rc, "principal table does not load: %s", cdn_strerror(rc));
        goto done;
    }
    e->principals_saved = e->principals.len;
    for (size_t id = 0; rc == CDN_OK && id < e->principals.len; id++)
        if (engine_object_perm_note(e, acl_intern_name(&e->principals, (uint32_t)id)))
            rc = cdn_err_set(err, CDN_ERR_LIMIT, "chunks' objects name more than %d permissions",
                             ENGINE_OBJECT_PERMS_MAX);
    if (rc == CDN_OK)
        rc = store_scan_prefix(t, STORE_COLLECTIONS, "", 0, load_collection, &cc);
    if (rc == CDN_OK)
        rc = engine_model_load(e, t, err);
done:
    store_txn_abort(t);
    return rc;
}

/* ---- The start of the permission history (store/history.h). ---- */

struct backfill {
    store_txn_t *t;
    uint32_t coll;
    uint64_t rev;
};

static int backfill_row(void *ctx, const void *key, size_t klen, const void *val, size_t vlen)
{
    struct backfill *b = ctx;
    const void *acl;
    size_t alen;
    char id[COLL_ID_MAX + 1];
    if (klen != 8 || vlen > COLL_ID_MAX)
        return CDN_ERR_CORRUPT;
    memcpy(id, val, vlen);
    id[vlen] = 0;
    if (store_get(b->t, STORE_ACLS, key, 8, &acl, &alen) != CDN_OK || alen % 4)
        return CDN_ERR_CORRUPT;
    uint32_t *packed = cdn_malloc(alen ? alen : 4);
    if (!packed)
        return CDN_ERR_NOMEM;
    memcpy(packed, acl, alen);
    int rc = history_acl_put(b->t, b->coll, id, b->rev, packed, alen / 4);
    cdn_free(packed);
    return rc;
}

/* A data directory written before it kept a history starts one now: every live chunk's ACL
 * and the whole model as of the current revision, once. Earlier states are not known. */
static int history_begin(engine_t *e, cdn_err_t *err)
{
    store_txn_t *t;
    uint64_t start, rev = atomic_load(&e->revision);
    int set, rc = store_txn_begin(e->store, 1, &t, err);
    char *whole = NULL;
    if (rc)
        return rc;
    if ((rc = history_start_get(t, &start, &set)) != 0 || set) {
        store_txn_abort(t);
        return rc ? cdn_err_set(err, rc, "the permission history does not read") : CDN_OK;
    }
    for (size_t i = 0; rev && rc == CDN_OK && i < e->ncolls; i++) {
        unsigned char prefix[4];
        struct backfill b = {t, e->colls[i]->cfg.id, rev};
        store_be32(prefix, b.coll);
        rc = store_scan_prefix(t, STORE_ROWS, prefix, 4, backfill_row, &b);
    }
    if (rc == CDN_OK && rev && (rc = authz_export(e->model, &whole, err)) == CDN_OK &&
        (rc = history_snap_put(t, rev, whole)) == CDN_OK) {
        /* and as the model record of rev, which as-of reads look up first */
        size_t n = strlen(whole);
        char *rec = cdn_malloc(n + 1);
        if (!rec)
            rc = CDN_ERR_NOMEM;
        if (rec) {
            rec[0] = 'I';
            memcpy(rec + 1, whole, n);
            rc = history_model_put(t, rev, rec, n + 1);
            cdn_free(rec);
        }
    }
    cdn_free(whole);
    if (rc == CDN_OK)
        rc = history_start_set(t, rev);
    if (rc) {
        store_txn_abort(t);
        return cdn_err_set(err, rc, "cannot start the permission history: %s", cdn_strerror(rc));
    }
    return store_txn_commit(t, err);
}

/* The model's fragments start at the history's start, or, in a directory whose history was
 * kept without them, now: every entity's fragment as of the current revision, once. From then
 * on each model change records those it touched (engine_model.c). */
static int fragments_begin(engine_t *e, cdn_err_t *err)
{
    store_txn_t *t;
    uint64_t start, rev = atomic_load(&e->revision);
    int set, rc = store_txn_begin(e->store, 1, &t, err);
    if (rc)
        return rc;
    authz_model_track(e->model, true);
    if ((rc = history_ent_start_get(t, &start, &set)) != 0 || set) {
        store_txn_abort(t);
        return rc ? cdn_err_set(err, rc, "the permission history does not read") : CDN_OK;
    }
    if ((rc = engine_fragments_put(e, t, true, rev, err)) == CDN_OK)
        rc = history_ent_start_set(t, rev);
    if (rc) {
        store_txn_abort(t);
        return err && err->code
                   ? rc
                   : cdn_err_set(err, rc, "cannot start the model's history: %s", cdn_strerror(rc));
    }
    return store_txn_commit(t, err);
}

/* Collections' names enter the history at the first open by a version that keeps them: every
 * live collection as of the current revision, once. From then on creating and dropping a
 * collection records it (a question about a revision before a collection's first version
 * reads that version's id: a collection keeps its id for life). */
static int names_begin(engine_t *e, cdn_err_t *err)
{
    store_txn_t *t;
    uint64_t rev = atomic_load(&e->revision);
    int set, rc = store_txn_begin(e->store, 1, &t, err);
    if (rc)
        return rc;
    if ((rc = history_coll_start_get(t, &set)) != 0 || set) {
        store_txn_abort(t);
        return rc ? cdn_err_set(err, rc, "the permission history does not read") : CDN_OK;
    }
    for (size_t i = 0; rc == CDN_OK && i < e->ncolls; i++)
        rc = history_coll_put(t, e->colls[i]->cfg.name, rev, e->colls[i]->cfg.id,
                              e->colls[i]->cfg.asserted);
    if (rc == CDN_OK)
        rc = history_coll_start_set(t, rev);
    if (rc) {
        store_txn_abort(t);
        return cdn_err_set(err, rc, "cannot start the collections' history: %s", cdn_strerror(rc));
    }
    return store_txn_commit(t, err);
}

/* Creates the data directory (CDN_DIR_MODE: its files hold protected text), or warns on
 * stderr when an existing one lets other local users in: the files inside are CDN_FILE_MODE
 * when the engine made them, but a directory copied or made by hand may hold others. */
static int open_dir(const char *dir, cdn_err_t *err)
{
    struct stat st;
    if (mkdir(dir, CDN_DIR_MODE) == 0)
        return CDN_OK;
    if (errno != EEXIST)
        return cdn_err_set(err, CDN_ERR_IO, "cannot create data directory %s: %s", dir,
                           strerror(errno));
    if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode))
        return cdn_err_set(err, CDN_ERR_IO, "data directory %s is not a directory", dir);
    if (st.st_mode & (S_IRWXG | S_IRWXO))
        fprintf(stderr,
                "cordon: warning: data directory %s is open to other users (mode %04o); "
                "its files hold protected text: chmod 700 %s\n",
                dir, (unsigned)(st.st_mode & 07777), dir);
    return CDN_OK;
}

int engine_open(const char *dir, uint64_t map_size, int must_exist, engine_t **out, cdn_err_t *err)
{
    engine_t *e;
    int rc;
    if (must_exist && !store_exists(dir))
        return cdn_err_set(err, CDN_ERR_NOT_FOUND,
                           "there is no cordon database in %s; create "
                           "one first, e.g. with cordon load --create",
                           dir);
    if ((rc = open_dir(dir, err)) != 0)
        return rc;
    if (!(e = cdn_calloc(1, sizeof *e)) || !(e->dir = cdn_strdup(dir))) {
        cdn_free(e);
        return cdn_err_set(err, CDN_ERR_NOMEM, "out of memory");
    }
    if ((rc = dirlock_take(dir, &e->dirlock, err)) != 0) {
        cdn_free(e->dir);
        cdn_free(e);
        return rc;
    }
    pthread_mutex_init(&e->write_lock, NULL);
    pthread_rwlock_init(&e->meta_lock, NULL);
    pthread_rwlock_init(&e->model_gate, NULL);
    acl_intern_init(&e->principals);
    if (engine_objcache_new(&e->objcache)) {
        engine_close(e);
        return cdn_err_set(err, CDN_ERR_NOMEM, "out of memory");
    }
    if ((rc = authz_model_new(&e->model, err)) != 0) {
        engine_close(e);
        return rc;
    }
    if ((rc = store_open(dir, map_size, &e->store, err)) != 0 || (rc = load_all(e, err)) != 0 ||
        (rc = history_begin(e, err)) != 0 || (rc = fragments_begin(e, err)) != 0 ||
        (rc = names_begin(e, err)) != 0) {
        engine_close(e);
        return rc;
    }
    /* The load's scans are done: hand their database pages back, and the heap pages the load
     * freed (grown arrays' old copies, the codes' and graph's read buffers), then map the
     * float rows searches will read (in that order, so the two are never resident at once). */
    store_release_pages(e->store);
    /* From now on each model change moves the revision as it is installed (replay, above, ran
     * at the stored revision). */
    authz_model_count_changes(e->model, &e->revision);
#ifdef __GLIBC__
    /* Only when the load left much free: a trim walks every arena and advises the kernel of
     * each free range, which a small data directory's open (most opens in tests and fuzzing,
     * in a process whose heap is large) paid for nothing. */
    if (mallinfo2().fordblks >= ENGINE_TRIM_MIN_FREE)
        malloc_trim(0);
#endif
    for (size_t i = 0; i < e->ncolls; i++)
        coll_map_rows(e->colls[i]);
    *out = e;
    return CDN_OK;
}

int engine_check(engine_t *e, cdn_err_t *err)
{
    int rc = store_check(e->store, err);
    if (rc == CDN_OK && atomic_load(&e->model_broken))
        rc = cdn_err_set(err, CDN_ERR_IO,
                         "the permission model failed closed after a failed commit: reopen the "
                         "data directory");
    pthread_rwlock_rdlock(&e->meta_lock);
    for (size_t i = 0; rc == CDN_OK && i < e->ncolls; i++)
        if (atomic_load(&e->colls[i]->broken))
            rc = cdn_err_set(err, CDN_ERR_IO,
                             "collection \"%s\" failed closed after a write it could not apply "
                             "in memory: reopen the data directory",
                             e->colls[i]->cfg.name);
    pthread_rwlock_unlock(&e->meta_lock);
    return rc;
}

void engine_close(engine_t *e)
{
    if (!e)
        return;
    for (size_t i = 0; i < e->ncolls; i++) {
        cdn_err_t err;
        if (atomic_load(&e->colls[i]->broken)) {
            /* Its indexes missed a committed write: saving them would make the loss
             * permanent. Remove the checkpoints; the next open rebuilds from the rows. */
            coll_checkpoints_remove(e->dir, e->colls[i]->cfg.id, e->colls[i]->cfg.gen, 0);
            coll_unref(e->colls[i]);
            continue;
        }
        if (coll_graph_save(e->dir, e->colls[i], &err))
            fprintf(stderr, "cordon: %s (it will be rebuilt at the next open)\n", err.msg);
        if (coll_codes_save(e->dir, e->colls[i], &err))
            fprintf(stderr, "cordon: %s (they will be re-encoded at the next open)\n", err.msg);
        if (coll_text_save(e->dir, e->colls[i], &err))
            fprintf(stderr, "cordon: %s (it will be rebuilt at the next open)\n", err.msg);
        coll_unref(e->colls[i]);
    }
    cdn_free(e->colls);
    acl_intern_free(&e->principals);
    engine_objcache_free(e->objcache);
    authz_model_free(e->model);
    store_close(e->store);
    dirlock_release(e->dirlock); /* last: every checkpoint above is written */
    pthread_mutex_destroy(&e->write_lock);
    pthread_rwlock_destroy(&e->meta_lock);
    pthread_rwlock_destroy(&e->model_gate);
    cdn_free(e->dir);
    cdn_free(e);
}

static coll_t *find_locked(engine_t *e, const char *name, size_t *pos)
{
    for (size_t i = 0; i < e->ncolls; i++) {
        if (!strcmp(e->colls[i]->cfg.name, name)) {
            if (pos)
                *pos = i;
            return e->colls[i];
        }
    }
    return NULL;
}

int engine_coll_get(engine_t *e, const char *name, coll_t **out, cdn_err_t *err)
{
    coll_t *c;
    pthread_rwlock_rdlock(&e->meta_lock);
    c = find_locked(e, name, NULL);
    if (c)
        coll_ref(c);
    pthread_rwlock_unlock(&e->meta_lock);
    if (!c)
        return cdn_err_set(err, CDN_ERR_NOT_FOUND, "no such collection \"%s\"", name);
    *out = c;
    return CDN_OK;
}

int engine_coll_rdlock(engine_t *e, coll_t **c, cdn_err_t *err)
{
    for (;;) {
        pthread_rwlock_rdlock(&(*c)->lock);
        if (!atomic_load(&(*c)->superseded))
            return CDN_OK;
        pthread_rwlock_unlock(&(*c)->lock);
        coll_t *n;
        int rc = engine_coll_get(e, (*c)->cfg.name, &n, err);
        if (rc)
            return rc;
        coll_unref(*c);
        *c = n;
    }
}

void engine_coll_replace(engine_t *e, coll_t *old, coll_t *new_c)
{
    pthread_rwlock_wrlock(&e->meta_lock);
    for (size_t i = 0; i < e->ncolls; i++)
        if (e->colls[i] == old) {
            coll_ref(new_c);
            e->colls[i] = new_c;
            coll_unref(old);
            break;
        }
    pthread_rwlock_unlock(&e->meta_lock);
}

static int commit_revision(engine_t *e, store_txn_t *t, cdn_err_t *err)
{
    uint64_t rev = atomic_load(&e->revision) + 1;
    int rc = store_revision_set(t, rev);
    if (rc) {
        store_txn_abort(t);
        return cdn_err_set(err, rc, "cannot record the revision");
    }
    if ((rc = store_txn_commit(t, err)) != 0)
        return rc;
    atomic_store(&e->revision, rev);
    return CDN_OK;
}

static void attrs_key(uint32_t id, unsigned char k[8])
{
    memcpy(k, "attr", 4);
    store_be32(k + 4, id);
}

int engine_coll_create(engine_t *e, const coll_config_t *cfg_in, const char *attrs_json,
                       cdn_err_t *err)
{
    unsigned char ak[8];
    coll_config_t cfg = *cfg_in;
    unsigned char idb[4];
    store_txn_t *t = NULL;
    coll_t *c = NULL;
    char *json = NULL;
    int rc, made = 0;
    if ((rc = coll_name_check(cfg.name, err)) != 0)
        return rc;
    pthread_mutex_lock(&e->write_lock);
    pthread_rwlock_rdlock(&e->meta_lock);
    c = find_locked(e, cfg.name, NULL);
    pthread_rwlock_unlock(&e->meta_lock);
    if (c) {
        c = NULL;
        rc = cdn_err_set(err, CDN_ERR_EXISTS, "collection \"%s\" already exists", cfg.name);
        goto done;
    }
    {
        textidx_t *probe; /* refuse an analyzer the text layer does not know, before storing */
        if ((rc = coll_text_create(&cfg, &probe, err)) != 0)
            goto done;
        textidx_free(probe);
    }
    cfg.id = e->next_coll_id;
    store_be32(idb, cfg.id + 1);
    /* Room in the registry first, so nothing can fail between the commit and the insert. */
    pthread_rwlock_wrlock(&e->meta_lock);
    rc = cdn_grow((void **)&e->colls, &e->colls_cap, e->ncolls + 1, sizeof(coll_t *));
    pthread_rwlock_unlock(&e->meta_lock);
    if (rc != 0 || (rc = coll_config_encode(&cfg, &json)) != 0 ||
        (made = 1, rc = coll_create_state(e->dir, &cfg, &c, err)) != 0 ||
        (rc = store_txn_begin(e->store, 1, &t, err)) != 0)
        goto done;
    attrs_key(cfg.id, ak);
    /* commit_revision names the next revision, as the history does here (under write_lock) */
    if ((rc = store_put(t, STORE_COLLECTIONS, cfg.name, strlen(cfg.name), json, strlen(json))) !=
            0 ||
        (rc = store_put(t, STORE_META, "next_coll", 9, idb, 4)) != 0 ||
        (attrs_json &&
         (rc = store_put(t, STORE_META, ak, 8, attrs_json, strlen(attrs_json))) != 0) ||
        (rc = history_coll_put(t, cfg.name, atomic_load(&e->revision) + 1, cfg.id, cfg.asserted)) !=
            0) {
        store_txn_abort(t);
        cdn_err_set(err, rc, "cannot record the collection: %s", cdn_strerror(rc));
        goto done;
    }
    if ((rc = commit_revision(e, t, err)) != 0)
        goto done;
    e->next_coll_id = cfg.id + 1;
    pthread_rwlock_wrlock(&e->meta_lock);
    rc = coll_insert_sorted(e, c); /* cannot fail: room was made above */
    pthread_rwlock_unlock(&e->meta_lock);
    c = NULL; /* the registry holds it now */
done:
    if (rc == CDN_ERR_NOMEM)
        cdn_err_set(err, rc, "out of memory creating collection \"%s\"", cfg.name);
    if (rc && made && cfg.dim) { /* not created: remove any vector file it made (the id is
                                    unused, so the file can be no other collection's) */
        char path[4096];
        if (coll_vecfile_path(e->dir, &cfg, path, sizeof path) == 0)
            unlink(path);
    }
    coll_unref(c);
    free(json); /* from jansson's allocator */
    pthread_mutex_unlock(&e->write_lock);
    return rc;
}

/* Deletes STORE_META key tag (4 bytes) + collection id, if present. */
static int drop_meta_key(store_txn_t *t, const char *tag, uint32_t id)
{
    unsigned char k[8];
    int rc;
    memcpy(k, tag, 4);
    store_be32(k + 4, id);
    rc = store_del(t, STORE_META, k, 8);
    return rc == CDN_ERR_NOT_FOUND ? CDN_OK : rc;
}

int engine_coll_drop(engine_t *e, const char *name, cdn_err_t *err)
{
    unsigned char prefix[4];
    char path[4096];
    store_txn_t *t;
    coll_t *c;
    size_t pos = 0;
    int rc;
    pthread_mutex_lock(&e->write_lock);
    pthread_rwlock_rdlock(&e->meta_lock);
    c = find_locked(e, name, &pos);
    pthread_rwlock_unlock(&e->meta_lock);
    if (!c) {
        rc = cdn_err_set(err, CDN_ERR_NOT_FOUND, "no such collection \"%s\"", name);
        goto done;
    }
    store_be32(prefix, c->cfg.id);
    if ((rc = store_txn_begin(e->store, 1, &t, err)) != 0)
        goto done;
    if ((rc = store_del(t, STORE_COLLECTIONS, name, strlen(name))) != 0 ||
        (rc = store_del_prefix(t, STORE_CHUNKS, prefix, 4)) != 0 ||
        (rc = store_del_prefix(t, STORE_ROWS, prefix, 4)) != 0 ||
        (rc = store_del_prefix(t, STORE_ACLS, prefix, 4)) != 0 ||
        /* its chunks' history stays: questions about the revisions it lived read it */
        (rc = history_coll_drop(t, name, atomic_load(&e->revision) + 1, c->cfg.id)) != 0 ||
        (rc = drop_meta_key(t, "next", c->cfg.id)) != 0 ||
        (rc = drop_meta_key(t, "attr", c->cfg.id)) != 0) {
        store_txn_abort(t);
        rc = cdn_err_set(err, rc, "cannot drop collection \"%s\"", name);
        goto done;
    }
    /* A search holding c reads it whole before the drop commits, or sees it dropped after:
     * never the registry's collection with its records gone from the store. */
    pthread_rwlock_wrlock(&c->lock);
    if ((rc = commit_revision(e, t, err)) == CDN_OK)
        atomic_store(&c->dropped, 1);
    pthread_rwlock_unlock(&c->lock);
    if (rc)
        goto done;
    pthread_rwlock_wrlock(&e->meta_lock);
    memmove(e->colls + pos, e->colls + pos + 1, (e->ncolls - pos - 1) * sizeof(coll_t *));
    e->ncolls--;
    pthread_rwlock_unlock(&e->meta_lock);
    /* The file goes now; searches still holding c read through their own mapping. */
    if (c->cfg.dim && coll_vecfile_path(e->dir, &c->cfg, path, sizeof path) == 0)
        unlink(path);
    coll_checkpoints_remove(e->dir, c->cfg.id, c->cfg.gen, 1);
    c->hnsw_dirty = c->text_dirty = 0; /* dropped: nothing to save */
    coll_unref(c);
done:
    pthread_mutex_unlock(&e->write_lock);
    return rc;
}

int engine_coll_attrs(engine_t *e, const char *name, char **json, cdn_err_t *err)
{
    unsigned char k[8];
    store_txn_t *t;
    const void *v;
    size_t vlen;
    coll_t *c;
    int rc;
    *json = NULL;
    if ((rc = engine_coll_get(e, name, &c, err)) != 0)
        return rc;
    attrs_key(c->cfg.id, k);
    /* Under the collection's lock, which a drop holds across its commit: the attrs are read
     * before the drop, or the collection is seen dropped (never its attrs read as none). */
    pthread_rwlock_rdlock(&c->lock);
    if (atomic_load(&c->dropped))
        rc = cdn_err_set(err, CDN_ERR_NOT_FOUND, "no such collection \"%s\"", name);
    else
        rc = store_txn_begin(e->store, 0, &t, err);
    pthread_rwlock_unlock(&c->lock);
    coll_unref(c);
    if (rc)
        return rc;
    rc = store_get(t, STORE_META, k, 8, &v, &vlen);
    if (rc == CDN_ERR_NOT_FOUND) {
        v = "{}";
        vlen = 2;
        rc = CDN_OK;
    }
    if (rc == CDN_OK && (*json = cdn_malloc(vlen + 1)) != NULL) {
        memcpy(*json, v, vlen);
        (*json)[vlen] = '\0';
    } else if (rc == CDN_OK) {
        rc = cdn_err_set(err, CDN_ERR_NOMEM, "out of memory");
    }
    store_txn_abort(t);
    return rc;
}

/* Rebuilds c's text index for configuration cfg from its rows (a field was added): the
 * checkpoint goes, a fresh index takes every live row. Under c's write lock. */
static int text_rebuild(engine_t *e, coll_t *c, const coll_config_t *cfg, cdn_err_t *err)
{
    char path[4096];
    store_txn_t *t;
    textidx_t *fresh, *old = c->text;
    coll_config_t was = c->cfg;
    int rc;
    if ((rc = coll_text_create(cfg, &fresh, err)) != 0)
        return rc;
    if (coll_file_path(e->dir, c->cfg.id, c->cfg.gen, "text", path, sizeof path) == 0)
        unlink(path);
    c->text = fresh;
    c->cfg = *cfg; /* the rows are indexed by the new field list */
    if ((rc = store_txn_begin(e->store, 0, &t, err)) == CDN_OK) {
        rc = coll_text_open(e->dir, t, c, err);
        store_txn_abort(t);
    }
    if (rc) {
        textidx_free(fresh);
        c->text = old;
        c->cfg = was;
        return rc;
    }
    textidx_free(old);
    c->text_dirty = 1;
    return CDN_OK;
}

int engine_coll_update(engine_t *e, const char *name, const char *attrs_json,
                       const char *const *text_names, size_t n_text, const char *const *meta_names,
                       const int *meta_kinds, size_t n_meta, cdn_err_t *err)
{
    coll_config_t cfg;
    unsigned char k[8];
    store_txn_t *t = NULL;
    char *json = NULL;
    coll_t *c;
    size_t added = 0;
    int rc;
    /* Looked up under the writer lock: a compaction or drop that commits between a lookup and
     * the lock would leave c a stale copy, whose configuration (its file generation) must not
     * be stored again. */
    pthread_mutex_lock(&e->write_lock);
    if ((rc = engine_coll_get(e, name, &c, err)) != 0) {
        pthread_mutex_unlock(&e->write_lock);
        return rc;
    }
    cfg = c->cfg;
    for (size_t i = 0; i < n_text; i++) {
        size_t j, len = strlen(text_names[i]);
        for (j = 0; j < cfg.n_text && strcmp(cfg.text_fields[j], text_names[i]); j++)
            ;
        if (j < cfg.n_text)
            continue;
        for (j = 0; j < cfg.n_meta && strcmp(cfg.meta_fields[j], text_names[i]); j++)
            ;
        if (j < cfg.n_meta || !len || len > COLL_NAME_MAX || cfg.n_text == COLL_TEXT_FIELDS_MAX) {
            rc = cdn_err_set(err, j < cfg.n_meta ? CDN_ERR_CONFLICT : CDN_ERR_INVALID,
                             "text field \"%.64s\": %s", text_names[i],
                             j < cfg.n_meta                ? "a metadata field has that name"
                             : !len || len > COLL_NAME_MAX ? "the name is empty or too long"
                                                           : "the collection has 16, the limit");
            goto done;
        }
        memcpy(cfg.text_fields[cfg.n_text++], text_names[i], len + 1);
        added++;
    }
    for (size_t i = 0; i < n_meta; i++) {
        size_t j, len = strlen(meta_names[i]);
        for (j = 0; j < cfg.n_meta && strcmp(cfg.meta_fields[j], meta_names[i]); j++)
            ;
        for (size_t f = 0; f < cfg.n_text; f++)
            if (!strcmp(cfg.text_fields[f], meta_names[i])) {
                rc = cdn_err_set(err, CDN_ERR_CONFLICT,
                                 "metadata field \"%.64s\" has a text field's name", meta_names[i]);
                goto done;
            }
        if (j < cfg.n_meta) {
            if (cfg.meta_kinds[j] != meta_kinds[i]) {
                rc = cdn_err_set(err, CDN_ERR_CONFLICT,
                                 "metadata field \"%.64s\" is already indexed with another type",
                                 meta_names[i]);
                goto done;
            }
            continue;
        }
        if (cfg.n_meta == COLL_META_FIELDS_MAX) {
            rc = cdn_err_set(err, CDN_ERR_LIMIT,
                             "collection \"%s\" already indexes %d metadata "
                             "fields, the limit",
                             name, COLL_META_FIELDS_MAX);
            goto done;
        }
        if (!len || len > COLL_NAME_MAX || meta_names[i][0] == '_') {
            rc = cdn_err_set(err, CDN_ERR_INVALID,
                             "a metadata field name is empty, too long or starts with '_'");
            goto done;
        }
        memcpy(cfg.meta_fields[cfg.n_meta], meta_names[i], len + 1);
        cfg.meta_kinds[cfg.n_meta++] = meta_kinds[i];
        added++;
    }
    if (added) { /* refuse a kind the text layer does not know before storing anything */
        textidx_t *probe;
        if ((rc = coll_text_create(&cfg, &probe, err)) != 0)
            goto done;
        textidx_free(probe);
    }
    if (!added && !attrs_json)
        goto done;
    attrs_key(cfg.id, k);
    if ((added && (rc = coll_config_encode(&cfg, &json)) != 0) ||
        (rc = store_txn_begin(e->store, 1, &t, err)) != 0)
        goto done;
    if ((added &&
         (rc = store_put(t, STORE_COLLECTIONS, name, strlen(name), json, strlen(json))) != 0) ||
        (attrs_json &&
         (rc = store_put(t, STORE_META, k, 8, attrs_json, strlen(attrs_json))) != 0)) {
        store_txn_abort(t);
        cdn_err_set(err, rc, "cannot record the collection: %s", cdn_strerror(rc));
        goto done;
    }
    if ((rc = commit_revision(e, t, err)) != 0 || !added)
        goto done;
    pthread_rwlock_wrlock(&c->lock);
    if ((rc = text_rebuild(e, c, &cfg, err)) != 0)
        atomic_store(&c->broken, 1); /* stored but not in memory: fail closed until reopened */
    pthread_rwlock_unlock(&c->lock);
done:
    free(json); /* from jansson's allocator */
    pthread_mutex_unlock(&e->write_lock);
    coll_unref(c);
    return rc;
}

int engine_object_perm_note(engine_t *e, const char *name)
{
    const char *perm = acl_object_permission(name);
    if (!perm)
        return CDN_OK;
    for (size_t i = 0; i < e->n_object_perms; i++)
        if (!strcmp(e->object_perms[i], perm))
            return CDN_OK;
    if (e->n_object_perms == ENGINE_OBJECT_PERMS_MAX || strlen(perm) >= sizeof e->object_perms[0])
        return CDN_ERR_LIMIT;
    snprintf(e->object_perms[e->n_object_perms++], sizeof e->object_perms[0], "%s", perm);
    return CDN_OK;
}
