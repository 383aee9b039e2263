/* test_acl_index.c: the per-collection ACL index on its own: allowed sets (union of allow
 * bitmaps minus deny bitmaps, within live rows), their memo following every write (a stale
 * memo would hide new rows or keep revoked ones), concurrent readers, and the interned ACLs
 * (shared by content, counted, freed and their slots reused, checked against a model), their
 * byte form, the memory they take, the arena's compaction and acl_index_compact (which drops
 * the hash that finds ACLs by content; the next set rebuilds it). Relies on cmocka, CRoaring,
 * pthreads and cdn_mem_fail_after. */
/* cmocka.h needs these four first. */
// clang-format off
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
// clang-format on

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "acl/acl.h"
#include "acl/enc.h"
#include "base/err.h"
#include "base/mem.h"

#define ROWS 3000
#define PRINCIPALS 40

/* Row r is allowed to principals r % 10 and 10 + r % 30; rows divisible by 7 deny 39. */
static void fill(acl_index_t *x)
{
    for (uint32_t r = 0; r < ROWS; r++) {
        uint32_t p[5] = {2, r % 7 == 0, r % 10, 10 + r % 30, 39};
        assert_int_equal(acl_index_set(x, r, p), 0);
    }
}

/* The allowed set by brute force over the rows' own ACLs. */
static roaring_bitmap_t *brute(const acl_index_t *x, const uint32_t *view, size_t n)
{
    uint32_t sorted[PRINCIPALS * 2];
    for (size_t i = 0; i < n; i++)
        sorted[i] = view[i];
    for (size_t i = 1; i < n; i++) /* insertion sort: acl_index_check wants a sorted view */
        for (size_t j = i; j > 0 && sorted[j - 1] > sorted[j]; j--) {
            uint32_t t = sorted[j];
            sorted[j] = sorted[j - 1];
            sorted[j - 1] = t;
        }
    roaring_bitmap_t *b = roaring_bitmap_create();
    for (uint32_t r = 0; r < ROWS + 1000; r++) /* fill's rows and some tests' extra ones */
        if (acl_index_check(x, r, sorted, n))
            roaring_bitmap_add(b, r);
    return b;
}

static void expect(const acl_index_t *x, const uint32_t *view, size_t n)
{
    roaring_bitmap_t *got = NULL, *want = brute(x, view, n);
    assert_int_equal(acl_index_allowed(x, view, n, &got), 0);
    assert_true(roaring_bitmap_equals(got, want));
    roaring_bitmap_free(got);
    roaring_bitmap_free(want);
}

/* Row's ACL reads back as exactly packed (length and words). */
static void expect_acl(const acl_index_t *x, uint32_t row, const uint32_t *packed)
{
    uint32_t buf[2 + ACL_MAX_PRINCIPALS];
    size_t len = acl_packed_len(packed);
    assert_int_equal(acl_index_get(x, row, buf, sizeof buf / sizeof *buf), len);
    assert_memory_equal(buf, packed, len * sizeof *buf);
}

static void test_allowed_is_the_union_minus_denied_within_live(void **state)
{
    (void)state;
    acl_index_t *x;
    assert_int_equal(acl_index_create(&x), 0);
    fill(x);
    uint32_t one[] = {3}, two[] = {3, 12}, deny[] = {3, 12, 39}, none[] = {35 + 100};
    expect(x, one, 1);
    expect(x, two, 2);
    expect(x, deny, 3); /* 39 denies the rows divisible by 7 */
    expect(x, none, 1); /* a principal no row names */
    acl_index_remove(x, 3);
    expect(x, two, 2);
    roaring_bitmap_t *got;
    assert_int_equal(acl_index_allowed(x, deny, 3, &got), 0);
    assert_false(roaring_bitmap_contains(got, 3));
    assert_false(roaring_bitmap_contains(got, 63)); /* allowed to 3, denied by 39 */
    roaring_bitmap_free(got);
    acl_index_free(x);
}

/* A view asked twice is answered from the memo; every write to the index must show in the very
 * next answer, whatever the memo held. */
static void test_memoized_sets_follow_every_write(void **state)
{
    (void)state;
    acl_index_t *x;
    assert_int_equal(acl_index_create(&x), 0);
    fill(x);
    uint32_t view[] = {12, 4}, permuted[] = {4, 12};
    roaring_bitmap_t *a, *b;
    assert_int_equal(acl_index_allowed(x, view, 2, &a), 0);
    roaring_bitmap_add(a, ROWS + 5); /* the caller owns its copy: the memo must not change */
    assert_int_equal(acl_index_allowed(x, permuted, 2, &b), 0);
    assert_false(roaring_bitmap_contains(b, ROWS + 5));
    roaring_bitmap_free(a);
    roaring_bitmap_free(b);
    expect(x, view, 2);
    /* Revoke: row 4 (allowed to 4 and 14) now allowed to 5 only. */
    uint32_t p5[] = {1, 0, 5};
    assert_int_equal(acl_index_set(x, 4, p5), 0);
    assert_int_equal(acl_index_allowed(x, view, 2, &a), 0);
    assert_false(roaring_bitmap_contains(a, 4));
    roaring_bitmap_free(a);
    expect(x, view, 2);
    /* Grant: a new row for 12. */
    uint32_t p12[] = {1, 0, 12};
    assert_int_equal(acl_index_set(x, ROWS + 1, p12), 0);
    assert_int_equal(acl_index_allowed(x, permuted, 2, &a), 0);
    assert_true(roaring_bitmap_contains(a, ROWS + 1));
    roaring_bitmap_free(a);
    /* Deny: row 14 (allowed to 4) gains a deny of 12. */
    uint32_t pd[] = {1, 1, 4, 12};
    assert_int_equal(acl_index_set(x, 14, pd), 0);
    assert_int_equal(acl_index_allowed(x, view, 2, &a), 0);
    assert_false(roaring_bitmap_contains(a, 14));
    roaring_bitmap_free(a);
    /* Delete. */
    acl_index_remove(x, 24); /* allowed to 4 */
    assert_int_equal(acl_index_allowed(x, view, 2, &a), 0);
    assert_false(roaring_bitmap_contains(a, 24));
    roaring_bitmap_free(a);
    expect(x, view, 2);
    acl_index_free(x);
}

