/* hnsw_int.h: the HNSW index's private layout and the primitives (hnsw_prim.c) shared by hnsw.c
 * (build), hnsw_search.c (traversal) and hnsw_io.c (persistence). Relies on pthreads and atomics.
 */
#ifndef CDN_HNSW_INT_H
#define CDN_HNSW_INT_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include "base/mem.h"
#include "vector/distance_bf16.h"
#include "vector/distance_i8.h"
#include "vector/hnsw.h"
#include "vector/quant.h"

/* Per-node flags, read and written with __atomic builtins. CLAIMED: an insert owns the id;
 * PRESENT: the node is fully linked; DELETED: hidden from results, still routes. */
#define HNSW_F_CLAIMED 1u
#define HNSW_F_PRESENT 2u
#define HNSW_F_DELETED 4u

/* Neighbour lists are written under striped mutexes: a thread holds at most one at a time, so
 * stripes cannot deadlock, and 4096 of them keep two writers on one stripe rare. Readers take
 * no lock: each stripe also has a sequence counter (a seqlock), odd while a list of the stripe
 * is being rewritten, and a reader copies the list and retries if the counter moved. */
#define HNSW_STRIPES 4096u
#define HNSW_NO_ENTRY UINT64_MAX

/* A visited set for one traversal: marks[id] == tag means visited. Bumping the tag clears it
 * in O(1); the array is zeroed only when the 16-bit tag wraps. Pooled between searches. */
typedef struct hnsw_visited {
    uint16_t *marks;
    uint32_t cap;
    uint16_t tag;
    uint32_t *scratch; /* a traversal's id buffer (two-hop finds), kept between searches */
    size_t scratch_cap;
    struct hnsw_visited *next;
} hnsw_visited_t;

struct hnsw {
    hnsw_params_t p;
    vec_metric_t metric;
    uint32_t dim;
    uint32_t m0; /* level-0 list capacity: 2 * m */
    double level_mult;
    vec_dist_fn dist;

    /* The per-node arrays hold `span` nodes. They are replaced (grown) only while grow_lock is
     * held for writing; every search and insert holds it for reading. */
    pthread_rwlock_t grow_lock;
    uint32_t span;
    uint32_t *l0;     /* span * (m0 + 1): slot 0 = count, then ids */
    uint8_t *levels;  /* top level of each node */
    uint8_t *flags;   /* HNSW_F_* */
    uint32_t **upper; /* levels[id] blocks of (m + 1) slots for levels 1..levels[id], or NULL */

    vec_dist4_fn dist4; /* the same metric, one query against four rows */

    pthread_mutex_t stripes[HNSW_STRIPES];
    _Atomic uint32_t seq[HNSW_STRIPES]; /* per-stripe seqlock counters, see hnsw_read_list */
    pthread_mutex_t top_lock;           /* held by an insert that raises the top level */
    _Atomic uint64_t entry;             /* (level << 32) | id, or HNSW_NO_ENTRY */
    _Atomic uint32_t n_nodes;
    _Atomic uint32_t n_deleted;
    _Atomic uint32_t n_deleted_repaired; /* n_deleted when the last completed repair sweep began */
    _Atomic uint32_t sweep_deleted;      /* n_deleted when the sweep in progress began, or
                                          * UINT32_MAX: none began at node 0 (or one failed) */
    /* Construction searches widened (hnsw.c, widen); not saved: a reopened index learns again */
    _Atomic uint32_t near_mean;      /* float bits: running mean of the nearest distance found */
    _Atomic uint32_t near_seen;      /* level-0 construction searches that added to it */
    _Atomic uint32_t widened;        /* wider searches run */
    _Atomic uint32_t widened_nearer; /* ... that found a row nearer than 0.9 of the first's */
    _Atomic uint32_t widen_skipped;  /* searches that showed a stall's signs while widening did
                                      * not pay: every HNSW_WIDEN_PROBE-th is widened */
    _Atomic uint64_t upper_words;    /* slots allocated for upper-level lists, for info and save */
    pthread_rwlock_t write_gate;     /* inserts/deletes share it; save takes it alone */

    pthread_mutex_t pool_lock;
    hnsw_visited_t *pool;

    /* The centres large batches are grouped by (hnsw_order.c), kept for the batches after the
     * one they were computed from until the graph has doubled; under order_lock. */
    pthread_mutex_t order_lock;
    struct hnsw_order *order;
    uint32_t order_nodes;      /* nodes when they were computed */
    atomic_size_t order_bytes; /* their memory, read by hnsw_get_info without the lock */
};

