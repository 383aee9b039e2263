/* metrics.c: lock-free counters for the server's Prometheus metrics and their text rendering.
 * Relies on C11 atomics (relaxed: each counter stands alone), base/buf.h and /proc/self/statm. */
#include "http/metrics.h"
#include "base/err.h"
#include "base/mem.h"
#include "cordon.h"

#include <inttypes.h>
#include <math.h>
#include <stdalign.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

/* The statuses that get a series of their own; the last slot is "other". */
static const int k_statuses[] = {200, 201, 400, 401, 403, 404, 405, 409, 413, 429, 500, 503};
#define N_STATUS (sizeof k_statuses / sizeof k_statuses[0] + 1)

/* Request duration buckets (upper bounds, seconds); the last slot is +Inf. The bounds are
 * written out as text so that the le labels read exactly as configured. */
static const double k_dur_bounds[] = {0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025,
                                      0.05,   0.1,     0.25,   0.5,   1,      2.5,   5,    10};
static const char *const k_dur_le[] = {"0.0001", "0.00025", "0.0005", "0.001", "0.0025", "0.005",
                                       "0.01",   "0.025",   "0.05",   "0.1",   "0.25",   "0.5",
                                       "1",      "2.5",     "5",      "10",    "+Inf"};
#define N_DUR (sizeof k_dur_bounds / sizeof k_dur_bounds[0] + 1)

/* Readable-set buckets: powers of ten from 1 to 1e7, then +Inf. */
static const uint64_t k_read_bounds[] = {1, 10, 100, 1000, 10000, 100000, 1000000, 10000000};
static const char *const k_read_le[] = {"1",      "10",      "100",      "1000", "10000",
                                        "100000", "1000000", "10000000", "+Inf"};
#define N_READ (sizeof k_read_bounds / sizeof k_read_bounds[0] + 1)

#define ROUTE_UNMATCHED "unmatched"
#define PLAN_OTHER "other"

/* One route's counters, on cache lines of their own so that threads answering different routes
 * do not share a line. Buckets hold one count per request (not cumulative): a request touches
 * one bucket, and render adds them up. */
typedef struct route_stats {
    alignas(64) _Atomic uint64_t status[N_STATUS];
    _Atomic uint64_t dur[N_DUR];
    _Atomic uint64_t dur_sum_ns; /* integer nanoseconds: fetch_add, and an exact _sum */
    _Atomic uint64_t bytes;
} route_stats_t;

struct metrics {
    size_t n_routes;
    char **route_names;    /* n_routes copies */
    route_stats_t *routes; /* n_routes + 1; the last is the unmatched route */
    /* Plan names fill in order, each slot set once (NULL -> name), so a name is in at most one
     * slot: an inserter has compared every earlier slot, and slots never change again. */
    _Atomic(char *) plan_names[METRICS_PLANS_MAX];
    _Atomic uint64_t plan_count[METRICS_PLANS_MAX + 1]; /* the last is "other" */
    alignas(64) _Atomic uint64_t readable[N_READ];
    _Atomic uint64_t readable_sum;
    _Atomic uint64_t dropped;
};

int metrics_create(const char *const *routes, size_t n, metrics_t **out)
{
    metrics_t *m;
    if (!out)
        return CDN_ERR_INVALID;
    *out = NULL;
    if (n && !routes)
        return CDN_ERR_INVALID;
    for (size_t i = 0; i < n; i++)
        if (!routes[i])
            return CDN_ERR_INVALID;
    m = cdn_aligned_alloc(alignof(metrics_t), sizeof *m);
    if (!m)
        return CDN_ERR_NOMEM;
    memset(m, 0, sizeof *m);
    for (size_t i = 0; i < METRICS_PLANS_MAX; i++)
        atomic_init(&m->plan_names[i], NULL);
    m->routes = cdn_aligned_alloc(alignof(route_stats_t), (n + 1) * sizeof *m->routes);
    m->route_names = cdn_calloc(n ? n : 1, sizeof *m->route_names);
    if (!m->routes || !m->route_names) {
        metrics_free(m);
        return CDN_ERR_NOMEM;
    }
    memset(m->routes, 0, (n + 1) * sizeof *m->routes);
    for (m->n_routes = 0; m->n_routes < n; m->n_routes++) {
        m->route_names[m->n_routes] = cdn_strdup(routes[m->n_routes]);
        if (!m->route_names[m->n_routes]) {
            metrics_free(m);
            return CDN_ERR_NOMEM;
        }
    }
    *out = m;
    return CDN_OK;
}

