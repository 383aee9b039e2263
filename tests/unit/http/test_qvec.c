/* test_qvec.c: search bodies whose knn query vector is read from the text (es_body_search):
 * every number it takes equals jansson's value of it, the vector is taken only from a knn
 * clause's one query_vector, and every body it does not take gives es_body's tree or error.
 * Relies on cmocka, jansson and the server's http/es.h. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "base/mem.h"
#include "http/es.h"

static http_ctx_t g_ctx;
static http_req_t g_req;

/* es_body_search of text when qv is not NULL (filling *qv), else es_body: the tree (or NULL),
 * and the error body in err (when not NULL). */
static json_t *parse(const char *text, es_qvec_t *qv, char *err, size_t cap)
{
    http_resp_t resp = {0};
    static char body[1 << 16];
    snprintf(body, sizeof body, "%s", text);
    g_req.body = body;
    g_req.body_len = strlen(body);
    cdn_buf_init(&resp.body, 1 << 20);
    json_t *j = qv ? es_body_search(&g_ctx, &g_req, &resp, qv) : es_body(&g_ctx, &g_req, &resp, 0);
    if (err)
        snprintf(err, cap, "%d %s", resp.status, resp.body.data ? resp.body.data : "");
    cdn_buf_free(&resp.body);
    return j;
}

/* es_body of text: the tree or the error body, as for parse. */
static json_t *parse_plain(const char *text, char *err, size_t cap)
{
    return parse(text, NULL, err, cap);
}

/* Every number es_qvec_float takes is the (float) of the double jansson gives: strtod's for
 * reals, the integer's for integers; halfway points between floats (and a double ulp off
 * them), where a quick estimate could round either way, included. */
static void test_number_equals_jansson_value(void **state)
{
    (void)state;
    char s[64];
    unsigned long long x = 88172645463325252ull;
    size_t taken = 0, halfway = 0;
    for (int i = 0; i < 200000; i++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        int kind = (int)(x % 8), digits = 1 + (int)((x >> 8) % 18);
        long long m = (long long)((x >> 16) % 1000000000000000000ull);
        for (int d = digits; d < 18; d++)
            m /= 10;
        int e = (int)((x >> 40) % 60) - 30;
        const char *sign = (x >> 50) & 1 ? "-" : "";
        if (kind == 0)
            snprintf(s, sizeof s, "%s%lld", sign, m);
        else if (kind == 1)
            snprintf(s, sizeof s, "%s%lld.%0*lld", sign, m / 1000, 3, m % 1000);
        else if (kind == 2)
            snprintf(s, sizeof s, "%s%llde%d", sign, m, e);
        else if (kind == 3)
            snprintf(s, sizeof s, "%s0.%06lld", sign, m % 1000000);
        else if (kind == 4)
            snprintf(s, sizeof s, "%s%.*g", sign, 1 + (int)(x % 17), (double)m * pow(10, e % 12));
        else if (kind == 5) /* a float32 printed for a round trip through double, as Python */
            snprintf(s, sizeof s, "%.17g", (double)(float)((double)m * pow(10, -(e + 30) / 3)));
        else if (kind == 6)
            snprintf(s, sizeof s, "%s%lld.%llde%d", sign, m, x % 1000, e * 11);
        else { /* between two floats: halfway, or a double ulp off it */
            float f = (float)((double)m * pow(10, -(e + 30) / 3) + 1e-30);
            double mid = ((double)f + (double)nextafterf(f, INFINITY)) / 2;
            mid = (x >> 20) % 3 == 0 ? mid : nextafter(mid, (x >> 20) % 3 == 1 ? 0 : INFINITY);
            snprintf(s, sizeof s, "%s%.*g", sign, 17 + (int)((x >> 24) % 4), mid);
        }
        json_t *j = json_loads(s, JSON_DECODE_ANY, NULL);
        float d;
        const char *end = es_qvec_float(s, s + strlen(s), &d);
        if (!j) {
            assert_null(end); /* not JSON: not taken either */
            continue;
        }
        if (end) {
            assert_ptr_equal(end, s + strlen(s));
            float want = (float)json_number_value(j);
            if (memcmp(&d, &want, sizeof d))
                fail_msg("%s: %.9g, jansson's (float) %.9g", s, (double)d, (double)want);
            taken++;
            halfway += kind == 7;
        }
        json_decref(j);
    }
    assert_true(taken > 190000); /* all but integers past int64 and overflows */
    assert_true(halfway > 20000);
}

