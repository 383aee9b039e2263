/* bench_churn.c: `cordon bench churn`: what replacing chunks costs a vector collection. A replace
 * (cordon_put of an existing id) appends a row to the vector file and a node to the HNSW graph and
 * leaves the old ones as tombstones; this loads N generated chunks, replaces a share of them in
 * batches and, at checkpoints, measures recall@10 (against the benchmark's own brute force over
 * the live vectors), search latency, engine memory, the collection's sizes and the data directory
 * on disk; then it compacts the collection (cordon_collection_compact) and measures again, and a
 * fresh collection of the final live vectors, measured the same way, is the baseline. Relies on the
 * public API (cordon.h), bench_gen, bench_util and base/clock, base/mem. */
#include "bench_churn.h"
#include "base/clock.h"
#include "base/mem.h"
#include "bench_gen.h"
#include "bench_util.h"
#include "cordon.h"

#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif

#define CHURN_K 10
#define CHURN_COLL "churn"
#define CHURN_ALL "group:all"
#define CHURN_THREADS 2     /* the machine's cores, for the brute force */
#define CHURN_PLANS 6       /* distinct plan names a checkpoint lists */
#define CHURN_PASSES_MAX 10 /* --replace: at most ten passes over the collection */
#define CHURN_CHECKPOINTS_MAX 100
#define CHURN_BAD_MSGS 5
#define CHURN_EFS_MAX 8 /* --efs: breadths measured beside the calibrated one */

typedef struct churn_opts {
    size_t size, dim, batch, checkpoints, queries;
    double replace;
    uint64_t seed;
    const char *data;
    int keep, json, reopen_each;
    uint32_t efs[CHURN_EFS_MAX]; /* --efs: the compacted and fresh collections at these too */
    size_t n_efs;
} churn_opts_t;

/* One measurement: a checkpoint of the replacing, or the fresh build. */
typedef struct churn_point {
    const char *phase;
    double share, recall, p50_ms, p99_ms, rss_mb, file_mb, puts_per_s, reopen_s;
    double compact_s;            /* the compaction's time (phase "compact") */
    cordon_collection_info info; /* rows, chunks and the sizes */
    uint64_t disk_bytes;
    char plans[160];
} churn_point_t;

/* The compacted collection (0) and the fresh build (1) at the breadths of --efs. */
typedef struct churn_sweep {
    double recall[2][CHURN_EFS_MAX], p50_ms[2][CHURN_EFS_MAX];
} churn_sweep_t;

typedef struct churn_run {
    churn_opts_t o;
    bench_gen_t gen;
    float *live;     /* size x dim: every live chunk's vector, chunk i at row i */
    float *queries;  /* queries x dim, held out from the same generator */
    float *batch;    /* batch x dim: the replacing rows of one put */
    float *kth;      /* per query: the true 10th distance over the live vectors */
    double *lat;     /* per query: ms in cordon_search */
    uint32_t *order; /* this pass's replacing order: a permutation of the ids */
    uint64_t rng;    /* the replacing order's generator */
    cordon_chunk *ch;
    char (*ids)[24];
    cordon_t *db;
    char root[4096], dir[2][4200]; /* dir[0] churned, dir[1] the fresh build */
    size_t bad_hits;
    churn_sweep_t sweep;
} churn_run_t;

static void usage(FILE *f)
{
    fprintf(f, "usage: cordon bench churn [--size N] [--dim D] [--replace F] [--batch B]\n"
               "           [--checkpoints C] [--queries Q] [--seed S] [--reopen-each]\n"
               "           [--efs E1,E2,...] [--data DIR] [--keep] [--format table|json]\n"
               "  Loads N generated chunks (topics, cosine, ACL group:all), reopens, then\n"
               "  replaces F x N chunks with new vectors (same ids), B a put, in a random order\n"
               "  (a new permutation each pass: at most once per chunk for F <= 1). After the\n"
               "  load and at C points over the replacing, Q held-out queries (k 10, auto):\n"
               "  recall@10 against a brute force over the live vectors, p50/p99 ms, engine RSS\n"
               "  (own arrays left out), rows, sizes, disk, plans. Then the collection is\n"
               "  compacted (cordon_collection_compact) and measured again; then a fresh\n"
               "  collection of the final vectors, measured alike, and the ratios to it of the\n"
               "  last checkpoint and of the compacted collection.\n"
               "  Exits 1 on an engine error or a hit that is not a live chunk.\n"
               "  --reopen-each: close and reopen before every checkpoint (what a restart sees).\n"
               "  --efs E1,E2,...: the compacted collection and the fresh build measured again\n"
               "  at each of these search breadths (up to 8, each 1 to 4096): a graph against\n"
               "  a graph at equal breadth, apart from the breadths their calibrations chose.\n"
               "  --data DIR: use and keep DIR/churn and DIR/fresh (default: a temporary\n"
               "  directory, removed unless --keep).\n"
               "  defaults: --size 100000 --dim 128 --replace 0.3 --batch 1000 --checkpoints 6\n"
               "            --queries 200 --seed 42\n");
}

