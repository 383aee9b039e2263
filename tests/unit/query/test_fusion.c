/* test_fusion.c: reciprocal rank fusion and min-max linear fusion of ranked lists.
 * Relies on cmocka and query/fusion; expected values follow the formulas, computed here. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h> /* own block: it needs setjmp.h, stdarg.h, stddef.h first */

#include "base/err.h"
#include "query/fusion.h"

static void test_rrf_sums_reciprocal_ranks_with_k_60(void **state)
{
    (void)state;
    uint32_t a[] = {1, 2, 3}, b[] = {3, 4, 1};
    fusion_list_t l[2] = {{a, NULL, 3}, {b, NULL, 3}};
    fusion_hit_t out[10];
    size_t n;
    assert_int_equal(fusion_rrf(l, 2, 60, 0, 10, out, &n), 0);
    assert_int_equal(n, 4);
    /* doc 1: 1/61 + 1/63; doc 3: 1/63 + 1/61: a tie, broken by id */
    assert_int_equal(out[0].id, 1);
    assert_int_equal(out[1].id, 3);
    assert_true(fabs(out[0].score - (1.0 / 61 + 1.0 / 63)) < 1e-6);
    assert_true(fabs(out[1].score - out[0].score) < 1e-7);
    assert_int_equal(out[2].id, 2); /* 2 and 4 are both rank 2 once: id order */
    assert_int_equal(out[3].id, 4);
    assert_true(fabs(out[2].score - 1.0 / 62) < 1e-6);
}

static void test_rrf_rank_window_ignores_deeper_ranks(void **state)
{
    (void)state;
    uint32_t a[] = {1, 2, 3, 4}, b[] = {5, 6, 7, 4};
    fusion_list_t l[2] = {{a, NULL, 4}, {b, NULL, 4}};
    fusion_hit_t out[10];
    size_t n;
    assert_int_equal(fusion_rrf(l, 2, 0, 2, 10, out, &n), 0);
    assert_int_equal(n, 4); /* 1, 2, 5, 6: doc 4 is beyond both windows */
    for (size_t i = 0; i < n; i++)
        assert_true(out[i].id != 4 && out[i].id != 3 && out[i].id != 7);
}

static void test_rrf_keeps_k_and_handles_empty_lists(void **state)
{
    (void)state;
    uint32_t a[] = {9, 8, 7};
    fusion_list_t l[2] = {{a, NULL, 3}, {NULL, NULL, 0}};
    fusion_hit_t out[2];
    size_t n;
    assert_int_equal(fusion_rrf(l, 2, 60, 0, 2, out, &n), 0);
    assert_int_equal(n, 2);
    assert_int_equal(out[0].id, 9);
    assert_int_equal(out[1].id, 8);
    fusion_list_t bad = {NULL, NULL, 3};
    assert_int_equal(fusion_rrf(&bad, 1, 60, 0, 2, out, &n), CDN_ERR_INVALID);
}

static void test_rrf_counts_a_repeated_id_once_per_list(void **state)
{
    (void)state;
    uint32_t a[] = {5, 5, 6};
    fusion_list_t l = {a, NULL, 3};
    fusion_hit_t out[3];
    size_t n;
    assert_int_equal(fusion_rrf(&l, 1, 60, 0, 3, out, &n), 0);
    assert_int_equal(n, 2);
    assert_true(fabs(out[0].score - 1.0 / 61) < 1e-7);
}

static void test_linear_fusion_normalises_min_max_and_weights(void **state)
{
    (void)state;
    uint32_t a[] = {1, 2, 3}, b[] = {3, 1};
    float as[] = {10, 6, 2}, bs[] = {0.9f, 0.1f};
    fusion_list_t l[2] = {{a, as, 3}, {b, bs, 2}};
    float w[2] = {1.0f, 2.0f};
    fusion_hit_t out[5];
    size_t n;
    assert_int_equal(fusion_linear(l, w, 2, 0, 5, out, &n), 0);
    assert_int_equal(n, 3);
    /* doc 1: 1 + 2*0 = 1; doc 2: 0.5; doc 3: 0 + 2*1 = 2 */
    assert_int_equal(out[0].id, 3);
    assert_true(fabs(out[0].score - 2.0) < 1e-6);
    assert_int_equal(out[1].id, 1);
    assert_true(fabs(out[1].score - 1.0) < 1e-6);
    assert_int_equal(out[2].id, 2);
    assert_true(fabs(out[2].score - 0.5) < 1e-6);
    fusion_list_t noscores = {a, NULL, 3};
    assert_int_equal(fusion_linear(&noscores, NULL, 1, 0, 5, out, &n), CDN_ERR_INVALID);
}

static void test_linear_fusion_with_equal_scores_gives_one(void **state)
{
    (void)state;
    uint32_t a[] = {4, 2};
    float as[] = {3, 3};
    fusion_list_t l = {a, as, 2};
    fusion_hit_t out[2];
    size_t n;
    assert_int_equal(fusion_linear(&l, NULL, 1, 0, 2, out, &n), 0);
    assert_int_equal(n, 2);
    assert_true(out[0].score == 1.0f && out[1].score == 1.0f);
    assert_int_equal(out[0].id, 2);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rrf_sums_reciprocal_ranks_with_k_60),
        cmocka_unit_test(test_rrf_rank_window_ignores_deeper_ranks),
        cmocka_unit_test(test_rrf_keeps_k_and_handles_empty_lists),
        cmocka_unit_test(test_rrf_counts_a_repeated_id_once_per_list),
        cmocka_unit_test(test_linear_fusion_normalises_min_max_and_weights),
        cmocka_unit_test(test_linear_fusion_with_equal_scores_gives_one),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
