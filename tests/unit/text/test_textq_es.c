/* test_textq_es.c: the Elasticsearch query DSL parser: shapes it accepts, the trees it builds,
 * and errors that name the JSON path of the bad field. Relies on cmocka, jansson, textq. */
#include <jansson.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h> /* own block: it needs setjmp.h, stdarg.h, stddef.h first */

#include "text/textidx.h"

static textq_t *ok(const char *js)
{
    json_t *j = json_loads(js, 0, NULL);
    assert_non_null(j);
    textq_t *q = NULL;
    cdn_err_t err = {0};
    int rc = textq_parse_es(j, &q, &err);
    if (rc)
        fail_msg("parse failed: %s", err.msg);
    json_decref(j);
    return q;
}

static int fails(const char *js, const char *needle)
{
    json_t *j = json_loads(js, 0, NULL);
    assert_non_null(j);
    textq_t *q = NULL;
    cdn_err_t err = {0};
    int rc = textq_parse_es(j, &q, &err);
    assert_null(q);
    if (!strstr(err.msg, needle))
        fail_msg("error '%s' does not name '%s'", err.msg, needle);
    json_decref(j);
    return rc;
}

static void test_match_short_and_long_forms(void **state)
{
    (void)state;
    textq_t *q = ok("{\"match\": {\"body\": \"quick fox\"}}");
    assert_int_equal(q->type, TEXTQ_MATCH);
    assert_string_equal(q->field, "body");
    assert_string_equal(q->text, "quick fox");
    textq_free(q);
    q = ok("{\"match\": {\"body\": {\"query\": \"a b c\", \"operator\": \"and\", "
           "\"minimum_should_match\": \"75%\", \"boost\": 2}}}");
    assert_true(q->op_and && q->msm.set && q->msm.percent && q->msm.value == 75);
    assert_true(q->boost == 2.0f);
    textq_free(q);
}

static void test_multi_match_fields_with_boosts(void **state)
{
    (void)state;
    textq_t *q = ok("{\"multi_match\": {\"query\": \"x\", \"fields\": [\"title^3\", \"body\"], "
                    "\"type\": \"most_fields\"}}");
    assert_int_equal(q->type, TEXTQ_MULTI_MATCH);
    assert_int_equal(q->nfields, 2);
    assert_string_equal(q->fields[0].name, "title");
    assert_true(q->fields[0].boost == 3.0f && q->fields[1].boost == 1.0f);
    assert_int_equal(q->mm_type, TEXTQ_MM_MOST_FIELDS);
    textq_free(q);
}

static void test_leaf_queries_parse_their_options(void **state)
{
    (void)state;
    textq_t *q = ok("{\"match_phrase\": {\"body\": {\"query\": \"a b\", \"slop\": 2}}}");
    assert_true(q->type == TEXTQ_PHRASE && q->slop == 2);
    textq_free(q);
    q = ok("{\"fuzzy\": {\"body\": {\"value\": \"quikc\", \"fuzziness\": 2}}}");
    assert_true(q->type == TEXTQ_FUZZY && q->fuzziness == 2);
    textq_free(q);
    q = ok("{\"fuzzy\": {\"body\": \"quikc\"}}");
    assert_int_equal(q->fuzziness, -1);
    textq_free(q);
    q = ok("{\"term\": {\"price\": 12.5}}");
    assert_string_equal(q->text, "12.5");
    textq_free(q);
    q = ok("{\"terms\": {\"tag\": [\"a\", true, 3]}}");
    assert_int_equal(q->nvalues, 3);
    assert_string_equal(q->values[1], "true");
    assert_string_equal(q->values[2], "3");
    textq_free(q);
    q = ok("{\"range\": {\"date\": {\"gt\": \"2024-01-01\", \"lte\": 5}}}");
    assert_string_equal(q->lo, "2024-01-01");
    assert_string_equal(q->hi, "5");
    assert_true(!q->lo_incl && q->hi_incl);
    textq_free(q);
    q = ok("{\"ids\": {\"values\": [\"7\", 9]}}");
    assert_true(q->nids == 2 && q->ids[0] == 7 && q->ids[1] == 9);
    textq_free(q);
    q = ok("{\"exists\": {\"field\": \"tag\"}}");
    assert_string_equal(q->field, "tag");
    textq_free(q);
    q = ok("{\"match_all\": {}}");
    assert_int_equal(q->type, TEXTQ_MATCH_ALL);
    textq_free(q);
}

static void test_bool_with_single_and_array_clauses(void **state)
{
    (void)state;
    textq_t *q =
        ok("{\"bool\": {\"must\": {\"match\": {\"body\": \"fox\"}}, "
           "\"filter\": [{\"term\": {\"tag\": \"a\"}}, {\"range\": {\"n\": {\"gte\": 1}}}],"
           " \"must_not\": [{\"exists\": {\"field\": \"x\"}}], \"should\": [], "
           "\"minimum_should_match\": 1}}");
    assert_int_equal(q->must.n, 1);
    assert_int_equal(q->filter.n, 2);
    assert_int_equal(q->must_not.n, 1);
    assert_int_equal(q->should.n, 0);
    assert_true(q->msm.set && q->msm.value == 1);
    textq_free(q);
}

