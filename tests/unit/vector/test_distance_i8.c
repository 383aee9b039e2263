/* test_distance_i8.c: 8-bit codes of float rows (maps, rounding, saturation), the kernels over
 * them (every SIMD set gives the portable kernel's bits, one row or four, up to the largest
 * dimension), and HNSW builds on 8-bit copies (made for the build, or kept by the caller)
 * against float builds. Relies on cmocka and vector/distance_i8.h, vector/hnsw.h. */
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
#include "vector/distance_i8.h"

static void test_maps_centre_products_on_zero_and_differences_on_the_range(void **state)
{
    (void)state;
    vec_i8_map_t c = vec_i8_map_for(VEC_METRIC_COSINE, -0.25f, 0.5f);
    assert_float_equal(c.offset, 0.0f, 0);
    assert_float_equal(c.scale, 127.0f / 0.5f, 1e-3);
    assert_float_equal(c.unit, 1.0f / (c.scale * c.scale), 1e-9);
    vec_i8_map_t d = vec_i8_map_for(VEC_METRIC_DOT, -3.0f, 1.0f);
    assert_float_equal(d.offset, 0.0f, 0);
    assert_float_equal(d.scale, 127.0f / 3.0f, 1e-4);
    vec_i8_map_t l = vec_i8_map_for(VEC_METRIC_L2, 0.0f, 255.0f); /* pixels: a step of ~1 */
    assert_float_equal(l.offset, 127.5f, 0);
    assert_float_equal(l.scale, 127.0f / 127.5f, 1e-6);
    vec_i8_map_t z = vec_i8_map_for(VEC_METRIC_L2, 2.0f, 2.0f);
    assert_float_equal(z.scale, 1.0f, 0);
    vec_i8_map_t inf = vec_i8_map_for(VEC_METRIC_DOT, -INFINITY, 1.0f);
    assert_float_equal(inf.scale, 1.0f, 0);
    assert_int_equal(vec_i8_padded(1), 64);
    assert_int_equal(vec_i8_padded(384), 384);
    assert_int_equal(vec_i8_padded(385), 448);
}

/* A view's map covers its values, widened by the headroom around the middle, and for cosine
 * the widening stops at +-1 (unit rows) but never cuts a value off. */
static void test_a_views_map_covers_its_rows_with_headroom(void **state)
{
    (void)state;
    float rows[6] = {-0.3f, 0.5f, 0.1f, 0.2f, 0.0f, -0.1f}; /* 3 rows of 2 */
    vec_view_t v = {rows, 2, 2, 3};
    vec_i8_map_t c = vec_i8_map_of(&v, VEC_METRIC_COSINE, 1.25f);
    assert_float_equal(c.scale, 127.0f / 0.625f, 1e-3);
    c = vec_i8_map_of(&v, VEC_METRIC_COSINE, 4.0f);
    assert_float_equal(c.scale, 127.0f, 1e-4);
    float wide[2] = {1.5f, -0.2f}; /* not a unit row: its own range is kept */
    vec_view_t w = {wide, 2, 2, 1};
    assert_float_equal(vec_i8_map_of(&w, VEC_METRIC_COSINE, 2.0f).scale, 127.0f / 1.5f, 1e-4);
    float l2[4] = {2.0f, 6.0f, 3.0f, 5.0f};
    vec_view_t l = {l2, 2, 2, 2};
    vec_i8_map_t m = vec_i8_map_of(&l, VEC_METRIC_L2, 1.5f);
    assert_float_equal(m.offset, 4.0f, 0);
    assert_float_equal(m.scale, 127.0f / 3.0f, 1e-4);
    int8_t out[64];
    for (uint32_t r = 0; r < 3; r++)
        assert_int_equal(vec_i8_from_f32(rows + 2 * r, 2, c, out, 64), 0);
}

/* Rows spread over their range fit one scale; rows of size 1 with one row of 1000s do not
 * (the scale the far row needs leaves the rest a fraction of a code apart). */
