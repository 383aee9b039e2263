/* hnsw.h: a hierarchical navigable small world graph over vectors kept elsewhere, with searches
 * that stay correct under a permission filter. Relies on vector/distance.h and CRoaring. */
#ifndef CDN_HNSW_H
#define CDN_HNSW_H

#include <stddef.h>
#include <stdint.h>

#include <roaring/roaring.h>

#include "base/topk.h"
#include "vector/distance.h"
#include "vector/distance_i8.h"
#include "vector/quant.h"

/* Build and search parameters. m: links per node on upper levels (level 0 gets 2*m);
 * ef_construction: candidate list size while inserting; ef_search: default search list size;
 * seed: decides each node's level (level of id = f(seed, id), so builds are reproducible). */
typedef struct hnsw_params {
    uint32_t m;
    uint32_t ef_construction;
    uint32_t ef_search;
    uint32_t seed;
} hnsw_params_t;

/* Limits checked by hnsw_create. */
#define HNSW_M_MIN 2
#define HNSW_M_MAX 128
#define HNSW_MAX_LEVEL 31
#define HNSW_EF_MAX 100000u

/* How hnsw_search treats `allowed`:
 *   UNFILTERED: ignores it; the caller re-checks hits (use when nearly everything is allowed).
 *   FILTERED: only allowed, not-deleted nodes enter the results; disallowed nodes still route,
 *   sparse neighbourhoods are crossed by two-hop expansion, and allowed ids seed the search.
 *   POOL: the UNFILTERED traversal, whose hits are then the allowed nodes among the k nearest
 *   of its list (so fewer than k, often): only those are re-scored in float. For a caller
 *   that would drop the others (a pool of candidates for a subject). It returns no hit at all
 *   (stats.pool_far) when the seed sample's nearest rows, or its list when it first holds ef
 *   rows, show the allowed rows lie elsewhere.
 *   NULL allowed: all. */
typedef enum hnsw_mode {
    HNSW_MODE_UNFILTERED = 0,
    HNSW_MODE_FILTERED = 1,
    HNSW_MODE_POOL = 2
} hnsw_mode_t;

/* One result: the row id and its distance to the query (lower is nearer); the exact scan's
 * hit type, so the planner can hand either path's hits on unchanged. */
typedef topk_hit_t hnsw_hit_t;

/* What a search did. `visited`: level-0 nodes reached (evaluated, seeded or crossed as two-hop
 * bridges), which max_visits bounds; `distances`: distance computations, upper levels included;
 * `exhausted_budget`: the search stopped at max_visits, so the caller should scan exactly;
 * `incomplete`: 1 unless the search evaluated every admissible node (then the hits are the
 * exact top-k of the admissible nodes the graph holds). */
typedef struct hnsw_stats {
    uint64_t visited;
    uint64_t distances;
    uint32_t two_hop_expansions;
    uint32_t seeds;
    int exhausted_budget;
    int incomplete;
    /* Filtered searches that chose their seeds from a uniform sample of the allowed set:
     * sampled = rows scored, sample_allowed = the allowed set's size, sample_closer = sampled
     * rows nearer than the k-th result. A true top-k leaves about k * sampled / allowed of the
     * sample nearer than its k-th hit; many more is evidence the traversal stopped short
     * (hnsw_sample_suspect). */
    uint32_t sampled, sample_closer;
    uint64_t sample_allowed;
    /* POOL mode: 1 when the unfiltered seed sample's nearest rows held none of the allowed
     * set (its rows lie elsewhere): the traversal stopped there and returned no hit. */
    int pool_far;
    /* Traversals on codes: rows of the list re-scored in float; the list's first
     * HNSW_RERANK_FACTOR * k rows less those their codes' bounds ruled out. */
    uint32_t rescored;
} hnsw_stats_t;

/* 1 when st's sample witness makes a complete top-k unlikely: sample_closer reaches the
 * smallest count a correct top-k reaches with probability below 1% (binomial, k trials, each
 * sampled with probability sampled / sample_allowed). 0 without a sample. */
int hnsw_sample_suspect(const hnsw_stats_t *st, uint32_t k);

/* Counters of an index, for planners and benchmarks. */
typedef struct hnsw_info {
    uint32_t nodes; /* inserted ids, deleted ones included */
    uint32_t deleted;
    uint32_t id_span; /* 1 + the largest id the arrays can hold without growing */
    uint32_t max_level;
    uint32_t dim;
    vec_metric_t metric;
    hnsw_params_t params;
    size_t memory_bytes;     /* graph memory and the centres kept for grouping batches (not
                                the vectors, which the store owns) */
    uint32_t deleted_linked; /* deleted since the last hnsw_repair began: maybe still linked */
    uint32_t widened;        /* construction searches searched again wider (since opened) */
    uint32_t widened_nearer; /* ... where that found a nearer row */
} hnsw_info_t;

