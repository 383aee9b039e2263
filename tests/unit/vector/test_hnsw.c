/* test_hnsw.c: HNSW recall against brute force, unfiltered and under permission filters of
 * every selectivity, deletes, completeness and the visit budget. Relies on cmocka, CRoaring. */
/* cmocka.h needs these four first. */
// clang-format off
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
// clang-format on

#include "base/err.h"
#include "unit/vector/hnsw_testutil.h"
#include "vector/hnsw_int.h"

#define N 5000
#define DIM 32
#define NQ 100
#define K 10

typedef struct fixture {
    float *data, *queries;
    uint32_t cluster_of[N];
    vec_view_t view;
    hnsw_t *h;
} fixture_t;

static int setup(void **state)
{
    fixture_t *f = calloc(1, sizeof(*f));
    f->data = tu_clustered(N, DIM, 50, 1.0f, 1, 0, f->cluster_of);
    f->queries = tu_queries(NQ, DIM, 50, 1, 77); /* same centres, not rows of the data */
    f->view = (vec_view_t){f->data, DIM, DIM, N};
    *state = f;
    return tu_build_graph(&f->view, VEC_METRIC_L2, 100, 2, &f->h);
}

static int teardown(void **state)
{
    fixture_t *f = *state;
    hnsw_free(f->h);
    free(f->data);
    free(f->queries);
    free(f);
    return 0;
}

/* Mean recall@K over the queries for a mode/allowed set; fails the test on any hit that is
 * not admissible. */
static double mean_recall(fixture_t *f, uint32_t ef, const roaring_bitmap_t *allowed,
                          const roaring_bitmap_t *deleted, hnsw_mode_t mode)
{
    double sum = 0;
    for (uint32_t qi = 0; qi < NQ; qi++) {
        const float *q = f->queries + (size_t)qi * DIM;
        hnsw_hit_t hits[K];
        uint32_t n, truth[K];
        hnsw_stats_t st;
        assert_int_equal(hnsw_search(f->h, &f->view, q, K, ef, allowed, mode, 0, &st, hits, &n), 0);
        for (uint32_t i = 0; i < n; i++) {
            if (mode == HNSW_MODE_FILTERED && allowed)
                assert_true(roaring_bitmap_contains(allowed, hits[i].id));
            if (deleted)
                assert_false(roaring_bitmap_contains(deleted, hits[i].id));
            if (i)
                assert_true(hits[i - 1].dist <= hits[i].dist);
        }
        const roaring_bitmap_t *a = mode == HNSW_MODE_FILTERED ? allowed : NULL;
        uint32_t nt = tu_exact(&f->view, VEC_METRIC_L2, q, N, a, deleted, K, truth);
        sum += tu_recall(hits, n, truth, nt);
    }
    return sum / NQ;
}

static void test_unfiltered_recall_at_10_beats_095(void **state)
{
    fixture_t *f = *state;
    double r = mean_recall(f, 64, NULL, NULL, HNSW_MODE_UNFILTERED);
    print_message("unfiltered recall@10 ef=64: %.4f\n", r);
    assert_true(r >= 0.95);
}

static void filtered_case(fixture_t *f, double frac, uint32_t ef, double min_recall)
{
    roaring_bitmap_t *allowed = tu_random_set(N, frac, (uint64_t)(frac * 1e6) + 5);
    double r = mean_recall(f, ef, allowed, NULL, HNSW_MODE_FILTERED);
    print_message("filtered %.1f%% (%llu ids) recall@10 ef=%u: %.4f\n", frac * 100,
                  (unsigned long long)roaring_bitmap_get_cardinality(allowed), ef, r);
    assert_true(r >= min_recall);
    roaring_bitmap_free(allowed);
}

static void test_filtered_half_allowed_keeps_recall_and_hides_the_rest(void **state)
{
    filtered_case(*state, 0.5, 64, 0.9);
}

static void test_filtered_five_percent_keeps_recall(void **state)
{
    filtered_case(*state, 0.05, 64, 0.9);
}

static void test_filtered_half_percent_keeps_recall(void **state)
{
    filtered_case(*state, 0.005, 64, 0.9);
}

/* Allowed sets bigger than ef: entry points cover only part of them, so recall rests on
 * two-hop expansion and on resuming through bridges. */
static void test_filtered_sparse_sets_larger_than_ef_keep_recall(void **state)
{
    filtered_case(*state, 0.01, 32, 0.9);
    filtered_case(*state, 0.02, 32, 0.9);
}

