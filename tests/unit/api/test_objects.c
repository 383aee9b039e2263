/* test_objects.c: chunks that name an object of the relationship tuples. A subject reads such a
 * chunk when it holds the named permission on the object, through every read path, from the
 * very next request after a share, an unshare or a move, with tenants and denies still
 * applying, across a reopen; explanations say so; and on seeded random tuples every search
 * agrees with cordon_rebac_check, a separate code path (the bitmap union against the graph
 * walk); as-of questions read the tuples of their revision. Relies on the public API. */
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "api_testutil.h"
#include "base/testhook.h"
#include "cordon.h"

#define DIM 4

typedef struct fx {
    char dir[64];
    cordon_t *db;
} fx_t;

#define op api_model_op

static void put(cordon_t *db, const char *id, const char *object, const char *allowed,
                const char *tenant, const char *label)
{
    float v[DIM] = {1, 0, 0, 0};
    cordon_chunk c = {.id = id,
                      .vector = v,
                      .allowed = &allowed,
                      .n_allowed = allowed != NULL,
                      .tenant = tenant,
                      .labels = &label,
                      .n_labels = label != NULL,
                      .object = object};
    cordon_error err;
    if (cordon_put(db, "docs", &c, 1, NULL, &err))
        fail_msg("put %s: %s", id, err.message);
}

static const char SCHEMA[] =
    "{\"op\":\"put_schema\",\"schema\":{\"types\":{\"user\":{},"
    "\"group\":{\"relations\":{\"member\":[\"user\",\"group#member\"]}},"
    "\"folder\":{\"relations\":{\"parent\":[\"folder\"],\"viewer\":[\"user\",\"group#member\"]},"
    "\"permissions\":{\"view\":\"viewer + parent->view\"}},"
    "\"document\":{\"relations\":{\"parent\":[\"folder\"],\"viewer\":[\"user\",\"group#member\"],"
    "\"owner\":[\"user\"],\"banned\":[\"user\"]},"
    "\"permissions\":{\"view\":\"(viewer + owner + parent->view) - banned\","
    "\"edit\":\"owner\"}}}}}";

