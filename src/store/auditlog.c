/* auditlog.c: the audit log's tables behind auditlog.h.
 * Relies on store/store (its own LMDB environment) and xxhash. Three tables: records (seq as 8
 * big-endian bytes -> time, index keys, JSON), index (key then seq, 16 bytes -> nothing: a
 * prefix scan on a key walks its records in sequence order) and meta (the byte count and the
 * owner's flags). Records leave only from the front (retention), so the sequence numbers
 * present are always one run [first, next), which is what auditlog_seq_at bisects. */
#include "store/auditlog.h"
#include "base/mem.h"
#include "store/store.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#define XXH_STATIC_LINKING_ONLY /* XXH64_state_t on the stack */
#include <xxhash.h>

enum { T_RECORDS, T_INDEX, T_META, T_COUNT };
static const char *const table_names[T_COUNT] = {"records", "index", "meta"};
#define TB(t) ((store_table_t)(t))
#define HEAD 12 /* a record's value: time (8), key count (4), keys (8 each), JSON */
#define FLAG_PREFIX "flag:"

struct auditlog {
    store_t *st;
    pthread_mutex_t lock; /* next_seq, last_time and bytes */
    uint64_t next_seq, last_time, bytes;
};

static uint64_t entry_bytes(size_t len, size_t nkeys)
{
    return 8 + HEAD + len + nkeys * 8 + nkeys * 16; /* the record and its index entries */
}

static int read_state(auditlog_t *l, cdn_err_t *err)
{
    store_txn_t *t;
    const void *k, *v;
    size_t kl, vl;
    int rc = store_txn_begin(l->st, 0, &t, err);
    if (rc)
        return rc;
    l->next_seq = 1;
    if ((rc = store_last(t, TB(T_RECORDS), &k, &kl, &v, &vl)) == CDN_OK) {
        if (kl != 8 || vl < HEAD) {
            store_txn_abort(t);
            return cdn_err_set(err, CDN_ERR_CORRUPT, "the audit log's last record is damaged");
        }
        l->next_seq = store_rd64(k) + 1;
        l->last_time = store_rd64(v);
    } else if (rc != CDN_ERR_NOT_FOUND) {
        store_txn_abort(t);
        return cdn_err_set(err, rc, "cannot read the audit log");
    }
    if (store_get(t, TB(T_META), "bytes", 5, &v, &vl) == CDN_OK && vl == 8)
        l->bytes = store_rd64(v);
    store_txn_abort(t);
    return CDN_OK;
}

int auditlog_open(const char *dir, int create, auditlog_t **out, cdn_err_t *err)
{
    auditlog_t *l;
    int rc;
    if (!store_exists(dir)) {
        if (!create)
            return cdn_err_set(err, CDN_ERR_NOT_FOUND, "no audit log in %s", dir);
        if (mkdir(dir, 0700) != 0 && errno != EEXIST)
            return cdn_err_set(err, CDN_ERR_IO, "cannot create %s: %s", dir, strerror(errno));
    }
    if (!(l = cdn_calloc(1, sizeof *l)))
        return cdn_err_set(err, CDN_ERR_NOMEM, "out of memory");
    pthread_mutex_init(&l->lock, NULL);
    /* The map is address space, not memory: 16 GiB bounds the log unless retention does. */
    if ((rc = store_open_tables(dir, 16ull << 30, table_names, T_COUNT, &l->st, err)) != 0 ||
        (rc = read_state(l, err)) != 0) {
        auditlog_close(l);
        return rc;
    }
    *out = l;
    return CDN_OK;
}

void auditlog_close(auditlog_t *l)
{
    if (!l)
        return;
    store_close(l->st);
    pthread_mutex_destroy(&l->lock);
    cdn_free(l);
}

uint64_t auditlog_next_seq(const auditlog_t *l)
{
    pthread_mutex_lock((pthread_mutex_t *)&l->lock);
    uint64_t s = l->next_seq;
    pthread_mutex_unlock((pthread_mutex_t *)&l->lock);
    return s;
}

uint64_t auditlog_last_time(const auditlog_t *l)
{
    pthread_mutex_lock((pthread_mutex_t *)&l->lock);
    uint64_t t = l->last_time;
    pthread_mutex_unlock((pthread_mutex_t *)&l->lock);
    return t;
}

