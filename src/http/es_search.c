/* es_search.c: the Elasticsearch search routes: _search (query DSL, top-level knn, retrievers
 * standard/knn/rrf, from/size, _source, sort and search_after, track_total_hits, min_score),
 * _count and _delete_by_query, all as the caller's subject: hits, totals and counts cover only
 * what it may read. Relies on http/es_handlers and cordon_search. */
#include "base/mem.h"
#include "http/es.h"
#include "http/es_handlers.h"
#include "http/es_paths.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- Reading a search body. ---- */

typedef struct plan {
    cordon_query q;
    char *query_json, *filter_json; /* owned (jansson) */
    float *vector;
    size_t size, from, knn_k;
    int has_query, has_knn, track_total, min_score_set;
    uint64_t total_max;
    double min_score;
    json_t *source_spec; /* borrowed from the body, or source_arg */
    json_t *source_arg;  /* owned: _source, _source_includes, _source_excludes in the URL */
    json_t *sort;        /* borrowed: field sorts, NULL for score order */
    json_t *search_after;
    const es_qvec_t *qv; /* the body's query vector as es_body_search read it, or NULL */
} plan_t;

static void plan_free(plan_t *p)
{
    free(p->query_json);
    free(p->filter_json);
    cdn_free(p->vector);
    json_decref(p->source_arg);
}

static int bad(http_resp_t *resp, const char *type, const char *msg, const char *a)
{
    es_error(resp, 400, type, msg, a);
    return -1;
}

static int filter_of(json_t *f, plan_t *p, http_resp_t *resp)
{
    json_t *wrapped = NULL;
    if (!f)
        return 0;
    if (json_is_array(f))
        wrapped = json_pack("{s:{s:O}}", "bool", "filter", f);
    else if (json_is_object(f))
        wrapped = json_incref(f);
    else
        return bad(resp, "parsing_exception", "[knn] filter must be an object or an array%s", "");
    free(p->filter_json);
    p->filter_json = json_dumps(wrapped, JSON_COMPACT);
    json_decref(wrapped);
    return 0;
}

static int knn_of(const es_index_t *ix, json_t *knn, plan_t *p, http_resp_t *resp)
{
    const char *field = json_string_value(json_object_get(knn, "field"));
    json_t *qv = json_object_get(knn, "query_vector"), *x;
    json_t *k = json_object_get(knn, "k"), *nc = json_object_get(knn, "num_candidates");
    size_t i;
    if (json_is_array(knn)) {
        if (json_array_size(knn) != 1)
            return bad(resp, "illegal_argument_exception",
                       "cordon answers one knn clause per search (an index keeps one vector "
                       "field)%s",
                       "");
        return knn_of(ix, json_array_get(knn, 0), p, resp);
    }
    if (!json_is_object(knn))
        return bad(resp, "parsing_exception", "[knn] must be an object%s", "");
    if (!field)
        return bad(resp, "illegal_argument_exception", "[knn] requires [field]%s", "");
    if (!ix->vector_field || strcmp(field, ix->vector_field))
        return bad(resp, "illegal_argument_exception",
                   "field [%s] is not a dense_vector field of the index", field);
    json_t *builder =
        json_object_get(json_object_get(knn, "query_vector_builder"), "text_embedding");
    const char *model_text = json_string_value(json_object_get(builder, "model_text"));
    if (!json_is_array(qv) && model_text) { /* the index's embedding endpoint builds it */
        if (!(p->vector = cdn_malloc((ix->info.dim ? ix->info.dim : 1) * sizeof(float)))) {
            es_error(resp, 503, "circuit_breaking_exception", "out of memory");
            return -1;
        }
        if (es_index_embed(ix, model_text, p->vector, resp))
            return -1;
        goto have_vector;
    }
    if (!json_is_array(qv))
        return bad(resp, "illegal_argument_exception",
                   "[knn] requires [query_vector], or [query_vector_builder.text_embedding."
                   "model_text] with an index that names an embedding endpoint%s",
                   "");
    /* The body's one query_vector, read from the text, is the array left empty here. */
    const float *taken = json_array_size(qv) == 0 && p->qv && p->qv->v ? p->qv->v : NULL;
    size_t n = taken ? p->qv->n : json_array_size(qv);
    if (n != ix->info.dim) {
        char msg[120];
        snprintf(msg, sizeof msg, "the query vector has %zu dimensions, but [%s] has %u", n, field,
                 ix->info.dim);
        return bad(resp, "illegal_argument_exception", "%s", msg);
    }
    if (!(p->vector = cdn_malloc(ix->info.dim * sizeof(float)))) {
        es_error(resp, 503, "circuit_breaking_exception", "out of memory");
        return -1;
    }
    if (taken) /* each the (float) of a number jansson takes, as the loop below makes it */
        memcpy(p->vector, taken, n * sizeof *taken);
    else
        json_array_foreach(qv, i, x)
        {
            if (!json_is_number(x) || !isfinite(json_number_value(x)))
                return bad(resp, "illegal_argument_exception",
                           "[knn] query_vector holds a value that is not a finite number%s", "");
            p->vector[i] = (float)json_number_value(x);
        }
have_vector:
    p->knn_k = k ? (size_t)json_integer_value(k) : p->size;
    if ((k && (!json_is_integer(k) || json_integer_value(k) < 1)) || p->knn_k > CORDON_K_MAX)
        return bad(resp, "illegal_argument_exception", "[k] must be between 1 and 10000%s", "");
    if (nc && (!json_is_integer(nc) || json_integer_value(nc) < (json_int_t)p->knn_k ||
               json_integer_value(nc) > 10000))
        return bad(resp, "illegal_argument_exception",
                   "[num_candidates] must be at least [k] and at most 10000%s", "");
    p->has_knn = 1;
    return filter_of(json_object_get(knn, "filter"), p, resp);
}

