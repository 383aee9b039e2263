/* v1.c: the cordon API's retrieval and chunk-permission routes: retrieve with the engine's
 * strategies and completeness, consistency tokens (min_revision), bulk ACL changes and a
 * subject's view (explain is v1_asof.c's). Errors share the Elasticsearch shape of the rest of the
 * server. Relies on http/v1.h, http/es and the public API. */
#include "http/v1.h"
#include "base/clock.h"
#include "base/mem.h"
#include "http/es.h"
#include "http/es_handlers.h"

#include <math.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

int v1_wait_revision(http_ctx_t *ctx, json_t *body, http_resp_t *resp)
{
    json_t *m = json_object_get(body, "min_revision");
    json_int_t want;
    if (!m)
        return 0;
    if (!json_is_integer(m) || (want = json_integer_value(m)) < 0) {
        es_error(resp, 400, "illegal_argument_exception",
                 "[min_revision] must be a non-negative integer: a revision a write returned");
        return -1;
    }
    /* Every acknowledged write has moved the revision before it answers, so waiting helps
     * only for a write still being acknowledged; bounded, then 409. */
    for (unsigned i = 0; i <= V1_MIN_REVISION_WAIT_MS; i++) {
        if (cordon_revision(ctx->db) >= (uint64_t)want)
            return 0;
        struct timespec ts = {0, 1000000};
        nanosleep(&ts, NULL);
    }
    es_error(resp, 409, "revision_not_reached_exception",
             "the data directory is at revision %llu; min_revision %lld was not reached within "
             "%d ms",
             (unsigned long long)cordon_revision(ctx->db), (long long)want,
             V1_MIN_REVISION_WAIT_MS);
    return -1;
}

int v1_subject(const http_req_t *req, json_t *body, http_resp_t *resp, cordon_subject *s, char *buf,
               size_t size)
{
    const char *named = json_string_value(json_object_get(body, "subject"));
    if (json_object_get(body, "subject") && !named) {
        es_error(resp, 400, "illegal_argument_exception", "[subject] must be a subject id");
        return -1;
    }
    if (!named)
        return es_subject(req, resp, s);
    if (!req->caller.key.run_as && !req->caller.key.admin) {
        es_error(resp, 403, "security_exception",
                 "API key [%s] may not act for another subject: [subject] needs a key that may "
                 "run as others",
                 req->caller.key.id);
        return -1;
    }
    if (strlen(named) >= size) {
        es_error(resp, 400, "illegal_argument_exception", "[subject] is too long");
        return -1;
    }
    memcpy(buf, named, strlen(named) + 1);
    memset(s, 0, sizeof *s);
    es_subject_labels(req, s);
    s->subject_id = buf;
    return 0;
}

/* ---- Retrieval. ---- */

static const char *const strategies[] = {"auto", "exact", "prefilter", "postfilter", NULL};

static int one_of(const char *v, const char *const *names)
{
    for (int i = 0; names[i]; i++)
        if (!strcmp(v, names[i]))
            return i;
    return -1;
}

/* The options whose type is fixed: a wrong one is a 400 naming it, never a silent default. */
static int options_typed(json_t *body, http_resp_t *resp)
{
    static const char *const strings[] = {"mode", "strategy", NULL};
    static const char *const counts[] = {"max_candidates", "ef", NULL};
    json_t *v, *fusion = json_object_get(body, "fusion");
    for (size_t i = 0; strings[i]; i++)
        if ((v = json_object_get(body, strings[i])) && !json_is_string(v)) {
            es_error(resp, 400, "illegal_argument_exception", "[%s] must be a string", strings[i]);
            return -1;
        }
    for (size_t i = 0; counts[i]; i++)
        if ((v = json_object_get(body, counts[i])) &&
            (!json_is_integer(v) || json_integer_value(v) < 1 ||
             json_integer_value(v) > V1_SEARCH_WIDTH_MAX)) {
            es_error(resp, 400, "illegal_argument_exception", "[%s] must be an integer, 1 to %d",
                     counts[i], V1_SEARCH_WIDTH_MAX);
            return -1;
        }
    if (fusion && !json_is_object(fusion)) {
        es_error(resp, 400, "illegal_argument_exception",
                 "[fusion] must be an object: {\"method\": \"rrf\"} or {\"method\": \"linear\", "
                 "\"weights\": {...}}");
        return -1;
    }
    if ((v = json_object_get(fusion, "method")) && !json_is_string(v)) {
        es_error(resp, 400, "illegal_argument_exception", "[fusion.method] must be a string");
        return -1;
    }
    return 0;
}

