/* test_acl_index.c: the per-collection ACL index on its own: allowed sets (union of allow
 * bitmaps minus deny bitmaps, within live rows), their memo following every write (a stale
 * memo would hide new rows or keep revoked ones), concurrent readers, and the interned ACLs
 * (shared by content, counted, freed and their slots reused, checked against a model). How
 * they are stored is test_acl_store.c's. Relies on cmocka, CRoaring, pthreads and
 * cdn_mem_fail_after. */
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
#include "base/err.h"
#include "base/mem.h"

#include "unit/acl/acl_testutil.h"

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

static int collect_id(void *ctx, uint32_t id)
{
    uint32_t *seen = ctx;
    if (id >= 64)
        return -1;
    seen[id]++;
    return id == 50 ? 7 : 0; /* a non-zero answer stops the walk and is returned */
}

/* The ids some row allows: those of live rows' allowed lists, not the denied ones, not the ACL
 * of a removed row. */
static void test_allowed_ids_are_those_some_row_allows(void **state)
{
    (void)state;
    acl_index_t *x;
    uint32_t seen[64] = {0};
    assert_int_equal(acl_index_create(&x), 0);
    uint32_t a[] = {2, 1, 4, 9, 5}, b[] = {1, 1, 9, 6}, c[] = {1, 0, 20};
    assert_int_equal(acl_index_set(x, 0, a), 0);
    assert_int_equal(acl_index_set(x, 1, b), 0);
    assert_int_equal(acl_index_set(x, 2, c), 0);
    acl_index_remove(x, 2);
    assert_int_equal(acl_index_allowed_ids(x, collect_id, seen), 0);
    for (uint32_t i = 0; i < 64; i++)
        assert_int_equal(seen[i], i == 4 || i == 9);
    uint32_t d[] = {1, 0, 50}, e[] = {1, 0, 51};
    assert_int_equal(acl_index_set(x, 3, d), 0);
    assert_int_equal(acl_index_set(x, 4, e), 0);
    memset(seen, 0, sizeof seen);
    assert_int_equal(acl_index_allowed_ids(x, collect_id, seen), 7);
    assert_int_equal(seen[51], 0);
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

/* Searches read the memo's own set (no copy): the same view gets the same set, and a set a
 * search still holds stays whole and unchanged when a write empties the memo or more views
 * push it out, while the next ask sees the write. */
static void test_shared_sets_outlive_the_memo_that_held_them(void **state)
{
    (void)state;
    acl_index_t *x;
    assert_int_equal(acl_index_create(&x), 0);
    fill(x);
    uint32_t view[] = {12, 4}, permuted[] = {4, 12};
    roaring_bitmap_t *before = brute(x, view, 2);
    acl_allowed_t *a = NULL, *b = NULL, *c = NULL;
    assert_int_equal(acl_index_allowed_shared(x, view, 2, &a), 0);
    assert_int_equal(acl_index_allowed_shared(x, permuted, 2, &b), 0);
    assert_ptr_equal(acl_allowed_set(a), acl_allowed_set(b));
    assert_true(roaring_bitmap_equals(acl_allowed_set(a), before));
    acl_allowed_release(b);
    /* Revoke row 4 (allowed to 4): the memo empties, a's set stays as it was. */
    uint32_t p5[] = {1, 0, 5};
    assert_int_equal(acl_index_set(x, 4, p5), 0);
    assert_true(roaring_bitmap_contains(acl_allowed_set(a), 4));
    assert_true(roaring_bitmap_equals(acl_allowed_set(a), before));
    assert_int_equal(acl_index_allowed_shared(x, view, 2, &c), 0);
    assert_ptr_not_equal(acl_allowed_set(c), acl_allowed_set(a));
    assert_false(roaring_bitmap_contains(acl_allowed_set(c), 4));
    /* Twenty other views push c out of the memo while it is held. */
    roaring_bitmap_t *want = brute(x, view, 2);
    for (uint32_t i = 0; i < 20; i++) {
        uint32_t v[] = {i % 10, 10 + i};
        expect(x, v, 2);
    }
    assert_true(roaring_bitmap_equals(acl_allowed_set(c), want));
    acl_allowed_release(a);
    acl_allowed_release(c);
    acl_allowed_release(NULL);
    expect(x, view, 2);
    roaring_bitmap_free(before);
    roaring_bitmap_free(want);
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
        acl_allowed_t *shared = NULL;
        if (i % 2) { /* a copy of its own, or the memo's set itself */
            if (acl_index_allowed(r->x, views[i % 4], 3, &got) != 0 ||
                !roaring_bitmap_equals(got, r->want[i % 4]))
                r->wrong++;
            roaring_bitmap_free(got);
        } else {
            if (acl_index_allowed_shared(r->x, views[i % 4], 3, &shared) != 0 ||
                !roaring_bitmap_equals(acl_allowed_set(shared), r->want[i % 4]))
                r->wrong++;
            acl_allowed_release(shared);
        }
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
int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_allowed_is_the_union_minus_denied_within_live),
        cmocka_unit_test(test_memoized_sets_follow_every_write),
        cmocka_unit_test(test_shared_sets_outlive_the_memo_that_held_them),
        cmocka_unit_test(test_allowed_ids_are_those_some_row_allows),
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
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
