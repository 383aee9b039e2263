/* test_quant_bound.c: the exact scan's shortcut (quant_bound_drop_set, quant_bound_drops) never
 * passes a row whose lower bound (quant_bound_row, as the scan's judgement computes it) is not
 * above the threshold, for every metric, on real quantizers' weights and rows, at the edges of
 * its reasoning and on adversarial thresholds; and it passes most rows of a clustered scan, so
 * it is not idle.
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

static double lower(const quant_bound_t *b, int32_t sum, float e, float r)
{
    double lo, hi;
    quant_bound_row(b, sum, e, &r, &lo, &hi);
    return lo;
}

/* Every row the test passes, with any e_r up to e_in, has a lower bound above t: sums just
 * below and above where the test turns (for dot and cosine its threshold, for L2 the sum where
 * it turns at this r_r), a spread far from it, and the extremes of int32. */
static void assert_sound(const quant_bound_t *b, const quant_drop_t *d, double e_in, double t,
                         float r, uint64_t *s)
{
    double turn = d->kind == 1   ? (double)d->below
                  : d->kind == 2 ? ((double)r * d->cr - d->k) / (d->sig2 + d->sig2e)
                                 : 0;
    const float es[] = {0.0f, (float)(e_in * 0.5), nextafterf((float)e_in, 0.0f)};
    for (int k = 0; k < 320; k++) {
        double v = k < 60    ? floor(turn) - 30 + k
                   : k < 250 ? floor(turn) - (double)(rng_next(s) % (1ull << (k % 31)))
                   : k < 255 ? (double)INT32_MIN + (k - 250)
                   : k < 260 ? (double)INT32_MAX - (k - 255)
                             : floor(turn) + (double)(rng_next(s) % (1ull << (k % 31)));
        if (!(v >= INT32_MIN && v <= INT32_MAX))
            continue;
        int32_t sum = (int32_t)v;
        if (!quant_bound_drops(d, sum, r))
            continue;
        for (size_t i = 0; i < 3; i++) {
            if (!((double)es[i] <= e_in))
                continue;
            double lo = lower(b, sum, es[i], r);
            if (!(lo > t))
                fail_msg("metric %d: sum %d r %g e %g passes, but lo %.17g is not above t %.17g",
                         (int)b->m, sum, (double)r, (double)es[i], lo, t);
        }
    }
}

/* On real weights and rows: every metric, 64 and 384 dimensions, thresholds from the rows' own
 * bounds (the k-th smallest upper bound of the first k rows a scan sees, the quartiles of the
 * lower bounds). Every row the test passes has its bound above t, and against the 10th
 * smallest upper bound of all rows it passes at least half of them. */
