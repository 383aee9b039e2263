/* test_authz.c: the permission model's behaviour: every reason code, conditions, views, explain,
 * import/export and bad input leaving the model unchanged. Relies on cmocka and libcordon. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "authz/authz.h"
#include "base/mem.h"

static void apply_ok(authz_model_t *m, const char *op)
{
    cdn_err_t e = {0};
    int rc = authz_apply(m, op, &e);
    if (rc)
        fail_msg("op %s failed: %s", op, e.msg);
}

/* A small company: hr team inside people dept; alice in hr, bob in eng; roles. */
static authz_model_t *company(void)
{
    authz_model_t *m;
    assert_int_equal(authz_model_new(&m, NULL), 0);
    const char *ops[] = {
        "{\"op\":\"put_subject\",\"id\":\"alice\",\"attributes\":{\"department\":\"hr\","
        "\"level\":5,\"tags\":[\"a\",\"b\"],\"active\":true}}",
        "{\"op\":\"put_subject\",\"id\":\"bob\",\"attributes\":{\"department\":\"eng\"}}",
        "{\"op\":\"put_subject\",\"id\":\"bot\",\"kind\":\"service\"}",
        "{\"op\":\"put_group\",\"id\":\"people\"}",
        "{\"op\":\"put_group\",\"id\":\"hr\"}",
        "{\"op\":\"put_group\",\"id\":\"eng\"}",
        "{\"op\":\"add_member\",\"group\":\"people\",\"member\":\"hr\",\"member_kind\":\"group\"}",
        "{\"op\":\"add_member\",\"group\":\"hr\",\"member\":\"alice\"}",
        "{\"op\":\"add_member\",\"group\":\"eng\",\"member\":\"bob\",\"member_kind\":\"subject\"}",
        "{\"op\":\"put_role\",\"id\":\"reader\",\"permissions\":["
        "{\"resource\":\"collection:hr-*\",\"action\":\"SEARCH\"},"
        "{\"resource\":\"collection:hr-payroll\",\"action\":\"read\"}]}",
        "{\"op\":\"put_role\",\"id\":\"approver\",\"permissions\":["
        "{\"resource\":\"invoice:*\",\"action\":\"approve\",\"condition\":"
        "{\"NumericLessThan\":{\"context.amount\":1000}}}]}",
        "{\"op\":\"grant\",\"to\":\"people\",\"to_kind\":\"group\",\"role\":\"reader\"}",
        "{\"op\":\"grant\",\"to\":\"alice\",\"role\":\"approver\"}",
    };
    for (size_t i = 0; i < sizeof(ops) / sizeof(ops[0]); i++)
        apply_ok(m, ops[i]);
    return m;
}

static authz_decision_t check_ctx(authz_model_t *m, const char *subject, const char *resource,
                                  const char *action, const char *ctx_json)
{
    json_t *ctx = ctx_json ? json_loads(ctx_json, 0, NULL) : NULL;
    authz_request_t r = {
        .subject = subject, .resource = resource, .action = action, .context = ctx};
    authz_decision_t d;
    assert_int_equal(authz_is_authorized(m, &r, &d, NULL), 0);
    json_decref(ctx);
    return d;
}

static authz_decision_t check(authz_model_t *m, const char *subject, const char *resource,
                              const char *action)
{
    return check_ctx(m, subject, resource, action, NULL);
}

static char *export_text(authz_model_t *m)
{
    char *t = NULL;
    assert_int_equal(authz_export(m, &t, NULL), 0);
    return t;
}

static void test_role_via_nested_group_grants_without_condition(void **state)
{
    (void)state;
    authz_model_t *m = company();
    authz_decision_t d = check(m, "alice", "collection:hr-payroll", "Search");
    assert_true(d.authorized);
    assert_true(check(m, "user:alice", "collection:hr-payroll", "search").authorized);
    assert_int_equal(check(m, "service:alice", "collection:hr-payroll", "search").reason,
                     AUTHZ_SUBJECT_NOT_FOUND);
    assert_int_equal(d.reason, AUTHZ_PERMISSION_GRANTED_NO_CONDITION);
    assert_string_equal(authz_reason_name(d.reason), "PERMISSION_GRANTED_NO_CONDITION");
    assert_string_equal(d.resource, "collection:hr-*");
    assert_string_equal(d.action, "search");
    assert_string_equal(d.role, "reader");
    assert_string_equal(d.granted_to, "group:people");
    assert_string_equal(d.condition, "");
    authz_model_free(m);
}

static void test_condition_met_and_not_met_give_their_reasons(void **state)
{
    (void)state;
    authz_model_t *m = company();
    authz_decision_t d = check_ctx(m, "alice", "invoice:42", "approve", "{\"amount\": 999}");
    assert_true(d.authorized);
    assert_int_equal(d.reason, AUTHZ_PERMISSION_GRANTED_CONDITION_MET);
    assert_string_equal(d.condition, "{\"NumericLessThan\":{\"context.amount\":1000}}");
    assert_string_equal(d.granted_to, "user:alice");
    d = check_ctx(m, "alice", "invoice:42", "approve", "{\"amount\": 1000}");
    assert_false(d.authorized);
    assert_int_equal(d.reason, AUTHZ_PERMISSION_FOUND_CONDITION_NOT_MET);
    assert_string_equal(authz_reason_name(d.reason), "PERMISSION_FOUND_CONDITION_NOT_MET");
    assert_string_equal(d.resource, "invoice:*");
    d = check(m, "alice", "invoice:42", "approve"); /* no context: the operand is missing */
    assert_int_equal(d.reason, AUTHZ_PERMISSION_FOUND_CONDITION_NOT_MET);
    authz_model_free(m);
}

