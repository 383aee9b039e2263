/* test_hnsw_pool.c: HNSW_MODE_POOL, the unfiltered traversal whose caller keeps the allowed
 * hits: it stops before its level-0 traversal when the seed sample's nearest rows show the
 * allowed rows away from the query, and otherwise answers exactly as UNFILTERED does.
 * Relies on cmocka, CRoaring. */
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

#define N 40000
#define DIM 16
#define CL 40
#define NQ 20
#define K 10

typedef struct fixture {
    float *data, *queries, centre[CL][DIM];
    uint32_t cluster_of[N];
    vec_view_t view;
    hnsw_t *h;
} fixture_t;

static int setup(void **state)
{
    fixture_t *f = calloc(1, sizeof(*f));
    f->data = tu_clustered(N, DIM, CL, 0.3f, 21, 0, f->cluster_of);
    f->queries = tu_queries(NQ, DIM, CL, 21, 5);
    f->view = (vec_view_t){f->data, DIM, DIM, N};
    uint32_t members[CL] = {0};
    for (uint32_t i = 0; i < N; i++) {
        members[f->cluster_of[i]]++;
        for (uint32_t d = 0; d < DIM; d++)
            f->centre[f->cluster_of[i]][d] += f->data[i * DIM + d];
    }
    for (uint32_t c = 0; c < CL; c++)
        for (uint32_t d = 0; d < DIM; d++)
            f->centre[c][d] /= members[c] ? (float)members[c] : 1.0f;
    *state = f;
    return tu_build_graph_ex(&f->view, VEC_METRIC_L2, 0, 2, HNSW_BUILD_FLOAT, &f->h) ? -1 : 0;
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

/* The rows of the CL / 5 clusters whose centres lie farthest from (far = 1) or nearest to
 * (far = 0) q: a fifth of the rows, held by topic as a subject's documents are. */
static roaring_bitmap_t *clusters_by_distance(const fixture_t *f, const float *q, int far)
{
    float d[CL];
    uint32_t order[CL];
    for (uint32_t c = 0; c < CL; c++) {
        d[c] = 0;
        for (uint32_t j = 0; j < DIM; j++)
            d[c] += (q[j] - f->centre[c][j]) * (q[j] - f->centre[c][j]);
        order[c] = c;
    }
    for (uint32_t i = 1; i < CL; i++) /* insertion sort, nearest first */
        for (uint32_t j = i; j > 0 && d[order[j - 1]] > d[order[j]]; j--) {
            uint32_t t = order[j];
            order[j] = order[j - 1];
            order[j - 1] = t;
        }
    int pick[CL] = {0};
    for (uint32_t i = 0; i < CL / 5; i++)
        pick[far ? order[CL - 1 - i] : order[i]] = 1;
    roaring_bitmap_t *b = roaring_bitmap_create();
    for (uint32_t i = 0; i < N; i++)
        if (pick[f->cluster_of[i]])
            roaring_bitmap_add(b, i);
    return b;
}

static void pool(const fixture_t *f, const float *q, const roaring_bitmap_t *allowed,
                 hnsw_stats_t *st, hnsw_hit_t *hits, uint32_t *n)
{
    assert_int_equal(
        hnsw_search(f->h, &f->view, q, K, 64, allowed, HNSW_MODE_POOL, 0, st, hits, n), CDN_OK);
}

static void test_allowed_rows_far_from_the_query_end_the_pool_before_its_traversal(void **state)
{
    fixture_t *f = *state;
    uint32_t stopped = 0;
    for (uint32_t qi = 0; qi < NQ; qi++) {
        const float *q = f->queries + qi * DIM;
        roaring_bitmap_t *far = clusters_by_distance(f, q, 1);
        hnsw_stats_t st;
        hnsw_hit_t hits[K];
        uint32_t n = 99;
        pool(f, q, far, &st, hits, &n);
        if (st.allowed_far) {
            stopped++;
            assert_int_equal(n, 0);
            assert_true(st.visited < 100); /* the descent and the sample only */
        }
        roaring_bitmap_free(far);
    }
    assert_true(stopped >= NQ - 1);
}

static void test_allowed_rows_near_or_spread_get_the_unfiltered_answer(void **state)
{
    fixture_t *f = *state;
    roaring_bitmap_t *spread = roaring_bitmap_create();
    for (uint32_t i = 0; i < N; i += 5)
        roaring_bitmap_add(spread, i);
    for (uint32_t qi = 0; qi < NQ; qi++) {
        const float *q = f->queries + qi * DIM;
        roaring_bitmap_t *near = clusters_by_distance(f, q, 0);
        const roaring_bitmap_t *sets[2] = {near, spread};
        hnsw_hit_t want[K];
        uint32_t nw;
        assert_int_equal(hnsw_search(f->h, &f->view, q, K, 64, NULL, HNSW_MODE_UNFILTERED, 0,
                                     NULL, want, &nw),
                         CDN_OK);
        for (int s = 0; s < 2; s++) {
            hnsw_stats_t st;
            hnsw_hit_t hits[K];
            uint32_t n;
            pool(f, q, sets[s], &st, hits, &n);
            assert_int_equal(st.allowed_far, 0);
            assert_int_equal(n, nw); /* not a filter: the caller keeps the allowed hits */
            for (uint32_t i = 0; i < n; i++)
                assert_int_equal(hits[i].id, want[i].id);
        }
        roaring_bitmap_free(near);
    }
    roaring_bitmap_free(spread);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_allowed_rows_far_from_the_query_end_the_pool_before_its_traversal),
        cmocka_unit_test(test_allowed_rows_near_or_spread_get_the_unfiltered_answer),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
