/* asof.c: the public API's questions about the past (cordon_asof_*), is-authorized as of a
 * revision, and the replay of the audit's records against the permission history.
 * Relies on query/asof and, for the replay, the audit's records (cordon_audit_query). */
#include "api/api.h"
#include "base/mem.h"

#include <jansson.h>
#include <string.h>

static void answer_out(const asof_answer_t *a, uint64_t rev, cordon_asof_answer *out)
{
    memset(out, 0, sizeof *out);
    out->readable = a->readable;
    snprintf(out->reason, sizeof out->reason, "%s", asof_reason_name(a->reason));
    snprintf(out->principal, sizeof out->principal, "%s", a->principal);
    out->revision = rev;
}

/* The request's checks and revision; who is filled from q->subject. */
static int request(cordon_t *db, const cordon_asof_request *q, int need_id, engine_asker_t *who,
                   uint64_t *rev, cdn_err_t *e)
{
    int rc;
    if (!q->collection || (need_id && !q->chunk_id))
        return cdn_err_set(e, CDN_ERR_INVALID, "an as-of question names a collection%s",
                           need_id ? " and a chunk" : "");
    if ((rc = api_check_subject(q->subject, e)) != 0)
        return rc;
    if (!q->revision && !q->time_us)
        return cdn_err_set(e, CDN_ERR_INVALID,
                           "say when: a revision, or a time in microseconds since 1970");
    *who =
        (engine_asker_t){q->subject->subject_id, q->subject->principals, q->subject->n_principals};
    return asof_revision(db->asof, q->revision, q->time_us, rev, e);
}

int cordon_asof_check(cordon_t *db, const cordon_asof_request *q, cordon_asof_answer *out,
                      cordon_error *err)
{
    cdn_err_t e = {0, ""};
    engine_asker_t who;
    asof_answer_t a;
    uint64_t rev;
    int rc;
    if (!db || !q || !out)
        return api_ret(cdn_err_set(&e, CDN_ERR_INVALID, "cordon_asof_check needs a question"), &e,
                       err);
    if ((rc = request(db, q, 1, &who, &rev, &e)) != 0 ||
        (rc = asof_check(db->asof, q->collection, &who, q->action ? q->action : "read", q->chunk_id,
                         rev, q->time_us, &a, &e)) != 0)
        return api_ret(rc, &e, err);
    answer_out(&a, rev, out);
    return api_ret(CDN_OK, &e, err);
}

int cordon_asof_readable(cordon_t *db, const cordon_asof_request *q, cordon_asof_id_fn fn,
                         void *ctx, size_t *n, uint64_t *revision, cordon_error *err)
{
    cdn_err_t e = {0, ""};
    engine_asker_t who;
    uint64_t rev;
    size_t count = 0;
    int rc;
    if (!db || !q || !fn)
        return api_ret(cdn_err_set(&e, CDN_ERR_INVALID,
                                   "cordon_asof_readable needs a question "
                                   "and a callback"),
                       &e, err);
    int asked = (rc = request(db, q, 0, &who, &rev, &e)) == CDN_OK;
    if (asked)
        rc = asof_readable(db->asof, q->collection, &who, q->action ? q->action : "read", rev,
                           q->time_us, fn, ctx, &count, &e);
    if (n)
        *n = count;
    if (revision)
        *revision = asked ? rev : 0;
    return api_ret(rc, &e, err);
}

int cordon_asof_readers(cordon_t *db, const cordon_asof_range *r, cordon_asof_reader_fn fn,
                        void *ctx, size_t *n, cordon_error *err)
{
    cdn_err_t e = {0, ""};
    uint64_t from = 0, to = 0;
    size_t count = 0;
    int rc = CDN_OK;
    if (!db || !r || !r->collection || !r->chunk_id || !fn)
        return api_ret(
            cdn_err_set(&e, CDN_ERR_INVALID,
                        "cordon_asof_readers needs a collection, a chunk and a callback"),
            &e, err);
    if (r->from_revision || r->from_us)
        rc = asof_revision(db->asof, r->from_revision, r->from_us, &from, &e);
    else
        rc = asof_start(db->asof, &from, &e);
    if (rc == CDN_OK && (r->to_revision || r->to_us))
        rc = asof_revision(db->asof, r->to_revision, r->to_us, &to, &e);
    else if (rc == CDN_OK)
        to = cordon_revision(db);
    if (rc == CDN_OK)
        rc = asof_readers(db->asof, r->collection, r->chunk_id, r->action ? r->action : "read",
                          from, to, fn, ctx, &count, &e);
    if (n)
        *n = count;
    return api_ret(rc, &e, err);
}