typedef struct hnsw hnsw_t;

/* Defaults: m=16, ef_construction=160, ef_search=64, seed=42. */
hnsw_params_t hnsw_params_default(void);

/* Creates an empty index for vectors of `dim` floats compared with `metric`.
 * Returns 0, CDN_ERR_INVALID (parameter out of range) or CDN_ERR_NOMEM. Free with hnsw_free. */
int hnsw_create(hnsw_params_t params, vec_metric_t metric, uint32_t dim, hnsw_t **out);

/* Frees the index and everything it owns. NULL is fine. No search or insert may be running. */
void hnsw_free(hnsw_t *h);

/* Makes room for ids below `id_span` so later inserts do not grow the arrays (growing makes
 * concurrent searches wait for a moment). Returns 0, CDN_ERR_NOMEM or CDN_ERR_LIMIT. */
int hnsw_reserve(hnsw_t *h, uint32_t id_span);

/* Inserts row `id` of `view` (ids are row numbers, in any order, with gaps). Safe to call from
 * many threads at once and alongside hnsw_search. Returns 0, CDN_ERR_INVALID (id beyond the
 * view or view dim differs), CDN_ERR_EXISTS (id already inserted), CDN_ERR_NOMEM. */
int hnsw_insert(hnsw_t *h, const vec_view_t *view, uint32_t id);

/* Inserts ids[0..n) with `threads` worker threads (0 = every online CPU); a large batch in an
 * order of its own, rows of one region together. Returns the first error any insert met (the
 * others still ran), or 0. Ids already present count as errors. Same as hnsw_build_ex with
 * HNSW_BUILD_AUTO. */
int hnsw_build(hnsw_t *h, const vec_view_t *view, const uint32_t *ids, size_t n, unsigned threads);

/* The precision of construction distances. FLOAT: the float rows. I8: an 8-bit copy of every
 * row of the view under one scale (distance_i8.h: a byte a value, allocated for the build and
 * freed before it returns), a quarter of the memory read per distance. BF16: a bfloat16 copy
 * (2 bytes a value). Searches always use float (or the quantizer's codes). AUTO: I8 when the CPU
 * has AVX2 or AVX-512 and the batch is large (>= 4096 ids and >= a quarter of the view's rows),
 * else FLOAT. */
typedef enum hnsw_build_precision {
    HNSW_BUILD_AUTO = 0,
    HNSW_BUILD_FLOAT = 1,
    HNSW_BUILD_BF16 = 2,
    HNSW_BUILD_I8 = 3,
} hnsw_build_precision_t;

/* hnsw_build with a chosen construction precision. Returns as hnsw_build; CDN_ERR_INVALID also
 * for an unknown precision, CDN_ERR_NOMEM if the copy cannot be allocated. */
int hnsw_build_ex(hnsw_t *h, const vec_view_t *view, const uint32_t *ids, size_t n,
                  unsigned threads, hnsw_build_precision_t prec);

/* An 8-bit copy of a view's rows kept by the caller across builds: rows 0..count-1, each
 * vec_i8_from_f32 of the float row under `map` with no value saturated, `stride`
 * (vec_i8_padded(dim)) codes apart. Only a caller whose rows never change once written may keep
 * one (the engine's rows are append-only); then a build converts nothing. */
typedef struct hnsw_i8_rows {
    const int8_t *rows;
    size_t stride;
    uint32_t count;
    vec_i8_map_t map;
} hnsw_i8_rows_t;

/* hnsw_build with every construction distance on rows instead of a copy made for the build (as
 * HNSW_BUILD_I8 computes them). rows must cover the view (rows->count >= view->count). Returns
 * as hnsw_build; CDN_ERR_INVALID also for rows that do not cover the view or have another
 * stride. */
int hnsw_build_i8(hnsw_t *h, const vec_view_t *view, const hnsw_i8_rows_t *rows,
                  const uint32_t *ids, size_t n, unsigned threads);

/* What one hnsw_repair did: lists re-chosen (a live node's list at one level that named a
 * deleted node), and of them those left empty (every candidate deleted). */
