/* bench_hnsw.c: HNSW build time and memory, save/load time, recall@10 and latency unfiltered and
 * under random allowed sets, beside the exact scan and post-filtering in the same run. Relies on
 * vector/hnsw.h, vector/exact.h, CRoaring and base/clock.h. Data: bench_gen.h. */
#include "bench_hnsw.h"
#include "base/clock.h"
#include "base/err.h"
#include "bench_gen.h"
#include "bench_util.h"
#include "vector/exact.h"
#include "vector/hnsw.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define BK 10
#define B_MAX_ROWS 96

typedef struct hb_opts {
    size_t size, queries;
    uint32_t dim, m, efc, threads;
    uint64_t seed;
    int json;
    const char *dir;
    bench_gen_kind_t gen;
    hnsw_build_precision_t prec;
    int codes; /* also measure traversals scored from 8-bit codes */
} hb_opts_t;

/* One measured configuration. plan: "hnsw" (unfiltered), "filtered", "postfilter" (unfiltered
 * traversal, then drop disallowed hits), "exact", "fallback" (filtered with a visit budget of
 * |allowed|, then the exact scan when the budget runs out: what a planner would run). */
typedef struct hb_row {
    const char *plan;
    double pct;
    uint64_t allowed;
    uint32_t ef;
    double recall, p50_ms, visited, distances, over_budget;
} hb_row_t;

typedef struct hb_run {
    hb_opts_t o;
    float *rows, *queries;
    uint32_t *cluster_of; /* generator cluster of each row */
    uint32_t clusters;
    vec_view_t view;
    hnsw_t *h;
    quant_t *codes;    /* 8-bit codes of the rows (--codes), else NULL */
    topk_hit_t *truth; /* queries * BK */
    size_t *n_truth;
    double *lat; /* per query, ms */
    hb_row_t out[B_MAX_ROWS];
    size_t n_out;
    double build_s, save_s, load_s, rss_data_mb, rss_graph_mb, graph_mb, file_mb;
    uint32_t widened, widened_nearer; /* construction searches searched again wider */
    int load_same;
} hb_run_t;

static double median(double *v, size_t n)
{
    qsort(v, n, sizeof(double), bench_cmp_double);
    return n ? v[n / 2] : 0;
}

static double recall_of(const topk_hit_t *got, size_t n, const topk_hit_t *truth, size_t nt)
{
    if (nt == 0)
        return 1.0;
    size_t hit = 0;
    for (size_t i = 0; i < nt; i++)
        for (size_t j = 0; j < n; j++)
            if (got[j].id == truth[i].id) {
                hit++;
                break;
            }
    return (double)hit / (double)nt;
}

static void usage(FILE *f)
{
    fprintf(f,
            "usage: cordon bench hnsw [--size N] [--dim D] [--queries Q] [--seed S]\n"
            "                         [--threads T] [--m M] [--efc EF] [--dir PATH]\n"
            "                         [--generator topics|isotropic] [--format table|json]\n"
            "                         [--build-precision auto|float|bf16|i8] [--codes]\n"
            "  builds HNSW over N generated unit vectors (cosine, bench_gen.h), saves and\n"
            "  loads it under PATH, then measures recall@%d and p50 latency unfiltered and\n"
            "  under random allowed sets of 0.1, 1, 5, 20 and 100%%, beside the exact scan.\n"
            "  defaults: --size 1000000 --dim 384 --queries 100 --seed 42 --threads 2\n"
            "            --m 16 --efc 160 --dir /tmp --generator topics\n",
            BK);
}

