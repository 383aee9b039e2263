/* bench_permissions.c: `cordon bench permissions`: loads a corpus into cordon with hierarchical
 * ACLs (1,000 teams / 100 departments / 10 divisions), then measures every strategy for every
 * layout and share readable against the benchmark's own ground truth and ACL table.
 * Relies on include/cordon.h (the engine under test), perm_data.c and perm_truth.c. */
#include "bench_permissions.h"
#include "base/clock.h"
#include "base/mem.h"
#include "bench_util.h"
#include "perm_int.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define PERM_BATCH 10000
#define PERM_ACL 7 /* random team/dept/div, topical team/dept/div, the all-seeing principal */
#define PERM_ALL "bench-all"
#define PERM_NAME 32
#define PERM_MAX_FAIL_MSGS 10

typedef struct perm_run {
    perm_world_t w;
    cordon_t *db;
    char dir[256];
    double load_s, reopen_s, rss_mb, engine_rss_open_mb, engine_rss_end_mb, file_open_mb;
    perm_cold_t cold;
    perm_memcg_t memcg;
    int reused; /* the --data directory already held the corpus */
    size_t failures;
    double *lat;
} perm_run_t;

static void usage(FILE *f)
{
    fprintf(
        f,
        "usage: cordon bench permissions [--corpus DIR|fashion-mnist|generated] [--size N]\n"
        "           [--dim D] [--generator topics|isotropic] [--queries Q] [--seed S] [--m M]\n"
        "           [--efc EF] [--ef EF] [--max-candidates N] [--exact-floats N]\n"
        "           [--int8-scan|--no-int8-scan] [--cold] [--warmup] [--compact] [--data DIR] "
        "[--keep]\n"
        "           [--memory-limit MB]\n"
        "           [--strategy auto,prefilter,...] [--shares 0.1,1,5,20,100]\n"
        "           [--dump DIR] [--format table|json] [--json-out FILE] [--selftest]\n"
        "  Every chunk belongs to one of 1,000 teams (10 to a department, 10 departments to a\n"
        "  division); its ACL names its team, department and division. Subjects read 0.1%%,\n"
        "  1%%, 5%%, 20%% or 100%% through the fewest groups, in three layouts (random teams;\n"
        "  topical teams held nearest / farthest from the query). Strategies auto, prefilter,\n"
        "  postfilter and the baselines naive and unprotected: recall@10 against a brute force\n"
        "  over the readable chunks, leaks against the benchmark's own ACL table, complete\n"
        "  rate, p50/p95 ms, candidates. Exits 1 if a cordon strategy leaks or says complete\n"
        "  while missing a readable top-10 chunk.\n"
        "  --corpus DIR: BEIR layout with use-lite/{corpus,queries}.fvecs (cosine);\n"
        "  fashion-mnist: the Debian package, L2, first 1,000 test images as queries;\n"
        "  generated: --size x --dim rows from --generator (seed --seed), 100 queries; topics\n"
        "  (default) is shaped like text embeddings, isotropic is a harder stress case.\n"
        "  --data DIR: the engine's directory (default: a temporary one, removed unless --keep);\n"
        "  a DIR that already holds the same corpus is reused without loading.\n"
        "  --int8-scan / --no-int8-scan: codes always / never (default: from 128 dimensions).\n"
        "  --cold: drop the data directory from the page cache before the reopen (as after a\n"
        "  restart) and time the first searches, one row per share, apart.\n"
        "  --warmup: run every row once before the measured pass (the steady state of a\n"
        "  long-running process: float rows it re-scores already mapped).\n"
        "  --memory-limit MB: reopen the engine in a memory cgroup of MB (needs root and a\n"
        "  memory cgroup; implies --cold): its memory and the page cache it reads are charged\n"
        "  to the group, the benchmark's own arrays are not; prints the group's peak.\n"
        "  --compact: compact the collection after loading it (cordon_collection_compact:\n"
        "  rows numbered by ACL, so each group's rows lie in runs); a no-op when they are.\n"
        "  --shares P,...: measure only the rows of these readable shares, in percent (the\n"
        "  ground truth of every share is still computed).\n"
        "  --json-out FILE: also write the JSON object to FILE (with the table on stdout).\n"
        "  --dump DIR writes vectors, teams, subjects and ground truth for bench/peers/peers.py.\n"
        "  --selftest: generated 3000 x 16, 40 queries, low exact threshold; also fails if\n"
        "  auto's recall@10 is below 0.99 in any row.\n"
        "  defaults: --corpus generated --size 50000 --dim 128 --seed 42 --max-candidates 1000\n");
}

