/* authz_api.c: is-authorized over HTTP in the request and response shape of established IAM
 * services (POST /api/auth/is-authorized and its batch form): a decision is 200 whatever it
 * says, with the engine's reason code; only a body that is not JSON is 400.
 * Relies on http/v1.h and cordon_is_authorized. */
#include "base/mem.h"
#include "http/es.h"
#include "http/v1.h"

#include <stdio.h>
#include <string.h>

static void fail(http_resp_t *resp, int status, const char *code, const char *msg)
{
    es_reply(resp, status,
             json_pack("{s:b, s:{s:s, s:s}}", "success", 0, "error", "code", code, "message", msg));
}

/* 1 when each of scope's type, id and tenant is absent or a string (a number would otherwise
 * read as no scope at all). */
static int scope_strings(json_t *scope)
{
    static const char *const keys[] = {"type", "id", "tenant"};
    for (size_t i = 0; i < sizeof keys / sizeof *keys; i++) {
        json_t *v = json_object_get(scope, keys[i]);
        if (v && !json_is_string(v))
            return 0;
    }
    return 1;
}

/* One check's JSON answer ("data"); subject may be "" (then SUBJECT_NOT_FOUND). */
static json_t *check_one(http_ctx_t *ctx, const char *subject, json_t *c)
{
    json_t *perm = json_object_get(c, "permission"), *context = json_object_get(c, "context");
    json_t *scope = json_object_get(c, "scope");
    cordon_authz_request q = {0};
    cordon_decision d;
    cordon_error err = {0};
    char *ctx_json = NULL, *res_json = NULL;
    const char *why = NULL;
    q.subject = subject;
    q.resource = json_string_value(json_object_get(perm, "resource"));
    q.action = json_string_value(json_object_get(perm, "action"));
    if (json_is_object(scope)) {
        q.scope_type = json_string_value(json_object_get(scope, "type"));
        q.scope_id = json_string_value(json_object_get(scope, "id"));
        if (!q.scope_type && json_is_string(json_object_get(scope, "tenant"))) {
            q.scope_type = "tenant"; /* {"tenant": "acme"} */
            q.scope_id = json_string_value(json_object_get(scope, "tenant"));
        }
    }
    if (context && !json_is_object(context))
        why = "context must be an object";
    else if (scope && !json_is_object(scope))
        why = "scope must be an object";
    else if (scope && !scope_strings(scope))
        why = "scope's type, id and tenant must be strings";
    if (json_is_object(context)) {
        ctx_json = json_dumps(context, JSON_COMPACT);
        q.context_json = ctx_json;
        json_t *res = json_object_get(context, "resource");
        if (json_is_object(res))
            q.resource_json = res_json = json_dumps(res, JSON_COMPACT);
    }
    int rc = why ? CORDON_ERR_INVALID : cordon_is_authorized(ctx->db, &q, &d, &err);
    json_t *data, *evaluated = context ? json_incref(context) : json_object();
    if (rc == CORDON_OK) {
        json_t *matched = d.resource[0]
                              ? json_pack("{s:s, s:s}", "resource", d.resource, "action", d.action)
                              : json_null();
        if (d.role[0])
            json_object_set_new(matched, "role", json_string(d.role));
        if (d.granted_to[0])
            json_object_set_new(matched, "grantedTo", json_string(d.granted_to));
        json_t *cond = d.condition[0] ? json_loads(d.condition, 0, NULL) : NULL;
        data = json_pack("{s:b, s:s, s:o, s:o, s:o, s:I}", "authorized", d.authorized, "reason",
                         d.reason, "matchedPermission", matched, "matchedCondition",
                         cond ? cond : json_null(), "evaluatedContext", evaluated, "revision",
                         (json_int_t)d.revision);
    } else {
        /* A malformed check is a decision too: denied, with the engine's reason. */
        const char *msg = why ? why : err.message;
        int scope_bad = strstr(msg, "scope") != NULL;
        data = json_pack(
            "{s:b, s:s, s:n, s:n, s:o, s:I, s:s}", "authorized", 0, "reason",
            rc == CORDON_ERR_INVALID ? (scope_bad ? "INVALID_SCOPE" : "INVALID_REQUEST") : "ERROR",
            "matchedPermission", "matchedCondition", "evaluatedContext", evaluated, "revision",
            (json_int_t)cordon_revision(ctx->db), "message", msg);
    }
    free(ctx_json);
    free(res_json);
    return data;
}

/* The subject checks are for: body "subject" (keys that may act for others), the run-as
 * header, or the key's own. */
static int who(const http_req_t *req, json_t *body, http_resp_t *resp, char *buf, size_t size)
{
    cordon_subject s;
    if (v1_subject(req, body, resp, &s, buf, size))
        return -1;
    if (!s.subject_id) {
        fail(resp, 403, "NO_SUBJECT", "this key acts for no subject: checks need one");
        return -1;
    }
    if (s.subject_id != buf)
        snprintf(buf, size, "%s", s.subject_id);
    return 0;
}

static json_t *body_of(const http_req_t *req, http_resp_t *resp)
{
    json_error_t je;
    json_t *j = json_loadb(req->body, req->body_len, JSON_REJECT_DUPLICATES, &je);
    if (!json_is_object(j)) {
        char msg[300];
        snprintf(msg, sizeof msg, "the body is not a JSON object: %s", j ? "" : je.text);
        json_decref(j);
        fail(resp, 400, "INVALID_JSON", msg);
        return NULL;
    }
    return j;
}

void v1_is_authorized(http_ctx_t *ctx, http_req_t *req, http_resp_t *resp)
{
    char subject[CORDON_ROLE_MAX + 8];
    json_t *body = body_of(req, resp);
    if (!body)
        return;
    if (who(req, body, resp, subject, sizeof subject) == 0)
        es_reply(resp, 200,
                 json_pack("{s:b, s:o}", "success", 1, "data", check_one(ctx, subject, body)));
    json_decref(body);
}

void v1_is_authorized_batch(http_ctx_t *ctx, http_req_t *req, http_resp_t *resp)
{
    char subject[CORDON_ROLE_MAX + 8];
    json_t *body = body_of(req, resp), *checks, *c, *out;
    size_t i;
    if (!body)
        return;
    checks = json_object_get(body, "checks");
    if (!json_is_array(checks) || json_array_size(checks) > V1_AUTHZ_BATCH_MAX) {
        char msg[120];
        snprintf(msg, sizeof msg, "give \"checks\": a list of at most %d checks",
                 V1_AUTHZ_BATCH_MAX);
        fail(resp, 400, "INVALID_REQUEST", msg);
    } else if (who(req, body, resp, subject, sizeof subject) == 0) {
        out = json_array();
        json_array_foreach(checks, i, c) json_array_append_new(out, check_one(ctx, subject, c));
        es_reply(resp, 200,
                 json_pack("{s:b, s:{s:o, s:I}}", "success", 1, "data", "results", out, "revision",
                           (json_int_t)cordon_revision(ctx->db)));
    }
    json_decref(body);
}
