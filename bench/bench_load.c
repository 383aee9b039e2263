/* bench_load.c: `cordon bench load`: loads a generated corpus into `cordon serve` over _bulk,
 * then runs 1 to 32 concurrent users (threads, each with its own keep-alive connection, subject
 * and API key) searching with knn, match or hybrid for a fixed time, and checks every hit
 * against the ACLs the benchmark generated; then _bulk ingest beside the C API's rate, and
 * the cost of HTTP itself (GET / and a 1-hit search). Relies on bench_load_srv.c (the server),
 * bench_load_bulk.c (the writers and the C API rows), bench_http and jansson. */
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

enum { MODE_KNN = 1, MODE_MATCH = 2, MODE_HYBRID = 4 };

/* ---- Latencies and rows. ---- */

double load_now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int load_lat_push(load_lat_t *l, double ms)
{
    if (l->n == l->cap) {
        size_t cap = l->cap ? l->cap * 2 : 4096;
        double *v = realloc(l->v, cap * sizeof *v);
        if (!v)
            return -1;
        l->v = v;
        l->cap = cap;
    }
    l->v[l->n++] = ms;
    return 0;
}

int load_lat_merge(load_lat_t *dst, load_lat_t *src)
{
    int rc = 0;
    for (size_t i = 0; !rc && i < src->n; i++)
        rc = load_lat_push(dst, src->v[i]);
    load_lat_free(src);
    return rc;
}

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

double load_lat_quantile(load_lat_t *l, double q)
{
    if (!l->n)
        return 0;
    qsort(l->v, l->n, sizeof *l->v, cmp_d);
    size_t i = (size_t)(q * (double)l->n);
    return l->v[i < l->n ? i : l->n - 1];
}

void load_lat_free(load_lat_t *l)
{
    free(l->v);
    memset(l, 0, sizeof *l);
}

void load_row_add(load_run_t *r, const load_row_t *row)
{
    if (r->n_rows < LOAD_MAX_ROWS)
        r->rows[r->n_rows++] = *row;
}

/* ---- Concurrent users. ---- */

typedef struct phase {
    load_run_t *r;
    const char *target, *method;
    char path[CORDON_NAME_MAX + 16];
    char **bodies; /* nbodies request bodies, or NULL (GET /) */
    size_t nbodies;
    const load_docs_t *docs; /* hits are checked against it; NULL: no hits expected */
    int full;                /* the users are the subjects that read everything */
    int key_full;            /* they search with those subjects' keys (full, or a selftest) */
    size_t users;
    double seconds, end;
    atomic_int go, ready, reported;
} phase_t;

typedef struct user {
    phase_t *ph;
    int idx;
    load_lat_t lat;
    long requests, errors, checked, leaks;
    pthread_t th;
} user_t;

/* Checks a search response's hits against the subject's ACL; -1 when it does not parse. */
static int check_hits(user_t *u, const bench_http_resp_t *resp)
{
    phase_t *ph = u->ph;
    json_t *j = json_loadb(resp->body, resp->body_len, 0, NULL), *h;
    json_t *hits = json_object_get(json_object_get(j, "hits"), "hits");
    size_t i;
    if (!json_is_array(hits)) {
        json_decref(j);
        return -1;
    }
    json_array_foreach(hits, i, h)
    {
        json_t *id = json_object_get(h, "_id");
        u->checked++;
        if (!json_is_string(id) || !load_docs_may_read(ph->docs, json_string_value(id),
                                                       json_string_length(id), u->idx, ph->full)) {
            if (u->leaks++ == 0)
                fprintf(stderr, "cordon bench load: LEAK: %s user %d was shown %s\n", ph->target,
                        u->idx, json_is_string(id) ? json_string_value(id) : "(no id)");
        }
    }
    json_decref(j);
    return 0;
}