/* A bounded binary max-heap of hits (by dist). A min-heap stores negated distances. */
typedef struct hnsw_heap {
    hnsw_hit_t *a;
    uint32_t n, cap;
} hnsw_heap_t;

int hnsw_heap_init(hnsw_heap_t *q, uint32_t cap);
void hnsw_heap_free(hnsw_heap_t *q);
/* Pushes; returns CDN_ERR_NOMEM if it had to grow and could not. */
int hnsw_heap_push(hnsw_heap_t *q, uint32_t id, float dist);
void hnsw_heap_pop(hnsw_heap_t *q);
/* Sorts q ascending by (dist, id), hnsw_hit_cmp's order, in place: hnsw_heap_sort_heap for q
 * still a max-heap (as pushes and pops leave it), hnsw_heap_sort for any array (made a heap
 * first). Neither calls a comparator or takes a buffer as qsort does: the construction sorts
 * every level's found list, and a search its result list twice (at SciFact's 5,183 x 512 and
 * ef 96, qsort took a sixth of the search). */
void hnsw_heap_sort(hnsw_heap_t *q);
void hnsw_heap_sort_heap(hnsw_heap_t *q);

/* qsort order of hits: ascending by dist, ties by id. */
static inline int hnsw_hit_cmp(const void *a, const void *b)
{
    const hnsw_hit_t *x = a, *y = b;
    if (x->dist != y->dist)
        return x->dist < y->dist ? -1 : 1;
    return x->id < y->id ? -1 : (x->id > y->id);
}

/* Insertion sort by (dist, id), hnsw_hit_cmp's order: for short or nearly sorted lists (a
 * neighbour list and one more; a heapsorted list whose ties need ordering). */
static inline void hnsw_sort_hits(hnsw_hit_t *a, uint32_t n)
{
    for (uint32_t i = 1; i < n; i++) {
        hnsw_hit_t x = a[i];
        uint32_t j = i;
        for (; j > 0 && (a[j - 1].dist > x.dist || (a[j - 1].dist == x.dist && a[j - 1].id > x.id));
             j--)
            a[j] = a[j - 1];
        a[j] = x;
    }
}

static inline uint32_t *hnsw_list_at(const hnsw_t *h, uint32_t id, uint32_t level)
{
    if (level == 0)
        return h->l0 + (size_t)id * (h->m0 + 1);
    return h->upper[id] + (size_t)(level - 1) * (h->p.m + 1);
}

static inline uint32_t hnsw_list_cap(const hnsw_t *h, uint32_t level)
{
    return level == 0 ? h->m0 : h->p.m;
}

static inline pthread_mutex_t *hnsw_stripe(hnsw_t *h, uint32_t id)
{
    return &h->stripes[id & (HNSW_STRIPES - 1)];
}

static inline uint8_t hnsw_flags(const hnsw_t *h, uint32_t id)
{
    return __atomic_load_n(&h->flags[id], __ATOMIC_ACQUIRE);
}

/* Copies id's neighbour list at `level` into buf (room for list cap); returns the count. Takes
 * no lock: retries while a writer of id's stripe is between hnsw_list_write_begin and _end. */
uint32_t hnsw_read_list(hnsw_t *h, uint32_t id, uint32_t level, uint32_t *buf);

/* Replaces id's list at `level` with ids[0..n). The caller holds id's stripe mutex; the
 * stores are bracketed by the stripe's seqlock so lock-free readers never use a torn copy. */
void hnsw_list_store(hnsw_t *h, uint32_t id, uint32_t level, const uint32_t *ids, uint32_t n);

/* Bytes of a row fetched ahead of scoring: the first lines start the miss early and the
 * hardware streamer follows the rest of the row. */
#define HNSW_PREFETCH_BYTES 256u

CDN_PREFETCH_HELPER void hnsw_prefetch_row(const vec_view_t *view, uint32_t id)
{
    const char *p = (const char *)vec_row(view, id);
    for (uint32_t b = 0; b < HNSW_PREFETCH_BYTES; b += 64)
        __builtin_prefetch(p + b, 0, 3);
}

/* out[i] = distance from q to row ids[i], four rows per kernel call (the query block is loaded
 * once for four rows and four misses overlap). */
void hnsw_score(const hnsw_t *h, const vec_view_t *view, const float *q, const uint32_t *ids,
                uint32_t n, float *out);

