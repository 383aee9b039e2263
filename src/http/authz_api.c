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

/* Appends s as a JSON string, or null for NULL. */
static int put_str(cdn_buf_t *b, const char *s)
{
    return s ? cdn_buf_json_str(b, s) : cdn_buf_puts(b, "null");
}

/* Appends one check's answer ("data") to out, written directly rather than built as a tree:
 * a batch answers up to a thousand of them. subject may be "" (then SUBJECT_NOT_FOUND). */
static int check_one(http_ctx_t *ctx, const http_req_t *req, const char *subject, json_t *c,
                     cdn_buf_t *out, uint64_t *seq)
{
    json_t *perm = json_object_get(c, "permission"), *context = json_object_get(c, "context");
    json_t *scope = json_object_get(c, "scope");
    cordon_authz_request q = {0};
    cordon_decision d;
    cordon_error err = {0};
    char *ctx_json = NULL, *res_json = NULL;
    const char *why = NULL;
    q.subject = subject;
    q.caller = req->caller.label[0] ? req->caller.label : NULL;
    q.request_id = req->opaque_id && *req->opaque_id ? req->opaque_id : NULL;
    q.resource = json_string_value(json_object_get(perm, "resource"));
    q.action = json_string_value(json_object_get(perm, "action"));
    const char *when_bad = NULL; /* "as_of" or "revision": the decision as the model stood */
    v1_asof_when(c, &q.as_of_revision, &q.as_of_us, &when_bad);
    if (json_is_object(scope)) {
        q.scope_type = json_string_value(json_object_get(scope, "type"));
        q.scope_id = json_string_value(json_object_get(scope, "id"));
        if (!q.scope_type && json_is_string(json_object_get(scope, "tenant"))) {
            q.scope_type = "tenant"; /* {"tenant": "acme"} */
            q.scope_id = json_string_value(json_object_get(scope, "tenant"));
        }
    }
    if (when_bad)
        why = when_bad;
    else if (context && !json_is_object(context))
        why = "context must be an object";
    else if (scope && !json_is_object(scope))
        why = "scope must be an object";
    else if (scope && !scope_strings(scope))
        why = "scope's type, id and tenant must be strings";
    if (context) /* echoed as evaluatedContext, whatever it is */
        ctx_json = json_dumps(context, JSON_COMPACT | JSON_ENCODE_ANY | JSON_REAL_PRECISION(9));
    if (json_is_object(context)) {
        q.context_json = ctx_json;
        json_t *res = json_object_get(context, "resource");
        if (json_is_object(res))
            q.resource_json = res_json = json_dumps(res, JSON_COMPACT);
    }
    int rc = why || (context && !ctx_json) ? CORDON_ERR_INVALID
                                           : cordon_is_authorized(ctx->db, &q, &d, &err);
    int w;
    *seq = rc == CORDON_OK ? d.audit_seq : 0;
    if (rc == CORDON_OK) {
        w = cdn_buf_printf(out, "{\"authorized\":%s,\"reason\":", d.authorized ? "true" : "false");
        w = w ? w : put_str(out, d.reason);
        w = w ? w : cdn_buf_puts(out, ",\"matchedPermission\":");
        if (!w && d.resource[0]) {
            w = cdn_buf_puts(out, "{\"resource\":");
            w = w ? w : put_str(out, d.resource);
            w = w ? w : cdn_buf_puts(out, ",\"action\":");
            w = w ? w : put_str(out, d.action);
            if (!w && d.role[0])
                w = cdn_buf_puts(out, ",\"role\":") || put_str(out, d.role);
            if (!w && d.granted_to[0])
                w = cdn_buf_puts(out, ",\"grantedTo\":") || put_str(out, d.granted_to);
            w = w ? w : cdn_buf_puts(out, "}");
        } else if (!w) {
            w = cdn_buf_puts(out, "null");
        }
        /* The engine's condition is its own compact JSON: it goes out as it is. */
        w = w ? w : cdn_buf_puts(out, ",\"matchedCondition\":");
        w = w ? w : cdn_buf_puts(out, d.condition[0] ? d.condition : "null");
        if (!w && d.authorizer.name[0]) { /* a delegated permission: who decided, how fresh */
            w = cdn_buf_puts(out, ",\"authorizer\":{\"name\":") || put_str(out, d.authorizer.name);
            w = w ? w
                  : cdn_buf_printf(out, ",\"cached\":%s,\"age_ms\":%llu,\"ttl_ms\":%llu}",
                                   d.authorizer.cached ? "true" : "false",
                                   (unsigned long long)d.authorizer.age_ms,
                                   (unsigned long long)d.authorizer.ttl_ms);
        }
    } else {
        /* A malformed check is a decision too: denied, with the engine's reason. */
        const char *msg = why ? why : err.message;
        int scope_bad = strstr(msg, "scope") != NULL;
        w = cdn_buf_printf(
            out,
            "{\"authorized\":false,\"reason\":\"%s\",\"matchedPermission\":null,"
            "\"matchedCondition\":null,\"message\":",
            rc == CORDON_ERR_INVALID ? (scope_bad ? "INVALID_SCOPE" : "INVALID_REQUEST") : "ERROR");
        w = w ? w : put_str(out, msg);
        d.revision = cordon_revision(ctx->db);
    }
    w = w ? w : cdn_buf_puts(out, ",\"evaluatedContext\":");
    w = w ? w : cdn_buf_puts(out, ctx_json ? ctx_json : "{}");
    w = w ? w : cdn_buf_printf(out, ",\"revision\":%llu}", (unsigned long long)d.revision);
    free(ctx_json);
    free(res_json);
    return w;
}

/* Answers 200 with what out holds, or 500 when it could not be written. */
static void reply_buf(http_resp_t *resp, cdn_buf_t *out, int failed)
{
    if (failed) {
        cdn_buf_free(out);
        es_reply(resp, 500, NULL); /* Elasticsearch's out-of-memory body */
        return;
    }
    cdn_buf_free(&resp->body);
    resp->body = *out; /* the response takes the buffer */
    resp->status = 200;
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
    if (who(req, body, resp, subject, sizeof subject) == 0) {
        cdn_buf_t out;
        uint64_t seq = 0;
        cdn_buf_init(&out, resp->body.max);
        int w = cdn_buf_puts(&out, "{\"success\":true,\"data\":");
        w = w ? w : check_one(ctx, req, subject, body, &out, &seq);
        w = w ? w : cdn_buf_puts(&out, "}");
        reply_buf(resp, &out, w);
        es_audit_header(ctx, seq, resp);
    }
    json_decref(body);
}

void v1_is_authorized_batch(http_ctx_t *ctx, http_req_t *req, http_resp_t *resp)
{
    char subject[CORDON_ROLE_MAX + 8];
    json_t *body = body_of(req, resp), *checks, *c;
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
        cdn_buf_t out;
        uint64_t seq = 0; /* each check is its own record: the header names the last */
        cdn_buf_init(&out, resp->body.max);
        int w = cdn_buf_puts(&out, "{\"success\":true,\"data\":{\"results\":[");
        json_array_foreach(checks, i, c)
        {
            w = w ? w : i ? cdn_buf_puts(&out, ",") : 0;
            w = w ? w : check_one(ctx, req, subject, c, &out, &seq);
        }
        w = w ? w
              : cdn_buf_printf(&out, "],\"revision\":%llu}}",
                               (unsigned long long)cordon_revision(ctx->db));
        reply_buf(resp, &out, w);
        es_audit_header(ctx, seq, resp);
    }
    json_decref(body);
}
