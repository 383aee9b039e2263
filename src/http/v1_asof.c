/* v1_asof.c: why a subject may or may not read a chunk, now or in the past, over HTTP:
 * POST /v1/explain (with `revision` or `as_of`: as it stood then), POST /v1/asof/check
 * (could a subject read a chunk then), POST /v1/asof/readable (what could it read then),
 * POST /v1/asof/readers (who could read a chunk over a range), `as_of` and `revision` on
 * /api/auth/is-authorized, and GET /v1/audit/verify (the audit's records
 * replayed against the permission history). Administrators, or subjects holding manage on
 * the model: the answers name ACL principals. Relies on http/v1.h and cordon_asof_*;
 * docs/api/asof.md. */
#include "base/buf.h"
#include "base/date.h"
#include "http/v1.h"

#include <string.h>

int v1_asof_when(json_t *body, uint64_t *rev, uint64_t *time_us, const char **why)
{
    json_t *r = json_object_get(body, "revision"), *t = json_object_get(body, "as_of");
    double ms;
    *rev = *time_us = 0;
    *why = NULL;
    if (r && (!json_is_integer(r) || json_integer_value(r) < 1)) {
        *why = "[revision] must be a revision: a whole number from 1";
        return -1;
    }
    if (r)
        *rev = (uint64_t)json_integer_value(r);
    if (t && json_is_integer(t) && json_integer_value(t) >= 0) {
        *time_us = (uint64_t)json_integer_value(t) * 1000u; /* epoch milliseconds */
    } else if (t && json_is_string(t) &&
               cdn_date_parse(json_string_value(t), strlen(json_string_value(t)), 0, &ms) == 0 &&
               ms >= 0) {
        *time_us = (uint64_t)(ms * 1000.0);
    } else if (t) {
        *why = "[as_of] must be an ISO-8601 time (\"2026-12-02T10:00:00Z\") or epoch "
               "milliseconds";
        return -1;
    }
    if (r && t) {
        *why = "give [revision] or [as_of], not both";
        return -1;
    }
    return 0;
}

static int may_ask(http_ctx_t *ctx, const http_req_t *req, http_resp_t *resp)
{
    if (v1_may_manage_model(ctx, req))
        return 1;
    es_error(resp, 403, "security_exception",
             "questions about the past name ACL principals: they need an admin key or [manage] "
             "on [%s]",
             V1_MODEL_RESOURCE);
    return 0;
}

/* The question of body: collection, subject or principals, when; 0 or resp filled. */
static int question(json_t *body, cordon_asof_request *q, cordon_subject *s, const char **prins,
                    size_t cap, http_resp_t *resp)
{
    const char *why = NULL;
    json_t *p = json_object_get(body, "principals"), *x;
    size_t i;
    memset(q, 0, sizeof *q);
    memset(s, 0, sizeof *s);
    q->collection = json_string_value(json_object_get(body, "collection"));
    q->action = json_string_value(json_object_get(body, "action"));
    s->subject_id = json_string_value(json_object_get(body, "subject"));
    if (!q->collection)
        why = "[collection] (a string) is required";
    else if (!s->subject_id && !json_is_array(p))
        why = "[subject] (a subject id) or [principals] (a list) is required";
    else if (json_object_get(body, "action") && !q->action)
        why = "[action] must be a string";
    json_array_foreach(p, i, x)
    {
        if (!why && (!json_is_string(x) || i >= cap))
            why = i >= cap ? "too many [principals]" : "[principals] must be strings";
        else if (!why)
            prins[s->n_principals++] = json_string_value(x);
    }
    if (!why && v1_asof_when(body, &q->revision, &q->time_us, &why) == 0 && !q->revision &&
        !q->time_us)
        why = "say when: [revision] or [as_of]";
    if (why) {
        es_error(resp, 400, "illegal_argument_exception", "%s", why);
        return -1;
    }
    s->principals = prins;
    q->subject = s;
    return 0;
}

static void asof_error(http_resp_t *resp, int rc, const cordon_error *err)
{
    if (rc == CORDON_ERR_INVALID || rc == CORDON_ERR_LIMIT)
        es_error(resp, 400, "illegal_argument_exception", "%s", err->message);
    else if (rc == CORDON_ERR_NOT_FOUND)
        es_error(resp, 404, "resource_not_found_exception", "%s", err->message);
    else
        es_error_cordon(resp, rc, err, NULL);
}