static int query_of(json_t *q, plan_t *p, http_resp_t *resp)
{
    if (!json_is_object(q))
        return bad(resp, "parsing_exception", "[query] must be an object%s", "");
    free(p->query_json);
    p->query_json = json_dumps(q, JSON_COMPACT);
    p->has_query = 1;
    return 0;
}

static int retriever_of(const es_index_t *ix, json_t *r, plan_t *p, http_resp_t *resp)
{
    json_t *x;
    if ((x = json_object_get(r, "standard")) != NULL) {
        if (json_object_get(x, "query") && query_of(json_object_get(x, "query"), p, resp))
            return -1;
        return filter_of(json_object_get(x, "filter"), p, resp);
    }
    if ((x = json_object_get(r, "knn")) != NULL)
        return knn_of(ix, x, p, resp);
    if ((x = json_object_get(r, "rrf")) != NULL) {
        json_t *list = json_object_get(x, "retrievers"), *one;
        size_t i;
        if (!json_is_array(list) || json_array_size(list) < 1)
            return bad(resp, "illegal_argument_exception", "[rrf] requires [retrievers], a list%s",
                       "");
        json_array_foreach(list, i, one)
        {
            int kinds =
                (json_object_get(one, "standard") != NULL) + (json_object_get(one, "knn") != NULL);
            if (kinds != 1 || (json_object_get(one, "standard") && p->has_query) ||
                (json_object_get(one, "knn") && p->has_knn))
                return bad(resp, "illegal_argument_exception",
                           "cordon fuses one standard and one knn retriever in [rrf]%s", "");
            if (retriever_of(ix, one, p, resp))
                return -1;
        }
        p->q.fusion = CORDON_FUSION_RRF;
        if (json_is_integer(json_object_get(x, "rank_window_size")))
            p->q.rank_window_size =
                (size_t)json_integer_value(json_object_get(x, "rank_window_size"));
        if (json_is_integer(json_object_get(x, "rank_constant")))
            p->q.rank_constant = (uint32_t)json_integer_value(json_object_get(x, "rank_constant"));
        return 0;
    }
    return bad(resp, "parsing_exception", "unknown retriever: use standard, knn or rrf%s", "");
}

