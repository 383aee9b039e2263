/* test_adversarial_limits.c: sizes a caller chooses (k, rank_window_size, max_candidates,
 * ef_search) at and past their limits: refused as bad input, never attempted as allocations.
 * Its own binary because ASan aborts the process on an oversized allocation.
 * Relies on cmocka and tests/testutil.h. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "api_testutil.h"
#include "cordon.h"
#include "testutil.h"

#define DIM 4

typedef struct fx {
    char dir[64];
    cordon_t *db;
} fx_t;

static const char *const G0[] = {"group:g0"};

static int setup(void **state)
{
    fx_t *f = calloc(1, sizeof *f);
    api_db_open(f->dir, sizeof f->dir, &f->db);
    api_docs_create(f->db, DIM, CORDON_METRIC_COSINE);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fx_t *f = *state;
    api_db_close(f->dir, f->db);
    free(f);
    return 0;
}

static int put1(cordon_t *db, const char *coll, const char *id, const float *v,
                const char *const *allowed, size_t na, cordon_error *err)
{
    static const float one[DIM] = {1, 0, 0, 0};
    cordon_field fl = {"body", "common words here"};
    cordon_chunk c = {.id = id,
                      .vector = v ? v : one,
                      .fields = &fl,
                      .n_fields = 1,
                      .allowed = allowed,
                      .n_allowed = na};
    return cordon_put(db, coll, &c, 1, NULL, err);
}

static void test_window_and_k_past_their_limits_are_refused(void **state)
{
    fx_t *f = *state;
    float v[DIM] = {1, 1, 0, 0};
    for (int i = 0; i < 20; i++) {
        char id[16];
        snprintf(id, sizeof id, "k%d", i);
        assert_int_equal(put1(f->db, "docs", id, NULL, G0, 1, NULL), 0);
    }
    cordon_subject s = {.principals = G0, .n_principals = 1};
    cordon_result *r = NULL;
    size_t bad_k[] = {CORDON_K_MAX + 1, SIZE_MAX, SIZE_MAX / 2 + 1};
    for (int i = 0; i < 3; i++) {
        cordon_query q = {.vector = v, .k = bad_k[i]};
        assert_int_equal(cordon_search(f->db, "docs", &s, &q, &r, NULL), CORDON_ERR_INVALID);
        cordon_query t = {.text = "common", .k = bad_k[i]};
        assert_int_equal(cordon_search(f->db, "docs", &s, &t, &r, NULL), CORDON_ERR_INVALID);
    }
    cordon_query kmax = {.vector = v, .k = CORDON_K_MAX};
    assert_int_equal(cordon_search(f->db, "docs", &s, &kmax, &r, NULL), 0);
    assert_int_equal(r->n_hits, 20);
    cordon_result_free(r);
    cordon_query k0 = {.vector = v};
    assert_int_equal(cordon_search(f->db, "docs", &s, &k0, &r, NULL), 0);
    assert_int_equal(r->n_hits, 10);
    cordon_result_free(r);
    /* rank_window_size is sized by the caller too: past any sane bound it must be refused as
     * bad input, not attempted (allocations of window entries per side). */
    size_t bad_w[] = {SIZE_MAX, SIZE_MAX / 8 + 1, (size_t)1 << 40};
    for (int i = 0; i < 3; i++) {
        cordon_query h = {.vector = v, .text = "common", .k = 5, .rank_window_size = bad_w[i]};
        cordon_error err;
        int rc = cordon_search(f->db, "docs", &s, &h, &r, &err);
        if (rc == 0)
            cordon_result_free(r);
        if (rc != CORDON_ERR_INVALID && rc != CORDON_ERR_LIMIT)
            fail_msg("rank_window_size %zu gave %d (%s); want INVALID or LIMIT", bad_w[i], rc,
                     rc ? err.message : "ok");
    }
}

/* Large but legal knobs on the graph paths: answered, only readable chunks, no blow-up. */
static void test_large_ef_and_max_candidates_are_bounded(void **state)
{
    fx_t *f = *state;
    const char *g1[] = {"group:g1"};
    for (int i = 0; i < 200; i++) {
        char id[16];
        float v[DIM] = {(float)(i % 7) - 3, (float)(i % 5), 1, (float)i / 50};
        snprintf(id, sizeof id, "k%d", i);
        assert_int_equal(put1(f->db, "docs", id, v, i % 2 ? G0 : g1, 1, NULL), 0);
    }
    cordon_subject s = {.principals = G0, .n_principals = 1};
    float q[DIM] = {1, 1, 1, 1};
    for (int strat = CORDON_STRATEGY_PREFILTER; strat <= CORDON_STRATEGY_POSTFILTER; strat++) {
        cordon_query qu = {.vector = q,
                           .k = CORDON_K_MAX,
                           .strategy = (cordon_strategy)strat,
                           .ef_search = UINT32_MAX,
                           .max_candidates = SIZE_MAX};
        cordon_result *r;
        cordon_error err;
        int rc = cordon_search(f->db, "docs", &s, &qu, &r, &err);
        if (rc)
            fail_msg("strategy %d: %s", strat, err.message);
        assert_true(r->n_hits <= 100);
        for (size_t h = 0; h < r->n_hits; h++) {
            int i = (int)strtol(r->hits[h].id + 1, NULL, 10);
            assert_true(i % 2 == 1);
        }
        cordon_result_free(r);
    }
}

/* One past CORDON_BATCH_MAX is LIMIT, for put and set_acl alike, and nothing lands. */
static void test_batch_one_past_the_limit_is_refused(void **state)
{
    fx_t *f = *state;
    static cordon_chunk many[CORDON_BATCH_MAX + 1];
    static cordon_acl_change ch[CORDON_BATCH_MAX + 1];
    static float v[DIM] = {1, 0, 0, 0};
    for (size_t i = 0; i <= CORDON_BATCH_MAX; i++) {
        many[i] = (cordon_chunk){.id = "x", .vector = v, .allowed = G0, .n_allowed = 1};
        ch[i] = (cordon_acl_change){"x", G0, 1, NULL, 0, NULL, 0};
    }
    uint64_t rev = cordon_revision(f->db);
    assert_int_equal(cordon_put(f->db, "docs", many, CORDON_BATCH_MAX + 1, NULL, NULL),
                     CORDON_ERR_LIMIT);
    assert_int_equal(cordon_set_acl(f->db, "docs", ch, CORDON_BATCH_MAX + 1, NULL, NULL),
                     CORDON_ERR_LIMIT);
    assert_int_equal(cordon_revision(f->db), rev);
}

int main(void)
{
#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)
    const struct CMUnitTest tests[] = {
        T(test_large_ef_and_max_candidates_are_bounded),
        T(test_batch_one_past_the_limit_is_refused),
        T(test_window_and_k_past_their_limits_are_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