/* More distinct views than the memo holds, and views longer than it keeps, stay right. */
static void test_many_and_long_views_stay_right(void **state)
{
    (void)state;
    acl_index_t *x;
    assert_int_equal(acl_index_create(&x), 0);
    fill(x);
    for (uint32_t round = 0; round < 3; round++)
        for (uint32_t a = 0; a < 20; a++) {
            uint32_t v[] = {a, 10 + (a * 7) % 30, 39 - round};
            expect(x, v, 3);
        }
    uint32_t longv[PRINCIPALS * 2];
    for (uint32_t i = 0; i < PRINCIPALS * 2; i++)
        longv[i] = (i * 13) % PRINCIPALS; /* 80 ids, with repeats */
    expect(x, longv, PRINCIPALS * 2);
    acl_index_free(x);
}

typedef struct reader {
    const acl_index_t *x;
    roaring_bitmap_t *want[4];
    int wrong;
} reader_t;

static const uint32_t views[4][3] = {{1, 11, 21}, {2, 12, 39}, {3, 13, 23}, {5, 15, 25}};

static void *read_loop(void *arg)
{
    reader_t *r = arg;
    for (int i = 0; i < 3000; i++) {
        roaring_bitmap_t *got = NULL;
        if (acl_index_allowed(r->x, views[i % 4], 3, &got) != 0 ||
            !roaring_bitmap_equals(got, r->want[i % 4]))
            r->wrong++;
        roaring_bitmap_free(got);
    }
    return NULL;
}

/* Searches ask the index from many threads at once (under the collection's read lock): the
 * memo they share must hand each the right set. */
static void test_concurrent_readers_get_the_right_sets(void **state)
{
    (void)state;
    acl_index_t *x;
    assert_int_equal(acl_index_create(&x), 0);
    fill(x);
    reader_t r[4];
    pthread_t th[4];
    for (int t = 0; t < 4; t++) {
        r[t].x = x;
        r[t].wrong = 0;
        for (int v = 0; v < 4; v++)
            r[t].want[v] = brute(x, views[v], 3);
        assert_int_equal(pthread_create(&th[t], NULL, read_loop, &r[t]), 0);
    }
    for (int t = 0; t < 4; t++) {
        pthread_join(th[t], NULL);
        assert_int_equal(r[t].wrong, 0);
        for (int v = 0; v < 4; v++)
            roaring_bitmap_free(r[t].want[v]);
    }
    acl_index_free(x);
}

/* Equal ACLs are stored once, by content (not by the caller's pointer): the index's memory at
 * 1M rows depends on the chunks of a document sharing the document's ACL. */
static void test_rows_with_equal_acls_share_one_entry(void **state)
{
    (void)state;
    acl_index_t *x;
    assert_int_equal(acl_index_create(&x), 0);
    for (uint32_t r = 0; r < 1000; r++) {
        uint32_t p[] = {2, 1, 7, 8, 9}; /* a fresh buffer for every row */
        assert_int_equal(acl_index_set(x, r, p), 0);
    }
    assert_int_equal(acl_index_distinct(x), 1);
    assert_int_not_equal(acl_index_entry_of(x, 0), 0);
    assert_int_equal(acl_index_entry_of(x, 0), acl_index_entry_of(x, 999));
    /* The same ids split otherwise between allowed and denied: another ACL. */
    uint32_t q[] = {1, 2, 7, 8, 9}, v7[] = {7}, v78[] = {7, 8};
    assert_int_equal(acl_index_set(x, 1000, q), 0);
    assert_int_equal(acl_index_distinct(x), 2);
    assert_int_not_equal(acl_index_entry_of(x, 1000), acl_index_entry_of(x, 0));
    expect_acl(x, 1000, q);
    assert_int_equal(acl_index_check(x, 0, v78, 2), 1);
    assert_int_equal(acl_index_check(x, 1000, v7, 1), 1);
    assert_int_equal(acl_index_check(x, 1000, v78, 2), 0); /* 8 denies it */
    acl_index_free(x);

    /* fill's rows: one entry per distinct (denies 39, r % 10, r % 30), the same for each row. */
    uint32_t first[2][30];
    size_t want = 0;
    memset(first, 0xff, sizeof first);
    assert_int_equal(acl_index_create(&x), 0);
    fill(x);
    for (uint32_t r = 0; r < ROWS; r++) {
        uint32_t *f = &first[r % 7 == 0][r % 30]; /* r % 30 fixes r % 10 */
        if (*f == UINT32_MAX) {
            *f = r;
            want++;
        }
        assert_int_equal(acl_index_entry_of(x, r), acl_index_entry_of(x, *f));
    }
    assert_int_equal(acl_index_distinct(x), want);
    acl_index_free(x);
}

/* One of 10,000 ACLs, all distinct: allowed to i % 100 and 100 + i / 100. */
static void cycled_acl(uint32_t i, uint32_t p[4])
{
    p[0] = 2;
    p[1] = 0;
    p[2] = i % 100;
    p[3] = 100 + i / 100;
}

/* A row whose ACL keeps changing holds one entry, not one per ACL it ever had, and loses it on
 * delete: the last reference frees the entry. */
static void test_changing_a_rows_acl_keeps_only_the_acls_in_use(void **state)
{
    (void)state;
    acl_index_t *x;
    uint32_t fixed[] = {1, 0, 3}, p[4], prev[4];
    assert_int_equal(acl_index_create(&x), 0);
    assert_int_equal(acl_index_set(x, 5, fixed), 0);
    cycled_acl(0, prev);
    assert_int_equal(acl_index_set(x, 0, prev), 0);
    for (uint32_t i = 1; i < 10000; i++) {
        cycled_acl(i, p);
        assert_int_equal(acl_index_set(x, 0, p), 0);
        assert_int_equal(acl_index_distinct(x), 2);
        uint32_t now[] = {p[2], p[3]}, before[] = {prev[2]};
        assert_int_equal(acl_index_check(x, 0, now, 2), 1);
        if (prev[2] != p[2] && prev[2] != p[3])
            assert_int_equal(acl_index_check(x, 0, before, 1), 0);
        memcpy(prev, p, sizeof p);
    }
    assert_int_equal(acl_index_set(x, 0, p), 0); /* the ACL it has: still one entry */
    assert_int_equal(acl_index_distinct(x), 2);
    acl_index_remove(x, 0);
    assert_int_equal(acl_index_distinct(x), 1);
    acl_index_remove(x, 0);  /* twice: nothing more to drop */
    acl_index_remove(x, 77); /* never written */
    assert_int_equal(acl_index_distinct(x), 1);
    expect_acl(x, 5, fixed);
    acl_index_remove(x, 5);
    assert_int_equal(acl_index_distinct(x), 0);
    assert_int_equal(acl_index_get(x, 5, p, 4), 0);
    assert_int_equal(acl_index_entry_of(x, 5), 0);
    assert_int_equal(acl_index_set(x, 5, fixed), 0);
    assert_int_equal(acl_index_distinct(x), 1);
    acl_index_free(x);
}

