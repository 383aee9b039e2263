/* test_asof.c: questions about the past through the public API. A chunk's readability after
 * each revision of a story (a member leaves a group, an ACL changes, a deny lands, the chunk
 * is deleted, the role is revoked), by revision and by time; is-authorized as of a revision;
 * the chunks a subject could read then; the same answers after a reopen; asserted principals;
 * a data directory that starts its history late answers from then on only; a model rebuilt
 * past a checkpoint (hundreds of model writes); retention; who could read over a range;
 * questions between changes of the groups above the subject; a collection dropped and
 * created again; and questions from several threads while the model changes.
 * Relies on cmocka, the public API and store.h (to make a directory without a history). */
/* cmocka.h needs these four first. */
// clang-format off
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
// clang-format on

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "api_testutil.h"
#include "store/store.h"

typedef struct fx {
    char dir[64];
    cordon_t *db;
    uint64_t rev[8]; /* the story's revisions */
    uint64_t t[8];   /* a moment just after each */
} fx_t;

static uint64_t now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

static uint64_t op(cordon_t *db, const char *json)
{
    cordon_error err;
    uint64_t rev = 0;
    if (cordon_model_apply(db, json, &rev, &err))
        fail_msg("op %s failed: %s", json, err.message);
    return rev;
}

static void put(cordon_t *db, const char *id, const char *allow, const char *deny, uint64_t *rev)
{
    cordon_chunk c = {.id = id, .allowed = &allow, .n_allowed = 1};
    if (deny) {
        c.denied = &deny;
        c.n_denied = 1;
    }
    cordon_error err;
    if (cordon_put(db, "docs", &c, 1, rev, &err))
        fail_msg("put: %s", err.message);
}

/* Steps [from, to): alice joins eng at even steps and leaves at odd ones; revs[i] is step
 * i's revision. */
static void toggle_alice(cordon_t *db, uint64_t *revs, int from, int to)
{
    for (int i = from; i < to; i++) {
        char json[160];
        snprintf(json, sizeof json, "{\"op\":\"%s\",\"group\":\"eng\",\"member\":\"alice\"}",
                 i % 2 ? "remove_member" : "add_member");
        revs[i] = op(db, json);
    }
}

/* The story: 0 alice in eng, c1 for eng; 1 alice leaves eng; 2 c1 for user:alice; 3 c1 denies
 * user:alice; 4 c1 deleted; 5 the reader role revoked from staff. */
