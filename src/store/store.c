/* store.c: LMDB environment, tables and transactions behind store.h.
 * Relies on LMDB; every committed write transaction is fsynced by LMDB before commit returns. */
#include "store/store.h"
#include "base/fileio.h"
#include "base/mem.h"
#include "base/testhook.h"

#include <errno.h>
#include <fcntl.h>
#include <lmdb.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

_Static_assert(STORE_NTABLES <= STORE_TABLES_MAX, "the data's tables must fit a store");
static const char *const table_names[STORE_NTABLES] = {
    "meta",          "collections", "chunks",    "rows",     "acls",       "principals",
    "principal_ids", "model_log",   "hist_time", "hist_acl", "hist_model", "hist_snap",
};

struct store {
    MDB_env *env; /* NULL after a store_trim failed to open it again */
    MDB_dbi dbi[STORE_TABLES_MAX];
    int ntables;
    _Atomic uint64_t last_commit_us; /* the last time store_revision_set recorded */
    /* What store_trim needs to open the environment again. */
    char *dir;
    uint64_t map_size;
    const char *const *names;
    /* Open transactions, counted so that store_trim can close the environment when none is:
     * mu guards env, txns and draining; cv signals a transaction's end and a drain's end. */
    pthread_mutex_t mu;
    pthread_cond_t cv;
    long txns, wtxns; /* open transactions, and of them write transactions */
    int draining;     /* no transaction may begin: store_trim or store_compact_file */
    int writes_held;  /* no write transaction may begin: store_compact_file copies the file */
    int trim_wanted;  /* a large write transaction committed since the last trim */
    uint64_t trims;
};

struct store_txn {
    store_t *s;
    MDB_txn *txn;
    int write;
    size_t written; /* bytes of keys and values put or deleted */
    size_t writes;  /* records put or deleted */
};

/* A write transaction that put or deleted this many bytes, or this many records (each may
 * dirty a page of its own), has LMDB keep megabytes of pages after its commit: the environment
 * is opened again when no transaction is open. */
#define TRIM_WRITTEN (8u << 20)
#define TRIM_WRITES 20000u

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

/* Creates and opens s->env with s's tables; on failure s->env is NULL and the LMDB code
 * returned. */
static int env_open(store_t *s)
{
    MDB_txn *txn = NULL;
    int rc;
    if ((rc = mdb_env_create(&s->env)) != 0) {
        s->env = NULL;
        return rc;
    }
    mdb_env_set_maxdbs(s->env, (MDB_dbi)s->ntables + 2);
    mdb_env_set_maxreaders(s->env, 512);
    if ((rc = mdb_env_set_mapsize(s->env, s->map_size)) != 0)
        goto fail;
    /* MDB_NOTLS: read transactions are not tied to threads, so a pool of HTTP threads works. */
    if ((rc = mdb_env_open(s->env, s->dir, MDB_NOTLS, CDN_FILE_MODE)) != 0)
        goto fail;
    if ((rc = mdb_txn_begin(s->env, NULL, 0, &txn)) != 0)
        goto fail;
    for (int i = 0; i < s->ntables; i++)
        if ((rc = mdb_dbi_open(txn, s->names[i], MDB_CREATE, &s->dbi[i])) != 0)
            goto fail;
    rc = mdb_txn_commit(txn);
    txn = NULL;
    if (rc == 0)
        return 0;
fail:
    if (txn)
        mdb_txn_abort(txn);
    mdb_env_close(s->env);
    s->env = NULL;
    return rc;
}

int store_open_tables(const char *dir, uint64_t map_size, const char *const *names, int ntables,
                      store_t **out, cdn_err_t *err)
{
    store_t *s;
    int rc;
    if (ntables < 1 || ntables > STORE_TABLES_MAX)
        return cdn_err_set(err, CDN_ERR_INTERNAL, "a store has 1 to %d tables", STORE_TABLES_MAX);
    if (!(s = cdn_calloc(1, sizeof *s)) || !(s->dir = cdn_strdup(dir))) {
        cdn_free(s);
        return cdn_err_set(err, CDN_ERR_NOMEM, "out of memory opening the store");
    }
    s->ntables = ntables;
    s->names = names;
    s->map_size = map_size ? map_size : (64ull << 30);
    pthread_mutex_init(&s->mu, NULL);
    pthread_cond_init(&s->cv, NULL);
    /* a store_compact_file that died before its switch */
    char tmp[4096];
    if (snprintf(tmp, sizeof tmp, "%s/" STORE_COMPACT_TMP, dir) < (int)sizeof tmp)
        (void)unlink(tmp);
    if ((rc = env_open(s)) != 0) {
        rc = lmdb_err(err, rc, "cannot open the data directory's database");
        store_close(s);
        return rc;
    }
    *out = s;
    return CDN_OK;
}

