/* test_slice.c: fragments (authz_changes) and slices (authz_slice_*). On seeded random models
 * changed by every op of the vocabulary, by batches and by imports, the fragments the changes
 * report, kept in a table here as the permission history keeps them, always equal a fresh
 * dump of every entity (so no change forgets an entity it touched), and a slice built from
 * them decides every request, gives every view and explains every ACL exactly as the whole
 * model does, for every subject, unknown and deleted ones included. Relies on cmocka and
 * authz.h. */
// clang-format off
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
// clang-format on

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "authz/authz.h"
#include "base/mem.h"
#include "testutil.h"

#define NS 7
#define NG 6
#define NR 3
#define TABLE_MAX 128

static uint64_t rng = 88172645463325252ull;
static uint32_t rnd(uint32_t n)
{
    return (uint32_t)(tu_rand(&rng) % n);
}

/* The fragments as the history would hold them: kind + id -> latest fragment. */
typedef struct table {
    char key[TABLE_MAX][160];
    char *frag[TABLE_MAX];
    int n;
} table_t;

static void table_clear(table_t *t)
{
    for (int i = 0; i < t->n; i++)
        free(t->frag[i]);
    t->n = 0;
}

static int put_frag(void *ctx, char kind, const char *id, const char *frag)
{
    table_t *t = ctx;
    char key[160];
    snprintf(key, sizeof key, "%c%s", kind, id);
    int i = 0;
    while (i < t->n && strcmp(t->key[i], key))
        i++;
    if (i == t->n) {
        assert_true(t->n < TABLE_MAX);
        snprintf(t->key[t->n++], sizeof t->key[0], "%s", key);
        t->frag[i] = NULL;
    }
    free(t->frag[i]);
    t->frag[i] = frag ? strdup(frag) : NULL;
    return 0;
}

static const char *get_frag(const table_t *t, char kind, const char *id)
{
    char key[160];
    snprintf(key, sizeof key, "%c%s", kind, id);
    for (int i = 0; i < t->n; i++)
        if (!strcmp(t->key[i], key))
            return t->frag[i];
    return NULL;
}

static const char *const patterns[] = {"*", "doc:a", "doc:a*", "collection:*", "collection:b"};
static const char *const resources[] = {"doc:a", "doc:ab", "collection:a", "collection:b"};
static const char *const actions[] = {"read", "search", "*"};
static const char *const conds[] = {
    "", ",\"condition\":{\"StringEquals\":{\"subject.attributes.dept\":\"hr\"}}",
    ",\"condition\":{\"NumericLessThan\":{\"context.n\":5}}"};

/* A permission; one in four a deny, some of them of label x (valid only without a
 * condition: the others must fail and leave no trace). */
static void perm(char *out, size_t cap)
{
    int deny = !rnd(4), label = deny && !rnd(2);
    snprintf(out, cap, "{\"resource\":\"%s\",\"action\":\"%s\"%s%s}",
             label ? "label:x" : patterns[rnd(5)], actions[rnd(3)], conds[rnd(3)],
             deny ? ",\"effect\":\"deny\"" : "");
}

