/* test_quant.c: the 8-bit pruned scan must return exactly exact_search's top k (ids and float
 * distances) on random, clustered and adversarial data, all metrics and instruction sets.
 * Relies on cmocka, CRoaring, vector/quant.h and vector/exact.h (the reference). */
/* cmocka.h needs these four first. */
// clang-format off
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
// clang-format on

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/err.h"
#include "base/mem.h"
#include "unit/vector/quant_testutil.h"
#include "vector/exact.h"
#include "vector/quant.h"
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

static float rng_gauss(uint64_t *s)
{
    float a = 0;
    for (int i = 0; i < 4; i++)
        a += rng_uniform(s);
    return a;
}

enum { DATA_RANDOM, DATA_CLUSTERED };

static int cmp_float(const void *a, const void *b)
{
    float x = *(const float *)a, y = *(const float *)b;
    return (x > y) - (x < y);
}

/* n rows of dim floats: uniform in [-1, 1), or 8 Gaussian clusters; unit length for cosine. */
static float *make_rows(size_t n, uint32_t dim, int kind, vec_metric_t m, uint64_t *s)
{
    float *x = malloc(n * dim * sizeof(float) + 4);
    float cent[8][384];
    for (int c = 0; c < 8; c++)
        for (uint32_t j = 0; j < dim && j < 384; j++)
            cent[c][j] = rng_uniform(s) * 2;
    for (size_t i = 0; i < n; i++) {
        int c = (int)(rng_next(s) % 8);
        for (uint32_t j = 0; j < dim; j++)
            x[i * dim + j] =
                kind == DATA_RANDOM ? rng_uniform(s) : cent[c][j % 384] + 0.3f * rng_gauss(s);
        if (m == VEC_METRIC_COSINE)
            vec_normalize(x + i * dim, dim);
    }
    return x;
}

static roaring_bitmap_t *make_allowed(uint32_t count, double share, uint64_t *s)
{
    roaring_bitmap_t *b = roaring_bitmap_create();
    for (uint32_t id = 0; id < count; id++)
        if ((double)(rng_next(s) % 1000000) < share * 1000000)
            roaring_bitmap_add(b, id);
    return b;
}

/* Asserts quant_exact_search (with isa) returns exactly what exact_search returns. */
static void assert_same(const quant_t *q, const vec_view_t *v, vec_metric_t m, vec_isa_t isa,
                        const float *query, const roaring_bitmap_t *allowed, size_t k,
                        quant_stats_t *st_out)
{
    topk_hit_t want[128], got[128];
    size_t nw = 99, ng = 77;
    quant_stats_t st;
    assert_true(k <= 128);
    assert_int_equal(exact_search(v, m, query, allowed, k, want, &nw, NULL), 0);
    assert_int_equal(quant_exact_search_isa(q, v, m, isa, query, allowed, k, got, &ng, &st), 0);
    assert_int_equal(ng, nw);
    for (size_t i = 0; i < nw; i++) {
        assert_int_equal(got[i].id, want[i].id);
        assert_memory_equal(&got[i].dist, &want[i].dist, sizeof(float));
    }
    assert_true(st.reranked <= v->count);
    if (st_out)
        *st_out = st;
}

static quant_t *make_quant(const vec_view_t *v, size_t train_rows)
{
    quant_t *q = NULL;
    assert_int_equal(quant_create(v->dim, &q, NULL), 0);
    assert_int_equal(quant_train(q, v, NULL, train_rows, NULL), 0);
    assert_int_equal(quant_encode_rows(q, v, 0, v->count, NULL), 0);
    return q;
}

static void test_quant_matches_exact_search_for_dims_1_to_70_all_metrics(void **state)
{
    (void)state;
    uint64_t s = 12345;
    const double shares[] = {0.001, 0.05, 0.3, 1.0};
    for (uint32_t dim = 1; dim <= 70; dim++)
        for (int m = 0; m <= VEC_METRIC_L2; m++) {
            int kind = dim % 2 ? DATA_RANDOM : DATA_CLUSTERED;
            size_t n = 400;
            float *x = make_rows(n + 3, dim, kind, (vec_metric_t)m, &s);
            vec_view_t v = {x, dim, dim, (uint32_t)n};
            quant_t *q = make_quant(&v, 200);
            for (int qi = 0; qi < 3; qi++) {
                const float *query = x + (n + (size_t)qi) * dim; /* rows n..n+2: not indexed */
                assert_same(q, &v, (vec_metric_t)m, vec_isa_best(), query, NULL, 10, NULL);
                for (size_t si = 0; si < 4; si++) {
                    roaring_bitmap_t *a = make_allowed((uint32_t)n, shares[si], &s);
                    assert_same(q, &v, (vec_metric_t)m, vec_isa_best(), query, a, 1 + qi * 7, NULL);
                    roaring_bitmap_free(a);
                }
            }
            quant_free(q);
            free(x);
        }
}