int v1_retrieve_read(const es_index_t *ix, json_t *body, const es_qvec_t *qv,
                     const char *const *extra, v1_retrieve_t *r, http_resp_t *resp)
{
    static const char *const keys[] = {"subject",        "query", "k",      "mode",   "strategy",
                                       "max_candidates", "ef",    "filter", "fusion", "fields",
                                       "min_revision",   NULL};
    json_t *query = json_object_get(body, "query"), *v;
    const char *k, *mode = json_string_value(json_object_get(body, "mode"));
    memset(r, 0, sizeof *r);
    json_object_foreach(body, k, v) if (one_of(k, keys) < 0 && (!extra || one_of(k, extra) < 0))
    {
        es_error(resp, 400, "parsing_exception", "unknown field [%s] in a retrieve request", k);
        return -1;
    }
    if (!json_is_object(query)) {
        es_error(resp, 400, "parsing_exception",
                 "[query] is required: {\"text\": \"...\"}, {\"vector\": [...]} or both");
        return -1;
    }
    if (options_typed(body, resp))
        return -1;
    json_t *text = json_object_get(query, "text"), *vec = json_object_get(query, "vector");
    if ((text && !json_is_string(text)) || (vec && !json_is_array(vec))) {
        es_error(resp, 400, "parsing_exception",
                 "[query.text] must be a string and [query.vector] an array of numbers");
        return -1;
    }
    /* Without a vector, an index with an embedding endpoint embeds the text for the vector
     * side: hybrid by default then, as with a vector. */
    int can_embed = text && !vec && ix->embed_url && ix->info.dim;
    if (!mode)
        mode = text && (vec || can_embed) ? "hybrid" : vec ? "vector" : "text";
    static const char *const modes[] = {"vector", "text", "hybrid", NULL};
    int m = one_of(mode, modes);
    if (m < 0) {
        es_error(resp, 400, "illegal_argument_exception", "[mode] must be vector, text or hybrid");
        return -1;
    }
    if ((m != 1 && !vec && !text) || (m != 0 && !text)) {
        es_error(resp, 400, "illegal_argument_exception", "mode [%s] needs query.%s", mode,
                 m != 0 && !text ? "text" : "vector (or query.text, with an embedding endpoint)");
        return -1;
    }
    if (m != 1 && !(r->vector = cdn_malloc((ix->info.dim ? ix->info.dim : 1) * sizeof(float)))) {
        es_error(resp, 503, "circuit_breaking_exception", "out of memory");
        return -1;
    }
    if (m != 1 && !vec) {
        if (es_index_embed(ix, json_string_value(text), r->vector, resp))
            return -1;
        r->q.vector = r->vector;
        r->embedded = 1;
    } else if (m != 1) {
        size_t i;
        json_t *x;
        /* The vector read from the text is the array left empty in the tree. */
        const float *taken = json_array_size(vec) == 0 && qv && qv->v ? qv->v : NULL;
        size_t n = taken ? qv->n : json_array_size(vec);
        if (n != ix->info.dim || !ix->info.dim) {
            es_error(resp, 400, "illegal_argument_exception",
                     "[query.vector] has %zu dimensions; collection [%s] has %u", n, ix->name,
                     ix->info.dim);
            return -1;
        }
        for (i = 0; taken && i < n; i++) {
            if (!isfinite(taken[i])) {
                es_error(resp, 400, "illegal_argument_exception",
                         "[query.vector][%zu] is not a finite number", i);
                return -1;
            }
            r->vector[i] = taken[i];
        }
        if (!taken)
            json_array_foreach(vec, i, x)
            {
                if (!json_is_number(x) || !isfinite(json_number_value(x))) {
                    es_error(resp, 400, "illegal_argument_exception",
                             "[query.vector][%zu] is not a finite number", i);
                    return -1;
                }
                r->vector[i] = (float)json_number_value(x);
            }
        r->q.vector = r->vector;
    }
    if (m != 0)
        r->q.text = json_string_value(text);
    if ((v = json_object_get(body, "k")) != NULL) {
        if (!json_is_integer(v) || json_integer_value(v) < 1 ||
            json_integer_value(v) > CORDON_K_MAX) {
            es_error(resp, 400, "illegal_argument_exception", "[k] must be 1 to %d", CORDON_K_MAX);
            return -1;
        }
        r->q.k = (size_t)json_integer_value(v);
    }
    const char *st = json_string_value(json_object_get(body, "strategy"));
    if (st && one_of(st, strategies) < 0) {
        es_error(resp, 400, "illegal_argument_exception",
                 "[strategy] must be auto, exact, prefilter or postfilter");
        return -1;
    }
    r->q.strategy = st ? (cordon_strategy)one_of(st, strategies) : CORDON_STRATEGY_AUTO;
    if ((v = json_object_get(body, "max_candidates")) != NULL) /* typed above */
        r->q.max_candidates = (size_t)json_integer_value(v);
    if ((v = json_object_get(body, "ef")) != NULL)
        r->q.ef_search = (uint32_t)json_integer_value(v);
    if ((v = json_object_get(body, "filter")) != NULL) {
        if (!json_is_object(v)) {
            es_error(resp, 400, "parsing_exception",
                     "[filter] must be a query object (the Elasticsearch query DSL)");
            return -1;
        }
        r->filter = json_dumps(v, JSON_COMPACT);
        r->q.filter_json = r->filter;
    }
    json_t *fusion = json_object_get(body, "fusion");
    const char *method = json_string_value(json_object_get(fusion, "method"));
    if (method && strcmp(method, "rrf") && strcmp(method, "linear")) {
        es_error(resp, 400, "illegal_argument_exception", "[fusion.method] must be rrf or linear");
        return -1;
    }
    r->q.fusion = method && !strcmp(method, "linear") ? CORDON_FUSION_LINEAR : CORDON_FUSION_RRF;
    json_t *w = json_object_get(fusion, "weights");
    if (json_is_object(w)) {
        r->q.text_weight = (float)json_number_value(json_object_get(w, "text"));
        r->q.vector_weight = (float)json_number_value(json_object_get(w, "vector"));
    }
    r->fields = json_object_get(body, "fields");
    if (r->fields && !json_is_array(r->fields)) {
        es_error(resp, 400, "illegal_argument_exception", "[fields] must be a list of names");
        return -1;
    }
    r->q.with_records = 1;
    r->q.records_without_vectors = 1; /* the answers show text, metadata and scores only */
    return 0;
}