/* The words of a reason, for the answer's one sentence. */
static const char *message_of(const char *reason)
{
    static const char *const words[][2] = {
        {"READABLE", "allowed to"},
        {"DENIED", "denied to"},
        {"NO_MATCHING_PRINCIPAL", "no principal of the view was allowed"},
        {"NO_ACL", "the chunk allowed nobody"},
        {"CHUNK_NOT_FOUND", "the chunk did not exist"},
        {"NO_PERMISSION", "the subject did not hold the action on the collection"},
        {"SUBJECT_NOT_FOUND", "no such subject"},
    };
    for (size_t i = 0; i < sizeof words / sizeof *words; i++)
        if (!strcmp(words[i][0], reason))
            return words[i][1];
    return reason;
}

/* Answers one as-of check of body (chunk in the field named id_key). */
static void check(http_ctx_t *ctx, json_t *body, const char *id_key, http_resp_t *resp)
{
    cordon_asof_request q;
    cordon_subject s;
    const char *prins[64];
    cordon_asof_answer a;
    cordon_error err = {0};
    if (question(body, &q, &s, prins, 64, resp))
        return;
    if (!(q.chunk_id = json_string_value(json_object_get(body, id_key)))) {
        es_error(resp, 400, "illegal_argument_exception", "[%s] (a chunk id) is required", id_key);
        return;
    }
    int rc = cordon_asof_check(ctx->db, &q, &a, &err);
    if (rc) {
        asof_error(resp, rc, &err);
        return;
    }
    char msg[400];
    snprintf(msg, sizeof msg, "%s after revision %llu: %s%s%s",
             a.readable ? "readable" : "not readable", (unsigned long long)a.revision,
             message_of(a.reason), a.principal[0] ? " " : "", a.principal);
    es_reply(resp, 200,
             json_pack("{s:b, s:s, s:s, s:s, s:I}", "readable", a.readable, "reason", a.reason,
                       "principal", a.principal, "message", msg, "revision",
                       (json_int_t)a.revision));
}

void v1_asof_check(http_ctx_t *ctx, http_req_t *req, http_resp_t *resp)
{
    json_t *body;
    if (!may_ask(ctx, req, resp) || !(body = es_body(ctx, req, resp, 1)))
        return;
    check(ctx, body, "chunk", resp);
    json_decref(body);
}

void v1_explain(http_ctx_t *ctx, http_req_t *req, http_resp_t *resp)
{
    cordon_explanation x;
    cordon_error err = {0};
    json_t *body;
    int rc;
    if (!v1_may_manage_model(ctx, req)) {
        es_error(resp, 403, "security_exception",
                 "explain names a chunk's ACL: it needs an admin key or [manage] on [%s]",
                 V1_MODEL_RESOURCE);
        return;
    }
    if (!(body = es_body(ctx, req, resp, 1)))
        return;
    if (json_object_get(body, "as_of") || json_object_get(body, "revision")) {
        check(ctx, body, "id", resp); /* the reason as it stood then */
        json_decref(body);
        return;
    }
    const char *subject = json_string_value(json_object_get(body, "subject"));
    const char *coll = json_string_value(json_object_get(body, "collection"));
    const char *id = json_string_value(json_object_get(body, "id"));
    if (!subject || !coll || !id)
        es_error(resp, 400, "illegal_argument_exception",
                 "explain needs [subject], [collection] and [id] (strings)");
    else if ((rc = cordon_explain(ctx->db, coll, subject, id, &x, &err)) != 0)
        es_error_cordon(resp, rc, &err, NULL);
    else
        es_reply(resp, 200,
                 json_pack("{s:b, s:s, s:s, s:I}", "readable", x.readable, "principal", x.principal,
                           "message", x.message, "revision", (json_int_t)x.revision));
    json_decref(body);
}

typedef struct ids {
    cdn_buf_t out;
    size_t n, limit;
    int truncated;
} ids_t;

static int add_id(void *ctx, const char *id)
{
    ids_t *x = ctx;
    if (x->n == x->limit) {
        x->truncated = 1;
        return 1;
    }
    int rc = cdn_buf_puts(&x->out, x->n ? "," : "");
    rc = rc ? rc : cdn_buf_json_str(&x->out, id);
    x->n++;
    return rc;
}

typedef struct readers {
    json_t *list;
} readers_t;

