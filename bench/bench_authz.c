/* bench_authz.c: builds a small and a large catalog through authz_apply (and the same catalogs
 * as Casbin policy rows), times each check cold and warm, runs the Casbin and the Cedar peers in
 * node, reports ratios. Relies on authz/ (cold rows need its cache bypass, which cordon.h does
 * not offer), jansson, base/clock.h, bench_authz_cedar.c, and node + npm for the peers
 * (optional). */
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
#include "bench_authz_cedar.h"
#include "bench_catalog.h"
#include "bench_util.h"

#define NCHECKS (BENCH_CATALOG_CHECKS + 1) /* the decided checks, then a view */

static const char *check_name(int ci)
{
    return ci < BENCH_CATALOG_CHECKS ? bench_check_names[ci] : "view";
}

typedef struct catalog {
    bench_catalog_t b;
    authz_model_t *m;
    double build_ms;
} catalog_t;

typedef struct row {
    const char *catalog, *check, *mode;
    double p50, p95, rate;
    double peer_p50, peer_p95, peer_rate;    /* Casbin; < 0: no figure */
    double cedar_p50, cedar_p95, cedar_rate; /* Cedar (cold rows only); < 0: no figure */
} row_t;

typedef struct opts {
    double timer_ns; /* cost of one timed empty sample, included in every figure */
    long iters;
    int json, casbin, cedar, small, large;
    double casbin_budget_s, cedar_budget_s;
} opts_t;

typedef struct cedar_result { /* what the Cedar peer gave, for the report */
    int ran, agree, compared;
    bench_cedar_info_t info;
    long policies[2], entities[2];
} cedar_result_t;