uint64_t auditlog_bytes(auditlog_t *l)
{
    pthread_mutex_lock(&l->lock);
    uint64_t b = l->bytes;
    pthread_mutex_unlock(&l->lock);
    return b;
}

uint64_t auditlog_key(char kind, const char *a, const char *b)
{
    XXH64_state_t st;
    XXH64_reset(&st, 0x61756469u);
    XXH64_update(&st, &kind, 1);
    XXH64_update(&st, a, strlen(a) + 1);
    if (b)
        XXH64_update(&st, b, strlen(b));
    uint64_t h = XXH64_digest(&st);
    return h ? h : 1;
}

static int put_bytes(store_txn_t *t, uint64_t bytes)
{
    unsigned char b[8];
    store_be64(b, bytes);
    return store_put(t, TB(T_META), "bytes", 5, b, 8);
}

/* Writes one record and its index entries into t. */
static int put_record(store_txn_t *t, const auditlog_rec_t *r)
{
    unsigned char key[16], *v;
    size_t vl = HEAD + r->nkeys * 8 + r->len;
    int rc;
    if (!(v = cdn_malloc(vl)))
        return CDN_ERR_NOMEM;
    store_be64(v, r->time_us);
    store_be32(v + 8, (uint32_t)r->nkeys);
    for (size_t i = 0; i < r->nkeys; i++)
        store_be64(v + HEAD + i * 8, r->keys[i]);
    memcpy(v + HEAD + r->nkeys * 8, r->json, r->len);
    store_be64(key, r->seq);
    rc = store_put(t, TB(T_RECORDS), key, 8, v, vl);
    cdn_free(v);
    for (size_t i = 0; rc == CDN_OK && i < r->nkeys; i++) {
        store_be64(key, r->keys[i]);
        store_be64(key + 8, r->seq);
        rc = store_put(t, TB(T_INDEX), key, 16, "", 0);
    }
    return rc;
}

int auditlog_append(auditlog_t *l, const auditlog_rec_t *recs, size_t n, cdn_err_t *err)
{
    store_txn_t *t;
    uint64_t next = auditlog_next_seq(l), bytes = auditlog_bytes(l);
    int rc;
    if (!n)
        return CDN_OK;
    for (size_t i = 0; i < n; i++)
        if (recs[i].seq != next + i || recs[i].nkeys > AUDITLOG_KEYS_MAX)
            return cdn_err_set(err, CDN_ERR_INTERNAL, "audit record %" PRIu64 " is out of order",
                               recs[i].seq);
    if ((rc = store_txn_begin(l->st, 1, &t, err)) != 0)
        return rc;
    for (size_t i = 0; rc == CDN_OK && i < n; i++) {
        rc = put_record(t, &recs[i]);
        bytes += entry_bytes(recs[i].len, recs[i].nkeys);
    }
    if (rc == CDN_OK)
        rc = put_bytes(t, bytes);
    if (rc) {
        store_txn_abort(t);
        return cdn_err_set(err, rc, "cannot write the audit log: %s", cdn_strerror(rc));
    }
    if ((rc = store_txn_commit(t, err)) != 0)
        return rc;
    pthread_mutex_lock(&l->lock);
    l->next_seq = next + n;
    l->last_time = recs[n - 1].time_us;
    l->bytes = bytes;
    pthread_mutex_unlock(&l->lock);
    return CDN_OK;
}

/* ---- Reading. ---- */

typedef struct scan {
    store_txn_t *t;
    uint64_t until_us;
    auditlog_fn fn;
    void *ctx;
} scan_t;

/* Decodes record value v of seq and hands it to the callback; 2 past until_us (stop). */
static int deliver(scan_t *s, uint64_t seq, const unsigned char *v, size_t vl)
{
    if (vl < HEAD)
        return CDN_ERR_CORRUPT;
    uint64_t time = store_rd64(v), nk = store_rd32(v + 8);
    if (nk > (vl - HEAD) / 8)
        return CDN_ERR_CORRUPT;
    if (s->until_us && time >= s->until_us)
        return 2;
    size_t off = HEAD + nk * 8;
    return s->fn(s->ctx, seq, time, (const char *)v + off, vl - off);
}

static int on_record(void *ctx, const void *key, size_t klen, const void *val, size_t vlen)
{
    if (klen != 8)
        return CDN_ERR_CORRUPT;
    return deliver(ctx, store_rd64(key), val, vlen);
}

