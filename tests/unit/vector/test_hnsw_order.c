/* test_hnsw_order.c: the order in which a large batch is inserted (hnsw_order.c): each chunk
 * grouped by the nearest of the batch's k-means centres, so that rows of one region follow one
 * another; every id still inserted once, and the graph as good. Relies on cmocka and
 * vector/hnsw_int.h. */
/* cmocka.h needs these four first. */
// clang-format off
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
// clang-format on

#include <stdlib.h>
#include <string.h>

#include "base/err.h"
#include "unit/vector/hnsw_testutil.h"
#include "vector/hnsw_int.h"

#define D 32
#define CLUSTERS 64

static int cmp_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return x < y ? -1 : x > y;
}

/* 0, 1, ... n - 1; caller frees. */
static uint32_t *identity(uint32_t n)
{
    uint32_t *ids = malloc(sizeof(uint32_t) * n);
    assert_non_null(ids);
    for (uint32_t i = 0; i < n; i++)
        ids[i] = i;
    return ids;
}

/* An empty cosine graph of dim dimensions with params p. */
static hnsw_t *empty_graph(uint32_t dim, hnsw_params_t p)
{
    hnsw_t *h;
    assert_int_equal(hnsw_create(p, VEC_METRIC_COSINE, dim, &h), 0);
    return h;
}

/* A graph of rows [0, n) of v, built by `threads` threads. */
static hnsw_t *graph_of(const vec_view_t *v, uint32_t n, unsigned threads, hnsw_params_t p)
{
    hnsw_t *h = empty_graph(v->dim, p);
    uint32_t *ids = identity(n);
    assert_int_equal(hnsw_build_ex(h, v, ids, n, threads, HNSW_BUILD_FLOAT), 0);
    free(ids);
    return h;
}

/* Of the pairs of ids next to each other, the share whose rows come from the same cluster. */
static double same_cluster_share(const uint32_t *ids, uint32_t n, const uint32_t *cluster_of)
{
    uint32_t same = 0;
    for (uint32_t i = 1; i < n; i++)
        same += cluster_of[ids[i]] == cluster_of[ids[i - 1]];
    return (double)same / (n - 1);
}

/* 10,000 rows of 64 clusters, in the order they were drawn (about one pair in 64 next to each
 * other from one cluster), come out of the sort with most neighbours from one cluster, and the
 * sort only reorders: every id once. The centres come from the whole batch of 30,000. */
static void test_a_chunk_is_grouped_by_region_and_keeps_every_id(void **state)
{
    (void)state;
    enum { ROWS = 30000, NEW = 10000 };
    uint32_t *cluster_of = malloc(sizeof(uint32_t) * ROWS);
    assert_non_null(cluster_of);
    float *data = tu_clustered(ROWS, D, CLUSTERS, 0.5f, 21, 1, cluster_of);
    assert_non_null(data);
    vec_view_t v = {data, D, D, ROWS};
    hnsw_t *h = empty_graph(D, hnsw_params_default());
    uint32_t *all = identity(ROWS);
    hnsw_order_t *o;
    assert_int_equal(hnsw_order_create(h, &v, all, ROWS, 2, &o), CDN_OK);
    assert_non_null(o);

    uint32_t *ids = all + (ROWS - NEW); /* the last chunk of the batch */
    double before = same_cluster_share(ids, NEW, cluster_of);
    assert_int_equal(hnsw_order_chunk(o, &v, ids, NEW, 2), CDN_OK);
    double after = same_cluster_share(ids, NEW, cluster_of);
    assert_true(before < 0.05);
    assert_true(after > 0.8);
    qsort(ids, NEW, sizeof(uint32_t), cmp_u32);
    for (uint32_t i = 0; i < NEW; i++)
        assert_int_equal(ids[i], ROWS - NEW + i);
    hnsw_order_free(o);
    hnsw_free(h);
    free(all);
    free(data);
    free(cluster_of);
}

