/* bench_repair.c: `cordon bench repair`, the graph alone under a replace workload: how a graph
 * whose nodes were replaced and repaired (hnsw_delete, hnsw_insert, hnsw_repair) searches
 * against a graph built from the same live rows, at the same breadths. No store, no planner,
 * no calibration: what `cordon bench churn` measures through a collection, with everything but
 * the graph (and, with --codes, its 8-bit traversal) taken out. Relies on vector/hnsw.h,
 * vector/exact.h, vector/quant.h and bench_gen.h. */
#include "bench_repair.h"
#include "base/clock.h"
#include "base/err.h"
#include "bench_gen.h"
#include "bench_util.h"
#include "vector/exact.h"
#include "vector/hnsw.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define RK 10 /* recall@10 */
static const uint32_t ladder[] = {32, 64, 128, 192, 256};
#define STEPS (sizeof ladder / sizeof ladder[0])

typedef struct rep_opts {
    size_t size, dim, queries;
    uint64_t seed, threads;
    double replace;
    int codes, json;
} rep_opts_t;

typedef struct rep_run {
    rep_opts_t o;
    float *rows, *queries;
    vec_view_t view;
    uint32_t *where; /* chunk -> its live row */
    roaring_bitmap_t *live;
    topk_hit_t *truth;
    size_t *n_truth;
    double *lat;
    quant_t *codes;
} rep_run_t;

static void usage(FILE *f)
{
    fprintf(f, "usage: cordon bench repair [--size N] [--dim D] [--replace F] [--queries Q]\n"
               "                           [--seed S] [--threads T] [--codes]\n"
               "                           [--format table|json]\n"
               "  Builds an HNSW graph over N generated unit vectors (topics, cosine), then\n"
               "  replaces F x N of them one at a time (a new row inserted, the old node\n"
               "  deleted), repairing the whole graph whenever an eighth of it (and at least\n"
               "  1,000 nodes) was deleted since the last repair, and once more at the end;\n"
               "  then builds a fresh graph of the same live rows. Both are searched at ef\n"
               "  32 to 256 with Q held-out queries: recall@10 against the exact scan of the\n"
               "  live rows, nodes visited and p50, and the replaced graph's ratios to the\n"
               "  fresh one. --codes: traversals scored from 8-bit codes, as a collection\n"
               "  with int8_scan searches.\n"
               "  defaults: --size 200000 --dim 128 --replace 0.3 --queries 200 --seed 42\n"
               "            --threads 2\n");
}

static int parse(int argc, char **argv, rep_opts_t *o)
{
    *o = (rep_opts_t){
        .size = 200000, .dim = 128, .queries = 200, .seed = 42, .threads = 2, .replace = 0.3};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        char *end = NULL;
        int rc = 0;
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            usage(stdout);
            return -1;
        }
        if (!strcmp(a, "--codes")) {
            o->codes = 1;
            continue;
        }
        i++;
        if (!strcmp(a, "--size"))
            rc = bench_parse_size("repair", a, v, 1000, 20000000, &o->size);
        else if (!strcmp(a, "--dim"))
            rc = bench_parse_size("repair", a, v, 2, 4096, &o->dim);
        else if (!strcmp(a, "--queries"))
            rc = bench_parse_size("repair", a, v, 1, 100000, &o->queries);
        else if (!strcmp(a, "--seed"))
            rc = bench_parse_u64("repair", a, v, 0, UINT64_MAX, &o->seed);
        else if (!strcmp(a, "--threads"))
            rc = bench_parse_u64("repair", a, v, 1, 256, &o->threads);
        else if (!strcmp(a, "--format") && v && (!strcmp(v, "json") || !strcmp(v, "table")))
            o->json = !strcmp(v, "json");
        else if (!strcmp(a, "--replace")) {
            o->replace = v ? strtod(v, &end) : -1;
            if (!v || *end || !(o->replace >= 0) || o->replace > 1) {
                fprintf(stderr,
                        "cordon bench repair: --replace needs a share from 0 to 1 "
                        "(got '%s')\n",
                        v ? v : "");
                rc = 2;
            }
        } else {
            fprintf(stderr, "cordon bench repair: unknown option or missing value '%s'\n", a);
            usage(stderr);
            rc = 2;
        }
        if (rc)
            return rc;
    }
    return 0;
}

