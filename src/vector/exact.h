/* exact.h: exhaustive top-k over the rows a subject may read, the plan that is always complete.
 * Relies on distance.h (kernels, vec_view_t), topk.h (topk_hit_t) and CRoaring bitmaps. */
#ifndef CDN_EXACT_H
#define CDN_EXACT_H

#include <roaring/roaring.h>
#include <stddef.h>
#include <stdint.h>

#include "base/topk.h"
#include "vector/distance.h"

/* The k rows of v nearest to query under metric m among `allowed` (NULL: every row
 * 0..v->count-1; ids >= v->count are ignored). query has v->dim floats; for cosine it must be
 * unit length, as stored rows are. Reads only the allowed rows, in id order, with prefetch.
 * Writes up to k hits to out (room for k) nearest first, equal distances by smaller id, and
 * their number to *n_out; *scanned (if not NULL) gets the number of rows whose distance was
 * computed. The result is the true top-k of the allowed rows for these kernels' float sums.
 * Returns 0 or CDN_ERR_INVALID (NULL view or query, NULL out with k > 0, bad metric, stride
 * below dim). Allocates nothing (the heap lives in out); thread-safe: no shared state. */
int exact_search(const vec_view_t *v, vec_metric_t m, const float *query,
                 const roaring_bitmap_t *allowed, size_t k, topk_hit_t *out, size_t *n_out,
                 uint64_t *scanned);

/* As exact_search, with the kernels of a given instruction set (CDN_ERR_UNSUPPORTED if this
 * CPU lacks it): for tests and benchmarks that compare paths. */
int exact_search_isa(const vec_view_t *v, vec_metric_t m, vec_isa_t isa, const float *query,
                     const roaring_bitmap_t *allowed, size_t k, topk_hit_t *out, size_t *n_out,
                     uint64_t *scanned);

/* As exact_search over a plain array of n_ids row ids (any order; ids >= v->count ignored;
 * each id should appear once, a repeated id may be returned twice). For callers that already
 * hold candidates as an array (e.g. re-ranking). Same returns. */
int exact_search_ids(const vec_view_t *v, vec_metric_t m, const float *query, const uint32_t *ids,
                     size_t n_ids, size_t k, topk_hit_t *out, size_t *n_out, uint64_t *scanned);

#endif