static int setup(void **state)
{
    fx_t *f = calloc(1, sizeof *f);
    api_db_open(f->dir, sizeof f->dir, &f->db);
    api_docs_create(f->db, DIM, CORDON_METRIC_L2);
    op(f->db, "{\"op\":\"put_role\",\"id\":\"reader\",\"permissions\":["
              "{\"resource\":\"collection:*\",\"action\":\"*\"}]}");
    const char *who[] = {"alice", "bob", "carol", "dave"};
    for (int i = 0; i < 4; i++) {
        char buf[160];
        snprintf(buf, sizeof buf, "{\"op\":\"put_subject\",\"id\":\"%s\"}", who[i]);
        op(f->db, buf);
        snprintf(buf, sizeof buf, "{\"op\":\"grant\",\"to\":\"%s\",\"role\":\"reader\"}", who[i]);
        op(f->db, buf);
    }
    op(f->db, SCHEMA);
    op(f->db, "{\"op\":\"write_tuples\",\"writes\":[\"group:eng#member@user:alice\","
              "\"folder:plans#viewer@group:eng#member\",\"folder:sub#parent@folder:plans\","
              "\"document:d1#parent@folder:plans\",\"document:d2#parent@folder:sub\","
              "\"document:d3#viewer@user:bob\",\"document:d4#parent@folder:plans\","
              "\"document:d4#banned@user:alice\",\"document:d1#owner@user:carol\"]}");
    put(f->db, "c1", "document:d1", NULL, NULL, NULL);
    put(f->db, "c2", "document:d2", NULL, NULL, NULL);
    put(f->db, "c3", "document:d3", NULL, NULL, NULL);
    put(f->db, "c4", "document:d4", "user:dave", NULL, NULL); /* an ACL beside the object */
    put(f->db, "c5", "document:d1#edit", NULL, NULL, NULL);   /* another permission */
    put(f->db, "c6", "document:d1", NULL, "acme", NULL);      /* a tenant's */
    put(f->db, "c7", "document:d1", NULL, NULL, "secret");    /* labelled */
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

/* The ids subject finds, sorted, joined by ','. */
static const char *as(cordon_t *db, const char *subject)
{
    static char out[512];
    float q[DIM] = {1, 0, 0, 0};
    cordon_subject s = {.subject_id = subject};
    return api_found_ids(db, &s, q, out, sizeof out) ? "error" : out;
}

static void test_subjects_read_the_chunks_of_the_objects_they_hold(void **state)
{
    fx_t *f = *state;
    assert_string_equal(as(f->db, "alice"), "c1,c2,c7"); /* d4 bans her; c6 is acme's */
    assert_string_equal(as(f->db, "bob"), "c3");
    assert_string_equal(as(f->db, "carol"), "c1,c5,c7"); /* owner: view and edit */
    assert_string_equal(as(f->db, "dave"), "c4");        /* by the chunk's own ACL */
    cordon_subject alice = {.subject_id = "alice"};
    cordon_record *rec;
    assert_int_equal(cordon_get(f->db, "docs", &alice, "c2", &rec, NULL), 0);
    assert_string_equal(rec->object, "document:d2");
    cordon_record_free(rec);
    assert_int_equal(cordon_get(f->db, "docs", &alice, "c3", &rec, NULL), CORDON_ERR_NOT_FOUND);
}

static void test_share_unshare_and_move_apply_to_the_next_search(void **state)
{
    fx_t *f = *state;
    op(f->db, "{\"op\":\"write_tuples\",\"deletes\":[\"folder:plans#viewer@group:eng#member\"]}");
    assert_string_equal(as(f->db, "alice"), "");
    op(f->db, "{\"op\":\"write_tuples\",\"writes\":[\"folder:sub#viewer@user:alice\"]}");
    assert_string_equal(as(f->db, "alice"), "c2");
    /* d1 moves under sub: it follows */
    op(f->db, "{\"op\":\"write_tuples\",\"deletes\":[\"document:d1#parent@folder:plans\"],"
              "\"writes\":[\"document:d1#parent@folder:sub\"]}");
    assert_string_equal(as(f->db, "alice"), "c1,c2,c7");
    /* a label deny and a tenant still apply to object chunks */
    op(f->db, "{\"op\":\"grant\",\"to\":\"alice\",\"permission\":{\"resource\":\"label:secret\","
              "\"action\":\"read\",\"effect\":\"deny\"}}");
    assert_string_equal(as(f->db, "alice"), "c1,c2");
    op(f->db, "{\"op\":\"put_subject\",\"id\":\"alice\",\"tenants\":[\"acme\"]}");
    assert_string_equal(as(f->db, "alice"), "c1,c2,c6");
}

static void test_set_acl_keeps_the_object_and_reopen_keeps_everything(void **state)
{
    fx_t *f = *state;
    const char *hr[] = {"group:hr"};
    cordon_acl_change ch = {.id = "c3", .allowed = hr, .n_allowed = 1};
    assert_int_equal(cordon_set_acl(f->db, "docs", &ch, 1, NULL, NULL), 0);
    assert_string_equal(as(f->db, "bob"), "c3"); /* still through d3 */
    const char *who[] = {"alice", "bob", "carol", "dave"};
    char before[4][512];
    for (int i = 0; i < 4; i++)
        snprintf(before[i], sizeof before[i], "%s", as(f->db, who[i]));
    api_db_reopen(f->dir, &f->db);
    for (int i = 0; i < 4; i++)
        assert_string_equal(as(f->db, who[i]), before[i]);
}

static void test_explanations_and_refusals(void **state)
{
    fx_t *f = *state;
    cordon_explanation x;
    assert_int_equal(cordon_explain(f->db, "docs", "alice", "c2", &x, NULL), 0);
    assert_true(x.readable);
    assert_string_equal(x.principal, "object:document:d2#view");
    assert_int_equal(cordon_explain(f->db, "docs", "alice", "c3", &x, NULL), 0);
    assert_false(x.readable);
    float v[DIM] = {1};
    cordon_error err;
    static const char *const bad[] = {"document",     "document:",   "Document:1",
                                      "document:a b", "document:1#", "document:1#View",
                                      "document:*"};
    uint64_t rev = cordon_revision(f->db);
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        cordon_chunk c = {.id = "bad", .vector = v, .object = bad[i]};
        assert_int_equal(cordon_put(f->db, "docs", &c, 1, NULL, &err), CORDON_ERR_INVALID);
        assert_non_null(strstr(err.message, "object"));
    }
    assert_int_equal(cordon_revision(f->db), rev);
}