/* hnsw_search_codes without a visit budget, acting as if row `hide` were not in the graph:
 * it is never scored, returned or expanded. A stored row asked as a query with itself hidden
 * behaves like a query the graph has never seen (calibration, hnsw_calib.c); the greedy
 * descent through the upper levels does not hide it, so hide rows that sit on level 0 only. */
int hnsw_search_hiding(hnsw_t *h, const vec_view_t *view, const quant_t *codes, const float *query,
                       uint32_t k, uint32_t ef, const roaring_bitmap_t *allowed, hnsw_mode_t mode,
                       uint32_t hide, hnsw_stats_t *stats, hnsw_hit_t *out_hits, uint32_t *n_out);

/* Takes a visited set sized for the current span (grow_lock held for reading), cleared. */
int hnsw_visited_get(hnsw_t *h, hnsw_visited_t **out);
void hnsw_visited_put(hnsw_t *h, hnsw_visited_t *v);

/* Where a traversal's distances come from: the float rows of view, or (construction by
 * hnsw_build) a copy of them, 8-bit rows of i8_stride codes under i8_unit scored with idist, or
 * bf16 rows of bf_stride elements scored with bdist, or (a query search given 8-bit codes)
 * estimates from the quantizer's codes, through codes. q / qi / qb: the query as float
 * (always), as an 8-bit row (when i8 is set) and as a bf16 row (when bf is set). */
typedef struct hnsw_scorer {
    const vec_view_t *view;
    const float *q;
    const int8_t *i8;
    size_t i8_stride;
    float i8_unit;
    vec_i8_dist_fn idist;
    vec_i8_dist4_fn idist4;
    const int8_t *qi;
    const uint16_t *bf;
    size_t bf_stride;
    vec_bf16_dist_fn bdist;
    vec_bf16_dist4_fn bdist4;
    const uint16_t *qb;
    const quant_query_t *codes;
} hnsw_scorer_t;

static inline const int8_t *hnsw_i8_row(const hnsw_scorer_t *s, uint32_t id)
{
    return s->i8 + (size_t)id * s->i8_stride;
}

static inline const uint16_t *hnsw_bf_row(const hnsw_scorer_t *s, uint32_t id)
{
    return s->bf + (size_t)id * s->bf_stride;
}

/* hnsw_score through a scorer: 8-bit or bf16 rows when it has them, else float. */
void hnsw_score_src(const hnsw_t *h, const hnsw_scorer_t *s, const uint32_t *ids, uint32_t n,
                    float *out);

/* The distance between stored rows a and b through a scorer's source (inline: the insert
 * heuristic calls it for every pair it compares). */
static inline float hnsw_pair_dist(const hnsw_t *h, const hnsw_scorer_t *s, uint32_t a, uint32_t b)
{
    if (s->i8)
        return s->idist(hnsw_i8_row(s, a), hnsw_i8_row(s, b), s->i8_stride, s->i8_unit);
    if (s->bf)
        return s->bdist(hnsw_bf_row(s, a), hnsw_bf_row(s, b), s->bf_stride);
    return h->dist(vec_row(s->view, a), vec_row(s->view, b), h->dim);
}

/* The scorer for stored row id as the query, from the same source as `base`. */
static inline hnsw_scorer_t hnsw_scorer_for(const hnsw_scorer_t *base, uint32_t id)
{
    hnsw_scorer_t s = *base;
    s.q = vec_row(s.view, id);
    s.qi = s.i8 ? hnsw_i8_row(&s, id) : NULL;
    s.qb = s.bf ? hnsw_bf_row(&s, id) : NULL;
    return s;
}

static inline void hnsw_prefetch_src(const hnsw_scorer_t *s, uint32_t id)
{
    if (s->codes) {
        quant_query_prefetch(s->codes, id);
    } else if (s->i8) {
        const char *p = (const char *)hnsw_i8_row(s, id);
        for (uint32_t b = 0; b < HNSW_PREFETCH_BYTES; b += 64)
            __builtin_prefetch(p + b, 0, 3);
    } else if (s->bf) {
        const char *p = (const char *)hnsw_bf_row(s, id);
        for (uint32_t b = 0; b < HNSW_PREFETCH_BYTES; b += 64)
            __builtin_prefetch(p + b, 0, 3);
    } else {
        hnsw_prefetch_row(s->view, id);
    }
}

/* Runs fn(arg) on `threads` threads (0: one per online CPU; at most HNSW_THREADS_MAX), the
 * caller's among them, and returns when all have finished. fn takes its share of the work from
 * arg (an atomic counter), so a thread that cannot be started only leaves more to the others. */
