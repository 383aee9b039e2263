/* bench_rebac.c: `cordon bench rebac`, relationship tuples at scale through the public API: a
 * Drive-like corpus (users in groups, groups in groups, folders nested four deep under roots,
 * documents in the deepest folders, shares of folders to groups and of documents to users) or
 * a Confluence-like one (spaces, pages nested under spaces and pages, restrictions that deny),
 * written with cordon_model_apply in batches, then check latency, lookup-resources of a
 * subject who reads a whole top folder or space, and the cost of sharing, unsharing and moving
 * (each visible to the next check, which the benchmark verifies); with --spicedb the same
 * questions to SpiceDB (bench_rebac_peer.c); with --chunks, searches of a collection whose
 * chunks name those documents. Relies on cordon.h, bench_util, bench_rebac_peer, base/clock. */
#include "bench_rebac.h"
#include "base/clock.h"
#include "bench_rebac_peer.h"
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
#define RB_SPACES 10
#define RB_TOP_PAGES 1000

static const char DRIVE_SCHEMA[] =
    "{\"op\":\"put_schema\",\"schema\":{\"types\":{\"user\":{},"
    "\"group\":{\"relations\":{\"member\":[\"user\",\"group#member\"]}},"
    "\"folder\":{\"relations\":{\"parent\":[\"folder\"],\"viewer\":[\"user\",\"group#member\"]},"
    "\"permissions\":{\"view\":\"viewer + parent->view\"}},"
    "\"document\":{\"relations\":{\"parent\":[\"folder\"],\"viewer\":[\"user\",\"group#member\"]},"
    "\"permissions\":{\"view\":\"viewer + parent->view\"}}}}}";

/* Confluence-like: a page reads from its space (top pages) or its parent page; a restriction
 * (blocked) denies a page and, through parent->view, every page under it; edit needs view and
 * to be an editor of the page or an admin of its space. */
static const char CONFLUENCE_SCHEMA[] =
    "{\"op\":\"put_schema\",\"schema\":{\"types\":{\"user\":{},"
    "\"group\":{\"relations\":{\"member\":[\"user\",\"group#member\"]}},"
    "\"space\":{\"relations\":{\"member\":[\"user\",\"group#member\"],"
    "\"admin\":[\"user\",\"group#member\"]},"
    "\"permissions\":{\"view\":\"member + admin\"}},"
    "\"page\":{\"relations\":{\"space\":[\"space\"],\"parent\":[\"page\"],"
    "\"editor\":[\"user\",\"group#member\"],\"blocked\":[\"user\",\"group#member\"]},"
    "\"permissions\":{\"view\":\"(space->view + parent->view) - blocked\","
    "\"edit\":\"view & (editor + space->admin)\"}}}}}";

typedef struct rb_run rb_run_t;

/* What differs between the corpora: the schema, the tuples, the objects the checks ask about,
 * and the writes: a share the reader gains the probe object through, a move that takes it
 * away, and the move back. */
typedef struct rb_corpus {
    const char *name, *schema, *type, *obj_fmt; /* obj_fmt: "document:d%llu" */
    int (*build)(rb_run_t *r, uint64_t want);
    const char *share, *probe, *move_del, *move_add;
} rb_corpus_t;

struct rb_run {
    cordon_t *db;
    rb_peer_t *peer; /* SpiceDB, with --spicedb */
    const rb_corpus_t *corpus;
    char *buf; /* the op being built */
    size_t len, cap, n;
    uint64_t tuples, rng;
    unsigned long docs;
    int failed;
};