/* Permissions follow structure: only two clusters are readable, far from most queries, so
 * the query's own neighbourhood holds nothing allowed. */
static void test_filtered_whole_clusters_reach_distant_allowed_region(void **state)
{
    fixture_t *f = *state;
    roaring_bitmap_t *allowed = roaring_bitmap_create();
    for (uint32_t i = 0; i < N; i++)
        if (f->cluster_of[i] == 3 || f->cluster_of[i] == 17)
            roaring_bitmap_add(allowed, i);
    double r = mean_recall(f, 64, allowed, NULL, HNSW_MODE_FILTERED);
    print_message("filtered two clusters (%llu ids) recall@10: %.4f\n",
                  (unsigned long long)roaring_bitmap_get_cardinality(allowed), r);
    assert_true(r >= 0.9);
    roaring_bitmap_free(allowed);
}

static void test_unfiltered_mode_ignores_allowed_set(void **state)
{
    fixture_t *f = *state;
    roaring_bitmap_t *allowed = tu_random_set(N, 0.01, 9);
    hnsw_hit_t a[K], b[K];
    uint32_t na, nb;
    assert_int_equal(hnsw_search(f->h, &f->view, f->queries, K, 64, allowed, HNSW_MODE_UNFILTERED,
                                 0, NULL, a, &na),
                     0);
    assert_int_equal(
        hnsw_search(f->h, &f->view, f->queries, K, 64, NULL, HNSW_MODE_UNFILTERED, 0, NULL, b, &nb),
        0);
    assert_int_equal(na, K);
    assert_int_equal(na, nb);
    assert_memory_equal(a, b, sizeof(hnsw_hit_t) * na);
    roaring_bitmap_free(allowed);
}

static void test_tiny_allowed_set_is_searched_exactly_and_says_complete(void **state)
{
    fixture_t *f = *state;
    roaring_bitmap_t *allowed = roaring_bitmap_create();
    uint32_t ids[] = {7, 123, 999, 2500, 4999};
    for (size_t i = 0; i < 5; i++)
        roaring_bitmap_add(allowed, ids[i]);
    hnsw_hit_t hits[K];
    uint32_t n, truth[K];
    hnsw_stats_t st;
    assert_int_equal(hnsw_search(f->h, &f->view, f->queries, K, 64, allowed, HNSW_MODE_FILTERED, 0,
                                 &st, hits, &n),
                     0);
    uint32_t nt = tu_exact(&f->view, VEC_METRIC_L2, f->queries, N, allowed, NULL, K, truth);
    assert_int_equal(n, nt);
    for (uint32_t i = 0; i < n; i++)
        assert_int_equal(hits[i].id, truth[i]);
    assert_int_equal(st.incomplete, 0);
    assert_int_equal(st.seeds, 5);
    roaring_bitmap_free(allowed);
}

static void test_visit_budget_stops_search_and_flags_it(void **state)
{
    fixture_t *f = *state;
    roaring_bitmap_t *allowed = tu_random_set(N, 0.005, 11);
    hnsw_hit_t hits[K];
    uint32_t n;
    hnsw_stats_t st;
    uint64_t budget = roaring_bitmap_get_cardinality(allowed);
    assert_int_equal(hnsw_search(f->h, &f->view, f->queries, K, 200, allowed, HNSW_MODE_FILTERED,
                                 budget, &st, hits, &n),
                     0);
    assert_int_equal(st.exhausted_budget, 1);
    assert_int_equal(st.incomplete, 1);
    assert_true(st.visited <= budget);
    for (uint32_t i = 0; i < n; i++)
        assert_true(roaring_bitmap_contains(allowed, hits[i].id));
    /* Without a budget the same search finishes by itself. */
    assert_int_equal(hnsw_search(f->h, &f->view, f->queries, K, 200, allowed, HNSW_MODE_FILTERED, 0,
                                 &st, hits, &n),
                     0);
    assert_int_equal(st.exhausted_budget, 0);
    assert_true(st.visited > budget);
    roaring_bitmap_free(allowed);
}