/* The table does not grow under a workload that keeps changing ACLs: giving a row a new ACL
 * takes the slot its previous one freed, so the row only ever holds entries 2 and 3. Once the
 * table has room a set needs at most one allocation (the byte arena's growth; a compaction that
 * fails is skipped), so it succeeds with every second allocation failing. */
static void test_changing_acls_reuses_freed_slots(void **state)
{
    (void)state;
    acl_index_t *x;
    uint32_t fixed[] = {1, 0, 3}, p[4];
    assert_int_equal(acl_index_create(&x), 0);
    assert_int_equal(acl_index_set(x, 5, fixed), 0);
    for (uint32_t i = 0; i < 10000; i++) { /* every principal and slot the cycle needs */
        cycled_acl(i, p);
        assert_int_equal(acl_index_set(x, 0, p), 0);
    }
    for (uint32_t i = 0; i < 10000; i++) {
        cycled_acl(i, p);
        cdn_mem_fail_after(1);
        int rc = acl_index_set(x, 0, p);
        cdn_mem_fail_after(-1);
        assert_int_equal(rc, 0);
        expect_acl(x, 0, p);
        assert_in_range(acl_index_entry_of(x, 0), 2, 3); /* row 5 holds entry 1 */
    }
    assert_int_equal(acl_index_distinct(x), 2);
    acl_index_free(x);
}

/* A freed entry's slot goes to the next new ACL: the row that held it before must not read
 * through it, and the row that holds it now must read only its new principals. */
static void test_a_reused_slot_serves_only_its_new_acl(void **state)
{
    (void)state;
    acl_index_t *x;
    uint32_t a[] = {1, 0, 10}, b[] = {1, 0, 20}, c[] = {1, 0, 30};
    uint32_t v10[] = {10}, v20[] = {20}, v30[] = {30}, all[] = {10, 11, 12, 20, 30};
    assert_int_equal(acl_index_create(&x), 0);
    /* Freed by a delete: row 1's entry goes, row 2's next ACL takes its slot. */
    assert_int_equal(acl_index_set(x, 1, a), 0);
    assert_int_equal(acl_index_set(x, 2, b), 0);
    acl_index_remove(x, 1);
    assert_int_equal(acl_index_set(x, 2, c), 0);
    assert_int_equal(acl_index_get(x, 1, v10, 0), 0);
    assert_int_equal(acl_index_check(x, 1, all, 5), 0);
    assert_int_equal(acl_index_check(x, 2, v30, 1), 1);
    assert_int_equal(acl_index_check(x, 2, v20, 1), 0);
    assert_int_equal(acl_index_check(x, 2, v10, 1), 0);
    assert_int_equal(acl_index_distinct(x), 1);
    expect(x, v10, 1);
    expect(x, v30, 1);
    /* Row 1's old ACL again: a new entry with its own content, row 2 unchanged. */
    assert_int_equal(acl_index_set(x, 3, a), 0);
    expect_acl(x, 3, a);
    assert_int_equal(acl_index_check(x, 3, v10, 1), 1);
    assert_int_equal(acl_index_check(x, 2, v10, 1), 0);
    assert_int_equal(acl_index_distinct(x), 2);
    acl_index_free(x);

    /* Freed by an overwrite: row 1 moves from 10 to 11, row 2 from 20 to 12 (the freed slot). */
    uint32_t a2[] = {1, 0, 11}, b2[] = {1, 0, 12}, v11[] = {11}, v12[] = {12};
    assert_int_equal(acl_index_create(&x), 0);
    assert_int_equal(acl_index_set(x, 1, a), 0);
    assert_int_equal(acl_index_set(x, 2, b), 0);
    assert_int_equal(acl_index_set(x, 1, a2), 0);
    assert_int_equal(acl_index_set(x, 2, b2), 0);
    assert_int_equal(acl_index_check(x, 1, v10, 1), 0);
    assert_int_equal(acl_index_check(x, 1, v11, 1), 1);
    assert_int_equal(acl_index_check(x, 1, v12, 1), 0);
    assert_int_equal(acl_index_check(x, 2, v12, 1), 1);
    assert_int_equal(acl_index_check(x, 2, v20, 1), 0);
    assert_int_equal(acl_index_check(x, 2, v10, 1), 0);
    assert_int_equal(acl_index_distinct(x), 2);
    expect(x, all, 5);
    acl_index_remove(x, 1);
    assert_int_equal(acl_index_check(x, 1, all, 5), 0);
    assert_int_equal(acl_index_check(x, 2, v12, 1), 1);
    acl_index_free(x);
}

/* Thousands of distinct ACLs (the buckets double several times, chains collide), half of them
 * freed from the middle of their chains: the rest are still found by content. */
static void test_entries_are_found_after_others_leave_their_chains(void **state)
{
    (void)state;
    acl_index_t *x;
    assert_int_equal(acl_index_create(&x), 0);
    for (uint32_t r = 0; r < 5000; r++) {
        uint32_t p[] = {2, 1, r % 97, 100 + r / 97, 200 + r % 3};
        assert_int_equal(acl_index_set(x, r, p), 0);
    }
    assert_int_equal(acl_index_distinct(x), 5000);
    for (uint32_t r = 1; r < 5000; r += 2)
        acl_index_remove(x, r);
    assert_int_equal(acl_index_distinct(x), 2500);
    for (uint32_t r = 0; r < 5000; r++) { /* row 5000 + r gets row r's ACL */
        uint32_t p[] = {2, 1, r % 97, 100 + r / 97, 200 + r % 3};
        assert_int_equal(acl_index_set(x, 5000 + r, p), 0);
        expect_acl(x, 5000 + r, p);
        if (r % 2 == 0)
            assert_int_equal(acl_index_entry_of(x, 5000 + r), acl_index_entry_of(x, r));
    }
    assert_int_equal(acl_index_distinct(x), 5000);
    acl_index_free(x);
}

/* A set that runs out of memory before changing anything leaves the row's previous ACL in force
 * and the table as it was; a later set works. Fails each allocation of the set in turn, with
 * the entry arrays, the buckets and the byte arena full so the set must grow all of them; then
 * again after acl_index_compact, so the set must first rebuild the hash. */
