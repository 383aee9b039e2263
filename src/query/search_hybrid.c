/* search_hybrid.c: text and hybrid search: the BM25 side alone, or fused with the vector plan
 * (reciprocal rank or weighted linear fusion). Relies on search_text.c, search_vector.c and
 * query/fusion; runs under the collection's read lock. */
#include "base/mem.h"
#include "query/fusion.h"
#include "query/search_int.h"

#include <stdio.h>
#include <string.h>

static int fuse(const search_knn_t *q, const topk_hit_t *th, size_t nt, const topk_hit_t *vh,
                size_t nv, size_t window, size_t k, topk_hit_t *out, size_t *n)
{
    uint32_t *ids = cdn_malloc((nt + nv + 1) * sizeof *ids);
    float *sc = cdn_malloc((nt + nv + 1) * sizeof *sc);
    fusion_hit_t *fh = cdn_malloc((k ? k : 1) * sizeof *fh);
    int rc = CDN_ERR_NOMEM;
    if (ids && sc && fh) {
        for (size_t i = 0; i < nt; i++) {
            ids[i] = th[i].id;
            sc[i] = th[i].dist;
        }
        for (size_t i = 0; i < nv; i++) {
            ids[nt + i] = vh[i].id;
            sc[nt + i] = vh[i].dist;
        }
        fusion_list_t lists[2] = {{ids, sc, nt}, {ids + nt, sc + nt, nv}};
        float w[2] = {q->text_weight > 0 ? q->text_weight : 0.5f,
                      q->vector_weight > 0 ? q->vector_weight : 0.5f};
        rc = q->fusion == SEARCH_FUSION_LINEAR
                 ? fusion_linear(lists, w, 2, window, k, fh, n)
                 : fusion_rrf(lists, 2, q->rank_constant, window, k, fh, n);
        for (size_t i = 0; rc == CDN_OK && i < *n; i++)
            out[i] = (topk_hit_t){fh[i].id, fh[i].score};
    }
    cdn_free(ids);
    cdn_free(sc);
    cdn_free(fh);
    return rc;
}

int search_hybrid_locked(engine_t *e, coll_t *c, const search_knn_t *q, const float *query,
                         const roaring_bitmap_t *allowed, const roaring_bitmap_t *readable,
                         size_t k, search_result_t *out, topk_hit_t **hits, size_t *nhits,
                         cdn_err_t *err)
{
    size_t window = q->vector ? (q->rank_window ? q->rank_window : (k > 100 ? k : 100)) : k;
    topk_hit_t *th = NULL, *vh = NULL;
    size_t nt = 0, nv = 0;
    int tcomplete, rc;
    if (window < k || window > SEARCH_K_MAX)
        return cdn_err_set(err, CDN_ERR_INVALID,
                           "rank_window_size %zu must be between k (%zu) "
                           "and %d",
                           window, k, SEARCH_K_MAX);
    if ((rc = search_bm25_locked(e, c, q, allowed, readable, window, &th, &nt, out, err)) != 0 ||
        !q->vector) {
        *hits = th;
        *nhits = nt;
        return rc;
    }
    tcomplete = out->complete;
    out->plan[0] = '\0';
    /* the vector side's list: its own k (as a knn retriever's) when smaller than the window */
    size_t vwin = q->vector_window && q->vector_window < window ? q->vector_window : window;
    if (!(vh = cdn_malloc(vwin * sizeof *vh)) || !(*hits = cdn_malloc(k * sizeof **hits))) {
        cdn_free(th);
        cdn_free(vh);
        return cdn_err_set(err, CDN_ERR_NOMEM, "out of memory");
    }
    rc = search_vector_locked(e, c, q, query, allowed, vwin, vh, &nv, out);
    for (size_t i = 0; i < nv; i++)
        vh[i].dist = vec_score_from_dist(c->cfg.metric, vh[i].dist);
    if (rc == CDN_OK)
        rc = fuse(q, th, nt, vh, nv, window, k, *hits, nhits);
    /* The fused top-k is right for the two windows when both sides were exact. */
    out->complete = out->complete && tcomplete;
    char vplan[32];
    memcpy(vplan, out->plan, sizeof vplan);
    /* The text side is always BM25; its pruning variant is not worth the room. */
    snprintf(out->plan, sizeof out->plan, "%s(%.15s,bm25)",
             q->fusion == SEARCH_FUSION_LINEAR ? "linear" : "rrf", vplan);
    cdn_free(th);
    cdn_free(vh);
    if (rc)
        return cdn_err_set(err, rc, "fusion failed: %s", cdn_strerror(rc));
    return CDN_OK;
}
