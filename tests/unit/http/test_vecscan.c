/* test_vecscan.c: reading a document line's dense_vector without a JSON tree: the values equal
 * strtod's narrowed to float bit for bit, the array's place in the line is exact, and every
 * line that is not the plain case is declined (so the tree-based path reports its errors).
 * Relies on cmocka and http/es_vecscan. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "http/es_vecscan.h"

static int scan(const char *line, const char *field, uint32_t dim, float *out, es_vecscan_t *at)
{
    return es_vecscan(line, strlen(line), field, dim, out, at);
}

static void test_values_equal_strtod_narrowed_bit_for_bit(void **state)
{
    (void)state;
    /* Numbers as clients write them: fixed six places, %.9g, %.17g (past the exact shortcut),
     * exponents, integers, -0 and -0.0, the smallest subnormals. */
    static const char *const nums[] = {"0.123456",
                                       "-0.987654",
                                       "1",
                                       "0",
                                       "-0",
                                       "-0.0",
                                       "0.30000000000000004",
                                       "1.0000000000000002",
                                       "-1.2345678901234567e-05",
                                       "3.4e38",
                                       "-3.4e38",
                                       "1e-45",
                                       "4.9406564584124654e-324",
                                       "123456789012345678",
                                       "0.000000000000000000001234",
                                       "2.5E+3",
                                       "7e-1",
                                       "0.1",
                                       "9007199254740993",
                                       "1.7976931348623157e-300",
                                       "12345.678e-3"};
    size_t n = sizeof nums / sizeof *nums;
    char line[4096];
    size_t len = (size_t)snprintf(line, sizeof line, "{\"v\":[");
    for (size_t i = 0; i < n; i++)
        len += (size_t)snprintf(line + len, sizeof line - len, "%s%s", i ? "," : "", nums[i]);
    snprintf(line + len, sizeof line - len, "]}");
    float out[64];
    es_vecscan_t at;
    assert_int_equal(scan(line, "v", (uint32_t)n, out, &at), 0);
    double sumsq = 0;
    for (size_t i = 0; i < n; i++) {
        double d = strtod(nums[i], NULL);
        float want = (float)(strcmp(nums[i], "-0") ? d : 0.0);
        if (memcmp(&want, &out[i], sizeof want))
            fail_msg("%s: got %.9g, want %.9g", nums[i], (double)out[i], (double)want);
        sumsq += d * d;
    }
    assert_true(at.sumsq == sumsq);
}

static void test_random_numbers_equal_strtod(void **state)
{
    (void)state;
    uint64_t s = 42;
    char line[64 * 1024];
    float out[512];
    double want[512];
    es_vecscan_t at;
    for (int round = 0; round < 50; round++) {
        size_t len = (size_t)snprintf(line, sizeof line, "{\"x\":1,\"vec\":[");
        for (int i = 0; i < 512; i++) {
            s = s * 6364136223846793005ull + 1442695040888963407ull;
            double v = ((double)(s >> 11) / 9007199254740992.0 - 0.5) * 4;
            static const char *const fmt[] = {"%.6f", "%.9g", "%.17g", "%.3e"};
            char num[40];
            snprintf(num, sizeof num, fmt[(s >> 3) % 4], v);
            want[i] = strtod(num, NULL);
            len += (size_t)snprintf(line + len, sizeof line - len, "%s%s", i ? ", " : " ", num);
        }
        snprintf(line + len, sizeof line - len, " ] }");
        assert_int_equal(scan(line, "vec", 512, out, &at), 0);
        for (int i = 0; i < 512; i++) {
            float w = (float)want[i];
            assert_memory_equal(&w, &out[i], sizeof w);
        }
    }
}

