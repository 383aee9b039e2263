/* acl_testutil.h: what the ACL index tests share: a 3,000-row fixture, the allowed set by
 * brute force over the rows' own ACLs, and a fixed-seed generator. Relies on cmocka (included
 * first by the test), CRoaring and acl/acl.h; everything static inline, one copy per test. */
#ifndef CDN_ACL_TESTUTIL_H
#define CDN_ACL_TESTUTIL_H

#include <stdint.h>

#include <roaring/roaring.h>

#include "acl/acl.h"

#define ROWS 3000
#define PRINCIPALS 40

/* Row r is allowed to principals r % 10 and 10 + r % 30; rows divisible by 7 deny 39. */
static inline void fill(acl_index_t *x)
{
    for (uint32_t r = 0; r < ROWS; r++) {
        uint32_t p[5] = {2, r % 7 == 0, r % 10, 10 + r % 30, 39};
        assert_int_equal(acl_index_set(x, r, p), 0);
    }
}

/* The allowed set by brute force over the rows' own ACLs. */
static inline roaring_bitmap_t *brute(const acl_index_t *x, const uint32_t *view, size_t n)
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

static inline void expect(const acl_index_t *x, const uint32_t *view, size_t n)
{
    roaring_bitmap_t *got = NULL, *want = brute(x, view, n);
    assert_int_equal(acl_index_allowed(x, view, n, &got), 0);
    assert_true(roaring_bitmap_equals(got, want));
    roaring_bitmap_free(got);
    roaring_bitmap_free(want);
}

/* Row's ACL reads back as exactly packed (length and words). */
static inline void expect_acl(const acl_index_t *x, uint32_t row, const uint32_t *packed)
{
    uint32_t buf[2 + ACL_MAX_PRINCIPALS];
    size_t len = acl_packed_len(packed);
    assert_int_equal(acl_index_get(x, row, buf, sizeof buf / sizeof *buf), len);
    assert_memory_equal(buf, packed, len * sizeof *buf);
}

static inline uint64_t rng_next(uint64_t *s) /* xorshift64*: fixed seed, same run every time */
{
    *s ^= *s >> 12;
    *s ^= *s << 25;
    *s ^= *s >> 27;
    return *s * 0x2545F4914F6CDD1DULL;
}

#endif