static void *user_main(void *arg)
{
    user_t *u = arg;
    phase_t *ph = u->ph;
    bench_http_t c;
    const char *auth = ph->r->auth[ph->key_full][u->idx];
    bench_http_init(&c, ph->r->srv.host, ph->r->srv.port);
    c.timeout_s = 120;
    int ok = bench_http_connect(&c) == 0;
    if (!ok) {
        fprintf(stderr, "cordon bench load: user %d: %s\n", u->idx, c.err);
        u->errors++;
    }
    atomic_fetch_add(&ph->ready, 1);
    while (!atomic_load(&ph->go)) {
        struct timespec nap = {0, 100000};
        nanosleep(&nap, NULL);
    }
    for (size_t n = 0; ok; n++) {
        const char *body =
            ph->bodies ? ph->bodies[(n * 7 + (size_t)u->idx * 31) % ph->nbodies] : NULL;
        bench_http_resp_t resp;
        double t0 = load_now_s();
        if (t0 >= ph->end)
            break;
        int rc = bench_http_request(&c, ph->method, ph->path, auth, body, body ? strlen(body) : 0,
                                    &resp);
        double t1 = load_now_s();
        if (rc == 0 && resp.status == 200 && (!ph->docs || check_hits(u, &resp) == 0)) {
            if (t1 <= ph->end) { /* only what finished inside the measured window counts */
                u->requests++;
                load_lat_push(&u->lat, (t1 - t0) * 1e3);
            }
            continue;
        }
        u->errors++;
        if (!atomic_exchange(&ph->reported, 1))
            fprintf(stderr, "cordon bench load: %s %s (user %d): %s%.300s\n", ph->method, ph->path,
                    u->idx, rc ? c.err : "", rc ? "" : resp.body);
        if (rc && bench_http_connect(&c)) /* the connection is gone: try one more */
            break;
    }
    bench_http_free(&c);
    return NULL;
}

/* Runs ph->users users for ph->seconds; fills row. */
static int run_users(phase_t *ph, load_row_t *row)
{
    user_t us[LOAD_MAX_USERS];
    load_lat_t all = {0};
    size_t started = 0;
    atomic_store(&ph->reported, 0);
    atomic_store(&ph->go, 0);
    atomic_store(&ph->ready, 0);
    for (size_t i = 0; i < ph->users; i++) {
        us[i] = (user_t){.ph = ph, .idx = (int)i};
        if (pthread_create(&us[i].th, NULL, user_main, &us[i]))
            break;
        started++;
    }
    while (atomic_load(&ph->ready) < (int)started) { /* connected before the clock starts */
        struct timespec nap = {0, 1000000};
        nanosleep(&nap, NULL);
    }
    double cpu0 = load_server_cpu_s(&ph->r->srv);
    ph->end = started < ph->users ? 0 : load_now_s() + ph->seconds;
    atomic_store(&ph->go, 1);
    *row = (load_row_t){.target = ph->target,
                        .via = "http",
                        .readable = ph->full || !ph->docs ? 1.0 : ph->docs->readable,
                        .users = ph->users};
    for (size_t i = 0; i < started; i++) {
        pthread_join(us[i].th, NULL);
        row->requests += us[i].requests;
        row->errors += us[i].errors;
        row->checked += us[i].checked;
        row->leaks += us[i].leaks;
        if (i == 0 || us[i].requests < row->user_min)
            row->user_min = us[i].requests;
        if (us[i].requests > row->user_max)
            row->user_max = us[i].requests;
        load_lat_merge(&all, &us[i].lat);
    }
    double cpu1 = load_server_cpu_s(&ph->r->srv);
    row->rate = (double)row->requests / ph->seconds;
    row->p50_ms = load_lat_quantile(&all, 0.50);
    row->p99_ms = load_lat_quantile(&all, 0.99);
    row->cpu_ms = cpu0 >= 0 && row->requests ? (cpu1 - cpu0) * 1e3 / (double)row->requests : -1;
    load_lat_free(&all);
    return started < ph->users ? -1 : 0;
}

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

/* Body i of a search: mode one of MODE_*; k the knn's k and the size. */
static char *search_body(const load_run_t *r, int mode, const float *queries, size_t i, size_t k)
{
    cdn_buf_t b;
    char words[64];
    int rc;
    load_query_words(r->o.seed, i, words, sizeof words);
    cdn_buf_init(&b, 1 << 20);
    const float *v = queries + (i % LOAD_QUERIES) * r->o.dim;
    if (mode == MODE_MATCH) {
        rc = cdn_buf_printf(&b, "{\"query\":{\"match\":{\"text\":\"%s\"}},", words);
    } else {
        rc = mode == MODE_HYBRID
                 ? cdn_buf_printf(&b,
                                  "{\"retriever\":{\"rrf\":{\"retrievers\":[{\"standard\":{"
                                  "\"query\":{\"match\":{\"text\":\"%s\"}}}},{\"knn\":{",
                                  words)
                 : cdn_buf_puts(&b, "{\"knn\":{");
        rc = rc ? rc : cdn_buf_puts(&b, "\"field\":\"vector\",\"query_vector\":");
        rc = rc ? rc : put_vector(&b, v, r->o.dim);
        rc = rc ? rc : cdn_buf_printf(&b, ",\"k\":%zu,\"num_candidates\":%zu}", k, 10 * k);
        if (mode == MODE_HYBRID)
            rc = rc ? rc : cdn_buf_puts(&b, "}],\"rank_window_size\":100,\"rank_constant\":60}}");
        rc = rc ? rc : cdn_buf_puts(&b, ",");
    }
    rc = rc ? rc : cdn_buf_printf(&b, "\"size\":%zu,\"_source\":%s}", k, source_spec(r->o.source));
    if (rc) {
        cdn_buf_free(&b);
        return NULL;
    }
    return b.data; /* the buffer's bytes, freed with cdn_free */
}

