/* test_quant_bits.c: the 1-bit codes and their scan: the rotation keeps lengths, the scan
 * returns only allowed rows with their exact float distances, finds the true top-10 (recall)
 * on clustered 384-d data in every metric, prunes most rows, agrees across instruction sets,
 * treats rows without a code as candidates, and runs beside an appending writer. Relies on
 * cmocka, CRoaring, pthreads, vector/quant.h, vector/quant_int.h (the row layout) and
 * vector/exact.h (the reference). */
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
#include <stdlib.h>
#include <string.h>

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

/* n rows of dim floats around `centres` centres (each coordinate within `spread` of its
 * centre's), unit length for cosine. */
static float *make_rows_around(size_t n, uint32_t dim, vec_metric_t m, size_t centres, float spread,
                               uint64_t *s)
{
    float *cent = malloc(centres * dim * sizeof(float));
    float *x = malloc(n * dim * sizeof(float) + 4);
    for (size_t i = 0; i < centres * dim; i++)
        cent[i] = rng_uniform(s);
    for (size_t i = 0; i < n; i++) {
        size_t c = rng_next(s) % centres;
        for (uint32_t j = 0; j < dim; j++)
            x[i * dim + j] = cent[c * dim + j] + spread * rng_uniform(s);
        if (m == VEC_METRIC_COSINE)
            vec_normalize(x + i * dim, dim);
    }
    free(cent);
    return x;
}

/* n rows around 32 centres (spread 0.35). */
static float *make_rows(size_t n, uint32_t dim, vec_metric_t m, uint64_t *s)
{
    return make_rows_around(n, dim, m, 32, 0.35f, s);
}

static quant_t *make_quant(const vec_view_t *v, uint32_t encode)
{
    quant_t *q = NULL;
    assert_int_equal(quant_create(v->dim, &q, NULL), 0);
    assert_int_equal(quant_train(q, v, NULL, v->count < 4000 ? v->count : 4000, NULL), 0);
    assert_int_equal(quant_encode_rows(q, v, 0, encode, NULL), 0);
    return q;
}

static int float_cmp(const void *a, const void *b)
{
    float x = *(const float *)a, y = *(const float *)b;
    return (x > y) - (x < y);
}

/* The rows whose distance to query ranks in the last `share` of all rows (a subject whose
 * documents are about other things). */
static roaring_bitmap_t *far_rows(const vec_view_t *v, vec_metric_t m, const float *query,
                                  double share)
{
    vec_dist_fn d = vec_dist_for(m);
    float *dist = malloc(v->count * sizeof(float)), *sorted = malloc(v->count * sizeof(float));
    for (uint32_t i = 0; i < v->count; i++)
        sorted[i] = dist[i] = d(query, vec_row(v, i), v->dim);
    qsort(sorted, v->count, sizeof(float), float_cmp); /* the (1 - share) quantile */
    float cut = sorted[(size_t)((1 - share) * (v->count - 1))];
    roaring_bitmap_t *b = roaring_bitmap_create();
    for (uint32_t i = 0; i < v->count; i++)
        if (dist[i] >= cut)
            roaring_bitmap_add(b, i);
    free(dist);
    free(sorted);
    return b;
}

static roaring_bitmap_t *random_rows(uint32_t count, double share, uint64_t *s)
{
    roaring_bitmap_t *b = roaring_bitmap_create();
    for (uint32_t id = 0; id < count; id++)
        if ((double)(rng_next(s) % 1000000) < share * 1000000)
            roaring_bitmap_add(b, id);
    return b;
}

/* hit's distance is exactly what the exact scan computes for its row. */
static void assert_exact_dist(const vec_view_t *v, vec_metric_t m, const float *query,
                              const topk_hit_t *hit)
{
    topk_hit_t one;
    size_t n1 = 0;
    assert_int_equal(exact_search_ids(v, m, query, &hit->id, 1, 1, &one, &n1, NULL), 0);
    assert_memory_equal(&hit->dist, &one.dist, sizeof one.dist);
}

/* Runs the bit scan and the exact scan; asserts every hit is allowed and carries its exact
 * float distance, and returns how many of the exact top k it found. */