/* In 1..3 dimensions a row's reconstruction error is nearly parallel to q - x^, so the bounds are
 * nearly tight: dense rows around the k-th distance catch any bound that is too small. */
static void test_quant_is_exact_where_the_bounds_are_tight_in_low_dims(void **state)
{
    (void)state;
    uint64_t s = 1618;
    const uint32_t n = 3000;
    for (uint32_t dim = 1; dim <= 3; dim++)
        for (int m = 0; m <= VEC_METRIC_L2; m++) {
            float *x = make_rows(n + 40, dim, DATA_RANDOM, (vec_metric_t)m, &s);
            vec_view_t v = {x, dim, dim, n};
            quant_t *q = make_quant(&v, 50);
            for (uint32_t qi = 0; qi < 40; qi++) {
                const float *query = x + (size_t)(n + qi) * dim;
                assert_same(q, &v, (vec_metric_t)m, vec_isa_best(), query, NULL, 1 + qi % 3 * 20,
                            NULL);
            }
            quant_free(q);
            free(x);
        }
}

static void test_quant_matches_exact_search_at_384_dims_every_density(void **state)
{
    (void)state;
    uint64_t s = 777;
    const uint32_t dim = 384, n = 4000;
    const double shares[] = {0.001, 0.003, 0.01, 0.1, 0.5, 1.0};
    for (int m = 0; m <= VEC_METRIC_L2; m++)
        for (int kind = 0; kind < 2; kind++) {
            float *x = make_rows(n + 4, dim, kind, (vec_metric_t)m, &s);
            vec_view_t v = {x, dim, dim, n};
            quant_t *q = make_quant(&v, 1000);
            roaring_bitmap_t *empty = roaring_bitmap_create(), *one = roaring_bitmap_of(1, 17u);
            for (int qi = 0; qi < 4; qi++) {
                const float *query = x + (size_t)(n + qi) * dim;
                assert_same(q, &v, (vec_metric_t)m, vec_isa_best(), query, NULL, 10, NULL);
                assert_same(q, &v, (vec_metric_t)m, vec_isa_best(), query, empty, 10, NULL);
                assert_same(q, &v, (vec_metric_t)m, vec_isa_best(), query, one, 10, NULL);
                for (size_t si = 0; si < 6; si++) {
                    roaring_bitmap_t *a = make_allowed(n, shares[si], &s);
                    assert_same(q, &v, (vec_metric_t)m, vec_isa_best(), query, a, 10, NULL);
                    assert_same(q, &v, (vec_metric_t)m, vec_isa_best(), query, a, 100, NULL);
                    roaring_bitmap_free(a);
                }
            }
            roaring_bitmap_free(empty);
            roaring_bitmap_free(one);
            quant_free(q);
            free(x);
        }
}

static void test_quant_prunes_most_rows_of_clustered_384d_data(void **state)
{
    (void)state;
    uint64_t s = 4242;
    const uint32_t dim = 384, n = 4000;
    float *x = make_rows(n + 1, dim, DATA_CLUSTERED, VEC_METRIC_COSINE, &s);
    vec_view_t v = {x, dim, dim, n};
    quant_t *q = make_quant(&v, n);
    quant_stats_t st;
    assert_same(q, &v, VEC_METRIC_COSINE, vec_isa_best(), x + (size_t)n * dim, NULL, 10, &st);
    assert_int_equal(st.scanned, n);
    assert_true(st.reranked >= 10);
    assert_true(st.reranked < n / 4);
    assert_int_equal(st.code_bytes, (uint64_t)n * dim);
    quant_free(q);
    free(x);
}

/* Every instruction set this CPU has gives the exact result, its code kernel agrees with the
 * scalar one exactly (integer arithmetic), and it re-ranks the same rows. */
