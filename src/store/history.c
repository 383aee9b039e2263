/* history.c: the history tables behind history.h.
 * Relies on store/store. Keys: STORE_HIST_TIME is commit time (u64 BE µs) then revision, so
 * "the revision at time T" is one backward seek; STORE_HIST_ACL is the collection (u32 BE), a
 * 64-bit hash of the chunk id and the revision, so a chunk's versions sit together in order
 * whatever its id's length (LMDB keys stop at 511 bytes), and "the ACL after revision R" is one
 * backward seek (the value names the id, which settles a hash shared by two ids). */
#include "store/history.h"
#include "base/mem.h"

#include <string.h>
#include <xxhash.h>

#define ACL_KEY 20      /* coll 4, hash 8, revision 8 */
#define HIST_ID_MAX 511 /* the longest chunk id a version may name (LMDB's key limit) */

static void acl_key(unsigned char *k, uint32_t coll, const char *id, uint64_t rev)
{
    store_be32(k, coll);
    store_be64(k + 4, XXH64(id, strlen(id), 0x68697374u));
    store_be64(k + 12, rev);
}

/* ---- Revisions and times. ---- */

static int take_rev(void *ctx, const void *key, size_t klen, const void *val, size_t vlen)
{
    (void)val;
    (void)vlen;
    if (klen != 16)
        return CDN_ERR_CORRUPT;
    *(uint64_t *)ctx = store_rd64((const unsigned char *)key + 8);
    return 1;
}

int history_rev_at(store_txn_t *t, uint64_t time_us, uint64_t *rev)
{
    unsigned char k[16];
    uint64_t r = 0;
    store_be64(k, time_us);
    store_be64(k + 8, UINT64_MAX);
    int rc = store_scan_back(t, STORE_HIST_TIME, NULL, 0, k, 16, take_rev, &r);
    if (rc != 1)
        return rc ? rc : CDN_ERR_NOT_FOUND;
    *rev = r;
    return CDN_OK;
}

int history_time_of(store_txn_t *t, uint64_t rev, uint64_t *time_us)
{
    /* Times and revisions grow together: the first moment at which rev (or a later one) is
     * current is rev's commit time. */
    uint64_t lo = 0, hi = UINT64_MAX / 2;
    while (lo < hi) {
        uint64_t mid = lo + (hi - lo) / 2, r = 0;
        int rc = history_rev_at(t, mid, &r);
        if (rc && rc != CDN_ERR_NOT_FOUND)
            return rc;
        if (rc == CDN_OK && r >= rev)
            hi = mid;
        else
            lo = mid + 1;
    }
    *time_us = lo;
    return CDN_OK;
}

/* ---- ACLs. ---- */

int history_acl_put(store_txn_t *t, uint32_t coll, const char *id, uint64_t rev,
                    const uint32_t *packed, size_t n)
{
    unsigned char k[ACL_KEY];
    size_t idlen = strlen(id), vl = idlen + 1 + (packed ? n * 4 : 0);
    char *v = cdn_malloc(vl);
    if (!v)
        return CDN_ERR_NOMEM;
    memcpy(v, id, idlen + 1);
    if (packed)
        memcpy(v + idlen + 1, packed, n * 4);
    acl_key(k, coll, id, rev);
    int rc = store_put(t, STORE_HIST_ACL, k, ACL_KEY, v, vl);
    cdn_free(v);
    return rc;
}

typedef struct acl_find {
    const char *id;
    size_t idlen;
    size_t unit; /* the value's length is a multiple of it: 4 for a packed ACL */
    const void *packed;
    size_t n;
    uint64_t rev; /* the version's */
    int found, deleted;
} acl_find_t;

static int acl_match(void *ctx, const void *key, size_t klen, const void *val, size_t vlen)
{
    acl_find_t *f = ctx;
    (void)key;
    if (klen != ACL_KEY || vlen < f->idlen + 1)
        return klen != ACL_KEY ? CDN_ERR_CORRUPT : 0;
    if (memcmp(val, f->id, f->idlen + 1) != 0)
        return 0; /* another id with the same hash */
    size_t rest = vlen - f->idlen - 1;
    if (rest % f->unit)
        return CDN_ERR_CORRUPT;
    f->found = 1;
    f->rev = store_rd64((const unsigned char *)key + 12);
    f->deleted = rest == 0;
    f->packed = (const char *)val + f->idlen + 1;
    f->n = rest / f->unit;
    return 1;
}

