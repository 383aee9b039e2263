/* test_acl_order.c: acl_order_rows, the numbering a compaction gives the live rows: a one-to-one
 * numbering of the rows kept, rows of one ACL adjacent and in their old order, every group of a
 * nested hierarchy one run whatever order the rows were written in, and for two hierarchies
 * crossing each other the larger groups first. Relies on cmocka, CRoaring and acl/acl.h. */
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
#include "base/mem.h"

enum { ROWS = 6000 };

static uint64_t next_rand(uint64_t *s)
{
    *s = *s * 6364136223846793005ull + 1442695040888963407ull;
    return *s >> 33;
}

/* The numbers map gives the kept rows (map[r] != ACL_ORDER_GONE) are 0..kept-1, each once. */
static uint32_t check_one_to_one(const uint32_t *map, uint32_t n)
{
    uint8_t *seen = calloc(n, 1);
    uint32_t kept = 0;
    for (uint32_t r = 0; r < n; r++)
        kept += map[r] != ACL_ORDER_GONE;
    for (uint32_t r = 0; r < n; r++) {
        if (map[r] == ACL_ORDER_GONE)
            continue;
        assert_true(map[r] < kept);
        assert_false(seen[map[r]]);
        seen[map[r]] = 1;
    }
    free(seen);
    return kept;
}

/* How many runs of consecutive new numbers the kept rows with label[r] == value occupy. */
static uint32_t runs_of(const uint32_t *map, uint32_t n, uint32_t kept, const uint32_t *label,
                        uint32_t value)
{
    uint8_t *at = calloc(kept + 1, 1);
    for (uint32_t r = 0; r < n; r++)
        if (map[r] != ACL_ORDER_GONE && label[r] == value)
            at[map[r]] = 1;
    uint32_t runs = 0;
    for (uint32_t i = 0; i < kept; i++)
        runs += at[i] && (i == 0 || !at[i - 1]);
    free(at);
    return runs;
}

/* One hierarchy, written in a shuffled order: row r belongs to team t(r) of 60, in department
 * t / 6 and division t / 30; its ACL lists team, division, department (not by size). */
static uint32_t team[ROWS], dept[ROWS], div_of[ROWS];

static void test_nested_groups_are_one_run_each(void **state)
{
    (void)state;
    acl_index_t *x;
    uint32_t *map = malloc(ROWS * sizeof *map);
    uint64_t s = 7;
    assert_int_equal(acl_index_create(&x), 0);
    for (uint32_t r = 0; r < ROWS; r++) {
        team[r] = (uint32_t)(next_rand(&s) % 60);
        dept[r] = team[r] / 6;
        div_of[r] = team[r] / 30;
        uint32_t p[5] = {3, 0, 100 + team[r], 300 + team[r] / 30, 200 + team[r] / 6};
        assert_int_equal(acl_index_set(x, r, p), 0);
    }
    for (uint32_t r = 0; r < ROWS; r++) /* every tenth row left out, as a dead one */
        map[r] = r % 10 == 3 ? ACL_ORDER_GONE : 0;
    assert_int_equal(acl_order_rows(x, map, ROWS), 0);
    uint32_t kept = check_one_to_one(map, ROWS);
    assert_int_equal(kept, ROWS - ROWS / 10);
    for (uint32_t t = 0; t < 60; t++)
        assert_int_equal(runs_of(map, ROWS, kept, team, t), 1);
    for (uint32_t d = 0; d < 10; d++)
        assert_int_equal(runs_of(map, ROWS, kept, dept, d), 1);
    for (uint32_t v = 0; v < 2; v++)
        assert_int_equal(runs_of(map, ROWS, kept, div_of, v), 1);
    /* a team's rows keep their old order */
    for (uint32_t a = 0; a < ROWS; a++)
        for (uint32_t b = a + 1; b < ROWS && b < a + 200; b++)
            if (map[a] != ACL_ORDER_GONE && map[b] != ACL_ORDER_GONE && team[a] == team[b])
                assert_true(map[a] < map[b]);
    /* the rows as they were written scatter every team */
    for (uint32_t r = 0; r < ROWS; r++)
        map[r] = r;
    assert_true(runs_of(map, ROWS, ROWS, div_of, 0) > 100);
    acl_index_free(x);
    free(map);
}

/* Two hierarchies crossing (as the permissions benchmark's random and topical teams): the
 * larger groups come first, so each of the first hierarchy's divisions is one run and each of
 * the second's is one run inside each of them. A deny splits an ACL from the same allows
 * without it, which still sits next to it. */
static uint32_t first_div[ROWS], second_div[ROWS];