static void test_unconditional_grant_wins_over_conditional_one(void **state)
{
    (void)state;
    authz_model_t *m = company();
    apply_ok(m, "{\"op\":\"grant\",\"to\":\"alice\",\"permission\":{\"resource\":\"invoice:7\","
                "\"action\":\"approve\"}}");
    authz_decision_t d = check_ctx(m, "alice", "invoice:7", "approve", "{\"amount\": 5}");
    assert_int_equal(d.reason, AUTHZ_PERMISSION_GRANTED_NO_CONDITION);
    assert_string_equal(d.resource, "invoice:7");
    assert_string_equal(d.role, "");
    authz_model_free(m);
}

static void test_condition_met_found_past_many_unmet_conditional_grants(void **state)
{
    (void)state;
    authz_model_t *m = company();
    char op[512];
    for (int i = 0; i < 12; i++) { /* more than check.c keeps from its first pass */
        snprintf(op, sizeof(op),
                 "{\"op\":\"grant\",\"to\":\"bob\",\"permission\":{\"resource\":"
                 "\"doc:%d*\",\"action\":\"read\",\"condition\":{\"NumericEquals\":"
                 "{\"context.k\":%d}}}}",
                 i % 2, i);
        apply_ok(m, op);
    }
    authz_decision_t d = check_ctx(m, "bob", "doc:0x", "read", "{\"k\": 10}");
    assert_int_equal(d.reason, AUTHZ_PERMISSION_GRANTED_CONDITION_MET);
    assert_string_equal(d.condition, "{\"NumericEquals\":{\"context.k\":10}}");
    d = check_ctx(m, "bob", "doc:0x", "read", "{\"k\": 11}");
    assert_int_equal(d.reason, AUTHZ_PERMISSION_FOUND_CONDITION_NOT_MET);
    assert_string_equal(d.condition, "{\"NumericEquals\":{\"context.k\":0}}");
    authz_model_free(m);
}

static void test_denies_unknown_resource_ungranted_action_and_unknown_subject(void **state)
{
    (void)state;
    authz_model_t *m = company();
    authz_decision_t d = check(m, "alice", "collection:finance", "search");
    assert_false(d.authorized);
    assert_int_equal(d.reason, AUTHZ_NO_MATCHING_PERMISSION_FOUND);
    assert_string_equal(d.resource, "");
    d = check(m, "alice", "collection:hr-payroll", "delete");
    assert_int_equal(d.reason, AUTHZ_NO_MATCHING_PERMISSION_FOUND);
    d = check(m, "bob", "collection:hr-payroll", "search");
    assert_int_equal(d.reason, AUTHZ_NO_MATCHING_PERMISSION_FOUND);
    cdn_err_t e = {0};
    authz_request_t r = {
        .subject = "mallory", .resource = "collection:hr-payroll", .action = "search"};
    assert_int_equal(authz_is_authorized(m, &r, &d, &e), 0);
    assert_false(d.authorized);
    assert_int_equal(d.reason, AUTHZ_SUBJECT_NOT_FOUND);
    assert_non_null(strstr(e.msg, "mallory"));
    authz_model_free(m);
}

static void test_scoped_grant_holds_only_inside_its_scope(void **state)
{
    (void)state;
    authz_model_t *m = company();
    apply_ok(m, "{\"op\":\"grant\",\"to\":\"bob\",\"permission\":{\"resource\":\"doc:*\","
                "\"action\":\"write\"},\"scope\":{\"type\":\"tenant\",\"id\":\"acme\"}}");
    authz_request_t r = {.subject = "bob",
                         .resource = "doc:1",
                         .action = "write",
                         .scope_type = "tenant",
                         .scope_id = "acme"};
    authz_decision_t d;
    assert_int_equal(authz_is_authorized(m, &r, &d, NULL), 0);
    assert_int_equal(d.reason, AUTHZ_PERMISSION_GRANTED_NO_CONDITION);
    r.scope_id = "other";
    assert_int_equal(authz_is_authorized(m, &r, &d, NULL), 0);
    assert_int_equal(d.reason, AUTHZ_NO_MATCHING_PERMISSION_FOUND);
    r.scope_type = NULL;
    r.scope_id = NULL;
    assert_int_equal(authz_is_authorized(m, &r, &d, NULL), 0);
    assert_int_equal(d.reason, AUTHZ_NO_MATCHING_PERMISSION_FOUND);
    r.scope_type = "tenant"; /* a type without an id */
    cdn_err_t e = {0};
    assert_int_equal(authz_is_authorized(m, &r, &d, &e), 0);
    assert_false(d.authorized);
    assert_int_equal(d.reason, AUTHZ_INVALID_SCOPE);
    assert_string_equal(authz_reason_name(d.reason), "INVALID_SCOPE");
    r.scope_id = "a:b";
    assert_int_equal(authz_is_authorized(m, &r, &d, NULL), 0);
    assert_int_equal(d.reason, AUTHZ_INVALID_SCOPE);
    authz_model_free(m);
}

static void test_malformed_resource_is_invalid_request(void **state)
{
    (void)state;
    authz_model_t *m = company();
    const char *bad[] = {"collection", ":x", "collection:", ""};
    for (size_t i = 0; i < 4; i++) {
        authz_decision_t d = check(m, "alice", bad[i], "search");
        assert_false(d.authorized);
        assert_int_equal(d.reason, AUTHZ_INVALID_REQUEST);
    }
    authz_decision_t d = check(m, "alice", "collection:hr-x", "");
    assert_int_equal(d.reason, AUTHZ_INVALID_REQUEST);
    authz_model_free(m);
}