/* One random op as text (often valid, sometimes not: failures must leave no trace). */
static void random_op(char *out, size_t cap)
{
    char p[256];
    int s = (int)rnd(NS), g = (int)rnd(NG), h = (int)rnd(NG), r = (int)rnd(NR);
    switch (rnd(12)) {
    case 0:
        snprintf(
            out, cap, "{\"op\":\"put_subject\",\"id\":\"s%d\",\"attributes\":{\"dept\":\"%s\"}%s}",
            s, rnd(2) ? "hr" : "eng",
            (const char *[]){"", ",\"tenants\":[\"t0\"]", ",\"tenants\":[\"t1\",\"t0\"]"}[rnd(3)]);
        break;
    case 1: snprintf(out, cap, "{\"op\":\"delete_subject\",\"id\":\"s%d\"}", s); break;
    case 2: snprintf(out, cap, "{\"op\":\"put_group\",\"id\":\"g%d\"}", g); break;
    case 3: snprintf(out, cap, "{\"op\":\"delete_group\",\"id\":\"g%d\"}", g); break;
    case 4:
    case 5:
        snprintf(out, cap, "{\"op\":\"add_member\",\"group\":\"g%d\",\"member\":\"s%d\"}", g, s);
        break;
    case 6:
        snprintf(out, cap,
                 "{\"op\":\"add_member\",\"group\":\"g%d\",\"member\":\"g%d\",\"member_kind\":"
                 "\"group\"}",
                 g, h);
        break;
    case 7:
        if (rnd(2))
            snprintf(out, cap, "{\"op\":\"remove_member\",\"group\":\"g%d\",\"member\":\"s%d\"}", g,
                     s);
        else
            snprintf(out, cap,
                     "{\"op\":\"remove_member\",\"group\":\"g%d\",\"member\":\"g%d\","
                     "\"member_kind\":\"group\"}",
                     g, h);
        break;
    case 8:
        perm(p, sizeof p);
        snprintf(out, cap, "{\"op\":\"put_role\",\"id\":\"r%d\",\"permissions\":[%s]}", r, p);
        break;
    case 9: snprintf(out, cap, "{\"op\":\"delete_role\",\"id\":\"r%d\"}", r); break;
    default: {
        const char *op = rnd(4) ? "grant" : "revoke";
        char what[300], scope[96] = "";
        if (rnd(2))
            snprintf(what, sizeof what, "\"role\":\"r%d\"", r);
        else {
            perm(p, sizeof p);
            snprintf(what, sizeof what, "\"permission\":%s", p);
        }
        if (!rnd(3))
            snprintf(scope, sizeof scope, ",\"scope\":{\"type\":\"tenant\",\"id\":\"t%u\"}",
                     rnd(2));
        else if (!rnd(2)) /* a validity window around the instants compare_all asks at */
            snprintf(scope, sizeof scope, ",\"valid\":{%s}",
                     (const char *[]){
                         "\"from\":\"2026-03-01\"", "\"until\":\"2026-06-01\"",
                         "\"from\":\"2026-02-01\",\"until\":\"2026-04-01T12:00Z\""}[rnd(3)]);
        if (rnd(2))
            snprintf(out, cap, "{\"op\":\"%s\",\"to\":\"s%d\",%s%s}", op, s, what, scope);
        else
            snprintf(out, cap, "{\"op\":\"%s\",\"to\":\"g%d\",\"to_kind\":\"group\",%s%s}", op, g,
                     what, scope);
    }
    }
}

static authz_model_t *slice_of(const table_t *t, const char *subject)
{
    authz_slice_t *s;
    authz_model_t *m;
    char kind;
    const char *id;
    assert_int_equal(authz_slice_new(subject, &s, NULL), 0);
    while (authz_slice_need(s, &kind, &id)) {
        const char *f = get_frag(t, kind, id);
        assert_int_equal(authz_slice_give(s, f, f ? strlen(f) : 0, NULL), 0);
    }
    cdn_err_t err = {0, ""};
    int rc = authz_slice_model(s, &m, &err);
    if (rc)
        fail_msg("slice of %s: %s", subject, err.msg);
    authz_slice_free(s);
    return m;
}

static void same_views(authz_model_t *whole, authz_model_t *part, const char *subject)
{
    authz_view_t *a = NULL, *b = NULL;
    int ra = authz_view(whole, subject, &a, NULL), rb = authz_view(part, subject, &b, NULL);
    assert_int_equal(ra, rb);
    if (ra)
        return;
    assert_int_equal(a->n, b->n);
    for (size_t i = 0; i < a->n; i++)
        assert_string_equal(a->principals[i], b->principals[i]);
    authz_view_release(a);
    authz_view_release(b);
}

/* Instants the windows are judged at: before, inside and after each (2026-01-15, 03-15,
 * 05-01, 07-01). */