static int parse_opts(int argc, char **argv, hb_opts_t *o)
{
    *o = (hb_opts_t){.size = 1000000,
                     .queries = 100,
                     .dim = 384,
                     .m = 16,
                     .efc = hnsw_params_default().ef_construction,
                     .threads = 2,
                     .seed = 42,
                     .dir = "/tmp",
                     .gen = BENCH_GEN_TOPICS,
                     .prec = HNSW_BUILD_AUTO};
    for (int i = 1; i < argc; i += 2) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        uint64_t x = 0;
        int rc = 0;
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            usage(stdout);
            return -1;
        } else if (!strcmp(a, "--size") &&
                   !(rc = bench_parse_u64("hnsw", a, v, 1000, 50000000, &x)))
            o->size = x;
        else if (!strcmp(a, "--dim") && !(rc = bench_parse_u64("hnsw", a, v, 2, 4096, &x)))
            o->dim = (uint32_t)x;
        else if (!strcmp(a, "--queries") && !(rc = bench_parse_u64("hnsw", a, v, 1, 100000, &x)))
            o->queries = x;
        else if (!strcmp(a, "--seed") && !(rc = bench_parse_u64("hnsw", a, v, 0, UINT64_MAX, &x)))
            o->seed = x;
        else if (!strcmp(a, "--threads") && !(rc = bench_parse_u64("hnsw", a, v, 1, 256, &x)))
            o->threads = (uint32_t)x;
        else if (!strcmp(a, "--m") &&
                 !(rc = bench_parse_u64("hnsw", a, v, HNSW_M_MIN, HNSW_M_MAX, &x)))
            o->m = (uint32_t)x;
        else if (!strcmp(a, "--efc") && !(rc = bench_parse_u64("hnsw", a, v, 1, HNSW_EF_MAX, &x)))
            o->efc = (uint32_t)x;
        else if (!strcmp(a, "--codes")) {
            o->codes = 1;
            i--; /* takes no value */
        } else if (!strcmp(a, "--dir") && v)
            o->dir = v;
        else if (!strcmp(a, "--generator") && !(rc = bench_gen_parse("hnsw", v, &o->gen)))
            continue;
        else if (!strcmp(a, "--format") && v && (!strcmp(v, "json") || !strcmp(v, "table")))
            o->json = !strcmp(v, "json");
        else if (!strcmp(a, "--build-precision") && v &&
                 (!strcmp(v, "auto") || !strcmp(v, "float") || !strcmp(v, "bf16") ||
                  !strcmp(v, "i8")))
            o->prec = !strcmp(v, "float")  ? HNSW_BUILD_FLOAT
                      : !strcmp(v, "bf16") ? HNSW_BUILD_BF16
                      : !strcmp(v, "i8")   ? HNSW_BUILD_I8
                                           : HNSW_BUILD_AUTO;
        else if (!rc) {
            fprintf(stderr, "cordon bench hnsw: unknown option or missing value '%s'\n", a);
            usage(stderr);
            return 2;
        }
        if (rc)
            return rc;
    }
    return 0;
}

