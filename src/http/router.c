/* router.c: the route table and dispatch: who is asking (API keys, run-as), which handler
 * answers, the write queue, the shutdown answer, and what Elasticsearch answers for a route it
 * does not have. Relies on http/es_handlers, http/keys. */
#include "base/mem.h"
#include "http/es.h"
#include "http/es_handlers.h"
#include "http/scim.h"
#include "http/v1.h"

#include <stdio.h>
#include <string.h>

typedef struct route {
    const char *method;
    /* "/{index}/_doc/{id}": {id} matches one segment, any other {x} one not starting '_' */
    const char *tmpl;
    http_handler_fn fn;
    int write; /* counts against the write queue */
    int open;  /* answered without a key */
} route_t;

static void metrics_route(http_ctx_t *ctx, http_req_t *req, http_resp_t *resp);

static const route_t routes[] = {
    {"GET", "/", es_root, 0, 0},
    {"HEAD", "/", es_root, 0, 0},
    {"GET", "/_cordon/health", es_cordon_health, 0, 1},
    {"GET", "/health", es_cordon_health, 0, 1},
    {"GET", "/metrics", metrics_route, 0, 0},
    {"GET", "/_cluster/health", es_cluster_health, 0, 0},
    {"GET", "/_security/_authenticate", es_authenticate, 0, 0},
    {"POST", "/_security/api_key", es_key_create, 0, 0},
    {"PUT", "/_security/api_key", es_key_create, 0, 0},
    {"GET", "/_security/api_key", es_key_list, 0, 0},
    {"DELETE", "/_security/api_key", es_key_revoke, 0, 0},
    {"GET", "/_cordon/model", v1_model_get, 0, 0}, /* the same as /v1/model */
    {"PUT", "/_cordon/model", v1_model_put, 1, 0},
    {"POST", "/_cordon/model", es_model_post, 1, 0},
    {"GET", "/v1/openapi.json", v1_openapi, 0, 1},
    {"POST", "/v1/collections/{c}/retrieve", v1_retrieve, 0, 0},
    {"POST", "/v1/collections/{c}/context", v1_context, 0, 0},
    {"PUT", "/v1/collections/{c}/acl", v1_acl_put, 1, 0},
    {"PUT", "/v1/subjects/{id}", v1_subject_put, 1, 0},
    {"DELETE", "/v1/subjects/{id}", v1_subject_delete, 1, 0},
    {"GET", "/v1/subjects/{id}/view", v1_view, 0, 0},
    {"PUT", "/v1/groups/{id}", v1_group_put, 1, 0},
    {"DELETE", "/v1/groups/{id}", v1_group_delete, 1, 0},
    {"POST", "/v1/groups/{id}/members", v1_group_members, 1, 0},
    {"PUT", "/v1/roles/{id}", v1_role_put, 1, 0},
    {"DELETE", "/v1/roles/{id}", v1_role_delete, 1, 0},
    {"POST", "/v1/grants", v1_grant_post, 1, 0},
    {"GET", "/v1/grants", v1_grant_list, 0, 0},
    {"DELETE", "/v1/grants/{id}", v1_grant_delete, 1, 0},
    {"POST", "/v1/explain", v1_explain, 0, 0},
    {"GET", "/v1/audit", v1_audit_get, 0, 0},
    {"GET", "/v1/audit/verify", v1_audit_verify, 0, 0},
    {"POST", "/v1/asof/check", v1_asof_check, 0, 0},
    {"POST", "/v1/asof/readable", v1_asof_readable, 0, 0},
    {"POST", "/v1/asof/readers", v1_asof_readers, 0, 0},
    {"PUT", "/v1/audit/collections/{c}", v1_audit_collection, 1, 0},
    {"PUT", "/v1/relationships/schema", v1_rebac_schema_put, 1, 0},
    {"GET", "/v1/relationships/schema", v1_rebac_schema_get, 0, 0},
    {"POST", "/v1/relationships", v1_rebac_write, 1, 0},
    {"POST", "/v1/relationships/check", v1_rebac_check, 0, 0},
    {"POST", "/v1/relationships/lookup-resources", v1_rebac_lookup_resources, 0, 0},
    {"POST", "/v1/relationships/lookup-subjects", v1_rebac_lookup_subjects, 0, 0},
    {"POST", "/v1/relationships/expand", v1_rebac_expand, 0, 0},
    {"GET", "/v1/model", v1_model_get, 0, 0},
    {"PUT", "/v1/model", v1_model_put, 1, 0},
    {"POST", "/api/auth/is-authorized", v1_is_authorized, 0, 0},
    {"POST", "/api/auth/is-authorized/batch", v1_is_authorized_batch, 0, 0},
    {"GET", "/scim/v2/ServiceProviderConfig", scim_service_provider_config, 0, 0},
    {"GET", "/scim/v2/Schemas", scim_schemas, 0, 0},
    {"GET", "/scim/v2/ResourceTypes", scim_resource_types, 0, 0},
    {"GET", "/scim/v2/Users", scim_users_list, 0, 0},
    {"POST", "/scim/v2/Users", scim_user_create, 1, 0},
    {"GET", "/scim/v2/Users/{id}", scim_user_get, 0, 0},
    {"PUT", "/scim/v2/Users/{id}", scim_user_replace, 1, 0},
    {"PATCH", "/scim/v2/Users/{id}", scim_user_patch, 1, 0},
    {"DELETE", "/scim/v2/Users/{id}", scim_user_delete, 1, 0},
    {"GET", "/scim/v2/Groups", scim_groups_list, 0, 0},
    {"POST", "/scim/v2/Groups", scim_group_create, 1, 0},
    {"GET", "/scim/v2/Groups/{id}", scim_group_get, 0, 0},
    {"PUT", "/scim/v2/Groups/{id}", scim_group_replace, 1, 0},
    {"PATCH", "/scim/v2/Groups/{id}", scim_group_patch, 1, 0},
    {"DELETE", "/scim/v2/Groups/{id}", scim_group_delete, 1, 0},
    {"GET", "/_cat/indices", es_cat_indices, 0, 0},
    {"GET", "/_cat/indices/{index}", es_cat_indices, 0, 0},
    {"POST", "/_bulk", es_bulk, 1, 0},
    {"PUT", "/_bulk", es_bulk, 1, 0},
    {"POST", "/_mget", es_mget, 0, 0},
    {"GET", "/_mget", es_mget, 0, 0},
    {"POST", "/_refresh", es_refresh, 0, 0},
    {"GET", "/_refresh", es_refresh, 0, 0},
    {"GET", "/_search", es_search, 0, 0},
    {"POST", "/_search", es_search, 0, 0},
    {"GET", "/{index}/_search", es_search, 0, 0},
    {"POST", "/{index}/_search", es_search, 0, 0},
    {"GET", "/{index}/_count", es_count, 0, 0},
    {"POST", "/{index}/_count", es_count, 0, 0},
    {"POST", "/{index}/_bulk", es_bulk, 1, 0},
    {"PUT", "/{index}/_bulk", es_bulk, 1, 0},
    {"POST", "/{index}/_mget", es_mget, 0, 0},
    {"GET", "/{index}/_mget", es_mget, 0, 0},
    {"POST", "/{index}/_refresh", es_refresh, 0, 0},
    {"GET", "/{index}/_refresh", es_refresh, 0, 0},
    {"POST", "/{index}/_delete_by_query", es_delete_by_query, 1, 0},
    {"POST", "/{index}/_forcemerge", es_forcemerge, 1, 0},
    {"GET", "/{index}/_mapping", es_mapping_get_route, 0, 0},
    {"PUT", "/{index}/_mapping", es_mapping_put_route, 1, 0},
    {"POST", "/{index}/_mapping", es_mapping_put_route, 1, 0},
    {"POST", "/{index}/_doc", es_doc_put, 1, 0},
    {"PUT", "/{index}/_doc/{id}", es_doc_put, 1, 0},
    {"POST", "/{index}/_doc/{id}", es_doc_put, 1, 0},
    {"GET", "/{index}/_doc/{id}", es_doc_get, 0, 0},
    {"HEAD", "/{index}/_doc/{id}", es_doc_get, 0, 0},
    {"DELETE", "/{index}/_doc/{id}", es_doc_delete, 1, 0},
    {"PUT", "/{index}/_create/{id}", es_doc_create, 1, 0},
    {"POST", "/{index}/_create/{id}", es_doc_create, 1, 0},
    {"POST", "/{index}/_update/{id}", es_doc_update, 1, 0},
    {"PUT", "/{index}", es_index_put, 1, 0},
    {"GET", "/{index}", es_index_get, 0, 0},
    {"HEAD", "/{index}", es_index_get, 0, 0},
    {"DELETE", "/{index}", es_index_delete, 1, 0},
};
#define N_ROUTES (sizeof routes / sizeof *routes)