static void usage(FILE *f)
{
    fprintf(f, "usage: cordon bench rebac [--tuples N] [--checks C] [--chunks K] [--seed S]\n"
               "           [--corpus drive|confluence] [--spicedb] [--format table|json]\n"
               "  Writes about N tuples (default 1,000,000) of a corpus, both with 10,000 users\n"
               "  in 500 groups (some nested). drive (the default): 11,110 folders four levels\n"
               "  deep, documents in the 10,000 deepest, 100 folder shares to groups, one\n"
               "  document share in 20 to a user. confluence: 10 spaces with groups as members,\n"
               "  1,000 top pages, pages some six levels deep under them, one page in 10\n"
               "  blocking a user or a group (view = (space->view + parent->view) - blocked).\n"
               "  Then C random checks (user, object, view): p50/p95/p99 us and the share\n"
               "  allowed; lookup-resources of a user reading one top folder or space;\n"
               "  sharing, unsharing and moving (each a write_tuples op through the durable\n"
               "  model log, verified by the next check).\n"
               "  --spicedb: the same tuples, checks, lookup and writes through SpiceDB\n"
               "  (bench/peers/spicedb, node; installed into build/spicedb-peer unless\n"
               "  bench/peers/spicedb/node_modules has it): its p50/p95 and agree, the share of\n"
               "  its answers equal to cordon's.\n"
               "  --chunks K (default 0: none): K chunks (16-d) naming objects 0..K-1, then\n"
               "  200 searches (k 10, auto) as the shared reader and as a user who reads a few\n"
               "  objects: p50 ms, hits.\n");
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
    rb_peer_tuple(r->peer, t);
    return ++r->n == RB_BATCH ? flush(r) : 0;
}

/* Folder ids: level L (0 = roots), index i within the level. */
static unsigned long folder(int level, unsigned long i)
{
    static const unsigned long base[RB_LEVELS] = {0, 10, 110, 1110};
    return base[level] + i;
}

static void build_groups(rb_run_t *r)
{
    for (unsigned long u = 0; u < RB_USERS; u++) /* each user in one group */
        tuple(r, "group:g%lu#member@user:u%lu", u % RB_GROUPS, u);
    for (unsigned long g = 0; g < RB_GROUPS / 10; g++) /* g0..g49 hold one more group each */
        tuple(r, "group:g%lu#member@group:g%lu#member", g, RB_GROUPS / 10 + g * 9 + 1);
}

