/* test_hnsw_concurrency.c: HNSW inserts racing searches, deletes and saves, and parallel
 * builds matching serial ones. Relies on cmocka and pthreads (asserts stay on the main thread). */
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
#include <unistd.h>

#include "base/err.h"
#include "unit/vector/hnsw_testutil.h"

#define N 4000
#define DIM 16
#define K 10

typedef struct shared {
    float *data;
    vec_view_t view;
    hnsw_t *h;
    roaring_bitmap_t *allowed;
    _Atomic int inserters_left;
    _Atomic int errors;
    _Atomic long searches;
    uint32_t stride, offset;
} shared_t;

typedef struct worker {
    shared_t *s;
    uint32_t first;
} worker_t;

static void *inserter(void *arg)
{
    worker_t *w = arg;
    shared_t *s = w->s;
    for (uint32_t i = w->first; i < N; i += 2) {
        if (hnsw_insert(s->h, &s->view, i))
            atomic_fetch_add(&s->errors, 1);
        if (i % 97 == 0 && hnsw_delete(s->h, i))
            atomic_fetch_add(&s->errors, 1);
    }
    atomic_fetch_sub(&s->inserters_left, 1);
    return NULL;
}

/* Searches until the inserters finish; counts any hit that breaks a rule. */
static void *searcher(void *arg)
{
    worker_t *w = arg;
    shared_t *s = w->s;
    uint32_t qi = w->first;
    while (atomic_load(&s->inserters_left) > 0 || qi < w->first + 20) {
        hnsw_hit_t hits[K];
        uint32_t n;
        hnsw_mode_t mode = qi % 2 ? HNSW_MODE_FILTERED : HNSW_MODE_UNFILTERED;
        const float *q = vec_row(&s->view, (qi * 131) % N);
        if (hnsw_search(s->h, &s->view, q, K, 32, s->allowed, mode, 0, NULL, hits, &n))
            atomic_fetch_add(&s->errors, 1);
        for (uint32_t i = 0; i < n; i++) {
            int bad =
                hits[i].id >= N || (i && hits[i - 1].dist > hits[i].dist) ||
                (mode == HNSW_MODE_FILTERED && !roaring_bitmap_contains(s->allowed, hits[i].id));
            if (bad)
                atomic_fetch_add(&s->errors, 1);
        }
        atomic_fetch_add(&s->searches, 1);
        qi++;
    }
    return NULL;
}

static double recall_of(hnsw_t *h, const vec_view_t *v, const roaring_bitmap_t *deleted)
{
    double sum = 0;
    for (uint32_t qi = 0; qi < 100; qi++) {
        const float *q = vec_row(v, (qi * 389 + 11) % N);
        hnsw_hit_t hits[K];
        uint32_t n, truth[K];
        assert_int_equal(hnsw_search(h, v, q, K, 64, NULL, HNSW_MODE_UNFILTERED, 0, NULL, hits, &n),
                         0);
        uint32_t nt = tu_exact(v, VEC_METRIC_L2, q, N, NULL, deleted, K, truth);
        sum += tu_recall(hits, n, truth, nt);
    }
    return sum / 100;
}

static void test_inserts_and_searches_in_parallel_stay_consistent(void **state)
{
    (void)state;
    shared_t s = {0};
    s.data = tu_clustered(N, DIM, 30, 1.0f, 8, 0, NULL);
    s.view = (vec_view_t){s.data, DIM, DIM, N};
    s.allowed = tu_random_set(N, 0.1, 4);
    hnsw_params_t p = hnsw_params_default();
    p.ef_construction = 64;
    assert_int_equal(hnsw_create(p, VEC_METRIC_L2, DIM, &s.h), 0);
    atomic_init(&s.inserters_left, 2);
    atomic_init(&s.errors, 0);
    atomic_init(&s.searches, 0);
    pthread_t t[4];
    worker_t w[4] = {{&s, 0}, {&s, 1}, {&s, 0}, {&s, 1000}};
    for (int i = 0; i < 2; i++)
        assert_int_equal(pthread_create(&t[i], NULL, inserter, &w[i]), 0);
    for (int i = 2; i < 4; i++)
        assert_int_equal(pthread_create(&t[i], NULL, searcher, &w[i]), 0);
    for (int i = 0; i < 4; i++)
        pthread_join(t[i], NULL);
    assert_int_equal(atomic_load(&s.errors), 0);
    assert_true(atomic_load(&s.searches) >= 40);
    hnsw_info_t info;
    hnsw_get_info(s.h, &info);
    assert_int_equal(info.nodes, N);
    roaring_bitmap_t *deleted = roaring_bitmap_create();
    for (uint32_t i = 0; i < N; i += 97)
        roaring_bitmap_add(deleted, i);
    assert_int_equal(info.deleted, roaring_bitmap_get_cardinality(deleted));
    double r = recall_of(s.h, &s.view, deleted);
    print_message("recall after concurrent build: %.4f\n", r);
    assert_true(r >= 0.95);
    roaring_bitmap_free(deleted);
    roaring_bitmap_free(s.allowed);
    hnsw_free(s.h);
    free(s.data);
}