static void free_bodies(char **bodies, size_t n)
{
    for (size_t i = 0; bodies && i < n; i++)
        cdn_free(bodies[i]);
    free(bodies);
}

static char **make_bodies(const load_run_t *r, int mode, const float *queries, size_t k)
{
    char **b = calloc(LOAD_QUERIES, sizeof *b);
    for (size_t i = 0; b && i < LOAD_QUERIES; i++)
        if (!(b[i] = search_body(r, mode, queries, i, k))) {
            free_bodies(b, LOAD_QUERIES);
            return NULL;
        }
    return b;
}

/* ---- Phases. ---- */

static const char *mode_name(int m)
{
    return m == MODE_KNN ? "knn" : m == MODE_MATCH ? "match" : "hybrid";
}

static int search_rows(load_run_t *r, const float *queries)
{
    int rc = 0;
    for (int m = MODE_KNN; !rc && m <= MODE_HYBRID; m <<= 1) {
        if (!(r->o.modes & m))
            continue;
        phase_t ph = {.r = r,
                      .target = mode_name(m),
                      .method = "POST",
                      .docs = &r->docs,
                      .full = m == MODE_MATCH,
                      .nbodies = LOAD_QUERIES};
        ph.key_full = ph.full || r->o.leak_selftest;
        snprintf(ph.path, sizeof ph.path, "/%s/_search", r->o.index);
        if (!(ph.bodies = make_bodies(r, m, queries, 10)))
            return -1;
        load_row_t row;
        ph.users = 2; /* warm-up, not reported */
        ph.seconds = r->o.seconds < 2 ? r->o.seconds : 2;
        rc = run_users(&ph, &row);
        r->warmup_leaks += row.leaks; /* not a row, but a leak is a leak */
        r->warmup_errors += row.errors;
        for (size_t k = 0; !rc && k < r->o.n_users; k++) {
            ph.users = r->o.users[k];
            ph.seconds = r->o.seconds;
            if ((rc = run_users(&ph, &row)) == 0)
                load_row_add(r, &row);
            if (!r->o.json)
                fprintf(stderr, "  %s, %zu users: %.0f requests/s\n", ph.target, ph.users,
                        row.rate);
        }
        free_bodies(ph.bodies, ph.nbodies);
    }
    return rc;
}