static void test_quant_every_isa_matches_scalar_and_exact(void **state)
{
    (void)state;
    uint64_t s = 99;
    const uint32_t dims[] = {1, 15, 16, 17, 33, 70, 384};
    for (size_t di = 0; di < 7; di++) {
        uint32_t dim = dims[di], n = 600;
        float *x = make_rows(n + 1, dim, DATA_CLUSTERED, VEC_METRIC_L2, &s);
        vec_view_t v = {x, dim, dim, n};
        quant_t *q = make_quant(&v, n);
        const float *query = x + (size_t)n * dim;
        int16_t w[384];
        for (uint32_t j = 0; j < dim; j++)
            w[j] = (int16_t)((int)(rng_next(&s) % 4001) - 2000);
        for (int isa = VEC_ISA_SCALAR; isa <= VEC_ISA_AVX512; isa++) {
            int32_t ref, got;
            if (quant_code_dot(q, (vec_isa_t)isa, w, 5, &got) == CDN_ERR_UNSUPPORTED) {
                printf("SKIP: this CPU lacks %s\n", vec_isa_name((vec_isa_t)isa));
                continue;
            }
            for (uint32_t id = 0; id < 50; id++) {
                assert_int_equal(quant_code_dot(q, VEC_ISA_SCALAR, w, id, &ref), 0);
                assert_int_equal(quant_code_dot(q, (vec_isa_t)isa, w, id, &got), 0);
                assert_int_equal(got, ref); /* integer sums: identical, not just close */
            }
            for (int m = 0; m <= VEC_METRIC_L2; m++) {
                roaring_bitmap_t *a = make_allowed(n, 0.2, &s);
                assert_same(q, &v, (vec_metric_t)m, (vec_isa_t)isa, query, a, 10, NULL);
                roaring_bitmap_free(a);
                /* Same integer sums, same bounds: the same rows re-ranked in float. */
                quant_stats_t st, ref_st;
                assert_same(q, &v, (vec_metric_t)m, (vec_isa_t)isa, query, NULL, 5, &st);
                assert_same(q, &v, (vec_metric_t)m, VEC_ISA_SCALAR, query, NULL, 5, &ref_st);
                assert_int_equal(st.reranked, ref_st.reranked);
            }
        }
        quant_free(q);
        free(x);
    }
}

/* Trained on a narrow sample, then rows far outside its range are written (some ids skipped,
 * some overwritten): the results stay exact. */
static void test_quant_stays_exact_for_rows_outside_the_training_range(void **state)
{
    (void)state;
    uint64_t s = 5;
    const uint32_t dim = 40, n = 1500;
    for (int m = 0; m <= VEC_METRIC_L2; m++) {
        float *x = make_rows(n + 1, dim, DATA_RANDOM, VEC_METRIC_DOT, &s);
        for (uint32_t i = 0; i < 100; i++) /* the training rows: a narrow band */
            for (uint32_t j = 0; j < dim; j++)
                x[i * dim + j] *= 0.01f;
        for (uint32_t i = 700; i < n; i++)
            for (uint32_t j = 0; j < dim; j++)
                x[i * dim + j] *= (float)(1 + i % 50);
        vec_view_t v = {x, dim, dim, n};
        quant_t *q = NULL;
        assert_int_equal(quant_create(dim, &q, NULL), 0);
        assert_int_equal(quant_train(q, &v, NULL, 100, NULL), 0);
        assert_int_equal(quant_encode_rows(q, &v, 0, 600, NULL), 0);
        assert_int_equal(quant_encode_rows(q, &v, 900, n - 900, NULL), 0); /* 600..899 unknown */
        assert_int_equal(quant_encode_rows(q, &v, 10, 5, NULL), 0);        /* overwrite */
        assert_int_equal(quant_count(q), n);
        for (int qi = 0; qi < 3; qi++) {
            float *query = x + (size_t)n * dim;
            for (uint32_t j = 0; j < dim; j++)
                query[j] = rng_uniform(&s) * (float)(qi * 20 + 1);
            assert_same(q, &v, (vec_metric_t)m, vec_isa_best(), query, NULL, 10, NULL);
            roaring_bitmap_t *a = make_allowed(n, 0.3, &s);
            assert_same(q, &v, (vec_metric_t)m, vec_isa_best(), query, a, 25, NULL);
            roaring_bitmap_free(a);
        }
        /* Rows past quant_count (written to the view but not yet encoded) are still found. */
        vec_view_t more = {x, dim, dim, n}; /* same rows; quantizer knows fewer */
        more.count = n;
        quant_free(q);
        assert_int_equal(quant_create(dim, &q, NULL), 0);
        assert_int_equal(quant_train(q, &v, NULL, 100, NULL), 0);
        assert_int_equal(quant_encode_rows(q, &v, 0, 100, NULL), 0);
        assert_same(q, &more, (vec_metric_t)m, vec_isa_best(), x + (size_t)n * dim, NULL, 10, NULL);
        quant_free(q);
        free(x);
    }
}

