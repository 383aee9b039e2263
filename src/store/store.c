/* store.c: LMDB environment, tables and transactions behind store.h.
 * Relies on LMDB; every committed write transaction is fsynced by LMDB before commit returns. */
#include "store/store.h"
#include "base/fileio.h"
#include "base/mem.h"

#include <errno.h>
#include <lmdb.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>

_Static_assert(STORE_NTABLES <= STORE_TABLES_MAX, "the data's tables must fit a store");
static const char *const table_names[STORE_NTABLES] = {
    "meta",          "collections", "chunks",    "rows",     "acls",       "principals",
    "principal_ids", "model_log",   "hist_time", "hist_acl", "hist_model", "hist_snap",
};

struct store {
    MDB_env *env;
    MDB_dbi dbi[STORE_TABLES_MAX];
    int ntables;
    _Atomic uint64_t last_commit_us; /* the last time store_revision_set recorded */
};

struct store_txn {
    store_t *s;
    MDB_txn *txn;
};

/* The fault hook's countdown: the only process-wide state here, and only tests set it. */
static atomic_long fault_countdown = -1;

void store_fail_after(long n)
{
    atomic_store(&fault_countdown, n);
}

int store_fault_hit(void)
{
    if (atomic_load_explicit(&fault_countdown, memory_order_relaxed) < 0)
        return 0;
    return atomic_fetch_sub(&fault_countdown, 1) == 0;
}

static int lmdb_err(cdn_err_t *err, int rc, const char *what)
{
    int code = rc == MDB_MAP_FULL ? CDN_ERR_LIMIT : rc == ENOMEM ? CDN_ERR_NOMEM : CDN_ERR_IO;
    return cdn_err_set(err, code, "%s: %s", what, mdb_strerror(rc));
}

int store_open(const char *dir, uint64_t map_size, store_t **out, cdn_err_t *err)
{
    int rc = store_open_tables(dir, map_size, table_names, STORE_NTABLES, out, err);
    store_txn_t *t;
    const void *k, *v;
    size_t kl, vl;
    if (rc == CDN_OK && store_txn_begin(*out, 0, &t, NULL) == CDN_OK) {
        if (store_last(t, STORE_HIST_TIME, &k, &kl, &v, &vl) == CDN_OK && kl == 16)
            atomic_store(&(*out)->last_commit_us, store_rd64(k));
        store_txn_abort(t);
    }
    return rc;
}

int store_open_tables(const char *dir, uint64_t map_size, const char *const *names, int ntables,
                      store_t **out, cdn_err_t *err)
{
    store_t *s;
    MDB_txn *txn = NULL;
    int rc;
    if (ntables < 1 || ntables > STORE_TABLES_MAX)
        return cdn_err_set(err, CDN_ERR_INTERNAL, "a store has 1 to %d tables", STORE_TABLES_MAX);
    if (!(s = cdn_calloc(1, sizeof *s)))
        return cdn_err_set(err, CDN_ERR_NOMEM, "out of memory opening the store");
    s->ntables = ntables;
    if ((rc = mdb_env_create(&s->env)) != 0)
        goto fail;
    mdb_env_set_maxdbs(s->env, (MDB_dbi)ntables + 2);
    mdb_env_set_maxreaders(s->env, 512);
    if ((rc = mdb_env_set_mapsize(s->env, map_size ? map_size : (64ull << 30))) != 0)
        goto fail;
    /* MDB_NOTLS: read transactions are not tied to threads, so a pool of HTTP threads works. */
    if ((rc = mdb_env_open(s->env, dir, MDB_NOTLS, CDN_FILE_MODE)) != 0)
        goto fail;
    if ((rc = mdb_txn_begin(s->env, NULL, 0, &txn)) != 0)
        goto fail;
    for (int i = 0; i < ntables; i++)
        if ((rc = mdb_dbi_open(txn, names[i], MDB_CREATE, &s->dbi[i])) != 0)
            goto fail;
    if ((rc = mdb_txn_commit(txn)) != 0) {
        txn = NULL;
        goto fail;
    }
    *out = s;
    return CDN_OK;
fail:
    if (txn)
        mdb_txn_abort(txn);
    lmdb_err(err, rc, "cannot open the data directory's database");
    if (s->env)
        mdb_env_close(s->env);
    cdn_free(s);
    return err ? err->code : CDN_ERR_IO;
}

