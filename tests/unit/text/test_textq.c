/* test_textq.c: query semantics over a small hand-made collection: phrase and slop, fuzzy,
 * prefix, match operators, multi_match, bool clauses, metadata filters with permissions.
 * Relies on cmocka and textidx; expectations are derived from the documents below. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h> /* own block: it needs setjmp.h, stdarg.h, stddef.h first */

#include <jansson.h>

#include "text/textidx.h"
#include "text/textq.h"

typedef struct doc {
    const char *title, *body, *tag, *date;
    double price;
    int flag;
} doc_t;

static const doc_t docs[] = {
    {"Quick brown fox", "the quick brown fox jumps over the lazy dog", "animals", "2024-01-05", 10,
     1},
    {"Brown dogs", "a brown and quick dog sleeps", "animals", "2024-02-10", 25, 0},
    {"Fox news", "quick news about the fox", "news", "2023-12-31T23:00:00Z", 5, 1},
    {"Quantum physics", "quantum entanglement of photons", "science", "2024-03-01", 99, 0},
    {"Quick quiz", "quiz about foxes and brown bears", "quiz", "2024-01-20", 15, 1},
    {"Lazy sunday", "the dog is lazy and brown", "animals", "2022-06-01", 50, 0},
};
#define NDOCS (sizeof docs / sizeof *docs)

static int setup(void **state)
{
    textidx_t *ti;
    assert_int_equal(textidx_create(NULL, &ti, NULL), 0);
    assert_int_equal(textidx_add_field(ti, "title", TEXTIDX_TEXT, "english", NULL), 0);
    assert_int_equal(textidx_add_field(ti, "body", TEXTIDX_TEXT, "standard", NULL), 0);
    assert_int_equal(textidx_add_field(ti, "tag", TEXTIDX_KEYWORD, NULL, NULL), 0);
    assert_int_equal(textidx_add_field(ti, "date", TEXTIDX_DATE, NULL, NULL), 0);
    assert_int_equal(textidx_add_field(ti, "price", TEXTIDX_NUMBER, NULL, NULL), 0);
    assert_int_equal(textidx_add_field(ti, "flag", TEXTIDX_BOOL, NULL, NULL), 0);
    for (uint32_t i = 0; i < NDOCS; i++) {
        const doc_t *d = &docs[i];
        textidx_value_t v[] = {
            {"title", d->title, strlen(d->title), 0},
            {"body", d->body, strlen(d->body), 0},
            {"tag", d->tag, strlen(d->tag), 0},
            {"date", d->date, strlen(d->date), 0},
            {"price", NULL, 0, d->price},
            {"flag", NULL, 0, d->flag},
        };
        assert_int_equal(textidx_add_doc(ti, 10 + i, v, 6, NULL), 0);
    }
    *state = ti;
    return 0;
}

static int teardown(void **state)
{
    textidx_free(*state);
    return 0;
}

/* Runs q (freed here) and renders the hit ids in rank order, e.g. "10 12". */
static const char *run(const textidx_t *ti, textq_t *q, const roaring_bitmap_t *allowed)
{
    static char out[256];
    textidx_result_t res;
    textidx_search_opts_t o = {allowed, 20, 0, NULL, 0};
    assert_int_equal(textidx_search(ti, q, &o, &res, NULL), 0);
    size_t n = 0;
    out[0] = 0;
    for (size_t i = 0; i < res.n; i++)
        n += (size_t)snprintf(out + n, sizeof out - n, "%s%u", i ? " " : "", res.hits[i].id);
    textidx_result_free(&res);
    textq_free(q);
    return out;
}

/* Same, ids sorted ascending (for queries whose order is not the point). */
static const char *run_set(const textidx_t *ti, textq_t *q, const roaring_bitmap_t *allowed)
{
    static char out[256];
    textidx_result_t res;
    textidx_search_opts_t o = {allowed, 20, 0, NULL, 0};
    assert_int_equal(textidx_search(ti, q, &o, &res, NULL), 0);
    int present[NDOCS] = {0};
    for (size_t i = 0; i < res.n; i++)
        present[res.hits[i].id - 10] = 1;
    size_t n = 0;
    out[0] = 0;
    for (size_t i = 0; i < NDOCS; i++)
        if (present[i])
            n += (size_t)snprintf(out + n, sizeof out - n, "%s%zu", n ? " " : "", i + 10);
    textidx_result_free(&res);
    textq_free(q);
    return out;
}