static const char *const known_keys[] = {"query",
                                         "knn",
                                         "retriever",
                                         "size",
                                         "from",
                                         "_source",
                                         "sort",
                                         "search_after",
                                         "track_total_hits",
                                         "min_score",
                                         "timeout",
                                         "version",
                                         "seq_no_primary_term",
                                         "stored_fields",
                                         "track_scores",
                                         "explain",
                                         "highlight",
                                         "profile",
                                         "fields",
                                         "docvalue_fields",
                                         "terminate_after",
                                         "rank",
                                         NULL};

static int sort_is_score(json_t *sort)
{
    json_t *one = json_is_array(sort) ? NULL : sort, *x;
    size_t i;
    if (!sort)
        return 1;
    if (one)
        sort = json_pack("[O]", one);
    else
        json_incref(sort);
    int ok = 1;
    json_array_foreach(sort, i, x)
    {
        const char *name = json_is_string(x) ? json_string_value(x) : NULL;
        if (json_is_object(x) && json_object_size(x) == 1) {
            const char *k;
            json_t *v;
            json_object_foreach(x, k, v) name = k;
        }
        if (!name || (strcmp(name, "_score") && strcmp(name, "_id") && strcmp(name, "_doc") &&
                      strcmp(name, "_shard_doc")))
            ok = 0;
    }
    json_decref(sort);
    return ok;
}

