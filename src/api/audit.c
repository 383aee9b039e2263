/* audit.c: the public API's retrieval audit: the events searches, gets and decisions record,
 * and the reads of the log (cordon_audit_*).
 * Relies on query/audit; the recorder is opened with the handle (cordon.c). */
#include "api/api.h"
#include "base/buf.h"
#include "base/mem.h"
#include "base/utf8.h"

#include <string.h>
#define XXH_STATIC_LINKING_ONLY /* XXH64_state_t on the stack */
#include <xxhash.h>

int api_audit_open(cordon_t *db, const char *dir, const cordon_options *opts, cdn_err_t *e)
{
    char path[4096];
    audit_options_t o = {0};
    if (opts) {
        o = (audit_options_t){opts->audit != 0,         opts->audit_sync != 0,
                              opts->audit_flush_ms,     opts->audit_retain_s,
                              opts->audit_retain_bytes, opts->audit_queries != 0};
    }
    if (snprintf(path, sizeof path, "%s/audit", dir) >= (int)sizeof path)
        return cdn_err_set(e, CDN_ERR_INVALID, "the data directory's path is too long");
    return audit_open(path, &o, &db->audit, e);
}

static int valid_text(const char *s)
{
    size_t at;
    return s && cdn_utf8_valid(s, strlen(s), &at);
}

/* The query as the record shows it (with audit_queries): its text parts and its shape. */
static int query_json(const cordon_query *q, size_t k, cdn_buf_t *b)
{
    int rc = cdn_buf_printf(b, "{\"k\":%zu,\"from\":%zu,\"vector\":%s", k, q->from,
                            q->vector ? "true" : "false");
    const char *names[3] = {"text", "query", "filter"};
    const char *vals[3] = {q->text, q->query_json, q->filter_json};
    for (int i = 0; i < 3 && !rc; i++)
        if (valid_text(vals[i]) && !(rc = cdn_buf_printf(b, ",\"%s\":", names[i])))
            rc = cdn_buf_json_str(b, vals[i]);
    if (!rc && q->after_id && !(rc = cdn_buf_puts(b, ",\"after_id\":")))
        rc = cdn_buf_json_str(b, q->after_id);
    return rc ? rc : cdn_buf_puts(b, "}");
}

static uint64_t query_hash(const cordon_query *q, size_t k, uint32_t dim)
{
    XXH64_state_t st;
    uint64_t nums[3] = {k, q->from, dim};
    XXH64_reset(&st, 0x71756572u);
    XXH64_update(&st, nums, sizeof nums);
    if (q->vector)
        XXH64_update(&st, q->vector, (size_t)dim * sizeof *q->vector);
    const char *parts[4] = {q->text, q->query_json, q->filter_json, q->after_id};
    for (int i = 0; i < 4; i++) {
        const char *p = parts[i] ? parts[i] : "";
        XXH64_update(&st, p, strlen(p) + 1);
    }
    return XXH64_digest(&st);
}

static void who(audit_event_t *ev, const cordon_subject *s)
{
    ev->subject = s->subject_id;
    ev->principals = s->subject_id ? NULL : s->principals;
    ev->n_principals = s->subject_id ? 0 : s->n_principals;
    ev->caller = s->caller;
    ev->request_id = s->request_id;
}

int api_audit_search(cordon_t *db, const char *coll, const cordon_subject *s, const cordon_query *q,
                     size_t k, uint32_t dim, cordon_result *o, cdn_err_t *e)
{
    audit_event_t ev = {0};
    audit_hit_t one[16], *hits = one;
    cdn_buf_t qj;
    int rc = CDN_OK;
    if (!audit_wants(db->audit, coll))
        return CDN_OK;
    if (o->n_hits > 16 && !(hits = cdn_malloc(o->n_hits * sizeof *hits)))
        return cdn_err_set(e, CDN_ERR_NOMEM, "out of memory");
    for (size_t i = 0; i < o->n_hits; i++)
        hits[i] = (audit_hit_t){o->hits[i].id, o->hits[i].score};
    who(&ev, s);
    ev.kind = q->audit_kind ? q->audit_kind : "search";
    ev.collection = coll;
    ev.mode = q->vector && (q->text || q->query_json) ? "hybrid" : q->vector ? "vector" : "text";
    ev.plan = o->plan;
    ev.query_hash = query_hash(q, k, dim);
    ev.revision = o->revision;
    ev.readable = o->readable;
    ev.complete = o->complete;
    ev.hits = hits;
    ev.n_hits = o->n_hits;
    ev.first_rank = q->from + 1;
    cdn_buf_init(&qj, 4u << 20);
    if (audit_options(db->audit)->queries && (rc = query_json(q, k, &qj)) != 0)
        rc = cdn_err_set(e, rc, "the query is too large to record");
    ev.query_json = qj.data;
    if (rc == CDN_OK)
        rc = audit_record(db->audit, &ev, &o->audit_seq, e);
    cdn_buf_free(&qj);
    if (hits != one)
        cdn_free(hits);
    return rc;
}

