/* bench_load.c: `cordon bench load`: loads a generated corpus into `cordon serve` over _bulk,
 * then runs 1 to 32 concurrent users (bench_load_users.c) searching with knn, match or hybrid
 * through _search, or with the same knn through the cordon API's retrieve, for a fixed time,
 * and checks every hit against the ACLs the benchmark generated; a retrieval of 20 hits beside
 * the same as a prompt context; then _bulk ingest beside the C API's rate, the cost of HTTP
 * itself (GET / and a 1-hit search), and is-authorized on a large catalog
 * (bench_load_authz.c). Relies on bench_load_srv.c (the server), bench_load_bulk.c (the writers
 * and the C API rows), bench_http and jansson. */
#include "bench_load.h"
#include "base/mem.h"
#include "bench_load_int.h"
#include "bench_util.h"

#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define CONTEXT_K 20 /* hits of the retrieval beside the prompt context */

/* ---- Request bodies. ---- */

static const char *source_spec(const char *source)
{
    if (!strcmp(source, "all"))
        return "true";
    if (!strcmp(source, "none"))
        return "false";
    return "{\"excludes\":[\"vector\"]}";
}

static int put_vector(cdn_buf_t *b, const float *v, uint32_t dim)
{
    int rc = cdn_buf_puts(b, "[");
    for (uint32_t i = 0; !rc && i < dim; i++) {
        if (i)
            rc = cdn_buf_puts(b, ",");
        rc = rc ? rc : load_buf_unit(b, v[i]);
    }
    return rc ? rc : cdn_buf_puts(b, "]");
}

/* Body i of a search: target one of LOAD_T_KNN, _MATCH, _HYBRID (through _search), _RETRIEVE
 * (the knn through the cordon API) or _CONTEXT (the same, as a prompt context); k the hits. */
static char *search_body(const load_run_t *r, int target, const float *queries, size_t i, size_t k)
{
    cdn_buf_t b;
    char words[64];
    int rc;
    load_query_words(r->o.seed, i, words, sizeof words);
    cdn_buf_init(&b, 1 << 20);
    const float *v = queries + (i % LOAD_QUERIES) * r->o.dim;
    if (target == LOAD_T_RETRIEVE || target == LOAD_T_CONTEXT) {
        rc = cdn_buf_puts(&b, "{\"query\":{\"vector\":");
        rc = rc ? rc : put_vector(&b, v, r->o.dim);
        rc = rc ? rc
                : cdn_buf_printf(&b, "},\"mode\":\"vector\",\"k\":%zu%s}", k,
                                 target == LOAD_T_CONTEXT ? ",\"budget_tokens\":100000" : "");
        goto done;
    }
    if (target == LOAD_T_MATCH) {
        rc = cdn_buf_printf(&b, "{\"query\":{\"match\":{\"text\":\"%s\"}},", words);
    } else {
        rc = target == LOAD_T_HYBRID
                 ? cdn_buf_printf(&b,
                                  "{\"retriever\":{\"rrf\":{\"retrievers\":[{\"standard\":{"
                                  "\"query\":{\"match\":{\"text\":\"%s\"}}}},{\"knn\":{",
                                  words)
                 : cdn_buf_puts(&b, "{\"knn\":{");
        rc = rc ? rc : cdn_buf_puts(&b, "\"field\":\"vector\",\"query_vector\":");
        rc = rc ? rc : put_vector(&b, v, r->o.dim);
        rc = rc ? rc : cdn_buf_printf(&b, ",\"k\":%zu,\"num_candidates\":%zu}", k, 10 * k);
        if (target == LOAD_T_HYBRID)
            rc = rc ? rc : cdn_buf_puts(&b, "}],\"rank_window_size\":100,\"rank_constant\":60}}");
        rc = rc ? rc : cdn_buf_puts(&b, ",");
    }
    rc = rc ? rc : cdn_buf_printf(&b, "\"size\":%zu,\"_source\":%s}", k, source_spec(r->o.source));
done:
    if (rc) {
        cdn_buf_free(&b);
        return NULL;
    }
    return b.data; /* the buffer's bytes, freed with cdn_free */
}

static char **make_bodies(const load_run_t *r, int target, const float *queries, size_t k)
{
    char **b = calloc(LOAD_QUERIES, sizeof *b);
    for (size_t i = 0; b && i < LOAD_QUERIES; i++)
        if (!(b[i] = search_body(r, target, queries, i, k))) {
            load_bodies_free(b, LOAD_QUERIES);
            return NULL;
        }
    return b;
}

