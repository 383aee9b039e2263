/* test_authz_faults.c: out-of-memory at every allocation of an op or an import: the model is
 * either unchanged or refuses to answer (fail closed) until an import repairs it. Relies on
 * cmocka, cdn_mem_fail_after and libcordon. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <string.h>
#include <cmocka.h>

#include "authz/authz.h"
#include "base/mem.h"

static const char *const setup_ops[] = {
    "{\"op\":\"put_subject\",\"id\":\"alice\",\"attributes\":{\"d\":\"hr\"}}",
    "{\"op\":\"put_subject\",\"id\":\"bob\"}",
    "{\"op\":\"put_group\",\"id\":\"org\"}",
    "{\"op\":\"put_group\",\"id\":\"hr\"}",
    "{\"op\":\"put_group\",\"id\":\"team\"}",
    "{\"op\":\"add_member\",\"group\":\"hr\",\"member\":\"team\",\"member_kind\":\"group\"}",
    "{\"op\":\"add_member\",\"group\":\"team\",\"member\":\"alice\"}",
    "{\"op\":\"add_member\",\"group\":\"team\",\"member\":\"bob\"}",
    ("{\"op\":\"put_role\",\"id\":\"r\",\"permissions\":[{\"resource\":\"doc:*\",\"action\":"
     "\"read\"}]}"),
    "{\"op\":\"grant\",\"to\":\"hr\",\"to_kind\":\"group\",\"role\":\"r\"}",
};

/* Ops that allocate in several places, some after the state has started to change. */
static const char *const faulty_ops[] = {
    "{\"op\":\"add_member\",\"group\":\"org\",\"member\":\"hr\",\"member_kind\":\"group\"}",
    "{\"op\":\"remove_member\",\"group\":\"hr\",\"member\":\"team\",\"member_kind\":\"group\"}",
    "{\"op\":\"delete_group\",\"id\":\"team\"}",
    "{\"op\":\"put_role\",\"id\":\"c\",\"permissions\":[{\"resource\":\"doc:a*\",\"action\":"
    "\"write\",\"condition\":{\"And\":[{\"StringEquals\":{\"subject.attributes.d\":\"hr\"}},"
    "{\"StringIn\":{\"context.ip\":[\"a\"]}}]}}]}",
    ("{\"op\":\"grant\",\"to\":\"bob\",\"permission\":{\"resource\":\"x:y\",\"action\":\"go\"},"
     "\"scope\":{\"type\":\"tenant\",\"id\":\"t\"}}"),
    "{\"op\":\"put_subject\",\"id\":\"carol\",\"attributes\":{\"a\":[1,2]}}",
};

static authz_model_t *setup(void)
{
    authz_model_t *m;
    assert_int_equal(authz_model_new(&m, NULL), 0);
    for (size_t i = 0; i < sizeof(setup_ops) / sizeof(setup_ops[0]); i++)
        assert_int_equal(authz_apply(m, setup_ops[i], NULL), 0);
    return m;
}

static void test_out_of_memory_in_an_op_never_half_applies_silently(void **state)
{
    (void)state;
    long unchanged = 0, broken = 0, done = 0;
    for (size_t o = 0; o < sizeof(faulty_ops) / sizeof(faulty_ops[0]); o++) {
        for (long n = 0; n < 60; n++) {
            authz_model_t *m = setup();
            char *before = NULL;
            assert_int_equal(authz_export(m, &before, NULL), 0);
            cdn_mem_fail_after(n);
            cdn_err_t e = {0};
            int rc = authz_apply(m, faulty_ops[o], &e);
            cdn_mem_fail_after(-1);
            authz_request_t r = {.subject = "alice", .resource = "doc:1", .action = "read"};
            authz_decision_t d;
            char *after = NULL;
            if (!rc) {
                done++;
            } else {
                assert_int_equal(rc, CDN_ERR_NOMEM);
                int xrc = authz_export(m, &after, NULL);
                if (xrc == 0) { /* not broken: must be exactly as before */
                    assert_string_equal(before, after);
                    assert_int_equal(authz_is_authorized(m, &r, &d, NULL), 0);
                    assert_true(d.authorized);
                    unchanged++;
                } else { /* broken: every read refuses until an import */
                    assert_int_equal(xrc, CDN_ERR_INTERNAL);
                    assert_int_equal(authz_is_authorized(m, &r, &d, NULL), CDN_ERR_INTERNAL);
                    assert_false(d.authorized);
                    authz_view_t *v;
                    assert_int_equal(authz_view(m, "alice", &v, NULL), CDN_ERR_INTERNAL);
                    assert_int_equal(authz_import(m, before, NULL), 0);
                    assert_int_equal(authz_is_authorized(m, &r, &d, NULL), 0);
                    assert_true(d.authorized);
                    broken++;
                }
            }
            cdn_free(after);
            cdn_free(before);
            authz_model_free(m);
        }
    }
    assert_true(done > 0);
    assert_true(unchanged > 0);
    (void)broken;
}

static void test_out_of_memory_during_import_keeps_the_old_model(void **state)
{
    (void)state;
    authz_model_t *src = setup();
    char *doc = NULL;
    assert_int_equal(authz_export(src, &doc, NULL), 0);
    for (long n = 0; n < 200; n++) {
        authz_model_t *m;
        assert_int_equal(authz_model_new(&m, NULL), 0);
        assert_int_equal(authz_apply(m, "{\"op\":\"put_subject\",\"id\":\"zed\"}", NULL), 0);
        cdn_mem_fail_after(n);
        int rc = authz_import(m, doc, NULL);
        cdn_mem_fail_after(-1);
        authz_view_t *v;
        if (rc) {
            assert_int_equal(authz_view(m, "zed", &v, NULL), 0); /* the old model */
            authz_view_release(v);
            assert_int_equal(authz_view(m, "alice", &v, NULL), CDN_ERR_NOT_FOUND);
        } else {
            assert_int_equal(authz_view(m, "zed", &v, NULL), CDN_ERR_NOT_FOUND);
        }
        authz_model_free(m);
    }
    cdn_free(doc);
    authz_model_free(src);
}

/* The decision cache is allocated by the first check; when that allocation fails the check is
 * decided all the same (uncached), and a later check that can allocate it caches. */
static void test_a_decision_cache_that_cannot_be_allocated_only_costs_speed(void **state)
{
    (void)state;
    authz_model_t *m = setup();
    authz_request_t r = {.subject = "alice", .resource = "doc:1", .action = "read"};
    authz_decision_t d;
    for (int i = 0; i < 2; i++) {
        cdn_mem_fail_after(0);
        int rc = authz_is_authorized(m, &r, &d, NULL);
        cdn_mem_fail_after(-1);
        assert_int_equal(rc, 0);
        assert_true(d.authorized);
        assert_false(d.cached);
    }
    assert_int_equal(authz_is_authorized(m, &r, &d, NULL), 0); /* allocates it, fills a slot */
    assert_false(d.cached);
    assert_int_equal(authz_is_authorized(m, &r, &d, NULL), 0);
    assert_true(d.authorized);
    assert_true(d.cached);
    authz_model_free(m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_out_of_memory_in_an_op_never_half_applies_silently),
        cmocka_unit_test(test_out_of_memory_during_import_keeps_the_old_model),
        cmocka_unit_test(test_a_decision_cache_that_cannot_be_allocated_only_costs_speed),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
