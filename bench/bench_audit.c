/* bench_audit.c: `cordon bench audit`: BM25 searches over a generated corpus (bench text's
 * --generated words) through the public API, as subjects reading 100%, 10% and 1% of it, with
 * the audit recording and not. One handle records (cordon_options.audit) and its collection's
 * recording is switched off and on between passes (cordon_audit_collection), so both sides run
 * on the same warm process; each query's latency is its best over the passes of a side. A
 * second handle with audit_sync measures the durable mode the same way. Prints p50/p99 per
 * side and share, the ratio on/off, and the log's bytes per record.
 * Relies on the public API and bench_text_data (btd_generate). */
#include "bench_audit.h"
#include "base/clock.h"
#include "base/mem.h"
#include "bench_text_data.h"
#include "bench_util.h"
#include "cordon.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define SHARES 3
static const char *const share_principal[SHARES] = {"all", "p10", "p1"};
static const double share_frac[SHARES] = {1.0, 0.1, 0.01};

typedef struct opts {
    size_t size, queries, changes, asof_questions;
    int passes, json;
} opts_t;

typedef struct row {
    const char *audit; /* "off", "on", "on-sync" */
    double readable, p50, p99, ratio, bytes_per_record;
} row_t;

static void usage(FILE *f)
{
    fputs("usage: cordon bench audit [--size N] [--queries Q] [--passes P] [--changes C]\n"
          "                         [--asof-questions A] [--format json]\n\n"
          "BM25 searches over N generated documents (default 100000; docs/benchmarks.md runs\n"
          "1000000) as subjects reading 100%, 10% and 1%, with the retrieval audit recording\n"
          "and not, in the same run: Q queries (default 300), P passes per side (default 3),\n"
          "each query's best. Rows: audit (off, on, on-sync), readable, p50_ms, p99_ms,\n"
          "bytes_per_record (the log's size per record), and the p50 ratio to off.\n"
          "Then --changes C (default 20000; docs/benchmarks.md runs 100000) random permission\n"
          "changes (memberships and ACLs, one revision each) and as-of checks at random past\n"
          "revisions (--asof-questions A of them, default 2000): a row with op asof_check,\n"
          "p50_us, p95_us, bytes_per_change.\n",
          f);
}

static double pct(const double *v, size_t n, double p)
{
    double *s = cdn_malloc(n * sizeof *s);
    memcpy(s, v, n * sizeof *s);
    qsort(s, n, sizeof *s, bench_cmp_double);
    size_t i = (size_t)(p * (double)(n - 1) + 0.5);
    double r = s[i];
    cdn_free(s);
    return r;
}

static void remove_tree(const char *dir)
{
    char sub[4200];
    snprintf(sub, sizeof sub, "%s/audit", dir);
    const char *dirs[2] = {sub, dir};
    for (int k = 0; k < 2; k++) {
        DIR *dh = opendir(dirs[k]);
        for (struct dirent *e; dh && (e = readdir(dh));)
            if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
                unlinkat(dirfd(dh), e->d_name, 0);
        if (dh)
            closedir(dh);
        rmdir(dirs[k]);
    }
}

/* One text collection "bench": title and text, each document readable by "all" and, with the
 * shares' probabilities, by "p10" and "p1". */
static int load(const btd_t *d, const char *dir)
{
    static const char *const fields[2] = {"title", "text"};
    cordon_collection_spec spec = {
        .name = "bench", .text_fields = fields, .n_text_fields = 2, .asserted_principals = 1};
    cordon_t *db;
    cordon_error err = {0};
    if (cordon_open(dir, NULL, &db, &err) || cordon_collection_create(db, &spec, &err)) {
        fprintf(stderr, "bench audit: %s: %s\n", dir, err.message);
        return -1;
    }
    enum { BATCH = 2000 };
    cordon_chunk *ch = cdn_calloc(BATCH, sizeof *ch);
    cordon_field *fv = cdn_calloc(BATCH * 2, sizeof *fv);
    char(*ids)[24] = cdn_calloc(BATCH, sizeof *ids);
    const char *(*allow)[SHARES] = cdn_calloc(BATCH, sizeof *allow);
    uint64_t s = 7;
    int rc = 0;
    for (size_t at = 0; at < d->ndocs && !rc; at += BATCH) {
        size_t n = d->ndocs - at < BATCH ? d->ndocs - at : BATCH;
        for (size_t j = 0; j < n; j++) {
            size_t na = 0;
            snprintf(ids[j], sizeof ids[j], "%zu", at + j);
            fv[2 * j] = (cordon_field){"title", d->title[at + j]};
            fv[2 * j + 1] = (cordon_field){"text", d->text[at + j]};
            double u = bench_rng_unit(&s);
            for (int l = 0; l < SHARES; l++)
                if (u < share_frac[l])
                    allow[j][na++] = share_principal[l];
            ch[j] = (cordon_chunk){.id = ids[j],
                                   .fields = fv + 2 * j,
                                   .n_fields = 2,
                                   .allowed = allow[j],
                                   .n_allowed = na};
        }
        if (cordon_put(db, "bench", ch, n, NULL, &err)) {
            fprintf(stderr, "bench audit: loading: %s\n", err.message);
            rc = -1;
        }
    }
    cdn_free(ch);
    cdn_free(fv);
    cdn_free(ids);
    cdn_free(allow);
    cordon_close(db);
    return rc;
}