static void test_a_few_far_rows_make_a_map_that_does_not_fit(void **state)
{
    (void)state;
    const uint32_t n = 500, dim = 16;
    float *x = tu_clustered(n, dim, 5, 0.5f, 3, 0, NULL);
    vec_view_t v = {x, dim, dim, n};
    assert_true(vec_i8_map_fits(&v, vec_i8_map_of(&v, VEC_METRIC_L2, 1.0f)));
    assert_true(vec_i8_map_fits(&v, vec_i8_map_of(&v, VEC_METRIC_DOT, 1.25f)));
    for (uint32_t d = 0; d < dim; d++)
        x[7 * dim + d] = 1000.0f;
    assert_false(vec_i8_map_fits(&v, vec_i8_map_of(&v, VEC_METRIC_L2, 1.0f)));
    assert_false(vec_i8_map_fits(&v, vec_i8_map_of(&v, VEC_METRIC_DOT, 1.0f)));
    vec_view_t none = {x, dim, dim, 0};
    assert_true(vec_i8_map_fits(&none, vec_i8_map_of(&none, VEC_METRIC_L2, 1.0f)));
    free(x);
}

/* Past VEC_I8_FIT_SAMPLE rows the spread comes from evenly spaced rows (here every third). Values
 * uniform in [-1, 1] spread 0.5 from their mean; three unsampled rows at +-F stretch the range
 * to [-F, F], a code to F / 127, so the spread spans 63.5 / F codes: about 6.4 (fits) at F = 10
 * and 3.2 (does not) at F = 20, the verdict every row would give. */
static void test_a_sampled_spread_judges_large_views_as_every_row_would(void **state)
{
    (void)state;
    const uint32_t n = 3 * VEC_I8_FIT_SAMPLE + 7, dim = 4;
    float *x = malloc((size_t)n * dim * sizeof(float));
    assert_non_null(x);
    uint64_t s = 12345;
    for (size_t i = 0; i < (size_t)n * dim; i++) {
        s = s * 6364136223846793005ull + 1442695040888963407ull;
        x[i] = (float)((double)(s >> 11) / 9007199254740992.0 * 2.0 - 1.0);
    }
    vec_view_t v = {x, dim, dim, n};
    const float far[2] = {10.0f, 20.0f};
    for (int f = 0; f < 2; f++) {
        for (uint32_t r = 1; r < 10; r += 3) /* rows 1, 4, 7: never sampled */
            for (uint32_t d = 0; d < dim; d++)
                x[(size_t)r * dim + d] = (r == 4 ? -1.0f : 1.0f) * far[f];
        int fits = vec_i8_map_fits(&v, vec_i8_map_of(&v, VEC_METRIC_L2, 1.0f));
        assert_int_equal(fits, f == 0);
    }
    free(x);
}

static void test_codes_round_to_nearest_even_saturate_and_pad_with_zeros(void **state)
{
    (void)state;
    vec_i8_map_t m = {1.0f, 0.0f, 1.0f}; /* codes are the values themselves */
    float in[8] = {0.5f, 1.5f, -2.5f, 126.6f, 127.4f /* rounds to 127 */, 130.0f, -300.0f, NAN};
    int8_t out[12];
    assert_int_equal(vec_i8_from_f32(in, 8, m, out, 12), 3); /* 130, -300 and NaN */
    int8_t want[12] = {0, 2, -2, 127, 127, 127, -127, -127, 0, 0, 0, 0};
    assert_memory_equal(out, want, sizeof want);
    /* Inside the range every value comes back within half a step. */
    tu_rng_t r = {5};
    vec_i8_map_t l = vec_i8_map_for(VEC_METRIC_L2, -3.0f, 5.0f);
    for (int i = 0; i < 2000; i++) {
        float x = (float)(tu_unif(&r) * 8.0 - 3.0);
        int8_t c;
        assert_int_equal(vec_i8_from_f32(&x, 1, l, &c, 1), 0);
        assert_true(fabsf(l.offset + (float)c / l.scale - x) <= 0.5f / l.scale + 1e-6f);
    }
}

/* Integer sums are exact, so every kernel set gives the portable kernel's bits, and the
 * four-row form the one-row form's. Checked at a padded dimension and at the largest one with
 * every code at the extremes (the sums nearest to overflowing). */
