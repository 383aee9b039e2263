/* bench_soak.c: `cordon bench soak`: mixed reads and writes on one data directory for a set
 * time, reported once an interval: reader threads search (kNN and BM25) as subjects of the
 * permission model while a writer replaces chunks in place (new vectors under the same ids: the
 * steady replace workload that leaves graph tombstones and grows the append-only vector file),
 * another changes chunk ACLs and a subject's membership. Each row: resident memory, the
 * collection's rows, vector file and graph sizes, searches/s with p50 and p99, writes/s,
 * errors; at the end, resident memory's growth after the warm-up. Relies on the public API
 * (cordon.h), bench_gen and bench_util. */
#include "bench_soak.h"
#include "bench_gen.h"
#include "bench_util.h"
#include "cordon.h"

#include <jansson.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define SUBJECTS 16
#define READERS_MAX 8
#define REPLACE_BATCH 100
#define QUERIES 256

typedef struct opts {
    double minutes, interval_s;
    size_t size, readers;
    uint32_t dim;
    const char *dir;
    int json, replace;
    unsigned compact_dead;   /* percent of dead rows that makes the replacer compact; 0: never */
    uint64_t history_keep_s; /* the permission history kept, in seconds; 0: all of it */
} opts_t;

/* A reader's latencies since the last report, as a histogram of fixed size (the benchmark's
 * own memory must not grow with the rate it measures): buckets 2% wide from 1 us to 100 s. */
#define LAT_BUCKETS 930
#define LAT_MIN_MS 0.001
#define LAT_GROWTH 1.02
typedef struct lat {
    pthread_mutex_t lock;
    uint32_t count[LAT_BUCKETS];
    size_t n;
} lat_t;

static size_t lat_bucket(double ms)
{
    if (ms <= LAT_MIN_MS)
        return 0;
    size_t b = (size_t)(log(ms / LAT_MIN_MS) / log(LAT_GROWTH)) + 1;
    return b < LAT_BUCKETS ? b : LAT_BUCKETS - 1;
}

/* The upper edge of bucket b, in ms. */
static double lat_edge(size_t b)
{
    return LAT_MIN_MS * pow(LAT_GROWTH, (double)b);
}

typedef struct soak {
    cordon_t *db;
    const opts_t *o;
    float *queries;
    atomic_int stop;
    atomic_long writes, errors;
    atomic_long compactions, compact_ms; /* done by the replacer, and their time */
    lat_t lat[READERS_MAX];
} soak_t;

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int apply(cordon_t *db, const char *op)
{
    cordon_error e;
    int rc = cordon_model_apply(db, op, NULL, &e);
    if (rc)
        fprintf(stderr, "cordon bench soak: %s: %s\n", op, e.message);
    return rc;
}

/* Puts chunks [at, at + n) with fresh vectors from g (a replace when they exist). */
static int put_range(soak_t *s, bench_gen_t *g, size_t at, size_t n, float *rows)
{
    char ids[REPLACE_BATCH][24], acl[REPLACE_BATCH][24];
    const char *allowed[REPLACE_BATCH];
    cordon_field f[REPLACE_BATCH];
    cordon_chunk c[REPLACE_BATCH];
    bench_gen_rows_of(g, rows, n, NULL);
    for (size_t i = 0; i < n; i++) {
        size_t id = (at + i) % s->o->size;
        snprintf(ids[i], sizeof ids[i], "c%zu", id);
        snprintf(acl[i], sizeof acl[i], "group:g%zu", id % SUBJECTS);
        allowed[i] = acl[i];
        f[i] = (cordon_field){"body", id % 3 ? "quarterly report figures" : "travel summary"};
        c[i] = (cordon_chunk){.id = ids[i],
                              .vector = rows + i * s->o->dim,
                              .fields = &f[i],
                              .n_fields = 1,
                              .allowed = &allowed[i],
                              .n_allowed = 1};
    }
    return cordon_put(s->db, "soak", c, n, NULL, NULL);
}