static int parse_flag(const char *a, perm_opts_t *o)
{
    if (!strcmp(a, "--selftest"))
        o->selftest = 1;
    else if (!strcmp(a, "--keep"))
        o->keep = 1;
    else if (!strcmp(a, "--int8-scan"))
        o->int8_scan = 1;
    else if (!strcmp(a, "--no-int8-scan"))
        o->int8_scan = -1;
    else if (!strcmp(a, "--cold"))
        o->cold = 1;
    else if (!strcmp(a, "--compact"))
        o->compact = 1;
    else if (!strcmp(a, "--warmup"))
        o->warmup = 1;
    else
        return 0;
    return 1;
}

/* The bits of one --strategy name (0: not a strategy). */
static unsigned strategy_bits(const char *t, size_t len)
{
    for (int i = 0; i < PERM_STRATS; i++)
        if (strlen(perm_strat_names[i]) == len && !strncmp(t, perm_strat_names[i], len))
            return 1u << i;
    return 0;
}

/* The bits of one --shares percentage (0: not a share). */
static unsigned share_bits(const char *t, size_t len)
{
    char buf[32] = {0}, *end = NULL;
    if (len >= sizeof buf)
        return 0;
    memcpy(buf, t, len);
    double pct = strtod(buf, &end);
    for (int i = 0; end != buf && !*end && i < PERM_SHARES; i++)
        if (fabs(perm_shares[i].frac * 100 - pct) < 1e-9)
            return 1u << i;
    return 0;
}

/* A comma-separated list for `opt` (--strategy: these strategies; --shares: these readable
 * shares, in percent) into *mask, each item through bits(); `valid` names the items allowed. */
static int parse_mask(const char *v, const char *opt, const char *valid,
                      unsigned (*bits)(const char *, size_t), unsigned *mask)
{
    *mask = 0;
    for (const char *t = v; *t;) {
        size_t len = strcspn(t, ",");
        unsigned b = bits(t, len);
        if (!b) {
            fprintf(stderr, "cordon bench permissions: %s '%.*s' is not one of %s\n", opt, (int)len,
                    t, valid);
            return 2;
        }
        *mask |= b;
        t += len + (t[len] == ',');
    }
    return *mask ? 0 : 2;
}