static void test_crossing_hierarchies_keep_the_larger_groups_whole(void **state)
{
    (void)state;
    acl_index_t *x;
    uint32_t *map = malloc(ROWS * sizeof *map);
    uint64_t s = 11;
    assert_int_equal(acl_index_create(&x), 0);
    for (uint32_t r = 0; r < ROWS; r++) {
        first_div[r] = (uint32_t)(next_rand(&s) % 4);   /* 4 groups of about 1,500 */
        second_div[r] = (uint32_t)(next_rand(&s) % 10); /* 10 of about 600 */
        int deny = r % 13 == 0;
        uint32_t p[6] = {3, (uint32_t)deny, 50 + second_div[r], 10 + first_div[r], 99, 77};
        assert_int_equal(acl_index_set(x, r, p), 0);
    }
    memset(map, 0, ROWS * sizeof *map);
    assert_int_equal(acl_order_rows(x, map, ROWS), 0);
    uint32_t kept = check_one_to_one(map, ROWS);
    assert_int_equal(kept, ROWS);
    for (uint32_t v = 0; v < 4; v++)
        assert_int_equal(runs_of(map, ROWS, kept, first_div, v), 1);
    for (uint32_t v = 0; v < 10; v++)
        assert_int_equal(runs_of(map, ROWS, kept, second_div, v), 4);
    /* within one (first, second) cell, the rows without the deny come first, in order */
    for (uint32_t a = 0; a < ROWS; a++)
        for (uint32_t b = 0; b < ROWS; b += 97)
            if (first_div[a] == first_div[b] && second_div[a] == second_div[b] &&
                (a % 13 == 0) != (b % 13 == 0))
                assert_true((map[a] < map[b]) == (b % 13 == 0));
    acl_index_free(x);
    free(map);
}

/* Rows never written or deleted that the caller still numbers get the empty key (first); rows
 * left out are untouched; no rows at all is fine. */
static void test_rows_without_an_acl_and_empty_input(void **state)
{
    (void)state;
    acl_index_t *x;
    uint32_t map[8];
    assert_int_equal(acl_index_create(&x), 0);
    assert_int_equal(acl_order_rows(x, map, 0), 0);
    uint32_t a[3] = {1, 0, 5}, b[3] = {1, 0, 4};
    assert_int_equal(acl_index_set(x, 0, a), 0);
    assert_int_equal(acl_index_set(x, 1, b), 0);
    assert_int_equal(acl_index_set(x, 2, a), 0);
    acl_index_remove(x, 2);
    assert_int_equal(acl_index_set(x, 4, b), 0);
    uint32_t in[8] = {0, 0, ACL_ORDER_GONE, 0, 0, ACL_ORDER_GONE, ACL_ORDER_GONE, ACL_ORDER_GONE};
    memcpy(map, in, sizeof map);
    assert_int_equal(acl_order_rows(x, map, 8), 0);
    /* row 3 (never written) first; then principal 4's rows 1 and 4, then principal 5's row 0
     * (4 allows two live rows, 5 one: its row 2 is deleted) */
    assert_int_equal(map[3], 0);
    assert_int_equal(map[1], 1);
    assert_int_equal(map[4], 2);
    assert_int_equal(map[0], 3);
    assert_int_equal(map[2], ACL_ORDER_GONE);
    assert_int_equal(map[5], ACL_ORDER_GONE);
    acl_index_free(x);
}

/* Out of memory at any allocation: an error and the map as it was. */
static void test_out_of_memory_leaves_the_map(void **state)
{
    (void)state;
    acl_index_t *x;
    uint32_t map[ROWS], copy[ROWS];
    uint64_t s = 3;
    assert_int_equal(acl_index_create(&x), 0);
    for (uint32_t r = 0; r < ROWS; r++) {
        uint32_t p[4] = {2, 0, (uint32_t)(next_rand(&s) % 20), 30};
        assert_int_equal(acl_index_set(x, r, p), 0);
    }
    int failed = 0, ok = 0;
    for (int n = 0; n < 12 && !ok; n++) {
        for (uint32_t r = 0; r < ROWS; r++)
            map[r] = copy[r] = r % 5 ? 0 : ACL_ORDER_GONE;
        cdn_mem_fail_after(n);
        int rc = acl_order_rows(x, map, ROWS);
        cdn_mem_fail_after(-1);
        if (rc == 0) {
            ok = 1;
            check_one_to_one(map, ROWS);
        } else {
            assert_int_equal(rc, CDN_ERR_NOMEM);
            assert_memory_equal(map, copy, sizeof map);
            failed++;
        }
    }
    assert_true(ok);
    assert_true(failed > 0);
    acl_index_free(x);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_nested_groups_are_one_run_each),
        cmocka_unit_test(test_crossing_hierarchies_keep_the_larger_groups_whole),
        cmocka_unit_test(test_rows_without_an_acl_and_empty_input),
        cmocka_unit_test(test_out_of_memory_leaves_the_map),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
