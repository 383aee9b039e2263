/* test_model.c: searches as subjects of the permission model: views from nested groups, the
 * search permission, revocation visible to the next search (also from other threads), replay
 * of the model at reopen, bad operations changing nothing, explanations.
 * Relies on the public API and pthreads. */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "api_testutil.h"
#include "cordon.h"
#include "store/store.h"

#define DIM 8

typedef struct fx {
    char dir[64];
    cordon_t *db;
} fx_t;

static void op(cordon_t *db, const char *json)
{
    cordon_error err;
    int rc = cordon_model_apply(db, json, NULL, &err);
    if (rc)
        fail_msg("op %s failed: %s", json, err.message);
}

static int setup(void **state)
{
    fx_t *f = calloc(1, sizeof *f);
    cordon_collection_spec spec = {.name = "docs", .dim = DIM, .metric = CORDON_METRIC_L2};
    api_db_open(f->dir, sizeof f->dir, &f->db);
    assert_int_equal(cordon_collection_create(f->db, &spec, NULL), 0);
    op(f->db, "{\"op\":\"put_subject\",\"id\":\"alice\",\"kind\":\"user\"}");
    op(f->db, "{\"op\":\"put_subject\",\"id\":\"bob\",\"kind\":\"user\"}");
    op(f->db, "{\"op\":\"put_subject\",\"id\":\"mallory\",\"kind\":\"user\"}");
    op(f->db, "{\"op\":\"put_group\",\"id\":\"staff\"}");
    op(f->db, "{\"op\":\"put_group\",\"id\":\"eng\"}");
    op(f->db, "{\"op\":\"put_group\",\"id\":\"team-a\"}");
    op(f->db, "{\"op\":\"add_member\",\"group\":\"eng\",\"member\":\"team-a\","
              "\"member_kind\":\"group\"}");
    op(f->db, "{\"op\":\"add_member\",\"group\":\"staff\",\"member\":\"eng\","
              "\"member_kind\":\"group\"}");
    op(f->db, "{\"op\":\"add_member\",\"group\":\"team-a\",\"member\":\"alice\"}");
    op(f->db, "{\"op\":\"add_member\",\"group\":\"staff\",\"member\":\"bob\"}");
    op(f->db, "{\"op\":\"put_role\",\"id\":\"reader\",\"permissions\":["
              "{\"resource\":\"collection:docs\",\"action\":\"search\"},"
              "{\"resource\":\"collection:docs\",\"action\":\"read\"}]}");
    op(f->db, "{\"op\":\"grant\",\"to\":\"staff\",\"to_kind\":\"group\",\"role\":\"reader\"}");
    const char *eng[] = {"group:eng"}, *staff[] = {"staff"};
    float v1[DIM] = {1}, v2[DIM] = {0, 1};
    cordon_chunk c[2] = {{.id = "eng-doc", .vector = v1, .allowed = eng, .n_allowed = 1},
                         {.id = "staff-doc", .vector = v2, .allowed = staff, .n_allowed = 1}};
    assert_int_equal(cordon_put(f->db, "docs", c, 2, NULL, NULL), 0);
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

/* Number of hits subject gets, or a negative status. */
static int hits_as(cordon_t *db, const char *subject, const char *want_id)
{
    float q[DIM] = {1};
    cordon_subject s = {.subject_id = subject};
    cordon_query qu = {.vector = q, .k = 10};
    cordon_result *r;
    int rc = cordon_search(db, "docs", &s, &qu, &r, NULL), n = 0;
    if (rc)
        return rc;
    for (size_t i = 0; i < r->n_hits; i++)
        n += !want_id || !strcmp(r->hits[i].id, want_id);
    cordon_result_free(r);
    return n;
}

static void test_nested_groups_open_chunks_to_subjects(void **state)
{
    fx_t *f = *state;
    assert_int_equal(hits_as(f->db, "alice", NULL), 2); /* team-a < eng < staff */
    assert_int_equal(hits_as(f->db, "bob", "staff-doc"), 1);
    assert_int_equal(hits_as(f->db, "bob", "eng-doc"), 0);
    char **p;
    size_t n;
    assert_int_equal(cordon_view(f->db, "alice", &p, &n, NULL, NULL), 0);
    assert_int_equal(n, 5); /* eng, staff, team-a, role:reader, user:alice */
    assert_string_equal(p[0], "group:eng");
    assert_string_equal(p[n - 1], "user:alice");
    cordon_strings_free(p, n);
}

static void test_subject_without_search_permission_sees_no_collection(void **state)
{
    fx_t *f = *state;
    cordon_error e1, e2;
    float q[DIM] = {1};
    cordon_subject s = {.subject_id = "mallory"};
    cordon_query qu = {.vector = q};
    cordon_result *r;
    assert_int_equal(cordon_search(f->db, "docs", &s, &qu, &r, &e1), CORDON_ERR_NOT_FOUND);
    assert_int_equal(cordon_search(f->db, "nothere", &s, &qu, &r, &e2), CORDON_ERR_NOT_FOUND);
    assert_non_null(strstr(e1.message, "no such collection \"docs\""));
    cordon_subject ghost = {.subject_id = "nobody-by-this-name"};
    assert_int_equal(cordon_search(f->db, "docs", &ghost, &qu, &r, NULL), CORDON_ERR_NOT_FOUND);
    cordon_record *rec;
    assert_int_equal(cordon_get(f->db, "docs", &s, "staff-doc", &rec, NULL), CORDON_ERR_NOT_FOUND);
    cordon_subject bob = {.subject_id = "bob"};
    assert_int_equal(cordon_get(f->db, "docs", &bob, "staff-doc", &rec, NULL), 0);
    cordon_record_free(rec);
}

static void test_removed_membership_hides_chunk_on_next_search(void **state)
{
    fx_t *f = *state;
    assert_int_equal(hits_as(f->db, "alice", "eng-doc"), 1);
    uint64_t r0 = cordon_revision(f->db), r1;
    assert_int_equal(cordon_model_apply(f->db,
                                        "{\"op\":\"remove_member\",\"group\":\"team-a\","
                                        "\"member\":\"alice\"}",
                                        &r1, NULL),
                     0);
    assert_true(r1 > r0);
    assert_int_equal(hits_as(f->db, "alice", NULL), CORDON_ERR_NOT_FOUND); /* lost the grant */
    op(f->db, "{\"op\":\"add_member\",\"group\":\"staff\",\"member\":\"alice\"}");
    assert_int_equal(hits_as(f->db, "alice", "eng-doc"), 0);
    assert_int_equal(hits_as(f->db, "alice", "staff-doc"), 1);
}

static void test_model_survives_reopen(void **state)
{
    fx_t *f = *state;
    char *before, *after;
    assert_int_equal(cordon_model_export(f->db, &before, NULL), 0);
    uint64_t rev = cordon_revision(f->db);
    api_db_reopen(f->dir, &f->db);
    assert_int_equal(cordon_revision(f->db), rev);
    assert_int_equal(cordon_model_export(f->db, &after, NULL), 0);
    assert_string_equal(before, after);
    assert_int_equal(hits_as(f->db, "alice", NULL), 2);
    /* An import replaces the log; reopen replays the imported document. */
    assert_int_equal(cordon_model_import(f->db, before, NULL, NULL), 0);
    api_db_reopen(f->dir, &f->db);
    cordon_free(after);
    assert_int_equal(cordon_model_export(f->db, &after, NULL), 0);
    assert_string_equal(before, after);
    cordon_free(before);
    cordon_free(after);
}

struct log_count {
    size_t records, bytes, imports;
};

static int count_record(void *ctx, const void *key, size_t klen, const void *val, size_t vlen)
{
    struct log_count *c = ctx;
    (void)key;
    (void)klen;
    c->records++;
    c->bytes += vlen;
    c->imports += vlen && ((const char *)val)[0] == 'I';
    return 0;
}

/* The model log as stored: its records, bytes and whole-model records. */
static struct log_count model_log(const char *dir)
{
    struct log_count c = {0};
    store_t *st;
    store_txn_t *t;
    assert_int_equal(store_open(dir, 0, &st, NULL), 0);
    assert_int_equal(store_txn_begin(st, 0, &t, NULL), 0);
    assert_int_equal(store_scan_prefix(t, STORE_MODEL_LOG, "", 0, count_record, &c), 0);
    store_txn_abort(t);
    store_close(st);
    return c;
}

/* A day of edits (one subject's attributes rewritten again and again) would grow the log
 * without bound; it is folded into one record of the model once it outgrows it, and the model
 * reopens the same at the same revision. */
static void test_model_log_folds_when_it_outgrows_the_model(void **state)
{
    fx_t *f = *state;
    char opbuf[4300], big[4097], *before, *after;
    memset(big, 'x', 4096);
    big[4096] = '\0';
    for (int i = 0; i < 400; i++) { /* 400 records of about 4 KiB: 1.6 MiB of log */
        snprintf(opbuf, sizeof opbuf,
                 "{\"op\":\"put_subject\",\"id\":\"mallory\",\"attributes\":{\"n\":%d,"
                 "\"pad\":\"%s\"}}",
                 i, big);
        op(f->db, opbuf);
    }
    op(f->db, "{\"op\":\"add_member\",\"group\":\"eng\",\"member\":\"mallory\"}");
    assert_int_equal(cordon_model_export(f->db, &before, NULL), 0);
    uint64_t rev = cordon_revision(f->db);
    cordon_close(f->db);
    f->db = NULL;
    struct log_count c = model_log(f->dir);
    assert_int_equal(c.imports, 1);     /* folded once, at about 1 MiB */
    assert_true(c.bytes < 1200 * 1024); /* not the 1.6 MiB written */
    assert_true(c.records < 400);
    assert_int_equal(cordon_open(f->dir, NULL, &f->db, NULL), 0);
    assert_int_equal(cordon_revision(f->db), rev);
    assert_int_equal(cordon_model_export(f->db, &after, NULL), 0);
    assert_string_equal(before, after);
    assert_int_equal(hits_as(f->db, "mallory", "eng-doc"), 1); /* the last op is there */
    cordon_free(before);
    cordon_free(after);
}

/* Several operations apply as one change: all or none, one revision, and so after a reopen. */
static void test_batch_applies_all_or_none_in_one_revision(void **state)
{
    fx_t *f = *state;
    char *before, *after;
    cordon_error err;
    uint64_t rev0 = cordon_revision(f->db), rev = 0;
    assert_int_equal(cordon_model_export(f->db, &before, NULL), 0);
    /* The third names a subject that does not exist: the first two must not stay. */
    const char *bad = "[{\"op\":\"remove_member\",\"group\":\"team-a\",\"member\":\"alice\"},"
                      "{\"op\":\"put_group\",\"id\":\"new\"},"
                      "{\"op\":\"add_member\",\"group\":\"new\",\"member\":\"nobody\"}]";
    assert_int_equal(cordon_model_apply_batch(f->db, bad, &rev, &err), CORDON_ERR_NOT_FOUND);
    assert_non_null(strstr(err.message, "ops[2]"));
    assert_non_null(strstr(err.message, "none of the 3"));
    assert_int_equal(cordon_revision(f->db), rev0);
    assert_int_equal(cordon_model_export(f->db, &after, NULL), 0);
    assert_string_equal(before, after);
    cordon_free(after);
    assert_int_equal(hits_as(f->db, "alice", "eng-doc"), 1);
    /* A good batch: alice leaves team-a (and so eng) and joins staff directly, one revision. */
    const char *good = "[{\"op\":\"remove_member\",\"group\":\"team-a\",\"member\":\"alice\"},"
                       "{\"op\":\"add_member\",\"group\":\"staff\",\"member\":\"alice\"}]";
    assert_int_equal(cordon_model_apply_batch(f->db, good, &rev, &err), 0);
    assert_int_equal(rev, rev0 + 1);
    assert_int_equal(cordon_revision(f->db), rev0 + 1);
    assert_int_equal(hits_as(f->db, "alice", "eng-doc"), 0);
    assert_int_equal(hits_as(f->db, "alice", "staff-doc"), 1);
    assert_int_equal(
        cordon_model_apply_batch(f->db, "{\"op\":\"put_group\",\"id\":\"x\"}", NULL, &err),
        CORDON_ERR_INVALID); /* not an array */
    cordon_free(before);
    assert_int_equal(cordon_model_export(f->db, &before, NULL), 0);
    api_db_reopen(f->dir, &f->db);
    assert_int_equal(cordon_revision(f->db), rev0 + 1);
    assert_int_equal(cordon_model_export(f->db, &after, NULL), 0);
    assert_string_equal(before, after);
    assert_int_equal(hits_as(f->db, "alice", "staff-doc"), 1);
    cordon_free(before);
    cordon_free(after);
}

static void test_bad_operations_change_nothing(void **state)
{
    fx_t *f = *state;
    static const char *const bad[] = {
        "{\"op\":\"add_member\",\"group\":\"team-a\",\"member\":\"staff\","
        "\"member_kind\":\"group\"}", /* cycle */
        "{\"op\":\"explode\"}",
        "{\"op\":\"add_member\",\"group\":\"eng\",\"member\":\"zed\"}", /* unknown subject */
        "{\"op\":\"put_role\",\"id\":\"x\",\"permissions\":[{\"resource\":\"collection:docs\","
        "\"action\":\"search\",\"condition\":{\"Frobnicate\":[1,2]}}]}",
        "not json",
    };
    char *before, *after;
    assert_int_equal(cordon_model_export(f->db, &before, NULL), 0);
    uint64_t rev = cordon_revision(f->db);
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        cordon_error err;
        assert_int_not_equal(cordon_model_apply(f->db, bad[i], NULL, &err), 0);
        assert_true(strlen(err.message) > 10);
    }
    assert_int_equal(cordon_revision(f->db), rev);
    assert_int_equal(cordon_model_export(f->db, &after, NULL), 0);
    assert_string_equal(before, after);
    cordon_free(before);
    cordon_free(after);
}

