/* test_pdp.c: outside authorizers without a service. Cerbos plans become filters that admit a
 * chunk only where the plan is true (a comparison of a missing attribute is neither true nor
 * false, so `not` never opens a chunk for lacking one), constants fold, what cannot be
 * expressed is refused; OPA-shaped answers of every form are read; a bad configuration is
 * refused naming the entry; and through the public API a collection whose authorizer does not
 * answer reads nothing (CORDON_ERR_UNAVAILABLE) while the model still hides it from those it
 * keeps out. Relies on cmocka, authz/pdp.h and the public API. */
// clang-format off
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
// clang-format on

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "authz/authz.h"
#include "authz/pdp.h"
#include "base/mem.h"
#include "cordon.h"
#include "testutil.h"

/* A plan whose condition is cond (a JSON operand). */
static int plan(const char *cond, pdp_kind_t *kind, char **filter)
{
    char buf[4096];
    cdn_err_t err = {0, ""};
    snprintf(buf, sizeof buf, "{\"filter\":{\"kind\":\"KIND_CONDITIONAL\",\"condition\":%s}}",
             cond);
    return pdp_plan_filter(buf, strlen(buf), kind, filter, &err);
}

#define VAR(x) "{\"variable\":\"request.resource.attr." x "\"}"
#define EXPR(op, a, b) "{\"expression\":{\"operator\":\"" op "\",\"operands\":[" a "," b "]}}"
#define NOT(a) "{\"expression\":{\"operator\":\"not\",\"operands\":[" a "]}}"

/* The filter of cond, compared as JSON with want. */
static void expect(const char *cond, const char *want)
{
    pdp_kind_t kind;
    char *f = NULL;
    assert_int_equal(plan(cond, &kind, &f), 0);
    assert_int_equal(kind, PDP_FILTER);
    json_t *a = json_loads(f, 0, NULL), *b = json_loads(want, 0, NULL);
    assert_non_null(b);
    if (!json_equal(a, b))
        fail_msg("filter %s, wanted %s", f, want);
    json_decref(a);
    json_decref(b);
    cdn_free(f);
}

static void test_comparisons(void **state)
{
    (void)state;
    expect(EXPR("eq", VAR("dept"), "{\"value\":\"eng\"}"), "{\"term\":{\"dept\":\"eng\"}}");
    expect(EXPR("eq", "{\"value\":3}", VAR("n")), "{\"term\":{\"n\":3}}");
    /* ne is true only where the attribute is there and differs */
    expect(EXPR("ne", VAR("dept"), "{\"value\":\"eng\"}"),
           "{\"bool\":{\"filter\":[{\"exists\":{\"field\":\"dept\"}}],"
           "\"must_not\":[{\"term\":{\"dept\":\"eng\"}}]}}");
    expect(EXPR("lt", VAR("level"), "{\"value\":3}"), "{\"range\":{\"level\":{\"lt\":3}}}");
    expect(EXPR("le", VAR("level"), "{\"value\":3}"), "{\"range\":{\"level\":{\"lte\":3}}}");
    expect(EXPR("gt", VAR("level"), "{\"value\":3}"), "{\"range\":{\"level\":{\"gt\":3}}}");
    expect(EXPR("ge", VAR("level"), "{\"value\":3}"), "{\"range\":{\"level\":{\"gte\":3}}}");
    /* 3 < level is level > 3 */
    expect(EXPR("lt", "{\"value\":3}", VAR("level")), "{\"range\":{\"level\":{\"gt\":3}}}");
    expect(EXPR("ge", "{\"value\":3}", VAR("level")), "{\"range\":{\"level\":{\"lte\":3}}}");
    expect(EXPR("in", "{\"value\":\"public\"}", VAR("tags")), "{\"term\":{\"tags\":\"public\"}}");
    expect(EXPR("in", VAR("dept"), "{\"value\":[\"a\",\"b\"]}"),
           "{\"terms\":{\"dept\":[\"a\",\"b\"]}}");
    expect(EXPR("hasIntersection", VAR("teams"), "{\"value\":[\"red\"]}"),
           "{\"terms\":{\"teams\":[\"red\"]}}");
    expect(EXPR("eq", "{\"variable\":\"request.resource.id\"}", "{\"value\":\"d7\"}"),
           "{\"ids\":{\"values\":[\"d7\"]}}");
    expect(EXPR("eq", "{\"variable\":\"R.attr.dept\"}", "{\"value\":\"x\"}"),
           "{\"term\":{\"dept\":\"x\"}}");
}

