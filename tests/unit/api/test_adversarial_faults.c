/* test_adversarial_faults.c: fails each allocation in turn (cdn_mem_fail_after) during put,
 * set_acl, delete, search, get, collection create and model ops. Each call must either fail
 * cleanly and change nothing, or succeed; never crash, leak, or show a subject a chunk it may
 * not read. A collection that fails closed after a successful write must come back whole from
 * a reopen. Relies on cmocka, tests/testutil.h and base/mem.h (the injection hook). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "api_testutil.h"
#include "base/mem.h"
#include "cordon.h"

#define DIM 4
#define NFILL 30
#define MAX_STEPS 2000

typedef struct fx {
    char dir[64];
    cordon_t *db;
    int r_group;            /* chunk "r" is readable by group:g<r_group> */
    int present[MAX_STEPS]; /* chunk "n<i>" exists */
    int reopened;           /* times a collection failed closed and was reopened */
    int step;               /* the allocation failed in this step, for messages */
} fx_t;

static const char *const G0[] = {"group:g0"}, *const G1[] = {"group:g1"},
                         *const G2[] = {"group:g2"};

/* After a call made with cdn_mem_fail_after(n): 1 if the injected failure happened inside
 * the call, 0 if it is still pending (the call made at most n allocations). Disarms. */
static int disarm(long n)
{
    int used = 1;
    for (long i = 0; i <= n && used; i++) {
        void *p = cdn_malloc(1);
        used = p != NULL;
        cdn_free(p);
    }
    cdn_mem_fail_after(-1);
    return used;
}

static int setup(void **state)
{
    fx_t *f = calloc(1, sizeof *f);
    api_db_open(f->dir, sizeof f->dir, &f->db);
    api_docs_create(f->db, DIM, CORDON_METRIC_COSINE);
    static char ids[NFILL][16];
    cordon_chunk c[NFILL + 1];
    cordon_field fl = {"body", "common filler"}, rf = {"body", "common target"};
    uint64_t seed = 8;
    static float v[NFILL + 1][DIM];
    for (int i = 0; i <= NFILL; i++) {
        for (int d = 0; d < DIM; d++)
            v[i][d] = tu_randf(&seed) + 0.1f;
        if (i < NFILL)
            snprintf(ids[i], sizeof ids[i], "fill%d", i);
        c[i] = (cordon_chunk){.id = i < NFILL ? ids[i] : "r",
                              .vector = v[i],
                              .fields = i < NFILL ? &fl : &rf,
                              .n_fields = 1,
                              .allowed = i % 3 ? G1 : G0,
                              .n_allowed = 1};
    }
    c[NFILL].allowed = G0;
    f->r_group = 0;
    assert_int_equal(cordon_put(f->db, "docs", c, NFILL + 1, NULL, NULL), 0);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fx_t *f = *state;
    cdn_mem_fail_after(-1);
    api_db_close(f->dir, f->db);
    free(f);
    return 0;
}

static int can_get(cordon_t *db, const char *const *p, const char *id)
{
    cordon_subject s = {.principals = p, .n_principals = 1};
    cordon_record *r = NULL;
    int rc = cordon_get(db, "docs", &s, id, &r, NULL);
    cordon_record_free(r);
    return rc == 0;
}

/* Searches as group:g<g> in two modes; 1 if the collection fails closed (INTERNAL), else
 * checks the hits against the expected state. */
static int check_search(fx_t *f, int g, int steps)
{
    const char *const *p = g == 0 ? G0 : g == 1 ? G1 : G2;
    cordon_subject s = {.principals = p, .n_principals = 1};
    float q[DIM] = {1, 1, 1, 1};
    cordon_query qs[2] = {{.vector = q, .k = 200, .strategy = CORDON_STRATEGY_EXACT},
                          {.text = "common", .k = 200}};
    for (int m = 0; m < 2; m++) {
        cordon_result *r;
        cordon_error err;
        int rc = cordon_search(f->db, "docs", &s, &qs[m], &r, &err);
        if (rc == CORDON_ERR_INTERNAL)
            return 1;
        if (rc)
            fail_msg("search failed without injection: %s", err.message);
        int saw_r = 0;
        for (size_t h = 0; h < r->n_hits; h++) {
            const char *id = r->hits[h].id;
            int i;
            if (!strcmp(id, "r"))
                saw_r = 1;
            else if (sscanf(id, "n%d", &i) == 1 && (g != 0 || i >= steps || !f->present[i]))
                fail_msg("step %d: LEAK or ghost: %s seen by g%d", f->step, id, g);
            else if (!strncmp(id, "fill", 4) && (strtol(id + 4, NULL, 10) % 3 ? 1 : 0) != g)
                fail_msg("step %d: LEAK: %s seen by g%d", f->step, id, g);
        }
        cordon_result_free(r);
        if (saw_r != (f->r_group == g))
            fail_msg("step %d mode %d: chunk r (for g%d) %s by g%d", f->step, m, f->r_group,
                     saw_r ? "seen" : "missed", g);
    }
    return 0;
}

