/* test_window.c: grants with a validity window ("valid": {"from", "until"}). A grant holds from
 * its start (inclusive) until its end (exclusive), for decisions and views alike, judged at the
 * clock or at a moment set on a private model; the window survives export and import byte for
 * byte, takes part in a grant's identity (a revoke must name it), and a malformed one is
 * refused without changing anything. Relies on cmocka and authz.h. */
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

#define DAY 86400000000ll
static const int64_t MAR1 = 1772323200000000ll; /* 2026-03-01T00:00:00Z */
static const int64_t JUN1 = 1780272000000000ll; /* 2026-06-01T00:00:00Z */

static const char *const GRANT =
    "{\"op\":\"grant\",\"to\":\"alice\",\"role\":\"reader\",\"valid\":{\"from\":\"2026-03-01\","
    "\"until\":\"2026-06-01T00:00:00Z\"}}";

static authz_model_t *model(void)
{
    authz_model_t *m;
    assert_int_equal(authz_model_new(&m, NULL), 0);
    assert_int_equal(authz_apply(m, "{\"op\":\"put_subject\",\"id\":\"alice\"}", NULL), 0);
    assert_int_equal(authz_apply(m,
                                 "{\"op\":\"put_role\",\"id\":\"reader\",\"permissions\":[{"
                                 "\"resource\":\"collection:docs\",\"action\":\"search\"}]}",
                                 NULL),
                     0);
    return m;
}

static int may_search(authz_model_t *m)
{
    authz_request_t q = {0};
    authz_decision_t d;
    q.subject = "alice";
    q.resource = "collection:docs";
    q.action = "search";
    assert_int_equal(authz_is_authorized(m, &q, &d, NULL), 0);
    return d.authorized;
}

static int holds_role(authz_model_t *m)
{
    authz_view_t *v;
    assert_int_equal(authz_view(m, "alice", &v, NULL), 0);
    int has = authz_view_has(v, "role:reader");
    authz_view_release(v);
    return has;
}

static void test_window_bounds(void **state)
{
    (void)state;
    authz_model_t *m = model();
    assert_int_equal(authz_apply(m, GRANT, NULL), 0);
    assert_true(authz_model_has_windows(m));
    const struct {
        int64_t at;
        int holds;
    } cases[] = {{MAR1 - DAY, 0}, {MAR1 - 1, 0}, {MAR1, 1},    {MAR1 + DAY, 1},
                 {JUN1 - 1, 1},   {JUN1, 0},     {JUN1 + 1, 0}};
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        authz_model_set_time(m, cases[i].at);
        assert_int_equal(may_search(m), cases[i].holds);
        assert_int_equal(holds_role(m), cases[i].holds);
        assert_int_equal(may_search(m), cases[i].holds); /* and again: nothing cached wrong */
    }
    authz_model_free(m);
}

static void test_window_against_the_clock(void **state)
{
    (void)state;
    authz_model_t *m = model();
    assert_int_equal(authz_apply(m,
                                 "{\"op\":\"grant\",\"to\":\"alice\",\"role\":\"reader\","
                                 "\"valid\":{\"until\":\"2000-01-01\"}}",
                                 NULL),
                     0);
    assert_false(may_search(m)); /* ended long ago */
    assert_false(holds_role(m));
    assert_int_equal(authz_apply(m,
                                 "{\"op\":\"grant\",\"to\":\"alice\",\"role\":\"reader\","
                                 "\"valid\":{\"from\":\"2000-01-01\"}}",
                                 NULL),
                     0);
    assert_true(may_search(m)); /* started long ago, no end */
    assert_true(holds_role(m));
    authz_model_free(m);
}

static void test_window_export_import_and_revoke(void **state)
{
    (void)state;
    authz_model_t *m = model(), *copy;
    char *a, *b;
    assert_int_equal(authz_apply(m, GRANT, NULL), 0);
    assert_int_equal(authz_export(m, &a, NULL), 0);
    assert_non_null(strstr(a, "\"from\": \"2026-03-01T00:00:00Z\""));
    assert_non_null(strstr(a, "\"until\": \"2026-06-01T00:00:00Z\""));
    assert_int_equal(authz_model_new(&copy, NULL), 0);
    assert_int_equal(authz_import(copy, a, NULL), 0);
    assert_int_equal(authz_export(copy, &b, NULL), 0);
    assert_string_equal(a, b);
    authz_model_set_time(copy, MAR1 + DAY);
    assert_true(may_search(copy));
    cdn_free(a);
    cdn_free(b);
    authz_model_free(copy);
    /* the same grant without its window is another grant */
    assert_int_equal(
        authz_apply(m, "{\"op\":\"revoke\",\"to\":\"alice\",\"role\":\"reader\"}", NULL),
        CDN_ERR_NOT_FOUND);
    assert_int_equal(authz_apply(m,
                                 "{\"op\":\"revoke\",\"to\":\"alice\",\"role\":\"reader\","
                                 "\"valid\":{\"from\":\"2026-03-01T00:00:00Z\",\"until\":"
                                 "\"2026-06-01\"}}",
                                 NULL),
                     0);
    authz_model_set_time(m, MAR1 + DAY);
    assert_false(may_search(m));
    authz_model_free(m);
}

static void test_bad_windows_change_nothing(void **state)
{
    (void)state;
    authz_model_t *m = model();
    uint64_t rev = authz_model_revision(m);
    const char *const bad[] = {
        "{\"op\":\"grant\",\"to\":\"alice\",\"role\":\"reader\",\"valid\":{\"from\":\"2026-06-01\","
        "\"until\":\"2026-03-01\"}}",
        "{\"op\":\"grant\",\"to\":\"alice\",\"role\":\"reader\",\"valid\":{\"from\":\"soon\"}}",
        "{\"op\":\"grant\",\"to\":\"alice\",\"role\":\"reader\",\"valid\":{\"until\":20260601}}",
        "{\"op\":\"grant\",\"to\":\"alice\",\"role\":\"reader\",\"valid\":{\"to\":\"2026-06-01\"}}",
        "{\"op\":\"grant\",\"to\":\"alice\",\"role\":\"reader\",\"valid\":\"2026\"}",
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        cdn_err_t err = {0, ""};
        assert_int_equal(authz_apply(m, bad[i], &err), CDN_ERR_INVALID);
        assert_non_null(strstr(err.msg, "valid"));
    }
    assert_int_equal(authz_model_revision(m), rev);
    assert_false(authz_model_has_windows(m));
    assert_false(may_search(m));
    authz_model_free(m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_window_bounds),
        cmocka_unit_test(test_window_against_the_clock),
        cmocka_unit_test(test_window_export_import_and_revoke),
        cmocka_unit_test(test_bad_windows_change_nothing),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
