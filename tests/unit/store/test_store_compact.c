/* test_store_compact.c: store_compact_file gives the database file's free pages back to the disk:
 * the file shrinks, every record reads back before and after a reopen, a write begun during the
 * copy waits for the switch and survives it, and nothing changes when a reader stays open, when
 * another process has the database open, or when the copy or the switch fails; a copy left by a
 * kill is removed at open. Relies on cmocka, LMDB through store.h, fork. */
/* cmocka.h needs these four first. */
// clang-format off
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
// clang-format on

#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "store/store.h"
#include "store_testutil.h"
#include "testutil.h"

#define NREC 20000
#define KEPT 2000 /* records [0, KEPT) stay; the others are deleted */
#define VLEN STU_VLEN

/* 1 when record i is absent. */
static int absent(store_t *s, uint32_t i)
{
    store_txn_t *t;
    unsigned char key[4];
    const void *v;
    size_t vlen;
    store_be32(key, i);
    assert_int_equal(store_txn_begin(s, 0, &t, NULL), 0);
    int rc = store_get(t, STORE_CHUNKS, key, 4, &v, &vlen);
    store_txn_abort(t);
    return rc == CDN_ERR_NOT_FOUND;
}

static long long file_bytes(const char *dir, const char *name)
{
    char path[128];
    struct stat st;
    snprintf(path, sizeof path, "%s/%s", dir, name);
    return stat(path, &st) == 0 ? (long long)st.st_size : -1;
}

/* A store in dir with records [0, KEPT) and most of its pages free. */
static store_t *make_sparse(const char *dir)
{
    store_t *s;
    store_txn_t *t;
    unsigned char key[4];
    assert_int_equal(store_open(dir, 0, &s, NULL), 0);
    stu_put_range(s, 0, NREC);
    assert_int_equal(store_txn_begin(s, 1, &t, NULL), 0);
    for (uint32_t i = KEPT; i < NREC; i++) {
        store_be32(key, i);
        assert_int_equal(store_del(t, STORE_CHUNKS, key, 4), 0);
    }
    assert_int_equal(store_txn_commit(t, NULL), 0);
    return s;
}

static void test_the_file_shrinks_and_keeps_every_record(void **state)
{
    (void)state;
    char dir[64];
    uint64_t used, free_bytes, used2, free2;
    int done = -1;
    tu_tmpdir(dir, sizeof dir);
    store_t *s = make_sparse(dir);
    long long before = file_bytes(dir, "data.mdb");
    assert_int_equal(store_file_bytes(s, &used, &free_bytes), 0);
    assert_true(free_bytes * 4 > used * 3); /* 18,000 of 20,000 records deleted */
    assert_int_equal(store_compact_file(s, 1000, &done, NULL), 0);
    assert_int_equal(done, 1);
    long long after = file_bytes(dir, "data.mdb");
    assert_int_equal(store_file_bytes(s, &used2, &free2), 0);
    printf("data.mdb %lld -> %lld bytes; bytes in use %llu (%llu free) -> %llu (%llu free)\n",
           before, after, (unsigned long long)used, (unsigned long long)free_bytes,
           (unsigned long long)used2, (unsigned long long)free2);
    assert_true(after * 4 < before);
    assert_true(used2 <= used - free_bytes + 8 * 4096);
    assert_int_equal(file_bytes(dir, STORE_COMPACT_TMP), -1);
    assert_int_equal(stu_read_back(s, KEPT), KEPT);
    assert_true(absent(s, KEPT) && absent(s, NREC - 1));
    /* writes go on, and with everything else survive a reopen */
    stu_put_range(s, NREC, NREC + 10);
    store_close(s);
    assert_int_equal(store_open(dir, 0, &s, NULL), 0);
    assert_int_equal(stu_read_back(s, KEPT), KEPT);
    assert_true(absent(s, KEPT));
    store_txn_t *t;
    const void *v;
    size_t vlen;
    unsigned char key[4];
    store_be32(key, NREC + 9);
    assert_int_equal(store_txn_begin(s, 0, &t, NULL), 0);
    assert_int_equal(store_get(t, STORE_CHUNKS, key, 4, &v, &vlen), 0);
    store_txn_abort(t);
    store_close(s);
    tu_rmrf(dir);
}

typedef struct writer {
    store_t *s;
    atomic_int go, wrote;
} writer_t;

static void *write_during(void *arg)
{
    writer_t *w = arg;
    while (!atomic_load(&w->go))
        usleep(100);
    stu_put_range(w->s, NREC, NREC + 1); /* begins during the copy or after the switch */
    atomic_store(&w->wrote, 1);
    return NULL;
}

static void test_a_write_during_the_copy_waits_and_survives(void **state)
{
    (void)state;
    char dir[64];
    pthread_t th;
    int done = -1;
    tu_tmpdir(dir, sizeof dir);
    store_t *s = make_sparse(dir);
    writer_t w = {.s = s};
    assert_int_equal(pthread_create(&th, NULL, write_during, &w), 0);
    atomic_store(&w.go, 1);
    assert_int_equal(store_compact_file(s, 1000, &done, NULL), 0);
    pthread_join(th, NULL);
    assert_int_equal(atomic_load(&w.wrote), 1);
    store_close(s);
    /* whether the write landed before the copy began or waited for the switch, it is there */
    assert_int_equal(store_open(dir, 0, &s, NULL), 0);
    assert_int_equal(stu_read_back(s, KEPT), KEPT);
    assert_false(absent(s, NREC));
    store_close(s);
    tu_rmrf(dir);
}