/* Generates rows and queries, builds the index with o.threads threads, measures memory. */
static int setup_index(hb_run_t *r)
{
    hb_opts_t *o = &r->o;
    bench_gen_t g;
    int grc = bench_gen_init(&g, o->gen, o->dim, o->seed);
    r->rows = malloc(sizeof(float) * o->size * o->dim);
    r->queries = malloc(sizeof(float) * o->queries * o->dim);
    r->cluster_of = malloc(sizeof(uint32_t) * o->size);
    r->clusters = g.clusters;
    if (grc || !r->rows || !r->queries || !r->cluster_of) {
        bench_gen_free(&g);
        fprintf(stderr, "cordon bench hnsw: out of memory for %zu x %u rows\n", o->size, o->dim);
        return 1;
    }
    double rss0 = bench_rss_mb();
    bench_gen_rows_of(&g, r->rows, o->size, r->cluster_of);
    bench_gen_rows_of(&g, r->queries, o->queries, NULL);
    bench_gen_free(&g);
    double rss1 = bench_rss_mb();
    r->rss_data_mb = rss1 - rss0;
    r->view = (vec_view_t){r->rows, o->dim, o->dim, (uint32_t)o->size};
    hnsw_params_t p = hnsw_params_default();
    p.m = o->m;
    p.ef_construction = o->efc;
    p.seed = (uint32_t)o->seed;
    uint32_t *ids = malloc(sizeof(uint32_t) * o->size);
    int rc = ids ? hnsw_create(p, VEC_METRIC_COSINE, o->dim, &r->h) : CDN_ERR_NOMEM;
    for (size_t i = 0; ids && i < o->size; i++)
        ids[i] = (uint32_t)i;
    uint64_t t0 = cdn_clock_ns();
    rc = rc ? rc : hnsw_build_ex(r->h, &r->view, ids, o->size, o->threads, o->prec);
    r->build_s = (double)(cdn_clock_ns() - t0) / 1e9;
    free(ids);
    if (rc) {
        fprintf(stderr, "cordon bench hnsw: build failed: %s\n", cdn_strerror(rc));
        return 1;
    }
    r->rss_graph_mb = bench_rss_mb() - rss1;
    hnsw_info_t info;
    hnsw_get_info(r->h, &info);
    r->graph_mb = (double)info.memory_bytes / (1024.0 * 1024.0);
    r->widened = info.widened;
    r->widened_nearer = info.widened_nearer;
    if (o->codes) { /* as a collection with int8_scan trains and encodes them */
        size_t train = o->size < 100000 ? o->size : 100000;
        rc = quant_create(o->dim, &r->codes, NULL);
        rc = rc ? rc : quant_train(r->codes, &r->view, NULL, train, NULL);
        rc = rc ? rc : quant_encode_rows(r->codes, &r->view, 0, (uint32_t)o->size, NULL);
        if (rc) {
            fprintf(stderr, "cordon bench hnsw: encoding 8-bit codes failed: %s\n",
                    cdn_strerror(rc));
            return 1;
        }
    }
    return 0;
}

/* Saves, reloads and checks the loaded index answers the first query identically. */
static int save_load(hb_run_t *r)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/cordon-bench-hnsw.%ld.idx", r->o.dir, (long)getpid());
    uint64_t t0 = cdn_clock_ns();
    int rc = hnsw_save(r->h, path, 1);
    r->save_s = (double)(cdn_clock_ns() - t0) / 1e9;
    if (rc) {
        fprintf(stderr, "cordon bench hnsw: save to %s failed: %s\n", path, cdn_strerror(rc));
        return 1;
    }
    FILE *f = fopen(path, "rb");
    if (f && !fseek(f, 0, SEEK_END))
        r->file_mb = (double)ftell(f) / (1024.0 * 1024.0);
    if (f)
        fclose(f);
    hnsw_t *g = NULL;
    uint64_t rev;
    t0 = cdn_clock_ns();
    rc = hnsw_load(path, &g, &rev);
    r->load_s = (double)(cdn_clock_ns() - t0) / 1e9;
    unlink(path);
    if (rc) {
        fprintf(stderr, "cordon bench hnsw: load failed: %s\n", cdn_strerror(rc));
        return 1;
    }
    topk_hit_t a[BK], b[BK];
    uint32_t na = 0, nb = 0;
    hnsw_search(r->h, &r->view, r->queries, BK, 64, NULL, HNSW_MODE_UNFILTERED, 0, NULL, a, &na);
    hnsw_search(g, &r->view, r->queries, BK, 64, NULL, HNSW_MODE_UNFILTERED, 0, NULL, b, &nb);
    r->load_same = na == nb && !memcmp(a, b, na * sizeof(topk_hit_t));
    hnsw_free(g);
    return 0;
}