/* --efs: a comma-separated list of breadths. */
static int parse_efs(churn_opts_t *o, const char *v)
{
    const char *p = v ? v : "";
    o->n_efs = 0;
    for (;;) {
        char *end;
        unsigned long ef = strtoul(p, &end, 10);
        if (end == p || ef < 1 || ef > 4096 || (*end && *end != ',') || o->n_efs == CHURN_EFS_MAX) {
            fprintf(stderr,
                    "cordon bench churn: --efs needs up to %d breadths from 1 to 4096, comma-"
                    "separated (got '%s')\n",
                    CHURN_EFS_MAX, v ? v : "");
            return 2;
        }
        o->efs[o->n_efs++] = (uint32_t)ef;
        if (!*end)
            return 0;
        p = end + 1; /* past the comma: another breadth must follow */
    }
}

static int parse_one(churn_opts_t *o, const char *a, const char *v)
{
    char *end = NULL;
    int rc = 0;
    if (!strcmp(a, "--size"))
        rc = bench_parse_size("churn", a, v, 100, 10000000, &o->size);
    else if (!strcmp(a, "--dim"))
        rc = bench_parse_size("churn", a, v, 2, CORDON_DIM_MAX, &o->dim);
    else if (!strcmp(a, "--replace")) {
        o->replace = v ? strtod(v, &end) : -1;
        if (!v || *end || !(o->replace >= 0) || o->replace > CHURN_PASSES_MAX) {
            fprintf(stderr, "cordon bench churn: --replace needs a share from 0 to %d (got '%s')\n",
                    CHURN_PASSES_MAX, v ? v : "");
            rc = 2;
        }
    } else if (!strcmp(a, "--batch"))
        rc = bench_parse_size("churn", a, v, 1, CORDON_BATCH_MAX, &o->batch);
    else if (!strcmp(a, "--checkpoints"))
        rc = bench_parse_size("churn", a, v, 1, CHURN_CHECKPOINTS_MAX, &o->checkpoints);
    else if (!strcmp(a, "--queries"))
        rc = bench_parse_size("churn", a, v, 1, 100000, &o->queries);
    else if (!strcmp(a, "--seed"))
        rc = bench_parse_u64("churn", a, v, 0, UINT64_MAX, &o->seed);
    else if (!strcmp(a, "--efs"))
        rc = parse_efs(o, v);
    else if (!strcmp(a, "--data") && v)
        o->data = v;
    else if (!strcmp(a, "--format") && v && (!strcmp(v, "json") || !strcmp(v, "table")))
        o->json = !strcmp(v, "json");
    else {
        fprintf(stderr, "cordon bench churn: unknown option or missing value '%s'\n", a);
        usage(stderr);
        return 2;
    }
    return rc;
}

/* Returns 0, -1 after --help, or 2 (usage). */
static int parse_opts(int argc, char **argv, churn_opts_t *o)
{
    *o = (churn_opts_t){.size = 100000,
                        .dim = 128,
                        .batch = 1000,
                        .checkpoints = 6,
                        .queries = 200,
                        .replace = 0.3,
                        .seed = 42};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        int rc;
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            usage(stdout);
            return -1;
        }
        if (!strcmp(a, "--keep") || !strcmp(a, "--reopen-each")) {
            *(a[2] == 'k' ? &o->keep : &o->reopen_each) = 1;
            continue;
        }
        i++;
        if ((rc = parse_one(o, a, v)) != 0)
            return rc;
    }
    return 0;
}

/* Eight partial sums in a GCC vector: plain code, yet fast enough to recompute the truth over
 * 100,000 x 128 at every checkpoint. 1 - dot: rows and queries are unit length. */