static void test_out_of_memory_leaves_the_previous_acl(void **state)
{
    (void)state;
    uint32_t fresh[] = {2, 1, 4, 200, 5}, v4[] = {4}, v0[] = {0};
    for (int variant = 0; variant < 4; variant++) {
        int target = variant % 2, compacted = variant / 2;
        uint32_t row = target ? 100 : 0; /* an existing row, then one past the rows' array */
        int failed = 0, done = 0;
        for (long n = 0; n < 32 && !done; n++) {
            acl_index_t *x;
            assert_int_equal(acl_index_create(&x), 0);
            for (uint32_t r = 0; r < 64; r++) { /* 4 bytes each: the arena's 256 are full */
                uint32_t p[] = {2, 0, r, 64 + r};
                assert_int_equal(acl_index_set(x, r, p), 0);
            }
            if (compacted)
                acl_index_compact(x); /* arrays trimmed to 64 entries, hash dropped */
            cdn_mem_fail_after(n);
            int rc = acl_index_set(x, row, fresh);
            cdn_mem_fail_after(-1);
            if (rc) {
                assert_int_equal(rc, CDN_ERR_NOMEM);
                failed++;
                assert_int_equal(acl_index_distinct(x), 64);
                assert_int_equal(acl_index_check(x, row, v4, 1), 0);
                assert_int_equal(acl_index_check(x, row, v0, 1), !target);
                assert_int_equal(roaring_bitmap_contains(acl_index_live(x), row), !target);
                assert_int_equal(acl_index_set(x, row, fresh), 0);
            }
            done = !rc;
            expect_acl(x, row, fresh);
            assert_int_equal(acl_index_distinct(x), target ? 65 : 64);
            assert_int_equal(acl_index_check(x, row, v4, 1), 1);
            assert_int_equal(acl_index_check(x, row, v0, 1), 0);
            for (uint32_t r = 1; r < 64; r++) {
                uint32_t v[] = {r};
                assert_int_equal(acl_index_check(x, r, v, 1), 1);
            }
            expect(x, v4, 1);
            acl_index_free(x);
        }
        assert_true(done);
        assert_true(failed > (compacted ? 2 : 0)); /* past the rebuild's two allocations */
    }
}

/* A set after acl_index_compact first rebuilds the hash, in two allocations (chain links and
 * buckets); one of an ACL the index holds needs nothing else. Either failing leaves the row's
 * previous ACL in force and the index without its hash (its memory unchanged); the next set
 * rebuilds it and finds the entry the ACL already has. */
static void test_out_of_memory_in_the_rebuild_leaves_the_previous_acl(void **state)
{
    (void)state;
    uint32_t had[] = {2, 0, 0, 64}, p5[] = {2, 0, 5, 69}, v0[] = {0}, v5[] = {5};
    for (long n = 0; n < 3; n++) {
        acl_index_t *x;
        size_t compacted;
        assert_int_equal(acl_index_create(&x), 0);
        for (uint32_t r = 0; r < 64; r++) {
            uint32_t p[] = {2, 0, r, 64 + r};
            assert_int_equal(acl_index_set(x, r, p), 0);
        }
        acl_index_compact(x);
        compacted = acl_index_memory(x);
        cdn_mem_fail_after(n);
        int rc = acl_index_set(x, 0, p5);
        cdn_mem_fail_after(-1);
        if (n < 2) {
            assert_int_equal(rc, CDN_ERR_NOMEM);
            assert_int_equal(acl_index_memory(x), compacted);
            assert_int_equal(acl_index_distinct(x), 64);
            expect_acl(x, 0, had);
            assert_int_equal(acl_index_check(x, 0, v0, 1), 1);
            assert_int_equal(acl_index_check(x, 0, v5, 1), 0);
            assert_true(roaring_bitmap_contains(acl_index_live(x), 0));
            expect(x, v0, 1);
            assert_int_equal(acl_index_set(x, 0, p5), 0);
        }
        assert_int_equal(rc, n < 2 ? CDN_ERR_NOMEM : 0);
        assert_true(acl_index_memory(x) > compacted);
        assert_int_equal(acl_index_entry_of(x, 0), acl_index_entry_of(x, 5));
        assert_int_equal(acl_index_distinct(x), 63);
        expect_acl(x, 0, p5);
        assert_int_equal(acl_index_check(x, 0, v0, 1), 0);
        expect(x, v0, 1);
        expect(x, v5, 1);
        acl_index_free(x);
    }
}

/* ---- Random writes against a model: a per-row list of principals. ---- */

#define MROWS 400
#define MPRIN 24 /* principals ACLs name; views also ask for two no row names */
#define MPOOL 30 /* ACLs drawn from a pool, so rows share them */

typedef struct model_row {
    int live;
    uint32_t packed[2 + 6]; /* up to 3 allowed and 2 denied */
} model_row_t;

static uint64_t rng_next(uint64_t *s) /* xorshift64*: fixed seed, same run every time */
{
    *s ^= *s >> 12;
    *s ^= *s << 25;
    *s ^= *s >> 27;
    return *s * 0x2545F4914F6CDD1DULL;
}

static void random_acl(uint64_t *s, uint32_t *p)
{
    uint32_t na = (uint32_t)(rng_next(s) % 4), nd = (uint32_t)(rng_next(s) % 3);
    p[0] = na;
    p[1] = nd;
    for (uint32_t i = 0; i < na + nd; i++)
        p[2 + i] = (uint32_t)(rng_next(s) % MPRIN); /* repeats and any order: kept as given */
}

static int model_check(const model_row_t *m, const uint32_t *view, size_t n)
{
    int allowed = 0;
    if (!m->live)
        return 0;
    for (uint32_t i = 0; i < m->packed[0]; i++)
        for (size_t j = 0; j < n; j++)
            allowed |= m->packed[2 + i] == view[j];
    for (uint32_t i = 0; i < m->packed[1]; i++)
        for (size_t j = 0; j < n; j++)
            if (m->packed[2 + m->packed[0] + i] == view[j])
                allowed = 0;
    return allowed;
}

/* Every row's ACL, one entry for equal ACLs and different ones for unequal ACLs, the distinct
 * count, and random views. */