/* Seeded random tuples: every search agrees with the check of each chunk's object. */
static void test_searches_agree_with_checks_on_random_tuples(void **state)
{
    fx_t *f = *state;
    uint64_t s = 0x5eed;
    char buf[256];
#define NDOC 30
    for (int i = 0; i < NDOC; i++) {
        char id[16], obj[32];
        snprintf(id, sizeof id, "r%02d", i);
        snprintf(obj, sizeof obj, "document:x%d", i);
        put(f->db, id, obj, NULL, NULL, NULL);
    }
    for (int round = 0; round < 15; round++) {
        for (int k = 0; k < 6; k++) {
            s = s * 6364136223846793005ull + 1442695040888963407ull;
            unsigned a = (unsigned)(s >> 33) % NDOC, b = (unsigned)(s >> 40) % 6,
                     kind = (unsigned)(s >> 50) % 5, del = (unsigned)(s >> 60) % 3 == 0;
            const char *who[] = {"alice", "bob", "carol", "dave"};
            switch (kind) {
            case 0:
                snprintf(buf, sizeof buf, "\"document:x%u#viewer@user:%s\"", a, who[b % 4]);
                break;
            case 1: snprintf(buf, sizeof buf, "\"document:x%u#parent@folder:k%u\"", a, b); break;
            case 2:
                snprintf(buf, sizeof buf, "\"folder:k%u#viewer@group:t%u#member\"", b, a % 3);
                break;
            case 3:
                snprintf(buf, sizeof buf, "\"group:t%u#member@user:%s\"", a % 3, who[b % 4]);
                break;
            default: snprintf(buf, sizeof buf, "\"document:x%u#banned@user:%s\"", a, who[b % 4]);
            }
            char o[300];
            snprintf(o, sizeof o, "{\"op\":\"write_tuples\",\"%s\":[%s]}",
                     del ? "deletes" : "writes", buf);
            op(f->db, o);
        }
        const char *who[] = {"alice", "bob", "carol", "dave"};
        for (int u = 0; u < 4; u++) {
            const char *got = as(f->db, who[u]);
            char subj[32];
            snprintf(subj, sizeof subj, "user:%s", who[u]);
            for (int i = 0; i < NDOC; i++) {
                char id[16], obj[32];
                int ok = 0;
                snprintf(id, sizeof id, "r%02d", i);
                snprintf(obj, sizeof obj, "document:x%d", i);
                assert_int_equal(cordon_rebac_check(f->db, subj, "view", obj, &ok, NULL, NULL), 0);
                if ((strstr(got, id) != NULL) != ok)
                    fail_msg("round %d: %s %s %s by search, %s by check", round, who[u], id,
                             strstr(got, id) ? "readable" : "hidden", ok ? "readable" : "not");
            }
        }
    }
}

/* As-of questions read the tuples of their revision: a share and an unshare are answered as
 * they stood, by cordon_asof_check, cordon_asof_readable and a range of readers alike, with
 * the object's principal reported, and a ban (a subtraction) or a denied label still wins. */
static int collect_ids(void *ctx, const char *id)
{
    char *out = ctx;
    size_t n = strlen(out);
    snprintf(out + n, 128 - n, "%s%s", n ? "," : "", id);
    return 0;
}

static int asof_readable_at(cordon_t *db, const char *subject, const char *id, uint64_t rev,
                            char *principal, size_t cap)
{
    cordon_subject who = {.subject_id = subject};
    cordon_asof_request q = {
        .collection = "docs", .subject = &who, .chunk_id = id, .action = "search", .revision = rev};
    cordon_asof_answer a;
    cordon_error err;
    if (cordon_asof_check(db, &q, &a, &err))
        fail_msg("as-of %s %s at %llu: %s", subject, id, (unsigned long long)rev, err.message);
    if (principal)
        snprintf(principal, cap, "%s", a.principal);
    return a.readable;
}

