/* test_auditlog.c: the audit log's tables: records come back in sequence order, by index key
 * (hash collisions filtered by the reader, not here), by time through bisection, across a
 * reopen; retention by age and by size removes the oldest with their index entries; a failed
 * write appends nothing; out-of-order sequence numbers are refused; flags persist.
 * Relies on cmocka, store/auditlog.h and the store's fault hook. */
/* cmocka.h needs these four first. */
// clang-format off
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
// clang-format on

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store/auditlog.h"
#include "store/store.h"
#include "testutil.h"

#define N 500

typedef struct seen {
    uint64_t seq[N + 1];
    uint64_t time[N + 1];
    size_t n;
} seen_t;

static int collect(void *ctx, uint64_t seq, uint64_t time_us, const char *json, size_t len)
{
    seen_t *s = ctx;
    char want[64];
    snprintf(want, sizeof want, "{\"n\":%" PRIu64 "}", seq);
    assert_int_equal(len, strlen(want));
    assert_memory_equal(json, want, len); /* each record's own text */
    assert_true(s->n <= N);
    s->seq[s->n] = seq;
    s->time[s->n++] = time_us;
    return 0;
}

/* Appends records first..first+n-1 in one batch: time 1000 * seq, keys: "even"/"odd" and
 * one per record. */
static int append(auditlog_t *l, uint64_t first, size_t n)
{
    auditlog_rec_t *r = calloc(n, sizeof *r);
    char(*json)[32] = calloc(n, sizeof *json);
    uint64_t(*keys)[2] = calloc(n, sizeof *keys);
    cdn_err_t e = {0, ""};
    for (size_t i = 0; i < n; i++) {
        uint64_t seq = first + i;
        char own[32];
        snprintf(json[i], sizeof json[i], "{\"n\":%" PRIu64 "}", seq);
        snprintf(own, sizeof own, "%" PRIu64, seq);
        keys[i][0] = auditlog_key('p', seq % 2 ? "odd" : "even", NULL);
        keys[i][1] = auditlog_key('o', own, NULL);
        r[i] = (auditlog_rec_t){seq, 1000 * seq, keys[i], 2, json[i], strlen(json[i])};
    }
    int rc = auditlog_append(l, r, n, &e);
    free(r);
    free(json);
    free(keys);
    return rc;
}

static void test_append_scan_and_reopen(void **state)
{
    (void)state;
    char dir[64];
    auditlog_t *l;
    seen_t s = {0};
    cdn_err_t e = {0, ""};
    assert_non_null(tu_tmpdir(dir, sizeof dir));
    char path[128];
    snprintf(path, sizeof path, "%s/audit", dir);
    assert_int_equal(auditlog_open(path, 0, &l, &e), CDN_ERR_NOT_FOUND); /* nothing created */
    assert_int_equal(auditlog_open(path, 1, &l, &e), 0);
    assert_int_equal(auditlog_next_seq(l), 1);
    assert_int_equal(append(l, 1, N / 2), 0);
    assert_int_equal(append(l, 1 + N / 2, N / 2), 0);
    assert_int_equal(append(l, 7, 1), CDN_ERR_INTERNAL); /* out of order: refused */
    assert_int_equal(auditlog_next_seq(l), N + 1);
    auditlog_close(l);
    assert_int_equal(auditlog_open(path, 0, &l, &e), 0);
    assert_int_equal(auditlog_next_seq(l), N + 1);
    assert_int_equal(auditlog_last_time(l), 1000 * N);
    assert_int_equal(auditlog_scan(l, 0, 1, 0, collect, &s, &e), 0);
    assert_int_equal(s.n, N);
    for (size_t i = 0; i < N; i++)
        assert_int_equal(s.seq[i], i + 1);
    /* by key: the odd ones, from 100 on, before time 300000 */
    memset(&s, 0, sizeof s);
    assert_int_equal(auditlog_scan(l, auditlog_key('p', "odd", NULL), 100, 300000, collect, &s, &e),
                     0);
    assert_int_equal(s.n, 100); /* 101, 103, ..., 299 */
    for (size_t i = 0; i < s.n; i++)
        assert_int_equal(s.seq[i], 101 + 2 * i);
    memset(&s, 0, sizeof s);
    assert_int_equal(auditlog_scan(l, auditlog_key('o', "42", NULL), 1, 0, collect, &s, &e), 0);
    assert_int_equal(s.n, 1);
    assert_int_equal(s.seq[0], 42);
    /* time bisection */
    uint64_t seq;
    assert_int_equal(auditlog_seq_at(l, 0, &seq, &e), 0);
    assert_int_equal(seq, 1);
    assert_int_equal(auditlog_seq_at(l, 123500, &seq, &e), 0);
    assert_int_equal(seq, 124);
    assert_int_equal(auditlog_seq_at(l, 123000, &seq, &e), 0);
    assert_int_equal(seq, 123);
    assert_int_equal(auditlog_seq_at(l, 10000000, &seq, &e), 0);
    assert_int_equal(seq, N + 1);
    auditlog_close(l);
    tu_rmrf(dir);
}