/* ---- Phases. ---- */

static const char *target_name(int t)
{
    return t == LOAD_T_KNN        ? "knn"
           : t == LOAD_T_MATCH    ? "match"
           : t == LOAD_T_HYBRID   ? "hybrid"
           : t == LOAD_T_RETRIEVE ? "retrieve"
                                  : "context";
}

/* One search target's rows: a warm-up, then each user count of users (n of them). */
static int search_phase(load_run_t *r, int t, const float *queries, size_t k, const size_t *users,
                        size_t n, const char *name, int warm)
{
    load_phase_t ph = {.r = r,
                       .target = name,
                       .method = "POST",
                       .check = load_check_hits,
                       .docs = &r->docs,
                       .full = t == LOAD_T_MATCH,
                       .nbodies = LOAD_QUERIES};
    int rc;
    ph.key_full = ph.full || r->o.leak_selftest;
    if (t & (LOAD_T_RETRIEVE | LOAD_T_CONTEXT))
        snprintf(ph.path, sizeof ph.path, "/v1/collections/%s/%s", r->o.index,
                 t == LOAD_T_CONTEXT ? "context" : "retrieve");
    else
        snprintf(ph.path, sizeof ph.path, "/%s/_search", r->o.index);
    if (!(ph.bodies = make_bodies(r, t, queries, k)))
        return -1;
    load_row_t row;
    ph.users = 2; /* warm-up, not reported */
    ph.seconds = r->o.seconds < 2 ? r->o.seconds : 2;
    rc = warm ? load_run_users(&ph, &row) : 0;
    r->warmup_leaks += warm ? row.leaks : 0; /* not a row, but a leak is a leak */
    r->warmup_errors += warm ? row.errors : 0;
    for (size_t i = 0; !rc && i < n; i++) {
        ph.users = users[i];
        ph.seconds = r->o.seconds;
        if ((rc = load_run_users(&ph, &row)) == 0)
            load_row_add(r, &row);
        if (!r->o.json)
            fprintf(stderr, "  %s, %zu users: %.0f requests/s\n", ph.target, ph.users, row.rate);
    }
    load_bodies_free(ph.bodies, ph.nbodies);
    return rc;
}

/* knn, match and hybrid at every user count; with retrieve, the knn and the same through
 * retrieve in turn at each count; then the 20-hit retrieval and the same as a context, with
 * one user, twice each in turn (in turn: the machine's drift falls on both sides). */
static int search_rows(load_run_t *r, const float *queries)
{
    static const size_t one = 1;
    int rc = 0, paired = (r->o.targets & LOAD_T_RETRIEVE) != 0;
    for (int t = LOAD_T_KNN; !rc && t <= LOAD_T_HYBRID; t <<= 1)
        if ((r->o.targets & t) && !(paired && t == LOAD_T_KNN))
            rc = search_phase(r, t, queries, 10, r->o.users, r->o.n_users, target_name(t), 1);
    for (size_t i = 0; !rc && paired && i < r->o.n_users; i++) {
        if (r->o.targets & LOAD_T_KNN)
            rc = search_phase(r, LOAD_T_KNN, queries, 10, &r->o.users[i], 1, "knn", i == 0);
        rc = rc ? rc
                : search_phase(r, LOAD_T_RETRIEVE, queries, 10, &r->o.users[i], 1, "retrieve",
                               i == 0);
    }
    for (int round = 0; !rc && round < 2 && (r->o.targets & LOAD_T_CONTEXT); round++) {
        rc = search_phase(r, LOAD_T_RETRIEVE, queries, CONTEXT_K, &one, 1, "retrieve20", !round);
        rc = rc ? rc
                : search_phase(r, LOAD_T_CONTEXT, queries, CONTEXT_K, &one, 1, "context20", !round);
    }
    return rc;
}

