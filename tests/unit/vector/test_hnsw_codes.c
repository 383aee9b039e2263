/* test_hnsw_codes.c: graph traversal scored from 8-bit codes (hnsw_search_codes) and the
 * codes' distance estimates (quant_query_*): recall as the float traversal's, hits carrying
 * float distances, filters obeyed, a pool's allowed rows kept from the unfiltered list (and
 * none when they lie elsewhere),
 * completeness only when it is proven, rows without codes scored in float, calibration on
 * codes. Relies on cmocka, CRoaring. */
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
#include "vector/quant.h"

#define N 5000
#define DIM 32
#define NQ 100
#define K 10

typedef struct fixture {
    float *data, *queries;
    vec_view_t view;
    hnsw_t *h;
    quant_t *codes;
} fixture_t;

static int setup(void **state)
{
    fixture_t *f = calloc(1, sizeof(*f));
    f->data = tu_clustered(N, DIM, 50, 1.0f, 1, 0, NULL);
    f->queries = tu_queries(NQ, DIM, 50, 1, 91);
    f->view = (vec_view_t){f->data, DIM, DIM, N};
    int rc = tu_build_graph(&f->view, VEC_METRIC_L2, 100, 2, &f->h);
    rc = rc ? rc : quant_create(DIM, &f->codes, NULL);
    rc = rc ? rc : quant_train(f->codes, &f->view, NULL, N, NULL);
    rc = rc ? rc : quant_encode_rows(f->codes, &f->view, 0, N, NULL);
    *state = f;
    return rc;
}

static int teardown(void **state)
{
    fixture_t *f = *state;
    hnsw_free(f->h);
    quant_free(f->codes);
    free(f->data);
    free(f->queries);
    free(f);
    return 0;
}

/* Mean recall@K of the traversal on codes; every hit must be admissible, sorted, and carry
 * exactly the float kernel's distance. */
static double recall_on_codes(fixture_t *f, uint32_t ef, const roaring_bitmap_t *allowed)
{
    vec_dist_fn dist = vec_dist_for(VEC_METRIC_L2);
    hnsw_mode_t mode = allowed ? HNSW_MODE_FILTERED : HNSW_MODE_UNFILTERED;
    double sum = 0;
    for (uint32_t qi = 0; qi < NQ; qi++) {
        const float *q = f->queries + (size_t)qi * DIM;
        hnsw_hit_t hits[K];
        uint32_t n = 0, truth[K];
        assert_int_equal(
            hnsw_search_codes(f->h, &f->view, f->codes, q, K, ef, allowed, mode, 0, NULL, hits, &n),
            0);
        for (uint32_t i = 0; i < n; i++) {
            if (allowed)
                assert_true(roaring_bitmap_contains(allowed, hits[i].id));
            assert_true(hits[i].dist == dist(q, vec_row(&f->view, hits[i].id), DIM));
            if (i)
                assert_true(hits[i - 1].dist <= hits[i].dist);
        }
        uint32_t nt = tu_exact(&f->view, VEC_METRIC_L2, q, N, allowed, NULL, K, truth);
        sum += tu_recall(hits, n, truth, nt);
    }
    return sum / NQ;
}

static void test_traversal_on_codes_keeps_the_float_recall(void **state)
{
    fixture_t *f = *state;
    double r = recall_on_codes(f, 64, NULL);
    print_message("unfiltered on codes, recall@10 ef=64: %.4f\n", r);
    assert_true(r >= 0.95);
    for (double frac = 0.5; frac > 0.004; frac /= 10) {
        roaring_bitmap_t *allowed = tu_random_set(N, frac, 17);
        r = recall_on_codes(f, 64, allowed);
        print_message("filtered %.1f%% on codes, recall@10: %.4f\n", frac * 100, r);
        assert_true(r >= 0.9);
        roaring_bitmap_free(allowed);
    }
}

