/* bench_quant.c: quant_exact_search against exact_search over random allowed sets (100% .. 0.1%)
 * of generated rows, same queries, same run: latency, rows re-ranked, bytes read, agreement.
 * Relies on vector/quant.h, vector/exact.h, CRoaring and base/clock.h. Data: bench_scan's
 * seeded Gaussian clusters (256 centroids uniform in [-1,1]^d, row = centroid + 0.5 N(0,1),
 * normalised; queries drawn the same way after the rows), so the two benches see equal data. */
#include "bench_quant.h"
#include "base/clock.h"
#include "base/err.h"
#include "base/mem.h"
#include "bench_util.h"
#include "vector/exact.h"
#include "vector/quant.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BQ_K 10
#define BQ_CLUSTERS 256
#define BQ_SHARES 5

typedef struct bq_opts {
    size_t size, queries, train;
    uint32_t dim;
    uint64_t seed;
    int json;
} bq_opts_t;

typedef struct bq_row {
    double share, ex_p50, ex_p95, q_p50, q_p95;
    double scanned, reranked, ex_bytes, q_bytes; /* means per query */
    size_t agree;
} bq_row_t;

static void usage(FILE *f)
{
    fprintf(f,
            "usage: cordon bench quant [--size N] [--dim D] [--queries Q] [--seed S]\n"
            "                          [--train T] [--format table|json]\n"
            "  exact top-%d (cosine) with 8-bit pruning vs exact_search, allowed sets of\n"
            "  100%%, 10%%, 3%%, 1%%, 0.1%%; defaults: --size 1000000 --dim 384 --queries 20\n"
            "  --seed 42 --train 100000 (rows whose min/max set the code ranges)\n",
            BQ_K);
}

static int parse_opts(int argc, char **argv, bq_opts_t *o)
{
    *o = (bq_opts_t){1000000, 20, 100000, 384, 42, 0};
    for (int i = 1; i < argc; i += 2) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        size_t x = 0;
        int rc = 0;
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            usage(stdout);
            return -1;
        } else if (!strcmp(a, "--size")) {
            rc = bench_parse_size("quant", a, v, 100, 100000000, &o->size);
        } else if (!strcmp(a, "--queries")) {
            rc = bench_parse_size("quant", a, v, 1, 100000, &o->queries);
        } else if (!strcmp(a, "--train")) {
            rc = bench_parse_size("quant", a, v, 1, 100000000, &o->train);
        } else if (!strcmp(a, "--dim")) {
            rc = bench_parse_size("quant", a, v, 1, 65536, &x);
            o->dim = (uint32_t)x;
        } else if (!strcmp(a, "--seed")) {
            rc = bench_parse_size("quant", a, v, 0, SIZE_MAX, &x);
            o->seed = x;
        } else if (!strcmp(a, "--format") && v && (!strcmp(v, "json") || !strcmp(v, "table"))) {
            o->json = !strcmp(v, "json");
        } else {
            fprintf(stderr, "cordon bench quant: unknown option or value '%s'\n", a);
            usage(stderr);
            return 2;
        }
        if (rc)
            return rc;
    }
    return 0;
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* Percentile p (0..1) of ns[0..n) in ms, nearest rank; sorts ns. */
static double pct_ms(uint64_t *ns, size_t n, double p)
{
    qsort(ns, n, sizeof *ns, cmp_u64);
    size_t i = (size_t)ceil(p * (double)n);
    return (double)ns[i ? i - 1 : 0] / 1e6;
}

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

static int same_hits(const topk_hit_t *a, size_t na, const topk_hit_t *b, size_t nb)
{
    if (na != nb)
        return 0;
    for (size_t i = 0; i < na; i++)
        if (a[i].id != b[i].id || memcmp(&a[i].dist, &b[i].dist, sizeof(float)))
            return 0;
    return 1;
}

