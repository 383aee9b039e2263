/* bench_text.c: `cordon bench text --corpus DIR`: BM25 quality (nDCG@10, recall@100) and
 * per-query latency at 100/10/1 % readable, beside SQLite FTS5 on the same data in the same run,
 * plus exact kNN and RRF hybrid when DIR/use-lite exists. Relies on textidx, fusion, sqlite3. */
#include "../bench/bench_text.h"

#include <jansson.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../bench/bench_text_data.h"
#include "base/clock.h"
#include "base/mem.h"
#include "query/fusion.h"
#include "text/textidx.h"
#include "vector/distance.h"

#define TOPK 100
/* The main rows use the best analyzer found on SciFact (see docs/benchmarks-text.md); the
 * variants include the Elasticsearch-compatible "english" (Porter + Lucene stop words). */
#define DEFAULT_ANALYZER "english:snowball:nostop"
#define DEFAULT_VARIANTS "english,english:snowball,english:nostop,standard"

typedef struct row {
    char corpus[64], engine[16], mode[16], config[64];
    double readable, ndcg, recall, p50, p95;
    size_t nq;
} row_t;

typedef struct run {
    const btd_t *d;
    const char *corpus;
    row_t *rows;
    size_t nrows, cap;
    int reps;
    double *lat;      /* per query, ms (min over reps) */
    uint32_t *ranked; /* per query TOPK ids (ranking of the current engine) */
    float *scores;
    size_t *nranked;
} run_t;

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* Closes a configuration: means over queries and latency percentiles into a new row. */
static void add_row(run_t *r, const char *engine, const char *mode, const char *config,
                    double readable, const roaring_bitmap_t *allowed)
{
    double sn = 0, sr = 0;
    size_t nq = 0;
    for (size_t q = 0; q < r->d->nq; q++) {
        double n10, r100;
        if (btd_eval(r->d, q, r->ranked + q * TOPK, r->nranked[q], allowed, &n10, &r100)) {
            sn += n10;
            sr += r100;
            nq++;
        }
    }
    double *l = cdn_malloc(r->d->nq * sizeof *l);
    memcpy(l, r->lat, r->d->nq * sizeof *l);
    qsort(l, r->d->nq, sizeof *l, cmp_double);
    cdn_grow((void **)&r->rows, &r->cap, r->nrows + 1, sizeof *r->rows);
    row_t *w = &r->rows[r->nrows++];
    memset(w, 0, sizeof *w);
    snprintf(w->corpus, sizeof w->corpus, "%s", r->corpus);
    snprintf(w->engine, sizeof w->engine, "%s", engine);
    snprintf(w->mode, sizeof w->mode, "%s", mode);
    snprintf(w->config, sizeof w->config, "%s", config);
    w->readable = readable;
    w->ndcg = nq ? sn / (double)nq : 0;
    w->recall = nq ? sr / (double)nq : 0;
    w->p50 = l[r->d->nq / 2];
    w->p95 = l[(size_t)((double)r->d->nq * 0.95)];
    w->nq = nq;
    cdn_free(l);
}

static textidx_t *build_index(const btd_t *d, const char *analyzer)
{
    textidx_t *ti;
    cdn_err_t err;
    if (textidx_create(NULL, &ti, &err) ||
        textidx_add_field(ti, "body", TEXTIDX_TEXT, analyzer, &err)) {
        fprintf(stderr, "bench text: %s\n", err.msg);
        return NULL;
    }
    for (size_t i = 0; i < d->ndocs; i++) {
        textidx_value_t v[2] = {{"body", d->title[i], strlen(d->title[i]), 0},
                                {"body", d->text[i], strlen(d->text[i]), 0}};
        if (textidx_add_doc(ti, (uint32_t)i, v, 2, &err)) {
            fprintf(stderr, "bench text: doc %zu: %s\n", i, err.msg);
            textidx_free(ti);
            return NULL;
        }
    }
    return ti;
}

/* Runs every query reps times through cordon BM25 and records rankings and latencies; BM25
 * statistics over the readable set (the engine's default) unless global. */
