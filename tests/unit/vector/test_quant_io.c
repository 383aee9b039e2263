/* test_quant_io.c: the codes file (quant_save / quant_load): a round trip answers exactly as
 * the codes it saved; rows past the view are dropped; damaged, truncated, foreign or stale
 * files are refused. Relies on cmocka and the test helpers' temporary directories. */
/* cmocka.h needs these four first. */
// clang-format off
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
// clang-format on

#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "base/err.h"
#include "testutil.h"
#include "unit/vector/hnsw_testutil.h"
#include "vector/exact.h"
#include "vector/quant.h"

#define N 9000 /* more than two chunks of codes */
#define DIM 48
#define K 10

typedef struct fixture {
    char dir[64], path[128];
    float *rows;
    vec_view_t view;
    quant_t *q;
} fixture_t;

static int setup(void **state)
{
    fixture_t *f = calloc(1, sizeof *f);
    if (!tu_tmpdir(f->dir, sizeof f->dir))
        return -1;
    snprintf(f->path, sizeof f->path, "%s/codes.q8", f->dir);
    f->rows = tu_clustered(N, DIM, 30, 1.0f, 0, 0, NULL);
    f->view = (vec_view_t){f->rows, DIM, DIM, N};
    int rc = quant_create(DIM, &f->q, NULL);
    rc = rc ? rc : quant_train(f->q, &f->view, NULL, 2000, NULL);
    rc = rc ? rc : quant_encode_rows(f->q, &f->view, 0, N, NULL);
    rc = rc ? rc : quant_save(f->q, f->path);
    *state = f;
    return rc;
}

static int teardown(void **state)
{
    fixture_t *f = *state;
    quant_free(f->q);
    free(f->rows);
    tu_rmrf(f->dir);
    free(f);
    return 0;
}

static void test_round_trip_answers_exactly_as_before(void **state)
{
    fixture_t *f = *state;
    quant_t *back = NULL;
    assert_int_equal(quant_load(f->path, &f->view, &back), 0);
    assert_int_equal(quant_count(back), N);
    assert_int_equal(quant_memory(back), quant_memory(f->q));
    for (uint32_t i = 0; i < 20; i++) {
        const float *qv = vec_row(&f->view, i * 400);
        topk_hit_t a[K], b[K], e[K];
        size_t na = 0, nb = 0, ne = 0;
        quant_stats_t sa, sb;
        assert_int_equal(
            quant_exact_search(f->q, &f->view, VEC_METRIC_L2, qv, NULL, K, a, &na, &sa), 0);
        assert_int_equal(
            quant_exact_search(back, &f->view, VEC_METRIC_L2, qv, NULL, K, b, &nb, &sb), 0);
        assert_int_equal(exact_search(&f->view, VEC_METRIC_L2, qv, NULL, K, e, &ne, NULL), 0);
        assert_int_equal(na, nb);
        assert_int_equal(nb, ne);
        assert_memory_equal(a, b, na * sizeof *a);
        assert_memory_equal(b, e, nb * sizeof *b);
        assert_int_equal(sa.reranked, sb.reranked); /* the same codes prune the same rows */
    }
    quant_free(back);
}

/* A save that ran ahead of the acknowledged rows: the rows past the view are forgotten. */
static void test_rows_past_the_view_are_dropped(void **state)
{
    fixture_t *f = *state;
    vec_view_t shorter = f->view;
    shorter.count = N - 1234;
    quant_t *back = NULL;
    assert_int_equal(quant_load(f->path, &shorter, &back), 0);
    assert_int_equal(quant_count(back), N - 1234);
    quant_free(back);
}

static void write_copy(const char *from, const char *to, long truncate_at, long flip_at)
{
    FILE *a = fopen(from, "rb"), *b = fopen(to, "wb");
    assert_non_null(a);
    assert_non_null(b);
    int c;
    for (long i = 0; (c = fgetc(a)) != EOF && (truncate_at < 0 || i < truncate_at); i++)
        fputc(i == flip_at ? c ^ 0x10 : c, b);
    fclose(a);
    fclose(b);
}

static void test_damaged_foreign_and_stale_files_are_refused(void **state)
{
    fixture_t *f = *state;
    char bad[160];
    quant_t *back = NULL;
    snprintf(bad, sizeof bad, "%s/bad.q8", f->dir);
    write_copy(f->path, bad, -1, 5000); /* one bit in the codes */
    assert_int_equal(quant_load(bad, &f->view, &back), CDN_ERR_CORRUPT);
    assert_null(back);
    write_copy(f->path, bad, 100000, -1); /* truncated */
    assert_int_equal(quant_load(bad, &f->view, &back), CDN_ERR_CORRUPT);
    write_copy(f->path, bad, -1, 2); /* magic */
    assert_int_equal(quant_load(bad, &f->view, &back), CDN_ERR_CORRUPT);
    /* Another dimension's rows. */
    vec_view_t other = {f->rows, DIM - 1, DIM, N};
    assert_int_equal(quant_load(f->path, &other, &back), CDN_ERR_CORRUPT);
    /* The rows changed since the save (a restored vector file, say): the file is stale. The
     * check re-encodes a sample (64 rows spread evenly, and the last): change sampled rows. */
    size_t at[] = {(size_t)(N - 1) * DIM + 3, (size_t)(10 * N / 64) * DIM + 7};
    for (size_t i = 0; i < 2; i++) {
        float keep = f->rows[at[i]];
        f->rows[at[i]] += 5.0f;
        assert_int_equal(quant_load(f->path, &f->view, &back), CDN_ERR_CORRUPT);
        f->rows[at[i]] = keep;
    }
    assert_int_equal(quant_load(f->path, &f->view, &back), 0);
    quant_free(back);
    assert_int_equal(quant_load("/nonexistent/x.q8", &f->view, &back), CDN_ERR_IO);
    quant_t *untrained = NULL;
    assert_int_equal(quant_create(DIM, &untrained, NULL), 0);
    assert_int_equal(quant_save(untrained, bad), CDN_ERR_INVALID);
    quant_free(untrained);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_round_trip_answers_exactly_as_before),
        cmocka_unit_test(test_rows_past_the_view_are_dropped),
        cmocka_unit_test(test_damaged_foreign_and_stale_files_are_refused),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