/* Times both searches for every query on one allowed set (alternating which goes first). */
static int measure(const bq_opts_t *o, const quant_t *q, const vec_view_t *v, const float *queries,
                   const roaring_bitmap_t *allowed, uint64_t *ns, bq_row_t *row)
{
    uint64_t *ns_q = ns + o->queries;
    memset(row, 0, sizeof *row);
    for (size_t qi = 0; qi < o->queries; qi++) {
        const float *query = queries + qi * o->dim;
        topk_hit_t a[BQ_K], b[BQ_K];
        size_t na = 0, nb = 0;
        uint64_t scanned = 0, t[4] = {0, 0, 0, 0};
        quant_stats_t st = {0, 0, 0, 0, 0};
        int rc = 0;
        for (int pass = 0; pass < 2; pass++) {
            if ((pass == 0) == (qi % 2 == 0)) {
                t[0] = cdn_clock_ns();
                rc |= exact_search(v, VEC_METRIC_COSINE, query, allowed, BQ_K, a, &na, &scanned);
                t[1] = cdn_clock_ns();
            } else {
                t[2] = cdn_clock_ns();
                rc |=
                    quant_exact_search(q, v, VEC_METRIC_COSINE, query, allowed, BQ_K, b, &nb, &st);
                t[3] = cdn_clock_ns();
            }
        }
        if (rc)
            return rc;
        ns[qi] = t[1] - t[0];
        ns_q[qi] = t[3] - t[2];
        row->agree += (size_t)same_hits(a, na, b, nb);
        row->scanned += (double)st.scanned / (double)o->queries;
        row->reranked += (double)st.reranked / (double)o->queries;
        row->q_bytes += (double)(st.code_bytes + st.float_bytes) / (double)o->queries;
        row->ex_bytes += (double)scanned * o->dim * sizeof(float) / (double)o->queries;
    }
    row->ex_p50 = pct_ms(ns, o->queries, 0.5);
    row->ex_p95 = pct_ms(ns, o->queries, 0.95);
    row->q_p50 = pct_ms(ns_q, o->queries, 0.5);
    row->q_p95 = pct_ms(ns_q, o->queries, 0.95);
    return 0;
}

static void print_rows(const bq_opts_t *o, const bq_row_t *r, size_t n, double gen_s, double enc_s,
                       size_t mem)
{
    if (o->json) {
        printf("{\"bench\":\"quant\",\"size\":%zu,\"dim\":%u,\"queries\":%zu,\"k\":%d,"
               "\"seed\":%llu,\"train\":%zu,\"metric\":\"cosine\",\"isa\":\"%s\","
               "\"encode_s\":%.3f,\"quant_bytes\":%zu,\"rows\":[",
               o->size, o->dim, o->queries, BQ_K, (unsigned long long)o->seed, o->train,
               vec_isa_name(vec_isa_best()), enc_s, mem);
        for (size_t i = 0; i < n; i++)
            printf("%s{\"share\":%g,\"exact_p50_ms\":%.3f,\"exact_p95_ms\":%.3f,"
                   "\"quant_p50_ms\":%.3f,\"quant_p95_ms\":%.3f,\"speedup_p50\":%.2f,"
                   "\"scanned\":%.0f,\"reranked\":%.1f,\"exact_mb\":%.2f,\"quant_mb\":%.2f,"
                   "\"agree\":%zu}",
                   i ? "," : "", r[i].share, r[i].ex_p50, r[i].ex_p95, r[i].q_p50, r[i].q_p95,
                   r[i].ex_p50 / r[i].q_p50, r[i].scanned, r[i].reranked, r[i].ex_bytes / 1e6,
                   r[i].q_bytes / 1e6, r[i].agree);
        printf("]}\n");
        return;
    }
    printf("exact scan with 8-bit pruning, %zu x %u generated rows (cosine, k=%d, %zu queries, "
           "seed %llu, isa %s)\n",
           o->size, o->dim, BQ_K, o->queries, (unsigned long long)o->seed,
           vec_isa_name(vec_isa_best()));
    printf("data made in %.1f s; trained on %zu rows and encoded in %.2f s; codes %.1f MB\n\n",
           gen_s, o->train, enc_s, (double)mem / 1e6);
    printf("%6s %9s %10s %10s %10s %10s %8s %9s %9s %9s %6s\n", "share", "scanned", "exact p50",
           "exact p95", "quant p50", "quant p95", "speedup", "reranked", "exact MB", "quant MB",
           "agree");
    for (size_t i = 0; i < n; i++)
        printf("%5g%% %9.0f %10.3f %10.3f %10.3f %10.3f %7.2fx %9.1f %9.2f %9.2f %3zu/%zu\n",
               r[i].share * 100, r[i].scanned, r[i].ex_p50, r[i].ex_p95, r[i].q_p50, r[i].q_p95,
               r[i].ex_p50 / r[i].q_p50, r[i].reranked, r[i].ex_bytes / 1e6, r[i].q_bytes / 1e6,
               r[i].agree, o->queries);
}

