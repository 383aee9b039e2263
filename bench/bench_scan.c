/* bench_scan.c: exact_search over random allowed sets (100%, 10%, 1% of generated rows) against
 * a plain scalar loop in the same run, plus the machine's streaming read rate for context.
 * Relies on vector/exact.h, CRoaring and base/clock.h. Data: seeded Gaussian clusters. */
#include "bench_scan.h"
#include "base/clock.h"
#include "base/err.h"
#include "base/mem.h"
#include "bench_util.h"
#include "vector/exact.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SCAN_K 10
#define SCAN_CLUSTERS 256
#define EVICT_BYTES ((size_t)1 << 30)

typedef struct scan_opts {
    size_t size, queries;
    uint32_t dim;
    uint64_t seed;
    int json;
    int cache;     /* 1 warm, 2 cold, 3 both */
    vec_isa_t isa; /* kernels for exact_search */
} scan_opts_t;

typedef struct scan_row {
    double share, p50_ms, scalar_p50_ms, gb_per_s;
    uint64_t scanned;
    size_t agree;
    const char *cache;
} scan_row_t;

static void usage(FILE *f)
{
    fprintf(f,
            "usage: cordon bench scan [--size N] [--dim D] [--queries Q] [--seed S]\n"
            "                         [--cache warm|cold|both] [--isa scalar|avx2|avx512]\n"
            "                         [--format table|json]\n"
            "  exact top-%d (cosine) over generated rows, allowed sets of 100%%, 10%%, 1%%;\n"
            "  defaults: --size 1000000 --dim 384 --queries 20 --seed 42 --cache both,\n"
            "  --isa the best this CPU has (exact_search's own choice)\n",
            SCAN_K);
}

/* Sets *out to the index of val in the NULL-terminated list choices. */
static int parse_choice(const char *name, const char *val, const char *const *choices, int *out)
{
    for (int i = 0; val && choices[i]; i++)
        if (!strcmp(val, choices[i])) {
            *out = i;
            return 0;
        }
    fprintf(stderr, "cordon bench scan: %s takes one of:", name);
    for (int i = 0; choices[i]; i++)
        fprintf(stderr, " %s", choices[i]);
    fprintf(stderr, " (got '%s')\n", val ? val : "");
    return 2;
}

static int parse_opts(int argc, char **argv, scan_opts_t *o)
{
    static const char *const formats[] = {"table", "json", NULL};
    static const char *const caches[] = {"warm", "cold", "both", NULL};
    static const char *const isas[] = {"scalar", "avx2", "avx512", NULL};
    *o = (scan_opts_t){1000000, 20, 384, 42, 0, 3, vec_isa_best()};
    for (int i = 1; i < argc; i += 2) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        size_t x = 0;
        int rc, choice = 0;
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            usage(stdout);
            return -1;
        } else if (!strcmp(a, "--size")) {
            rc = bench_parse_size("scan", a, v, 100, 100000000, &o->size);
        } else if (!strcmp(a, "--queries")) {
            rc = bench_parse_size("scan", a, v, 1, 100000, &o->queries);
        } else if (!strcmp(a, "--dim")) {
            rc = bench_parse_size("scan", a, v, 1, 65536, &x);
            o->dim = (uint32_t)x;
        } else if (!strcmp(a, "--seed")) {
            rc = bench_parse_size("scan", a, v, 0, SIZE_MAX, &x);
            o->seed = x;
        } else if (!strcmp(a, "--format")) {
            rc = parse_choice(a, v, formats, &choice);
            o->json = choice;
        } else if (!strcmp(a, "--cache")) {
            rc = parse_choice(a, v, caches, &choice);
            o->cache = choice + 1;
        } else if (!strcmp(a, "--isa")) {
            rc = parse_choice(a, v, isas, &choice);
            o->isa = (vec_isa_t)choice;
            if (!rc && !vec_dist_for_isa(VEC_METRIC_COSINE, o->isa)) {
                fprintf(stderr, "cordon bench scan: this CPU lacks %s; try --isa %s\n", v,
                        vec_isa_name(vec_isa_best()));
                rc = 2;
            }
        } else {
            fprintf(stderr, "cordon bench scan: unknown option '%s'\n", a);
            usage(stderr);
            return 2;
        }
        if (rc)
            return rc;
    }
    return 0;
}