static int plan_read(http_ctx_t *ctx, const es_index_t *ix, json_t *body, const es_qvec_t *qv,
                     const http_req_t *req, plan_t *p, http_resp_t *resp)
{
    const char *k;
    json_t *v;
    memset(p, 0, sizeof *p);
    p->qv = qv;
    p->size = 10;
    p->track_total = 1;
    json_object_foreach(body, k, v)
    {
        size_t i;
        for (i = 0; known_keys[i] && strcmp(known_keys[i], k); i++)
            ;
        if (!strcmp(k, "aggs") || !strcmp(k, "aggregations"))
            return bad(resp, "illegal_argument_exception", "cordon does not compute aggregations%s",
                       "");
        if (!known_keys[i])
            return bad(resp, "parsing_exception", "Unknown key for a START_OBJECT in [%s].", k);
    }
    v = json_object_get(body, "size");
    const char *as = http_arg(req, "size"), *af = http_arg(req, "from");
    if (v && (!json_is_integer(v) || json_integer_value(v) < 0))
        return bad(resp, "illegal_argument_exception", "[size] must be a non-negative integer%s",
                   "");
    if (v)
        p->size = (size_t)json_integer_value(v);
    else if (as)
        p->size = (size_t)strtoul(as, NULL, 10);
    v = json_object_get(body, "from");
    if (v && (!json_is_integer(v) || json_integer_value(v) < 0))
        return bad(resp, "illegal_argument_exception", "[from] must be a non-negative integer%s",
                   "");
    if (v)
        p->from = (size_t)json_integer_value(v);
    else if (af)
        p->from = (size_t)strtoul(af, NULL, 10);
    if (p->size > ctx->cfg.max_result_window || p->from > ctx->cfg.max_result_window - p->size) {
        char msg[300];
        snprintf(msg, sizeof msg,
                 "Result window is too large, from + size must be less than or equal to: [%zu] "
                 "but was [%zu]. See the scroll api for a more efficient way to request large "
                 "data sets.",
                 ctx->cfg.max_result_window, p->from + p->size);
        return bad(resp, "illegal_argument_exception", "%s", msg);
    }
    if ((v = json_object_get(body, "query")) && query_of(v, p, resp))
        return -1;
    if ((v = json_object_get(body, "knn")) && knn_of(ix, v, p, resp))
        return -1;
    if ((v = json_object_get(body, "retriever")) != NULL) {
        if (p->has_query || p->has_knn)
            return bad(resp, "illegal_argument_exception",
                       "cannot specify [retriever] and [query] or [knn]%s", "");
        if (retriever_of(ix, v, p, resp))
            return -1;
    } else if (p->has_query && p->has_knn) {
        p->q.fusion = CORDON_FUSION_LINEAR; /* Elasticsearch sums the two scores */
    }
    /* Elasticsearch counts up to 10,000 matches unless told true (exact) or a number. */
    v = json_object_get(body, "track_total_hits");
    p->total_max = 10000;
    if (json_is_false(v))
        p->track_total = 0;
    else if (json_is_true(v))
        p->total_max = 0;
    else if (json_is_integer(v) && json_integer_value(v) >= 0)
        p->total_max = (uint64_t)json_integer_value(v);
    else if (v)
        return bad(resp, "illegal_argument_exception",
                   "[track_total_hits] must be true, false or a non-negative integer%s", "");
    if ((v = json_object_get(body, "min_score")) != NULL) {
        if (!json_is_number(v))
            return bad(resp, "parsing_exception", "[min_score] must be a number%s", "");
        p->min_score = json_number_value(v);
        p->min_score_set = 1;
    }
    p->source_spec = json_object_get(body, "_source");
    if (!p->source_spec) /* the body's _source wins over the query string's, as in Elasticsearch */
        p->source_spec = p->source_arg = es_source_arg(req);
    p->sort = json_object_get(body, "sort");
    p->search_after = json_object_get(body, "search_after");
    if (!sort_is_score(p->sort))
        return bad(resp, "illegal_argument_exception",
                   "cordon sorts by _score (ties by _id); sorting by a field is not supported%s",
                   "");
    if (p->search_after &&
        (!json_is_array(p->search_after) || json_array_size(p->search_after) < 1 ||
         !json_is_number(json_array_get(p->search_after, 0))))
        return bad(resp, "illegal_argument_exception",
                   "[search_after] takes the [sort] values of the last hit: [score, id]%s", "");
    if (!p->has_query && !p->has_knn)
        p->query_json = strdup("{\"match_all\":{}}");
    p->q.vector = p->vector;
    p->q.query_json = p->query_json;
    p->q.filter_json = p->filter_json;
    p->q.with_records = !json_is_false(p->source_spec); /* records only to show them */
    /* nor the vectors (a row of the vector file a hit) when the _source drops them */
    p->q.records_without_vectors =
        ix->vector_field && !es_source_wants(p->source_spec, ix->vector_field);
    p->q.count_total = p->track_total;
    p->q.total_max = p->total_max;
    p->q.from = p->from;
    p->q.k = p->size ? p->size : 1;
    if (p->has_knn && !p->has_query) { /* the knn's k nearest, then size of them */
        size_t window = p->knn_k < p->from + p->size ? p->knn_k : p->from + p->size;
        p->q.k = window > p->from ? window - p->from : 0;
    } else if (p->has_knn) { /* with a query, the knn's k nearest join the fusion */
        p->q.vector_k = p->knn_k;
    }
    if (p->search_after) {
        json_t *id = json_array_get(p->search_after, 1);
        p->q.after_score = (float)json_number_value(json_array_get(p->search_after, 0));
        p->q.after_id = json_is_string(id) ? json_string_value(id) : "";
    }
    return 0;
}

/* Elasticsearch's _score of a knn hit: (1 + cosine) / 2, (1 + dot) / 2 for dot_product, and
 * 1 / (1 + l2^2), which cordon's l2 score already is. Fused and text scores are left as
 * they are. */
static double es_score(const es_index_t *ix, const plan_t *p, float score)
{
    if (!p->has_knn || p->has_query || ix->info.metric == CORDON_METRIC_L2)
        return score;
    return (1.0 + score) / 2.0;
}

static json_t *hit_json(const es_index_t *ix, const cordon_hit *h, const plan_t *p)
{
    json_t *j = json_pack("{s:s, s:s, s:f}", "_index", ix->name, "_id", h->id, "_score",
                          es_score(ix, p, h->score));
    if (j && h->record) {
        json_t *shown = es_source_shown(ix, h->record, p->source_spec);
        if (shown)
            json_object_set_new(j, "_source", shown);
    }
    if (j && p->sort)
        json_object_set_new(j, "sort", json_pack("[f, s]", (double)h->score, h->id));
    return j;
}