static textq_t *phrase(const char *f, const char *t, uint32_t slop)
{
    textq_t *q;
    assert_int_equal(textq_phrase(f, t, slop, &q), 0);
    return q;
}

static void test_phrase_needs_adjacent_terms_unless_slop_allows(void **state)
{
    const textidx_t *ti = *state;
    assert_string_equal(run_set(ti, phrase("body", "quick brown", 0), NULL), "10");
    /* doc 11 "brown and quick": quick is 3 positions off its place relative to brown */
    assert_string_equal(run_set(ti, phrase("body", "quick brown", 2), NULL), "10");
    assert_string_equal(run_set(ti, phrase("body", "quick brown", 3), NULL), "10 11");
    assert_string_equal(run_set(ti, phrase("body", "lazy dog", 0), NULL), "10");
    assert_string_equal(run_set(ti, phrase("body", "dog lazy", 2), NULL), "10 15");
    assert_string_equal(run_set(ti, phrase("body", "quick unicorn", 5), NULL), "");
}

static void test_exact_phrase_scores_above_sloppy_match(void **state)
{
    const textidx_t *ti = *state;
    assert_string_equal(run(ti, phrase("body", "quick brown", 3), NULL), "10 11");
}

static void test_fuzzy_finds_terms_within_auto_edits(void **state)
{
    const textidx_t *ti = *state;
    textq_t *q;
    assert_int_equal(textq_fuzzy("body", "quikc", -1, &q), 0); /* 2 edits: len 5 allows 1 */
    assert_string_equal(run_set(ti, q, NULL), "");
    assert_int_equal(textq_fuzzy("body", "quck", -1, &q), 0);
    assert_string_equal(run_set(ti, q, NULL), "10 11 12");
    assert_int_equal(textq_fuzzy("body", "entanglemnet", -1, &q), 0); /* len 12: 2 edits */
    assert_string_equal(run_set(ti, q, NULL), "13");
    assert_int_equal(textq_fuzzy("body", "quck", 0, &q), 0);
    assert_string_equal(run_set(ti, q, NULL), "");
}

static void test_prefix_on_text_and_keyword_fields(void **state)
{
    const textidx_t *ti = *state;
    textq_t *q;
    assert_int_equal(textq_prefix("body", "qu", &q), 0);
    assert_string_equal(run_set(ti, q, NULL), "10 11 12 13 14");
    assert_int_equal(textq_prefix("tag", "ani", &q), 0);
    assert_string_equal(run_set(ti, q, NULL), "10 11 15");
}

static void test_match_operator_and_minimum_should_match(void **state)
{
    const textidx_t *ti = *state;
    textq_t *q;
    assert_int_equal(textq_match("body", "quick lazy dog", &q), 0);
    assert_string_equal(run_set(ti, q, NULL), "10 11 12 15");
    assert_int_equal(textq_match("body", "quick lazy dog", &q), 0);
    q->op_and = 1;
    assert_string_equal(run_set(ti, q, NULL), "10");
    assert_int_equal(textq_match("body", "quick lazy dog", &q), 0);
    q->msm = (textq_msm_t){1, 2, 0};
    assert_string_equal(run_set(ti, q, NULL), "10 11 15");
    assert_int_equal(textq_match("body", "quick lazy dog", &q), 0);
    q->msm = (textq_msm_t){1, 67, 1}; /* 67% of 3 = 2 */
    assert_string_equal(run_set(ti, q, NULL), "10 11 15");
}

static void test_english_title_matches_stemmed_forms(void **state)
{
    const textidx_t *ti = *state;
    textq_t *q;
    assert_int_equal(textq_match("title", "dog", &q), 0); /* "dogs" in doc 11 */
    assert_string_equal(run_set(ti, q, NULL), "11");
    assert_int_equal(textq_match("body", "dog", &q), 0); /* standard: no stemming */
    assert_string_equal(run_set(ti, q, NULL), "10 11 15");
}

