/* bench_writers.c: `cordon bench writers`: search latency with no writer, beside a writer of
 * permission changes (model membership and chunk ACLs, the shape that needs one permission
 * state per request), and beside a bulk loader. Relies on the public API only (cordon.h), so
 * the same file measures any build of the library. */
#include "bench_writers.h"
#include "bench_gen.h"
#include "bench_util.h"
#include "cordon.h"

#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define GROUPS 64
#define MAX_READERS 16

typedef struct opts {
    size_t size, readers;
    size_t bulk_rate; /* chunks a second the bulk loader keeps to; 0: as fast as it can */
    uint32_t dim;
    double seconds;
    const char *dir;
} opts_t;

typedef struct run {
    cordon_t *db;
    const opts_t *o;
    const float *queries; /* 256 rows */
    atomic_int stop;
    atomic_long writes;
    double *lat[MAX_READERS];
    size_t nlat[MAX_READERS], cap[MAX_READERS];
    long errors;
} run_t;

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static int apply(cordon_t *db, const char *j)
{
    cordon_error e;
    int rc = cordon_model_apply(db, j, NULL, &e);
    if (rc)
        fprintf(stderr, "cordon bench writers: %s: %s\n", j, e.message);
    return rc;
}

/* Subjects s0..s63 each in group g<i>, with search on the collection; chunk j allows
 * group:g<j % 64>, so every subject reads 1/64 of the chunks. */
static int setup(cordon_t *db, const opts_t *o, bench_gen_t *g)
{
    char j[256];
    const char *tf[] = {"body"};
    cordon_collection_spec sp = {.name = "w", .dim = o->dim, .text_fields = tf, .n_text_fields = 1};
    cordon_error e;
    size_t batch = 2000;
    float *rows = malloc(batch * o->dim * sizeof *rows);
    cordon_chunk *c = calloc(batch, sizeof *c);
    char(*ids)[24] = calloc(batch, sizeof *ids);
    char(*acl)[24] = calloc(batch, sizeof *acl);
    const char **allowed = calloc(batch, sizeof *allowed);
    cordon_field *f = calloc(batch, sizeof *f);
    int rc = rows && c && ids && acl && allowed && f ? 0 : CORDON_ERR_NOMEM;
    if (!rc && (rc = cordon_collection_create(db, &sp, &e)) != 0)
        fprintf(stderr, "cordon bench writers: %s\n", e.message);
    for (int i = 0; !rc && i < GROUPS; i++) {
        snprintf(j, sizeof j, "{\"op\":\"put_subject\",\"id\":\"s%d\"}", i);
        rc = apply(db, j);
        snprintf(j, sizeof j, "{\"op\":\"put_group\",\"id\":\"g%d\"}", i);
        rc = rc ? rc : apply(db, j);
        snprintf(j, sizeof j, "{\"op\":\"add_member\",\"group\":\"g%d\",\"member\":\"s%d\"}", i, i);
        rc = rc ? rc : apply(db, j);
    }
    if (!rc)
        rc = apply(db, "{\"op\":\"put_group\",\"id\":\"churn\"}");
    if (!rc)
        rc = apply(
            db,
            "{\"op\":\"grant\",\"to\":\"churn\",\"to_kind\":\"group\",\"permission\":{\"resource\":"
            "\"collection:w\",\"action\":\"*\"}}");
    for (int i = 0; !rc && i < GROUPS; i++) {
        snprintf(j, sizeof j, "{\"op\":\"add_member\",\"group\":\"churn\",\"member\":\"s%d\"}", i);
        rc = apply(db, j);
    }
    for (size_t at = 0; !rc && at < o->size; at += batch) {
        size_t n = o->size - at < batch ? o->size - at : batch;
        bench_gen_rows_of(g, rows, n, NULL);
        for (size_t i = 0; i < n; i++) {
            snprintf(ids[i], sizeof ids[i], "c%zu", at + i);
            snprintf(acl[i], sizeof acl[i], "group:g%zu", (at + i) % GROUPS);
            allowed[i] = acl[i];
            f[i] = (cordon_field){"body", (at + i) % 2 ? "alpha report" : "beta summary"};
            c[i] = (cordon_chunk){.id = ids[i],
                                  .vector = rows + i * o->dim,
                                  .fields = &f[i],
                                  .n_fields = 1,
                                  .allowed = &allowed[i],
                                  .n_allowed = 1};
        }
        if ((rc = cordon_put(db, "w", c, n, NULL, &e)) != 0)
            fprintf(stderr, "cordon bench writers: put: %s\n", e.message);
    }
    free(rows);
    free(c);
    free(ids);
    free(acl);
    free(allowed);
    free(f);
    return rc;
}

