/* bench_authz.c: builds a small and a large catalog through authz_apply (and the same catalogs
 * as Casbin policy rows), times each check cold and warm, runs the Casbin peer in node, reports
 * ratios. Relies on authz/ (cold rows need its cache bypass, which cordon.h does not offer),
 * jansson, base/clock.h, and node + npm for the peer (optional). */
#include "bench_authz.h"

#include <stdarg.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "authz/authz.h"
#include "base/clock.h"
#include "base/mem.h"

#define NCHECKS 6
static const char *const check_names[NCHECKS] = {"allow",
                                                 "allow_condition_met",
                                                 "condition_not_met",
                                                 "deny_unknown_resource",
                                                 "deny_ungranted_action",
                                                 "view"};
static const authz_reason_t check_expect[NCHECKS - 1] = {
    AUTHZ_PERMISSION_GRANTED_NO_CONDITION, AUTHZ_PERMISSION_GRANTED_CONDITION_MET,
    AUTHZ_PERMISSION_FOUND_CONDITION_NOT_MET, AUTHZ_NO_MATCHING_PERMISSION_FOUND,
    AUTHZ_NO_MATCHING_PERMISSION_FOUND};
static const char *const verbs[5] = {"read", "write", "search", "admin", "approve"};
#define COND_JSON "{\"NumericLessThan\":{\"context.amount\":1000}}"
#define COND_CASBIN "amount<1000"

typedef struct check {
    char subject[32], resource[64], action[16];
    int amount;
} check_t;

typedef struct catalog {
    const char *name;
    authz_model_t *m;
    json_t *policies, *groupings; /* Casbin rows: p = sub, dom, obj, act, cond; g = a, b, dom */
    check_t checks[NCHECKS];
    long ops, perms, conditional;
    double build_ms;
} catalog_t;

typedef struct row {
    const char *catalog, *check, *mode;
    double p50, p95, rate;
    double peer_p50, peer_p95, peer_rate; /* < 0: no peer figure */
} row_t;

typedef struct opts {
    double timer_ns; /* cost of one timed empty sample, included in every figure */
    long iters;
    int json, casbin, small, large;
    double casbin_budget_s;
} opts_t;