static void compare_with_model(const acl_index_t *x, const model_row_t *m, uint64_t *s)
{
    size_t distinct = 0;
    for (uint32_t r = 0; r < MROWS; r++) {
        uint32_t got[2 + 6];
        size_t len = acl_packed_len(m[r].packed);
        int shared = 0;
        if (!m[r].live) {
            assert_int_equal(acl_index_get(x, r, got, 2 + 6), 0);
            assert_int_equal(acl_index_entry_of(x, r), 0);
            continue;
        }
        assert_int_equal(acl_index_get(x, r, got, 2 + 6), len);
        assert_memory_equal(got, m[r].packed, len * sizeof *got);
        for (uint32_t q = 0; q < MROWS; q++) {
            int equal = q != r && m[q].live && acl_packed_len(m[q].packed) == len &&
                        !memcmp(m[q].packed, m[r].packed, len * sizeof *got);
            if (q != r && m[q].live)
                assert_int_equal(acl_index_entry_of(x, q) == acl_index_entry_of(x, r), equal);
            shared |= equal && q < r;
        }
        distinct += !shared;
    }
    assert_int_equal(acl_index_distinct(x), distinct);
    for (int k = 0; k < 8; k++) {
        uint32_t view[5];
        size_t n = 1 + rng_next(s) % 5;
        for (size_t i = 0; i < n; i++) { /* sorted, distinct ids below MPRIN + 2 */
            view[i] = (i ? view[i - 1] + 1 : 0) + (uint32_t)(rng_next(s) % 5);
            if (view[i] >= MPRIN + 2)
                n = i;
        }
        if (!n)
            continue;
        roaring_bitmap_t *got = NULL, *want = roaring_bitmap_create();
        for (uint32_t r = 0; r < MROWS; r++) {
            assert_int_equal(acl_index_check(x, r, view, n), model_check(&m[r], view, n));
            if (model_check(&m[r], view, n))
                roaring_bitmap_add(want, r);
        }
        assert_int_equal(acl_index_allowed(x, view, n, &got), 0);
        assert_true(roaring_bitmap_equals(got, want));
        roaring_bitmap_free(got);
        roaring_bitmap_free(want);
    }
}

/* Sets (from a shared pool, fresh, or another row's ACL), overwrites and deletes in random
 * order, with a compaction now and then (between any two writes, and after every fourth batch),
 * so deletes run without the hash and sets rebuild it: after every batch the index agrees with
 * the model. */
static void test_random_writes_match_a_model(void **state)
{
    (void)state;
    static model_row_t m[MROWS];
    uint32_t pool[MPOOL][2 + 6];
    uint64_t s = 0x5eed5eedULL;
    acl_index_t *x;
    memset(m, 0, sizeof m);
    memset(pool, 0, sizeof pool); /* words past an ACL's length are copied, never compared */
    for (int i = 0; i < MPOOL; i++)
        random_acl(&s, pool[i]);
    assert_int_equal(acl_index_create(&x), 0);
    for (int batch = 0; batch < 20; batch++) {
        for (int op = 0; op < 200; op++) {
            uint32_t r = (uint32_t)(rng_next(&s) % MROWS);
            uint32_t other = (uint32_t)(rng_next(&s) % MROWS), p[2 + 6] = {0};
            unsigned kind = (unsigned)(rng_next(&s) % 20);
            if (rng_next(&s) % 40 == 0)
                acl_index_compact(x);
            if (kind < 4) { /* delete, maybe an already deleted row */
                acl_index_remove(x, r);
                m[r].live = 0;
                continue;
            }
            if (kind < 7 && m[other].live)
                memcpy(p, m[other].packed, sizeof p);
            else if (kind < 16)
                memcpy(p, pool[rng_next(&s) % MPOOL], sizeof p);
            else
                random_acl(&s, p);
            assert_int_equal(acl_index_set(x, r, p), 0);
            memcpy(m[r].packed, p, sizeof p);
            m[r].live = 1;
        }
        if (batch % 4 == 3)
            acl_index_compact(x); /* changes no answer; the next batch writes on top */
        compare_with_model(x, m, &s);
    }
    for (uint32_t r = 0; r < MROWS; r++) {
        acl_index_remove(x, r);
        m[r].live = 0;
    }
    compare_with_model(x, m, &s);
    assert_int_equal(acl_index_distinct(x), 0);
    acl_index_free(x);
}

/* ---- The byte form and the memory it saves. ---- */

/* Encodes packed, checks the size the encoder, the bound and the reader agree on, and reads it
 * back word for word. Returns the size. */
static size_t enc_round_trip(const uint32_t *packed)
{
    size_t bound = acl_enc_bound(packed), len = acl_packed_len(packed), k = 2, size;
    uint8_t *enc = malloc(bound);
    uint32_t *back = malloc(len * sizeof *back);
    acl_dec_t d;
    assert_non_null(enc);
    assert_non_null(back);
    size = acl_enc_write(packed, enc);
    assert_true(size <= bound);
    assert_int_equal(acl_enc_size(enc), size);
    acl_dec_open(&d, enc);
    back[0] = d.n[0];
    back[1] = d.n[1];
    for (int w = 0; w < 2; w++) {
        uint32_t id = 0;
        for (uint32_t i = 0; i < d.n[w]; i++)
            back[k++] = id = acl_dec_next(&d, id);
    }
    assert_int_equal(d.p - enc, size);
    assert_memory_equal(back, packed, len * sizeof *back);
    free(back);
    free(enc);
    return size;
}

/* Varints change length at 2^7, 2^14, 2^21 and 2^28; differences span the whole uint32 range,
 * both ways: lists that are not sorted come back as they were, repeats included. */
