/* test_hnsw_io.c: HNSW save/load round trips and the rejection of damaged files.
 * Relies on cmocka, POSIX temp directories. */
/* cmocka.h needs these four first. */
// clang-format off
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
// clang-format on

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/err.h"
#include "unit/vector/hnsw_testutil.h"

#define N 3000
#define DIM 16
#define K 10

typedef struct fixture {
    char dir[64], path[128];
    float *data;
    vec_view_t view;
    hnsw_t *h;
} fixture_t;

static int setup(void **state)
{
    fixture_t *f = calloc(1, sizeof(*f));
    snprintf(f->dir, sizeof f->dir, "/tmp/cdn-hnsw-io-XXXXXX");
    if (!mkdtemp(f->dir))
        return -1;
    snprintf(f->path, sizeof f->path, "%s/index.hnsw", f->dir);
    f->data = tu_clustered(N, DIM, 20, 1.0f, 5, 1, NULL);
    f->view = (vec_view_t){f->data, DIM, DIM, N};
    hnsw_params_t p = hnsw_params_default();
    p.m = 8;
    p.ef_construction = 64;
    if (hnsw_create(p, VEC_METRIC_COSINE, DIM, &f->h))
        return -1;
    /* Every id but the last 100, so the file has gaps at the end of the span too. */
    for (uint32_t i = 0; i < N - 100; i++)
        if (i % 7 != 3 && hnsw_insert(f->h, &f->view, i))
            return -1;
    for (uint32_t i = 0; i < N; i += 50)
        hnsw_delete(f->h, i);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fixture_t *f = *state;
    hnsw_free(f->h);
    unlink(f->path);
    rmdir(f->dir);
    free(f->data);
    free(f);
    return 0;
}

static void same_results(fixture_t *f, hnsw_t *a, hnsw_t *b)
{
    roaring_bitmap_t *allowed = tu_random_set(N, 0.05, 3);
    for (uint32_t qi = 0; qi < 50; qi++) {
        const float *q = vec_row(&f->view, qi * 37 % N);
        hnsw_hit_t ha[K], hb[K];
        uint32_t na, nb;
        for (int mode = 0; mode < 2; mode++) {
            assert_int_equal(
                hnsw_search(a, &f->view, q, K, 40, allowed, (hnsw_mode_t)mode, 0, NULL, ha, &na),
                0);
            assert_int_equal(
                hnsw_search(b, &f->view, q, K, 40, allowed, (hnsw_mode_t)mode, 0, NULL, hb, &nb),
                0);
            assert_int_equal(na, nb);
            assert_true(na > 0);
            assert_memory_equal(ha, hb, na * sizeof(hnsw_hit_t));
        }
    }
    roaring_bitmap_free(allowed);
}

static void test_save_then_load_gives_identical_results(void **state)
{
    fixture_t *f = *state;
    assert_int_equal(hnsw_save(f->h, f->path, 4242), 0);
    hnsw_t *g;
    uint64_t rev = 0;
    assert_int_equal(hnsw_load(f->path, &g, &rev), 0);
    assert_int_equal(rev, 4242);
    hnsw_info_t a, b;
    hnsw_get_info(f->h, &a);
    hnsw_get_info(g, &b);
    assert_int_equal(a.nodes, b.nodes);
    assert_int_equal(a.deleted, b.deleted);
    assert_int_equal(a.max_level, b.max_level);
    assert_int_equal(b.params.m, 8);
    assert_int_equal(b.metric, VEC_METRIC_COSINE);
    same_results(f, f->h, g);
    /* The loaded index keeps taking inserts, and deleted ids stay hidden. */
    for (uint32_t i = N - 100; i < N; i++)
        assert_int_equal(hnsw_insert(g, &f->view, i), 0);
    assert_int_equal(hnsw_insert(g, &f->view, 1), CDN_ERR_EXISTS);
    hnsw_hit_t hit;
    uint32_t n;
    assert_int_equal(hnsw_search(g, &f->view, vec_row(&f->view, N - 1), 1, 32, NULL,
                                 HNSW_MODE_UNFILTERED, 0, NULL, &hit, &n),
                     0);
    assert_int_equal(hit.id, N - 1);
    assert_int_equal(hnsw_search(g, &f->view, vec_row(&f->view, 50), 1, 32, NULL,
                                 HNSW_MODE_UNFILTERED, 0, NULL, &hit, &n),
                     0);
    assert_int_not_equal(hit.id, 50);
    hnsw_free(g);
}

