/* test_store.c: handing the database file's pages back (store_release_pages), and the I/O fault
 * hook (store_fail_after): a failed put, delete, commit, vector write or sync changes nothing a
 * reader or a reopen sees. Relies on cmocka, LMDB through store.h, vecfile.h, /proc/self/smaps. */
/* cmocka.h needs these four first. */
// clang-format off
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
// clang-format on

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store/store.h"
#include "store/vecfile.h"
#include "store_testutil.h"
#include "testutil.h"

#define NREC 3000
#define VLEN STU_VLEN

/* Resident kB of the mapping of dir/data.mdb. */
static long mapped_kb(const char *dir)
{
    char want[128];
    snprintf(want, sizeof want, "%s/data.mdb", dir);
    return tu_smaps_kb("Rss:", 0, 0, want);
}

static void test_released_pages_stop_counting_and_records_read_back(void **state)
{
    (void)state;
    char dir[64];
    store_t *s;
    store_txn_t *t;
    unsigned char key[4], val[VLEN];
    assert_non_null(tu_tmpdir(dir, sizeof dir));
    assert_int_equal(store_open(dir, 0, &s, NULL), 0);
    assert_int_equal(store_txn_begin(s, 1, &t, NULL), 0);
    for (uint32_t i = 0; i < NREC; i++) {
        store_be32(key, i);
        stu_fill(val, i);
        assert_int_equal(store_put(t, STORE_CHUNKS, key, 4, val, VLEN), 0);
    }
    assert_int_equal(store_txn_commit(t, NULL), 0);
    assert_int_equal((int)stu_read_back(s, NREC), NREC); /* maps the file's pages */
    long before = mapped_kb(dir);
    store_release_pages(s);
    long after = mapped_kb(dir);
    print_message("data.mdb resident: %ld kB after the reads, %ld kB after the release\n", before,
                  after);
    assert_true(before >= 1024); /* about 3 MB of records were read through the map */
    assert_true(after < before / 8);
    assert_int_equal((int)stu_read_back(s, NREC),
                     NREC); /* nothing lost: the pages come back on reading */
    store_close(s);
    tu_rmrf(dir);
}

/* Writes records lo..lo+n-1 (each stu_fill(i)), deletes record 0 unless lo is 0, and sets revision
 * rev, in one transaction; returns the status of the write or commit that failed, or 0. */
static int write_batch(store_t *s, uint32_t lo, uint32_t n, uint64_t rev)
{
    store_txn_t *t;
    unsigned char key[4], val[VLEN];
    int rc = store_txn_begin(s, 1, &t, NULL);
    if (rc)
        return rc;
    for (uint32_t i = lo; rc == 0 && i < lo + n; i++) {
        store_be32(key, i);
        stu_fill(val, i);
        rc = store_put(t, STORE_CHUNKS, key, 4, val, VLEN);
    }
    if (rc == 0 && lo > 0) {
        store_be32(key, 0);
        rc = store_del(t, STORE_CHUNKS, key, 4);
    }
    if (rc == 0)
        rc = store_revision_set(t, rev);
    if (rc) {
        store_txn_abort(t);
        return rc;
    }
    return store_txn_commit(t, NULL);
}

static uint64_t revision_of(store_t *s)
{
    store_txn_t *t;
    uint64_t rev = 99;
    assert_int_equal(store_txn_begin(s, 0, &t, NULL), 0);
    assert_int_equal(store_revision_get(t, &rev), 0);
    store_txn_abort(t);
    return rev;
}

static int has(store_t *s, uint32_t i)
{
    store_txn_t *t;
    unsigned char key[4];
    const void *v;
    size_t vlen;
    assert_int_equal(store_txn_begin(s, 0, &t, NULL), 0);
    store_be32(key, i);
    int rc = store_get(t, STORE_CHUNKS, key, 4, &v, &vlen);
    store_txn_abort(t);
    return rc == 0;
}

static void test_failed_store_write_or_commit_changes_nothing(void **state)
{
    (void)state;
    char dir[64];
    store_t *s;
    assert_non_null(tu_tmpdir(dir, sizeof dir));
    assert_int_equal(store_open(dir, 0, &s, NULL), 0);
    assert_int_equal(write_batch(s, 0, 10, 1), 0);
    /* 10 puts, 1 delete, 2 revision puts (the counter and its commit time), 1 commit: fail
     * each in turn */
    for (long n = 0; n < 14; n++) {
        store_fail_after(n);
        assert_int_equal(write_batch(s, 10, 10, 2), CDN_ERR_IO);
        store_fail_after(-1);
        assert_int_equal(revision_of(s), 1);
        assert_true(has(s, 0) && has(s, 9) && !has(s, 10) && !has(s, 19));
        store_close(s);
        assert_int_equal(store_open(dir, 0, &s, NULL), 0); /* and so after a restart */
        assert_int_equal(revision_of(s), 1);
        assert_true(has(s, 0) && !has(s, 10));
    }
    store_fail_after(14); /* past the batch: it commits, and the hook is left pending */
    assert_int_equal(write_batch(s, 10, 10, 2), 0);
    store_fail_after(-1);
    assert_int_equal(revision_of(s), 2);
    assert_true(!has(s, 0) && has(s, 10) && has(s, 19));
    store_close(s);
    tu_rmrf(dir);
}

static void test_failed_vector_write_or_sync_is_reported_and_keeps_old_rows(void **state)
{
    (void)state;
    char dir[64], path[128];
    vecfile_t *vf;
    float a[4] = {1, 2, 3, 4}, b[4] = {5, 6, 7, 8};
    const float *ra[1] = {a}, *rb[1] = {b};
    assert_non_null(tu_tmpdir(dir, sizeof dir));
    snprintf(path, sizeof path, "%s/v.vec", dir);
    assert_int_equal(vecfile_open(path, 4, &vf, NULL), 0);
    assert_int_equal(vecfile_write(vf, 0, ra, 1, NULL), 0);
    assert_int_equal(vecfile_sync(vf, NULL), 0);
    store_fail_after(0);
    assert_int_equal(vecfile_write(vf, 0, rb, 1, NULL), CDN_ERR_IO);
    assert_true(vecfile_base(vf)[0] == 1 && vecfile_base(vf)[3] == 4); /* row 0 untouched */
    store_fail_after(1);
    assert_int_equal(vecfile_write(vf, 1, rb, 1, NULL), 0);
    cdn_err_t e;
    assert_int_equal(vecfile_sync(vf, &e), CDN_ERR_IO);
    assert_non_null(strstr(e.msg, "sync"));
    store_fail_after(-1);
    assert_int_equal(vecfile_sync(vf, NULL), 0); /* one failure, then the disk works again */
    vecfile_close(vf);
    assert_int_equal(vecfile_open(path, 4, &vf, NULL), 0);
    assert_true(vecfile_base(vf)[0] == 1 && vecfile_base(vf)[vecfile_stride(vf)] == 5);
    vecfile_close(vf);
    tu_rmrf(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_released_pages_stop_counting_and_records_read_back),
        cmocka_unit_test(test_failed_store_write_or_commit_changes_nothing),
        cmocka_unit_test(test_failed_vector_write_or_sync_is_reported_and_keeps_old_rows),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
