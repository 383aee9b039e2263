/* test_json_write.c: es_json_write writes, byte for byte, what json_dumps(JSON_COMPACT |
 * JSON_REAL_PRECISION(9)) writes for the same tree (random trees, every kind of value, strings
 * with escapes and UTF-8, reals of every magnitude), and leaves the buffer as it was where
 * json_dumps fails. Relies on cmocka, jansson and the server's http/es.h. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "http/es.h"

static uint64_t g_rng = 0x9E3779B97F4A7C15ull;

static uint64_t rnd(void)
{
    g_rng ^= g_rng << 13, g_rng ^= g_rng >> 7, g_rng ^= g_rng << 17;
    return g_rng;
}

static json_t *random_string(void)
{
    static const char *const parts[] = {"a",    "\"",   "\\",   "/", "\n", "\t", "\r", "\b", "\f",
                                        "\x01", "\x1f", "\x7f", "é", "漢", "😀",  " ",  "x y"};
    char s[64] = "";
    size_t n = rnd() % 8;
    for (size_t i = 0; i < n; i++)
        strncat(s, parts[rnd() % (sizeof parts / sizeof *parts)], sizeof s - strlen(s) - 1);
    if (rnd() % 10 == 0) /* an embedded NUL */
        return json_stringn("a\0b", 3);
    return json_string(s);
}

static json_t *random_real(void)
{
    double m = (double)(rnd() % 2000000) / 1000.0 - 1000.0;
    int e = (int)(rnd() % 80) - 40;
    double v = rnd() % 7 == 0 ? (double)(int64_t)(rnd() % 100) : m * pow(10, e);
    if (rnd() % 9 == 0)
        v = (rnd() & 1) ? -0.0 : 5e-324;
    if (rnd() % 11 == 0)
        v = 1.7976931348623157e308;
    return json_real(v);
}

static json_t *random_tree(int depth)
{
    int kind = (int)(rnd() % (depth > 4 ? 6 : 8));
    switch (kind) {
    case 0: return random_string();
    case 1:
        return json_integer((json_int_t)(rnd() % 3 ? rnd() % 1000 : rnd()) * (rnd() & 1 ? -1 : 1));
    case 2: return random_real();
    case 3: return rnd() & 1 ? json_true() : json_false();
    case 4: return json_null();
    case 5: return json_object(); /* empty */
    case 6: {
        json_t *a = json_array();
        for (size_t i = rnd() % 5; i > 0; i--)
            json_array_append_new(a, random_tree(depth + 1));
        return a;
    }
    default: {
        json_t *o = json_object();
        for (size_t i = rnd() % 5; i > 0; i--) {
            json_t *k = random_string();
            json_object_setn_new(o, json_string_value(k), json_string_length(k),
                                 random_tree(depth + 1));
            json_decref(k);
        }
        return o;
    }
    }
}

static void expect_same(json_t *j)
{
    char *want = json_dumps(j, JSON_COMPACT | JSON_REAL_PRECISION(9) | JSON_ENCODE_ANY);
    cdn_buf_t b;
    cdn_buf_init(&b, 1 << 24);
    assert_int_equal(cdn_buf_puts(&b, "pre"), 0);
    int rc = es_json_write(&b, j);
    if (!want) {
        assert_int_equal(rc, -1);
        assert_string_equal(b.data, "pre");
    } else {
        assert_int_equal(rc, 0);
        if (b.len != 3 + strlen(want) || memcmp(b.data + 3, want, strlen(want)))
            fail_msg("wrote %s\njansson %s", b.data + 3, want);
    }
    free(want);
    cdn_buf_free(&b);
}

static void test_random_trees_match_json_dumps(void **state)
{
    (void)state;
    for (int i = 0; i < 20000; i++) {
        json_t *j = random_tree(0);
        expect_same(j);
        json_decref(j);
    }
}

static void test_integer_extremes_match_json_dumps(void **state)
{
    (void)state;
    const json_int_t v[] = {0, -1, 9, 10, -10, INT64_MAX, INT64_MIN, INT64_MIN + 1};
    for (size_t i = 0; i < sizeof v / sizeof *v; i++) {
        json_t *j = json_integer(v[i]);
        expect_same(j);
        json_decref(j);
    }
}

static void test_reals_match_json_dumps(void **state)
{
    (void)state;
    const double v[] = {0,           1,      -1,         0.5,   1e20,   1e21,
                        1e-5,        1.5e-7, 123456789,  1e100, 1e-100, 3.14159265358979,
                        0.579343557, 1e9,    1234567890, 2e-308};
    for (size_t i = 0; i < sizeof v / sizeof *v; i++) {
        json_t *j = json_real(v[i]);
        expect_same(j);
        json_decref(j);
    }
}

/* What json_dumps refuses (a string that is not UTF-8, a tree holding itself) fails here too,
 * with the buffer as it was. */
static void test_undumpable_trees_fail_and_leave_the_buffer(void **state)
{
    (void)state;
    json_t *bad = json_object();
    json_object_set_new(bad, "s", json_stringn_nocheck("\xff\xfe", 2));
    expect_same(bad);
    json_decref(bad);
    json_t *loop = json_array();
    json_array_append(loop, loop);
    expect_same(loop);
    json_array_clear(loop);
    json_decref(loop);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_random_trees_match_json_dumps),
        cmocka_unit_test(test_reals_match_json_dumps),
        cmocka_unit_test(test_integer_extremes_match_json_dumps),
        cmocka_unit_test(test_undumpable_trees_fail_and_leave_the_buffer),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