static void test_every_isa_gives_the_portable_bits_one_row_or_four(void **state)
{
    (void)state;
    const uint32_t dims[2] = {100, 4096}, rows = 12;
    vec_metric_t ms[3] = {VEC_METRIC_COSINE, VEC_METRIC_DOT, VEC_METRIC_L2};
    int sets = 0;
    for (int di = 0; di < 2; di++) {
        size_t pad = vec_i8_padded(dims[di]);
        int8_t *b = calloc(rows * pad, 1);
        tu_rng_t r = {(uint64_t)di + 1};
        for (uint32_t i = 0; i < rows; i++)
            for (uint32_t d = 0; d < dims[di]; d++)
                b[i * pad + d] = di ? (int8_t)((tu_next(&r) & 1) ? 127 : -127)
                                    : (int8_t)((int)(tu_next(&r) % 255) - 127);
        for (int m = 0; m < 3; m++) {
            vec_i8_dist_fn ref = vec_i8_dist_for_isa(ms[m], VEC_I8_SCALAR);
            assert_non_null(ref);
            for (int isa = VEC_I8_SCALAR; isa <= VEC_I8_AVX512_VNNI; isa++) {
                vec_i8_dist_fn k = vec_i8_dist_for_isa(ms[m], (vec_i8_isa_t)isa);
                vec_i8_dist4_fn k4 = vec_i8_dist4_for_isa(ms[m], (vec_i8_isa_t)isa);
                if (!k) {
                    assert_true(isa > (int)vec_i8_isa_best());
                    assert_null(k4);
                    continue;
                }
                sets++;
                for (uint32_t i = 0; i + 4 <= rows; i++) {
                    const int8_t *q = b + i * pad;
                    const int8_t *four[4] = {b + ((i + 1) % rows) * pad, b + ((i + 5) % rows) * pad,
                                             b + ((i + 7) % rows) * pad, q};
                    float out[4];
                    k4(q, four, pad, 1e-4f, out);
                    for (int j = 0; j < 4; j++) {
                        float want = ref(q, four[j], pad, 1e-4f);
                        assert_memory_equal(&out[j], &want, sizeof want);
                        float one = k(q, four[j], pad, 1e-4f);
                        assert_memory_equal(&one, &want, sizeof want);
                    }
                }
            }
        }
        /* The extremes: 4096 products of +-127 * +-127 and 4096 differences of 254 squared. */
        if (di) {
            int8_t *neg = malloc(pad);
            for (size_t d = 0; d < pad; d++)
                neg[d] = (int8_t)-b[d];
            vec_i8_dist_fn l2 = vec_i8_dist_for_isa(VEC_METRIC_L2, vec_i8_isa_best());
            vec_i8_dist_fn dot = vec_i8_dist_for_isa(VEC_METRIC_DOT, vec_i8_isa_best());
            assert_float_equal(l2(b, neg, pad, 1.0f), 4096.0f * 254.0f * 254.0f, 0);
            assert_float_equal(dot(b, b, pad, 1.0f), -4096.0f * 127.0f * 127.0f, 0);
            free(neg);
        }
        free(b);
    }
    assert_true(sets >= 6);
    assert_null(vec_i8_dist_for_isa((vec_metric_t)7, VEC_I8_SCALAR));
    assert_null(vec_i8_dist4_for_isa((vec_metric_t)7, VEC_I8_SCALAR));
}

/* The codes' distances follow the float ones: within a few steps' worth on unit rows (cosine)
 * and on rows of a wide range (L2). */