static int add_reader(void *ctx, const char *subject, uint64_t first)
{
    readers_t *r = ctx;
    return json_array_append_new(r->list, json_pack("{s:s, s:I}", "subject", subject,
                                                    "first_revision", (json_int_t)first))
               ? CDN_ERR_NOMEM
               : 0;
}

/* One end of a range: {"revision": N} or {"as_of": T}; absent is open. */
static int range_end(json_t *body, const char *key, uint64_t *rev, uint64_t *us, http_resp_t *resp)
{
    json_t *end = json_object_get(body, key);
    const char *why = NULL;
    *rev = *us = 0;
    if (!end)
        return 0;
    if (!json_is_object(end))
        why = "must be {\"revision\": N} or {\"as_of\": TIME}";
    else if (v1_asof_when(end, rev, us, &why) == 0 && !*rev && !*us)
        why = "must be {\"revision\": N} or {\"as_of\": TIME}";
    if (why) {
        es_error(resp, 400, "illegal_argument_exception", "[%s] %s", key, why);
        return -1;
    }
    return 0;
}

void v1_asof_readers(http_ctx_t *ctx, http_req_t *req, http_resp_t *resp)
{
    cordon_asof_range r = {0};
    cordon_error err = {0};
    readers_t rd = {NULL};
    json_t *body;
    size_t n;
    if (!may_ask(ctx, req, resp) || !(body = es_body(ctx, req, resp, 1)))
        return;
    r.collection = json_string_value(json_object_get(body, "collection"));
    r.chunk_id = json_string_value(json_object_get(body, "chunk"));
    r.action = json_string_value(json_object_get(body, "action"));
    if (!r.collection || !r.chunk_id) {
        es_error(resp, 400, "illegal_argument_exception",
                 "[collection] and [chunk] (strings) are required");
    } else if (range_end(body, "from", &r.from_revision, &r.from_us, resp) == 0 &&
               range_end(body, "to", &r.to_revision, &r.to_us, resp) == 0) {
        rd.list = json_array();
        int rc = cordon_asof_readers(ctx->db, &r, add_reader, &rd, &n, &err);
        if (rc) {
            asof_error(resp, rc, &err);
            json_decref(rd.list);
        } else {
            es_reply(resp, 200,
                     json_pack("{s:o, s:I}", "readers", rd.list, "count", (json_int_t)n));
        }
    }
    json_decref(body);
}

#define READABLE_LIMIT_MAX 1000000

void v1_asof_readable(http_ctx_t *ctx, http_req_t *req, http_resp_t *resp)
{
    cordon_asof_request q;
    cordon_subject s;
    const char *prins[64];
    cordon_error err = {0};
    json_t *body, *lim;
    ids_t x = {{0}, 0, 10000, 0};
    size_t n;
    uint64_t rev;
    if (!may_ask(ctx, req, resp) || !(body = es_body(ctx, req, resp, 1)))
        return;
    if (question(body, &q, &s, prins, 64, resp)) {
        json_decref(body);
        return;
    }
    if ((lim = json_object_get(body, "limit")) &&
        (!json_is_integer(lim) || json_integer_value(lim) < 1 ||
         json_integer_value(lim) > READABLE_LIMIT_MAX)) {
        json_decref(body);
        es_error(resp, 400, "illegal_argument_exception", "[limit] must be 1 to %d",
                 READABLE_LIMIT_MAX);
        return;
    }
    if (lim)
        x.limit = (size_t)json_integer_value(lim);
    cdn_buf_init(&x.out, (size_t)1 << 30);
    int rc = cdn_buf_puts(&x.out, "{\"ids\":[");
    if (!rc)
        rc = cordon_asof_readable(ctx->db, &q, add_id, &x, &n, &rev, &err);
    json_decref(body);
    if (rc == 1 && x.truncated) /* stopped at the limit: say so */
        rc = 0;
    if (rc) {
        cdn_buf_free(&x.out);
        asof_error(resp, rc, &err);
        return;
    }
    (void)n;
    if (cdn_buf_printf(&x.out, "],\"count\":%zu,\"truncated\":%s,\"revision\":%llu}", x.n,
                       x.truncated ? "true" : "false", (unsigned long long)rev)) {
        cdn_buf_free(&x.out);
        es_error(resp, 500, "exception", "out of memory");
        return;
    }
    resp->status = 200;
    resp->body = x.out;
}