static void test_byte_form_round_trips_edge_ids(void **state)
{
    (void)state;
    static const uint32_t edge[] = {0,         127,     128,       16383,     16384,
                                    2097151,   2097152, 268435455, 268435456, UINT32_MAX - 1,
                                    UINT32_MAX};
    static const size_t one_size[] = {3, 3, 4, 4, 5, 5, 6, 6, 7, 7, 7}; /* {1, 0, id} */
    uint32_t p[2 + 22];
    for (size_t i = 0; i < sizeof edge / sizeof *edge; i++) {
        uint32_t a[] = {1, 0, edge[i]}, dn[] = {0, 1, edge[i]};
        assert_int_equal(enc_round_trip(a), one_size[i]);
        assert_int_equal(enc_round_trip(dn), one_size[i]);
    }
    p[0] = 11; /* every edge, sorted, allowed; then the same denied, in reverse */
    p[1] = 11;
    for (size_t i = 0; i < 11; i++) {
        p[2 + i] = edge[i];
        p[2 + 11 + i] = edge[10 - i];
    }
    enc_round_trip(p);
    uint32_t wide[] = {2, 2, 0, UINT32_MAX, UINT32_MAX, 0}, rep[] = {3, 2, 5, 5, 5, 9, 9};
    uint32_t empty[] = {0, 0}, deny_only[] = {0, 3, 7, 8, 9}, two[] = {2, 0, 2, 1};
    uint32_t two_sorted[] = {2, 0, 1, 2};
    enc_round_trip(wide);
    assert_int_equal(enc_round_trip(rep), 7); /* a repeat is a difference of 0: one byte */
    assert_int_equal(enc_round_trip(empty), 2);
    assert_int_equal(enc_round_trip(deny_only), 5);
    assert_int_equal(enc_round_trip(two), 8); /* a step down wraps: 5 bytes */
    /* The order is part of the ACL: {2, 1} and {1, 2} are different bytes. */
    uint8_t e1[16], e2[16];
    size_t n1 = acl_enc_write(two, e1), n2 = acl_enc_write(two_sorted, e2);
    assert_false(n1 == n2 && !memcmp(e1, e2, n1));
    /* The benchmark's shape: a team with its department and division, a topical team with
     * its department and division, and "all": 7 principals in at most 13 bytes. */
    for (uint32_t t = 0; t < 1000; t += 37) {
        uint32_t u = 999 - t;
        uint32_t b[] = {
            7, 0, t, 1000 + t / 10, 1100 + t / 100, 1110 + u, 2110 + u / 10, 2210 + u / 100, 2220};
        assert_true(enc_round_trip(b) <= 13);
    }
    /* The longest ACL a chunk may carry, denied ids falling, allowed ids rising. */
    uint32_t *big = malloc((2 + ACL_MAX_PRINCIPALS) * sizeof *big);
    assert_non_null(big);
    big[0] = 24;
    big[1] = ACL_MAX_PRINCIPALS - 24;
    for (uint32_t i = 0; i < ACL_MAX_PRINCIPALS; i++)
        big[2 + i] = i < 24 ? i * 100000000u : UINT32_MAX - i * 4000000u;
    enc_round_trip(big);
    free(big);
}

/* The same edges through the index: what acl_index_set is given, acl_index_get gives back,
 * exactly; a buffer too small is left alone; the re-check reads the decoded ids. Ids stop at
 * 2^21: each principal costs the index a slot. */
static void test_edge_acls_round_trip_through_the_index(void **state)
{
    (void)state;
    acl_index_t *x;
    uint32_t edges[] = {6, 1, 0, 127, 128, 16383, 16384, 2097152, 2097151};
    uint32_t deny_only[] = {0, 3, 7, 8, 9}, v[] = {127, 2097151}, top[] = {2097152};
    uint32_t small[8], *big, *buf;
    assert_int_equal(acl_index_create(&x), 0);
    assert_int_equal(acl_index_set(x, 1, edges), 0);
    expect_acl(x, 1, edges);
    assert_int_equal(acl_index_check(x, 1, top, 1), 1);
    assert_int_equal(acl_index_check(x, 1, v, 1), 1);
    assert_int_equal(acl_index_check(x, 1, v, 2), 0); /* 2097151 denies */
    memset(small, 0xab, sizeof small);
    assert_int_equal(acl_index_get(x, 1, small, 8), 9);
    for (size_t i = 0; i < 8; i++)
        assert_int_equal(small[i], 0xabababab);
    assert_int_equal(acl_index_set(x, 2, deny_only), 0); /* readable by nobody */
    expect_acl(x, 2, deny_only);
    assert_int_equal(acl_index_check(x, 2, deny_only + 2, 3), 0);
    /* Long lists: every principal a chunk may name denied, and 3,000 (past what a chunk may
     * carry, so the index encodes it in a buffer of its own). */
    big = malloc((2 + 3000) * sizeof *big);
    buf = malloc((2 + 3000) * sizeof *buf);
    assert_non_null(big);
    assert_non_null(buf);
    big[0] = 0;
    big[1] = ACL_MAX_PRINCIPALS;
    for (uint32_t i = 0; i < 3000; i++)
        big[2 + i] = i * 613 + 16380;
    assert_int_equal(acl_index_set(x, 3, big), 0);
    expect_acl(x, 3, big);
    big[0] = 1; /* allowed to 16380, denied the next 1,023 */
    big[1] = ACL_MAX_PRINCIPALS - 1;
    assert_int_equal(acl_index_set(x, 4, big), 0);
    expect_acl(x, 4, big);
    uint32_t v16380[] = {16380}, both[] = {16380, 16380 + 613 * 1023};
    assert_int_equal(acl_index_check(x, 4, v16380, 1), 1);
    assert_int_equal(acl_index_check(x, 4, both, 2), 0);
    big[0] = 2000;
    big[1] = 1000;
    assert_int_equal(acl_index_set(x, 5, big), 0);
    assert_int_equal(acl_index_get(x, 5, buf, 3002), 3002);
    assert_memory_equal(buf, big, 3002 * sizeof *buf);
    assert_int_equal(acl_index_distinct(x), 5);
    free(big);
    free(buf);
    acl_index_free(x);
}

/* The permissions benchmark's ACL shape over 100,000 rows, every ACL distinct (random pairs of a
 * team, 0..999, and a topical team, each with its department and division, plus "all": ids up
 * to 2,220). Once compacted, per row: a 4-byte reference, 8 bytes of entry (offset and count)
 * and about 12.7 bytes of ACL in the arena, under 25 bytes (it was 32 + 36 + 4 + malloc's
 * overhead with an allocation per ACL); the hash is gone. A set brings it back: 4 bytes of
 * chain link per entry and 4 for each of the 131,072 buckets, about 34 bytes a row. Loading
 * leaves doubling slack in each array: under 48 before compaction. */
static void test_distinct_acls_cost_under_25_bytes_a_row_once_compacted(void **state)
{
    (void)state;
    static uint8_t used[1000][1000];
    uint64_t s = 0x600dULL;
    acl_index_t *x;
    const uint32_t rows = 100000;
    uint32_t first[9];
    size_t arena = 0, compacted;
    memset(used, 0, sizeof used);
    assert_int_equal(acl_index_create(&x), 0);
    for (uint32_t r = 0; r < rows; r++) {
        uint32_t t, u;
        do {
            t = (uint32_t)(rng_next(&s) % 1000);
            u = (uint32_t)(rng_next(&s) % 1000);
        } while (used[t][u]);
        used[t][u] = 1;
        uint32_t p[] = {
            7, 0, t, 1000 + t / 10, 1100 + t / 100, 1110 + u, 2110 + u / 10, 2210 + u / 100, 2220};
        uint8_t enc[9 * ACL_ENC_VARINT_MAX];
        assert_int_equal(acl_index_set(x, r, p), 0);
        arena += acl_enc_write(p, enc);
        if (!r)
            memcpy(first, p, sizeof first);
    }
    assert_int_equal(acl_index_distinct(x), rows);
    size_t loaded = acl_index_memory(x);
    assert_true(loaded < (size_t)rows * 48);
    acl_index_compact(x);
    compacted = acl_index_memory(x);
    assert_int_equal(compacted, (size_t)rows * (4 + 8) + arena); /* no link, no bucket */
    assert_true(compacted < (size_t)rows * 25);
    assert_int_equal(acl_index_set(x, 0, first), 0); /* the ACL it has: only the hash is new */
    assert_int_equal(acl_index_distinct(x), rows);
    assert_true(acl_index_memory(x) >= compacted + (size_t)rows * 4 + (size_t)rows * 4);
    assert_true(acl_index_memory(x) < (size_t)rows * 35);
    acl_index_free(x);
}