/* An address inside the map: the first key of any table (a read transaction's keys and values
 * point into the map). 0 for an empty database. */
static uintptr_t map_address(store_t *s)
{
    MDB_txn *txn;
    MDB_cursor *cur;
    MDB_val k, v;
    uintptr_t p = 0;
    if (mdb_txn_begin(s->env, NULL, MDB_RDONLY, &txn))
        return 0;
    for (int i = 0; i < s->ntables && !p; i++) {
        if (mdb_cursor_open(txn, s->dbi[i], &cur))
            continue;
        if (!mdb_cursor_get(cur, &k, &v, MDB_FIRST))
            p = (uintptr_t)k.mv_data;
        mdb_cursor_close(cur);
    }
    mdb_txn_abort(txn);
    return p;
}

void store_release_pages(store_t *s)
{
    /* LMDB does not say where it mapped the file (mdb_env_info's address is only set with
     * MDB_FIXEDMAP), so the mapping holding one of its pages is looked up. */
    uintptr_t p = s ? map_address(s) : 0;
    FILE *f = p ? fopen("/proc/self/maps", "r") : NULL;
    char line[512];
    int at_start = 1;
    while (f && fgets(line, sizeof line, f)) {
        unsigned long lo, hi;
        int starts = at_start; /* a long line arrives in pieces: parse only line starts */
        at_start = strchr(line, '\n') != NULL;
        if (starts && sscanf(line, "%lx-%lx", &lo, &hi) == 2 && p >= lo && p < hi) {
            (void)madvise((void *)lo, hi - lo, MADV_DONTNEED);
            /* Results read chunk records from here: if the page cache lost the file, have the
             * kernel read it back in the background (no mapping, so no resident memory). */
            (void)madvise((void *)lo, hi - lo, MADV_WILLNEED);
            break;
        }
    }
    if (f)
        fclose(f);
}

void store_close(store_t *s)
{
    if (!s)
        return;
    mdb_env_close(s->env);
    cdn_free(s);
}

int store_check(store_t *s, cdn_err_t *err)
{
    MDB_txn *txn;
    int rc = mdb_txn_begin(s->env, NULL, MDB_RDONLY, &txn);
    if (rc == MDB_PANIC)
        return cdn_err_set(err, CDN_ERR_IO,
                           "the database refuses all use since a write or sync of its meta page "
                           "failed (%s): reopen the data directory",
                           mdb_strerror(rc));
    if (rc)
        return lmdb_err(err, rc, "cannot start a transaction");
    mdb_txn_abort(txn);
    return CDN_OK;
}

int store_txn_begin(store_t *s, int write, store_txn_t **out, cdn_err_t *err)
{
    store_txn_t *t = cdn_malloc(sizeof *t);
    int rc;
    if (!t)
        return cdn_err_set(err, CDN_ERR_NOMEM, "out of memory starting a transaction");
    t->s = s;
    rc = mdb_txn_begin(s->env, NULL, write ? 0 : MDB_RDONLY, &t->txn);
    if (rc) {
        cdn_free(t);
        return lmdb_err(err, rc, "cannot start a transaction");
    }
    *out = t;
    return CDN_OK;
}

int store_txn_commit(store_txn_t *t, cdn_err_t *err)
{
    int rc;
    if (store_fault_hit()) {
        mdb_txn_abort(t->txn); /* what a failed mdb_txn_commit leaves: nothing written */
        rc = EIO;
    } else {
        rc = mdb_txn_commit(t->txn);
    }
    cdn_free(t);
    return rc ? lmdb_err(err, rc, "cannot commit") : CDN_OK;
}