/* The state as the test believes it, through search and get; reopens once if the engine
 * failed closed. */
static void verify(fx_t *f, int steps)
{
    int broken = 0;
    for (int g = 0; g < 3; g++)
        broken |= check_search(f, g, steps);
    if (broken) {
        f->reopened++;
        cordon_close(f->db);
        assert_int_equal(cordon_open(f->dir, NULL, &f->db, NULL), 0);
        for (int g = 0; g < 3; g++)
            if (check_search(f, g, steps))
                fail_msg("still failing closed after a reopen");
    }
    assert_int_equal(can_get(f->db, G0, "r"), f->r_group == 0);
    assert_int_equal(can_get(f->db, G2, "r"), f->r_group == 2);
    for (int i = 0; i < steps; i++) {
        char id[16];
        snprintf(id, sizeof id, "n%d", i);
        assert_int_equal(can_get(f->db, G0, id), f->present[i]);
        assert_false(can_get(f->db, G1, id));
    }
}

static void test_put_under_allocation_failures(void **state)
{
    fx_t *f = *state;
    int n;
    for (n = 0; n < MAX_STEPS; n++) {
        char id[16];
        uint64_t rev = cordon_revision(f->db);
        f->step = n;
        int g = f->r_group == 0 ? 2 : 0;
        float v[DIM] = {1, (float)n, 1, 1}, w[DIM] = {2, 1, (float)n, 1};
        cordon_field fl = {"body", "common new"};
        snprintf(id, sizeof id, "n%d", n);
        cordon_chunk c[2] = {{.id = "r",
                              .vector = v,
                              .fields = &fl,
                              .n_fields = 1,
                              .metadata_json = "{\"a\":[1,2,{\"b\":null}]}",
                              .allowed = g ? G2 : G0,
                              .n_allowed = 1},
                             {.id = id,
                              .vector = w,
                              .fields = &fl,
                              .n_fields = 1,
                              .allowed = G0,
                              .n_allowed = 1,
                              .denied = G1,
                              .n_denied = 1}};
        cdn_mem_fail_after(n);
        int rc = cordon_put(f->db, "docs", c, 2, NULL, NULL);
        int used = disarm(n);
        if (rc == 0) {
            f->r_group = g;
            f->present[n] = 1;
        } else {
            assert_int_equal(rc, CORDON_ERR_NOMEM);
            assert_int_equal(cordon_revision(f->db), rev);
        }
        verify(f, n + 1);
        if (!used)
            break;
    }
    assert_true(n < MAX_STEPS);
    print_message("put: %d allocations failed in turn; %d fail-closed reopens\n", n, f->reopened);
}

static void test_set_acl_and_delete_under_allocation_failures(void **state)
{
    fx_t *f = *state;
    int n;
    for (n = 0; n < MAX_STEPS; n++) {
        uint64_t rev = cordon_revision(f->db);
        f->step = n;
        int g = f->r_group == 0 ? 2 : 0;
        const char *newp[] = {g ? "g2" : "group:g0", "user:fresh-principal"};
        cordon_acl_change ch[2] = {{"r", newp, 2, G1, 1, NULL, 0},
                                   {"fill1", G1, 1, NULL, 0, NULL, 0}};
        cdn_mem_fail_after(n);
        int rc = cordon_set_acl(f->db, "docs", ch, 2, NULL, NULL);
        int used = disarm(n);
        if (rc == 0)
            f->r_group = g;
        else
            assert_int_equal(cordon_revision(f->db), rev);
        verify(f, 0);
        if (!used)
            break;
    }
    assert_true(n < MAX_STEPS);
    /* Deletes: put one chunk per step, then delete it with failures injected. */
    for (n = 0; n < MAX_STEPS; n++) {
        char id[16];
        f->step = n;
        float w[DIM] = {1, 2, 3, (float)n};
        snprintf(id, sizeof id, "n%d", n);
        cordon_chunk c = {.id = id, .vector = w, .allowed = G0, .n_allowed = 1};
        assert_int_equal(cordon_put(f->db, "docs", &c, 1, NULL, NULL), 0);
        f->present[n] = 1;
        const char *ids[] = {id, "never-was"};
        size_t deleted = 7;
        cdn_mem_fail_after(n);
        int rc = cordon_delete(f->db, "docs", ids, 2, &deleted, NULL, NULL);
        int used = disarm(n);
        if (rc == 0) {
            assert_int_equal(deleted, 1);
            f->present[n] = 0;
        }
        verify(f, n + 1);
        if (!used)
            break;
    }
    assert_true(n < MAX_STEPS);
    print_message("set_acl/delete: %d fail-closed reopens\n", f->reopened);
}