/* One of many distinct ACLs of 21 principals, about 44 bytes in the arena. */
static void wide_acl(uint32_t i, uint32_t p[2 + 21])
{
    p[0] = 21;
    p[1] = 0;
    for (uint32_t k = 0; k < 20; k++)
        p[2 + k] = i % 997 + 1000 * k;
    p[22] = 30000 + i / 997;
}

/* Every row of the cycle reads back the ACL it was last given (held[r], or none). */
static void expect_cycle(const acl_index_t *x, const uint32_t *held)
{
    uint32_t p[2 + 21];
    for (uint32_t r = 0; r < 4; r++) {
        if (held[r] == UINT32_MAX) {
            assert_int_equal(acl_index_get(x, r, p, 2 + 21), 0);
            continue;
        }
        wide_acl(held[r], p);
        expect_acl(x, r, p);
        assert_int_equal(acl_index_check(x, r, p + 22, 1), 1);
    }
}

/* A freed ACL leaves its bytes in the arena; once such garbage outweighs the live bytes (and
 * passes 64 KiB) a write copies the live ones into a fresh arena. 40,000 distinct ACLs cycled
 * through 4 rows (overwrites only, then with deletes too) would leave 1.7 MB of garbage: the
 * index stays under 256 KiB, and every row, including one set once at the start, reads back
 * its own ACL throughout. */
static void test_garbage_of_freed_acls_is_compacted_away(void **state)
{
    (void)state;
    acl_index_t *x;
    uint32_t p[2 + 21], fixed[] = {1, 1, 3, 4}, held[4], v3[] = {3};
    assert_int_equal(acl_index_create(&x), 0);
    assert_int_equal(acl_index_set(x, 10, fixed), 0);
    for (uint32_t i = 0; i < 40000; i++) {
        uint32_t row = i % 4;
        wide_acl(i, p);
        if (i >= 20000 && i % 50 == 49) {
            acl_index_remove(x, row);
            held[row] = UINT32_MAX;
        } else {
            assert_int_equal(acl_index_set(x, row, p), 0);
            held[row] = i;
        }
        assert_true(acl_index_memory(x) < (size_t)256 << 10);
        if (i % 97 == 0 && i >= 4)
            expect_cycle(x, held);
    }
    expect_cycle(x, held);
    expect_acl(x, 10, fixed);
    assert_int_equal(acl_index_check(x, 10, v3, 1), 1);
    assert_int_equal(acl_index_distinct(x), 1 + (held[0] != UINT32_MAX) + (held[1] != UINT32_MAX) +
                                                (held[2] != UINT32_MAX) + (held[3] != UINT32_MAX));
    /* Deletes alone compact too: 2,000 rows of 201 principals (400 KB), then deleted. */
    static uint32_t big[2 + 201];
    for (uint32_t r = 0; r < 2000; r++) {
        big[0] = 201;
        for (uint32_t k = 0; k < 200; k++)
            big[2 + k] = k * 10 + r % 10;
        big[2 + 200] = 2000 + r / 10;
        assert_int_equal(acl_index_set(x, 100 + r, big), 0);
    }
    assert_true(acl_index_memory(x) > (size_t)400 << 10);
    for (uint32_t r = 0; r < 2000; r++)
        acl_index_remove(x, 100 + r);
    assert_true(acl_index_memory(x) < (size_t)128 << 10);
    expect_cycle(x, held);
    expect_acl(x, 10, fixed);
    acl_index_free(x);
}

/* After a bulk load acl_index_compact shrinks the bitmaps and trims the arrays: every answer
 * stays the same, the index holds less, and writes carry on, also with each allocation of the
 * compaction failing in turn (what cannot shrink stays as it was). */
static void test_compact_keeps_every_answer_and_writes_follow(void **state)
{
    (void)state;
    static const uint32_t cviews[4][4] = {
        {3, 12, 39, 1000}, {0, 10, 20, 1000}, {5, 25, 39, 1000}, {9, 19, 29, 1000}};
    static uint32_t saved[ROWS + 200][5];
    for (long n = -1; n < 8; n++) {
        acl_index_t *x;
        roaring_bitmap_t *before[4], *got;
        size_t held;
        assert_int_equal(acl_index_create(&x), 0);
        fill(x);
        for (uint32_t r = 0; r < 200; r++) { /* 200 more ACLs, half of them freed again */
            uint32_t q[] = {1, 0, 40 + r};
            assert_int_equal(acl_index_set(x, ROWS + r, q), 0);
        }
        for (uint32_t r = 0; r < 200; r += 2)
            acl_index_remove(x, ROWS + r);
        for (uint32_t r = 0; r < ROWS + 200; r++)
            assert_true(acl_index_get(x, r, saved[r], 5) <= 5);
        /* Asked with principal 1000 (no row names it): the memo cannot answer the 3-principal
         * views below, so they are computed from the compacted bitmaps. */
        for (int v = 0; v < 4; v++)
            assert_int_equal(acl_index_allowed(x, cviews[v], 4, &before[v]), 0);
        held = acl_index_memory(x);
        cdn_mem_fail_after(n);
        acl_index_compact(x);
        cdn_mem_fail_after(-1);
        assert_true(acl_index_memory(x) <= held);
        if (n < 0)
            assert_true(acl_index_memory(x) < held);
        for (int v = 0; v < 4; v++) {
            assert_int_equal(acl_index_allowed(x, cviews[v], 3, &got), 0);
            assert_true(roaring_bitmap_equals(got, before[v]));
            roaring_bitmap_free(got);
            roaring_bitmap_free(before[v]);
            expect(x, cviews[v], 3);
        }
        for (uint32_t r = 0; r < ROWS + 200; r++) {
            uint32_t now[5] = {0};
            size_t len = acl_index_get(x, r, now, 5);
            assert_int_equal(len, r >= ROWS && r % 2 == 0 ? 0 : acl_packed_len(saved[r]));
            assert_memory_equal(now, saved[r], len * sizeof *now);
        }
        /* Writes after it: an ACL set before it (shared, not copied), a new ACL, a row past the
         * trimmed ones, a delete. */
        uint32_t p38[] = {1, 0, 38}, v38[] = {38}, v3[] = {3};
        size_t distinct = acl_index_distinct(x);
        assert_int_equal(acl_index_set(x, ROWS + 2, saved[1]), 0);
        assert_int_equal(acl_index_entry_of(x, ROWS + 2), acl_index_entry_of(x, 1));
        assert_int_equal(acl_index_distinct(x), distinct);
        assert_int_equal(acl_index_set(x, 3, p38), 0);
        assert_int_equal(acl_index_set(x, ROWS + 500, p38), 0);
        acl_index_remove(x, 13);
        expect_acl(x, ROWS + 500, p38);
        assert_int_equal(acl_index_check(x, 3, v38, 1), 1);
        assert_int_equal(acl_index_check(x, 3, v3, 1), 0);
        expect(x, v38, 1);
        expect(x, v3, 1);
        for (int v = 0; v < 4; v++)
            expect(x, cviews[v], 3);
        acl_index_free(x);
    }
}