/* GET / and the 1-hit kNN search over one keep-alive connection. */
static int overhead_rows(load_run_t *r, const float *queries)
{
    load_row_t row;
    load_phase_t root = {.r = r,
                         .target = "root",
                         .method = "GET",
                         .path = "/",
                         .users = 1,
                         .seconds = r->o.seconds};
    int rc = load_run_users(&root, &row);
    if (rc)
        return rc;
    load_row_add(r, &row);
    if (!r->search1_index[0])
        return 0;
    load_phase_t one = {.r = r,
                        .target = "search1",
                        .method = "POST",
                        .check = load_check_hits,
                        .docs = &r->bulk,
                        .nbodies = LOAD_QUERIES,
                        .users = 1,
                        .seconds = r->o.seconds};
    snprintf(one.path, sizeof one.path, "/%s/_search", r->search1_index);
    if (!(one.bodies = make_bodies(r, LOAD_T_KNN, queries, 1)))
        return -1;
    if ((rc = load_run_users(&one, &row)) == 0)
        load_row_add(r, &row);
    load_bodies_free(one.bodies, one.nbodies);
    return rc;
}

/* ---- Output. ---- */

static double row_p50(const load_run_t *r, const char *target, const char *via, size_t users)
{
    for (size_t i = 0; i < r->n_rows; i++)
        if (!strcmp(r->rows[i].target, target) && !strcmp(r->rows[i].via, via) &&
            (!users || r->rows[i].users == users))
            return r->rows[i].p50_ms;
    return 0;
}

static double row_rate(const load_run_t *r, const char *target, const char *via, size_t users)
{
    for (size_t i = 0; i < r->n_rows; i++)
        if (!strcmp(r->rows[i].target, target) && !strcmp(r->rows[i].via, via) &&
            (!users || r->rows[i].users == users))
            return r->rows[i].rate;
    return 0;
}

static double row_cpu(const load_run_t *r, const char *target, size_t users)
{
    for (size_t i = 0; i < r->n_rows; i++)
        if (!strcmp(r->rows[i].target, target) && !strcmp(r->rows[i].via, "http") &&
            r->rows[i].users == users)
            return r->rows[i].cpu_ms;
    return -1;
}

static void print_json(const load_run_t *r)
{
    json_t *rows = json_array(), *ratios = json_object();
    for (size_t i = 0; i < r->n_rows; i++) {
        const load_row_t *w = &r->rows[i];
        int bulk = !strcmp(w->target, "bulk");
        json_t *j = json_pack(
            "{s:s, s:s, s:f, s:I, s:f, s:f, s:f, s:I, s:I, s:I, s:I}", "target", w->target, "via",
            w->via, "readable", w->readable, "users", (json_int_t)w->users,
            bulk ? "documents_per_s" : "requests_per_s", w->rate, "p50_ms", w->p50_ms, "p99_ms",
            w->p99_ms, "requests", (json_int_t)w->requests, "errors", (json_int_t)w->errors,
            "chunks_checked", (json_int_t)w->checked, "leaks", (json_int_t)w->leaks);
        if (j)
            json_object_set_new(j, "p95_ms", json_real(w->p95_ms));
        if (j && !bulk && !strcmp(w->via, "http")) { /* how evenly the users were served */
            json_object_set_new(j, "user_requests_min", json_integer(w->user_min));
            json_object_set_new(j, "user_requests_max", json_integer(w->user_max));
        }
        if (j && w->cpu_ms >= 0)
            json_object_set_new(
                j, bulk ? "server_cpu_ms_per_1000_documents" : "server_cpu_ms_per_request",
                json_real(w->cpu_ms));
        json_array_append_new(rows, j);
    }
    double hb = row_rate(r, "bulk", "http", 1), cb = row_rate(r, "bulk", "c", 1);
    double hs = row_p50(r, "search1", "http", 1), cs = row_p50(r, "search1", "c", 1);
    if (hb > 0 && cb > 0)
        json_object_set_new(ratios, "bulk_http_over_c", json_real(hb / cb));
    if (hs > 0 && cs > 0)
        json_object_set_new(ratios, "search1_p50_http_over_c", json_real(hs / cs));
    json_t *rk = json_object();
    for (size_t i = 0; i < r->o.n_users; i++) {
        double k = row_rate(r, "knn", "http", r->o.users[i]);
        double v = row_rate(r, "retrieve", "http", r->o.users[i]);
        char users[24];
        snprintf(users, sizeof users, "%zu", r->o.users[i]);
        double kc = row_cpu(r, "knn", r->o.users[i]), vc = row_cpu(r, "retrieve", r->o.users[i]);
        if (k > 0 && v > 0)
            json_object_set_new(rk, users,
                                json_pack("{s:f, s:f}", "requests_per_s", v / k,
                                          "server_cpu_ms_per_request", kc > 0 ? vc / kc : -1));
    }
    if (json_object_size(rk))
        json_object_set_new(ratios, "retrieve_over_knn", rk);
    else
        json_decref(rk);
    json_t *cx = json_array();
    for (size_t i = 0; i + 1 < r->n_rows; i++)
        if (!strcmp(r->rows[i].target, "retrieve20") && !strcmp(r->rows[i + 1].target, "context20"))
            json_array_append_new(cx, json_pack("{s:f, s:f}", "p50_ms",
                                                r->rows[i + 1].p50_ms - r->rows[i].p50_ms,
                                                "server_cpu_ms_per_request",
                                                r->rows[i + 1].cpu_ms - r->rows[i].cpu_ms));
    if (json_array_size(cx))
        json_object_set_new(ratios, "context20_minus_retrieve20", cx);
    else
        json_decref(cx);
    json_t *doc = json_pack(
        "{s:s, s:I, s:I, s:f, s:f, s:I, s:f, s:f, s:s, s:o, s:o}", "bench", "load", "size",
        (json_int_t)r->o.size, "dim", (json_int_t)r->o.dim, "readable", r->o.readable, "seconds",
        r->o.seconds, "batch", (json_int_t)r->o.batch, "load_s", r->load_s, "load_documents_per_s",
        r->load_docs_per_s, "source", r->o.source, "rows", rows, "ratios", ratios);
    char *s = doc ? json_dumps(doc, JSON_INDENT(1) | JSON_REAL_PRECISION(6)) : NULL;
    printf("%s\n", s ? s : "{}");
    free(s);
    json_decref(doc);
}