typedef struct reader {
    run_t *r;
    int idx;
} reader_t;

static void *reader_main(void *arg)
{
    reader_t *rd = arg;
    run_t *r = rd->r;
    char sid[16];
    snprintf(sid, sizeof sid, "s%d", rd->idx);
    cordon_subject s = {.subject_id = sid};
    for (unsigned n = 0; !atomic_load(&r->stop); n++) {
        cordon_query q = {.vector = r->queries + (size_t)((n * 7 + rd->idx) % 256) * r->o->dim,
                          .k = 10};
        if (n % 4 == 3) { /* a quarter are text searches */
            q.vector = NULL;
            q.text = n % 8 == 3 ? "alpha" : "summary";
        }
        cordon_result *res = NULL;
        double t0 = now_ms();
        int rc = cordon_search(r->db, "w", &s, &q, &res, NULL);
        double dt = now_ms() - t0;
        cordon_result_free(res);
        if (rc) {
            r->errors++; /* only this reader writes its slot; summed after the join */
            continue;
        }
        if (r->nlat[rd->idx] == r->cap[rd->idx]) {
            size_t nc = r->cap[rd->idx] ? r->cap[rd->idx] * 2 : 4096;
            double *p = realloc(r->lat[rd->idx], nc * sizeof *p);
            if (!p)
                continue;
            r->lat[rd->idx] = p;
            r->cap[rd->idx] = nc;
        }
        r->lat[rd->idx][r->nlat[rd->idx]++] = dt;
    }
    return NULL;
}

/* Permission churn: a subject that is not reading leaves and rejoins its group, and a chunk
 * the readers can read changes ACL, as often as the disk lets the writer commit. Every model
 * write moves the model's revision under the readers (what makes a request start over); the
 * readers' own views do not change, so their searches stay comparable with the other phases. */
static void *perm_writer(void *arg)
{
    run_t *r = arg;
    char j[160];
    int first = (int)r->o->readers, span = GROUPS - first;
    for (long i = 0; !atomic_load(&r->stop); i++) {
        int sub = first + (int)(i % span);
        const char *acl = i % 2 ? "group:g0" : "group:g1";
        cordon_acl_change ch = {.id = "c0", .allowed = &acl, .n_allowed = 1};
        snprintf(j, sizeof j, "{\"op\":\"remove_member\",\"group\":\"g%d\",\"member\":\"s%d\"}",
                 sub, sub);
        apply(r->db, j);
        cordon_set_acl(r->db, "w", &ch, 1, NULL, NULL);
        snprintf(j, sizeof j, "{\"op\":\"add_member\",\"group\":\"g%d\",\"member\":\"s%d\"}", sub,
                 sub);
        apply(r->db, j);
        atomic_fetch_add(&r->writes, 3);
    }
    return NULL;
}

/* Bulk loading: batches of 500 new chunks into the same collection, as fast as the engine
 * takes them or, with --bulk-rate, at that steady rate (a batch, then a pause). */
typedef struct bulk_batch {
    char ids[500][32], acl[500][24];
    const char *allowed[500];
    cordon_chunk c[500];
    cordon_field f[500];
} bulk_batch_t;