static int run(http_ctx_t *ctx, http_req_t *req, http_resp_t *resp, es_index_t *ix, plan_t *p,
               cordon_result **res)
{
    cordon_subject s;
    cordon_error err = {0};
    int rc;
    *res = NULL;
    if (es_subject(req, resp, &s))
        return -1;
    if (p->has_knn && !p->has_query && p->q.k == 0) {
        /* The page lies past the knn's k: no hits, the total of the k. */
        p->q.k = 1;
        p->q.from = 0;
        p->size = 0;
    }
    rc = cordon_search(ctx->db, ix->name, &s, &p->q, res, &err);
    if (rc) {
        if (rc == CORDON_ERR_NOT_FOUND)
            es_error_index(resp, ix->name);
        else if (rc == CORDON_ERR_INVALID || rc == CORDON_ERR_LIMIT || rc == CORDON_ERR_UNSUPPORTED)
            es_error(resp, 400, p->has_query ? "parsing_exception" : "illegal_argument_exception",
                     "%s", err.message);
        else
            es_error_cordon(resp, rc, &err, NULL);
        return -1;
    }
    metrics_search(ctx->metrics, (*res)->plan, (*res)->readable, 0);
    return 0;
}

void es_search(http_ctx_t *ctx, http_req_t *req, http_resp_t *resp)
{
    es_index_t ix;
    plan_t p;
    cordon_result *res = NULL;
    es_qvec_t qv;
    json_t *body;
    if (req->nseg < 2) {
        es_error(resp, 400, "illegal_argument_exception",
                 "name the index to search: POST /{index}/_search (cordon searches one index "
                 "per request)");
        return;
    }
    if (es_index_open_shared(ctx, req, resp, &ix))
        return;
    if (!(body = es_body_search(ctx, req, resp, &qv))) {
        es_index_release(&ix);
        return;
    }
    if (plan_read(ctx, &ix, body, &qv, req, &p, resp) == 0 &&
        run(ctx, req, resp, &ix, &p, &res) == 0) {
        json_t *hits = json_array();
        double max = 0;
        int any = 0;
        for (size_t i = 0; p.size && i < res->n_hits; i++) {
            double sc = es_score(&ix, &p, res->hits[i].score);
            if (p.min_score_set && (float)sc < (float)p.min_score) /* in float, as Lucene */
                continue;
            if (!any || sc > max)
                max = sc;
            any = 1;
            json_array_append_new(hits, hit_json(&ix, &res->hits[i], &p));
        }
        json_t *h =
            json_pack("{s:o?, s:o}", "max_score", any ? json_real(max) : json_null(), "hits", hits);
        if (h && p.track_total) {
            uint64_t total = res->total;
            if (p.has_knn && !p.has_query && total > p.knn_k)
                total = p.knn_k;
            json_object_set_new(h, "total",
                                json_pack("{s:I, s:s}", "value", (json_int_t)total, "relation",
                                          res->total_capped ? "gte" : "eq"));
        }
        json_t *top = json_pack("{s:i, s:b, s:{s:i, s:i, s:i, s:i}, s:o}", "took",
                                (int)http_took_ms(req), "timed_out", 0, "_shards", "total", 1,
                                "successful", 1, "skipped", 0, "failed", 0, "hits", h);
        es_authorizer_set(top, &res->authorizer);
        es_reply(resp, 200, top);
        es_audit_header(ctx, res->audit_seq, resp);
    }
    cordon_result_free(res);
    plan_free(&p);
    json_decref(body);
    es_qvec_free(&qv);
    es_index_release(&ix);
}