static int setup(soak_t *s, bench_gen_t *g)
{
    char op[200];
    const char *tf[] = {"body"};
    cordon_collection_spec sp = {
        .name = "soak", .dim = s->o->dim, .text_fields = tf, .n_text_fields = 1};
    cordon_error e;
    float *rows = malloc(REPLACE_BATCH * s->o->dim * sizeof *rows);
    int rc = rows ? cordon_collection_create(s->db, &sp, &e) : CORDON_ERR_NOMEM;
    if (rc && rows)
        fprintf(stderr, "cordon bench soak: %s\n", e.message);
    rc = rc ? rc : apply(s->db, "{\"op\":\"put_group\",\"id\":\"all\"}");
    rc = rc ? rc
            : apply(s->db, "{\"op\":\"grant\",\"to\":\"all\",\"to_kind\":\"group\",\"permission\":"
                           "{\"resource\":\"collection:soak\",\"action\":\"*\"}}");
    for (int i = 0; !rc && i < SUBJECTS; i++) {
        snprintf(op, sizeof op, "{\"op\":\"put_subject\",\"id\":\"s%d\"}", i);
        rc = apply(s->db, op);
        snprintf(op, sizeof op, "{\"op\":\"put_group\",\"id\":\"g%d\"}", i);
        rc = rc ? rc : apply(s->db, op);
        snprintf(op, sizeof op, "{\"op\":\"add_member\",\"group\":\"g%d\",\"member\":\"s%d\"}", i,
                 i);
        rc = rc ? rc : apply(s->db, op);
        snprintf(op, sizeof op, "{\"op\":\"add_member\",\"group\":\"all\",\"member\":\"s%d\"}", i);
        rc = rc ? rc : apply(s->db, op);
    }
    for (size_t at = 0; !rc && at < s->o->size; at += REPLACE_BATCH)
        rc = put_range(s, g, at, s->o->size - at < REPLACE_BATCH ? s->o->size - at : REPLACE_BATCH,
                       rows);
    free(rows);
    return rc;
}

typedef struct reader {
    soak_t *s;
    int idx;
} reader_t;

static void *reader_main(void *arg)
{
    reader_t *rd = arg;
    soak_t *s = rd->s;
    lat_t *l = &s->lat[rd->idx];
    char sid[16];
    for (unsigned n = 0; !atomic_load(&s->stop); n++) {
        snprintf(sid, sizeof sid, "s%u", (n * 5 + (unsigned)rd->idx) % (SUBJECTS - 1));
        cordon_subject who = {.subject_id = sid};
        cordon_query q = {.vector = s->queries +
                                    (size_t)((n * 7 + (unsigned)rd->idx) % QUERIES) * s->o->dim,
                          .k = 10};
        if (n % 4 == 3) {
            q.vector = NULL;
            q.text = n % 8 == 3 ? "report" : "travel summary";
        }
        cordon_result *res = NULL;
        double t0 = now_s();
        int rc = cordon_search(s->db, "soak", &who, &q, &res, NULL);
        double ms = (now_s() - t0) * 1e3;
        cordon_result_free(res);
        if (rc) {
            atomic_fetch_add(&s->errors, 1);
            continue;
        }
        pthread_mutex_lock(&l->lock);
        l->count[lat_bucket(ms)]++;
        l->n++;
        pthread_mutex_unlock(&l->lock);
    }
    return NULL;
}

/* With --compact-dead P, compacts the collection once its dead rows (replaced chunks' old
 * rows) are at least P% of its rows, as `cordon serve` does on its own (compact_dead_percent). */
static int maybe_compact(soak_t *s)
{
    cordon_collection_info info;
    cordon_error e;
    if (!s->o->compact_dead || cordon_collection_info_get(s->db, "soak", &info, NULL) ||
        (info.rows - info.chunks) * 100 < (uint64_t)s->o->compact_dead * info.rows)
        return 0;
    double t0 = now_s();
    int rc = cordon_collection_compact(s->db, "soak", NULL, &e);
    if (rc) {
        fprintf(stderr, "cordon bench soak: compact: %s\n", e.message);
        return rc;
    }
    atomic_fetch_add(&s->compactions, 1);
    atomic_fetch_add(&s->compact_ms, (long)((now_s() - t0) * 1e3));
    return 0;
}