static void test_asof_reads_the_tuples_of_its_revision(void **state)
{
    fx_t *f = *state;
    char principal[sizeof(((cordon_asof_answer *)0)->principal)], ids[128] = "";
    uint64_t shared = cordon_revision(f->db);
    op(f->db, "{\"op\":\"write_tuples\",\"deletes\":[\"folder:plans#viewer@group:eng#member\"]}");
    uint64_t unshared = cordon_revision(f->db);
    op(f->db, "{\"op\":\"write_tuples\",\"writes\":[\"document:d4#viewer@user:carol\","
              "\"document:d4#banned@user:carol\"]}");
    uint64_t banned = cordon_revision(f->db);
    assert_string_equal(as(f->db, "alice"), "");
    assert_true(asof_readable_at(f->db, "alice", "c2", shared, principal, sizeof principal));
    assert_string_equal(principal, "object:document:d2#view");
    assert_false(asof_readable_at(f->db, "alice", "c2", unshared, NULL, 0));
    assert_false(asof_readable_at(f->db, "alice", "c4", shared, NULL, 0)); /* banned from d4 */
    assert_false(asof_readable_at(f->db, "carol", "c4", banned, NULL, 0)); /* viewer, banned */
    assert_true(asof_readable_at(f->db, "carol", "c5", shared, NULL, 0));  /* owner: edit */
    assert_false(asof_readable_at(f->db, "bob", "c2", shared, NULL, 0));
    cordon_subject alice = {.subject_id = "alice"};
    cordon_asof_request q = {
        .collection = "docs", .subject = &alice, .action = "search", .revision = shared};
    size_t n;
    assert_int_equal(cordon_asof_readable(f->db, &q, collect_ids, ids, &n, NULL, NULL), 0);
    assert_int_equal(n, 3); /* as the live search found them then, in no particular order */
    assert_non_null(strstr(ids, "c1"));
    assert_non_null(strstr(ids, "c2"));
    assert_non_null(strstr(ids, "c7"));
    ids[0] = '\0';
    q.revision = unshared;
    assert_int_equal(cordon_asof_readable(f->db, &q, collect_ids, ids, &n, NULL, NULL), 0);
    assert_string_equal(ids, "");
    /* a label denied to her then still wins over the object */
    op(f->db, "{\"op\":\"write_tuples\",\"writes\":[\"folder:plans#viewer@group:eng#member\"]}");
    op(f->db, "{\"op\":\"grant\",\"to\":\"alice\",\"permission\":{\"resource\":\"label:secret\","
              "\"action\":\"read\",\"effect\":\"deny\"}}");
    uint64_t denied = cordon_revision(f->db);
    assert_true(asof_readable_at(f->db, "alice", "c1", denied, NULL, 0));
    assert_false(asof_readable_at(f->db, "alice", "c7", denied, NULL, 0));
    assert_true(asof_readable_at(f->db, "alice", "c7", shared, NULL, 0));
}

/* A chunk naming an object no chunk named before, written after the search resolved its
 * subject and before it read the ACLs: its principal is newer than the object ids the subject
 * was resolved with, and is judged then, against the tuples and the tenant wall. */
typedef struct late {
    cordon_t *db;
    atomic_int armed;
    const char *id, *object, *tenant;
} late_t;

static void late_hook(cdn_hook_point_t point, void *arg)
{
    late_t *l = arg;
    int one = 1;
    if (point == CDN_HOOK_SUBJECT_RESOLVED && atomic_compare_exchange_strong(&l->armed, &one, 0))
        put(l->db, l->id, l->object, NULL, l->tenant, NULL);
}

static void test_an_object_named_during_a_search_is_judged(void **state)
{
    fx_t *f = *state;
    late_t l = {f->db, 0, NULL, NULL, NULL};
    op(f->db, "{\"op\":\"write_tuples\",\"writes\":[\"document:d9#parent@folder:plans\","
              "\"document:d10#parent@folder:plans\",\"document:d11#parent@folder:plans\","
              "\"document:d12#viewer@user:bob\"]}");
    assert_string_equal(as(f->db, "alice"), "c1,c2,c7"); /* resolved, and its ids kept */
    put(f->db, "c8", "document:d11", NULL, NULL, NULL);  /* a name after the kept ids */
    assert_string_equal(as(f->db, "alice"), "c1,c2,c7,c8");
    assert_string_equal(as(f->db, "bob"), "c3");
    cdn_hook_set(late_hook, &l);
    l = (late_t){f->db, 1, "c9", "document:d9", NULL};
    assert_string_equal(as(f->db, "alice"), "c1,c2,c7,c8,c9");
    l = (late_t){f->db, 1, "c10", "document:d12", NULL}; /* bob's, not hers */
    assert_string_equal(as(f->db, "alice"), "c1,c2,c7,c8,c9");
    l = (late_t){f->db, 1, "c11", "document:d10", "acme"}; /* a tenant she is not in */
    assert_string_equal(as(f->db, "alice"), "c1,c2,c7,c8,c9");
    op(f->db, "{\"op\":\"put_subject\",\"id\":\"alice\",\"tenants\":[\"acme\"]}");
    l = (late_t){f->db, 1, "c12", "document:d11", "acme"}; /* now she is */
    assert_string_equal(as(f->db, "alice"), "c1,c11,c12,c2,c6,c7,c8,c9");
    cdn_hook_set(NULL, NULL);
    assert_int_equal(atomic_load(&l.armed), 0);
    assert_string_equal(as(f->db, "bob"), "c10,c3");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_subjects_read_the_chunks_of_the_objects_they_hold,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(test_share_unshare_and_move_apply_to_the_next_search, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_set_acl_keeps_the_object_and_reopen_keeps_everything,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(test_explanations_and_refusals, setup, teardown),
        cmocka_unit_test_setup_teardown(test_searches_agree_with_checks_on_random_tuples, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_asof_reads_the_tuples_of_its_revision, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_an_object_named_during_a_search_is_judged, setup,
                                        teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
