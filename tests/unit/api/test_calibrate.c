/* test_calibrate.c: a collection loaded into a running handle is measured for its search
 * breadth while it serves: once it holds 20,000 live rows, and again each time it has doubled,
 * without a checkpoint or a reopen; a collection whose ef is fixed is never measured; the
 * measurement survives a reopen through the checkpoint. Relies on cmocka and the public API. */
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

#include "api_testutil.h"

#define DIM 16
#define BATCH 2000

/* Puts rows [from, to) of a seeded cloud into coll. */
static void put_rows(cordon_t *db, const char *coll, uint32_t from, uint32_t to)
{
    static float v[BATCH][DIM];
    static char ids[BATCH][16];
    static cordon_chunk ch[BATCH];
    const char *allowed[] = {"group:all"};
    for (uint32_t at = from; at < to; at += BATCH) {
        uint32_t n = to - at < BATCH ? to - at : BATCH;
        for (uint32_t i = 0; i < n; i++) {
            uint64_t s = (uint64_t)(at + i) * 2654435761u + 1;
            for (int d = 0; d < DIM; d++)
                v[i][d] = tu_randf(&s) - 0.5f;
            snprintf(ids[i], sizeof ids[i], "r%u", at + i);
            ch[i] =
                (cordon_chunk){.id = ids[i], .vector = v[i], .allowed = allowed, .n_allowed = 1};
        }
        assert_int_equal(cordon_put(db, coll, ch, n, NULL, NULL), 0);
    }
}

static uint64_t calibrated(cordon_t *db, const char *coll)
{
    cordon_collection_info info;
    assert_int_equal(cordon_collection_info_get(db, coll, &info, NULL), 0);
    return info.calibrated_rows;
}

static void test_measured_while_serving_and_as_it_doubles(void **state)
{
    (void)state;
    char dir[256];
    cordon_t *db;
    api_db_open(dir, sizeof dir, &db);
    /* a small graph (m 8, ef_construction 40) keeps the 60,000 inserts quick */
    cordon_collection_spec a = {.name = "grows",
                                .dim = DIM,
                                .metric = CORDON_METRIC_L2,
                                .asserted_principals = 1,
                                .hnsw_m = 8,
                                .hnsw_ef_construction = 40};
    cordon_collection_spec b = a;
    b.name = "fixed";
    b.hnsw_ef_search = 40;
    assert_int_equal(cordon_collection_create(db, &a, NULL), 0);
    assert_int_equal(cordon_collection_create(db, &b, NULL), 0);
    put_rows(db, "grows", 0, 18000);
    assert_int_equal(calibrated(db, "grows"), 0); /* under 20,000 rows: not yet */
    put_rows(db, "grows", 18000, 20000);
    uint64_t first = calibrated(db, "grows");
    assert_true(first >= 20000 && first < 22000);
    put_rows(db, "grows", 20000, 38000);
    assert_int_equal(calibrated(db, "grows"), first); /* not yet twice as many */
    put_rows(db, "grows", 38000, 2 * (uint32_t)first);
    assert_int_equal(calibrated(db, "grows"), 2 * first);
    put_rows(db, "fixed", 0, 20000);
    assert_int_equal(calibrated(db, "fixed"), 0);
    /* searches keep answering */
    float q[DIM] = {0};
    const char *pr[] = {"group:all"};
    cordon_subject who = {.principals = pr, .n_principals = 1};
    cordon_query query = {.vector = q, .k = 10};
    cordon_result *r;
    assert_int_equal(cordon_search(db, "grows", &who, &query, &r, NULL), 0);
    assert_int_equal(r->n_hits, 10);
    cordon_result_free(r);
    api_db_reopen(dir, &db);
    assert_int_equal(calibrated(db, "grows"), 2 * first);
    cordon_close(db);
    tu_rmrf(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_measured_while_serving_and_as_it_doubles),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
