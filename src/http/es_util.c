/* es_util.c: Elasticsearch error bodies, replies, bounded body parsing and the permission
 * questions every handler asks. Relies on http/es.h, jansson and getrandom(2). */
#include "base/clock.h"
#include "http/es.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

void es_reply(http_resp_t *resp, int status, json_t *j)
{
    resp->body.len = 0;
    if (j && es_json_write(&resp->body, j) == 0) { /* json_dumps's text, without its copies */
        json_decref(j);
        resp->status = status;
        return;
    }
    char *s = j ? json_dumps(j, JSON_COMPACT | JSON_REAL_PRECISION(9)) : NULL;
    json_decref(j);
    resp->body.len = 0;
    if (!s || cdn_buf_puts(&resp->body, s) != 0) {
        resp->body.len = 0;
        resp->status = 500;
        cdn_buf_puts(&resp->body, "{\"error\":{\"root_cause\":[{\"type\":\"exception\",\"reason\":"
                                  "\"out of memory\"}],\"type\":\"exception\",\"reason\":\"out of "
                                  "memory\"},\"status\":500}");
    } else {
        resp->status = status;
    }
    free(s);
}

static json_t *cause(const char *type, const char *reason)
{
    return json_pack("{s:s, s:s}", "type", type, "reason", reason);
}