/* One pass of every query as share l's subject; each query's best latency kept in best. */
static int pass(cordon_t *db, const btd_t *d, int l, double *best)
{
    cordon_subject subj = {.principals = &share_principal[l],
                           .n_principals = 1,
                           .caller = "bench",
                           .request_id = "bench-audit"};
    for (size_t q = 0; q < d->nq; q++) {
        cordon_query cq = {.text = d->q_text[q], .k = 10, .count_total = 1, .total_max = 10000};
        cordon_result *res;
        cordon_error err = {0};
        uint64_t t0 = cdn_clock_ns();
        if (cordon_search(db, "bench", &subj, &cq, &res, &err)) {
            fprintf(stderr, "bench audit: query %zu: %s\n", q, err.message);
            return -1;
        }
        double ms = (double)(cdn_clock_ns() - t0) / 1e6;
        cordon_result_free(res);
        if (ms < best[q])
            best[q] = ms;
    }
    return 0;
}

static int set_recording(cordon_t *db, int on)
{
    cordon_error err = {0};
    if (cordon_audit_collection(db, "bench", on, &err)) {
        fprintf(stderr, "bench audit: %s\n", err.message);
        return -1;
    }
    return 0;
}

/* Measures one handle opened with sync; rows for "off" (when with_off) and "on"/"on-sync". */
static int measure(const char *dir, const btd_t *d, const opts_t *o, int sync, int with_off,
                   row_t *rows, size_t *nrows)
{
    cordon_options co = {.audit = 1, .audit_sync = sync, .must_exist = 1};
    cordon_t *db;
    cordon_error err = {0};
    double *on = cdn_malloc(d->nq * sizeof *on), *off = cdn_malloc(d->nq * sizeof *off);
    int rc = 0;
    if (cordon_open(dir, &co, &db, &err)) {
        fprintf(stderr, "bench audit: %s\n", err.message);
        return -1;
    }
    for (int l = 0; l < SHARES && !rc; l++) {
        cordon_audit_info i0, i1;
        uint64_t bytes = 0, recs = 0;
        for (size_t q = 0; q < d->nq; q++)
            on[q] = off[q] = 1e30;
        rc = set_recording(db, 0) || pass(db, d, l, off); /* warm-up, not kept */
        for (size_t q = 0; q < d->nq; q++)
            off[q] = 1e30;
        for (int p = 0; p < o->passes && !rc; p++) {
            rc = set_recording(db, 0) || pass(db, d, l, off) || set_recording(db, 1) ||
                 cordon_audit_info_get(db, &i0, &err) || pass(db, d, l, on) ||
                 cordon_audit_info_get(db, &i1, &err);
            bytes += i1.bytes - i0.bytes;
            recs += i1.records - i0.records;
        }
        if (rc)
            break;
        double p50off = pct(off, d->nq, 0.5);
        if (with_off)
            rows[(*nrows)++] = (row_t){"off", share_frac[l], p50off, pct(off, d->nq, 0.99), 1, 0};
        double p50 = pct(on, d->nq, 0.5);
        rows[(*nrows)++] = (row_t){
            sync ? "on-sync" : "on", share_frac[l], p50,
            pct(on, d->nq, 0.99),    p50 / p50off,  recs ? (double)bytes / (double)recs : 0};
    }
    cordon_close(db);
    cdn_free(on);
    cdn_free(off);
    return rc ? -1 : 0;
}

/* ---- As of: questions about random past moments after many changes. ---- */

#define AS_USERS 200
#define AS_GROUPS 40
#define AS_CHUNKS 5000

typedef struct asof_row {
    double p50, p95, bytes_per_change;
    size_t changes;
} asof_row_t;

static int model_op(cordon_t *db, const char *json)
{
    cordon_error err = {0};
    if (cordon_model_apply(db, json, NULL, &err)) {
        fprintf(stderr, "bench audit: %s: %s\n", json, err.message);
        return -1;
    }
    return 0;
}

static uint64_t dir_bytes(const char *dir)
{
    char p[4200];
    struct stat st;
    snprintf(p, sizeof p, "%s/data.mdb", dir);
    return stat(p, &st) == 0 ? (uint64_t)st.st_blocks * 512u : 0;
}