static void test_place_of_the_array_is_exact(void **state)
{
    (void)state;
    const char *line = "{ \"t\" : \"a \\\"vector\\\": [9]\", \"o\": {\"vector\": [5, 5]},"
                       " \"vector\" :\t[ 1 , 2 ] , \"z\": [[1], {\"a\": \"]\"}] }";
    float out[2];
    es_vecscan_t at;
    assert_int_equal(scan(line, "vector", 2, out, &at), 0);
    assert_true(out[0] == 1 && out[1] == 2);
    assert_int_equal(at.end - at.start, strlen("[ 1 , 2 ]"));
    assert_memory_equal(line + at.start, "[ 1 , 2 ]", at.end - at.start);
    assert_true(at.sumsq == 5);
}

static void test_lines_that_are_not_the_plain_case_are_declined(void **state)
{
    (void)state;
    static const char *const bad[] = {
        "{\"v\":[1,2]}",                      /* two values, not three */
        "{\"v\":[1,2,3,4]}",                  /* four */
        "{\"v\":[]}",                         /* none */
        "{\"v\":[1,NaN,3]}",                  /* not JSON */
        "{\"v\":[1,Infinity,3]}",             /* not JSON */
        "{\"v\":[1,\"2\",3]}",                /* a string */
        "{\"v\":[1,null,3]}",                 /* null */
        "{\"v\":[1,[2],3]}",                  /* nested */
        "{\"v\":[1,2,3,]}",                   /* trailing comma */
        "{\"v\":[1,2 3]}",                    /* no comma */
        "{\"v\":[01,2,3]}",                   /* leading zero */
        "{\"v\":[1.,2,3]}",                   /* no digit after the point */
        "{\"v\":[.5,2,3]}",                   /* no digit before it */
        "{\"v\":[1e,2,3]}",                   /* no exponent digits */
        "{\"v\":[+1,2,3]}",                   /* a plus sign */
        "{\"v\":[1e999,2,3]}",                /* overflows a double */
        "{\"v\":[3.5e38,2,3]}",               /* beyond float */
        "{\"v\":[12345678901234567890,2,3]}", /* an integer JSON parsers may refuse */
        "{\"v\":{\"a\":1}}",                  /* an object */
        "{\"v\":\"1,2,3\"}",                  /* a string */
        "{\"w\":[1,2,3]}",                    /* no such member */
        "{\"o\":{\"v\":[1,2,3]}}",            /* only nested */
        "{\"\\u0076\":[1,2,3]}",              /* an escaped name */
        "[{\"v\":[1,2,3]}]",                  /* not an object */
        "{\"a\" 1, \"v\":[1,2,3]}",           /* a line the scan cannot follow */
        "{\"a\":1 \"v\":[1,2,3]}",            /* no comma between members */
        "{\"a\":\"unterminated, \"v\":[1,2,3]}",
        "{\"v\":[1,2,3", /* cut short */
        "",
    };
    float out[8];
    es_vecscan_t at;
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
        if (scan(bad[i], "v", 3, out, &at) == 0)
            fail_msg("accepted %s", bad[i]);
    assert_int_equal(scan("{\"a.b\":[1,2,3]}", "a.b", 3, out, &at), -1); /* dotted paths */
    assert_int_equal(scan("{\"v\":[1,2,3]}", "", 3, out, &at), -1);
    assert_int_equal(scan("{\"v\":[1,2,3]}", "v", 0, out, &at), -1);
    assert_int_equal(scan("{\"v\":[1,2,3]}", "v", 3, out, &at), 0);
}

static void test_first_member_of_that_name_is_the_one_read(void **state)
{
    (void)state;
    /* A JSON parser refuses the duplicate later; the scan stops at the first. */
    float out[2];
    es_vecscan_t at;
    assert_int_equal(scan("{\"v\":[1,2],\"v\":[3,4]}", "v", 2, out, &at), 0);
    assert_true(out[0] == 1 && at.start == 5);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_values_equal_strtod_narrowed_bit_for_bit),
        cmocka_unit_test(test_random_numbers_equal_strtod),
        cmocka_unit_test(test_place_of_the_array_is_exact),
        cmocka_unit_test(test_lines_that_are_not_the_plain_case_are_declined),
        cmocka_unit_test(test_first_member_of_that_name_is_the_one_read),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
