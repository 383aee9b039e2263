/* test_metrics.c: the server's Prometheus metrics: counts, histograms, label escaping, exact sums
 * under concurrent recording, and promtool's verdict on the rendered text. Relies on cmocka,
 * pthreads and promtool (the check is a visible skip without it). */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include "base/buf.h"
#include "base/err.h"
#include "cordon.h"
#include "http/metrics.h"

static const char *const k_routes[] = {"GET /", "GET /{index}/_search", "POST /_bulk"};
#define N_ROUTES 3

/* The value of the sample whose name and labels are exactly series, or -1 when the text has
 * no such line. */
static double sample(const char *text, const char *series)
{
    size_t n = strlen(series);
    for (const char *p = text; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL)
        if (!strncmp(p, series, n) && p[n] == ' ')
            return strtod(p + n + 1, NULL);
    return -1;
}

/* How many lines start with prefix. */
static size_t lines_starting(const char *text, const char *prefix)
{
    size_t n = 0, len = strlen(prefix);
    for (const char *p = text; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL)
        n += !strncmp(p, prefix, len);
    return n;
}

static char *render(metrics_t *m, const metrics_gauges_t *g, cdn_buf_t *b)
{
    cdn_buf_init(b, 1 << 22);
    assert_int_equal(metrics_render(m, g, b), 0);
    assert_non_null(b->data);
    return b->data;
}

static void test_counts_after_known_calls_are_exact(void **state)
{
    (void)state;
    metrics_t *m;
    cdn_buf_t b;
    assert_int_equal(metrics_create(k_routes, N_ROUTES, &m), 0);
    for (int i = 0; i < 3; i++)
        metrics_request(m, 1, 200, 0.002, 100);
    metrics_request(m, 1, 404, 0.001, 20);
    metrics_request(m, 0, 201, 0.001, 7);
    metrics_request(m, N_ROUTES, 418, 0.001, 5);     /* unmatched, a status off the list */
    metrics_request(m, N_ROUTES + 9, 503, 0.001, 5); /* any index past n is unmatched */
    metrics_search(m, "exact", 10, 0);
    metrics_search(m, "exact", 20, 2);
    metrics_search(m, "rrf(exact,bm25)", 30, 1);
    metrics_search(m, NULL, 1, 0);
    metrics_collection_t colls[] = {{"docs", 12, 3400}, {"logs", 0, 0}};
    cordon_authorizer_stats az = {.name = "cerbos",
                                  .kind = "cerbos",
                                  .allowed = 1,
                                  .denied = 2,
                                  .filtered = 3,
                                  .cached = 4,
                                  .unavailable = 5,
                                  .timeouts = 6};
    metrics_gauges_t g = {.revision = 42,
                          .resident_bytes = 1 << 20,
                          .resident_file_bytes = 1 << 18,
                          .cpu_seconds = 12.25,
                          .in_flight = 3,
                          .colls = colls,
                          .n_colls = 2,
                          .authorizers = &az,
                          .n_authorizers = 1};
    const char *t = render(m, &g, &b);

    assert_true(
        sample(t, "cordon_http_requests_total{route=\"GET /{index}/_search\",status=\"200\"}") ==
        3);
    assert_true(
        sample(t, "cordon_http_requests_total{route=\"GET /{index}/_search\",status=\"404\"}") ==
        1);
    assert_true(sample(t, "cordon_http_requests_total{route=\"GET /\",status=\"201\"}") == 1);
    assert_true(sample(t, "cordon_http_requests_total{route=\"unmatched\",status=\"other\"}") == 1);
    assert_true(sample(t, "cordon_http_requests_total{route=\"unmatched\",status=\"503\"}") == 1);
    assert_true(sample(t, "cordon_http_requests_total{route=\"GET /\",status=\"200\"}") == -1);
    assert_true(sample(t, "cordon_http_response_bytes_total{route=\"GET /{index}/_search\"}") ==
                320);
    assert_true(sample(t, "cordon_http_response_bytes_total{route=\"POST /_bulk\"}") == 0);
    assert_true(sample(t, "cordon_http_response_bytes_total{route=\"unmatched\"}") == 10);
    assert_true(sample(t, "cordon_search_plans_total{plan=\"exact\"}") == 2);
    assert_true(sample(t, "cordon_search_plans_total{plan=\"rrf(exact,bm25)\"}") == 1);
    assert_true(sample(t, "cordon_search_plans_total{plan=\"other\"}") == 1);
    assert_true(sample(t, "cordon_search_rechecked_dropped_total") == 3);
    assert_true(sample(t, "cordon_search_readable_chunks_sum") == 61);
    assert_true(sample(t, "cordon_search_readable_chunks_count") == 4);
    assert_true(sample(t, "cordon_revision") == 42);
    assert_true(sample(t, "cordon_process_cpu_seconds_total") == 12.25);
    assert_true(sample(t, "cordon_collection_chunks{collection=\"docs\"}") == 12);
    assert_true(sample(t, "cordon_collection_bytes{collection=\"docs\"}") == 3400);
    assert_true(sample(t, "cordon_collection_chunks{collection=\"logs\"}") == 0);
    assert_true(sample(t, "cordon_process_resident_memory_bytes") == 1 << 20);
    assert_true(sample(t, "cordon_process_resident_file_memory_bytes") == 1 << 18);
    assert_true(sample(t, "cordon_http_requests_in_flight") == 3);
    const char *outcomes[] = {"allowed", "denied", "filtered", "cached", "unavailable", "timeout"};
    for (int i = 0; i < 6; i++) {
        char name[128];
        snprintf(name, sizeof name,
                 "cordon_authorizer_answers_total{authorizer=\"cerbos\",outcome=\"%s\"}",
                 outcomes[i]);
        assert_true(sample(t, name) == i + 1);
    }
    /* Every family is announced once, with its type. */
    assert_int_equal(lines_starting(t, "# TYPE cordon_http_requests_total counter\n"), 1);
    assert_int_equal(lines_starting(t, "# TYPE cordon_http_request_duration_seconds histogram\n"),
                     1);
    assert_int_equal(lines_starting(t, "# TYPE cordon_search_readable_chunks histogram\n"), 1);
    assert_int_equal(lines_starting(t, "# TYPE cordon_collection_bytes gauge\n"), 1);
    assert_int_equal(lines_starting(t, "# HELP "), 14);
    assert_int_equal(lines_starting(t, "# TYPE "), 14);
    cdn_buf_free(&b);
    metrics_free(m);
}

