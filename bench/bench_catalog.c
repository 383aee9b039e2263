/* bench_catalog.c: the small and the large permission catalog as model operations and Casbin
 * rows (bench_catalog.h). The large one's shape: 1,000 groups nested three deep (10 divisions >
 * 90 departments > 900 teams), 500 roles of 10 permissions, one role per group and per user,
 * 10,000 users in two teams each (u0 in ten). Relies on jansson. */
#include "bench_catalog.h"

#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>

const char *const bench_check_names[BENCH_CATALOG_CHECKS] = {
    "allow", "allow_condition_met", "condition_not_met", "deny_unknown_resource",
    "deny_ungranted_action"};
const char *const bench_check_reasons[BENCH_CATALOG_CHECKS] = {
    "PERMISSION_GRANTED_NO_CONDITION", "PERMISSION_GRANTED_CONDITION_MET",
    "PERMISSION_FOUND_CONDITION_NOT_MET", "NO_MATCHING_PERMISSION_FOUND",
    "NO_MATCHING_PERMISSION_FOUND"};

static const char *const verbs[5] = {"read", "write", "search", "admin", "approve"};
#define COND_JSON "{\"NumericLessThan\":{\"context.amount\":1000}}"
#define COND_CASBIN "amount<1000"

static int op(bench_catalog_t *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int op(bench_catalog_t *c, const char *fmt, ...)
{
    char buf[8192];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    if (n < 0 || (size_t)n >= sizeof buf) {
        fprintf(stderr, "cordon bench: a catalog operation does not fit %zu bytes\n", sizeof buf);
        return 1;
    }
    if (c->op(c->arg, buf))
        return 1;
    c->ops++;
    return 0;
}

static void g_row(bench_catalog_t *c, const char *a, const char *b)
{
    if (c->groupings)
        json_array_append_new(c->groupings, json_pack("[s, s, s]", a, b, "d"));
}

static int subject(bench_catalog_t *c, const char *id)
{
    return op(c, "{\"op\":\"put_subject\",\"id\":\"%s\",\"attributes\":{\"n\":1}}", id);
}

static int group(bench_catalog_t *c, const char *id)
{
    return op(c, "{\"op\":\"put_group\",\"id\":\"%s\"}", id);
}

static int member(bench_catalog_t *c, const char *grp, const char *mem, int is_group)
{
    char a[64], b[64];
    snprintf(a, sizeof a, "%s:%s", is_group ? "group" : "user", mem);
    snprintf(b, sizeof b, "group:%s", grp);
    g_row(c, a, b);
    return op(c,
              "{\"op\":\"add_member\",\"group\":\"%s\",\"member\":\"%s\",\"member_kind\":"
              "\"%s\"}",
              grp, mem, is_group ? "group" : "subject");
}

static int grant_role(bench_catalog_t *c, const char *to, int is_group, const char *role)
{
    char a[64], b[64];
    snprintf(a, sizeof a, "%s:%s", is_group ? "group" : "user", to);
    snprintf(b, sizeof b, "role:%s", role);
    g_row(c, a, b);
    return op(c, "{\"op\":\"grant\",\"to\":\"%s\",\"to_kind\":\"%s\",\"role\":\"%s\"}", to,
              is_group ? "group" : "subject", role);
}

/* A role with n permissions: resource "doc:<role>-p<k>" (every 8th a prefix "coll:<role>-*"),
 * action verbs[k % 5], and the fifth verb (approve) conditional: a fifth of all permissions. */
static int role(bench_catalog_t *c, const char *id, int n)
{
    char buf[6144], res[64], pol[64];
    int w = snprintf(buf, sizeof buf, "{\"op\":\"put_role\",\"id\":\"%s\",\"permissions\":[", id);
    snprintf(pol, sizeof pol, "role:%s", id);
    for (int k = 0; k < n; k++) {
        bool cond = k % 5 == 4, prefix = k % 8 == 7;
        if (prefix)
            snprintf(res, sizeof res, "coll:%s-*", id);
        else
            snprintf(res, sizeof res, "doc:%s-p%d", id, k);
        w +=
            snprintf(buf + w, sizeof buf - (size_t)w, "%s{\"resource\":\"%s\",\"action\":\"%s\"%s}",
                     k ? "," : "", res, verbs[k % 5], cond ? ",\"condition\":" COND_JSON : "");
        if (c->policies)
            json_array_append_new(c->policies, json_pack("[s, s, s, s, s]", pol, "d", res,
                                                         verbs[k % 5], cond ? COND_CASBIN : ""));
        c->perms++;
        c->conditional += cond;
    }
    return op(c, "%s]}", buf);
}

static void set_checks(bench_check_t *checks, const char *user, const char *role_id)
{
    for (int i = 0; i < BENCH_CATALOG_CHECKS; i++) {
        bench_check_t *k = &checks[i];
        snprintf(k->subject, sizeof k->subject, "%s", user);
        k->amount = i == 2 ? 5000 : 10;
        int perm = i == 1 || i == 2 ? 4 : 0; /* p4 is the conditional approve */
        snprintf(k->resource, sizeof k->resource, "doc:%s-p%d", role_id, perm);
        snprintf(k->action, sizeof k->action, "%s", verbs[perm]);
    }
    snprintf(checks[3].resource, sizeof checks[3].resource, "doc:no-such-thing");
    snprintf(checks[4].action, sizeof checks[4].action, "delete");
}

/* 68 permissions (4 roles x 17), 2 users, the shape of published small IAM benchmarks. */
static int build_small(bench_catalog_t *c)
{
    int rc = subject(c, "alice") || subject(c, "bob") || group(c, "staff") || group(c, "admins") ||
             member(c, "staff", "alice", 0) || member(c, "staff", "bob", 0) ||
             member(c, "admins", "alice", 0);
    for (int r = 0; r < 4 && !rc; r++) {
        char id[16];
        snprintf(id, sizeof id, "r%d", r);
        rc = role(c, id, 17);
    }
    rc = rc || grant_role(c, "staff", 1, "r0") || grant_role(c, "admins", 1, "r1") ||
         grant_role(c, "alice", 0, "r2") || grant_role(c, "bob", 0, "r3");
    set_checks(c->checks, "alice", "r1");
    return rc;
}

/* User u's teams: u0 sits in teams 105, 195, ... (one under each division), the others in
 * two teams spread over the 900. */
static int team_of(int u, int t)
{
    return u ? 100 + (u * (t ? 7 : 1) + t * 3) % 900 : 100 + t * 90 + 5;
}

static int build_large(bench_catalog_t *c)
{
    char a[32], b[32], r[16];
    int rc = 0;
    for (int g = 0; g < 1000 && !rc; g++) {
        snprintf(a, sizeof a, g < 10 ? "div%d" : g < 100 ? "dept%d" : "team%d", g);
        rc = group(c, a);
        if (!rc && g >= 10) {
            int parent = g < 100 ? (g - 10) / 9 : 10 + (g - 100) / 10;
            snprintf(b, sizeof b, parent < 10 ? "div%d" : "dept%d", parent);
            rc = member(c, b, a, 1);
        }
    }
    for (int i = 0; i < 500 && !rc; i++) {
        snprintf(r, sizeof r, "r%d", i);
        rc = role(c, r, 10);
    }
    for (int g = 0; g < 1000 && !rc; g++) {
        snprintf(a, sizeof a, g < 10 ? "div%d" : g < 100 ? "dept%d" : "team%d", g);
        snprintf(r, sizeof r, "r%d", g % 500);
        rc = grant_role(c, a, 1, r);
    }
    for (int u = 0; u < BENCH_CATALOG_LARGE_USERS && !rc; u++) {
        snprintf(a, sizeof a, "u%d", u);
        snprintf(r, sizeof r, "r%d", (u * 7) % 500);
        rc = subject(c, a) || grant_role(c, a, 0, r);
        for (int t = 0; t < (u ? 2 : 10) && !rc; t++) {
            snprintf(b, sizeof b, "team%d", team_of(u, t));
            rc = member(c, b, a, 0);
        }
    }
    bench_catalog_user_checks(0, c->checks); /* team105 holds role r105 */
    return rc;
}

int bench_catalog_build(bench_catalog_t *c, int large)
{
    return large ? build_large(c) : build_small(c);
}

void bench_catalog_user_checks(int u, bench_check_t out[BENCH_CATALOG_CHECKS])
{
    char user[32], role_id[16];
    snprintf(user, sizeof user, "u%d", u);
    snprintf(role_id, sizeof role_id, "r%d", team_of(u, 0) % 500); /* team g holds r(g % 500) */
    set_checks(out, user, role_id);
}