/* Row r's ACL in the test below: allowed to r and 1000 + r % 7, 200 distinct. */
static void hashless_acl(uint32_t r, uint32_t p[4])
{
    p[0] = 2;
    p[1] = 0;
    p[2] = r;
    p[3] = 1000 + r % 7;
}

/* Searches never look an ACL up by content, so acl_index_compact frees the hash (chain links and
 * buckets) and the next set rebuilds it. A delete needs no hash and leaves it absent; the
 * rebuilt hash finds an ACL set before the compaction (the rows share its entry); new ACLs take
 * the slots freed before the compaction and after it before the arrays grow; and all of it
 * again after a second compaction. */
static void test_compact_drops_the_hash_and_the_next_set_rebuilds_it(void **state)
{
    (void)state;
    acl_index_t *x;
    uint32_t p[4], q[4], v1000[] = {1000};
    size_t compacted;
    assert_int_equal(acl_index_create(&x), 0);
    for (uint32_t r = 0; r < 200; r++) {
        hashless_acl(r, p);
        assert_int_equal(acl_index_set(x, r, p), 0);
    }
    for (uint32_t r = 1; r < 200; r += 2)
        acl_index_remove(x, r); /* frees entries 2, 4, ..., 200 */
    acl_index_compact(x);
    compacted = acl_index_memory(x);
    acl_index_remove(x, 2); /* frees entry 3 */
    assert_int_equal(acl_index_memory(x), compacted);
    assert_int_equal(acl_index_distinct(x), 99);
    hashless_acl(4, p);
    assert_int_equal(acl_index_set(x, 1, p), 0);
    assert_int_equal(acl_index_entry_of(x, 1), acl_index_entry_of(x, 4));
    assert_int_equal(acl_index_distinct(x), 99);
    /* 200 chain links (one per slot) and at least 64 buckets are back. */
    assert_true(acl_index_memory(x) >= compacted + 200 * 4 + 64 * 4);
    for (uint32_t i = 0; i < 102; i++) { /* 101 free slots, then a new one */
        hashless_acl(500 + i, q);
        assert_int_equal(acl_index_set(x, 300 + i, q), 0);
        if (i < 101)
            assert_in_range(acl_index_entry_of(x, 300 + i), 1, 200);
        else
            assert_int_equal(acl_index_entry_of(x, 300 + i), 201);
        expect_acl(x, 300 + i, q);
    }
    assert_int_equal(acl_index_distinct(x), 99 + 102);
    /* Again: overwrites and deletes after a second compaction. */
    acl_index_compact(x);
    acl_index_remove(x, 6);
    assert_int_equal(acl_index_set(x, 0, p), 0); /* row 4's ACL: row 0's is freed */
    assert_int_equal(acl_index_entry_of(x, 0), acl_index_entry_of(x, 4));
    hashless_acl(500, q);
    assert_int_equal(acl_index_set(x, 8, q), 0); /* row 300's */
    assert_int_equal(acl_index_entry_of(x, 8), acl_index_entry_of(x, 300));
    assert_int_equal(acl_index_distinct(x), 99 + 102 - 3);
    for (uint32_t r = 0; r < 402; r++) {
        uint32_t want[4];
        int gone = (r < 200 && r % 2 && r != 1) || r == 2 || r == 6 || (r >= 200 && r < 300);
        if (gone) {
            assert_int_equal(acl_index_entry_of(x, r), 0);
            continue;
        }
        hashless_acl(r == 0 || r == 1 ? 4 : r == 8 ? 500 : r >= 300 ? 200 + r : r, want);
        expect_acl(x, r, want);
    }
    expect(x, v1000, 1);
    acl_index_free(x);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_allowed_is_the_union_minus_denied_within_live),
        cmocka_unit_test(test_memoized_sets_follow_every_write),
        cmocka_unit_test(test_many_and_long_views_stay_right),
        cmocka_unit_test(test_concurrent_readers_get_the_right_sets),
        cmocka_unit_test(test_rows_with_equal_acls_share_one_entry),
        cmocka_unit_test(test_changing_a_rows_acl_keeps_only_the_acls_in_use),
        cmocka_unit_test(test_changing_acls_reuses_freed_slots),
        cmocka_unit_test(test_a_reused_slot_serves_only_its_new_acl),
        cmocka_unit_test(test_entries_are_found_after_others_leave_their_chains),
        cmocka_unit_test(test_out_of_memory_leaves_the_previous_acl),
        cmocka_unit_test(test_out_of_memory_in_the_rebuild_leaves_the_previous_acl),
        cmocka_unit_test(test_random_writes_match_a_model),
        cmocka_unit_test(test_byte_form_round_trips_edge_ids),
        cmocka_unit_test(test_edge_acls_round_trip_through_the_index),
        cmocka_unit_test(test_distinct_acls_cost_under_25_bytes_a_row_once_compacted),
        cmocka_unit_test(test_garbage_of_freed_acls_is_compacted_away),
        cmocka_unit_test(test_compact_keeps_every_answer_and_writes_follow),
        cmocka_unit_test(test_compact_drops_the_hash_and_the_next_set_rebuilds_it),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