/* The version of id under space (a collection, or an entity kind) current after rev. */
static int version_at(store_txn_t *t, uint32_t space, const char *id, uint64_t rev, acl_find_t *f)
{
    unsigned char k[ACL_KEY];
    acl_key(k, space, id, rev);
    int rc = store_scan_back(t, STORE_HIST_ACL, k, 12, k, ACL_KEY, acl_match, f);
    return rc < 0 ? rc : CDN_OK;
}

int history_acl_at(store_txn_t *t, uint32_t coll, const char *id, uint64_t rev, const void **packed,
                   size_t *n)
{
    acl_find_t f = {id, strlen(id), 4, NULL, 0, 0, 0, 0};
    int rc = version_at(t, coll, id, rev, &f);
    if (rc)
        return rc;
    if (!f.found)
        return CDN_ERR_NOT_FOUND;
    *packed = f.deleted ? NULL : f.packed;
    *n = f.deleted ? 0 : f.n;
    return CDN_OK;
}

/* ---- The model's fragments: versions of entities, beside the chunks' under spaces of
 * their own (the collection ids stop short of them), so retention treats both alike. ---- */

#define ENT_SPACE(kind) (0xFFFFFF00u | (unsigned char)(kind))

int history_ent_put(store_txn_t *t, char kind, const char *id, uint64_t rev, const char *frag)
{
    unsigned char k[ACL_KEY];
    size_t idlen = strlen(id), fl = frag ? strlen(frag) : 0, vl = idlen + 1 + fl;
    char *v = cdn_malloc(vl);
    if (!v)
        return CDN_ERR_NOMEM;
    memcpy(v, id, idlen + 1);
    memcpy(v + idlen + 1, frag ? frag : "", fl);
    acl_key(k, ENT_SPACE(kind), id, rev);
    int rc = store_put(t, STORE_HIST_ACL, k, ACL_KEY, v, vl);
    cdn_free(v);
    return rc;
}

int history_ent_at(store_txn_t *t, char kind, const char *id, uint64_t rev, const char **frag,
                   size_t *n, uint64_t *vrev)
{
    acl_find_t f = {id, strlen(id), 1, NULL, 0, 0, 0, 0};
    int rc = version_at(t, ENT_SPACE(kind), id, rev, &f);
    *frag = rc || !f.found || f.deleted ? NULL : f.packed;
    *n = *frag ? f.n : 0;
    *vrev = f.found ? f.rev : 0;
    return rc;
}

int history_ent_start_get(store_txn_t *t, uint64_t *rev, int *set)
{
    return store_meta_u64(t, "hist_ent", rev, set);
}

int history_ent_start_set(store_txn_t *t, uint64_t rev)
{
    unsigned char b[8];
    store_be64(b, rev);
    return store_put(t, STORE_META, "hist_ent", 8, b, 8);
}

typedef struct versions {
    const char *id;
    size_t idlen;
    uint64_t upto;
    history_rev_fn fn;
    void *ctx;
    history_ver_fn vfn; /* instead of fn: told whether each version is a deletion */
} versions_t;

static int version_one(void *ctx, const void *key, size_t klen, const void *val, size_t vlen)
{
    versions_t *v = ctx;
    if (klen != ACL_KEY)
        return CDN_ERR_CORRUPT;
    uint64_t rev = store_rd64((const unsigned char *)key + 12);
    if (rev > v->upto)
        return 1;
    if (vlen < v->idlen + 1 || memcmp(val, v->id, v->idlen + 1) != 0)
        return 0; /* another id of the same hash */
    return v->vfn ? v->vfn(v->ctx, rev, vlen == v->idlen + 1) : v->fn(v->ctx, rev);
}

int history_acl_versions(store_txn_t *t, uint32_t coll, const char *id, uint64_t after,
                         uint64_t upto, history_rev_fn fn, void *ctx)
{
    unsigned char k[ACL_KEY];
    versions_t v = {id, strlen(id), upto, fn, ctx, NULL};
    acl_key(k, coll, id, after + 1);
    int rc = store_scan_from(t, STORE_HIST_ACL, k, 12, k, ACL_KEY, version_one, &v);
    return rc == 1 ? CDN_OK : rc;
}