static void print_table(const load_run_t *r)
{
    printf("%-11s %-4s %8s %5s %11s %9s %9s %9s %7s %10s %6s %10s %13s\n", "target", "via",
           "readable", "users", "rate/s", "p50_ms", "p95_ms", "p99_ms", "errors", "checked",
           "leaks", "srv_cpu_ms", "user_min-max");
    for (size_t i = 0; i < r->n_rows; i++) {
        const load_row_t *w = &r->rows[i];
        char cpu[32] = "-", spread[48] = "-";
        if (w->cpu_ms >= 0)
            snprintf(cpu, sizeof cpu, "%.3f", w->cpu_ms);
        if (strcmp(w->target, "bulk") && !strcmp(w->via, "http"))
            snprintf(spread, sizeof spread, "%ld-%ld", w->user_min, w->user_max);
        printf("%-11s %-4s %7.2f%% %5zu %11.1f %9.3f %9.3f %9.3f %7ld %10ld %6ld %10s %13s\n",
               w->target, w->via, w->readable * 100, w->users, w->rate, w->p50_ms, w->p95_ms,
               w->p99_ms, w->errors, w->checked, w->leaks, cpu, spread);
    }
    printf("# rate/s: requests/s (checks/s for authz and authz-batch, documents/s for bulk); "
           "users: writers for bulk; checked: hits or decisions checked; srv_cpu_ms: the "
           "server's CPU per request (bulk: per 1,000 documents); user_min-max: requests of the "
           "least and the most served user\n");
    for (size_t i = 0; i < r->o.n_users; i++) {
        double k = row_rate(r, "knn", "http", r->o.users[i]);
        double v = row_rate(r, "retrieve", "http", r->o.users[i]);
        double kc = row_cpu(r, "knn", r->o.users[i]), vc = row_cpu(r, "retrieve", r->o.users[i]);
        if (k > 0 && v > 0)
            printf("# %zu users: retrieve %.0f requests/s at %.3f ms of server CPU each, the same "
                   "knn through _search %.0f at %.3f ms: requests/s %.3f, CPU %.3f\n",
                   r->o.users[i], v, vc, k, kc, v / k, kc > 0 ? vc / kc : -1);
    }
    for (size_t i = 0; i + 1 < r->n_rows; i++)
        if (!strcmp(r->rows[i].target, "retrieve20") && !strcmp(r->rows[i + 1].target, "context20"))
            printf("# context of 20 passages minus the retrieval of 20 hits: p50 %+.3f ms, server "
                   "CPU %+.3f ms a request\n",
                   r->rows[i + 1].p50_ms - r->rows[i].p50_ms,
                   r->rows[i + 1].cpu_ms - r->rows[i].cpu_ms);
    double hb = row_rate(r, "bulk", "http", 1), cb = row_rate(r, "bulk", "c", 1);
    double hs = row_p50(r, "search1", "http", 1), cs = row_p50(r, "search1", "c", 1);
    if (hb > 0 && cb > 0)
        printf("# bulk, 1 writer: HTTP %.0f documents/s, C API %.0f: HTTP/C %.2f\n", hb, cb,
               hb / cb);
    if (hs > 0 && cs > 0)
        printf("# 1-hit search p50: HTTP %.3f ms, C API %.3f ms: HTTP/C %.2f; GET / p50 %.3f ms\n",
               hs, cs, hs / cs, row_p50(r, "root", "http", 1));
}