/* Replaces chunks in place, in batches, round and round the collection (compacting it when
 * --compact-dead says so). */
static void *replacer_main(void *arg)
{
    soak_t *s = arg;
    bench_gen_t g;
    float *rows = malloc(REPLACE_BATCH * s->o->dim * sizeof *rows);
    if (!rows || bench_gen_init(&g, BENCH_GEN_TOPICS, s->o->dim, 77)) {
        free(rows);
        return NULL;
    }
    for (size_t at = 0; !atomic_load(&s->stop); at += REPLACE_BATCH) {
        if (put_range(s, &g, at, REPLACE_BATCH, rows))
            atomic_fetch_add(&s->errors, 1);
        else
            atomic_fetch_add(&s->writes, REPLACE_BATCH);
        if (maybe_compact(s))
            atomic_fetch_add(&s->errors, 1);
    }
    bench_gen_free(&g);
    free(rows);
    return NULL;
}

/* ACL changes of single chunks and the last subject leaving and rejoining its group. */
static void *perm_main(void *arg)
{
    soak_t *s = arg;
    char id[24], acl[24], op[160];
    const char *allowed[1] = {acl};
    for (long i = 0; !atomic_load(&s->stop); i++) {
        snprintf(id, sizeof id, "c%zu", (size_t)(i * 7919) % s->o->size);
        snprintf(acl, sizeof acl, "group:g%ld", i % SUBJECTS);
        cordon_acl_change ch = {.id = id, .allowed = allowed, .n_allowed = 1};
        snprintf(op, sizeof op, "{\"op\":\"%s\",\"group\":\"g%d\",\"member\":\"s%d\"}",
                 i % 2 ? "add_member" : "remove_member", SUBJECTS - 1, SUBJECTS - 1);
        int rc = cordon_set_acl(s->db, "soak", &ch, 1, NULL, NULL);
        rc = rc == CORDON_ERR_NOT_FOUND ? 0 : rc; /* replaced meanwhile: fine */
        if (rc || apply(s->db, op))
            atomic_fetch_add(&s->errors, 1);
        else
            atomic_fetch_add(&s->writes, 2);
    }
    return NULL;
}

typedef struct row {
    double minute, rss_mb, anon_mb, file_mb, reads_per_s, p50, p99, writes_per_s;
    uint64_t rows, live, vector_bytes, graph_bytes;
    long errors, compactions;
} row_t;

/* Forgets the permission history older than --history-keep seconds. */
static int prune_history(soak_t *s)
{
    struct timespec now;
    cordon_error e;
    clock_gettime(CLOCK_REALTIME, &now);
    uint64_t us = (uint64_t)now.tv_sec * 1000000u, keep = s->o->history_keep_s * 1000000u;
    if (us <= keep)
        return 0;
    int rc = cordon_history_prune(s->db, 0, us - keep, NULL, NULL, &e);
    if (rc && rc != CORDON_ERR_NOT_FOUND) { /* NOT_FOUND: nothing that old yet */
        fprintf(stderr, "cordon bench soak: history prune: %s\n", e.message);
        return rc;
    }
    return 0;
}

/* Takes the readers' latencies since the last report: how many, and p50 and p99 (the upper
 * edges of their buckets). */
static size_t drain(soak_t *s, double *p50, double *p99)
{
    static uint32_t all[LAT_BUCKETS];
    size_t n = 0, seen = 0;
    memset(all, 0, sizeof all);
    for (size_t r = 0; r < s->o->readers; r++) {
        lat_t *l = &s->lat[r];
        pthread_mutex_lock(&l->lock);
        for (size_t b = 0; b < LAT_BUCKETS; b++)
            all[b] += l->count[b];
        n += l->n;
        memset(l->count, 0, sizeof l->count);
        l->n = 0;
        pthread_mutex_unlock(&l->lock);
    }
    *p50 = *p99 = 0;
    for (size_t b = 0; b < LAT_BUCKETS && n; b++) {
        seen += all[b];
        if (!*p50 && seen * 2 >= n)
            *p50 = lat_edge(b);
        if (!*p99 && seen * 100 >= n * 99)
            *p99 = lat_edge(b);
    }
    return n;
}