static void test_deleted_ids_never_returned_and_recall_holds(void **state)
{
    fixture_t *f = *state;
    roaring_bitmap_t *deleted = tu_random_set(N, 0.1, 21);
    uint64_t nd = roaring_bitmap_get_cardinality(deleted);
    uint32_t *del = malloc(sizeof(uint32_t) * nd);
    roaring_bitmap_to_uint32_array(deleted, del);
    for (uint64_t i = 0; i < nd; i++)
        assert_int_equal(hnsw_delete(f->h, del[i]), 0);
    assert_int_equal(hnsw_delete(f->h, del[0]), 0); /* twice is fine */
    free(del);
    hnsw_info_t info;
    hnsw_get_info(f->h, &info);
    assert_int_equal(info.deleted, roaring_bitmap_get_cardinality(deleted));
    double r = mean_recall(f, 64, NULL, deleted, HNSW_MODE_UNFILTERED);
    assert_true(r >= 0.95);
    roaring_bitmap_t *allowed = tu_random_set(N, 0.05, 22);
    r = mean_recall(f, 64, allowed, deleted, HNSW_MODE_FILTERED);
    print_message("after 10%% deleted: filtered 5%% recall %.4f\n", r);
    assert_true(r >= 0.9);
    roaring_bitmap_free(allowed);
    roaring_bitmap_free(deleted);
}

/* The allowed set may name rows the graph has not indexed yet (or never will): they are
 * neither returned nor counted as seen, so the result cannot claim to be complete. */
static void test_allowed_ids_missing_from_graph_are_skipped_and_flagged(void **state)
{
    fixture_t *f = *state;
    roaring_bitmap_t *allowed = roaring_bitmap_create();
    for (uint32_t i = 0; i < 40; i++)
        roaring_bitmap_add(allowed, i * 97);
    roaring_bitmap_add_range(allowed, N, N + 200); /* sparse: the flat-bitset path */
    hnsw_hit_t hits[K];
    uint32_t n;
    hnsw_stats_t st;
    assert_int_equal(hnsw_search(f->h, &f->view, f->queries, K, 64, allowed, HNSW_MODE_FILTERED, 0,
                                 &st, hits, &n),
                     0);
    assert_int_equal(n, K);
    for (uint32_t i = 0; i < n; i++) {
        assert_true(hits[i].id < N);
        assert_int_equal(hits[i].id % 97, 0);
    }
    assert_int_equal(st.incomplete, 1);
    roaring_bitmap_free(allowed);
}

static void test_delete_unknown_id_is_not_found(void **state)
{
    fixture_t *f = *state;
    assert_int_equal(hnsw_delete(f->h, N + 10), CDN_ERR_NOT_FOUND);
}

static void test_bad_arguments_are_rejected(void **state)
{
    fixture_t *f = *state;
    hnsw_hit_t hits[K];
    uint32_t n;
    vec_view_t wrong = f->view;
    wrong.dim = DIM + 1;
    assert_int_equal(
        hnsw_search(f->h, &wrong, f->queries, K, 64, NULL, HNSW_MODE_UNFILTERED, 0, NULL, hits, &n),
        CDN_ERR_INVALID);
    assert_int_equal(hnsw_search(f->h, &f->view, f->queries, 0, 64, NULL, HNSW_MODE_UNFILTERED, 0,
                                 NULL, hits, &n),
                     CDN_ERR_INVALID);
    assert_int_equal(hnsw_insert(f->h, &f->view, N), CDN_ERR_INVALID);
    assert_int_equal(hnsw_insert(f->h, &f->view, 3), CDN_ERR_EXISTS);
    hnsw_t *h;
    hnsw_params_t p = hnsw_params_default();
    p.m = 1;
    assert_int_equal(hnsw_create(p, VEC_METRIC_L2, DIM, &h), CDN_ERR_INVALID);
}

static void test_ids_with_gaps_in_any_order_are_found(void **state)
{
    (void)state;
    float *data = tu_clustered(2000, 8, 10, 0.5f, 3, 1, NULL);
    vec_view_t v = {data, 8, 8, 2000};
    hnsw_t *h;
    assert_int_equal(hnsw_create(hnsw_params_default(), VEC_METRIC_COSINE, 8, &h), 0);
    /* Every third id, inserted from the top down. */
    for (int32_t i = 1998; i >= 0; i -= 3)
        assert_int_equal(hnsw_insert(h, &v, (uint32_t)i), 0);
    hnsw_info_t info;
    hnsw_get_info(h, &info);
    assert_int_equal(info.nodes, 667);
    for (uint32_t i = 0; i < 2000; i += 97) {
        hnsw_hit_t hit;
        uint32_t n;
        assert_int_equal(hnsw_search(h, &v, vec_row(&v, i), 1, 32, NULL, HNSW_MODE_UNFILTERED, 0,
                                     NULL, &hit, &n),
                         0);
        assert_int_equal(n, 1);
        assert_int_equal(hit.id % 3, 0);
        if (i % 3 == 0)
            assert_int_equal(hit.id, i);
    }
    hnsw_free(h);
    free(data);
}