static void *bulk_writer(void *arg)
{
    run_t *r = arg;
    const int n = 500;
    uint32_t dim = r->o->dim;
    bulk_batch_t *b = calloc(1, sizeof *b);
    float *rows = malloc((size_t)n * dim * sizeof *rows);
    bench_gen_t g;
    if (!b || !rows || bench_gen_init(&g, BENCH_GEN_TOPICS, dim, 7)) {
        free(b);
        free(rows);
        return NULL;
    }
    double start = now_ms();
    for (long at = 0; !atomic_load(&r->stop); at += n) {
        if (r->o->bulk_rate) {
            double due = start + (double)at * 1e3 / (double)r->o->bulk_rate, wait = due - now_ms();
            if (wait > 0) {
                struct timespec ts = {(time_t)(wait / 1e3), (long)(fmod(wait, 1e3) * 1e6)};
                nanosleep(&ts, NULL);
            }
            if (atomic_load(&r->stop))
                break;
        }
        bench_gen_rows_of(&g, rows, (size_t)n, NULL);
        for (int i = 0; i < n; i++) {
            snprintf(b->ids[i], sizeof b->ids[i], "bulk%ld", at + i);
            snprintf(b->acl[i], sizeof b->acl[i], "group:g%ld", (at + i) % GROUPS);
            b->allowed[i] = b->acl[i];
            b->f[i] = (cordon_field){"body", "gamma report"};
            b->c[i] = (cordon_chunk){.id = b->ids[i],
                                     .vector = rows + (size_t)i * dim,
                                     .fields = &b->f[i],
                                     .n_fields = 1,
                                     .allowed = &b->allowed[i],
                                     .n_allowed = 1};
        }
        if (cordon_put(r->db, "w", b->c, (size_t)n, NULL, NULL) == 0)
            atomic_fetch_add(&r->writes, n);
    }
    bench_gen_free(&g);
    free(rows);
    free(b);
    return NULL;
}

/* One phase: readers for o->seconds, beside writer (or none); prints one row. */
static int phase(cordon_t *db, const opts_t *o, const float *queries, const char *name,
                 void *(*writer)(void *), double base_p50, double base_p99, double *p50,
                 double *p99)
{
    run_t r = {.db = db, .o = o, .queries = queries};
    pthread_t w, th[MAX_READERS];
    reader_t rd[MAX_READERS];
    struct timespec nap = {(time_t)o->seconds, (long)((o->seconds - (long)o->seconds) * 1e9)};
    size_t n = 0, k = 0;
    if (writer)
        pthread_create(&w, NULL, writer, &r);
    for (size_t i = 0; i < o->readers; i++) {
        rd[i] = (reader_t){&r, (int)i};
        pthread_create(&th[i], NULL, reader_main, &rd[i]);
    }
    nanosleep(&nap, NULL);
    atomic_store(&r.stop, 1);
    for (size_t i = 0; i < o->readers; i++)
        pthread_join(th[i], NULL);
    if (writer)
        pthread_join(w, NULL);
    for (size_t i = 0; i < o->readers; i++)
        n += r.nlat[i];
    double *all = malloc((n ? n : 1) * sizeof *all);
    if (!all)
        return CORDON_ERR_NOMEM;
    for (size_t i = 0; i < o->readers; i++) {
        memcpy(all + k, r.lat[i], r.nlat[i] * sizeof *all);
        k += r.nlat[i];
        free(r.lat[i]);
    }
    qsort(all, n, sizeof *all, bench_cmp_double);
    *p50 = n ? all[n / 2] : 0;
    *p99 = n ? all[(size_t)(n * 0.99)] : 0;
    printf("%-12s %10zu %10ld %9.3f %9.3f", name, n, (long)r.writes, *p50, *p99);
    if (base_p50 > 0)
        printf(" %9.2f %9.2f", *p50 / base_p50, *p99 / base_p99);
    printf(" %7ld\n", r.errors);
    free(all);
    return r.errors ? CORDON_ERR_INTERNAL : 0;
}