static const int64_t instants[] = {1768435200000000, 1773532800000000, 1777593600000000,
                                   1782864000000000};

static int compare_all(authz_model_t *whole, const table_t *t)
{
    int checked = 0;
    for (int si = 0; si <= 4 * NS + 3; si++) {
        char subject[16];
        snprintf(subject, sizeof subject, "s%d", si / 4); /* s<NS> never exists */
        authz_model_t *part = slice_of(t, subject);
        authz_model_set_time(whole, instants[si % 4]);
        authz_model_set_time(part, instants[si % 4]);
        for (int ri = 0; ri < 4; ri++)
            for (int ai = 0; ai < 3; ai++)
                for (int sc = 0; sc < 3; sc++)
                    for (int n = 0; n < 2; n++) {
                        authz_request_t q = {0};
                        authz_decision_t da, db;
                        char tid[8];
                        json_t *ctx = json_pack("{s:i}", "n", n ? 3 : 9);
                        snprintf(tid, sizeof tid, "t%d", sc - 1);
                        q.subject = subject;
                        q.resource = resources[ri];
                        q.action = actions[ai];
                        q.context = ctx;
                        q.scope_type = sc ? "tenant" : NULL;
                        q.scope_id = sc ? tid : NULL;
                        q.cache = AUTHZ_CACHE_BYPASS;
                        assert_int_equal(authz_is_authorized(whole, &q, &da, NULL), 0);
                        assert_int_equal(authz_is_authorized(part, &q, &db, NULL), 0);
                        json_decref(ctx);
                        if (da.authorized != db.authorized || da.reason != db.reason ||
                            strcmp(da.granted_to, db.granted_to) || strcmp(da.role, db.role))
                            fail_msg("%s %s %s scope %d n %d: whole %d %s %s, slice %d %s %s",
                                     subject, resources[ri], actions[ai], sc, n, da.authorized,
                                     authz_reason_name(da.reason), da.granted_to, db.authorized,
                                     authz_reason_name(db.reason), db.granted_to);
                        checked++;
                    }
        same_views(whole, part, subject);
        const char *allowed[] = {"group:g1", "role:r0", "user:s2", "tenant:t0:group:g1",
                                 "tenant:t1:role:r0"},
                   *denied[] = {"group:g3", "label:x", "tenant:t0:label:x"};
        for (int acl = 0; acl < 3; acl++) { /* untenanted, tenant t0's, tenant t1's */
            const char *const *al = acl == 0 ? allowed : acl == 1 ? allowed + 3 : allowed + 4;
            size_t nal = acl == 0 ? 3 : 1;
            const char *const *dl = acl == 1 ? denied + 2 : denied;
            size_t ndl = acl == 0 ? 2 : acl == 1 ? 1 : 0;
            authz_explanation_t xa, xb;
            assert_int_equal(authz_explain(whole, subject, al, nal, dl, ndl, &xa, NULL), 0);
            assert_int_equal(authz_explain(part, subject, al, nal, dl, ndl, &xb, NULL), 0);
            assert_int_equal(xa.readable, xb.readable);
            assert_int_equal(xa.kind, xb.kind);
            assert_string_equal(xa.principal, xb.principal);
        }
        authz_model_free(part);
    }
    authz_model_set_time(whole, 0);
    return checked;
}

/* The table kept from the changes equals a dump of every live entity (deleted ones NULL). */
static void table_is_current(authz_model_t *m, const table_t *t)
{
    table_t *fresh = calloc(1, sizeof *fresh);
    assert_int_equal(authz_changes(m, true, put_frag, fresh, NULL), 0);
    for (int i = 0; i < t->n; i++) {
        const char *f = get_frag(fresh, t->key[i][0], t->key[i] + 1);
        if (!f != !t->frag[i] || (f && strcmp(f, t->frag[i])))
            fail_msg("%s: kept %s, now %s", t->key[i], t->frag[i] ? t->frag[i] : "(none)",
                     f ? f : "(none)");
    }
    for (int i = 0; i < fresh->n; i++)
        assert_non_null(get_frag(t, fresh->key[i][0], fresh->key[i] + 1));
    table_clear(fresh);
    free(fresh);
}