typedef float churn_v8 __attribute__((vector_size(32)));

static float churn_dist(const float *a, const float *b, size_t dim)
{
    churn_v8 acc = {0}, x, y;
    float t = 0;
    size_t d = 0;
    for (; d + 8 <= dim; d += 8) {
        memcpy(&x, a + d, sizeof x);
        memcpy(&y, b + d, sizeof y);
        acc += x * y;
    }
    for (; d < dim; d++)
        t += a[d] * b[d];
    t += ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7]));
    return 1.0f - t;
}

typedef struct truth_job {
    churn_run_t *r;
    size_t first;
} truth_job_t;

/* The true 10th distance of every CHURN_THREADS-th query from job->first. */
static void *truth_thread(void *arg)
{
    truth_job_t *j = arg;
    const churn_opts_t *o = &j->r->o;
    for (size_t q = j->first; q < o->queries; q += CHURN_THREADS) {
        const float *qv = j->r->queries + q * o->dim;
        float best[CHURN_K];
        size_t n = 0;
        for (size_t i = 0; i < o->size; i++) {
            float d = churn_dist(qv, j->r->live + i * o->dim, o->dim);
            if (n == CHURN_K && d >= best[CHURN_K - 1])
                continue;
            size_t p = n < CHURN_K ? n++ : CHURN_K - 1;
            for (; p > 0 && best[p - 1] > d; p--)
                best[p] = best[p - 1];
            best[p] = d;
        }
        j->r->kth[q] = best[n - 1];
    }
    return NULL;
}

static void truth_compute(churn_run_t *r)
{
    truth_job_t job[CHURN_THREADS];
    pthread_t th[CHURN_THREADS];
    int started[CHURN_THREADS];
    for (size_t i = 0; i < CHURN_THREADS; i++) {
        job[i] = (truth_job_t){r, i};
        started[i] = pthread_create(&th[i], NULL, truth_thread, &job[i]) == 0;
        if (!started[i])
            truth_thread(&job[i]); /* no thread: do its share here */
    }
    for (size_t i = 0; i < CHURN_THREADS; i++)
        if (started[i])
            pthread_join(th[i], NULL);
}

/* Recall@10 of one query's hits, tie-aware: a hit counts when its distance, computed here from
 * the live vector, is within the true 10th plus a rounding tolerance. */
static double score_hits(churn_run_t *r, size_t q, const cordon_result *res)
{
    const float *qv = r->queries + q * r->o.dim;
    float kth = r->kth[q], tol = kth + 1e-4f * fabsf(kth) + 1e-5f;
    size_t good = 0;
    for (size_t i = 0; i < res->n_hits; i++) {
        const char *id = res->hits[i].id;
        char *end;
        unsigned long n = strtoul(id + 1, &end, 10);
        int dup = 0;
        for (size_t j = 0; j < i && !dup; j++)
            dup = !strcmp(id, res->hits[j].id);
        if (id[0] != 'c' || *end || end == id + 1 || n >= r->o.size || dup) {
            if (r->bad_hits++ < CHURN_BAD_MSGS)
                fprintf(stderr, "cordon bench churn: query %zu: hit %s is %s\n", q, id,
                        dup ? "repeated" : "not a chunk of the collection");
            continue;
        }
        good += churn_dist(qv, r->live + n * r->o.dim, r->o.dim) <= tol;
    }
    return (double)(good < CHURN_K ? good : CHURN_K) / CHURN_K;
}

/* Counts a plan name: a new one takes the next free slot; past the last, "other". */
static void plan_count(char names[CHURN_PLANS][32], size_t counts[CHURN_PLANS], const char *plan)
{
    int i = 0;
    while (i < CHURN_PLANS - 1 && names[i][0] && strcmp(names[i], plan))
        i++;
    if (!names[i][0])
        snprintf(names[i], sizeof names[i], "%s", i < CHURN_PLANS - 1 ? plan : "other");
    counts[i]++;
}

/* Runs every query, one at a time, timing cordon_search only, at breadth ef (0: the
 * collection's). A first pass, not measured, warms the pages a reopen left cold, so that every
 * point (and the fresh build) is a steady state. */