/* A model of AS_USERS users in AS_GROUPS groups (one role lets every group read the
 * collection), AS_CHUNKS chunks each for a few groups; then o->changes random changes, half
 * memberships moved and half chunk ACLs replaced, each its own revision; then as-of checks of
 * random (user, chunk, past revision) triples. */
static int bench_asof(const opts_t *o, asof_row_t *row)
{
    const char *tmp = getenv("TMPDIR");
    char dir[4096], json[256];
    cordon_t *db;
    cordon_error err = {0};
    uint64_t s = 11;
    snprintf(dir, sizeof dir, "%s/cordon-bench-asof-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(dir) || cordon_open(dir, NULL, &db, &err))
        return -1;
    cordon_collection_spec spec = {.name = "hist"};
    int rc = cordon_collection_create(db, &spec, &err) ? -1 : 0;
    rc = rc ? rc
            : model_op(db, "{\"op\":\"put_role\",\"id\":\"reader\",\"permissions\":["
                           "{\"resource\":\"collection:hist\",\"action\":\"read\"}]}");
    for (int g = 0; g < AS_GROUPS && !rc; g++) {
        snprintf(json, sizeof json, "{\"op\":\"put_group\",\"id\":\"g%d\"}", g);
        rc = model_op(db, json);
        snprintf(json, sizeof json,
                 "{\"op\":\"grant\",\"to\":\"g%d\",\"to_kind\":\"group\",\"role\":\"reader\"}", g);
        rc = rc ? rc : model_op(db, json);
    }
    for (int u = 0; u < AS_USERS && !rc; u++) {
        snprintf(json, sizeof json, "{\"op\":\"put_subject\",\"id\":\"u%d\"}", u);
        rc = model_op(db, json);
        snprintf(json, sizeof json, "{\"op\":\"add_member\",\"group\":\"g%d\",\"member\":\"u%d\"}",
                 (int)(bench_rng_next(&s) % AS_GROUPS), u);
        rc = rc ? rc : model_op(db, json);
    }
    char names[AS_GROUPS][24];
    for (int g = 0; g < AS_GROUPS; g++)
        snprintf(names[g], sizeof names[g], "group:g%d", g);
    enum { BATCH = 1000 };
    cordon_chunk ch[BATCH];
    char ids[BATCH][24];
    const char *allow[BATCH][2];
    for (int at = 0; at < AS_CHUNKS && !rc; at += BATCH) {
        for (int j = 0; j < BATCH; j++) {
            snprintf(ids[j], sizeof ids[j], "c%d", at + j);
            allow[j][0] = names[bench_rng_next(&s) % AS_GROUPS];
            allow[j][1] = names[bench_rng_next(&s) % AS_GROUPS];
            ch[j] = (cordon_chunk){.id = ids[j], .allowed = allow[j], .n_allowed = 2};
        }
        rc = cordon_put(db, "hist", ch, BATCH, NULL, &err) ? -1 : 0;
    }
    uint64_t first = cordon_revision(db), bytes0 = dir_bytes(dir);
    for (size_t k = 0; k < o->changes && !rc; k++) {
        int u = (int)(bench_rng_next(&s) % AS_USERS), g = (int)(bench_rng_next(&s) % AS_GROUPS);
        if (k % 2) {
            snprintf(json, sizeof json, "{\"op\":\"%s\",\"group\":\"g%d\",\"member\":\"u%d\"}",
                     bench_rng_next(&s) % 2 ? "add_member" : "remove_member", g, u);
            cordon_error e2 = {0};
            (void)cordon_model_apply(db, json, NULL, &e2); /* removing a non-member is refused */
        } else {
            char id[24];
            const char *a[1] = {names[g]};
            snprintf(id, sizeof id, "c%d", (int)(bench_rng_next(&s) % AS_CHUNKS));
            cordon_acl_change c = {.id = id, .allowed = a, .n_allowed = 1};
            rc = cordon_set_acl(db, "hist", &c, 1, NULL, &err) ? -1 : 0;
        }
    }
    uint64_t last = cordon_revision(db);
    row->changes = (size_t)(last - first);
    row->bytes_per_change =
        row->changes ? (double)(dir_bytes(dir) - bytes0) / (double)row->changes : 0;
    size_t nq = o->asof_questions;
    double *us = cdn_malloc(nq * sizeof *us);
    for (size_t k = 0; us && k < nq && !rc; k++) {
        char user[24], id[24];
        snprintf(user, sizeof user, "u%d", (int)(bench_rng_next(&s) % AS_USERS));
        snprintf(id, sizeof id, "c%d", (int)(bench_rng_next(&s) % AS_CHUNKS));
        cordon_subject subj = {.subject_id = user};
        cordon_asof_request q = {.collection = "hist",
                                 .subject = &subj,
                                 .chunk_id = id,
                                 .revision = first + bench_rng_next(&s) % (last - first + 1)};
        cordon_asof_answer a;
        uint64_t t0 = cdn_clock_ns();
        if (cordon_asof_check(db, &q, &a, &err)) {
            fprintf(stderr, "bench audit: as-of: %s\n", err.message);
            rc = -1;
        }
        us[k] = (double)(cdn_clock_ns() - t0) / 1e3;
    }
    if (!rc) {
        row->p50 = pct(us, nq, 0.5);
        row->p95 = pct(us, nq, 0.95);
    }
    cdn_free(us);
    cordon_close(db);
    remove_tree(dir);
    return rc;
}

int bench_audit_main(int argc, char **argv)
{
    opts_t o = {100000, 300, 20000, 2000, 3, 0};
    for (int i = 1; i < argc; i++) {
        size_t v;
        if (!strcmp(argv[i], "--size") && i + 1 < argc) {
            if (bench_parse_size("audit", "--size", argv[++i], 1000, 100000000, &o.size))
                return 2;
        } else if (!strcmp(argv[i], "--queries") && i + 1 < argc) {
            if (bench_parse_size("audit", "--queries", argv[++i], 1, 100000, &o.queries))
                return 2;
        } else if (!strcmp(argv[i], "--changes") && i + 1 < argc) {
            if (bench_parse_size("audit", "--changes", argv[++i], 0, 10000000, &o.changes))
                return 2;
        } else if (!strcmp(argv[i], "--asof-questions") && i + 1 < argc) {
            if (bench_parse_size("audit", "--asof-questions", argv[++i], 1, 100000000,
                                 &o.asof_questions))
                return 2;
        } else if (!strcmp(argv[i], "--passes") && i + 1 < argc) {
            if (bench_parse_size("audit", "--passes", argv[++i], 1, 100, &v))
                return 2;
            o.passes = (int)v;
        } else if (!strcmp(argv[i], "--format") && i + 1 < argc) {
            o.json = !strcmp(argv[++i], "json");
        } else {
            usage(strcmp(argv[i], "--help") ? stderr : stdout);
            return strcmp(argv[i], "--help") ? 2 : 0;
        }
    }
    btd_t d;
    if (btd_generate(o.size, o.queries, 42, &d)) {
        fprintf(stderr, "bench audit: out of memory\n");
        return 1;
    }
    const char *tmp = getenv("TMPDIR");
    char dir[4096];
    snprintf(dir, sizeof dir, "%s/cordon-bench-audit-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    row_t rows[4 * SHARES];
    size_t n = 0;
    int rc = !mkdtemp(dir) || load(&d, dir) || measure(dir, &d, &o, 0, 1, rows, &n) ||
             measure(dir, &d, &o, 1, 0, rows, &n);
    remove_tree(dir);
    btd_free(&d);
    asof_row_t ar = {0};
    if (rc || (o.changes && bench_asof(&o, &ar)))
        return 1;
    if (o.json)
        printf("{\"size\": %zu, \"queries\": %zu, \"rows\": [", o.size, o.queries);
    else
        printf("%-8s %9s %9s %9s %9s %16s\n", "audit", "readable", "p50_ms", "p99_ms", "p50/off",
               "bytes_per_record");
    for (size_t i = 0; i < n; i++) {
        row_t *r = &rows[i];
        if (o.json)
            printf("%s{\"audit\": \"%s\", \"readable\": %g, \"p50_ms\": %.4f, \"p99_ms\": %.4f, "
                   "\"p50_ratio_to_off\": %.3f, \"bytes_per_record\": %.0f}",
                   i ? ", " : "", r->audit, r->readable, r->p50, r->p99, r->ratio,
                   r->bytes_per_record);
        else
            printf("%-8s %8.0f%% %9.4f %9.4f %9.3f %16.0f\n", r->audit, r->readable * 100, r->p50,
                   r->p99, r->ratio, r->bytes_per_record);
    }
    if (o.changes && o.json)
        printf(", {\"op\": \"asof_check\", \"changes\": %zu, \"p50_us\": %.1f, \"p95_us\": %.1f, "
               "\"bytes_per_change\": %.0f}",
               ar.changes, ar.p50, ar.p95, ar.bytes_per_change);
    else if (o.changes)
        printf("\nas-of check at a random past revision, after %zu changes (half memberships, half "
               "ACLs): p50 %.1f us, p95 %.1f us; the history and data grew %.0f bytes a change\n",
               ar.changes, ar.p50, ar.p95, ar.bytes_per_change);
    if (o.json)
        printf("]}\n");
    return 0;
}
