/* index.c: one roaring bitmap of rows per principal (allow and deny), the live set, the rows'
 * interned packed ACLs for the re-check, and a small memo of recent allowed sets. Relies on
 * CRoaring, xxhash and pthreads (the memo's lock: searches read the index concurrently). */
#include "acl/acl.h"
#include "base/mem.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

/* Allowed sets are kept for the next query of the same view: the union of a subject's
 * principals' bitmaps can cost as much as the traversal that follows it (1M rows, a subject
 * of 10 divisions: 0.24 of 0.69 ms p50 in `roaring_bitmap_or_many`; 0.38 ms with the memo),
 * and even one principal's set is a copy plus an intersection with the live rows. Any change
 * to the index empties the memo, under the collection's write lock, so a memo never outlives
 * the bitmaps it was computed from. */
#define ACL_MEMO_SLOTS 8
#define ACL_MEMO_VIEW_MAX 64 /* longer views are not kept */

typedef struct acl_memo_slot {
    uint32_t view[ACL_MEMO_VIEW_MAX]; /* sorted principal ids */
    size_t n;                         /* 0: empty slot */
    roaring_bitmap_t *set;
    uint64_t used; /* tick of the last hit, for eviction */
} acl_memo_slot_t;

typedef struct acl_memo {
    pthread_mutex_t lock;
    acl_memo_slot_t slot[ACL_MEMO_SLOTS];
    uint64_t tick;
    int any; /* some slot holds a set */
} acl_memo_t;

/* Rows share packed ACLs: every chunk of a document carries the document's ACL, so a collection
 * holds far fewer distinct ACLs than rows (the benchmark: 1,000 over 1M rows). A copy per row
 * cost an allocation and an 8-byte pointer per row: about 52 MB resident at the benchmark's 1M
 * rows (40 MB of heap at 3 principals a row). So a row holds a 4-byte reference into a table of
 * distinct ACLs instead (4 MB at 1M rows, plus one copy per distinct ACL). An entry counts the
 * rows that use it and is freed with the last of them; its slot goes on a free list, so a
 * workload that keeps changing ACLs does not grow the table. Entries are found by content,
 * through chained buckets over a hash of the packed words: chains make removal a plain unlink,
 * with no tombstones to sweep. */
typedef struct acl_entry {
    uint32_t *packed; /* owned; NULL = a free slot */
    size_t refs;      /* rows whose row_ref names this entry */
    uint64_t hash;    /* of packed: rehashing needs it, and it spares most compares */
    uint32_t next;    /* 1 + next entry of the bucket (of the free list for a free slot); 0 = end */
} acl_entry_t;

#define ACL_BUCKETS_MIN 64 /* buckets of the first set; they double past one entry per bucket */

struct acl_index {
    roaring_bitmap_t **allow; /* by principal id; NULL = no rows */
    roaring_bitmap_t **deny;
    size_t nprin;             /* slots in allow and deny */
    uint32_t *row_ref;        /* by row: 1 + entry index; 0 = deleted or never written */
    size_t nrows;
    acl_entry_t *ent;    /* the distinct packed ACLs */
    size_t nent, entcap; /* slots ever taken (in use or free), slots allocated */
    size_t ndistinct;    /* entries in use (refs > 0) */
    uint32_t free_head;  /* 1 + first free slot; 0 = none */
    uint32_t *bucket;    /* by hash & (nbucket - 1): 1 + first entry of the chain; 0 = none */
    size_t nbucket;      /* a power of two; 0 before the first set */
    roaring_bitmap_t *live;
    acl_memo_t *memo; /* written by readers too (its own lock): a pointer, so x stays const */
};

int acl_index_create(acl_index_t **out)
{
    acl_index_t *x = cdn_calloc(1, sizeof *x);
    if (x)
        x->memo = cdn_calloc(1, sizeof *x->memo);
    if (!x || !x->memo || !(x->live = roaring_bitmap_create())) {
        if (x)
            cdn_free(x->memo);
        cdn_free(x);
        return CDN_ERR_NOMEM;
    }
    pthread_mutex_init(&x->memo->lock, NULL);
    *out = x;
    return CDN_OK;
}

/* Empties the memo (every write to the index calls it). */
static void memo_clear(acl_memo_t *m)
{
    if (!m->any)
        return;
    pthread_mutex_lock(&m->lock);
    for (size_t i = 0; i < ACL_MEMO_SLOTS; i++) {
        if (m->slot[i].set) /* this CRoaring does not take NULL */
            roaring_bitmap_free(m->slot[i].set);
        m->slot[i].set = NULL;
        m->slot[i].n = 0;
    }
    m->any = 0;
    pthread_mutex_unlock(&m->lock);
}