static const char *route_names[N_ROUTES];

const char *const *http_route_names(size_t *n)
{
    static char names[N_ROUTES][64];
    for (size_t i = 0; i < N_ROUTES; i++) {
        snprintf(names[i], sizeof names[i], "%s %s", routes[i].method, routes[i].tmpl);
        route_names[i] = names[i];
    }
    *n = N_ROUTES;
    return route_names;
}

/* Matches the request's segments against a template; 1 on a match. */
static int match(const route_t *r, const http_req_t *req, int *path_ok)
{
    const char *t = r->tmpl + 1;
    size_t i = 0;
    while (*t) {
        const char *slash = strchr(t, '/');
        size_t n = slash ? (size_t)(slash - t) : strlen(t);
        if (i >= req->nseg)
            return 0;
        if (t[0] == '{') {
            /* Index and collection names never start with '_' (that is how /_search and
             * /{index} differ); a document's id may, as the ids _bulk generates do. */
            if (!req->seg[i][0] || (req->seg[i][0] == '_' && strncmp(t, "{id}", 4)))
                return 0;
        } else if (strlen(req->seg[i]) != n || strncmp(req->seg[i], t, n)) {
            return 0;
        }
        i++;
        t = slash ? slash + 1 : t + n;
    }
    if (i != req->nseg)
        return 0;
    *path_ok = 1;
    return !strcmp(r->method, req->method);
}