void v1_retrieve_free(v1_retrieve_t *r)
{
    cdn_free(r->vector);
    free(r->filter);
    r->vector = NULL;
    r->filter = NULL;
}

static int wanted(json_t *fields, const char *name)
{
    size_t i;
    json_t *x;
    if (!fields)
        return 1;
    json_array_foreach(fields, i,
                       x) if (json_is_string(x) && !strcmp(json_string_value(x), name)) return 1;
    return 0;
}

/* A hit's fields: the text fields and the metadata's top-level keys, as fields asks. The ACL
 * fields (which principals may read the chunk) only when asked by name: by default a reader is
 * not told who else may read what it reads. */
json_t *v1_hit_fields(const es_index_t *ix, const cordon_record *r, json_t *fields)
{
    json_t *out = json_object(),
           *meta = json_loads(r->metadata_json ? r->metadata_json : "{}", 0, NULL);
    const char *k;
    json_t *v;
    for (size_t i = 0; out && i < r->n_fields; i++)
        if (wanted(fields, r->fields[i].name))
            json_object_set_new(out, r->fields[i].name, json_string(r->fields[i].value));
    json_object_foreach(meta, k, v)
    {
        int acl = !strcmp(k, ix->acl_field) || !strcmp(k, ix->denied_field) ||
                  (ix->tenant_field && !strcmp(k, ix->tenant_field)) ||
                  (ix->labels_field && !strcmp(k, ix->labels_field)) ||
                  (ix->object_field && !strcmp(k, ix->object_field));
        if (k[0] != '_' && wanted(fields, k) && (!acl || fields) && !json_object_get(out, k))
            json_object_set(out, k, v);
    }
    json_decref(meta);
    return out;
}