static int on_index(void *ctx, const void *key, size_t klen, const void *val, size_t vlen)
{
    scan_t *s = ctx;
    const void *v;
    size_t vl;
    (void)val;
    (void)vlen;
    if (klen != 16)
        return CDN_ERR_CORRUPT;
    if (store_get(s->t, TB(T_RECORDS), (const unsigned char *)key + 8, 8, &v, &vl) != CDN_OK)
        return CDN_ERR_CORRUPT; /* an index entry outlived its record */
    return deliver(s, store_rd64((const unsigned char *)key + 8), v, vl);
}

int auditlog_scan(auditlog_t *l, uint64_t key, uint64_t from_seq, uint64_t until_us, auditlog_fn fn,
                  void *ctx, cdn_err_t *err)
{
    unsigned char start[16];
    scan_t s = {NULL, until_us, fn, ctx};
    int rc = store_txn_begin(l->st, 0, &s.t, err);
    if (rc)
        return rc;
    if (key) {
        store_be64(start, key);
        store_be64(start + 8, from_seq);
        rc = store_scan_from(s.t, TB(T_INDEX), start, 8, start, 16, on_index, &s);
    } else {
        store_be64(start, from_seq);
        rc = store_scan_from(s.t, TB(T_RECORDS), NULL, 0, start, 8, on_record, &s);
    }
    store_txn_abort(s.t);
    if (rc == 2)
        return CDN_OK;
    if (rc == CDN_ERR_CORRUPT)
        return cdn_err_set(err, rc, "the audit log is damaged");
    if (rc == CDN_ERR_IO)
        return cdn_err_set(err, rc, "cannot read the audit log");
    return rc;
}

static int first_key(void *ctx, const void *key, size_t klen, const void *val, size_t vlen)
{
    (void)val;
    (void)vlen;
    if (klen != 8)
        return CDN_ERR_CORRUPT;
    *(uint64_t *)ctx = store_rd64(key);
    return 1;
}

/* The time of record seq, which must exist: 0 or an error. */
static int time_of(store_txn_t *t, uint64_t seq, uint64_t *time)
{
    unsigned char k[8];
    const void *v;
    size_t vl;
    store_be64(k, seq);
    if (store_get(t, TB(T_RECORDS), k, 8, &v, &vl) != CDN_OK || vl < HEAD)
        return CDN_ERR_CORRUPT;
    *time = store_rd64(v);
    return CDN_OK;
}

int auditlog_seq_at(auditlog_t *l, uint64_t time_us, uint64_t *seq, cdn_err_t *err)
{
    store_txn_t *t;
    uint64_t lo = 0, hi, tm;
    int rc = store_txn_begin(l->st, 0, &t, err);
    if (rc)
        return rc;
    hi = auditlog_next_seq(l);
    /* records present: [first, next); find the first whose time >= time_us in it */
    rc = store_scan_prefix(t, TB(T_RECORDS), NULL, 0, first_key, &lo);
    if (rc == 1 || rc == CDN_OK)
        rc = CDN_OK;
    if (!lo)
        lo = hi;
    while (rc == CDN_OK && lo < hi) {
        uint64_t mid = lo + (hi - lo) / 2;
        if ((rc = time_of(t, mid, &tm)) != CDN_OK)
            break;
        if (tm < time_us)
            lo = mid + 1;
        else
            hi = mid;
    }
    store_txn_abort(t);
    if (rc)
        return cdn_err_set(err, rc, "the audit log is damaged");
    *seq = lo;
    return CDN_OK;
}

/* ---- Retention. ---- */

typedef struct prune {
    store_txn_t *t;
    uint64_t before_us, max_bytes, bytes, removed, seq;
} prune_t;