/* Estimates rank roughly, so "every admissible node evaluated" proves the top k only when all
 * of them were re-scored in float: a small set (within the re-scored part) is complete and
 * exact; a larger one searched to exhaustion is not claimed complete. */
static void test_complete_only_when_every_allowed_row_was_rescored(void **state)
{
    fixture_t *f = *state;
    roaring_bitmap_t *small = roaring_bitmap_create(), *large = roaring_bitmap_create();
    for (uint32_t i = 0; i < 30; i++)
        roaring_bitmap_add(small, i * 150 + 3);
    for (uint32_t i = 0; i < 200; i++)
        roaring_bitmap_add(large, i * 25 + 1);
    hnsw_hit_t hits[K];
    uint32_t n = 0, truth[K];
    hnsw_stats_t st;
    assert_int_equal(hnsw_search_codes(f->h, &f->view, f->codes, f->queries, K, 64, small,
                                       HNSW_MODE_FILTERED, 0, &st, hits, &n),
                     0);
    uint32_t nt = tu_exact(&f->view, VEC_METRIC_L2, f->queries, N, small, NULL, K, truth);
    assert_int_equal(n, nt);
    for (uint32_t i = 0; i < n; i++)
        assert_int_equal(hits[i].id, truth[i]);
    assert_int_equal(st.incomplete, 0);
    /* ef 400 >= 200 allowed rows: all are evaluated, but only 4k = 40 re-scored in float. */
    assert_int_equal(hnsw_search_codes(f->h, &f->view, f->codes, f->queries, K, 400, large,
                                       HNSW_MODE_FILTERED, 0, &st, hits, &n),
                     0);
    assert_int_equal(st.incomplete, 1);
    assert_int_equal(hnsw_search(f->h, &f->view, f->queries, K, 400, large, HNSW_MODE_FILTERED, 0,
                                 &st, hits, &n),
                     0);
    assert_int_equal(st.incomplete, 0); /* the float traversal does prove it */
    roaring_bitmap_free(small);
    roaring_bitmap_free(large);
}

/* The float re-scoring reads only the rows whose codes do not rule them out: with 40 allowed
 * rows (11 in one set) and ef 64 the list is the whole set, and its float top 10 must be
 * exactly the set's, ids and distances, while most queries re-score fewer rows than it has. */
static void test_rescoring_skips_only_rows_the_codes_rule_out(void **state)
{
    fixture_t *f = *state;
    vec_dist_fn dist = vec_dist_for(VEC_METRIC_L2);
    uint32_t fewer = 0, queries = 0;
    for (uint32_t set = 0; set < 6; set++) {
        uint32_t size = set == 5 ? K + 1 : 40; /* and a list one row longer than k */
        roaring_bitmap_t *allowed = roaring_bitmap_create();
        for (uint32_t i = 0; i < size; i++)
            roaring_bitmap_add(allowed, (i * 997 + set * 131) % N);
        for (uint32_t qi = 0; qi < NQ; qi += 5, queries++) {
            const float *q = f->queries + (size_t)qi * DIM;
            hnsw_hit_t hits[K];
            hnsw_stats_t st;
            uint32_t n = 0, truth[K];
            assert_int_equal(hnsw_search_codes(f->h, &f->view, f->codes, q, K, 64, allowed,
                                               HNSW_MODE_FILTERED, 0, &st, hits, &n),
                             0);
            uint32_t nt = tu_exact(&f->view, VEC_METRIC_L2, q, N, allowed, NULL, K, truth);
            assert_int_equal(n, nt);
            for (uint32_t i = 0; i < n; i++) {
                assert_int_equal(hits[i].id, truth[i]);
                assert_true(hits[i].dist == dist(q, vec_row(&f->view, hits[i].id), DIM));
            }
            assert_int_equal(st.incomplete, 0);
            assert_true(st.rescored >= K && st.rescored <= size);
            fewer += st.rescored < size;
        }
        roaring_bitmap_free(allowed);
    }
    print_message("re-scored fewer rows than the list's in %u of %u queries\n", fewer, queries);
    assert_true(fewer * 2 > queries);
}