void acl_index_free(acl_index_t *x)
{
    if (!x)
        return;
    memo_clear(x->memo);
    pthread_mutex_destroy(&x->memo->lock);
    cdn_free(x->memo);
    for (size_t i = 0; i < x->nprin; i++) {
        if (x->allow[i])
            roaring_bitmap_free(x->allow[i]);
        if (x->deny[i])
            roaring_bitmap_free(x->deny[i]);
    }
    for (size_t i = 0; i < x->nent; i++)
        cdn_free(x->ent[i].packed); /* NULL for a free slot */
    cdn_free(x->allow);
    cdn_free(x->deny);
    cdn_free(x->row_ref);
    cdn_free(x->ent);
    cdn_free(x->bucket);
    roaring_bitmap_free(x->live);
    cdn_free(x);
}

static int ensure_principal(acl_index_t *x, uint32_t p)
{
    size_t cap = x->nprin, cap2 = x->nprin;
    if (p < x->nprin)
        return CDN_OK;
    if (cdn_grow((void **)&x->allow, &cap, (size_t)p + 1, sizeof *x->allow) ||
        cdn_grow((void **)&x->deny, &cap2, (size_t)p + 1, sizeof *x->deny))
        return CDN_ERR_NOMEM;
    /* Both arrays grew to at least p + 1; zero the new slots of each. */
    memset(x->allow + x->nprin, 0, (cap - x->nprin) * sizeof *x->allow);
    memset(x->deny + x->nprin, 0, (cap2 - x->nprin) * sizeof *x->deny);
    x->nprin = cap < cap2 ? cap : cap2;
    return CDN_OK;
}

static int bitmap_add(roaring_bitmap_t **slot, uint32_t row)
{
    if (!*slot && !(*slot = roaring_bitmap_create()))
        return CDN_ERR_NOMEM;
    roaring_bitmap_add(*slot, row);
    return CDN_OK;
}

/* 1 + the index of the entry holding exactly packed[0..len) (hash h), or 0. */
static uint32_t entry_find(const acl_index_t *x, const uint32_t *packed, uint32_t len, uint64_t h)
{
    if (!x->nbucket)
        return 0;
    for (uint32_t r = x->bucket[h & (x->nbucket - 1)]; r; r = x->ent[r - 1].next) {
        const acl_entry_t *e = &x->ent[r - 1];
        if (e->hash == h && acl_packed_len(e->packed) == len &&
            !memcmp(e->packed, packed, (size_t)len * sizeof *packed))
            return r;
    }
    return 0;
}

/* Chains the entries in use into n buckets (a power of two). 0 or CDN_ERR_NOMEM (the old
 * buckets then stay). */
static int entry_rehash(acl_index_t *x, size_t n)
{
    uint32_t *b = cdn_calloc(n, sizeof *b);
    if (!b)
        return CDN_ERR_NOMEM;
    for (size_t i = 0; i < x->nent; i++) {
        acl_entry_t *e = &x->ent[i];
        if (!e->packed)
            continue; /* a free slot: its next belongs to the free list */
        e->next = b[e->hash & (n - 1)];
        b[e->hash & (n - 1)] = (uint32_t)(i + 1);
    }
    cdn_free(x->bucket);
    x->bucket = b;
    x->nbucket = n;
    return CDN_OK;
}

/* Adds an entry for packed[0..len) (hash h) with no reference yet; *ref is 1 + its index. All
 * allocations come before any change, so CDN_ERR_NOMEM leaves the entries as they were. */
static int entry_add(acl_index_t *x, const uint32_t *packed, uint32_t len, uint64_t h,
                     uint32_t *ref)
{
    uint32_t *copy, r;
    acl_entry_t *e;
    if (!x->free_head && x->nent >= UINT32_MAX)
        return CDN_ERR_NOMEM; /* a reference, 1 + index, must fit a uint32 */
    if (!x->free_head && cdn_grow((void **)&x->ent, &x->entcap, x->nent + 1, sizeof *x->ent))
        return CDN_ERR_NOMEM;
    if (x->ndistinct + 1 > x->nbucket &&
        entry_rehash(x, x->nbucket ? x->nbucket * 2 : ACL_BUCKETS_MIN))
        return CDN_ERR_NOMEM;
    if (!(copy = cdn_malloc((size_t)len * sizeof *copy)))
        return CDN_ERR_NOMEM;
    memcpy(copy, packed, (size_t)len * sizeof *copy);
    if (x->free_head) {
        r = x->free_head;
        x->free_head = x->ent[r - 1].next;
    } else {
        r = (uint32_t)++x->nent;
    }
    e = &x->ent[r - 1];
    e->packed = copy;
    e->refs = 0;
    e->hash = h;
    e->next = x->bucket[h & (x->nbucket - 1)];
    x->bucket[h & (x->nbucket - 1)] = r;
    x->ndistinct++;
    *ref = r;
    return CDN_OK;
}