static void unauthorized(http_resp_t *resp, const char *why, const char *path)
{
    es_error(resp, 401, "security_exception", "%s for REST request [%.200s]", why, path);
    resp->n_extra = 0;
    snprintf(resp->extra_name[0], sizeof resp->extra_name[0], "WWW-Authenticate");
    snprintf(resp->extra_value[0], sizeof resp->extra_value[0], "ApiKey");
    snprintf(resp->extra_name[1], sizeof resp->extra_name[1], "WWW-Authenticate");
    snprintf(resp->extra_value[1], sizeof resp->extra_value[1],
             "Basic realm=\"security\", charset=\"UTF-8\"");
    resp->n_extra = 2;
}

/* Checks the key and the run-as header; 0, or fills resp (401/403). */
static int authenticate(http_ctx_t *ctx, http_req_t *req, http_resp_t *resp)
{
    char id[KEYS_ID_MAX], secret[KEYS_SECRET_MAX + 1];
    cdn_err_t err = {0, ""};
    http_caller_t *c = &req->caller;
    if (!req->authorization) {
        unauthorized(resp, "missing authentication credentials", req->path);
        return -1;
    }
    if (keys_parse_authorization(req->authorization, id, secret) != 0 ||
        keys_verify(ctx->keys, id, secret, &c->key, &err) != 0) {
        unauthorized(resp, "unable to authenticate with provided credentials", req->path);
        return -1;
    }
    snprintf(c->subject, sizeof c->subject, "%s", c->key.subject);
    snprintf(c->label, sizeof c->label, "key:%s", c->key.id);
    for (size_t i = 0; i < c->key.n_principals && i < KEYS_PRINCIPALS_MAX; i++)
        c->principals[c->n_principals++] = c->key.principals[i];
    if (req->run_as && *req->run_as) {
        if (!c->key.run_as && !c->key.admin) {
            es_error(resp, 403, "security_exception",
                     "action [run_as] is unauthorized for API key [%s]: it may not act for "
                     "[%.128s]",
                     c->key.id, req->run_as);
            return -1;
        }
        if (strlen(req->run_as) >= sizeof c->subject) {
            es_error(resp, 403, "security_exception", "run-as subject is too long");
            return -1;
        }
        snprintf(c->subject, sizeof c->subject, "%s", req->run_as);
        c->run_as = 1;
        c->n_principals = 0; /* the run-as subject's own view, not the key's */
    }
    return 0;
}