static void print_row(const opts_t *o, const row_t *w)
{
    if (o->json) {
        json_t *j =
            json_pack("{s:f, s:f, s:f, s:f, s:I, s:I, s:I, s:I, s:f, s:f, s:f, s:f, s:I, "
                      "s:I}",
                      "minute", w->minute, "rss_mb", w->rss_mb, "rss_anon_mb", w->anon_mb,
                      "rss_file_mb", w->file_mb, "rows", (json_int_t)w->rows, "chunks",
                      (json_int_t)w->live, "vector_bytes", (json_int_t)w->vector_bytes,
                      "graph_bytes", (json_int_t)w->graph_bytes, "searches_per_s", w->reads_per_s,
                      "p50_ms", w->p50, "p99_ms", w->p99, "writes_per_s", w->writes_per_s, "errors",
                      (json_int_t)w->errors, "compactions", (json_int_t)w->compactions);
        char *t = json_dumps(j, JSON_COMPACT | JSON_REAL_PRECISION(6));
        printf("%s\n", t ? t : "{}");
        free(t);
        json_decref(j);
    } else {
        printf("%7.1f %8.1f %7.1f %7.1f %10llu %8llu %10.1f %9.1f %10.0f %8.3f %8.3f %9.0f %6ld "
               "%8ld\n",
               w->minute, w->rss_mb, w->anon_mb, w->file_mb, (unsigned long long)w->rows,
               (unsigned long long)w->live, (double)w->vector_bytes / 1048576.0,
               (double)w->graph_bytes / 1048576.0, w->reads_per_s, w->p50, w->p99, w->writes_per_s,
               w->errors, w->compactions);
    }
    fflush(stdout);
}

static int usage(FILE *f, int rc)
{
    fprintf(f,
            "usage: cordon bench soak [--minutes M] [--interval S] [--size N] [--dim D]\n"
            "                         [--readers R] [--no-replace] [--compact-dead P]\n"
            "                         [--history-keep S] [--dir PATH] [--format table|json]\n"
            "  Loads N generated chunks (D dimensions, one text field, each readable by one of\n"
            "  %d subjects' groups) into a fresh data directory under PATH, then for M minutes\n"
            "  runs R reader threads (kNN, a quarter BM25, k 10, as subjects of the model), a\n"
            "  writer replacing chunks in place in batches of %d, and a writer of ACL changes\n"
            "  and membership changes; every S seconds it prints resident memory, the\n"
            "  collection's rows (replaced ones included) and live chunks, the vector file and\n"
            "  graph sizes (MB), searches/s with p50 and p99, writes/s and errors; at the end\n"
            "  the growth of resident memory after the first sixth of the run (at least one\n"
            "  interval). --no-replace: no replacing writer, so the rows stay as loaded and\n"
            "  resident memory must stay flat. --compact-dead P: the replacing writer compacts\n"
            "  the collection whenever its dead rows are at least P%% of its rows (1 to 99), as\n"
            "  cordon serve's compact_dead_percent does; each row then counts the compactions.\n"
            "  --history-keep S: at every row the permission history older than S seconds is\n"
            "  pruned (cordon_history_prune), as history_retain_days does in days; without it\n"
            "  the history of every ACL change and replace is kept and grows.\n"
            "  Exits 1 on any failed request.\n"
            "  defaults: --minutes 1 --interval 10 --size 20000 --dim 128 --readers 2 --dir /tmp\n",
            SUBJECTS, REPLACE_BATCH);
    return rc;
}