static int run_cordon(run_t *r, textidx_t *ti, float k1, float b, const roaring_bitmap_t *allowed,
                      int exhaustive, int global)
{
    ti->cfg.k1 = k1;
    ti->cfg.b = b;
    for (size_t q = 0; q < r->d->nq; q++) {
        r->lat[q] = 1e30;
        for (int rep = 0; rep < r->reps; rep++) {
            uint64_t t0 = cdn_clock_ns();
            textq_t *tq;
            textidx_result_t res;
            textidx_search_opts_t o = {allowed, TOPK, exhaustive, global ? NULL : allowed};
            cdn_err_t err;
            if (textq_match("body", r->d->q_text[q], &tq) ||
                textidx_search(ti, tq, &o, &res, &err)) {
                fprintf(stderr, "bench text: query %zu failed\n", q);
                return -1;
            }
            double ms = (double)(cdn_clock_ns() - t0) / 1e6;
            r->lat[q] = ms < r->lat[q] ? ms : r->lat[q];
            r->nranked[q] = res.n;
            for (size_t i = 0; i < res.n; i++) {
                r->ranked[q * TOPK + i] = res.hits[i].id;
                r->scores[q * TOPK + i] = res.hits[i].score;
            }
            textidx_result_free(&res);
            textq_free(tq);
        }
    }
    return 0;
}

/* ---- SQLite FTS5 peer: porter unicode61 tokenizer, bm25() ranking (FTS5's k1 1.2, b 0.75) */

static sqlite3 *fts_build(const btd_t *d)
{
    sqlite3 *db;
    sqlite3_stmt *st;
    if (sqlite3_open(":memory:", &db) != SQLITE_OK)
        return NULL;
    sqlite3_exec(db,
                 "CREATE VIRTUAL TABLE d USING fts5(body, tokenize='porter unicode61');"
                 "CREATE TEMP TABLE allow(id INTEGER PRIMARY KEY); BEGIN;",
                 NULL, NULL, NULL);
    sqlite3_prepare_v2(db, "INSERT INTO d(rowid, body) VALUES(?, ?)", -1, &st, NULL);
    for (size_t i = 0; i < d->ndocs; i++) {
        size_t n = strlen(d->title[i]) + strlen(d->text[i]) + 2;
        char *body = cdn_malloc(n);
        snprintf(body, n, "%s %s", d->title[i], d->text[i]);
        sqlite3_bind_int64(st, 1, (sqlite3_int64)i);
        sqlite3_bind_text(st, 2, body, -1, SQLITE_TRANSIENT);
        sqlite3_step(st);
        sqlite3_reset(st);
        cdn_free(body);
    }
    sqlite3_finalize(st);
    sqlite3_exec(db, "COMMIT;", NULL, NULL, NULL);
    return db;
}

/* "tok1" OR "tok2" ...: every run of letters/digits (any non-ASCII byte counts as a letter),
 * quoted so that FTS5 query syntax in the text cannot break the query. */
static void fts_query(const char *q, char *out, size_t cap)
{
    size_t o = 0;
    out[0] = 0;
    for (const char *p = q; *p;) {
        while (*p && !((unsigned char)*p >= 0x80 || (*p >= '0' && *p <= '9') ||
                       ((*p | 32) >= 'a' && (*p | 32) <= 'z')))
            p++;
        const char *s = p;
        while (*p && ((unsigned char)*p >= 0x80 || (*p >= '0' && *p <= '9') ||
                      ((*p | 32) >= 'a' && (*p | 32) <= 'z')))
            p++;
        if (p > s && o + (size_t)(p - s) + 8 < cap)
            o += (size_t)snprintf(out + o, cap - o, "%s\"%.*s\"", o ? " OR " : "", (int)(p - s), s);
    }
}

