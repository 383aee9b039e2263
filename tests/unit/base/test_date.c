/* test_date.c: the shared date parser (base/date.h): every accepted form, leap years, zones,
 * the bounds of each field and of the text. Relies on cmocka; expected instants by hand. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "base/date.h"
#include "base/err.h"

#define DAY_MS 86400000.0

static double ok(const char *s, unsigned flags)
{
    double ms = -12345;
    if (cdn_date_parse(s, strlen(s), flags, &ms) != CDN_OK)
        fail_msg("'%s' should parse", s);
    return ms;
}

static void refused(const char *s, unsigned flags)
{
    double ms = -12345;
    if (cdn_date_parse(s, strlen(s), flags, &ms) != CDN_ERR_INVALID)
        fail_msg("'%s' should be refused", s);
    assert_true(ms == -12345); /* the output is left alone */
}

static void test_date_forms_give_the_same_instant(void **state)
{
    (void)state;
    double t = 20484.0 * DAY_MS + 10 * 3600000.0; /* 2026-01-31T10:00:00Z */
    assert_true(ok("2026-01-31T10:00:00Z", 0) == t);
    assert_true(ok("2026-01-31t10:00:00z", 0) == t);
    assert_true(ok("2026-01-31 10:00:00", 0) == t);
    assert_true(ok("2026-01-31T10:00", 0) == t);
    assert_true(ok("2026-01-31T10:00Z", 0) == t);
    assert_true(ok("2026-01-31T12:00:00+02:00", 0) == t);
    assert_true(ok("2026-01-31T12:00:00+0200", 0) == t);
    assert_true(ok("2026-01-31T12:00+02", 0) == t);
    assert_true(ok("2026-01-31T06:30:00-03:30", 0) == t);
    assert_true(ok("2026-01-31", 0) == 20484.0 * DAY_MS);
    assert_true(ok("2026-01-31Z", 0) == 20484.0 * DAY_MS);
    assert_true(ok("2026-01-31+01:00", 0) == 20484.0 * DAY_MS - 3600000.0);
    assert_true(ok("1970", 0) == 0);
    assert_true(ok("1971", 0) == 365 * DAY_MS);
}

static void test_date_fraction_keeps_its_digits(void **state)
{
    (void)state;
    assert_true(ok("1970-01-01T00:00:01.5Z", 0) == 1500.0);
    assert_true(ok("1970-01-01T00:00:01.250Z", 0) == 1250.0);
    assert_true(ok("1970-01-01T00:00:00.001", 0) == 1.0);
    double us = ok("1970-01-01T00:00:00.0015Z", 0); /* sub-millisecond digits stay a fraction */
    assert_true(us > 1.49 && us < 1.51);
    assert_true(ok("1970-01-01T00:00:00.123456789Z", 0) > 123.45);
    refused("1970-01-01T00:00:00.Z", 0);           /* a point needs a digit */
    refused("1970-01-01T00:00:00.1234567890Z", 0); /* at most nanoseconds */
    refused("1970-01-01T00:00.5Z", 0);             /* a fraction belongs to the seconds */
}

static void test_date_leap_years_follow_the_gregorian_rules(void **state)
{
    (void)state;
    assert_true(ok("2024-02-29", 0) == ok("2024-03-01", 0) - DAY_MS);
    assert_true(ok("2000-02-29", 0) == ok("2000-03-01", 0) - DAY_MS); /* divisible by 400 */
    refused("2023-02-29", 0);
    refused("1900-02-29", 0); /* divisible by 100, not 400 */
    refused("2100-02-29", 0);
    refused("2024-02-30", 0);
    refused("2024-04-31", 0);
    assert_true(ok("2024-12-31", 0) == ok("2025-01-01", 0) - DAY_MS);
    assert_true(ok("2025", 0) - ok("2024", 0) == 366 * DAY_MS);
}