/* POOL mode returns the allowed rows among the k nearest of the unfiltered traversal's list:
 * on floats exactly the UNFILTERED search's hits with the others dropped, in order; on codes
 * only allowed rows, each with its float distance, all from that traversal's list. */
static void test_pool_mode_keeps_the_allowed_rows_of_the_unfiltered_list(void **state)
{
    fixture_t *f = *state;
    enum { POOL = 50, EF = 80 };
    vec_dist_fn dist = vec_dist_for(VEC_METRIC_L2);
    roaring_bitmap_t *allowed = tu_random_set(N, 0.2, 23);
    uint32_t kept_total = 0;
    for (uint32_t qi = 0; qi < NQ; qi++) {
        const float *q = f->queries + (size_t)qi * DIM;
        hnsw_hit_t all[EF], mine[POOL];
        uint32_t na = 0, nm = 0, w = 0;
        assert_int_equal(hnsw_search(f->h, &f->view, q, POOL, EF, allowed, HNSW_MODE_UNFILTERED, 0,
                                     NULL, all, &na),
                         0);
        assert_int_equal(
            hnsw_search(f->h, &f->view, q, POOL, EF, allowed, HNSW_MODE_POOL, 0, NULL, mine, &nm),
            0);
        for (uint32_t i = 0; i < na; i++)
            if (roaring_bitmap_contains(allowed, all[i].id)) {
                assert_true(w < nm);
                assert_int_equal(mine[w].id, all[i].id);
                assert_true(mine[w].dist == all[i].dist);
                w++;
            }
        assert_int_equal(w, nm);
        kept_total += nm;
        /* On codes: the whole list (k = EF) bounds what the pool may return. */
        assert_int_equal(hnsw_search_codes(f->h, &f->view, f->codes, q, EF, EF, NULL,
                                           HNSW_MODE_UNFILTERED, 0, NULL, all, &na),
                         0);
        assert_int_equal(hnsw_search_codes(f->h, &f->view, f->codes, q, POOL, EF, allowed,
                                           HNSW_MODE_POOL, 0, NULL, mine, &nm),
                         0);
        assert_true(nm > 0 && nm < POOL);
        for (uint32_t i = 0; i < nm; i++) {
            assert_true(roaring_bitmap_contains(allowed, mine[i].id));
            assert_true(mine[i].dist == dist(q, vec_row(&f->view, mine[i].id), DIM));
            if (i)
                assert_true(mine[i - 1].dist <= mine[i].dist);
            int in_list = 0;
            for (uint32_t j = 0; j < na; j++)
                in_list |= all[j].id == mine[i].id;
            assert_true(in_list);
        }
    }
    print_message("pool of %d, 20%% allowed: %.1f allowed hits a query\n", POOL,
                  (double)kept_total / NQ);
    /* NULL allowed: every row of the list. */
    hnsw_hit_t a[K], b[K];
    uint32_t na = 0, nb = 0;
    assert_int_equal(hnsw_search_codes(f->h, &f->view, f->codes, f->queries, K, 64, NULL,
                                       HNSW_MODE_UNFILTERED, 0, NULL, a, &na),
                     0);
    assert_int_equal(hnsw_search_codes(f->h, &f->view, f->codes, f->queries, K, 64, NULL,
                                       HNSW_MODE_POOL, 0, NULL, b, &nb),
                     0);
    assert_int_equal(na, nb);
    for (uint32_t i = 0; i < na; i++)
        assert_int_equal(a[i].id, b[i].id);
    roaring_bitmap_free(allowed);
}

static int float_cmp(const void *a, const void *b)
{
    float x = *(const float *)a, y = *(const float *)b;
    return (x > y) - (x < y);
}