typedef struct hnsw_repair_stats {
    uint64_t lists_relinked;
    uint64_t lists_emptied;
    uint32_t next;            /* hnsw_repair_range: where the sweep goes on, 0 when it has ended */
    uint64_t nodes_linked_in; /* hnsw_repair: live nodes linked in again (few in-links left) */
} hnsw_repair_stats_t;

/* Unlinks the deleted nodes: every live node whose list at some level names a deleted node keeps
 * its live neighbours and gives the deleted ones' places to the nearest live neighbours of
 * those deleted nodes (through up to three deleted hops) that the insert heuristic admits,
 * scored in float on view (the rows the nodes were inserted from). Then every live node left
 * with fewer than m/2 in-links at level 0 is linked in again from its nearest neighbours, as an
 * insert links a new node (not done by hnsw_repair_range: a whole-graph count of in-links).
 * Afterwards no live node links to
 * a node deleted before the call, and a deleted entry point is replaced by a live one; deleted
 * nodes keep their own lists (a search in flight may stand on one) and their ids. Safe alongside
 * searches, inserts and deletes (as an insert, it holds each list's stripe while re-choosing it); a
 * save waits for it. threads 0: one per online CPU. stats may be NULL. Returns 0, CDN_ERR_INVALID
 * (NULL, dimension mismatch) or CDN_ERR_NOMEM (lists already re-chosen stay so: each is valid). */
int hnsw_repair(hnsw_t *h, const vec_view_t *view, unsigned threads, hnsw_repair_stats_t *stats);

/* hnsw_repair in slices, so that a caller that must not wait for a whole pass (a writer) can
 * spread it over calls: repairs the lists of the nodes with ids in [first, first + count). A
 * sweep is a series of calls from first 0, each starting where the last ended (stats->next),
 * until stats->next is 0 again; when a sweep ends, every node deleted before it began is
 * unlinked (hnsw_info_t.deleted_linked counts from there) and a deleted entry point is replaced.
 * Same safety and returns as hnsw_repair; after an error the sweep in progress counts for
 * nothing (start again from 0). */
int hnsw_repair_range(hnsw_t *h, const vec_view_t *view, uint32_t first, uint32_t count,
                      unsigned threads, hnsw_repair_stats_t *stats);

/* map[] value of a node hnsw_compact leaves out. */
#define HNSW_COMPACT_GONE UINT32_MAX

/* A copy of h holding only the nodes map keeps, renumbered: node i (i < n_map) becomes node
 * map[i] of *out, or is left out when map[i] is HNSW_COMPACT_GONE; nodes from n_map on are left
 * out. Kept nodes must be present and not deleted, and map them one to one onto 0..n_new-1.
 * Links to nodes left out are dropped, so run hnsw_repair first: then no kept node links to a
 * deleted one and only lists that named another left-out node shrink. Levels, list order and
 * the entry point (if kept; else a kept node of the highest level) carry over: the copy
 * searches as h does over the kept nodes. h may be searched meanwhile; inserts, deletes and
 * repairs wait. Returns 0, CDN_ERR_INVALID (a map that is not such a bijection) or
 * CDN_ERR_NOMEM; *out is freed with hnsw_free. */
int hnsw_compact(hnsw_t *h, const uint32_t *map, uint32_t n_map, uint32_t n_new, hnsw_t **out);

/* Marks id deleted: it keeps routing searches but never appears in results.
 * Returns 0 or CDN_ERR_NOT_FOUND (never inserted). Deleting twice is fine. */
int hnsw_delete(hnsw_t *h, uint32_t id);

/* Nearest k ids to `query` (dim floats; unit length for cosine). `ef` is the search list size
 * (0 = params.ef_search; raised to k). In FILTERED mode only ids in `allowed` (NULL = all) that
 * are not deleted are returned; in UNFILTERED mode `allowed` is ignored and only deleted ids are
 * dropped; in POOL mode the UNFILTERED hits not in `allowed` are dropped (so *n_out < k, often).
 * `max_visits` bounds stats->visited (0 = no bound): when reached, the search stops with
 * stats->exhausted_budget set (hits so far are still returned). out_hits (room for k) receives
 * *n_out <= k hits, nearest first. stats may be NULL. Safe alongside inserts and other searches.
 * Returns 0, CDN_ERR_INVALID (dim mismatch, k = 0) or CDN_ERR_NOMEM. */
int hnsw_search(hnsw_t *h, const vec_view_t *view, const float *query, uint32_t k, uint32_t ef,
                const roaring_bitmap_t *allowed, hnsw_mode_t mode, uint64_t max_visits,
                hnsw_stats_t *stats, hnsw_hit_t *out_hits, uint32_t *n_out);