static int run_queries(churn_run_t *r, uint32_t ef, churn_point_t *p)
{
    const char *pr[1] = {CHURN_ALL};
    cordon_subject subj = {.principals = pr, .n_principals = 1};
    char names[CHURN_PLANS][32] = {{0}};
    size_t counts[CHURN_PLANS] = {0}, nq = r->o.queries, len = 0;
    double recall = 0;
    truth_compute(r);
    for (size_t i = 0; i < 2 * nq; i++) {
        size_t q = i % nq;
        cordon_query qq = {.vector = r->queries + q * r->o.dim, .k = CHURN_K, .ef_search = ef};
        cordon_result *res = NULL;
        cordon_error e = {0};
        uint64_t t0 = cdn_clock_ns();
        int rc = cordon_search(r->db, CHURN_COLL, &subj, &qq, &res, &e);
        r->lat[q] = (double)(cdn_clock_ns() - t0) / 1e6;
        if (rc) {
            fprintf(stderr, "cordon bench churn: search failed: %s (%s)\n", e.message,
                    cordon_strerror(rc));
            return rc;
        }
        if (i >= nq) {
            recall += score_hits(r, q, res);
            plan_count(names, counts, res->plan);
        }
        cordon_result_free(res);
    }
    qsort(r->lat, nq, sizeof *r->lat, bench_cmp_double);
    p->recall = recall / (double)nq;
    p->p50_ms = r->lat[nq / 2];
    p->p99_ms = r->lat[(size_t)((double)(nq - 1) * 0.99 + 0.5)];
    for (int i = 0; i < CHURN_PLANS && names[i][0] && len < sizeof p->plans; i++)
        len += (size_t)snprintf(p->plans + len, sizeof p->plans - len, "%s%s:%zu", i ? " " : "",
                                names[i], counts[i]);
    return CORDON_OK;
}

/* Resident memory without the benchmark's own arrays: what the engine keeps. Freed heap is
 * handed back first, as the allocator keeps freed pages resident. */
static double engine_rss(const churn_run_t *r)
{
#ifdef __GLIBC__
    malloc_trim(0);
#endif
    const churn_opts_t *o = &r->o;
    double own = bench_resident_mb(r->live, o->size * o->dim * sizeof(float)) +
                 bench_resident_mb(r->queries, o->queries * o->dim * sizeof(float)) +
                 bench_resident_mb(r->batch, o->batch * o->dim * sizeof(float)) +
                 bench_resident_mb(r->order, o->size * sizeof *r->order);
    return bench_rss_mb() - own;
}

/* Measures the open collection of dir[fresh] as point p; swept: also at the breadths of --efs
 * (the compacted collection and the fresh build). */
static int measure(churn_run_t *r, int fresh, int swept, churn_point_t *p)
{
    cordon_error e = {0};
    int rc = run_queries(r, 0, p);
    for (size_t i = 0; rc == CORDON_OK && swept && i < r->o.n_efs; i++) {
        churn_point_t at = {0};
        rc = run_queries(r, r->o.efs[i], &at);
        r->sweep.recall[fresh][i] = at.recall;
        r->sweep.p50_ms[fresh][i] = at.p50_ms;
    }
    if (rc == CORDON_OK && (rc = cordon_collection_info_get(r->db, CHURN_COLL, &p->info, &e)))
        fprintf(stderr, "cordon bench churn: collection info: %s\n", e.message);
    if (rc)
        return rc;
    p->phase = fresh ? "fresh" : "churn";
    p->rss_mb = engine_rss(r);
    p->file_mb = bench_status_mb("RssFile"); /* of rss_mb: mapped files, the vector file's pages */
    p->disk_bytes = bench_dir_bytes(r->dir[fresh]);
    return CORDON_OK;
}

/* Puts n chunks from position at: of the replacing order, or ids at.. when order is NULL. Their
 * vectors are already in r->live. */
static int put_batch(churn_run_t *r, const uint32_t *order, size_t at, size_t n)
{
    static const char *const acl[1] = {CHURN_ALL};
    cordon_error e = {0};
    for (size_t b = 0; b < n; b++) {
        size_t id = order ? order[at + b] : at + b;
        snprintf(r->ids[b], sizeof r->ids[b], "c%zu", id);
        r->ch[b] = (cordon_chunk){
            .id = r->ids[b], .vector = r->live + id * r->o.dim, .allowed = acl, .n_allowed = 1};
    }
    int rc = cordon_put(r->db, CHURN_COLL, r->ch, n, NULL, &e);
    if (rc)
        fprintf(stderr, "cordon bench churn: put: %s (%s)\n", e.message, cordon_strerror(rc));
    return rc;
}