/* A POOL search of 40 at ef 80 for q under allowed: 1 when it stopped (with no hit), 0 when
 * it returned its pool (with some hit, when `around` says the allowed rows are around q). */
static uint32_t pool_stopped(fixture_t *f, const float *q, const roaring_bitmap_t *allowed,
                             int around)
{
    hnsw_hit_t hits[40];
    hnsw_stats_t st;
    uint32_t n = 99;
    assert_int_equal(hnsw_search_codes(f->h, &f->view, f->codes, q, 40, 80, allowed, HNSW_MODE_POOL,
                                       0, &st, hits, &n),
                     0);
    if (st.pool_far)
        assert_int_equal(n, 0);
    else if (around)
        assert_true(n > 0);
    return (uint32_t)st.pool_far;
}

/* The pool's look at the seed sample: a subject reading the half of the rows farthest from the
 * query gets no hit at all (the traversal stopped before level 0; the caller's next plan
 * answers), one reading a random half gets its pool as before. Its second look, at the list
 * when it first holds ef rows: a subject reading that far half and one row in 16 of the near
 * half (so that the sample's twelve nearest often hold one of them) is stopped too. */
static void test_pool_mode_stops_when_the_allowed_rows_lie_elsewhere(void **state)
{
    fixture_t *f = *state;
    enum { EF = 80 };
    vec_dist_fn dist = vec_dist_for(VEC_METRIC_L2);
    roaring_bitmap_t *random_half = tu_random_set(N, 0.5, 29);
    float *d = malloc(sizeof(float) * N), *sorted = malloc(sizeof(float) * N);
    uint32_t far_stops = 0, random_stops = 0, sprinkled_stops = 0;
    for (uint32_t qi = 0; qi < NQ; qi++) {
        const float *q = f->queries + (size_t)qi * DIM;
        for (uint32_t i = 0; i < N; i++)
            sorted[i] = d[i] = dist(q, vec_row(&f->view, i), DIM);
        qsort(sorted, N, sizeof(float), float_cmp);
        roaring_bitmap_t *far = roaring_bitmap_create(), *sprinkled = roaring_bitmap_create();
        for (uint32_t i = 0; i < N; i++) {
            if (d[i] > sorted[N / 2])
                roaring_bitmap_add(far, i);
            if (d[i] > sorted[N / 2] || i % 16 == qi % 16)
                roaring_bitmap_add(sprinkled, i);
        }
        far_stops += pool_stopped(f, q, far, 0);
        random_stops += pool_stopped(f, q, random_half, 1);
        sprinkled_stops += pool_stopped(f, q, sprinkled, 0);
        /* Other modes never look. */
        hnsw_hit_t hits[K];
        hnsw_stats_t st;
        uint32_t n = 99;
        assert_int_equal(hnsw_search_codes(f->h, &f->view, f->codes, q, K, EF, far,
                                           HNSW_MODE_FILTERED, 0, &st, hits, &n),
                         0);
        assert_int_equal(st.pool_far, 0);
        assert_int_equal(n, K);
        roaring_bitmap_free(far);
        roaring_bitmap_free(sprinkled);
    }
    print_message("pool look: %u of %d far subjects stopped, %u of %d random, %u of %d sprinkled\n",
                  far_stops, NQ, random_stops, NQ, sprinkled_stops, NQ);
    /* Twelve nearest of a 70-row sample, each allowed with probability 1/2 for the random half:
     * a stop there is a 1 in 4,096 event a query. */
    assert_int_equal(far_stops, NQ);
    assert_true(random_stops <= 1);
    /* The sample alone stops the sprinkled subject about (15/16)^12 = 46% of the time; the list
     * at ef 80 holds about 5 of its rows where a quarter of an even spread is 10.6. */
    assert_true(sprinkled_stops >= NQ - 15);
    free(d);
    free(sorted);
    roaring_bitmap_free(random_half);
}