#define HNSW_THREADS_MAX 256u
void hnsw_run_threads(unsigned threads, void *(*fn)(void *), void *arg);

/* Greedy descent from *ep (at distance *ep_dist) through levels top .. stop+1. */
void hnsw_descend_src(hnsw_t *h, const hnsw_scorer_t *s, uint32_t top, uint32_t stop, uint32_t *ep,
                      float *ep_dist, uint64_t *ndist);

/* Construction search at one level: the ef nearest nodes to s->q reachable from eps, deleted
 * ones included. `out` is cleared and filled (a max-heap). Returns 0 or CDN_ERR_NOMEM. */
int hnsw_search_layer_build(hnsw_t *h, const hnsw_scorer_t *s, uint32_t level,
                            const hnsw_hit_t *eps, uint32_t n_eps, uint32_t ef, hnsw_heap_t *out);

/* The order in which a large batch is inserted (hnsw_order.c): HNSW_ORDER_CENTRES centres of
 * the batch's rows (HNSW_ORDER_ROUNDS rounds of k-means over HNSW_ORDER_SAMPLE of them), then
 * each chunk grouped by nearest centre, the groups along a chain of near centres, so that rows
 * near each other go in one after another. hnsw_build inserts batches of HNSW_ORDER_MIN_BATCH
 * rows or more in chunks of HNSW_ORDER_CHUNK, each grouped so once the graph holds as many
 * nodes as the chunk has rows (into a smaller graph, rows sorted by region would link mostly
 * among themselves). */
#define HNSW_ORDER_CENTRES 256u
#define HNSW_ORDER_SAMPLE 8192u
#define HNSW_ORDER_ROUNDS 4u
#define HNSW_ORDER_MIN_BATCH 8192u
#define HNSW_ORDER_CHUNK 65536u
typedef struct hnsw_order hnsw_order_t;

/* Centres for the rows ids[0..n) of view under h's metric (cosine: cosine; otherwise L2),
 * computed on `threads` threads (as hnsw_run_threads). *out is NULL (and 0 returned) when the
 * batch has fewer than 4 rows a centre. Returns 0 or CDN_ERR_NOMEM. The caller frees *out with
 * hnsw_order_free. */
int hnsw_order_create(const hnsw_t *h, const vec_view_t *view, const uint32_t *ids, size_t n,
                      unsigned threads, hnsw_order_t **out);
/* Bytes o holds (0 for NULL). */
size_t hnsw_order_bytes(const hnsw_order_t *o);
/* A copy of o (NULL for NULL) into *out; returns 0 or CDN_ERR_NOMEM. */
int hnsw_order_copy(const hnsw_order_t *o, hnsw_order_t **out);
void hnsw_order_free(hnsw_order_t *o);

/* The centres for a batch ids[0..n) about to go into h: h's kept ones, computed again from
 * this batch first when there are none or the graph has doubled since (and the batch has the
 * rows for it). *out is a copy the caller frees with hnsw_order_free, or NULL. */
int hnsw_order_for_batch(hnsw_t *h, const vec_view_t *view, const uint32_t *ids, size_t n,
                         unsigned threads, hnsw_order_t **out);

/* Sorts ids[0..n) by the chain position of each row's nearest centre, stably, on `threads`
 * threads. o NULL: leaves them. Reads only the rows of view, not the graph. Returns 0 or
 * CDN_ERR_NOMEM (ids unchanged). */
int hnsw_order_chunk(const hnsw_order_t *o, const vec_view_t *view, uint32_t *ids, size_t n,
                     unsigned threads);

/* Links live nodes in again at level 0 (hnsw_repair.c: nodes the deletes around them left with
 * few in-links, which searches then hardly reach): takes ids[i] for the next i of *next (shared
 * by the threads of one pass) until n, and for each searches for its row as an insert does
 * (from the entry point, at ef_construction) and adds it to the lists of the live neighbours
 * the insert heuristic picks (link_back: a full list re-chooses and may still leave it out).
 * Its own lists stay as they are. One workspace per call. The caller holds write_gate and
 * grow_lock for reading; safe alongside searches and inserts as an insert is. Returns 0 or
 * CDN_ERR_NOMEM (then *next is set to n, so the other threads stop as well). */
int hnsw_link_in_locked(hnsw_t *h, const vec_view_t *view, const uint32_t *ids, uint32_t n,
                        _Atomic uint32_t *next);

#endif