/* The baseline: what one writes without thinking about speed. Per-id iterator, scalar kernel,
 * sorted insertion into a k-array (ids arrive ascending, so ties keep the smaller id). */
static size_t scalar_search(const vec_view_t *v, const float *q, const roaring_bitmap_t *allowed,
                            topk_hit_t *top)
{
    vec_dist_fn dist = vec_dist_for_isa(VEC_METRIC_COSINE, VEC_ISA_SCALAR);
    size_t n = 0;
    roaring_uint32_iterator_t it;
    for (roaring_init_iterator(allowed, &it); it.has_value; roaring_advance_uint32_iterator(&it)) {
        uint32_t id = it.current_value;
        if (id >= v->count)
            break;
        float d = dist(q, vec_row(v, id), v->dim);
        if (n == SCAN_K && !(d < top[SCAN_K - 1].dist))
            continue;
        size_t i = n < SCAN_K ? n++ : SCAN_K - 1;
        for (; i > 0 && top[i - 1].dist > d; i--)
            top[i] = top[i - 1];
        top[i] = (topk_hit_t){id, d};
    }
    return n;
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

static double p50_ms(uint64_t *ns, size_t n)
{
    qsort(ns, n, sizeof *ns, cmp_u64);
    return (n % 2 ? (double)ns[n / 2] : 0.5 * (double)(ns[n / 2 - 1] + ns[n / 2])) / 1e6;
}

/* Streams `bytes` of unrelated memory so the next search starts with cold caches. Returns a
 * value the caller keeps so the reads cannot be dropped. */
static float evict(const float *scratch, size_t bytes)
{
    return scratch ? vec_dot(scratch, scratch, bytes / sizeof(float)) : 0.0f;
}

typedef struct scan_ctx {
    const scan_opts_t *o;
    const vec_view_t *v;
    const float *queries;
    const float *scratch; /* EVICT_BYTES, for cold runs */
    uint64_t *ns_fast, *ns_scalar;
    float sink;
} scan_ctx_t;

/* Times both searches for every query on one allowed set; fills *row. */
static int measure_share(scan_ctx_t *c, const roaring_bitmap_t *allowed, int cold, scan_row_t *row)
{
    topk_hit_t fast[SCAN_K], slow[SCAN_K];
    row->agree = 0;
    for (size_t qi = 0; qi < c->o->queries; qi++) {
        const float *q = c->queries + qi * c->o->dim;
        size_t nf, ns;
        if (cold)
            c->sink += evict(c->scratch, EVICT_BYTES);
        uint64_t t0 = cdn_clock_ns();
        int rc = exact_search_isa(c->v, VEC_METRIC_COSINE, c->o->isa, q, allowed, SCAN_K, fast, &nf,
                                  &row->scanned);
        uint64_t t1 = cdn_clock_ns();
        if (rc)
            return rc;
        if (cold)
            c->sink += evict(c->scratch, EVICT_BYTES);
        uint64_t t2 = cdn_clock_ns();
        ns = scalar_search(c->v, q, allowed, slow);
        uint64_t t3 = cdn_clock_ns();
        c->ns_fast[qi] = t1 - t0;
        c->ns_scalar[qi] = t3 - t2;
        int same = nf == ns;
        for (size_t i = 0; same && i < nf; i++)
            same = fast[i].id == slow[i].id;
        row->agree += (size_t)same;
    }
    row->p50_ms = p50_ms(c->ns_fast, c->o->queries);
    row->scalar_p50_ms = p50_ms(c->ns_scalar, c->o->queries);
    row->gb_per_s = (double)row->scanned * c->o->dim * sizeof(float) / (row->p50_ms * 1e6);
    row->cache = cold ? "cold" : "warm";
    return 0;
}

/* Streaming read rate (one pass over the rows, best of 3) and memcpy rate, for context: the
 * scan cannot beat the first. */
static void measure_memory(const float *base, size_t n_floats, float *scratch, double *read_gbs,
                           double *copy_gbs, float *sink)
{
    double best = 0, best_copy = 0;
    size_t half = EVICT_BYTES / 2;
    for (int r = 0; r < 3; r++) {
        uint64_t t0 = cdn_clock_ns();
        *sink += vec_dot(base, base, n_floats);
        uint64_t t1 = cdn_clock_ns();
        double gbs = (double)n_floats * sizeof(float) / (double)(t1 - t0);
        best = gbs > best ? gbs : best;
        if (scratch) {
            t0 = cdn_clock_ns();
            memcpy((char *)scratch + half, scratch, half);
            t1 = cdn_clock_ns();
            gbs = (double)half / (double)(t1 - t0);
            best_copy = gbs > best_copy ? gbs : best_copy;
        }
    }
    *read_gbs = best;
    *copy_gbs = best_copy;
}

/* Random allowed set holding each id with probability `share` (all ids when share is 1). */
static roaring_bitmap_t *make_allowed(size_t count, double share, uint64_t *s)
{
    if (share >= 1.0)
        return roaring_bitmap_from_range(0, count, 1);
    roaring_bitmap_t *b = roaring_bitmap_create();
    uint64_t cut = (uint64_t)(share * 18446744073709551615.0);
    for (uint32_t id = 0; id < count; id++)
        if (bench_rng_next(s) < cut)
            roaring_bitmap_add(b, id);
    roaring_bitmap_run_optimize(b);
    return b;
}

static void print_rows(const scan_opts_t *o, const scan_row_t *rows, size_t n, double read_gbs,
                       double copy_gbs, double gen_s)
{
    const char *isa = vec_isa_name(o->isa);
    char copy[32] = "null"; /* memcpy needs the eviction buffer, absent with --cache warm */
    if (copy_gbs > 0)
        snprintf(copy, sizeof copy, "%.2f", copy_gbs);
    if (o->json) {
        printf("{\"bench\":\"scan\",\"size\":%zu,\"dim\":%u,\"queries\":%zu,\"k\":%d,"
               "\"seed\":%llu,\"metric\":\"cosine\",\"data\":\"generated gaussian clusters\","
               "\"mem_read_gb_per_s\":%.2f,\"memcpy_gb_per_s\":%s,\"rows\":[",
               o->size, o->dim, o->queries, SCAN_K, (unsigned long long)o->seed, read_gbs, copy);
        for (size_t i = 0; i < n; i++)
            printf("%s{\"share\":%g,\"cache\":\"%s\",\"isa\":\"%s\",\"scanned\":%llu,"
                   "\"p50_ms\":%.3f,\"scalar_p50_ms\":%.3f,\"speedup\":%.2f,\"gb_per_s\":%.2f,"
                   "\"agree\":%zu}",
                   i ? "," : "", rows[i].share, rows[i].cache, isa,
                   (unsigned long long)rows[i].scanned, rows[i].p50_ms, rows[i].scalar_p50_ms,
                   rows[i].scalar_p50_ms / rows[i].p50_ms, rows[i].gb_per_s, rows[i].agree);
        printf("]}\n");
        return;
    }
    printf("exact scan, %zu x %u generated rows (cosine, k=%d, %zu queries, seed %llu, "
           "data made in %.1f s)\n",
           o->size, o->dim, SCAN_K, o->queries, (unsigned long long)o->seed, gen_s);
    printf("memory: streaming read %.2f GB/s, memcpy %s GB/s\n\n", read_gbs,
           copy_gbs > 0 ? copy : "n/a");
    printf("%6s %5s %-7s %9s %10s %14s %8s %7s %6s\n", "share", "cache", "isa", "scanned", "p50 ms",
           "scalar p50 ms", "speedup", "GB/s", "agree");
    for (size_t i = 0; i < n; i++)
        printf("%5g%% %5s %-7s %9llu %10.3f %14.3f %7.2fx %7.2f %3zu/%zu\n", rows[i].share * 100,
               rows[i].cache, isa, (unsigned long long)rows[i].scanned, rows[i].p50_ms,
               rows[i].scalar_p50_ms, rows[i].scalar_p50_ms / rows[i].p50_ms, rows[i].gb_per_s,
               rows[i].agree, o->queries);
}

/* Runs every share in both cache states the options ask for; fills rows, sets *n. */
static int run_shares(scan_ctx_t *c, uint64_t *s, scan_row_t *rows, size_t *n)
{
    static const double shares[] = {1.0, 0.1, 0.01};
    *n = 0;
    for (size_t si = 0; si < 3; si++) {
        roaring_bitmap_t *allowed = make_allowed(c->v->count, shares[si], s);
        if (!allowed)
            return CDN_ERR_NOMEM;
        for (int cold = 0; cold <= 1; cold++) {
            if (!(c->o->cache & (1 << cold)))
                continue;
            rows[*n].share = shares[si];
            int rc = measure_share(c, allowed, cold, &rows[*n]);
            if (rc) {
                roaring_bitmap_free(allowed);
                return rc;
            }
            (*n)++;
        }
        roaring_bitmap_free(allowed);
    }
    return 0;
}

int bench_scan_main(int argc, char **argv)
{
    scan_opts_t o;
    int rc = parse_opts(argc, argv, &o);
    if (rc)
        return rc < 0 ? 0 : rc;
    uint64_t s = o.seed;
    float *base = cdn_aligned_alloc(64, o.size * o.dim * sizeof(float));
    float *cent = cdn_malloc((size_t)SCAN_CLUSTERS * o.dim * sizeof(float));
    float *queries = cdn_malloc(o.queries * o.dim * sizeof(float));
    float *scratch = o.cache & 2 ? cdn_aligned_alloc(64, EVICT_BYTES) : NULL;
    uint64_t *ns = cdn_malloc(2 * o.queries * sizeof(uint64_t));
    if (!base || !cent || !queries || !ns || (o.cache & 2 && !scratch)) {
        fprintf(stderr, "cordon bench scan: out of memory for %zu x %u rows\n", o.size, o.dim);
        rc = 1;
        goto done;
    }
    uint64_t t0 = cdn_clock_ns();
    for (size_t i = 0; i < (size_t)SCAN_CLUSTERS * o.dim; i++)
        cent[i] = (float)(2.0 * bench_rng_unit(&s) - 1.0);
    bench_gen_rows(base, o.size, o.dim, cent, SCAN_CLUSTERS, &s);
    bench_gen_rows(queries, o.queries, o.dim, cent, SCAN_CLUSTERS, &s);
    if (scratch)
        memset(scratch, 1, EVICT_BYTES);
    double gen_s = (double)(cdn_clock_ns() - t0) / 1e9, read_gbs, copy_gbs;
    vec_view_t v = {base, o.dim, o.dim, (uint32_t)o.size};
    scan_ctx_t c = {&o, &v, queries, scratch, ns, ns + o.queries, 0};
    measure_memory(base, o.size * o.dim, scratch, &read_gbs, &copy_gbs, &c.sink);
    scan_row_t rows[6];
    size_t n_rows;
    rc = run_shares(&c, &s, rows, &n_rows);
    if (rc) {
        fprintf(stderr, "cordon bench scan: search failed: %s\n", cdn_strerror(rc));
        rc = 1;
        goto done;
    }
    print_rows(&o, rows, n_rows, read_gbs, copy_gbs, gen_s);
    if (c.sink == 12345.678f) /* keeps the eviction reads observable */
        fprintf(stderr, " \n");
done:
    cdn_free(base);
    cdn_free(cent);
    cdn_free(queries);
    cdn_free(scratch);
    cdn_free(ns);
    return rc;
}
