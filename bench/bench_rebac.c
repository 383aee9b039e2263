/* bench_rebac.c: `cordon bench rebac`, relationship tuples at scale through the public API: a
 * Drive-like corpus (users in groups, groups in groups, folders nested four deep under roots,
 * documents in the deepest folders, shares of folders to groups and of documents to users)
 * written with cordon_model_apply in batches, then check latency, lookup-resources of a
 * subject who reads a whole top folder, and the cost of sharing, unsharing and moving such a
 * folder (each visible to the next check, which the benchmark verifies); then, with --chunks,
 * searches of a collection whose chunks name those documents, as a reader of a tenth of them
 * and as a user who reads a handful. Relies on cordon.h, bench_util and base/clock. */
#include "bench_rebac.h"
#include "base/clock.h"
#include "bench_util.h"
#include "cordon.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define RB_USERS 10000
#define RB_GROUPS 500
#define RB_FAN 10 /* folders: 10 roots, 10 children each, four levels: 10,000 leaves */
#define RB_LEVELS 4
#define RB_BATCH 100000
#define RB_REPEAT 5

static const char SCHEMA[] =
    "{\"op\":\"put_schema\",\"schema\":{\"types\":{\"user\":{},"
    "\"group\":{\"relations\":{\"member\":[\"user\",\"group#member\"]}},"
    "\"folder\":{\"relations\":{\"parent\":[\"folder\"],\"viewer\":[\"user\",\"group#member\"]},"
    "\"permissions\":{\"view\":\"viewer + parent->view\"}},"
    "\"document\":{\"relations\":{\"parent\":[\"folder\"],\"viewer\":[\"user\",\"group#member\"]},"
    "\"permissions\":{\"view\":\"viewer + parent->view\"}}}}}";

typedef struct rb_run {
    cordon_t *db;
    char *buf; /* the op being built */
    size_t len, cap, n;
    uint64_t tuples, rng;
    unsigned long docs;
    int failed;
} rb_run_t;

static void usage(FILE *f)
{
    fprintf(f, "usage: cordon bench rebac [--tuples N] [--checks C] [--chunks K] [--seed S]\n"
               "           [--format table|json]\n"
               "  Writes about N tuples (default 1,000,000) of a Drive-like corpus: 10,000 users\n"
               "  in 500 groups (some nested), 11,110 folders four levels deep, documents in the\n"
               "  10,000 deepest folders, 100 folder shares to groups, one document share in 20\n"
               "  to a user. Then C random checks (user, document, view): p50/p95/p99 us and the\n"
               "  share allowed; lookup-resources of a user reading one top folder (a tenth of\n"
               "  the documents); sharing, unsharing and moving that folder (each a\n"
               "  write_tuples op through the durable model log, verified by the next check).\n"
               "  --chunks K (default 0: none): K chunks (16-d) naming documents d0..d(K-1), then\n"
               "  200 searches (k 10, auto) as the top folder's reader and as a user who reads\n"
               "  a few documents: p50 ms, hits.\n");
}

static int flush(rb_run_t *r)
{
    cordon_error err;
    if (!r->n)
        return 0;
    if (r->len + 4 > r->cap)
        return -1;
    memcpy(r->buf + r->len, "]}", 3);
    if (cordon_model_apply(r->db, r->buf, NULL, &err)) {
        fprintf(stderr, "cordon bench rebac: write_tuples: %s\n", err.message);
        r->failed = 1;
        return -1;
    }
    r->tuples += r->n;
    r->n = 0;
    r->len = 0;
    return 0;
}

static int tuple(rb_run_t *r, const char *fmt, unsigned long a, unsigned long b)
{
    char t[160];
    int n = snprintf(t, sizeof t, fmt, a, b);
    if (r->failed || n < 0)
        return -1;
    if (r->len + (size_t)n + 64 > r->cap) {
        size_t cap = r->cap ? r->cap * 2 : (size_t)1 << 20;
        char *p = realloc(r->buf, cap);
        if (!p)
            return -1;
        r->buf = p;
        r->cap = cap;
    }
    if (!r->n)
        r->len = (size_t)sprintf(r->buf, "{\"op\":\"write_tuples\",\"writes\":[");
    r->len += (size_t)sprintf(r->buf + r->len, "%s\"%s\"", r->n ? "," : "", t);
    return ++r->n == RB_BATCH ? flush(r) : 0;
}

