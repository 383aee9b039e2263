/* bench_text.c: `cordon bench text --corpus DIR`: BM25 quality (nDCG@10, recall@100) and
 * per-query latency at 100/10/1 % readable, beside SQLite FTS5 on the same data in the same run,
 * plus exact kNN and the engine's RRF hybrid when DIR/use-lite exists. Relies on textidx (the
 * BM25 rows: k1, b and pruning per row), include/cordon.h (the kNN and hybrid rows), sqlite3. */
#include "bench_text.h"

#include <dirent.h>
#include <jansson.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/clock.h"
#include "base/mem.h"
#include "bench_text_data.h"
#include "bench_util.h"
#include "cordon.h"
#include "text/textidx.h"

#define TOPK 100
/* The main rows use the best analyzer found on SciFact (see docs/benchmarks-text.md); the
 * variants include the Elasticsearch-compatible "english" (Porter + Lucene stop words). */
#define DEFAULT_ANALYZER "english:snowball:nostop"
#define DEFAULT_VARIANTS "english,english:snowball,english:nostop,standard"

typedef struct row {
    char corpus[64], engine[16], mode[16], config[64];
    double readable, ndcg, recall, p50, p95, p99;
    size_t nq;
} row_t;

typedef struct run {
    const btd_t *d;
    const char *corpus;
    row_t *rows;
    size_t nrows, cap;
    int reps;
    size_t k;         /* hits a BM25 query asks for (TOPK for judged corpora) */
    double *lat;      /* per query, ms (min over reps) */
    uint32_t *ranked; /* per query TOPK ids (ranking of the current engine) */
    float *scores;
    size_t *nranked;
    double build_s[2], build_mb[2]; /* index build: cordon's textidx, FTS5 (seconds, MB) */
    int no_fts5;                    /* --no-fts5: the engine's rows only (profiling) */
    int layouts;                    /* --readable: bit i runs layout i (100, 10, 1 %) */
} run_t;

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
    qsort(l, r->d->nq, sizeof *l, bench_cmp_double);
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
    w->p99 = l[(size_t)((double)r->d->nq * 0.99)];
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
 * statistics over the readable set (the engine's default) unless global; unseen: each search
 * reads a set no search read before (the layout and one id past the corpus, made untimed), so
 * none finds its statistics kept (src/text/fscache.h), as a new reader or the first search
 * after a write would. */
static int run_cordon(run_t *r, textidx_t *ti, float k1, float b, const roaring_bitmap_t *allowed,
                      int exhaustive, int global, int unseen)
{
    ti->cfg.k1 = k1;
    ti->cfg.b = b;
    for (size_t q = 0; q < r->d->nq; q++) {
        r->lat[q] = 1e30;
        for (int rep = 0; rep < r->reps; rep++) {
            roaring_bitmap_t *own = unseen ? roaring_bitmap_copy(allowed) : NULL;
            if (own) /* a doc the index does not hold: the same readable docs, another set */
                roaring_bitmap_add(own,
                                   (uint32_t)(r->d->ndocs + q * (size_t)r->reps + (size_t)rep));
            const roaring_bitmap_t *set = own ? own : allowed;
            uint64_t t0 = cdn_clock_ns();
            textq_t *tq;
            textidx_result_t res;
            textidx_search_opts_t o = {set, r->k, exhaustive, global ? NULL : set, 0};
            cdn_err_t err;
            if (textq_match("body", r->d->q_text[q], &tq) ||
                textidx_search(ti, tq, &o, &res, &err)) {
                fprintf(stderr, "bench text: query %zu failed\n", q);
                if (own)
                    roaring_bitmap_free(own);
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
            if (own)
                roaring_bitmap_free(own);
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
    char sql[256];
    snprintf(sql, sizeof sql, "%s LIMIT %zu",
             allowed ? "WITH m AS MATERIALIZED (SELECT rowid AS id, bm25(d) AS s FROM d "
                       "WHERE d MATCH ?1) SELECT m.id FROM m JOIN allow USING (id) ORDER BY m.s"
                     : "SELECT rowid FROM d WHERE d MATCH ?1 ORDER BY bm25(d)",
             r->k);
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
            while (sqlite3_step(st) == SQLITE_ROW && n < r->k)
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

/* ---- kNN and hybrid through the engine (include/cordon.h), as a product caller runs them ---- */

/* The readable layouts as ACL principals: every doc "all", the 10 % layout's "p10", the 1 %
 * layout's "p1"; a search as one of them reads exactly that layout. */
static const char *const layout_principal[3] = {"all", "p10", "p1"};

static void remove_tree(const char *dir)
{
    DIR *dh = opendir(dir);
    for (struct dirent *e; dh && (e = readdir(dh));)
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
            unlinkat(dirfd(dh), e->d_name, 0);
    if (dh)
        closedir(dh);
    rmdir(dir);
}

/* Loads the corpus into a new data directory under $TMPDIR: one collection with the title and
 * text fields, the use-lite vectors (dot product; a doc without one gets a zero vector), BM25
 * k1 0.9 b 0.4 over the readable set (the engine's default statistics), ACLs from the layouts. */
static int engine_load(const btd_t *d, const char *analyzer, roaring_bitmap_t *const lay[3],
                       char *dir, size_t cap, cordon_t **db)
{
    const char *tmp = getenv("TMPDIR");
    static const char *const fields[2] = {"title", "text"};
    cordon_collection_spec spec = {.name = "bench",
                                   .dim = d->dim,
                                   .metric = CORDON_METRIC_DOT,
                                   .text_fields = fields,
                                   .n_text_fields = 2,
                                   .analyzer = analyzer,
                                   .bm25_k1 = 0.9f,
                                   .bm25_b = 0.4f,
                                   .asserted_principals = 1};
    cordon_error err = {0};
    snprintf(dir, cap, "%s/cordon-bench-text-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(dir) || cordon_open(dir, NULL, db, &err) ||
        cordon_collection_create(*db, &spec, &err)) {
        fprintf(stderr, "bench text: engine at %s: %s\n", dir, err.message);
        return -1;
    }
    enum { BATCH = 1000 };
    cordon_chunk *ch = cdn_calloc(BATCH, sizeof *ch);
    cordon_field *fv = cdn_calloc(BATCH * 2, sizeof *fv);
    char(*ids)[24] = cdn_calloc(BATCH, sizeof *ids);
    const char *(*allow)[3] = cdn_calloc(BATCH, sizeof *allow);
    float *zero = cdn_calloc(d->dim, sizeof *zero);
    int rc = 0;
    for (size_t at = 0; at < d->ndocs && !rc; at += BATCH) {
        size_t n = d->ndocs - at < BATCH ? d->ndocs - at : BATCH;
        for (size_t j = 0; j < n; j++) {
            size_t i = at + j, na = 0;
            snprintf(ids[j], sizeof ids[j], "%zu", i);
            fv[2 * j] = (cordon_field){"title", d->title[i]};
            fv[2 * j + 1] = (cordon_field){"text", d->text[i]};
            for (int l = 0; l < 3; l++)
                if (roaring_bitmap_contains(lay[l], (uint32_t)i))
                    allow[j][na++] = layout_principal[l];
            ch[j] = (cordon_chunk){.id = ids[j],
                                   .vector = d->dvec_ok[i] ? d->dvec + i * d->dim : zero,
                                   .fields = fv + 2 * j,
                                   .n_fields = 2,
                                   .allowed = allow[j],
                                   .n_allowed = na};
        }
        if (cordon_put(*db, "bench", ch, n, NULL, &err)) {
            fprintf(stderr, "bench text: loading docs %zu..: %s\n", at, err.message);
            rc = -1;
        }
    }
    cdn_free(ch);
    cdn_free(fv);
    cdn_free(ids);
    cdn_free(allow);
    cdn_free(zero);
    return rc;
}

/* mode 1: kNN alone (CORDON_STRATEGY_EXACT); mode 2: hybrid, cordon_search with the query's
 * vector and text, fused by RRF (k 60, window 100), the planner choosing the vector plan. The
 * plan of the last query is written to plan. */
static int run_engine(run_t *r, cordon_t *db, int layout_index, int mode, char *plan, size_t cap)
{
    cordon_subject subj = {.principals = &layout_principal[layout_index], .n_principals = 1};
    for (size_t q = 0; q < r->d->nq; q++) {
        r->lat[q] = 1e30;
        r->nranked[q] = 0;
        if (!r->d->qvec_ok[q])
            continue;
        cordon_query cq = {.vector = r->d->qvec + q * r->d->dim,
                           .k = TOPK,
                           .rank_window_size = TOPK,
                           .rank_constant = 60,
                           .fusion = CORDON_FUSION_RRF};
        if (mode == 1)
            cq.strategy = CORDON_STRATEGY_EXACT;
        else
            cq.text = r->d->q_text[q];
        for (int rep = 0; rep < r->reps; rep++) {
            cordon_result *res;
            cordon_error err = {0};
            uint64_t t0 = cdn_clock_ns();
            if (cordon_search(db, "bench", &subj, &cq, &res, &err)) {
                fprintf(stderr, "bench text: query %zu: %s\n", q, err.message);
                return -1;
            }
            double ms = (double)(cdn_clock_ns() - t0) / 1e6;
            r->lat[q] = ms < r->lat[q] ? ms : r->lat[q];
            r->nranked[q] = res->n_hits < TOPK ? res->n_hits : TOPK;
            for (size_t i = 0; i < r->nranked[q]; i++)
                r->ranked[q * TOPK + i] = (uint32_t)strtoul(res->hits[i].id, NULL, 10);
            snprintf(plan, cap, "%s", res->plan);
            cordon_result_free(res);
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
            json_array_append_new(
                rows,
                json_pack("{s:s,s:s,s:s,s:s,s:f,s:f,s:f,s:f,s:f,s:f,s:i}", "corpus", w->corpus,
                          "engine", w->engine, "mode", w->mode, "config", w->config, "readable",
                          w->readable, "ndcg_at_10", w->ndcg, "recall_at_100", w->recall, "p50_ms",
                          w->p50, "p95_ms", w->p95, "p99_ms", w->p99, "queries", (int)w->nq));
        }
        json_t *o = json_pack("{s:s,s:o,s:{s:f,s:f,s:f,s:f}}", "bench", "text", "rows", rows,
                              "build", "cordon_s", r->build_s[0], "cordon_mb", r->build_mb[0],
                              "fts5_s", r->build_s[1], "fts5_mb", r->build_mb[1]);
        char *s = json_dumps(o, JSON_INDENT(1));
        printf("%s\n", s);
        free(s);
        json_decref(o);
        return;
    }
    printf("%-10s %-7s %-7s %-46s %8s %8s %9s %8s %8s %8s\n", "corpus", "engine", "mode", "config",
           "readable", "ndcg@10", "recall@100", "p50_ms", "p95_ms", "p99_ms");
    for (size_t i = 0; i < r->nrows; i++) {
        const row_t *w = &r->rows[i];
        printf("%-10s %-7s %-7s %-46s %8.2f %8.4f %9.4f %8.4f %8.4f %8.4f\n", w->corpus, w->engine,
               w->mode, w->config, w->readable, w->ndcg, w->recall, w->p50, w->p95, w->p99);
    }
    printf("index build (last corpus): cordon %.1f s, %.0f MB resident; fts5 %.1f s, %.0f MB\n",
           r->build_s[0], r->build_mb[0], r->build_s[1], r->build_mb[1]);
}

static void usage(FILE *f)
{
    fprintf(f, "usage: cordon bench text --corpus DIR [--corpus DIR2] [--format json]\n"
               "       [--reps N (default 3)] [--quick] [--analyzer A] [--analyzers A,B,...]\n"
               "       cordon bench text --generated N [--queries Q (300)] [--k K (10)] ...\n"
               "  --generated: N generated documents (Zipf words), Q queries of 2-4 words, no\n"
               "  judgements (quality columns are 0), no analyzer variants. --no-fts5: no peer.\n"
               "  --readable 100,10,1: the BM25 layouts to run (default all three; profiling)\n"
               "  --analyzer: main rows (default " DEFAULT_ANALYZER "); --analyzers: variant rows\n"
               "  at 100%% readable (default " DEFAULT_VARIANTS ")\n"
               "  DIR in BEIR layout: corpus.jsonl, queries.jsonl, qrels/test.tsv, optional\n"
               "  use-lite/ vectors. --quick skips analyzer variants and FTS5 filtered rows.\n");
}

/* "100,10,1" or a part of it as layout bits (1, 2, 4); -1 for anything else. */
static int parse_layouts(const char *s)
{
    int bits = 0;
    while (*s) {
        char *end;
        long v = strtol(s, &end, 10);
        int bit = v == 100 ? 1 : v == 10 ? 2 : v == 1 ? 4 : 0;
        if (end == s || !bit || (*end && *end != ','))
            return -1;
        bits |= bit;
        s = *end ? end + 1 : end;
    }
    return bits ? bits : -1;
}

/* Analyzer variants run at k1 0.9, b 0.4, all readable (comma-separated --analyzers). */

/* The kNN and hybrid rows, through the engine loaded with this corpus. */
static int bench_engine(run_t *r, const char *analyzer, roaring_bitmap_t *const lay[3],
                        const double fracs[3])
{
    char dir[4096], plan[32] = "", cfg[128];
    cordon_t *db = NULL;
    int rc = engine_load(r->d, analyzer, lay, dir, sizeof dir, &db);
    for (int m = 1; m <= 2 && !rc; m++)
        for (int i = 0; i < 3 && !rc; i++) {
            rc = run_engine(r, db, i, m, plan, sizeof plan);
            if (m == 1)
                snprintf(cfg, sizeof cfg, "use-lite exact dot (cordon_search)");
            else
                snprintf(cfg, sizeof cfg, "cordon_search %s k=60 w=100", plan);
            add_row(r, "cordon", m == 1 ? "knn" : "hybrid", cfg, fracs[i], lay[i]);
        }
    cordon_close(db);
    remove_tree(dir);
    return rc;
}

static int bench_corpus(run_t *r, int quick, const char *analyzer, const char *variants)
{
    const double fracs[3] = {1.0, 0.1, 0.01};
    roaring_bitmap_t *lay[3];
    char cfg[128];
    for (int i = 0; i < 3; i++)
        lay[i] = layout(r->d->ndocs, fracs[i], 42 + (uint64_t)i);
    double rss0 = bench_rss_mb();
    uint64_t t0 = cdn_clock_ns();
    textidx_t *ti = build_index(r->d, analyzer);
    r->build_s[0] = (double)(cdn_clock_ns() - t0) / 1e9;
    r->build_mb[0] = bench_rss_mb() - rss0;
    char c09[96], c12[96], c09g[96], c09w[96];
    snprintf(c09, sizeof c09, "%s k1=0.9 b=0.4", analyzer);
    snprintf(c09w, sizeof c09w, "%s k1=0.9 b=0.4 unseen set", analyzer);
    snprintf(c09g, sizeof c09g, "%s k1=0.9 b=0.4 global stats", analyzer);
    snprintf(c12, sizeof c12, "%s k1=1.2 b=0.75", analyzer);
    t0 = cdn_clock_ns();
    sqlite3 *db = r->no_fts5 ? NULL : fts_build(r->d);
    r->build_s[1] = (double)(cdn_clock_ns() - t0) / 1e9;
    r->build_mb[1] = (double)sqlite3_memory_used() / 1048576.0;
    int rc = ti && (db || r->no_fts5) ? 0 : -1;
    for (int i = 0; i < 3 && !rc; i++) {
        if (!(r->layouts & 1 << i))
            continue;
        rc = run_cordon(r, ti, 0.9f, 0.4f, lay[i], 0, 0, 0);
        add_row(r, "cordon", "bm25", c09, fracs[i], lay[i]);
        /* the same over sets no search read before: their statistics computed anew */
        rc = rc ? rc : run_cordon(r, ti, 0.9f, 0.4f, lay[i], 0, 0, 1);
        add_row(r, "cordon", "bm25", c09w, fracs[i], lay[i]);
        /* collection-wide statistics (bm25_global_stats), the cost of the default's beside */
        rc = rc ? rc : run_cordon(r, ti, 0.9f, 0.4f, lay[i], 0, 1, 0);
        add_row(r, "cordon", "bm25", c09g, fracs[i], lay[i]);
        rc = rc ? rc : run_cordon(r, ti, 1.2f, 0.75f, lay[i], 0, 0, 0);
        add_row(r, "cordon", "bm25", c12, fracs[i], lay[i]);
        if (db && (i == 0 || !quick)) {
            rc = rc ? rc : run_fts(r, db, i ? lay[i] : NULL);
            add_row(r, "fts5", "bm25", "porter unicode61 (k1=1.2 b=0.75)", fracs[i], lay[i]);
        }
    }
    if (!rc && r->layouts & 1) {
        rc = run_cordon(r, ti, 0.9f, 0.4f, lay[0], 1, 0, 0);
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
            rc = run_cordon(r, tv, p ? 1.2f : 0.9f, p ? 0.75f : 0.4f, lay[0], 0, 0, 0);
            snprintf(cfg, sizeof cfg, "%s k1=%s", name, p ? "1.2 b=0.75" : "0.9 b=0.4");
            add_row(r, "cordon", "bm25", cfg, 1.0, lay[0]);
        }
        rc = tv ? rc : -1;
        textidx_free(tv);
    }
    if (!rc && r->d->qvec)
        rc = bench_engine(r, analyzer, lay, fracs);
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
    size_t generated = 0, nqueries = 300, k = 0;
    run_t r = {.layouts = 7};
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
        else if (!strcmp(argv[i], "--no-fts5"))
            r.no_fts5 = 1;
        else if (!strcmp(argv[i], "--generated") && i + 1 < argc)
            generated = strtoul(argv[++i], NULL, 10);
        else if (!strcmp(argv[i], "--queries") && i + 1 < argc)
            nqueries = strtoul(argv[++i], NULL, 10);
        else if (!strcmp(argv[i], "--k") && i + 1 < argc)
            k = strtoul(argv[++i], NULL, 10);
        else if (!strcmp(argv[i], "--readable") && i + 1 < argc)
            r.layouts = parse_layouts(argv[++i]);
        else {
            usage(strcmp(argv[i], "--help") ? stderr : stdout);
            return strcmp(argv[i], "--help") ? 2 : 0;
        }
    }
    if ((!nd && !generated) || (nd && generated) || reps < 1 || k > TOPK || !nqueries ||
        r.layouts < 0) {
        usage(stderr);
        return 2;
    }
    r.reps = reps;
    r.k = k ? k : generated ? 10 : TOPK;
    int rc = 0;
    char gname[32];
    snprintf(gname, sizeof gname, "gen%zu", generated);
    for (int c = 0; c < (generated ? 1 : nd) && !rc; c++) {
        btd_t d;
        if (generated ? btd_generate(generated, nqueries, 42, &d) : btd_load(dirs[c], &d)) {
            fprintf(stderr, "bench text: %s\n", generated ? "out of memory" : "cannot load");
            return 1;
        }
        const char *base = generated ? NULL : strrchr(dirs[c], '/');
        r.d = &d;
        r.corpus = generated ? gname : base && base[1] ? base + 1 : dirs[c];
        r.lat = cdn_calloc(d.nq + 1, sizeof *r.lat);
        r.ranked = cdn_calloc((d.nq + 1) * TOPK, sizeof *r.ranked);
        r.scores = cdn_calloc((d.nq + 1) * TOPK, sizeof *r.scores);
        r.nranked = cdn_calloc(d.nq + 1, sizeof *r.nranked);
        rc = bench_corpus(&r, quick, analyzer, generated ? "" : variants);
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