void es_count(http_ctx_t *ctx, http_req_t *req, http_resp_t *resp)
{
    es_index_t ix;
    plan_t p;
    cordon_result *res = NULL;
    json_t *body, *q;
    if (req->nseg < 2) {
        es_error(resp, 400, "illegal_argument_exception", "name the index: /{index}/_count");
        return;
    }
    if (es_index_open_shared(ctx, req, resp, &ix))
        return;
    if (!(body = es_body(ctx, req, resp, 0))) {
        es_index_release(&ix);
        return;
    }
    q = json_object_get(body, "query");
    json_t *only = q ? json_pack("{s:O}", "query", q) : json_object();
    if (plan_read(ctx, &ix, only, NULL, req, &p, resp) == 0) {
        p.q.with_records = 0;
        p.q.count_total = 1;
        p.q.total_max = 0; /* _count is exact */
        p.q.k = 1;
        p.q.from = 0;
        if (json_object_size(body) > (q ? 1u : 0u))
            es_error(resp, 400, "parsing_exception", "request does not support [%s]",
                     json_object_iter_key(json_object_iter(body)));
        else if (run(ctx, req, resp, &ix, &p, &res) == 0) {
            json_t *top =
                json_pack("{s:I, s:{s:i, s:i, s:i, s:i}}", "count", (json_int_t)res->total,
                          "_shards", "total", 1, "successful", 1, "skipped", 0, "failed", 0);
            es_authorizer_set(top, &res->authorizer);
            es_reply(resp, 200, top);
        }
    }
    cordon_result_free(res);
    plan_free(&p);
    json_decref(only);
    json_decref(body);
    es_index_release(&ix);
}

void es_delete_by_query(http_ctx_t *ctx, http_req_t *req, http_resp_t *resp)
{
    es_index_t ix;
    plan_t p;
    json_t *body, *only;
    uint64_t deleted = 0, total = 0;
    int failed = 0;
    if (es_index_open(ctx, req, resp, &ix))
        return;
    if (!es_allowed(ctx, req, ix.name, "write")) {
        es_error(resp, 403, "security_exception",
                 "action [indices:data/write/delete/byquery] is unauthorized for API key [%s] on "
                 "index [%s]",
                 req->caller.key.id, ix.name);
        es_index_release(&ix);
        return;
    }
    if (!(body = es_body(ctx, req, resp, 1))) {
        es_index_release(&ix);
        return;
    }
    if (!json_object_get(body, "query")) {
        es_error(resp, 400, "action_request_validation_exception",
                 "Validation Failed: 1: query is missing;");
        goto done;
    }
    only = json_pack("{s:O}", "query", json_object_get(body, "query"));
    if (plan_read(ctx, &ix, only, NULL, req, &p, resp) == 0) {
        /* Deletes what the caller may read and the query matches, a page at a time. */
        for (int round = 0; round < 1000; round++) {
            cordon_result *res = NULL;
            cordon_error err = {0};
            size_t n = 0;
            p.q.with_records = 0;
            p.q.count_total = round == 0;
            p.q.total_max = 0;
            p.q.k = CORDON_K_MAX;
            p.q.from = 0;
            if (run(ctx, req, resp, &ix, &p, &res))
                break;
            if (round == 0)
                total = res->total;
            const char **ids = cdn_calloc(res->n_hits + 1, sizeof *ids);
            for (size_t i = 0; ids && i < res->n_hits; i++)
                ids[i] = res->hits[i].id;
            if (res->n_hits && ids &&
                cordon_delete(ctx->db, ix.name, ids, res->n_hits, &n, NULL, &err) != 0)
                failed = 1;
            deleted += n;
            size_t got = res->n_hits;
            cdn_free(ids);
            cordon_result_free(res);
            if (failed || got == 0 || n == 0)
                break;
        }
        if (resp->status == 0)
            es_reply(resp, 200,
                     json_pack("{s:i, s:b, s:I, s:I, s:i, s:i, s:i, s:i, s:[]}", "took",
                               (int)http_took_ms(req), "timed_out", 0, "total", (json_int_t)total,
                               "deleted", (json_int_t)deleted, "batches", 1, "version_conflicts", 0,
                               "noops", 0, "failed_count", failed, "failures"));
    }
    plan_free(&p);
    json_decref(only);
done:
    json_decref(body);
    es_index_release(&ix);
}