static void test_logic_is_three_valued(void **state)
{
    (void)state;
    /* not(secret == true): where secret is there and is not true, never where it is missing */
    expect(NOT(EXPR("eq", VAR("secret"), "{\"value\":true}")),
           "{\"bool\":{\"filter\":[{\"exists\":{\"field\":\"secret\"}}],"
           "\"must_not\":[{\"term\":{\"secret\":true}}]}}");
    /* not(not(x)) is x */
    expect(NOT(NOT(EXPR("eq", VAR("a"), "{\"value\":1}"))), "{\"term\":{\"a\":1}}");
    /* not(a and b) is (not a) or (not b), each known */
    expect(NOT("{\"expression\":{\"operator\":\"and\",\"operands\":[" EXPR(
               "eq", VAR("a"), "{\"value\":1}") "," EXPR("eq", VAR("b"), "{\"value\":2}") "]}}"),
           "{\"bool\":{\"should\":["
           "{\"bool\":{\"filter\":[{\"exists\":{\"field\":\"a\"}}],\"must_not\":[{\"term\":{"
           "\"a\":1}}]}},"
           "{\"bool\":{\"filter\":[{\"exists\":{\"field\":\"b\"}}],\"must_not\":[{\"term\":{"
           "\"b\":2}}]}}],\"minimum_should_match\":1}}");
    expect("{\"expression\":{\"operator\":\"or\",\"operands\":[" EXPR(
               "eq", VAR("a"), "{\"value\":1}") "," EXPR("eq", VAR("b"), "{\"value\":2}") "]}}",
           "{\"bool\":{\"should\":[{\"term\":{\"a\":1}},{\"term\":{\"b\":2}}],"
           "\"minimum_should_match\":1}}");
}

static void test_constants_fold(void **state)
{
    (void)state;
    pdp_kind_t kind;
    char *f = NULL;
    /* x or true: every chunk; x and false: none; and(true, x): x */
    assert_int_equal(plan("{\"expression\":{\"operator\":\"or\",\"operands\":[" EXPR(
                              "eq", VAR("a"), "{\"value\":1}") ",{\"value\":true}]}}",
                          &kind, &f),
                     0);
    assert_int_equal(kind, PDP_ALL);
    assert_null(f);
    assert_int_equal(plan("{\"expression\":{\"operator\":\"and\",\"operands\":[" EXPR(
                              "eq", VAR("a"), "{\"value\":1}") ",{\"value\":false}]}}",
                          &kind, &f),
                     0);
    assert_int_equal(kind, PDP_NONE);
    expect("{\"expression\":{\"operator\":\"and\",\"operands\":[{\"value\":true}," EXPR(
               "eq", VAR("a"), "{\"value\":1}") "]}}",
           "{\"term\":{\"a\":1}}");
    /* nothing is in an empty list, and not(that) is where the attribute is there */
    expect(NOT(EXPR("in", VAR("a"), "{\"value\":[]}")), "{\"exists\":{\"field\":\"a\"}}");
    const char *kinds[] = {"KIND_ALWAYS_ALLOWED", "KIND_ALWAYS_DENIED"};
    for (int i = 0; i < 2; i++) {
        char buf[128];
        cdn_err_t err;
        snprintf(buf, sizeof buf, "{\"filter\":{\"kind\":\"%s\"}}", kinds[i]);
        assert_int_equal(pdp_plan_filter(buf, strlen(buf), &kind, &f, &err), 0);
        assert_int_equal(kind, i ? PDP_NONE : PDP_ALL);
    }
}