static size_t found(const quant_t *q, const vec_view_t *v, vec_metric_t m, vec_isa_t isa,
                    const float *query, const roaring_bitmap_t *allowed, size_t k,
                    quant_stats_t *st)
{
    topk_hit_t want[16], got[16];
    size_t nw = 0, ng = 0, hit = 0;
    assert_int_equal(exact_search(v, m, query, allowed, k, want, &nw, NULL), 0);
    assert_int_equal(quant_bits_search_isa(q, v, m, isa, query, allowed, k, got, &ng, st), 0);
    assert_int_equal(ng, nw);
    for (size_t i = 0; i < ng; i++) {
        assert_true(!allowed || roaring_bitmap_contains(allowed, got[i].id));
        assert_exact_dist(v, m, query, &got[i]);
        assert_true(i == 0 || got[i - 1].dist <= got[i].dist);
        for (size_t j = 0; j < nw; j++)
            hit += got[i].id == want[j].id;
    }
    return hit;
}

/* y = R (x - c) with R orthogonal: ||y||^2 (derived from f and e) must equal ||x - c||^2. */
static void test_bits_rotation_keeps_lengths(void **state)
{
    (void)state;
    uint64_t s = 5;
    uint32_t dims[] = {3, 64, 100, 384, 784};
    for (size_t t = 0; t < sizeof dims / sizeof *dims; t++) {
        uint32_t dim = dims[t];
        float *x = make_rows(300, dim, VEC_METRIC_L2, &s);
        vec_view_t v = {x, dim, dim, 300};
        quant_t *q = make_quant(&v, 300);
        quant_snap_t r = quant_snap(q);
        for (uint32_t i = 0; i < 300; i += 7) {
            double want = 0;
            for (uint32_t j = 0; j < dim; j++) {
                double dj = (double)x[(size_t)i * dim + j] - q->center[j];
                want += dj * dj;
            }
            const quant_row_meta_t *mt = quant_row_meta(&r, i);
            double f = mt->f, e = mt->e, d = q->bdim; /* ||y||^2 = D f^2 - (D - 1) e^2 */
            assert_true(fabs(d * f * f - (d - 1) * e * e - want) <= 1e-4 * want + 1e-6);
            assert_true(mt->e > 0 && mt->e < INFINITY && mt->f > 0);
            assert_true(mt->e_r < INFINITY); /* the 8-bit codes' floats share the row */
        }
        quant_free(q);
        free(x);
    }
}

/* Recall against the exact scan, near and far readable sets, every metric; the 1-bit codes must
 * rule out most of the rows read. */
static void test_bits_scan_finds_the_top_10_and_prunes(void **state)
{
    (void)state;
    uint64_t s = 99;
    const uint32_t dim = 384, n = 12000;
    for (int m = 0; m <= VEC_METRIC_L2; m++) {
        float *x = make_rows(n + 20, dim, (vec_metric_t)m, &s);
        vec_view_t v = {x, dim, dim, n};
        quant_t *q = make_quant(&v, n);
        size_t hit = 0, total = 0;
        uint64_t scanned = 0, filtered = 0;
        for (int qi = 0; qi < 20; qi++) {
            const float *query = x + (size_t)(n + qi) * dim;
            roaring_bitmap_t *sets[4] = {NULL, random_rows(n, 0.05, &s), random_rows(n, 0.3, &s),
                                         far_rows(&v, (vec_metric_t)m, query, 0.2)};
            for (int a = 0; a < 4; a++) {
                quant_stats_t st;
                hit += found(q, &v, (vec_metric_t)m, vec_isa_best(), query, sets[a], 10, &st);
                total += 10;
                scanned += st.scanned;
                filtered += st.filtered;
                if (sets[a])
                    roaring_bitmap_free(sets[a]);
            }
        }
        assert_true((double)hit >= 0.99 * (double)total);
        assert_true(filtered * 10 > scanned * 7); /* the 1-bit codes ruled out most rows */
        quant_free(q);
        free(x);
    }
}

/* From 1 MiB of 1-bit rows (16,384 at 384-d) the bit scan runs in two halves on two threads:
 * every readable row is estimated exactly once, and the hits are as good as one thread's. */