/* quant_query_bounds: every float kernel's distance (each instruction set's one-row kernel, and
 * exact_search's) lies within the row's bounds, for every metric, rows outside the training
 * range, rows never encoded and ids past the codes (those unbounded); encoded rows get finite
 * bounds, tight enough on clustered rows to rule out most of a list against its 10th. */
static void test_quant_bounds_hold_every_float_kernel(void **state)
{
    (void)state;
    uint64_t s = 77;
    const uint32_t dim = 96, n = 700, nq = 6;
    for (int m = 0; m <= VEC_METRIC_L2; m++)
        for (int kind = DATA_RANDOM; kind <= DATA_CLUSTERED; kind++) {
            float *x = make_rows(n + nq, dim, kind, (vec_metric_t)m, &s);
            for (uint32_t i = 600; i < 650; i++) /* past the training range */
                for (uint32_t j = 0; j < dim; j++)
                    x[i * dim + j] *= m == VEC_METRIC_COSINE ? 1.0f : 3.0f;
            vec_view_t v = {x, dim, dim, n};
            quant_t *q = NULL;
            assert_int_equal(quant_create(dim, &q, NULL), 0);
            assert_int_equal(quant_train(q, &v, NULL, 400, NULL), 0);
            assert_int_equal(quant_encode_rows(q, &v, 0, 500, NULL), 0);
            assert_int_equal(quant_encode_rows(q, &v, 550, 100, NULL), 0); /* 500..549 unknown */
            uint32_t ids[n + 2];
            float lo[n + 2], hi[n + 2];
            for (uint32_t i = 0; i < n; i++)
                ids[i] = i;
            ids[n] = 690;     /* in the view, past the codes */
            ids[n + 1] = 650; /* the first id past the codes */
            for (uint32_t qi = 0; qi < nq; qi++) {
                const float *query = x + (size_t)(n + qi) * dim;
                size_t ruled_out = 0;
                quant_query_t *qq = NULL;
                assert_int_equal(quant_query_new(q, &v, (vec_metric_t)m, query, &qq), 0);
                quant_query_bounds(qq, ids, n + 2, lo, hi);
                quant_query_free(qq);
                for (uint32_t i = 0; i < n + 2; i++) {
                    const float *row = x + (size_t)ids[i] * dim;
                    int encoded = ids[i] < 650 && (ids[i] < 500 || ids[i] >= 550);
                    assert_true(encoded ? isfinite(lo[i]) && isfinite(hi[i])
                                        : lo[i] == -INFINITY && hi[i] == INFINITY);
                    for (int isa = VEC_ISA_SCALAR; isa <= VEC_ISA_AVX512; isa++) {
                        vec_dist_fn f = vec_dist_for_isa((vec_metric_t)m, (vec_isa_t)isa);
                        if (!f)
                            continue;
                        float d = f(query, row, dim);
                        assert_true(lo[i] <= d && d <= hi[i]);
                    }
                    topk_hit_t one;
                    size_t got = 0;
                    assert_int_equal(exact_search_ids(&v, (vec_metric_t)m, query, &ids[i], 1, 1,
                                                      &one, &got, NULL),
                                     0);
                    assert_int_equal(got, 1);
                    assert_true(lo[i] <= one.dist && one.dist <= hi[i]);
                }
                /* Against the 10th smallest upper bound of the first 40 encoded rows. */
                float h40[40];
                memcpy(h40, hi, sizeof h40);
                qsort(h40, 40, sizeof *h40, cmp_float);
                for (uint32_t i = 0; i < 40; i++)
                    ruled_out += lo[i] > h40[9];
                if (kind == DATA_CLUSTERED && m != VEC_METRIC_DOT)
                    assert_true(ruled_out >= 10);
            }
            quant_free(q);
            free(x);
        }
}