/* GET / and the 1-hit kNN search over one keep-alive connection. */
static int overhead_rows(load_run_t *r, const float *queries)
{
    load_row_t row;
    phase_t root = {.r = r,
                    .target = "root",
                    .method = "GET",
                    .path = "/",
                    .users = 1,
                    .seconds = r->o.seconds};
    int rc = run_users(&root, &row);
    if (rc)
        return rc;
    load_row_add(r, &row);
    if (!r->search1_index[0])
        return 0;
    phase_t one = {.r = r,
                   .target = "search1",
                   .method = "POST",
                   .docs = &r->bulk,
                   .nbodies = LOAD_QUERIES,
                   .users = 1,
                   .seconds = r->o.seconds};
    snprintf(one.path, sizeof one.path, "/%s/_search", r->search1_index);
    if (!(one.bodies = make_bodies(r, MODE_KNN, queries, 1)))
        return -1;
    if ((rc = run_users(&one, &row)) == 0)
        load_row_add(r, &row);
    free_bodies(one.bodies, one.nbodies);
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
    printf("%-8s %-4s %8s %5s %11s %9s %9s %7s %10s %6s %10s %13s\n", "target", "via", "readable",
           "users", "rate/s", "p50_ms", "p99_ms", "errors", "checked", "leaks", "srv_cpu_ms",
           "user_min-max");
    for (size_t i = 0; i < r->n_rows; i++) {
        const load_row_t *w = &r->rows[i];
        char cpu[32] = "-", spread[48] = "-";
        if (w->cpu_ms >= 0)
            snprintf(cpu, sizeof cpu, "%.3f", w->cpu_ms);
        if (strcmp(w->target, "bulk") && !strcmp(w->via, "http"))
            snprintf(spread, sizeof spread, "%ld-%ld", w->user_min, w->user_max);
        printf("%-8s %-4s %7.2f%% %5zu %11.1f %9.3f %9.3f %7ld %10ld %6ld %10s %13s\n", w->target,
               w->via, w->readable * 100, w->users, w->rate, w->p50_ms, w->p99_ms, w->errors,
               w->checked, w->leaks, cpu, spread);
    }
    printf("# rate/s: requests/s, documents/s for bulk; users: writers for bulk; srv_cpu_ms: "
           "the server's CPU per request (bulk: per 1,000 documents); user_min-max: requests of "
           "the least and the most served user\n");
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
        "usage: cordon bench load [--size N] [--dim D] [--readable R] [--users LIST]\n"
        "                         [--seconds S] [--mode knn,match,hybrid] [--batch B]\n"
        "                         [--writers LIST] [--bulk-docs N] [--load-writers W]\n"
        "                         [--source no-vector|all|none] [--no-overhead]\n"
        "                         [--url http://H:P --key ID:SECRET] [--index NAME]\n"
        "                         [--dir PATH] [--keep] [--seed S] [--format table|json]\n"
        "                         [--leak-selftest]\n"
        "  Starts `cordon serve` (the binary beside cordon-bench) on a temporary data directory\n"
        "  under --dir, or targets the server at --url with the admin key --key; creates an\n"
        "  index (dense_vector D cosine int8_hnsw, text fields title and text) and loads N\n"
        "  generated documents over _bulk in batches of B from W writers, their ACLs in\n"
        "  allowed_groups: each of 32 subjects reads the share R of them, and 32 more read\n"
        "  everything. Then for each mode and each user count of LIST: that many threads, each\n"
        "  a subject with its own API key and keep-alive connection, search for S seconds\n"
        "  (knn: top-level knn, k 10; match: BM25 on text, as the subjects that read\n"
        "  everything; hybrid: retriever.rrf of match and knn), and every hit is checked\n"
        "  against the benchmark's own copy of the ACLs. Then _bulk ingest of --bulk-docs\n"
        "  fresh documents with each writer count of --writers into a fresh index, and the\n"
        "  same documents through cordon_put in process (the HTTP/C ratio); then GET / and a\n"
        "  1-hit knn search with one user, beside the same search through the C API.\n"
        "  Exits 1 if any hit leaked or any request failed. --leak-selftest: the knn and hybrid\n"
        "  users search with the keys of subjects that read everything while their hits are\n"
        "  checked against the partial ACLs, so the run must report leaks (the check is live).\n"
        "  defaults: --size 100000 --dim 384 --readable 0.01 --users 1,2,4,8,16,32 --seconds 10\n"
        "  --mode knn,match,hybrid --batch 1000 --writers 1,2,4 --bulk-docs 20000\n"
        "  --load-writers 2 --source no-vector --index bench-load --dir /tmp --seed 42\n");
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

static int parse_modes(const char *val, int *modes)
{
    char t[32];
    *modes = 0;
    while (next_item(&val, t, sizeof t)) {
        int m = !strcmp(t, "knn")      ? MODE_KNN
                : !strcmp(t, "match")  ? MODE_MATCH
                : !strcmp(t, "hybrid") ? MODE_HYBRID
                                       : 0;
        if (!m) {
            fprintf(stderr, "cordon bench load: --mode takes knn, match and hybrid (got '%s')\n",
                    t);
            return 2;
        }
        *modes |= m;
    }
    return *modes ? 0 : 2;
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
                       .modes = MODE_KNN | MODE_MATCH | MODE_HYBRID,
                       .dir = "/tmp",
                       .index = "bench-load",
                       .source = "no-vector",
                       .overhead = 1,
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
        if (!strcmp(a, "--no-overhead")) {
            o->overhead = 0;
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
        else if (!strcmp(a, "--mode"))
            rc = parse_modes(val, &o->modes);
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
    if (load_docs_init(&r->docs, 'c', o->size, o->batch, o->dim, o->readable, o->seed, &r->gen) ||
        load_docs_init(&r->bulk, 'b', o->bulk_docs, o->batch, o->dim, o->readable,
                       o->seed ^ 0xb01cull, &r->gen)) {
        fprintf(stderr, "cordon bench load: out of memory\n");
        return -1;
    }
    if (load_setup_subjects(r, admin) || load_index_create(r, admin, o->index))
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
    if (!rc && r.o.bulk_docs)
        rc = load_ingest_rows(&r, &admin, queries);
    if (!rc && r.o.overhead)
        rc = overhead_rows(&r, queries);
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
