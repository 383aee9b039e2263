/* search_vector.c: the vector plan of a search: the planner's choice run as an exact scan, a
 * bit scan, a filtered or an unfiltered graph traversal, with the fallbacks to the exact scan.
 * Relies on query/plan, vector/ (exact, hnsw, quant); runs under the collection's read lock. */
#include "base/mem.h"
#include "query/plan.h"
#include "query/search_int.h"
#include "vector/exact.h"
#include "vector/hnsw.h"

#include <stdio.h>
#include <string.h>

/* Unfiltered traversal: fetch a pool, keep readable hits, widen while too few survive. */
static int run_unfiltered(coll_t *c, const vec_view_t *v, const float *query,
                          const roaring_bitmap_t *allowed, size_t k, plan_t *p, hnsw_mode_t mode,
                          topk_hit_t *hits, size_t *nhits, search_result_t *out)
{
    size_t pool = p->pool;
    int rc = CDN_OK;
    for (;;) {
        topk_hit_t *cand = cdn_malloc(pool * sizeof *cand);
        hnsw_stats_t st;
        uint32_t n = 0;
        if (!cand)
            return CDN_ERR_NOMEM;
        rc = hnsw_search_codes(c->hnsw, v, coll_codes(c), query, (uint32_t)pool,
                               p->ef > pool ? p->ef : (uint32_t)pool, allowed, mode, 0, &st, cand,
                               &n);
        out->work += st.distances;
        *nhits = 0;
        for (uint32_t i = 0; rc == CDN_OK && i < n && *nhits < k; i++)
            if (roaring_bitmap_contains(allowed, cand[i].id))
                hits[(*nhits)++] = cand[i];
        cdn_free(cand);
        if (rc || *nhits >= k || pool >= p->max_pool || n < pool)
            return rc;
        pool = pool * 4 > p->max_pool ? p->max_pool : pool * 4;
    }
}

static int run_exact(coll_t *c, const vec_view_t *v, const float *query,
                     const roaring_bitmap_t *allowed, size_t k, topk_hit_t *hits, size_t *nhits,
                     search_result_t *out)
{
    uint64_t scanned = 0;
    int rc;
    /* Whatever the number of rows: a collection with codes keeps its float rows in the file
     * (coll_map_rows), and a float scan would read each allowed row from there. Warm, below
     * about 500 rows the float scan is a few microseconds faster (`cordon bench quant` at 1M x
     * 384: 181 rows 0.004 against 0.010 ms; 1,037 rows 0.091 against 0.049). */
    if (coll_codes(c)) {
        quant_stats_t st = {0};
        rc = quant_exact_search(c->quant, v, c->cfg.metric, query, allowed, k, hits, nhits, &st);
        scanned = st.scanned;
    } else {
        rc = exact_search(v, c->cfg.metric, query, allowed, k, hits, nhits, &scanned);
    }
    out->work += scanned;
    out->complete = rc == CDN_OK;
    snprintf(out->plan, sizeof out->plan, "%s",
             !out->plan[0]               ? "exact"
             : !strcmp(out->plan, "far") ? "exact-far"
                                         : "hnsw+exact");
    return rc;
}

/* The bit scan (plan.h, PLAN_BITS): never complete, its interval is probabilistic. */
static int run_bits(coll_t *c, const vec_view_t *v, const float *query,
                    const roaring_bitmap_t *allowed, size_t k, topk_hit_t *hits, size_t *nhits,
                    search_result_t *out)
{
    quant_stats_t st = {0};
    int rc = quant_bits_search(c->quant, v, c->cfg.metric, query, allowed, k, hits, nhits, &st);
    out->work += st.scanned;
    out->complete = 0;
    snprintf(out->plan, sizeof out->plan, "%s", plan_name(PLAN_BITS));
    return rc;
}

/* Far readable sets. Graph search stalls when the readable rows lie far from the query (a
 * subject whose documents are about other things): the traversal ends at local minima at the
 * region's edge (generated 1M x 384, 5% readable farthest from the query: recall@10 0.75 at
 * ef 64). When even the best hit is more than SEARCH_FAR_RATIO times the collection's typical
 * distance from a row to its 10th neighbour (measured at calibration, c->d10), the query is
 * outside the readable rows' distribution and the exact scan answers, up to
 * SEARCH_FAR_EXACT_FLOATS. Measured on generated 200k x 384 (best hit / d10, median): random
 * and aligned subjects 0.8 - 1.0 from 5% readable up, misaligned 1.5 (5%) and 1.7 (1%). */
#define SEARCH_FAR_RATIO 1.25f
#define SEARCH_FAR_EXACT_FLOATS (96ull << 20)

static int hits_far(const coll_t *c, const topk_hit_t *hits, size_t n, uint64_t cand)
{
    return n > 0 && c->d10 > 0 && c->cfg.metric != VEC_METRIC_DOT &&
           cand * c->cfg.dim <= SEARCH_FAR_EXACT_FLOATS && hits[0].dist > SEARCH_FAR_RATIO * c->d10;
}