/* Constant dimensions (s_j = 0) later broken, huge, tiny and subnormal magnitudes, non-finite
 * values: every one still exact. */
static void test_quant_stays_exact_on_adversarial_values(void **state)
{
    (void)state;
    uint64_t s = 31337;
    const uint32_t dim = 24, n = 800;
    const float scales[] = {1e30f, 1e-30f, 1e-41f, 1e18f, 3e-39f};
    for (int m = 0; m <= VEC_METRIC_L2; m++)
        for (size_t sc = 0; sc < 5; sc++) {
            float *x = make_rows(n + 1, dim, DATA_RANDOM, VEC_METRIC_DOT, &s);
            for (uint32_t i = 0; i < n; i++) {
                x[i * dim + 3] = 0.5f; /* constant in training ... */
                x[i * dim + 7] = 0;    /* ... and zero */
                for (uint32_t j = 8; j < 16; j++)
                    x[i * dim + j] *= scales[sc];
            }
            for (uint32_t i = 400; i < n; i += 7)
                x[i * dim + 3] = (float)i; /* broken after training */
            x[450 * dim + 1] = NAN;
            x[451 * dim + 2] = INFINITY;
            x[452 * dim + 9] = 3e38f;
            x[453 * dim + 9] = -3e38f;
            for (uint32_t i = 460; i < 470; i++) /* duplicates: ties decided by id */
                memcpy(x + i * dim, x + 461 * dim, dim * sizeof(float));
            vec_view_t v = {x, dim, dim, n};
            quant_t *q = make_quant(&v, 300);
            float *query = x + (size_t)n * dim;
            for (int qi = 0; qi < 3; qi++) {
                memcpy(query, x + (size_t)(461 + qi * 100) * dim, dim * sizeof(float));
                query[0] += 0.001f * (float)qi;
                assert_same(q, &v, (vec_metric_t)m, vec_isa_best(), query, NULL, 10, NULL);
                assert_same(q, &v, (vec_metric_t)m, VEC_ISA_SCALAR, query, NULL, 30, NULL);
            }
            query[5] = NAN; /* a non-finite query falls back and still agrees */
            assert_same(q, &v, (vec_metric_t)m, vec_isa_best(), query, NULL, 10, NULL);
            quant_free(q);
            free(x);
        }
}

/* Values near a large common offset: L2 through ||q - lo||^2 + ||x^ - lo||^2 - 2 q'.x^ must not
 * lose the small differences that decide the order. */
static void test_quant_stays_exact_with_a_large_common_offset(void **state)
{
    (void)state;
    uint64_t s = 2718;
    const uint32_t dim = 64, n = 2000;
    for (int m = 0; m <= VEC_METRIC_L2; m++) {
        float *x = make_rows(n + 2, dim, DATA_CLUSTERED, VEC_METRIC_DOT, &s);
        for (size_t i = 0; i < (size_t)(n + 2) * dim; i++)
            x[i] = 1000.0f + 0.01f * x[i];
        if (m == VEC_METRIC_COSINE)
            for (uint32_t i = 0; i < n + 2; i++)
                vec_normalize(x + (size_t)i * dim, dim);
        vec_view_t v = {x, dim, dim, n};
        quant_t *q = make_quant(&v, n);
        for (int qi = 0; qi < 2; qi++) {
            const float *query = x + (size_t)(n + qi) * dim;
            assert_same(q, &v, (vec_metric_t)m, vec_isa_best(), query, NULL, 10, NULL);
            roaring_bitmap_t *a = make_allowed(n, 0.1, &s);
            assert_same(q, &v, (vec_metric_t)m, vec_isa_best(), query, a, 3, NULL);
            roaring_bitmap_free(a);
        }
        quant_free(q);
        free(x);
    }
}

/* One writer appends rows (outgrowing the chunk directory several times) while searches run:
 * each search sees a consistent prefix and stays exact over the rows it was given. */