static int parse_opts(int argc, char **argv, perm_opts_t *o)
{
    *o = (perm_opts_t){.corpus = "generated",
                       .size = 50000,
                       .dim = 128,
                       .seed = 42,
                       .max_candidates = 1000,
                       .strat_mask = (1u << PERM_STRATS) - 1,
                       .share_mask = (1u << PERM_SHARES) - 1};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        uint64_t x = 0;
        int rc = 0;
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            usage(stdout);
            return -1;
        }
        if (parse_flag(a, o))
            continue;
        i++;
        if (!strcmp(a, "--size") &&
            !(rc = bench_parse_u64("permissions", a, v, PERM_TEAMS, 50000000, &x)))
            o->size = x;
        else if (!strcmp(a, "--dim") &&
                 !(rc = bench_parse_u64("permissions", a, v, 2, CORDON_DIM_MAX, &x)))
            o->dim = (uint32_t)x;
        else if (!strcmp(a, "--queries") &&
                 !(rc = bench_parse_u64("permissions", a, v, 1, 100000, &x)))
            o->queries = x;
        else if (!strcmp(a, "--memory-limit") &&
                 !(rc = bench_parse_u64("permissions", a, v, 64, 1u << 30, &x)))
            o->memory_limit_mb = (double)x;
        else if (!strcmp(a, "--seed") &&
                 !(rc = bench_parse_u64("permissions", a, v, 0, UINT64_MAX, &x)))
            o->seed = x;
        else if (!strcmp(a, "--m") && !(rc = bench_parse_u64("permissions", a, v, 2, 256, &x)))
            o->m = (uint32_t)x;
        else if (!strcmp(a, "--efc") && !(rc = bench_parse_u64("permissions", a, v, 1, 100000, &x)))
            o->efc = (uint32_t)x;
        else if (!strcmp(a, "--ef") && !(rc = bench_parse_u64("permissions", a, v, 1, 100000, &x)))
            o->ef = (uint32_t)x;
        else if (!strcmp(a, "--max-candidates") &&
                 !(rc = bench_parse_u64("permissions", a, v, 10, 1000000, &x)))
            o->max_candidates = x;
        else if (!strcmp(a, "--exact-floats") &&
                 !(rc = bench_parse_u64("permissions", a, v, 1, UINT64_MAX, &x)))
            o->exact_floats = x;
        else if (!strcmp(a, "--generator") && !(rc = bench_gen_parse("permissions", v, &o->gen)))
            ;
        else if (!strcmp(a, "--corpus") && v)
            o->corpus = v;
        else if (!strcmp(a, "--data") && v)
            o->data_dir = v;
        else if (!strcmp(a, "--dump") && v)
            o->dump_dir = v;
        else if (!strcmp(a, "--strategy") && v &&
                 !(rc = parse_mask(v, a, "auto, prefilter, postfilter, naive, unprotected",
                                   strategy_bits, &o->strat_mask)))
            ;
        else if (!strcmp(a, "--shares") && v &&
                 !(rc = parse_mask(v, a, "0.1, 1, 5, 20, 100", share_bits, &o->share_mask)))
            ;
        else if (!strcmp(a, "--json-out") && v)
            o->json_out = v;
        else if (!strcmp(a, "--format") && v && (!strcmp(v, "json") || !strcmp(v, "table")))
            o->json = !strcmp(v, "json");
        else if (!rc) {
            fprintf(stderr, "cordon bench permissions: unknown option or missing value '%s'\n", a);
            usage(stderr);
            return 2;
        }
        if (rc)
            return rc;
    }
    if (o->selftest)
        *o = (perm_opts_t){.corpus = "generated",
                           .size = 3000,
                           .dim = 16,
                           .queries = 40,
                           .seed = o->seed,
                           .gen = o->gen,
                           .max_candidates = 1000,
                           .exact_floats = 100 * 16,
                           .json = o->json,
                           .json_out = o->json_out,
                           .selftest = 1,
                           .strat_mask = (1u << PERM_STRATS) - 1,
                           .share_mask = (1u << PERM_SHARES) - 1};
    o->progress = !o->json && !o->selftest && isatty(2);
    return 0;
}