int history_ent_versions(store_txn_t *t, char kind, const char *id, history_ver_fn fn, void *ctx)
{
    unsigned char k[ACL_KEY];
    versions_t v = {id, strlen(id), UINT64_MAX, NULL, ctx, fn};
    acl_key(k, ENT_SPACE(kind), id, 0);
    int rc = store_scan_from(t, STORE_HIST_ACL, k, 12, k, ACL_KEY, version_one, &v);
    return rc == 1 ? CDN_OK : rc;
}

typedef struct acls_at {
    uint64_t rev;
    history_acl_fn fn;
    void *ctx;
    /* the newest version at or before rev of the chunk being read: versions of one hash
     * arrive in revision order, ids of one hash interleaved */
    unsigned char group[12];
    int in_group;
    const char *ids[8];
    const void *vals[8];
    size_t lens[8], nids;
} acls_at_t;

/* Hands out the group of one hash: each id's newest version at or before rev, if live. */
static int flush_group(acls_at_t *a)
{
    int rc = 0;
    for (size_t i = 0; i < a->nids && !rc; i++) {
        size_t idlen = strlen(a->ids[i]), rest = a->lens[i] - idlen - 1;
        if (rest)
            rc = a->fn(a->ctx, a->ids[i], (const char *)a->vals[i] + idlen + 1, rest / 4);
    }
    a->nids = 0;
    return rc;
}

static int acls_one(void *ctx, const void *key, size_t klen, const void *val, size_t vlen)
{
    acls_at_t *a = ctx;
    int rc;
    if (klen != ACL_KEY || !memchr(val, 0, vlen))
        return CDN_ERR_CORRUPT;
    if (!a->in_group || memcmp(a->group, key, 12) != 0) {
        if ((rc = flush_group(a)) != 0)
            return rc;
        memcpy(a->group, key, 12);
        a->in_group = 1;
    }
    if (store_rd64((const unsigned char *)key + 12) > a->rev)
        return 0;
    size_t i = 0;
    while (i < a->nids && strcmp(a->ids[i], val))
        i++;
    if (i == a->nids) {
        if (a->nids == 8)
            return CDN_ERR_LIMIT; /* nine ids sharing one 64-bit hash */
        a->nids++;
    }
    a->ids[i] = val;
    a->vals[i] = val;
    a->lens[i] = vlen;
    return 0;
}

int history_acls_at(store_txn_t *t, uint32_t coll, uint64_t rev, history_acl_fn fn, void *ctx)
{
    unsigned char p[4];
    acls_at_t a;
    memset(&a, 0, sizeof a);
    a.rev = rev;
    a.fn = fn;
    a.ctx = ctx;
    store_be32(p, coll);
    int rc = store_scan_prefix(t, STORE_HIST_ACL, p, 4, acls_one, &a);
    return rc ? rc : flush_group(&a);
}

/* ---- Collections' names, under a space of their own beside the fragments'. A version's
 * value is the name, NUL, the id (u32 BE) and the asserted flag; a drop's has the id of the
 * collection it dropped and no flag. ---- */

#define COLL_SPACE (0xFFFFFF00u | 'C')

/* One version of name: a creation (asserted 0 or 1, the flag stored) or a drop (-1, none). */
static int coll_version(store_txn_t *t, const char *name, uint64_t rev, uint32_t id, int asserted)
{
    unsigned char k[ACL_KEY], v[HIST_ID_MAX + 6];
    size_t nl = strlen(name), vl = nl + (asserted < 0 ? 5 : 6);
    if (nl > HIST_ID_MAX)
        return CDN_ERR_INVALID;
    memcpy(v, name, nl + 1);
    store_be32(v + nl + 1, id);
    v[nl + 5] = asserted > 0;
    acl_key(k, COLL_SPACE, name, rev);
    return store_put(t, STORE_HIST_ACL, k, ACL_KEY, v, vl);
}

int history_coll_put(store_txn_t *t, const char *name, uint64_t rev, uint32_t id, int asserted)
{
    return coll_version(t, name, rev, id, asserted != 0);
}