/* Checks that family's buckets (labels before le, as in `route="GET /",`) rise with le, end in
 * +Inf equal to _count, and that _count is want. */
static void check_histogram(const char *t, const char *family, const char *labels,
                            const char *const *les, size_t n_les, double want)
{
    char series[256];
    double prev = 0, v = 0;
    for (size_t i = 0; i < n_les; i++) {
        snprintf(series, sizeof series, "%s_bucket{%sle=\"%s\"}", family, labels, les[i]);
        v = sample(t, series);
        if (v < prev)
            fail_msg("%s is %g, below the previous bucket's %g", series, v, prev);
        prev = v;
    }
    assert_string_equal(les[n_les - 1], "+Inf");
    snprintf(series, sizeof series, "%s_count%s%.*s%s", family, *labels ? "{" : "",
             *labels ? (int)strlen(labels) - 1 : 0, labels, *labels ? "}" : "");
    assert_true(sample(t, series) == v);
    assert_true(v == want);
}

static void test_histogram_buckets_are_cumulative_and_count_equals_requests(void **state)
{
    (void)state;
    static const char *const dur_le[] = {"0.0001", "0.00025", "0.0005", "0.001", "0.0025", "0.005",
                                         "0.01",   "0.025",   "0.05",   "0.1",   "0.25",   "0.5",
                                         "1",      "2.5",     "5",      "10",    "+Inf"};
    static const char *const read_le[] = {"1",      "10",      "100",      "1000", "10000",
                                          "100000", "1000000", "10000000", "+Inf"};
    static const double secs[] = {0, 0.0001, 0.00011, 0.003, 0.003, 0.7, 9.99, 10, 11, -1};
    static const uint64_t readable[] = {0, 1, 2, 10, 11, 5000, 10000000, 10000001};
    metrics_t *m;
    cdn_buf_t b;
    assert_int_equal(metrics_create(k_routes, N_ROUTES, &m), 0);
    for (size_t i = 0; i < sizeof secs / sizeof secs[0]; i++)
        metrics_request(m, 2, 200, secs[i], 1);
    for (size_t i = 0; i < sizeof readable / sizeof readable[0]; i++)
        metrics_search(m, "exact", readable[i], 0);
    const char *t = render(m, NULL, &b);

    const char *f = "cordon_http_request_duration_seconds";
    check_histogram(t, f, "route=\"POST /_bulk\",", dur_le, 17, 10);
    check_histogram(t, f, "route=\"GET /\",", dur_le, 17, 0);
    check_histogram(t, f, "route=\"unmatched\",", dur_le, 17, 0);
    /* Upper bounds are inclusive: 0 and 0.0001 (and -1, counted as 0) in the first bucket. */
    assert_true(sample(t, "cordon_http_request_duration_seconds_bucket{route=\"POST /_bulk\","
                          "le=\"0.0001\"}") == 3);
    assert_true(sample(t, "cordon_http_request_duration_seconds_bucket{route=\"POST /_bulk\","
                          "le=\"0.005\"}") == 6);
    assert_true(sample(t, "cordon_http_request_duration_seconds_bucket{route=\"POST /_bulk\","
                          "le=\"10\"}") == 9);
    double sum = sample(t, "cordon_http_request_duration_seconds_sum{route=\"POST /_bulk\"}");
    assert_true(sum > 31.69621 - 1e-9 && sum < 31.69621 + 1e-9);

    check_histogram(t, "cordon_search_readable_chunks", "", read_le, 9, 8);
    assert_true(sample(t, "cordon_search_readable_chunks_bucket{le=\"1\"}") == 2);
    assert_true(sample(t, "cordon_search_readable_chunks_bucket{le=\"10\"}") == 4);
    assert_true(sample(t, "cordon_search_readable_chunks_bucket{le=\"10000000\"}") == 7);
    /* Without gauges the gauge families are left out. */
    assert_true(strstr(t, "cordon_revision") == NULL);
    cdn_buf_free(&b);
    metrics_free(m);
}