static int build_drive(rb_run_t *r, uint64_t want)
{
    unsigned long leaves = 10000, docs;
    uint64_t fixed = RB_USERS + RB_GROUPS / 10 + 1110 + 100;
    docs = want > fixed ? (unsigned long)((want - fixed) * 20 / 21) : 1000;
    r->docs = docs;
    build_groups(r);
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

/* Spaces s0..s9, each with 100 top pages (p0..p999, page i in space i % 10); page i >= 1000
 * under page (i - 1000) / 4, so the pages go some six levels deep. One page in 20 blocks a
 * group, one in 20 a user; one in 10 has an editor. Three groups are members of each space, a
 * user its admin. */
static int build_confluence(rb_run_t *r, uint64_t want)
{
    uint64_t fixed = RB_USERS + RB_GROUPS / 10 + RB_SPACES * 4;
    unsigned long pages = want > fixed ? (unsigned long)((want - fixed) * 20 / 23) : 2000;
    r->docs = pages;
    build_groups(r);
    for (unsigned long sp = 0; sp < RB_SPACES; sp++) {
        for (int k = 0; k < 3; k++)
            tuple(r, "space:s%lu#member@group:g%lu#member", sp,
                  bench_rng_next(&r->rng) % RB_GROUPS);
        tuple(r, "space:s%lu#admin@user:u%lu", sp, bench_rng_next(&r->rng) % RB_USERS);
    }
    for (unsigned long i = 0; i < pages && !r->failed; i++) {
        if (i < RB_TOP_PAGES)
            tuple(r, "page:p%lu#space@space:s%lu", i, i % RB_SPACES);
        else
            tuple(r, "page:p%lu#parent@page:p%lu", i, (i - RB_TOP_PAGES) / 4);
        if (i % 20 == 7)
            tuple(r, "page:p%lu#blocked@group:g%lu#member", i, bench_rng_next(&r->rng) % RB_GROUPS);
        if (i % 20 == 13)
            tuple(r, "page:p%lu#blocked@user:u%lu", i, bench_rng_next(&r->rng) % RB_USERS);
        if (i % 10 == 3)
            tuple(r, "page:p%lu#editor@user:u%lu", i, bench_rng_next(&r->rng) % RB_USERS);
    }
    return r->failed || flush(r) ? -1 : 0;
}

static const rb_corpus_t CORPORA[] = {
    {"drive", DRIVE_SCHEMA, "document", "document:d%llu", build_drive,
     "folder:f0#viewer@user:reader", "document:d0", /* d0's leaf folder is under f10 */
     "folder:f10#parent@folder:f0", "folder:f10#parent@folder:f9"},
    {"confluence", CONFLUENCE_SCHEMA, "page", "page:p%llu", build_confluence,
     "space:s0#member@user:reader", "page:p0", "page:p0#space@space:s0", "page:p0#space@space:s1"},
};

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

/* K chunks naming the corpus's objects 0..K-1 (documents or pages). */
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
            snprintf(objs[i], sizeof objs[i], r->corpus->obj_fmt, (unsigned long long)(at + i));
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

static int allowed(cordon_t *db, const char *user, const char *obj);

/* The searches of one subject: p50 ms; mean hits; recall@10 of the planner's answer against
 * the exact scan of what the subject reads; hits whose object the subject may not view (by
 * cordon_rebac_check, the forward walk, where searches take the reverse one): leaks. */
typedef struct rb_search {
    double p50_ms, hits, recall;
    uint64_t leaks;
} rb_search_t;

static void search_as(cordon_t *db, const char *fmt, const char *subject, uint64_t *rng,
                      rb_search_t *out)
{
    enum { N = 200, DIM = 16 };
    double lat[N], found = 0, want = 0;
    float q[DIM];
    char user[80], obj[64];
    cordon_subject s = {.subject_id = subject};
    snprintf(user, sizeof user, "user:%s", subject);
    memset(out, 0, sizeof *out);
    for (int i = 0; i < N; i++) {
        for (int d = 0; d < DIM; d++)
            q[d] = (float)bench_rng_unit(rng);
        cordon_query qu = {.vector = q, .k = 10}, qe = qu;
        cordon_result *res = NULL, *ex = NULL;
        qe.strategy = CORDON_STRATEGY_EXACT;
        uint64_t t0 = cdn_clock_ns();
        int ok = cordon_search(db, "files", &s, &qu, &res, NULL) == CORDON_OK;
        lat[i] = (double)(cdn_clock_ns() - t0) / 1e6;
        if (ok && cordon_search(db, "files", &s, &qe, &ex, NULL) == CORDON_OK) {
            out->hits += (double)res->n_hits / N;
            want += (double)ex->n_hits;
            for (size_t h = 0; h < res->n_hits; h++) {
                for (size_t e = 0; e < ex->n_hits; e++)
                    if (!strcmp(res->hits[h].id, ex->hits[e].id)) {
                        found++;
                        break;
                    }
                snprintf(obj, sizeof obj, fmt, strtoull(res->hits[h].id + 1, NULL, 10));
                out->leaks += !allowed(db, user, obj);
            }
        }
        cordon_result_free(res);
        cordon_result_free(ex);
    }
    qsort(lat, N, sizeof *lat, bench_cmp_double);
    out->p50_ms = lat[N / 2];
    out->recall = want > 0 ? found / want : 1;
}

static int allowed(cordon_t *db, const char *user, const char *obj)
{
    int a = 0;
    cordon_rebac_check(db, user, "view", obj, &a, NULL, NULL);
    return a;
}

typedef struct rb_opts {
    uint64_t want, checks, seed, chunks;
    int json, spicedb;
    const rb_corpus_t *corpus;
} rb_opts_t;

/* What the run measured: latencies sorted, in us for checks and ms for the rest. */
typedef struct rb_result {
    double *lat, share[RB_REPEAT], unshare[RB_REPEAT], lookup[RB_REPEAT], move[RB_REPEAT];
    double load_s, rss;
    rb_search_t big, small; /* --chunks: the shared reader, and a user who reads a few */
    size_t yes, found;
} rb_result_t;

static int parse_opts(int argc, char **argv, rb_opts_t *o)
{
    *o = (rb_opts_t){.want = 1000000, .checks = 10000, .seed = 42, .corpus = &CORPORA[0]};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        int bad = 0;
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            usage(stdout);
            return 1;
        } else if (!strcmp(a, "--tuples") && v && ++i)
            bad = bench_parse_u64("rebac", a, v, 20000, 100000000, &o->want);
        else if (!strcmp(a, "--checks") && v && ++i)
            bad = bench_parse_u64("rebac", a, v, 1, 10000000, &o->checks);
        else if (!strcmp(a, "--chunks") && v && ++i)
            bad = bench_parse_u64("rebac", a, v, 0, 10000000, &o->chunks);
        else if (!strcmp(a, "--seed") && v && ++i)
            bad = bench_parse_u64("rebac", a, v, 0, UINT64_MAX, &o->seed);
        else if (!strcmp(a, "--format") && v && (!strcmp(v, "json") || !strcmp(v, "table")) && ++i)
            o->json = !strcmp(v, "json");
        else if (!strcmp(a, "--corpus") && v && (!strcmp(v, "drive") || !strcmp(v, "confluence")) &&
                 ++i)
            o->corpus = &CORPORA[!strcmp(v, "confluence")];
        else if (!strcmp(a, "--spicedb"))
            o->spicedb = 1;
        else {
            fprintf(stderr, "cordon bench rebac: unknown option %s\n", a);
            usage(stderr);
            return 2;
        }
        if (bad)
            return 2;
    }
    return 0;
}