static void test_search_and_get_under_allocation_failures(void **state)
{
    fx_t *f = *state;
    float q[DIM] = {1, 0.5f, 1, 1};
    cordon_query modes[] = {
        {.vector = q, .k = 5, .strategy = CORDON_STRATEGY_EXACT},
        {.vector = q, .k = 5, .strategy = CORDON_STRATEGY_PREFILTER},
        {.vector = q, .k = 5, .strategy = CORDON_STRATEGY_POSTFILTER},
        {.text = "common target", .k = 5},
        {.vector = q, .text = "filler", .k = 5},
        {.vector = q, .text = "filler", .k = 5, .fusion = CORDON_FUSION_LINEAR},
        {.query_json = "{\"match\":{\"body\":\"common\"}}", .k = 5},
        /* last: a failed allocation in the bool parser has crashed the process */
        {.query_json = "{\"bool\":{\"must\":[{\"match\":{\"body\":\"common\"}}],"
                       "\"must_not\":[{\"match\":{\"body\":\"target\"}}]}}",
         .k = 5},
    };
    const char *p[] = {"g1", "user:nobody"};
    cordon_subject s = {.principals = p, .n_principals = 2};
    for (size_t m = 0; m < sizeof modes / sizeof modes[0]; m++) {
        cordon_result *ref;
        assert_int_equal(cordon_search(f->db, "docs", &s, &modes[m], &ref, NULL), 0);
        assert_true(ref->n_hits > 0);
        for (int n = 0; n < MAX_STEPS; n++) {
            cordon_result *r = NULL;
            cdn_mem_fail_after(n);
            int rc = cordon_search(f->db, "docs", &s, &modes[m], &r, NULL);
            int used = disarm(n);
            if (rc == 0) {
                /* Succeeded despite a failed allocation: the same answer, not a partial one. */
                assert_int_equal(r->n_hits, ref->n_hits);
                for (size_t h = 0; h < r->n_hits; h++)
                    assert_string_equal(r->hits[h].id, ref->hits[h].id);
                assert_int_equal(r->readable, ref->readable);
                cordon_result_free(r);
            } else {
                assert_null(r);
                assert_int_equal(rc, CORDON_ERR_NOMEM);
            }
            if (!used)
                break;
        }
        cordon_result_free(ref);
    }
    for (int n = 0; n < MAX_STEPS; n++) {
        cordon_record *rec = NULL, *hidden = NULL;
        cdn_mem_fail_after(n);
        int rc = cordon_get(f->db, "docs", &s, "fill1", &rec, NULL);
        int rc2 = cordon_get(f->db, "docs", &s, "fill0", &hidden, NULL);
        int used = disarm(n);
        assert_true(rc == 0 || rc == CORDON_ERR_NOMEM);
        if (rc == 0) {
            assert_string_equal(rec->id, "fill1");
            assert_string_equal(rec->fields[0].value, "common filler");
        }
        /* A hidden chunk never comes back, whatever failed. */
        assert_int_not_equal(rc2, 0);
        assert_null(hidden);
        cordon_record_free(rec);
        if (!used)
            break;
    }
}

/* A collection create that fails part way must not leave files that break the next create of
 * the same name (which gets the same internal id). */
static void test_failed_collection_create_leaves_nothing_in_the_way(void **state)
{
    fx_t *f = *state;
    const char *tf[] = {"body"};
    for (int n = 0; n < MAX_STEPS; n++) {
        cordon_collection_spec a = {.asserted_principals = 1,
                                    .name = "other",
                                    .dim = 8,
                                    .text_fields = tf,
                                    .n_text_fields = 1};
        cordon_collection_spec b = {.asserted_principals = 1, .name = "other", .dim = 16};
        cordon_error err;
        cdn_mem_fail_after(n);
        int rc = cordon_collection_create(f->db, &a, &err);
        int used = disarm(n);
        if (rc) {
            assert_int_equal(rc, CORDON_ERR_NOMEM);
            rc = cordon_collection_create(f->db, &b, &err);
            if (rc)
                fail_msg("after a create failed at allocation %d, another create of the same "
                         "name fails: %s",
                         n, err.message);
        }
        float v[16] = {1};
        cordon_chunk c = {.id = "x", .vector = v, .allowed = G0, .n_allowed = 1};
        cordon_collection_info info;
        assert_int_equal(cordon_collection_info_get(f->db, "other", &info, NULL), 0);
        assert_int_equal(cordon_put(f->db, "other", &c, 1, NULL, NULL), 0);
        assert_int_equal(cordon_collection_drop(f->db, "other", NULL), 0);
        if (!used)
            break;
    }
}

