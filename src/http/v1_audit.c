/* v1_audit.c: the retrieval audit over HTTP: GET /v1/audit reads the records (who was shown
 * which chunk, by subject, chunk, request and time), PUT /v1/audit/collections/{c} turns one
 * collection's recording off or on, and the "audit" object retrieval responses carry.
 * Administrators only (an admin key, not running as someone). Relies on http/v1.h and
 * cordon_audit_*; docs/api/audit.md. */
#include "base/buf.h"
#include "base/date.h"
#include "base/mem.h"
#include "http/v1.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define PAGE_DEFAULT 100

json_t *v1_audit_meta(const http_ctx_t *ctx, uint64_t seq)
{
    if (!seq)
        return NULL;
    return json_pack("{s:I, s:b, s:i}", "seq", (json_int_t)seq, "durable", ctx->audit.durable,
                     "flush_ms", (int)ctx->audit.flush_ms);
}

static int admin_only(const http_req_t *req, http_resp_t *resp)
{
    if (req->caller.key.admin && !req->caller.run_as)
        return 0;
    es_error(resp, 403, "security_exception",
             "the audit is for administrators: use an admin key, not running as someone");
    return -1;
}

/* Microseconds of an ISO-8601 date or epoch milliseconds in argument name, or 0 when absent;
 * -1 (resp filled) when malformed. */
static int time_arg(const http_req_t *req, const char *name, uint64_t *us, http_resp_t *resp)
{
    const char *v = http_arg(req, name);
    double ms;
    *us = 0;
    if (!v)
        return 0;
    if (cdn_date_parse(v, strlen(v), CDN_DATE_EPOCH_MS_TEXT, &ms) != 0 || ms < 0) {
        es_error(resp, 400, "illegal_argument_exception",
                 "[%s] must be an ISO-8601 date (2026-12-01T10:00:00Z) or epoch milliseconds "
                 "after 1970",
                 name);
        return -1;
    }
    *us = (uint64_t)(ms * 1000.0);
    return 0;
}

static int num_arg(const http_req_t *req, const char *name, uint64_t max, uint64_t *out,
                   http_resp_t *resp)
{
    const char *v = http_arg(req, name);
    char *end;
    if (!v)
        return 0;
    errno = 0;
    unsigned long long n = strtoull(v, &end, 10);
    if (!*v || *end || errno || v[0] == '-' || n > max) {
        es_error(resp, 400, "illegal_argument_exception",
                 "[%s] must be a whole number from 0 to %llu", name, (unsigned long long)max);
        return -1;
    }
    *out = n;
    return 0;
}

/* The filters both routes take: 0, or -1 with resp filled. */
static int read_filter(const http_req_t *req, cordon_audit_filter *f, http_resp_t *resp)
{
    f->subject = http_arg(req, "subject");
    f->collection = http_arg(req, "collection");
    f->chunk_id = http_arg(req, "chunk");
    f->request_id = http_arg(req, "request_id");
    f->kind = http_arg(req, "kind");
    if (time_arg(req, "since", &f->since_us, resp) || time_arg(req, "until", &f->until_us, resp) ||
        num_arg(req, "after", UINT64_MAX, &f->after_seq, resp))
        return -1;
    if (f->chunk_id && !f->collection) {
        es_error(resp, 400, "illegal_argument_exception",
                 "[chunk] is named within its collection: give [collection] too");
        return -1;
    }
    return 0;
}

typedef struct page {
    cdn_buf_t out;
    int ndjson;
    size_t n;
} page_t;

static int add_record(void *ctx, uint64_t seq, const char *json, size_t len)
{
    page_t *p = ctx;
    (void)seq;
    int rc = p->n && !p->ndjson ? cdn_buf_puts(&p->out, ",") : 0;
    if (!rc)
        rc = cdn_buf_append(&p->out, json, len);
    if (!rc && p->ndjson)
        rc = cdn_buf_puts(&p->out, "\n");
    p->n++;
    return rc;
}