static int op(catalog_t *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int op(catalog_t *c, const char *fmt, ...)
{
    char buf[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof(buf), fmt, ap);
    va_end(ap);
    cdn_err_t e = {0};
    if (authz_apply(c->m, buf, &e)) {
        fprintf(stderr, "cordon bench authz: building the %s catalog: %s\n  op: %s\n", c->name,
                e.msg, buf);
        return 1;
    }
    c->ops++;
    return 0;
}

static void g_row(catalog_t *c, const char *a, const char *b)
{
    json_array_append_new(c->groupings, json_pack("[s, s, s]", a, b, "d"));
}

static int subject(catalog_t *c, const char *id)
{
    return op(c, "{\"op\":\"put_subject\",\"id\":\"%s\",\"attributes\":{\"n\":1}}", id);
}

static int group(catalog_t *c, const char *id)
{
    return op(c, "{\"op\":\"put_group\",\"id\":\"%s\"}", id);
}

static int member(catalog_t *c, const char *grp, const char *mem, int is_group)
{
    char a[64], b[64];
    snprintf(a, sizeof(a), "%s:%s", is_group ? "group" : "user", mem);
    snprintf(b, sizeof(b), "group:%s", grp);
    g_row(c, a, b);
    return op(c,
              "{\"op\":\"add_member\",\"group\":\"%s\",\"member\":\"%s\",\"member_kind\":"
              "\"%s\"}",
              grp, mem, is_group ? "group" : "subject");
}

static int grant_role(catalog_t *c, const char *to, int is_group, const char *role)
{
    char a[64], b[64];
    snprintf(a, sizeof(a), "%s:%s", is_group ? "group" : "user", to);
    snprintf(b, sizeof(b), "role:%s", role);
    g_row(c, a, b);
    return op(c, "{\"op\":\"grant\",\"to\":\"%s\",\"to_kind\":\"%s\",\"role\":\"%s\"}", to,
              is_group ? "group" : "subject", role);
}

/* A role with n permissions: resource "doc:<role>-p<k>" (every 8th a prefix "coll:<role>-*"),
 * action verbs[k % 5], and the fifth verb (approve) conditional: a fifth of all permissions. */
static int role(catalog_t *c, const char *id, int n)
{
    char buf[8192], res[64], pol[64];
    int w = snprintf(buf, sizeof(buf), "{\"op\":\"put_role\",\"id\":\"%s\",\"permissions\":[", id);
    snprintf(pol, sizeof(pol), "role:%s", id);
    for (int k = 0; k < n; k++) {
        bool cond = k % 5 == 4, prefix = k % 8 == 7;
        if (prefix)
            snprintf(res, sizeof(res), "coll:%s-*", id);
        else
            snprintf(res, sizeof(res), "doc:%s-p%d", id, k);
        w += snprintf(buf + w, sizeof(buf) - (size_t)w,
                      "%s{\"resource\":\"%s\",\"action\":\"%s\"%s}", k ? "," : "", res,
                      verbs[k % 5], cond ? ",\"condition\":" COND_JSON : "");
        json_array_append_new(c->policies, json_pack("[s, s, s, s, s]", pol, "d", res, verbs[k % 5],
                                                     cond ? COND_CASBIN : ""));
        c->perms++;
        c->conditional += cond;
    }
    snprintf(buf + w, sizeof(buf) - (size_t)w, "]}");
    return op(c, "%s", buf);
}

static void set_checks(catalog_t *c, const char *user, const char *role_id)
{
    for (int i = 0; i < NCHECKS; i++) {
        check_t *k = &c->checks[i];
        snprintf(k->subject, sizeof(k->subject), "%s", user);
        k->amount = i == 2 ? 5000 : 10;
        int perm = i == 1 || i == 2 ? 4 : 0; /* p4 is the conditional approve */
        snprintf(k->resource, sizeof(k->resource), "doc:%s-p%d", role_id, perm);
        snprintf(k->action, sizeof(k->action), "%s", verbs[perm]);
    }
    snprintf(c->checks[3].resource, sizeof(c->checks[3].resource), "doc:no-such-thing");
    snprintf(c->checks[4].action, sizeof(c->checks[4].action), "delete");
}

/* 68 permissions (4 roles x 17), 2 users, the shape of published small IAM benchmarks. */
static int build_small(catalog_t *c)
{
    int rc = subject(c, "alice") || subject(c, "bob") || group(c, "staff") || group(c, "admins") ||
             member(c, "staff", "alice", 0) || member(c, "staff", "bob", 0) ||
             member(c, "admins", "alice", 0);
    for (int r = 0; r < 4 && !rc; r++) {
        char id[16];
        snprintf(id, sizeof(id), "r%d", r);
        rc = role(c, id, 17);
    }
    rc = rc || grant_role(c, "staff", 1, "r0") || grant_role(c, "admins", 1, "r1") ||
         grant_role(c, "alice", 0, "r2") || grant_role(c, "bob", 0, "r3");
    set_checks(c, "alice", "r1");
    return rc;
}

/* 10,000 users, 1,000 groups nested three deep (10 divisions > 90 departments > 900 teams),
 * 500 roles x 10 permissions, one role per group and per user; u0 sits in 10 teams of 10
 * divisions, so 30 groups. */
static int build_large(catalog_t *c)
{
    char a[32], b[32], r[16];
    int rc = 0;
    for (int g = 0; g < 1000 && !rc; g++) {
        snprintf(a, sizeof(a), g < 10 ? "div%d" : g < 100 ? "dept%d" : "team%d", g);
        rc = group(c, a);
        if (!rc && g >= 10) {
            int parent = g < 100 ? (g - 10) / 9 : 10 + (g - 100) / 10;
            snprintf(b, sizeof(b), parent < 10 ? "div%d" : "dept%d", parent);
            rc = member(c, b, a, 1);
        }
    }
    for (int i = 0; i < 500 && !rc; i++) {
        snprintf(r, sizeof(r), "r%d", i);
        rc = role(c, r, 10);
    }
    for (int g = 0; g < 1000 && !rc; g++) {
        snprintf(a, sizeof(a), g < 10 ? "div%d" : g < 100 ? "dept%d" : "team%d", g);
        snprintf(r, sizeof(r), "r%d", g % 500);
        rc = grant_role(c, a, 1, r);
    }
    for (int u = 0; u < 10000 && !rc; u++) {
        snprintf(a, sizeof(a), "u%d", u);
        snprintf(r, sizeof(r), "r%d", (u * 7) % 500);
        rc = subject(c, a) || grant_role(c, a, 0, r);
        for (int t = 0; t < (u ? 2 : 10) && !rc; t++) {
            int team = u ? 100 + (u * (t ? 7 : 1) + t * 3) % 900 : 100 + t * 90 + 5;
            snprintf(b, sizeof(b), "team%d", team);
            rc = member(c, b, a, 0);
        }
    }
    set_checks(c, "u0", "r105"); /* team105 holds role r105 */
    return rc;
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* Times one check in one mode; verifies the answer first. */
static int time_cordon(catalog_t *c, int ci, int warm, long iters, uint64_t *t, row_t *row)
{
    const check_t *k = &c->checks[ci];
    json_t *ctx = json_pack("{s:i}", "amount", k->amount);
    authz_request_t req = {.subject = k->subject,
                           .resource = k->resource,
                           .action = k->action,
                           .context = ctx,
                           .cache = warm ? AUTHZ_CACHE_USE : AUTHZ_CACHE_REFRESH};
    authz_decision_t d;
    authz_view_t *v = NULL;
    int bad = 0;
    if (ci == 5) {
        bad = authz_view(c->m, k->subject, &v, NULL) || v->n < 2;
        authz_view_release(v);
    } else {
        bad = authz_is_authorized(c->m, &req, &d, NULL) || d.reason != check_expect[ci];
    }
    if (bad) {
        fprintf(stderr, "cordon bench authz: %s/%s gave %s, expected %s\n", c->name,
                check_names[ci], ci == 5 ? "no view" : authz_reason_name(d.reason),
                ci == 5 ? "a view" : authz_reason_name(check_expect[ci]));
        json_decref(ctx);
        return 1;
    }
    uint64_t start = cdn_clock_ns();
    for (long i = 0; i < iters; i++) {
        uint64_t t0 = cdn_clock_ns();
        if (ci < 5)
            authz_is_authorized(c->m, &req, &d, NULL);
        else if (warm)
            authz_view(c->m, k->subject, &v, NULL);
        else /* a scope no grant uses: same principals, compiled afresh (scoped views skip
              * the cache) */
            authz_view_scoped(c->m, k->subject, "bench", "none", &v, NULL);
        t[i] = cdn_clock_ns() - t0;
        if (ci == 5)
            authz_view_release(v);
    }
    double total_s = (double)(cdn_clock_ns() - start) / 1e9;
    json_decref(ctx);
    qsort(t, (size_t)iters, sizeof(uint64_t), cmp_u64);
    row->p50 = (double)t[iters / 2] / 1000.0;
    row->p95 = (double)t[(size_t)((double)iters * 0.95)] / 1000.0;
    row->rate = (double)iters / total_s;
    return 0;
}

/* ---- the Casbin peer ---- */

static int file_exists(const char *p)
{
    struct stat sb;
    return stat(p, &sb) == 0;
}

/* Installs casbin into dir (build/casbin-peer) unless it is there already. */
static int casbin_install(const char *dir, const char *src)
{
    char path[512], cmd[1400];
    snprintf(path, sizeof(path), "%s/node_modules/casbin/package.json", dir);
    if (file_exists(path))
        return 0;
    snprintf(cmd, sizeof(cmd),
             "mkdir -p '%s' && cp '%s/package.json' '%s/package.json' && "
             "npm install --prefix '%s' --no-audit --no-fund --loglevel=error >'%s/npm.log' 2>&1",
             dir, src, dir, dir, dir);
    if (system(cmd) != 0 || !file_exists(path)) {
        fprintf(stderr,
                "note: could not install the Casbin peer (npm install --prefix %s failed, see "
                "%s/npm.log); reporting cordon's rows only\n",
                dir, dir);
        return 1;
    }
    return 0;
}

static json_t *casbin_spec(catalog_t **cats, int ncats, long iters, double budget)
{
    json_t *arr = json_array();
    for (int i = 0; i < ncats; i++) {
        json_t *checks = json_array();
        for (int k = 0; k < NCHECKS; k++) {
            const check_t *ck = &cats[i]->checks[k];
            char sub[48], ctx[32];
            snprintf(sub, sizeof(sub), "user:%s", ck->subject);
            snprintf(ctx, sizeof(ctx), "amount=%d", ck->amount);
            json_array_append_new(checks, json_pack("{s:s, s:s, s:s, s:s, s:s, s:s}", "check",
                                                    check_names[k], "sub", sub, "dom", "d", "obj",
                                                    ck->resource, "act", ck->action, "ctx", ctx));
        }
        json_array_append_new(arr, json_pack("{s:s, s:O, s:O, s:o}", "name", cats[i]->name,
                                             "policies", cats[i]->policies, "groupings",
                                             cats[i]->groupings, "checks", checks));
    }
    return json_pack("{s:o, s:I, s:f}", "catalogs", arr, "iters", (json_int_t)iters, "budget_s",
                     budget);
}

/* Runs node on the spec; fills peer figures into rows and checks that Casbin agrees. */
static int casbin_run(catalog_t **cats, int ncats, row_t *rows, int nrows, const opts_t *o)
{
    const char *src = getenv("CORDON_CASBIN_SRC") ? getenv("CORDON_CASBIN_SRC") : "bench/casbin";
    const char *dir =
        getenv("CORDON_CASBIN_DIR") ? getenv("CORDON_CASBIN_DIR") : "build/casbin-peer";
    char path[512], cmd[1400], line[4096];
    snprintf(path, sizeof(path), "%s/bench.js", src);
    if (!file_exists(path)) {
        fprintf(stderr,
                "note: %s not found (run from the repository root or set "
                "CORDON_CASBIN_SRC); reporting cordon's rows only\n",
                path);
        return 1;
    }
    if (casbin_install(dir, src))
        return 1;
    snprintf(path, sizeof(path), "%s/spec.json", dir);
    json_t *spec =
        casbin_spec(cats, ncats, o->iters < 20000 ? o->iters : 20000, o->casbin_budget_s);
    int bad = !spec || json_dump_file(spec, path, JSON_COMPACT);
    json_decref(spec);
    if (bad) {
        fprintf(stderr, "note: could not write %s: %s\n", path, strerror(errno));
        return 1;
    }
    snprintf(cmd, sizeof(cmd), "NODE_PATH='%s/node_modules' node '%s/bench.js' '%s'", dir, src,
             path);
    FILE *p = popen(cmd, "r");
    if (!p) {
        fprintf(stderr, "note: could not start node: %s\n", strerror(errno));
        return 1;
    }
    while (fgets(line, sizeof(line), p)) {
        json_t *j = json_loads(line, 0, NULL);
        const char *cat = json_string_value(json_object_get(j, "catalog"));
        const char *chk = json_string_value(json_object_get(j, "check"));
        const char *mode = json_string_value(json_object_get(j, "mode"));
        for (int i = 0; j && cat && chk && mode && i < nrows; i++) {
            row_t *r = &rows[i];
            if (strcmp(r->catalog, cat) || strcmp(r->check, chk) || strcmp(r->mode, mode))
                continue;
            r->peer_p50 = json_number_value(json_object_get(j, "p50_us"));
            r->peer_p95 = json_number_value(json_object_get(j, "p95_us"));
            r->peer_rate = json_number_value(json_object_get(j, "checks_per_s"));
            json_t *allowed = json_object_get(j, "allowed");
            int want = !strncmp(chk, "allow", 5);
            if (json_is_boolean(allowed) && json_is_true(allowed) != want)
                fprintf(stderr, "warning: Casbin answered %s for %s/%s\n",
                        json_is_true(allowed) ? "allow" : "deny", cat, chk);
        }
        json_decref(j);
    }
    int rc = pclose(p);
    if (rc)
        fprintf(stderr, "note: the Casbin peer exited with status %d\n", rc);
    return rc ? 1 : 0;
}

/* ---- driver ---- */

static int parse_opts(int argc, char **argv, opts_t *o)
{
    *o = (opts_t){.iters = 200000, .casbin = 1, .small = 1, .large = 1, .casbin_budget_s = 2.0};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--format") && v) {
            o->json = !strcmp(v, "json");
            i++;
        } else if (!strcmp(a, "--iters") && v) {
            o->iters = strtol(v, NULL, 10);
            i++;
        } else if (!strcmp(a, "--catalog") && v) {
            o->small = !strcmp(v, "small") || !strcmp(v, "all");
            o->large = !strcmp(v, "large") || !strcmp(v, "all");
            i++;
        } else if (!strcmp(a, "--casbin-budget") && v) {
            o->casbin_budget_s = strtod(v, NULL);
            i++;
        } else if (!strcmp(a, "--no-casbin")) {
            o->casbin = 0;
        } else {
            printf("usage: cordon bench authz [--catalog small|large|all] [--iters N]\n"
                   "                          [--format table|json] [--no-casbin]\n"
                   "                          [--casbin-budget SECONDS per check and mode]\n"
                   "Times is-authorized (cold = cache miss, warm = cache hit) and view\n"
                   "compilation on a small and a large catalog, and Casbin (node, npm package\n"
                   "casbin, installed into build/casbin-peer) on the same catalogs and checks.\n"
                   "--iters: timed calls per cordon row (default 200000); Casbin runs\n"
                   "min(iters, 20000) calls or --casbin-budget seconds (default 2), whichever\n"
                   "ends first.\n");
            return strcmp(a, "--help") && strcmp(a, "-h") ? 2 : 0;
        }
    }
    if (o->iters < 100 || o->iters > 10000000 || (!o->small && !o->large)) {
        fprintf(stderr, "cordon bench authz: --iters must be 100..10000000 and --catalog "
                        "small, large or all\n");
        return 2;
    }
    return -1;
}

