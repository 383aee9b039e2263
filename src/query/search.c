/* search.c: permission-filtered kNN search and reads as a subject.
 * Relies on acl/ for the allowed set and the re-check, vector/ for the scans. The collection's
 * read lock is held for the whole search, so it sees one revision and never half a write. */
#include "query/search.h"
#include "base/mem.h"
#include "base/testhook.h"
#include "query/chunkrec.h"
#include "query/plan.h"
#include "query/search_int.h"
#include "vector/exact.h"
#include "vector/hnsw.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

/* Below this many rows the float scan is as fast as the 8-bit one. `cordon bench quant` at 1M
 * x 384 (codes on huge pages): 1,037 rows 0.091 -> 0.049 ms, 2,028 rows (200k) 0.182 -> 0.068;
 * 181 rows 0.004 against 0.010 ms. Each subject's rows are usually cold in cache (every query
 * of `bench permissions` holds another team), where the scan reads a quarter of the bytes. */
#define SEARCH_QUANT_MIN_ROWS 512

static int check_query(const coll_t *c, const search_knn_t *q, cdn_err_t *err)
{
    int rc;
    if (q->text && q->query_json)
        return cdn_err_set(err, CDN_ERR_INVALID, "give a text query or a query object, not both");
    if (!q->vector && !q->text && !q->query_json)
        return cdn_err_set(err, CDN_ERR_INVALID, "the query is empty: give a vector, a text "
                                                 "query, or both");
    if (q->k > SEARCH_K_MAX)
        return cdn_err_set(err, CDN_ERR_INVALID, "k is %zu; the limit is %d", q->k, SEARCH_K_MAX);
    if (!q->vector)
        return CDN_OK;
    if (!c->cfg.dim)
        return cdn_err_set(err, CDN_ERR_INVALID,
                           "collection \"%s\" has no vectors; use a text query", c->cfg.name);
    if ((rc = vec_check(q->vector, c->cfg.dim, c->cfg.metric, "knn.query_vector", err)) != 0)
        return rc;
    if ((unsigned)q->strategy > SEARCH_POSTFILTER)
        return cdn_err_set(err, CDN_ERR_INVALID, "unknown strategy %d", (int)q->strategy);
    return CDN_OK;
}

/* Re-checks every hit against the view and turns rows into ids; h[i].dist holds the score
 * the caller sees (higher is better). A score that is not a finite number cannot be ranked:
 * vec_check keeps every stored and query vector in bounds, so none should reach here, but if
 * one does its hit is dropped and the result no longer claims to be complete. */
int search_finish(const coll_t *c, const uint32_t *view, size_t nview, const vec_hit_t *h,
                  size_t n, search_result_t *out)
{
    out->hits = cdn_calloc(n ? n : 1, sizeof *out->hits);
    if (!out->hits)
        return CDN_ERR_NOMEM;
    for (size_t i = 0; i < n; i++) {
        const char *id = coll_row_id(c, h[i].id);
        if (!id || !acl_index_check(c->acl, h[i].id, view, nview)) {
            out->rejected++; /* an index path let through what the view does not hold */
            continue;
        }
        if (!isfinite(h[i].dist)) {
            out->complete = 0;
            continue;
        }
        search_hit_t *o = &out->hits[out->n_hits];
        if (!(o->id = cdn_strdup(id)))
            return CDN_ERR_NOMEM;
        o->score = h[i].dist;
        out->n_hits++;
    }
    return CDN_OK;
}