static void metrics_route(http_ctx_t *ctx, http_req_t *req, http_resp_t *resp)
{
    cordon_collection_info *list = NULL;
    size_t n = 0;
    if (!req->caller.key.admin || req->caller.run_as) {
        es_error(resp, 403, "security_exception",
                 "metrics need an admin key (not running as someone)");
        return;
    }
    cordon_collection_list(ctx->db, &list, &n, NULL);
    metrics_collection_t *cs = cdn_calloc(n ? n : 1, sizeof *cs);
    for (size_t i = 0; cs && i < n; i++)
        cs[i] = (metrics_collection_t){list[i].name, list[i].chunks,
                                       list[i].vector_bytes + list[i].graph_bytes +
                                           list[i].codes_bytes + list[i].acl_bytes};
    uint64_t file = 0, resident = metrics_resident_bytes(&file);
    cordon_authorizer_stats *as = NULL;
    size_t nas = 0;
    if (cordon_authorizer_stats_get(ctx->db, &as, &nas, NULL) != CORDON_OK)
        nas = 0;
    metrics_gauges_t g = {cordon_revision(ctx->db),
                          resident,
                          file,
                          metrics_cpu_seconds(),
                          (size_t)atomic_load(&ctx->in_flight),
                          cs,
                          cs ? n : 0,
                          as,
                          nas};
    resp->body.len = 0;
    if (metrics_render(ctx->metrics, &g, &resp->body) != 0)
        es_error(resp, 500, "exception", "cannot render metrics");
    else {
        resp->status = 200;
        resp->content_type = "text/plain; version=0.0.4; charset=utf-8";
    }
    cdn_free(cs);
    cordon_free(list);
    cordon_free(as);
}

void http_dispatch(http_ctx_t *ctx, http_req_t *req, http_resp_t *resp)
{
    const route_t *r = NULL;
    int path_ok = 0;
    req->route = "unmatched";
    req->route_idx = N_ROUTES;
    for (size_t i = 0; i < N_ROUTES && !r; i++)
        if (match(&routes[i], req, &path_ok)) {
            r = &routes[i];
            req->route_idx = i;
            req->route = route_names[i] ? route_names[i] : routes[i].tmpl;
        }
    if (atomic_load(&ctx->stopping)) {
        es_error(resp, 503, "node_closed_exception", "the server is shutting down");
        return;
    }
    if (!r || !r->open) {
        if (authenticate(ctx, req, resp))
            return;
    }
    if (!r) {
        if (path_ok)
            es_error(resp, 405, "method_not_allowed",
                     "Incorrect HTTP method for uri [%.200s] and method [%s]", req->path,
                     req->method);
        else
            es_error(resp, 400, "illegal_argument_exception",
                     "no handler found for uri [%.200s] and method [%s]", req->path, req->method);
        return;
    }
    if (r->write && atomic_fetch_add(&ctx->writes, 1) >= (int)ctx->cfg.write_queue) {
        atomic_fetch_sub(&ctx->writes, 1);
        es_error(resp, 429, "es_rejected_execution_exception",
                 "rejected execution: %u write requests are already queued (write_queue)",
                 ctx->cfg.write_queue);
        snprintf(resp->extra_name[0], sizeof resp->extra_name[0], "Retry-After");
        snprintf(resp->extra_value[0], sizeof resp->extra_value[0], "1");
        resp->n_extra = 1;
        return;
    }
    r->fn(ctx, req, resp);
    if (r->write)
        atomic_fetch_sub(&ctx->writes, 1);
    if (!resp->status)
        es_error(resp, 500, "exception", "the handler gave no answer");
}