static void print_rows(const row_t *rows, int n, const opts_t *o, catalog_t **cats, int ncats)
{
    if (o->json) {
        json_t *arr = json_array();
        for (int i = 0; i < n; i++) {
            const row_t *r = &rows[i];
            json_t *j = json_pack("{s:s, s:s, s:s, s:s, s:f, s:f, s:f}", "catalog", r->catalog,
                                  "check", r->check, "mode", r->mode, "engine", "cordon", "p50_us",
                                  r->p50, "p95_us", r->p95, "checks_per_s", r->rate);
            if (r->peer_rate > 0)
                json_object_set_new(j, "speedup_vs_casbin", json_real(r->rate / r->peer_rate));
            json_array_append_new(arr, j);
            if (r->peer_rate > 0)
                json_array_append_new(arr,
                                      json_pack("{s:s, s:s, s:s, s:s, s:f, s:f, s:f}", "catalog",
                                                r->catalog, "check", r->check, "mode", r->mode,
                                                "engine", "casbin", "p50_us", r->peer_p50, "p95_us",
                                                r->peer_p95, "checks_per_s", r->peer_rate));
        }
        json_t *doc =
            json_pack("{s:s, s:I, s:f, s:o}", "bench", "authz", "iterations", (json_int_t)o->iters,
                      "timer_overhead_ns", o->timer_ns, "rows", arr);
        char *s = json_dumps(doc, JSON_INDENT(1) | JSON_REAL_PRECISION(6));
        printf("%s\n", s ? s : "{}");
        free(s);
        json_decref(doc);
        return;
    }
    for (int i = 0; i < ncats; i++)
        printf("catalog %-5s: %ld ops, %ld permissions (%ld conditional), built in %.0f ms\n",
               cats[i]->name, cats[i]->ops, cats[i]->perms, cats[i]->conditional,
               cats[i]->build_ms);
    printf("timer overhead per sample: %.0f ns median (included in every cordon latency)\n",
           o->timer_ns);
    printf("\n%-7s %-22s %-5s %9s %9s %12s | %11s %11s %10s %8s\n", "catalog", "check", "mode",
           "p50_us", "p95_us", "checks/s", "casbin p50", "casbin p95", "casbin/s", "ratio");
    for (int i = 0; i < n; i++) {
        const row_t *r = &rows[i];
        printf("%-7s %-22s %-5s %9.3f %9.3f %12.0f", r->catalog, r->check, r->mode, r->p50, r->p95,
               r->rate);
        if (r->peer_rate > 0)
            printf(" | %11.1f %11.1f %10.0f %7.0fx\n", r->peer_p50, r->peer_p95, r->peer_rate,
                   r->rate / r->peer_rate);
        else
            printf(" | %11s %11s %10s %8s\n", "-", "-", "-", "-");
    }
}