/* Replaces o.replace x o.size chunks of h, in a seeded random order, each a new row. */
static int churn(rep_run_t *r, hnsw_t *h, double *secs)
{
    size_t n = r->o.size, reps = (size_t)(r->o.replace * (double)n);
    uint32_t *order = malloc(n * sizeof *order), since = 0;
    uint64_t rng = r->o.seed ^ 0x5eed;
    int rc = order ? CDN_OK : CDN_ERR_NOMEM;
    for (size_t i = 0; order && i < n; i++)
        order[i] = (uint32_t)i;
    for (size_t i = n - 1; order && i > 0; i--) {
        size_t j = (size_t)(bench_rng_next(&rng) % (i + 1));
        uint32_t t = order[i];
        order[i] = order[j];
        order[j] = t;
    }
    uint64_t t0 = cdn_clock_ns();
    for (size_t i = 0; rc == CDN_OK && i < reps; i++) {
        uint32_t chunk = order[i], old = r->where[chunk], row = (uint32_t)(n + i);
        if ((rc = hnsw_insert(h, &r->view, row)) == CDN_OK)
            rc = hnsw_delete(h, old);
        r->where[chunk] = row;
        roaring_bitmap_remove(r->live, old);
        roaring_bitmap_add(r->live, row);
        if (++since >= 1000 && since >= (n + i) / 8) {
            rc = rc ? rc : hnsw_repair(h, &r->view, (unsigned)r->o.threads, NULL);
            since = 0;
        }
    }
    if (rc == CDN_OK)
        rc = hnsw_repair(h, &r->view, (unsigned)r->o.threads, NULL);
    *secs = (double)(cdn_clock_ns() - t0) / 1e9;
    free(order);
    return rc;
}

typedef struct rep_row {
    double recall, visited, p50;
} rep_row_t;

static void measure(rep_run_t *r, hnsw_t *h, rep_row_t *out)
{
    topk_hit_t hits[RK];
    for (size_t s = 0; s < STEPS; s++) {
        double found = 0, visited = 0;
        for (size_t q = 0; q < r->o.queries; q++) {
            hnsw_stats_t st;
            uint32_t n = 0;
            uint64_t t0 = cdn_clock_ns();
            hnsw_search_codes(h, &r->view, r->codes, r->queries + q * r->o.dim, RK, ladder[s], NULL,
                              HNSW_MODE_UNFILTERED, 0, &st, hits, &n);
            r->lat[q] = (double)(cdn_clock_ns() - t0) / 1e6;
            visited += (double)st.visited;
            for (size_t i = 0; i < r->n_truth[q]; i++)
                for (uint32_t j = 0; j < n; j++)
                    if (hits[j].id == r->truth[q * RK + i].id) {
                        found++;
                        break;
                    }
        }
        qsort(r->lat, r->o.queries, sizeof *r->lat, bench_cmp_double);
        out[s] = (rep_row_t){found / (double)(r->o.queries * RK), visited / (double)r->o.queries,
                             r->lat[r->o.queries / 2]};
    }
}

static int prepare(rep_run_t *r)
{
    size_t n = r->o.size, reps = (size_t)(r->o.replace * (double)n), dim = r->o.dim;
    bench_gen_t g;
    r->rows = malloc((n + reps) * dim * sizeof(float));
    r->queries = malloc(r->o.queries * dim * sizeof(float));
    r->where = malloc(n * sizeof *r->where);
    r->truth = malloc(r->o.queries * RK * sizeof *r->truth);
    r->n_truth = malloc(r->o.queries * sizeof *r->n_truth);
    r->lat = malloc(r->o.queries * sizeof *r->lat);
    r->live = roaring_bitmap_create();
    if (!r->rows || !r->queries || !r->where || !r->truth || !r->n_truth || !r->lat || !r->live ||
        bench_gen_init(&g, BENCH_GEN_TOPICS, (uint32_t)dim, r->o.seed))
        return CDN_ERR_NOMEM;
    bench_gen_rows_of(&g, r->rows, n, NULL);
    bench_gen_rows_of(&g, r->queries, r->o.queries, NULL);
    bench_gen_rows_of(&g, r->rows + n * dim, reps, NULL);
    bench_gen_free(&g);
    r->view = (vec_view_t){r->rows, dim, (uint32_t)dim, (uint32_t)(n + reps)};
    for (size_t i = 0; i < n; i++)
        r->where[i] = (uint32_t)i;
    roaring_bitmap_add_range(r->live, 0, n);
    return CDN_OK;
}

static int with_codes(rep_run_t *r)
{
    if (!r->o.codes)
        return CDN_OK;
    size_t train = r->o.size < 100000 ? r->o.size : 100000;
    int rc = quant_create((uint32_t)r->o.dim, &r->codes, NULL);
    rc = rc ? rc : quant_train(r->codes, &r->view, NULL, train, NULL);
    return rc ? rc : quant_encode_rows(r->codes, &r->view, 0, r->view.count, NULL);
}

static void run_free(rep_run_t *r)
{
    free(r->rows);
    free(r->queries);
    free(r->where);
    free(r->truth);
    free(r->n_truth);
    free(r->lat);
    roaring_bitmap_free(r->live);
    quant_free(r->codes);
}

static int fail(const char *what, int rc)
{
    fprintf(stderr, "cordon bench repair: %s failed: %s\n", what, cdn_strerror(rc));
    return 1;
}