/* Writes one batch of chunks [from, to) with their seven-principal ACLs. */
static int put_batch(perm_run_t *r, size_t from, size_t to, cordon_chunk *ch,
                     char (*names)[PERM_NAME], const char **acl, cordon_error *e)
{
    const perm_world_t *w = &r->w;
    for (size_t i = from; i < to; i++) {
        size_t b = i - from;
        char(*nm)[PERM_NAME] = names + b * (PERM_ACL + 1);
        const char **a = acl + b * PERM_ACL;
        for (int l = 0; l < 2; l++) {
            unsigned t = w->team[l][i];
            perm_group_name(l ? PERM_ALIGNED : PERM_RANDOM, t, nm[l * 3], PERM_NAME);
            perm_group_name(l ? PERM_ALIGNED : PERM_RANDOM, PERM_TEAMS + t / 10, nm[l * 3 + 1],
                            PERM_NAME);
            perm_group_name(l ? PERM_ALIGNED : PERM_RANDOM, PERM_TEAMS + PERM_DEPTS + t / 100,
                            nm[l * 3 + 2], PERM_NAME);
        }
        snprintf(nm[6], PERM_NAME, "%s", PERM_ALL);
        snprintf(nm[7], PERM_NAME, "c%zu", i);
        for (int j = 0; j < PERM_ACL; j++)
            a[j] = nm[j];
        ch[b] = (cordon_chunk){
            .id = nm[7], .vector = w->c.base + i * w->c.dim, .allowed = a, .n_allowed = PERM_ACL};
    }
    return cordon_put(r->db, "perm", ch, to - from, NULL, e);
}

/* The corpus a kept data directory was loaded with (name and seed) is written beside it, so a
 * directory is reused only for the very same rows. *match: 1 if the marker matches. */
static void corpus_marker(const perm_run_t *r, int write, int *match)
{
    char path[4096], want[160], got[160] = "";
    snprintf(path, sizeof path, "%s/bench-corpus.txt", r->dir);
    snprintf(want, sizeof want, "%s seed %llu\n", r->w.c.name, (unsigned long long)r->w.o.seed);
    FILE *f = fopen(path, write ? "w" : "r");
    if (f && write)
        fputs(want, f);
    else if (f && !fgets(got, sizeof got, f))
        got[0] = 0;
    if (f)
        fclose(f);
    if (match)
        *match = !strcmp(want, got);
}

/* Resident memory without the benchmark's own arrays (corpus, queries, teams, subjects, truth):
 * what the engine keeps. Memory the benchmark freed (the generator's and the ground truth's
 * temporaries) is handed back first: the allocator keeps freed heap pages resident. */
static double engine_rss(const perm_run_t *r)
{
#ifdef __GLIBC__
    malloc_trim(0);
#endif
    const perm_world_t *w = &r->w;
    size_t n = w->c.n, nq = w->c.nq, dim = w->c.dim;
    double own =
        bench_resident_mb(w->c.base, n * dim * sizeof(float)) +
        bench_resident_mb(w->c.queries, nq * dim * sizeof(float)) +
        bench_resident_mb(w->team[0], n * sizeof(uint16_t)) +
        bench_resident_mb(w->team[1], n * sizeof(uint16_t)) +
        bench_resident_mb(w->held, PERM_LAYOUTS * nq * sizeof *w->held) +
        bench_resident_mb(w->centroid, (size_t)PERM_GROUPS * dim * sizeof(float)) +
        bench_resident_mb(w->truth, (size_t)PERM_LAYOUTS * PERM_SHARES * nq * sizeof *w->truth);
    return bench_rss_mb() - own;
}