/* Refused like a missing collection, so asserted principals cannot learn that it exists. */
static void test_collection_refuses_asserted_principals_unless_configured(void **state)
{
    fx_t *f = *state;
    const char *claims[] = {"group:eng"};
    float q[DIM] = {1};
    cordon_subject s = {.principals = claims, .n_principals = 1};
    cordon_query qu = {.vector = q};
    cordon_result *r;
    cordon_record *rec;
    cordon_error err, missing;
    assert_int_equal(cordon_search(f->db, "docs", &s, &qu, &r, &err), CORDON_ERR_NOT_FOUND);
    assert_string_equal(err.message, "no such collection \"docs\"");
    assert_int_equal(cordon_get(f->db, "docs", &s, "eng-doc", &rec, &err), CORDON_ERR_NOT_FOUND);
    assert_string_equal(err.message, "no such collection \"docs\"");
    assert_int_equal(cordon_search(f->db, "nope", &s, &qu, &r, &missing), CORDON_ERR_NOT_FOUND);
    assert_string_equal(missing.message, "no such collection \"nope\"");
}

static void test_explain_names_the_deciding_principal(void **state)
{
    fx_t *f = *state;
    cordon_explanation x;
    assert_int_equal(cordon_explain(f->db, "docs", "alice", "eng-doc", &x, NULL), 0);
    assert_true(x.readable);
    assert_string_equal(x.principal, "group:eng");
    assert_int_equal(cordon_explain(f->db, "docs", "bob", "eng-doc", &x, NULL), 0);
    assert_false(x.readable);
    cordon_decision d;
    cordon_authz_request rq = {.subject = "bob", .resource = "collection:docs", .action = "SEARCH"};
    assert_int_equal(cordon_is_authorized(f->db, &rq, &d, NULL), 0);
    assert_true(d.authorized);
    assert_string_equal(d.reason, "PERMISSION_GRANTED_NO_CONDITION");
    assert_string_equal(d.role, "reader");
    assert_string_equal(d.granted_to, "group:staff");
}