static roaring_bitmap_t *random_allowed(size_t n, double frac, uint64_t seed)
{
    roaring_bitmap_t *b = roaring_bitmap_create();
    if (frac >= 1.0) {
        roaring_bitmap_add_range(b, 0, n);
        return b;
    }
    for (size_t i = 0; i < n; i++)
        if (bench_rng_unit(&seed) < frac)
            roaring_bitmap_add(b, (uint32_t)i);
    roaring_bitmap_run_optimize(b);
    return b;
}

/* Exact top-k for every query (the truth), timed as the exact plan's row. */
static void exact_rows(hb_run_t *r, const roaring_bitmap_t *allowed, double pct, uint64_t card,
                       const char *plan)
{
    for (size_t q = 0; q < r->o.queries; q++) {
        uint64_t t0 = cdn_clock_ns();
        exact_search(&r->view, VEC_METRIC_COSINE, r->queries + q * r->o.dim, allowed, BK,
                     r->truth + q * BK, &r->n_truth[q], NULL);
        r->lat[q] = (double)(cdn_clock_ns() - t0) / 1e6;
    }
    if (r->n_out < B_MAX_ROWS)
        r->out[r->n_out++] = (hb_row_t){
            plan, pct, card, 0, 1.0, median(r->lat, r->o.queries), (double)card, (double)card, 0};
}

/* Runs one HNSW plan over every query and records its row. post: unfiltered traversal with
 * k = ef, then only allowed hits kept (the plan for nearly-everything-allowed). */
static void hnsw_row_q(hb_run_t *r, const char *plan, const quant_t *codes,
                       const roaring_bitmap_t *allowed, double pct, uint64_t card, uint32_t ef)
{
    int post = !strcmp(plan, "postfilter"), fallback = !strncmp(plan, "fallb", 5);
    hnsw_mode_t mode = post || !allowed ? HNSW_MODE_UNFILTERED : HNSW_MODE_FILTERED;
    topk_hit_t *buf = malloc(sizeof(topk_hit_t) * ef);
    double rec = 0, vis = 0, dist = 0, over = 0;
    for (size_t q = 0; buf && q < r->o.queries; q++) {
        hnsw_stats_t st;
        uint32_t n = 0, k = post ? ef : BK;
        uint64_t t0 = cdn_clock_ns();
        const float *qv = r->queries + q * r->o.dim;
        hnsw_search_codes(r->h, &r->view, codes, qv, k, ef, allowed, mode, fallback ? card : 0, &st,
                          buf, &n);
        if (fallback && st.exhausted_budget) {
            size_t ne = 0;
            exact_search(&r->view, VEC_METRIC_COSINE, qv, allowed, BK, buf, &ne, NULL);
            n = (uint32_t)ne;
        }
        uint32_t kept = n;
        if (post) {
            kept = 0;
            for (uint32_t i = 0; i < n && kept < BK; i++)
                if (roaring_bitmap_contains(allowed, buf[i].id))
                    buf[kept++] = buf[i];
        }
        r->lat[q] = (double)(cdn_clock_ns() - t0) / 1e6;
        rec += recall_of(buf, kept < BK ? kept : BK, r->truth + q * BK, r->n_truth[q]);
        vis += (double)st.visited;
        dist += (double)st.distances;
        over += st.visited >= card; /* a budget of |allowed| would have sent it to exact */
    }
    free(buf);
    double nq = (double)r->o.queries;
    if (r->n_out < B_MAX_ROWS)
        r->out[r->n_out++] =
            (hb_row_t){plan,     pct,       card,     ef, rec / nq, median(r->lat, r->o.queries),
                       vis / nq, dist / nq, over / nq};
}

static void hnsw_row(hb_run_t *r, const char *plan, const roaring_bitmap_t *allowed, double pct,
                     uint64_t card, uint32_t ef)
{
    hnsw_row_q(r, plan, NULL, allowed, pct, card, ef);
}

/* Permissions that follow topics: every row of the first `clusters` centroids (so most
 * queries sit in regions with nothing allowed). */
