/* textq.h: the query tree of the text layer (match, multi_match, match_phrase, prefix, fuzzy,
 * term, terms, range, exists, ids, bool, match_all) and its Elasticsearch JSON parser.
 * Relies on mem.h for ownership and jansson for the DSL. A tree owns all its strings/children. */
#ifndef CDN_TEXTQ_H
#define CDN_TEXTQ_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "base/err.h"

typedef enum textq_type {
    TEXTQ_MATCH_ALL = 0,
    TEXTQ_MATCH,
    TEXTQ_MULTI_MATCH,
    TEXTQ_PHRASE,
    TEXTQ_PREFIX,
    TEXTQ_FUZZY,
    TEXTQ_TERM,
    TEXTQ_TERMS,
    TEXTQ_RANGE,
    TEXTQ_EXISTS,
    TEXTQ_IDS,
    TEXTQ_BOOL,
} textq_type_t;

typedef enum textq_mm { TEXTQ_MM_BEST_FIELDS = 0, TEXTQ_MM_MOST_FIELDS = 1 } textq_mm_t;

typedef struct textq_field {
    char *name;
    float boost;
} textq_field_t;

/* minimum_should_match: absent, a count (negative = all but n) or a percentage. */
typedef struct textq_msm {
    int set;
    int value;
    int percent;
} textq_msm_t;

typedef struct textq textq_t;

typedef struct textq_list {
    textq_t **q;
    size_t n, cap;
} textq_list_t;

struct textq {
    textq_type_t type;
    float boost;           /* 1 by default */
    char *field;           /* every leaf but multi_match / ids / bool / match_all */
    char *text;            /* match/phrase query text; prefix/fuzzy/term value */
    textq_field_t *fields; /* multi_match */
    size_t nfields;
    int op_and;                             /* match, multi_match: operator and */
    textq_msm_t msm;                        /* match, multi_match, bool (should) */
    textq_mm_t mm_type;                     /* multi_match */
    float tie_breaker;                      /* multi_match best_fields */
    uint32_t slop;                          /* match_phrase */
    int fuzziness;                          /* fuzzy: edits 0..2, -1 = AUTO */
    uint32_t prefix_length, max_expansions; /* fuzzy */
    char **values;                          /* terms */
    size_t nvalues;
    uint32_t *ids; /* ids: internal doc ids */
    size_t nids;
    char *lo, *hi; /* range bounds as given (numbers or dates), NULL = open */
    int lo_incl, hi_incl;
    textq_list_t must, should, filter, must_not; /* bool */
};

/* Constructors: each returns 0 or CDN_ERR_NOMEM and gives *out to the caller, who frees it
 * with textq_free (or hands it to a bool, which then owns it). Strings are copied. */
int textq_new(textq_type_t type, textq_t **out);
int textq_match(const char *field, const char *text, textq_t **out);
int textq_multi_match(const char *text, const char *const *fields, const float *boosts, size_t n,
                      textq_mm_t type, textq_t **out);
int textq_phrase(const char *field, const char *text, uint32_t slop, textq_t **out);
int textq_prefix(const char *field, const char *prefix, textq_t **out);
int textq_fuzzy(const char *field, const char *value, int fuzziness, textq_t **out);
int textq_term(const char *field, const char *value, textq_t **out);
int textq_terms(const char *field, const char *const *values, size_t n, textq_t **out);
/* lo/hi may be NULL (open); incl flags say gte/lte versus gt/lt. */
int textq_range(const char *field, const char *lo, int lo_incl, const char *hi, int hi_incl,
                textq_t **out);
int textq_exists(const char *field, textq_t **out);
int textq_ids(const uint32_t *ids, size_t n, textq_t **out);
int textq_bool(textq_t **out);

typedef enum textq_occur {
    TEXTQ_MUST = 0,
    TEXTQ_SHOULD,
    TEXTQ_FILTER,
    TEXTQ_MUST_NOT
} textq_occur_t;
/* Adds child to bool b (which takes ownership, also on failure). 0, INVALID or NOMEM. */
int textq_bool_add(textq_t *b, textq_occur_t occur, textq_t *child);

/* Frees a tree and everything it owns; NULL is fine. */
void textq_free(textq_t *q);

/* The number of optional clauses that must match out of n for msm (at least 0, at most n). */
size_t textq_msm_required(const textq_msm_t *m, size_t n);

/* Parses an Elasticsearch query object (the value of "query": {"match": {...}}) into a tree.
 * Returns 0 with *out (free with textq_free), CDN_ERR_INVALID with err naming the path of the
 * bad field and what is expected, CDN_ERR_UNSUPPORTED for query types outside the subset, or
 * CDN_ERR_NOMEM. ids values must be numeric internal ids (the engine maps external ids). */
int textq_parse_es(const json_t *query, textq_t **out, cdn_err_t *err);

/* Boost bounds the parser enforces, so that every score stays a finite float: one boost (a
 * query's "boost" or a multi_match field's "^b") from 0 to TEXTQ_BOOST_MAX, and the product of
 * the boosts from the root to any leaf at most TEXTQ_BOOST_PATH_MAX (a BM25 clause scores at
 * most a few tens; a query has at most thousands of clauses). */
#define TEXTQ_BOOST_MAX 1e6
#define TEXTQ_BOOST_PATH_MAX 1e12

#endif
