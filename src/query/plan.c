/* plan.c: the planner's rules; the thresholds come from bench/ measurements (see
 * docs/benchmarks.md) and are documented in docs/internals/query.md.
 * Relies on nothing. */
#include "query/plan.h"

const char *plan_name(plan_kind_t k)
{
    switch (k) {
    case PLAN_GRAPH_FILTERED: return "hnsw-filtered";
    case PLAN_GRAPH_UNFILTERED: return "hnsw-unfiltered";
    case PLAN_BITS: return "scan-1bit";
    default: return "exact";
    }
}

/* The breadth for a kind of traversal: the query's, else the collection's, which was measured
 * for 10 answers and is raised to 1.5 k for more (PLAN_EF_PER_K_*); never below k. */
static uint32_t breadth(const plan_in_t *in, uint32_t collection_ef)
{
    uint64_t ef = in->ef_query ? in->ef_query : collection_ef;
    uint64_t wide = in->ef_query ? in->k : (uint64_t)in->k * PLAN_EF_PER_K_NUM / PLAN_EF_PER_K_DEN;
    return (uint32_t)(ef < wide ? wide : ef);
}

/* The unfiltered breadth a search reading deep into the list uses (pool first, the probe). */
static uint32_t deep_ef(const plan_in_t *in)
{
    return in->ef_deep ? in->ef_deep : in->ef_unfiltered;
}

/* Pool first for a filtered auto plan, where it pays (PLAN_POOL_SHARE, PLAN_POOL_EF_RATIO,
 * PLAN_POOL_MIN_RECALL), its list PLAN_POOL_LIST_NUM / _DEN times the pool at least. */
static void consider_pool_first(const plan_in_t *in, plan_t *out)
{
    if ((double)in->readable < PLAN_POOL_SHARE * (double)in->live ||
        (in->recall_unfiltered > 0 && in->recall_unfiltered < PLAN_POOL_MIN_RECALL))
        return;
    size_t pool = (size_t)(2.0 * (double)in->k * (double)in->live / (double)in->readable) + 1;
    size_t list = pool * PLAN_POOL_LIST_NUM / PLAN_POOL_LIST_DEN;
    uint32_t ef = breadth(in, deep_ef(in));
    if ((ef > pool ? ef : pool) > (size_t)PLAN_POOL_EF_RATIO * out->ef)
        return;
    if (ef < list)
        ef = (uint32_t)list;
    out->pool_first = 1;
    out->first_pool = pool;
    out->first_ef = ef;
}

/* A probe before an exact scan (PLAN_PROBE_SHARE, PLAN_PROBE_MIN_FLOATS): the unfiltered
 * traversal at the collection's breadth, kept only if k readable hits sit in the first half of
 * its list (first_pool = ef / 2). */
static void consider_probe(const plan_in_t *in, plan_t *out)
{
    uint32_t ef = deep_ef(in) > PLAN_PROBE_MIN_EF ? deep_ef(in) : PLAN_PROBE_MIN_EF;
    if (in->ask != PLAN_ASK_AUTO || in->ef_query || in->readable <= in->k ||
        (double)in->readable < PLAN_PROBE_SHARE * (double)in->live ||
        in->readable * (uint64_t)in->dim < PLAN_PROBE_MIN_FLOATS ||
        in->recall_unfiltered < PLAN_POOL_MIN_RECALL || ef < 2 * in->k)
        return;
    out->pool_first = 1;
    out->first_pool = ef / 2;
    out->first_ef = ef;
}

void plan_choose(const plan_in_t *in, plan_t *out)
{
    *out = (plan_t){.kind = PLAN_EXACT, .ef = breadth(in, in->ef_unfiltered)};
    out->max_pool = in->max_candidates ? in->max_candidates : 1000;
    if (out->max_pool < in->k)
        out->max_pool = in->k;
    out->pool = in->k;
    if (in->ask == PLAN_ASK_EXACT || in->graph_rows == 0 || in->readable == 0)
        return;
    if (in->ask == PLAN_ASK_PREFILTER) {
        out->kind = PLAN_GRAPH_FILTERED;
        out->ef = breadth(in, in->ef_filtered);
        return;
    }
    if (in->ask == PLAN_ASK_POSTFILTER) {
        out->kind = PLAN_GRAPH_UNFILTERED;
        return;
    }
    /* auto */
    uint64_t limit = in->exact_floats ? in->exact_floats : PLAN_EXACT_FLOATS;
    if (in->readable * (uint64_t)in->dim <= limit || in->readable <= in->k) {
        consider_probe(in, out);
        return;
    }
    out->fallback_exact = 1;
    if ((double)in->readable >= PLAN_UNFILTERED_SHARE * (double)in->live) {
        /* Nearly everything readable: where calibration measured it, the filtered traversal of
         * the readable set (seeded from a sample of it) beats the unfiltered one plus a
         * re-check at equal recall (1M x 384: recall 0.99 at ef 128 against 384). */
        if (in->ef_dense && !in->ef_query) {
            out->kind = PLAN_GRAPH_FILTERED;
            out->ef = breadth(in, in->ef_dense);
            out->max_visits = in->readable;
            return;
        }
        out->kind = PLAN_GRAPH_UNFILTERED;
        /* Fetch enough that k readable hits survive the filter at this share. */
        out->pool = (size_t)((double)in->k * (double)in->live / (double)in->readable) + 1;
        if (out->pool > out->max_pool)
            out->pool = out->max_pool;
        return;
    }
    out->kind = PLAN_GRAPH_FILTERED;
    out->ef = breadth(in, in->ef_filtered);
    /* Visiting as many nodes as there are readable rows costs as much as scanning them. */
    out->max_visits = in->readable;
    consider_pool_first(in, out);
    if (in->bits && !in->ef_query && (double)in->readable < PLAN_BITS_MAX_SHARE * (double)in->live)
        out->kind = PLAN_BITS;
}