/* Closes r->db (when open) and opens dir, as a restart would. */
static int reopen(churn_run_t *r, const char *dir, double *secs)
{
    cordon_error e = {0};
    cordon_close(r->db);
    r->db = NULL;
    uint64_t t0 = cdn_clock_ns();
    int rc = cordon_open(dir, NULL, &r->db, &e);
    *secs = (double)(cdn_clock_ns() - t0) / 1e9;
    if (rc)
        fprintf(stderr, "cordon bench churn: open %s: %s (%s)\n", dir, e.message,
                cordon_strerror(rc));
    return rc;
}

/* A new collection in dir[fresh] holding r->live, closed and reopened, then measured. */
static int load_measure(churn_run_t *r, int fresh, double share, churn_point_t *p)
{
    cordon_collection_spec spec = {.name = CHURN_COLL,
                                   .dim = (uint32_t)r->o.dim,
                                   .metric = CORDON_METRIC_COSINE,
                                   .asserted_principals = 1};
    cordon_error e = {0};
    double ignored;
    int rc = reopen(r, r->dir[fresh], &ignored);
    if (rc == CORDON_OK && (rc = cordon_collection_create(r->db, &spec, &e)) != 0)
        fprintf(stderr, "cordon bench churn: create: %s\n", e.message);
    uint64_t t0 = cdn_clock_ns();
    for (size_t at = 0; rc == CORDON_OK && at < r->o.size; at += r->o.batch)
        rc = put_batch(r, NULL, at, r->o.size - at < r->o.batch ? r->o.size - at : r->o.batch);
    p->puts_per_s = (double)r->o.size / ((double)(cdn_clock_ns() - t0) / 1e9);
    rc = rc ? rc : reopen(r, r->dir[fresh], &p->reopen_s);
    rc = rc ? rc : measure(r, fresh, fresh, p);
    p->share = share;
    return rc;
}

/* Replaces chunks from position *done up to target of the replacing, with fresh rows. Each pass
 * over the collection is a new permutation, and a put never spans two passes, so no put names
 * an id twice. */
static int replace_to(churn_run_t *r, size_t *done, size_t target)
{
    const size_t n_ids = r->o.size, dim = r->o.dim;
    int rc = CORDON_OK;
    while (rc == CORDON_OK && *done < target) {
        size_t at = *done % n_ids, n = r->o.batch;
        if (at == 0)
            for (size_t i = n_ids - 1; i > 0; i--) { /* Fisher-Yates */
                size_t j = (size_t)(bench_rng_next(&r->rng) % (i + 1));
                uint32_t t = r->order[i];
                r->order[i] = r->order[j];
                r->order[j] = t;
            }
        n = n < target - *done ? n : target - *done;
        n = n < n_ids - at ? n : n_ids - at;
        bench_gen_rows_of(&r->gen, r->batch, n, NULL);
        for (size_t b = 0; b < n; b++)
            memcpy(r->live + (size_t)r->order[at + b] * dim, r->batch + b * dim,
                   dim * sizeof(float));
        rc = put_batch(r, r->order, at, n);
        *done += n;
    }
    return rc;
}

/* Checkpoint 0 after the load, then one every total / checkpoints replaced chunks. */
static int run_churn(churn_run_t *r, churn_point_t *pts)
{
    const churn_opts_t *o = &r->o;
    size_t total = (size_t)(o->replace * (double)o->size + 0.5), done = 0;
    int rc = load_measure(r, 0, 0, &pts[0]);
    for (size_t c = 1; rc == CORDON_OK && c <= o->checkpoints; c++) {
        size_t from = done;
        uint64_t t0 = cdn_clock_ns();
        rc = replace_to(r, &done, total * c / o->checkpoints);
        double secs = (double)(cdn_clock_ns() - t0) / 1e9;
        pts[c].puts_per_s = secs > 0 ? (double)(done - from) / secs : 0;
        if (rc == CORDON_OK && o->reopen_each)
            rc = reopen(r, r->dir[0], &pts[c].reopen_s);
        rc = rc ? rc : measure(r, 0, 0, &pts[c]);
        pts[c].share = (double)done / (double)o->size;
        if (!o->json && isatty(2))
            fprintf(stderr, "\rcheckpoint %zu / %zu", c, o->checkpoints);
    }
    if (!o->json && isatty(2))
        fprintf(stderr, "\n");
    return rc;
}