/* Found by fuzz_query: "title^0333...3" parsed to an infinite boost and infinite scores. */
static void test_boosts_are_bounded_so_scores_stay_finite(void **state)
{
    (void)state;
    assert_int_equal(fails("{\"multi_match\":{\"query\":\"x\",\"fields\":[\"title^0333333333333"
                           "33333333333333333333333333333333333333333\"]}}",
                           "from 0 to 1e6"),
                     CDN_ERR_INVALID);
    assert_int_equal(fails("{\"match\":{\"title\":{\"query\":\"x\",\"boost\":1e7}}}", "0 to 1e6"),
                     CDN_ERR_INVALID);
    assert_int_equal(fails("{\"bool\":{\"boost\":1e6,\"must\":[{\"bool\":{\"boost\":1e6,"
                           "\"must\":[{\"match\":{\"t\":{\"query\":\"x\",\"boost\":2}}}]}}]}}",
                           "multiply to more than 1e12"),
                     CDN_ERR_INVALID);
    textq_t *q = ok("{\"bool\":{\"boost\":1e6,\"must\":[{\"multi_match\":{\"query\":\"x\","
                    "\"fields\":[\"a^1e6\",\"b\"]}}]}}");
    textq_free(q);
}

static void test_errors_name_the_path_of_the_bad_field(void **state)
{
    (void)state;
    assert_int_equal(fails("{\"match\": {\"body\": {\"query\": \"x\", \"operator\": \"xor\"}}}",
                           "query.match.body"),
                     CDN_ERR_INVALID);
    assert_int_equal(fails("{\"bool\": {\"must\": [{\"term\": {\"a\": 1}}, {\"range\": {\"n\": "
                           "{\"from\": 1}}}]}}",
                           "query.bool.must[1].range.n"),
                     CDN_ERR_INVALID);
    assert_int_equal(fails("{\"bool\": {\"shuold\": []}}", "query.bool.shuold"), CDN_ERR_INVALID);
    assert_int_equal(fails("{\"geo_shape\": {}}", "geo_shape"), CDN_ERR_UNSUPPORTED);
    assert_int_equal(
        fails("{\"multi_match\": {\"query\": \"x\", \"fields\": [\"t^z\"]}}", "query.multi_match"),
        CDN_ERR_INVALID);
    assert_int_equal(fails("{\"match\": {}}", "query.match"), CDN_ERR_INVALID);
    assert_int_equal(fails("{\"ids\": {\"values\": [\"abc\"]}}", "query.ids"), CDN_ERR_INVALID);
    assert_int_equal(
        fails("{\"fuzzy\": {\"f\": {\"value\": \"x\", \"fuzziness\": 7}}}", "query.fuzzy.f"),
        CDN_ERR_INVALID);
}

static void test_parsed_query_runs_like_the_built_one(void **state)
{
    (void)state;
    textidx_t *ti;
    assert_int_equal(textidx_create(NULL, &ti, NULL), 0);
    assert_int_equal(textidx_add_field(ti, "body", TEXTIDX_TEXT, "english", NULL), 0);
    assert_int_equal(textidx_add_field(ti, "tag", TEXTIDX_KEYWORD, NULL, NULL), 0);
    const char *texts[] = {"foxes run", "a fox sleeps", "dogs run", "the fox and dogs"};
    const char *tags[] = {"a", "b", "a", "a"};
    for (uint32_t i = 0; i < 4; i++) {
        textidx_value_t v[2] = {{"body", texts[i], strlen(texts[i]), 0}, {"tag", tags[i], 1, 0}};
        assert_int_equal(textidx_add_doc(ti, i, v, 2, NULL), 0);
    }
    textq_t *q = ok("{\"bool\": {\"must\": {\"match\": {\"body\": \"fox\"}}, "
                    "\"filter\": {\"term\": {\"tag\": \"a\"}}}}");
    textidx_result_t r;
    textidx_search_opts_t o = {NULL, 10, 0, NULL, 0};
    assert_int_equal(textidx_search(ti, q, &o, &r, NULL), 0);
    assert_int_equal(r.n, 2); /* docs 0 ("foxes" stems to fox) and 3 */
    assert_true((r.hits[0].id == 0 && r.hits[1].id == 3) ||
                (r.hits[0].id == 3 && r.hits[1].id == 0));
    textidx_result_free(&r);
    textq_free(q);
    textidx_free(ti);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_match_short_and_long_forms),
        cmocka_unit_test(test_multi_match_fields_with_boosts),
        cmocka_unit_test(test_leaf_queries_parse_their_options),
        cmocka_unit_test(test_bool_with_single_and_array_clauses),
        cmocka_unit_test(test_errors_name_the_path_of_the_bad_field),
        cmocka_unit_test(test_boosts_are_bounded_so_scores_stay_finite),
        cmocka_unit_test(test_parsed_query_runs_like_the_built_one),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