static void test_empty_index_returns_nothing_and_is_complete(void **state)
{
    (void)state;
    hnsw_t *h;
    float q[4] = {1, 0, 0, 0};
    vec_view_t v = {q, 4, 4, 1};
    assert_int_equal(hnsw_create(hnsw_params_default(), VEC_METRIC_L2, 4, &h), 0);
    hnsw_hit_t hit;
    uint32_t n = 99;
    hnsw_stats_t st;
    assert_int_equal(hnsw_search(h, &v, q, 1, 0, NULL, HNSW_MODE_UNFILTERED, 0, &st, &hit, &n), 0);
    assert_int_equal(n, 0);
    assert_int_equal(st.incomplete, 0);
    hnsw_free(h);
}

/* The sample witness raises the alarm at the smallest count a correct top-10 reaches with
 * probability under 1%: with a tenth of the allowed set sampled, 4 nearer sampled rows happen
 * 1.3% of the time and 5 only 0.16%; with a fiftieth, 2 happen 1.6% and 3 0.09%. */
static void test_sample_witness_alarms_only_on_improbable_counts(void **state)
{
    (void)state;
    hnsw_stats_t st = {0};
    assert_false(hnsw_sample_suspect(&st, 10)); /* no sample: no evidence */
    st.sampled = 1000;
    st.sample_allowed = 10000;
    st.sample_closer = 4;
    assert_false(hnsw_sample_suspect(&st, 10));
    st.sample_closer = 5;
    assert_true(hnsw_sample_suspect(&st, 10));
    st.sample_allowed = 50000;
    st.sample_closer = 2;
    assert_false(hnsw_sample_suspect(&st, 10));
    st.sample_closer = 3;
    assert_true(hnsw_sample_suspect(&st, 10));
    st.sample_allowed = 1000; /* the sample was the whole set: the answer is exact anyway */
    st.sample_closer = 10;
    assert_false(hnsw_sample_suspect(&st, 10));
}

/* Recall@10 of stored row `row` asked as a query at ef, its own hit left out on both sides. */
/* The row calibration asks for rank r: the first at or after it on level 0 only. */
static uint32_t level0_row_at(fixture_t *f, uint32_t r)
{
    while (r + 1 < N && f->h->levels[r] != 0)
        r++;
    return r;
}

/* Recall@K of row asked as a query with itself hidden, against a brute force without it. */
static double self_recall(fixture_t *f, uint32_t row, uint32_t ef)
{
    uint32_t truth[K + 1], t[K], nt = 0;
    hnsw_hit_t got[K + 1], g[K];
    uint32_t n = 0, ng = 0;
    uint32_t m =
        tu_exact(&f->view, VEC_METRIC_L2, vec_row(&f->view, row), N, NULL, NULL, K + 1, truth);
    for (uint32_t i = 0; i < m && nt < K; i++)
        if (truth[i] != row)
            t[nt++] = truth[i];
    assert_int_equal(hnsw_search_hiding(f->h, &f->view, NULL, vec_row(&f->view, row), K + 1, ef,
                                        NULL, HNSW_MODE_UNFILTERED, row, NULL, got, &n),
                     0);
    for (uint32_t i = 0; i < n && ng < K; i++) {
        assert_int_not_equal(got[i].id, row); /* hidden: never returned */
        g[ng++] = got[i];
    }
    return tu_recall(g, ng, t, nt);
}

/* A hidden row is never returned, in either mode, and the traversal still finds the row's
 * neighbours (the calibration's stand-in for a query the graph has never seen). */