static void test_multi_match_most_fields_sums_and_best_fields_takes_max(void **state)
{
    const textidx_t *ti = *state;
    const char *f[] = {"title", "body"};
    float boost[] = {3.0f, 1.0f};
    textq_t *q;
    assert_int_equal(textq_multi_match("fox", f, boost, 2, TEXTQ_MM_MOST_FIELDS, &q), 0);
    assert_string_equal(run_set(ti, q, NULL), "10 12");
    assert_int_equal(textq_multi_match("quantum", f, boost, 2, TEXTQ_MM_BEST_FIELDS, &q), 0);
    assert_string_equal(run(ti, q, NULL), "13");
    /* scores: most_fields(title^3 + body) > best_fields(max of the two) for the same doc */
    textidx_result_t a, b;
    textidx_search_opts_t o = {NULL, 5, 0, NULL, 0};
    textq_t *qa, *qb;
    assert_int_equal(textq_multi_match("fox", f, boost, 2, TEXTQ_MM_MOST_FIELDS, &qa), 0);
    assert_int_equal(textq_multi_match("fox", f, boost, 2, TEXTQ_MM_BEST_FIELDS, &qb), 0);
    assert_int_equal(textidx_search(ti, qa, &o, &a, NULL), 0);
    assert_int_equal(textidx_search(ti, qb, &o, &b, NULL), 0);
    assert_true(a.n == b.n && a.n > 0);
    assert_true(a.hits[0].score > b.hits[0].score);
    textidx_result_free(&a);
    textidx_result_free(&b);
    textq_free(qa);
    textq_free(qb);
}

static textq_t *term(const char *f, const char *v)
{
    textq_t *q;
    assert_int_equal(textq_term(f, v, &q), 0);
    return q;
}

static textq_t *match(const char *f, const char *v)
{
    textq_t *q;
    assert_int_equal(textq_match(f, v, &q), 0);
    return q;
}

static textq_t *range(const char *f, const char *lo, const char *hi)
{
    textq_t *q;
    assert_int_equal(textq_range(f, lo, 1, hi, 1, &q), 0);
    return q;
}

static void test_metadata_filters_term_terms_range_exists_ids(void **state)
{
    const textidx_t *ti = *state;
    textq_t *q;
    assert_string_equal(run_set(ti, term("tag", "animals"), NULL), "10 11 15");
    assert_string_equal(run_set(ti, term("tag", "Animals"), NULL), ""); /* keyword: exact */
    const char *vals[] = {"news", "quiz"};
    assert_int_equal(textq_terms("tag", vals, 2, &q), 0);
    assert_string_equal(run_set(ti, q, NULL), "12 14");
    assert_string_equal(run_set(ti, range("price", "10", "25"), NULL), "10 11 14");
    assert_int_equal(textq_range("price", "10", 0, "25", 0, &q), 0); /* gt / lt */
    assert_string_equal(run_set(ti, q, NULL), "14");
    assert_string_equal(run_set(ti, range("date", "2024-01-01", NULL), NULL), "10 11 13 14");
    /* 2023-12-31T23:00Z is 2024-01-01T01:00 at +02:00 */
    assert_string_equal(run_set(ti, range("date", "2024-01-01T00:30:00+02:00", "2024-01-06"), NULL),
                        "10 12");
    assert_string_equal(run_set(ti, term("flag", "true"), NULL), "10 12 14");
    assert_string_equal(run_set(ti, term("price", "99"), NULL), "13");
    assert_int_equal(textq_exists("tag", &q), 0);
    assert_string_equal(run_set(ti, q, NULL), "10 11 12 13 14 15");
    assert_int_equal(textq_exists("nope", &q), 0);
    assert_string_equal(run_set(ti, q, NULL), "");
    uint32_t ids[] = {11, 13, 999};
    assert_int_equal(textq_ids(ids, 3, &q), 0);
    assert_string_equal(run_set(ti, q, NULL), "11 13");
}

/* A keyword range compares the values' bytes, as Elasticsearch orders keyword terms: a prefix
 * sorts before what extends it. A boolean has no range. */
static void test_keyword_ranges_compare_bytes(void **state)
{
    const textidx_t *ti = *state;
    textq_t *q;
    assert_string_equal(run_set(ti, range("tag", "b", NULL), NULL), "12 13 14");
    assert_int_equal(textq_range("tag", "b", 1, "quiz", 0, &q), 0);
    assert_string_equal(run_set(ti, q, NULL), "12");
    assert_string_equal(run_set(ti, range("tag", NULL, "animals"), NULL), "10 11 15");
    assert_int_equal(textq_range("tag", "animal", 0, "animals", 1, &q), 0);
    assert_string_equal(run_set(ti, q, NULL), "10 11 15");
    assert_int_equal(textq_range("tag", "animals", 0, "news", 0, &q), 0);
    assert_string_equal(run_set(ti, q, NULL), "");
    assert_string_equal(run_set(ti, range("tag", "Z", "a"), NULL), ""); /* upper case first */
    textidx_result_t res;
    textidx_search_opts_t o = {NULL, 5, 0, NULL, 0};
    cdn_err_t err;
    q = range("flag", "false", "true");
    assert_int_equal(textidx_search(ti, q, &o, &res, &err), CDN_ERR_INVALID);
    assert_non_null(strstr(err.msg, "range.flag"));
    textq_free(q);
}