/* ---- Options. ---- */

static int usage(FILE *f, int rc)
{
    fprintf(
        f,
        "usage: cordon bench load [--target LIST] [--size N] [--dim D] [--readable R]\n"
        "                         [--users LIST] [--seconds S] [--mode knn,match,hybrid]\n"
        "                         [--batch B] [--writers LIST] [--bulk-docs N]\n"
        "                         [--load-writers W] [--source no-vector|all|none]\n"
        "                         [--no-overhead] [--authz-batch C]\n"
        "                         [--url http://H:P --key ID:SECRET] [--index NAME]\n"
        "                         [--dir PATH] [--keep] [--seed S] [--format table|json]\n"
        "                         [--reuse] [--leak-selftest]\n"
        "  Starts `cordon serve` (the binary beside cordon-bench) on a temporary data directory\n"
        "  under --dir, or targets the server at --url with the admin key --key. For the\n"
        "  search targets it creates an index (dense_vector D cosine int8_hnsw, text fields\n"
        "  title and text) and loads N generated documents over _bulk in batches of B from W\n"
        "  writers, their ACLs in allowed_groups: each of 32 subjects reads the share R of\n"
        "  them, and 32 more read everything. Then for each target and each user count of\n"
        "  LIST: that many threads, each a subject with its own API key and keep-alive\n"
        "  connection, send requests for S seconds, and every answer is checked against the\n"
        "  benchmark's own copy of the ACLs (or of the decisions). The targets:\n"
        "    knn       top-level knn through _search, k 10\n"
        "    match     BM25 on text through _search, as the subjects that read everything\n"
        "    hybrid    retriever.rrf of that match and the knn\n"
        "    retrieve  the same knn through POST /v1/collections/{c}/retrieve\n"
        "    context   one user: a retrieve of 20 hits, then the same through /context (20\n"
        "              passages), twice in turn: what assembling the context adds\n"
        "    bulk      _bulk ingest of --bulk-docs fresh documents with each writer count of\n"
        "              --writers into a fresh index, and the same documents through cordon_put\n"
        "              in process (the HTTP/C ratio)\n"
        "    overhead  GET / and a 1-hit knn search with one user, beside the same search\n"
        "              through the C API (needs bulk)\n"
        "    authz     the large catalog of `cordon bench authz` (10,000 users, 1,000 nested\n"
        "              groups, 500 roles) through /_cordon/model, then POST\n"
        "              /api/auth/is-authorized, each user a subject of the catalog asking its\n"
        "              five checks in turn (rates in checks/s); added to the server's model\n"
        "    authz-batch  the same through /api/auth/is-authorized/batch, C checks a request\n"
        "  --mode picks the search targets among the default ones. Exits 1 if any hit leaked,\n"
        "  any decision was wrong or any request failed. --leak-selftest: the knn and hybrid\n"
        "  users search with the keys of subjects that read everything while their hits are\n"
        "  checked against the partial ACLs, so the run must report leaks (the check is live).\n"
        "  --reuse: an index of that name already holding N documents (a server started on a\n"
        "  data directory a run with --keep left, with --url) is searched as it is, not\n"
        "  loaded again; the same --size, --dim, --readable and --seed give the same ACLs.\n"
        "  defaults: --target knn,match,hybrid,bulk,overhead --size 100000 --dim 384\n"
        "  --readable 0.01 --users 1,2,4,8,16,32 --seconds 10 --batch 1000 --writers 1,2,4\n"
        "  --bulk-docs 20000 --load-writers 2 --source no-vector --authz-batch 1000\n"
        "  --index bench-load --dir /tmp --seed 42\n");
    return rc;
}