static void test_hidden_row_is_never_returned_and_its_neighbours_are_found(void **state)
{
    fixture_t *f = *state;
    roaring_bitmap_t *all = roaring_bitmap_from_range(0, N, 1);
    double sum = 0;
    for (uint32_t i = 0; i < 40; i++) {
        uint32_t row = level0_row_at(f, i * (N / 40));
        hnsw_hit_t got[K];
        hnsw_stats_t st, plain;
        uint32_t n = 0;
        const float *q = vec_row(&f->view, row);
        assert_int_equal(hnsw_search_hiding(f->h, &f->view, NULL, q, K, 64, all, HNSW_MODE_FILTERED,
                                            row, &st, got, &n),
                         0);
        for (uint32_t j = 0; j < n; j++)
            assert_int_not_equal(got[j].id, row);
        assert_int_equal(
            hnsw_search(f->h, &f->view, q, K, 64, NULL, HNSW_MODE_UNFILTERED, 0, &plain, got, &n),
            0);
        assert_int_equal(got[0].id, row); /* not hidden: the row is its own nearest */
        sum += self_recall(f, row, 64);
    }
    print_message("stored rows hidden from their traversals, ef 64: recall %.4f\n", sum / 40);
    assert_true(sum / 40 >= 0.9);
    roaring_bitmap_free(all);
}

/* Unfiltered traversals of large graphs also start from the nearest of a random sample (a
 * square root of the rows): seeds are counted, none on a graph under 1,024 rows. */
static void test_unfiltered_traversal_is_seeded_from_a_sample_on_large_graphs(void **state)
{
    fixture_t *f = *state;
    hnsw_hit_t got[K];
    hnsw_stats_t st;
    uint32_t n = 0;
    assert_int_equal(
        hnsw_search(f->h, &f->view, f->queries, K, 32, NULL, HNSW_MODE_UNFILTERED, 0, &st, got, &n),
        0);
    assert_true(st.seeds >= 16);
    assert_true(st.distances >= 70); /* the sample, sqrt(5000), was scored */
    hnsw_t *small = NULL;
    vec_view_t v = {f->data, DIM, DIM, 1000};
    assert_int_equal(tu_build_graph(&v, VEC_METRIC_L2, 0, 2, &small), 0);
    assert_int_equal(
        hnsw_search(small, &v, f->queries, K, 32, NULL, HNSW_MODE_UNFILTERED, 0, &st, got, &n), 0);
    assert_int_equal(st.seeds, 0);
    assert_int_equal(n, K);
    hnsw_free(small);
}

/* Recall of the calibration's rows at ef, measured here on the same rows. */
static double rows_recall(fixture_t *f, uint32_t nq, uint32_t ef)
{
    double sum = 0;
    for (uint32_t i = 0; i < nq; i++)
        sum += self_recall(f, level0_row_at(f, (uint32_t)((uint64_t)i * N / nq)), ef) / nq;
    return sum;
}

static size_t ladder_step(const uint32_t *ladder, size_t n, uint32_t ef)
{
    size_t s = 0;
    while (s < n && ladder[s] != ef)
        s++;
    assert_true(s < n);
    return s;
}

/* Calibration climbs its ladder until the recall is at the target with confidence: with 40
 * queries (400 answers) a target of 0.99 allows 2 misses (upper bound of the miss rate 0.0100;
 * 3 misses give 0.0132), and keeps one step more. The recall it reports is the one an
 * independent brute force measures at its ef, the step below the confident one does not meet
 * the bound, the deep breadth is the first step
 * measured at the deep recall, the filtered breadth keeps its floor; a target the answers can
 * never show with confidence gets the first step measured there and two more, and an
 * unreachable target the top of the ladder. */