/* txn_open's answer when a store_trim could not open the environment again. */
#define NO_ENV (-1)
#define NO_ENV_MSG                                                                                 \
    "the database could not be opened again after handing back its memory: reopen the data "       \
    "directory"

static void txn_closed(store_t *s, int write, int large);

/* Begins an LMDB transaction counted in s->txns (and s->wtxns); waits while store_trim or
 * store_compact_file drains them. Returns an LMDB code or NO_ENV. */
static int txn_open(store_t *s, int write, MDB_txn **txn)
{
    int rc;
    pthread_mutex_lock(&s->mu);
    while (s->draining || (write && s->writes_held))
        pthread_cond_wait(&s->cv, &s->mu);
    MDB_env *env = s->env;
    if (!env) {
        pthread_mutex_unlock(&s->mu);
        return NO_ENV;
    }
    s->txns++;
    s->wtxns += write != 0;
    pthread_mutex_unlock(&s->mu);
    if ((rc = mdb_txn_begin(env, NULL, write ? 0 : MDB_RDONLY, txn)) != 0)
        txn_closed(s, write, 0);
    return rc;
}

static int other_process(const char *dir, int *fd);

/* Closes and opens the environment again; with copy, renames that file over data.mdb in between
 * (*swapped 1 when it did). Called with s->mu held, s->draining set and no transaction open;
 * returns with s->mu held, an LMDB code, and s->env NULL on failure. The mutex is let go
 * meanwhile, so that no lock of LMDB's is ever taken under it; transactions cannot begin while
 * draining is set. */
static int reopen(store_t *s, const char *copy, int *swapped)
{
    MDB_env *old = s->env;
    s->env = NULL;
    s->trim_wanted = 0;
    s->trims++;
    pthread_mutex_unlock(&s->mu);
    /* Nothing points into the map and nothing can begin; every commit was synced, so closing
     * loses nothing. */
    mdb_env_close(old);
    if (copy) {
        char path[4096];
        int lockfd = -1;
        cdn_hook_run(CDN_HOOK_STORE_COPIED);
        snprintf(path, sizeof path, "%s/data.mdb", s->dir);
        if (!other_process(s->dir, &lockfd) && !store_fault_hit() && rename(copy, path) == 0) {
            (void)cdn_file_fsync_dir_of(path);
            *swapped = 1;
        }
        if (lockfd >= 0)
            close(lockfd); /* before LMDB opens lock.mdb: closing it later drops LMDB's lock */
    }
    int rc = store_fault_hit() ? EIO : env_open(s);
    pthread_mutex_lock(&s->mu);
    return rc;
}

uint64_t store_trims(store_t *s)
{
    pthread_mutex_lock(&s->mu);
    uint64_t n = s->trims;
    pthread_mutex_unlock(&s->mu);
    return n;
}

/* The end of a transaction txn_open began (after its commit or abort, or its failed begin);
 * large is 1 for a committed write transaction that wrote TRIM_WRITTEN or TRIM_WRITES. The last
 * transaction to end after a large one opens the environment again (store_trim). */
static void txn_closed(store_t *s, int write, int large)
{
    pthread_mutex_lock(&s->mu);
    s->trim_wanted |= large;
    s->wtxns -= write != 0;
    if (--s->txns == 0 && !s->draining && !s->writes_held && s->trim_wanted) {
        s->draining = 1;
        (void)reopen(s, NULL, NULL); /* a failure shows at the next transaction's begin */
        s->draining = 0;
    }
    /* store_trim or store_compact_file may be waiting for this */
    if (s->txns == 0 || (s->wtxns == 0 && s->writes_held))
        pthread_cond_broadcast(&s->cv);
    pthread_mutex_unlock(&s->mu);
}