static void test_resource_patterns_exact_prefix_and_star(void **state)
{
    (void)state;
    authz_model_t *m = company();
    apply_ok(m, "{\"op\":\"grant\",\"to\":\"bot\",\"permission\":{\"resource\":\"*\","
                "\"action\":\"*\"}}");
    assert_true(check(m, "bot", "anything:at-all", "WhatEver").authorized);
    assert_true(check(m, "alice", "collection:hr-", "search").authorized);
    assert_false(check(m, "alice", "collection:hr", "search").authorized);
    assert_false(check(m, "alice", "collection:hr-payroll-2", "read").authorized);
    assert_true(check(m, "alice", "collection:hr-payroll", "READ").authorized);
    authz_model_free(m);
}

/* One operator case: condition on the left operand, with the given context/attrs. */
static bool cond_holds(const char *cond, const char *ctx)
{
    authz_model_t *m;
    assert_int_equal(authz_model_new(&m, NULL), 0);
    apply_ok(m, "{\"op\":\"put_subject\",\"id\":\"u\",\"attributes\":{\"dept\":\"hr\","
                "\"n\":3,\"tags\":[\"x\",\"y\"],\"on\":true,\"since\":\"2020-05-01\"}}");
    char op[1024];
    snprintf(op, sizeof(op),
             "{\"op\":\"grant\",\"to\":\"u\",\"permission\":{\"resource\":\"doc:1\","
             "\"action\":\"read\",\"condition\":%s}}",
             cond);
    apply_ok(m, op);
    json_t *c = json_loads(ctx, 0, NULL);
    json_t *ra = json_pack("{s:s}", "owner", "u");
    authz_request_t r = {.subject = "u",
                         .resource = "doc:1",
                         .action = "read",
                         .context = c,
                         .resource_attrs = ra,
                         .scope_type = "tenant",
                         .scope_id = "t1"};
    authz_decision_t d;
    assert_int_equal(authz_is_authorized(m, &r, &d, NULL), 0);
    assert_true(d.reason == AUTHZ_PERMISSION_GRANTED_CONDITION_MET ||
                d.reason == AUTHZ_PERMISSION_FOUND_CONDITION_NOT_MET);
    json_decref(c);
    json_decref(ra);
    authz_model_free(m);
    return d.authorized;
}