static void test_quant_searches_stay_exact_while_rows_are_appended(void **state)
{
    (void)state;
    uint64_t s = 77;
    const uint32_t dim = 8, n = 45000; /* > 8 chunks of 4096: the directory grows */
    float *x = make_rows(n + 1, dim, DATA_CLUSTERED, VEC_METRIC_L2, &s);
    vec_view_t all = {x, dim, dim, n};
    quant_t *q = NULL;
    assert_int_equal(quant_create(dim, &q, NULL), 0);
    assert_int_equal(quant_train(q, &all, NULL, 2000, NULL), 0);
    appender_t a = {q, &all, 500, 0};
    pthread_t th;
    assert_int_equal(pthread_create(&th, NULL, append_rows, &a), 0);
    int searches = 0;
    for (;;) {
        uint32_t seen = quant_count(q);
        vec_view_t v = {x, dim, dim, seen + (seen < n ? 1 : 0)}; /* one row not yet encoded */
        assert_same(q, &v, VEC_METRIC_L2, vec_isa_best(), x + (size_t)n * dim, NULL, 10, NULL);
        searches++;
        if (seen == n)
            break;
    }
    pthread_join(th, NULL);
    assert_int_equal(a.rc, 0);
    assert_true(searches >= 1);
    assert_int_equal(quant_count(q), n);
    quant_free(q);
    free(x);
}

static void test_quant_rejects_bad_arguments_with_messages(void **state)
{
    (void)state;
    cdn_err_t err;
    quant_t *q = NULL;
    assert_int_equal(quant_create(0, &q, &err), CDN_ERR_INVALID);
    assert_non_null(strstr(err.msg, "dim"));
    assert_int_equal(quant_create(4, &q, &err), 0);
    float x[8] = {1, 2, 3, 4, 5, 6, 7, 8};
    vec_view_t v = {x, 4, 4, 2}, v3 = {x, 3, 3, 2};
    assert_int_equal(quant_encode_rows(q, &v, 0, 2, &err), CDN_ERR_INVALID);
    assert_non_null(strstr(err.msg, "untrained"));
    assert_int_equal(quant_train(q, &v3, NULL, 2, &err), CDN_ERR_INVALID);
    assert_int_equal(quant_train(q, &v, NULL, 3, &err), CDN_ERR_INVALID);
    uint32_t bad_id = 9;
    assert_int_equal(quant_train(q, &v, &bad_id, 1, &err), CDN_ERR_INVALID);
    assert_int_equal(quant_train(q, &v, NULL, 2, &err), 0);
    assert_int_equal(quant_encode_rows(q, &v, 1, 2, &err), CDN_ERR_INVALID);
    assert_int_equal(quant_encode_rows(q, &v, 0, 2, &err), 0);
    assert_true(quant_memory(q) > QUANT_CHUNK_ROWS * 16u);
    topk_hit_t out[2];
    size_t n;
    assert_int_equal(quant_exact_search(q, &v3, VEC_METRIC_L2, x, NULL, 2, out, &n, NULL),
                     CDN_ERR_INVALID);
    assert_int_equal(quant_exact_search(q, &v, (vec_metric_t)7, x, NULL, 2, out, &n, NULL),
                     CDN_ERR_INVALID);
    assert_int_equal(quant_exact_search(q, &v, VEC_METRIC_L2, x, NULL, 2, NULL, &n, NULL),
                     CDN_ERR_INVALID);
    assert_int_equal(quant_exact_search(q, &v, VEC_METRIC_L2, x, NULL, 2, out, &n, NULL), 0);
    assert_int_equal(n, 2);
    assert_int_equal(out[0].id, 0);
    quant_free(q);
    quant_free(NULL);
}

/* Scans of QUANT_PAR_MIN_BYTES of codes or more (1 MiB: here 40,000 or 24,000 rows of 64 bytes) run
 * on two threads, each half with its own bounds; the merged answer must still be exactly the float
 * scan's, and a failed allocation in either half must surface as NOMEM, never as a short answer. */