/* Unfiltered traversal: fetch a pool, keep readable hits, widen while too few survive. */
static int run_unfiltered(coll_t *c, const vec_view_t *v, const float *query,
                          const roaring_bitmap_t *allowed, size_t k, plan_t *p, vec_hit_t *hits,
                          size_t *nhits, search_result_t *out)
{
    size_t pool = p->pool;
    int rc = CDN_OK;
    for (;;) {
        vec_hit_t *cand = cdn_malloc(pool * sizeof *cand);
        hnsw_stats_t st;
        uint32_t n = 0;
        if (!cand)
            return CDN_ERR_NOMEM;
        rc = hnsw_search_codes(c->hnsw, v, coll_codes(c), query, (uint32_t)pool,
                               p->ef > pool ? p->ef : (uint32_t)pool, NULL, HNSW_MODE_UNFILTERED,
                               0, &st, cand, &n);
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
                     const roaring_bitmap_t *allowed, size_t k, vec_hit_t *hits, size_t *nhits,
                     search_result_t *out)
{
    uint64_t scanned = 0, n = roaring_bitmap_get_cardinality(allowed);
    int rc;
    if (c->quant && quant_is_trained(c->quant) && n >= SEARCH_QUANT_MIN_ROWS) {
        quant_stats_t st = {0};
        rc = quant_exact_search(c->quant, v, c->cfg.metric, query, allowed, k, hits, nhits, &st);
        scanned = st.scanned;
    } else {
        rc = exact_search(v, c->cfg.metric, query, allowed, k, hits, nhits, &scanned);
    }
    out->work += scanned;
    out->complete = rc == CDN_OK;
    snprintf(out->plan, sizeof out->plan, "%s",
             !out->plan[0] ? "exact" : !strcmp(out->plan, "far") ? "exact-far" : "hnsw+exact");
    return rc;
}

/* The bit scan (plan.h, PLAN_BITS): never complete, its interval is probabilistic. */
static int run_bits(coll_t *c, const vec_view_t *v, const float *query,
                    const roaring_bitmap_t *allowed, size_t k, vec_hit_t *hits, size_t *nhits,
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

static int hits_far(const coll_t *c, const vec_hit_t *hits, size_t n, uint64_t cand)
{
    return n > 0 && c->d10 > 0 && c->cfg.metric != VEC_METRIC_DOT &&
           cand * c->cfg.dim <= SEARCH_FAR_EXACT_FLOATS && hits[0].dist > SEARCH_FAR_RATIO * c->d10;
}

/* Pool first: one unfiltered traversal for the plan's first pool (plan.h, PLAN_POOL_SHARE). */
static int run_pool_first(coll_t *c, const vec_view_t *v, const plan_t *p, const float *query,
                          const roaring_bitmap_t *allowed, size_t k, vec_hit_t *hits,
                          size_t *nhits, search_result_t *out)
{
    plan_t u = {.kind = PLAN_GRAPH_UNFILTERED, .ef = p->first_ef};
    u.pool = u.max_pool = p->first_pool;
    snprintf(out->plan, sizeof out->plan, "%s", plan_name(PLAN_GRAPH_UNFILTERED));
    out->complete = 0;
    return run_unfiltered(c, v, query, allowed, k, &u, hits, nhits, out);
}

int search_vector_locked(engine_t *e, coll_t *c, const search_knn_t *q, const float *query,
                         const roaring_bitmap_t *allowed, size_t k, vec_hit_t *hits,
                         size_t *nhits, search_result_t *out)
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
                    .recall_unfiltered = c->cfg.hnsw_ef ? 0 : c->ef_auto_recall,
                    .ef_filtered = coll_search_ef(c, COLL_EF_FILTERED),
                    .ef_dense = c->ef_auto_dense && !c->cfg.hnsw_ef
                                    ? coll_search_ef(c, COLL_EF_DENSE)
                                    : 0,
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
        rc = run_unfiltered(c, &v, query, allowed, k, &p, hits, nhits, out);
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

static int knn_locked(engine_t *e, coll_t *c, const engine_subject_t *who,
                      const search_knn_t *q, const float *query, search_result_t *out,
                      cdn_err_t *err)
{
    size_t k = q->k ? q->k : 10, nhits = 0, nview = 0;
    roaring_bitmap_t *allowed = NULL, *readable = NULL;
    uint32_t *view = NULL;
    vec_hit_t *hits = NULL;
    int text = q->text || q->query_json, rc;
    /* The engine-wide write counter, for consistency tokens (min_revision): it counts writes a
     * subject cannot see too, the one part of a response hidden chunks change (query.md). */
    out->revision = atomic_load(&e->revision);
    if (c->broken)
        return cdn_err_set(err, CDN_ERR_INTERNAL, "collection \"%s\" missed a write in memory; "
                           "reopen the data directory", c->cfg.name);
    if ((rc = engine_view_ids(e, who->principals, who->n, &view, &nview, err)) != 0)
        return rc;
    if ((rc = acl_index_allowed(c->acl, view, nview, &allowed)) != 0) {
        cdn_free(view);
        return cdn_err_set(err, rc, "out of memory");
    }
    out->readable = roaring_bitmap_get_cardinality(allowed);
    /* BM25 statistics cover the readable set whatever a filter keeps of it (as a filter does
     * not change statistics in Elasticsearch), so keep it when a filter narrows allowed. */
    if (text && q->filter_json && !c->cfg.bm25_global && !(readable = roaring_bitmap_copy(allowed)))
        rc = cdn_err_set(err, CDN_ERR_NOMEM, "out of memory");
    if (rc == CDN_OK && q->filter_json)
        rc = search_filter_locked(e, c, q->filter_json, allowed, err);
    if (rc)
        goto done;
    out->candidates = roaring_bitmap_get_cardinality(allowed);
    if (text) {
        rc = search_text_locked(e, c, q, query, allowed,
                                c->cfg.bm25_global ? NULL : readable ? readable : allowed, k, out,
                                &hits, &nhits, err);
    } else if (!(hits = cdn_malloc(k * sizeof *hits))) {
        rc = cdn_err_set(err, CDN_ERR_NOMEM, "out of memory");
    } else {
        rc = search_vector_locked(e, c, q, query, allowed, k, hits, &nhits, out);
        for (size_t i = 0; i < nhits; i++)
            hits[i].dist = vec_score_from_dist(c->cfg.metric, hits[i].dist);
        if (rc)
            cdn_err_set(err, rc, "search failed: %s", cdn_strerror(rc));
    }
    if (rc == CDN_OK && (rc = search_finish(c, view, nview, hits, nhits, out)) != 0)
        cdn_err_set(err, rc, "search failed: %s", cdn_strerror(rc));
done:
    roaring_bitmap_free(allowed);
    if (readable)
        roaring_bitmap_free(readable);
    cdn_free(view);
    cdn_free(hits);
    return rc;
}

int search_knn(engine_t *e, const char *name, const engine_asker_t *who, const search_knn_t *q,
               search_result_t *out, cdn_err_t *err)
{
    engine_read_t r = {0};
    float *query = NULL;
    coll_t *c;
    int rc, current;
    memset(out, 0, sizeof *out);
    if ((rc = engine_coll_get(e, name, &c, err)) != 0)
        return rc;
    if ((rc = check_query(c, q, err)) != 0)
        goto done;
    if (q->vector && !(query = cdn_malloc(c->cfg.dim * sizeof *query))) {
        rc = cdn_err_set(err, CDN_ERR_NOMEM, "out of memory");
        goto done;
    }
    if (query) {
        memcpy(query, q->vector, c->cfg.dim * sizeof *query);
        if (c->cfg.metric == VEC_METRIC_COSINE)
            vec_normalize(query, c->cfg.dim);
    }
    do { /* one permission state per answer (engine.h, engine_read_begin) */
        engine_subject_t s;
        current = 1;
        engine_read_begin(e, &r);
        if ((rc = engine_subject_resolve(e, c, who, "search", &s, err)) == CDN_OK) {
            cdn_hook_run(CDN_HOOK_SUBJECT_RESOLVED);
            pthread_rwlock_rdlock(&c->lock);
            rc = knn_locked(e, c, &s, q, query, out, err);
            current = engine_subject_current(e, &s);
            pthread_rwlock_unlock(&c->lock);
            engine_subject_release(&s);
        }
        if (rc || !current) {
            search_result_free(out);
            memset(out, 0, sizeof *out);
        }
    } while (engine_read_end(e, &r, current));
done:
    cdn_free(query);
    coll_unref(c);
    return rc;
}

void search_result_free(search_result_t *r)
{
    for (size_t i = 0; i < r->n_hits; i++)
        cdn_free(r->hits[i].id);
    cdn_free(r->hits);
    r->hits = NULL;
    r->n_hits = 0;
}

/* Reads the chunk's record and checks it under the collection's read lock. A write commits to
 * the store before it reaches memory, so a read transaction may be ahead of memory: then
 * *ahead is set and nothing is read; the caller waits for the writer and tries again. */
static int get_locked(engine_t *e, coll_t *c, const unsigned char *key, size_t klen,
                      const uint32_t *view, size_t nview, json_t **obj, float **vec,
                      uint64_t *rev, int *readable, int *ahead, cdn_err_t *err)
{
    store_txn_t *t = NULL;
    uint64_t stored = 0;
    const void *v;
    size_t vlen;
    uint32_t row = 0;
    int rc = klen ? store_txn_begin(e->store, 0, &t, err) : CDN_OK;
    *rev = atomic_load(&e->revision);
    if (rc == CDN_OK && t && (rc = store_revision_get(t, &stored)) == CDN_OK && stored > *rev)
        *ahead = 1;
    else if (rc == CDN_OK && t && store_get(t, STORE_CHUNKS, key, klen, &v, &vlen) == CDN_OK &&
             chunkrec_decode(v, vlen, &row, obj) == CDN_OK)
        *readable = !c->broken && acl_index_check(c->acl, row, view, nview);
    if (*readable && c->vf && (*vec = cdn_malloc(c->cfg.dim * sizeof(float))))
        memcpy(*vec, vecfile_base(c->vf) + (size_t)row * vecfile_stride(c->vf),
               c->cfg.dim * sizeof(float));
    else if (*readable && c->vf)
        rc = CDN_ERR_NOMEM;
    store_txn_abort(t);
    return rc;
}

/* One attempt of search_get at one permission state: the view's ids, then the record. With
 * detect_ahead, a store ahead of memory sets *ahead and reads nothing. */
static int get_once(engine_t *e, coll_t *c, const engine_subject_t *who, const unsigned char *key,
                    size_t klen, json_t **obj, float **vec, uint64_t *rev, int *readable,
                    int detect_ahead, int *ahead, int *current, cdn_err_t *err)
{
    uint32_t *view = NULL;
    size_t nview = 0;
    int rc, ignored = 0;
    *ahead = *readable = 0;
    pthread_rwlock_rdlock(&c->lock);
    rc = engine_view_ids(e, who->principals, who->n, &view, &nview, err);
    if (rc == CDN_OK)
        rc = get_locked(e, c, key, klen, view, nview, obj, vec, rev, readable,
                        detect_ahead ? ahead : &ignored, err);
    *current = engine_subject_current(e, who);
    pthread_rwlock_unlock(&c->lock);
    cdn_free(view);
    if (rc || *ahead || !*current) {
        json_decref(*obj);
        *obj = NULL;
        cdn_free(*vec);
        *vec = NULL;
    }
    return rc;
}

int search_get(engine_t *e, const char *name, const engine_asker_t *who, const char *id,
               json_t **obj, float **vec, uint32_t *dim, uint64_t *rev, cdn_err_t *err)
{
    unsigned char key[4 + 512];
    engine_read_t r = {0};
    size_t klen;
    coll_t *c;
    int rc, readable = 0, again, waits = 0;
    *obj = NULL;
    *vec = NULL;
    if ((rc = engine_coll_get(e, name, &c, err)) != 0)
        return rc;
    *dim = c->cfg.dim;
    klen = coll_chunk_key(c->cfg.id, id, key, sizeof key);
    do { /* one permission state per answer (engine.h, engine_read_begin) */
        engine_subject_t s;
        int current = 1, ahead = 0;
        engine_read_begin(e, &r);
        if ((rc = engine_subject_resolve(e, c, who, "read", &s, err)) == CDN_OK) {
            cdn_hook_run(CDN_HOOK_SUBJECT_RESOLVED);
            rc = get_once(e, c, &s, key, klen, obj, vec, rev, &readable, waits < 100, &ahead,
                          &current, err);
            engine_subject_release(&s);
        }
        again = engine_read_end(e, &r, rc != CDN_OK || (current && !ahead));
        if (again && ahead) { /* a writer is between its commit and its apply: let it finish
                                 (outside the gate, which a model writer may be waiting for) */
            waits++;
            pthread_mutex_lock(&e->write_lock);
            pthread_mutex_unlock(&e->write_lock);
        }
    } while (again);
    if (rc == CDN_OK && !readable) /* hidden equals missing: the same code and message */
        rc = cdn_err_set(err, CDN_ERR_NOT_FOUND, "no chunk \"%s\" in collection \"%s\"", id, name);
    if (rc) {
        json_decref(*obj);
        *obj = NULL;
        cdn_free(*vec);
        *vec = NULL;
    }
    coll_unref(c);
    return rc;
}

int search_record(engine_t *e, const char *name, const char *id, json_t **obj, cdn_err_t *err)
{
    unsigned char key[4 + 512];
    store_txn_t *t;
    const void *v;
    size_t vlen, klen;
    uint32_t row;
    coll_t *c;
    int rc;
    *obj = NULL;
    if ((rc = engine_coll_get(e, name, &c, err)) != 0)
        return rc;
    klen = coll_chunk_key(c->cfg.id, id, key, sizeof key);
    coll_unref(c);
    if ((rc = store_txn_begin(e->store, 0, &t, err)) != 0)
        return rc;
    if (!klen || store_get(t, STORE_CHUNKS, key, klen, &v, &vlen) != CDN_OK)
        rc = cdn_err_set(err, CDN_ERR_NOT_FOUND, "no chunk \"%s\" in collection \"%s\"", id,
                         name);
    else if ((rc = chunkrec_decode(v, vlen, &row, obj)) != 0)
        cdn_err_set(err, rc, "chunk \"%s\" is stored corrupt", id);
    store_txn_abort(t);
    return rc;
}
