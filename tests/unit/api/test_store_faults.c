/* test_store_faults.c: fails each store write in turn (store_fail_after: LMDB puts, deletes,
 * commits, vector-file writes and syncs) during put, set_acl, delete and model ops. A call that
 * fails changes nothing anyone sees: same revision, same search results, and a reopen agrees.
 * Relies on cmocka, api_testutil.h and store/store.h (the fault hook). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "api_testutil.h"
#include "store/store.h"

#define DIM 4
#define MAX_STEPS 200

typedef struct fx {
    char dir[64];
    cordon_t *db;
} fx_t;

static const char *const G0[] = {"group:g0"}, *const G1[] = {"group:g1"};

static int setup(void **state)
{
    fx_t *f = calloc(1, sizeof *f);
    api_db_open(f->dir, sizeof f->dir, &f->db);
    api_docs_create(f->db, DIM, CORDON_METRIC_L2);
    static float v[3][DIM] = {{1, 0, 0, 0}, {0, 1, 0, 0}, {0, 0, 1, 0}};
    cordon_field fl = {"body", "common words"};
    cordon_chunk c[3] = {
        {.id = "a", .vector = v[0], .fields = &fl, .n_fields = 1, .allowed = G0, .n_allowed = 1},
        {.id = "b", .vector = v[1], .fields = &fl, .n_fields = 1, .allowed = G0, .n_allowed = 1},
        {.id = "c", .vector = v[2], .fields = &fl, .n_fields = 1, .allowed = G1, .n_allowed = 1}};
    assert_int_equal(cordon_put(f->db, "docs", c, 3, NULL, NULL), 0);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fx_t *f = *state;
    store_fail_after(-1);
    api_db_close(f->dir, f->db);
    free(f);
    return 0;
}

/* What group:g0 sees, vector and text, with the revision: "rev=N v:a b t:a b". */
static void seen(cordon_t *db, char *out, size_t n)
{
    cordon_subject s = {.principals = G0, .n_principals = 1};
    float q[DIM] = {1, 1, 1, 1};
    cordon_query qs[2] = {{.vector = q, .k = 50, .strategy = CORDON_STRATEGY_EXACT},
                          {.text = "common", .k = 50}};
    size_t at = 0;
    for (int m = 0; m < 2; m++) {
        cordon_result *r;
        cordon_error err;
        if (cordon_search(db, "docs", &s, &qs[m], &r, &err))
            fail_msg("search failed: %s", err.message);
        if (m == 0)
            at += (size_t)snprintf(out + at, n - at, "rev=%llu", (unsigned long long)r->revision);
        at += (size_t)snprintf(out + at, n - at, " %s", m ? "t:" : "v:");
        for (size_t h = 0; h < r->n_hits; h++)
            at += (size_t)snprintf(out + at, n - at, "%s%s", h ? " " : "", r->hits[h].id);
        cordon_result_free(r);
    }
}

typedef int (*write_fn)(cordon_t *db, cordon_error *err);

static int put_new(cordon_t *db, cordon_error *err)
{
    static float v[DIM] = {1, 1, 0, 0};
    cordon_field fl = {"body", "common new"};
    cordon_chunk c[2] = {
        {.id = "new", .vector = v, .fields = &fl, .n_fields = 1, .allowed = G0, .n_allowed = 1},
        {.id = "a", .vector = v, .fields = &fl, .n_fields = 1, .allowed = G1, .n_allowed = 1}};
    return cordon_put(db, "docs", c, 2, NULL, err); /* one new chunk, one hidden by update */
}

static int share_c(cordon_t *db, cordon_error *err)
{
    cordon_acl_change u = {.id = "c", .allowed = G0, .n_allowed = 1};
    return cordon_set_acl(db, "docs", &u, 1, NULL, err);
}

static int delete_b(cordon_t *db, cordon_error *err)
{
    const char *ids[] = {"b"};
    return cordon_delete(db, "docs", ids, 1, NULL, NULL, err);
}

/* Runs w with the n-th store write failing, n = 0, 1, ... until it succeeds; every failure
 * must leave what g0 sees as it was, before and after a reopen. Returns the failures seen. */