static void test_every_comparison_operator_decides_both_ways(void **state)
{
    (void)state;
    static const struct {
        const char *cond, *ctx;
        bool want;
    } cases[] = {
        {"{\"StringEquals\":{\"subject.attributes.dept\":\"hr\"}}", "{}", true},
        {"{\"StringEquals\":{\"subject.attributes.dept\":\"eng\"}}", "{}", false},
        {"{\"StringNotEquals\":{\"subject.attributes.dept\":\"eng\"}}", "{}", true},
        {"{\"StringNotEquals\":{\"subject.attributes.dept\":\"hr\"}}", "{}", false},
        {"{\"StringIn\":{\"context.ip\":[\"1.1.1.1\",\"2.2.2.2\"]}}", "{\"ip\":\"2.2.2.2\"}", true},
        {"{\"StringIn\":{\"context.ip\":[\"1.1.1.1\"]}}", "{\"ip\":\"2.2.2.2\"}", false},
        {"{\"StringNotIn\":{\"context.ip\":[\"1.1.1.1\"]}}", "{\"ip\":\"2.2.2.2\"}", true},
        {"{\"StringNotIn\":{\"context.ip\":[\"2.2.2.2\"]}}", "{\"ip\":\"2.2.2.2\"}", false},
        {"{\"Contains\":{\"subject.attributes.tags\":\"y\"}}", "{}", true},
        {"{\"Contains\":{\"subject.attributes.tags\":\"z\"}}", "{}", false},
        {"{\"Contains\":{\"context.path\":\"adm\"}}", "{\"path\":\"/admin/x\"}", true},
        {"{\"StartsWith\":{\"context.path\":\"/admin\"}}", "{\"path\":\"/admin/x\"}", true},
        {"{\"StartsWith\":{\"context.path\":\"/user\"}}", "{\"path\":\"/admin/x\"}", false},
        {"{\"EndsWith\":{\"context.path\":\"/x\"}}", "{\"path\":\"/admin/x\"}", true},
        {"{\"EndsWith\":{\"context.path\":\"/y\"}}", "{\"path\":\"/admin/x\"}", false},
        {"{\"NumericEquals\":{\"subject.attributes.n\":3}}", "{}", true},
        {"{\"NumericEquals\":{\"subject.attributes.n\":3.5}}", "{}", false},
        {"{\"NumericLessThan\":{\"subject.attributes.n\":4}}", "{}", true},
        {"{\"NumericLessThan\":{\"subject.attributes.n\":3}}", "{}", false},
        {"{\"NumericLessThanEquals\":{\"subject.attributes.n\":3}}", "{}", true},
        {"{\"NumericLessThanEquals\":{\"subject.attributes.n\":2}}", "{}", false},
        {"{\"NumericGreaterThan\":{\"subject.attributes.n\":2}}", "{}", true},
        {"{\"NumericGreaterThan\":{\"subject.attributes.n\":3}}", "{}", false},
        {"{\"NumericGreaterThanEquals\":{\"subject.attributes.n\":3}}", "{}", true},
        {"{\"NumericGreaterThanEquals\":{\"subject.attributes.n\":4}}", "{}", false},
        {"{\"Bool\":{\"subject.attributes.on\":true}}", "{}", true},
        {"{\"Bool\":{\"subject.attributes.on\":false}}", "{}", false},
        {"{\"DateBefore\":{\"subject.attributes.since\":\"2021-01-01T00:00:00Z\"}}", "{}", true},
        {"{\"DateBefore\":{\"subject.attributes.since\":\"2020-05-01T01:00:00+02:00\"}}", "{}",
         false},
        {"{\"DateAfter\":{\"context.now\":\"2020-01-01\"}}", "{\"now\":\"2026-11-30T10:00:00.5Z\"}",
         true},
        {"{\"DateAfter\":{\"context.now\":\"2027-01-01\"}}", "{\"now\":\"2026-11-30T10:00:00Z\"}",
         false},
        {"{\"StringEquals\":{\"resource.owner\":{\"path\":\"subject.id\"}}}", "{}", true},
        {"{\"StringEquals\":{\"resource.type\":\"doc\"}}", "{}", true},
        {"{\"StringEquals\":{\"resource.id\":\"2\"}}", "{}", false},
        {"{\"StringEquals\":{\"scope.id\":\"t1\"}}", "{}", true},
        {"{\"StringEquals\":{\"subject.kind\":\"user\"}}", "{}", true},
        {"{\"And\":[{\"Bool\":{\"subject.attributes.on\":true}},"
         "{\"StringEquals\":{\"context.a\":\"b\"}}]}",
         "{\"a\":\"b\"}", true},
        {"{\"And\":[{\"Bool\":{\"subject.attributes.on\":true}},"
         "{\"StringEquals\":{\"context.a\":\"c\"}}]}",
         "{\"a\":\"b\"}", false},
        {"{\"Or\":[{\"Bool\":{\"subject.attributes.on\":false}},"
         "{\"StringEquals\":{\"context.a\":\"b\"}}]}",
         "{\"a\":\"b\"}", true},
        {"{\"Not\":{\"StringEquals\":{\"context.a\":\"b\"}}}", "{\"a\":\"b\"}", false},
        {"{\"StringEquals\":{\"context.user.team\":\"x\"}}", "{\"user\":{\"team\":\"x\"}}", true},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
        if (cond_holds(cases[i].cond, cases[i].ctx) != cases[i].want)
            fail_msg("condition %s with context %s should be %s", cases[i].cond, cases[i].ctx,
                     cases[i].want ? "true" : "false");
}

/* Conditions read dates with the metadata filters' parser (base/date.h): the forms only
 * filters took before (no seconds, +HHMM zones, a year alone) decide at the same instant. */
static void test_condition_dates_take_the_forms_metadata_filters_take(void **state)
{
    (void)state;
    /* 2026-01-31T10:00+0200 is 08:00Z */
    assert_true(cond_holds("{\"DateBefore\":{\"context.now\":\"2026-01-31T10:00+0200\"}}",
                           "{\"now\":\"2026-01-31T07:59:59.999z\"}"));
    assert_false(cond_holds("{\"DateBefore\":{\"context.now\":\"2026-01-31T10:00+0200\"}}",
                            "{\"now\":\"2026-01-31T08:00:00Z\"}"));
    assert_true(cond_holds("{\"DateAfter\":{\"context.now\":\"2026\"}}",
                           "{\"now\":\"2026-01-01 00:00:01\"}"));
    /* a day its month does not have is no date, in a condition as in a filter */
    authz_model_t *m;
    cdn_err_t e = {0, ""};
    assert_int_equal(authz_model_new(&m, NULL), 0);
    apply_ok(m, "{\"op\":\"put_subject\",\"id\":\"u\"}");
    assert_int_equal(authz_apply(m,
                                 "{\"op\":\"grant\",\"to\":\"u\",\"permission\":{"
                                 "\"resource\":\"doc:1\",\"action\":\"read\",\"condition\":"
                                 "{\"DateBefore\":{\"context.now\":\"2023-02-29\"}}}}",
                                 &e),
                     CDN_ERR_INVALID);
    assert_non_null(strstr(e.msg, "DateBefore"));
    authz_model_free(m);
}

/* The public decision's reason field is AUTHZ_REASON_NAME_MAX bytes (static-asserted in
 * src/api): every reason code, and the one for an unknown value, must fit with its NUL. */
static void test_every_reason_name_fits_the_decision_field(void **state)
{
    (void)state;
    for (int r = 0; r <= AUTHZ_REASON_COUNT; r++)
        if (strlen(authz_reason_name((authz_reason_t)r)) >= AUTHZ_REASON_NAME_MAX)
            fail_msg("reason %d (%s) does not fit %d bytes", r,
                     authz_reason_name((authz_reason_t)r), AUTHZ_REASON_NAME_MAX);
}

static void test_missing_operand_is_false_even_for_not_equals(void **state)
{
    (void)state;
    assert_false(cond_holds("{\"StringNotEquals\":{\"context.ip\":\"1.1.1.1\"}}", "{}"));
    assert_false(cond_holds("{\"StringNotIn\":{\"context.ip\":[\"1.1.1.1\"]}}", "{}"));
    assert_false(cond_holds("{\"StringEquals\":{\"context.a\":{\"path\":\"context.b\"}}}", "{}"));
    assert_false(cond_holds("{\"StringEquals\":{\"context.a\":{\"path\":\"context.b\"}}}",
                            "{\"a\":null,\"b\":null}"));
    assert_false(cond_holds("{\"NumericLessThan\":{\"context.n\":5}}", "{\"n\":\"3\"}"));
}

static void test_view_holds_self_groups_transitively_and_roles(void **state)
{
    (void)state;
    authz_model_t *m = company();
    authz_view_t *v;
    assert_int_equal(authz_view(m, "alice", &v, NULL), 0);
    const char *want[] = {"group:hr", "group:people", "role:approver", "role:reader", "user:alice"};
    assert_int_equal(v->n, 5);
    for (size_t i = 0; i < 5; i++)
        assert_string_equal(v->principals[i], want[i]);
    assert_int_equal(v->revision, authz_model_revision(m));
    assert_true(authz_view_has(v, "group:people"));
    assert_false(authz_view_has(v, "group:eng"));
    authz_view_t *again;
    assert_int_equal(authz_view(m, "alice", &again, NULL), 0);
    assert_ptr_equal(again, v); /* cached at this revision */
    authz_view_release(again);
    authz_view_release(v);
    assert_int_equal(authz_view(m, "user:alice", &v, NULL), 0); /* principal names work too */
    assert_int_equal(v->n, 5);
    authz_view_release(v);
    assert_int_equal(authz_view(m, "service:alice", &v, NULL), CDN_ERR_NOT_FOUND);
    assert_int_equal(authz_view(m, "bot", &v, NULL), 0);
    assert_int_equal(v->n, 1);
    assert_string_equal(v->principals[0], "service:bot");
    authz_view_release(v);
    cdn_err_t e = {0};
    assert_int_equal(authz_view(m, "nobody", &v, &e), CDN_ERR_NOT_FOUND);
    assert_null(v);
    authz_model_free(m);
}

static void test_scoped_role_grant_appears_only_in_the_scoped_view(void **state)
{
    (void)state;
    authz_model_t *m = company();
    apply_ok(m, "{\"op\":\"put_role\",\"id\":\"tenant-admin\"}");
    apply_ok(m, "{\"op\":\"grant\",\"to\":\"bob\",\"role\":\"tenant-admin\",\"scope\":"
                "{\"type\":\"tenant\",\"id\":\"acme\"}}");
    authz_view_t *v;
    assert_int_equal(authz_view(m, "bob", &v, NULL), 0);
    assert_false(authz_view_has(v, "role:tenant-admin"));
    authz_view_release(v);
    assert_int_equal(authz_view_scoped(m, "bob", "tenant", "acme", &v, NULL), 0);
    assert_true(authz_view_has(v, "role:tenant-admin"));
    assert_true(authz_view_has(v, "group:eng"));
    authz_view_release(v);
    assert_int_equal(authz_view_scoped(m, "bob", "tenant", "other", &v, NULL), 0);
    assert_false(authz_view_has(v, "role:tenant-admin"));
    authz_view_release(v);
    assert_int_equal(authz_view_scoped(m, "bob", "tenant", NULL, &v, NULL), CDN_ERR_INVALID);
    authz_model_free(m);
}

static void test_view_follows_nested_membership_changes(void **state)
{
    (void)state;
    authz_model_t *m = company();
    apply_ok(m, "{\"op\":\"put_group\",\"id\":\"org\"}");
    apply_ok(m, "{\"op\":\"add_member\",\"group\":\"org\",\"member\":\"people\","
                "\"member_kind\":\"group\"}");
    authz_view_t *v;
    assert_int_equal(authz_view(m, "alice", &v, NULL), 0);
    assert_true(authz_view_has(v, "group:org"));
    authz_view_release(v);
    apply_ok(m, "{\"op\":\"remove_member\",\"group\":\"people\",\"member\":\"hr\","
                "\"member_kind\":\"group\"}");
    assert_int_equal(authz_view(m, "alice", &v, NULL), 0);
    assert_false(authz_view_has(v, "group:org"));
    assert_false(authz_view_has(v, "group:people"));
    assert_false(authz_view_has(v, "role:reader"));
    assert_true(authz_view_has(v, "group:hr"));
    authz_view_release(v);
    assert_false(check(m, "alice", "collection:hr-payroll", "search").authorized);
    apply_ok(m, "{\"op\":\"delete_group\",\"id\":\"hr\"}");
    assert_int_equal(authz_view(m, "alice", &v, NULL), 0);
    assert_int_equal(v->n, 2); /* role:approver, user:alice */
    authz_view_release(v);
    authz_model_free(m);
}

static void test_group_cycle_is_refused_naming_it_and_changes_nothing(void **state)
{
    (void)state;
    authz_model_t *m = company();
    apply_ok(m, "{\"op\":\"put_group\",\"id\":\"org\"}");
    apply_ok(m, "{\"op\":\"add_member\",\"group\":\"org\",\"member\":\"people\","
                "\"member_kind\":\"group\"}");
    char *before = export_text(m);
    uint64_t rev = authz_model_revision(m);
    cdn_err_t e = {0};
    assert_int_equal(authz_apply(m,
                                 "{\"op\":\"add_member\",\"group\":\"hr\",\"member\":\"org\","
                                 "\"member_kind\":\"group\"}",
                                 &e),
                     CDN_ERR_CONFLICT);
    assert_non_null(strstr(e.msg, "hr contains org contains people contains hr"));
    assert_int_equal(authz_apply(m,
                                 "{\"op\":\"add_member\",\"group\":\"hr\",\"member\":\"hr\","
                                 "\"member_kind\":\"group\"}",
                                 &e),
                     CDN_ERR_CONFLICT);
    char *after = export_text(m);
    assert_string_equal(before, after);
    assert_int_equal(authz_model_revision(m), rev);
    cdn_free(before);
    cdn_free(after);
    authz_model_free(m);
}

static void test_bad_ops_give_clear_errors_and_change_nothing(void **state)
{
    (void)state;
    static const struct {
        const char *op, *needle;
        int code;
    } bad[] = {
        {"not json", "not valid JSON", CDN_ERR_INVALID},
        {"[1]", "JSON object", CDN_ERR_INVALID},
        {"{\"op\":\"explode\"}", "unknown", CDN_ERR_INVALID},
        {"{\"op\":\"put_subject\"}", "'id' is missing", CDN_ERR_INVALID},
        {"{\"op\":\"put_subject\",\"id\":\"a b\"}", "space", CDN_ERR_INVALID},
        {"{\"op\":\"put_subject\",\"id\":\"x\",\"kind\":\"robot\"}", "robot", CDN_ERR_INVALID},
        {"{\"op\":\"put_subject\",\"id\":\"x\",\"colour\":1}", "colour", CDN_ERR_INVALID},
        {"{\"op\":\"add_member\",\"group\":\"hr\",\"member\":\"ghost\"}", "ghost",
         CDN_ERR_NOT_FOUND},
        {"{\"op\":\"add_member\",\"group\":\"hr\",\"member\":\"alice\",\"member_kind\":\"x\"}",
         "member_kind", CDN_ERR_INVALID},
        {"{\"op\":\"remove_member\",\"group\":\"eng\",\"member\":\"alice\"}", "not a direct",
         CDN_ERR_NOT_FOUND},
        {"{\"op\":\"grant\",\"to\":\"alice\",\"role\":\"nope\"}", "nope", CDN_ERR_NOT_FOUND},
        {"{\"op\":\"grant\",\"to\":\"alice\"}", "exactly one", CDN_ERR_INVALID},
        {"{\"op\":\"revoke\",\"to\":\"bob\",\"role\":\"reader\"}", "no such grant",
         CDN_ERR_NOT_FOUND},
        {"{\"op\":\"put_role\",\"id\":\"r\",\"permissions\":[{\"resource\":\"a:b\",\"action\":"
         "\"read\",\"condition\":{\"StringEqualz\":{\"context.a\":\"b\"}}}]}",
         "unknown operator 'StringEqualz'", CDN_ERR_INVALID},
        {"{\"op\":\"put_role\",\"id\":\"r\",\"permissions\":[{\"resource\":\"a:b\",\"action\":"
         "\"read\",\"condition\":{\"And\":{}}}]}",
         "And", CDN_ERR_INVALID},
        {"{\"op\":\"put_role\",\"id\":\"r\",\"permissions\":[{\"resource\":\"a:b\",\"action\":"
         "\"read\",\"condition\":{\"NumericLessThan\":{\"context.a\":\"b\"}}}]}",
         "number", CDN_ERR_INVALID},
        {"{\"op\":\"put_role\",\"id\":\"r\",\"permissions\":[{\"resource\":\"a:b\",\"action\":"
         "\"read\",\"condition\":{\"StringEquals\":{\"ctx.a\":\"b\"}}}]}",
         "ctx.a", CDN_ERR_INVALID},
        {"{\"op\":\"put_role\",\"id\":\"r\",\"permissions\":[{\"resource\":\"a*b\",\"action\":"
         "\"read\"}]}",
         "a*b", CDN_ERR_INVALID},
        {"{\"op\":\"put_role\",\"id\":\"reader\",\"permissions\":[{\"resource\":\"a:b\"}]}",
         "action", CDN_ERR_INVALID},
        {"{\"op\":\"delete_role\",\"id\":\"ghost\"}", "ghost", CDN_ERR_NOT_FOUND},
        {"{\"op\":\"delete_subject\",\"id\":\"ghost\"}", "ghost", CDN_ERR_NOT_FOUND},
    };
    authz_model_t *m = company();
    char *before = export_text(m);
    uint64_t rev = authz_model_revision(m);
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        cdn_err_t e = {0};
        int rc = authz_apply(m, bad[i].op, &e);
        if (rc != bad[i].code || !strstr(e.msg, bad[i].needle))
            fail_msg("op %s gave %d '%s'; want %d containing '%s'", bad[i].op, rc, e.msg,
                     bad[i].code, bad[i].needle);
        char *after = export_text(m);
        assert_string_equal(before, after);
        cdn_free(after);
    }
    assert_int_equal(authz_model_revision(m), rev);
    assert_true(check(m, "alice", "collection:hr-payroll", "search").authorized);
    cdn_free(before);
    authz_model_free(m);
}