static void test_code_distances_follow_float_distances(void **state)
{
    (void)state;
    const uint32_t dim = 96, rows = 30;
    vec_metric_t ms[3] = {VEC_METRIC_COSINE, VEC_METRIC_DOT, VEC_METRIC_L2};
    for (int m = 0; m < 3; m++) {
        float *f = tu_clustered(rows, dim, 3, 0.5f, 21, ms[m] == VEC_METRIC_COSINE, NULL);
        float lo = 0, hi = 0;
        for (uint32_t i = 0; i < rows * dim; i++) {
            lo = fminf(lo, f[i]);
            hi = fmaxf(hi, f[i]);
        }
        vec_i8_map_t map = vec_i8_map_for(ms[m], lo, hi);
        size_t pad = vec_i8_padded(dim);
        int8_t *b = malloc(rows * pad);
        for (uint32_t i = 0; i < rows; i++)
            assert_int_equal(vec_i8_from_f32(f + i * dim, dim, map, b + i * pad, pad), 0);
        vec_dist_fn fl = vec_dist_for(ms[m]);
        vec_i8_dist_fn k = vec_i8_dist_for_isa(ms[m], vec_i8_isa_best());
        float worst = 0;
        for (uint32_t i = 0; i < rows; i++)
            for (uint32_t j = 0; j < rows; j++) {
                float want = fl(f + i * dim, f + j * dim, dim);
                float got = k(b + i * pad, b + j * pad, pad, map.unit);
                /* each value off by at most half a step (1/254 of the range), independently:
                 * a sum of dim terms is off by far less than a hundredth of the rows' norms'
                 * product (their sum squared for L2) */
                float na = 0, nb = 0;
                for (uint32_t d = 0; d < dim; d++) {
                    na += f[i * dim + d] * f[i * dim + d];
                    nb += f[j * dim + d] * f[j * dim + d];
                }
                na = sqrtf(na);
                nb = sqrtf(nb);
                float tol =
                    ms[m] == VEC_METRIC_L2 ? 0.01f * (na + nb) * (na + nb) : 0.01f * na * nb;
                worst = fmaxf(worst, fabsf(got - want) / tol);
                assert_true(fabsf(got - want) <= tol);
            }
        print_message("metric %d: worst error %.2f of the tolerance\n", m, worst);
        free(b);
        free(f);
    }
}

/* A build on an 8-bit copy routes as well as a float one, for cosine and for L2 (where the
 * copy's offset keeps the whole range of codes for values that are all positive), and so does
 * one asked for 8 bits over rows no scale fits (one row far out). */
static void test_i8_build_recall_matches_float_build(void **state)
{
    (void)state;
    const uint32_t n = 4000, dim = 48;
    vec_metric_t ms[3] = {VEC_METRIC_COSINE, VEC_METRIC_L2, VEC_METRIC_L2};
    for (int m = 0; m < 3; m++) {
        float *data = tu_clustered(n, dim, 20, 0.6f, 12, ms[m] == VEC_METRIC_COSINE, NULL);
        if (m == 2) /* one row far out: no scale fits, the build takes another precision */
            for (uint32_t d = 0; d < dim; d++)
                data[(size_t)(n / 2) * dim + d] = 1e6f;
        if (m == 1)
            for (uint32_t i = 0; i < n * dim; i++)
                data[i] = data[i] + 1000.0f; /* far from zero: codes centred on zero would
                                              * step by ~8, wider than the clusters */
        vec_view_t v = {data, dim, dim, n};
        hnsw_t *fl, *i8;
        assert_int_equal(tu_build_graph_ex(&v, ms[m], 64, 2, HNSW_BUILD_FLOAT, &fl), 0);
        assert_int_equal(tu_build_graph_ex(&v, ms[m], 64, 2, HNSW_BUILD_I8, &i8), 0);
        double rf = tu_self_recall(fl, &v, ms[m], n, 32), ri = tu_self_recall(i8, &v, ms[m], n, 32);
        print_message("recall@10 ef 32 (%s): float build %.4f, i8 build %.4f\n",
                      m == 2 ? "l2, a row far out"
                      : m    ? "l2"
                             : "cosine",
                      rf, ri);
        assert_true(rf >= 0.9);
        assert_true(ri >= rf - 0.02);
        hnsw_info_t info;
        hnsw_get_info(i8, &info);
        assert_int_equal(info.nodes, n);
        uint32_t id = 0;
        assert_int_equal(hnsw_build_ex(i8, &v, &id, 1, 1, (hnsw_build_precision_t)9),
                         CDN_ERR_INVALID);
        hnsw_free(fl);
        hnsw_free(i8);
        free(data);
    }
}

/* Batches built on an 8-bit copy the caller keeps (the engine's way of adding rows) route as
 * well as batches built in float; a copy that does not cover the view is refused. */