void metrics_free(metrics_t *m)
{
    if (!m)
        return;
    for (size_t i = 0; i < METRICS_PLANS_MAX; i++)
        cdn_free(atomic_load_explicit(&m->plan_names[i], memory_order_relaxed));
    if (m->route_names)
        for (size_t i = 0; i < m->n_routes; i++)
            cdn_free(m->route_names[i]);
    cdn_free(m->route_names);
    cdn_free(m->routes);
    cdn_free(m);
}

static size_t status_slot(int status)
{
    size_t i;
    for (i = 0; i < N_STATUS - 1; i++)
        if (k_statuses[i] == status)
            break;
    return i;
}

static void add(_Atomic uint64_t *c, uint64_t v)
{
    atomic_fetch_add_explicit(c, v, memory_order_relaxed);
}

static uint64_t get(_Atomic uint64_t *c)
{
    return atomic_load_explicit(c, memory_order_relaxed);
}

void metrics_request(metrics_t *m, size_t route, int status, double seconds, size_t bytes)
{
    route_stats_t *r = &m->routes[route < m->n_routes ? route : m->n_routes];
    size_t b = 0;
    if (!(seconds > 0)) /* negative or NaN */
        seconds = 0;
    while (b < N_DUR - 1 && seconds > k_dur_bounds[b])
        b++;
    add(&r->status[status_slot(status)], 1);
    add(&r->dur[b], 1);
    /* 1e9 s (31 years) per request is beyond any timeout; the cap keeps the cast defined. */
    add(&r->dur_sum_ns, (uint64_t)llround(fmin(seconds, 1e9) * 1e9));
    add(&r->bytes, bytes);
}

/* The slot counting plan: its table entry, inserted if new, or METRICS_PLANS_MAX ("other"). */
static size_t plan_slot(metrics_t *m, const char *plan)
{
    char *copy = NULL;
    size_t len;
    if (!plan || !*plan || (len = strnlen(plan, METRICS_PLAN_NAME_MAX + 1)) > METRICS_PLAN_NAME_MAX)
        return METRICS_PLANS_MAX;
    for (size_t i = 0; i < METRICS_PLANS_MAX; i++) {
        char *p = atomic_load_explicit(&m->plan_names[i], memory_order_acquire);
        if (!p) {
            if (!copy && !(copy = cdn_strndup(plan, len)))
                return METRICS_PLANS_MAX;
            if (atomic_compare_exchange_strong_explicit(&m->plan_names[i], &p, copy,
                                                        memory_order_acq_rel, memory_order_acquire))
                return i;
            /* Another thread filled the slot first; p is its name. */
        }
        if (!strcmp(p, plan)) {
            cdn_free(copy);
            return i;
        }
    }
    cdn_free(copy);
    return METRICS_PLANS_MAX;
}

void metrics_search(metrics_t *m, const char *plan, uint64_t readable, uint64_t dropped)
{
    size_t b = 0;
    while (b < N_READ - 1 && readable > k_read_bounds[b])
        b++;
    add(&m->plan_count[plan_slot(m, plan)], 1);
    add(&m->readable[b], 1);
    add(&m->readable_sum, readable);
    add(&m->dropped, dropped);
}

/* ---- Rendering ---- */

/* The output and the first error; every writer does nothing once rc is set. */
typedef struct out {
    cdn_buf_t *b;
    int rc;
} out_t;

static void put(out_t *o, const char *s)
{
    if (!o->rc)
        o->rc = cdn_buf_puts(o->b, s);
}