/* A batch with fewer than 4 rows a centre is not clustered: no centres, and a chunk sorted
 * without them keeps the order it was given. */
static void test_a_small_batch_keeps_the_order_as_given(void **state)
{
    (void)state;
    enum { ROWS = 4 * HNSW_ORDER_CENTRES - 1 };
    float *data = tu_clustered(ROWS, D, CLUSTERS, 0.5f, 22, 1, NULL);
    assert_non_null(data);
    vec_view_t v = {data, D, D, ROWS};
    hnsw_t *h = empty_graph(D, hnsw_params_default());
    uint32_t ids[ROWS];
    for (uint32_t i = 0; i < ROWS; i++)
        ids[i] = ROWS - 1 - i;              /* descending: any sort would change it */
    hnsw_order_t *o = (hnsw_order_t *)&ids; /* must be overwritten */
    assert_int_equal(hnsw_order_create(h, &v, ids, ROWS, 2, &o), CDN_OK);
    assert_null(o);
    assert_int_equal(hnsw_order_chunk(o, &v, ids, ROWS, 2), CDN_OK);
    for (uint32_t i = 0; i < ROWS; i++)
        assert_int_equal(ids[i], ROWS - 1 - i);
    hnsw_free(h);
    free(data);
}

/* The centres are computed from the first large batch and kept for the batches after it until
 * the graph has doubled: then computed again from the batch at hand. What a batch gets is a
 * copy that groups a chunk exactly as the kept centres do. */
static void test_centres_are_kept_until_the_graph_doubles(void **state)
{
    (void)state;
    enum { STEP = 10000, ROWS = 3 * STEP };
    float *data = tu_clustered(ROWS, D, CLUSTERS, 0.5f, 26, 1, NULL);
    assert_non_null(data);
    vec_view_t v = {data, D, D, ROWS};
    hnsw_t *h = empty_graph(D, hnsw_params_default());
    uint32_t *ids = identity(ROWS);

    hnsw_order_t *copy;
    assert_int_equal(hnsw_order_for_batch(h, &v, ids, STEP, 2, &copy), CDN_OK);
    assert_true(copy && h->order && copy != h->order);
    assert_int_equal(h->order_nodes, STEP); /* an empty graph: counted as the batch */
    hnsw_order_t *kept = h->order;
    uint32_t a[STEP], b[STEP];
    memcpy(a, ids + STEP, sizeof a);
    memcpy(b, ids + STEP, sizeof b);
    assert_int_equal(hnsw_order_chunk(copy, &v, a, STEP, 2), CDN_OK);
    assert_int_equal(hnsw_order_chunk(h->order, &v, b, STEP, 1), CDN_OK);
    assert_memory_equal(a, b, sizeof a);
    hnsw_order_free(copy);

    /* 10,000 nodes, then 20,000: kept at the first, computed again at the second. */
    assert_int_equal(hnsw_build_ex(h, &v, ids, STEP, 2, HNSW_BUILD_FLOAT), 0);
    assert_int_equal(hnsw_order_for_batch(h, &v, ids + STEP, STEP, 2, &copy), CDN_OK);
    assert_true(copy && h->order == kept && h->order_nodes == STEP);
    hnsw_order_free(copy);
    assert_int_equal(hnsw_build_ex(h, &v, ids + STEP, STEP, 2, HNSW_BUILD_FLOAT), 0);
    assert_int_equal(hnsw_order_for_batch(h, &v, ids + 2 * STEP, STEP, 2, &copy), CDN_OK);
    assert_non_null(copy);
    assert_int_equal(h->order_nodes, 2 * STEP);
    hnsw_order_free(copy);
    hnsw_free(h);
    free(ids);
    free(data);
}

