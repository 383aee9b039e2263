/* test_acl_store.c: how the ACL index stores rows' ACLs: the byte form (varint deltas) and its
 * edge ids, round trips through the index, the memory distinct ACLs take, the arena's
 * compaction of freed ACLs' bytes, and acl_index_compact (every answer kept; the hash that finds
 * ACLs by content dropped, the next set rebuilding it). Relies on cmocka, CRoaring and
 * cdn_mem_fail_after. */
/* cmocka.h needs these four first. */
// clang-format off
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
// clang-format on

#include <stdlib.h>
#include <string.h>

#include "acl/acl.h"
#include "acl/enc.h"
#include "base/err.h"
#include "base/mem.h"
#include "unit/acl/acl_testutil.h"

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
        cmocka_unit_test(test_byte_form_round_trips_edge_ids),
        cmocka_unit_test(test_edge_acls_round_trip_through_the_index),
        cmocka_unit_test(test_distinct_acls_cost_under_25_bytes_a_row_once_compacted),
        cmocka_unit_test(test_garbage_of_freed_acls_is_compacted_away),
        cmocka_unit_test(test_compact_keeps_every_answer_and_writes_follow),
        cmocka_unit_test(test_compact_drops_the_hash_and_the_next_set_rebuilds_it),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