/* Random (user, object, view) checks, each timed alone. */
static void run_checks(rb_run_t *r, uint64_t checks, rb_result_t *res)
{
    char u[32], d[48];
    size_t ndocs = 0;
    cordon_rebac_lookup_resources(r->db, "user:u0", r->corpus->type, "view", count_one, &ndocs,
                                  NULL, NULL); /* warms the allocator, as a server would be */
    for (uint64_t i = 0; res->lat && i < checks; i++) {
        snprintf(u, sizeof u, "user:u%llu",
                 (unsigned long long)(bench_rng_next(&r->rng) % RB_USERS));
        snprintf(d, sizeof d, r->corpus->obj_fmt,
                 (unsigned long long)(bench_rng_next(&r->rng) % r->docs));
        uint64_t c0 = cdn_clock_ns();
        int a = allowed(r->db, u, d);
        res->lat[i] = (double)(cdn_clock_ns() - c0) / 1e3;
        res->yes += (size_t)a;
        rb_peer_check(r->peer, u, "view", d, a);
    }
    if (res->lat)
        qsort(res->lat, checks, sizeof *res->lat, bench_cmp_double);
}

/* A write of one tuple (or its delete) as a write_tuples op, timed in ms. */
static double timed_tuple(cordon_t *db, const char *tuple, int del, int *bad)
{
    char op[256];
    snprintf(op, sizeof op, "{\"op\":\"write_tuples\",\"%s\":[\"%s\"]}", del ? "deletes" : "writes",
             tuple);
    return timed_op(db, op, bad);
}

/* Share with a fresh user what reads the probe object, look up what it reads, move the probe
 * away and back, unshare: each verified by the next check. */