/* Opens the engine, creates the collection, loads every chunk, then closes and reopens. */
static int load_engine(perm_run_t *r)
{
    const perm_opts_t *o = &r->w.o;
    /* candidates as the cost of each strategy: the scores it computed, hidden rows' too */
    cordon_options opts = {.plan_exact_floats = o->exact_floats, .report_work = 1};
    cordon_collection_spec spec = {.name = "perm",
                                   .asserted_principals = 1, /* subjects are principal sets */
                                   .int8_scan = o->int8_scan,
                                   .dim = r->w.c.dim,
                                   .metric = r->w.c.metric,
                                   .hnsw_m = o->m,
                                   .hnsw_ef_construction = o->efc,
                                   .hnsw_ef_search = o->ef};
    cordon_chunk *ch = cdn_calloc(PERM_BATCH, sizeof *ch);
    char(*names)[PERM_NAME] = cdn_calloc((size_t)PERM_BATCH * (PERM_ACL + 1), PERM_NAME);
    const char **acl = cdn_calloc((size_t)PERM_BATCH * PERM_ACL, sizeof *acl);
    cordon_error e = {0};
    int rc = ch && names && acl ? CORDON_OK : CORDON_ERR_NOMEM;
    cordon_collection_info info;
    size_t from = 0;
    int same = 0;
    uint64_t t0 = cdn_clock_ns();
    if (rc == CORDON_OK)
        rc = cordon_open(r->dir, &opts, &r->db, &e);
    /* A kept --data directory holding this corpus already is reused: the HNSW build is the
     * slow part, and query-side changes (planner, ef) need no reload. */
    corpus_marker(r, 0, &same);
    if (rc == CORDON_OK && cordon_collection_info_get(r->db, "perm", &info, NULL) == CORDON_OK &&
        same && info.dim == r->w.c.dim && info.chunks == r->w.c.n) {
        from = r->w.c.n;
        r->reused = 1;
    } else if (rc == CORDON_OK) {
        rc = cordon_collection_create(r->db, &spec, &e);
    }
    for (size_t i = from; rc == CORDON_OK && i < r->w.c.n; i += PERM_BATCH) {
        size_t to = i + PERM_BATCH < r->w.c.n ? i + PERM_BATCH : r->w.c.n;
        rc = put_batch(r, i, to, ch, names, acl, &e);
        if (o->progress)
            fprintf(stderr, "\rloaded %zu / %zu chunks (%.1f s)", to, r->w.c.n,
                    (double)(cdn_clock_ns() - t0) / 1e9);
    }
    r->load_s = (double)(cdn_clock_ns() - t0) / 1e9;
    if (rc == CORDON_OK)
        corpus_marker(r, 1, NULL);
    if (rc == CORDON_OK && o->compact) {
        cordon_compact_stats st;
        t0 = cdn_clock_ns();
        rc = cordon_collection_compact(r->db, "perm", &st, &e);
        if (rc == CORDON_OK && !o->json)
            fprintf(stderr, "compaction %.1f s (%s)\n", (double)(cdn_clock_ns() - t0) / 1e9,
                    st.compacted ? "rows numbered anew by ACL" : "rows already in order");
    }
    if (o->progress)
        fprintf(stderr, "\n");
    if (rc == CORDON_OK) {
        cordon_close(r->db);
        r->db = NULL;
#ifdef __GLIBC__
        malloc_trim(0); /* heap pages the reopen would reuse stay charged where they were */
#endif
        cdn_err_t ce = {0};
        if (o->memory_limit_mb > 0 &&
            (rc = perm_memcg_enter(&r->memcg, o->memory_limit_mb, &ce)) != 0)
            fprintf(stderr, "cordon bench permissions: %s\n", ce.msg);
    }
    if (rc == CORDON_OK) {
        if (o->cold || o->memory_limit_mb > 0) {
            perm_evict_dir(r->dir, &r->cold.cached_mb, &r->cold.left_mb);
            r->cold.ran = 1;
        }
        t0 = cdn_clock_ns();
        rc = cordon_open(r->dir, &opts, &r->db, &e);
        r->reopen_s = (double)(cdn_clock_ns() - t0) / 1e9;
    }
    r->rss_mb = bench_rss_mb();
    r->engine_rss_open_mb = engine_rss(r);
    r->file_open_mb = bench_status_mb("RssFile");
    if (rc)
        fprintf(stderr, "cordon bench permissions: loading failed: %s (%s)\n",
                e.message[0] ? e.message : "", cordon_strerror(rc));
    cdn_free(ch);
    cdn_free(names);
    cdn_free(acl);
    return rc;
}