typedef struct reader {
    store_t *s;
    atomic_int begun, release;
} reader_t;

static void *hold_read(void *arg)
{
    reader_t *r = arg;
    store_txn_t *t;
    assert_int_equal(store_txn_begin(r->s, 0, &t, NULL), 0);
    atomic_store(&r->begun, 1);
    while (!atomic_load(&r->release))
        usleep(1000);
    store_txn_abort(t);
    return NULL;
}

static void test_nothing_changes_while_a_reader_stays_open(void **state)
{
    (void)state;
    char dir[64];
    pthread_t th;
    int done = -1;
    tu_tmpdir(dir, sizeof dir);
    store_t *s = make_sparse(dir);
    long long before = file_bytes(dir, "data.mdb");
    reader_t r = {.s = s};
    assert_int_equal(pthread_create(&th, NULL, hold_read, &r), 0);
    while (!atomic_load(&r.begun))
        usleep(1000);
    assert_int_equal(store_compact_file(s, 50, &done, NULL), 0);
    assert_int_equal(done, 0);
    assert_int_equal(file_bytes(dir, "data.mdb"), before);
    assert_int_equal(file_bytes(dir, STORE_COMPACT_TMP), -1);
    atomic_store(&r.release, 1);
    pthread_join(th, NULL);
    assert_int_equal(stu_read_back(s, KEPT), KEPT);
    stu_put_range(s, NREC, NREC + 1); /* writes were let go */
    store_close(s);
    tu_rmrf(dir);
}

static void test_nothing_changes_while_another_process_has_it_open(void **state)
{
    (void)state;
    char dir[64];
    int done = -1, ready[2], quit[2];
    char c;
    tu_tmpdir(dir, sizeof dir);
    store_t *s = make_sparse(dir);
    long long before = file_bytes(dir, "data.mdb");
    assert_int_equal(pipe(ready), 0);
    assert_int_equal(pipe(quit), 0);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        store_t *other;
        if (store_open(dir, 0, &other, NULL) != 0)
            _exit(2);
        if (write(ready[1], "r", 1) != 1 || read(quit[0], &c, 1) != 1)
            _exit(3);
        _exit(stu_read_back(other, KEPT) == KEPT ? 0 : 4); /* still reads its file */
    }
    assert_int_equal(read(ready[0], &c, 1), 1);
    assert_int_equal(store_compact_file(s, 1000, &done, NULL), 0);
    assert_int_equal(done, 0);
    assert_int_equal(file_bytes(dir, "data.mdb"), before);
    assert_int_equal(file_bytes(dir, STORE_COMPACT_TMP), -1);
    assert_int_equal(stu_read_back(s, KEPT), KEPT);
    assert_int_equal(write(quit[1], "q", 1), 1);
    int status = -1;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 0);
    close(ready[0]);
    close(ready[1]);
    close(quit[0]);
    close(quit[1]);
    /* once it has gone, the compaction goes ahead */
    assert_int_equal(store_compact_file(s, 1000, &done, NULL), 0);
    assert_int_equal(done, 1);
    assert_int_equal(stu_read_back(s, KEPT), KEPT);
    store_close(s);
    tu_rmrf(dir);
}

static void test_a_failed_copy_or_switch_changes_nothing(void **state)
{
    (void)state;
    char dir[64];
    cdn_err_t err = {0};
    int done = -1;
    tu_tmpdir(dir, sizeof dir);
    store_t *s = make_sparse(dir);
    for (long n = 0; n < 2; n++) { /* 0: the copy fails; 1: the switch does */
        long long before = file_bytes(dir, "data.mdb");
        store_fail_after(n);
        int rc = store_compact_file(s, 1000, &done, &err);
        store_fail_after(-1);
        assert_int_equal(done, 0);
        assert_int_equal(rc, n == 0 ? CDN_ERR_IO : CDN_OK);
        if (n == 0)
            assert_non_null(strstr(err.msg, "compacted copy"));
        assert_int_equal(file_bytes(dir, "data.mdb"), before);
        assert_int_equal(file_bytes(dir, STORE_COMPACT_TMP), -1);
        assert_int_equal(stu_read_back(s, KEPT), KEPT);
        stu_put_range(s, NREC + (uint32_t)n, NREC + (uint32_t)n + 1);
    }
    store_close(s);
    tu_rmrf(dir);
}

static void test_a_copy_left_by_a_kill_is_removed_at_open(void **state)
{
    (void)state;
    char dir[64], tmp[128];
    tu_tmpdir(dir, sizeof dir);
    store_t *s = make_sparse(dir);
    store_close(s);
    snprintf(tmp, sizeof tmp, "%s/%s", dir, STORE_COMPACT_TMP);
    FILE *f = fopen(tmp, "w");
    assert_non_null(f);
    fputs("half a copy", f);
    fclose(f);
    assert_int_equal(store_open(dir, 0, &s, NULL), 0);
    assert_int_equal(file_bytes(dir, STORE_COMPACT_TMP), -1);
    assert_int_equal(stu_read_back(s, KEPT), KEPT);
    store_close(s);
    tu_rmrf(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_the_file_shrinks_and_keeps_every_record),
        cmocka_unit_test(test_a_write_during_the_copy_waits_and_survives),
        cmocka_unit_test(test_nothing_changes_while_a_reader_stays_open),
        cmocka_unit_test(test_nothing_changes_while_another_process_has_it_open),
        cmocka_unit_test(test_a_failed_copy_or_switch_changes_nothing),
        cmocka_unit_test(test_a_copy_left_by_a_kill_is_removed_at_open),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