/* The catalog's operations go straight into the in-process model. */
static int apply_op(void *arg, const char *op_json)
{
    catalog_t *c = arg;
    cdn_err_t e = {0};
    if (authz_apply(c->m, op_json, &e)) {
        fprintf(stderr, "cordon bench authz: building the %s catalog: %s\n  op: %.300s\n",
                c->b.name, e.msg, op_json);
        return 1;
    }
    return 0;
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* Times one check in one mode; verifies the answer first. */
static int time_cordon(catalog_t *c, int ci, int warm, long iters, uint64_t *t, row_t *row)
{
    const bench_check_t *k = &c->b.checks[ci < BENCH_CATALOG_CHECKS ? ci : 0];
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
        bad = authz_is_authorized(c->m, &req, &d, NULL) ||
              strcmp(authz_reason_name(d.reason), bench_check_reasons[ci]);
    }
    if (bad) {
        fprintf(stderr, "cordon bench authz: %s/%s gave %s, expected %s\n", c->b.name,
                check_name(ci), ci == 5 ? "no view" : authz_reason_name(d.reason),
                ci == 5 ? "a view" : bench_check_reasons[ci]);
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

static json_t *casbin_spec(catalog_t **cats, int ncats, long iters, double budget)
{
    json_t *arr = json_array();
    for (int i = 0; i < ncats; i++) {
        json_t *checks = json_array();
        for (int k = 0; k < NCHECKS; k++) {
            const bench_check_t *ck = &cats[i]->b.checks[k < BENCH_CATALOG_CHECKS ? k : 0];
            char sub[48], ctx[32];
            snprintf(sub, sizeof(sub), "user:%s", ck->subject);
            snprintf(ctx, sizeof(ctx), "amount=%d", ck->amount);
            json_array_append_new(checks, json_pack("{s:s, s:s, s:s, s:s, s:s, s:s}", "check",
                                                    check_name(k), "sub", sub, "dom", "d", "obj",
                                                    ck->resource, "act", ck->action, "ctx", ctx));
        }
        json_array_append_new(arr, json_pack("{s:s, s:O, s:O, s:o}", "name", cats[i]->b.name,
                                             "policies", cats[i]->b.policies, "groupings",
                                             cats[i]->b.groupings, "checks", checks));
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
    if (!bench_path_exists(path)) {
        fprintf(stderr,
                "note: %s not found (run from the repository root or set "
                "CORDON_CASBIN_SRC); reporting cordon's rows only\n",
                path);
        return 1;
    }
    char mods[512];
    if (bench_npm_peer("Casbin", src, dir, "casbin", mods, sizeof mods))
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
    snprintf(cmd, sizeof(cmd), "NODE_PATH='%s/node_modules' node '%s/bench.js' '%s'", mods, src,
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

/* ---- the Cedar peer ---- */

/* cordon's decision without its cache: what Cedar's must equal. */
static int cordon_allows(authz_model_t *m, const bench_cedar_req_t *q)
{
    json_t *ctx = json_pack("{s:i}", "amount", q->amount);
    authz_request_t req = {.subject = q->subject,
                           .resource = q->resource,
                           .action = q->action,
                           .context = ctx,
                           .cache = AUTHZ_CACHE_BYPASS};
    authz_decision_t d;
    int rc = authz_is_authorized(m, &req, &d, NULL);
    json_decref(ctx);
    return !rc && d.authorized;
}

static void cedar_req(bench_cedar_req_t *q, const char *check, const char *subject,
                      const char *resource, const char *action, int amount)
{
    *q = (bench_cedar_req_t){.check = check, .amount = amount, .p50 = -1, .p95 = -1, .rate = -1};
    snprintf(q->subject, sizeof q->subject, "%s", subject);
    snprintf(q->resource, sizeof q->resource, "%s", resource);
    snprintf(q->action, sizeof q->action, "%s", action);
}

/* The timed checks, then more for the agreement figure: in the small catalog each permission of
 * each role (bench_catalog.c's shape: "doc:<role>-p<k>", every 8th a prefix "coll:<role>-*",
 * verb k % 5, the fifth conditional) for both users at amounts 10 and 5000; in the large one the
 * checks of every 100th user, and each such user on the first resource of the user 50 after. */
static int cedar_reqs(catalog_t *c, int large, bench_cedar_cat_t *out)
{
    static const char *const verbs[5] = {"read", "write", "search", "admin", "approve"};
    int cap = BENCH_CATALOG_CHECKS + (large ? 6 * 100 : 2 * 4 * 17 * 2), n = 0;
    bench_cedar_req_t *q = cdn_calloc((size_t)cap, sizeof(*q));
    if (!q)
        return 1;
    for (int k = 0; k < BENCH_CATALOG_CHECKS; k++) {
        const bench_check_t *ck = &c->b.checks[k];
        cedar_req(&q[n++], check_name(k), ck->subject, ck->resource, ck->action, ck->amount);
    }
    char res[64];
    for (int u = 0; !large && u < 2; u++)
        for (int r = 0; r < 4; r++)
            for (int k = 0; k < 17; k++)
                for (int a = 0; a < 2; a++) {
                    if (k % 8 == 7)
                        snprintf(res, sizeof res, "coll:r%d-x%d", r, k);
                    else
                        snprintf(res, sizeof res, "doc:r%d-p%d", r, k);
                    cedar_req(&q[n++], NULL, u ? "bob" : "alice", res, verbs[k % 5], a ? 5000 : 10);
                }
    for (int u = 0; large && u < BENCH_CATALOG_LARGE_USERS; u += 100) {
        bench_check_t ks[BENCH_CATALOG_CHECKS], other[BENCH_CATALOG_CHECKS];
        bench_catalog_user_checks(u, ks);
        bench_catalog_user_checks(u + 50, other);
        for (int k = 0; k < BENCH_CATALOG_CHECKS; k++)
            cedar_req(&q[n++], NULL, ks[k].subject, ks[k].resource, ks[k].action, ks[k].amount);
        cedar_req(&q[n++], NULL, ks[0].subject, other[0].resource, other[0].action, 10);
    }
    for (int i = 0; i < n; i++)
        q[i].want = cordon_allows(c->m, &q[i]);
    *out = (bench_cedar_cat_t){.name = c->b.name, .m = c->m, .reqs = q, .n = n};
    return 0;
}

/* Runs Cedar on the catalogs; fills its figures into the cold rows and the agreement into r. */
static void cedar_stage(catalog_t **cats, int ncats, catalog_t *large, row_t *rows, int nrows,
                        const opts_t *o, cedar_result_t *r)
{
    bench_cedar_cat_t cc[2];
    int n = 0;
    while (n < ncats && !cedar_reqs(cats[n], cats[n] == large, &cc[n]))
        n++;
    if (n == ncats && !bench_cedar_run(cc, ncats, o->iters, o->cedar_budget_s, &r->info)) {
        r->ran = 1;
        for (int k = 0; k < ncats; k++) {
            r->policies[k] = cc[k].policies;
            r->entities[k] = cc[k].entities;
            for (int i = 0; i < cc[k].n; i++) {
                const bench_cedar_req_t *q = &cc[k].reqs[i];
                r->compared++;
                r->agree += q->got == q->want;
                if (q->got != q->want)
                    fprintf(stderr, "warning: Cedar answered %s, cordon %s: %s %s %s amount=%d\n",
                            q->got ? "allow" : "deny", q->want ? "allow" : "deny", q->subject,
                            q->action, q->resource, q->amount);
                for (int j = 0; q->check && j < nrows; j++)
                    if (!strcmp(rows[j].catalog, cc[k].name) && !strcmp(rows[j].check, q->check) &&
                        !strcmp(rows[j].mode, "cold")) {
                        rows[j].cedar_p50 = q->p50;
                        rows[j].cedar_p95 = q->p95;
                        rows[j].cedar_rate = q->rate;
                    }
            }
        }
    }
    for (int i = 0; i < n; i++)
        cdn_free(cc[i].reqs);
}

/* ---- driver ---- */

static int parse_opts(int argc, char **argv, opts_t *o)
{
    *o = (opts_t){.iters = 200000,
                  .casbin = 1,
                  .cedar = 1,
                  .small = 1,
                  .large = 1,
                  .casbin_budget_s = 2.0,
                  .cedar_budget_s = 2.0};
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
        } else if (!strcmp(a, "--cedar-budget") && v) {
            o->cedar_budget_s = strtod(v, NULL);
            i++;
        } else if (!strcmp(a, "--no-casbin")) {
            o->casbin = 0;
        } else if (!strcmp(a, "--no-cedar")) {
            o->cedar = 0;
        } else {
            printf(
                "usage: cordon bench authz [--catalog small|large|all] [--iters N]\n"
                "                          [--format table|json] [--no-casbin] [--no-cedar]\n"
                "                          [--casbin-budget SECONDS per check and mode]\n"
                "                          [--cedar-budget SECONDS per check]\n"
                "Times is-authorized (cold = cache miss, warm = cache hit) and view\n"
                "compilation on a small and a large catalog, and Casbin (node, npm package\n"
                "casbin, installed into build/casbin-peer) on the same catalogs and checks.\n"
                "Cedar (node, @cedar-policy/cedar-wasm in bench/peers/cedar) decides the same\n"
                "checks on the catalogs translated to Cedar (no view: Cedar has none; no cache,\n"
                "so its figure stands beside the cold rows), and a sample of further checks\n"
                "for the agreement figure.\n"
                "--iters: timed calls per cordon row (default 200000); each peer runs\n"
                "min(iters, 20000) calls or its budget in seconds (default 2), whichever\n"
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

static json_t *row_json(const row_t *r, const char *engine, double p50, double p95, double rate)
{
    return json_pack("{s:s, s:s, s:s, s:s, s:f, s:f, s:f}", "catalog", r->catalog, "check",
                     r->check, "mode", r->mode, "engine", engine, "p50_us", p50, "p95_us", p95,
                     "checks_per_s", rate);
}

static json_t *cedar_json(const cedar_result_t *c, catalog_t **cats, int ncats)
{
    if (!c->ran)
        return json_null();
    json_t *j = json_pack("{s:s, s:i, s:i, s:f, s:f, s:s, s:{}}", "version", c->info.version,
                          "agree", c->agree, "compared", c->compared, "floor_p50_us",
                          c->info.floor_p50, "floor_p95_us", c->info.floor_p95, "untranslated",
                          "view (Cedar has no operation listing a principal's groups and roles)",
                          "catalogs");
    for (int i = 0; i < ncats; i++)
        json_object_set_new(json_object_get(j, "catalogs"), cats[i]->b.name,
                            json_pack("{s:I, s:I}", "policies", (json_int_t)c->policies[i],
                                      "entities", (json_int_t)c->entities[i]));
    return j;
}

static void print_rows(const row_t *rows, int n, const opts_t *o, catalog_t **cats, int ncats,
                       const cedar_result_t *cedar)
{
    if (o->json) {
        json_t *arr = json_array();
        for (int i = 0; i < n; i++) {
            const row_t *r = &rows[i];
            json_t *j = row_json(r, "cordon", r->p50, r->p95, r->rate);
            if (r->peer_rate > 0)
                json_object_set_new(j, "speedup_vs_casbin", json_real(r->rate / r->peer_rate));
            if (r->cedar_rate > 0)
                json_object_set_new(j, "speedup_vs_cedar", json_real(r->rate / r->cedar_rate));
            json_array_append_new(arr, j);
            if (r->peer_rate > 0)
                json_array_append_new(
                    arr, row_json(r, "casbin", r->peer_p50, r->peer_p95, r->peer_rate));
            if (r->cedar_rate > 0)
                json_array_append_new(
                    arr, row_json(r, "cedar", r->cedar_p50, r->cedar_p95, r->cedar_rate));
        }
        json_t *doc = json_pack("{s:s, s:I, s:f, s:o, s:o}", "bench", "authz", "iterations",
                                (json_int_t)o->iters, "timer_overhead_ns", o->timer_ns, "rows", arr,
                                "cedar", cedar_json(cedar, cats, ncats));
        char *s = json_dumps(doc, JSON_INDENT(1) | JSON_REAL_PRECISION(6));
        printf("%s\n", s ? s : "{}");
        free(s);
        json_decref(doc);
        return;
    }
    for (int i = 0; i < ncats; i++)
        printf("catalog %-5s: %ld ops, %ld permissions (%ld conditional), built in %.0f ms\n",
               cats[i]->b.name, cats[i]->b.ops, cats[i]->b.perms, cats[i]->b.conditional,
               cats[i]->build_ms);
    printf("timer overhead per sample: %.0f ns median (included in every cordon latency)\n",
           o->timer_ns);
    printf("\n%-7s %-22s %-5s %9s %9s %12s | %11s %11s %10s %8s | %10s %10s %9s %8s\n", "catalog",
           "check", "mode", "p50_us", "p95_us", "checks/s", "casbin p50", "casbin p95", "casbin/s",
           "ratio", "cedar p50", "cedar p95", "cedar/s", "ratio");
    for (int i = 0; i < n; i++) {
        const row_t *r = &rows[i];
        printf("%-7s %-22s %-5s %9.3f %9.3f %12.0f", r->catalog, r->check, r->mode, r->p50, r->p95,
               r->rate);
        if (r->peer_rate > 0)
            printf(" | %11.1f %11.1f %10.0f %7.0fx", r->peer_p50, r->peer_p95, r->peer_rate,
                   r->rate / r->peer_rate);
        else
            printf(" | %11s %11s %10s %8s", "-", "-", "-", "-");
        if (r->cedar_rate > 0)
            printf(" | %10.1f %10.1f %9.0f %7.0fx\n", r->cedar_p50, r->cedar_p95, r->cedar_rate,
                   r->rate / r->cedar_rate);
        else
            printf(" | %10s %10s %9s %8s\n", "-", "-", "-", "-");
    }
    if (cedar->ran) {
        printf("\ncedar %s: the same decisions as cordon on %d of %d checks (the timed ones and "
               "a sample);",
               cedar->info.version, cedar->agree, cedar->compared);
        for (int i = 0; i < ncats; i++)
            printf(" %s: %ld policies, %ld entities;", cats[i]->b.name, cedar->policies[i],
                   cedar->entities[i]);
        printf("\n  every feature of the catalogs translates except the view, which Cedar has no "
               "operation for;\n  Cedar keeps no decision cache, so its figures stand beside "
               "the cold rows;\n  a call on an empty policy set (what the wasm binding costs "
               "alone): p50 %.1f us, p95 %.1f us\n",
               cedar->info.floor_p50, cedar->info.floor_p95);
    }
}

int bench_authz_main(int argc, char **argv)
{
    opts_t o;
    int rc = parse_opts(argc, argv, &o);
    if (rc >= 0)
        return rc;
    catalog_t small = {.b.name = "small"}, large = {.b.name = "large"};
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
        c->b.policies = json_array();
        c->b.groupings = json_array();
        c->b.op = apply_op;
        c->b.arg = c;
        uint64_t t0 = cdn_clock_ns();
        rc = authz_model_new(&c->m, NULL) || bench_catalog_build(&c->b, c == &large);
        c->build_ms = (double)(cdn_clock_ns() - t0) / 1e6;
        if (!o.json)
            fprintf(stderr, "built the %s catalog (%ld ops) in %.0f ms\n", c->b.name, c->b.ops,
                    c->build_ms);
        for (int k = 0; k < NCHECKS && !rc; k++)
            for (int warm = 0; warm < 2 && !rc; warm++) {
                row_t *r = &rows[nrows++];
                *r = (row_t){
                    c->b.name, check_name(k), warm ? "warm" : "cold", 0, 0, 0, -1, -1, -1, -1, -1,
                    -1};
                rc = time_cordon(c, k, warm, o.iters, t, r);
            }
    }
    cdn_free(t);
    if (!rc && o.casbin)
        casbin_run(cats, ncats, rows, nrows, &o);
    cedar_result_t cedar = {0};
    if (!rc && o.cedar)
        cedar_stage(cats, ncats, &large, rows, nrows, &o, &cedar);
    if (!rc)
        print_rows(rows, nrows, &o, cats, ncats, &cedar);
    for (int i = 0; i < ncats; i++) {
        authz_model_free(cats[i]->m);
        json_decref(cats[i]->b.policies);
        json_decref(cats[i]->b.groupings);
    }
    return rc ? 1 : 0;
}