static void test_export_import_round_trips_and_decides_the_same(void **state)
{
    (void)state;
    authz_model_t *m = company();
    apply_ok(m, "{\"op\":\"grant\",\"to\":\"eng\",\"to_kind\":\"group\",\"permission\":"
                "{\"resource\":\"doc:*\",\"action\":\"write\",\"condition\":{\"Or\":["
                "{\"StringIn\":{\"context.ip\":[\"a\",\"b\"]}},{\"Not\":{\"Bool\":"
                "{\"context.x\":true}}}]}},\"scope\":{\"type\":\"tenant\",\"id\":\"t\"}}");
    char *text = export_text(m);
    authz_model_t *m2;
    assert_int_equal(authz_model_new(&m2, NULL), 0);
    cdn_err_t e = {0};
    if (authz_import(m2, text, &e))
        fail_msg("import: %s", e.msg);
    char *text2 = export_text(m2);
    assert_string_equal(text, text2);
    assert_int_equal(authz_model_revision(m2), 1);
    authz_decision_t a = check_ctx(m, "alice", "invoice:1", "approve", "{\"amount\":3}");
    authz_decision_t b = check_ctx(m2, "alice", "invoice:1", "approve", "{\"amount\":3}");
    assert_int_equal(a.reason, b.reason);
    assert_string_equal(a.condition, b.condition);
    cdn_free(text);
    cdn_free(text2);
    authz_model_free(m);
    authz_model_free(m2);
}

