/* index.c: one roaring bitmap of rows per principal (allow and deny), the live set, the rows'
 * interned ACLs (in enc.h's byte form) for the re-check, and a small memo of recent allowed
 * sets. Relies on CRoaring, xxhash and pthreads (the memo's lock: searches read the index
 * concurrently). */
#include "acl/acl.h"
#include "acl/enc.h"
#include "base/cmp.h"
#include "base/mem.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

/* Allowed sets are kept for the next query of the same view: the union of a subject's
 * principals' bitmaps can cost as much as the traversal that follows it (1M rows, a subject
 * of 10 divisions: 0.24 of 0.69 ms p50 in `roaring_bitmap_or_many`; 0.38 ms with the memo),
 * and even one principal's set is a copy plus an intersection with the live rows. The memo and
 * its readers share each set (acl_allowed_t, counted references) rather than copy it: a copy
 * of a dense set at 1M rows is 128 KB, 14 - 42 us a query on a hit and as much again to keep
 * it on a miss. Any change to the index empties the memo, under the collection's write lock,
 * so a memo never outlives the bitmaps it was computed from; a search still holding a set
 * keeps it until it releases it. */
#define ACL_MEMO_SLOTS 8
#define ACL_MEMO_VIEW_MAX 64 /* longer views are not kept */

struct acl_allowed {
    roaring_bitmap_t *set;
    atomic_uint refs;
};

typedef struct acl_memo_slot {
    uint32_t view[ACL_MEMO_VIEW_MAX]; /* sorted principal ids */
    size_t n;                         /* 0: empty slot */
    acl_allowed_t *set;               /* the memo's reference */
    uint64_t used;                    /* tick of the last hit, for eviction */
} acl_memo_slot_t;

typedef struct acl_memo {
    pthread_mutex_t lock;
    acl_memo_slot_t slot[ACL_MEMO_SLOTS];
    uint64_t tick;
    int any; /* some slot holds a set */
} acl_memo_t;

/* Rows share packed ACLs: every chunk of a document carries the document's ACL, so a collection
 * usually holds far fewer distinct ACLs than rows (e.g. 1,000 over 1M). A copy per row cost an
 * allocation and an 8-byte pointer per row: about 52 MB resident at 1M rows. So a row holds a
 * 4-byte reference into a table of distinct ACLs instead. An entry counts the rows that use it
 * and is freed with the last of them; its slot goes on a free list, so a workload that keeps
 * changing ACLs does not grow the table. Entries are found by content, through chained buckets
 * over a hash of their bytes: chains make removal a plain unlink, with no tombstones to sweep.
 *
 * ACLs can also be mostly distinct (the permissions benchmark: 632,926 over 1M rows, 7
 * principals each), so an entry costs 12 bytes in three arrays and its ACL lives in a byte arena
 * in the compact form of enc.h (12.7 bytes on average there) rather than in an allocation of
 * its own (32 bytes of entry and a 36-byte malloc before). No hash value is kept: a rehash or an
 * unlink recomputes it from the bytes. A freed entry's bytes stay in the arena as garbage until a
 * write finds more garbage than live bytes and copies the live entries into a fresh arena.
 *
 * Only writes look entries up by content; searches go from a row's reference straight to its
 * bytes. So acl_index_compact, called once a collection is loaded, frees the buckets and the
 * chain links (with the free list they carry): 6.7 MB of 23.8 at 1M rows of 631,849 distinct
 * ACLs. The first set after it chains every entry in use again and lists the free slots (those
 * with no reference), an O(entries) pass once per load (17 to 22 ms there). A delete needs no
 * hash: its freed slot is found by that pass. */
#define ACL_BUCKETS_MIN 64 /* buckets of the first set; they double past one entry per bucket */
#define ACL_GARBAGE_MIN ((size_t)64 << 10) /* smaller garbage is never worth a copy */

