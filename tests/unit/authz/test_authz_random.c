/* test_authz_random.c: authz_is_authorized and authz_view against a deliberately naive reference
 * evaluator written here, on thousands of seeded random models, op sequences and requests.
 * Relies on cmocka and libcordon; the reference walks plain arrays and recurses per query. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <cmocka.h>

#include "authz/authz.h"
#include "base/mem.h"

#define NS 8
#define NG 7
#define NR 4
#define MAXP 4
#define MAXGRANTS 64

static const char *const patterns[] = {"*",     "doc:a", "doc:a*", "collection:*", "collection:b",
                                       "doc:*", "doc:ab"};
static const char *const resources[] = {"doc:a", "doc:ab",       "doc:abc",
                                        "doc:b", "collection:a", "collection:b"};
static const char *const actions[] = {"read", "write", "search", "*"};
static const char *const depts[] = {"hr", "eng"};

/* Condition family: 0 none, 1 dept == hr, 2 context.n < 5, 3 Not(context.ip == "x"),
 * 4 And(1, 2), 5 Or(1, 3). */
#define NCOND 6
static const char *const cond_json[NCOND] = {
    NULL,
    "{\"StringEquals\":{\"subject.attributes.dept\":\"hr\"}}",
    "{\"NumericLessThan\":{\"context.n\":5}}",
    "{\"Not\":{\"StringEquals\":{\"context.ip\":\"x\"}}}",
    "{\"And\":[{\"StringEquals\":{\"subject.attributes.dept\":\"hr\"}},"
    "{\"NumericLessThan\":{\"context.n\":5}}]}",
    "{\"Or\":[{\"StringEquals\":{\"subject.attributes.dept\":\"hr\"}},"
    "{\"Not\":{\"StringEquals\":{\"context.ip\":\"x\"}}}]}",
};

typedef struct perm {
    int pat, act, cond;
    bool deny;
} perm_t;
typedef struct grant {
    int to_group, to, role, scope;
    perm_t perm;
} grant_t; /* role -1: inline */

typedef struct ref {
    int dept[NS];
    bool sub_in[NS][NG];
    bool grp_in[NG][NG]; /* [child][parent] */
    perm_t perms[NR][MAXP];
    int nperms[NR];
    grant_t grants[MAXGRANTS];
    int ngrants;
} ref_t;

typedef struct req {
    int subject;         /* NS = unknown */
    int res, act, scope; /* scope: 0 none, 1 t1, 2 t2 */
    bool upper;
    int n;  /* context.n, -1 missing */
    int ip; /* 0 missing, 1 "x", 2 "y" */
} req_t;

static uint64_t rng_state;
static uint32_t rnd(uint32_t n)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return (uint32_t)(rng_state % n);
}

/* ---- the reference: plain recursion, no caching, no flattening ---- */

static bool ref_group_reaches(const ref_t *r, int g, int target, int depth)
{
    if (g == target)
        return true;
    if (depth > NG)
        return false;
    for (int p = 0; p < NG; p++)
        if (r->grp_in[g][p] && ref_group_reaches(r, p, target, depth + 1))
            return true;
    return false;
}

static bool ref_subject_in(const ref_t *r, int s, int g)
{
    for (int d = 0; d < NG; d++)
        if (r->sub_in[s][d] && ref_group_reaches(r, d, g, 0))
            return true;
    return false;
}

static bool ref_pattern_matches(const char *pat, const char *res)
{
    size_t n = strlen(pat);
    if (!strcmp(pat, "*"))
        return true;
    if (pat[n - 1] == '*')
        return !strncmp(pat, res, n - 1);
    return !strcmp(pat, res);
}

static bool ref_cond(int c, const ref_t *r, int s, const req_t *q)
{
    bool hr = r->dept[s] == 0;
    bool n_lt = q->n >= 0 && q->n < 5;
    bool ip_not_x = !(q->ip == 1); /* Not(missing == "x") is Not(false) = true */
    switch (c) {
    case 1: return hr;
    case 2: return n_lt;
    case 3: return ip_not_x;
    case 4: return hr && n_lt;
    case 5: return hr || ip_not_x;
    default: return true;
    }
}

/* A deny's condition applies when it is true or cannot be decided (a missing operand). */
static bool ref_deny_cond(int c, const ref_t *r, int s, const req_t *q)
{
    bool hr = r->dept[s] == 0;
    bool n_lt_or_missing = q->n < 5; /* n < 0 stands for missing */
    bool ip_not_x_or_missing = q->ip != 1;
    switch (c) {
    case 1: return hr;
    case 2: return n_lt_or_missing;
    case 3: return ip_not_x_or_missing;
    case 4: return hr && n_lt_or_missing;
    case 5: return hr || ip_not_x_or_missing;
    default: return true;
    }
}

