/* search.h: searching a collection as a subject: view -> allowed set -> plan -> candidates ->
 * re-check of every hit against the view -> ids. Also reading one chunk as a subject.
 * Relies on query/engine, acl/ and vector/. Results are owned by the caller (search_result_free).*/
#ifndef CDN_SEARCH_H
#define CDN_SEARCH_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "query/engine.h"

typedef enum search_strategy {
    SEARCH_AUTO = 0,
    SEARCH_EXACT = 1,
    SEARCH_PREFILTER = 2,
    SEARCH_POSTFILTER = 3,
} search_strategy_t;

#define SEARCH_K_MAX 10000

typedef enum search_fusion { SEARCH_FUSION_RRF = 0, SEARCH_FUSION_LINEAR = 1 } search_fusion_t;

/* One query: a vector, a text query, or both (hybrid). */
typedef struct search_knn {
    const float *vector; /* NULL = no vector side */
    size_t k;            /* 0 = 10 */
    search_strategy_t strategy;
    uint32_t ef_search;     /* 0 = the collection's */
    size_t max_candidates;  /* 0 = 1000 */
    const char *text;       /* a match query over "_all" (every text field), or NULL */
    const char *query_json; /* an Elasticsearch query object, or NULL */
    search_fusion_t fusion;
    size_t rank_window;      /* hybrid: hits taken from each side; 0 = max(k, 100) */
    uint32_t rank_constant;  /* RRF: 0 = 60 */
    float text_weight;       /* linear: 0 = 0.5 */
    float vector_weight;     /* linear: 0 = 0.5 */
    const char *filter_json; /* ES query restricting the candidates, or NULL */
    int want_total;          /* 1: fill search_result_t.total */
    int with_bodies;         /* 1: each hit carries its stored record and vector */
    /* want_total: the hits, best first, that count as a vector side's (0 = all k): a caller
     * that asks for more than it shows keeps total to what it shows. */
    size_t total_hits;
    /* want_total: 0 = count exactly; n = a count of at least n may stop at n (total_capped). */
    uint64_t total_max;
    /* with_bodies: only the page gets bodies. The hits are put in ranking order (score desc,
     * id asc); those after the key (after_id, after_score; NULL = from the top), skipping
     * page_from of them, the next page_k (0 = all) are read. */
    const char *after_id;
    float after_score;
    size_t page_from, page_k;
    int bodies_without_vectors; /* with_bodies: leave search_hit_t.vec NULL, reading no row */
    size_t vector_window;       /* hybrid: the vector side's hits, at most rank_window; 0 = it */
} search_knn_t;

typedef struct search_hit {
    char *id;
    float score;
    uint32_t row;
    /* with_bodies: the stored record ({"fields","metadata","allowed","denied"}; json_decref)
     * and a copy of the vector (cdn_free; NULL without vectors), read with the hit. */
    json_t *body;
    float *vec;
} search_hit_t;

typedef struct search_result {
    search_hit_t *hits;
    size_t n_hits;
    int complete;
    char plan[32];
    uint64_t readable;
    uint64_t revision;
    /* Readable chunks the search chose among (readable and, with filter_json, matching it): a
     * function of readable data only, so it may be shown to the subject. */
    uint64_t candidates;
    /* Scores computed (vector distances, BM25 documents), hidden chunks' included: a cost
     * measure for benchmarks. It depends on hidden chunks (a traversal routes through them;
     * pruning bounds cover their postings), so it is never shown to a subject by default. */
    uint64_t work;
    uint64_t rejected; /* hits the final re-check refused (always 0 unless a bug) */
    /* want_total: the candidates the query matches (a text query's matches; a vector query's
     * hits; for hybrid, the union of the two), as Elasticsearch's hits.total. */
    uint64_t total;
    uint32_t dim;     /* floats in each hit's vec */
    int total_capped; /* total is total_max and the true count may be larger */
    int total_exact;  /* internal: total came from an exhaustive pass of the text side */
    int ahead;        /* internal: the store held a write memory had not applied yet */
} search_result_t;

/* Vector, text or hybrid search as who: the subject is authorized for "search" on the
 * collection, its view, the allowed set, the final re-check and the hits all come from one
 * permission state. 0, or CDN_ERR_NOT_FOUND (collection, or a subject that may not search it),
 * CDN_ERR_INVALID (query: dimension, NaN, k, DSL), CDN_ERR_NOMEM, CDN_ERR_INTERNAL (collection
 * or model state lost a write: fails closed). */
int search_knn(engine_t *e, const char *coll, const engine_asker_t *who, const search_knn_t *q,
               search_result_t *out, cdn_err_t *err);
void search_result_free(search_result_t *r);

/* Reads chunk id as who (authorized for "read"): CDN_ERR_NOT_FOUND whether missing or
 * unreadable. On success *obj is the stored record ({"fields","metadata","allowed","denied"},
 * json_decref it), *vec a copy of the vector (cdn_free; NULL without vectors) of *dim floats,
 * *rev the revision read. The record, the decision, the view and the check come from one
 * permission state. filter_json (an Elasticsearch query object, or NULL) narrows what is
 * readable further, as a search's filter does: a chunk it does not match reads as missing. */
int search_get(engine_t *e, const char *coll, const engine_asker_t *who, const char *id,
               const char *filter_json, json_t **obj, float **vec, uint32_t *dim, uint64_t *rev,
               cdn_err_t *err);

/* Reads chunk id's stored record without a permission check, for administrators' questions
 * (explain) and writers' (a partial update). *obj is released with json_decref; with vec, a
 * copy of the vector (cdn_free; NULL without vectors, or for a row memory has not reached) of
 * *dim floats. */
/* Whether each of n ids has a stored chunk (out[i] 1 or 0), in one read transaction, without a
 * permission check (a writer's question). */
int search_exists(engine_t *e, const char *coll, const char *const *ids, size_t n,
                  unsigned char *out, cdn_err_t *err);

int search_record(engine_t *e, const char *coll, const char *id, json_t **obj, float **vec,
                  uint32_t *dim, cdn_err_t *err);

#endif