/* An address inside the map: the first key of any table (a read transaction's keys and values
 * point into the map). 0 for an empty database. */
static uintptr_t map_address(store_t *s)
{
    MDB_txn *txn;
    MDB_cursor *cur;
    MDB_val k, v;
    uintptr_t p = 0;
    if (txn_open(s, 0, &txn))
        return 0;
    for (int i = 0; i < s->ntables && !p; i++) {
        if (mdb_cursor_open(txn, s->dbi[i], &cur))
            continue;
        if (!mdb_cursor_get(cur, &k, &v, MDB_FIRST))
            p = (uintptr_t)k.mv_data;
        mdb_cursor_close(cur);
    }
    mdb_txn_abort(txn);
    txn_closed(s, 0, 0);
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

/* The realtime clock wait_ms from now, for pthread_cond_timedwait. */
static struct timespec deadline(int wait_ms)
{
    struct timespec t;
    clock_gettime(CLOCK_REALTIME, &t);
    t.tv_sec += wait_ms / 1000;
    t.tv_nsec += (long)(wait_ms % 1000) * 1000000L;
    if (t.tv_nsec >= 1000000000L) {
        t.tv_sec++;
        t.tv_nsec -= 1000000000L;
    }
    return t;
}

/* With s->mu held: waits until *count is 0 or wait_ms have passed; 1 when it is 0. */
static int drained(store_t *s, const long *count, int wait_ms)
{
    struct timespec until = deadline(wait_ms);
    int rc = 0;
    while (*count > 0 && rc != ETIMEDOUT)
        rc = pthread_cond_timedwait(&s->cv, &s->mu, &until);
    return *count == 0;
}

/* Takes s->mu for store_trim or store_compact_file: 1 with it held; 0 with it let go when one
 * of them is under way (*rc CDN_OK) or the environment is gone (*rc CDN_ERR_IO). */
static int lock_idle(store_t *s, int *rc, cdn_err_t *err)
{
    pthread_mutex_lock(&s->mu);
    *rc = CDN_OK;
    if (!s->draining && !s->writes_held && s->env)
        return 1;
    int gone = !s->env;
    pthread_mutex_unlock(&s->mu);
    if (gone)
        *rc = cdn_err_set(err, CDN_ERR_IO, NO_ENV_MSG);
    return 0;
}

int store_trim(store_t *s, int wait_ms, int *trimmed, cdn_err_t *err)
{
    int rc, ret = CDN_OK;
    *trimmed = 0;
    if (!lock_idle(s, &rc, err))
        return rc;
    s->draining = 1;
    if (drained(s, &s->txns, wait_ms)) {
        if ((rc = reopen(s, NULL, NULL)) != 0)
            ret = lmdb_err(err, rc, "cannot open the data directory's database again");
        *trimmed = rc == 0;
    }
    s->draining = 0;
    pthread_cond_broadcast(&s->cv);
    pthread_mutex_unlock(&s->mu);
    return ret;
}

int store_file_bytes(store_t *s, uint64_t *used, uint64_t *free_bytes)
{
    MDB_txn *txn;
    MDB_cursor *cur;
    MDB_envinfo info;
    MDB_stat st;
    MDB_val k, v;
    uint64_t free_pages = 0;
    int rc = txn_open(s, 0, &txn);
    *used = *free_bytes = 0;
    if (rc)
        return CDN_ERR_IO;
    mdb_env_info(mdb_txn_env(txn), &info);
    mdb_env_stat(mdb_txn_env(txn), &st);
    /* The free list (LMDB's table 0): per freeing transaction a list of page numbers whose
     * first word is its length. */
    if ((rc = mdb_cursor_open(txn, 0, &cur)) == 0) {
        while ((rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT)) == 0)
            if (v.mv_size >= sizeof(size_t))
                free_pages += *(const size_t *)v.mv_data;
        mdb_cursor_close(cur);
    }
    *used = (uint64_t)(info.me_last_pgno + 1) * st.ms_psize;
    *free_bytes = free_pages * st.ms_psize;
    mdb_txn_abort(txn);
    txn_closed(s, 0, 0);
    return rc == 0 || rc == MDB_NOTFOUND ? CDN_OK : CDN_ERR_IO;
}