void v1_retrieve(http_ctx_t *ctx, http_req_t *req, http_resp_t *resp)
{
    char subject[CORDON_ROLE_MAX + 8];
    cordon_subject s;
    cordon_result *res = NULL;
    cordon_error err = {0};
    v1_retrieve_t r;
    es_index_t ix;
    es_qvec_t qv = {0};
    json_t *body;
    int rc;
    memset(&r, 0, sizeof r);
    if (!(body = es_body_retrieve(ctx, req, resp, &qv)))
        return;
    if (v1_wait_revision(ctx, body, resp) ||
        v1_subject(req, body, resp, &s, subject, sizeof subject))
        goto out;
    req->seg[0] = req->seg[2]; /* /v1/collections/{c}/retrieve: the index is the third */
    if (es_index_open_shared(ctx, req, resp, &ix))
        goto out;
    if (v1_retrieve_read(&ix, body, &qv, NULL, &r, resp) == 0) {
        if ((rc = cordon_search(ctx->db, ix.name, &s, &r.q, &res, &err)) != 0) {
            if (rc == CORDON_ERR_NOT_FOUND)
                es_error_index(resp, ix.name);
            else
                es_error_cordon(resp, rc, &err, "illegal_argument_exception");
        } else {
            json_t *hits = json_array();
            for (size_t i = 0; i < res->n_hits; i++) {
                cordon_hit *h = &res->hits[i];
                json_array_append_new(
                    hits,
                    json_pack("{s:s, s:f, s:o}", "id", h->id, "score", (double)h->score, "fields",
                              h->record ? v1_hit_fields(&ix, h->record, r.fields) : json_object()));
            }
            metrics_search(ctx->metrics, res->plan, res->readable, 0);
            json_t *j = json_pack(
                "{s:o, s:b, s:s, s:I, s:I, s:I, s:f}", "hits", hits, "complete", res->complete,
                "plan", res->plan, "readable", (json_int_t)res->readable, "candidates",
                (json_int_t)res->candidates, "revision", (json_int_t)res->revision, "took_ms",
                (double)(cdn_clock_ns() - req->t0_ns) / 1e6);
            json_t *audit = v1_audit_meta(ctx, res->audit_seq);
            es_authorizer_set(j, &res->authorizer);
            if (j && audit)
                json_object_set_new(j, "audit", audit);
            else
                json_decref(audit);
            es_reply(resp, 200, j);
        }
    }
    es_index_release(&ix);
out:
    cordon_result_free(res);
    v1_retrieve_free(&r);
    es_qvec_free(&qv);
    json_decref(body);
}

/* ---- ACLs, explain, views. ---- */

static int strings(json_t *arr, const char ***out, size_t *n, const char *what, http_resp_t *resp)
{
    size_t i;
    json_t *x;
    *n = 0;
    *out = NULL;
    if (!arr)
        return 0;
    if (!json_is_array(arr) || !(*out = cdn_calloc(json_array_size(arr) + 1, sizeof **out))) {
        es_error(resp, 400, "illegal_argument_exception", "[%s] must be a list of principals",
                 what);
        return -1;
    }
    json_array_foreach(arr, i, x)
    {
        if (!json_is_string(x)) {
            es_error(resp, 400, "illegal_argument_exception", "[%s][%zu] must be a string", what,
                     i);
            return -1;
        }
        (*out)[(*n)++] = json_string_value(x);
    }
    return 0;
}