static authz_reason_t ref_decide(const ref_t *r, const req_t *q)
{
    if (q->subject == NS)
        return AUTHZ_SUBJECT_NOT_FOUND;
    bool uncond = false, met = false, found = false, denied = false;
    for (int i = 0; i < r->ngrants; i++) {
        const grant_t *g = &r->grants[i];
        bool holds = g->to_group ? ref_subject_in(r, q->subject, g->to) : g->to == q->subject;
        if (!holds || (g->scope && g->scope != q->scope))
            continue;
        int np = g->role < 0 ? 1 : r->nperms[g->role];
        for (int k = 0; k < np; k++) {
            const perm_t *p = g->role < 0 ? &g->perm : &r->perms[g->role][k];
            if (strcasecmp(actions[p->act], actions[q->act]) && p->act != 3)
                continue;
            if (!ref_pattern_matches(patterns[p->pat], resources[q->res]))
                continue;
            if (p->deny)
                denied = denied || ref_deny_cond(p->cond, r, q->subject, q);
            else if (!p->cond)
                uncond = true;
            else {
                found = true;
                met = met || ref_cond(p->cond, r, q->subject, q);
            }
        }
    }
    return denied   ? AUTHZ_PERMISSION_DENIED_EXPLICITLY
           : uncond ? AUTHZ_PERMISSION_GRANTED_NO_CONDITION
           : met    ? AUTHZ_PERMISSION_GRANTED_CONDITION_MET
           : found  ? AUTHZ_PERMISSION_FOUND_CONDITION_NOT_MET
                    : AUTHZ_NO_MATCHING_PERMISSION_FOUND;
}

/* ---- driving authz with the same model ---- */

static void apply_ok(authz_model_t *m, const char *op)
{
    cdn_err_t e = {0};
    if (authz_apply(m, op, &e))
        fail_msg("op %s: %s", op, e.msg);
}

static void perm_text(const perm_t *p, char *out, size_t cap)
{
    const char *eff = p->deny ? ",\"effect\":\"deny\"" : "";
    if (p->cond)
        snprintf(out, cap, "{\"resource\":\"%s\",\"action\":\"%s\",\"condition\":%s%s}",
                 patterns[p->pat], actions[p->act], cond_json[p->cond], eff);
    else
        snprintf(out, cap, "{\"resource\":\"%s\",\"action\":\"%s\"%s}", patterns[p->pat],
                 actions[p->act], eff);
}

static void grant_text(const grant_t *g, const char *op, char *out, size_t cap)
{
    char what[512], scope[64] = "";
    if (g->role >= 0)
        snprintf(what, sizeof(what), "\"role\":\"r%d\"", g->role);
    else {
        char p[448];
        perm_text(&g->perm, p, sizeof(p));
        snprintf(what, sizeof(what), "\"permission\":%s", p);
    }
    if (g->scope)
        snprintf(scope, sizeof(scope), ",\"scope\":{\"type\":\"tenant\",\"id\":\"t%d\"}", g->scope);
    snprintf(out, cap, "{\"op\":\"%s\",\"to\":\"%s%d\",\"to_kind\":\"%s\",%s%s}", op,
             g->to_group ? "g" : "s", g->to, g->to_group ? "group" : "subject", what, scope);
}

static bool grant_same(const grant_t *a, const grant_t *b)
{
    return a->to_group == b->to_group && a->to == b->to && a->role == b->role &&
           a->scope == b->scope &&
           (a->role >= 0 || (a->perm.pat == b->perm.pat && a->perm.act == b->perm.act &&
                             a->perm.cond == b->perm.cond && a->perm.deny == b->perm.deny));
}

static void random_perm(perm_t *p)
{
    p->pat = (int)rnd(sizeof(patterns) / sizeof(patterns[0]));
    p->act = (int)rnd(4);
    p->cond = rnd(2) ? 0 : (int)rnd(NCOND);
    p->deny = rnd(6) == 0;
}

/* (Re)defines role ro with fresh random permissions, in both models. */
static void put_role(authz_model_t *m, ref_t *r, int ro)
{
    char op[1024];
    r->nperms[ro] = 1 + (int)rnd(MAXP);
    int w = snprintf(op, sizeof(op), "{\"op\":\"put_role\",\"id\":\"r%d\",\"permissions\":[", ro);
    for (int k = 0; k < r->nperms[ro]; k++) {
        random_perm(&r->perms[ro][k]);
        perm_text(&r->perms[ro][k], op + w, sizeof(op) - (size_t)w);
        w += (int)strlen(op + w);
        if (k + 1 < r->nperms[ro])
            op[w++] = ',';
    }
    snprintf(op + w, sizeof(op) - (size_t)w, "]}");
    apply_ok(m, op);
}