static int parse(int argc, char **argv, opts_t *o)
{
    uint64_t v;
    *o = (opts_t){.minutes = 1,
                  .interval_s = 10,
                  .size = 20000,
                  .readers = 2,
                  .dim = 128,
                  .dir = "/tmp",
                  .replace = 1};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *val = i + 1 < argc ? argv[i + 1] : NULL;
        int rc = 0;
        if (!strcmp(a, "--help") || !strcmp(a, "-h"))
            return usage(stdout, 0), 1;
        if (!strcmp(a, "--no-replace")) {
            o->replace = 0;
            continue;
        }
        if (!val)
            return usage(stderr, 2);
        i++;
        if (!strcmp(a, "--minutes") && !(rc = bench_parse_u64("soak", a, val, 1, 1440, &v)))
            o->minutes = (double)v;
        else if (!strcmp(a, "--interval") && !(rc = bench_parse_u64("soak", a, val, 1, 3600, &v)))
            o->interval_s = (double)v;
        else if (!strcmp(a, "--size"))
            rc = bench_parse_size("soak", a, val, REPLACE_BATCH, 10000000, &o->size);
        else if (!strcmp(a, "--readers"))
            rc = bench_parse_size("soak", a, val, 1, READERS_MAX, &o->readers);
        else if (!strcmp(a, "--dim") && !(rc = bench_parse_u64("soak", a, val, 2, 4096, &v)))
            o->dim = (uint32_t)v;
        else if (!strcmp(a, "--dir"))
            o->dir = val;
        else if (!strcmp(a, "--compact-dead") && !(rc = bench_parse_u64("soak", a, val, 1, 99, &v)))
            o->compact_dead = (unsigned)v;
        else if (!strcmp(a, "--history-keep") &&
                 !(rc = bench_parse_u64("soak", a, val, 1, 86400 * 365, &v)))
            o->history_keep_s = v;
        else if (!strcmp(a, "--format") && (!strcmp(val, "json") || !strcmp(val, "table")))
            o->json = !strcmp(val, "json");
        else if (strcmp(a, "--minutes") && strcmp(a, "--interval") && strcmp(a, "--dim") &&
                 strcmp(a, "--compact-dead") && strcmp(a, "--history-keep"))
            return usage(stderr, 2);
        if (rc)
            return rc;
    }
    return 0;
}