/* Recall@10 at ef 64 over queries near the data, for h over rows [0, n). */
static double recall_at_10(hnsw_t *h, const vec_view_t *v, uint32_t n, const float *queries,
                           uint32_t nq)
{
    double sum = 0;
    for (uint32_t q = 0; q < nq; q++) {
        const float *qv = queries + (size_t)q * D;
        uint32_t truth[10], got;
        hnsw_hit_t hits[10];
        uint32_t nt = tu_exact(v, VEC_METRIC_COSINE, qv, n, NULL, NULL, 10, truth);
        assert_int_equal(
            hnsw_search(h, v, qv, 10, 64, NULL, HNSW_MODE_UNFILTERED, 0, NULL, hits, &got), 0);
        sum += tu_recall(hits, got, truth, nt);
    }
    return sum / nq;
}

/* Rows inserted one at a time in the grouped order (24,000 rows onto a graph of 8,000, in
 * chunks as hnsw_build takes them) build a graph that answers as well as the same rows
 * inserted in the order given. */
static void test_a_grouped_batch_builds_a_graph_as_good_as_the_order_given(void **state)
{
    (void)state;
    enum { FIRST = 8000, ALL = 32000, NQ = 200, CHUNK = 8000 };
    float *data = tu_clustered(ALL, D, CLUSTERS, 0.5f, 23, 1, NULL);
    float *queries = tu_clustered(NQ, D, CLUSTERS, 0.5f, 23, 1, NULL); /* same centres */
    assert_true(data && queries);
    tu_rng_t r = {24};
    for (uint32_t i = 0; i < NQ * D; i++) /* no query is a row */
        queries[i] += 0.05f * tu_gauss(&r);
    vec_view_t v = {data, D, D, ALL};
    uint32_t *ids = identity(ALL);
    hnsw_t *grouped = graph_of(&v, FIRST, 2, hnsw_params_default());
    hnsw_t *given = graph_of(&v, FIRST, 2, hnsw_params_default());
    hnsw_order_t *o;
    assert_int_equal(hnsw_order_create(grouped, &v, ids + FIRST, ALL - FIRST, 2, &o), CDN_OK);
    assert_non_null(o);
    for (uint32_t at = FIRST; at < ALL; at += CHUNK) {
        assert_int_equal(hnsw_order_chunk(o, &v, ids + at, CHUNK, 2), CDN_OK);
        for (uint32_t i = at; i < at + CHUNK; i++) {
            assert_int_equal(hnsw_insert(grouped, &v, ids[i]), 0);
            assert_int_equal(hnsw_insert(given, &v, i), 0);
        }
    }
    hnsw_order_free(o);
    hnsw_info_t a, b;
    hnsw_get_info(grouped, &a);
    hnsw_get_info(given, &b);
    assert_int_equal(a.nodes, ALL);
    assert_int_equal(b.nodes, ALL);
    double ra = recall_at_10(grouped, &v, ALL, queries, NQ);
    double rb = recall_at_10(given, &v, ALL, queries, NQ);
    assert_true(ra >= 0.95);
    assert_true(ra >= rb - 0.01);
    hnsw_free(grouped);
    hnsw_free(given);
    free(ids);
    free(data);
    free(queries);
}

/* A batch of more than one chunk (HNSW_ORDER_CHUNK rows) inserts every row exactly once, and
 * each row asked as a query finds itself; an id given twice in the first chunk fails that
 * insert alone, and every later chunk still goes in. Small rows and a narrow build keep it
 * quick. */