static int each_fault(fx_t *f, write_fn w)
{
    char before[512], now[512];
    int failures = 0;
    seen(f->db, before, sizeof before);
    for (long n = 0; n < MAX_STEPS; n++) {
        cordon_error err;
        store_fail_after(n);
        int rc = w(f->db, &err);
        store_fail_after(-1);
        if (rc == 0) {
            seen(f->db, now, sizeof now);
            assert_string_not_equal(now, before); /* the write did change what g0 sees */
            api_db_reopen(f->dir, &f->db);
            seen(f->db, before, sizeof before);
            assert_string_equal(before, now);
            return failures;
        }
        if (rc != CORDON_ERR_IO)
            fail_msg("write %ld failed with %d (%s), not CORDON_ERR_IO", n, rc, err.message);
        failures++;
        seen(f->db, now, sizeof now);
        if (strcmp(now, before))
            fail_msg("write %ld failed but g0 now sees \"%s\", was \"%s\"", n, now, before);
        api_db_reopen(f->dir, &f->db);
        seen(f->db, now, sizeof now);
        if (strcmp(now, before))
            fail_msg("write %ld failed; after reopen g0 sees \"%s\", was \"%s\"", n, now, before);
    }
    fail_msg("the write never succeeded");
    return failures;
}

static void test_failed_put_changes_nothing_visible(void **state)
{
    /* vector write, vector sync, LMDB puts and the commit: each one's failure is seen */
    assert_true(each_fault(*state, put_new) >= 4);
}

static void test_failed_set_acl_changes_nothing_visible(void **state)
{
    assert_true(each_fault(*state, share_c) >= 2);
}

static void test_failed_delete_changes_nothing_visible(void **state)
{
    assert_true(each_fault(*state, delete_b) >= 2);
}

/* A model change whose commit fails is ahead in memory of what is stored: until a reopen every
 * read of the model fails closed (search, is-authorized, view, export, explain), and the
 * reopen holds the model as it was before the change. */
static void test_failed_model_commit_fails_every_model_read_closed(void **state)
{
    fx_t *f = *state;
    cordon_authz_request rq = {.subject = "ann", .resource = "collection:docs", .action = "search"};
    cordon_decision d;
    cordon_explanation x;
    cordon_error err;
    char **p, *doc;
    size_t n;
    assert_int_equal(
        cordon_model_apply(f->db, "{\"op\":\"put_subject\",\"id\":\"ann\"}", NULL, NULL), 0);
    store_fail_after(0);
    int rc = cordon_model_apply(f->db, "{\"op\":\"put_subject\",\"id\":\"ben\"}", NULL, &err);
    store_fail_after(-1);
    assert_int_equal(rc, CORDON_ERR_IO);
    assert_int_equal(cordon_is_authorized(f->db, &rq, &d, &err), CORDON_ERR_INTERNAL);
    assert_int_equal(cordon_view(f->db, "ann", &p, &n, NULL, &err), CORDON_ERR_INTERNAL);
    assert_int_equal(cordon_model_export(f->db, &doc, &err), CORDON_ERR_INTERNAL);
    assert_int_equal(cordon_explain(f->db, "docs", "ann", "a", &x, &err), CORDON_ERR_INTERNAL);
    assert_int_equal(cordon_check(f->db, &err), CORDON_ERR_IO); /* and says so */
    assert_non_null(strstr(err.message, "permission model"));
    api_db_reopen(f->dir, &f->db);
    assert_int_equal(cordon_check(f->db, &err), CORDON_OK);
    assert_int_equal(cordon_model_export(f->db, &doc, NULL), 0);
    assert_non_null(strstr(doc, "\"ann\""));
    assert_null(strstr(doc, "\"ben\""));
    cordon_free(doc);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_failed_put_changes_nothing_visible, setup, teardown),
        cmocka_unit_test_setup_teardown(test_failed_set_acl_changes_nothing_visible, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_failed_model_commit_fails_every_model_read_closed,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(test_failed_delete_changes_nothing_visible, setup,
                                        teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