static void test_bad_range_value_is_an_error_naming_the_field(void **state)
{
    const textidx_t *ti = *state;
    textq_t *q = range("price", "cheap", NULL);
    textidx_result_t res;
    textidx_search_opts_t o = {NULL, 5, 0, NULL, 0};
    cdn_err_t err;
    assert_int_equal(textidx_search(ti, q, &o, &res, &err), CDN_ERR_INVALID);
    assert_non_null(strstr(err.msg, "range.price.gte"));
    assert_non_null(strstr(err.msg, "cheap"));
    textq_free(q);
}

static void test_bool_must_should_filter_must_not(void **state)
{
    const textidx_t *ti = *state;
    textq_t *b;
    /* must quick, filter animals, must_not lazy */
    assert_int_equal(textq_bool(&b), 0);
    textq_bool_add(b, TEXTQ_MUST, match("body", "quick"));
    textq_bool_add(b, TEXTQ_FILTER, term("tag", "animals"));
    textq_bool_add(b, TEXTQ_MUST_NOT, match("body", "lazy"));
    assert_string_equal(run_set(ti, b, NULL), "11");
    /* should only: at least one must match */
    assert_int_equal(textq_bool(&b), 0);
    textq_bool_add(b, TEXTQ_SHOULD, match("body", "photons"));
    textq_bool_add(b, TEXTQ_SHOULD, match("body", "bears"));
    assert_string_equal(run_set(ti, b, NULL), "13 14");
    /* filter only: every doc of the filter, score 0 */
    assert_int_equal(textq_bool(&b), 0);
    textq_bool_add(b, TEXTQ_FILTER, range("price", "20", NULL));
    assert_string_equal(run_set(ti, b, NULL), "11 13 15");
    /* with a filter, should is optional and only reorders: news doc ranks first */
    assert_int_equal(textq_bool(&b), 0);
    textq_bool_add(b, TEXTQ_FILTER, term("flag", "true"));
    textq_bool_add(b, TEXTQ_SHOULD, match("body", "news"));
    assert_string_equal(run(ti, b, NULL), "12 10 14");
    /* minimum_should_match 2 of 3 */
    assert_int_equal(textq_bool(&b), 0);
    textq_bool_add(b, TEXTQ_SHOULD, match("body", "quick"));
    textq_bool_add(b, TEXTQ_SHOULD, match("body", "brown"));
    textq_bool_add(b, TEXTQ_SHOULD, match("body", "fox"));
    b->msm = (textq_msm_t){1, 2, 0};
    assert_string_equal(run_set(ti, b, NULL), "10 11 12");
    /* nested: bool in must_not */
    textq_t *inner;
    assert_int_equal(textq_bool(&inner), 0);
    textq_bool_add(inner, TEXTQ_SHOULD, term("tag", "news"));
    textq_bool_add(inner, TEXTQ_SHOULD, term("tag", "quiz"));
    assert_int_equal(textq_bool(&b), 0);
    textq_bool_add(b, TEXTQ_MUST, match("body", "quick fox"));
    textq_bool_add(b, TEXTQ_MUST_NOT, inner);
    assert_string_equal(run_set(ti, b, NULL), "10 11");
}

static void test_permissions_hide_docs_from_every_query_kind(void **state)
{
    const textidx_t *ti = *state;
    roaring_bitmap_t *a = roaring_bitmap_create();
    roaring_bitmap_add(a, 11);
    roaring_bitmap_add(a, 14);
    textq_t *q;
    assert_string_equal(run_set(ti, match("body", "quick brown fox"), a), "11 14");
    assert_string_equal(run_set(ti, phrase("body", "quick brown", 0), a), "");
    assert_string_equal(run_set(ti, term("tag", "animals"), a), "11");
    assert_int_equal(textq_prefix("body", "qu", &q), 0);
    assert_string_equal(run_set(ti, q, a), "11 14");
    assert_int_equal(textq_new(TEXTQ_MATCH_ALL, &q), 0);
    assert_string_equal(run_set(ti, q, a), "11 14");
    assert_int_equal(textq_bool(&q), 0);
    textq_bool_add(q, TEXTQ_FILTER, range("price", "0", "100"));
    assert_string_equal(run_set(ti, q, a), "11 14");
    uint32_t ids[] = {10, 11};
    assert_int_equal(textq_ids(ids, 2, &q), 0);
    assert_string_equal(run_set(ti, q, a), "11");
    roaring_bitmap_free(a);
}