int history_coll_drop(store_txn_t *t, const char *name, uint64_t rev, uint32_t id)
{
    return coll_version(t, name, rev, id, -1);
}

typedef struct coll_scan {
    const char *name;
    size_t nl;
    history_coll_fn fn;
    void *ctx;
    int asserted; /* the last created's, for the drop after it */
} coll_scan_t;

static int coll_one(void *ctx, const void *key, size_t klen, const void *val, size_t vlen)
{
    coll_scan_t *c = ctx;
    if (klen != ACL_KEY)
        return CDN_ERR_CORRUPT;
    if (vlen < c->nl + 1 || memcmp(val, c->name, c->nl + 1) != 0)
        return 0; /* another name of the same hash */
    const unsigned char *p = (const unsigned char *)val + c->nl + 1;
    int live = vlen == c->nl + 6;
    if (!live && vlen != c->nl + 5)
        return CDN_ERR_CORRUPT;
    if (live)
        c->asserted = p[4];
    return c->fn(c->ctx, store_rd64((const unsigned char *)key + 12), store_rd32(p), c->asserted,
                 live);
}

int history_coll_versions(store_txn_t *t, const char *name, history_coll_fn fn, void *ctx)
{
    unsigned char k[ACL_KEY];
    coll_scan_t c = {name, strlen(name), fn, ctx, 0};
    acl_key(k, COLL_SPACE, name, 0);
    return store_scan_from(t, STORE_HIST_ACL, k, 12, k, ACL_KEY, coll_one, &c);
}

int history_coll_start_get(store_txn_t *t, int *set)
{
    uint64_t rev;
    return store_meta_u64(t, "hist_coll", &rev, set);
}

int history_coll_start_set(store_txn_t *t, uint64_t rev)
{
    unsigned char b[8];
    store_be64(b, rev);
    return store_put(t, STORE_META, "hist_coll", 9, b, 8);
}

/* ---- The model. ---- */

int history_model_put(store_txn_t *t, uint64_t rev, const void *rec, size_t n)
{
    unsigned char k[8];
    store_be64(k, rev);
    return store_put(t, STORE_HIST_MODEL, k, 8, rec, n);
}

int history_snap_put(store_txn_t *t, uint64_t rev, const char *json)
{
    unsigned char k[8];
    store_be64(k, rev);
    return store_put(t, STORE_HIST_SNAP, k, 8, json, strlen(json));
}

typedef struct last8 {
    uint64_t key;
    const void *val;
    size_t vlen;
} last8_t;

static int take8(void *ctx, const void *key, size_t klen, const void *val, size_t vlen)
{
    last8_t *l = ctx;
    if (klen != 8)
        return CDN_ERR_CORRUPT;
    l->key = store_rd64(key);
    l->val = val;
    l->vlen = vlen;
    return 1;
}

int history_model_last(store_txn_t *t, uint64_t rev, uint64_t *mrev)
{
    unsigned char k[8];
    last8_t l = {0, NULL, 0};
    store_be64(k, rev);
    int rc = store_scan_back(t, STORE_HIST_MODEL, NULL, 0, k, 8, take8, &l);
    *mrev = 0;
    if (rc != 1)
        return rc ? rc : CDN_ERR_NOT_FOUND;
    *mrev = l.key;
    return CDN_OK;
}

int history_snap_at(store_txn_t *t, uint64_t rev, uint64_t *srev, const char **json, size_t *n)
{
    unsigned char k[8];
    last8_t l = {0, NULL, 0};
    store_be64(k, rev);
    int rc = store_scan_back(t, STORE_HIST_SNAP, NULL, 0, k, 8, take8, &l);
    if (rc != 1)
        return rc ? rc : CDN_ERR_NOT_FOUND;
    *srev = l.key;
    *json = l.val;
    *n = l.vlen;
    return CDN_OK;
}

typedef struct upto {
    uint64_t upto;
    store_iter_fn fn;
    void *ctx;
} upto_t;

static int until(void *ctx, const void *key, size_t klen, const void *val, size_t vlen)
{
    upto_t *u = ctx;
    if (klen != 8)
        return CDN_ERR_CORRUPT;
    if (store_rd64(key) > u->upto)
        return 1;
    return u->fn(u->ctx, key, klen, val, vlen);
}