int api_audit_get(cordon_t *db, const char *coll, const cordon_subject *s, const char *id,
                  int found, uint64_t revision, uint64_t *seq, cdn_err_t *e)
{
    audit_event_t ev = {0};
    audit_hit_t hit = {id, 0};
    if (!audit_wants(db->audit, coll))
        return CDN_OK;
    who(&ev, s);
    ev.kind = "get";
    ev.collection = coll;
    ev.revision = revision;
    ev.requested = id;
    ev.found = found;
    ev.hits = found ? &hit : NULL;
    ev.n_hits = found ? 1 : 0;
    ev.first_rank = 1;
    return audit_record(db->audit, &ev, seq, e);
}

int api_audit_decisions(cordon_t *db, const cordon_authz_request *req, const char *const *resources,
                        size_t n, cordon_decision *d, cdn_err_t *e)
{
    audit_event_t ev = {0};
    int one_ok, *ok = &one_ok;
    const char *one_reason, **reasons = &one_reason;
    int rc;
    if (req->no_audit || !audit_wants(db->audit, NULL) || !n)
        return CDN_OK;
    if (n > 1 &&
        (!(ok = cdn_malloc(n * sizeof *ok)) || !(reasons = cdn_malloc(n * sizeof *reasons)))) {
        cdn_free(ok == &one_ok ? NULL : ok);
        return cdn_err_set(e, CDN_ERR_NOMEM, "out of memory");
    }
    for (size_t i = 0; i < n; i++) {
        ok[i] = d[i].authorized;
        reasons[i] = d[i].reason;
    }
    ev.kind = "authorize";
    ev.subject = req->subject;
    ev.caller = req->caller;
    ev.request_id = req->request_id;
    ev.revision = d[0].revision;
    ev.action = req->action;
    ev.resources = resources ? resources : &req->resource;
    ev.authorized = ok;
    ev.reasons = reasons;
    ev.n_decisions = n;
    uint64_t seq = 0;
    rc = audit_record(db->audit, &ev, &seq, e);
    for (size_t i = 0; rc == CDN_OK && i < n; i++)
        d[i].audit_seq = seq;
    if (n > 1) {
        cdn_free(ok);
        cdn_free(reasons);
    }
    return rc;
}

/* ---- Reading the log. ---- */

int cordon_audit_query(cordon_t *db, const cordon_audit_filter *f, cordon_audit_fn fn, void *ctx,
                       uint64_t *more, cordon_error *err)
{
    cdn_err_t e = {0, ""};
    if (!db || !f || !fn)
        return api_ret(cdn_err_set(&e, CDN_ERR_INVALID,
                                   "cordon_audit_query needs a filter and "
                                   "a callback"),
                       &e, err);
    audit_filter_t af = {f->subject,  f->collection, f->chunk_id,  f->request_id, f->kind,
                         f->since_us, f->until_us,   f->after_seq, f->limit};
    return api_ret(audit_query(db->audit, &af, fn, ctx, more, &e), &e, err);
}

int cordon_audit_collection(cordon_t *db, const char *collection, int on, cordon_error *err)
{
    cdn_err_t e = {0, ""};
    coll_t *c;
    int rc;
    if (!db || !collection)
        return api_ret(cdn_err_set(&e, CDN_ERR_INVALID, "cordon_audit_collection needs a name"), &e,
                       err);
    if ((rc = engine_coll_get(db->e, collection, &c, &e)) != 0)
        return api_ret(rc, &e, err);
    coll_unref(c);
    return api_ret(audit_collection_set(db->audit, collection, on, &e), &e, err);
}

int cordon_audit_info_get(cordon_t *db, cordon_audit_info *out, cordon_error *err)
{
    cdn_err_t e = {0, ""};
    audit_stats_t st;
    if (!db || !out)
        return api_ret(cdn_err_set(&e, CDN_ERR_INVALID, "cordon_audit_info_get needs out"), &e,
                       err);
    memset(out, 0, sizeof *out);
    int rc = audit_stats(db->audit, &st, &e);
    if (rc == CDN_OK) {
        const audit_options_t *o = audit_options(db->audit);
        out->recording = o->enabled;
        out->durable = o->sync;
        out->flush_ms = o->flush_ms;
        out->records = st.records;
        out->bytes = st.bytes;
        out->next_seq = st.next_seq;
    }
    return api_ret(rc, &e, err);
}
