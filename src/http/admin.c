/* admin.c: the server's administrative routes: API keys in Elasticsearch's shapes
 * (/_security/api_key, /_security/_authenticate), the permission model as one document or one
 * operation at a time (/_cordon/model), and health. Keys and the model need an admin key.
 * Relies on http/keys and the public API. */
#include "base/mem.h"
#include "http/es.h"
#include "http/es_handlers.h"
#include "http/keys_wire.h"

#include <stdio.h>
#include <string.h>

static int need_admin(const http_req_t *req, http_resp_t *resp, const char *action)
{
    if (req->caller.key.admin && !req->caller.run_as)
        return 0;
    es_error(resp, 403, "security_exception",
             "action [%s] is unauthorized for API key [%s]: it needs an admin key", action,
             req->caller.key.id);
    return -1;
}

void es_cordon_health(http_ctx_t *ctx, http_req_t *req, http_resp_t *resp)
{
    (void)req;
    cordon_error err = {0};
    json_int_t rev = (json_int_t)cordon_revision(ctx->db);
    if (atomic_load(&ctx->stopping))
        es_reply(resp, 503, json_pack("{s:s, s:I}", "status", "stopping", "revision", rev));
    else if (cordon_check(ctx->db, &err) != CORDON_OK)
        es_reply(resp, 503,
                 json_pack("{s:s, s:s, s:I}", "status", "failed", "reason", err.message, "revision",
                           rev));
    else
        es_reply(resp, 200, json_pack("{s:s, s:I}", "status", "ok", "revision", rev));
}

void es_authenticate(http_ctx_t *ctx, http_req_t *req, http_resp_t *resp)
{
    (void)ctx;
    es_reply(resp, 200,
             json_pack("{s:s, s:[], s:s, s:{s:s, s:s}, s:b, s:b}", "username", req->caller.subject,
                       "roles", "authentication_type", "api_key", "api_key", "id",
                       req->caller.key.id, "name", req->caller.key.name, "admin",
                       req->caller.key.admin, "run_as", req->caller.run_as));
}

void es_key_create(http_ctx_t *ctx, http_req_t *req, http_resp_t *resp)
{
    json_t *body, *c, *pr;
    keys_spec_t spec = {0};
    keys_info_t info;
    char secret[KEYS_SECRET_MAX], both[KEYS_ID_MAX + KEYS_SECRET_MAX + 2];
    char enc[2 * (KEYS_ID_MAX + KEYS_SECRET_MAX) + 8];
    const char *principals[KEYS_PRINCIPALS_MAX];
    cdn_err_t err = {0, ""};
    size_t i;
    if (need_admin(req, resp, "cluster:admin/xpack/security/api_key/create") ||
        !(body = es_body(ctx, req, resp, 1)))
        return;
    c = json_object_get(body, "cordon");
    spec.name = json_string_value(json_object_get(body, "name"));
    spec.subject = json_string_value(json_object_get(c, "subject"));
    spec.admin = json_is_true(json_object_get(c, "admin"));
    spec.run_as = json_is_true(json_object_get(c, "run_as"));
    pr = json_object_get(c, "principals");
    if (json_array_size(pr) > KEYS_PRINCIPALS_MAX) {
        es_error(resp, 400, "illegal_argument_exception", "at most %d principals per key",
                 KEYS_PRINCIPALS_MAX);
        goto done;
    }
    for (i = 0; i < json_array_size(pr); i++)
        if (!(principals[i] = json_string_value(json_array_get(pr, i)))) {
            es_error(resp, 400, "illegal_argument_exception", "cordon.principals must be strings");
            goto done;
        }
    spec.principals = principals;
    spec.n_principals = json_array_size(pr);
    if (!spec.name) {
        es_error(resp, 400, "action_request_validation_exception",
                 "Validation Failed: 1: api key name is required; bind it to a subject with "
                 "{\"cordon\": {\"subject\": \"alice\"}};");
        goto done;
    }
    if (keys_create(ctx->keys, &spec, &info, secret, &err) != 0) {
        es_error(resp, 400, "illegal_argument_exception", "%s", err.msg);
        goto done;
    }
    snprintf(both, sizeof both, "%s:%s", info.id, secret);
    keys_wire_b64_encode((const unsigned char *)both, strlen(both), keys_wire_b64_std, 1, enc);
    es_reply(resp, 200,
             json_pack("{s:s, s:s, s:s, s:s}", "id", info.id, "name", info.name, "api_key", secret,
                       "encoded", enc));
done:
    json_decref(body);
}