static void test_what_cannot_be_expressed_is_refused(void **state)
{
    (void)state;
    const char *bad[] = {
        EXPR("matches", VAR("a"), "{\"value\":\"x.*\"}"),                       /* an operator */
        EXPR("eq", "{\"variable\":\"request.principal.id\"}", "{\"value\":1}"), /* not R */
        EXPR("eq", VAR("a.b"), "{\"value\":1}"),                                /* nested */
        EXPR("eq", VAR("a"), VAR("b")),                                         /* two attrs */
        EXPR("eq", VAR("a"), "{\"value\":[1]}"),                                /* a list */
        EXPR("lt", VAR("a"), "{\"value\":true}"),                               /* no order */
        "{\"variable\":\"request.resource.attr.a\"}",                           /* bare */
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        pdp_kind_t kind;
        char *f = NULL;
        assert_int_equal(plan(bad[i], &kind, &f), CDN_ERR_UNSUPPORTED);
        assert_null(f);
    }
    /* deeper than the bound */
    char deep[8192] = "";
    for (int i = 0; i < PDP_FILTER_DEPTH + 2; i++)
        strcat(deep, "{\"expression\":{\"operator\":\"not\",\"operands\":[");
    strcat(deep, EXPR("eq", VAR("a"), "{\"value\":1}"));
    for (int i = 0; i < PDP_FILTER_DEPTH + 2; i++)
        strcat(deep, "]}}");
    pdp_kind_t kind;
    char *f = NULL;
    assert_int_equal(plan(deep, &kind, &f), CDN_ERR_UNSUPPORTED);
    cdn_err_t err;
    assert_int_equal(pdp_plan_filter("{}", 2, &kind, &f, &err), CDN_ERR_UNAVAILABLE);
    assert_int_equal(pdp_plan_filter("nope", 4, &kind, &f, &err), CDN_ERR_UNAVAILABLE);
}