static void test_quant_two_thread_scan_matches_exact_search(void **state)
{
    (void)state;
    uint64_t s = 4242;
    const uint32_t dim = 48, n = 40000;
    for (int m = 0; m <= VEC_METRIC_L2; m++) {
        float *x = make_rows(n + 3, dim, DATA_CLUSTERED, (vec_metric_t)m, &s);
        vec_view_t v = {x, dim, dim, n};
        quant_t *q = make_quant(&v, 2000);
        for (int qi = 0; qi < 3; qi++) {
            const float *query = x + (size_t)(n + qi) * dim;
            quant_stats_t st;
            assert_same(q, &v, (vec_metric_t)m, vec_isa_best(), query, NULL, 10, &st);
            assert_int_equal(st.scanned, n); /* the halves cover every row once */
            assert_same(q, &v, (vec_metric_t)m, vec_isa_best(), query, NULL, 100, NULL);
            roaring_bitmap_t *a = make_allowed(n, 0.6, &s);
            assert_same(q, &v, (vec_metric_t)m, vec_isa_best(), query, a, 10, &st);
            assert_int_equal(st.scanned, roaring_bitmap_get_cardinality(a));
            roaring_bitmap_free(a);
            /* allowed ids in one band that runs past the last row: the second half scans nothing
             * there */
            roaring_bitmap_t *band = roaring_bitmap_from_range(n - 12000, n + 20000, 1);
            assert_same(q, &v, (vec_metric_t)m, vec_isa_best(), query, band, 10, &st);
            assert_int_equal(st.scanned, 12000);
            roaring_bitmap_free(band);
        }
        topk_hit_t out[10];
        size_t got;
        int saw_nomem = 0;
        for (long f = 0; f < 8; f++) {
            cdn_mem_fail_after(f);
            int rc = quant_exact_search(q, &v, (vec_metric_t)m, x + (size_t)n * dim, NULL, 10, out,
                                        &got, NULL);
            cdn_mem_fail_after(-1);
            assert_true(rc == 0 || rc == CDN_ERR_NOMEM);
            assert_true(rc != 0 || got == 10);
            saw_nomem |= rc == CDN_ERR_NOMEM;
        }
        assert_true(saw_nomem);
        quant_free(q);
        free(x);
    }
}

/* quant_round_even stands in for nearbyint in the weights and the codes: equal on every value
 * those take (|v| <= 32,767 for weights, [0, 255] for codes), ties included; a negative
 * fraction may round to +0 where nearbyint gives -0, which converts to the same integer. */
static void test_quant_round_even_is_nearbyint(void **state)
{
    (void)state;
    uint64_t s = 5;
    for (int i = 0; i < 200000; i++) {
        double v;
        switch (i % 4) {
        case 0: v = ((double)(rng_next(&s) % 65536) - 32768.0) / 2.0; break; /* halves: ties */
        case 1: v = ((double)(rng_next(&s) >> 11) * 0x1p-53 - 0.5) * 65534.0; break;
        case 2: v = (double)(rng_next(&s) % 512) / 2.0; break; /* the codes' range */
        default: v = ((double)(rng_next(&s) >> 11) * 0x1p-53 - 0.5) * 4.0; break; /* near 0 */
        }
        double want = nearbyint(v), got = quant_round_even(v);
        if (memcmp(&want, &got, sizeof want) != 0 && !(want == 0 && got == 0))
            fail_msg("quant_round_even(%.17g) = %.17g, nearbyint gives %.17g", v, got, want);
    }
    assert_true(quant_round_even(2.5) == 2.0 && quant_round_even(3.5) == 4.0);
    assert_true(quant_round_even(-2.5) == -2.0 && quant_round_even(32767.4) == 32767.0);
}

static void test_quant_reports_nomem_when_allocation_fails(void **state)
{
    (void)state;
    uint64_t s = 8;
    float *x = make_rows(101, 16, DATA_RANDOM, VEC_METRIC_L2, &s);
    vec_view_t v = {x, 16, 16, 100};
    quant_t *q = make_quant(&v, 100);
    topk_hit_t out[5];
    size_t n;
    int saw_nomem = 0;
    for (long f = 0; f < 6; f++) {
        cdn_mem_fail_after(f);
        int rc = quant_exact_search(q, &v, VEC_METRIC_L2, x + 100 * 16, NULL, 5, out, &n, NULL);
        cdn_mem_fail_after(-1);
        assert_true(rc == 0 || rc == CDN_ERR_NOMEM);
        saw_nomem |= rc == CDN_ERR_NOMEM;
    }
    assert_true(saw_nomem);
    quant_free(q);
    free(x);
}

/* quant_compact: the codes of the kept rows under their new numbers are what encoding the
 * renumbered rows gives (the load check re-encodes sample rows and compares them byte for
 * byte), and the scans over the copy stay exact; a row no kept row lands on stays unknown. */