typedef struct race {
    cordon_t *db;
    atomic_int revoked; /* 1 once remove_member has returned */
    atomic_int stop;
    atomic_int leaks, searches;
} race_t;

static void *searcher(void *arg)
{
    race_t *r = arg;
    while (!atomic_load(&r->stop)) {
        int after = atomic_load(&r->revoked); /* read before the search starts */
        int n = hits_as(r->db, "bob", "eng-doc");
        if (after && n > 0)
            atomic_fetch_add(&r->leaks, 1);
        atomic_fetch_add(&r->searches, 1);
    }
    return NULL;
}

static void test_revocation_is_seen_by_every_later_search_in_other_threads(void **state)
{
    fx_t *f = *state;
    op(f->db, "{\"op\":\"add_member\",\"group\":\"eng\",\"member\":\"bob\"}");
    assert_int_equal(hits_as(f->db, "bob", "eng-doc"), 1);
    race_t r = {.db = f->db};
    pthread_t th[3];
    for (int i = 0; i < 3; i++)
        pthread_create(&th[i], NULL, searcher, &r);
    while (atomic_load(&r.searches) < 50)
        usleep(100);
    op(f->db, "{\"op\":\"remove_member\",\"group\":\"eng\",\"member\":\"bob\"}");
    atomic_store(&r.revoked, 1);
    int seen = atomic_load(&r.searches);
    while (atomic_load(&r.searches) < seen + 200)
        usleep(100);
    atomic_store(&r.stop, 1);
    for (int i = 0; i < 3; i++)
        pthread_join(th[i], NULL);
    assert_int_equal(atomic_load(&r.leaks), 0);
    assert_int_equal(hits_as(f->db, "bob", "eng-doc"), 0);
}