/* Compacts the churned collection, open as it is, and measures it like a checkpoint. */
static int compact_measure(churn_run_t *r, const churn_point_t *last, churn_point_t *p)
{
    cordon_compact_stats st;
    cordon_error e = {0};
    int rc = cordon_collection_compact(r->db, CHURN_COLL, &st, &e);
    if (rc) {
        fprintf(stderr, "cordon bench churn: compact: %s (%s)\n", e.message, cordon_strerror(rc));
        return rc;
    }
    p->compact_s = st.ms / 1e3;
    rc = measure(r, 0, 1, p);
    p->phase = "compact";
    p->share = last->share;
    return rc;
}

#define MB(x) ((double)(x) / 1048576.0)
#define CHURN_RATIOS 7

static const char *const ratio_names[CHURN_RATIOS] = {
    "p50", "p99", "recall", "rss", "vector_bytes", "graph_bytes", "disk_bytes"};

/* The figures the ratios compare, in the order of ratio_names. */
static double figure(const churn_point_t *p, int i)
{
    const double f[CHURN_RATIOS] = {p->p50_ms,
                                    p->p99_ms,
                                    p->recall,
                                    p->rss_mb,
                                    (double)p->info.vector_bytes,
                                    (double)p->info.graph_bytes,
                                    (double)p->disk_bytes};
    return f[i];
}

/* The last checkpoint over the fresh build (0 where the fresh figure is 0). */
static void ratios(const churn_point_t *last, const churn_point_t *fresh, double out[CHURN_RATIOS])
{
    for (int i = 0; i < CHURN_RATIOS; i++)
        out[i] = figure(fresh, i) > 0 ? figure(last, i) / figure(fresh, i) : 0;
}

static void print_ratios(const char *what, const churn_point_t *p, const churn_point_t *fresh)
{
    double rt[CHURN_RATIOS];
    ratios(p, fresh, rt);
    printf("%s / fresh build:", what);
    for (int i = 0; i < CHURN_RATIOS; i++)
        printf(" %s %.*f%s", ratio_names[i], i == 2 ? 4 : 2, rt[i],
               i + 1 < CHURN_RATIOS ? "," : "\n");
}

static void print_table(const churn_run_t *r, const churn_point_t *pts, size_t n)
{
    const churn_opts_t *o = &r->o;
    printf("churn benchmark: generated topics %zu x %zu (cosine), replacing %g x %zu chunks in "
           "puts of %zu, %zu queries, k %d, strategy auto%s\n",
           o->size, o->dim, o->replace, o->size, o->batch, o->queries, CHURN_K,
           o->reopen_each ? ", reopened before every checkpoint" : "");
    printf("load %.0f chunks/s, reopen %.2f s; fresh build %.0f chunks/s, reopen %.2f s\n\n",
           pts[0].puts_per_s, pts[0].reopen_s, pts[n - 1].puts_per_s, pts[n - 1].reopen_s);
    printf("%-6s %8s %8s %8s %7s %5s %7s %7s %7s %7s %8s %8s %8s %7s %8s %8s  %s\n", "phase",
           "replaced", "rows", "chunks", "recall", "ef", "p50_ms", "p99_ms", "rss_MB", "file_MB",
           "vecs_MB", "graph_MB", "codes_MB", "acl_MB", "disk_MB", "puts/s", "plans");
    for (size_t i = 0; i < n; i++) {
        const churn_point_t *p = &pts[i];
        printf("%-6s %7.1f%% %8llu %8llu %7.4f %5u %7.3f %7.3f %7.1f %7.1f %8.1f %8.1f %8.1f %7.1f "
               "%8.1f %8.0f  %s\n",
               p->phase, p->share * 100, (unsigned long long)p->info.rows,
               (unsigned long long)p->info.chunks, p->recall, p->info.hnsw_ef_calibrated, p->p50_ms,
               p->p99_ms, p->rss_mb, p->file_mb, MB(p->info.vector_bytes), MB(p->info.graph_bytes),
               MB(p->info.codes_bytes), MB(p->info.acl_bytes), MB(p->disk_bytes), p->puts_per_s,
               p->plans);
    }
    printf("\ncompaction %.2f s\n", pts[n - 2].compact_s);
    print_ratios("last checkpoint", &pts[n - 3], &pts[n - 1]);
    print_ratios("compacted", &pts[n - 2], &pts[n - 1]);
    if (o->n_efs)
        printf("\nat equal breadth (calibrated: compacted ef %u, fresh ef %u)\n"
               "%5s %17s %17s %17s %17s\n",
               pts[n - 2].info.hnsw_ef_calibrated, pts[n - 1].info.hnsw_ef_calibrated, "ef",
               "compacted_recall", "fresh_recall", "compacted_p50_ms", "fresh_p50_ms");
    for (size_t i = 0; i < o->n_efs; i++)
        printf("%5u %17.4f %17.4f %17.3f %17.3f\n", o->efs[i], r->sweep.recall[0][i],
               r->sweep.recall[1][i], r->sweep.p50_ms[0][i], r->sweep.p50_ms[1][i]);
}