static void test_bits_scan_on_two_threads_reads_each_row_once(void **state)
{
    (void)state;
    uint64_t s = 17;
    const uint32_t dim = 384, n = 40000;
    for (int m = 0; m <= VEC_METRIC_L2; m++) {
        float *x = make_rows(n + 5, dim, (vec_metric_t)m, &s);
        vec_view_t v = {x, dim, dim, n};
        quant_t *q = make_quant(&v, 5000);
        size_t hit = 0, total = 0;
        for (int qi = 0; qi < 5; qi++) {
            const float *query = x + (size_t)(n + qi) * dim;
            roaring_bitmap_t *sets[3] = {NULL, random_rows(n, 0.6, &s),
                                         far_rows(&v, (vec_metric_t)m, query, 0.5)};
            for (int a = 0; a < 3; a++) {
                quant_stats_t st;
                hit += found(q, &v, (vec_metric_t)m, vec_isa_best(), query, sets[a], 10, &st);
                total += 10;
                assert_int_equal(st.scanned, sets[a] ? roaring_bitmap_get_cardinality(sets[a]) : n);
                if (sets[a])
                    roaring_bitmap_free(sets[a]);
            }
        }
        assert_true((double)hit >= 0.99 * (double)total);
        quant_free(q);
        free(x);
    }
}

/* The portable, popcnt and VPOPCNTQ filters keep the same rows, hence the same hits: at 200
 * dimensions (4 words: the AVX-512 kernel's masked tail), 384 (6 words, the row's numbers in
 * the same line), 512 (8 words) and 768 (12: two loads a row), every metric, readable sets
 * whose sizes are no multiple of 8. */
static void test_bits_every_isa_agrees(void **state)
{
    (void)state;
    uint64_t s = 3;
    /* the AVX-512 filter's three forms: f and e read in the bits' own load (200 and 384
     * dimensions: four and six words), rows of eight words (512), rows of more (768) */
    const uint32_t dims[] = {200, 384, 512, 768}, n = 3000;
    for (size_t di = 0; di < sizeof dims / sizeof dims[0]; di++)
        for (int m = 0; m <= VEC_METRIC_L2; m++) {
            uint32_t dim = dims[di];
            float *x = make_rows(n + 5, dim, (vec_metric_t)m, &s);
            vec_view_t v = {x, dim, dim, n};
            quant_t *q = make_quant(&v, n);
            for (int qi = 0; qi < 5; qi++) {
                roaring_bitmap_t *set = qi == 0 ? NULL : random_rows(n, 0.1 * qi, &s);
                topk_hit_t ref[10], got[10];
                size_t nr = 0, ng = 0;
                quant_stats_t sr, sg;
                const float *query = x + (size_t)(n + qi) * dim;
                assert_int_equal(quant_bits_search_isa(q, &v, (vec_metric_t)m, VEC_ISA_SCALAR,
                                                       query, set, 10, ref, &nr, &sr),
                                 0);
                for (int isa = VEC_ISA_AVX2; isa <= VEC_ISA_AVX512; isa++) {
                    int rc = quant_bits_search_isa(q, &v, (vec_metric_t)m, (vec_isa_t)isa, query,
                                                   set, 10, got, &ng, &sg);
                    if (rc == CDN_ERR_UNSUPPORTED)
                        continue;
                    assert_int_equal(rc, 0);
                    assert_int_equal(ng, nr);
                    assert_memory_equal(got, ref, nr * sizeof *got);
                    assert_int_equal(sg.reranked, sr.reranked);
                    assert_int_equal(sg.filtered, sr.filtered);
                }
                if (set)
                    roaring_bitmap_free(set);
            }
            quant_free(q);
            free(x);
        }
}

/* Rows the 1-bit filter keeps early in a scan, while the running threshold is still loose, wait
 * until every row has been estimated: only those whose interval reaches the final threshold, and
 * the few with the best estimates, are read in 8 bits. Printed beside the count the final
 * threshold alone would keep (quant_bits_filter with the true 10th distance). */