static void test_quant_compact_renumbers_the_kept_rows(void **state)
{
    (void)state;
    uint64_t s = 4242;
    const uint32_t dim = 384, n = 3000;
    float *x = make_rows(n + 4, dim, DATA_CLUSTERED, VEC_METRIC_COSINE, &s);
    vec_view_t v = {x, dim, dim, n};
    quant_t *q = make_quant(&v, 1000), *c = NULL, *l = NULL;
    uint32_t *map = malloc(n * sizeof *map), kept = 0;
    float *y = malloc(((size_t)n + 4) * dim * sizeof *y);
    for (uint32_t i = 0; i < n; i++) {
        map[i] = i % 3 == 1 ? UINT32_MAX : kept;
        if (map[i] != UINT32_MAX)
            memcpy(y + (size_t)kept++ * dim, x + (size_t)i * dim, dim * sizeof *y);
    }
    memcpy(y + (size_t)kept * dim, x + (size_t)n * dim, 4 * dim * sizeof *y); /* the queries */
    map[0] = kept;                                                            /* past n_new */
    assert_int_equal(quant_compact(q, map, n, kept, &c), CDN_ERR_INVALID);
    map[0] = 0;
    assert_int_equal(quant_compact(q, map, n, kept, &c), 0);
    assert_int_equal(quant_count(c), kept);
    vec_view_t cv = {y, dim, dim, kept};
    for (int qi = 0; qi < 4; qi++) {
        const float *query = y + (size_t)(kept + qi) * dim;
        roaring_bitmap_t *a = make_allowed(kept, 0.2, &s);
        assert_same(c, &cv, VEC_METRIC_COSINE, vec_isa_best(), query, NULL, 10, NULL);
        assert_same(c, &cv, VEC_METRIC_COSINE, vec_isa_best(), query, a, 10, NULL);
        roaring_bitmap_free(a);
    }
    char path[] = "/tmp/cordon-quant-compact-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    close(fd);
    assert_int_equal(quant_save(c, path), 0);
    assert_int_equal(quant_load(path, &cv, &l), 0);
    assert_int_equal(quant_count(l), kept);
    unlink(path);
    quant_free(l);
    quant_free(c);
    /* More target rows than kept ones: the rest stay unknown, and the scan stays exact. */
    assert_int_equal(quant_compact(q, map, n, kept + 2, &c), 0);
    vec_view_t wide = {y, dim, dim, kept + 2};
    assert_same(c, &wide, VEC_METRIC_COSINE, vec_isa_best(), y + (size_t)(kept + 2) * dim, NULL, 10,
                NULL);
    quant_free(c);
    quant_t *untrained = NULL;
    assert_int_equal(quant_create(dim, &untrained, NULL), 0);
    assert_int_equal(quant_compact(untrained, map, n, kept, &c), CDN_ERR_INVALID);
    quant_free(untrained);
    quant_free(q);
    free(map);
    free(x);
    free(y);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_quant_matches_exact_search_for_dims_1_to_70_all_metrics),
        cmocka_unit_test(test_quant_is_exact_where_the_bounds_are_tight_in_low_dims),
        cmocka_unit_test(test_quant_matches_exact_search_at_384_dims_every_density),
        cmocka_unit_test(test_quant_two_thread_scan_matches_exact_search),
        cmocka_unit_test(test_quant_prunes_most_rows_of_clustered_384d_data),
        cmocka_unit_test(test_quant_every_isa_matches_scalar_and_exact),
        cmocka_unit_test(test_quant_compact_renumbers_the_kept_rows),
        cmocka_unit_test(test_quant_stays_exact_for_rows_outside_the_training_range),
        cmocka_unit_test(test_quant_bounds_hold_every_float_kernel),
        cmocka_unit_test(test_quant_stays_exact_on_adversarial_values),
        cmocka_unit_test(test_quant_stays_exact_with_a_large_common_offset),
        cmocka_unit_test(test_quant_searches_stay_exact_while_rows_are_appended),
        cmocka_unit_test(test_quant_rejects_bad_arguments_with_messages),
        cmocka_unit_test(test_quant_round_even_is_nearbyint),
        cmocka_unit_test(test_quant_reports_nomem_when_allocation_fails),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