static void test_number_edges(void **state)
{
    (void)state;
    float d;
    const char *bad[] = {"-",   "",     ".5",    "1.",     "1e",
                         "1e+", "+1",   "1e400", "-1e309", "12345678901234567890",
                         "--1", "0x10", "1.5e",  "-.5"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        const char *end = es_qvec_float(bad[i], bad[i] + strlen(bad[i]), &d);
        if (end && end == bad[i] + strlen(bad[i]))
            fail_msg("took \"%s\" whole", bad[i]);
    }
    const char *z = "-0";
    assert_non_null(es_qvec_float(z, z + 2, &d));
    assert_false(signbit(d)); /* jansson: the integer 0 */
    z = "-0.0";
    assert_non_null(es_qvec_float(z, z + 4, &d));
    assert_true(signbit(d) && d == 0);
    z = "01";
    assert_ptr_equal(es_qvec_float(z, z + 2, &d), z + 1); /* the caller finds the '1' */
    z = "0.0000000000000000001"; /* zeros before the digits are not significant */
    assert_non_null(es_qvec_float(z, z + strlen(z), &d));
    assert_true(d == 1e-19f);
    z = "1e39"; /* a finite double past float's range: (float) makes it infinite, as before */
    assert_non_null(es_qvec_float(z, z + strlen(z), &d));
    assert_true(isinf(d));
}

/* The vector of a knn clause is taken: its values are jansson's, its array is empty. */
static void test_knn_vector_taken_from_each_knn_place(void **state)
{
    (void)state;
    const char *bodies[] = {
        "{\"knn\":{\"field\":\"v\",\"query_vector\":[0.5,-1,2.25e1, 3 ],\"k\":1},\"size\":1}",
        "{\"knn\":[{\"field\":\"v\",\"query_vector\":[0.5,-1,22.5,3]}]}",
        "{\"retriever\":{\"knn\":{\"field\":\"v\",\"query_vector\":[0.5,-1,22.5,3]}}}",
        "{\"retriever\":{\"rrf\":{\"retrievers\":[{\"standard\":{\"query\":{\"match_all\":{}}}},"
        "{\"knn\":{\"field\":\"v\",\"query_vector\":\n[0.5,\n-1,22.50,3e0]}}]}}}",
    };
    const float want[] = {0.5f, -1, 22.5f, 3};
    for (size_t i = 0; i < sizeof bodies / sizeof *bodies; i++) {
        es_qvec_t qv;
        json_t *j = parse(bodies[i], &qv, NULL, 0);
        assert_non_null(j);
        if (qv.n != 4)
            fail_msg("body %zu: %zu values taken", i, qv.n);
        assert_memory_equal(qv.v, want, sizeof want);
        char *s = json_dumps(j, JSON_COMPACT);
        assert_non_null(strstr(s, "\"query_vector\":[]"));
        free(s);
        json_decref(j);
        es_qvec_free(&qv);
        assert_null(qv.v);
    }
}