void v1_acl_put(http_ctx_t *ctx, http_req_t *req, http_resp_t *resp)
{
    const char *coll = req->seg[2];
    cordon_acl_change *ch = NULL;
    cordon_error err = {0};
    json_t *body, *changes, *c;
    uint64_t rev = 0;
    size_t i, n = 0;
    int rc;
    if (!(body = es_body(ctx, req, resp, 1)))
        return;
    req->seg[0] = req->seg[2];
    es_index_t ix;
    if (es_index_open(ctx, req, resp, &ix))
        goto out;
    es_index_release(&ix);
    if (!es_allowed(ctx, req, coll, "write")) {
        es_error(resp, 403, "security_exception", "changing ACLs of [%s] needs [write] on it",
                 coll);
        goto out;
    }
    changes = json_object_get(body, "changes");
    if (json_object_size(body) > (changes != NULL)) {
        es_error(resp, 400, "parsing_exception",
                 "unknown field in an ACL request: give only {\"changes\": [...]}");
        goto out;
    }
    if (!json_is_array(changes) || json_array_size(changes) > CORDON_BATCH_MAX) {
        es_error(resp, 400, "illegal_argument_exception",
                 "[changes] must be a list of {id, allowed, denied}, at most %d", CORDON_BATCH_MAX);
        goto out;
    }
    if (!(ch = cdn_calloc(json_array_size(changes) + 1, sizeof *ch))) {
        es_error(resp, 503, "circuit_breaking_exception", "out of memory");
        goto out;
    }
    json_array_foreach(changes, i, c)
    {
        const char **a = NULL, **d = NULL, **l = NULL;
        size_t na = 0, nd = 0, nl = 0;
        const char *k;
        json_t *v;
        json_object_foreach(c, k, v) if (strcmp(k, "id") && strcmp(k, "allowed") &&
                                         strcmp(k, "denied") && strcmp(k, "labels"))
        {
            /* a misspelt "denied" would otherwise deny nothing */
            es_error(resp, 400, "parsing_exception",
                     "unknown field [%s] in [changes][%zu]: give id, allowed, denied and labels", k,
                     i);
            goto out;
        }
        (void)v;
        ch[n].id = json_string_value(json_object_get(c, "id"));
        int bad = strings(json_object_get(c, "allowed"), &a, &na, "allowed", resp) ||
                  strings(json_object_get(c, "denied"), &d, &nd, "denied", resp) ||
                  strings(json_object_get(c, "labels"), &l, &nl, "labels", resp);
        ch[n] = (cordon_acl_change){ch[n].id, a, na, d, nd, l, nl};
        n++;
        if (bad)
            goto out;
        if (!ch[n - 1].id) {
            es_error(resp, 400, "illegal_argument_exception", "[changes][%zu] needs an [id]", i);
            goto out;
        }
    }
    if ((rc = cordon_set_acl(ctx->db, coll, ch, n, &rev, &err)) != 0)
        es_error_cordon(resp, rc, &err, NULL);
    else
        es_reply(resp, 200,
                 json_pack("{s:b, s:I, s:I}", "acknowledged", 1, "changed", (json_int_t)n,
                           "revision", (json_int_t)rev));
out:
    for (size_t j = 0; ch && j < n; j++) {
        cdn_free((void *)ch[j].allowed);
        cdn_free((void *)ch[j].denied);
        cdn_free((void *)ch[j].labels);
    }
    cdn_free(ch);
    json_decref(body);
}

/* Administrators, or subjects holding manage on the model, ask about others. */
int v1_may_manage_model(http_ctx_t *ctx, const http_req_t *req)
{
    cordon_authz_request q = {0};
    cordon_decision d;
    if (req->caller.key.admin && !req->caller.run_as)
        return 1;
    if (!req->caller.subject[0])
        return 0;
    q.subject = req->caller.subject;
    q.resource = V1_MODEL_RESOURCE;
    q.action = "manage";
    q.no_audit = 1; /* a gate of this request, not an answer */
    return cordon_is_authorized(ctx->db, &q, &d, NULL) == CORDON_OK && d.authorized;
}

void v1_view(http_ctx_t *ctx, http_req_t *req, http_resp_t *resp)
{
    const char *subject = req->seg[2];
    char **p = NULL;
    size_t n = 0;
    uint64_t rev = 0;
    cordon_error err = {0};
    int rc;
    if (strcmp(subject, req->caller.subject) && !v1_may_manage_model(ctx, req)) {
        es_error(resp, 403, "security_exception",
                 "another subject's view needs an admin key or [manage] on [%s]",
                 V1_MODEL_RESOURCE);
        return;
    }
    if ((rc = cordon_view(ctx->db, subject, &p, &n, &rev, &err)) != 0) {
        es_error_cordon(resp, rc, &err, NULL);
        return;
    }
    json_t *arr = json_array();
    for (size_t i = 0; i < n; i++)
        json_array_append_new(arr, json_string(p[i]));
    cordon_strings_free(p, n);
    es_reply(resp, 200,
             json_pack("{s:s, s:o, s:I}", "subject", subject, "principals", arr, "revision",
                       (json_int_t)rev));
}