static void test_batches_on_a_kept_i8_copy_route_as_well_as_float_batches(void **state)
{
    (void)state;
    const uint32_t n = 4000, dim = 48, batch = 500;
    float *data = tu_clustered(n, dim, 20, 3.0f, 12, 1, NULL);
    size_t stride = vec_i8_padded(dim);
    int8_t *copy = calloc((size_t)n * stride, 1);
    uint32_t *ids = malloc(sizeof(uint32_t) * n);
    vec_i8_map_t map = vec_i8_map_for(VEC_METRIC_COSINE, -1.0f, 1.0f);
    for (uint32_t i = 0; i < n; i++) {
        ids[i] = i;
        vec_i8_from_f32(data + (size_t)i * dim, dim, map, copy + (size_t)i * stride, stride);
    }
    hnsw_params_t p = hnsw_params_default();
    p.ef_construction = 64;
    hnsw_t *fl, *i8;
    assert_int_equal(hnsw_create(p, VEC_METRIC_COSINE, dim, &fl), 0);
    assert_int_equal(hnsw_create(p, VEC_METRIC_COSINE, dim, &i8), 0);
    for (uint32_t at = 0; at < n; at += batch) {
        vec_view_t grown = {data, dim, dim, at + batch}; /* the rows written so far */
        hnsw_i8_rows_t kept = {copy, stride, at + batch, map};
        assert_int_equal(hnsw_build_ex(fl, &grown, ids + at, batch, 2, HNSW_BUILD_FLOAT), 0);
        assert_int_equal(hnsw_build_i8(i8, &grown, &kept, ids + at, batch, 2), 0);
    }
    vec_view_t v = {data, dim, dim, n};
    double rf = tu_self_recall(fl, &v, VEC_METRIC_COSINE, n, 10);
    double ri = tu_self_recall(i8, &v, VEC_METRIC_COSINE, n, 10);
    print_message("recall@10 ef 10: float batches %.4f, kept i8 batches %.4f\n", rf, ri);
    assert_true(rf >= 0.95); /* spread clusters, ef 10: a graph that routes badly shows */
    assert_true(ri >= rf - 0.01);
    hnsw_info_t info;
    hnsw_get_info(i8, &info);
    assert_int_equal(info.nodes, n);
    hnsw_t *h;
    assert_int_equal(hnsw_create(p, VEC_METRIC_COSINE, dim, &h), 0);
    hnsw_i8_rows_t shorter = {copy, stride, n - 1, map}, narrow = {copy, dim, n, map};
    hnsw_i8_rows_t unmapped = {copy, stride, n, {0, 0, 0}};
    assert_int_equal(hnsw_build_i8(h, &v, &shorter, ids, 10, 1), CDN_ERR_INVALID);
    assert_int_equal(hnsw_build_i8(h, &v, &narrow, ids, 10, 1), CDN_ERR_INVALID);
    assert_int_equal(hnsw_build_i8(h, &v, &unmapped, ids, 10, 1), CDN_ERR_INVALID);
    assert_int_equal(hnsw_build_i8(h, &v, NULL, ids, 10, 1), CDN_ERR_INVALID);
    hnsw_get_info(h, &info);
    assert_int_equal(info.nodes, 0);
    hnsw_free(h);
    hnsw_free(fl);
    hnsw_free(i8);
    free(ids);
    free(copy);
    free(data);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_maps_centre_products_on_zero_and_differences_on_the_range),
        cmocka_unit_test(test_a_views_map_covers_its_rows_with_headroom),
        cmocka_unit_test(test_a_few_far_rows_make_a_map_that_does_not_fit),
        cmocka_unit_test(test_a_sampled_spread_judges_large_views_as_every_row_would),
        cmocka_unit_test(test_codes_round_to_nearest_even_saturate_and_pad_with_zeros),
        cmocka_unit_test(test_every_isa_gives_the_portable_bits_one_row_or_four),
        cmocka_unit_test(test_code_distances_follow_float_distances),
        cmocka_unit_test(test_i8_build_recall_matches_float_build),
        cmocka_unit_test(test_batches_on_a_kept_i8_copy_route_as_well_as_float_batches),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