static int setup(void **state)
{
    fx_t *f = calloc(1, sizeof *f);
    const char *tf[] = {"body"};
    cordon_collection_spec spec = {.name = "docs", .text_fields = tf, .n_text_fields = 1};
    api_db_open(f->dir, sizeof f->dir, &f->db);
    assert_int_equal(cordon_collection_create(f->db, &spec, NULL), 0);
    op(f->db, "{\"op\":\"put_subject\",\"id\":\"alice\",\"kind\":\"user\"}");
    op(f->db, "{\"op\":\"put_group\",\"id\":\"eng\"}");
    op(f->db, "{\"op\":\"put_group\",\"id\":\"staff\"}");
    op(f->db, "{\"op\":\"add_member\",\"group\":\"eng\",\"member\":\"alice\"}");
    op(f->db, "{\"op\":\"add_member\",\"group\":\"staff\",\"member\":\"alice\"}");
    op(f->db, "{\"op\":\"put_role\",\"id\":\"reader\",\"permissions\":["
              "{\"resource\":\"collection:docs\",\"action\":\"search\"},"
              "{\"resource\":\"collection:docs\",\"action\":\"read\"}]}");
    op(f->db, "{\"op\":\"grant\",\"to\":\"staff\",\"to_kind\":\"group\",\"role\":\"reader\"}");
    put(f->db, "c1", "group:eng", NULL, &f->rev[0]);
    put(f->db, "c2", "group:staff", NULL, NULL);
    f->rev[0] = cordon_revision(f->db);
    usleep(2000);
    f->t[0] = now_us();
    usleep(2000);
    f->rev[1] = op(f->db, "{\"op\":\"remove_member\",\"group\":\"eng\",\"member\":\"alice\"}");
    f->t[1] = now_us();
    usleep(2000);
    put(f->db, "c1", "user:alice", NULL, &f->rev[2]);
    f->t[2] = now_us();
    usleep(2000);
    put(f->db, "c1", "user:alice", "group:staff", &f->rev[3]);
    f->t[3] = now_us();
    usleep(2000);
    const char *id = "c1";
    assert_int_equal(cordon_delete(f->db, "docs", &id, 1, NULL, &f->rev[4], NULL), 0);
    f->t[4] = now_us();
    usleep(2000);
    f->rev[5] = op(f->db, "{\"op\":\"revoke\",\"to\":\"staff\",\"to_kind\":\"group\","
                          "\"role\":\"reader\"}");
    f->t[5] = now_us();
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

static cordon_asof_answer ask(cordon_t *db, const char *id, uint64_t rev, uint64_t t)
{
    cordon_subject alice = {.subject_id = "alice"};
    cordon_asof_request q = {
        .collection = "docs", .subject = &alice, .chunk_id = id, .revision = rev, .time_us = t};
    cordon_asof_answer a;
    cordon_error err;
    if (cordon_asof_check(db, &q, &a, &err))
        fail_msg("as-of check: %s", err.message);
    return a;
}

static void check_story(cordon_t *db, const fx_t *f)
{
    static const struct {
        int readable;
        const char *reason;
    } want[6] = {{1, "READABLE"}, {0, "NO_MATCHING_PRINCIPAL"}, {1, "READABLE"},
                 {0, "DENIED"},   {0, "CHUNK_NOT_FOUND"},       {0, "CHUNK_NOT_FOUND"}};
    for (int i = 0; i < 6; i++) {
        for (int by_time = 0; by_time < 2; by_time++) {
            cordon_asof_answer a =
                by_time ? ask(db, "c1", 0, f->t[i]) : ask(db, "c1", f->rev[i], 0);
            assert_int_equal(a.readable, want[i].readable);
            assert_string_equal(a.reason, want[i].reason);
            assert_int_equal(a.revision, f->rev[i]); /* the time names the revision */
        }
    }
    cordon_asof_answer a = ask(db, "c1", f->rev[0], 0);
    assert_string_equal(a.principal, "group:eng");
    a = ask(db, "c1", f->rev[3], 0);
    assert_string_equal(a.principal, "group:staff");
    /* c2 stays for staff; readable until the role is revoked */
    assert_true(ask(db, "c2", f->rev[4], 0).readable);
    a = ask(db, "c2", f->rev[5], 0);
    assert_false(a.readable);
    assert_string_equal(a.reason, "NO_PERMISSION");
    assert_false(ask(db, "never", f->rev[5], 0).readable);
}

static void test_a_story_by_revision_and_time(void **state)
{
    fx_t *f = *state;
    check_story(f->db, f);
    api_db_reopen(f->dir, &f->db);
    check_story(f->db, f); /* the history is on disk */
}

static void test_bad_questions(void **state)
{
    fx_t *f = *state;
    cordon_subject alice = {.subject_id = "alice"};
    cordon_asof_request q = {.collection = "docs", .subject = &alice, .chunk_id = "c1"};
    cordon_asof_answer a;
    cordon_error err;
    assert_int_equal(cordon_asof_check(f->db, &q, &a, &err), CORDON_ERR_INVALID); /* no when */
    q.revision = cordon_revision(f->db) + 5;
    assert_int_equal(cordon_asof_check(f->db, &q, &a, &err), CORDON_ERR_INVALID); /* future */
    q.revision = 0;
    q.time_us = 1000; /* 1970: nothing written yet */
    assert_int_equal(cordon_asof_check(f->db, &q, &a, &err), CORDON_ERR_NOT_FOUND);
    q.time_us = 0;
    q.revision = 1;
    q.collection = "nope";
    assert_int_equal(cordon_asof_check(f->db, &q, &a, &err), CORDON_ERR_NOT_FOUND);
}

static void test_is_authorized_as_of(void **state)
{
    fx_t *f = *state;
    cordon_authz_request q = {.subject = "alice", .resource = "collection:docs", .action = "read"};
    cordon_decision d;
    assert_int_equal(cordon_is_authorized(f->db, &q, &d, NULL), 0);
    assert_false(d.authorized); /* revoked now */
    q.as_of_revision = f->rev[4];
    assert_int_equal(cordon_is_authorized(f->db, &q, &d, NULL), 0);
    assert_true(d.authorized);
    assert_int_equal(d.revision, f->rev[4]);
    assert_string_equal(d.granted_to, "group:staff");
    q.as_of_revision = 0;
    q.as_of_us = f->t[5];
    assert_int_equal(cordon_is_authorized(f->db, &q, &d, NULL), 0);
    assert_false(d.authorized);
    const char *res[2] = {"collection:docs", "collection:other"};
    cordon_decision two[2];
    q.as_of_us = f->t[0];
    assert_int_equal(cordon_is_authorized_batch(f->db, &q, res, 2, two, NULL), 0);
    assert_true(two[0].authorized);
    assert_false(two[1].authorized);
}

typedef struct ids {
    char v[8][16];
    size_t n;
} ids_t;

static int keep_id(void *ctx, const char *id)
{
    ids_t *x = ctx;
    assert_true(x->n < 8);
    snprintf(x->v[x->n++], sizeof x->v[0], "%s", id);
    return 0;
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(a, b);
}

static void test_what_could_alice_read(void **state)
{
    fx_t *f = *state;
    cordon_subject alice = {.subject_id = "alice"};
    static const char *const want[6] = {"c1,c2", "c2", "c1,c2", "c2", "c2", ""};
    for (int i = 0; i < 6; i++) {
        cordon_asof_request q = {.collection = "docs", .subject = &alice, .revision = f->rev[i]};
        ids_t got = {0};
        size_t n;
        uint64_t rev;
        assert_int_equal(cordon_asof_readable(f->db, &q, keep_id, &got, &n, &rev, NULL), 0);
        assert_int_equal(n, got.n);
        assert_int_equal(rev, f->rev[i]);
        qsort(got.v, got.n, sizeof got.v[0], cmp_str);
        char joined[64] = "";
        for (size_t j = 0; j < got.n; j++)
            snprintf(joined + strlen(joined), sizeof joined - strlen(joined), "%s%s", j ? "," : "",
                     got.v[j]);
        assert_string_equal(joined, want[i]);
    }
}

typedef struct readers {
    char who[8][16];
    uint64_t first[8];
    size_t n;
} readers_t;

static int keep_reader(void *ctx, const char *subject, uint64_t first)
{
    readers_t *r = ctx;
    assert_true(r->n < 8);
    snprintf(r->who[r->n], sizeof r->who[0], "%s", subject);
    r->first[r->n++] = first;
    return 0;
}

static void test_who_could_read_over_a_range(void **state)
{
    fx_t *f = *state;
    op(f->db, "{\"op\":\"put_subject\",\"id\":\"bob\",\"kind\":\"user\"}");
    op(f->db, "{\"op\":\"add_member\",\"group\":\"staff\",\"member\":\"bob\"}");
    readers_t r = {0};
    size_t n;
    /* c1 over the whole story: alice (at its start); bob was created after c1 was gone */
    cordon_asof_range all = {.collection = "docs", .chunk_id = "c1"};
    assert_int_equal(cordon_asof_readers(f->db, &all, keep_reader, &r, &n, NULL), 0);
    assert_int_equal(n, 1);
    assert_string_equal(r.who[0], "alice");
    assert_true(r.first[0] <= f->rev[0]);
    /* between alice leaving eng and c1 being opened to her: nobody */
    memset(&r, 0, sizeof r);
    cordon_asof_range gap = {.collection = "docs",
                             .chunk_id = "c1",
                             .from_revision = f->rev[1],
                             .to_revision = f->rev[2] - 1};
    assert_int_equal(cordon_asof_readers(f->db, &gap, keep_reader, &r, &n, NULL), 0);
    assert_int_equal(n, 0);
    /* from then to the end of the story: alice again, first at rev[2] */
    cordon_asof_range then = {
        .collection = "docs", .chunk_id = "c1", .from_revision = f->rev[1], .to_us = f->t[5]};
    assert_int_equal(cordon_asof_readers(f->db, &then, keep_reader, &r, &n, NULL), 0);
    assert_int_equal(n, 1);
    assert_int_equal(r.first[0], f->rev[2]);
    /* c2 (for staff) from rev[4]: alice, until the role went at rev[5]; bob joined staff
     * only after, when staff could read nothing */
    memset(&r, 0, sizeof r);
    cordon_asof_range c2 = {.collection = "docs", .chunk_id = "c2", .from_revision = f->rev[4]};
    assert_int_equal(cordon_asof_readers(f->db, &c2, keep_reader, &r, &n, NULL), 0);
    assert_int_equal(n, 1);
    assert_string_equal(r.who[0], "alice"); /* at rev[4], before the role went */
    cordon_asof_range bad = {
        .collection = "docs", .chunk_id = "c2", .from_revision = 9, .to_revision = 3};
    assert_int_equal(cordon_asof_readers(f->db, &bad, keep_reader, &r, &n, NULL),
                     CORDON_ERR_INVALID);
}

static void test_asserted_principals(void **state)
{
    (void)state;
    char dir[64];
    cordon_t *db;
    uint64_t r1, r2;
    api_db_open(dir, sizeof dir, &db);
    api_docs_create(db, 0, CORDON_METRIC_COSINE);
    const char *eng = "group:eng", *ops = "group:ops";
    cordon_chunk c = {.id = "x", .allowed = &eng, .n_allowed = 1};
    assert_int_equal(cordon_put(db, "docs", &c, 1, &r1, NULL), 0);
    c.allowed = &ops;
    assert_int_equal(cordon_put(db, "docs", &c, 1, &r2, NULL), 0);
    const char *mine[] = {"eng"}; /* a bare name is a group */
    cordon_subject s = {.principals = mine, .n_principals = 1};
    cordon_asof_request q = {.collection = "docs", .subject = &s, .chunk_id = "x", .revision = r1};
    cordon_asof_answer a;
    assert_int_equal(cordon_asof_check(db, &q, &a, NULL), 0);
    assert_true(a.readable);
    assert_string_equal(a.principal, "group:eng");
    q.revision = r2;
    assert_int_equal(cordon_asof_check(db, &q, &a, NULL), 0);
    assert_false(a.readable);
    api_db_close(dir, db);
}

/* A directory whose history starts late: what an older version left (no history tables). */
static void test_history_starts_at_first_open(void **state)
{
    (void)state;
    char dir[64];
    cordon_t *db;
    uint64_t r1;
    api_db_open(dir, sizeof dir, &db);
    api_docs_create(db, 0, CORDON_METRIC_COSINE);
    const char *eng = "group:eng";
    cordon_chunk c = {.id = "x", .allowed = &eng, .n_allowed = 1};
    assert_int_equal(cordon_put(db, "docs", &c, 1, &r1, NULL), 0);
    cordon_close(db);
    store_t *st;
    store_txn_t *t;
    cdn_err_t e;
    assert_int_equal(store_open(dir, 0, &st, &e), 0);
    assert_int_equal(store_txn_begin(st, 1, &t, &e), 0);
    assert_int_equal(store_del(t, STORE_META, "hist_start", 10), 0);
    for (int tb = STORE_HIST_TIME; tb <= STORE_HIST_SNAP; tb++)
        assert_int_equal(store_del_prefix(t, (store_table_t)tb, "", 0), 0);
    assert_int_equal(store_txn_commit(t, &e), 0);
    store_close(st);
    assert_int_equal(cordon_open(dir, NULL, &db, NULL), 0);
    const char *mine[] = {"group:eng"};
    cordon_subject s = {.principals = mine, .n_principals = 1};
    cordon_asof_request q = {.collection = "docs", .subject = &s, .chunk_id = "x", .revision = r1};
    cordon_asof_answer a;
    assert_int_equal(cordon_asof_check(db, &q, &a, NULL), 0);
    assert_true(a.readable); /* the backfill holds the chunks as they are at the start */
    q.revision = r1 - 1;
    cordon_error err;
    assert_int_equal(cordon_asof_check(db, &q, &a, &err), CORDON_ERR_NOT_FOUND);
    assert_non_null(strstr(err.message, "history starts"));
    api_db_close(dir, db);
}

/* Hundreds of model writes: answers past several checkpoints, each rebuilt from the last
 * one before it and the records after. */
static void test_many_model_writes(void **state)
{
    fx_t *f = *state;
    enum { N = 700 };
    uint64_t *revs = calloc(N, sizeof *revs), s = 99;
    op(f->db, "{\"op\":\"grant\",\"to\":\"staff\",\"to_kind\":\"group\",\"role\":\"reader\"}");
    put(f->db, "c9", "group:eng", NULL, NULL);
    toggle_alice(f->db, revs, 0, N);
    cordon_subject alice = {.subject_id = "alice"};
    for (int k = 0; k < 300; k++) {
        int i = k < 2 ? (k ? N - 1 : 0) : (int)(tu_rand(&s) % N);
        cordon_asof_request q = {.collection = "docs",
                                 .subject = &alice,
                                 .chunk_id = "c9",
                                 .action = "search",
                                 .revision = revs[i]};
        cordon_asof_answer a;
        assert_int_equal(cordon_asof_check(f->db, &q, &a, NULL), 0);
        assert_int_equal(a.readable, i % 2 == 0);
        assert_string_equal(a.reason, i % 2 ? "NO_MATCHING_PRINCIPAL" : "READABLE");
    }
    api_db_reopen(f->dir, &f->db);
    cordon_asof_request q = {
        .collection = "docs", .subject = &alice, .chunk_id = "c9", .revision = revs[N / 2]};
    cordon_asof_answer a;
    assert_int_equal(cordon_asof_check(f->db, &q, &a, NULL), 0);
    assert_true(a.readable); /* N / 2 = 350 is even */
    free(revs);
}

/* A directory whose history was kept without the model's fragments: they start at its next
 * open, questions before then rebuild the whole model of their revision, questions after
 * read the fragments, and both answer as the model stood. */
static void test_fragments_start_at_first_open(void **state)
{
    fx_t *f = *state;
    enum { N = 300 };
    uint64_t revs[2 * N], s = 5;
    op(f->db, "{\"op\":\"grant\",\"to\":\"staff\",\"to_kind\":\"group\",\"role\":\"reader\"}");
    put(f->db, "c9", "group:eng", NULL, NULL);
    toggle_alice(f->db, revs, 0, N);
    cordon_close(f->db);
    store_t *st;
    store_txn_t *t;
    cdn_err_t e;
    const unsigned char ent[3] = {0xff, 0xff, 0xff}; /* the fragments' spaces (history.c) */
    assert_int_equal(store_open(f->dir, 0, &st, &e), 0);
    assert_int_equal(store_txn_begin(st, 1, &t, &e), 0);
    assert_int_equal(store_del(t, STORE_META, "hist_ent", 8), 0);
    assert_int_equal(store_del_prefix(t, STORE_HIST_ACL, ent, 3), 0);
    assert_int_equal(store_txn_commit(t, &e), 0);
    store_close(st);
    assert_int_equal(cordon_open(f->dir, NULL, &f->db, NULL), 0);
    toggle_alice(f->db, revs, N, 2 * N);
    cordon_subject alice = {.subject_id = "alice"};
    for (int k = 0; k < 400; k++) {
        int i = k < 4 ? (int[]){0, N - 1, N, 2 * N - 1}[k] : (int)(tu_rand(&s) % (2 * N));
        cordon_asof_request q = {.collection = "docs",
                                 .subject = &alice,
                                 .chunk_id = "c9",
                                 .action = "search",
                                 .revision = revs[i]};
        cordon_asof_answer a;
        assert_int_equal(cordon_asof_check(f->db, &q, &a, NULL), 0);
        assert_int_equal(a.readable, i % 2 == 0);
    }
}

/* A grant with a validity window: bob holds the reader role until a moment a second from
 * now. Live reads see it inside the window and not after; as-of questions judge the window
 * at the moment asked (valid time), whatever the state's revision. */
static void test_validity_window(void **state)
{
    fx_t *f = *state;
    char json[256], until[40];
    uint64_t end = now_us() + 1000000;
    time_t sec = (time_t)(end / 1000000);
    struct tm tm;
    gmtime_r(&sec, &tm);
    strftime(until, sizeof until, "%Y-%m-%dT%H:%M:%S", &tm);
    snprintf(until + strlen(until), sizeof until - strlen(until), ".%06uZ",
             (unsigned)(end % 1000000));
    op(f->db, "{\"op\":\"put_subject\",\"id\":\"bob\"}");
    snprintf(json, sizeof json,
             "{\"op\":\"grant\",\"to\":\"bob\",\"role\":\"reader\",\"valid\":{\"until\":\"%s\"}}",
             until);
    uint64_t granted = op(f->db, json);
    uint64_t t_in = now_us();
    put(f->db, "w1", "user:bob", NULL, NULL);
    cordon_subject bob = {.subject_id = "bob"};
    cordon_record *rec = NULL;
    assert_int_equal(cordon_get(f->db, "docs", &bob, "w1", &rec, NULL), 0);
    cordon_record_free(rec);
    while (now_us() < end + 20000)
        usleep(20000);
    cordon_error err;
    assert_int_equal(cordon_get(f->db, "docs", &bob, "w1", &rec, &err), CORDON_ERR_NOT_FOUND);
    uint64_t t_out = now_us();
    /* the same state (no write since), asked at two moments */
    cordon_asof_request q = {.collection = "docs", .subject = &bob, .chunk_id = "w1"};
    cordon_asof_answer a;
    q.time_us = t_out;
    assert_int_equal(cordon_asof_check(f->db, &q, &a, NULL), 0);
    assert_false(a.readable);
    assert_string_equal(a.reason, "NO_PERMISSION");
    q.time_us = 0;
    q.revision = cordon_revision(f->db); /* committed inside the window */
    assert_int_equal(cordon_asof_check(f->db, &q, &a, NULL), 0);
    assert_true(a.readable);
    /* and the grant's own revision, asked at a moment inside the window, before w1 existed */
    q.revision = granted;
    assert_int_equal(cordon_asof_check(f->db, &q, &a, NULL), 0);
    assert_string_equal(a.reason, "CHUNK_NOT_FOUND");
    (void)t_in;
}

typedef struct asker {
    cordon_t *db;
    const uint64_t *revs;
    int n, wrong, failed;
    uint64_t seed;
} asker_t;

static void *ask_many(void *arg)
{
    asker_t *k = arg;
    cordon_subject alice = {.subject_id = "alice"};
    for (int j = 0; j < 150; j++) {
        int i = (int)(tu_rand(&k->seed) % (uint64_t)k->n);
        cordon_asof_request q = {
            .collection = "docs", .subject = &alice, .chunk_id = "c9", .revision = k->revs[i]};
        cordon_asof_answer a;
        if (cordon_asof_check(k->db, &q, &a, NULL))
            k->failed++;
        else
            k->wrong += a.readable != (i % 2 == 0);
    }
    return NULL;
}

/* Questions from several threads at once, while the model keeps changing: the shared cache
 * of past models hands each the right one. */
static void test_concurrent_questions(void **state)
{
    fx_t *f = *state;
    enum { N = 600, T = 4 };
    uint64_t *revs = calloc(N, sizeof *revs);
    op(f->db, "{\"op\":\"grant\",\"to\":\"staff\",\"to_kind\":\"group\",\"role\":\"reader\"}");
    put(f->db, "c9", "group:eng", NULL, NULL);
    op(f->db, "{\"op\":\"put_subject\",\"id\":\"zed\",\"kind\":\"user\"}");
    for (int i = 0; i < N; i++) {
        char json[160];
        snprintf(json, sizeof json, "{\"op\":\"%s\",\"group\":\"eng\",\"member\":\"alice\"}",
                 i % 2 ? "remove_member" : "add_member");
        revs[i] = op(f->db, json);
    }
    pthread_t th[T];
    asker_t k[T];
    for (int t = 0; t < T; t++) {
        k[t] = (asker_t){f->db, revs, N, 0, 0, (uint64_t)t + 1};
        assert_int_equal(pthread_create(&th[t], NULL, ask_many, &k[t]), 0);
    }
    for (int i = 0; i < 100; i++) /* the world moves on meanwhile */
        op(f->db, i % 2 ? "{\"op\":\"remove_member\",\"group\":\"eng\",\"member\":\"zed\"}"
                        : "{\"op\":\"add_member\",\"group\":\"eng\",\"member\":\"zed\"}");
    for (int t = 0; t < T; t++) {
        pthread_join(th[t], NULL);
        assert_int_equal(k[t].failed, 0);
        assert_int_equal(k[t].wrong, 0);
    }
    free(revs);
}

/* Questions between changes of the groups above the subject (a grant to its group given and
 * revoked, a parent group created with the grant, then deleted): each answer after a change
 * reflects it, and every earlier state still answers as it did, whatever an earlier question
 * kept of the groups' versions. */
static void test_group_changes_between_questions(void **state)
{
    fx_t *f = *state;
    enum { STEPS = 24 };
    uint64_t revs[STEPS];
    int want[STEPS];
    for (int i = 0; i < STEPS; i++) {
        switch (i % 4) {
        case 0:
            revs[i] = op(f->db, "{\"op\":\"grant\",\"to\":\"staff\",\"to_kind\":\"group\","
                                "\"role\":\"reader\"}");
            break;
        case 1:
            revs[i] = op(f->db, "{\"op\":\"revoke\",\"to\":\"staff\",\"to_kind\":\"group\","
                                "\"role\":\"reader\"}");
            break;
        case 2:
            op(f->db, "{\"op\":\"put_group\",\"id\":\"top\"}");
            op(f->db, "{\"op\":\"add_member\",\"group\":\"top\",\"member\":\"staff\","
                      "\"member_kind\":\"group\"}");
            revs[i] = op(f->db, "{\"op\":\"grant\",\"to\":\"top\",\"to_kind\":\"group\","
                                "\"role\":\"reader\"}");
            break;
        default: revs[i] = op(f->db, "{\"op\":\"delete_group\",\"id\":\"top\"}");
        }
        want[i] = i % 2 == 0;
        for (int j = i; j >= 0; j--) {
            cordon_asof_answer a = ask(f->db, "c2", revs[j], 0);
            if (a.readable != want[j])
                fail_msg("after step %d, the state of step %d answers %s", i, j, a.reason);
            assert_string_equal(a.reason, want[j] ? "READABLE" : "NO_PERMISSION");
        }
    }
}

static int count_key(void *ctx, const void *key, size_t klen, const void *val, size_t vlen)
{
    (void)key;
    (void)klen;
    (void)val;
    (void)vlen;
    ++*(size_t *)ctx;
    return 0;
}

/* The versions of chunk ACLs the history holds for collection id (reopens f->db around it). */
static size_t chunk_versions(fx_t *f, uint32_t id)
{
    store_t *st;
    store_txn_t *t;
    cdn_err_t e;
    unsigned char prefix[4] = {(unsigned char)(id >> 24), (unsigned char)(id >> 16),
                               (unsigned char)(id >> 8), (unsigned char)id};
    size_t n = 0;
    cordon_close(f->db);
    assert_int_equal(store_open(f->dir, 0, &st, &e), 0);
    assert_int_equal(store_txn_begin(st, 0, &t, &e), 0);
    assert_int_equal(store_scan_prefix(t, STORE_HIST_ACL, prefix, 4, count_key, &n), 0);
    store_txn_abort(t);
    store_close(st);
    assert_int_equal(cordon_open(f->dir, NULL, &f->db, NULL), 0);
    return n;
}

static int count_id(void *ctx, const char *id)
{
    (void)id;
    ++*(size_t *)ctx;
    return 0;
}

/* A collection dropped and created again under its name: questions about the revisions the
 * first one lived read its chunks, those between the drop and the new one find nothing, and
 * those after read the new one's; the same after a reopen; retention past the drop removes
 * the first one's chunks' history and leaves every later answer as it was. */
static void test_dropped_collection_keeps_its_history(void **state)
{
    fx_t *f = *state;
    const char *tf[] = {"body"};
    cordon_collection_spec spec = {.name = "docs", .text_fields = tf, .n_text_fields = 1};
    uint64_t r_put, r_drop, r_new, r_put2;
    op(f->db, "{\"op\":\"grant\",\"to\":\"staff\",\"to_kind\":\"group\",\"role\":\"reader\"}");
    put(f->db, "c7", "group:staff", NULL, &r_put);
    assert_int_equal(cordon_collection_drop(f->db, "docs", NULL), 0);
    r_drop = cordon_revision(f->db);
    assert_int_equal(cordon_collection_create(f->db, &spec, NULL), 0);
    r_new = cordon_revision(f->db);
    put(f->db, "c7", "user:nobody", NULL, &r_put2);
    for (int pass = 0; pass < 2; pass++) {
        assert_string_equal(ask(f->db, "c7", r_put, 0).reason, "READABLE");
        assert_string_equal(ask(f->db, "c2", r_put, 0).reason, "READABLE");
        assert_string_equal(ask(f->db, "c7", r_drop, 0).reason, "CHUNK_NOT_FOUND");
        assert_string_equal(ask(f->db, "c2", r_new, 0).reason, "CHUNK_NOT_FOUND");
        assert_string_equal(ask(f->db, "c7", r_put2, 0).reason, "NO_MATCHING_PRINCIPAL");
        assert_string_equal(ask(f->db, "c1", f->rev[0], 0).reason, "READABLE");
        cordon_subject alice = {.subject_id = "alice"};
        size_t n = 0, seen = 0;
        cordon_asof_request q = {.collection = "docs", .subject = &alice, .revision = r_put};
        assert_int_equal(cordon_asof_readable(f->db, &q, count_id, &seen, &n, NULL, NULL), 0);
        assert_int_equal(n, 2); /* c2 and c7 of the first collection */
        q.revision = r_drop;
        assert_int_equal(cordon_asof_readable(f->db, &q, count_id, &seen, &n, NULL, NULL), 0);
        assert_int_equal(n, 0);
        /* over the whole range: alice read c7 in the first collection, never in the second */
        readers_t r = {0};
        cordon_asof_range all = {.collection = "docs", .chunk_id = "c7"};
        assert_int_equal(cordon_asof_readers(f->db, &all, keep_reader, &r, &n, NULL), 0);
        assert_int_equal(n, 1);
        assert_string_equal(r.who[0], "alice");
        assert_int_equal(r.first[0], r_put);
        memset(&r, 0, sizeof r);
        cordon_asof_range after = {.collection = "docs", .chunk_id = "c7", .from_revision = r_drop};
        assert_int_equal(cordon_asof_readers(f->db, &after, keep_reader, &r, &n, NULL), 0);
        assert_int_equal(n, 0);
        api_db_reopen(f->dir, &f->db);
    }
    /* the first collection was the directory's first (id 0), the second is id 1 */
    assert_true(chunk_versions(f, 0) > 0);
    size_t second = chunk_versions(f, 1);
    uint64_t start, removed;
    assert_int_equal(cordon_history_prune(f->db, r_new, 0, &start, &removed, NULL), 0);
    assert_int_equal(chunk_versions(f, 0), 0);
    assert_int_equal(chunk_versions(f, 1), second);
    assert_string_equal(ask(f->db, "c7", r_new, 0).reason, "CHUNK_NOT_FOUND");
    assert_string_equal(ask(f->db, "c7", r_put2, 0).reason, "NO_MATCHING_PRINCIPAL");
}

/* Retention: states from the horizon on answer as before, earlier ones are gone. */
static void test_prune_keeps_what_comes_after(void **state)
{
    fx_t *f = *state;
    enum { N = 600 };
    uint64_t *revs = calloc(N, sizeof *revs), s = 7, start, removed;
    cordon_error err;
    op(f->db, "{\"op\":\"grant\",\"to\":\"staff\",\"to_kind\":\"group\",\"role\":\"reader\"}");
    put(f->db, "c9", "group:eng", NULL, NULL);
    for (int i = 0; i < N; i++) {
        char json[160];
        snprintf(json, sizeof json, "{\"op\":\"%s\",\"group\":\"eng\",\"member\":\"alice\"}",
                 i % 2 ? "remove_member" : "add_member");
        revs[i] = op(f->db, json);
        if (i % 50 == 7) /* and the chunk's ACL changes now and then, back and forth */
            put(f->db, "c9", i % 100 == 7 ? "group:staff" : "group:eng", NULL, NULL);
    }
    /* every answer before the pruning, to compare with */
    cordon_subject alice = {.subject_id = "alice"};
    int *before = calloc(N, sizeof *before);
    for (int i = 0; i < N; i++) {
        cordon_asof_request q = {
            .collection = "docs", .subject = &alice, .chunk_id = "c9", .revision = revs[i]};
        cordon_asof_answer a;
        assert_int_equal(cordon_asof_check(f->db, &q, &a, NULL), 0);
        before[i] = a.readable;
    }
    assert_int_equal(cordon_history_prune(f->db, 0, 0, NULL, NULL, &err), CORDON_ERR_INVALID);
    assert_int_equal(cordon_history_prune(f->db, revs[333], 0, &start, &removed, &err), 0);
    assert_int_equal(start, revs[333]);
    assert_true(removed > 300); /* model records, ACL versions, commit times */
    for (int pass = 0; pass < 2; pass++) {
        for (int k = 0; k < 200; k++) {
            int i = k < 2 ? (k ? N - 1 : 333) : 333 + (int)(tu_rand(&s) % (N - 333));
            cordon_asof_request q = {
                .collection = "docs", .subject = &alice, .chunk_id = "c9", .revision = revs[i]};
            cordon_asof_answer a;
            assert_int_equal(cordon_asof_check(f->db, &q, &a, NULL), 0);
            assert_int_equal(a.readable, before[i]);
        }
        cordon_asof_request early = {
            .collection = "docs", .subject = &alice, .chunk_id = "c9", .revision = revs[332]};
        cordon_asof_answer a;
        assert_int_equal(cordon_asof_check(f->db, &early, &a, &err), CORDON_ERR_NOT_FOUND);
        assert_non_null(strstr(err.message, "history starts"));
        early.revision = 0;
        early.time_us = f->t[0];
        assert_int_equal(cordon_asof_check(f->db, &early, &a, &err), CORDON_ERR_NOT_FOUND);
        api_db_reopen(f->dir, &f->db); /* and after a restart, from the pruned tables */
    }
    /* pruning again, later, and the readable list at the horizon */
    assert_int_equal(cordon_history_prune(f->db, revs[500], 0, &start, &removed, NULL), 0);
    cordon_asof_request q = {.collection = "docs", .subject = &alice, .revision = revs[500]};
    size_t n;
    ids_t got = {0};
    assert_int_equal(cordon_asof_readable(f->db, &q, keep_id, &got, &n, NULL, NULL), 0);
    int c9 = 0;
    for (size_t j = 0; j < got.n; j++)
        c9 |= !strcmp(got.v[j], "c9");
    assert_int_equal(c9, before[500]);
    free(before);
    free(revs);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_a_story_by_revision_and_time, setup, teardown),
        cmocka_unit_test_setup_teardown(test_bad_questions, setup, teardown),
        cmocka_unit_test_setup_teardown(test_is_authorized_as_of, setup, teardown),
        cmocka_unit_test_setup_teardown(test_what_could_alice_read, setup, teardown),
        cmocka_unit_test_setup_teardown(test_who_could_read_over_a_range, setup, teardown),
        cmocka_unit_test_setup_teardown(test_prune_keeps_what_comes_after, setup, teardown),
        cmocka_unit_test_setup_teardown(test_concurrent_questions, setup, teardown),
        cmocka_unit_test_setup_teardown(test_group_changes_between_questions, setup, teardown),
        cmocka_unit_test_setup_teardown(test_dropped_collection_keeps_its_history, setup, teardown),
        cmocka_unit_test(test_asserted_principals),
        cmocka_unit_test(test_history_starts_at_first_open),
        cmocka_unit_test_setup_teardown(test_many_model_writes, setup, teardown),
        cmocka_unit_test_setup_teardown(test_fragments_start_at_first_open, setup, teardown),
        cmocka_unit_test_setup_teardown(test_validity_window, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