/* Tenants, group attributes and denies survive export and import byte for byte; a put_group
 * without attributes keeps them, one with {} clears them. */
static void test_tenants_group_attributes_and_denies_round_trip(void **state)
{
    (void)state;
    authz_model_t *m = company();
    apply_ok(m, "{\"op\":\"put_subject\",\"id\":\"carol\",\"tenants\":[\"globex\",\"acme\","
                "\"acme\"]}");
    apply_ok(m, "{\"op\":\"put_group\",\"id\":\"eng\",\"attributes\":{\"scim\":"
                "{\"displayName\":\"Engineering Team\"}}}");
    apply_ok(m, "{\"op\":\"put_group\",\"id\":\"eng\"}"); /* keeps the attributes */
    apply_ok(m, "{\"op\":\"put_role\",\"id\":\"no-secret\",\"permissions\":[{\"resource\":"
                "\"label:secret\",\"action\":\"read\",\"effect\":\"deny\"}]}");
    apply_ok(m, "{\"op\":\"grant\",\"to\":\"alice\",\"permission\":{\"resource\":"
                "\"collection:hr-payroll\",\"action\":\"search\",\"effect\":\"deny\"}}");
    char *text = export_text(m);
    json_t *doc = json_loads(text, 0, NULL), *sub;
    size_t i;
    json_array_foreach(json_object_get(doc, "subjects"), i, sub)
    {
        if (strcmp(json_string_value(json_object_get(sub, "id")), "carol"))
            continue;
        json_t *want = json_pack("[s, s]", "acme", "globex"); /* sorted, unique */
        assert_true(json_equal(json_object_get(sub, "tenants"), want));
        json_decref(want);
    }
    json_decref(doc);
    assert_non_null(strstr(text, "\"Engineering Team\""));
    assert_non_null(strstr(text, "\"deny\""));
    authz_model_t *m2;
    assert_int_equal(authz_model_new(&m2, NULL), 0);
    cdn_err_t e = {0};
    if (authz_import(m2, text, &e))
        fail_msg("import: %s", e.msg);
    char *text2 = export_text(m2);
    assert_string_equal(text, text2);
    authz_decision_t d = check_ctx(m2, "alice", "collection:hr-payroll", "search", NULL);
    assert_false(d.authorized);
    assert_int_equal(d.reason, AUTHZ_PERMISSION_DENIED_EXPLICITLY);
    assert_string_equal(d.granted_to, "user:alice");
    d = check_ctx(m2, "alice", "collection:hr-payroll", "read", NULL); /* search only */
    assert_true(d.authorized);
    /* list_actions leaves the denied action out */
    authz_request_t r = {.subject = "alice", .resource = "collection:hr-payroll"};
    char **acts;
    size_t n;
    assert_int_equal(authz_list_actions(m2, &r, &acts, &n, NULL), 0);
    assert_int_equal(n, 1);
    assert_string_equal(acts[0], "read");
    authz_actions_free(acts, n);
    apply_ok(m2, "{\"op\":\"put_group\",\"id\":\"eng\",\"attributes\":{}}");
    char *text3 = export_text(m2);
    assert_null(strstr(text3, "Engineering Team"));
    cdn_free(text);
    cdn_free(text2);
    cdn_free(text3);
    authz_model_free(m);
    authz_model_free(m2);
}