struct acl_index {
    roaring_bitmap_t **allow; /* by principal id; NULL = no rows */
    roaring_bitmap_t **deny;
    size_t nprin;      /* slots in allow and deny */
    uint32_t *row_ref; /* by row: 1 + entry index; 0 = deleted or never written */
    size_t nrows;
    /* The distinct ACLs, by entry index (a slot in use has refs > 0). */
    uint32_t *ent_off;   /* offset of its bytes in the arena */
    uint32_t *ent_refs;  /* rows whose row_ref names it; 0 = a free slot */
    uint32_t *ent_next;  /* 1 + next entry of the bucket (of the free list for a free slot) */
    size_t nent, entcap; /* slots ever taken (in use or free), slots allocated */
    size_t ndistinct;    /* entries in use */
    uint32_t free_head;  /* 1 + first free slot; 0 = none */
    int unhashed;        /* compacted: no ent_next, buckets or free list until hash_ensure */
    uint8_t *bytes;      /* the arena: every entry's byte form, and garbage */
    size_t blen, bcap;   /* bytes used (live and garbage), allocated; blen fits a uint32 */
    size_t garbage;      /* bytes of freed entries within blen */
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
        acl_allowed_release(m->slot[i].set);
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
    cdn_free(x->allow);
    cdn_free(x->deny);
    cdn_free(x->row_ref);
    cdn_free(x->ent_off);
    cdn_free(x->ent_refs);
    cdn_free(x->ent_next);
    cdn_free(x->bytes);
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

/* The byte form of entry ref (1 + its index). */
static const uint8_t *entry_bytes(const acl_index_t *x, uint32_t ref)
{
    return x->bytes + x->ent_off[ref - 1];
}

/* 1 + the index of the entry whose bytes are enc[0..len) (hash h), or 0. The byte form is
 * prefix-free (its head says how many varints follow, and each varint ends itself), so an entry
 * whose bytes begin with all of enc is enc. */
static uint32_t entry_find(const acl_index_t *x, const uint8_t *enc, size_t len, uint64_t h)
{
    if (!x->nbucket)
        return 0;
    for (uint32_t r = x->bucket[h & (x->nbucket - 1)]; r; r = x->ent_next[r - 1])
        if (x->blen - x->ent_off[r - 1] >= len && !memcmp(entry_bytes(x, r), enc, len))
            return r;
    return 0;
}

/* The hash of entry ref's bytes, recomputed: entries keep none. */
static uint64_t entry_hash(const acl_index_t *x, uint32_t ref)
{
    const uint8_t *e = entry_bytes(x, ref);
    return XXH3_64bits(e, acl_enc_size(e));
}

/* Chains the entries in use into n buckets (a power of two). 0 or CDN_ERR_NOMEM (the old
 * buckets then stay). */
static int entry_rehash(acl_index_t *x, size_t n)
{
    uint32_t *b = cdn_calloc(n, sizeof *b);
    if (!b)
        return CDN_ERR_NOMEM;
    for (size_t i = 0; i < x->nent; i++) {
        size_t at;
        if (!x->ent_refs[i])
            continue; /* a free slot: its next belongs to the free list */
        at = entry_hash(x, (uint32_t)(i + 1)) & (n - 1);
        x->ent_next[i] = b[at];
        b[at] = (uint32_t)(i + 1);
    }
    cdn_free(x->bucket);
    x->bucket = b;
    x->nbucket = n;
    return CDN_OK;
}

/* Brings back what acl_index_compact dropped: the chain links, buckets for one entry more than
 * are in use (the set that needs them may add one), and the free list, which is every slot
 * with no reference. Both allocations come first: CDN_ERR_NOMEM leaves the index unhashed. */
static int hash_ensure(acl_index_t *x)
{
    size_t n = ACL_BUCKETS_MIN;
    if (!x->unhashed)
        return CDN_OK;
    while (n < x->ndistinct + 1)
        n *= 2;
    x->ent_next = cdn_malloc(x->entcap * sizeof *x->ent_next);
    if (!x->ent_next || entry_rehash(x, n)) {
        cdn_free(x->ent_next);
        x->ent_next = NULL;
        return CDN_ERR_NOMEM;
    }
    x->free_head = 0;
    for (size_t i = x->nent; i-- > 0;) { /* downwards: the lowest free slot is taken first */
        if (x->ent_refs[i])
            continue;
        x->ent_next[i] = x->free_head;
        x->free_head = (uint32_t)(i + 1);
    }
    x->unhashed = 0;
    return CDN_OK;
}

/* Grows the three entry arrays to at least need slots (doubling). CDN_ERR_NOMEM leaves entcap
 * as it was: an array grown before the failure is only larger than entcap says. */
static int entries_grow(acl_index_t *x, size_t need)
{
    uint32_t **arr[] = {&x->ent_off, &x->ent_refs, &x->ent_next};
    size_t cap = x->entcap ? x->entcap : 8;
    CDN_ASSERT(!x->unhashed); /* else ent_next would grow from NULL, beside no buckets */
    if (need <= x->entcap)
        return CDN_OK;
    while (cap < need)
        cap *= 2;
    for (size_t i = 0; i < sizeof arr / sizeof *arr; i++) {
        uint32_t *p = cdn_realloc(*arr[i], cap * sizeof *p);
        if (!p)
            return CDN_ERR_NOMEM;
        *arr[i] = p;
    }
    x->entcap = cap;
    return CDN_OK;
}

/* Adds an entry holding enc[0..len) (hash h) with no reference yet; *ref is 1 + its index. All
 * allocations come before any change, so CDN_ERR_NOMEM leaves the entries as they were. */
static int entry_add(acl_index_t *x, const uint8_t *enc, size_t len, uint64_t h, uint32_t *ref)
{
    uint32_t r;
    if (!x->free_head && x->nent >= UINT32_MAX)
        return CDN_ERR_NOMEM; /* a reference, 1 + index, must fit a uint32 */
    if (x->blen + len > UINT32_MAX)
        return CDN_ERR_NOMEM; /* and so must an offset */
    if (!x->free_head && entries_grow(x, x->nent + 1))
        return CDN_ERR_NOMEM;
    if (x->ndistinct + 1 > x->nbucket &&
        entry_rehash(x, x->nbucket ? x->nbucket * 2 : ACL_BUCKETS_MIN))
        return CDN_ERR_NOMEM;
    if (cdn_grow((void **)&x->bytes, &x->bcap, x->blen + len, 1))
        return CDN_ERR_NOMEM;
    if (x->free_head) {
        r = x->free_head;
        x->free_head = x->ent_next[r - 1];
    } else {
        r = (uint32_t)++x->nent;
    }
    memcpy(x->bytes + x->blen, enc, len);
    x->ent_off[r - 1] = (uint32_t)x->blen;
    x->blen += len;
    x->ent_refs[r - 1] = 0;
    x->ent_next[r - 1] = x->bucket[h & (x->nbucket - 1)];
    x->bucket[h & (x->nbucket - 1)] = r;
    x->ndistinct++;
    *ref = r;
    return CDN_OK;
}

/* Takes a reference to the entry holding enc[0..len), by content, adding it if no row has that
 * ACL yet; *ref is 1 + its index. 0 or CDN_ERR_NOMEM (then no reference changed; a hash it
 * rebuilt stays). */
static int entry_acquire(acl_index_t *x, const uint8_t *enc, size_t len, uint32_t *ref)
{
    uint64_t h = XXH3_64bits(enc, len);
    uint32_t r;
    if (hash_ensure(x))
        return CDN_ERR_NOMEM;
    r = entry_find(x, enc, len, h);
    if (!r && entry_add(x, enc, len, h, &r))
        return CDN_ERR_NOMEM;
    CDN_ASSERT(x->ent_refs[r - 1] < UINT32_MAX); /* rows are uint32, and one is being set */
    x->ent_refs[r - 1]++;
    *ref = r;
    return CDN_OK;
}

/* Drops one reference to entry ref (0: none). The last one unlinks the entry from its bucket,
 * counts its bytes as garbage and puts the slot on the free list; unhashed, there is neither
 * chain nor list, and hash_ensure finds the slot by its refs of 0. */
static void entry_release(acl_index_t *x, uint32_t ref)
{
    const uint8_t *e;
    size_t len;
    uint32_t *link;
    if (!ref)
        return;
    CDN_ASSERT(x->ent_refs[ref - 1] > 0);
    if (--x->ent_refs[ref - 1] > 0)
        return;
    e = entry_bytes(x, ref);
    len = acl_enc_size(e);
    x->garbage += len;
    x->ndistinct--;
    if (x->unhashed)
        return;
    for (link = &x->bucket[XXH3_64bits(e, len) & (x->nbucket - 1)]; *link != ref;
         link = &x->ent_next[*link - 1])
        CDN_ASSERT(*link != 0); /* an entry in use is in its bucket's chain */
    *link = x->ent_next[ref - 1];
    x->ent_next[ref - 1] = x->free_head;
    x->free_head = ref;
}

/* Copies the entries in use into a fresh arena of exactly their bytes, leaving the garbage of
 * freed ones behind. Nothing outside the index points into the arena (acl_index_get copies out;
 * writes, this one included, run under the collection's write lock), so only offsets change.
 * Out of memory: the arena stays as it is, garbage and all. */
static void arena_compact(acl_index_t *x)
{
    size_t live = x->blen - x->garbage, at = 0;
    uint8_t *b = live ? cdn_malloc(live) : NULL;
    if (live && !b)
        return;
    for (size_t i = 0; i < x->nent; i++) {
        const uint8_t *e = x->bytes + x->ent_off[i];
        size_t len;
        if (!x->ent_refs[i])
            continue; /* a free slot: its offset is stale until the slot is taken again */
        len = acl_enc_size(e);
        memcpy(b + at, e, len);
        x->ent_off[i] = (uint32_t)at;
        at += len;
    }
    CDN_ASSERT(at == live);
    cdn_free(x->bytes);
    x->bytes = b;
    x->blen = x->bcap = live;
    x->garbage = 0;
}

/* Ends every write that may free entries: compacts the arena once garbage outweighs the live
 * bytes (so the arena stays under twice them, past a floor), and only then, so a copy's cost
 * is spread over at least as many freed bytes. */
static void arena_tidy(acl_index_t *x)
{
    if (x->garbage >= ACL_GARBAGE_MIN && x->garbage > x->blen / 2)
        arena_compact(x);
}

/* A principal's bitmap can be missing: a set that ran out of memory half-way leaves the row
 * naming principals whose bitmaps it never created (and CRoaring does not take NULL). */
static void unindex_row(acl_index_t *x, uint32_t row)
{
    uint32_t ref = acl_index_entry_of(x, row);
    acl_dec_t d;
    if (!ref)
        return;
    acl_dec_open(&d, entry_bytes(x, ref));
    for (int w = 0; w < 2; w++) {
        roaring_bitmap_t **set = w ? x->deny : x->allow;
        uint32_t id = 0;
        for (uint32_t i = 0; i < d.n[w]; i++) {
            id = acl_dec_next(&d, id);
            if (set[id])
                roaring_bitmap_remove(set[id], row);
        }
    }
}

/* Every allocation (principal slots, the row's slot, a new entry) comes before the first change,
 * so CDN_ERR_NOMEM from them leaves the row's previous ACL in force. The new entry's reference
 * is taken before the old one is dropped: a row set to the ACL it has keeps its entry. enc is
 * packed's byte form, len bytes. */
static int set_encoded(acl_index_t *x, uint32_t row, const uint32_t *packed, const uint8_t *enc,
                       size_t len)
{
    uint32_t plen = acl_packed_len(packed);
    uint32_t ref, old;
    size_t cap = x->nrows;
    int rc = CDN_OK;
    for (uint32_t i = 2; i < plen && rc == 0; i++)
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
    if (entry_acquire(x, enc, len, &ref))
        return CDN_ERR_NOMEM;
    unindex_row(x, row);
    for (uint32_t i = 0; i < packed[0] && rc == 0; i++)
        rc = bitmap_add(&x->allow[packed[2 + i]], row);
    for (uint32_t i = 0; i < packed[1] && rc == 0; i++)
        rc = bitmap_add(&x->deny[packed[2 + packed[0] + i]], row);
    old = x->row_ref[row];
    x->row_ref[row] = ref;
    entry_release(x, old);
    arena_tidy(x);
    if (rc) { /* half-indexed: make the row unreadable rather than partly readable */
        unindex_row(x, row);
        roaring_bitmap_remove(x->live, row);
        return rc;
    }
    roaring_bitmap_add(x->live, row);
    return CDN_OK;
}

/* Room on the stack for the byte form of any ACL a chunk may carry; longer ones (which only a
 * caller other than the engine could pass) get a buffer from the heap. */
#define ACL_ENC_STACK ((2 + ACL_MAX_PRINCIPALS) * ACL_ENC_VARINT_MAX)

int acl_index_set(acl_index_t *x, uint32_t row, const uint32_t *packed)
{
    uint8_t stack[ACL_ENC_STACK], *enc = stack;
    size_t bound = acl_enc_bound(packed);
    int rc;
    if (bound > sizeof stack && !(enc = cdn_malloc(bound)))
        return CDN_ERR_NOMEM;
    rc = set_encoded(x, row, packed, enc, acl_enc_write(packed, enc));
    if (enc != stack)
        cdn_free(enc);
    return rc;
}

void acl_index_remove(acl_index_t *x, uint32_t row)
{
    memo_clear(x->memo);
    unindex_row(x, row);
    if (row < x->nrows) {
        entry_release(x, x->row_ref[row]);
        x->row_ref[row] = 0;
        arena_tidy(x);
    }
    roaring_bitmap_remove(x->live, row);
}

/* A reference to the memo's set for the sorted view key[0..n), or NULL. */
static acl_allowed_t *memo_get(acl_memo_t *m, const uint32_t *key, size_t n)
{
    acl_allowed_t *out = NULL;
    pthread_mutex_lock(&m->lock);
    for (size_t i = 0; i < ACL_MEMO_SLOTS && !out; i++) {
        acl_memo_slot_t *s = &m->slot[i];
        if (s->n == n && s->set && !memcmp(s->view, key, n * sizeof *key)) {
            out = s->set;
            atomic_fetch_add_explicit(&out->refs, 1, memory_order_relaxed);
            s->used = ++m->tick;
        }
    }
    pthread_mutex_unlock(&m->lock);
    return out;
}

/* Keeps a reference to set for key, in the least recently used slot. */
static void memo_put(acl_memo_t *m, const uint32_t *key, size_t n, acl_allowed_t *set)
{
    atomic_fetch_add_explicit(&set->refs, 1, memory_order_relaxed);
    pthread_mutex_lock(&m->lock);
    acl_memo_slot_t *s = &m->slot[0];
    for (size_t i = 1; i < ACL_MEMO_SLOTS; i++)
        if (m->slot[i].used < s->used)
            s = &m->slot[i];
    acl_allowed_t *old = s->set;
    memcpy(s->view, key, n * sizeof *key);
    s->n = n;
    s->set = set;
    s->used = ++m->tick;
    m->any = 1;
    pthread_mutex_unlock(&m->lock);
    acl_allowed_release(old);
}

/* The union of the view's allow bitmaps minus its deny bitmaps, within live rows. */
static acl_allowed_t *compute_allowed(const acl_index_t *x, const uint32_t *view, size_t n)
{
    const roaring_bitmap_t **allow = cdn_malloc((n ? n : 1) * sizeof *allow);
    const roaring_bitmap_t **deny = cdn_malloc((n ? n : 1) * sizeof *deny);
    size_t na = 0, nd = 0;
    roaring_bitmap_t *res = NULL;
    acl_allowed_t *out = NULL;
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
    if (res && !(out = cdn_malloc(sizeof *out)))
        roaring_bitmap_free(res);
    else if (res) {
        out->set = res;
        atomic_init(&out->refs, 1);
    }
done:
    cdn_free(allow);
    cdn_free(deny);
    return out;
}

int acl_index_allowed_shared(const acl_index_t *x, const uint32_t *view, size_t n,
                             acl_allowed_t **out)
{
    uint32_t key[ACL_MEMO_VIEW_MAX];
    int memo = n > 0 && n <= ACL_MEMO_VIEW_MAX;
    acl_allowed_t *res = NULL;
    if (memo) {
        memcpy(key, view, n * sizeof *key);
        qsort(key, n, sizeof *key, cdn_cmp_u32);
        res = memo_get(x->memo, key, n);
    }
    if (!res && (res = compute_allowed(x, view, n)) != NULL && memo)
        memo_put(x->memo, key, n, res);
    if (!res)
        return CDN_ERR_NOMEM;
    *out = res;
    return CDN_OK;
}

const roaring_bitmap_t *acl_allowed_set(const acl_allowed_t *a)
{
    return a->set;
}

void acl_allowed_release(acl_allowed_t *a)
{
    if (!a || atomic_fetch_sub_explicit(&a->refs, 1, memory_order_acq_rel) != 1)
        return;
    roaring_bitmap_free(a->set);
    cdn_free(a);
}

int acl_index_allowed(const acl_index_t *x, const uint32_t *view, size_t n, roaring_bitmap_t **out)
{
    acl_allowed_t *a = NULL;
    if (acl_index_allowed_shared(x, view, n, &a))
        return CDN_ERR_NOMEM;
    *out = roaring_bitmap_copy(a->set);
    acl_allowed_release(a);
    return *out ? CDN_OK : CDN_ERR_NOMEM;
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

/* Decodes as it goes and allocates nothing: searches call it for every hit, from many threads. */
int acl_index_check(const acl_index_t *x, uint32_t row, const uint32_t *view_sorted, size_t n)
{
    uint32_t ref = acl_index_entry_of(x, row), id = 0;
    int allowed = 0;
    acl_dec_t d;
    if (!ref)
        return 0;
    acl_dec_open(&d, entry_bytes(x, ref));
    for (uint32_t i = 0; i < d.n[0]; i++) { /* to the end: the denied ids follow */
        id = acl_dec_next(&d, id);
        allowed = allowed || in_sorted(view_sorted, n, id);
    }
    id = 0;
    for (uint32_t i = 0; i < d.n[1] && allowed; i++) {
        id = acl_dec_next(&d, id);
        allowed = !in_sorted(view_sorted, n, id);
    }
    return allowed;
}

size_t acl_index_get(const acl_index_t *x, uint32_t row, uint32_t *buf, size_t cap)
{
    uint32_t ref = acl_index_entry_of(x, row);
    size_t len, k = 2;
    acl_dec_t d;
    if (!ref)
        return 0;
    acl_dec_open(&d, entry_bytes(x, ref));
    len = 2 + (size_t)d.n[0] + d.n[1];
    if (len > cap)
        return len;
    buf[0] = d.n[0];
    buf[1] = d.n[1];
    for (int w = 0; w < 2; w++) {
        uint32_t id = 0;
        for (uint32_t i = 0; i < d.n[w]; i++)
            buf[k++] = id = acl_dec_next(&d, id);
    }
    return len;
}

uint32_t acl_index_entry_of(const acl_index_t *x, uint32_t row)
{
    return row < x->nrows ? x->row_ref[row] : 0;
}

size_t acl_index_distinct(const acl_index_t *x)
{
    return x->ndistinct;
}

uint32_t acl_index_entry_span(const acl_index_t *x)
{
    return (uint32_t)x->nent;
}

uint32_t acl_index_principal_span(const acl_index_t *x)
{
    return (uint32_t)x->nprin;
}

uint64_t acl_index_principal_rows(const acl_index_t *x, uint32_t principal)
{
    if (principal >= x->nprin || !x->allow[principal])
        return 0;
    return roaring_bitmap_get_cardinality(x->allow[principal]);
}

int acl_index_allowed_ids(const acl_index_t *x, int (*fn)(void *ctx, uint32_t id), void *ctx)
{
    for (size_t i = 0; i < x->nprin; i++)
        if (x->allow[i] && !roaring_bitmap_is_empty(x->allow[i])) {
            int rc = fn(ctx, (uint32_t)i);
            if (rc)
                return rc;
        }
    return 0;
}

size_t acl_index_memory(const acl_index_t *x)
{
    size_t arrays = x->unhashed ? 2 : 3; /* ent_off, ent_refs, and ent_next while hashed */
    return x->nrows * sizeof *x->row_ref + x->entcap * arrays * sizeof(uint32_t) + x->bcap +
           x->nbucket * sizeof *x->bucket;
}

/* Reallocates *p, holding *cap elements of size bytes, down to n; a failed shrink keeps it. */
static void shrink(void **p, size_t *cap, size_t n, size_t size)
{
    void *np;
    if (n >= *cap)
        return;
    if (!n) {
        cdn_free(*p);
        *p = NULL;
        *cap = 0;
    } else if ((np = cdn_realloc(*p, n * size)) != NULL) {
        *p = np;
        *cap = n;
    }
}

static void bitmap_shrink(roaring_bitmap_t *b)
{
    if (!b)
        return;
    roaring_bitmap_run_optimize(b);
    roaring_bitmap_shrink_to_fit(b);
}

/* Loading grows every array by doubling, so up to half of each is slack, and a bitmap's
 * containers keep the room they grew into. None of it is needed once the rows are in, nor is
 * the hash until the next set (hash_ensure). */
void acl_index_compact(acl_index_t *x)
{
    size_t rows = x->nrows, cap[2] = {x->entcap, x->entcap};
    for (size_t i = 0; i < x->nprin; i++) {
        bitmap_shrink(x->allow[i]);
        bitmap_shrink(x->deny[i]);
    }
    bitmap_shrink(x->live);
    while (rows > 0 && !x->row_ref[rows - 1])
        rows--; /* rows past the last one written read as never written anyway */
    shrink((void **)&x->row_ref, &x->nrows, rows, sizeof *x->row_ref);
    shrink((void **)&x->ent_off, &cap[0], x->nent, sizeof *x->ent_off);
    shrink((void **)&x->ent_refs, &cap[1], x->nent, sizeof *x->ent_refs);
    /* Both arrays hold at least the smaller; one whose shrink failed only holds more. */
    x->entcap = cap[0] < cap[1] ? cap[0] : cap[1];
    if (x->garbage)
        arena_compact(x);
    else
        shrink((void **)&x->bytes, &x->bcap, x->blen, 1);
    cdn_free(x->ent_next);
    cdn_free(x->bucket);
    x->ent_next = x->bucket = NULL;
    x->nbucket = 0;
    x->free_head = 0;
    x->unhashed = 1;
}

const roaring_bitmap_t *acl_index_live(const acl_index_t *x)
{
    return x->live;
}