/* Folder ids: level L (0 = roots), index i within the level. */
static unsigned long folder(int level, unsigned long i)
{
    static const unsigned long base[RB_LEVELS] = {0, 10, 110, 1110};
    return base[level] + i;
}

static int build(rb_run_t *r, uint64_t want)
{
    unsigned long leaves = 10000, docs;
    uint64_t fixed = RB_USERS + RB_GROUPS / 10 + 1110 + 100;
    docs = want > fixed ? (unsigned long)((want - fixed) * 20 / 21) : 1000;
    r->docs = docs;
    for (unsigned long u = 0; u < RB_USERS; u++) /* each user in one group */
        tuple(r, "group:g%lu#member@user:u%lu", u % RB_GROUPS, u);
    for (unsigned long g = 0; g < RB_GROUPS / 10; g++) /* g0..g49 hold one more group each */
        tuple(r, "group:g%lu#member@group:g%lu#member", g, RB_GROUPS / 10 + g * 9 + 1);
    for (int l = 1; l < RB_LEVELS; l++)
        for (unsigned long i = 0; i < 10ul * (l == 1 ? 10 : l == 2 ? 100 : 1000); i++)
            tuple(r, "folder:f%lu#parent@folder:f%lu", folder(l, i), folder(l - 1, i / RB_FAN));
    for (unsigned long i = 0; i < 100; i++) /* level-1 folders shared with a group each */
        tuple(r, "folder:f%lu#viewer@group:g%lu#member", folder(1, i),
              bench_rng_next(&r->rng) % RB_GROUPS);
    for (unsigned long d = 0; d < docs && !r->failed; d++) {
        tuple(r, "document:d%lu#parent@folder:f%lu", d, folder(3, d % leaves));
        if (d % 20 == 0)
            tuple(r, "document:d%lu#viewer@user:u%lu", d, bench_rng_next(&r->rng) % RB_USERS);
    }
    return r->failed || flush(r) ? -1 : 0;
}

static int count_one(void *ctx, const char *name)
{
    (void)name;
    (*(size_t *)ctx)++;
    return 0;
}

static double pct(double *v, size_t n, double p)
{
    return n ? v[(size_t)(p * (double)(n - 1))] : 0;
}

/* One write_tuples op, timed in ms. */
static double timed_op(cordon_t *db, const char *op, int *bad)
{
    cordon_error err;
    uint64_t t0 = cdn_clock_ns();
    if (cordon_model_apply(db, op, NULL, &err)) {
        fprintf(stderr, "cordon bench rebac: %s: %s\n", op, err.message);
        *bad = 1;
    }
    return (double)(cdn_clock_ns() - t0) / 1e6;
}

/* K chunks naming documents d0..d(K-1); the searches' p50 ms as subject, and the mean hits. */
static int load_chunks(rb_run_t *r, uint64_t k)
{
    enum { DIM = 16, BATCH = 10000 };
    cordon_collection_spec spec = {.name = "files", .dim = DIM, .metric = CORDON_METRIC_L2};
    float *v = malloc((size_t)BATCH * DIM * sizeof *v);
    cordon_chunk *ch = calloc(BATCH, sizeof *ch);
    char(*ids)[24] = malloc((size_t)BATCH * sizeof *ids), (*objs)[32] = malloc((size_t)BATCH * 32);
    cordon_error err;
    int rc = !v || !ch || !ids || !objs || cordon_collection_create(r->db, &spec, &err);
    for (uint64_t at = 0; !rc && at < k; at += BATCH) {
        size_t n = k - at < BATCH ? (size_t)(k - at) : BATCH;
        for (size_t i = 0; i < n; i++) {
            snprintf(ids[i], sizeof ids[i], "c%llu", (unsigned long long)(at + i));
            snprintf(objs[i], sizeof objs[i], "document:d%llu", (unsigned long long)(at + i));
            for (int d = 0; d < DIM; d++)
                v[i * DIM + d] = (float)bench_rng_unit(&r->rng);
            ch[i] = (cordon_chunk){.id = ids[i], .vector = v + i * DIM, .object = objs[i]};
        }
        if (cordon_put(r->db, "files", ch, n, NULL, &err)) {
            fprintf(stderr, "cordon bench rebac: put: %s\n", err.message);
            rc = 1;
        }
    }
    free(v);
    free(ch);
    free(ids);
    free(objs);
    return rc;
}