/* Takes a reference to the entry holding packed, by content, adding it if no row has that ACL
 * yet; *ref is 1 + its index. 0 or CDN_ERR_NOMEM (then nothing changed). */
static int entry_acquire(acl_index_t *x, const uint32_t *packed, uint32_t *ref)
{
    uint32_t len = acl_packed_len(packed);
    uint64_t h = XXH3_64bits(packed, (size_t)len * sizeof *packed);
    uint32_t r = entry_find(x, packed, len, h);
    if (!r && entry_add(x, packed, len, h, &r))
        return CDN_ERR_NOMEM;
    x->ent[r - 1].refs++;
    *ref = r;
    return CDN_OK;
}

/* Drops one reference to entry ref (0: none). The last one frees the ACL, unlinks the entry
 * from its bucket and puts the slot on the free list. */
static void entry_release(acl_index_t *x, uint32_t ref)
{
    acl_entry_t *e = ref ? &x->ent[ref - 1] : NULL;
    uint32_t *link;
    if (!e)
        return;
    CDN_ASSERT(e->packed && e->refs > 0);
    if (--e->refs > 0)
        return;
    for (link = &x->bucket[e->hash & (x->nbucket - 1)]; *link != ref;
         link = &x->ent[*link - 1].next)
        CDN_ASSERT(*link != 0); /* an entry in use is in its bucket's chain */
    *link = e->next;
    cdn_free(e->packed);
    e->packed = NULL;
    e->next = x->free_head;
    x->free_head = ref;
    x->ndistinct--;
}

/* A principal's bitmap can be missing: a set that ran out of memory half-way leaves the row
 * naming principals whose bitmaps it never created (and CRoaring does not take NULL). */
static void unindex_row(acl_index_t *x, uint32_t row)
{
    const uint32_t *p = acl_index_get(x, row);
    if (!p)
        return;
    for (uint32_t i = 0; i < p[0]; i++)
        if (x->allow[p[2 + i]])
            roaring_bitmap_remove(x->allow[p[2 + i]], row);
    for (uint32_t i = 0; i < p[1]; i++)
        if (x->deny[p[2 + p[0] + i]])
            roaring_bitmap_remove(x->deny[p[2 + p[0] + i]], row);
}

/* Every allocation (principal slots, the row's slot, a new entry) comes before the first change,
 * so CDN_ERR_NOMEM from them leaves the row's previous ACL in force. The new entry's reference
 * is taken before the old one is dropped: a row set to the ACL it has keeps its entry. */
int acl_index_set(acl_index_t *x, uint32_t row, const uint32_t *packed)
{
    uint32_t len = acl_packed_len(packed);
    uint32_t ref, old;
    size_t cap = x->nrows;
    int rc = CDN_OK;
    for (uint32_t i = 2; i < len && rc == 0; i++)
        rc = ensure_principal(x, packed[i]);
    if (rc)
        return rc;
    memo_clear(x->memo);
    if (row >= x->nrows) {
        if (cdn_grow((void **)&x->row_ref, &cap, (size_t)row + 1, sizeof *x->row_ref))
            return CDN_ERR_NOMEM;
        memset(x->row_ref + x->nrows, 0, (cap - x->nrows) * sizeof *x->row_ref);
        x->nrows = cap;
    }
    if (entry_acquire(x, packed, &ref))
        return CDN_ERR_NOMEM;
    unindex_row(x, row);
    for (uint32_t i = 0; i < packed[0] && rc == 0; i++)
        rc = bitmap_add(&x->allow[packed[2 + i]], row);
    for (uint32_t i = 0; i < packed[1] && rc == 0; i++)
        rc = bitmap_add(&x->deny[packed[2 + packed[0] + i]], row);
    old = x->row_ref[row];
    x->row_ref[row] = ref;
    entry_release(x, old);
    if (rc) { /* half-indexed: make the row unreadable rather than partly readable */
        unindex_row(x, row);
        roaring_bitmap_remove(x->live, row);
        return rc;
    }
    roaring_bitmap_add(x->live, row);
    return CDN_OK;
}

void acl_index_remove(acl_index_t *x, uint32_t row)
{
    memo_clear(x->memo);
    unindex_row(x, row);
    if (row < x->nrows) {
        entry_release(x, x->row_ref[row]);
        x->row_ref[row] = 0;
    }
    roaring_bitmap_remove(x->live, row);
}

static int u32_cmp(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return (x > y) - (x < y);
}