static void test_parallel_build_recall_matches_serial_build(void **state)
{
    (void)state;
    float *data = tu_clustered(N, DIM, 30, 1.0f, 9, 0, NULL);
    vec_view_t v = {data, DIM, DIM, N};
    uint32_t *ids = malloc(sizeof(uint32_t) * N);
    for (uint32_t i = 0; i < N; i++)
        ids[i] = i;
    hnsw_params_t p = hnsw_params_default();
    p.ef_construction = 64;
    hnsw_t *serial, *parallel;
    assert_int_equal(hnsw_create(p, VEC_METRIC_L2, DIM, &serial), 0);
    assert_int_equal(hnsw_create(p, VEC_METRIC_L2, DIM, &parallel), 0);
    assert_int_equal(hnsw_build(serial, &v, ids, N, 1), 0);
    assert_int_equal(hnsw_build(parallel, &v, ids, N, 4), 0);
    double rs = recall_of(serial, &v, NULL), rp = recall_of(parallel, &v, NULL);
    print_message("serial recall %.4f, parallel recall %.4f\n", rs, rp);
    assert_true(rs >= 0.95);
    assert_true(rp >= 0.95);
    assert_true(rp >= rs - 0.03);
    /* Same ids again: every one is reported as already there. */
    assert_int_equal(hnsw_build(parallel, &v, ids, 10, 2), CDN_ERR_EXISTS);
    hnsw_free(serial);
    hnsw_free(parallel);
    free(ids);
    free(data);
}

static void test_save_during_inserts_writes_a_loadable_snapshot(void **state)
{
    (void)state;
    shared_t s = {0};
    s.data = tu_clustered(N, DIM, 30, 1.0f, 10, 0, NULL);
    s.view = (vec_view_t){s.data, DIM, DIM, N};
    assert_int_equal(hnsw_create(hnsw_params_default(), VEC_METRIC_L2, DIM, &s.h), 0);
    atomic_init(&s.inserters_left, 1);
    atomic_init(&s.errors, 0);
    worker_t w = {&s, 0};
    pthread_t t;
    char dir[] = "/tmp/cdn-hnsw-cc-XXXXXX", path[64];
    assert_non_null(mkdtemp(dir));
    snprintf(path, sizeof path, "%s/i.hnsw", dir);
    assert_int_equal(pthread_create(&t, NULL, inserter, &w), 0);
    int saves = 0;
    while (atomic_load(&s.inserters_left) > 0 || saves == 0) {
        assert_int_equal(hnsw_save(s.h, path, (uint64_t)saves), 0);
        hnsw_t *g;
        uint64_t rev;
        assert_int_equal(hnsw_load(path, &g, &rev), 0);
        assert_int_equal(rev, (uint64_t)saves);
        hnsw_free(g);
        saves++;
    }
    pthread_join(t, NULL);
    assert_int_equal(atomic_load(&s.errors), 0);
    unlink(path);
    rmdir(dir);
    hnsw_free(s.h);
    free(s.data);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_inserts_and_searches_in_parallel_stay_consistent),
        cmocka_unit_test(test_parallel_build_recall_matches_serial_build),
        cmocka_unit_test(test_save_during_inserts_writes_a_loadable_snapshot),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