static double search_p50(cordon_t *db, const char *subject, uint64_t *rng, double *hits)
{
    enum { N = 200, DIM = 16 };
    double lat[N];
    float q[DIM];
    cordon_subject s = {.subject_id = subject};
    *hits = 0;
    for (int i = 0; i < N; i++) {
        for (int d = 0; d < DIM; d++)
            q[d] = (float)bench_rng_unit(rng);
        cordon_query qu = {.vector = q, .k = 10};
        cordon_result *res;
        uint64_t t0 = cdn_clock_ns();
        if (cordon_search(db, "files", &s, &qu, &res, NULL) == CORDON_OK) {
            *hits += (double)res->n_hits / N;
            cordon_result_free(res);
        }
        lat[i] = (double)(cdn_clock_ns() - t0) / 1e6;
    }
    qsort(lat, N, sizeof *lat, bench_cmp_double);
    return lat[N / 2];
}

static int allowed(cordon_t *db, const char *user, const char *obj)
{
    int a = 0;
    cordon_rebac_check(db, user, "view", obj, &a, NULL, NULL);
    return a;
}

int bench_rebac_main(int argc, char **argv)
{
    uint64_t want = 1000000, checks = 10000, seed = 42, chunks = 0;
    int json = 0, bad = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            usage(stdout);
            return 0;
        } else if (!strcmp(a, "--tuples") && v) {
            if (bench_parse_u64("rebac", a, v, 20000, 100000000, &want))
                return 2;
            i++;
        } else if (!strcmp(a, "--checks") && v) {
            if (bench_parse_u64("rebac", a, v, 1, 10000000, &checks))
                return 2;
            i++;
        } else if (!strcmp(a, "--chunks") && v) {
            if (bench_parse_u64("rebac", a, v, 0, 10000000, &chunks))
                return 2;
            i++;
        } else if (!strcmp(a, "--seed") && v) {
            if (bench_parse_u64("rebac", a, v, 0, UINT64_MAX, &seed))
                return 2;
            i++;
        } else if (!strcmp(a, "--format") && v && (!strcmp(v, "json") || !strcmp(v, "table"))) {
            json = !strcmp(v, "json");
            i++;
        } else {
            fprintf(stderr, "cordon bench rebac: unknown option %s\n", a);
            usage(stderr);
            return 2;
        }
    }
    char dir[] = "/tmp/cordon-bench-rebac-XXXXXX";
    rb_run_t r = {0};
    cordon_error err;
    r.rng = seed;
    if (!mkdtemp(dir) || cordon_open(dir, NULL, &r.db, &err)) {
        fprintf(stderr, "cordon bench rebac: cannot open a data directory in /tmp\n");
        return 1;
    }
    uint64_t t0 = cdn_clock_ns();
    if (cordon_model_apply(r.db, SCHEMA, NULL, &err) || build(&r, want)) {
        cordon_close(r.db);
        bench_rmtree(dir);
        return 1;
    }
    double load_s = (double)(cdn_clock_ns() - t0) / 1e9;
    /* checks: random users and documents */
    double *lat = malloc(checks * sizeof *lat);
    size_t yes = 0, ndocs = 0;
    char u[32], d[32];
    cordon_rebac_lookup_resources(r.db, "user:u0", "document", "view", count_one, &ndocs, NULL,
                                  NULL); /* warms the allocator, as a server would be */
    for (uint64_t i = 0; lat && i < checks; i++) {
        snprintf(u, sizeof u, "user:u%llu",
                 (unsigned long long)(bench_rng_next(&r.rng) % RB_USERS));
        snprintf(d, sizeof d, "document:d%llu",
                 (unsigned long long)(bench_rng_next(&r.rng) % r.docs));
        uint64_t c0 = cdn_clock_ns();
        yes += (size_t)allowed(r.db, u, d);
        lat[i] = (double)(cdn_clock_ns() - c0) / 1e3;
    }
    if (lat)
        qsort(lat, checks, sizeof *lat, bench_cmp_double);
    /* a user who reads a whole top folder: share f0 with a fresh user, look it up, unshare */
    double share[RB_REPEAT], unshare[RB_REPEAT], lookup[RB_REPEAT], move[RB_REPEAT];
    size_t found = 0;
    for (int k = 0; k < RB_REPEAT; k++) {
        share[k] = timed_op(
            r.db, "{\"op\":\"write_tuples\",\"writes\":[\"folder:f0#viewer@user:reader\"]}", &bad);
        bad |= !allowed(r.db, "user:reader", "document:d0"); /* d0 sits under f0 */
        found = 0;
        uint64_t l0 = cdn_clock_ns();
        cordon_rebac_lookup_resources(r.db, "user:reader", "document", "view", count_one, &found,
                                      NULL, NULL);
        lookup[k] = (double)(cdn_clock_ns() - l0) / 1e6;
        /* move f1 (level 1, under f0) to under f9 and back: its documents follow */
        move[k] = timed_op(r.db,
                           "{\"op\":\"write_tuples\",\"deletes\":[\"folder:f10#parent@folder:f0\"],"
                           "\"writes\":[\"folder:f10#parent@folder:f9\"]}",
                           &bad);
        bad |= allowed(r.db, "user:reader", "document:d0"); /* d0's leaf is under f10 */
        timed_op(r.db,
                 "{\"op\":\"write_tuples\",\"deletes\":[\"folder:f10#parent@folder:f9\"],"
                 "\"writes\":[\"folder:f10#parent@folder:f0\"]}",
                 &bad);
        unshare[k] = timed_op(
            r.db, "{\"op\":\"write_tuples\",\"deletes\":[\"folder:f0#viewer@user:reader\"]}", &bad);
        bad |= allowed(r.db, "user:reader", "document:d0");
    }
    qsort(share, RB_REPEAT, sizeof(double), bench_cmp_double);
    qsort(unshare, RB_REPEAT, sizeof(double), bench_cmp_double);
    qsort(lookup, RB_REPEAT, sizeof(double), bench_cmp_double);
    qsort(move, RB_REPEAT, sizeof(double), bench_cmp_double);
    /* searches of chunks naming the documents: the top folder's reader, and u1 */
    double big_ms = 0, big_hits = 0, small_ms = 0, small_hits = 0;
    if (chunks && !bad) {
        bad |= load_chunks(&r, chunks < r.docs ? chunks : r.docs);
        bad |= cordon_model_apply_batch(r.db,
                                        "[{\"op\":\"put_subject\",\"id\":\"reader\"},{\"op\":\"put_"
                                        "subject\",\"id\":\"u1\"}]",
                                        NULL, NULL) != 0;
        for (int k = 0; k < 2 && !bad; k++) {
            char g[160];
            snprintf(g, sizeof g,
                     "{\"op\":\"grant\",\"to\":\"%s\",\"permission\":{\"resource\":"
                     "\"collection:files\",\"action\":\"*\"}}",
                     k ? "u1" : "reader");
            bad |= cordon_model_apply(r.db, g, NULL, NULL) != 0;
        }
        timed_op(r.db, "{\"op\":\"write_tuples\",\"writes\":[\"folder:f0#viewer@user:reader\"]}",
                 &bad);
        big_ms = search_p50(r.db, "reader", &r.rng, &big_hits);
        small_ms = search_p50(r.db, "u1", &r.rng, &small_hits);
    }
    double rss = bench_rss_mb();
    if (json) {
        printf("[{\"engine\":\"cordon\",\"op\":\"check\",\"tuples\":%llu,\"p50_us\":%.2f,"
               "\"p95_us\":%.2f,\"p99_us\":%.2f,\"allowed_share\":%.4f},\n",
               (unsigned long long)r.tuples, pct(lat, checks, .5), pct(lat, checks, .95),
               pct(lat, checks, .99), (double)yes / (double)checks);
        printf(" {\"engine\":\"cordon\",\"op\":\"lookup_resources\",\"tuples\":%llu,"
               "\"found\":%zu,\"p50_us\":%.0f,\"max_us\":%.0f},\n",
               (unsigned long long)r.tuples, found, lookup[RB_REPEAT / 2] * 1e3,
               lookup[RB_REPEAT - 1] * 1e3);
        printf(" {\"engine\":\"cordon\",\"op\":\"share\",\"tuples\":%llu,\"p50_us\":%.0f},\n"
               " {\"engine\":\"cordon\",\"op\":\"unshare\",\"tuples\":%llu,\"p50_us\":%.0f},\n"
               " {\"engine\":\"cordon\",\"op\":\"move\",\"tuples\":%llu,\"p50_us\":%.0f},\n"
               " {\"engine\":\"cordon\",\"op\":\"load\",\"tuples\":%llu,\"seconds\":%.1f,"
               "\"rss_mb\":%.0f}",
               (unsigned long long)r.tuples, share[RB_REPEAT / 2] * 1e3,
               (unsigned long long)r.tuples, unshare[RB_REPEAT / 2] * 1e3,
               (unsigned long long)r.tuples, move[RB_REPEAT / 2] * 1e3,
               (unsigned long long)r.tuples, load_s, rss);
        if (chunks)
            printf(",\n {\"engine\":\"cordon\",\"op\":\"search_reader\",\"tuples\":%llu,"
                   "\"chunks\":%llu,\"p50_us\":%.0f,\"hits\":%.1f},\n"
                   " {\"engine\":\"cordon\",\"op\":\"search_few\",\"tuples\":%llu,"
                   "\"chunks\":%llu,\"p50_us\":%.0f,\"hits\":%.1f}",
                   (unsigned long long)r.tuples, (unsigned long long)chunks, big_ms * 1e3, big_hits,
                   (unsigned long long)r.tuples, (unsigned long long)chunks, small_ms * 1e3,
                   small_hits);
        printf("]\n");
    } else {
        printf("tuples %llu written in %.1f s (%.0f tuples/s), process RSS %.0f MB\n",
               (unsigned long long)r.tuples, load_s, (double)r.tuples / load_s, rss);
        printf("%-18s %10s %10s %10s\n", "op", "p50", "p95", "p99/max");
        printf("%-18s %8.2fus %8.2fus %8.2fus  (%llu checks, %.1f%% allowed)\n", "check",
               pct(lat, checks, .5), pct(lat, checks, .95), pct(lat, checks, .99),
               (unsigned long long)checks, 100.0 * (double)yes / (double)checks);
        printf("%-18s %8.2fms %10s %8.2fms  (%zu documents)\n", "lookup_resources",
               lookup[RB_REPEAT / 2], "", lookup[RB_REPEAT - 1], found);
        printf("%-18s %8.2fms %10s %8.2fms  (a folder over a tenth of the documents)\n", "share",
               share[RB_REPEAT / 2], "", share[RB_REPEAT - 1]);
        printf("%-18s %8.2fms %10s %8.2fms\n", "unshare", unshare[RB_REPEAT / 2], "",
               unshare[RB_REPEAT - 1]);
        printf("%-18s %8.2fms %10s %8.2fms  (one folder under another root)\n", "move",
               move[RB_REPEAT / 2], "", move[RB_REPEAT - 1]);
        if (chunks) {
            printf("%-18s %8.2fms  (%.1f hits; searches of %llu chunks naming the documents, as "
                   "the top folder's reader)\n",
                   "search_reader", big_ms, big_hits, (unsigned long long)chunks);
            printf("%-18s %8.2fms  (%.1f hits; as a user who reads a few documents)\n",
                   "search_few", small_ms, small_hits);
        }
    }
    free(lat);
    free(r.buf);
    cordon_close(r.db);
    bench_rmtree(dir);
    if (bad)
        fprintf(stderr, "cordon bench rebac: a check after a write gave the wrong answer\n");
    return bad ? 1 : 0;
}
