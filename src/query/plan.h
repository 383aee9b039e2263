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
    PLAN_BITS = 3,             /* scan the readable rows' 1-bit codes, re-rank the few in float */
} plan_kind_t;

/* What the caller asked for (search_strategy_t's values). */
enum { PLAN_ASK_AUTO = 0, PLAN_ASK_EXACT = 1, PLAN_ASK_PREFILTER = 2, PLAN_ASK_POSTFILTER = 3 };

typedef struct plan {
    plan_kind_t kind;
    uint32_t ef;         /* graph search breadth */
    uint64_t max_visits; /* filtered: stop and scan exactly past this many visits (0 = none) */
    int fallback_exact;  /* on a spent budget or too few hits, finish with an exact scan */
    size_t pool;         /* unfiltered: candidates to fetch before filtering */
    size_t max_pool;     /* unfiltered: widen up to this many candidates */
    /* Pool first (auto, filtered plans of a tenth of the rows or more) or a probe (auto, exact
     * plans, PLAN_PROBE_*): before the plan above, one unfiltered traversal at first_ef
     * fetching first_pool hits, kept if k of them are readable. */
    int pool_first;
    size_t first_pool;
    uint32_t first_ef;
} plan_t;

/* What the planner is told. The search breadths are the collection's (calibrated, or set at
 * creation); a query's own ef_search overrides all of them. */
typedef struct plan_in {
    int ask;                 /* PLAN_ASK_* */
    uint64_t readable, live; /* candidate rows (readable and inside any filter), live rows */
    uint32_t dim;
    size_t k;
    size_t max_candidates;  /* unfiltered plans widen up to this (0 = 1000) */
    uint64_t graph_rows;    /* rows the graph holds (0 = no graph: exact) */
    uint64_t exact_floats;  /* the exact-scan threshold (0 = PLAN_EXACT_FLOATS) */
    uint32_t ef_query;      /* the query's ef_search (0 = none) */
    uint32_t ef_unfiltered; /* the unfiltered descent's breadth */
    /* The unfiltered breadth calibration measured at PLAN_POOL_MIN_RECALL or more, for plans
     * that read deep into its list (0: ef_unfiltered, with recall_unfiltered its recall). */
    uint32_t ef_deep;
    uint32_t ef_filtered; /* the filtered traversal's (seeded: smaller) */
    /* The filtered traversal of every row's breadth, where calibration found it cheaper than
     * the unfiltered one at equal recall (0: it was not, or ef was set at creation). */
    uint32_t ef_dense;
    /* Recall@10 calibration measured for the unfiltered traversal at ef_deep (or ef_unfiltered;
     * 0: not measured). Pool first reads deep into that traversal's list: it needs headroom. */
    double recall_unfiltered;
    int bits; /* 1-bit codes cover the rows (vector/quant.h): the bit scan is possible */
} plan_in_t;

/* The collection's breadths are measured for 10 answers and go as low as 16 where the graph
 * allows; a search for more gets at least 1.5 candidates an answer (Elasticsearch's default
 * num_candidates for a knn search is the same 1.5 x k). A query's own ef is raised to k. */
#define PLAN_EF_PER_K_NUM 3
#define PLAN_EF_PER_K_DEN 2

/* Exact scan when the readable rows hold at most this many floats (rows x dim, 48 MiB): below
 * it a SIMD scan costs a few ms at most and is always complete. Raised from 4 Mi floats by
 * `cordon bench permissions` (docs/benchmarks.md): on Fashion-MNIST (60,000 x 784) a
 * subject reading the 2 divisions farthest from its query (20%, 9.4 Mi floats) got recall@10
 * 0.907 from the filtered traversal (0.948 at ef 128, 0.984 at ef 512) and 1.000 from the scan
 * (p50 about 4 ms on the shared machine against 0.5 ms). 1M x 384 plans are unchanged (1% is
 * 3.8 Mi floats, 5% is 19 Mi). Lower it again once the filtered traversal finds far allowed
 * regions. */
