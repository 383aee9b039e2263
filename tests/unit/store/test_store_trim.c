/* test_store_trim.c: the store hands back the pages LMDB keeps after a large write transaction,
 * by closing and opening the environment once no transaction is open (on its own when the last
 * one ends, or by store_trim): every record reads back, writes go on, transactions begun during
 * a trim wait for it, open ones make store_trim give up, and an environment that cannot be
 * opened again fails every later transaction with a clear error.
 * Relies on cmocka, LMDB through store.h, the C library's or a sanitizer's allocation counter. */
/* cmocka.h needs these four first. */
// clang-format off
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
// clang-format on

#include <malloc.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "store/store.h"
#include "store_testutil.h"
#include "testutil.h"

#define NREC 20000
#define VLEN STU_VLEN

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define SANITIZED 1
#endif
#endif

#ifdef SANITIZED
/* The sanitizers' allocators replace the C library's and count what they hand out. */
size_t __sanitizer_get_current_allocated_bytes(void);
static size_t heap_in_use(void)
{
    return __sanitizer_get_current_allocated_bytes();
}
#else
static size_t heap_in_use(void)
{
    return mallinfo2().uordblks + mallinfo2().hblkhd;
}
#endif

static void test_a_large_commit_hands_back_its_pages(void **state)
{
    (void)state;
    char dir[64];
    store_t *s;
    tu_tmpdir(dir, sizeof dir);
    assert_int_equal(store_open(dir, 0, &s, NULL), 0);
    /* small transactions leave the environment as it is */
    for (uint32_t i = 0; i < 100; i++)
        stu_put_range(s, i * 10, i * 10 + 10);
    assert_int_equal(store_trims(s), 0);
    size_t before = heap_in_use();
    stu_put_range(s, 0, NREC); /* about 20 MB of records: 5,000 dirty pages and more */
    size_t after = heap_in_use();
    printf("heap in use: %zu kB before the large transaction, %zu kB after it\n", before / 1024,
           after / 1024);
    assert_int_equal(store_trims(s), 1);
    assert_true(after < before + (size_t)NREC * VLEN / 20);
    assert_int_equal(stu_read_back(s, NREC), NREC);
    /* many small records count as much as many bytes: each may dirty a page of its own */
    store_txn_t *t;
    unsigned char key[8];
    assert_int_equal(store_txn_begin(s, 1, &t, NULL), 0);
    for (uint32_t i = 0; i < 30000; i++) {
        store_be32(key, 1);
        store_be32(key + 4, i * 2654435761u); /* scattered over the table's pages */
        assert_int_equal(store_put(t, STORE_ROWS, key, 8, "x", 1), 0);
    }
    assert_int_equal(store_txn_commit(t, NULL), 0);
    assert_int_equal(store_trims(s), 2);
    /* the environment opened again takes writes, and they reach the disk */
    stu_put_range(s, NREC, NREC + 10);
    store_close(s);
    assert_int_equal(store_open(dir, 0, &s, NULL), 0);
    assert_int_equal(stu_read_back(s, NREC + 10), NREC + 10);
    store_close(s);
    tu_rmrf(dir);
}

/* A reader on another thread: begins a transaction, says so, and holds it until told. The
 * threads record what they saw and the test's own thread asserts it (cmocka's assertions only
 * work on that thread). */
typedef struct holder {
    store_t *s;
    atomic_int begun, release, ended; /* ended: its transaction is ending (set just before) */
    uint32_t read;
    int begin_rc;                      /* the holder's store_txn_begin */
    int trim_rc, trimmed, ended_first; /* trim_long's store_trim and what it saw */
} holder_t;

static void *hold(void *arg)
{
    holder_t *h = arg;
    store_txn_t *t;
    const void *v;
    size_t vlen;
    unsigned char key[4];
    h->begin_rc = store_txn_begin(h->s, 0, &t, NULL);
    atomic_store(&h->begun, 1);
    if (h->begin_rc) {
        atomic_store(&h->ended, 1);
        return NULL;
    }
    while (!atomic_load(&h->release))
        usleep(1000);
    store_be32(key, 7);
    h->read = store_get(t, STORE_CHUNKS, key, 4, &v, &vlen) == 0 && vlen == VLEN;
    /* said before the end, not after: a trim waiting for this transaction may finish before
     * this thread runs its next line */
    atomic_store(&h->ended, 1);
    store_txn_abort(t);
    return NULL;
}

static void *trim_long(void *arg)
{
    holder_t *h = arg;
    h->trim_rc = store_trim(h->s, 10000, &h->trimmed, NULL);
    /* it could only close the environment once the holder had ended its transaction */
    h->ended_first = atomic_load(&h->ended);
    return NULL;
}

