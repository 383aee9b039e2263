/* es_handlers.h: the Elasticsearch API's route handlers (es_index.c, es_doc.c, es_bulk.c,
 * es_search.c) and the helpers they share. Each fills resp, errors included.
 * Relies on http/http.h and http/es_mapping. */
#ifndef CDN_ES_HANDLERS_H
#define CDN_ES_HANDLERS_H

#include "http/es_mapping.h"
#include "http/http.h"

/* es_index.c */
void es_root(http_ctx_t *ctx, http_req_t *req, http_resp_t *resp);
void es_cluster_health(http_ctx_t *ctx, http_req_t *req, http_resp_t *resp);
void es_cat_indices(http_ctx_t *ctx, http_req_t *req, http_resp_t *resp);
void es_index_get(http_ctx_t *ctx, http_req_t *req, http_resp_t *resp);
void es_index_put(http_ctx_t *ctx, http_req_t *req, http_resp_t *resp);
void es_index_delete(http_ctx_t *ctx, http_req_t *req, http_resp_t *resp);
void es_mapping_get_route(http_ctx_t *ctx, http_req_t *req, http_resp_t *resp);
void es_mapping_put_route(http_ctx_t *ctx, http_req_t *req, http_resp_t *resp);
void es_refresh(http_ctx_t *ctx, http_req_t *req, http_resp_t *resp);
/* POST /{index}/_forcemerge: gives back the rows of deleted and replaced documents. */
void es_forcemerge(http_ctx_t *ctx, http_req_t *req, http_resp_t *resp);
/* 1 when the caller may see index (search it, or administer the server). */
int es_visible(http_ctx_t *ctx, const http_req_t *req, const char *index);
/* Loads the index named by req->seg[0] when the caller may see it; else fills resp (404). */
int es_index_open(http_ctx_t *ctx, http_req_t *req, http_resp_t *resp, es_index_t *ix);
/* es_index_open for a handler that only reads the index (es_index_load_shared). */
int es_index_open_shared(http_ctx_t *ctx, http_req_t *req, http_resp_t *resp, es_index_t *ix);

/* admin.c */
void es_cordon_health(http_ctx_t *ctx, http_req_t *req, http_resp_t *resp);
void es_authenticate(http_ctx_t *ctx, http_req_t *req, http_resp_t *resp);
void es_key_create(http_ctx_t *ctx, http_req_t *req, http_resp_t *resp);
void es_key_list(http_ctx_t *ctx, http_req_t *req, http_resp_t *resp);
void es_key_revoke(http_ctx_t *ctx, http_req_t *req, http_resp_t *resp);
void es_model_post(http_ctx_t *ctx, http_req_t *req, http_resp_t *resp);

/* es_doc.c */
void es_doc_put(http_ctx_t *ctx, http_req_t *req, http_resp_t *resp);    /* _doc/{id}, _doc */
void es_doc_create(http_ctx_t *ctx, http_req_t *req, http_resp_t *resp); /* _create/{id} */
void es_doc_get(http_ctx_t *ctx, http_req_t *req, http_resp_t *resp);
void es_doc_delete(http_ctx_t *ctx, http_req_t *req, http_resp_t *resp);
void es_doc_update(http_ctx_t *ctx, http_req_t *req, http_resp_t *resp);
void es_mget(http_ctx_t *ctx, http_req_t *req, http_resp_t *resp);
/* Loads index name for a write by the caller, creating it (dynamic mapping) when missing and
 * the caller may create indexes. 0, or fills resp. */
int es_index_for_write(http_ctx_t *ctx, http_req_t *req, const char *name, json_t *first_source,
                       es_index_t *ix, http_resp_t *resp);

/* es_bulk.c */
void es_bulk(http_ctx_t *ctx, http_req_t *req, http_resp_t *resp);

/* es_search.c */
void es_search(http_ctx_t *ctx, http_req_t *req, http_resp_t *resp);
void es_count(http_ctx_t *ctx, http_req_t *req, http_resp_t *resp);
void es_delete_by_query(http_ctx_t *ctx, http_req_t *req, http_resp_t *resp);
/* es_source.c: _source filtering: spec is true/false, a string, an array of patterns, or
 * {"includes", "excludes"} (NULL = everything). Returns a new reference, or NULL for "no _source".
 */
json_t *es_source_filter(json_t *src, json_t *spec);
/* 0 when spec surely drops path (an exclude matches it or an object above it, or includes are
 * given and none does), else 1. */
int es_source_wants(json_t *spec, const char *path);
/* The _source of record r of index ix as spec shows it: es_source_filter of es_source_of, without
 * rendering the vector when spec drops it. New reference, or NULL for "no _source". */
json_t *es_source_shown(const es_index_t *ix, const cordon_record *r, json_t *spec);
/* The _source spec of a request's query string (_source, _source_includes, _source_excludes),
 * new reference or NULL. */
json_t *es_source_arg(const http_req_t *req);

#endif
