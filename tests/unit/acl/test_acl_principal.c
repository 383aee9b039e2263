/* test_acl_principal.c: the one rule for principal names (acl_principal_canon): the closed list
 * of kinds, plain names as groups, and refusals that name the principal. Relies on cmocka. */
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

static void expect_canon(const char *name, const char *want)
{
    char out[ACL_PRINCIPAL_MAX + 8];
    cdn_err_t e = {0, ""};
    assert_int_equal(acl_principal_canon(name, out, sizeof out, &e), CDN_OK);
    assert_string_equal(out, want);
}

static void expect_refused(const char *name, int code, const char *in_message)
{
    char out[ACL_PRINCIPAL_MAX + 8];
    cdn_err_t e = {0, ""};
    assert_int_equal(acl_principal_canon(name, out, sizeof out, &e), code);
    assert_non_null(strstr(e.msg, in_message));
}

static void test_the_four_kinds_are_kept_and_plain_names_are_groups(void **state)
{
    (void)state;
    expect_canon("user:alice", "user:alice");
    expect_canon("service:ingest", "service:ingest");
    expect_canon("group:eng", "group:eng");
    expect_canon("role:auditor", "role:auditor");
    expect_canon("eng", "group:eng");
    expect_canon("group:org:eng", "group:org:eng"); /* the kind is what precedes the first ':' */
}

static void test_an_unknown_kind_is_refused_and_named(void **state)
{
    (void)state;
    expect_refused("usr:mallory", CDN_ERR_INVALID, "\"usr:mallory\" has an unknown kind");
    expect_refused("User:bob", CDN_ERR_INVALID, "\"User:bob\"");
    expect_refused("tenant:acme", CDN_ERR_INVALID, "user:, service:, group:, role:");
    expect_refused(":x", CDN_ERR_INVALID, "\":x\" has an unknown kind");
    expect_refused("eng:team", CDN_ERR_INVALID, "\"eng:team\"");
}

static void test_malformed_names_are_refused(void **state)
{
    (void)state;
    char out[ACL_PRINCIPAL_MAX + 8], longname[ACL_PRINCIPAL_MAX + 2];
    expect_refused("", CDN_ERR_INVALID, "empty");
    expect_refused("user:", CDN_ERR_INVALID, "has a kind but no name");
    expect_refused("group:e\x01g", CDN_ERR_INVALID, "control character");
    expect_refused("group:\xff", CDN_ERR_INVALID, "not UTF-8");
    memset(longname, 'a', sizeof longname - 1);
    longname[sizeof longname - 1] = '\0';
    expect_refused(longname, CDN_ERR_LIMIT, "the limit is 256");
    assert_int_equal(acl_principal_canon("eng", out, 5, NULL), CDN_ERR_LIMIT);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_the_four_kinds_are_kept_and_plain_names_are_groups),
        cmocka_unit_test(test_an_unknown_kind_is_refused_and_named),
        cmocka_unit_test(test_malformed_names_are_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
