/* bench_authz_cedar.c: runs the Cedar peer (bench/peers/cedar/peer.js) on the authz catalogs:
 * their exported models and requests go to node in one spec, one JSON line per answer comes back.
 * Relies on authz_export, jansson, node, and npm ci for the peer's package when it is missing. */
#include "bench_authz_cedar.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "base/mem.h"
#include "bench_util.h"

static json_t *cat_spec(const bench_cedar_cat_t *c, long iters)
{
    char *doc = NULL;
    cdn_err_t e = {0};
    if (authz_export(c->m, &doc, &e)) {
        fprintf(stderr, "note: exporting the %s catalog for Cedar: %s\n", c->name, e.msg);
        return NULL;
    }
    json_t *model = json_loads(doc, 0, NULL);
    cdn_free(doc);
    json_t *reqs = json_array();
    for (int i = 0; model && reqs && i < c->n; i++) {
        const bench_cedar_req_t *q = &c->reqs[i];
        json_array_append_new(reqs, json_pack("{s:s, s:s, s:s, s:{s:i}, s:I}", "subject",
                                              q->subject, "resource", q->resource, "action",
                                              q->action, "context", "amount", q->amount, "iters",
                                              (json_int_t)(q->check ? iters : 1)));
    }
    if (!model || !reqs) {
        json_decref(model);
        json_decref(reqs);
        return NULL;
    }
    return json_pack("{s:{s:o, s:o}}", "cordon", "model", model, "requests", reqs);
}

/* One line of the peer's output into its request (or the catalog's summary). */
static int take_line(const char *line, bench_cedar_cat_t *cats, int ncats, bench_cedar_info_t *info)
{
    json_t *j = json_loads(line, 0, NULL);
    if (!j)
        return 0; /* not a line of ours */
    int k = (int)json_integer_value(json_object_get(j, "case"));
    const char *err = json_string_value(json_object_get(j, "error"));
    int bad = 0;
    if (err) {
        fprintf(stderr, "note: the Cedar peer: %s\n", err);
        bad = 1;
    } else if (k >= 0 && k < ncats && json_is_true(json_object_get(j, "summary"))) {
        const char *v = json_string_value(json_object_get(j, "cedar_version"));
        snprintf(info->version, sizeof info->version, "%s", v ? v : "?");
        cats[k].policies = (long)json_integer_value(json_object_get(j, "policies"));
        cats[k].entities = (long)json_integer_value(json_object_get(j, "entities"));
    } else if (k == ncats && !json_object_get(j, "summary")) {
        info->floor_p50 = json_number_value(json_object_get(j, "p50_us"));
        info->floor_p95 = json_number_value(json_object_get(j, "p95_us"));
    } else if (k >= 0 && k < ncats) {
        int i = (int)json_integer_value(json_object_get(j, "i"));
        const char *dec = json_string_value(json_object_get(j, "decision"));
        json_t *errs = json_object_get(j, "errors");
        if (i >= 0 && i < cats[k].n && dec) {
            bench_cedar_req_t *q = &cats[k].reqs[i];
            q->got = !strcmp(dec, "allow");
            if (q->check) {
                q->p50 = json_number_value(json_object_get(j, "p50_us"));
                q->p95 = json_number_value(json_object_get(j, "p95_us"));
                q->rate = json_number_value(json_object_get(j, "checks_per_s"));
            }
        }
        if (json_array_size(errs)) /* the translation avoids them: one means it is wrong */
            fprintf(stderr, "warning: Cedar raised an error on %s request %d: %s\n", cats[k].name,
                    i, json_string_value(json_array_get(errs, 0)));
    }
    json_decref(j);
    return bad;
}

/* The floor: an empty model, so no policy and no principal entity, one timed request. */
static json_t *floor_spec(long iters)
{
    return json_pack("{s:{s:{s:i}, s:[{s:s, s:s, s:s, s:{s:i}, s:I}]}}", "cordon", "model",
                     "version", 1, "requests", "subject", "nobody", "resource", "doc:x", "action",
                     "read", "context", "amount", 10, "iters", (json_int_t)iters);
}

int bench_cedar_run(bench_cedar_cat_t *cats, int ncats, long iters, double budget_s,
                    bench_cedar_info_t *info)
{
    const char *dir = getenv("CORDON_CEDAR_DIR") ? getenv("CORDON_CEDAR_DIR") : "bench/peers/cedar";
    char path[512], cmd[1200], line[8192];
    *info = (bench_cedar_info_t){.version = "-", .floor_p50 = -1, .floor_p95 = -1};
    snprintf(path, sizeof(path), "%s/peer.js", dir);
    if (!bench_path_exists(path)) {
        fprintf(stderr,
                "note: %s not found (run from the repository root or set CORDON_CEDAR_DIR); "
                "reporting no Cedar rows\n",
                path);
        return 1;
    }
    char mods[512]; /* scripts/deps.sh installs the package in place; a run on a fresh tree too */
    if (bench_npm_peer("Cedar", dir, dir, "@cedar-policy/cedar-wasm", mods, sizeof mods))
        return 1;
    json_t *cases = json_array();
    for (int k = 0; k < ncats && cases; k++) {
        cats[k].policies = cats[k].entities = -1;
        for (int i = 0; i < cats[k].n; i++)
            cats[k].reqs[i].got = -1;
        json_t *s = cat_spec(&cats[k], iters < 20000 ? iters : 20000);
        if (!s || json_array_append_new(cases, s)) {
            json_decref(cases);
            cases = NULL;
        }
    }
    if (cases && json_array_append_new(cases, floor_spec(iters < 20000 ? iters : 20000))) {
        json_decref(cases);
        cases = NULL;
    }
    snprintf(path, sizeof(path), "build/cedar-spec.json");
    if (mkdir("build", 0755) && errno != EEXIST) /* the bench runs from the repository root */
        json_decref(cases), cases = NULL;
    json_t *spec = cases ? json_pack("{s:o, s:f}", "cases", cases, "budget_s", budget_s) : NULL;
    int bad = !spec || json_dump_file(spec, path, JSON_COMPACT);
    json_decref(spec);
    if (bad) {
        fprintf(stderr, "note: could not write %s: %s\n", path, strerror(errno));
        return 1;
    }
    snprintf(cmd, sizeof(cmd), "node '%s/peer.js' '%s'", dir, path);
    FILE *p = popen(cmd, "r");
    if (!p) {
        fprintf(stderr, "note: could not start node: %s\n", strerror(errno));
        return 1;
    }
    while (fgets(line, sizeof(line), p))
        bad |= take_line(line, cats, ncats, info);
    int rc = pclose(p);
    if (rc)
        fprintf(stderr, "note: the Cedar peer exited with status %d\n", rc);
    for (int k = 0; k < ncats; k++)
        for (int i = 0; i < cats[k].n; i++)
            bad |= cats[k].reqs[i].got < 0;
    return rc || bad ? 1 : 0;
}
