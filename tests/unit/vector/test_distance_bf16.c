/* test_distance_bf16.c: bf16 conversion, bf16 kernels against the float kernels and the portable
 * kernel against every SIMD set this CPU runs, and HNSW builds in bf16 against float builds.
 * Relies on cmocka and vector/distance_bf16.h, vector/hnsw.h. */
/* cmocka.h needs these four first. */
// clang-format off
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
// clang-format on

#include <math.h>

#include "base/err.h"
#include "unit/vector/hnsw_testutil.h"
#include "vector/distance_bf16.h"

static void test_bf16_conversion_rounds_to_nearest_even_and_pads_with_zeros(void **state)
{
    (void)state;
    float in[5] = {1.0f, -2.5f, 0.0f, 1.00390625f /* 1 + 2^-8: a tie, rounds to even (1) */,
                   1.01171875f /* 1 + 3 * 2^-8: a tie, rounds up to 1 + 2^-6 */};
    uint16_t out[8];
    vec_bf16_from_f32(in, 5, out, 8);
    assert_float_equal(vec_bf16_to_f32(out[0]), 1.0f, 0);
    assert_float_equal(vec_bf16_to_f32(out[1]), -2.5f, 0);
    assert_float_equal(vec_bf16_to_f32(out[2]), 0.0f, 0);
    assert_float_equal(vec_bf16_to_f32(out[3]), 1.0f, 0);
    assert_float_equal(vec_bf16_to_f32(out[4]), 1.015625f, 0);
    for (int i = 5; i < 8; i++)
        assert_int_equal(out[i], 0);
    float nan = NAN;
    vec_bf16_from_f32(&nan, 1, out, 1);
    assert_true(isnan(vec_bf16_to_f32(out[0])));
    /* Any float comes back within half a bf16 step (8 significant bits: 2^-8 relative). */
    tu_rng_t r = {3};
    for (int i = 0; i < 1000; i++) {
        float x = tu_gauss(&r) * 100.0f;
        vec_bf16_from_f32(&x, 1, out, 1);
        assert_true(fabsf(vec_bf16_to_f32(out[0]) - x) <= fabsf(x) * (1.0f / 256.0f));
    }
    assert_int_equal(vec_bf16_padded(1), 32);
    assert_int_equal(vec_bf16_padded(384), 384);
    assert_int_equal(vec_bf16_padded(385), 416);
}

/* Unit rows (cosine), so absolute tolerances mean the same for every metric. */
static void test_bf16_kernels_agree_with_float_and_every_isa_with_the_portable_one(void **state)
{
    (void)state;
    const uint32_t dim = 100; /* padded to 128: the padding must add nothing */
    const uint32_t rows = 40;
    float *f = tu_clustered(rows, dim, 4, 0.4f, 11, 1, NULL);
    size_t pad = vec_bf16_padded(dim);
    uint16_t *b = malloc(rows * pad * sizeof(uint16_t));
    for (uint32_t i = 0; i < rows; i++)
        vec_bf16_from_f32(f + (size_t)i * dim, dim, b + i * pad, pad);
    vec_metric_t ms[3] = {VEC_METRIC_COSINE, VEC_METRIC_DOT, VEC_METRIC_L2};
    int sets = 0;
    for (int m = 0; m < 3; m++) {
        vec_dist_fn fl = vec_dist_for(ms[m]);
        vec_bf16_dist_fn ref = vec_bf16_dist_for_isa(ms[m], VEC_BF16_SCALAR);
        assert_non_null(ref);
        for (int isa = VEC_BF16_SCALAR; isa <= VEC_BF16_AVX512_BF16; isa++) {
            vec_bf16_dist_fn k = vec_bf16_dist_for_isa(ms[m], (vec_bf16_isa_t)isa);
            if (!k) {
                assert_true(isa > (int)vec_bf16_isa_best());
                continue;
            }
            sets++;
            for (uint32_t i = 0; i < rows; i++)
                for (uint32_t j = 0; j < rows; j += 7) {
                    float want = fl(f + (size_t)i * dim, f + (size_t)j * dim, dim);
                    float got = k(b + i * pad, b + j * pad, pad);
                    float port = ref(b + i * pad, b + j * pad, pad);
                    /* bf16 inputs: each product off by < 2^-8 relative; unit rows bound it. */
                    assert_true(fabsf(got - want) < 1e-2f);
                    /* Same bf16 inputs, only the float summation order differs. */
                    assert_true(fabsf(got - port) < 1e-4f);
                }
            vec_bf16_dist4_fn k4 = vec_bf16_dist4_for_isa(ms[m], (vec_bf16_isa_t)isa);
            assert_non_null(k4);
            for (uint32_t i = 0; i + 4 <= rows; i += 4) {
                const uint16_t *r[4] = {b + i * pad, b + (i + 1) * pad, b + (i + 2) * pad,
                                        b + (i + 3) * pad};
                float out[4];
                k4(b + 5 * pad, r, pad, out);
                for (int j = 0; j < 4; j++)
                    assert_true(fabsf(out[j] - ref(b + 5 * pad, r[j], pad)) < 1e-4f);
            }
        }
    }
    assert_true(sets >= 3);
    assert_null(vec_bf16_dist_for_isa((vec_metric_t)7, VEC_BF16_SCALAR));
    assert_null(vec_bf16_dist4_for_isa((vec_metric_t)7, VEC_BF16_SCALAR));
    free(b);
    free(f);
}

/* A bf16 build routes as well as a float one (its lists are chosen from distances off by about
 * 1e-3); float searches over it find the same neighbours. */
static void test_bf16_build_recall_matches_float_build(void **state)
{
    (void)state;
    const uint32_t n = 4000, dim = 48;
    float *data = tu_clustered(n, dim, 20, 0.6f, 12, 1, NULL);
    vec_view_t v = {data, dim, dim, n};
    hnsw_t *fl, *bf;
    assert_int_equal(tu_build_graph_ex(&v, VEC_METRIC_COSINE, 64, 2, HNSW_BUILD_FLOAT, &fl), 0);
    assert_int_equal(tu_build_graph_ex(&v, VEC_METRIC_COSINE, 64, 2, HNSW_BUILD_BF16, &bf), 0);
    double rf = tu_self_recall(fl, &v, VEC_METRIC_COSINE, n, 32),
           rb = tu_self_recall(bf, &v, VEC_METRIC_COSINE, n, 32);
    print_message("recall@10 ef 32: float build %.4f, bf16 build %.4f\n", rf, rb);
    assert_true(rf >= 0.9);
    assert_true(rb >= rf - 0.02);
    hnsw_info_t info;
    hnsw_get_info(bf, &info);
    assert_int_equal(info.nodes, n);
    uint32_t id = 0;
    assert_int_equal(hnsw_build_ex(bf, &v, &id, 1, 1, (hnsw_build_precision_t)9), CDN_ERR_INVALID);
    hnsw_free(fl);
    hnsw_free(bf);
    free(data);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_bf16_conversion_rounds_to_nearest_even_and_pads_with_zeros),
        cmocka_unit_test(test_bf16_kernels_agree_with_float_and_every_isa_with_the_portable_one),
        cmocka_unit_test(test_bf16_build_recall_matches_float_build),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