/* 1 when another process has the environment open: LMDB holds a shared lock on the first
 * byte of lock.mdb in every process that has it open (ours is closed). *fd is left open,
 * holding our own lock on that byte, so that no process opens the file being replaced; closing
 * it lets go. */
static int other_process(const char *dir, int *fd)
{
    char path[4096];
    struct flock fl = {.l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = 0, .l_len = 1};
    snprintf(path, sizeof path, "%s/lock.mdb", dir);
    *fd = open(path, O_RDWR | O_CLOEXEC);
    return *fd < 0 || fcntl(*fd, F_SETLK, &fl) != 0;
}

/* Writes the compacted copy of s's database into path, synced. Returns an LMDB or errno code. */
static int write_copy(store_t *s, const char *path)
{
    int rc, fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, CDN_FILE_MODE);
    if (fd < 0)
        return errno;
    rc = store_fault_hit() ? EIO : mdb_env_copyfd2(s->env, fd, MDB_CP_COMPACT);
    if (rc == 0 && fsync(fd) != 0)
        rc = errno;
    close(fd);
    return rc;
}

int store_compact_file(store_t *s, int wait_ms, int *done, cdn_err_t *err)
{
    char tmp[4096];
    int rc, ret = CDN_OK;
    *done = 0;
    snprintf(tmp, sizeof tmp, "%s/" STORE_COMPACT_TMP, s->dir);
    if (!lock_idle(s, &rc, err))
        return rc;
    /* 1. No write may begin, and open ones end: the copy is then the database until the swap. */
    s->writes_held = 1;
    if (!drained(s, &s->wtxns, wait_ms))
        goto out;
    /* 2. The copy, beside readers: it reads through a transaction of its own, counted so that
     * nothing closes the environment under it. */
    s->txns++;
    pthread_mutex_unlock(&s->mu);
    rc = write_copy(s, tmp);
    pthread_mutex_lock(&s->mu);
    s->txns--;
    if (rc) {
        ret = cdn_err_set(err, rc == ENOSPC ? CDN_ERR_LIMIT : CDN_ERR_IO,
                          "cannot write a compacted copy of the database: %s", mdb_strerror(rc));
        goto out;
    }
    /* 3. Readers drain (a wait of its own: the copy may have taken longer than wait_ms); then
     * the environment closes, the copy replaces the file and opens. */
    s->draining = 1;
    if (drained(s, &s->txns, wait_ms) && (rc = reopen(s, tmp, done)) != 0)
        ret = lmdb_err(err, rc, "cannot open the data directory's database again");
    s->draining = 0;
out:
    s->writes_held = 0;
    pthread_cond_broadcast(&s->cv);
    pthread_mutex_unlock(&s->mu);
    if (!*done)
        unlink(tmp);
    return ret;
}

void store_close(store_t *s)
{
    if (!s)
        return;
    if (s->env)
        mdb_env_close(s->env);
    pthread_cond_destroy(&s->cv);
    pthread_mutex_destroy(&s->mu);
    cdn_free(s->dir);
    cdn_free(s);
}

int store_check(store_t *s, cdn_err_t *err)
{
    MDB_txn *txn;
    int rc = txn_open(s, 0, &txn);
    if (rc == NO_ENV)
        return cdn_err_set(err, CDN_ERR_IO, NO_ENV_MSG);
    if (rc == MDB_PANIC)
        return cdn_err_set(err, CDN_ERR_IO,
                           "the database refuses all use since a write or sync of its meta page "
                           "failed (%s): reopen the data directory",
                           mdb_strerror(rc));
    if (rc)
        return lmdb_err(err, rc, "cannot start a transaction");
    mdb_txn_abort(txn);
    txn_closed(s, 0, 0);
    return CDN_OK;
}