static void run_writes(rb_run_t *r, rb_result_t *res, int *bad)
{
    const rb_corpus_t *c = r->corpus;
    char move[512], back[512];
    snprintf(move, sizeof move,
             "{\"op\":\"write_tuples\",\"deletes\":[\"%s\"],\"writes\":[\"%s\"]}", c->move_del,
             c->move_add);
    snprintf(back, sizeof back,
             "{\"op\":\"write_tuples\",\"deletes\":[\"%s\"],\"writes\":[\"%s\"]}", c->move_add,
             c->move_del);
    rb_peer_lookup(r->peer, "user:reader", c->type, "view");
    for (int k = 0; k < RB_REPEAT; k++) {
        res->share[k] = timed_tuple(r->db, c->share, 0, bad);
        int a = allowed(r->db, "user:reader", c->probe);
        *bad |= !a;
        rb_peer_op(r->peer, "share", c->share, 0, "user:reader", "view", c->probe, a);
        res->found = 0;
        uint64_t l0 = cdn_clock_ns();
        cordon_rebac_lookup_resources(r->db, "user:reader", c->type, "view", count_one, &res->found,
                                      NULL, NULL);
        res->lookup[k] = (double)(cdn_clock_ns() - l0) / 1e6;
        if (k == 0 && r->peer)
            cordon_rebac_lookup_resources(r->db, "user:reader", c->type, "view", rb_peer_found,
                                          r->peer, NULL, NULL);
        res->move[k] = timed_op(r->db, move, bad);
        *bad |= allowed(r->db, "user:reader", c->probe);
        timed_op(r->db, back, bad);
        res->unshare[k] = timed_tuple(r->db, c->share, 1, bad);
        a = allowed(r->db, "user:reader", c->probe);
        *bad |= a;
        rb_peer_op(r->peer, "unshare", c->share, 1, "user:reader", "view", c->probe, a);
    }
    qsort(res->share, RB_REPEAT, sizeof(double), bench_cmp_double);
    qsort(res->unshare, RB_REPEAT, sizeof(double), bench_cmp_double);
    qsort(res->lookup, RB_REPEAT, sizeof(double), bench_cmp_double);
    qsort(res->move, RB_REPEAT, sizeof(double), bench_cmp_double);
}

/* Searches of chunks naming the objects: the probe's reader, and u1. */
static void run_searches(rb_run_t *r, uint64_t chunks, rb_result_t *res, int *bad)
{
    *bad |= load_chunks(r, chunks < r->docs ? chunks : r->docs);
    *bad |= cordon_model_apply_batch(r->db,
                                     "[{\"op\":\"put_subject\",\"id\":\"reader\"},{\"op\":\"put_"
                                     "subject\",\"id\":\"u1\"}]",
                                     NULL, NULL) != 0;
    for (int k = 0; k < 2 && !*bad; k++) {
        char g[160];
        snprintf(g, sizeof g,
                 "{\"op\":\"grant\",\"to\":\"%s\",\"permission\":{\"resource\":"
                 "\"collection:files\",\"action\":\"*\"}}",
                 k ? "u1" : "reader");
        *bad |= cordon_model_apply(r->db, g, NULL, NULL) != 0;
    }
    timed_tuple(r->db, r->corpus->share, 0, bad);
    search_as(r->db, r->corpus->obj_fmt, "reader", &r->rng, &res->big);
    search_as(r->db, r->corpus->obj_fmt, "u1", &r->rng, &res->small);
    *bad |= res->big.leaks || res->small.leaks;
}

/* One row of --format json; agree < 0 leaves it out. */
static void json_row(const char *engine, const char *op, uint64_t tuples, double p50_us,
                     double p95_us, double agree, const char *extra)
{
    printf(",\n {\"engine\":\"%s\",\"op\":\"%s\",\"tuples\":%llu,\"p50_us\":%.2f,"
           "\"p95_us\":%.2f",
           engine, op, (unsigned long long)tuples, p50_us, p95_us);
    if (agree >= 0)
        printf(",\"agree\":%.4f", agree);
    printf("%s}", extra ? extra : "");
}