/* A condition as long as the model allows (AUTHZ_COND_TEXT_MAX - 1 bytes of compact JSON)
 * reaches the decision whole, and one byte more is refused when written: no decision can carry
 * a condition cut short, which would read as a different condition. */
static void test_longest_condition_reaches_the_decision_whole(void **state)
{
    fx_t *f = *state;
    const char *head = "{\"StringEquals\":{\"context.a\":\"", *tail = "\"}}";
    char cond[CORDON_CONDITION_MAX + 1], opj[CORDON_CONDITION_MAX + 256];
    for (size_t want = CORDON_CONDITION_MAX - 1; want <= CORDON_CONDITION_MAX; want++) {
        size_t pad = want - strlen(head) - strlen(tail);
        memcpy(cond, head, strlen(head));
        memset(cond + strlen(head), 'x', pad);
        memcpy(cond + strlen(head) + pad, tail, strlen(tail) + 1);
        assert_int_equal(strlen(cond), want);
        snprintf(opj, sizeof opj,
                 "{\"op\":\"grant\",\"to\":\"mallory\",\"permission\":{"
                 "\"resource\":\"doc:long\",\"action\":\"read\",\"condition\":%s}}",
                 cond);
        cordon_error err;
        int rc = cordon_model_apply(f->db, opj, NULL, &err);
        if (want == CORDON_CONDITION_MAX) {
            assert_int_equal(rc, CORDON_ERR_LIMIT);
            continue;
        }
        assert_int_equal(rc, 0);
        cordon_authz_request req = {.subject = "mallory", .resource = "doc:long", .action = "read"};
        cordon_decision d;
        assert_int_equal(cordon_is_authorized(f->db, &req, &d, NULL), 0);
        assert_string_equal(d.reason, "PERMISSION_FOUND_CONDITION_NOT_MET");
        assert_int_equal(strlen(d.condition), want);
        assert_string_equal(d.condition, cond);
        assert_string_equal(d.granted_to, "user:mallory");
    }
}