static void test_opa_answers(void **state)
{
    (void)state;
    static const struct {
        const char *answer;
        int rc;
        pdp_kind_t kind;
    } cases[] = {
        {"{\"result\":true}", 0, PDP_ALL},
        {"{\"result\":false}", 0, PDP_NONE},
        {"{}", 0, PDP_NONE}, /* undefined: nothing allowed it */
        {"{\"result\":{\"allow\":true}}", 0, PDP_ALL},
        {"{\"result\":{\"allow\":false,\"filter\":{\"term\":{\"a\":1}}}}", 0, PDP_NONE},
        {"{\"result\":{\"allow\":true,\"filter\":{\"term\":{\"a\":1}}}}", 0, PDP_FILTER},
        {"{\"result\":{\"allow\":\"yes\"}}", CDN_ERR_UNAVAILABLE, 0},
        {"{\"result\":{\"allow\":true,\"filter\":[1]}}", CDN_ERR_UNAVAILABLE, 0},
        {"{\"result\":1}", CDN_ERR_UNAVAILABLE, 0},
        {"[true]", CDN_ERR_UNAVAILABLE, 0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        pdp_kind_t kind = 0;
        char *f = NULL;
        cdn_err_t err = {0, ""};
        int rc = pdp_opa_answer(cases[i].answer, strlen(cases[i].answer), &kind, &f, &err);
        assert_int_equal(rc, cases[i].rc);
        if (!rc)
            assert_int_equal(kind, cases[i].kind);
        assert_true((f != NULL) == (!rc && kind == PDP_FILTER));
        cdn_free(f);
    }
}

static void test_configuration(void **state)
{
    (void)state;
    static const struct {
        const char *json;
        const char *says;
    } bad[] = {
        {"{}", "array"},
        {"[1]", "authorizers[0]: expected an object"},
        {"[{\"name\":\"A\",\"kind\":\"opa\",\"url\":\"http://h\",\"path\":\"p\"}]", "name"},
        {"[{\"name\":\"a\",\"kind\":\"xacml\",\"url\":\"http://h\"}]", "kind"},
        {"[{\"name\":\"a\",\"kind\":\"cerbos\",\"url\":\"file:///etc\"}]", "url"},
        {"[{\"name\":\"a\",\"kind\":\"opa\",\"url\":\"http://h\"}]", "path"},
        {"[{\"name\":\"a\",\"kind\":\"cerbos\",\"url\":\"http://h\",\"path\":\"p\"}]", "path"},
        {"[{\"name\":\"a\",\"kind\":\"cerbos\",\"url\":\"http://h\",\"timeout_ms\":0}]",
         "timeout_ms"},
        {"[{\"name\":\"a\",\"kind\":\"cerbos\",\"url\":\"http://h\",\"ttl_ms\":-1}]", "ttl_ms"},
        {"[{\"name\":\"a\",\"kind\":\"cerbos\",\"url\":\"http://h\",\"colour\":1}]", "colour"},
        {"[{\"name\":\"a\",\"kind\":\"cerbos\",\"url\":\"http://h\"},"
         "{\"name\":\"a\",\"kind\":\"cerbos\",\"url\":\"http://h\"}]",
         "authorizers[1]: a second"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        pdp_t *p = (pdp_t *)1;
        cdn_err_t err = {0, ""};
        assert_int_equal(pdp_open(bad[i].json, &p, &err), CDN_ERR_INVALID);
        assert_null(p);
        if (!strstr(err.msg, bad[i].says))
            fail_msg("%s: said \"%s\", not \"%s\"", bad[i].json, err.msg, bad[i].says);
    }
    pdp_t *p;
    assert_int_equal(pdp_open("[{\"name\":\"c\",\"kind\":\"cerbos\",\"url\":\"http://h/\"},"
                              "{\"name\":\"o\",\"kind\":\"opa\",\"url\":\"http://h\",\"path\":"
                              "\"a/b\",\"ttl_ms\":0}]",
                              &p, NULL),
                     0);
    assert_int_equal(pdp_count(p), 2);
    assert_true(pdp_has(p, "c") && pdp_has(p, "o") && !pdp_has(p, "x"));
    pdp_stats_t st;
    pdp_stats_get(p, 1, &st);
    assert_string_equal(st.name, "o");
    assert_string_equal(st.kind, "opa");
    pdp_close(p);
    assert_int_equal(pdp_open(NULL, &p, NULL), 0);
    assert_int_equal(pdp_count(p), 0);
    pdp_close(p);
}

static authz_reason_t decide(authz_model_t *m, const char *subject, const char *resource,
                             const char *action, authz_decision_t *d)
{
    authz_request_t r = {.subject = subject, .resource = resource, .action = action};
    json_t *ctx = json_pack("{s:i}", "hour", 10);
    r.context = ctx;
    r.cache = AUTHZ_CACHE_BYPASS;
    assert_int_equal(authz_is_authorized(m, &r, d, NULL), 0);
    json_decref(ctx);
    return d->reason;
}

/* In the model: a delegated allow hands the question on only when nothing else decides. */
static void test_delegated_permissions_in_the_model(void **state)
{
    (void)state;
    authz_model_t *m;
    authz_decision_t d;
    cdn_err_t err = {0, ""};
    assert_int_equal(authz_model_new(&m, NULL), 0);
    const char *ops[] = {
        "{\"op\":\"put_subject\",\"id\":\"alice\"}",
        "{\"op\":\"put_subject\",\"id\":\"bob\"}",
        "{\"op\":\"put_role\",\"id\":\"approver\",\"permissions\":["
        "{\"resource\":\"invoice:*\",\"action\":\"approve\",\"authorizer\":\"opa\"},"
        "{\"resource\":\"report:*\",\"action\":\"read\",\"authorizer\":\"opa\","
        "\"condition\":{\"NumericLessThan\":{\"context.hour\":9}}}]}",
        "{\"op\":\"grant\",\"to\":\"alice\",\"role\":\"approver\"}",
        "{\"op\":\"grant\",\"to\":\"bob\",\"role\":\"approver\"}",
        "{\"op\":\"grant\",\"to\":\"bob\",\"permission\":{\"resource\":\"invoice:7\","
        "\"action\":\"approve\"}}",
    };
    for (size_t i = 0; i < sizeof ops / sizeof *ops; i++)
        if (authz_apply(m, ops[i], &err))
            fail_msg("op %zu: %s", i, err.msg);
    assert_int_equal(decide(m, "alice", "invoice:7", "approve", &d), AUTHZ_PERMISSION_DELEGATED);
    assert_false(d.authorized);
    assert_string_equal(d.authorizer, "opa");
    assert_string_equal(d.resource, "invoice:*");
    /* an unconditional allow decides without asking */
    assert_int_equal(decide(m, "bob", "invoice:7", "approve", &d),
                     AUTHZ_PERMISSION_GRANTED_NO_CONDITION);
    assert_string_equal(d.authorizer, "");
    assert_int_equal(decide(m, "bob", "invoice:8", "approve", &d), AUTHZ_PERMISSION_DELEGATED);
    /* a delegated permission whose own condition fails is not handed on */
    assert_int_equal(decide(m, "alice", "report:1", "read", &d),
                     AUTHZ_PERMISSION_FOUND_CONDITION_NOT_MET);
    assert_int_equal(decide(m, "alice", "invoice:7", "pay", &d),
                     AUTHZ_NO_MATCHING_PERMISSION_FOUND);
    /* a deny still wins */
    assert_int_equal(authz_apply(m,
                                 "{\"op\":\"grant\",\"to\":\"alice\",\"permission\":{"
                                 "\"resource\":\"invoice:7\",\"action\":\"*\",\"effect\":"
                                 "\"deny\"}}",
                                 NULL),
                     0);
    assert_int_equal(decide(m, "alice", "invoice:7", "approve", &d),
                     AUTHZ_PERMISSION_DENIED_EXPLICITLY);
    /* listing actions leaves delegated ones out */
    char **acts;
    size_t na;
    authz_request_t r = {.subject = "bob", .resource = "invoice:9"};
    assert_int_equal(authz_list_actions(m, &r, &acts, &na, NULL), 0);
    assert_int_equal(na, 0);
    authz_actions_free(acts, na);
    /* the authorizer survives export and import, and takes part in a grant's identity */
    char *doc;
    assert_int_equal(authz_export(m, &doc, NULL), 0);
    assert_non_null(strstr(doc, "\"authorizer\""));
    authz_model_t *m2;
    assert_int_equal(authz_model_new(&m2, NULL), 0);
    assert_int_equal(authz_import(m2, doc, NULL), 0);
    assert_int_equal(decide(m2, "alice", "invoice:8", "approve", &d), AUTHZ_PERMISSION_DELEGATED);
    authz_model_t *m3;
    assert_int_equal(authz_model_clone(m2, &m3, NULL), 0);
    assert_int_equal(decide(m3, "alice", "invoice:8", "approve", &d), AUTHZ_PERMISSION_DELEGATED);
    assert_string_equal(d.authorizer, "opa");
    cdn_free(doc);
    authz_model_free(m3);
    authz_model_free(m2);
    /* what cannot be delegated, or named so, is refused and changes nothing */
    const char *bad[] = {
        "{\"op\":\"grant\",\"to\":\"alice\",\"permission\":{\"resource\":\"a:1\","
        "\"action\":\"x\",\"effect\":\"deny\",\"authorizer\":\"opa\"}}",
        "{\"op\":\"grant\",\"to\":\"alice\",\"permission\":{\"resource\":\"a:1\","
        "\"action\":\"x\",\"authorizer\":\"Not Ok\"}}",
        "{\"op\":\"grant\",\"to\":\"alice\",\"permission\":{\"resource\":\"a:1\","
        "\"action\":\"x\",\"authorizer\":7}}",
    };
    uint64_t rev = authz_model_revision(m);
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        assert_int_equal(authz_apply(m, bad[i], &err), CDN_ERR_INVALID);
        assert_non_null(strstr(err.msg, "authorizer"));
    }
    assert_int_equal(authz_model_revision(m), rev);
    authz_model_free(m);
}

/* Through the public API: a port nothing listens on. */
static void test_a_silent_authorizer_reads_nothing(void **state)
{
    (void)state;
    char dir[256], cfg[256];
    cordon_t *db;
    cordon_error err;
    assert_non_null(tu_tmpdir(dir, sizeof dir));
    snprintf(cfg, sizeof cfg,
             "[{\"name\":\"gone\",\"kind\":\"opa\",\"url\":\"http://127.0.0.1:1\",\"path\":"
             "\"x\",\"timeout_ms\":300}]");
    cordon_options o = {.authorizers_json = cfg};
    assert_int_equal(cordon_open(dir, &o, &db, &err), 0);
    cordon_collection_spec spec = {.name = "docs", .dim = 2, .authorizer = "nobody"};
    assert_int_equal(cordon_collection_create(db, &spec, &err), CORDON_ERR_INVALID);
    assert_non_null(strstr(err.message, "authorizer"));
    spec.authorizer = "gone";
    assert_int_equal(cordon_collection_create(db, &spec, &err), 0);
    cordon_collection_info info;
    assert_int_equal(cordon_collection_info_get(db, "docs", &info, &err), 0);
    assert_string_equal(info.authorizer, "gone");
    assert_int_equal(
        cordon_model_apply_batch(
            db,
            "[{\"op\":\"put_subject\",\"id\":\"alice\"},{\"op\":\"put_subject\",\"id\":\"bob\"},"
            "{\"op\":\"put_role\",\"id\":\"r\",\"permissions\":[{\"resource\":\"collection:"
            "docs\",\"action\":\"*\"}]},{\"op\":\"grant\",\"to\":\"alice\",\"role\":\"r\"}]",
            NULL, &err),
        0);
    float v[2] = {1, 0};
    const char *allowed[] = {"user:alice"};
    cordon_chunk ch = {.id = "c1", .vector = v, .allowed = allowed, .n_allowed = 1};
    assert_int_equal(cordon_put(db, "docs", &ch, 1, NULL, &err), 0);
    cordon_subject alice = {.subject_id = "alice"}, bob = {.subject_id = "bob"};
    cordon_query q = {.vector = v, .k = 5};
    cordon_result *r = NULL;
    cordon_record *rec = NULL;
    assert_int_equal(cordon_search(db, "docs", &alice, &q, &r, &err), CORDON_ERR_UNAVAILABLE);
    assert_null(r);
    assert_non_null(strstr(err.message, "gone"));
    assert_int_equal(cordon_get(db, "docs", &alice, "c1", &rec, &err), CORDON_ERR_UNAVAILABLE);
    assert_null(rec);
    /* bob may not search it in the model: a missing collection, and nobody is asked */
    assert_int_equal(cordon_search(db, "docs", &bob, &q, &r, &err), CORDON_ERR_NOT_FOUND);
    const char *pr[] = {"user:alice"};
    cordon_subject asserted = {.principals = pr, .n_principals = 1};
    assert_int_not_equal(cordon_search(db, "docs", &asserted, &q, &r, &err), 0);
    cordon_authorizer_stats *st;
    size_t n;
    assert_int_equal(cordon_authorizer_stats_get(db, &st, &n, &err), 0);
    assert_int_equal(n, 1);
    assert_int_equal(st[0].unavailable + st[0].timeouts, 2);
    cordon_free(st);
    /* the setting survives a reopen, and a handle without that authorizer fails closed too */
    cordon_close(db);
    assert_int_equal(cordon_open(dir, NULL, &db, &err), 0);
    assert_int_equal(cordon_collection_info_get(db, "docs", &info, &err), 0);
    assert_string_equal(info.authorizer, "gone");
    assert_int_equal(cordon_search(db, "docs", &alice, &q, &r, &err), CORDON_ERR_UNAVAILABLE);
    assert_non_null(strstr(err.message, "not configured"));
    /* a delegated permission of is-authorized fails closed too, with its own reason */
    assert_int_equal(
        cordon_model_apply_batch(db,
                                 "[{\"op\":\"put_role\",\"id\":\"pay\",\"permissions\":[{"
                                 "\"resource\":\"invoice:*\",\"action\":\"pay\","
                                 "\"authorizer\":\"gone\"}]},{\"op\":\"grant\",\"to\":"
                                 "\"alice\",\"role\":\"pay\"}]",
                                 NULL, &err),
        0);
    cordon_close(db);
    assert_int_equal(cordon_open(dir, &o, &db, &err), 0);
    cordon_authz_request ar = {.subject = "alice", .resource = "invoice:1", .action = "pay"};
    cordon_decision dec;
    assert_int_equal(cordon_is_authorized(db, &ar, &dec, &err), 0);
    assert_false(dec.authorized);
    assert_string_equal(dec.reason, "AUTHORIZER_UNAVAILABLE");
    assert_string_equal(dec.authorizer.name, "gone");
    ar.action = "approve";
    assert_int_equal(cordon_is_authorized(db, &ar, &dec, &err), 0);
    assert_string_equal(dec.reason, "NO_MATCHING_PERMISSION_FOUND");
    assert_string_equal(dec.authorizer.name, "");
    cordon_close(db);
    tu_rmrf(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_comparisons),
        cmocka_unit_test(test_logic_is_three_valued),
        cmocka_unit_test(test_constants_fold),
        cmocka_unit_test(test_what_cannot_be_expressed_is_refused),
        cmocka_unit_test(test_opa_answers),
        cmocka_unit_test(test_configuration),
        cmocka_unit_test(test_delegated_permissions_in_the_model),
        cmocka_unit_test(test_a_silent_authorizer_reads_nothing),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