static void test_a_batch_of_several_chunks_inserts_every_row(void **state)
{
    (void)state;
    enum { ROWS = 70000, SMALL = 8 };
    _Static_assert(ROWS > HNSW_ORDER_CHUNK, "the batch must span two chunks");
    float *data = tu_clustered(ROWS, SMALL, CLUSTERS, 0.5f, 25, 1, NULL);
    assert_non_null(data);
    vec_view_t v = {data, SMALL, SMALL, ROWS};
    hnsw_params_t p = hnsw_params_default();
    p.m = 8;
    p.ef_construction = 32;
    hnsw_t *h = empty_graph(SMALL, p);
    uint32_t *ids = identity(ROWS);
    ids[1] = 0; /* row 1 left out, row 0 twice */
    assert_int_equal(hnsw_build_ex(h, &v, ids, ROWS, 2, HNSW_BUILD_FLOAT), CDN_ERR_EXISTS);
    hnsw_info_t info;
    hnsw_get_info(h, &info);
    assert_int_equal(info.nodes, ROWS - 1);
    assert_false(hnsw_flags(h, 1) & HNSW_F_CLAIMED);
    assert_int_equal(hnsw_insert(h, &v, 1), 0);
    hnsw_get_info(h, &info);
    assert_int_equal(info.nodes, ROWS);
    for (uint32_t i = 0; i < ROWS; i++)
        assert_true(hnsw_flags(h, i) & HNSW_F_PRESENT);
    /* Inserting any of them again is refused: each was claimed once. */
    assert_int_equal(hnsw_insert(h, &v, ROWS - 1), CDN_ERR_EXISTS);
    uint32_t found = 0;
    for (uint32_t i = 0; i < ROWS; i += 350) {
        hnsw_hit_t hit;
        uint32_t n;
        assert_int_equal(hnsw_search(h, &v, vec_row(&v, i), 1, 64, NULL, HNSW_MODE_UNFILTERED, 0,
                                     NULL, &hit, &n),
                         0);
        found += n == 1 && hit.id == i;
    }
    assert_true(found >= 196); /* 98% of 200 */
    hnsw_free(h);
    free(ids);
    free(data);
}

/* The centres an index keeps after a large batch count in its memory: the same 12,000 rows
 * built in one batch (centres kept) and in batches too small for centres differ by their
 * 256 x (D + 1) floats, and by nothing else (levels and spans follow from the ids). */
static void test_kept_centres_count_in_the_graph_memory(void **state)
{
    (void)state;
    enum { ROWS = 12000, PART = 4000 };
    _Static_assert(ROWS >= HNSW_ORDER_MIN_BATCH && PART < HNSW_ORDER_MIN_BATCH, "sizes");
    float *data = tu_clustered(ROWS, D, CLUSTERS, 0.5f, 26, 1, NULL);
    assert_non_null(data);
    vec_view_t v = {data, D, D, ROWS};
    uint32_t *ids = identity(ROWS);
    hnsw_t *one = graph_of(&v, ROWS, 2, hnsw_params_default());
    hnsw_t *parts = empty_graph(D, hnsw_params_default());
    for (uint32_t at = 0; at < ROWS; at += PART)
        assert_int_equal(hnsw_build_ex(parts, &v, ids + at, PART, 2, HNSW_BUILD_FLOAT), 0);
    hnsw_info_t a, b;
    hnsw_get_info(one, &a);
    hnsw_get_info(parts, &b);
    assert_int_equal(a.nodes, ROWS);
    assert_int_equal(b.nodes, ROWS);
    assert_non_null(one->order);
    assert_null(parts->order);
    size_t centres = (size_t)HNSW_ORDER_CENTRES * (D + 1) * sizeof(float);
    assert_true(a.memory_bytes >= b.memory_bytes + centres);
    assert_true(a.memory_bytes <= b.memory_bytes + centres + 256);
    hnsw_free(one);
    hnsw_free(parts);
    free(ids);
    free(data);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_a_chunk_is_grouped_by_region_and_keeps_every_id),
        cmocka_unit_test(test_a_small_batch_keeps_the_order_as_given),
        cmocka_unit_test(test_centres_are_kept_until_the_graph_doubles),
        cmocka_unit_test(test_a_grouped_batch_builds_a_graph_as_good_as_the_order_given),
        cmocka_unit_test(test_a_batch_of_several_chunks_inserts_every_row),
        cmocka_unit_test(test_kept_centres_count_in_the_graph_memory),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