static void measure_clustered(hb_run_t *r, uint32_t clusters)
{
    roaring_bitmap_t *allowed = roaring_bitmap_create();
    for (size_t i = 0; i < r->o.size; i++)
        if (r->cluster_of[i] < clusters)
            roaring_bitmap_add(allowed, (uint32_t)i);
    uint64_t card = roaring_bitmap_get_cardinality(allowed);
    double pct = 100.0 * (double)card / (double)r->o.size;
    exact_rows(r, allowed, pct, card, "exact-topic");
    hnsw_row(r, "filt-topic", allowed, pct, card, 64);
    hnsw_row(r, "filt-topic", allowed, pct, card, 256);
    hnsw_row(r, "fallb-topic", allowed, pct, card, 64);
    roaring_bitmap_free(allowed);
}

static void measure(hb_run_t *r)
{
    static const double pcts[] = {100, 20, 5, 1, 0.1};
    static const uint32_t efs_unf[] = {16, 32, 64, 128, 256};
    static const uint32_t efs_filt[] = {32, 64, 128};
    for (size_t i = 0; i < sizeof pcts / sizeof pcts[0]; i++) {
        double frac = pcts[i] / 100.0;
        roaring_bitmap_t *allowed = random_allowed(r->o.size, frac, r->o.seed + 1000 + i);
        uint64_t card = roaring_bitmap_get_cardinality(allowed);
        exact_rows(r, frac >= 1.0 ? NULL : allowed, pcts[i], card, "exact");
        if (frac >= 1.0)
            for (size_t e = 0; e < sizeof efs_unf / sizeof efs_unf[0]; e++) {
                hnsw_row(r, "hnsw", NULL, pcts[i], card, efs_unf[e]);
                if (r->codes)
                    hnsw_row_q(r, "hnsw-int8", r->codes, NULL, pcts[i], card, efs_unf[e]);
            }
        for (size_t e = 0; e < sizeof efs_filt / sizeof efs_filt[0]; e++) {
            hnsw_row(r, "filtered", allowed, pcts[i], card, efs_filt[e]);
            if (r->codes)
                hnsw_row_q(r, "filt-int8", r->codes, allowed, pcts[i], card, efs_filt[e]);
        }
        if (frac < 1.0)
            hnsw_row(r, "fallback", allowed, pcts[i], card, 64);
        /* Post-filtering needs about k / share candidates to keep k allowed ones. */
        double want = ceil(2.0 * BK / frac);
        uint32_t ef = want < 64 ? 64 : want > 4000 ? 4000 : (uint32_t)want;
        if (frac < 1.0)
            hnsw_row(r, "postfilter", allowed, pcts[i], card, ef);
        roaring_bitmap_free(allowed);
    }
    measure_clustered(r, r->clusters / 20);
    measure_clustered(r, r->clusters / 100);
}

static void print_json(const hb_run_t *r)
{
    const hb_opts_t *o = &r->o;
    printf("{\"bench\":\"hnsw\",\"size\":%zu,\"dim\":%u,\"queries\":%zu,\"k\":%d,\"m\":%u,"
           "\"ef_construction\":%u,\"threads\":%u,\"seed\":%llu,\"isa\":\"%s\",\"build_s\":%.3f,"
           "\"rss_vectors_mb\":%.1f,\"rss_graph_mb\":%.1f,\"graph_mb\":%.1f,\"file_mb\":%.1f,"
           "\"widened\":%u,\"widened_nearer\":%u,\"save_s\":%.3f,\"load_s\":%.3f,"
           "\"load_identical\":%s,\"rows\":[",
           o->size, o->dim, o->queries, BK, o->m, o->efc, o->threads, (unsigned long long)o->seed,
           vec_isa_name(vec_isa_best()), r->build_s, r->rss_data_mb, r->rss_graph_mb, r->graph_mb,
           r->file_mb, r->widened, r->widened_nearer, r->save_s, r->load_s,
           r->load_same ? "true" : "false");
    for (size_t i = 0; i < r->n_out; i++) {
        const hb_row_t *w = &r->out[i];
        printf("%s{\"plan\":\"%s\",\"allowed_pct\":%g,\"allowed\":%llu,\"ef\":%u,"
               "\"recall\":%.4f,\"p50_ms\":%.4f,\"visited\":%.1f,\"distances\":%.1f,"
               "\"over_budget\":%.3f}",
               i ? "," : "", w->plan, w->pct, (unsigned long long)w->allowed, w->ef, w->recall,
               w->p50_ms, w->visited, w->distances, w->over_budget);
    }
    printf("]}\n");
}