/* The next comma-separated item of *p into t (cut at cap); 0 at the end of the list. */
static int next_item(const char **p, char *t, size_t cap)
{
    while (**p == ',')
        (*p)++;
    if (!**p)
        return 0;
    size_t n = strcspn(*p, ",");
    snprintf(t, cap, "%.*s", (int)(n < cap ? n : cap - 1), *p);
    *p += n;
    return 1;
}

static int parse_list(const char *name, const char *val, size_t hi, size_t *out, size_t *n)
{
    char t[32];
    *n = 0;
    while (next_item(&val, t, sizeof t)) {
        if (*n == LOAD_MAX_SETTINGS) {
            fprintf(stderr, "cordon bench load: %s takes at most %d values\n", name,
                    LOAD_MAX_SETTINGS);
            return 2;
        }
        if (bench_parse_size("load", name, t, 1, hi, &out[(*n)++]))
            return 2;
    }
    if (!*n) {
        fprintf(stderr, "cordon bench load: %s needs a list such as 1,2,4\n", name);
        return 2;
    }
    return 0;
}

/* A list of targets into *out; allowed: the bits the option may name. */
static int parse_targets(const char *opt, const char *val, int allowed, int *out)
{
    static const struct {
        const char *name;
        int bit;
    } names[] = {{"knn", LOAD_T_KNN},
                 {"match", LOAD_T_MATCH},
                 {"hybrid", LOAD_T_HYBRID},
                 {"retrieve", LOAD_T_RETRIEVE},
                 {"context", LOAD_T_CONTEXT},
                 {"bulk", LOAD_T_BULK},
                 {"overhead", LOAD_T_OVERHEAD},
                 {"authz", LOAD_T_AUTHZ},
                 {"authz-batch", LOAD_T_AUTHZ_BATCH}};
    char t[32];
    *out = 0;
    while (next_item(&val, t, sizeof t)) {
        int m = 0;
        for (size_t i = 0; i < sizeof names / sizeof *names; i++)
            if (!strcmp(t, names[i].name))
                m = names[i].bit;
        if (!(m & allowed)) {
            fprintf(stderr, "cordon bench load: %s takes %s (got '%s')\n", opt,
                    allowed == (LOAD_T_KNN | LOAD_T_MATCH | LOAD_T_HYBRID)
                        ? "knn, match and hybrid"
                        : "knn, match, hybrid, retrieve, context, bulk, overhead, authz and "
                          "authz-batch",
                    t);
            return 2;
        }
        *out |= m;
    }
    return *out ? 0 : 2;
}

static int parse_share(const char *val, double *out)
{
    char *end;
    double v = strtod(val, &end);
    if (*end == '%' && !end[1])
        v /= 100, end++;
    if (*end || !(v > 0) || v > 1) {
        fprintf(stderr,
                "cordon bench load: --readable takes a share above 0 and at most 1, or a "
                "percentage: 0.01, 1%% (got '%s')\n",
                val);
        return 2;
    }
    *out = v;
    return 0;
}