static void test_an_open_transaction_makes_the_trim_give_up(void **state)
{
    (void)state;
    char dir[64];
    store_t *s;
    pthread_t th;
    int trimmed = -1;
    tu_tmpdir(dir, sizeof dir);
    assert_int_equal(store_open(dir, 0, &s, NULL), 0);
    stu_put_range(s, 0, 100);
    holder_t h = {.s = s};
    assert_int_equal(pthread_create(&th, NULL, hold, &h), 0);
    while (!atomic_load(&h.begun))
        usleep(1000);
    assert_int_equal(store_trim(s, 50, &trimmed, NULL), 0);
    assert_int_equal(trimmed, 0); /* nothing closed under the reader */
    atomic_store(&h.release, 1);
    pthread_join(th, NULL);
    assert_int_equal(h.read, 1);
    assert_int_equal(store_trim(s, 50, &trimmed, NULL), 0);
    assert_int_equal(trimmed, 1);
    assert_int_equal(stu_read_back(s, 100), 100);
    store_close(s);
    tu_rmrf(dir);
}

static void test_the_pages_go_back_when_the_last_reader_ends(void **state)
{
    (void)state;
    char dir[64];
    store_t *s;
    pthread_t th;
    tu_tmpdir(dir, sizeof dir);
    assert_int_equal(store_open(dir, 0, &s, NULL), 0);
    stu_put_range(s, 0, 100);
    holder_t h = {.s = s};
    assert_int_equal(pthread_create(&th, NULL, hold, &h), 0);
    while (!atomic_load(&h.begun))
        usleep(1000);
    size_t before = heap_in_use();
    stu_put_range(s, 0, NREC);
    size_t kept = heap_in_use();
    assert_int_equal(store_trims(s), 0); /* not under the reader */
    atomic_store(&h.release, 1);
    pthread_join(th, NULL);
    assert_int_equal(h.read, 1);
    size_t after = heap_in_use();
    printf("heap in use: %zu kB before, %zu kB with a reader open, %zu kB after it ended\n",
           before / 1024, kept / 1024, after / 1024);
    assert_int_equal(store_trims(s), 1);
    assert_true(kept > before + (size_t)NREC * VLEN / 2);
    assert_true(after < before + (size_t)NREC * VLEN / 20);
    assert_int_equal(stu_read_back(s, NREC), NREC);
    store_close(s);
    tu_rmrf(dir);
}

static void test_transactions_begun_during_a_trim_wait_for_it(void **state)
{
    (void)state;
    char dir[64];
    store_t *s;
    pthread_t th_hold, th_trim;
    tu_tmpdir(dir, sizeof dir);
    assert_int_equal(store_open(dir, 0, &s, NULL), 0);
    stu_put_range(s, 0, 100);
    holder_t h = {.s = s};
    assert_int_equal(pthread_create(&th_hold, NULL, hold, &h), 0);
    while (!atomic_load(&h.begun))
        usleep(1000);
    assert_int_equal(pthread_create(&th_trim, NULL, trim_long, &h), 0);
    usleep(20000); /* the trim is draining now, or soon: either way the reads below are whole */
    atomic_store(&h.release, 1);
    /* begun while the trim drains or after it: on the environment opened again */
    assert_int_equal(stu_read_back(s, 100), 100);
    stu_put_range(s, 100, 110);
    pthread_join(th_trim, NULL);
    pthread_join(th_hold, NULL);
    assert_int_equal(h.begin_rc, 0);
    assert_int_equal(h.trim_rc, 0);
    assert_int_equal(h.trimmed, 1);
    assert_int_equal(h.ended_first, 1);
    assert_int_equal(h.read, 1);
    assert_int_equal(stu_read_back(s, 110), 110);
    store_close(s);
    tu_rmrf(dir);
}

static void test_an_environment_not_opened_again_fails_later_transactions(void **state)
{
    (void)state;
    char dir[64];
    store_t *s;
    store_txn_t *t;
    cdn_err_t err = {0};
    int trimmed = -1;
    tu_tmpdir(dir, sizeof dir);
    assert_int_equal(store_open(dir, 0, &s, NULL), 0);
    stu_put_range(s, 0, 100);
    store_fail_after(0); /* the open after the close */
    assert_int_equal(store_trim(s, 50, &trimmed, &err), CDN_ERR_IO);
    store_fail_after(-1);
    assert_int_equal(trimmed, 0);
    assert_non_null(strstr(err.msg, "again"));
    memset(&err, 0, sizeof err);
    assert_int_equal(store_txn_begin(s, 0, &t, &err), CDN_ERR_IO);
    assert_non_null(strstr(err.msg, "reopen the data directory"));
    assert_int_equal(store_check(s, NULL), CDN_ERR_IO);
    assert_int_equal(store_trim(s, 50, &trimmed, NULL), CDN_ERR_IO);
    store_close(s);
    /* nothing was lost: the directory opens and every record is there */
    assert_int_equal(store_open(dir, 0, &s, NULL), 0);
    assert_int_equal(stu_read_back(s, 100), 100);
    store_close(s);
    tu_rmrf(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_a_large_commit_hands_back_its_pages),
        cmocka_unit_test(test_the_pages_go_back_when_the_last_reader_ends),
        cmocka_unit_test(test_an_open_transaction_makes_the_trim_give_up),
        cmocka_unit_test(test_transactions_begun_during_a_trim_wait_for_it),
        cmocka_unit_test(test_an_environment_not_opened_again_fails_later_transactions),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
