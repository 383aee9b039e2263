/* test_hnsw_lists.c: the lock-free neighbour-list reads (per-stripe seqlock) against concurrent
 * inserts, the four-row scoring helper, the hit sorts, and the links a narrow construction search
 * leaves (stalled searches widened, and only where widening pays). Relies on cmocka, pthreads and
 * vector/hnsw_int.h. */
/* cmocka.h needs these four first. */
// clang-format off
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
// clang-format on

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>

#include "base/err.h"
#include "unit/vector/hnsw_testutil.h"
#include "vector/hnsw_int.h"

#define N 3000
#define DIM 12

typedef struct race {
    hnsw_t *h;
    vec_view_t view;
    _Atomic int inserting;
    _Atomic long bad; /* lists that broke a rule */
    _Atomic long reads;
    uint32_t first;
} race_t;

typedef struct job {
    race_t *r;
    uint32_t first;
} job_t;

static void *inserter(void *arg)
{
    job_t *j = arg;
    for (uint32_t i = j->first; i < N; i += 2)
        if (hnsw_insert(j->r->h, &j->r->view, i))
            atomic_fetch_add(&j->r->bad, 1);
    atomic_fetch_sub(&j->r->inserting, 1);
    return NULL;
}

/* A list copy is valid if its count fits, it names only claimed ids below N, never the node
 * itself, and no id twice (writers keep lists duplicate-free, so a torn copy shows up). */
static int list_valid(hnsw_t *h, uint32_t id, uint32_t level, const uint32_t *buf, uint32_t n)
{
    if (n > hnsw_list_cap(h, level))
        return 0;
    for (uint32_t i = 0; i < n; i++) {
        if (buf[i] >= N || buf[i] == id || !(hnsw_flags(h, buf[i]) & HNSW_F_CLAIMED))
            return 0;
        for (uint32_t k = 0; k < i; k++)
            if (buf[k] == buf[i])
                return 0;
    }
    return 1;
}

/* Reads level-0 lists of claimed nodes (the way searches reach them) while inserts rewrite
 * them; grow_lock held for reading as every search holds it. */
static void *reader(void *arg)
{
    job_t *j = arg;
    race_t *r = j->r;
    uint32_t buf[2 * HNSW_M_MAX + 1];
    tu_rng_t rng = {j->first + 99};
    while (atomic_load(&r->inserting) > 0) {
        pthread_rwlock_rdlock(&r->h->grow_lock);
        for (int k = 0; k < 256; k++) {
            uint32_t id = (uint32_t)(tu_next(&rng) % N);
            if (!(hnsw_flags(r->h, id) & HNSW_F_CLAIMED))
                continue;
            uint32_t n = hnsw_read_list(r->h, id, 0, buf);
            if (!list_valid(r->h, id, 0, buf, n))
                atomic_fetch_add(&r->bad, 1);
            atomic_fetch_add(&r->reads, 1);
        }
        pthread_rwlock_unlock(&r->h->grow_lock);
    }
    return NULL;
}

static void test_lock_free_list_reads_under_concurrent_inserts_are_never_torn(void **state)
{
    (void)state;
    float *data = tu_clustered(N, DIM, 8, 0.3f, 21, 0, NULL);
    race_t r = {.view = {data, DIM, DIM, N}};
    hnsw_params_t p = hnsw_params_default();
    p.m = 4; /* small lists fill fast, so most back-links rewrite a full list */
    p.ef_construction = 32;
    assert_int_equal(hnsw_create(p, VEC_METRIC_L2, DIM, &r.h), 0);
    assert_int_equal(hnsw_reserve(r.h, N), 0);
    atomic_init(&r.inserting, 2);
    atomic_init(&r.bad, 0);
    atomic_init(&r.reads, 0);
    pthread_t t[4];
    job_t j[4] = {{&r, 0}, {&r, 1}, {&r, 2}, {&r, 3}};
    for (int i = 0; i < 2; i++)
        assert_int_equal(pthread_create(&t[i], NULL, inserter, &j[i]), 0);
    for (int i = 2; i < 4; i++)
        assert_int_equal(pthread_create(&t[i], NULL, reader, &j[i]), 0);
    for (int i = 0; i < 4; i++)
        pthread_join(t[i], NULL);
    assert_int_equal(atomic_load(&r.bad), 0);
    assert_true(atomic_load(&r.reads) > 0);
    /* Once quiet, every node's list reads back whole and valid, and the graph has links. */
    uint32_t buf[2 * HNSW_M_MAX + 1], total = 0;
    for (uint32_t id = 0; id < N; id++) {
        uint32_t n = hnsw_read_list(r.h, id, 0, buf);
        assert_true(list_valid(r.h, id, 0, buf, n));
        total += n;
    }
    assert_true(total >= N * p.m);
    hnsw_free(r.h);
    free(data);
}