static void print_table(const hb_run_t *r)
{
    const hb_opts_t *o = &r->o;
    printf("HNSW, %zu x %u generated unit rows (cosine, %s generator, seed %llu), m=%u, "
           "ef_construction=%u, %s kernels\n",
           o->size, o->dim, bench_gen_name(o->gen), (unsigned long long)o->seed, o->m, o->efc,
           vec_isa_name(vec_isa_best()));
    printf("build: %.1f s with %u threads (%.0f inserts/s), construction precision %s\n",
           r->build_s, o->threads, (double)o->size / r->build_s,
           o->prec == HNSW_BUILD_FLOAT  ? "float"
           : o->prec == HNSW_BUILD_BF16 ? "bf16"
           : o->prec == HNSW_BUILD_I8   ? "i8"
                                        : "auto");
    printf("construction searches widened: %u (%.2f%% of inserts), %u of them found a nearer "
           "row\n",
           r->widened, 100.0 * r->widened / (double)o->size, r->widened_nearer);
    printf("memory (VmRSS): vectors %.0f MB, graph %.0f MB (index counts %.0f MB)\n",
           r->rss_data_mb, r->rss_graph_mb, r->graph_mb);
    printf("save: %.2f s, file %.0f MB; load: %.2f s; loaded index answers identically: %s\n\n",
           r->save_s, r->file_mb, r->load_s, r->load_same ? "yes" : "NO");
    printf("recall@%d and p50 latency over %zu queries (one thread); over_budget = share of\n"
           "queries that visited at least |allowed| nodes\n",
           BK, o->queries);
    printf("%8s %9s %-11s %5s %7s %9s %9s %9s %6s\n", "allowed", "ids", "plan", "ef", "recall",
           "p50_ms", "visited", "dists", "over");
    for (size_t i = 0; i < r->n_out; i++) {
        const hb_row_t *w = &r->out[i];
        printf("%7.3g%% %9llu %-11s %5u %7.4f %9.3f %9.0f %9.0f %5.0f%%\n", w->pct,
               (unsigned long long)w->allowed, w->plan, w->ef, w->recall, w->p50_ms, w->visited,
               w->distances, 100 * w->over_budget);
    }
}

int bench_hnsw_main(int argc, char **argv)
{
    hb_run_t *r = calloc(1, sizeof(*r));
    if (!r)
        return 1;
    int rc = parse_opts(argc, argv, &r->o);
    if (rc) {
        free(r);
        return rc < 0 ? 0 : rc;
    }
    r->truth = malloc(sizeof(topk_hit_t) * BK * r->o.queries);
    r->n_truth = malloc(sizeof(size_t) * r->o.queries);
    r->lat = malloc(sizeof(double) * r->o.queries);
    rc = r->truth && r->n_truth && r->lat ? setup_index(r) : 1;
    rc = rc ? rc : save_load(r);
    if (!rc) {
        measure(r);
        if (r->o.json)
            print_json(r);
        else
            print_table(r);
    }
    hnsw_free(r->h);
    quant_free(r->codes);
    free(r->rows);
    free(r->queries);
    free(r->cluster_of);
    free(r->truth);
    free(r->n_truth);
    free(r->lat);
    free(r);
    return rc;
}