void v1_audit_get(http_ctx_t *ctx, http_req_t *req, http_resp_t *resp)
{
    cordon_audit_filter f = {0};
    cordon_error err = {0};
    uint64_t limit = PAGE_DEFAULT, more = 0;
    const char *fmt = http_arg(req, "format");
    page_t p = {{0}, fmt && !strcmp(fmt, "ndjson"), 0};
    if (admin_only(req, resp))
        return;
    if (fmt && !p.ndjson && strcmp(fmt, "json")) {
        es_error(resp, 400, "illegal_argument_exception", "[format] must be json or ndjson");
        return;
    }
    if (read_filter(req, &f, resp) || num_arg(req, "limit", CORDON_AUDIT_LIMIT_MAX, &limit, resp))
        return;
    f.limit = limit ? (size_t)limit : PAGE_DEFAULT;
    /* A page holds at most CORDON_AUDIT_LIMIT_MAX records of at most a few MB each. */
    cdn_buf_init(&p.out, (size_t)1 << 30);
    int rc = p.ndjson ? 0 : cdn_buf_puts(&p.out, "{\"records\":[");
    if (!rc)
        rc = cordon_audit_query(ctx->db, &f, add_record, &p, &more, &err);
    if (rc == CORDON_ERR_INVALID || rc == CORDON_ERR_LIMIT) {
        cdn_buf_free(&p.out);
        es_error(resp, 400, "illegal_argument_exception", "%s", err.message);
        return;
    }
    if (rc) {
        cdn_buf_free(&p.out);
        es_error_cordon(resp, rc, &err, NULL);
        return;
    }
    if (!p.ndjson &&
        (more ? cdn_buf_printf(&p.out, "],\"next_after\":%llu}", (unsigned long long)more)
              : cdn_buf_puts(&p.out, "],\"next_after\":null}"))) {
        cdn_buf_free(&p.out);
        es_error(resp, 500, "exception", "out of memory");
        return;
    }
    resp->status = 200;
    resp->body = p.out;
    if (p.ndjson)
        resp->content_type = "application/x-ndjson";
    if (p.ndjson && more && resp->n_extra < 2) { /* where the next page starts */
        snprintf(resp->extra_name[resp->n_extra], sizeof resp->extra_name[0], "X-Audit-Next-After");
        snprintf(resp->extra_value[resp->n_extra++], sizeof resp->extra_value[0], "%llu",
                 (unsigned long long)more);
    }
}

void v1_audit_collection(http_ctx_t *ctx, http_req_t *req, http_resp_t *resp)
{
    cordon_error err = {0};
    json_t *body, *rec;
    if (admin_only(req, resp) || !(body = es_body(ctx, req, resp, 1)))
        return;
    rec = json_object_get(body, "record");
    if (!json_is_boolean(rec)) {
        json_decref(body);
        es_error(resp, 400, "illegal_argument_exception",
                 "the body must be {\"record\": true} or {\"record\": false}");
        return;
    }
    int on = json_is_true(rec);
    json_decref(body);
    int rc = cordon_audit_collection(ctx->db, req->seg[3], on, &err);
    if (rc == CORDON_ERR_NOT_FOUND) {
        es_error_index(resp, req->seg[3]);
        return;
    }
    if (rc == CORDON_ERR_CONFLICT) {
        es_error(resp, 409, "illegal_state_exception", "%s", err.message);
        return;
    }
    if (rc) {
        es_error_cordon(resp, rc, &err, NULL);
        return;
    }
    es_reply(resp, 200, json_pack("{s:s, s:b}", "collection", req->seg[3], "record", on));
}

typedef struct bad {
    json_t *list;
    size_t n;
} bad_t;

#define VERIFY_PROBLEMS_MAX 100 /* unreadable hits listed in a verify answer */

static int add_bad(void *ctx, uint64_t seq, const char *chunk_id)
{
    bad_t *b = ctx;
    if (b->n++ < VERIFY_PROBLEMS_MAX)
        json_array_append_new(b->list,
                              json_pack("{s:I, s:s}", "seq", (json_int_t)seq, "chunk", chunk_id));
    return 0;
}

void v1_audit_verify(http_ctx_t *ctx, http_req_t *req, http_resp_t *resp)
{
    cordon_audit_filter f = {0};
    cordon_audit_replay r;
    cordon_error err = {0};
    bad_t b = {NULL, 0};
    if (admin_only(req, resp))
        return;
    if (read_filter(req, &f, resp))
        return;
    b.list = json_array();
    int rc = cordon_audit_verify(ctx->db, &f, add_bad, &b, &r, &err);
    if (rc) {
        json_decref(b.list);
        es_error_cordon(resp, rc, &err, NULL);
        return;
    }
    es_reply(resp, 200,
             json_pack("{s:I, s:I, s:I, s:I, s:o}", "records", (json_int_t)r.records, "hits",
                       (json_int_t)r.hits, "unreadable", (json_int_t)r.unreadable, "unjudged",
                       (json_int_t)r.unjudged, "problems", b.list));
}