void store_txn_abort(store_txn_t *t)
{
    if (!t)
        return;
    mdb_txn_abort(t->txn);
    cdn_free(t);
}

int store_get(store_txn_t *t, store_table_t tb, const void *key, size_t klen, const void **val,
              size_t *vlen)
{
    MDB_val k = {klen, (void *)key}, v;
    int rc = mdb_get(t->txn, t->s->dbi[tb], &k, &v);
    if (rc == MDB_NOTFOUND)
        return CDN_ERR_NOT_FOUND;
    if (rc)
        return CDN_ERR_IO;
    *val = v.mv_data;
    *vlen = v.mv_size;
    return CDN_OK;
}

int store_put(store_txn_t *t, store_table_t tb, const void *key, size_t klen, const void *val,
              size_t vlen)
{
    MDB_val k = {klen, (void *)key}, v = {vlen, (void *)val};
    int rc = store_fault_hit() ? EIO : mdb_put(t->txn, t->s->dbi[tb], &k, &v, 0);
    if (rc == MDB_MAP_FULL || rc == MDB_TXN_FULL)
        return CDN_ERR_LIMIT;
    return rc ? CDN_ERR_IO : CDN_OK;
}

int store_del(store_txn_t *t, store_table_t tb, const void *key, size_t klen)
{
    MDB_val k = {klen, (void *)key};
    int rc = store_fault_hit() ? EIO : mdb_del(t->txn, t->s->dbi[tb], &k, NULL);
    if (rc == MDB_NOTFOUND)
        return CDN_ERR_NOT_FOUND;
    return rc ? CDN_ERR_IO : CDN_OK;
}

int store_scan_prefix(store_txn_t *t, store_table_t tb, const void *prefix, size_t plen,
                      store_iter_fn fn, void *ctx)
{
    return store_scan_from(t, tb, prefix, plen, prefix, plen, fn, ctx);
}

int store_scan_from(store_txn_t *t, store_table_t tb, const void *prefix, size_t plen,
                    const void *start, size_t slen, store_iter_fn fn, void *ctx)
{
    MDB_cursor *c;
    MDB_val k = {slen, (void *)start}, v;
    int rc = mdb_cursor_open(t->txn, t->s->dbi[tb], &c), ret = CDN_OK;
    if (rc)
        return CDN_ERR_IO;
    rc = mdb_cursor_get(c, &k, &v, slen ? MDB_SET_RANGE : MDB_FIRST);
    while (rc == 0) {
        if (k.mv_size < plen || (plen && memcmp(k.mv_data, prefix, plen) != 0))
            break;
        if ((ret = fn(ctx, k.mv_data, k.mv_size, v.mv_data, v.mv_size)) != 0)
            break;
        rc = mdb_cursor_get(c, &k, &v, MDB_NEXT);
    }
    mdb_cursor_close(c);
    if (ret)
        return ret;
    return (rc == 0 || rc == MDB_NOTFOUND) ? CDN_OK : CDN_ERR_IO;
}

int store_last(store_txn_t *t, store_table_t tb, const void **key, size_t *klen, const void **val,
               size_t *vlen)
{
    MDB_cursor *c;
    MDB_val k, v;
    int rc = mdb_cursor_open(t->txn, t->s->dbi[tb], &c);
    if (rc)
        return CDN_ERR_IO;
    rc = mdb_cursor_get(c, &k, &v, MDB_LAST);
    mdb_cursor_close(c);
    if (rc == MDB_NOTFOUND)
        return CDN_ERR_NOT_FOUND;
    if (rc)
        return CDN_ERR_IO;
    *key = k.mv_data;
    *klen = k.mv_size;
    *val = v.mv_data;
    *vlen = v.mv_size;
    return CDN_OK;
}