/* hnsw_search with the traversal scored from 8-bit codes (codes: a trained quantizer of the
 * view's rows; NULL, or a query with a non-finite value, is hnsw_search): every distance of
 * the descent, the seeding and the level-0 search is the codes' estimate (vector/quant.h),
 * which reads a quarter of the bytes of a float row, and the ef best admissible nodes found
 * are re-scored in float before the k nearest are returned, so hits carry float distances.
 * stats->incomplete is cleared only when every admissible node made that ef-list. Returns as
 * hnsw_search. */
int hnsw_search_codes(hnsw_t *h, const vec_view_t *view, const quant_t *codes, const float *query,
                      uint32_t k, uint32_t ef, const roaring_bitmap_t *allowed, hnsw_mode_t mode,
                      uint64_t max_visits, hnsw_stats_t *stats, hnsw_hit_t *out_hits,
                      uint32_t *n_out);

/* Fills *out with the index's counters. */
void hnsw_get_info(hnsw_t *h, hnsw_info_t *out);

/* Writes the graph (not the vectors) and `revision` to `path` atomically: a temporary file in
 * the same directory, fsync, rename, fsync of the directory. Searches may run meanwhile; inserts
 * and deletes wait. Returns 0 or CDN_ERR_IO. */
int hnsw_save(hnsw_t *h, const char *path, uint64_t revision);

/* Reads an index written by hnsw_save. On success *out (free with hnsw_free) and *revision are
 * set. Returns 0, CDN_ERR_IO (cannot open/read), CDN_ERR_CORRUPT (bad magic, version, size,
 * checksum or content) or CDN_ERR_NOMEM. */
int hnsw_load(const char *path, hnsw_t **out, uint64_t *revision);

/* The outcome of hnsw_calibrate. */
typedef struct hnsw_calib {
    uint32_t ef;      /* the ladder's first ef confidently reaching the target (else the top) */
    double recall;    /* recall@10 measured at that ef */
    uint32_t queries; /* rows asked */
    float d10;        /* median distance from a row to its 10th nearest other row */
    /* The first unfiltered ef whose measured recall reaches `deep` (0: none up to the top),
     * and that recall: a search reading far down the unfiltered list needs it. */
    uint32_t ef_deep;
    double recall_deep;
    /* The same for FILTERED searches under a random tenth of the live rows: seeded from the
     * allowed set, they need a smaller ef than the plain descent does. */
    uint32_t ef_filtered;
    double recall_filtered;
    /* FILTERED searches allowed every live row: the sampled seeds of the filtered mode start
     * the search nearer than the plain descent, so nearly-everything-readable subjects do
     * better this way than with the unfiltered mode at the same ef. */
    uint32_t ef_dense;
    double recall_dense;
    /* Distances computed per query at ef and at ef_dense: the planner takes the dense
     * traversal only where it is the cheaper of the two (its seed sample costs a fixed
     * thousand distances, which small graphs do not repay). */
    double cost, cost_dense;
} hnsw_calib_t;

/* Measures recall@10 with `queries` live rows (spread over `live`'s ranks, on level 0 only) as
 * queries, each hidden from its own traversal, against the exact scan of `live`, climbing a
 * ladder of ef values (16 ... 512, steps of 14 - 25%) until the recall is at `target` with
 * confidence (the upper bound of the miss rate, not the rate measured, within 1 - target;
 * where no step gets there, the first step measured at target), and reports the step after
 * it. out->ef: the unfiltered traversal's; out->ef_deep: the unfiltered step measured at
 * `deep` or more; out->ef_dense: FILTERED searches allowed every live row, two steps past their
 * confident one; out->ef_filtered: FILTERED searches allowed a fixed random tenth of the live
 * rows (truth: the exact scan of that tenth), never below floor_ef (that tenth stands for every
 * layout a subject's rows may have). codes (may be NULL): the traversals are measured as
 * hnsw_search_codes runs them with these codes, and the exact answers come from their 8-bit
 * scan. Costs 2 x `queries` exact scans. Returns 0, CDN_ERR_INVALID (fewer than 12 live rows,
 * NULL arguments) or CDN_ERR_NOMEM. Safe alongside searches and inserts. */
int hnsw_calibrate(hnsw_t *h, const vec_view_t *view, const quant_t *codes,
                   const roaring_bitmap_t *live, uint32_t queries, double target, double deep,
                   uint32_t floor_ef, hnsw_calib_t *out);

#endif