static void test_label_values_escape_quote_backslash_and_newline(void **state)
{
    (void)state;
    static const char *const routes[] = {"GET /\"q\"\\x\ny"};
    metrics_t *m;
    cdn_buf_t b;
    assert_int_equal(metrics_create(routes, 1, &m), 0);
    metrics_request(m, 0, 200, 0.001, 1);
    metrics_search(m, "a\"b", 1, 0);
    metrics_collection_t colls[] = {{"we\"ird\\na\nme", 5, 6}};
    metrics_gauges_t g = {.colls = colls, .n_colls = 1};
    const char *t = render(m, &g, &b);
    assert_true(sample(t, "cordon_collection_chunks{collection=\"we\\\"ird\\\\na\\nme\"}") == 5);
    assert_true(sample(t, "cordon_collection_bytes{collection=\"we\\\"ird\\\\na\\nme\"}") == 6);
    assert_true(sample(t, "cordon_http_requests_total{route=\"GET /\\\"q\\\"\\\\x\\ny\","
                          "status=\"200\"}") == 1);
    assert_true(sample(t, "cordon_search_plans_total{plan=\"a\\\"b\"}") == 1);
    /* No raw newline inside a sample: every line is a comment or starts with a family. */
    for (const char *p = t; *p; p = strchr(p, '\n') + 1)
        assert_true(*p == '#' || !strncmp(p, "cordon_", 7));
    cdn_buf_free(&b);
    metrics_free(m);
}

#define N_THREADS 4
#define PER_THREAD 200000

static metrics_t *g_shared;

static void *record_many(void *arg)
{
    size_t id = (size_t)(uintptr_t)arg;
    char plan[16];
    for (size_t i = 0; i < PER_THREAD; i++) {
        metrics_request(g_shared, i % 2, i % 3 ? 200 : 404, 0.0003, 3);
        if (i % 100 == 0) {
            /* Every thread introduces the same new names at the same moments: the table must
             * hold each once. */
            snprintf(plan, sizeof plan, "plan-%zu", (i / 100) % 8);
            metrics_search(g_shared, plan, id, 1);
        }
    }
    return NULL;
}