/* The batch answers what the single question answers, for every resource, at one revision;
 * bad arguments are refused with a message. */
static void test_batch_is_authorized_matches_single_decisions(void **state)
{
    fx_t *f = *state;
    const char *res[] = {"collection:docs", "collection:other", "collection:docs", "bad"};
    const char *actions[] = {"search", "write"};
    cordon_decision batch[4], one;
    cordon_error err;
    for (int a = 0; a < 2; a++) {
        cordon_authz_request rq = {.subject = "bob", .action = actions[a]};
        assert_int_equal(cordon_is_authorized_batch(f->db, &rq, res, 4, batch, &err), 0);
        for (int i = 0; i < 4; i++) {
            rq.resource = res[i];
            assert_int_equal(cordon_is_authorized(f->db, &rq, &one, NULL), 0);
            assert_int_equal(batch[i].authorized, one.authorized);
            assert_string_equal(batch[i].reason, one.reason);
            assert_string_equal(batch[i].role, one.role);
            assert_int_equal(batch[i].revision, batch[0].revision);
        }
        assert_int_equal(batch[0].authorized, a == 0); /* reader grants search, not write */
        assert_false(batch[1].authorized);
        assert_string_equal(batch[3].reason, "INVALID_REQUEST");
    }
    cordon_authz_request rq = {.subject = "bob", .action = "search"};
    const char *with_null[] = {"collection:docs", NULL};
    assert_int_equal(cordon_is_authorized_batch(f->db, &rq, res, 0, NULL, NULL), 0);
    assert_int_equal(cordon_is_authorized_batch(f->db, &rq, with_null, 2, batch, &err),
                     CORDON_ERR_INVALID);
    assert_non_null(strstr(err.message, "resources[1]"));
    assert_int_equal(
        cordon_is_authorized_batch(f->db, &rq, res, CORDON_AUTHZ_BATCH_MAX + 1, batch, &err),
        CORDON_ERR_LIMIT);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_longest_condition_reaches_the_decision_whole, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_nested_groups_open_chunks_to_subjects, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_subject_without_search_permission_sees_no_collection,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(test_removed_membership_hides_chunk_on_next_search, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_model_survives_reopen, setup, teardown),
        cmocka_unit_test_setup_teardown(test_batch_applies_all_or_none_in_one_revision, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_model_log_folds_when_it_outgrows_the_model, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_bad_operations_change_nothing, setup, teardown),
        cmocka_unit_test_setup_teardown(test_explain_names_the_deciding_principal, setup, teardown),
        cmocka_unit_test_setup_teardown(test_batch_is_authorized_matches_single_decisions, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(
            test_collection_refuses_asserted_principals_unless_configured, setup, teardown),
        cmocka_unit_test_setup_teardown(
            test_revocation_is_seen_by_every_later_search_in_other_threads, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
