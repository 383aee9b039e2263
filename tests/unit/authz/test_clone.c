/* test_clone.c: authz_model_clone. A copy exports exactly as its source, decides the same
 * (conditions, scoped grants, nested groups included), and moves on apart from it: changes to
 * either leave the other as it was. Out of memory at any allocation of the copy fails cleanly
 * (ASan checks nothing leaks) and leaves the source whole. Relies on cmocka and authz.h. */
/* cmocka.h needs these four first. */
// clang-format off
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
// clang-format on

#include <stdlib.h>
#include <string.h>

#include "authz/authz.h"
#include "base/mem.h"

static const char *const ops[] = {
    "{\"op\":\"put_subject\",\"id\":\"alice\",\"attributes\":{\"dept\":\"hr\",\"level\":3}}",
    "{\"op\":\"put_subject\",\"id\":\"bob\"}",
    "{\"op\":\"put_subject\",\"id\":\"gone\"}",
    "{\"op\":\"delete_subject\",\"id\":\"gone\"}",
    "{\"op\":\"put_group\",\"id\":\"org\"}",
    "{\"op\":\"put_group\",\"id\":\"hr\"}",
    "{\"op\":\"put_group\",\"id\":\"team\"}",
    "{\"op\":\"add_member\",\"group\":\"org\",\"member\":\"hr\",\"member_kind\":\"group\"}",
    "{\"op\":\"add_member\",\"group\":\"hr\",\"member\":\"team\",\"member_kind\":\"group\"}",
    "{\"op\":\"add_member\",\"group\":\"team\",\"member\":\"alice\"}",
    "{\"op\":\"add_member\",\"group\":\"org\",\"member\":\"bob\"}",
    "{\"op\":\"put_role\",\"id\":\"reader\",\"permissions\":[{\"resource\":\"doc:*\","
    "\"action\":\"read\",\"condition\":{\"StringEquals\":{\"subject.attributes.dept\":"
    "\"hr\"}}}]}",
    "{\"op\":\"grant\",\"to\":\"org\",\"to_kind\":\"group\",\"role\":\"reader\"}",
    "{\"op\":\"grant\",\"to\":\"bob\",\"permission\":{\"resource\":\"x:y\",\"action\":\"go\"},"
    "\"scope\":{\"type\":\"tenant\",\"id\":\"t\"}}",
};

static authz_model_t *build(void)
{
    authz_model_t *m;
    assert_int_equal(authz_model_new(&m, NULL), 0);
    for (size_t i = 0; i < sizeof ops / sizeof *ops; i++)
        assert_int_equal(authz_apply(m, ops[i], NULL), 0);
    return m;
}

static char *export_of(authz_model_t *m)
{
    char *j = NULL;
    assert_int_equal(authz_export(m, &j, NULL), 0);
    return j;
}

static int decide(authz_model_t *m, const char *subject, const char *res, const char *action)
{
    authz_request_t q = {0};
    authz_decision_t d;
    q.subject = subject;
    q.resource = res;
    q.action = action;
    assert_int_equal(authz_is_authorized(m, &q, &d, NULL), 0);
    return d.authorized;
}

static void test_copy_equals_and_moves_apart(void **state)
{
    (void)state;
    authz_model_t *m = build(), *c;
    assert_int_equal(authz_model_clone(m, &c, NULL), 0);
    char *a = export_of(m), *b = export_of(c);
    assert_string_equal(a, b);
    assert_true(decide(c, "alice", "doc:1", "read")); /* condition met, nested groups */
    assert_false(decide(c, "bob", "doc:1", "read"));  /* condition not met */
    assert_false(decide(c, "gone", "doc:1", "read")); /* deleted */
    authz_view_t *v;
    assert_int_equal(authz_view(c, "alice", &v, NULL), 0);
    assert_true(authz_view_has(v, "group:org") && authz_view_has(v, "role:reader"));
    authz_view_release(v);
    /* apart: a change to the copy, then one to the source */
    assert_int_equal(authz_apply(c,
                                 "{\"op\":\"remove_member\",\"group\":\"team\","
                                 "\"member\":\"alice\"}",
                                 NULL),
                     0);
    assert_false(decide(c, "alice", "doc:1", "read"));
    assert_true(decide(m, "alice", "doc:1", "read"));
    assert_int_equal(authz_apply(m, "{\"op\":\"put_subject\",\"id\":\"carol\"}", NULL), 0);
    assert_int_equal(authz_apply(c, "{\"op\":\"put_subject\",\"id\":\"carol\"}", NULL), 0);
    char *a2 = export_of(m), *c2 = export_of(c);
    assert_string_not_equal(a2, c2); /* the copy still lacks alice in team */
    assert_int_equal(authz_apply(c,
                                 "{\"op\":\"add_member\",\"group\":\"team\","
                                 "\"member\":\"alice\"}",
                                 NULL),
                     0);
    cdn_free(c2);
    c2 = export_of(c);
    assert_string_equal(a2, c2); /* the same changes, the same model */
    cdn_free(a2);
    cdn_free(c2);
    cdn_free(a);
    cdn_free(b);
    authz_model_free(c);
    authz_model_free(m);
}

static void test_out_of_memory_while_copying(void **state)
{
    (void)state;
    authz_model_t *m = build();
    char *before = export_of(m);
    long failed = 0;
    for (long n = 0; n < 400; n++) {
        authz_model_t *c = NULL;
        cdn_mem_fail_after(n);
        int rc = authz_model_clone(m, &c, NULL);
        cdn_mem_fail_after(-1);
        if (rc) {
            assert_int_equal(rc, CDN_ERR_NOMEM);
            assert_null(c);
            failed++;
        } else {
            char *x = export_of(c);
            assert_string_equal(x, before);
            cdn_free(x);
            authz_model_free(c);
            break;
        }
    }
    assert_true(failed > 20); /* every allocation of the copy was made to fail in turn */
    char *after = export_of(m);
    assert_string_equal(after, before);
    cdn_free(after);
    cdn_free(before);
    authz_model_free(m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_copy_equals_and_moves_apart),
        cmocka_unit_test(test_out_of_memory_while_copying),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