static void test_list_store_then_read_returns_the_stored_ids(void **state)
{
    (void)state;
    float *data = tu_clustered(64, DIM, 2, 0.3f, 5, 0, NULL);
    hnsw_t *h;
    assert_int_equal(hnsw_create(hnsw_params_default(), VEC_METRIC_L2, DIM, &h), 0);
    assert_int_equal(hnsw_reserve(h, 64), 0);
    uint32_t ids[5] = {7, 3, 60, 1, 12}, buf[2 * HNSW_M_MAX + 1];
    hnsw_list_store(h, 9, 0, ids, 5);
    assert_int_equal(hnsw_read_list(h, 9, 0, buf), 5);
    assert_memory_equal(buf, ids, sizeof ids);
    hnsw_list_store(h, 9, 0, ids + 2, 2); /* shrinking keeps only the new prefix */
    assert_int_equal(hnsw_read_list(h, 9, 0, buf), 2);
    assert_int_equal(buf[0], 60);
    assert_int_equal(buf[1], 1);
    assert_int_equal(hnsw_read_list(h, 10, 0, buf), 0);
    hnsw_free(h);
    free(data);
}

/* hnsw_score runs four rows per kernel call and the rest one by one: for every count (so every
 * remainder) it must give the single-row kernel's distance up to rounding. */
static void test_batched_scores_match_single_row_distances(void **state)
{
    (void)state;
    const uint32_t dim = 37; /* not a multiple of any vector width: exercises the tails */
    float *data = tu_clustered(40, dim, 3, 0.5f, 17, 1, NULL);
    vec_view_t v = {data, dim, dim, 40};
    vec_metric_t ms[3] = {VEC_METRIC_COSINE, VEC_METRIC_DOT, VEC_METRIC_L2};
    for (int m = 0; m < 3; m++) {
        hnsw_t *h;
        assert_int_equal(hnsw_create(hnsw_params_default(), ms[m], dim, &h), 0);
        vec_dist_fn one = vec_dist_for(ms[m]);
        uint32_t ids[11] = {39, 0, 5, 5, 22, 17, 8, 30, 2, 11, 38};
        float out[11];
        for (uint32_t n = 0; n <= 11; n++) {
            hnsw_score(h, &v, vec_row(&v, 13), ids, n, out);
            for (uint32_t i = 0; i < n; i++) {
                float want = one(vec_row(&v, 13), vec_row(&v, ids[i]), dim);
                assert_float_equal(out[i], want, 1e-5f * (1.0f + fabsf(want)));
            }
        }
        hnsw_free(h);
    }
    free(data);
}

/* A graph of v's rows built in float by one thread (a deterministic build) with params p. */
static hnsw_t *build_alone(const vec_view_t *v, hnsw_params_t p, vec_metric_t metric)
{
    hnsw_t *h;
    assert_int_equal(hnsw_create(p, metric, v->dim, &h), 0);
    uint32_t *ids = malloc(sizeof(uint32_t) * v->count);
    assert_non_null(ids);
    for (uint32_t i = 0; i < v->count; i++)
        ids[i] = i;
    assert_int_equal(hnsw_build_ex(h, v, ids, v->count, 1, HNSW_BUILD_FLOAT), 0);
    free(ids);
    return h;
}

/* A construction search that stalls (its list leaves the heuristic fewer than m / 2 links, the
 * nearest of them far) is widened, so rows keep links into their own neighbourhood. 10,000
 * clustered unit rows, m 8, ef_construction 16 (narrow enough to stall often), one thread (a
 * deterministic build); the later half of the rows, which join a large graph, is checked.
 * Without the widening 177 of those 5,000 rows had none of their 10 nearest rows among their
 * links and 254 were not found when asked as queries at ef 16; with it, 26 and 85 (363 searches
 * widened, 203 of which found a nearer row). */
static void test_stalled_construction_searches_widen_into_the_rows_neighbourhood(void **state)
{
    (void)state;
    enum { ROWS = 10000, D = 32, FROM = ROWS / 2 };
    float *data = tu_clustered(ROWS, D, 64, 0.5f, 7, 1, NULL);
    assert_non_null(data);
    vec_view_t v = {data, D, D, ROWS};
    hnsw_params_t p = hnsw_params_default();
    p.m = 8;
    p.ef_construction = 16;
    p.ef_search = 16;
    p.seed = 1;
    hnsw_t *h = build_alone(&v, p, VEC_METRIC_COSINE);
    uint32_t unlinked = 0, lost = 0;
    for (uint32_t i = FROM; i < ROWS; i++) {
        uint32_t truth[11], list[2 * 8 + 1];
        uint32_t nt = tu_exact(&v, VEC_METRIC_COSINE, vec_row(&v, i), ROWS, NULL, NULL, 11, truth);
        uint32_t nl = hnsw_read_list(h, i, 0, list);
        int linked = 0;
        for (uint32_t a = 0; a < nt; a++)
            for (uint32_t b = 0; b < nl; b++)
                linked |= truth[a] == list[b] && truth[a] != i;
        unlinked += !linked;
        hnsw_hit_t hit;
        uint32_t n;
        assert_int_equal(hnsw_search(h, &v, vec_row(&v, i), 1, 16, NULL, HNSW_MODE_UNFILTERED, 0,
                                     NULL, &hit, &n),
                         0);
        lost += !(n == 1 && hit.id == i);
    }
    assert_true(unlinked <= 50); /* 1% of the rows checked */
    assert_true(lost <= 150);    /* 3% */
    hnsw_info_t info;
    hnsw_get_info(h, &info);
    assert_true(info.widened > 0 && info.widened_nearer > 0 && info.widened_nearer <= info.widened);
    hnsw_free(h);
    free(data);
}