int store_scan_back(store_txn_t *t, store_table_t tb, const void *prefix, size_t plen,
                    const void *start, size_t slen, store_iter_fn fn, void *ctx)
{
    MDB_cursor *c;
    MDB_val k = {slen, (void *)start}, v;
    int rc = mdb_cursor_open(t->txn, t->s->dbi[tb], &c), ret = CDN_OK;
    if (rc)
        return CDN_ERR_IO;
    rc = mdb_cursor_get(c, &k, &v, MDB_SET_RANGE);
    if (rc == MDB_NOTFOUND) /* every key is before start */
        rc = mdb_cursor_get(c, &k, &v, MDB_LAST);
    else if (rc == 0 && (k.mv_size != slen || memcmp(k.mv_data, start, slen) != 0))
        rc = mdb_cursor_get(c, &k, &v, MDB_PREV); /* past start: the one before */
    while (rc == 0) {
        if (k.mv_size < plen || (plen && memcmp(k.mv_data, prefix, plen) != 0))
            break;
        if ((ret = fn(ctx, k.mv_data, k.mv_size, v.mv_data, v.mv_size)) != 0)
            break;
        rc = mdb_cursor_get(c, &k, &v, MDB_PREV);
    }
    mdb_cursor_close(c);
    if (ret)
        return ret;
    return (rc == 0 || rc == MDB_NOTFOUND) ? CDN_OK : CDN_ERR_IO;
}

int store_del_prefix(store_txn_t *t, store_table_t tb, const void *prefix, size_t plen)
{
    MDB_cursor *c;
    MDB_val k = {plen, (void *)prefix}, v;
    int rc = mdb_cursor_open(t->txn, t->s->dbi[tb], &c);
    if (rc)
        return CDN_ERR_IO;
    rc = mdb_cursor_get(c, &k, &v, plen ? MDB_SET_RANGE : MDB_FIRST);
    while (rc == 0 && k.mv_size >= plen && memcmp(k.mv_data, prefix, plen) == 0) {
        if ((rc = mdb_cursor_del(c, 0)) != 0)
            break;
        k.mv_size = plen; /* seek again: simpler than reasoning about a cursor after delete */
        k.mv_data = (void *)prefix;
        rc = mdb_cursor_get(c, &k, &v, plen ? MDB_SET_RANGE : MDB_FIRST);
    }
    mdb_cursor_close(c);
    return (rc == 0 || rc == MDB_NOTFOUND) ? CDN_OK : CDN_ERR_IO;
}

int store_meta_u64(store_txn_t *t, const char *key, uint64_t *val, int *set)
{
    const void *v;
    size_t n;
    int rc = store_get(t, STORE_META, key, strlen(key), &v, &n);
    *val = 0;
    if (set)
        *set = rc == CDN_OK;
    if (rc == CDN_ERR_NOT_FOUND)
        return CDN_OK;
    if (rc)
        return rc;
    if (n != 8)
        return CDN_ERR_CORRUPT;
    *val = store_rd64(v);
    return CDN_OK;
}

int store_revision_get(store_txn_t *t, uint64_t *rev)
{
    return store_meta_u64(t, "revision", rev, NULL);
}

int store_revision_set(store_txn_t *t, uint64_t rev)
{
    unsigned char b[8], tk[16];
    struct timespec ts;
    store_be64(b, rev);
    int rc = store_put(t, STORE_META, "revision", 8, b, 8);
    if (rc || t->s->ntables != STORE_NTABLES)
        return rc;
    /* Commit times only move forward along revisions, so a time maps to one revision. */
    clock_gettime(CLOCK_REALTIME, &ts);
    uint64_t now = (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
    uint64_t last = atomic_load(&t->s->last_commit_us);
    if (now <= last)
        now = last + 1;
    atomic_store(&t->s->last_commit_us, now);
    store_be64(tk, now);
    store_be64(tk + 8, rev);
    return store_put(t, STORE_HIST_TIME, tk, 16, "", 0);
}

int store_exists(const char *dir)
{
    char path[4096];
    struct stat st;
    /* LMDB keeps an environment in the file data.mdb of its directory. */
    if (snprintf(path, sizeof path, "%s/data.mdb", dir) >= (int)sizeof path)
        return 0;
    return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}