static int parse_opts(int argc, char **argv, load_opts_t *o)
{
    uint64_t v;
    int t;
    *o = (load_opts_t){.size = 100000,
                       .batch = 1000,
                       .bulk_docs = 20000,
                       .load_writers = 2,
                       .dim = 384,
                       .readable = 0.01,
                       .seconds = 10,
                       .users = {1, 2, 4, 8, 16, 32},
                       .n_users = 6,
                       .writers = {1, 2, 4},
                       .n_writers = 3,
                       .targets = LOAD_T_KNN | LOAD_T_MATCH | LOAD_T_HYBRID | LOAD_T_BULK |
                                  LOAD_T_OVERHEAD,
                       .authz_batch = 1000,
                       .dir = "/tmp",
                       .index = "bench-load",
                       .source = "no-vector",
                       .seed = 42};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *val = i + 1 < argc ? argv[i + 1] : NULL;
        int rc = 0;
        if (!strcmp(a, "--help") || !strcmp(a, "-h"))
            return usage(stdout, 0), 1;
        if (!strcmp(a, "--keep")) {
            o->keep = 1;
            continue;
        }
        if (!strcmp(a, "--reuse")) {
            o->reuse = 1;
            continue;
        }
        if (!strcmp(a, "--no-overhead")) {
            o->targets &= ~LOAD_T_OVERHEAD;
            continue;
        }
        if (!strcmp(a, "--leak-selftest")) {
            o->leak_selftest = 1;
            continue;
        }
        if (!val)
            return usage(stderr, 2);
        i++;
        if (!strcmp(a, "--size"))
            rc = bench_parse_size("load", a, val, 1, 20000000, &o->size);
        else if (!strcmp(a, "--dim") && !(rc = bench_parse_u64("load", a, val, 2, 4096, &v)))
            o->dim = (uint32_t)v;
        else if (!strcmp(a, "--dim"))
            ;
        else if (!strcmp(a, "--readable"))
            rc = parse_share(val, &o->readable);
        else if (!strcmp(a, "--users"))
            rc = parse_list(a, val, LOAD_MAX_USERS, o->users, &o->n_users);
        else if (!strcmp(a, "--writers"))
            rc = parse_list(a, val, 64, o->writers, &o->n_writers);
        else if (!strcmp(a, "--seconds") && !(rc = bench_parse_u64("load", a, val, 1, 3600, &v)))
            o->seconds = (double)v;
        else if (!strcmp(a, "--seconds"))
            ;
        else if (!strcmp(a, "--mode") &&
                 !(rc = parse_targets(a, val, LOAD_T_KNN | LOAD_T_MATCH | LOAD_T_HYBRID, &t)))
            o->targets = (o->targets & ~(LOAD_T_KNN | LOAD_T_MATCH | LOAD_T_HYBRID)) | t;
        else if (!strcmp(a, "--mode"))
            ;
        else if (!strcmp(a, "--target"))
            rc = parse_targets(a, val, ~0, &o->targets);
        else if (!strcmp(a, "--authz-batch"))
            rc = bench_parse_size("load", a, val, 1, 1000, &o->authz_batch);
        else if (!strcmp(a, "--batch"))
            rc = bench_parse_size("load", a, val, 1, CORDON_BATCH_MAX, &o->batch);
        else if (!strcmp(a, "--bulk-docs"))
            rc = bench_parse_size("load", a, val, 0, 10000000, &o->bulk_docs);
        else if (!strcmp(a, "--load-writers"))
            rc = bench_parse_size("load", a, val, 1, 64, &o->load_writers);
        else if (!strcmp(a, "--seed"))
            rc = bench_parse_u64("load", a, val, 0, UINT64_MAX, &o->seed);
        else if (!strcmp(a, "--source") &&
                 (!strcmp(val, "no-vector") || !strcmp(val, "all") || !strcmp(val, "none")))
            o->source = val;
        else if (!strcmp(a, "--format") && (!strcmp(val, "json") || !strcmp(val, "table")))
            o->json = !strcmp(val, "json");
        else if (!strcmp(a, "--url"))
            o->url = val;
        else if (!strcmp(a, "--key"))
            o->key = val;
        else if (!strcmp(a, "--index"))
            o->index = val;
        else if (!strcmp(a, "--dir"))
            o->dir = val;
        else
            return usage(stderr, 2);
        if (rc)
            return rc;
    }
    if (o->key && !o->url) {
        fprintf(stderr, "cordon bench load: --key goes with --url\n");
        return 2;
    }
    if (strlen(o->index) > CORDON_NAME_MAX - 12 ||
        strspn(o->index, "abcdefghijklmnopqrstuvwxyz"
                         "0123456789_-") != strlen(o->index)) {
        fprintf(stderr, "cordon bench load: --index takes [a-z0-9_-], at most %d bytes\n",
                CORDON_NAME_MAX - 12);
        return 2;
    }
    return 0;
}

/* ---- The run. ---- */