static void test_bits_rows_read_in_8_bits_are_few(void **state)
{
    (void)state;
    uint64_t s = 41;
    const uint32_t dim = 384,
                   n = 8000; /* one thread: 8,000 1-bit rows are below QUANT_PAR_MIN_BYTES */
    for (int m = 0; m <= VEC_METRIC_L2; m++) {
        float *x = make_rows_around(n + 10, dim, (vec_metric_t)m, 400, 0.3f, &s);
        vec_view_t v = {x, dim, dim, n};
        quant_t *q = make_quant(&v, n);
        quant_snap_t r = quant_snap(q);
        uint32_t *ids = malloc(n * sizeof(uint32_t));
        float *lo = malloc(n * sizeof(float)), *est = malloc(n * sizeof(float));
        uint64_t read8 = 0, kept_final = 0;
        for (int qi = 0; qi < 10; qi++) {
            const float *query = x + (size_t)(n + qi) * dim;
            topk_hit_t got[10];
            size_t ng = 0;
            quant_stats_t st;
            assert_int_equal(
                quant_bits_search(q, &v, (vec_metric_t)m, query, NULL, 10, got, &ng, &st), 0);
            assert_int_equal(ng, 10);
            quant_bits_query_t *bq = NULL;
            assert_int_equal(quant_bits_query_new(q, (vec_metric_t)m, vec_isa_best(), query, &bq),
                             0);
            for (uint32_t i = 0; i < n; i++)
                ids[i] = i;
            size_t final = quant_bits_filter(bq, &r, ids, n, got[9].dist, lo, est);
            quant_bits_query_free(bq);
            read8 += st.scanned - st.filtered;
            kept_final += final;
        }
        print_message("metric %d: rows read in 8 bits %llu, kept by the final threshold %llu\n", m,
                      (unsigned long long)read8, (unsigned long long)kept_final);
        /* 10 queries: about 780 with the deferral; 13,500 - 15,200 reading every kept row */
        assert_true(read8 < 3000);
        free(ids);
        free(lo);
        free(est);
        quant_free(q);
        free(x);
    }
}

/* Rows past the codes (appended since) and rows with a non-finite value have no usable code:
 * they must still be found. */
static void test_bits_rows_without_codes_are_found(void **state)
{
    (void)state;
    uint64_t s = 17;
    const uint32_t dim = 64, n = 5000;
    float *x = make_rows(n, dim, VEC_METRIC_L2, &s);
    vec_view_t v = {x, dim, dim, n};
    quant_t *q = make_quant(&v, n - 10); /* the last 10 rows are not encoded */
    topk_hit_t got[5];
    size_t ng = 0;
    assert_int_equal(
        quant_bits_search(q, &v, VEC_METRIC_L2, vec_row(&v, n - 3), NULL, 5, got, &ng, NULL), 0);
    assert_int_equal(ng, 5);
    assert_int_equal(got[0].id, n - 3);
    assert_true(got[0].dist == 0);
    /* a row that held a NaN when encoded is re-ranked whatever its code says */
    float keep = x[100 * dim];
    x[100 * dim] = NAN;
    assert_int_equal(quant_encode_rows(q, &v, 100, 1, NULL), 0);
    x[100 * dim] = keep;
    assert_int_equal(
        quant_bits_search(q, &v, VEC_METRIC_L2, vec_row(&v, 100), NULL, 5, got, &ng, NULL), 0);
    assert_int_equal(got[0].id, 100);
    quant_free(q);
    free(x);
}

/* One writer appends rows (the chunk directory outgrown several times) while bit scans run
 * over the rows published so far plus one not yet encoded: every hit is a row of the view with
 * its exact float distance, and the unencoded row, asked for, is found. */