/* A copy of the memo's set for the sorted view key[0..n), or NULL. */
static roaring_bitmap_t *memo_get(acl_memo_t *m, const uint32_t *key, size_t n)
{
    roaring_bitmap_t *out = NULL;
    pthread_mutex_lock(&m->lock);
    for (size_t i = 0; i < ACL_MEMO_SLOTS && !out; i++) {
        acl_memo_slot_t *s = &m->slot[i];
        if (s->n == n && s->set && !memcmp(s->view, key, n * sizeof *key)) {
            out = roaring_bitmap_copy(s->set);
            s->used = ++m->tick;
        }
    }
    pthread_mutex_unlock(&m->lock);
    return out;
}

/* Keeps a copy of set for key, in the least recently used slot (nothing on a failed copy). */
static void memo_put(acl_memo_t *m, const uint32_t *key, size_t n, const roaring_bitmap_t *set)
{
    roaring_bitmap_t *copy = roaring_bitmap_copy(set);
    if (!copy)
        return;
    pthread_mutex_lock(&m->lock);
    acl_memo_slot_t *s = &m->slot[0];
    for (size_t i = 1; i < ACL_MEMO_SLOTS; i++)
        if (m->slot[i].used < s->used)
            s = &m->slot[i];
    if (s->set)
        roaring_bitmap_free(s->set);
    memcpy(s->view, key, n * sizeof *key);
    s->n = n;
    s->set = copy;
    s->used = ++m->tick;
    m->any = 1;
    pthread_mutex_unlock(&m->lock);
}

/* The union of the view's allow bitmaps minus its deny bitmaps, within live rows. */
static roaring_bitmap_t *compute_allowed(const acl_index_t *x, const uint32_t *view, size_t n)
{
    const roaring_bitmap_t **allow = cdn_malloc((n ? n : 1) * sizeof *allow);
    const roaring_bitmap_t **deny = cdn_malloc((n ? n : 1) * sizeof *deny);
    size_t na = 0, nd = 0;
    roaring_bitmap_t *res = NULL;
    if (!allow || !deny)
        goto done;
    for (size_t i = 0; i < n; i++) {
        if (view[i] >= x->nprin)
            continue; /* a principal no chunk of this collection names */
        if (x->allow[view[i]])
            allow[na++] = x->allow[view[i]];
        if (x->deny[view[i]])
            deny[nd++] = x->deny[view[i]];
    }
    res = na ? roaring_bitmap_or_many(na, allow) : roaring_bitmap_create();
    if (res && nd) {
        roaring_bitmap_t *d = roaring_bitmap_or_many(nd, deny);
        if (!d) {
            roaring_bitmap_free(res);
            res = NULL;
        } else {
            roaring_bitmap_andnot_inplace(res, d);
            roaring_bitmap_free(d);
        }
    }
    if (res)
        roaring_bitmap_and_inplace(res, x->live);
done:
    cdn_free(allow);
    cdn_free(deny);
    return res;
}

int acl_index_allowed(const acl_index_t *x, const uint32_t *view, size_t n, roaring_bitmap_t **out)
{
    uint32_t key[ACL_MEMO_VIEW_MAX];
    int memo = n > 0 && n <= ACL_MEMO_VIEW_MAX;
    roaring_bitmap_t *res = NULL;
    if (memo) {
        memcpy(key, view, n * sizeof *key);
        qsort(key, n, sizeof *key, u32_cmp);
        res = memo_get(x->memo, key, n);
    }
    if (!res && (res = compute_allowed(x, view, n)) != NULL && memo)
        memo_put(x->memo, key, n, res);
    if (!res)
        return CDN_ERR_NOMEM;
    *out = res;
    return CDN_OK;
}

static int in_sorted(const uint32_t *v, size_t n, uint32_t p)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (v[mid] == p)
            return 1;
        if (v[mid] < p)
            lo = mid + 1;
        else
            hi = mid;
    }
    return 0;
}

int acl_index_check(const acl_index_t *x, uint32_t row, const uint32_t *view_sorted, size_t n)
{
    const uint32_t *p = acl_index_get(x, row);
    int allowed = 0;
    if (!p)
        return 0;
    for (uint32_t i = 0; i < p[0] && !allowed; i++)
        allowed = in_sorted(view_sorted, n, p[2 + i]);
    for (uint32_t i = 0; i < p[1] && allowed; i++)
        if (in_sorted(view_sorted, n, p[2 + p[0] + i]))
            allowed = 0;
    return allowed;
}

const uint32_t *acl_index_get(const acl_index_t *x, uint32_t row)
{
    uint32_t ref = row < x->nrows ? x->row_ref[row] : 0;
    return ref ? x->ent[ref - 1].packed : NULL;
}

size_t acl_index_distinct(const acl_index_t *x) { return x->ndistinct; }

const roaring_bitmap_t *acl_index_live(const acl_index_t *x) { return x->live; }
