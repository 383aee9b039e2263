/* v1.h: the cordon API's routes under /v1 (v1.c: retrieval, ACLs, views; v1_asof.c: explain, now
 * and as of; v1_model.c: the permission model; v1_rebac.c: relationships; v1_openapi.c: the
 * API's description) and /api/auth
 * (authz_api.c: is-authorized), and what they share (docs/api/). Relies on http/http.h and
 * http/es.h. */
#ifndef CDN_HTTP_V1_H
#define CDN_HTTP_V1_H

#include "http/es.h"
#include "http/es_mapping.h"
#include "http/http.h"

/* How long a read waits for min_revision before answering 409. */
#define V1_MIN_REVISION_WAIT_MS 1000
/* The resource whose manage action lets a subject change the model and ask about others. */
#define V1_MODEL_RESOURCE "model:permissions"
/* Checks per /api/auth/is-authorized/batch request. */
#define V1_AUTHZ_BATCH_MAX 1000
/* The largest ef and max_candidates a retrieval may ask for (graph breadth, widening pool). */
#define V1_SEARCH_WIDTH_MAX 100000

/* Waits (bounded) until the data directory reached body's min_revision, if any; 0, or fills
 * resp (400 malformed, 409 not reached). */
int v1_wait_revision(http_ctx_t *ctx, json_t *body, http_resp_t *resp);
/* Who a /v1 read is for: body's "subject" (keys that may act for others only), else the
 * caller's. buf holds the id. 0, or fills resp. */
int v1_subject(const http_req_t *req, json_t *body, http_resp_t *resp, cordon_subject *s, char *buf,
               size_t size);
/* 1 for an admin key, or a subject holding manage on V1_MODEL_RESOURCE. */
int v1_may_manage_model(http_ctx_t *ctx, const http_req_t *req);
/* A retrieval request read from its body (v1_retrieve_read); owned strings released by
 * v1_retrieve_free. */
typedef struct v1_retrieve {
    cordon_query q;
    float *vector;
    char *filter;   /* from jansson */
    json_t *fields; /* borrowed from the body */
    int embedded;   /* the vector was embedded from the query text */
} v1_retrieve_t;

/* Reads a retrieve body (keys of extra are accepted too) for index ix into r, with the query
 * vector es_body_retrieve took from its text (qv, may be NULL); 0, or fills resp (400 naming
 * the field). */
int v1_retrieve_read(const es_index_t *ix, json_t *body, const es_qvec_t *qv,
                     const char *const *extra, v1_retrieve_t *r, http_resp_t *resp);
void v1_retrieve_free(v1_retrieve_t *r);

/* A hit's fields (text fields and metadata keys) as a retrieve's "fields" asks (NULL = all but
 * the ACL fields of ix). */
json_t *v1_hit_fields(const es_index_t *ix, const cordon_record *r, json_t *fields);

/* v1.c */
void v1_retrieve(http_ctx_t *ctx, http_req_t *req, http_resp_t *resp);
void v1_acl_put(http_ctx_t *ctx, http_req_t *req, http_resp_t *resp);
void v1_view(http_ctx_t *ctx, http_req_t *req, http_resp_t *resp);

/* v1_context.c */
void v1_context(http_ctx_t *ctx, http_req_t *req, http_resp_t *resp);

/* Applies the model operations ops (stolen) in order as one change, all or none, in one
 * revision, and answers {acknowledged, revision} with extra's fields (stolen, may be NULL), or
 * the failing op (then nothing changed). v1_model.c. */
void v1_apply_ops(http_ctx_t *ctx, json_t *ops, http_resp_t *resp, json_t *extra);

/* v1_rebac.c */
void v1_rebac_schema_put(http_ctx_t *ctx, http_req_t *req, http_resp_t *resp);
void v1_rebac_schema_get(http_ctx_t *ctx, http_req_t *req, http_resp_t *resp);
void v1_rebac_write(http_ctx_t *ctx, http_req_t *req, http_resp_t *resp);
void v1_rebac_check(http_ctx_t *ctx, http_req_t *req, http_resp_t *resp);
void v1_rebac_lookup_resources(http_ctx_t *ctx, http_req_t *req, http_resp_t *resp);
void v1_rebac_lookup_subjects(http_ctx_t *ctx, http_req_t *req, http_resp_t *resp);
void v1_rebac_expand(http_ctx_t *ctx, http_req_t *req, http_resp_t *resp);

/* v1_model.c */
void v1_subject_put(http_ctx_t *ctx, http_req_t *req, http_resp_t *resp);
void v1_subject_delete(http_ctx_t *ctx, http_req_t *req, http_resp_t *resp);
void v1_group_put(http_ctx_t *ctx, http_req_t *req, http_resp_t *resp);
void v1_group_delete(http_ctx_t *ctx, http_req_t *req, http_resp_t *resp);
void v1_group_members(http_ctx_t *ctx, http_req_t *req, http_resp_t *resp);
void v1_role_put(http_ctx_t *ctx, http_req_t *req, http_resp_t *resp);
void v1_role_delete(http_ctx_t *ctx, http_req_t *req, http_resp_t *resp);
void v1_grant_post(http_ctx_t *ctx, http_req_t *req, http_resp_t *resp);
void v1_grant_list(http_ctx_t *ctx, http_req_t *req, http_resp_t *resp);
void v1_grant_delete(http_ctx_t *ctx, http_req_t *req, http_resp_t *resp);
void v1_model_get(http_ctx_t *ctx, http_req_t *req, http_resp_t *resp);
void v1_model_put(http_ctx_t *ctx, http_req_t *req, http_resp_t *resp);

/* v1_openapi.c: GET /v1/openapi.json answers docs/api/openapi.json, which the build embeds as
 * these (scripts/embed-file.sh; the array ends in a NUL that the length does not count). */
extern const unsigned char v1_openapi_json[];
extern const size_t v1_openapi_json_len;
void v1_openapi(http_ctx_t *ctx, http_req_t *req, http_resp_t *resp);

/* v1_audit.c: the audit's records and settings (administrators), and the "audit" object of
 * a response whose search was recorded as seq (NULL when it was not). */
void v1_audit_get(http_ctx_t *ctx, http_req_t *req, http_resp_t *resp);
void v1_audit_collection(http_ctx_t *ctx, http_req_t *req, http_resp_t *resp);
json_t *v1_audit_meta(const http_ctx_t *ctx, uint64_t seq);

/* v1_asof.c: questions about the past (admin or manage on the model). v1_asof_when reads a
 * body's "revision" or "as_of" (ISO-8601 or epoch ms): 0, or -1 with *why. */
void v1_explain(http_ctx_t *ctx, http_req_t *req, http_resp_t *resp);
void v1_asof_check(http_ctx_t *ctx, http_req_t *req, http_resp_t *resp);
void v1_asof_readable(http_ctx_t *ctx, http_req_t *req, http_resp_t *resp);
void v1_asof_readers(http_ctx_t *ctx, http_req_t *req, http_resp_t *resp);
int v1_asof_when(json_t *body, uint64_t *rev, uint64_t *time_us, const char **why);
void v1_audit_verify(http_ctx_t *ctx, http_req_t *req, http_resp_t *resp);

/* authz_api.c */
void v1_is_authorized(http_ctx_t *ctx, http_req_t *req, http_resp_t *resp);
void v1_is_authorized_batch(http_ctx_t *ctx, http_req_t *req, http_resp_t *resp);

#endif