static void test_bits_scans_run_while_rows_are_appended(void **state)
{
    (void)state;
    uint64_t s = 41;
    const uint32_t dim = 64, n = 40000;
    float *x = make_rows(n, dim, VEC_METRIC_L2, &s);
    vec_view_t all = {x, dim, dim, n};
    quant_t *q = NULL;
    assert_int_equal(quant_create(dim, &q, NULL), 0);
    assert_int_equal(quant_train(q, &all, NULL, 2000, NULL), 0);
    appender_t a = {q, &all, 700, 0};
    pthread_t th;
    assert_int_equal(pthread_create(&th, NULL, append_rows, &a), 0);
    int searches = 0;
    for (;;) {
        uint32_t seen = quant_count(q);
        vec_view_t v = {x, dim, dim, seen < n ? seen + 1 : n}; /* one row not yet encoded */
        topk_hit_t got[10];
        size_t ng = 0;
        const float *query = vec_row(&v, v.count - 1);
        assert_int_equal(quant_bits_search(q, &v, VEC_METRIC_L2, query, NULL, 10, got, &ng, NULL),
                         0);
        assert_int_equal(ng, v.count < 10 ? v.count : 10);
        assert_int_equal(got[0].id, v.count - 1); /* the query's own row, at distance 0 */
        for (size_t i = 0; i < ng; i++) {
            assert_true(got[i].id < v.count);
            assert_exact_dist(&v, VEC_METRIC_L2, query, &got[i]);
        }
        searches++;
        if (seen == n)
            break;
    }
    pthread_join(th, NULL);
    assert_int_equal(a.rc, 0);
    assert_true(searches >= 1);
    quant_free(q);
    free(x);
}

static void test_bits_rejects_bad_arguments_and_handles_edges(void **state)
{
    (void)state;
    uint64_t s = 23;
    float *x = make_rows(200, 8, VEC_METRIC_DOT, &s);
    vec_view_t v = {x, 8, 8, 200}, v7 = {x, 7, 7, 200};
    quant_t *q = make_quant(&v, 200);
    topk_hit_t out[3];
    size_t n = 9;
    float bad[8] = {0, 0, NAN, 0, 0, 0, 0, 0}; /* as quant_exact_search: exact_search answers */
    topk_hit_t ref[3];
    size_t nref = 0;
    int want = exact_search(&v, VEC_METRIC_DOT, bad, NULL, 3, ref, &nref, NULL);
    assert_int_equal(quant_bits_search(q, &v, VEC_METRIC_DOT, bad, NULL, 3, out, &n, NULL), want);
    assert_int_equal(n, nref);
    assert_int_equal(quant_bits_search(q, &v7, VEC_METRIC_DOT, x, NULL, 3, out, &n, NULL),
                     CDN_ERR_INVALID);
    assert_int_equal(quant_bits_search(q, &v, (vec_metric_t)9, x, NULL, 3, out, &n, NULL),
                     CDN_ERR_INVALID);
    assert_int_equal(quant_bits_search(q, &v, VEC_METRIC_DOT, x, NULL, 3, NULL, &n, NULL),
                     CDN_ERR_INVALID);
    roaring_bitmap_t *none = roaring_bitmap_create();
    assert_int_equal(quant_bits_search(q, &v, VEC_METRIC_DOT, x, none, 3, out, &n, NULL), 0);
    assert_int_equal(n, 0);
    roaring_bitmap_add(none, 150);
    roaring_bitmap_add(none, 5000); /* past the view: ignored */
    assert_int_equal(quant_bits_search(q, &v, VEC_METRIC_DOT, x, none, 3, out, &n, NULL), 0);
    assert_int_equal(n, 1);
    assert_int_equal(out[0].id, 150);
    int saw_nomem = 0;
    for (long f = 0; f < 6; f++) {
        cdn_mem_fail_after(f);
        int rc = quant_bits_search(q, &v, VEC_METRIC_DOT, x, NULL, 3, out, &n, NULL);
        cdn_mem_fail_after(-1);
        assert_true(rc == 0 || rc == CDN_ERR_NOMEM);
        assert_true(rc != 0 || n == 3);
        saw_nomem |= rc == CDN_ERR_NOMEM;
    }
    assert_true(saw_nomem);
    roaring_bitmap_free(none);
    quant_free(q);
    free(x);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_bits_rotation_keeps_lengths),
        cmocka_unit_test(test_bits_scan_finds_the_top_10_and_prunes),
        cmocka_unit_test(test_bits_scan_on_two_threads_reads_each_row_once),
        cmocka_unit_test(test_bits_every_isa_agrees),
        cmocka_unit_test(test_bits_rows_read_in_8_bits_are_few),
        cmocka_unit_test(test_bits_rows_without_codes_are_found),
        cmocka_unit_test(test_bits_scans_run_while_rows_are_appended),
        cmocka_unit_test(test_bits_rejects_bad_arguments_and_handles_edges),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
