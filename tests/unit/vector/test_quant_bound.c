/* test_quant_bound.c: the exact scan's integer shortcut (quant_bound_drop_below) never drops a
 * row whose lower bound (quant_bound_dot, as the scan's judgement computes it) is not above the
 * threshold, on real quantizers' weights and rows, at the edges of its reasoning and on
 * adversarial thresholds; and it drops most rows of a clustered scan, so it is not idle.
 * Relies on cmocka, vector/quant.h and the quantizer's internal headers. */
/* cmocka.h needs these four first. */
// clang-format off
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
// clang-format on

#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/mem.h"
#include "vector/quant.h"
#include "vector/quant_bound.h"
#include "vector/quant_int.h"

static uint64_t rng_next(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

static float rng_uniform(uint64_t *s) /* in [-1, 1) */
{
    return (float)((double)(rng_next(s) >> 11) * (2.0 / 9007199254740992.0) - 1.0);
}

/* n rows of dim floats in 6 clusters (spread 0.2), unit length for cosine. */
static float *clustered_rows(size_t n, uint32_t dim, vec_metric_t m, uint64_t *s)
{
    float *x = malloc(n * dim * sizeof(float));
    float *cent = malloc(6 * (size_t)dim * sizeof(float));
    assert_non_null(x);
    assert_non_null(cent);
    for (size_t j = 0; j < 6 * (size_t)dim; j++)
        cent[j] = rng_uniform(s);
    for (size_t i = 0; i < n; i++) {
        const float *c = cent + (rng_next(s) % 6) * dim;
        for (uint32_t j = 0; j < dim; j++)
            x[i * dim + j] = c[j] + 0.2f * rng_uniform(s);
        if (m == VEC_METRIC_COSINE)
            vec_normalize(x + i * dim, dim);
    }
    free(cent);
    return x;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* The bound a query's weights give, and half a step in every dimension (e_in). */
typedef struct fixture {
    quant_t *q;
    int16_t *w;
    quant_bound_t b;
    double e_in;
} fixture_t;

static void weigh(fixture_t *f, const float *query, vec_metric_t m)
{
    quant_weights_t wt = {.w = f->w};
    double s2 = 0;
    memset(f->w, 0, f->q->stride * sizeof(int16_t));
    assert_int_equal(quant_weigh(f->q, query, m == VEC_METRIC_L2, &wt), 0);
    quant_bound_init(&f->b, f->q, m, &wt);
    for (uint32_t j = 0; j < f->q->dim; j++)
        s2 += (double)f->q->s[j] * f->q->s[j];
    f->e_in = 0.5 * sqrt(s2);
}

/* Every sum below the shortcut's threshold, with any e_r up to e_in, has a lower bound above t:
 * the sums just below it, a spread far below, and the extremes of int32. */
static void assert_sound(const quant_bound_t *b, double e_in, double t, int32_t r, uint64_t *s)
{
    if (r == INT32_MIN)
        return;
    const float es[] = {0.0f, (float)(e_in * 0.5), nextafterf((float)e_in, 0.0f)};
    for (int k = 0; k < 260; k++) {
        int64_t v = k < 60    ? (int64_t)r - 1 - k
                    : k < 250 ? (int64_t)r - 1 - (int64_t)(rng_next(s) % (1ull << (k % 31)))
                    : k < 255 ? INT32_MIN + (k - 250)
                              : (int64_t)r - 1 - (int64_t)(rng_next(s) % 1000000007ull);
        if (v >= r || v < INT32_MIN)
            continue;
        for (size_t i = 0; i < 3; i++) {
            double lo, hi;
            if (!((double)es[i] <= e_in))
                continue;
            quant_bound_dot(b, (int32_t)v, es[i], &lo, &hi);
            if (!(lo > t))
                fail_msg("sum %lld below %d with e %g: lo %.17g not above t %.17g", (long long)v,
                         r, (double)es[i], lo, t);
        }
    }
}

/* On real weights and rows: dot and cosine, 64 and 384 dimensions, thresholds from the rows'
 * own bounds (the k-th smallest upper bound of the first k rows a scan sees, the quartiles of
 * the lower bounds). Every row the shortcut drops has its bound above t, and against the 10th
 * smallest upper bound of all rows it drops at least half of them. */
static void test_drop_below_is_sound_on_real_rows(void **state)
{
    (void)state;
    uint64_t s = 4242;
    const uint32_t dims[] = {64, 384}, n = 1500, nq = 4;
    for (int m = VEC_METRIC_COSINE; m <= VEC_METRIC_DOT; m++)
        for (size_t di = 0; di < 2; di++) {
            uint32_t dim = dims[di];
            float *x = clustered_rows(n + nq, dim, (vec_metric_t)m, &s);
            vec_view_t v = {x, dim, dim, n};
            fixture_t f = {0};
            assert_int_equal(quant_create(dim, &f.q, NULL), 0);
            assert_int_equal(quant_train(f.q, &v, NULL, 1000, NULL), 0);
            assert_int_equal(quant_encode_rows(f.q, &v, 0, n, NULL), 0);
            f.w = cdn_aligned_alloc(64, f.q->stride * sizeof(int16_t));
            double *lo = malloc(n * sizeof(double)), *hi = malloc(n * sizeof(double));
            int32_t *sum = malloc(n * sizeof(int32_t));
            float *e = malloc(n * sizeof(float));
            assert_true(f.w && lo && hi && sum && e);
            quant_snap_t r = quant_snap(f.q);
            for (uint32_t qi = 0; qi < nq; qi++) {
                weigh(&f, x + (size_t)(n + qi) * dim, (vec_metric_t)m);
                for (uint32_t i = 0; i < n; i++) {
                    assert_int_equal(quant_code_dot(f.q, VEC_ISA_SCALAR, f.w, i, &sum[i]), 0);
                    e[i] = *quant_row_err(&r, i);
                    quant_bound_dot(&f.b, sum[i], e[i], &lo[i], &hi[i]);
                }
                double sorted[1500];
                memcpy(sorted, hi, n * sizeof(double));
                qsort(sorted, n, sizeof(double), cmp_double);
                double first10[10];
                memcpy(first10, hi, sizeof first10);
                qsort(first10, 10, sizeof(double), cmp_double);
                double lq[1500];
                memcpy(lq, lo, n * sizeof(double));
                qsort(lq, n, sizeof(double), cmp_double);
                const double ts[] = {sorted[9], first10[9], lq[n / 4], lq[n / 2], lq[3 * n / 4]};
                for (size_t ti = 0; ti < 5; ti++) {
                    double t = ts[ti];
                    int32_t thr = quant_bound_drop_below(&f.b, f.e_in, t);
                    assert_sound(&f.b, f.e_in, t, thr, &s);
                    uint32_t dropped = 0;
                    for (uint32_t i = 0; i < n; i++)
                        if (sum[i] < thr && e[i] <= f.e_in) {
                            dropped++;
                            assert_true(lo[i] > t);
                        }
                    if (ti == 0 && !(dropped * 2 >= n))
                        fail_msg("metric %d dim %u query %u: %u of %u rows dropped", m, dim, qi,
                                 dropped, n);
                }
            }
            free(lo);
            free(hi);
            free(sum);
            free(e);
            cdn_free(f.w);
            quant_free(f.q);
            free(x);
        }
}

/* Where the reasoning does not apply, nothing is dropped: L2, a zero scale (a zero query),
 * non-finite or huge thresholds, an unknown e_max; a threshold below every bound drops every
 * sum (and soundly); thresholds swept across the bounds' range stay sound on made-up weights
 * with tiny and large scales. */
static void test_drop_below_edges(void **state)
{
    (void)state;
    uint64_t s = 99;
    quant_bound_t b = {.m = VEC_METRIC_COSINE,
                       .sigma = 1e-6,
                       .dw = 1e-4,
                       .qn = 1.0,
                       .c0 = 0.25,
                       .pmag = 3.0,
                       .eps = 2.0 * 392.0 * QUANT_U,
                       .epsd = 392.0 * 0x1p-50,
                       .tiny = 392.0 * 0x1p-140};
    const double e_in = 0.01;
    quant_bound_t l2 = b;
    l2.m = VEC_METRIC_L2;
    assert_int_equal(quant_bound_drop_below(&l2, e_in, 0.5), INT32_MIN);
    quant_bound_t zero = b;
    zero.sigma = 0;
    assert_int_equal(quant_bound_drop_below(&zero, e_in, 0.5), INT32_MIN);
    const double bad_t[] = {INFINITY, -INFINITY, NAN, 1e300, -1e300};
    for (size_t i = 0; i < 5; i++)
        assert_int_equal(quant_bound_drop_below(&b, e_in, bad_t[i]), INT32_MIN);
    assert_int_equal(quant_bound_drop_below(&b, INFINITY, 0.5), INT32_MIN);
    assert_int_equal(quant_bound_drop_below(&b, NAN, 0.5), INT32_MIN);
    assert_int_equal(quant_bound_drop_below(&b, -1.0, 0.5), INT32_MIN);
    /* far below every bound: every int32 sum is dropped, and each one soundly */
    assert_int_equal(quant_bound_drop_below(&b, e_in, -1e30), INT32_MAX);
    assert_sound(&b, e_in, -1e30, INT32_MAX, &s);
    /* a scale so large that mag could near FLT_MAX: nothing dropped */
    quant_bound_t huge = b;
    huge.sigma = 1e30;
    assert_int_equal(quant_bound_drop_below(&huge, e_in, 0.5), INT32_MIN);
    /* sweeps, both metrics, scales from tiny to large */
    const double sigmas[] = {1e-12, 1e-6, 1e-3, 1.0, 1e6};
    for (int m = VEC_METRIC_COSINE; m <= VEC_METRIC_DOT; m++)
        for (size_t si = 0; si < 5; si++) {
            quant_bound_t c = b;
            c.m = (vec_metric_t)m;
            c.sigma = sigmas[si];
            int live = 0;
            for (int k = -40; k <= 40; k++) {
                double t = k * (k % 2 ? 0.37 : 1e3) * (1 + rng_uniform(&s) * 0.01);
                int32_t r = quant_bound_drop_below(&c, e_in, t);
                assert_sound(&c, e_in, t, r, &s);
                live += r != INT32_MIN;
            }
            assert_true(live > 0);
        }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_drop_below_is_sound_on_real_rows),
        cmocka_unit_test(test_drop_below_edges),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