static void test_save_replaces_previous_file_and_leaves_no_temp(void **state)
{
    fixture_t *f = *state;
    assert_int_equal(hnsw_save(f->h, f->path, 1), 0);
    assert_int_equal(hnsw_save(f->h, f->path, 2), 0);
    hnsw_t *g;
    uint64_t rev;
    assert_int_equal(hnsw_load(f->path, &g, &rev), 0);
    assert_int_equal(rev, 2);
    hnsw_free(g);
    char tmp[256];
    snprintf(tmp, sizeof tmp, "%s.tmp.%ld", f->path, (long)getpid());
    assert_int_not_equal(access(tmp, F_OK), 0);
}

static long file_size(const char *p)
{
    struct stat sb;
    return stat(p, &sb) ? -1 : (long)sb.st_size;
}

static void flip_byte(const char *p, long off)
{
    int fd = open(p, O_RDWR);
    assert_true(fd >= 0);
    unsigned char c;
    assert_int_equal(pread(fd, &c, 1, off), 1);
    c ^= 0x5a;
    assert_int_equal(pwrite(fd, &c, 1, off), 1);
    close(fd);
}

static void test_flipped_byte_anywhere_is_rejected_as_corrupt(void **state)
{
    fixture_t *f = *state;
    assert_int_equal(hnsw_save(f->h, f->path, 7), 0);
    long size = file_size(f->path);
    long offs[] = {0, 20, 130, size / 2, size - 20, size - 1};
    for (size_t i = 0; i < sizeof offs / sizeof offs[0]; i++) {
        flip_byte(f->path, offs[i]);
        hnsw_t *g = NULL;
        uint64_t rev;
        assert_int_equal(hnsw_load(f->path, &g, &rev), CDN_ERR_CORRUPT);
        assert_null(g);
        flip_byte(f->path, offs[i]); /* restore */
    }
    hnsw_t *g;
    uint64_t rev;
    assert_int_equal(hnsw_load(f->path, &g, &rev), 0);
    hnsw_free(g);
}

static void test_truncated_file_is_rejected_as_corrupt(void **state)
{
    fixture_t *f = *state;
    assert_int_equal(hnsw_save(f->h, f->path, 7), 0);
    long size = file_size(f->path);
    long cuts[] = {size - 1, size / 2, 100, 0};
    for (size_t i = 0; i < sizeof cuts / sizeof cuts[0]; i++) {
        assert_int_equal(truncate(f->path, cuts[i]), 0);
        hnsw_t *g = NULL;
        uint64_t rev;
        assert_int_equal(hnsw_load(f->path, &g, &rev), CDN_ERR_CORRUPT);
        assert_null(g);
    }
}

static void test_missing_file_is_an_io_error(void **state)
{
    fixture_t *f = *state;
    char p[256];
    snprintf(p, sizeof p, "%s/absent.hnsw", f->dir);
    hnsw_t *g = NULL;
    uint64_t rev;
    assert_int_equal(hnsw_load(p, &g, &rev), CDN_ERR_IO);
    assert_null(g);
    snprintf(p, sizeof p, "%s/no/such/dir/x.hnsw", f->dir);
    assert_int_equal(hnsw_save(f->h, p, 1), CDN_ERR_IO);
}

static void test_empty_index_round_trips(void **state)
{
    fixture_t *f = *state;
    hnsw_t *e, *g;
    assert_int_equal(hnsw_create(hnsw_params_default(), VEC_METRIC_L2, 3, &e), 0);
    assert_int_equal(hnsw_save(e, f->path, 9), 0);
    uint64_t rev;
    assert_int_equal(hnsw_load(f->path, &g, &rev), 0);
    assert_int_equal(rev, 9);
    hnsw_info_t info;
    hnsw_get_info(g, &info);
    assert_int_equal(info.nodes, 0);
    assert_int_equal(info.dim, 3);
    hnsw_free(e);
    hnsw_free(g);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_save_then_load_gives_identical_results),
        cmocka_unit_test(test_save_replaces_previous_file_and_leaves_no_temp),
        cmocka_unit_test(test_flipped_byte_anywhere_is_rejected_as_corrupt),
        cmocka_unit_test(test_truncated_file_is_rejected_as_corrupt),
        cmocka_unit_test(test_missing_file_is_an_io_error),
        cmocka_unit_test(test_empty_index_round_trips),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