static void print_json(const rb_run_t *r, const rb_opts_t *o, const rb_result_t *res)
{
    const rb_peer_t *p = r->peer && r->peer->ran ? r->peer : NULL;
    uint64_t n = r->tuples, ck = o->checks;
    char x[160];
    snprintf(x, sizeof x, ",\"p99_us\":%.2f,\"allowed_share\":%.4f,\"corpus\":\"%s\"",
             pct(res->lat, ck, .99), (double)res->yes / (double)ck, o->corpus->name);
    printf("[{\"engine\":\"cordon\",\"op\":\"load\",\"tuples\":%llu,\"seconds\":%.1f,"
           "\"rss_mb\":%.0f,\"corpus\":\"%s\"}",
           (unsigned long long)n, res->load_s, res->rss, o->corpus->name);
    json_row("cordon", "check", n, pct(res->lat, ck, .5), pct(res->lat, ck, .95),
             p ? p->agree[RB_OP_CHECK] : -1, x);
    snprintf(x, sizeof x, ",\"found\":%zu,\"max_us\":%.0f", res->found,
             res->lookup[RB_REPEAT - 1] * 1e3);
    json_row("cordon", "lookup_resources", n, res->lookup[RB_REPEAT / 2] * 1e3,
             pct((double *)res->lookup, RB_REPEAT, .95) * 1e3, p ? p->agree[RB_OP_LOOKUP] : -1, x);
    json_row("cordon", "share", n, res->share[RB_REPEAT / 2] * 1e3,
             pct((double *)res->share, RB_REPEAT, .95) * 1e3, p ? p->agree[RB_OP_SHARE] : -1, NULL);
    json_row("cordon", "unshare", n, res->unshare[RB_REPEAT / 2] * 1e3,
             pct((double *)res->unshare, RB_REPEAT, .95) * 1e3, p ? p->agree[RB_OP_UNSHARE] : -1,
             NULL);
    json_row("cordon", "move", n, res->move[RB_REPEAT / 2] * 1e3,
             pct((double *)res->move, RB_REPEAT, .95) * 1e3, -1, NULL);
    if (o->chunks) {
        const rb_search_t *sr[2] = {&res->big, &res->small};
        for (int k = 0; k < 2; k++) {
            snprintf(x, sizeof x, ",\"chunks\":%llu,\"hits\":%.1f,\"recall\":%.4f,\"leaks\":%llu",
                     (unsigned long long)o->chunks, sr[k]->hits, sr[k]->recall,
                     (unsigned long long)sr[k]->leaks);
            json_row("cordon", k ? "search_few" : "search_reader", n, sr[k]->p50_ms * 1e3,
                     sr[k]->p50_ms * 1e3, -1, x);
        }
    }
    if (p) {
        static const char *const ops[RB_OP_N] = {"check", "lookup_resources", "share", "unshare"};
        for (int k = 0; k < RB_OP_N; k++) {
            x[0] = 0;
            if (k == RB_OP_LOOKUP)
                snprintf(x, sizeof x, ",\"found\":%zu", p->found_peer);
            json_row("spicedb", ops[k], n, p->p50_us[k], p->p95_us[k], p->agree[k], x);
        }
        printf(",\n {\"engine\":\"spicedb\",\"op\":\"load\",\"tuples\":%llu,\"seconds\":%.1f}",
               (unsigned long long)n, p->load_s);
    }
    printf("]\n");
}