static int run_fts(run_t *r, sqlite3 *db, const roaring_bitmap_t *allowed)
{
    sqlite3_stmt *st;
    sqlite3_exec(db, "DELETE FROM allow;", NULL, NULL, NULL);
    if (allowed) {
        sqlite3_exec(db, "BEGIN;", NULL, NULL, NULL);
        sqlite3_prepare_v2(db, "INSERT INTO allow VALUES(?)", -1, &st, NULL);
        roaring_uint32_iterator_t it;
        for (roaring_init_iterator(allowed, &it); it.has_value;
             roaring_advance_uint32_iterator(&it)) {
            sqlite3_bind_int64(st, 1, it.current_value);
            sqlite3_step(st);
            sqlite3_reset(st);
        }
        sqlite3_finalize(st);
        sqlite3_exec(db, "COMMIT;", NULL, NULL, NULL);
    }
    /* materialised: otherwise SQLite probes the match once per allowed row (100x slower) */
    const char *sql = allowed ? "WITH m AS MATERIALIZED (SELECT rowid AS id, bm25(d) AS s FROM d "
                                "WHERE d MATCH ?1) SELECT m.id FROM m JOIN allow USING (id) "
                                "ORDER BY m.s LIMIT 100"
                              : "SELECT rowid FROM d WHERE d MATCH ?1 ORDER BY bm25(d) LIMIT 100";
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK)
        return -1;
    char qs[8192];
    for (size_t q = 0; q < r->d->nq; q++) {
        r->lat[q] = 1e30;
        for (int rep = 0; rep < r->reps; rep++) {
            uint64_t t0 = cdn_clock_ns();
            fts_query(r->d->q_text[q], qs, sizeof qs);
            sqlite3_bind_text(st, 1, qs, -1, SQLITE_STATIC);
            size_t n = 0;
            while (sqlite3_step(st) == SQLITE_ROW && n < TOPK)
                r->ranked[q * TOPK + n++] = (uint32_t)sqlite3_column_int64(st, 0);
            sqlite3_reset(st);
            double ms = (double)(cdn_clock_ns() - t0) / 1e6;
            r->lat[q] = ms < r->lat[q] ? ms : r->lat[q];
            r->nranked[q] = n;
        }
    }
    sqlite3_finalize(st);
    return 0;
}

/* ---- exact kNN (dot product on unit vectors) and RRF hybrid ---- */

static size_t knn_one(const btd_t *d, size_t q, const roaring_bitmap_t *allowed, uint32_t *ids,
                      float *sc)
{
    size_t n = 0;
    const float *qv = d->qvec + q * d->dim;
    for (size_t i = 0; i < d->ndocs; i++) {
        if (!d->dvec_ok[i] || (allowed && !roaring_bitmap_contains(allowed, (uint32_t)i)))
            continue;
        float s = vec_dot(qv, d->dvec + i * d->dim, d->dim);
        if (n == TOPK && s <= sc[n - 1])
            continue;
        size_t at = n < TOPK ? n++ : TOPK - 1;
        while (at > 0 && sc[at - 1] < s) {
            sc[at] = sc[at - 1];
            ids[at] = ids[at - 1];
            at--;
        }
        sc[at] = s;
        ids[at] = (uint32_t)i;
    }
    return n;
}

/* mode 1: kNN alone; mode 2: BM25 (k1 0.9, b 0.4) and kNN fused by RRF (k 60, window 100). */
static int run_vec(run_t *r, textidx_t *ti, const roaring_bitmap_t *allowed, int mode)
{
    uint32_t kid[TOPK];
    float ksc[TOPK];
    fusion_hit_t fh[TOPK];
    ti->cfg.k1 = 0.9f;
    ti->cfg.b = 0.4f;
    for (size_t q = 0; q < r->d->nq; q++) {
        r->lat[q] = 1e30;
        r->nranked[q] = 0;
        if (!r->d->qvec_ok[q])
            continue;
        for (int rep = 0; rep < r->reps; rep++) {
            uint64_t t0 = cdn_clock_ns();
            size_t nk = knn_one(r->d, q, allowed, kid, ksc), nf = 0;
            uint32_t *out = r->ranked + q * TOPK;
            if (mode == 1) {
                memcpy(out, kid, nk * sizeof *kid);
                nf = nk;
            } else {
                textq_t *tq;
                textidx_result_t res;
                textidx_search_opts_t o = {allowed, TOPK, 0, allowed};
                if (textq_match("body", r->d->q_text[q], &tq) ||
                    textidx_search(ti, tq, &o, &res, NULL))
                    return -1;
                uint32_t bid[TOPK];
                float bsc[TOPK];
                for (size_t i = 0; i < res.n; i++) {
                    bid[i] = res.hits[i].id;
                    bsc[i] = res.hits[i].score;
                }
                fusion_list_t ls[2] = {{bid, bsc, res.n}, {kid, ksc, nk}};
                fusion_rrf(ls, 2, 60, TOPK, TOPK, fh, &nf);
                for (size_t i = 0; i < nf; i++)
                    out[i] = fh[i].id;
                textidx_result_free(&res);
                textq_free(tq);
            }
            double ms = (double)(cdn_clock_ns() - t0) / 1e6;
            r->lat[q] = ms < r->lat[q] ? ms : r->lat[q];
            r->nranked[q] = nf;
        }
    }
    return 0;
}