static int on_prune(void *ctx, const void *key, size_t klen, const void *val, size_t vlen)
{
    prune_t *p = ctx;
    const unsigned char *v = val;
    unsigned char ik[16];
    if (klen != 8 || vlen < HEAD)
        return CDN_ERR_CORRUPT;
    uint64_t time = store_rd64(v), nk = store_rd32(v + 8);
    if (nk > (vlen - HEAD) / 8)
        return CDN_ERR_CORRUPT;
    int old = p->before_us && time < p->before_us;
    int big = p->max_bytes && p->bytes > p->max_bytes;
    if (!old && !big)
        return 1;
    memcpy(ik + 8, key, 8);
    for (uint64_t i = 0; i < nk; i++) {
        memcpy(ik, v + HEAD + i * 8, 8);
        int rc = store_del(p->t, TB(T_INDEX), ik, 16);
        if (rc && rc != CDN_ERR_NOT_FOUND) /* two equal keys share one entry */
            return rc;
    }
    uint64_t eb = entry_bytes(vlen - HEAD - nk * 8, nk);
    p->bytes = p->bytes > eb ? p->bytes - eb : 0;
    p->removed++;
    p->seq = store_rd64(key);
    return 3; /* its index entries are gone: the caller deletes the record, then looks again */
}

int auditlog_prune(auditlog_t *l, uint64_t before_us, uint64_t max_bytes, uint64_t *removed,
                   cdn_err_t *err)
{
    prune_t p = {NULL, before_us, max_bytes, auditlog_bytes(l), 0, 0};
    unsigned char k[8];
    int rc;
    if (removed)
        *removed = 0;
    if (!before_us && !max_bytes)
        return CDN_OK;
    if ((rc = store_txn_begin(l->st, 1, &p.t, err)) != 0)
        return rc;
    /* One record at a time from the front: a cursor is not reused across deletes. */
    while ((rc = store_scan_prefix(p.t, TB(T_RECORDS), NULL, 0, on_prune, &p)) == 3) {
        store_be64(k, p.seq);
        if ((rc = store_del(p.t, TB(T_RECORDS), k, 8)) != CDN_OK)
            break;
    }
    if (rc == 1 || rc == CDN_OK)
        rc = p.removed ? put_bytes(p.t, p.bytes) : CDN_OK;
    if (rc) {
        store_txn_abort(p.t);
        return cdn_err_set(err, rc, "cannot prune the audit log: %s", cdn_strerror(rc));
    }
    if (!p.removed) {
        store_txn_abort(p.t);
        return CDN_OK;
    }
    if ((rc = store_txn_commit(p.t, err)) != 0)
        return rc;
    pthread_mutex_lock(&l->lock);
    l->bytes = p.bytes;
    pthread_mutex_unlock(&l->lock);
    if (removed)
        *removed = p.removed;
    return CDN_OK;
}

/* ---- Flags. ---- */

int auditlog_flag_set(auditlog_t *l, const char *name, int on, cdn_err_t *err)
{
    char key[256];
    store_txn_t *t;
    int n = snprintf(key, sizeof key, FLAG_PREFIX "%s", name);
    if (n < 0 || (size_t)n >= sizeof key)
        return cdn_err_set(err, CDN_ERR_INVALID, "an audit flag name is too long");
    int rc = store_txn_begin(l->st, 1, &t, err);
    if (rc)
        return rc;
    rc = on ? store_put(t, TB(T_META), key, (size_t)n, "", 0)
            : store_del(t, TB(T_META), key, (size_t)n);
    if (rc == CDN_ERR_NOT_FOUND) {
        store_txn_abort(t);
        return CDN_OK;
    }
    if (rc) {
        store_txn_abort(t);
        return cdn_err_set(err, rc, "cannot write the audit log: %s", cdn_strerror(rc));
    }
    return store_txn_commit(t, err);
}

typedef struct flags {
    auditlog_flag_fn fn;
    void *ctx;
} flags_t;

static int on_flag(void *ctx, const void *key, size_t klen, const void *val, size_t vlen)
{
    flags_t *f = ctx;
    char name[256];
    size_t pl = sizeof FLAG_PREFIX - 1;
    (void)val;
    (void)vlen;
    if (klen - pl >= sizeof name)
        return CDN_ERR_CORRUPT;
    memcpy(name, (const char *)key + pl, klen - pl);
    name[klen - pl] = 0;
    return f->fn(f->ctx, name);
}

int auditlog_flags(auditlog_t *l, auditlog_flag_fn fn, void *ctx, cdn_err_t *err)
{
    store_txn_t *t;
    flags_t f = {fn, ctx};
    int rc = store_txn_begin(l->st, 0, &t, err);
    if (rc)
        return rc;
    rc = store_scan_prefix(t, TB(T_META), FLAG_PREFIX, sizeof FLAG_PREFIX - 1, on_flag, &f);
    store_txn_abort(t);
    return rc;
}