static void test_concurrent_requests_from_4_threads_sum_exactly(void **state)
{
    (void)state;
    pthread_t th[N_THREADS];
    cdn_buf_t b;
    assert_int_equal(metrics_create(k_routes, N_ROUTES, &g_shared), 0);
    for (size_t i = 0; i < N_THREADS; i++)
        assert_int_equal(pthread_create(&th[i], NULL, record_many, (void *)(uintptr_t)i), 0);
    /* Scrapes while the threads record: each one is well formed, its +Inf bucket its _count. */
    for (int i = 0; i < 20; i++) {
        const char *mid = render(g_shared, NULL, &b);
        double inf = sample(mid, "cordon_http_request_duration_seconds_bucket{route=\"GET /\","
                                 "le=\"+Inf\"}");
        assert_true(inf >= 0);
        assert_true(inf ==
                    sample(mid, "cordon_http_request_duration_seconds_count{route=\"GET /\"}"));
        cdn_buf_free(&b);
    }
    for (size_t i = 0; i < N_THREADS; i++)
        assert_int_equal(pthread_join(th[i], NULL), 0);
    const char *t = render(g_shared, NULL, &b);

    /* Per thread: route 0 gets the even i, route 1 the odd; 404 for i divisible by 3. */
    double r0_404 = N_THREADS * ((PER_THREAD + 5) / 6), r1_404 = N_THREADS * ((PER_THREAD + 2) / 6);
    assert_true(sample(t, "cordon_http_requests_total{route=\"GET /\",status=\"404\"}") == r0_404);
    assert_true(sample(t, "cordon_http_requests_total{route=\"GET /\",status=\"200\"}") ==
                N_THREADS * PER_THREAD / 2 - r0_404);
    assert_true(sample(t, "cordon_http_requests_total{route=\"GET /{index}/_search\","
                          "status=\"404\"}") == r1_404);
    assert_true(sample(t, "cordon_http_requests_total{route=\"GET /{index}/_search\","
                          "status=\"200\"}") == N_THREADS * PER_THREAD / 2 - r1_404);
    assert_true(sample(t, "cordon_http_request_duration_seconds_count{route=\"GET /\"}") ==
                N_THREADS * PER_THREAD / 2);
    assert_true(sample(t, "cordon_http_request_duration_seconds_bucket{route=\"GET /\","
                          "le=\"0.00025\"}") == 0);
    assert_true(sample(t, "cordon_http_request_duration_seconds_bucket{route=\"GET /\","
                          "le=\"0.0005\"}") == N_THREADS * PER_THREAD / 2);
    double sum = sample(t, "cordon_http_request_duration_seconds_sum{route=\"GET /\"}");
    assert_true(sum > 0.0003 * N_THREADS * PER_THREAD / 2 - 1e-6 &&
                sum < 0.0003 * N_THREADS * PER_THREAD / 2 + 1e-6);
    assert_true(sample(t, "cordon_http_response_bytes_total{route=\"GET /\"}") ==
                3.0 * N_THREADS * PER_THREAD / 2);
    assert_int_equal(lines_starting(t, "cordon_search_plans_total{"), 8);
    for (int p = 0; p < 8; p++) {
        char series[64];
        snprintf(series, sizeof series, "cordon_search_plans_total{plan=\"plan-%d\"}", p);
        assert_true(sample(t, series) == N_THREADS * PER_THREAD / 100 / 8);
    }
    assert_true(sample(t, "cordon_search_rechecked_dropped_total") == N_THREADS * PER_THREAD / 100);
    cdn_buf_free(&b);
    metrics_free(g_shared);
}

static void test_plan_table_holds_32_names_then_counts_other(void **state)
{
    (void)state;
    metrics_t *m;
    cdn_buf_t b;
    char plan[METRICS_PLAN_NAME_MAX + 2];
    assert_int_equal(metrics_create(NULL, 0, &m), 0);
    for (int i = 0; i < 40; i++) {
        snprintf(plan, sizeof plan, "p%d", i);
        metrics_search(m, plan, 1, 0);
        metrics_search(m, plan, 1, 0);
    }
    memset(plan, 'x', sizeof plan - 1);
    plan[sizeof plan - 1] = '\0';
    metrics_search(m, plan, 1, 0); /* longer than METRICS_PLAN_NAME_MAX */
    metrics_search(m, "", 1, 0);
    metrics_search(m, "p3", 1, 0); /* already in the table */
    const char *t = render(m, NULL, &b);
    assert_int_equal(lines_starting(t, "cordon_search_plans_total{"), METRICS_PLANS_MAX + 1);
    assert_true(sample(t, "cordon_search_plans_total{plan=\"p31\"}") == 2);
    assert_true(sample(t, "cordon_search_plans_total{plan=\"p3\"}") == 3);
    assert_true(sample(t, "cordon_search_plans_total{plan=\"p32\"}") == -1);
    assert_true(sample(t, "cordon_search_plans_total{plan=\"other\"}") == 8 * 2 + 2);
    /* With no routes, only the unmatched one is there. */
    assert_true(sample(t, "cordon_http_response_bytes_total{route=\"unmatched\"}") == 0);
    cdn_buf_free(&b);
    metrics_free(m);
}

static void test_render_past_the_buffer_maximum_leaves_it_unchanged(void **state)
{
    (void)state;
    metrics_t *m;
    cdn_buf_t b;
    assert_int_equal(metrics_create(k_routes, N_ROUTES, &m), 0);
    cdn_buf_init(&b, 1000);
    assert_int_equal(cdn_buf_puts(&b, "kept"), 0);
    assert_int_equal(metrics_render(m, NULL, &b), CDN_ERR_LIMIT);
    assert_string_equal(b.data, "kept");
    metrics_collection_t nameless = {NULL, 1, 1};
    metrics_gauges_t g = {.colls = &nameless, .n_colls = 1};
    assert_int_equal(metrics_render(m, &g, &b), CDN_ERR_INVALID);
    metrics_t *none;
    assert_int_equal(metrics_create(NULL, 2, &none), CDN_ERR_INVALID);
    assert_null(none);
    cdn_buf_free(&b);
    metrics_free(m);
}