/* delete_group then put_group: the reference drops its edges and grants by hand. */
static void recreate_group(authz_model_t *m, ref_t *r, int g)
{
    char op[128];
    snprintf(op, sizeof(op), "{\"op\":\"delete_group\",\"id\":\"g%d\"}", g);
    apply_ok(m, op);
    snprintf(op, sizeof(op), "{\"op\":\"put_group\",\"id\":\"g%d\"}", g);
    apply_ok(m, op);
    for (int i = 0; i < NS; i++)
        r->sub_in[i][g] = false;
    for (int i = 0; i < NG; i++)
        r->grp_in[i][g] = r->grp_in[g][i] = false;
    for (int i = 0; i < r->ngrants;)
        if (r->grants[i].to_group && r->grants[i].to == g)
            r->grants[i] = r->grants[--r->ngrants];
        else
            i++;
}

static void build(authz_model_t *m, ref_t *r)
{
    char op[1024];
    memset(r, 0, sizeof(*r));
    for (int s = 0; s < NS; s++) {
        r->dept[s] = (int)rnd(2);
        snprintf(op, sizeof(op),
                 "{\"op\":\"put_subject\",\"id\":\"s%d\",\"attributes\":"
                 "{\"dept\":\"%s\"}}",
                 s, depts[r->dept[s]]);
        apply_ok(m, op);
    }
    for (int g = 0; g < NG; g++) {
        snprintf(op, sizeof(op), "{\"op\":\"put_group\",\"id\":\"g%d\"}", g);
        apply_ok(m, op);
    }
    for (int ro = 0; ro < NR; ro++)
        put_role(m, r, ro);
}

/* One random mutation, applied to both; the reference predicts cycles and missing grants. */
static void mutate(authz_model_t *m, ref_t *r)
{
    char op[1024];
    cdn_err_t e = {0};
    int kind = (int)rnd(8);
    if (kind == 6) {
        recreate_group(m, r, (int)rnd(NG));
    } else if (kind == 7) {
        put_role(m, r, (int)rnd(NR));
    } else if (kind == 0) {
        int s = (int)rnd(NS), g = (int)rnd(NG);
        bool add = !r->sub_in[s][g];
        snprintf(op, sizeof(op), "{\"op\":\"%s\",\"group\":\"g%d\",\"member\":\"s%d\"}",
                 add ? "add_member" : "remove_member", g, s);
        apply_ok(m, op);
        r->sub_in[s][g] = add;
    } else if (kind == 1 || kind == 2) {
        int c = (int)rnd(NG), p = (int)rnd(NG);
        bool add = !r->grp_in[c][p];
        snprintf(op, sizeof(op),
                 "{\"op\":\"%s\",\"group\":\"g%d\",\"member\":\"g%d\","
                 "\"member_kind\":\"group\"}",
                 add ? "add_member" : "remove_member", p, c);
        if (add && ref_group_reaches(r, p, c, 0)) {
            assert_int_equal(authz_apply(m, op, &e), CDN_ERR_CONFLICT);
            return;
        }
        apply_ok(m, op);
        r->grp_in[c][p] = add;
    } else if (kind <= 4 || !r->ngrants) {
        if (r->ngrants == MAXGRANTS)
            return;
        grant_t g = {(int)rnd(2),
                     0,
                     rnd(2) ? (int)rnd(NR) : -1,
                     rnd(3) ? 0 : 1 + (int)rnd(2),
                     {0, 0, 0, false}};
        g.to = (int)rnd(g.to_group ? NG : NS);
        if (g.role < 0)
            random_perm(&g.perm);
        grant_text(&g, "grant", op, sizeof(op));
        apply_ok(m, op);
        for (int i = 0; i < r->ngrants; i++)
            if (grant_same(&r->grants[i], &g))
                return;
        r->grants[r->ngrants++] = g;
    } else { /* kind 5: revoke an existing grant */
        int i = (int)rnd((uint32_t)r->ngrants);
        grant_text(&r->grants[i], "revoke", op, sizeof(op));
        apply_ok(m, op);
        r->grants[i] = r->grants[--r->ngrants];
    }
}

static void random_req(req_t *q)
{
    q->subject = rnd(20) ? (int)rnd(NS) : NS;
    q->res = (int)rnd(sizeof(resources) / sizeof(resources[0]));
    q->act = (int)rnd(3);
    q->scope = (int)rnd(3);
    q->upper = rnd(4) == 0;
    q->n = rnd(3) ? (int)rnd(10) : -1;
    q->ip = (int)rnd(3);
}