int bench_soak_main(int argc, char **argv)
{
    static soak_t s;
    opts_t o;
    char dir[4096];
    bench_gen_t g;
    pthread_t rt[READERS_MAX], wt[2];
    reader_t rd[READERS_MAX];
    int rc = parse(argc, argv, &o);
    if (rc)
        return rc == 1 ? 0 : rc;
    snprintf(dir, sizeof dir, "%s/cordon-soak.XXXXXX", o.dir);
    if (!mkdtemp(dir)) {
        fprintf(stderr, "cordon bench soak: cannot make a directory under %s\n", o.dir);
        return 1;
    }
    memset(&s, 0, sizeof s);
    s.o = &o;
    if (cordon_open(dir, NULL, &s.db, NULL) || bench_gen_init(&g, BENCH_GEN_TOPICS, o.dim, 42) ||
        !(s.queries = malloc(QUERIES * o.dim * sizeof *s.queries))) {
        fprintf(stderr, "cordon bench soak: cannot open %s\n", dir);
        return 1;
    }
    double t0 = now_s();
    if ((rc = setup(&s, &g)) != 0) {
        fprintf(stderr, "cordon bench soak: setup failed: %s\n", cordon_strerror(rc));
        return 1;
    }
    bench_gen_rows_of(&g, s.queries, QUERIES, NULL);
    if (!o.json)
        printf("# %zu chunks x %u loaded in %.1f s into %s; %zu readers, %s a permission "
               "writer; a row every %.0f s\n"
               "# minute   rss_MB anon_MB file_MB       rows   chunks  vectors_MB  graph_MB  "
               "searches/s   p50_ms   p99_ms  writes/s errors compacted\n",
               o.size, o.dim, now_s() - t0, dir, o.readers,
               o.replace ? "a writer replacing chunks in batches of 100," : "", o.interval_s);
    for (size_t i = 0; i < o.readers; i++) {
        pthread_mutex_init(&s.lat[i].lock, NULL);
        rd[i] = (reader_t){&s, (int)i};
        pthread_create(&rt[i], NULL, reader_main, &rd[i]);
    }
    if (o.replace)
        pthread_create(&wt[0], NULL, replacer_main, &s);
    pthread_create(&wt[1], NULL, perm_main, &s);
    double start = now_s(), end = start + o.minutes * 60, last = start, rss_warm = 0, rss_end = 0;
    /* Peaks of the second sixth and of the last: compactions make memory a saw, so that two
     * single rows compare wherever each fell in its cycle. [0] resident, [1] anonymous. */
    double peak_early[2] = {0, 0}, peak_late[2] = {0, 0};
    long writes_last = 0;
    for (int k = 1; now_s() < end; k++) {
        double next = start + k * o.interval_s;
        while (now_s() < next && now_s() < end) {
            struct timespec nap = {0, 50000000};
            nanosleep(&nap, NULL);
        }
        double p50, p99;
        size_t n = drain(&s, &p50, &p99);
        if (o.history_keep_s && prune_history(&s) != 0)
            atomic_fetch_add(&s.errors, 1);
        double t = now_s();
        cordon_collection_info info;
        row_t w = {.minute = (t - start) / 60,
                   .rss_mb = bench_rss_mb(),
                   .anon_mb = bench_status_mb("RssAnon"),
                   .file_mb = bench_status_mb("RssFile")};
        if (cordon_collection_info_get(s.db, "soak", &info, NULL) == 0) {
            w.rows = info.rows;
            w.live = info.chunks;
            w.vector_bytes = info.vector_bytes;
            w.graph_bytes = info.graph_bytes;
        }
        long writes = atomic_load(&s.writes);
        w.reads_per_s = (double)n / (t - last);
        w.writes_per_s = (double)(writes - writes_last) / (t - last);
        w.p50 = p50;
        w.p99 = p99;
        w.errors = atomic_load(&s.errors);
        w.compactions = atomic_load(&s.compactions);
        print_row(&o, &w);
        if (!rss_warm && t - start >= (end - start) / 6)
            rss_warm = w.rss_mb;
        rss_end = w.rss_mb;
        double *peak = t - start <= (end - start) / 3 && t - start > (end - start) / 6 ? peak_early
                       : t - start >= (end - start) * 5 / 6                            ? peak_late
                                                                                       : NULL;
        if (peak) {
            peak[0] = w.rss_mb > peak[0] ? w.rss_mb : peak[0];
            peak[1] = w.anon_mb > peak[1] ? w.anon_mb : peak[1];
        }
        last = t;
        writes_last = writes;
    }
    atomic_store(&s.stop, 1);
    for (size_t i = 0; i < o.readers; i++)
        pthread_join(rt[i], NULL);
    if (o.replace)
        pthread_join(wt[0], NULL);
    pthread_join(wt[1], NULL);
    long errors = atomic_load(&s.errors);
    if (!o.json && rss_warm > 0)
        printf("# resident memory %.1f MB after the warm-up (the first sixth), %.1f MB at the end: "
               "%+.1f%%; %ld errors\n",
               rss_warm, rss_end, (rss_end - rss_warm) * 100 / rss_warm, errors);
    if (!o.json && peak_early[0] > 0 && peak_late[0] > 0)
        printf("# peaks, the second sixth against the last: resident %.1f -> %.1f MB (%+.1f%%), "
               "anonymous %.1f -> %.1f MB (%+.1f%%)\n",
               peak_early[0], peak_late[0], (peak_late[0] - peak_early[0]) * 100 / peak_early[0],
               peak_early[1], peak_late[1], (peak_late[1] - peak_early[1]) * 100 / peak_early[1]);
    if (!o.json && atomic_load(&s.compactions))
        printf("# %ld compactions, %.1f s in all\n", atomic_load(&s.compactions),
               (double)atomic_load(&s.compact_ms) / 1e3);
    cordon_close(s.db);
    for (size_t i = 0; i < o.readers; i++)
        pthread_mutex_destroy(&s.lat[i].lock);
    free(s.queries);
    bench_gen_free(&g);
    char cmd[4200];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0)
        fprintf(stderr, "cordon bench soak: could not remove %s\n", dir);
    return errors ? 1 : 0;
}
