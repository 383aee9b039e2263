/* test_exact.c: the top-k heap and the exact filtered scan against a brute force written here,
 * over random allowed sets of every density, all metrics and instruction sets. Relies on cmocka
 * and CRoaring. */
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

#include "base/err.h"
#include "base/topk.h"
#include "vector/exact.h"

static uint64_t rng_next(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

static int cmp_hit(const void *pa, const void *pb)
{
    const topk_hit_t *a = pa, *b = pb;
    if (a->dist != b->dist)
        return a->dist < b->dist ? -1 : 1;
    return a->id < b->id ? -1 : a->id > b->id;
}

/* ---- topk ---- */

static void test_topk_keeps_the_k_nearest_sorted_with_ties_by_id(void **state)
{
    (void)state;
    uint64_t s = 99;
    enum { N = 2000 };
    topk_hit_t all[N];
    for (size_t k = 1; k <= 64; k = k * 2 + 1) {
        topk_t t;
        assert_int_equal(topk_init(&t, k), 0);
        for (uint32_t i = 0; i < N; i++) {
            /* Few distinct distances, so many ties decide membership by id. */
            all[i].id = (uint32_t)(rng_next(&s) % 100000);
            all[i].id = all[i].id * N + i; /* unique */
            all[i].dist = (float)(rng_next(&s) % 37);
            topk_push(&t, all[i].id, all[i].dist);
        }
        qsort(all, N, sizeof all[0], cmp_hit);
        topk_hit_t got[64];
        size_t n = 0;
        topk_extract(&t, got, &n);
        assert_int_equal(n, k);
        for (size_t i = 0; i < k; i++) {
            assert_int_equal(got[i].id, all[i].id);
            assert_true(got[i].dist == all[i].dist);
        }
        assert_int_equal(topk_size(&t), 0);
        topk_free(&t);
    }
}

static void test_topk_push_reports_entry_and_bound_tracks_the_worst(void **state)
{
    (void)state;
    topk_hit_t buf[3];
    topk_t t;
    topk_init_buf(&t, buf, 3);
    assert_true(isinf(topk_bound(&t)));
    assert_true(isinf(topk_worst(&t)));
    assert_true(topk_push(&t, 10, 5.0f));
    assert_true(topk_push(&t, 11, 1.0f));
    assert_float_equal(topk_worst(&t), 5.0f, 0);
    assert_true(isinf(topk_bound(&t)));
    assert_true(topk_push(&t, 12, 9.0f));
    assert_true(topk_full(&t));
    assert_float_equal(topk_bound(&t), 9.0f, 0);
    assert_false(topk_push(&t, 13, 9.5f));
    assert_false(topk_push(&t, 14, 9.0f)); /* equal distance, larger id: stays out */
    assert_true(topk_push(&t, 3, 9.0f));   /* equal distance, smaller id: replaces 12 */
    assert_true(topk_push(&t, 15, 2.0f));  /* evicts 3 (9.0) */
    assert_float_equal(topk_bound(&t), 5.0f, 0);
    topk_hit_t out[3];
    size_t n;
    topk_extract(&t, out, &n);
    assert_int_equal(n, 3);
    assert_int_equal(out[0].id, 11);
    assert_int_equal(out[1].id, 15);
    assert_int_equal(out[2].id, 10);
}

static void test_topk_refuses_nan_and_zero_k(void **state)
{
    (void)state;
    topk_t t;
    assert_int_equal(topk_init(&t, 0), 0);
    assert_false(topk_push(&t, 1, 0.0f));
    topk_free(&t);
    assert_int_equal(topk_init(&t, 2), 0);
    assert_false(topk_push(&t, 1, NAN));
    assert_int_equal(topk_size(&t), 0);
    topk_free(&t);
}

static void test_topk_extracts_in_place_and_pops_worst(void **state)
{
    (void)state;
    topk_hit_t buf[5];
    topk_t t;
    topk_init_buf(&t, buf, 5);
    float d[7] = {4, 2, 8, 6, 1, 7, 3};
    for (uint32_t i = 0; i < 7; i++)
        topk_push(&t, i, d[i]);
    topk_hit_t w;
    assert_true(topk_pop_worst(&t, &w));
    assert_int_equal(w.id, 3); /* held 1,2,3,4,6: worst is 6 (id 3) */
    size_t n;
    topk_extract(&t, buf, &n);
    assert_int_equal(n, 4);
    float want[4] = {1, 2, 3, 4};
    for (size_t i = 0; i < n; i++)
        assert_float_equal(buf[i].dist, want[i], 0);
    assert_false(topk_pop_worst(&t, &w));
}

/* ---- exact scan ---- */

/* Small integer components keep every dot product and squared distance exact in float, so any
 * kernel and the brute force agree to the bit and ties are real ties decided by id. */
static float *int_rows(size_t count, uint32_t dim, uint64_t *s)
{
    float *v = malloc(count * dim * sizeof(float) + sizeof(float));
    for (size_t i = 0; i < count * dim; i++)
        v[i] = (float)((int)(rng_next(s) % 7) - 3);
    return v;
}

static float ref_dist(vec_metric_t m, const float *a, const float *b, uint32_t dim)
{
    double dot = 0, l2 = 0;
    for (uint32_t i = 0; i < dim; i++) {
        dot += (double)a[i] * b[i];
        l2 += ((double)a[i] - b[i]) * ((double)a[i] - b[i]);
    }
    return (float)(m == VEC_METRIC_L2 ? l2 : m == VEC_METRIC_DOT ? -dot : 1.0 - dot);
}

/* The answer by definition: score every allowed row, sort by (dist, id), keep k. */
static size_t brute_force(const vec_view_t *v, vec_metric_t m, const float *q,
                          const roaring_bitmap_t *allowed, size_t k, topk_hit_t *out)
{
    topk_hit_t *all = malloc((v->count + 1) * sizeof *all);
    size_t n = 0;
    for (uint32_t id = 0; id < v->count; id++)
        if (!allowed || roaring_bitmap_contains(allowed, id))
            all[n++] = (topk_hit_t){id, ref_dist(m, q, vec_row(v, id), v->dim)};
    qsort(all, n, sizeof *all, cmp_hit);
    n = n < k ? n : k;
    memcpy(out, all, n * sizeof *all);
    free(all);
    return n;
}

static roaring_bitmap_t *random_allowed(uint32_t count, double share, uint64_t *s)
{
    roaring_bitmap_t *b = roaring_bitmap_create();
    for (uint32_t id = 0; id < count; id++)
        if ((double)(rng_next(s) % 1000000) < share * 1e6)
            roaring_bitmap_add(b, id);
    return b;
}

static void check_against_brute_force(const vec_view_t *v, const float *q,
                                      const roaring_bitmap_t *allowed, size_t k, uint64_t rows)
{
    topk_hit_t *want = malloc((k + 1) * sizeof *want), *got = malloc((k + 1) * sizeof *got);
    for (int m = VEC_METRIC_COSINE; m <= VEC_METRIC_L2; m++) {
        size_t nw = brute_force(v, (vec_metric_t)m, q, allowed, k, want);
        for (int isa = VEC_ISA_SCALAR; isa <= (int)vec_isa_best(); isa++) {
            size_t ng = 12345;
            uint64_t scanned = 0;
            assert_int_equal(exact_search_isa(v, (vec_metric_t)m, (vec_isa_t)isa, q, allowed, k,
                                              got, &ng, &scanned),
                             0);
            assert_int_equal(ng, nw);
            assert_int_equal(scanned, rows);
            for (size_t i = 0; i < nw; i++)
                if (got[i].id != want[i].id || got[i].dist != want[i].dist)
                    fail_msg("metric %d isa %d k %zu rank %zu: got id %u (%g) want id %u (%g)", m,
                             isa, k, i, got[i].id, got[i].dist, want[i].id, want[i].dist);
        }
    }
    free(want);
    free(got);
}

static void test_exact_matches_brute_force_for_every_density_metric_and_isa(void **state)
{
    (void)state;
    uint64_t s = 1234567;
    const uint32_t dims[] = {1, 7, 16, 33, 100};
    const double shares[] = {0.0, 0.001, 0.01, 0.1, 0.5, 1.0};
    const size_t ks[] = {1, 10, 57, 5000};
    const uint32_t count = 3001;
    for (size_t di = 0; di < sizeof dims / sizeof dims[0]; di++) {
        float *rows = int_rows(count, dims[di], &s), *q = int_rows(1, dims[di], &s);
        vec_view_t v = {rows, dims[di], dims[di], count};
        for (size_t si = 0; si < sizeof shares / sizeof shares[0]; si++) {
            roaring_bitmap_t *allowed = random_allowed(count, shares[si], &s);
            uint64_t card = roaring_bitmap_get_cardinality(allowed);
            for (size_t ki = 0; ki < sizeof ks / sizeof ks[0]; ki++)
                check_against_brute_force(&v, q, allowed, ks[ki], card);
            roaring_bitmap_free(allowed);
        }
        /* NULL allowed means every row; a single allowed row is its own answer. */
        check_against_brute_force(&v, q, NULL, 10, count);
        roaring_bitmap_t *one = roaring_bitmap_of(1, 1777);
        check_against_brute_force(&v, q, one, 10, 1);
        roaring_bitmap_free(one);
        free(rows);
        free(q);
    }
}

/* Realistic data: unit-length 384-d float rows and cosine, against a double-precision answer. */
static void test_exact_finds_the_true_cosine_neighbours_of_unit_vectors(void **state)
{
    (void)state;
    uint64_t s = 777;
    const uint32_t dim = 384, count = 2000;
    float *rows = malloc((size_t)count * dim * sizeof(float)), q[384];
    for (size_t i = 0; i < (size_t)count * dim; i++)
        rows[i] = (float)((double)(rng_next(&s) % 20001) / 10000.0 - 1.0);
    for (uint32_t i = 0; i < count; i++)
        vec_normalize(rows + (size_t)i * dim, dim);
    memcpy(q, rows + 5 * dim, sizeof q); /* row 5 itself must come first */
    vec_view_t v = {rows, dim, dim, count};
    roaring_bitmap_t *allowed = random_allowed(count, 0.3, &s);
    roaring_bitmap_add(allowed, 5);
    topk_hit_t want[20], got[20];
    size_t nw = brute_force(&v, VEC_METRIC_COSINE, q, allowed, 20, want), ng;
    assert_int_equal(exact_search(&v, VEC_METRIC_COSINE, q, allowed, 20, got, &ng, NULL), 0);
    assert_int_equal(ng, nw);
    assert_int_equal(got[0].id, 5);
    for (size_t i = 0; i < ng; i++) {
        assert_int_equal(got[i].id, want[i].id);
        assert_float_equal(got[i].dist, want[i].dist, 1e-5);
    }
    roaring_bitmap_free(allowed);
    free(rows);
}

static void test_exact_ignores_allowed_ids_beyond_the_view(void **state)
{
    (void)state;
    uint64_t s = 5;
    float *rows = int_rows(100, 8, &s), *q = int_rows(1, 8, &s);
    vec_view_t v = {rows, 8, 8, 50}; /* rows 50..99 exist in memory but are not in the view */
    roaring_bitmap_t *allowed = roaring_bitmap_of(5, 3, 49, 50, 99, UINT32_MAX);
    topk_hit_t got[10];
    size_t n;
    uint64_t scanned;
    assert_int_equal(exact_search(&v, VEC_METRIC_L2, q, allowed, 10, got, &n, &scanned), 0);
    assert_int_equal(n, 2);
    assert_int_equal(scanned, 2);
    for (size_t i = 0; i < n; i++)
        assert_true(got[i].id == 3 || got[i].id == 49);
    roaring_bitmap_t *outside = roaring_bitmap_of(2, 50, 70);
    assert_int_equal(exact_search(&v, VEC_METRIC_L2, q, outside, 10, got, &n, &scanned), 0);
    assert_int_equal(n, 0);
    assert_int_equal(scanned, 0);
    roaring_bitmap_free(outside);
    uint32_t ids[] = {99, 49, 50, 3, UINT32_MAX};
    assert_int_equal(exact_search_ids(&v, VEC_METRIC_L2, q, ids, 5, 10, got, &n, &scanned), 0);
    assert_int_equal(n, 2);
    assert_int_equal(scanned, 2);
    roaring_bitmap_free(allowed);
    free(rows);
    free(q);
}

/* Rows a page each; every row not allowed sits on an unreadable page, so reading one faults. */
static void test_exact_reads_only_allowed_rows(void **state)
{
    (void)state;
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    uint32_t dim = (uint32_t)(page / sizeof(float)), count = 64;
    float *rows =
        mmap(NULL, page * count, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    assert_true(rows != MAP_FAILED);
    uint64_t s = 11;
    roaring_bitmap_t *allowed = roaring_bitmap_create();
    for (uint32_t id = 0; id < count; id++) {
        for (uint32_t i = 0; i < dim; i++)
            rows[(size_t)id * dim + i] = (float)(rng_next(&s) % 5);
        if (id % 3 == 1)
            roaring_bitmap_add(allowed, id);
        else
            assert_int_equal(mprotect((char *)rows + id * page, page, PROT_NONE), 0);
    }
    float *q = malloc(dim * sizeof(float));
    memcpy(q, rows + (size_t)dim * 4, dim * sizeof(float));
    vec_view_t v = {rows, dim, dim, count};
    topk_hit_t got[5];
    size_t n;
    uint64_t scanned;
    assert_int_equal(exact_search(&v, VEC_METRIC_L2, q, allowed, 5, got, &n, &scanned), 0);
    assert_int_equal(n, 5);
    assert_int_equal(scanned, roaring_bitmap_get_cardinality(allowed));
    assert_int_equal(got[0].id, 4);
    assert_float_equal(got[0].dist, 0.0f, 0);
    roaring_bitmap_free(allowed);
    munmap(rows, page * count);
    free(q);
}

static void test_exact_search_ids_agrees_with_bitmap_search(void **state)
{
    (void)state;
    uint64_t s = 31;
    const uint32_t count = 1500, dim = 24;
    float *rows = int_rows(count, dim, &s), *q = int_rows(1, dim, &s);
    vec_view_t v = {rows, dim, dim, count};
    roaring_bitmap_t *allowed = random_allowed(count, 0.2, &s);
    size_t card = roaring_bitmap_get_cardinality(allowed);
    uint32_t *ids = malloc(card * sizeof *ids);
    roaring_bitmap_to_uint32_array(allowed, ids);
    for (size_t i = card - 1; i > 0; i--) { /* shuffle: order must not matter */
        size_t j = rng_next(&s) % (i + 1);
        uint32_t t = ids[i];
        ids[i] = ids[j];
        ids[j] = t;
    }
    topk_hit_t a[30], b[30];
    size_t na, nb;
    assert_int_equal(exact_search(&v, VEC_METRIC_DOT, q, allowed, 30, a, &na, NULL), 0);
    assert_int_equal(exact_search_ids(&v, VEC_METRIC_DOT, q, ids, card, 30, b, &nb, NULL), 0);
    assert_int_equal(na, 30);
    assert_int_equal(nb, na);
    assert_memory_equal(a, b, na * sizeof a[0]);
    roaring_bitmap_free(allowed);
    free(ids);
    free(rows);
    free(q);
}

static void test_exact_rejects_bad_arguments_and_k_zero_finds_nothing(void **state)
{
    (void)state;
    float rows[8] = {0}, q[4] = {0};
    vec_view_t v = {rows, 4, 4, 2};
    topk_hit_t out[2];
    size_t n = 9;
    assert_int_equal(exact_search(NULL, VEC_METRIC_L2, q, NULL, 2, out, &n, NULL), CDN_ERR_INVALID);
    assert_int_equal(exact_search(&v, VEC_METRIC_L2, NULL, NULL, 2, out, &n, NULL),
                     CDN_ERR_INVALID);
    assert_int_equal(exact_search(&v, VEC_METRIC_L2, q, NULL, 2, NULL, &n, NULL), CDN_ERR_INVALID);
    assert_int_equal(exact_search(&v, (vec_metric_t)9, q, NULL, 2, out, &n, NULL), CDN_ERR_INVALID);
    vec_view_t bad = {rows, 2, 4, 2};
    assert_int_equal(exact_search(&bad, VEC_METRIC_L2, q, NULL, 2, out, &n, NULL), CDN_ERR_INVALID);
    assert_int_equal(exact_search(&v, VEC_METRIC_L2, q, NULL, 0, NULL, &n, NULL), 0);
    assert_int_equal(n, 0);
    vec_view_t empty = {NULL, 4, 4, 0};
    assert_int_equal(exact_search(&empty, VEC_METRIC_L2, q, NULL, 2, out, &n, NULL), 0);
    assert_int_equal(n, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_topk_keeps_the_k_nearest_sorted_with_ties_by_id),
        cmocka_unit_test(test_topk_push_reports_entry_and_bound_tracks_the_worst),
        cmocka_unit_test(test_topk_refuses_nan_and_zero_k),
        cmocka_unit_test(test_topk_extracts_in_place_and_pops_worst),
        cmocka_unit_test(test_exact_matches_brute_force_for_every_density_metric_and_isa),
        cmocka_unit_test(test_exact_finds_the_true_cosine_neighbours_of_unit_vectors),
        cmocka_unit_test(test_exact_ignores_allowed_ids_beyond_the_view),
        cmocka_unit_test(test_exact_reads_only_allowed_rows),
        cmocka_unit_test(test_exact_search_ids_agrees_with_bitmap_search),
        cmocka_unit_test(test_exact_rejects_bad_arguments_and_k_zero_finds_nothing),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