void es_error(http_resp_t *resp, int status, const char *type, const char *fmt, ...)
{
    char reason[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(reason, sizeof reason, fmt, ap);
    va_end(ap);
    json_t *err = cause(type, reason);
    if (err)
        json_object_set_new(err, "root_cause", json_pack("[o]", cause(type, reason)));
    es_reply(resp, status, json_pack("{s:o?, s:i}", "error", err, "status", status));
}

void es_error_index(http_resp_t *resp, const char *index)
{
    char reason[300];
    snprintf(reason, sizeof reason, "no such index [%.200s]", index);
    json_t *one = json_pack("{s:s, s:s, s:s, s:s, s:s, s:s}", "type", "index_not_found_exception",
                            "reason", reason, "resource.type", "index_or_alias", "resource.id",
                            index, "index_uuid", "_na_", "index", index);
    json_t *top = json_deep_copy(one);
    if (top)
        json_object_set_new(top, "root_cause", json_pack("[o]", one));
    else
        json_decref(one);
    es_reply(resp, 404, json_pack("{s:o?, s:i}", "error", top, "status", 404));
}

void es_error_cordon(http_resp_t *resp, int rc, const cordon_error *err, const char *invalid_type)
{
    const char *msg = err && err->message[0] ? err->message : cordon_strerror(rc);
    switch (rc) {
    case CORDON_ERR_INVALID:
        es_error(resp, 400, invalid_type ? invalid_type : "illegal_argument_exception", "%s", msg);
        break;
    case CORDON_ERR_LIMIT: es_error(resp, 400, "illegal_argument_exception", "%s", msg); break;
    case CORDON_ERR_UNSUPPORTED: /* asked for what cordon does not do: the request's fault */
        es_error(resp, 400, invalid_type ? invalid_type : "illegal_argument_exception", "%s", msg);
        break;
    case CORDON_ERR_NOT_FOUND:
        es_error(resp, 404, "resource_not_found_exception", "%s", msg);
        break;
    case CORDON_ERR_EXISTS:
        es_error(resp, 400, "resource_already_exists_exception", "%s", msg);
        break;
    case CORDON_ERR_CONFLICT:
        es_error(resp, 409, "version_conflict_engine_exception", "%s", msg);
        break;
    case CORDON_ERR_DENIED: es_error(resp, 403, "security_exception", "%s", msg); break;
    case CORDON_ERR_NOMEM: es_error(resp, 503, "circuit_breaking_exception", "%s", msg); break;
    case CORDON_ERR_UNAVAILABLE: /* the collection's authorizer did not answer: fail closed */
        es_error(resp, 503, "authorizer_unavailable_exception", "%s", msg);
        break;
    default: es_error(resp, 500, "exception", "%s", msg);
    }
}

void es_authorizer_set(json_t *obj, const cordon_authorizer_info *ai)
{
    if (obj && ai->name[0])
        json_object_set_new(obj, "authorizer",
                            json_pack("{s:s, s:b, s:I, s:I}", "name", ai->name, "cached",
                                      ai->cached, "age_ms", (json_int_t)ai->age_ms, "ttl_ms",
                                      (json_int_t)ai->ttl_ms));
}

void es_ack(http_resp_t *resp, const char *index)
{
    json_t *j = json_pack("{s:b}", "acknowledged", 1);
    if (j && index) {
        json_object_set_new(j, "shards_acknowledged", json_true());
        json_object_set_new(j, "index", json_string(index));
    }
    es_reply(resp, 200, j);
}

int es_too_deep(const char *s, size_t len, unsigned max)
{
    unsigned depth = 0;
    int in_str = 0;
    for (size_t i = 0; i < len; i++) {
        char c = s[i];
        if (in_str) {
            if (c == '\\')
                i++;
            else if (c == '"')
                in_str = 0;
        } else if (c == '"') {
            in_str = 1;
        } else if (c == '{' || c == '[') {
            if (++depth > max)
                return 1;
        } else if ((c == '}' || c == ']') && depth) {
            depth--;
        }
    }
    return 0;
}

json_t *es_body(const http_ctx_t *ctx, const http_req_t *req, http_resp_t *resp, int required)
{
    json_error_t je;
    json_t *j;
    size_t i = 0;
    while (i < req->body_len && strchr(" \t\r\n", req->body[i]))
        i++;
    if (i == req->body_len) {
        if (required) {
            es_error(resp, 400, "parse_exception", "request body is required");
            return NULL;
        }
        return json_object();
    }
    if (es_too_deep(req->body, req->body_len, ctx->cfg.json_depth_max)) {
        es_error(resp, 400, "x_content_parse_exception",
                 "the request body nests deeper than %u levels, the limit",
                 ctx->cfg.json_depth_max);
        return NULL;
    }
    j = json_loadb(req->body, req->body_len, JSON_REJECT_DUPLICATES, &je);
    if (!j) {
        es_error(resp, 400, "parsing_exception",
                 "the body is not valid JSON: %s (line %d, column %d)", je.text, je.line,
                 je.column);
        return NULL;
    }
    if (!json_is_object(j)) {
        json_decref(j);
        es_error(resp, 400, "parsing_exception", "the body must be a JSON object");
        return NULL;
    }
    return j;
}

int es_subject(const http_req_t *req, http_resp_t *resp, cordon_subject *out)
{
    memset(out, 0, sizeof *out);
    es_subject_labels(req, out);
    if (!req->caller.subject[0] && req->caller.n_principals) {
        /* Asserted principals: the engine takes them on asserted-principal collections only,
         * and answers any other as missing. */
        out->principals = req->caller.principals;
        out->n_principals = req->caller.n_principals;
        return 0;
    }
    if (!req->caller.subject[0]) {
        es_error(resp, 403, "security_exception",
                 "API key [%s] acts for no subject: send es-security-runas-user with a key "
                 "that may run as others, or use a key bound to a subject",
                 req->caller.key.id);
        return -1;
    }
    out->subject_id = req->caller.subject;
    return 0;
}

void es_subject_labels(const http_req_t *req, cordon_subject *out)
{
    out->caller = req->caller.label[0] ? req->caller.label : NULL;
    out->request_id = req->opaque_id && *req->opaque_id ? req->opaque_id : NULL;
}

void es_audit_header(const http_ctx_t *ctx, uint64_t seq, http_resp_t *resp)
{
    if (!seq || resp->n_extra >= 2)
        return;
    snprintf(resp->extra_name[resp->n_extra], sizeof resp->extra_name[0], "X-Cordon-Audit");
    snprintf(resp->extra_value[resp->n_extra++], sizeof resp->extra_value[0],
             "seq=%llu; durable=%d; flush_ms=%u", (unsigned long long)seq, ctx->audit.durable,
             ctx->audit.flush_ms);
}

int es_allowed(http_ctx_t *ctx, const http_req_t *req, const char *index, const char *action)
{
    char resource[CORDON_RESOURCE_MAX];
    cordon_authz_request q = {0};
    cordon_decision d;
    int writes = !strcmp(action, "write") || !strcmp(action, "manage");
    if (req->caller.key.admin && !req->caller.run_as && writes)
        return 1;
    if (!req->caller.subject[0])
        return 0;
    snprintf(resource, sizeof resource, "collection:%s", index);
    q.subject = req->caller.subject;
    q.resource = resource;
    q.action = action;
    q.no_audit = 1; /* a gate of this request, not an answer: the request records itself */
    return cordon_is_authorized(ctx->db, &q, &d, NULL) == CORDON_OK && d.authorized;
}

void es_new_id(char out[21])
{
    static const char b64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    unsigned char r[20];
    if (getrandom(r, sizeof r, 0) != (ssize_t)sizeof r)
        abort(); /* the kernel's generator does not fail for 20 bytes once booted */
    for (int i = 0; i < 20; i++)
        out[i] = b64[r[i] & 63];
    out[20] = '\0';
}

const char *http_arg(const http_req_t *req, const char *name)
{
    for (size_t i = 0; i < req->nargs; i++)
        if (!strcmp(req->args[i].name, name))
            return req->args[i].value;
    return NULL;
}

int http_arg_flag(const http_req_t *req, const char *name)
{
    const char *v = http_arg(req, name);
    return v && strcmp(v, "false");
}

long http_took_ms(const http_req_t *req)
{
    return req->t0_ns ? (long)((cdn_clock_ns() - req->t0_ns) / 1000000) : 0;
}
