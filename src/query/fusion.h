/* fusion.h: merging ranked lists from different retrievers (BM25, kNN) into one ranking:
 * reciprocal rank fusion and weighted linear fusion of min-max normalised scores.
 * Relies on mem.h only; pure functions over caller-owned arrays. */
#ifndef CDN_FUSION_H
#define CDN_FUSION_H

#include <stddef.h>
#include <stdint.h>

/* One retriever's result, best first: ids[i] with scores[i] (scores may be NULL for RRF). */
typedef struct fusion_list {
    const uint32_t *ids;
    const float *scores;
    size_t n;
} fusion_list_t;

typedef struct fusion_hit {
    uint32_t id;
    float score;
} fusion_hit_t;

/* Reciprocal rank fusion: score(d) = sum over lists of 1 / (rank_constant + rank), rank from
 * 1, counting only each list's first rank_window entries (0 = all). Writes up to k hits to the
 * caller's array out (score desc, then id asc) and *n_out. rank_constant 0 means 60 (the
 * Elasticsearch default). Returns 0, CDN_ERR_INVALID (a list with NULL ids and n > 0) or
 * CDN_ERR_NOMEM. An id repeated inside one list counts at its best rank only. */
int fusion_rrf(const fusion_list_t *lists, size_t nlists, uint32_t rank_constant,
               size_t rank_window, size_t k, fusion_hit_t *out, size_t *n_out);

/* Linear fusion: each list's first rank_window scores (0 = all) are min-max normalised to
 * 0..1 (all equal -> 1), multiplied by weights[i] (NULL = all 1) and summed per id; a doc
 * absent from a list gets 0 from it. Same output contract as fusion_rrf; INVALID when a list
 * lacks scores. */
int fusion_linear(const fusion_list_t *lists, const float *weights, size_t nlists,
                  size_t rank_window, size_t k, fusion_hit_t *out, size_t *n_out);

#endif