static void putf(out_t *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void putf(out_t *o, const char *fmt, ...)
{
    char line[128]; /* numbers and metric names only; label values go through put_label */
    va_list ap;
    int n;
    if (o->rc)
        return;
    va_start(ap, fmt);
    n = vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    if (n < 0 || (size_t)n >= sizeof line) {
        o->rc = CDN_ERR_INTERNAL;
        return;
    }
    o->rc = cdn_buf_append(o->b, line, (size_t)n);
}

/* A label value between quotes, with backslash, double quote and newline escaped as the text
 * format requires. */
static void put_label(out_t *o, const char *s)
{
    put(o, "\"");
    while (!o->rc && *s) {
        size_t run = strcspn(s, "\\\"\n");
        if (run) {
            o->rc = cdn_buf_append(o->b, s, run);
            s += run;
            continue;
        }
        put(o, *s == '\\' ? "\\\\" : *s == '"' ? "\\\"" : "\\n");
        s++;
    }
    put(o, "\"");
}

static void put_family(out_t *o, const char *name, const char *type, const char *help)
{
    putf(o, "# HELP %s ", name);
    put(o, help);
    putf(o, "\n# TYPE %s %s\n", name, type);
}

/* name{label="value"} v, or name v when label is NULL. */
static void put_sample(out_t *o, const char *name, const char *label, const char *value, uint64_t v)
{
    put(o, name);
    if (label) {
        putf(o, "{%s=", label);
        put_label(o, value);
        put(o, "}");
    }
    putf(o, " %" PRIu64 "\n", v);
}

static const char *route_name(const metrics_t *m, size_t i)
{
    return i < m->n_routes ? m->route_names[i] : ROUTE_UNMATCHED;
}

/* Only the (route, status) pairs seen so far: 13 statuses for every route would be mostly
 * zeros. */
static void render_requests(metrics_t *m, out_t *o)
{
    put_family(o, "cordon_http_requests_total", "counter",
               "HTTP requests answered, by route template and status code.");
    for (size_t i = 0; i <= m->n_routes; i++) {
        for (size_t s = 0; s < N_STATUS; s++) {
            uint64_t v = get(&m->routes[i].status[s]);
            if (!v)
                continue;
            put(o, "cordon_http_requests_total{route=");
            put_label(o, route_name(m, i));
            if (s < N_STATUS - 1)
                putf(o, ",status=\"%d\"} %" PRIu64 "\n", k_statuses[s], v);
            else
                putf(o, ",status=\"other\"} %" PRIu64 "\n", v);
        }
    }
}

/* Every route is always present (zero until its first request), so rates start at zero. */
static void render_durations(metrics_t *m, out_t *o)
{
    const char *name = "cordon_http_request_duration_seconds";
    put_family(o, name, "histogram", "Time from a request's arrival to its response, by route.");
    for (size_t i = 0; i <= m->n_routes; i++) {
        route_stats_t *r = &m->routes[i];
        uint64_t total = 0, ns = get(&r->dur_sum_ns);
        for (size_t b = 0; b < N_DUR; b++) {
            total += get(&r->dur[b]);
            putf(o, "%s_bucket{route=", name);
            put_label(o, route_name(m, i));
            putf(o, ",le=\"%s\"} %" PRIu64 "\n", k_dur_le[b], total);
        }
        putf(o, "%s_sum{route=", name);
        put_label(o, route_name(m, i));
        putf(o, "} %" PRIu64 ".%09" PRIu64 "\n", ns / 1000000000u, ns % 1000000000u);
        putf(o, "%s_count{route=", name);
        put_label(o, route_name(m, i));
        putf(o, "} %" PRIu64 "\n", total);
    }
    put_family(o, "cordon_http_response_bytes_total", "counter",
               "Bytes of response bodies sent, by route.");
    for (size_t i = 0; i <= m->n_routes; i++)
        put_sample(o, "cordon_http_response_bytes_total", "route", route_name(m, i),
                   get(&m->routes[i].bytes));
}

static void render_search(metrics_t *m, out_t *o)
{
    const char *name = "cordon_search_readable_chunks";
    uint64_t total = 0, other;
    put_family(o, "cordon_search_plans_total", "counter",
               "Searches answered, by the plan that ran (at most 32 plan names; the rest are "
               "\"other\").");
    for (size_t i = 0; i < METRICS_PLANS_MAX; i++) {
        char *p = atomic_load_explicit(&m->plan_names[i], memory_order_acquire);
        if (!p)
            break;
        put_sample(o, "cordon_search_plans_total", "plan", p, get(&m->plan_count[i]));
    }
    other = get(&m->plan_count[METRICS_PLANS_MAX]);
    if (other)
        put_sample(o, "cordon_search_plans_total", "plan", PLAN_OTHER, other);

    put_family(o, name, "histogram", "Chunks the searching subject may read, per search.");
    for (size_t b = 0; b < N_READ; b++) {
        total += get(&m->readable[b]);
        putf(o, "%s_bucket{le=\"%s\"} %" PRIu64 "\n", name, k_read_le[b], total);
    }
    putf(o, "%s_sum %" PRIu64 "\n%s_count %" PRIu64 "\n", name, get(&m->readable_sum), name, total);

    put_family(o, "cordon_search_rechecked_dropped_total", "counter",
               "Hits the final permission re-check removed from search results.");
    put_sample(o, "cordon_search_rechecked_dropped_total", NULL, NULL, get(&m->dropped));
}

static void render_gauges(const metrics_gauges_t *g, out_t *o)
{
    put_family(o, "cordon_revision", "gauge", "The data directory's current revision.");
    put_sample(o, "cordon_revision", NULL, NULL, g->revision);
    put_family(o, "cordon_collection_chunks", "gauge", "Chunks stored, by collection.");
    for (size_t i = 0; i < g->n_colls; i++)
        put_sample(o, "cordon_collection_chunks", "collection", g->colls[i].name,
                   g->colls[i].chunks);
    put_family(o, "cordon_collection_bytes", "gauge", "Bytes stored, by collection.");
    for (size_t i = 0; i < g->n_colls; i++)
        put_sample(o, "cordon_collection_bytes", "collection", g->colls[i].name, g->colls[i].bytes);
    put_family(o, "cordon_process_resident_memory_bytes", "gauge",
               "Resident memory of the server process.");
    put_sample(o, "cordon_process_resident_memory_bytes", NULL, NULL, g->resident_bytes);
    put_family(o, "cordon_process_resident_file_memory_bytes", "gauge",
               "Of the resident memory, the pages of files mapped from the page cache (float "
               "rows read to re-score, database pages), which the kernel may take back.");
    put_sample(o, "cordon_process_resident_file_memory_bytes", NULL, NULL, g->resident_file_bytes);
    put_family(o, "cordon_process_cpu_seconds_total", "counter",
               "CPU time the server process has used, user and system, in seconds.");
    putf(o, "cordon_process_cpu_seconds_total %.3f\n", g->cpu_seconds);
    put_family(o, "cordon_authorizer_answers_total", "counter",
               "Answers of outside authorizers, by authorizer and outcome: allowed, denied, "
               "filtered (what the service answered), cached (served from the cache), "
               "unavailable and timeout (nothing was read).");
    for (size_t i = 0; i < g->n_authorizers; i++) {
        const cordon_authorizer_stats *a = &g->authorizers[i];
        const char *names[] = {"allowed", "denied", "filtered", "cached", "unavailable", "timeout"};
        uint64_t v[] = {a->allowed, a->denied, a->filtered, a->cached, a->unavailable, a->timeouts};
        for (size_t k = 0; k < 6; k++) {
            put(o, "cordon_authorizer_answers_total{authorizer=");
            put_label(o, a->name);
            putf(o, ",outcome=\"%s\"} %" PRIu64 "\n", names[k], v[k]);
        }
    }
    put_family(o, "cordon_http_requests_in_flight", "gauge",
               "HTTP requests being answered, this scrape included.");
    put_sample(o, "cordon_http_requests_in_flight", NULL, NULL, (uint64_t)g->in_flight);
}

int metrics_render(metrics_t *m, const metrics_gauges_t *g, cdn_buf_t *b)
{
    out_t o = {b, CDN_OK};
    size_t start = b->len;
    if (g && g->n_colls && !g->colls)
        return CDN_ERR_INVALID;
    for (size_t i = 0; g && i < g->n_colls; i++)
        if (!g->colls[i].name)
            return CDN_ERR_INVALID;
    render_requests(m, &o);
    render_durations(m, &o);
    render_search(m, &o);
    if (g)
        render_gauges(g, &o);
    if (o.rc) { /* leave out as it was */
        b->len = start;
        if (b->data)
            b->data[start] = '\0';
    }
    return o.rc;
}

uint64_t metrics_resident_bytes(uint64_t *file)
{
    unsigned long long size = 0, resident = 0, shared = 0;
    long page = sysconf(_SC_PAGESIZE);
    FILE *f = fopen("/proc/self/statm", "r");
    int got = f ? fscanf(f, "%llu %llu %llu", &size, &resident, &shared) : 0;
    if (f)
        fclose(f);
    if (file)
        *file = got == 3 && page > 0 ? (uint64_t)shared * (uint64_t)page : 0;
    if (got < 2 || page <= 0)
        return 0;
    return (uint64_t)resident * (uint64_t)page;
}

double metrics_cpu_seconds(void)
{
    struct rusage u;
    if (getrusage(RUSAGE_SELF, &u))
        return 0;
    return (double)u.ru_utime.tv_sec + (double)u.ru_utime.tv_usec / 1e6 +
           (double)u.ru_stime.tv_sec + (double)u.ru_stime.tv_usec / 1e6;
}