/* ---- layouts, output, main ---- */

/* Random layout: each doc readable with probability frac (xorshift, fixed seed). */
static roaring_bitmap_t *layout(size_t ndocs, double frac, uint64_t seed)
{
    roaring_bitmap_t *b = roaring_bitmap_create();
    uint64_t s = seed * 0x9E3779B97F4A7C15ull + 1;
    for (size_t i = 0; i < ndocs; i++) {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        if ((double)(s >> 11) / 9007199254740992.0 < frac)
            roaring_bitmap_add(b, (uint32_t)i);
    }
    return b;
}

static void print_rows(const run_t *r, int json)
{
    if (json) {
        json_t *rows = json_array();
        for (size_t i = 0; i < r->nrows; i++) {
            const row_t *w = &r->rows[i];
            json_array_append_new(rows, json_pack("{s:s,s:s,s:s,s:s,s:f,s:f,s:f,s:f,s:f,s:i}",
                                                  "corpus", w->corpus, "engine", w->engine, "mode",
                                                  w->mode, "config", w->config, "readable",
                                                  w->readable, "ndcg_at_10", w->ndcg,
                                                  "recall_at_100", w->recall, "p50_ms", w->p50,
                                                  "p95_ms", w->p95, "queries", (int)w->nq));
        }
        json_t *o = json_pack("{s:s,s:o}", "bench", "text", "rows", rows);
        char *s = json_dumps(o, JSON_INDENT(1));
        printf("%s\n", s);
        free(s);
        json_decref(o);
        return;
    }
    printf("%-10s %-7s %-7s %-46s %8s %8s %9s %8s %8s\n", "corpus", "engine", "mode", "config",
           "readable", "ndcg@10", "recall@100", "p50_ms", "p95_ms");
    for (size_t i = 0; i < r->nrows; i++) {
        const row_t *w = &r->rows[i];
        printf("%-10s %-7s %-7s %-46s %8.2f %8.4f %9.4f %8.4f %8.4f\n", w->corpus, w->engine,
               w->mode, w->config, w->readable, w->ndcg, w->recall, w->p50, w->p95);
    }
}

static void usage(FILE *f)
{
    fprintf(f, "usage: cordon bench text --corpus DIR [--corpus DIR2] [--format json]\n"
               "       [--reps N (default 3)] [--quick] [--analyzer A] [--analyzers A,B,...]\n"
               "  --analyzer: main rows (default " DEFAULT_ANALYZER "); --analyzers: variant rows\n"
               "  at 100%% readable (default " DEFAULT_VARIANTS ")\n"
               "  DIR in BEIR layout: corpus.jsonl, queries.jsonl, qrels/test.tsv, optional\n"
               "  use-lite/ vectors. --quick skips analyzer variants and FTS5 filtered rows.\n");
}

/* Analyzer variants run at k1 0.9, b 0.4, all readable (comma-separated --analyzers). */