static void test_metadata_of_deleted_doc_is_not_returned(void **state)
{
    textidx_t *ti = *state;
    assert_int_equal(textidx_delete_doc(ti, 12), 0);
    assert_string_equal(run_set(ti, term("tag", "news"), NULL), "");
    assert_string_equal(run_set(ti, match("body", "news"), NULL), "");
    assert_string_equal(run_set(ti, range("price", "0", "6"), NULL), "");
}

static void test_dates_parse_iso_forms_and_refuse_partial_ones(void **state)
{
    (void)state;
    double ms;
    assert_int_equal(fieldidx_parse_date("1970-01-02", 10, &ms), 0);
    assert_true(ms == 86400000.0);
    assert_int_equal(fieldidx_parse_date("1970-01-01T00:00:01.5Z", 22, &ms), 0);
    assert_true(ms == 1500.0);
    assert_int_equal(fieldidx_parse_date("1970-01-01T01:00:00+01:00", 25, &ms), 0);
    assert_true(ms == 0.0);
    assert_int_equal(fieldidx_parse_date("1970", 4, &ms), 0);
    assert_true(ms == 0.0);
    assert_int_equal(fieldidx_parse_date("86400000", 8, &ms), 0); /* epoch millis */
    assert_true(ms == 86400000.0);
    /* a partial date, read from a buffer that continues: only len bytes may be looked at */
    assert_int_equal(fieldidx_parse_date("2024-05-01", 7, &ms), CDN_ERR_INVALID);
    assert_int_equal(fieldidx_parse_date("2024-13-01", 10, &ms), CDN_ERR_INVALID);
    assert_int_equal(fieldidx_parse_date("yesterday", 9, &ms), CDN_ERR_INVALID);
    assert_int_equal(fieldidx_parse_date("2024-05-01T10", 13, &ms), CDN_ERR_INVALID);
}

/* Filters read dates with the conditions' parser (base/date.h): the forms only conditions took
 * before (lowercase t and z) select the same documents, and a day its month lacks is refused. */
static void test_filter_dates_take_the_forms_conditions_take(void **state)
{
    const textidx_t *ti = *state;
    textq_t *q;
    assert_string_equal(
        run_set(ti, range("date", "2023-12-31t23:00:00z", "2024-01-05t00:00:00z"), NULL), "10 12");
    assert_string_equal(run_set(ti, term("date", "2024-01-05t00:00:00z"), NULL), "10");
    assert_int_equal(textq_range("date", "2023-02-29", 1, NULL, 1, &q), 0);
    textidx_result_t res;
    textidx_search_opts_t o = {NULL, 20, 0, NULL, 0};
    assert_int_equal(textidx_search(ti, q, &o, &res, NULL), CDN_ERR_INVALID);
    textq_free(q);
}

/* textidx_filter keeps exactly the allowed docs a ranked search of the same query returns, for
 * every kind of query, under every allowed set (none, some, all, one), deleted docs excluded. */