static authz_decision_t run_req(authz_model_t *m, const req_t *q, authz_cache_mode_t mode)
{
    char subject[16], action[16], scope[8];
    snprintf(subject, sizeof(subject), q->subject == NS ? "ghost" : "s%d", q->subject);
    snprintf(action, sizeof(action), "%s", actions[q->act]);
    if (q->upper)
        action[0] = (char)(action[0] - 'a' + 'A');
    snprintf(scope, sizeof(scope), "t%d", q->scope);
    json_t *ctx = json_object();
    if (q->n >= 0)
        json_object_set_new(ctx, "n", json_integer(q->n));
    if (q->ip)
        json_object_set_new(ctx, "ip", json_string(q->ip == 1 ? "x" : "y"));
    authz_request_t r = {.subject = subject,
                         .resource = resources[q->res],
                         .action = action,
                         .context = ctx,
                         .scope_type = q->scope ? "tenant" : NULL,
                         .scope_id = q->scope ? scope : NULL,
                         .cache = mode};
    authz_decision_t d;
    assert_int_equal(authz_is_authorized(m, &r, &d, NULL), 0);
    json_decref(ctx);
    return d;
}

static void compare_requests(authz_model_t *m, const ref_t *r, int count, int *checked)
{
    for (int i = 0; i < count; i++) {
        req_t q;
        random_req(&q);
        authz_reason_t want = ref_decide(r, &q);
        authz_cache_mode_t mode = (authz_cache_mode_t)rnd(3);
        authz_decision_t d = run_req(m, &q, mode);
        if (d.reason != want)
            fail_msg("s%d %s %s scope %d n %d ip %d: authz says %s, reference %s", q.subject,
                     resources[q.res], actions[q.act], q.scope, q.n, q.ip,
                     authz_reason_name(d.reason), authz_reason_name(want));
        bool allow = want <= AUTHZ_PERMISSION_GRANTED_CONDITION_MET;
        assert_int_equal(d.authorized, allow);
        (*checked)++;
    }
}

static void compare_views(authz_model_t *m, const ref_t *r)
{
    for (int s = 0; s < NS; s++) {
        authz_view_t *v;
        assert_int_equal(authz_view(m, (char[8]){'s', (char)('0' + s), 0}, &v, NULL), 0);
        size_t want = 1;
        char p[32];
        for (int g = 0; g < NG; g++) {
            snprintf(p, sizeof(p), "group:g%d", g);
            bool in = ref_subject_in(r, s, g);
            want += in;
            assert_int_equal(authz_view_has(v, p), in);
        }
        for (int ro = 0; ro < NR; ro++) {
            bool in = false;
            for (int i = 0; i < r->ngrants && !in; i++) {
                const grant_t *g = &r->grants[i];
                in = g->role == ro && !g->scope &&
                     (g->to_group ? ref_subject_in(r, s, g->to) : g->to == s);
            }
            snprintf(p, sizeof(p), "role:r%d", ro);
            want += in;
            assert_int_equal(authz_view_has(v, p), in);
        }
        assert_int_equal(v->n, want);
        authz_view_release(v);
    }
}

static void test_decisions_match_naive_reference_on_random_models(void **state)
{
    (void)state;
    rng_state = 0x9e3779b97f4a7c15ULL;
    int checked = 0;
    for (int model = 0; model < 60; model++) {
        authz_model_t *m;
        assert_int_equal(authz_model_new(&m, NULL), 0);
        ref_t r;
        build(m, &r);
        for (int round = 0; round < 4; round++) {
            for (int k = 0; k < 12; k++)
                mutate(m, &r);
            compare_requests(m, &r, 25, &checked);
            compare_views(m, &r);
        }
        authz_model_free(m);
    }
    assert_true(checked >= 6000);
}

static void test_imported_copy_decides_like_the_reference(void **state)
{
    (void)state;
    rng_state = 12345;
    int checked = 0;
    for (int model = 0; model < 20; model++) {
        authz_model_t *m, *m2;
        assert_int_equal(authz_model_new(&m, NULL), 0);
        assert_int_equal(authz_model_new(&m2, NULL), 0);
        ref_t r;
        build(m, &r);
        for (int k = 0; k < 40; k++)
            mutate(m, &r);
        char *doc = NULL;
        assert_int_equal(authz_export(m, &doc, NULL), 0);
        cdn_err_t e = {0};
        if (authz_import(m2, doc, &e))
            fail_msg("import: %s", e.msg);
        compare_requests(m2, &r, 100, &checked);
        compare_views(m2, &r);
        cdn_free(doc);
        authz_model_free(m);
        authz_model_free(m2);
    }
    assert_int_equal(checked, 2000);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_decisions_match_naive_reference_on_random_models),
        cmocka_unit_test(test_imported_copy_decides_like_the_reference),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