/* Bodies whose vector stays in the tree: the tree is es_body's and nothing is taken. */
static void test_vector_left_in_tree_when_not_plain(void **state)
{
    (void)state;
    const char *bodies[] = {
        "{\"knn\":{\"query_vector\":[1,2]},\"query\":{\"query_vector\":[1]}}", /* two keys */
        "{\"query\":{\"knn\":{\"field\":\"v\",\"query_vector\":[1,2]}}}", /* a query, not knn */
        "{\"knn\":{\"filter\":{\"query_vector\":[1,2]}}}",
        "{\"knn\":{\"query\\u005fvector\":[1,2]}}", /* a key with an escape */
        "{\"knn\":{\"query_vector\":[1,\"2\"]}}",
        "{\"knn\":{\"query_vector\":[1,-9223372036854775808]}}",
        "{\"knn\":{\"query_vector\":[1,[2]]}}",
        "{\"knn\":{\"query_vector\":[]}}",
        "{\"knn\":{\"query_vector\":\"1,2\"}}",
        "{\"knn\":{\"query_vector\":[1,2]},\"x\":\"\\\"query_vector\\\":[3]\"}",
        "{\"knn\":[[{\"query_vector\":[1,2]}]]}",
    };
    for (size_t i = 0; i < sizeof bodies / sizeof *bodies; i++) {
        es_qvec_t qv;
        char err[512];
        json_t *j = parse(bodies[i], &qv, NULL, 0), *plain = parse_plain(bodies[i], err, 512);
        assert_non_null(j);
        assert_non_null(plain);
        if (i == 9) { /* the string holds the text of a key, not a key: taken */
            assert_int_equal(qv.n, 2);
            assert_int_equal(
                json_array_size(json_object_get(json_object_get(j, "knn"), "query_vector")), 0);
        } else {
            if (qv.v || qv.n)
                fail_msg("body %zu: took %zu values", i, qv.n);
            assert_true(json_equal(j, plain));
        }
        json_decref(j);
        json_decref(plain);
        es_qvec_free(&qv);
    }
}

/* A body es_body refuses gets es_body's error, word for word, and nothing taken. */
static void test_bad_bodies_get_es_body_errors(void **state)
{
    (void)state;
    const char *bodies[] = {
        "{\"knn\":{\"query_vector\":[1,2]}",                             /* unclosed */
        "{\"knn\":{\"query_vector\":[1,2]},\"knn\":{}}",                 /* duplicate key */
        "{\"knn\":{\"query_vector\":[1,2]}} x",                          /* trailing text */
        "{\"knn\":{\"query_vector\":[1,2]},\"a\":[[[[[[[[[]]]]]]]]]}",   /* too deep */
        "[{\"knn\":{\"query_vector\":[1,2]}}]",                          /* not an object */
        "{\"knn\":{\"query_vector\":[1,2]},\"s\":\"\xff\"}",             /* not UTF-8 */
        "{\"knn\":{\"query_vector\":[1,2]},\"n\":99999999999999999999}", /* too big */
        "{\"knn\":{\"query_vector\":[1,2]}}}",
        "{\"knn\":{\"query_vector\":[1,2,]}}",
        "{\"knn\":{\"query_vector\":[01,2]}}",
        "   ",
    };
    for (size_t i = 0; i < sizeof bodies / sizeof *bodies; i++) {
        es_qvec_t qv;
        char err[1024], want[1024];
        json_t *j = parse(bodies[i], &qv, err, sizeof err);
        json_t *plain = parse_plain(bodies[i], want, sizeof want);
        if (i == sizeof bodies / sizeof *bodies - 1) { /* blank: an empty object */
            assert_non_null(j);
            assert_int_equal(json_object_size(j), 0);
        } else {
            assert_null(j);
            assert_null(plain);
            assert_string_equal(err, want);
        }
        assert_null(qv.v);
        json_decref(j);
        json_decref(plain);
    }
}

int main(void)
{
    g_ctx.cfg.json_depth_max = 8;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_number_equals_jansson_value),
        cmocka_unit_test(test_number_edges),
        cmocka_unit_test(test_knn_vector_taken_from_each_knn_place),
        cmocka_unit_test(test_vector_left_in_tree_when_not_plain),
        cmocka_unit_test(test_bad_bodies_get_es_body_errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