void es_key_list(http_ctx_t *ctx, http_req_t *req, http_resp_t *resp)
{
    keys_info_t *list = NULL;
    size_t n = 0;
    json_t *arr;
    if (need_admin(req, resp, "cluster:admin/xpack/security/api_key/get"))
        return;
    if (keys_list(ctx->keys, &list, &n, NULL) != 0) {
        es_error(resp, 500, "exception", "cannot read the keys");
        return;
    }
    arr = json_array();
    for (size_t i = 0; i < n; i++) {
        json_t *pr = json_array();
        for (size_t j = 0; j < list[i].n_principals; j++)
            json_array_append_new(pr, json_string(list[i].principals[j]));
        json_array_append_new(arr, json_pack("{s:s, s:s, s:I, s:b, s:s, s:{s:s, s:o, s:b, s:b}}",
                                             "id", list[i].id, "name", list[i].name, "creation",
                                             (json_int_t)list[i].created_ms, "invalidated", 0,
                                             "username", list[i].subject, "cordon", "subject",
                                             list[i].subject, "principals", pr, "admin",
                                             list[i].admin, "run_as", list[i].run_as));
    }
    cdn_free(list);
    es_reply(resp, 200, json_pack("{s:o}", "api_keys", arr));
}

void es_key_revoke(http_ctx_t *ctx, http_req_t *req, http_resp_t *resp)
{
    json_t *body, *ids, *x, *done_ids, *errs;
    size_t i;
    int nerr = 0;
    if (need_admin(req, resp, "cluster:admin/xpack/security/api_key/invalidate") ||
        !(body = es_body(ctx, req, resp, 1)))
        return;
    ids = json_object_get(body, "ids");
    if (!ids && json_is_string(json_object_get(body, "id")))
        ids = json_pack("[O]", json_object_get(body, "id"));
    else
        json_incref(ids);
    if (!json_is_array(ids)) {
        es_error(resp, 400, "action_request_validation_exception",
                 "Validation Failed: 1: give the ids of the keys to invalidate;");
        json_decref(ids);
        json_decref(body);
        return;
    }
    done_ids = json_array();
    errs = json_array();
    json_array_foreach(ids, i, x)
    {
        cdn_err_t err = {0, ""};
        const char *id = json_string_value(x);
        if (id && keys_revoke(ctx->keys, id, &err) == 0)
            json_array_append_new(done_ids, json_string(id));
        else {
            nerr++;
            json_array_append_new(errs,
                                  json_pack("{s:s, s:s}", "type", "resource_not_found_exception",
                                            "reason", id ? err.msg : "ids must be strings"));
        }
    }
    es_reply(resp, 200,
             json_pack("{s:o, s:[], s:i, s:o}", "invalidated_api_keys", done_ids,
                       "previously_invalidated_api_keys", "error_count", nerr, "error_details",
                       errs));
    json_decref(ids);
    json_decref(body);
}

/* One operation ({"op": ...}) or several ({"ops": [...]}): several are applied in order as one
 * change, all or none, in one revision; the first that fails is named and nothing changes. */
void es_model_post(http_ctx_t *ctx, http_req_t *req, http_resp_t *resp)
{
    json_t *body, *ops;
    uint64_t rev = 0;
    if (need_admin(req, resp, "cordon:model/apply") || !(body = es_body(ctx, req, resp, 1)))
        return;
    ops = json_object_get(body, "ops");
    if (!ops)
        ops = json_pack("[O]", body);
    else
        json_incref(ops);
    if (!json_is_array(ops)) {
        es_error(resp, 400, "illegal_argument_exception", "give {\"op\": ...} or {\"ops\": [...]}");
        goto done;
    }
    cordon_error err = {0};
    char *s = json_dumps(json_array_size(ops) == 1 ? json_array_get(ops, 0) : ops,
                         JSON_COMPACT | JSON_ENCODE_ANY);
    int rc = !s                          ? CORDON_ERR_NOMEM
             : json_array_size(ops) == 1 ? cordon_model_apply(ctx->db, s, &rev, &err)
                                         : cordon_model_apply_batch(ctx->db, s, &rev, &err);
    free(s);
    if (rc) {
        cordon_error named = {rc, ""};
        snprintf(named.message, sizeof named.message, "%s%.240s",
                 json_array_size(ops) == 1 && strncmp(err.message, "ops[", 4) ? "ops[0]: " : "",
                 err.message);
        es_error_cordon(resp, rc, &named, NULL);
        goto done;
    }
    es_reply(resp, 200, json_pack("{s:b, s:I}", "acknowledged", 1, "revision", (json_int_t)rev));
done:
    json_decref(ops);
    json_decref(body);
}
