/* test_distance.c: every SIMD kernel this CPU offers against the scalar reference, the 4-row
 * kernels, tails that end at a guard page, metric names, normalisation. Relies on cmocka. */
/* cmocka.h needs these four first. */
// clang-format off
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
// clang-format on

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <pthread.h>

#include "vector/distance.h"

static const size_t extra_lengths[] = {128, 384, 512, 784, 1000};
#define MAX_LEN 1000

static uint64_t rng_next(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

static float rng_float(uint64_t *s) /* uniform in [-1, 1) */
{
    return (float)((rng_next(s) >> 40) * (2.0 / (1 << 24)) - 1.0);
}

static void fill(float *v, size_t n, uint64_t *s)
{
    for (size_t i = 0; i < n; i++)
        v[i] = rng_float(s);
}

/* The lengths the brief lists: 1..70 (every tail shape for 8 and 16 lanes) plus real dims. */
static size_t length_at(size_t i)
{
    return i < 70 ? i + 1 : extra_lengths[i - 70];
}
#define N_LENGTHS (70 + sizeof extra_lengths / sizeof extra_lengths[0])

/* Error bound for float sums of n terms whose magnitudes add to `mag`. */
static double tolerance(double mag)
{
    return 2e-6 * mag + 1e-6;
}

/* Exact (double) reference and the magnitude that bounds rounding. */
static void reference(vec_metric_t m, const float *a, const float *b, size_t n, double *dist,
                      double *mag)
{
    double dot = 0, l2 = 0, adot = 0;
    for (size_t i = 0; i < n; i++) {
        double d = (double)a[i] - b[i];
        dot += (double)a[i] * b[i];
        adot += fabs((double)a[i] * b[i]);
        l2 += d * d;
    }
    *dist = m == VEC_METRIC_L2 ? l2 : m == VEC_METRIC_DOT ? -dot : 1.0 - dot;
    *mag = m == VEC_METRIC_L2 ? l2 : adot;
}

/* Runs first in the process, so these threads race for the one-time CPU probe. */
static void *first_choice(void *out)
{
    *(vec_dist_fn *)out = vec_dist_for(VEC_METRIC_L2);
    return NULL;
}

static void test_threads_racing_for_the_first_choice_all_get_the_best_kernel(void **state)
{
    (void)state;
    pthread_t th[4];
    vec_dist_fn got[4];
    for (int i = 0; i < 4; i++)
        assert_int_equal(pthread_create(&th[i], NULL, first_choice, &got[i]), 0);
    for (int i = 0; i < 4; i++)
        assert_int_equal(pthread_join(th[i], NULL), 0);
    for (int i = 0; i < 4; i++) {
        assert_non_null(got[i]);
        assert_ptr_equal(got[i], vec_dist_for_isa(VEC_METRIC_L2, vec_isa_best()));
    }
}

static void test_every_available_isa_matches_reference_for_all_lengths(void **state)
{
    (void)state;
    uint64_t s = 0x9e3779b97f4a7c15ull;
    float *a = malloc((MAX_LEN + 1) * sizeof(float)), *b = malloc((MAX_LEN + 1) * sizeof(float));
    int checked_isas = 0;
    for (int isa = VEC_ISA_SCALAR; isa <= VEC_ISA_AVX512; isa++) {
        if (!vec_dist_for_isa(VEC_METRIC_L2, (vec_isa_t)isa))
            continue;
        checked_isas++;
        for (size_t li = 0; li < N_LENGTHS; li++) {
            size_t n = length_at(li);
            /* Offset by one float so that loads are unaligned, as rows in a file may be. */
            fill(a + 1, n, &s);
            fill(b, n, &s);
            for (int m = VEC_METRIC_COSINE; m <= VEC_METRIC_L2; m++) {
                vec_dist_fn f = vec_dist_for_isa((vec_metric_t)m, (vec_isa_t)isa);
                assert_non_null(f);
                double want, mag;
                reference((vec_metric_t)m, a + 1, b, n, &want, &mag);
                double got = f(a + 1, b, n);
                if (fabs(got - want) > tolerance(mag))
                    fail_msg("isa %s metric %d n %zu: got %.9g want %.9g",
                             vec_isa_name((vec_isa_t)isa), m, n, got, want);
            }
        }
    }
    assert_int_equal(checked_isas, (int)vec_isa_best() + 1);
    free(a);
    free(b);
}

static void test_four_row_kernel_equals_single_row_kernel(void **state)
{
    (void)state;
    uint64_t s = 42;
    float *q = malloc(MAX_LEN * sizeof(float)), *rows = malloc(4 * MAX_LEN * sizeof(float));
    for (int isa = VEC_ISA_SCALAR; isa <= VEC_ISA_AVX512; isa++) {
        if (!vec_dist4_for_isa(VEC_METRIC_L2, (vec_isa_t)isa))
            continue;
        for (size_t li = 0; li < N_LENGTHS; li++) {
            size_t n = length_at(li);
            fill(q, n, &s);
            fill(rows, 4 * n, &s);
            const float *r[4] = {rows, rows + n, rows + 2 * n, rows + 3 * n};
            for (int m = VEC_METRIC_COSINE; m <= VEC_METRIC_L2; m++) {
                float out[4];
                vec_dist4_for_isa((vec_metric_t)m, (vec_isa_t)isa)(q, r, n, out);
                for (int j = 0; j < 4; j++) {
                    double want, mag;
                    reference((vec_metric_t)m, q, r[j], n, &want, &mag);
                    if (fabs(out[j] - want) > tolerance(mag))
                        fail_msg("isa %s metric %d n %zu row %d: got %.9g want %.9g",
                                 vec_isa_name((vec_isa_t)isa), m, n, j, out[j], want);
                }
            }
        }
    }
    free(q);
    free(rows);
}

/* The kernel for consecutive rows reads them in another order but computes each one with the
 * same steps: its results equal the side-by-side kernel's bit for bit, on any rows. */
static void test_consecutive_row_kernel_gives_the_same_bits(void **state)
{
    (void)state;
    uint64_t s = 7;
    float *q = malloc(MAX_LEN * sizeof(float)), *rows = malloc(4 * MAX_LEN * sizeof(float));
    for (int isa = VEC_ISA_SCALAR; isa <= VEC_ISA_AVX512; isa++) {
        if (!vec_dist4_for_isa(VEC_METRIC_L2, (vec_isa_t)isa)) {
            assert_null(vec_dist4_seq_for_isa(VEC_METRIC_L2, (vec_isa_t)isa));
            continue;
        }
        for (size_t li = 0; li < N_LENGTHS; li++) {
            size_t n = length_at(li);
            fill(q, n, &s);
            fill(rows, 4 * n, &s);
            const float *seq[4] = {rows, rows + n, rows + 2 * n, rows + 3 * n};
            const float *mixed[4] = {rows + 2 * n, rows, rows + 3 * n, rows + n};
            for (int m = VEC_METRIC_COSINE; m <= VEC_METRIC_L2; m++) {
                vec_dist4_fn side = vec_dist4_for_isa((vec_metric_t)m, (vec_isa_t)isa);
                vec_dist4_fn one_by_one = vec_dist4_seq_for_isa((vec_metric_t)m, (vec_isa_t)isa);
                assert_non_null(one_by_one);
                for (int order = 0; order < 2; order++) {
                    const float *const *r = order ? mixed : seq;
                    float a[4], b[4];
                    side(q, r, n, a);
                    one_by_one(q, r, n, b);
                    if (memcmp(a, b, sizeof a) != 0)
                        fail_msg("isa %s metric %d n %zu: side by side %.9g %.9g %.9g %.9g, one "
                                 "by one %.9g %.9g %.9g %.9g",
                                 vec_isa_name((vec_isa_t)isa), m, n, a[0], a[1], a[2], a[3], b[0],
                                 b[1], b[2], b[3]);
                }
            }
        }
    }
    assert_null(vec_dist4_seq_for_isa((vec_metric_t)7, VEC_ISA_SCALAR));
    free(q);
    free(rows);
}

/* A row that ends exactly at an unreadable page: any load past its last float faults. */
static void test_kernels_never_read_past_the_last_element(void **state)
{
    (void)state;
    long page = sysconf(_SC_PAGESIZE);
    char *mem =
        mmap(NULL, 2 * (size_t)page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    assert_true(mem != MAP_FAILED);
    assert_int_equal(mprotect(mem + page, (size_t)page, PROT_NONE), 0);
    float *end = (float *)(mem + page);
    for (size_t n = 1; n <= 70; n++) {
        float *a = end - n;
        for (size_t i = 0; i < n; i++)
            a[i] = 0.5f;
        for (int isa = VEC_ISA_SCALAR; isa <= VEC_ISA_AVX512; isa++) {
            vec_dist_fn f = vec_dist_for_isa(VEC_METRIC_DOT, (vec_isa_t)isa);
            vec_dist4_fn f4 = vec_dist4_for_isa(VEC_METRIC_L2, (vec_isa_t)isa);
            if (!f)
                continue;
            assert_float_equal(f(a, a, n), -0.25f * (float)n, 1e-4);
            const float *r[4] = {a, a, a, a};
            float out[4];
            f4(a, r, n, out);
            assert_float_equal(out[3], 0.0f, 0.0f);
            vec_dist4_seq_for_isa(VEC_METRIC_L2, (vec_isa_t)isa)(a, r, n, out);
            assert_float_equal(out[3], 0.0f, 0.0f);
        }
    }
    munmap(mem, 2 * (size_t)page);
}

static void test_best_isa_kernels_are_the_ones_handed_out(void **state)
{
    (void)state;
    vec_isa_t best = vec_isa_best();
    for (int m = VEC_METRIC_COSINE; m <= VEC_METRIC_L2; m++) {
        assert_ptr_equal(vec_dist_for((vec_metric_t)m), vec_dist_for_isa((vec_metric_t)m, best));
        assert_ptr_equal(vec_dist4_for((vec_metric_t)m), vec_dist4_for_isa((vec_metric_t)m, best));
        assert_non_null(vec_dist_for_isa((vec_metric_t)m, VEC_ISA_SCALAR));
    }
    assert_null(vec_dist_for_isa((vec_metric_t)7, VEC_ISA_SCALAR));
    assert_null(vec_dist_for_isa(VEC_METRIC_L2, (vec_isa_t)9));
    assert_null(vec_dist4_for_isa((vec_metric_t)7, best));
    float a[3] = {1, 2, 3}, b[3] = {4, -5, 6};
    assert_float_equal(vec_dot(a, b, 3), 12.0f, 1e-6);
    assert_float_equal(vec_l2sq(a, b, 3), 9.0f + 49.0f + 9.0f, 1e-5);
    printf("best isa on this CPU: %s\n", vec_isa_name(best));
}

static void test_metric_names_round_trip_and_unknown_is_rejected(void **state)
{
    (void)state;
    for (int m = VEC_METRIC_COSINE; m <= VEC_METRIC_L2; m++) {
        vec_metric_t got = (vec_metric_t)-1;
        assert_int_equal(vec_metric_parse(vec_metric_name((vec_metric_t)m), &got), 0);
        assert_int_equal(got, m);
    }
    vec_metric_t got = VEC_METRIC_COSINE;
    assert_int_not_equal(vec_metric_parse("cosinus", &got), 0);
    assert_int_not_equal(vec_metric_parse("", &got), 0);
    assert_int_equal(got, VEC_METRIC_COSINE);
    assert_string_equal(vec_isa_name(VEC_ISA_AVX2), "avx2");
}

static void test_normalize_gives_unit_length_and_leaves_zero_alone(void **state)
{
    (void)state;
    uint64_t s = 7;
    float v[384], z[5] = {0};
    fill(v, 384, &s);
    vec_normalize(v, 384);
    assert_float_equal(vec_dot(v, v, 384), 1.0f, 1e-5);
    vec_normalize(z, 5);
    for (int i = 0; i < 5; i++)
        assert_float_equal(z[i], 0.0f, 0.0f);
    /* Cosine distance of a unit vector with itself is 0, with its opposite 2. */
    float w[384];
    for (int i = 0; i < 384; i++)
        w[i] = -v[i];
    assert_float_equal(vec_dist_for(VEC_METRIC_COSINE)(v, v, 384), 0.0f, 1e-5);
    assert_float_equal(vec_dist_for(VEC_METRIC_COSINE)(v, w, 384), 2.0f, 1e-5);
}

static void test_score_is_higher_for_nearer_hits(void **state)
{
    (void)state;
    assert_float_equal(vec_score_from_dist(VEC_METRIC_COSINE, 0.25f), 0.75f, 1e-7);
    assert_float_equal(vec_score_from_dist(VEC_METRIC_DOT, -3.0f), 3.0f, 1e-7);
    assert_float_equal(vec_score_from_dist(VEC_METRIC_L2, 1.0f), 0.5f, 1e-7);
    assert_true(vec_score_from_dist(VEC_METRIC_L2, 0.5f) > vec_score_from_dist(VEC_METRIC_L2, 2));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_threads_racing_for_the_first_choice_all_get_the_best_kernel),
        cmocka_unit_test(test_every_available_isa_matches_reference_for_all_lengths),
        cmocka_unit_test(test_four_row_kernel_equals_single_row_kernel),
        cmocka_unit_test(test_consecutive_row_kernel_gives_the_same_bits),
        cmocka_unit_test(test_kernels_never_read_past_the_last_element),
        cmocka_unit_test(test_best_isa_kernels_are_the_ones_handed_out),
        cmocka_unit_test(test_metric_names_round_trip_and_unknown_is_rejected),
        cmocka_unit_test(test_normalize_gives_unit_length_and_leaves_zero_alone),
        cmocka_unit_test(test_score_is_higher_for_nearer_hits),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