/* Few links, the nearest far, and yet no stall: 20,000 rows in the plane (where the heuristic
 * keeps fewer than m / 2 links for most rows) in 200 clusters whose spreads range over a
 * factor of 100, so a row of a sparse cluster finds its nearest row far beyond the mean. Wider
 * searches find nothing nearer for such rows; once the index has counted that, it widens only
 * a probe's share of them, so the build does not pay four times the search for every one. */
static void test_widening_that_finds_nothing_nearer_is_probed_not_repeated(void **state)
{
    (void)state;
    enum { ROWS = 20000, D = 2, CL = 200 };
    tu_rng_t r = {11};
    float *data = malloc(sizeof(float) * ROWS * D), centre[CL][D], spread[CL];
    assert_non_null(data);
    for (uint32_t c = 0; c < CL; c++) {
        for (uint32_t d = 0; d < D; d++)
            centre[c][d] = 100.0f * (float)tu_unif(&r);
        spread[c] = powf(10.0f, -2.0f * (float)tu_unif(&r));
    }
    for (uint32_t i = 0; i < ROWS; i++) {
        uint32_t c = (uint32_t)(tu_next(&r) % CL);
        for (uint32_t d = 0; d < D; d++)
            data[i * D + d] = centre[c][d] + spread[c] * tu_gauss(&r);
    }
    vec_view_t v = {data, D, D, ROWS};
    hnsw_params_t p = hnsw_params_default();
    p.seed = 3;
    hnsw_t *h = build_alone(&v, p, VEC_METRIC_L2);
    hnsw_info_t info;
    hnsw_get_info(h, &info);
    /* Without the count 2,404 searches were widened, none finding a nearer row; with it 181
     * (the first 32, then one in 16). */
    assert_true(info.widened >= 32 && info.widened <= 300);
    assert_true(info.widened_nearer * 8 < info.widened);
    hnsw_free(h);
    free(data);
}

/* The sorts a search ends with give qsort's order by (dist, id), ties included: for a max-heap
 * as pushes and pops leave it (hnsw_heap_sort_heap) and for any array (hnsw_heap_sort), in
 * lists of every length up to a few hundred with distances drawn from a handful of values. */
static void test_hit_sorts_give_qsort_order_with_ties(void **state)
{
    (void)state;
    uint64_t seed = 5;
    enum { MAXN = 300 };
    hnsw_hit_t want[MAXN];
    for (uint32_t n = 0; n <= MAXN; n += n < 20 ? 1 : 37) {
        for (int kind = 0; kind < 2; kind++) {
            hnsw_heap_t q;
            assert_int_equal(hnsw_heap_init(&q, kind ? n + 1 : 1), 0);
            for (uint32_t i = 0; i < n; i++) {
                seed = seed * 6364136223846793005ull + 1442695040888963407ull;
                uint32_t id = (uint32_t)(seed >> 40) % 1000;
                float d = (float)((seed >> 20) % 7) * 0.5f;
                if (kind) { /* a heap, as a traversal's result list: pushes, pops past n/2 */
                    assert_int_equal(hnsw_heap_push(&q, id, d), 0);
                    if (q.n > n / 2 + 1)
                        hnsw_heap_pop(&q);
                } else {
                    assert_int_equal(hnsw_heap_push(&q, id, d), 0); /* then scrambled */
                }
            }
            if (!kind)
                for (uint32_t i = 1; i < q.n; i++) { /* any order: no longer a heap */
                    seed = seed * 6364136223846793005ull + 1442695040888963407ull;
                    uint32_t j = (uint32_t)(seed >> 33) % (i + 1);
                    hnsw_hit_t t = q.a[i];
                    q.a[i] = q.a[j], q.a[j] = t;
                }
            uint32_t m = q.n;
            memcpy(want, q.a, m * sizeof *want);
            qsort(want, m, sizeof *want, hnsw_hit_cmp);
            if (kind)
                hnsw_heap_sort_heap(&q);
            else
                hnsw_heap_sort(&q);
            assert_int_equal(q.n, m);
            for (uint32_t i = 0; i < m; i++) {
                assert_int_equal(q.a[i].id, want[i].id);
                assert_true(q.a[i].dist == want[i].dist);
            }
            hnsw_heap_free(&q);
        }
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_lock_free_list_reads_under_concurrent_inserts_are_never_torn),
        cmocka_unit_test(test_list_store_then_read_returns_the_stored_ids),
        cmocka_unit_test(test_batched_scores_match_single_row_distances),
        cmocka_unit_test(test_hit_sorts_give_qsort_order_with_ties),
        cmocka_unit_test(test_stalled_construction_searches_widen_into_the_rows_neighbourhood),
        cmocka_unit_test(test_widening_that_finds_nothing_nearer_is_probed_not_repeated),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