static void test_resident_bytes_reads_statm(void **state)
{
    (void)state;
    uint64_t file = 0, rss = metrics_resident_bytes(&file);
    assert_true(rss > 100 * 1024);         /* a process with cmocka and libc mapped */
    assert_true(rss < (uint64_t)64 << 30); /* and not absurd */
    assert_true(file > 0 && file <= rss);  /* the binary and libc are file pages */
    assert_true(metrics_resident_bytes(NULL) > 0);
}

static void test_cpu_seconds_count_this_process_work(void **state)
{
    (void)state;
    double before = metrics_cpu_seconds();
    volatile uint64_t x = 1;
    while (metrics_cpu_seconds() < before + 0.05) /* spins until the clock has seen it */
        for (int i = 0; i < 100000; i++)
            x = x * 6364136223846793005ull + 1;
    double after = metrics_cpu_seconds();
    assert_true(before >= 0);
    assert_true(after >= before + 0.05);
    assert_true(after < before + 60); /* and not absurd */
}

static const char *promtool_path(void)
{
    static char found[4096];
    const char *path = getenv("PATH");
    if (!path || !*path)
        path = "/usr/bin:/bin";
    while (*path) {
        size_t n = strcspn(path, ":");
        snprintf(found, sizeof found, "%.*s/promtool", (int)n, path);
        if (n && access(found, X_OK) == 0)
            return found;
        path += n + (path[n] == ':');
    }
    return NULL;
}

static void test_rendered_output_passes_promtool_check_metrics(void **state)
{
    (void)state;
    const char *promtool = promtool_path();
    if (!promtool) {
        printf("SKIP: promtool is not on PATH (Debian package prometheus); the exposition "
               "format was not checked\n");
        skip();
    }
    metrics_t *m;
    cdn_buf_t b;
    char file[] = "/tmp/cordon-metrics-XXXXXX", cmd[8300], out[4096];
    static const char *const routes[] = {"GET /", "GET /{index}/_search", "POST /_bulk",
                                         "GET /\"odd\"\\route"};
    assert_int_equal(metrics_create(routes, 4, &m), 0);
    for (int i = 0; i < 50; i++)
        metrics_request(m, (size_t)i % 5, i % 7 ? 200 : 429, i * 0.013, 100);
    metrics_search(m, "hnsw-filtered", 1234, 1);
    metrics_search(m, "bm25-maxscore", 12, 0);
    metrics_collection_t colls[] = {{"docs", 10, 2000}, {"a\"b\\c\nd", 1, 2}};
    metrics_gauges_t g = {.revision = 7,
                          .resident_bytes = metrics_resident_bytes(NULL),
                          .in_flight = 1,
                          .colls = colls,
                          .n_colls = 2};
    const char *t = render(m, &g, &b);

    int fd = mkstemp(file);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, t, b.len), (ssize_t)b.len);
    close(fd);
    snprintf(cmd, sizeof cmd, "'%s' check metrics < '%s' 2>&1", promtool, file);
    FILE *p = popen(cmd, "r");
    assert_non_null(p);
    size_t n = fread(out, 1, sizeof out - 1, p);
    out[n] = '\0';
    int status = pclose(p);
    unlink(file);
    if (status == -1 || !WIFEXITED(status) || WEXITSTATUS(status) != 0 || n)
        fail_msg("promtool check metrics (status %d) says:\n%s\non:\n%s", status, out, t);
    cdn_buf_free(&b);
    metrics_free(m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_counts_after_known_calls_are_exact),
        cmocka_unit_test(test_histogram_buckets_are_cumulative_and_count_equals_requests),
        cmocka_unit_test(test_label_values_escape_quote_backslash_and_newline),
        cmocka_unit_test(test_concurrent_requests_from_4_threads_sum_exactly),
        cmocka_unit_test(test_plan_table_holds_32_names_then_counts_other),
        cmocka_unit_test(test_render_past_the_buffer_maximum_leaves_it_unchanged),
        cmocka_unit_test(test_resident_bytes_reads_statm),
        cmocka_unit_test(test_cpu_seconds_count_this_process_work),
        cmocka_unit_test(test_rendered_output_passes_promtool_check_metrics),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