static void test_slices_decide_as_the_whole_model(void **state)
{
    (void)state;
    int checked = 0, applied = 0;
    for (int seed = 1; seed <= 12; seed++) {
        authz_model_t *m, *other;
        table_t *t = calloc(1, sizeof *t);
        rng = 0x9E3779B97F4A7C15ull * (uint64_t)seed;
        assert_int_equal(authz_model_new(&m, NULL), 0);
        assert_int_equal(authz_model_new(&other, NULL), 0);
        authz_model_track(m, true);
        for (int step = 0; step < 400; step++) {
            char op[800];
            int kind = (int)rnd(20);
            if (kind == 0) { /* a batch of three */
                char a[800], b[800], c[800], arr[2500];
                random_op(a, sizeof a);
                random_op(b, sizeof b);
                random_op(c, sizeof c);
                snprintf(arr, sizeof arr, "[%s,%s,%s]", a, b, c);
                json_t *ops = json_loads(arr, 0, NULL);
                applied += authz_apply_batch(m, ops, NULL) == 0;
                json_decref(ops);
            } else if (kind == 1) { /* an import of another random model */
                char *doc;
                for (int k = 0; k < 30; k++) {
                    random_op(op, sizeof op);
                    authz_apply(other, op, NULL);
                }
                assert_int_equal(authz_export(other, &doc, NULL), 0);
                applied += authz_import(m, doc, NULL) == 0;
                cdn_free(doc);
            } else {
                random_op(op, sizeof op);
                applied += authz_apply(m, op, NULL) == 0;
            }
            assert_int_equal(authz_changes(m, false, put_frag, t, NULL), 0);
            if (step % 25 == 24) {
                table_is_current(m, t);
                checked += compare_all(m, t);
            }
        }
        table_clear(t);
        free(t);
        authz_model_free(m);
        authz_model_free(other);
    }
    print_message("%d changes applied, %d decisions compared\n", applied, checked);
    assert_true(applied > 2000);
    assert_true(checked > 100000);
}

/* A subject in 60 groups, one of them at the bottom of a chain of 40, roles granted at every
 * level: the slice grows past every initial capacity and still decides as the model does. */
static void test_wide_and_deep_slice(void **state)
{
    (void)state;
    authz_model_t *m;
    char op[256];
    table_t *t = calloc(1, sizeof *t);
    assert_int_equal(authz_model_new(&m, NULL), 0);
    authz_model_track(m, true);
    assert_int_equal(authz_apply(m, "{\"op\":\"put_subject\",\"id\":\"s0\"}", NULL), 0);
    assert_int_equal(authz_apply(m,
                                 "{\"op\":\"put_role\",\"id\":\"r0\",\"permissions\":[{"
                                 "\"resource\":\"collection:b\",\"action\":\"search\"}]}",
                                 NULL),
                     0);
    for (int g = 0; g < 100; g++) {
        snprintf(op, sizeof op, "{\"op\":\"put_group\",\"id\":\"g%d\"}", g);
        assert_int_equal(authz_apply(m, op, NULL), 0);
    }
    for (int g = 0; g < 40; g++) { /* g0 in g1 in ... in g39 */
        snprintf(op, sizeof op,
                 "{\"op\":\"add_member\",\"group\":\"g%d\",\"member\":\"g%d\",\"member_kind\":"
                 "\"group\"}",
                 g + 1, g);
        assert_int_equal(authz_apply(m, op, NULL), 0);
    }
    for (int g = 40; g < 100; g++) {
        snprintf(op, sizeof op, "{\"op\":\"add_member\",\"group\":\"g%d\",\"member\":\"s0\"}",
                 g == 40 ? 0 : g);
        assert_int_equal(authz_apply(m, op, NULL), 0);
    }
    /* the only grant of the search permission is at the top of the chain */
    assert_int_equal(authz_apply(m,
                                 "{\"op\":\"grant\",\"to\":\"g40\",\"to_kind\":\"group\","
                                 "\"role\":\"r0\"}",
                                 NULL),
                     0);
    assert_int_equal(authz_changes(m, false, put_frag, t, NULL), 0);
    table_is_current(m, t);
    authz_model_t *part = slice_of(t, "s0");
    authz_view_t *v;
    assert_int_equal(authz_view(part, "s0", &v, NULL), 0);
    assert_int_equal(v->n, 1 + 100 + 1); /* user, every group, the role of g40 */
    authz_view_release(v);
    same_views(m, part, "s0");
    authz_model_free(part);
    assert_int_equal(compare_all(m, t) > 0, 1);
    table_clear(t);
    free(t);
    authz_model_free(m);
}