int bench_authz_main(int argc, char **argv)
{
    opts_t o;
    int rc = parse_opts(argc, argv, &o);
    if (rc >= 0)
        return rc;
    catalog_t small = {.name = "small"}, large = {.name = "large"};
    catalog_t *cats[2];
    int ncats = 0;
    if (o.small)
        cats[ncats++] = &small;
    if (o.large)
        cats[ncats++] = &large;
    uint64_t pairs[1001];
    for (int i = 0; i < 1001; i++) { /* what one sample adds: the gap between two reads */
        uint64_t a = cdn_clock_ns();
        pairs[i] = cdn_clock_ns() - a;
    }
    qsort(pairs, 1001, sizeof(uint64_t), cmp_u64);
    o.timer_ns = (double)pairs[500];
    row_t rows[2 * NCHECKS * 2];
    int nrows = 0;
    uint64_t *t = cdn_malloc((size_t)o.iters * sizeof(uint64_t));
    rc = t ? 0 : 1;
    for (int i = 0; i < ncats && !rc; i++) {
        catalog_t *c = cats[i];
        c->policies = json_array();
        c->groupings = json_array();
        uint64_t t0 = cdn_clock_ns();
        rc = authz_model_new(&c->m, NULL) || (c == &small ? build_small(c) : build_large(c));
        c->build_ms = (double)(cdn_clock_ns() - t0) / 1e6;
        if (!o.json)
            fprintf(stderr, "built the %s catalog (%ld ops) in %.0f ms\n", c->name, c->ops,
                    c->build_ms);
        for (int k = 0; k < NCHECKS && !rc; k++)
            for (int warm = 0; warm < 2 && !rc; warm++) {
                row_t *r = &rows[nrows++];
                *r = (row_t){c->name, check_names[k], warm ? "warm" : "cold", 0, 0, 0, -1, -1, -1};
                rc = time_cordon(c, k, warm, o.iters, t, r);
            }
    }
    cdn_free(t);
    if (!rc && o.casbin)
        casbin_run(cats, ncats, rows, nrows, &o);
    if (!rc)
        print_rows(rows, nrows, &o, cats, ncats);
    for (int i = 0; i < ncats; i++) {
        authz_model_free(cats[i]->m);
        json_decref(cats[i]->policies);
        json_decref(cats[i]->groupings);
    }
    return rc ? 1 : 0;
}