/* Pool first: one unfiltered traversal for the plan's first pool (plan.h, PLAN_POOL_SHARE). */
static int run_pool_first(coll_t *c, const vec_view_t *v, const plan_t *p, const float *query,
                          const roaring_bitmap_t *allowed, size_t k, topk_hit_t *hits,
                          size_t *nhits, search_result_t *out)
{
    plan_t u = {.kind = PLAN_GRAPH_UNFILTERED, .ef = p->first_ef};
    u.pool = u.max_pool = p->first_pool;
    snprintf(out->plan, sizeof out->plan, "%s", plan_name(PLAN_GRAPH_UNFILTERED));
    out->complete = 0;
    return run_unfiltered(c, v, query, allowed, k, &u, HNSW_MODE_POOL, hits, nhits, out);
}

int search_vector_locked(engine_t *e, coll_t *c, const search_knn_t *q, const float *query,
                         const roaring_bitmap_t *allowed, size_t k, topk_hit_t *hits, size_t *nhits,
                         search_result_t *out)
{
    vec_view_t v;
    plan_t p;
    hnsw_stats_t st;
    hnsw_info_t info = {0};
    uint32_t n = 0;
    int rc;
    coll_view(c, &v);
    if (c->hnsw)
        hnsw_get_info(c->hnsw, &info);
    /* The candidates: readable, and inside the filter when there is one. */
    uint64_t cand = roaring_bitmap_get_cardinality(allowed);
    plan_in_t in = {.ask = (int)q->strategy,
                    .readable = cand,
                    .live = c->live,
                    .dim = c->cfg.dim,
                    .k = k,
                    .max_candidates = q->max_candidates,
                    .graph_rows = info.nodes,
                    .exact_floats = e->plan_exact_floats,
                    .ef_query = q->ef_search,
                    .ef_unfiltered = coll_search_ef(c, COLL_EF_UNFILTERED),
                    .ef_deep = c->cfg.hnsw_ef ? 0 : c->ef_auto_deep,
                    .recall_unfiltered = c->cfg.hnsw_ef    ? 0
                                         : c->ef_auto_deep ? c->ef_auto_deep_recall
                                                           : c->ef_auto_recall,
                    .ef_filtered = coll_search_ef(c, COLL_EF_FILTERED),
                    .ef_dense =
                        c->ef_auto_dense && !c->cfg.hnsw_ef ? coll_search_ef(c, COLL_EF_DENSE) : 0,
                    .bits = c->quant && quant_is_trained(c->quant)};
    plan_choose(&in, &p);
    if (p.pool_first) {
        rc = run_pool_first(c, &v, &p, query, allowed, k, hits, nhits, out);
        if (rc || *nhits >= k)
            return rc;
        out->plan[0] = '\0'; /* too few readable nearby: the filtered plan answers */
    }
    if (p.kind == PLAN_EXACT)
        return run_exact(c, &v, query, allowed, k, hits, nhits, out);
    if (p.kind == PLAN_BITS)
        return run_bits(c, &v, query, allowed, k, hits, nhits, out);
    snprintf(out->plan, sizeof out->plan, "%s", plan_name(p.kind));
    if (p.kind == PLAN_GRAPH_UNFILTERED) {
        rc = run_unfiltered(c, &v, query, allowed, k, &p, HNSW_MODE_UNFILTERED, hits, nhits, out);
        out->complete = 0;
        if (rc == CDN_OK && *nhits < k && *nhits < cand && p.fallback_exact)
            return run_exact(c, &v, query, allowed, k, hits, nhits, out);
        return rc;
    }
    rc = hnsw_search_codes(c->hnsw, &v, coll_codes(c), query, (uint32_t)k, p.ef, allowed,
                           HNSW_MODE_FILTERED, p.max_visits, &st, hits, &n);
    out->work += st.distances;
    *nhits = n;
    /* Complete only when the traversal evaluated every readable row the graph holds (every
     * readable row is in the graph: writes insert before they publish). */
    out->complete = rc == CDN_OK && !st.incomplete;
    if (rc == CDN_OK && p.fallback_exact && !out->complete && hits_far(c, hits, n, cand)) {
        snprintf(out->plan, sizeof out->plan, "far");
        return run_exact(c, &v, query, allowed, k, hits, nhits, out);
    }
    /* The seed sample witnesses the result: far more sampled rows nearer than the k-th hit
     * than a true top-k would leave means the traversal stopped short (readable rows far from
     * the query, where graph search stalls); then the exact scan answers. */
    if (rc == CDN_OK && p.fallback_exact &&
        (st.exhausted_budget || (n < k && n < cand) || hnsw_sample_suspect(&st, (uint32_t)k)))
        return run_exact(c, &v, query, allowed, k, hits, nhits, out);
    return rc;
}