static json_t *json_point(const churn_point_t *p)
{
    return json_pack("{s:s, s:f, s:I, s:I, s:f, s:I, s:f, s:f, s:f, s:f, s:f, s:f, s:f, s:f, s:f, "
                     "s:f, s:f, s:s}",
                     "phase", p->phase, "replaced_share", p->share, "rows",
                     (json_int_t)p->info.rows, "chunks", (json_int_t)p->info.chunks, "recall_at_10",
                     p->recall, "ef_calibrated", (json_int_t)p->info.hnsw_ef_calibrated, "p50_ms",
                     p->p50_ms, "p99_ms", p->p99_ms, "rss_mb", p->rss_mb, "rss_file_mb", p->file_mb,
                     "vector_mb", MB(p->info.vector_bytes), "graph_mb", MB(p->info.graph_bytes),
                     "codes_mb", MB(p->info.codes_bytes), "acl_mb", MB(p->info.acl_bytes),
                     "disk_mb", MB(p->disk_bytes), "puts_per_s", p->puts_per_s, "reopen_s",
                     p->reopen_s, "plans", p->plans);
}

static json_t *json_ratios(const churn_point_t *p, const churn_point_t *fresh)
{
    double rt[CHURN_RATIOS];
    json_t *rat = json_object();
    ratios(p, fresh, rt);
    for (int i = 0; rat && i < CHURN_RATIOS; i++)
        json_object_set_new(rat, ratio_names[i], json_real(rt[i]));
    return rat;
}

/* --efs: [{ef, compacted_recall, fresh_recall, compacted_p50_ms, fresh_p50_ms}]. */
static json_t *json_sweep(const churn_run_t *r)
{
    json_t *a = json_array();
    for (size_t i = 0; a && i < r->o.n_efs; i++)
        json_array_append_new(
            a, json_pack("{s:I, s:f, s:f, s:f, s:f}", "ef", (json_int_t)r->o.efs[i],
                         "compacted_recall", r->sweep.recall[0][i], "fresh_recall",
                         r->sweep.recall[1][i], "compacted_p50_ms", r->sweep.p50_ms[0][i],
                         "fresh_p50_ms", r->sweep.p50_ms[1][i]));
    return a;
}

static int print_json(const churn_run_t *r, const churn_point_t *pts, size_t n)
{
    json_t *rows = json_array();
    for (size_t i = 0; i < n; i++)
        json_array_append_new(rows, json_point(&pts[i]));
    json_t *doc =
        json_pack("{s:I, s:I, s:f, s:I, s:b, s:o, s:o, s:o, s:f, s:o}", "size",
                  (json_int_t)r->o.size, "dim", (json_int_t)r->o.dim, "replace", r->o.replace,
                  "batch", (json_int_t)r->o.batch, "reopen_each", r->o.reopen_each, "rows", rows,
                  "ratios", json_ratios(&pts[n - 3], &pts[n - 1]), "ratios_compacted",
                  json_ratios(&pts[n - 2], &pts[n - 1]), "compact_s", pts[n - 2].compact_s,
                  "ef_sweep", json_sweep(r));
    char *t = doc ? json_dumps(doc, JSON_REAL_PRECISION(6)) : NULL;
    if (t)
        printf("%s\n", t);
    free(t);
    json_decref(doc);
    return t ? 0 : CORDON_ERR_NOMEM;
}