static void test_filter_context_equals_the_ranked_matches(void **state)
{
    textidx_t *ti = *state;
    static const char *const queries[] = {
        "{\"term\":{\"tag\":\"animals\"}}",
        "{\"terms\":{\"tag\":[\"news\",\"quiz\"]}}",
        "{\"range\":{\"price\":{\"gte\":10,\"lt\":50}}}",
        "{\"range\":{\"date\":{\"gte\":\"2024-01-01\"}}}",
        "{\"term\":{\"flag\":true}}",
        "{\"exists\":{\"field\":\"price\"}}",
        "{\"ids\":{\"values\":[11,13,99]}}",
        "{\"match\":{\"body\":\"quick fox\"}}",
        "{\"match_phrase\":{\"body\":\"brown fox\"}}",
        "{\"prefix\":{\"title\":\"qu\"}}",
        "{\"match_all\":{}}",
        "{\"bool\":{\"filter\":[{\"term\":{\"tag\":\"animals\"}}],\"must_not\":[{"
        "\"term\":{\"flag\":true}}]}}",
        "{\"bool\":{\"should\":[{\"term\":{\"tag\":\"news\"}},{\"range\":{\"price\":{"
        "\"gt\":40}}}],\"minimum_should_match\":1}}",
        "{\"bool\":{\"must_not\":[{\"match_all\":{}}]}}",
        "{\"bool\":{\"must\":[{\"match\":{\"body\":\"brown\"}}],\"filter\":[{\"exists\":{"
        "\"field\":\"tag\"}}]}}",
        /* nested, as an authorizer's plan becomes: sets all the way down */
        "{\"bool\":{\"filter\":[{\"bool\":{\"should\":[{\"term\":{\"tag\":\"news\"}},{"
        "\"bool\":{\"filter\":[{\"exists\":{\"field\":\"flag\"}}],\"must_not\":[{\"term\":"
        "{\"flag\":false}}]}}],\"minimum_should_match\":1}}],\"must_not\":[{\"range\":{"
        "\"price\":{\"gte\":50}}}]}}",
        /* optional clauses beside a filter: they do not narrow */
        "{\"bool\":{\"filter\":[{\"term\":{\"tag\":\"animals\"}}],\"should\":[{\"term\":"
        "{\"flag\":true}}]}}",
        /* two of three optional clauses: not sets alone, ranked then kept */
        "{\"bool\":{\"should\":[{\"term\":{\"tag\":\"animals\"}},{\"term\":{\"flag\":"
        "true}},{\"range\":{\"price\":{\"lt\":20}}}],\"minimum_should_match\":2}}",
        "{\"terms\":{\"body\":[\"fox\",\"dog\"]}}",
    };
    uint32_t sets[][NDOCS + 1] = {{10, 11, 12, 13, 14, 15}, {11, 12, 15}, {14}, {0}};
    size_t nset[] = {6, 3, 1, 0};
    assert_int_equal(textidx_delete_doc(ti, 13), 0); /* a dead doc a filter must not bring back */
    for (size_t qi = 0; qi < sizeof queries / sizeof *queries; qi++) {
        json_t *j = json_loads(queries[qi], 0, NULL);
        assert_non_null(j);
        for (size_t si = 0; si < 4; si++) {
            textq_t *q;
            assert_int_equal(textq_parse_es(j, &q, NULL), 0);
            roaring_bitmap_t *allowed = roaring_bitmap_of_ptr(nset[si], sets[si]);
            textidx_result_t res;
            textidx_search_opts_t o = {allowed, 100, 1, NULL, 0};
            assert_int_equal(textidx_search(ti, q, &o, &res, NULL), 0);
            roaring_bitmap_t *want = roaring_bitmap_create();
            for (size_t h = 0; h < res.n; h++)
                roaring_bitmap_add(want, res.hits[h].id);
            textidx_result_free(&res);
            assert_int_equal(textidx_filter(ti, q, allowed, NULL), 0);
            if (!roaring_bitmap_equals(allowed, want))
                fail_msg("%s over set %zu: filter keeps %llu docs, the search returns %llu",
                         queries[qi], si,
                         (unsigned long long)roaring_bitmap_get_cardinality(allowed),
                         (unsigned long long)roaring_bitmap_get_cardinality(want));
            assert_false(roaring_bitmap_contains(allowed, 13));
            roaring_bitmap_free(want);
            roaring_bitmap_free(allowed);
            textq_free(q);
        }
        json_decref(j);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_phrase_needs_adjacent_terms_unless_slop_allows, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_exact_phrase_scores_above_sloppy_match, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_fuzzy_finds_terms_within_auto_edits, setup, teardown),
        cmocka_unit_test_setup_teardown(test_prefix_on_text_and_keyword_fields, setup, teardown),
        cmocka_unit_test_setup_teardown(test_match_operator_and_minimum_should_match, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_english_title_matches_stemmed_forms, setup, teardown),
        cmocka_unit_test_setup_teardown(test_multi_match_most_fields_sums_and_best_fields_takes_max,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(test_metadata_filters_term_terms_range_exists_ids, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_keyword_ranges_compare_bytes, setup, teardown),
        cmocka_unit_test_setup_teardown(test_bad_range_value_is_an_error_naming_the_field, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_bool_must_should_filter_must_not, setup, teardown),
        cmocka_unit_test_setup_teardown(test_permissions_hide_docs_from_every_query_kind, setup,
                                        teardown),
        cmocka_unit_test(test_dates_parse_iso_forms_and_refuse_partial_ones),
        cmocka_unit_test_setup_teardown(test_filter_dates_take_the_forms_conditions_take, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_filter_context_equals_the_ranked_matches, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_metadata_of_deleted_doc_is_not_returned, setup,
                                        teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