int store_txn_begin(store_t *s, int write, store_txn_t **out, cdn_err_t *err)
{
    store_txn_t *t = cdn_malloc(sizeof *t);
    int rc;
    if (!t)
        return cdn_err_set(err, CDN_ERR_NOMEM, "out of memory starting a transaction");
    t->s = s;
    t->written = t->writes = 0;
    t->write = write != 0;
    rc = txn_open(s, t->write, &t->txn);
    if (rc) {
        cdn_free(t);
        if (rc == NO_ENV)
            return cdn_err_set(err, CDN_ERR_IO, NO_ENV_MSG);
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
    txn_closed(t->s, t->write, rc == 0 && (t->written >= TRIM_WRITTEN || t->writes >= TRIM_WRITES));
    cdn_free(t);
    return rc ? lmdb_err(err, rc, "cannot commit") : CDN_OK;
}

void store_txn_abort(store_txn_t *t)
{
    if (!t)
        return;
    mdb_txn_abort(t->txn);
    txn_closed(t->s, t->write, 0);
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
    t->written += klen + vlen;
    t->writes++;
    if (rc == MDB_MAP_FULL || rc == MDB_TXN_FULL)
        return CDN_ERR_LIMIT;
    return rc ? CDN_ERR_IO : CDN_OK;
}

int store_del(store_txn_t *t, store_table_t tb, const void *key, size_t klen)
{
    MDB_val k = {klen, (void *)key};
    int rc = store_fault_hit() ? EIO : mdb_del(t->txn, t->s->dbi[tb], &k, NULL);
    t->written += klen;
    t->writes++;
    if (rc == MDB_NOTFOUND)
        return CDN_ERR_NOT_FOUND;
    return rc ? CDN_ERR_IO : CDN_OK;
}

int store_scan_prefix(store_txn_t *t, store_table_t tb, const void *prefix, size_t plen,
                      store_iter_fn fn, void *ctx)
{
    return store_scan_from(t, tb, prefix, plen, prefix, plen, fn, ctx);
}

/* store_scan_from (back = 0) and store_scan_back (back = 1): the cursor is placed on the first
 * key at or after start (forward; the table's first key when slen is 0) or the last key at or
 * before it (backward), then each key under prefix is handed to fn, one step at a time, until
 * a key leaves the prefix, the table ends or fn returns non-zero (that value is returned). */
static int scan_dir(store_txn_t *t, store_table_t tb, const void *prefix, size_t plen,
                    const void *start, size_t slen, int back, store_iter_fn fn, void *ctx)
{
    MDB_cursor *c;
    MDB_val k = {slen, (void *)start}, v;
    int rc = mdb_cursor_open(t->txn, t->s->dbi[tb], &c);
    if (rc)
        return CDN_ERR_IO;
    rc = mdb_cursor_get(c, &k, &v, slen || back ? MDB_SET_RANGE : MDB_FIRST);
    if (back && rc == MDB_NOTFOUND) /* every key is before start */
        rc = mdb_cursor_get(c, &k, &v, MDB_LAST);
    else if (back && rc == 0 && (k.mv_size != slen || memcmp(k.mv_data, start, slen) != 0))
        rc = mdb_cursor_get(c, &k, &v, MDB_PREV); /* past start: the one before */
    int ret = CDN_OK;
    while (rc == 0) {
        if (k.mv_size < plen || (plen && memcmp(k.mv_data, prefix, plen) != 0))
            break;
        if ((ret = fn(ctx, k.mv_data, k.mv_size, v.mv_data, v.mv_size)) != 0)
            break;
        rc = mdb_cursor_get(c, &k, &v, back ? MDB_PREV : MDB_NEXT);
    }
    mdb_cursor_close(c);
    if (ret)
        return ret;
    return (rc == 0 || rc == MDB_NOTFOUND) ? CDN_OK : CDN_ERR_IO;
}

int store_scan_from(store_txn_t *t, store_table_t tb, const void *prefix, size_t plen,
                    const void *start, size_t slen, store_iter_fn fn, void *ctx)
{
    return scan_dir(t, tb, prefix, plen, start, slen, 0, fn, ctx);
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
    return scan_dir(t, tb, prefix, plen, start, slen, 1, fn, ctx);
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
        t->written += k.mv_size + v.mv_size;
        t->writes++;
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