static void test_bad_import_leaves_model_unchanged(void **state)
{
    (void)state;
    authz_model_t *m = company();
    char *before = export_text(m);
    const char *docs[] = {
        "{",
        "{\"subjects\":{}}",
        "{\"extra\":1}",
        "{\"version\":2}",
        "{\"subjects\":[{\"id\":\"z\"}],\"grants\":[{\"to\":\"q\",\"role\":\"r\"}]}",
        "{\"groups\":[{\"id\":\"a\",\"memberz\":[]}]}",
        ("{\"groups\":[{\"id\":\"a\",\"members\":[{\"id\":\"b\",\"kind\":\"group\"}]},"
         "{\"id\":\"b\",\"members\":[{\"id\":\"a\",\"kind\":\"group\"}]}]}"),
    };
    for (size_t i = 0; i < sizeof(docs) / sizeof(docs[0]); i++) {
        cdn_err_t e = {0};
        assert_int_not_equal(authz_import(m, docs[i], &e), 0);
        assert_true(strlen(e.msg) > 0);
    }
    char *after = export_text(m);
    assert_string_equal(before, after);
    cdn_free(before);
    cdn_free(after);
    authz_model_free(m);
}

static void test_explain_names_the_deciding_principal(void **state)
{
    (void)state;
    authz_model_t *m = company();
    authz_explanation_t x;
    const char *allowed[] = {"user:bob", "people"};
    const char *denied[] = {"role:approver"};
    assert_int_equal(authz_explain(m, "alice", allowed, 2, NULL, 0, &x, NULL), 0);
    assert_true(x.readable);
    assert_int_equal(x.kind, AUTHZ_EXPLAIN_ALLOWED);
    assert_string_equal(x.principal, "group:people");
    assert_int_equal(authz_explain(m, "alice", allowed, 2, denied, 1, &x, NULL), 0);
    assert_false(x.readable);
    assert_int_equal(x.kind, AUTHZ_EXPLAIN_DENIED);
    assert_string_equal(x.principal, "role:approver");
    assert_int_equal(authz_explain(m, "bob", allowed + 1, 1, NULL, 0, &x, NULL), 0);
    assert_int_equal(x.kind, AUTHZ_EXPLAIN_NO_MATCH);
    assert_int_equal(authz_explain(m, "alice", NULL, 0, NULL, 0, &x, NULL), 0);
    assert_int_equal(x.kind, AUTHZ_EXPLAIN_NO_ACL);
    assert_false(x.readable);
    assert_int_equal(authz_explain(m, "ghost", allowed, 2, NULL, 0, &x, NULL), 0);
    assert_int_equal(x.kind, AUTHZ_EXPLAIN_SUBJECT_NOT_FOUND);
    const char *bad[] = {"team:x"};
    cdn_err_t e = {0};
    assert_int_equal(authz_explain(m, "alice", bad, 1, NULL, 0, &x, &e), CDN_ERR_INVALID);
    /* A misspelt kind in the denied list is refused too, not read as "denies nobody". */
    const char *typo[] = {"usr:alice"};
    assert_int_equal(authz_explain(m, "alice", allowed, 2, typo, 1, &x, &e), CDN_ERR_INVALID);
    assert_non_null(strstr(e.msg, "usr:alice"));
    authz_model_free(m);
}