#define PLAN_EXACT_FLOATS (12u << 20)
/* Unfiltered traversal when at least this share of live rows is readable. */
#define PLAN_UNFILTERED_SHARE 0.9
/* Pool first from this share of live rows up (below PLAN_UNFILTERED_SHARE): the unfiltered
 * traversal fetching twice the pool that k readable hits need costs less than the filtered
 * one, whose seed sample and two-hop expansions do not pay when readable rows are this common
 * (200k x 384 topics, 20% readable: p50 0.22 - 0.24 against 0.57 - 0.88 ms at recall 0.997 -
 * 1.000). Tried once, without widening: fewer than k readable hits mean the readable rows lie
 * elsewhere, and the filtered plan (seeds from the readable set, far rule, witness) answers. */
#define PLAN_POOL_SHARE 0.1
/* ... where its traversal is at most this many times as broad as the filtered one: per unit of
 * ef it costs about a quarter, and at 1M x 384, where the unfiltered ef is 384 against the
 * filtered 96, the two were even (random 20% 1.31 against 1.54 ms, aligned 1.14 against 0.94). */
#define PLAN_POOL_EF_RATIO 2
/* ... and, where calibration measured it, only if the unfiltered traversal was at least this
 * right at its ef: the k readable hits sit anywhere in a pool of 2 k / share, so the list must
 * be right well past its first k. 200k x 384 topics (recall 0.998 at ef 96): 20% readable at recall
 * 0.997 - 1.000. 1M (0.992 at ef 128, with the seeded descent): 20% random 0.979 at ef 128, 0.986
 * at ef 202, 0.991 at ef 303, the last no faster than the filtered plan. 1M on the 8-bit codes
 * (calibrated 0.9953 at ef 128): 20% random 0.978, aligned 0.990, so 0.995 was too low a bar. */
#define PLAN_POOL_MIN_RECALL 0.997
/* ... with a list half again as long as the pool (once the rules above chose pool first): a
 * traversal's list is least right at its tail, where a pool's readable hits may sit. 1M x 384
 * (calibrated 0.998 at ef 128, stalled construction searches widened), 20% readable, pool 111, 200
 * queries: recall@10 random / aligned 0.989 / 0.994 at ef 128, 0.9935 / 0.9945 at 160, 0.995 /
 * 0.997 at 192, each a third of the bit scan's p50 or less. The probe keeps half its list
 * (first_pool = ef / 2). */
#define PLAN_POOL_LIST_NUM 3
#define PLAN_POOL_LIST_DEN 2
/* A probe before an exact scan, for subjects whose neighbourhood is mostly theirs: where the
 * scan reads at least PLAN_PROBE_MIN_FLOATS (about 8,000 rows at 384-d, 0.4 ms and more) and
 * the subject reads at least PLAN_PROBE_SHARE of the rows, the unfiltered traversal at the
 * calibrated breadth (with the same headroom as pool first) runs first, and its answer stands
 * when k readable hits sit in the first half of its list; otherwise the scan answers, having
 * lost the probe's time (200k x 384, ef 96: about 0.1 ms). */
#define PLAN_PROBE_SHARE 0.02
#define PLAN_PROBE_MIN_FLOATS (3u << 20)
/* ... at this breadth at least: the list's first half must be long enough to hold k readable
 * hits, whatever breadth reaches the recall (Fashion-MNIST, 20% random: with a calibrated
 * breadth under 96, 17% of the probes held them against 37% at 96; the rest pay probe and scan). */
#define PLAN_PROBE_MIN_EF 96

/* The bit scan (auto, where 1-bit codes exist) for readable sets too large for the exact scan
 * and below PLAN_UNFILTERED_SHARE: it reads 64 bytes a row (384-d) whatever the layout, where
 * a filtered traversal of a readable set far from the query visits most of it. 1M x 384, p50
 * 5% / 20% readable: farthest from the query 4.0 / 10.3 ms (traversal, then the 8-bit scan)
 * -> 1.0 / 1.8 ms; random 1.5 / 1.6 -> 0.9 / 1.5; nearest 1.2 / 0.9 -> 0.8 / 1.5 (the one
 * layout where the traversal was cheaper); recall 0.99x -> 1.000 everywhere. */
#define PLAN_BITS_MAX_SHARE 0.9

/* Chooses a plan for in. */
void plan_choose(const plan_in_t *in, plan_t *out);

/* The plan's name as results report it: "exact", "hnsw-filtered", "hnsw-unfiltered",
 * "scan-1bit". */
const char *plan_name(plan_kind_t k);

#endif