static void test_calibration_climbs_until_the_target_is_confidently_reached(void **state)
{
    fixture_t *f = *state;
    roaring_bitmap_t *live = roaring_bitmap_from_range(0, N, 1);
    const uint32_t nq = 40;
    static const uint32_t ladder[] = {16,  20,  24,  28,  32,  40,  48,  56,  64,  80, 96,
                                      112, 128, 160, 192, 224, 256, 320, 384, 448, 512};
    const size_t steps = sizeof ladder / sizeof ladder[0];
    const double answer = 1.0 / (nq * K);
    hnsw_calib_t cal;
    assert_int_equal(hnsw_calibrate(f->h, &f->view, NULL, live, nq, 0.99, 0.998, 32, &cal), 0);
    print_message("calibrated: ef %u (%.4f), deep %u (%.4f), dense %u, filtered %u\n", cal.ef,
                  cal.recall, cal.ef_deep, cal.recall_deep, cal.ef_dense, cal.ef_filtered);
    assert_int_equal(cal.queries, nq);
    size_t step = ladder_step(ladder, steps, cal.ef);
    assert_true(fabs(rows_recall(f, nq, cal.ef) - cal.recall) < 1.5 * answer);
    /* The breadth is the step after the confident one (one answer of slack for ties). */
    assert_true(step >= 1 && cal.ef < 512);
    size_t conf = step - 1;
    assert_true(rows_recall(f, nq, ladder[conf]) > 1 - 2.5 * answer);
    if (conf > 0) /* 3 misses or more below it */
        assert_true(rows_recall(f, nq, ladder[conf - 1]) < 1 - 1.5 * answer);
    if (cal.ef_deep) {
        size_t d = ladder_step(ladder, steps, cal.ef_deep);
        assert_true(cal.recall_deep >= 0.998);
        assert_true(d >= step || cal.recall >= 0.998);
        if (d > 0)
            assert_true(rows_recall(f, nq, ladder[d - 1]) < 0.998 + answer);
    }
    assert_true(ladder_step(ladder, steps, cal.ef_filtered) < steps);
    assert_true(cal.ef_filtered >= 32);
    assert_true(cal.recall_filtered >= 1 - 2 * answer - 1e-9 || cal.ef_filtered == 512);
    assert_true(ladder_step(ladder, steps, cal.ef_dense) < steps);
    assert_true(cal.cost > 0 && cal.cost_dense > 0);

    /* 400 answers can never show 0.999 with confidence (no miss: bound 0.0025): the first
     * step measured at 0.999, two steps more. */
    assert_int_equal(hnsw_calibrate(f->h, &f->view, NULL, live, nq, 0.999, 0.999, 32, &cal), 0);
    size_t first = 0;
    while (first < steps && rows_recall(f, nq, ladder[first]) < 0.999 - 1e-9)
        first++;
    print_message("target 0.999: first measured there %u, calibrated %u\n",
                  first < steps ? ladder[first] : 0, cal.ef);
    if (first + 2 < steps)
        assert_int_equal(cal.ef, ladder[first + 2]);
    else
        assert_int_equal(cal.ef, 512);
    assert_int_equal(cal.ef_deep, first < steps ? ladder[first] : 0);
    assert_int_equal(hnsw_calibrate(f->h, &f->view, NULL, live, nq, 1.01, 1.01, 32, &cal), 0);
    assert_int_equal(cal.ef, 512);
    assert_int_equal(cal.ef_dense, 512);
    assert_int_equal(cal.ef_filtered, 512);
    assert_int_equal(cal.ef_deep, 0);
    assert_true(fabs(rows_recall(f, nq, 512) - cal.recall) < 1.5 * answer);

    roaring_bitmap_t *few = roaring_bitmap_from_range(0, 8, 1);
    assert_int_equal(hnsw_calibrate(f->h, &f->view, NULL, few, nq, 0.99, 0.998, 32, &cal),
                     CDN_ERR_INVALID);
    roaring_bitmap_free(few);
    roaring_bitmap_free(live);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sample_witness_alarms_only_on_improbable_counts),
        cmocka_unit_test_setup_teardown(
            test_calibration_climbs_until_the_target_is_confidently_reached, setup, teardown),
        cmocka_unit_test(test_unfiltered_recall_at_10_beats_095),
        cmocka_unit_test(test_filtered_half_allowed_keeps_recall_and_hides_the_rest),
        cmocka_unit_test(test_filtered_five_percent_keeps_recall),
        cmocka_unit_test(test_filtered_half_percent_keeps_recall),
        cmocka_unit_test(test_filtered_sparse_sets_larger_than_ef_keep_recall),
        cmocka_unit_test(test_filtered_whole_clusters_reach_distant_allowed_region),
        cmocka_unit_test(test_unfiltered_mode_ignores_allowed_set),
        cmocka_unit_test(test_tiny_allowed_set_is_searched_exactly_and_says_complete),
        cmocka_unit_test(test_visit_budget_stops_search_and_flags_it),
        cmocka_unit_test(test_bad_arguments_are_rejected),
        cmocka_unit_test(test_allowed_ids_missing_from_graph_are_skipped_and_flagged),
        cmocka_unit_test(test_delete_unknown_id_is_not_found),
        /* Deletes change the shared index: keep last. */
        cmocka_unit_test(test_hidden_row_is_never_returned_and_its_neighbours_are_found),
        cmocka_unit_test(test_unfiltered_traversal_is_seeded_from_a_sample_on_large_graphs),
        cmocka_unit_test(test_deleted_ids_never_returned_and_recall_holds),
        cmocka_unit_test(test_ids_with_gaps_in_any_order_are_found),
        cmocka_unit_test(test_empty_index_returns_nothing_and_is_complete),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