/* A create that reports failure must not exist after a reopen either (same dim each time, so
 * that leftover files do not get in the way of this check). */
static void test_failed_collection_create_is_absent_after_reopen(void **state)
{
    fx_t *f = *state;
    /* Eight collections fill the registry's first allocation: the next create must grow it,
     * after its transaction has committed. */
    for (int i = 1; i < 8; i++) {
        char name[32];
        snprintf(name, sizeof name, "filler%d", i);
        cordon_collection_spec fs = {.asserted_principals = 1, .name = name};
        assert_int_equal(cordon_collection_create(f->db, &fs, NULL), 0);
    }
    for (int n = 0; n < MAX_STEPS; n++) {
        cordon_collection_spec a = {.asserted_principals = 1, .name = "again", .dim = 8};
        cordon_collection_info info;
        cdn_mem_fail_after(n);
        int rc = cordon_collection_create(f->db, &a, NULL);
        int used = disarm(n);
        int in_memory = cordon_collection_info_get(f->db, "again", &info, NULL) == 0;
        cordon_close(f->db);
        assert_int_equal(cordon_open(f->dir, NULL, &f->db, NULL), 0);
        int on_disk = cordon_collection_info_get(f->db, "again", &info, NULL) == 0;
        if (in_memory != (rc == 0) || on_disk != (rc == 0))
            fail_msg("allocation %d: create returned %d; in memory %d, after reopen %d", n, rc,
                     in_memory, on_disk);
        if (rc == 0)
            assert_int_equal(cordon_collection_drop(f->db, "again", NULL), 0);
        if (!used)
            break;
    }
}

static void test_model_ops_under_allocation_failures(void **state)
{
    fx_t *f = *state;
    const char *setup_ops[] = {
        "{\"op\":\"put_subject\",\"id\":\"alice\"}", "{\"op\":\"put_group\",\"id\":\"g0\"}",
        "{\"op\":\"put_role\",\"id\":\"r\",\"permissions\":[{\"resource\":\"collection:docs\","
        "\"action\":\"*\"}]}",
        "{\"op\":\"grant\",\"to\":\"alice\",\"role\":\"r\"}"};
    for (size_t i = 0; i < 4; i++)
        assert_int_equal(cordon_model_apply(f->db, setup_ops[i], NULL, NULL), 0);
    cordon_subject alice = {.subject_id = "alice"};
    int member = 0;
    for (int n = 0; n < MAX_STEPS; n++) {
        const char *op = member ? "{\"op\":\"remove_member\",\"group\":\"g0\",\"member\":\"alice\"}"
                                : "{\"op\":\"add_member\",\"group\":\"g0\",\"member\":\"alice\"}";
        cdn_mem_fail_after(n);
        int rc = cordon_model_apply(f->db, op, NULL, NULL);
        int used = disarm(n);
        if (rc == 0)
            member = !member;
        cordon_record *rec = NULL;
        int grc = cordon_get(f->db, "docs", &alice, "r", &rec, NULL);
        cordon_record_free(rec);
        if (grc == CORDON_ERR_INTERNAL) { /* the model failed closed: a reopen replays it */
            f->reopened++;
            cordon_close(f->db);
            assert_int_equal(cordon_open(f->dir, NULL, &f->db, NULL), 0);
            grc = cordon_get(f->db, "docs", &alice, "r", &rec, NULL);
            cordon_record_free(rec);
        }
        if ((grc == 0) != member)
            fail_msg("after op %s returned %d at allocation %d: alice %s read r", op, rc, n,
                     grc == 0 ? "can" : "cannot");
        if (!used)
            break;
    }
}

int main(void)
{
#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)
    const struct CMUnitTest tests[] = {
        T(test_put_under_allocation_failures),
        T(test_set_acl_and_delete_under_allocation_failures),
        T(test_search_and_get_under_allocation_failures),
        T(test_failed_collection_create_leaves_nothing_in_the_way),
        T(test_failed_collection_create_is_absent_after_reopen),
        T(test_model_ops_under_allocation_failures),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