/* An untracked model records nothing; tracking starts from nothing pending. */
static void test_untracked_model_reports_nothing(void **state)
{
    (void)state;
    authz_model_t *m;
    table_t *t = calloc(1, sizeof *t);
    assert_int_equal(authz_model_new(&m, NULL), 0);
    assert_int_equal(authz_apply(m, "{\"op\":\"put_subject\",\"id\":\"a\"}", NULL), 0);
    assert_int_equal(authz_changes(m, false, put_frag, t, NULL), 0);
    assert_int_equal(t->n, 0);
    authz_model_track(m, true);
    assert_int_equal(authz_apply(m, "{\"op\":\"put_group\",\"id\":\"g\"}", NULL), 0);
    assert_int_equal(
        authz_apply(m, "{\"op\":\"add_member\",\"group\":\"g\",\"member\":\"a\"}", NULL), 0);
    assert_int_equal(authz_changes(m, false, put_frag, t, NULL), 0);
    assert_int_equal(t->n, 2);
    assert_string_equal(get_frag(t, 's', "a"),
                        "{\"kind\":\"user\",\"attributes\":{},\"groups\":[\"g\"],\"grants\":[]}");
    assert_string_equal(get_frag(t, 'g', "g"), "{\"order\":0,\"parents\":[],\"grants\":[]}");
    /* deleting the group rewrites its member, and reports the group gone */
    assert_int_equal(authz_apply(m, "{\"op\":\"delete_group\",\"id\":\"g\"}", NULL), 0);
    assert_int_equal(authz_changes(m, false, put_frag, t, NULL), 0);
    assert_null(get_frag(t, 'g', "g"));
    assert_string_equal(get_frag(t, 's', "a"),
                        "{\"kind\":\"user\",\"attributes\":{},\"groups\":[],\"grants\":[]}");
    table_clear(t);
    free(t);
    authz_model_free(m);
}

/* Bad fragments are refused with CORRUPT, not trusted. */
static void test_malformed_fragment_is_corrupt(void **state)
{
    (void)state;
    authz_slice_t *s;
    char kind;
    const char *id;
    assert_int_equal(authz_slice_new("a", &s, NULL), 0);
    assert_int_equal(authz_slice_need(s, &kind, &id), 1);
    assert_int_equal(kind, AUTHZ_ENT_SUBJECT);
    assert_int_equal(authz_slice_give(s, "{\"groups\":[1]}", 14, NULL), CDN_ERR_CORRUPT);
    authz_slice_free(s);
    assert_int_equal(authz_slice_new("a", &s, NULL), 0);
    assert_int_equal(authz_slice_need(s, &kind, &id), 1);
    assert_int_equal(authz_slice_give(s, "not json", 8, NULL), CDN_ERR_CORRUPT);
    authz_slice_free(s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_slices_decide_as_the_whole_model),
        cmocka_unit_test(test_wide_and_deep_slice),
        cmocka_unit_test(test_untracked_model_reports_nothing),
        cmocka_unit_test(test_malformed_fragment_is_corrupt),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