static void fail(perm_run_t *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Records a failed check; the first few are printed, the count decides the exit status. */
static void fail(perm_run_t *r, const char *fmt, ...)
{
    va_list ap;
    if (r->failures++ >= PERM_MAX_FAIL_MSGS)
        return;
    va_start(ap, fmt);
    fprintf(stderr, "ASSERTION FAILED: ");
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\n");
    va_end(ap);
}

static int plan_slot(const char *plan)
{
    for (int i = 0; i < PERM_PLANS - 1; i++)
        if (!strcmp(plan, perm_plan_names[i]))
            return i;
    return PERM_PLANS - 1;
}

/* Scores one query's hits: leaks, recall (tie-aware: a hit counts when it is no farther than
 * the true k-th), and whether `complete` was told truthfully. */
static void score_hits(perm_run_t *r, perm_row_t *row, size_t q, const cordon_result *res,
                       const uint8_t *flags, double *recall_sum)
{
    const perm_world_t *w = &r->w;
    const perm_truth_t *t = perm_truth_at(w, row->layout, row->share, q);
    const float *qv = w->c.queries + q * w->c.dim;
    int cordon = row->strat <= PERM_POSTFILTER;
    float tol_k = t->n ? t->dist[t->n - 1] + 1e-4f * fabsf(t->dist[t->n - 1]) + 1e-5f : 0;
    size_t good = 0, kept = 0;
    for (size_t i = 0; i < res->n_hits; i++) {
        char *end;
        unsigned long id = strtoul(res->hits[i].id + 1, &end, 10);
        if (res->hits[i].id[0] != 'c' || *end || id >= w->c.n) {
            fail(r, "%s/%s query %zu: hit with an unknown id %s", perm_layout_names[row->layout],
                 perm_strat_names[row->strat], q, res->hits[i].id);
            continue;
        }
        if (!perm_readable(w, row->layout, flags, id)) {
            if (row->strat == PERM_NAIVE)
                continue; /* the naive baseline drops it itself */
            row->leaks++;
            if (cordon)
                fail(r, "%s/%s query %zu leaked a chunk the subject may not read (share %g)",
                     perm_layout_names[row->layout], perm_strat_names[row->strat], q,
                     perm_shares[row->share].frac);
            continue;
        }
        float d = perm_dist(&w->c, qv, w->c.base + id * w->c.dim);
        kept++;
        good += d <= tol_k;
    }
    *recall_sum += t->n ? (double)(good < t->n ? good : t->n) / t->n : 1.0;
    /* Truthful only when n readable hits lie within the true k-th distance: then they are a
     * true top-k (up to ties); otherwise a nearer readable chunk was left out. */
    if (cordon && res->complete && (kept < t->n || good < t->n))
        fail(r,
             "%s/%s query %zu said complete but missed a readable top-10 chunk "
             "(share %g)",
             perm_layout_names[row->layout], perm_strat_names[row->strat], q,
             perm_shares[row->share].frac);
    if (cordon && res->readable != t->readable)
        fail(r, "%s/%s query %zu: engine counts a different readable set (share %g)",
             perm_layout_names[row->layout], perm_strat_names[row->strat], q,
             perm_shares[row->share].frac);
}

/* Runs every query of one (layout, share, strategy). */
static int run_row(perm_run_t *r, perm_row_t *row)
{
    const perm_world_t *w = &r->w;
    static const cordon_strategy strat[PERM_STRATS] = {
        CORDON_STRATEGY_AUTO, CORDON_STRATEGY_PREFILTER, CORDON_STRATEGY_POSTFILTER,
        CORDON_STRATEGY_AUTO, CORDON_STRATEGY_AUTO};
    char names[PERM_MAX_HELD][PERM_NAME];
    const char *pr[PERM_MAX_HELD];
    uint8_t flags[PERM_GROUPS];
    double recall = 0, complete = 0, cand = 0, total_ms = 0;
    int all = row->strat >= PERM_NAIVE;
    for (size_t q = 0; q < w->c.nq; q++) {
        int nh = perm_shares[row->share].count;
        cordon_result *res = NULL;
        cordon_error e = {0};
        perm_held_flags(w, row->layout, row->share, q, flags);
        for (int j = 0; j < nh; j++) {
            perm_group_name(row->layout, w->held[row->layout * w->c.nq + q][row->share][j],
                            names[j], PERM_NAME);
            pr[j] = names[j];
        }
        pr[0] = all ? PERM_ALL : pr[0];
        cordon_subject subj = {.principals = pr, .n_principals = all ? 1 : (size_t)nh};
        cordon_query qq = {.vector = w->c.queries + q * w->c.dim,
                           .k = PERM_K,
                           .strategy = strat[row->strat],
                           .ef_search = w->o.ef,
                           .max_candidates = w->o.max_candidates};
        uint64_t t0 = cdn_clock_ns();
        int rc = cordon_search(r->db, "perm", &subj, &qq, &res, &e);
        r->lat[q] = (double)(cdn_clock_ns() - t0) / 1e6;
        total_ms += r->lat[q];
        if (rc) {
            fprintf(stderr, "cordon bench permissions: search failed: %s\n", e.message);
            return rc;
        }
        score_hits(r, row, q, res, flags, &recall);
        complete += !all && res->complete;
        cand += (double)res->candidates;
        row->plans[plan_slot(res->plan)]++;
        row->readable_sum += perm_truth_at(w, row->layout, row->share, q)->readable;
        cordon_result_free(res);
    }
    qsort(r->lat, w->c.nq, sizeof *r->lat, bench_cmp_double);
    row->recall = recall / (double)w->c.nq;
    row->complete_rate = complete / (double)w->c.nq;
    row->candidates = cand / (double)w->c.nq;
    row->qps = total_ms > 0 ? (double)w->c.nq / (total_ms / 1e3) : 0;
    row->p50_ms = r->lat[w->c.nq / 2];
    row->p95_ms = r->lat[(size_t)((double)(w->c.nq - 1) * 0.95 + 0.5)];
    return CORDON_OK;
}

static int run_all(perm_run_t *r, perm_row_t *rows, size_t *n)
{
    int rc = CORDON_OK;
    *n = 0;
    for (int l = 0; l < PERM_LAYOUTS && rc == CORDON_OK; l++)
        for (int s = 0; s < PERM_SHARES && rc == CORDON_OK; s++)
            for (int st = 0; st < PERM_STRATS && rc == CORDON_OK; st++) {
                if (!(r->w.o.strat_mask & (1u << st)) || !(r->w.o.share_mask & (1u << s)))
                    continue;
                perm_row_t *row = &rows[(*n)++];
                *row = (perm_row_t){.layout = l, .share = s, .strat = st};
                rc = run_row(r, row);
                if (r->w.o.progress)
                    fprintf(stderr, "\r%s %g%% %s done     ", perm_layout_names[l],
                            perm_shares[s].frac * 100, perm_strat_names[st]);
            }
    if (r->w.o.progress)
        fprintf(stderr, "\n");
    return rc;
}

/* The rows of a cold start (--cold), before anything else searches: auto, random layout, the
 * whole collection readable first, then the shares from the smallest. */
static int run_cold(perm_run_t *r)
{
    static const int order[PERM_SHARES] = {4, 0, 1, 2, 3};
    int rc = CORDON_OK;
    for (int i = 0; r->cold.ran && i < PERM_SHARES && rc == CORDON_OK; i++) {
        perm_row_t *row = &r->cold.rows[i];
        *row = (perm_row_t){.layout = PERM_RANDOM, .share = order[i], .strat = PERM_AUTO};
        rc = run_row(r, row);
    }
    return rc;
}

static int prepare(perm_run_t *r)
{
    cdn_err_t err = {0};
    uint64_t t0 = cdn_clock_ns();
    int rc = perm_corpus_load(&r->w.o, &r->w.c, &err);
    if (rc == CDN_OK)
        rc = perm_assign_teams(&r->w, &err);
    if (rc == CDN_OK)
        rc = perm_choose_subjects(&r->w, &err);
    if (rc == CDN_OK)
        rc = perm_truth_compute(&r->w, &err);
    if (rc == CDN_OK && r->w.o.dump_dir)
        rc = perm_dump(&r->w, r->w.o.dump_dir, &err);
    if (rc)
        fprintf(stderr, "cordon bench permissions: %s\n", err.msg);
    else if (!r->w.o.json && !r->w.o.selftest)
        fprintf(stderr, "corpus %s: %zu x %u, %zu queries; teams and ground truth in %.1f s\n",
                r->w.c.name, r->w.c.n, r->w.c.dim, r->w.c.nq, (double)(cdn_clock_ns() - t0) / 1e9);
    return rc;
}

static void selftest_recall(perm_run_t *r, const perm_row_t *rows, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (rows[i].strat == PERM_AUTO && rows[i].recall < 0.99)
            fail(r, "selftest: auto recall@10 is %.4f (below 0.99) for layout %s, share %g",
                 rows[i].recall, perm_layout_names[rows[i].layout],
                 perm_shares[rows[i].share].frac);
}

static void world_free(perm_world_t *w)
{
    perm_corpus_free(&w->c);
    cdn_free(w->team[0]);
    cdn_free(w->team[1]);
    cdn_free(w->held);
    cdn_free(w->centroid);
    cdn_free(w->truth);
}

int bench_permissions_main(int argc, char **argv)
{
    perm_run_t r = {0};
    perm_row_t *rows = NULL;
    perm_sweep_t sweep[PERM_SWEEP_MAX];
    size_t n = 0, n_sweep = 0;
    int rc = parse_opts(argc, argv, &r.w.o);
    if (rc)
        return rc < 0 ? 0 : rc;
    if (r.w.o.data_dir)
        snprintf(r.dir, sizeof r.dir, "%s", r.w.o.data_dir);
    else if (snprintf(r.dir, sizeof r.dir, "/tmp/cordon-perm-XXXXXX") && !mkdtemp(r.dir)) {
        fprintf(stderr, "cordon bench permissions: cannot make a directory under /tmp\n");
        return 2;
    }
    if (prepare(&r) == CDN_OK && load_engine(&r) == CORDON_OK &&
        (rows = cdn_calloc(PERM_LAYOUTS * PERM_SHARES * PERM_STRATS, sizeof *rows)) &&
        (r.lat = cdn_calloc(r.w.c.nq, sizeof *r.lat)) && run_cold(&r) == CORDON_OK &&
        (!r.w.o.warmup || run_all(&r, rows, &n) == CORDON_OK) &&
        run_all(&r, rows, &n) == CORDON_OK &&
        (r.w.o.selftest || perm_sweep_unfiltered(&r.w, r.db, PERM_ALL, sweep, &n_sweep) == 0)) {
        perm_report_t rep = {rows,
                             n,
                             sweep,
                             n_sweep,
                             r.reused ? -1 : r.load_s,
                             r.reopen_s,
                             r.rss_mb,
                             r.engine_rss_open_mb,
                             engine_rss(&r),
                             r.file_open_mb,
                             bench_status_mb("RssFile"),
                             &r.cold,
                             &r.memcg};
        perm_memcg_read(&r.memcg);
        if (r.w.o.selftest)
            selftest_recall(&r, rows, n);
        perm_print(&r.w, &rep);
        rc = r.failures ? 1 : 0;
        if (r.failures)
            fprintf(stderr, "cordon bench permissions: %zu assertion(s) failed\n", r.failures);
    } else {
        rc = 2;
    }
    cordon_close(r.db);
    perm_memcg_leave(&r.memcg);
    if (!r.w.o.keep && !r.w.o.data_dir)
        bench_rmtree(r.dir);
    world_free(&r.w);
    cdn_free(rows);
    cdn_free(r.lat);
    return rc;
}