static void test_batch_and_list_actions(void **state)
{
    (void)state;
    authz_model_t *m = company();
    const char *res[] = {"collection:hr-payroll", "collection:finance", "bad"};
    authz_decision_t d[3];
    authz_request_t r = {.subject = "alice", .action = "read"};
    assert_int_equal(authz_is_authorized_batch(m, &r, res, 3, d, NULL), 0);
    assert_true(d[0].authorized);
    assert_int_equal(d[1].reason, AUTHZ_NO_MATCHING_PERMISSION_FOUND);
    assert_int_equal(d[2].reason, AUTHZ_INVALID_REQUEST);
    char **acts;
    size_t n;
    r.resource = "collection:hr-payroll";
    assert_int_equal(authz_list_actions(m, &r, &acts, &n, NULL), 0);
    assert_int_equal(n, 2);
    assert_string_equal(acts[0], "read");
    assert_string_equal(acts[1], "search");
    authz_actions_free(acts, n);
    json_t *ctx = json_pack("{s:i}", "amount", 10);
    r.resource = "invoice:9";
    r.context = ctx;
    assert_int_equal(authz_list_actions(m, &r, &acts, &n, NULL), 0);
    assert_int_equal(n, 1);
    assert_string_equal(acts[0], "approve");
    authz_actions_free(acts, n);
    json_object_set_new(ctx, "amount", json_integer(5000));
    assert_int_equal(authz_list_actions(m, &r, &acts, &n, NULL), 0);
    assert_int_equal(n, 0);
    authz_actions_free(acts, n);
    json_decref(ctx);
    r.subject = "ghost";
    assert_int_equal(authz_list_actions(m, &r, &acts, &n, NULL), CDN_ERR_NOT_FOUND);
    authz_model_free(m);
}

static void test_cached_decision_is_dropped_by_revocation(void **state)
{
    (void)state;
    authz_model_t *m = company();
    authz_decision_t d = check(m, "alice", "collection:hr-payroll", "read");
    assert_true(d.authorized);
    assert_false(d.cached);
    d = check(m, "alice", "collection:hr-payroll", "read");
    assert_true(d.authorized);
    assert_true(d.cached);
    assert_string_equal(d.role, "reader"); /* a hit carries the matched permission too */
    apply_ok(m, "{\"op\":\"revoke\",\"to\":\"people\",\"to_kind\":\"group\",\"role\":\"reader\"}");
    d = check(m, "alice", "collection:hr-payroll", "read");
    assert_false(d.authorized);
    assert_false(d.cached);
    authz_model_free(m);
}

static void test_deletes_cascade_to_grants_and_memberships(void **state)
{
    (void)state;
    authz_model_t *m = company();
    apply_ok(m, "{\"op\":\"delete_role\",\"id\":\"reader\"}");
    assert_false(check(m, "alice", "collection:hr-payroll", "read").authorized);
    char *t = export_text(m);
    assert_null(strstr(t, "reader"));
    cdn_free(t);
    apply_ok(m, "{\"op\":\"delete_subject\",\"id\":\"alice\"}");
    assert_int_equal(check(m, "alice", "invoice:1", "approve").reason, AUTHZ_SUBJECT_NOT_FOUND);
    t = export_text(m);
    assert_null(strstr(t, "alice"));
    cdn_free(t);
    apply_ok(m, "{\"op\":\"put_subject\",\"id\":\"alice\"}"); /* a new alice starts empty */
    authz_view_t *v;
    assert_int_equal(authz_view(m, "alice", &v, NULL), 0);
    assert_int_equal(v->n, 1);
    authz_view_release(v);
    authz_model_free(m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_role_via_nested_group_grants_without_condition),
        cmocka_unit_test(test_condition_met_and_not_met_give_their_reasons),
        cmocka_unit_test(test_unconditional_grant_wins_over_conditional_one),
        cmocka_unit_test(test_condition_met_found_past_many_unmet_conditional_grants),
        cmocka_unit_test(test_denies_unknown_resource_ungranted_action_and_unknown_subject),
        cmocka_unit_test(test_scoped_grant_holds_only_inside_its_scope),
        cmocka_unit_test(test_malformed_resource_is_invalid_request),
        cmocka_unit_test(test_resource_patterns_exact_prefix_and_star),
        cmocka_unit_test(test_every_comparison_operator_decides_both_ways),
        cmocka_unit_test(test_missing_operand_is_false_even_for_not_equals),
        cmocka_unit_test(test_view_holds_self_groups_transitively_and_roles),
        cmocka_unit_test(test_scoped_role_grant_appears_only_in_the_scoped_view),
        cmocka_unit_test(test_view_follows_nested_membership_changes),
        cmocka_unit_test(test_group_cycle_is_refused_naming_it_and_changes_nothing),
        cmocka_unit_test(test_bad_ops_give_clear_errors_and_change_nothing),
        cmocka_unit_test(test_export_import_round_trips_and_decides_the_same),
        cmocka_unit_test(test_tenants_group_attributes_and_denies_round_trip),
        cmocka_unit_test(test_bad_import_leaves_model_unchanged),
        cmocka_unit_test(test_explain_names_the_deciding_principal),
        cmocka_unit_test(test_batch_and_list_actions),
        cmocka_unit_test(test_cached_decision_is_dropped_by_revocation),
        cmocka_unit_test(test_deletes_cascade_to_grants_and_memberships),
        cmocka_unit_test(test_condition_dates_take_the_forms_metadata_filters_take),
        cmocka_unit_test(test_every_reason_name_fits_the_decision_field),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
