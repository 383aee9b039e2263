/* search_int.h: the pieces of query/search shared between its files; not for other modules.
 * Relies on query/search. Every function runs under the collection's read lock. */
#ifndef CDN_SEARCH_INT_H
#define CDN_SEARCH_INT_H

#include <roaring/roaring.h>

#include "query/search.h"
#include "vector/topk.h"

/* The vector plan: fills hits (room for k; distances, lower is nearer), out->plan,
 * out->complete and out->work (scores computed). */
int search_vector_locked(engine_t *e, coll_t *c, const search_knn_t *q, const float *query,
                         const roaring_bitmap_t *allowed, size_t k, vec_hit_t *hits,
                         size_t *nhits, search_result_t *out);

/* Text or hybrid: *hits (cdn_free) receives up to k hits whose .dist holds the score. allowed
 * holds the candidates (readable, narrowed by a filter); readable the whole readable set, over
 * which BM25 statistics are computed unless the collection asks for global ones. */
int search_text_locked(engine_t *e, coll_t *c, const search_knn_t *q, const float *query,
                       const roaring_bitmap_t *allowed, const roaring_bitmap_t *readable,
                       size_t k, search_result_t *out, vec_hit_t **hits, size_t *nhits,
                       cdn_err_t *err);

/* Narrows allowed to the chunks the filter query (ES JSON) matches. */
int search_filter_locked(engine_t *e, coll_t *c, const char *filter_json,
                         roaring_bitmap_t *allowed, cdn_err_t *err);

/* Re-checks hits against the view and fills out->hits with ids and scores. */
int search_finish(const coll_t *c, const uint32_t *view, size_t nview, const vec_hit_t *h,
                  size_t n, search_result_t *out);

#endif