static void test_retention_by_age_and_size(void **state)
{
    (void)state;
    char dir[64];
    auditlog_t *l;
    seen_t s = {0};
    cdn_err_t e = {0, ""};
    uint64_t removed, seq;
    assert_non_null(tu_tmpdir(dir, sizeof dir));
    assert_int_equal(auditlog_open(dir, 1, &l, &e), 0);
    assert_int_equal(append(l, 1, N), 0);
    uint64_t all = auditlog_bytes(l);
    assert_true(all > 0);
    assert_int_equal(auditlog_prune(l, 100500, 0, &removed, &e), 0); /* before 100.5 ms */
    assert_int_equal(removed, 100);
    assert_int_equal(auditlog_seq_at(l, 0, &seq, &e), 0);
    assert_int_equal(seq, 101);
    /* the removed records' index entries are gone: a key scan finds only what is left */
    assert_int_equal(auditlog_scan(l, auditlog_key('p', "even", NULL), 1, 0, collect, &s, &e), 0);
    assert_int_equal(s.n, (N - 100) / 2);
    assert_int_equal(s.seq[0], 102);
    uint64_t left = auditlog_bytes(l);
    assert_true(left < all);
    assert_int_equal(auditlog_prune(l, 0, left / 2, &removed, &e), 0);
    assert_true(removed >= (N - 100) / 2 - 1 && removed <= (N - 100) / 2 + 1);
    assert_true(auditlog_bytes(l) <= left / 2);
    /* the newest survive, and appending goes on after them */
    memset(&s, 0, sizeof s);
    assert_int_equal(auditlog_scan(l, 0, 1, 0, collect, &s, &e), 0);
    assert_int_equal(s.n, N - 100 - removed);
    assert_int_equal(s.seq[s.n - 1], N);
    assert_int_equal(append(l, N + 1, 1), 0);
    uint64_t b = auditlog_bytes(l);
    auditlog_close(l);
    assert_int_equal(auditlog_open(dir, 0, &l, &e), 0);
    assert_int_equal(auditlog_bytes(l), b); /* the count is durable with the records */
    auditlog_close(l);
    tu_rmrf(dir);
}

static void test_failed_write_appends_nothing(void **state)
{
    (void)state;
    char dir[64];
    auditlog_t *l;
    seen_t s = {0};
    cdn_err_t e = {0, ""};
    assert_non_null(tu_tmpdir(dir, sizeof dir));
    assert_int_equal(auditlog_open(dir, 1, &l, &e), 0);
    assert_int_equal(append(l, 1, 10), 0);
    uint64_t b = auditlog_bytes(l);
    /* 10 records: writes 0..29 are records and index entries, 30 the count, 31 the commit */
    const long fail_at[] = {0, 1, 30, 31};
    for (size_t i = 0; i < 4; i++) {
        store_fail_after(fail_at[i]);
        assert_int_equal(append(l, 11, 10), CDN_ERR_IO);
        store_fail_after(-1);
        assert_int_equal(auditlog_next_seq(l), 11);
        assert_int_equal(auditlog_bytes(l), b);
    }
    assert_int_equal(auditlog_scan(l, 0, 1, 0, collect, &s, &e), 0);
    assert_int_equal(s.n, 10);
    assert_int_equal(append(l, 11, 10), 0); /* the same numbers, once the disk takes them */
    auditlog_close(l);
    tu_rmrf(dir);
}

typedef struct names {
    char v[4][32];
    size_t n;
} names_t;

static int on_name(void *ctx, const char *name)
{
    names_t *n = ctx;
    assert_true(n->n < 4);
    snprintf(n->v[n->n++], sizeof n->v[0], "%s", name);
    return 0;
}

static void test_flags_persist(void **state)
{
    (void)state;
    char dir[64];
    auditlog_t *l;
    names_t n = {0};
    cdn_err_t e = {0, ""};
    assert_non_null(tu_tmpdir(dir, sizeof dir));
    assert_int_equal(auditlog_open(dir, 1, &l, &e), 0);
    assert_int_equal(auditlog_flag_set(l, "hr", 1, &e), 0);
    assert_int_equal(auditlog_flag_set(l, "docs", 1, &e), 0);
    assert_int_equal(auditlog_flag_set(l, "hr", 0, &e), 0);
    assert_int_equal(auditlog_flag_set(l, "never-set", 0, &e), 0);
    auditlog_close(l);
    assert_int_equal(auditlog_open(dir, 0, &l, &e), 0);
    assert_int_equal(auditlog_flags(l, on_name, &n, &e), 0);
    assert_int_equal(n.n, 1);
    assert_string_equal(n.v[0], "docs");
    auditlog_close(l);
    tu_rmrf(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_append_scan_and_reopen),
        cmocka_unit_test(test_retention_by_age_and_size),
        cmocka_unit_test(test_failed_write_appends_nothing),
        cmocka_unit_test(test_flags_persist),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