static int bench_corpus(run_t *r, int quick, const char *analyzer, const char *variants)
{
    const double fracs[3] = {1.0, 0.1, 0.01};
    roaring_bitmap_t *lay[3];
    char cfg[128];
    for (int i = 0; i < 3; i++)
        lay[i] = layout(r->d->ndocs, fracs[i], 42 + (uint64_t)i);
    textidx_t *ti = build_index(r->d, analyzer);
    char c09[96], c12[96], c09g[96];
    snprintf(c09, sizeof c09, "%s k1=0.9 b=0.4", analyzer);
    snprintf(c09g, sizeof c09g, "%s k1=0.9 b=0.4 global stats", analyzer);
    snprintf(c12, sizeof c12, "%s k1=1.2 b=0.75", analyzer);
    sqlite3 *db = fts_build(r->d);
    int rc = ti && db ? 0 : -1;
    for (int i = 0; i < 3 && !rc; i++) {
        rc = run_cordon(r, ti, 0.9f, 0.4f, lay[i], 0, 0);
        add_row(r, "cordon", "bm25", c09, fracs[i], lay[i]);
        /* collection-wide statistics (bm25_global_stats), the cost of the default's beside */
        rc = rc ? rc : run_cordon(r, ti, 0.9f, 0.4f, lay[i], 0, 1);
        add_row(r, "cordon", "bm25", c09g, fracs[i], lay[i]);
        rc = rc ? rc : run_cordon(r, ti, 1.2f, 0.75f, lay[i], 0, 0);
        add_row(r, "cordon", "bm25", c12, fracs[i], lay[i]);
        if (i == 0 || !quick) {
            rc = rc ? rc : run_fts(r, db, i ? lay[i] : NULL);
            add_row(r, "fts5", "bm25", "porter unicode61 (k1=1.2 b=0.75)", fracs[i], lay[i]);
        }
    }
    if (!rc) {
        rc = run_cordon(r, ti, 0.9f, 0.4f, lay[0], 1, 0);
        snprintf(cfg, sizeof cfg, "%s no pruning", c09);
        add_row(r, "cordon", "bm25", cfg, 1.0, lay[0]);
    }
    for (const char *v = variants; *v && !rc && !quick;) {
        char name[48];
        size_t n = strcspn(v, ",");
        snprintf(name, sizeof name, "%.*s", (int)(n < 47 ? n : 47), v);
        v += n + (v[n] == ',');
        textidx_t *tv = build_index(r->d, name);
        for (int p = 0; p < 2 && tv && !rc; p++) {
            rc = run_cordon(r, tv, p ? 1.2f : 0.9f, p ? 0.75f : 0.4f, lay[0], 0, 0);
            snprintf(cfg, sizeof cfg, "%s k1=%s", name, p ? "1.2 b=0.75" : "0.9 b=0.4");
            add_row(r, "cordon", "bm25", cfg, 1.0, lay[0]);
        }
        rc = tv ? rc : -1;
        textidx_free(tv);
    }
    for (int m = 1; m <= 2 && !rc && r->d->qvec; m++)
        for (int i = 0; i < 3 && !rc; i++) {
            rc = run_vec(r, ti, lay[i], m);
            add_row(r, "cordon", m == 1 ? "knn" : "hybrid",
                    m == 1 ? "use-lite exact dot" : "rrf(bm25 k1=.9 b=.4, knn) k=60 w=100",
                    fracs[i], lay[i]);
        }
    for (int i = 0; i < 3; i++)
        roaring_bitmap_free(lay[i]);
    textidx_free(ti);
    sqlite3_close(db);
    return rc;
}

int bench_text_main(int argc, char **argv)
{
    const char *dirs[8];
    int nd = 0, json = 0, quick = 0, reps = 3;
    const char *variants = DEFAULT_VARIANTS, *analyzer = DEFAULT_ANALYZER;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--corpus") && i + 1 < argc && nd < 8)
            dirs[nd++] = argv[++i];
        else if (!strcmp(argv[i], "--format") && i + 1 < argc)
            json = !strcmp(argv[++i], "json");
        else if (!strcmp(argv[i], "--reps") && i + 1 < argc)
            reps = (int)strtol(argv[++i], NULL, 10);
        else if (!strcmp(argv[i], "--analyzer") && i + 1 < argc)
            analyzer = argv[++i];
        else if (!strcmp(argv[i], "--analyzers") && i + 1 < argc)
            variants = argv[++i];
        else if (!strcmp(argv[i], "--quick"))
            quick = 1;
        else {
            usage(strcmp(argv[i], "--help") ? stderr : stdout);
            return strcmp(argv[i], "--help") ? 2 : 0;
        }
    }
    if (!nd || reps < 1) {
        usage(stderr);
        return 2;
    }
    run_t r = {0};
    r.reps = reps;
    int rc = 0;
    for (int c = 0; c < nd && !rc; c++) {
        btd_t d;
        if (btd_load(dirs[c], &d))
            return 1;
        const char *base = strrchr(dirs[c], '/');
        r.d = &d;
        r.corpus = base && base[1] ? base + 1 : dirs[c];
        r.lat = cdn_calloc(d.nq + 1, sizeof *r.lat);
        r.ranked = cdn_calloc((d.nq + 1) * TOPK, sizeof *r.ranked);
        r.scores = cdn_calloc((d.nq + 1) * TOPK, sizeof *r.scores);
        r.nranked = cdn_calloc(d.nq + 1, sizeof *r.nranked);
        rc = bench_corpus(&r, quick, analyzer, variants);
        cdn_free(r.lat);
        cdn_free(r.ranked);
        cdn_free(r.scores);
        cdn_free(r.nranked);
        btd_free(&d);
    }
    print_rows(&r, json);
    cdn_free(r.rows);
    return rc ? 1 : 0;
}