static int setup(load_run_t *r, bench_http_t *admin)
{
    const load_opts_t *o = &r->o;
    load_row_t row;
    size_t lo = (size_t)-1, hi = 0;
    long count = -1;
    if (load_docs_init(&r->docs, 'c', o->size, o->batch, o->dim, o->readable, o->seed, &r->gen) ||
        load_docs_init(&r->bulk, 'b', o->bulk_docs, o->batch, o->dim, o->readable,
                       o->seed ^ 0xb01cull, &r->gen)) {
        fprintf(stderr, "cordon bench load: out of memory\n");
        return -1;
    }
    if (!(o->targets & (LOAD_T_CORPUS | LOAD_T_BULK | LOAD_T_OVERHEAD)))
        return 0; /* is-authorized only: its catalog comes later */
    if (load_setup_subjects(r, admin))
        return -1;
    if (!(o->targets & LOAD_T_CORPUS))
        return 0;
    if (o->reuse && (count = load_index_count(r, admin, o->index)) == (long)o->size) {
        if (!o->json)
            printf("# %zu documents already in %s (--reuse); server %s:%s\n", o->size, o->index,
                   r->srv.host, r->srv.port);
        return 0;
    }
    if (count == -2)
        return -1;
    if (count >= 0) {
        fprintf(stderr, "cordon bench load: --reuse: %s holds %ld documents, not %zu\n", o->index,
                count, o->size);
        return -1;
    }
    if (load_index_create(r, admin, o->index))
        return -1;
    for (int s = 0; s < LOAD_SUBJECTS; s++) {
        size_t n = load_docs_readable(&r->docs, s);
        lo = n < lo ? n : lo;
        hi = n > hi ? n : hi;
    }
    if (!o->json)
        fprintf(stderr, "cordon bench load: loading %zu documents into %s on %s:%s...\n", o->size,
                o->index, r->srv.host, r->srv.port);
    if (load_bulk(r, &r->docs, NULL, o->index, o->load_writers, &row) || row.errors)
        return -1;
    r->load_docs_per_s = row.rate;
    r->load_s = row.rate > 0 ? (double)o->size / row.rate : 0;
    if (!o->json)
        printf("# %zu documents x %u (cosine, int8_hnsw) loaded over _bulk in %.1f s (%.0f "
               "documents/s, %zu writers, batches of %zu); each of %d subjects reads %.2f%% "
               "(%zu to %zu documents), %d more read everything; %.0f s a setting; _source "
               "%s; server %s:%s%s\n",
               o->size, o->dim, r->load_s, row.rate, o->load_writers, o->batch, LOAD_SUBJECTS,
               o->readable * 100, lo, hi, LOAD_SUBJECTS, o->seconds, o->source, r->srv.host,
               r->srv.port, r->srv.pid ? " (started by the benchmark)" : "");
    return 0;
}

int bench_load_main(int argc, char **argv)
{
    static load_run_t r; /* large: the keys and rows */
    bench_http_t admin;
    float *queries = NULL;
    int rc = parse_opts(argc, argv, &r.o);
    if (rc)
        return rc == 1 ? 0 : rc;
    if (bench_gen_init(&r.gen, BENCH_GEN_TOPICS, r.o.dim, r.o.seed) ||
        !(queries = malloc(LOAD_QUERIES * (size_t)r.o.dim * sizeof *queries))) {
        fprintf(stderr, "cordon bench load: out of memory\n");
        return 1;
    }
    bench_gen_t qg = r.gen; /* held-out queries: their own stream over the same centres */
    qg.s = r.o.seed ^ 0x5eedull;
    bench_gen_rows_of(&qg, queries, LOAD_QUERIES, NULL);
    rc =
        r.o.url ? load_server_remote(&r.srv, r.o.url, r.o.key) : load_server_start(&r.srv, r.o.dir);
    bench_http_init(&admin, r.srv.host, r.srv.port);
    admin.timeout_s = 900;
    if (!rc)
        rc = setup(&r, &admin);
    if (!rc)
        rc = search_rows(&r, queries);
    if (!rc && r.o.bulk_docs && (r.o.targets & LOAD_T_BULK))
        rc = load_ingest_rows(&r, &admin, queries);
    if (!rc && (r.o.targets & LOAD_T_OVERHEAD))
        rc = overhead_rows(&r, queries);
    if (!rc && (r.o.targets & (LOAD_T_AUTHZ | LOAD_T_AUTHZ_BATCH)))
        rc = load_authz_rows(&r, &admin);
    if (r.n_rows)
        r.o.json ? print_json(&r) : print_table(&r);
    long leaks = r.warmup_leaks, errors = r.warmup_errors;
    for (size_t i = 0; i < r.n_rows; i++) {
        leaks += r.rows[i].leaks;
        errors += r.rows[i].errors;
    }
    if (r.srv.host[0])
        load_cleanup(&r, &admin);
    bench_http_free(&admin);
    load_server_stop(&r.srv, r.o.keep);
    load_docs_free(&r.docs);
    load_docs_free(&r.bulk);
    bench_gen_free(&r.gen);
    free(queries);
    if (leaks)
        fprintf(stderr, "cordon bench load: %ld LEAKS: hits the subject may not read\n", leaks);
    if (errors)
        fprintf(stderr, "cordon bench load: %ld requests failed\n", errors);
    return rc || leaks || errors ? 1 : 0;
}
