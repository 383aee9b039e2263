/* search_int.h: the pieces of query/search shared between its files (search.c above
 * search_hybrid.c above search_text.c and search_vector.c); not for other modules.
 * Relies on query/search. Every function runs under the collection's read lock. */
#ifndef CDN_SEARCH_INT_H
#define CDN_SEARCH_INT_H

#include <roaring/roaring.h>

#include "base/topk.h"
#include "query/search.h"

/* The vector plan (search_vector.c): fills hits (room for k; distances, lower is nearer),
 * out->plan, out->complete and out->work (scores computed). */
int search_vector_locked(engine_t *e, coll_t *c, const search_knn_t *q, const float *query,
                         const roaring_bitmap_t *allowed, size_t k, topk_hit_t *hits, size_t *nhits,
                         search_result_t *out);

/* BM25 (search_text.c): *hits (cdn_free) receives up to window hits of q's text query whose
 * .dist holds the score; fills out->plan, out->complete and out->work. allowed and readable
 * as for search_hybrid_locked. */
int search_bm25_locked(engine_t *e, coll_t *c, const search_knn_t *q,
                       const roaring_bitmap_t *allowed, const roaring_bitmap_t *readable,
                       size_t window, topk_hit_t **hits, size_t *n, search_result_t *out,
                       cdn_err_t *err);

/* Narrows allowed to the chunks the filter query (ES JSON) matches (search_text.c). */
int search_filter_locked(engine_t *e, coll_t *c, const char *filter_json, roaring_bitmap_t *allowed,
                         cdn_err_t *err);

/* The candidates q's text query matches (search_text.c), counted exhaustively; with nhits, the
 * union of those with the rows of hits (a hybrid search's vector side). */
int search_count_locked(engine_t *e, coll_t *c, const search_knn_t *q,
                        const roaring_bitmap_t *allowed, const topk_hit_t *hits, size_t nhits,
                        uint64_t *total, cdn_err_t *err);
/* How many of hits[0..nhits) (distinct rows) q's text query does not match (search_text.c):
 * what a hybrid's vector side adds to an exact count of the text matches. */
int search_count_unmatched_locked(engine_t *e, coll_t *c, const search_knn_t *q,
                                  const topk_hit_t *hits, size_t nhits, uint64_t *n,
                                  cdn_err_t *err);

/* Text or hybrid (search_hybrid.c): *hits (cdn_free) receives up to k hits whose .dist holds
 * the score. allowed holds the candidates (readable, narrowed by a filter); readable the whole
 * readable set, over which BM25 statistics are computed unless the collection asks for global
 * ones (NULL). */
int search_hybrid_locked(engine_t *e, coll_t *c, const search_knn_t *q, const float *query,
                         const roaring_bitmap_t *allowed, const roaring_bitmap_t *readable,
                         size_t k, search_result_t *out, topk_hit_t **hits, size_t *nhits,
                         cdn_err_t *err);

#endif