int history_model_scan(store_txn_t *t, uint64_t after, uint64_t upto, store_iter_fn fn, void *ctx)
{
    unsigned char k[8];
    upto_t u = {upto, fn, ctx};
    store_be64(k, after + 1);
    int rc = store_scan_from(t, STORE_HIST_MODEL, NULL, 0, k, 8, until, &u);
    return rc == 1 ? CDN_OK : rc;
}

int history_start_get(store_txn_t *t, uint64_t *rev, int *set)
{
    return store_meta_u64(t, "hist_start", rev, set);
}

int history_start_set(store_txn_t *t, uint64_t rev)
{
    unsigned char b[8];
    store_be64(b, rev);
    return store_put(t, STORE_META, "hist_start", 10, b, 8);
}

/* ---- Retention. ---- */

typedef struct keys {
    unsigned char (*k)[24]; /* keys to delete, up to 20 bytes each, length in the last byte */
    size_t n, cap;
} keys_t;

static int keys_add(keys_t *ks, const void *key, size_t klen)
{
    if (klen > 20)
        return CDN_ERR_CORRUPT;
    if (ks->n == ks->cap) {
        size_t cap = ks->cap ? ks->cap * 2 : 1024;
        void *v = cdn_realloc(ks->k, cap * sizeof *ks->k);
        if (!v)
            return CDN_ERR_NOMEM;
        ks->k = v;
        ks->cap = cap;
    }
    memcpy(ks->k[ks->n], key, klen);
    ks->k[ks->n][23] = (unsigned char)klen;
    ks->n++;
    return 0;
}

static int keys_delete(store_txn_t *t, store_table_t tb, const keys_t *ks)
{
    for (size_t i = 0; i < ks->n; i++) {
        int rc = store_del(t, tb, ks->k[i], ks->k[i][23]);
        if (rc && rc != CDN_ERR_NOT_FOUND)
            return rc;
    }
    return CDN_OK;
}

/* The versions of one hash group seen so far, per id: the newest at or before the horizon
 * is kept and every one older goes. */
typedef struct acl_prune {
    uint64_t horizon;
    keys_t *del;
    unsigned char group[12];
    int in_group;
    char ids[8][HIST_ID_MAX + 1];
    unsigned char keep[8][ACL_KEY]; /* the newest version <= horizon of each id, so far */
    int has_keep[8];
    size_t nids;
} acl_prune_t;

static int acl_prune_one(void *ctx, const void *key, size_t klen, const void *val, size_t vlen)
{
    acl_prune_t *p = ctx;
    const char *id = val;
    size_t idlen = vlen ? strnlen(id, vlen) : 0;
    if (klen != ACL_KEY || idlen == vlen || idlen > HIST_ID_MAX)
        return CDN_ERR_CORRUPT;
    if (!p->in_group || memcmp(p->group, key, 12) != 0) {
        memcpy(p->group, key, 12);
        p->in_group = 1;
        p->nids = 0;
    }
    if (store_rd64((const unsigned char *)key + 12) > p->horizon)
        return 0; /* newer than the horizon: kept */
    size_t i = 0;
    while (i < p->nids && strcmp(p->ids[i], id))
        i++;
    if (i == p->nids) {
        if (p->nids == 8)
            return CDN_ERR_LIMIT;
        memcpy(p->ids[i], id, idlen + 1);
        p->has_keep[i] = 0;
        p->nids++;
    }
    /* a newer version at or before the horizon: the one kept so far goes */
    if (p->has_keep[i]) {
        int rc = keys_add(p->del, p->keep[i], ACL_KEY);
        if (rc)
            return rc;
    }
    memcpy(p->keep[i], key, ACL_KEY);
    p->has_keep[i] = 1;
    return 0;
}

static int collect_before(void *ctx, const void *key, size_t klen, const void *val, size_t vlen)
{
    void **c = ctx; /* {keys, bound key, bound length} */
    (void)val;
    (void)vlen;
    size_t bl = *(size_t *)c[2];
    if (memcmp(key, c[1], klen < bl ? klen : bl) >= 0)
        return 1;
    return keys_add(c[0], key, klen);
}

