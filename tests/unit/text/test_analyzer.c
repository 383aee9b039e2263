/* test_analyzer.c: what each analyzer makes of text: stemming, stop words with position gaps,
 * Unicode case folding and mark stripping, keyword and whitespace behaviour, number tokens.
 * Relies on cmocka and text/analyzer (libutf8proc, libstemmer). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h> /* own block: it needs setjmp.h, stdarg.h, stddef.h first */

#include "text/analyzer.h"

/* Runs analyzer `name` on text and renders "term@pos term@pos ..." into out. */
static void analyze(const char *name, const char *text, char *out, size_t cap)
{
    analyzer_spec_t spec;
    analyzer_t a;
    analyzer_tokens_t t = {0};
    assert_int_equal(analyzer_spec_parse(name, &spec, NULL), 0);
    assert_int_equal(analyzer_init(&a, &spec, NULL), 0);
    assert_int_equal(analyzer_run(&a, text, strlen(text), &t), 0);
    size_t o = 0;
    out[0] = 0;
    for (size_t i = 0; i < t.n; i++)
        o += (size_t)snprintf(out + o, cap - o, "%s%.*s@%u", i ? " " : "", (int)t.tok[i].len,
                              t.pool + t.tok[i].off, t.tok[i].pos);
    analyzer_tokens_free(&t);
    analyzer_destroy(&a);
}

static void test_english_stems_with_porter_and_drops_stop_words_keeping_gaps(void **state)
{
    (void)state;
    char out[512];
    analyze("english", "The Running of the Studies", out, sizeof out);
    assert_string_equal(out, "run@1 studi@4");
    analyze("english", "The king's horses", out, sizeof out);
    assert_string_equal(out, "king@1 hors@2");
}

static void test_english_snowball_differs_from_porter_where_the_algorithms_do(void **state)
{
    (void)state;
    char p[128], s[128];
    analyze("english", "generously", p, sizeof p);
    analyze("english:snowball", "generously", s, sizeof s);
    assert_string_equal(p, "gener@0");
    assert_string_equal(s, "generous@0");
}

static void test_english_nostop_keeps_stop_words(void **state)
{
    (void)state;
    char out[128];
    analyze("english:nostop", "the cat", out, sizeof out);
    assert_string_equal(out, "the@0 cat@1");
}

static void test_standard_folds_unicode_case_without_stripping_marks(void **state)
{
    (void)state;
    char out[256];
    analyze("standard", "STRASSE Straße ÉCOLE Ǆ", out, sizeof out);
    assert_string_equal(out, "strasse@0 strasse@1 école@2 dž@3");
}

static void test_english_strips_diacritics(void **state)
{
    (void)state;
    char out[128];
    analyze("english", "Café naïve", out, sizeof out);
    assert_string_equal(out, "cafe@0 naiv@1");
}

static void test_standard_keeps_numbers_and_apostrophes_inside_words(void **state)
{
    (void)state;
    char out[256];
    analyze("standard", "1,000 genomes; 3.5 mg, don't U.S.A. 0-dimensional", out, sizeof out);
    assert_string_equal(out, "1,000@0 genomes@1 3.5@2 mg@3 don't@4 u.s.a@5 0@6 dimensional@7");
}

static void test_ideographs_are_one_token_each(void **state)
{
    (void)state;
    char out[128];
    analyze("standard", "東京abc", out, sizeof out);
    assert_string_equal(out, "東@0 京@1 abc@2");
}

static void test_keyword_keeps_the_whole_value_unchanged(void **state)
{
    (void)state;
    char out[128];
    analyze("keyword", "  Mixed Case/Value ", out, sizeof out);
    assert_string_equal(out, "  Mixed Case/Value @0");
}

static void test_whitespace_splits_only_on_spaces_and_keeps_case(void **state)
{
    (void)state;
    char out[128];
    analyze("whitespace", "Foo-Bar  baz\tQUX\u00a0end", out, sizeof out);
    assert_string_equal(out, "Foo-Bar@0 baz@1 QUX@2 end@3");
}

static void test_multi_valued_fields_are_100_positions_apart(void **state)
{
    (void)state;
    analyzer_spec_t spec;
    analyzer_t a;
    analyzer_tokens_t t = {0};
    assert_int_equal(analyzer_spec_parse("standard", &spec, NULL), 0);
    assert_int_equal(analyzer_init(&a, &spec, NULL), 0);
    assert_int_equal(analyzer_run(&a, "a b", 3, &t), 0);
    assert_int_equal(analyzer_run(&a, "c", 1, &t), 0);
    assert_int_equal(t.n, 3);
    assert_int_equal(t.tok[2].pos, 102);
    analyzer_tokens_free(&t);
    analyzer_destroy(&a);
}

static void test_unknown_analyzer_name_is_rejected_with_the_choices(void **state)
{
    (void)state;
    analyzer_spec_t spec;
    cdn_err_t err;
    assert_int_equal(analyzer_spec_parse("klingon", &spec, &err), CDN_ERR_INVALID);
    assert_non_null(strstr(err.msg, "klingon"));
    assert_non_null(strstr(err.msg, "english"));
    assert_int_equal(analyzer_spec_parse("english:fast", &spec, &err), CDN_ERR_INVALID);
}

static void test_invalid_utf8_is_a_separator(void **state)
{
    (void)state;
    char out[128];
    analyze("standard",
            "ab\xff\xfe"
            "cd",
            out, sizeof out);
    assert_string_equal(out, "ab@0 cd@1");
}

static void test_overlong_tokens_are_dropped_but_keep_their_position(void **state)
{
    (void)state;
    char text[600], out[128];
    memset(text, 'x', 300);
    memcpy(text + 300, " tail", 6);
    analyze("standard", text, out, sizeof out);
    assert_string_equal(out, "tail@1");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_english_stems_with_porter_and_drops_stop_words_keeping_gaps),
        cmocka_unit_test(test_english_snowball_differs_from_porter_where_the_algorithms_do),
        cmocka_unit_test(test_english_nostop_keeps_stop_words),
        cmocka_unit_test(test_standard_folds_unicode_case_without_stripping_marks),
        cmocka_unit_test(test_english_strips_diacritics),
        cmocka_unit_test(test_standard_keeps_numbers_and_apostrophes_inside_words),
        cmocka_unit_test(test_ideographs_are_one_token_each),
        cmocka_unit_test(test_keyword_keeps_the_whole_value_unchanged),
        cmocka_unit_test(test_whitespace_splits_only_on_spaces_and_keeps_case),
        cmocka_unit_test(test_multi_valued_fields_are_100_positions_apart),
        cmocka_unit_test(test_unknown_analyzer_name_is_rejected_with_the_choices),
        cmocka_unit_test(test_invalid_utf8_is_a_separator),
        cmocka_unit_test(test_overlong_tokens_are_dropped_but_keep_their_position),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