static void test_date_fields_refuse_values_past_their_bounds(void **state)
{
    (void)state;
    assert_true(ok("0000-01-01T00:00:00Z", 0) == -719528.0 * DAY_MS);
    assert_true(ok("9999-12-31T23:59:59.999Z", 0) == 2932897.0 * DAY_MS - 1);
    assert_true(ok("1969-12-31T23:59:59Z", 0) == -1000.0);
    assert_true(ok("2016-12-31T23:59:60Z", 0) == ok("2017-01-01", 0)); /* a leap second */
    refused("2024-00-10", 0);
    refused("2024-13-10", 0);
    refused("2024-01-00", 0);
    refused("2024-01-32", 0);
    refused("2024-01-01T24:00:00Z", 0);
    refused("2024-01-01T10:60:00Z", 0);
    refused("2024-01-01T10:00:61Z", 0);
    refused("2024-01-01T10:00:00+24:00", 0);
    refused("2024-01-01T10:00:00+01:60", 0);
    refused("10000-01-01", 0);
    refused("-2024-01-01", 0);
}

static void test_date_refuses_malformed_text(void **state)
{
    (void)state;
    const char *bad[] = {"",
                         "yesterday",
                         "2024-5-01",
                         "2024-05",
                         "24-05-01",
                         "2024/05/01",
                         "2024-05-01T",
                         "2024-05-01T10",
                         "2024-05-01T10:0",
                         "2024-05-01T1:00",
                         "2024-05-01 ",
                         "2024-05-01T10:00:00ZZ",
                         "2024-05-01T10:00:00+",
                         "2024-05-01T10:00:00+1",
                         "2024-05-01T10:00:00+01:",
                         "2024-05-01T10:00:00+01:0",
                         "2024-05-01T10:00:00 Z",
                         "1970Z",
                         "2024-05-01T10:00:00.5.5Z",
                         "12345"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
        refused(bad[i], 0);
    double ms;
    assert_int_equal(cdn_date_parse(NULL, 0, 0, &ms), CDN_ERR_INVALID);
}

static void test_date_reads_only_the_bytes_it_is_given(void **state)
{
    (void)state;
    double ms = -1;
    const char *s = "2024-05-01T10:00:00Zjunk";
    assert_int_equal(cdn_date_parse(s, 20, 0, &ms), CDN_OK);
    assert_true(ms == ok("2024-05-01T10:00:00Z", 0));
    assert_int_equal(cdn_date_parse(s, 7, 0, &ms), CDN_ERR_INVALID);  /* "2024-05" */
    assert_int_equal(cdn_date_parse(s, 13, 0, &ms), CDN_ERR_INVALID); /* "2024-05-01T10" */
    char unterminated[10];
    memcpy(unterminated, "2024-05-01", 10); /* no NUL: ASan reports any read past the end */
    assert_int_equal(cdn_date_parse(unterminated, 10, 0, &ms), CDN_OK);
}

static void test_date_numeric_text_is_epoch_ms_only_when_asked(void **state)
{
    (void)state;
    assert_true(ok("86400000", CDN_DATE_EPOCH_MS_TEXT) == DAY_MS);
    assert_true(ok("12345", CDN_DATE_EPOCH_MS_TEXT) == 12345);
    assert_true(ok("-1234", CDN_DATE_EPOCH_MS_TEXT) == -1234);
    assert_true(ok("1700000000000", CDN_DATE_EPOCH_MS_TEXT) == 1700000000000.0);
    assert_true(ok("1970", CDN_DATE_EPOCH_MS_TEXT) == 0); /* four digits stay a year */
    assert_true(ok("2024-05-01", CDN_DATE_EPOCH_MS_TEXT) == ok("2024-05-01", 0));
    refused("86400000", 0);
    refused("-123", CDN_DATE_EPOCH_MS_TEXT);
    refused("-", CDN_DATE_EPOCH_MS_TEXT);
    refused("12345678901234567890", CDN_DATE_EPOCH_MS_TEXT); /* 20 characters */
    refused("12345x", CDN_DATE_EPOCH_MS_TEXT);
    refused("1e10", CDN_DATE_EPOCH_MS_TEXT);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_date_forms_give_the_same_instant),
        cmocka_unit_test(test_date_fraction_keeps_its_digits),
        cmocka_unit_test(test_date_leap_years_follow_the_gregorian_rules),
        cmocka_unit_test(test_date_fields_refuse_values_past_their_bounds),
        cmocka_unit_test(test_date_refuses_malformed_text),
        cmocka_unit_test(test_date_reads_only_the_bytes_it_is_given),
        cmocka_unit_test(test_date_numeric_text_is_epoch_ms_only_when_asked),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