static void test_drop_is_sound_on_real_rows(void **state)
{
    (void)state;
    uint64_t s = 4242;
    enum { N = 1500 }; /* rows */
    const uint32_t dims[] = {64, 384}, n = N, nq = 4;
    for (int m = 0; m <= VEC_METRIC_L2; m++)
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
            float *e = malloc(n * sizeof(float)), *rr = malloc(n * sizeof(float));
            assert_true(f.w && lo && hi && sum && e && rr);
            quant_snap_t r = quant_snap(f.q);
            for (uint32_t qi = 0; qi < nq; qi++) {
                weigh(&f, x + (size_t)(n + qi) * dim, (vec_metric_t)m);
                for (uint32_t i = 0; i < n; i++) {
                    assert_int_equal(quant_code_dot(f.q, VEC_ISA_SCALAR, f.w, i, &sum[i]), 0);
                    e[i] = *quant_row_err(&r, i);
                    rr[i] = *quant_row_r(&r, i);
                    quant_bound_row(&f.b, sum[i], e[i], &rr[i], &lo[i], &hi[i]);
                }
                double sorted[N];
                memcpy(sorted, hi, n * sizeof(double));
                qsort(sorted, n, sizeof(double), cmp_double);
                double first10[10];
                memcpy(first10, hi, sizeof first10);
                qsort(first10, 10, sizeof(double), cmp_double);
                double lq[N];
                memcpy(lq, lo, n * sizeof(double));
                qsort(lq, n, sizeof(double), cmp_double);
                const double ts[] = {sorted[9], first10[9], lq[n / 4], lq[n / 2], lq[3 * n / 4]};
                for (size_t ti = 0; ti < 5; ti++) {
                    double t = ts[ti];
                    quant_drop_t d;
                    quant_bound_drop_set(&d, &f.b, f.e_in, t);
                    assert_int_equal(d.kind, m == VEC_METRIC_L2 ? 2 : 1);
                    for (uint32_t i = 0; i < n; i += 97)
                        assert_sound(&f.b, &d, f.e_in, t, rr[i], &s);
                    uint32_t dropped = 0;
                    for (uint32_t i = 0; i < n; i++)
                        if (e[i] <= f.e_in && quant_bound_drops(&d, sum[i], rr[i])) {
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
            free(rr);
            cdn_free(f.w);
            quant_free(f.q);
            free(x);
        }
}

/* Where the reasoning does not apply, nothing passes: a zero or huge scale for dot and cosine,
 * non-finite or huge thresholds, a negative one for L2, an unknown e_max; a non-finite r_r
 * never passes; a threshold below every bound passes every sum (and soundly); thresholds swept
 * across the bounds' range stay sound on made-up weights with tiny and large scales. */
static void test_drop_edges(void **state)
{
    (void)state;
    uint64_t s = 99;
    quant_bound_t b = {.m = VEC_METRIC_COSINE,
                       .sigma = 1e-6,
                       .dw = 1e-4,
                       .qn = 1.0,
                       .c0 = 0.25,
                       .pmag = 3.0,
                       .qq = 2.0,
                       .eps = 2.0 * 392.0 * QUANT_U,
                       .epsd = 392.0 * 0x1p-50,
                       .tiny = 392.0 * 0x1p-140};
    const double e_in = 0.01;
    quant_drop_t d;
    quant_bound_t zero = b, huge = b, l2 = b;
    zero.sigma = 0;
    huge.sigma = 1e30;
    l2.m = VEC_METRIC_L2;
    quant_bound_drop_set(&d, &zero, e_in, 0.5);
    assert_int_equal(d.kind, 0);
    quant_bound_drop_set(&d, &huge, e_in, 0.5);
    assert_int_equal(d.kind, 0);
    quant_bound_drop_set(&d, &l2, e_in, -0.5);
    assert_int_equal(d.kind, 0);
    const double bad_t[] = {INFINITY, -INFINITY, NAN, 1e300, -1e300};
    for (int m = 0; m <= VEC_METRIC_L2; m++) {
        quant_bound_t c = b;
        c.m = (vec_metric_t)m;
        for (size_t i = 0; i < 5; i++) {
            quant_bound_drop_set(&d, &c, e_in, bad_t[i]);
            assert_int_equal(d.kind, 0);
            assert_false(quant_bound_drops(&d, INT32_MIN, 1.0f));
        }
        const double bad_e[] = {INFINITY, NAN, -1.0};
        for (size_t i = 0; i < 3; i++) {
            quant_bound_drop_set(&d, &c, bad_e[i], 0.5);
            assert_int_equal(d.kind, 0);
        }
    }
    /* L2: a non-finite r_r is never passed, whatever the sum */
    quant_bound_drop_set(&d, &l2, e_in, 0.5);
    assert_int_equal(d.kind, 2);
    assert_true(quant_bound_drops(&d, INT32_MIN, 100.0f));
    assert_false(quant_bound_drops(&d, INT32_MIN, INFINITY));
    assert_false(quant_bound_drops(&d, INT32_MIN, NAN));
    /* dot: far below every bound, every int32 sum passes, each one soundly */
    quant_bound_drop_set(&d, &b, e_in, -1e30);
    assert_int_equal(d.kind, 1);
    assert_int_equal(d.below, INT32_MAX);
    assert_sound(&b, &d, e_in, -1e30, 0.0f, &s);
    /* sweeps, every metric, scales from tiny to large, r_r from zero to large */
    const double sigmas[] = {1e-12, 1e-6, 1e-3, 1.0, 1e6};
    const float rs[] = {0.0f, 1e-3f, 1.0f, 2.5f, 1e6f};
    for (int m = 0; m <= VEC_METRIC_L2; m++)
        for (size_t si = 0; si < 5; si++) {
            quant_bound_t c = b;
            c.m = (vec_metric_t)m;
            c.sigma = sigmas[si];
            int live = 0;
            for (int k = -40; k <= 40; k++) {
                double t = k * (k % 2 ? 0.37 : 1e3) * (1 + rng_uniform(&s) * 0.01);
                quant_bound_drop_set(&d, &c, e_in, t);
                for (size_t ri = 0; ri < 5; ri++)
                    assert_sound(&c, &d, e_in, t, rs[ri], &s);
                live += d.kind != 0;
            }
            assert_true(live > 0);
        }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_drop_is_sound_on_real_rows),
        cmocka_unit_test(test_drop_edges),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
