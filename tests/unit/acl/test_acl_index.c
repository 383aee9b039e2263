/* test_acl_index.c: the per-collection ACL index on its own: allowed sets (union of allow
 * bitmaps minus deny bitmaps, within live rows), their memo following every write (a stale
 * memo would hide new rows or keep revoked ones), and concurrent readers. Relies on cmocka,
 * CRoaring and pthreads. */
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

#include "acl/acl.h"
#include "base/err.h"

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
    for (uint32_t r = 0; r < ROWS + 10; r++)
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

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_allowed_is_the_union_minus_denied_within_live),
        cmocka_unit_test(test_memoized_sets_follow_every_write),
        cmocka_unit_test(test_many_and_long_views_stay_right),
        cmocka_unit_test(test_concurrent_readers_get_the_right_sets),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
