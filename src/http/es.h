/* es.h: Elasticsearch-shaped responses and request bodies shared by the server's handlers:
 * error bodies with the types and statuses Elasticsearch uses, JSON replies, the bounded body
 * parser. Relies on http/http.h and jansson. */
#ifndef CDN_ES_H
#define CDN_ES_H

#include "http/http.h"

/* The version the server reports: clients gate features on it (8.x: knn, retrievers). */
#define ES_VERSION "8.17.0"

/* Fills resp with {"error": {"root_cause": [..], "type", "reason"}, "status"}. */
void es_error(http_resp_t *resp, int status, const char *type, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* 404 index_not_found_exception for index, the same body whether it is missing or hidden. */
void es_error_index(http_resp_t *resp, const char *index);
/* Maps a failed cordon call to Elasticsearch's status and type; invalid_type names the 400
 * type (NULL = illegal_argument_exception). */
void es_error_cordon(http_resp_t *resp, int rc, const cordon_error *err, const char *invalid_type);
/* Sets resp to status with body j (stolen; NULL = out of memory: 500). */
void es_reply(http_resp_t *resp, int status, json_t *j);
/* Appends j's text to b exactly as json_dumps(j, JSON_COMPACT | JSON_REAL_PRECISION(9))
 * writes it (es_json.c); 0, or -1 with b as it was (out of room or memory, a string that is
 * not UTF-8, a tree nested past 2,048 levels), where json_dumps decides. */
int es_json_write(cdn_buf_t *b, json_t *j);
/* {"acknowledged": true} (plus "index" when index is not NULL). */
void es_ack(http_resp_t *resp, const char *index);

/* Parses the request body as one JSON object. An absent body gives an empty object when
 * !required. On failure fills resp (400 parsing_exception naming the column, or the depth
 * limit) and returns NULL. */
json_t *es_body(const http_ctx_t *ctx, const http_req_t *req, http_resp_t *resp, int required);
/* A knn query vector read from a search body's text (es_qvec.c). */
typedef struct es_qvec {
    float *v; /* n values (cdn_malloc), or NULL when the vector, if any, is in the tree */
    size_t n;
} es_qvec_t;
/* es_body for a search body (!required), with its knn query vector read straight into
 * floats when the body has exactly one key "query_vector", in a knn clause (knn, knn[i],
 * retriever.knn, retriever.rrf.retrievers[i].knn), holding only numbers: then that
 * array is empty in the tree returned and *qv holds its values, as (float) of the double
 * jansson would give each. Otherwise *qv is empty and the body is es_body's, errors included.
 * Free *qv with es_qvec_free. */
json_t *es_body_search(const http_ctx_t *ctx, const http_req_t *req, http_resp_t *resp,
                       es_qvec_t *qv);
/* The same for a body of the cordon API's retrieve or context (required), whose query vector
 * is "query": {"vector": [...]}: then that array is empty in the tree and *qv holds it. */
json_t *es_body_retrieve(const http_ctx_t *ctx, const http_req_t *req, http_resp_t *resp,
                         es_qvec_t *qv);
void es_qvec_free(es_qvec_t *qv);
/* Reads the JSON number at p, before end, into *out as the float of jansson's value of it
 * (an integer's value, a real's strtod, as a double, then (float)); the end of the number, or
 * NULL when it is not one jansson takes (or an integer past int64, which this leaves to
 * jansson). */
const char *es_qvec_float(const char *p, const char *end, float *out);
/* 1 when text nests objects and arrays deeper than max (strings skipped). */
int es_too_deep(const char *text, size_t len, unsigned max);

/* Security: the caller's subject for searches and reads as a cordon_subject (model mode). 0,
 * or fills resp (403: a key without a subject and no run-as) and returns -1. */
int es_subject(const http_req_t *req, http_resp_t *resp, cordon_subject *out);
/* Sets out's caller (the key) and request id (X-Opaque-Id), which the audit records. */
void es_subject_labels(const http_req_t *req, cordon_subject *out);
/* Says in a header of resp that its search was recorded as seq, and how durably
 * ("X-Cordon-Audit: seq=12; durable=0; flush_ms=200"); nothing when seq is 0. */
void es_audit_header(const http_ctx_t *ctx, uint64_t seq, http_resp_t *resp);
/* Adds "authorizer": {name, cached, age_ms, ttl_ms} to obj when the answer's collection
 * delegates to an outside authorizer (the only part of an answer that may lag, by age_ms). */
void es_authorizer_set(json_t *obj, const cordon_authorizer_info *ai);
/* 1 when the caller may do action ("search", "read", "write", "manage") on index: admins
 * write and manage everywhere; everyone else as the permission model says. */
int es_allowed(http_ctx_t *ctx, const http_req_t *req, const char *index, const char *action);

/* A generated document id: 20 base64url characters of random bytes, as Elasticsearch's. */
void es_new_id(char out[21]);

#endif