/* The data directories: DIR/churn and DIR/fresh under --data, else under a new temporary one. */
static int make_dirs(churn_run_t *r)
{
    snprintf(r->root, sizeof r->root, "%s", r->o.data ? r->o.data : "/tmp/cordon-churn-XXXXXX");
    /* cordon_open makes the data directory but not its parent */
    if (r->o.data ? mkdir(r->root, 0755) && errno != EEXIST : !mkdtemp(r->root)) {
        fprintf(stderr, "cordon bench churn: cannot make the directory %s\n", r->root);
        return 2;
    }
    snprintf(r->dir[0], sizeof r->dir[0], "%s/churn", r->root);
    snprintf(r->dir[1], sizeof r->dir[1], "%s/fresh", r->root);
    return 0;
}

/* The benchmark's arrays and the first N rows and the queries of the generator. */
static int prepare(churn_run_t *r)
{
    const churn_opts_t *o = &r->o;
    r->live = cdn_malloc(o->size * o->dim * sizeof *r->live);
    r->queries = cdn_malloc(o->queries * o->dim * sizeof *r->queries);
    r->batch = cdn_malloc(o->batch * o->dim * sizeof *r->batch);
    r->kth = cdn_calloc(o->queries, sizeof *r->kth);
    r->lat = cdn_calloc(o->queries, sizeof *r->lat);
    r->order = cdn_malloc(o->size * sizeof *r->order);
    r->ch = cdn_calloc(o->batch, sizeof *r->ch);
    r->ids = cdn_calloc(o->batch, sizeof *r->ids);
    if (!r->live || !r->queries || !r->batch || !r->kth || !r->lat || !r->order || !r->ch ||
        !r->ids || bench_gen_init(&r->gen, BENCH_GEN_TOPICS, (uint32_t)o->dim, o->seed)) {
        fprintf(stderr, "cordon bench churn: out of memory\n");
        return CORDON_ERR_NOMEM;
    }
    bench_gen_rows_of(&r->gen, r->live, o->size, NULL);
    bench_gen_rows_of(&r->gen, r->queries, o->queries, NULL);
    for (size_t i = 0; i < o->size; i++)
        r->order[i] = (uint32_t)i;
    r->rng = o->seed ^ 0x636875726e000000ull; /* "churn": apart from the generator's stream */
    return CORDON_OK;
}

static void run_free(churn_run_t *r)
{
    cordon_close(r->db);
    bench_gen_free(&r->gen);
    cdn_free(r->live);
    cdn_free(r->queries);
    cdn_free(r->batch);
    cdn_free(r->kth);
    cdn_free(r->lat);
    cdn_free(r->order);
    cdn_free(r->ch);
    cdn_free(r->ids);
}

int bench_churn_main(int argc, char **argv)
{
    churn_run_t r = {0};
    churn_point_t *pts = NULL; /* checkpoint 0, the checkpoints, compacted, the fresh build */
    int rc = parse_opts(argc, argv, &r.o);
    if (rc)
        return rc < 0 ? 0 : rc;
    if ((rc = make_dirs(&r)) != 0)
        return rc;
    size_t n = r.o.checkpoints + 3;
    if (!(pts = cdn_calloc(n, sizeof *pts)))
        rc = CORDON_ERR_NOMEM;
    /* the churned engine is closed before the fresh build, so RSS compares one engine alone */
    rc = rc ? rc : prepare(&r);
    rc = rc ? rc : run_churn(&r, pts);
    rc = rc ? rc : compact_measure(&r, &pts[n - 3], &pts[n - 2]);
    rc = rc ? rc : load_measure(&r, 1, pts[n - 3].share, &pts[n - 1]);
    if (rc == CORDON_OK)
        rc = r.o.json ? print_json(&r, pts, n) : (print_table(&r, pts, n), 0);
    run_free(&r);
    cdn_free(pts);
    if (!r.o.keep && !r.o.data)
        bench_rmtree(r.root);
    else if (!r.o.json)
        printf("data directories kept: %s and %s\n", r.dir[0], r.dir[1]);
    if (r.bad_hits)
        fprintf(stderr, "cordon bench churn: %zu hit(s) not a live chunk\n", r.bad_hits);
    return rc || r.bad_hits ? 1 : 0;
}
