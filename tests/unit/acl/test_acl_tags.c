/* test_acl_tags.c: tenants and labels in names (acl_tag_check, acl_qualify, acl_view_canon)
 * and the expansion of a view by its tenants (acl_view_expand, acl_set_*): which qualified
 * names a view reaches and which it must never reach. Relies on cmocka. */
/* cmocka.h needs these four first. */
// clang-format off
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
// clang-format on

#include <string.h>

#include "acl/acl.h"
#include "base/err.h"

static void expect_view_canon(const char *name, const char *want)
{
    char out[ACL_VIEW_NAME_MAX];
    cdn_err_t e = {0, ""};
    if (acl_view_canon(name, out, sizeof out, &e))
        fail_msg("%s refused: %s", name, e.msg);
    assert_string_equal(out, want);
}

static void expect_view_refused(const char *name, const char *in_message)
{
    char out[ACL_VIEW_NAME_MAX];
    cdn_err_t e = {0, ""};
    assert_int_not_equal(acl_view_canon(name, out, sizeof out, &e), CDN_OK);
    if (!strstr(e.msg, in_message))
        fail_msg("%s: message \"%s\" lacks \"%s\"", name, e.msg, in_message);
}

static void test_tag_names_follow_one_rule(void **state)
{
    (void)state;
    char long_name[ACL_TAG_MAX + 2];
    cdn_err_t e;
    memset(long_name, 'a', sizeof long_name - 1);
    long_name[sizeof long_name - 1] = '\0';
    assert_int_equal(acl_tag_check("acme", "tenant", &e), CDN_OK);
    assert_int_equal(acl_tag_check("ünïcode-ok", "tenant", &e), CDN_OK);
    assert_int_equal(acl_tag_check("", "tenant", &e), CDN_ERR_INVALID);
    assert_int_equal(acl_tag_check(NULL, "tenant", &e), CDN_ERR_INVALID);
    assert_int_equal(acl_tag_check("a:b", "label", &e), CDN_ERR_INVALID);
    assert_non_null(strstr(e.msg, "label"));
    assert_int_equal(acl_tag_check("a b", "tenant", &e), CDN_ERR_INVALID);
    assert_int_equal(acl_tag_check("\xff", "tenant", &e), CDN_ERR_INVALID);
    assert_int_equal(acl_tag_check(long_name, "tenant", &e), CDN_ERR_LIMIT);
    long_name[ACL_TAG_MAX] = '\0';
    assert_int_equal(acl_tag_check(long_name, "tenant", &e), CDN_OK);
}

static void test_view_names_are_canonical(void **state)
{
    (void)state;
    char out[24];
    expect_view_canon("eng", "group:eng");
    expect_view_canon("label:secret", "label:secret");
    expect_view_canon("tenant:acme", "tenant:acme");
    expect_view_canon("tenant:acme:eng", "tenant:acme:group:eng");
    expect_view_canon("tenant:acme:role:auditor", "tenant:acme:role:auditor");
    expect_view_canon("tenant:acme:label:secret", "tenant:acme:label:secret");
    expect_view_refused("tenant:", "tenant");
    expect_view_refused("tenant:a b", "tenant");
    expect_view_refused("tenant:acme:tenant:globex", "unknown kind");
    expect_view_refused("label:", "label");
    expect_view_refused("label:a b", "label");
    expect_view_refused("bogus:x", "unknown kind");
    assert_int_equal(acl_qualify("acme", "group:eng", out, sizeof out), CDN_OK);
    assert_string_equal(out, "tenant:acme:group:eng");
    assert_int_equal(acl_qualify(NULL, "group:eng", out, sizeof out), CDN_OK);
    assert_string_equal(out, "group:eng");
    /* never truncated: a name that does not fit is an error */
    assert_int_equal(acl_qualify("acme", "group:engineering", out, sizeof out), CDN_ERR_LIMIT);
}

static void test_a_tenant_reaches_only_its_own_qualified_names(void **state)
{
    (void)state;
    const char *view[] = {
        "group:eng", "label:secret", "role:reader", "tenant:acme", "tenant:acme:role:auditor",
        "user:alice"};
    acl_set_t s;
    cdn_err_t e;
    assert_int_equal(acl_set_build(view, 6, &s, &e), CDN_OK);
    static const char *const reached[] = {"group:eng",
                                          "user:alice",
                                          "tenant:acme:group:eng",
                                          "tenant:acme:user:alice",
                                          "tenant:acme:role:reader",
                                          "tenant:acme:label:secret",
                                          "tenant:acme:role:auditor",
                                          "label:secret"};
    static const char *const never[] = {"tenant:globex:group:eng", "role:auditor",
                                        "tenant:acme:tenant:acme", "tenant:acme:group:ops",
                                        "tenant:globex:label:secret"};
    for (size_t i = 0; i < sizeof reached / sizeof *reached; i++)
        if (!acl_set_has(&s, reached[i]))
            fail_msg("the view should reach %s", reached[i]);
    for (size_t i = 0; i < sizeof never / sizeof *never; i++)
        if (acl_set_has(&s, never[i]))
            fail_msg("the view must not reach %s", never[i]);
    assert_int_equal(s.n, 6 + 4); /* the six names and the four plain ones qualified by acme */
    acl_set_free(&s);
    /* a malformed name refuses the whole set */
    const char *bad[] = {"group:eng", "tenant:"};
    assert_int_not_equal(acl_set_build(bad, 2, &s, &e), CDN_OK);
    acl_set_free(&s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_tag_names_follow_one_rule),
        cmocka_unit_test(test_view_names_are_canonical),
        cmocka_unit_test(test_a_tenant_reaches_only_its_own_qualified_names),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