int cordon_history_prune(cordon_t *db, uint64_t before_revision, uint64_t before_us,
                         uint64_t *start, uint64_t *removed, cordon_error *err)
{
    cdn_err_t e = {0, ""};
    uint64_t horizon, gone = 0;
    int rc;
    if (!db || (!before_revision && !before_us))
        return api_ret(cdn_err_set(&e, CDN_ERR_INVALID,
                                   "say from when the history is kept: a revision, or a time in "
                                   "microseconds since 1970"),
                       &e, err);
    if ((rc = asof_revision(db->asof, before_revision, before_us, &horizon, &e)) == CDN_OK)
        rc = asof_prune(db->asof, horizon, &gone, &e);
    if (rc == CDN_OK && start)
        *start = horizon;
    if (removed)
        *removed = gone;
    return api_ret(rc, &e, err);
}

int api_asof_decide(cordon_t *db, const authz_request_t *req, const char *const *resources,
                    size_t n, authz_decision_t *out, uint64_t *rev, cdn_err_t *e,
                    uint64_t as_of_revision, uint64_t as_of_us)
{
    int rc = asof_revision(db->asof, as_of_revision, as_of_us, rev, e);
    for (size_t i = 0; rc == CDN_OK && i < n; i++) {
        authz_request_t r = *req;
        if (resources)
            r.resource = resources[i];
        rc = asof_is_authorized(db->asof, &r, *rev, as_of_us, &out[i], e);
    }
    return rc;
}

/* ---- The replay of the audit. ---- */

typedef struct replay {
    cordon_t *db;
    cordon_audit_bad_fn fn;
    void *ctx;
    cordon_audit_replay *out;
    cdn_err_t *e;
    int failed;
} replay_t;

static int replay_record(void *ctx, uint64_t seq, const char *json, size_t len)
{
    replay_t *r = ctx;
    json_t *j = json_loadb(json, len, 0, NULL), *hit, *p;
    const char *kind = json_string_value(json_object_get(j, "kind"));
    const char *coll = json_string_value(json_object_get(j, "collection"));
    const char *subject = json_string_value(json_object_get(j, "subject"));
    const char **prins = NULL;
    size_t i, np = 0;
    int rc = 0;
    if (!j || !kind) {
        json_decref(j);
        r->failed = cdn_err_set(r->e, CDN_ERR_CORRUPT, "audit record %llu does not decode",
                                (unsigned long long)seq);
        return 1;
    }
    if (!strcmp(kind, "authorize") || !coll) {
        json_decref(j);
        return 0;
    }
    r->out->records++;
    json_t *list = json_object_get(j, "principals");
    if (!subject && (prins = cdn_calloc(json_array_size(list) + 1, sizeof *prins)))
        json_array_foreach(list, i, p) prins[np++] = json_string_value(p);
    engine_asker_t who = {subject, prins, np};
    uint64_t rev = (uint64_t)json_integer_value(json_object_get(j, "revision"));
    uint64_t at = (uint64_t)json_integer_value(json_object_get(j, "time_us"));
    const char *action = strcmp(kind, "get") ? "search" : "read";
    json_array_foreach(json_object_get(j, "hits"), i, hit)
    {
        const char *id = json_string_value(json_object_get(hit, "id"));
        asof_answer_t a;
        cdn_err_t qe = {0, ""};
        r->out->hits++;
        int q = id ? asof_check(r->db->asof, coll, &who, action, id, rev, at, &a, &qe)
                   : CDN_ERR_CORRUPT;
        if (q == CDN_ERR_NOT_FOUND) { /* the collection is gone, or before the history */
            r->out->unjudged++;
            continue;
        }
        if (q) {
            r->failed = cdn_err_set(r->e, q, "replaying audit record %llu: %s",
                                    (unsigned long long)seq, qe.msg);
            rc = 1;
            break;
        }
        if (!a.readable) {
            r->out->unreadable++;
            if (r->fn && (rc = r->fn(r->ctx, seq, id)) != 0)
                break;
        }
    }
    cdn_free(prins);
    json_decref(j);
    return rc;
}

int cordon_audit_verify(cordon_t *db, const cordon_audit_filter *f, cordon_audit_bad_fn fn,
                        void *ctx, cordon_audit_replay *out, cordon_error *err)
{
    cdn_err_t e = {0, ""};
    cordon_audit_filter page;
    uint64_t more = 0;
    int rc;
    if (!db || !f || !out)
        return api_ret(cdn_err_set(&e, CDN_ERR_INVALID,
                                   "cordon_audit_verify needs a filter and "
                                   "out"),
                       &e, err);
    memset(out, 0, sizeof *out);
    replay_t r = {db, fn, ctx, out, &e, 0};
    page = *f;
    do {
        page.after_seq = more ? more : f->after_seq;
        audit_filter_t af = {page.subject,    page.collection, page.chunk_id,
                             page.request_id, page.kind,       page.since_us,
                             page.until_us,   page.after_seq,  page.limit};
        rc = audit_query(db->audit, &af, replay_record, &r, &more, &e);
    } while (rc == CDN_OK && more && !r.failed);
    if (r.failed)
        return api_ret(r.failed, &e, err);
    return api_ret(rc, &e, err);
}