static int run(const bq_opts_t *o, float *base, const float *queries, uint64_t *ns, double gen_s,
               uint64_t *s)
{
    static const double shares[BQ_SHARES] = {1.0, 0.1, 0.03, 0.01, 0.001};
    vec_view_t v = {base, o->dim, o->dim, (uint32_t)o->size};
    quant_t *q = NULL;
    cdn_err_t err = {0};
    uint64_t t0 = cdn_clock_ns();
    int rc = quant_create(o->dim, &q, &err);
    if (!rc)
        rc = quant_train(q, &v, NULL, o->train < o->size ? o->train : o->size, &err);
    if (!rc)
        rc = quant_encode_rows(q, &v, 0, v.count, &err);
    double enc_s = (double)(cdn_clock_ns() - t0) / 1e9;
    bq_row_t rows[BQ_SHARES];
    for (size_t i = 0; !rc && i < BQ_SHARES; i++) {
        roaring_bitmap_t *allowed = make_allowed(o->size, shares[i], s);
        rc = allowed ? measure(o, q, &v, queries, allowed, ns, &rows[i]) : CDN_ERR_NOMEM;
        rows[i].share = shares[i];
        roaring_bitmap_free(allowed);
    }
    if (rc)
        fprintf(stderr, "cordon bench quant: %s %s\n", cdn_strerror(rc), err.msg);
    else
        print_rows(o, rows, BQ_SHARES, gen_s, enc_s, quant_memory(q));
    quant_free(q);
    return rc ? 1 : 0;
}

int bench_quant_main(int argc, char **argv)
{
    bq_opts_t o;
    int rc = parse_opts(argc, argv, &o);
    if (rc)
        return rc < 0 ? 0 : rc;
    uint64_t s = o.seed;
    float *base = cdn_aligned_alloc(64, o.size * o.dim * sizeof(float));
    float *cent = cdn_malloc((size_t)BQ_CLUSTERS * o.dim * sizeof(float));
    float *queries = cdn_malloc(o.queries * o.dim * sizeof(float));
    uint64_t *ns = cdn_malloc(2 * o.queries * sizeof(uint64_t));
    if (!base || !cent || !queries || !ns) {
        fprintf(stderr, "cordon bench quant: out of memory for %zu x %u rows\n", o.size, o.dim);
        rc = 1;
    } else {
        uint64_t t0 = cdn_clock_ns();
        for (size_t i = 0; i < (size_t)BQ_CLUSTERS * o.dim; i++)
            cent[i] = (float)(2.0 * bench_rng_unit(&s) - 1.0);
        bench_gen_rows(base, o.size, o.dim, cent, BQ_CLUSTERS, &s);
        bench_gen_rows(queries, o.queries, o.dim, cent, BQ_CLUSTERS, &s);
        rc = run(&o, base, queries, ns, (double)(cdn_clock_ns() - t0) / 1e9, &s);
    }
    cdn_free(base);
    cdn_free(cent);
    cdn_free(queries);
    cdn_free(ns);
    return rc;
}