static void print_table(const rb_run_t *r, const rb_opts_t *o, const rb_result_t *res)
{
    const rb_peer_t *p = r->peer && r->peer->ran ? r->peer : NULL;
    uint64_t ck = o->checks;
    printf("%s corpus: tuples %llu written in %.1f s (%.0f tuples/s), process RSS %.0f MB\n",
           o->corpus->name, (unsigned long long)r->tuples, res->load_s,
           (double)r->tuples / res->load_s, res->rss);
    printf("%-8s %-18s %12s %12s %7s\n", "engine", "op", "p50", "p95", "agree");
    double c50[RB_OP_N] = {pct(res->lat, ck, .5), res->lookup[RB_REPEAT / 2] * 1e3,
                           res->share[RB_REPEAT / 2] * 1e3, res->unshare[RB_REPEAT / 2] * 1e3};
    double c95[RB_OP_N] = {pct(res->lat, ck, .95), pct((double *)res->lookup, RB_REPEAT, .95) * 1e3,
                           pct((double *)res->share, RB_REPEAT, .95) * 1e3,
                           pct((double *)res->unshare, RB_REPEAT, .95) * 1e3};
    static const char *const ops[RB_OP_N] = {"check", "lookup_resources", "share", "unshare"};
    for (int k = 0; k < RB_OP_N; k++) {
        printf("%-8s %-18s %10.1fus %10.1fus", "cordon", ops[k], c50[k], c95[k]);
        if (p)
            printf(" %7.4f", p->agree[k]);
        if (k == RB_OP_CHECK)
            printf("  (%llu checks, %.1f%% allowed, p99 %.1fus)", (unsigned long long)ck,
                   100.0 * (double)res->yes / (double)ck, pct(res->lat, ck, .99));
        if (k == RB_OP_LOOKUP)
            printf("  (%zu %ss)", res->found, o->corpus->type);
        printf("\n");
        if (p)
            printf("%-8s %-18s %10.1fus %10.1fus %7.4f  (%.2fx cordon's p50)\n", "spicedb", ops[k],
                   p->p50_us[k], p->p95_us[k], p->agree[k], c50[k] > 0 ? p->p50_us[k] / c50[k] : 0);
    }
    printf("%-8s %-18s %10.1fus %10.1fus\n", "cordon", "move", res->move[RB_REPEAT / 2] * 1e3,
           res->move[RB_REPEAT - 1] * 1e3);
    if (p)
        printf("spicedb load: %.1f s (%.0f tuples/s)\n", p->load_s, (double)r->tuples / p->load_s);
    if (o->chunks) {
        printf("%-8s %-18s %10.2fms  (%.1f hits, recall@10 %.4f, %llu leaks; searches of %llu "
               "chunks naming the objects, as the shared reader)\n",
               "cordon", "search_reader", res->big.p50_ms, res->big.hits, res->big.recall,
               (unsigned long long)res->big.leaks, (unsigned long long)o->chunks);
        printf("%-8s %-18s %10.2fms  (%.1f hits, recall@10 %.4f, %llu leaks; as a user who reads "
               "a few)\n",
               "cordon", "search_few", res->small.p50_ms, res->small.hits, res->small.recall,
               (unsigned long long)res->small.leaks);
    }
}

int bench_rebac_main(int argc, char **argv)
{
    rb_opts_t o;
    int rc = parse_opts(argc, argv, &o), bad = 0;
    if (rc)
        return rc == 1 ? 0 : rc;
    char dir[] = "/tmp/cordon-bench-rebac-XXXXXX";
    rb_run_t r = {.rng = o.seed, .corpus = o.corpus};
    rb_peer_t peer;
    rb_result_t res = {0};
    cordon_error err;
    if (o.spicedb && rb_peer_open(&peer) == 0)
        r.peer = &peer;
    else if (o.spicedb)
        fprintf(stderr, "note: no SpiceDB peer; reporting cordon's rows only\n");
    if (!mkdtemp(dir) || cordon_open(dir, NULL, &r.db, &err)) {
        fprintf(stderr, "cordon bench rebac: cannot open a data directory in /tmp\n");
        rb_peer_close(r.peer);
        return 1;
    }
    uint64_t t0 = cdn_clock_ns();
    if (cordon_model_apply(r.db, o.corpus->schema, NULL, &err) || o.corpus->build(&r, o.want)) {
        cordon_close(r.db);
        bench_rmtree(dir);
        rb_peer_close(r.peer);
        return 1;
    }
    res.load_s = (double)(cdn_clock_ns() - t0) / 1e9;
    res.lat = malloc(o.checks * sizeof *res.lat);
    run_checks(&r, o.checks, &res);
    run_writes(&r, &res, &bad);
    if (o.chunks && !bad)
        run_searches(&r, o.chunks, &res, &bad);
    res.rss = bench_rss_mb();
    free(r.buf);
    cordon_close(r.db);
    bench_rmtree(dir);
    if (r.peer && rb_peer_run(r.peer, o.corpus->schema, 3))
        fprintf(stderr, "note: reporting cordon's rows only\n");
    if (o.json)
        print_json(&r, &o, &res);
    else
        print_table(&r, &o, &res);
    free(res.lat);
    rb_peer_close(r.peer);
    if (bad)
        fprintf(stderr, "cordon bench rebac: a check after a write gave the wrong answer\n");
    return bad ? 1 : 0;
}