/* The estimate is the distance to the reconstruction: close to the float distance for every
 * metric, and exactly the float distance for rows that have no codes yet. */
static void test_estimates_track_float_distances_and_uncoded_rows_use_floats(void **state)
{
    fixture_t *f = *state;
    quant_t *part = NULL;
    assert_int_equal(quant_create(DIM, &part, NULL), 0);
    assert_int_equal(quant_train(part, &f->view, NULL, N, NULL), 0);
    assert_int_equal(quant_encode_rows(part, &f->view, 0, N / 2, NULL), 0); /* half encoded */
    for (int m = VEC_METRIC_COSINE; m <= VEC_METRIC_L2; m++) {
        vec_dist_fn dist = vec_dist_for((vec_metric_t)m);
        quant_query_t *qq = NULL;
        assert_int_equal(quant_query_new(part, &f->view, (vec_metric_t)m, f->queries, &qq), 0);
        uint32_t ids[64];
        float est[64];
        for (uint32_t i = 0; i < 64; i++)
            ids[i] = i * 77 % N;
        quant_query_score(qq, ids, 64, est);
        double worst = 0, scale = 0;
        for (uint32_t i = 0; i < 64; i++) {
            float d = dist(f->queries, vec_row(&f->view, ids[i]), DIM);
            scale = fmax(scale, fabs(d));
            if (ids[i] >= N / 2)
                assert_true(est[i] == d); /* no codes: the float kernel's own value */
            else
                worst = fmax(worst, fabs(est[i] - d));
        }
        print_message("metric %d: worst estimate error %.4g of distances up to %.4g\n", m, worst,
                      scale);
        assert_true(worst > 0);            /* the codes were used */
        assert_true(worst < 0.02 * scale); /* and they are close */
        quant_query_free(qq);
    }
    float bad[DIM] = {0};
    bad[3] = NAN;
    quant_query_t *qq = NULL;
    assert_int_equal(quant_query_new(part, &f->view, VEC_METRIC_L2, bad, &qq), CDN_ERR_INVALID);
    assert_null(qq);
    quant_t *untrained = NULL;
    assert_int_equal(quant_create(DIM, &untrained, NULL), 0);
    assert_int_equal(quant_query_new(untrained, &f->view, VEC_METRIC_L2, f->queries, &qq),
                     CDN_ERR_INVALID);
    quant_free(untrained);
    quant_free(part);
}

/* Calibration measures the traversal that will run: on codes it reaches the target too. */
static void test_calibration_on_codes_reaches_its_target(void **state)
{
    fixture_t *f = *state;
    roaring_bitmap_t *live = roaring_bitmap_create();
    roaring_bitmap_add_range(live, 0, N);
    hnsw_calib_t cal;
    assert_int_equal(hnsw_calibrate(f->h, &f->view, f->codes, live, 40, 0.95, 0.99, 32, &cal), 0);
    print_message("calibrated on codes: ef %u recall %.3f, filtered ef %u recall %.3f\n", cal.ef,
                  cal.recall, cal.ef_filtered, cal.recall_filtered);
    assert_int_equal(cal.queries, 40);
    assert_true(cal.recall >= 0.95);
    assert_true(cal.recall_filtered >= 0.95);
    assert_true(cal.d10 > 0);
    roaring_bitmap_free(live);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_traversal_on_codes_keeps_the_float_recall),
        cmocka_unit_test(test_complete_only_when_every_allowed_row_was_rescored),
        cmocka_unit_test(test_rescoring_skips_only_rows_the_codes_rule_out),
        cmocka_unit_test(test_pool_mode_keeps_the_allowed_rows_of_the_unfiltered_list),
        cmocka_unit_test(test_pool_mode_stops_when_the_allowed_rows_lie_elsewhere),
        cmocka_unit_test(test_estimates_track_float_distances_and_uncoded_rows_use_floats),
        cmocka_unit_test(test_calibration_on_codes_reaches_its_target),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
