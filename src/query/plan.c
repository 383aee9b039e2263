/* plan.c: the planner's rules; the thresholds come from bench/ measurements (see
 * docs/benchmarks.md) and are documented in docs/internals/query.md.
 * Relies on nothing. */
#include "query/plan.h"

const char *plan_name(plan_kind_t k)
{
    switch (k) {
    case PLAN_GRAPH_FILTERED: return "hnsw-filtered";
    case PLAN_GRAPH_UNFILTERED: return "hnsw-unfiltered";
    default: return "exact";
    }
}

void plan_choose(int ask, uint64_t readable, uint64_t live, uint32_t dim, size_t k, uint32_t ef,
                 size_t max_candidates, uint64_t graph_rows, uint64_t exact_floats,
                 plan_t *out)
{
    *out = (plan_t){.kind = PLAN_EXACT, .ef = ef < k ? (uint32_t)k : ef};
    out->max_pool = max_candidates ? max_candidates : 1000;
    if (out->max_pool < k)
        out->max_pool = k;
    out->pool = k;
    if (ask == PLAN_ASK_EXACT || graph_rows == 0 || readable == 0)
        return;
    if (ask == PLAN_ASK_PREFILTER) {
        out->kind = PLAN_GRAPH_FILTERED;
        return;
    }
    if (ask == PLAN_ASK_POSTFILTER) {
        out->kind = PLAN_GRAPH_UNFILTERED;
        return;
    }
    /* auto */
    if (readable * (uint64_t)dim <= (exact_floats ? exact_floats : PLAN_EXACT_FLOATS) ||
        readable <= k)
        return;
    out->fallback_exact = 1;
    if ((double)readable >= PLAN_UNFILTERED_SHARE * (double)live) {
        out->kind = PLAN_GRAPH_UNFILTERED;
        /* Fetch enough that k readable hits survive the filter at this share. */
        out->pool = (size_t)((double)k * (double)live / (double)readable) + 1;
        if (out->pool > out->max_pool)
            out->pool = out->max_pool;
        return;
    }
    out->kind = PLAN_GRAPH_FILTERED;
    /* Visiting as many nodes as there are readable rows costs as much as scanning them. */
    out->max_visits = readable;
}