static int collect_time(void *ctx, const void *key, size_t klen, const void *val, size_t vlen)
{
    void **c = ctx; /* {keys, &horizon} */
    (void)val;
    (void)vlen;
    if (klen != 16)
        return CDN_ERR_CORRUPT;
    if (store_rd64((const unsigned char *)key + 8) >= *(uint64_t *)c[1])
        return 1;
    return keys_add(c[0], key, klen);
}

/* Collects the id (u32 BE, as the prefix of its chunks' versions) of every collection dropped
 * at or before the horizon: no state from the horizon on can ask about its chunks. */
static int dropped_one(void *ctx, const void *key, size_t klen, const void *val, size_t vlen)
{
    void **c = ctx; /* {keys, &horizon} */
    size_t nl = vlen ? strnlen(val, vlen) : 0;
    if (klen != ACL_KEY || nl == vlen)
        return CDN_ERR_CORRUPT;
    if (vlen != nl + 5 || store_rd64((const unsigned char *)key + 12) > *(uint64_t *)c[1])
        return 0; /* a creation, or a drop after the horizon */
    return keys_add(c[0], (const unsigned char *)val + nl + 1, 4);
}

static int count_one(void *ctx, const void *key, size_t klen, const void *val, size_t vlen)
{
    (void)key;
    (void)klen;
    (void)val;
    (void)vlen;
    ++*(size_t *)ctx;
    return 0;
}

int history_prune(store_txn_t *t, uint64_t horizon, uint64_t checkpoint, uint64_t *removed)
{
    keys_t del = {NULL, 0, 0}, gone = {NULL, 0, 0};
    acl_prune_t *ap = cdn_calloc(1, sizeof *ap);
    int rc = ap ? CDN_OK : CDN_ERR_NOMEM;
    unsigned char space[4];
    void *dc[2] = {&gone, &horizon};
    store_be32(space, COLL_SPACE);
    *removed = 0;
    if (rc == CDN_OK) /* read before the pass below removes the older drops */
        rc = store_scan_prefix(t, STORE_HIST_ACL, space, 4, dropped_one, dc);
    for (size_t i = 0; rc == CDN_OK && i < gone.n; i++) {
        size_t n = 0;
        if ((rc = store_scan_prefix(t, STORE_HIST_ACL, gone.k[i], 4, count_one, &n)) == CDN_OK &&
            (rc = store_del_prefix(t, STORE_HIST_ACL, gone.k[i], 4)) == CDN_OK)
            *removed += n;
    }
    cdn_free(gone.k);
    if (rc == CDN_OK) {
        ap->horizon = horizon;
        ap->del = &del;
        rc = store_scan_prefix(t, STORE_HIST_ACL, NULL, 0, acl_prune_one, ap);
    }
    cdn_free(ap);
    if (rc == CDN_OK)
        rc = keys_delete(t, STORE_HIST_ACL, &del);
    *removed += del.n;
    /* model records and checkpoints before the checkpoint the horizon's state starts from */
    unsigned char bound[16];
    size_t bl = 8;
    store_be64(bound, checkpoint);
    for (int tb = 0; rc == CDN_OK && tb < 2; tb++) {
        void *c[3] = {&del, bound, &bl};
        del.n = 0;
        store_table_t table = tb ? STORE_HIST_SNAP : STORE_HIST_MODEL;
        if ((rc = store_scan_prefix(t, table, NULL, 0, collect_before, c)) == 1)
            rc = CDN_OK;
        if (rc == CDN_OK)
            rc = keys_delete(t, table, &del);
        *removed += del.n;
    }
    /* commit times of the revisions before the horizon */
    if (rc == CDN_OK) {
        void *c[2] = {&del, &horizon};
        del.n = 0;
        if ((rc = store_scan_prefix(t, STORE_HIST_TIME, NULL, 0, collect_time, c)) == 1)
            rc = CDN_OK;
        if (rc == CDN_OK)
            rc = keys_delete(t, STORE_HIST_TIME, &del);
        *removed += del.n;
    }
    if (rc == CDN_OK)
        rc = history_start_set(t, horizon);
    cdn_free(del.k);
    return rc;
}
