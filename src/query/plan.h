/* plan.h: the vector-search planner: from the exact size of the readable set (known before any
 * search starts), choose an exact scan, a filtered graph traversal, or an unfiltered traversal
 * whose hits are filtered afterwards. Relies on nothing but the numbers it is given. */
#ifndef CDN_PLAN_H
#define CDN_PLAN_H

#include <stddef.h>
#include <stdint.h>

typedef enum plan_kind {
    PLAN_EXACT = 0,            /* scan every readable row: complete */
    PLAN_GRAPH_FILTERED = 1,   /* only readable rows enter the results */
    PLAN_GRAPH_UNFILTERED = 2, /* search everything, keep the readable hits */
} plan_kind_t;

/* What the caller asked for (search_strategy_t's values). */
enum { PLAN_ASK_AUTO = 0, PLAN_ASK_EXACT = 1, PLAN_ASK_PREFILTER = 2, PLAN_ASK_POSTFILTER = 3 };

typedef struct plan {
    plan_kind_t kind;
    uint32_t ef;          /* graph search breadth */
    uint64_t max_visits;  /* filtered: stop and scan exactly past this many visits (0 = none) */
    int fallback_exact;   /* on a spent budget or too few hits, finish with an exact scan */
    size_t pool;          /* unfiltered: candidates to fetch before filtering */
    size_t max_pool;      /* unfiltered: widen up to this many candidates */
} plan_t;

/* Exact scan when the readable rows hold at most this many floats (rows x dim, 48 MiB): below
 * it a SIMD scan costs a few ms at most and is always complete. Raised from 4 Mi floats by
 * `cordon bench permissions` (docs/benchmarks-perm.md): on Fashion-MNIST (60,000 x 784) a
 * subject reading the 2 divisions farthest from its query (20%, 9.4 Mi floats) got recall@10
 * 0.907 from the filtered traversal (0.948 at ef 128, 0.984 at ef 512) and 1.000 from the scan
 * (p50 about 4 ms on the shared machine against 0.5 ms). 1M x 384 plans are unchanged (1% is
 * 3.8 Mi floats, 5% is 19 Mi). Lower it again once the filtered traversal finds far allowed
 * regions. */
#define PLAN_EXACT_FLOATS (12u << 20)
/* Unfiltered traversal when at least this share of live rows is readable. */
#define PLAN_UNFILTERED_SHARE 0.9

/* Chooses a plan. ask: PLAN_ASK_*; readable/live: row counts; ef: the query's or else the
 * collection's search breadth; graph_rows: rows the graph holds (0 = no graph: exact);
 * exact_floats: the exact-scan threshold (0 = PLAN_EXACT_FLOATS). */
void plan_choose(int ask, uint64_t readable, uint64_t live, uint32_t dim, size_t k, uint32_t ef,
                 size_t max_candidates, uint64_t graph_rows, uint64_t exact_floats,
                 plan_t *out);

/* The plan's name as results report it: "exact", "hnsw-filtered", "hnsw-unfiltered". */
const char *plan_name(plan_kind_t k);

#endif