static int usage(FILE *f, int rc)
{
    fprintf(f, "usage: cordon bench writers [--size N] [--dim D] [--readers R] [--seconds S]\n"
               "                            [--dir PATH] [--bulk-rate N]\n"
               "  loads N generated chunks (64 subjects, each reading 1/64 of them), then runs R\n"
               "  readers (3/4 vector, 1/4 text searches as model subjects) for S seconds alone,\n"
               "  beside a writer of permission changes (another subject's membership out and\n"
               "  in, the ACL of a chunk the readers read), and beside a bulk loader (batches\n"
               "  of 500, as fast as it can or at N chunks a second); prints p50/p99 ms of each\n"
               "  and their ratio to the readers alone.\n"
               "  defaults: --size 100000 --dim 128 --readers 2 --seconds 5 --dir /tmp\n");
    return rc;
}

int bench_writers_main(int argc, char **argv)
{
    opts_t o = {.size = 100000, .readers = 2, .dim = 128, .seconds = 5, .dir = "/tmp"};
    uint64_t v;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *val = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--help") || !strcmp(a, "-h"))
            return usage(stdout, 0);
        if (!val)
            return usage(stderr, 2);
        i++;
        if (!strcmp(a, "--size")) {
            if (bench_parse_size("writers", a, val, 1000, 10000000, &o.size))
                return 2;
        } else if (!strcmp(a, "--dim")) {
            if (bench_parse_u64("writers", a, val, 2, 4096, &v))
                return 2;
            o.dim = (uint32_t)v;
        } else if (!strcmp(a, "--readers")) {
            if (bench_parse_size("writers", a, val, 1, MAX_READERS, &o.readers)) /* < GROUPS */
                return 2;
        } else if (!strcmp(a, "--seconds")) {
            if (bench_parse_u64("writers", a, val, 1, 3600, &v))
                return 2;
            o.seconds = (double)v;
        } else if (!strcmp(a, "--bulk-rate")) {
            if (bench_parse_size("writers", a, val, 0, 10000000, &o.bulk_rate))
                return 2;
        } else if (!strcmp(a, "--dir")) {
            o.dir = val;
        } else {
            return usage(stderr, 2);
        }
    }
    char path[4096], cmd[4200];
    snprintf(path, sizeof path, "%s/cordon-bench-writers.%ld", o.dir, (long)getpid());
    cordon_t *db;
    cordon_error e;
    bench_gen_t g;
    float *queries = malloc(256 * (size_t)o.dim * sizeof *queries);
    double b50 = 0, b99 = 0, p50, p99;
    int rc;
    if (!queries || bench_gen_init(&g, BENCH_GEN_TOPICS, o.dim, 42))
        return 1;
    if (cordon_open(path, NULL, &db, &e)) {
        fprintf(stderr, "cordon bench writers: %s\n", e.message);
        return 1;
    }
    double t0 = now_ms();
    rc = setup(db, &o, &g);
    bench_gen_rows_of(&g, queries, 256, NULL);
    if (!rc) {
        printf("# %zu chunks x %u, loaded in %.1f s; %zu readers, %.0f s a phase\n", o.size, o.dim,
               (now_ms() - t0) / 1e3, o.readers, o.seconds);
        printf("%-12s %10s %10s %9s %9s %9s %9s %7s\n", "writer", "searches", "writes", "p50_ms",
               "p99_ms", "p50_x", "p99_x", "errors");
        rc = phase(db, &o, queries, "none", NULL, 0, 0, &b50, &b99);
        if (!rc)
            rc = phase(db, &o, queries, "permissions", perm_writer, b50, b99, &p50, &p99);
        if (!rc)
            rc = phase(db, &o, queries, o.bulk_rate ? "bulk (paced)" : "bulk", bulk_writer, b50,
                       b99, &p50, &p99);
    }
    cordon_close(db);
    bench_gen_free(&g);
    free(queries);
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", path);
    if (system(cmd) != 0)
        fprintf(stderr, "cordon bench writers: could not remove %s\n", path);
    return rc ? 1 : 0;
}