static void print_table(const rep_run_t *r, const rep_row_t *a, const rep_row_t *b, double build_s,
                        double churn_s, double fresh_s)
{
    printf("repair benchmark: generated topics %zu x %zu (cosine), %.0f%% replaced one at a "
           "time, %zu queries, %s traversal\n"
           "# build %.1f s, replacing and repairing %.1f s, fresh build %.1f s\n"
           "#  ef  recall(replaced) recall(fresh)  visited(replaced) visited(fresh)  "
           "p50_ms(replaced) p50_ms(fresh)  recall ratio  visited ratio\n",
           r->o.size, r->o.dim, r->o.replace * 100, r->o.queries, r->codes ? "8-bit" : "float",
           build_s, churn_s, fresh_s);
    for (size_t s = 0; s < STEPS; s++)
        printf("%5u %17.4f %13.4f %18.0f %14.0f %17.3f %13.3f %13.3f %14.2f\n", ladder[s],
               a[s].recall, b[s].recall, a[s].visited, b[s].visited, a[s].p50, b[s].p50,
               b[s].recall > 0 ? a[s].recall / b[s].recall : 0,
               b[s].visited > 0 ? a[s].visited / b[s].visited : 0);
}

static void print_json(const rep_run_t *r, hnsw_t *churned, const rep_row_t *a, const rep_row_t *b,
                       double build_s, double churn_s, double fresh_s)
{
    hnsw_info_t info;
    hnsw_get_info(churned, &info);
    printf("{\"size\": %zu, \"dim\": %zu, \"replace\": %g, \"codes\": %d, \"build_s\": %.3f, "
           "\"churn_s\": %.3f, \"fresh_s\": %.3f, \"nodes\": %u, \"deleted\": %u, "
           "\"deleted_linked\": %u, \"rows\": [",
           r->o.size, r->o.dim, r->o.replace, r->codes != NULL, build_s, churn_s, fresh_s,
           info.nodes, info.deleted, info.deleted_linked);
    for (size_t s = 0; s < 2 * STEPS; s++) {
        const rep_row_t *x = s < STEPS ? &a[s] : &b[s - STEPS];
        printf("%s{\"graph\": \"%s\", \"ef\": %u, \"recall_at_10\": %.4f, \"visited\": %.1f, "
               "\"p50_ms\": %.4f}",
               s ? ", " : "", s < STEPS ? "replaced" : "fresh", ladder[s % STEPS], x->recall,
               x->visited, x->p50);
    }
    printf("]}\n");
}

int bench_repair_main(int argc, char **argv)
{
    rep_run_t r = {0};
    hnsw_t *churned = NULL, *fresh = NULL;
    rep_row_t a[STEPS], b[STEPS];
    double build_s, churn_s, fresh_s;
    int rc = parse(argc, argv, &r.o);
    if (rc)
        return rc < 0 ? 0 : rc;
    if ((rc = prepare(&r)) != 0)
        return fail("generating the rows", rc);
    uint32_t *ids = malloc(r.o.size * sizeof *ids);
    for (size_t i = 0; ids && i < r.o.size; i++)
        ids[i] = (uint32_t)i;
    uint64_t t0 = cdn_clock_ns();
    rc = ids ? hnsw_create(hnsw_params_default(), VEC_METRIC_COSINE, (uint32_t)r.o.dim, &churned)
             : CDN_ERR_NOMEM;
    rc = rc ? rc : hnsw_build(churned, &r.view, ids, r.o.size, (unsigned)r.o.threads);
    build_s = (double)(cdn_clock_ns() - t0) / 1e9;
    free(ids);
    if (rc || (rc = churn(&r, churned, &churn_s)) != 0)
        return fail("building and replacing", rc);
    t0 = cdn_clock_ns();
    rc = hnsw_create(hnsw_params_default(), VEC_METRIC_COSINE, (uint32_t)r.o.dim, &fresh);
    rc = rc ? rc : hnsw_build(fresh, &r.view, r.where, r.o.size, (unsigned)r.o.threads);
    fresh_s = (double)(cdn_clock_ns() - t0) / 1e9;
    if (rc || (rc = with_codes(&r)) != 0)
        return fail("the fresh build or the codes", rc);
    for (size_t q = 0; q < r.o.queries; q++)
        if ((rc = exact_search(&r.view, VEC_METRIC_COSINE, r.queries + q * r.o.dim, r.live, RK,
                               r.truth + q * RK, &r.n_truth[q], NULL)) != 0)
            return fail("the exact scan", rc);
    measure(&r, churned, a);
    measure(&r, fresh, b);
    if (r.o.json)
        print_json(&r, churned, a, b, build_s, churn_s, fresh_s);
    else
        print_table(&r, a, b, build_s, churn_s, fresh_s);
    hnsw_free(churned);
    hnsw_free(fresh);
    run_free(&r);
    return 0;
}
