/* test_race_states.c: a request must read one permission state: the subject's authorization,
 * its view and the chunk ACLs it checks, never a view from before a model write paired with
 * ACLs from after a later ACL write. The forced tests run the writes at the engine's hook
 * between the model read and the ACL read (base/testhook.h); the stress test runs the
 * independent probe's writer (four states, in none of which u reads X) against reader threads
 * for CORDON_RACE_SECONDS (default 2) with CORDON_RACE_READERS threads (default 4).
 * Relies on cmocka, pthreads and tests/testutil.h. */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <time.h>
#include <cmocka.h>

#include "base/testhook.h"
#include "cordon.h"
#include "testutil.h"

#define DIM 4

static const float QV[DIM] = {1, 0, 0, 0};

static void op(cordon_t *db, const char *j)
{
    cordon_error e;
    int rc = cordon_model_apply(db, j, NULL, &e);
    if (rc)
        fail_msg("op %s: %s", j, e.message);
}

static void set_acl(cordon_t *db, const char *coll, const char *id, const char *allowed,
                    const char *denied)
{
    cordon_acl_change c = {.id = id, .allowed = &allowed, .n_allowed = 1};
    cordon_error e;
    if (denied) {
        c.denied = &denied;
        c.n_denied = 1;
    }
    if (cordon_set_acl(db, coll, &c, 1, NULL, &e))
        fail_msg("set_acl %s: %s", id, e.message);
}

/* The probe's collection: u is in g and may search; X allows user:other, Y allows user:u. */
static cordon_t *open_states(char *dir, size_t cap, int asserted)
{
    cordon_t *db;
    const char *tf[] = {"body"};
    cordon_collection_spec sp = {.name = "docs",
                                 .dim = DIM,
                                 .text_fields = tf,
                                 .n_text_fields = 1,
                                 .asserted_principals = asserted};
    const char *other = "user:other", *mine = "user:u", *eng = "group:eng";
    cordon_field f = {"body", "secret plan"};
    cordon_chunk c[2] = {{.id = "X",
                          .vector = QV,
                          .fields = &f,
                          .n_fields = 1,
                          .allowed = asserted ? &eng : &other,
                          .n_allowed = 1},
                         {.id = "Y",
                          .vector = QV,
                          .fields = &f,
                          .n_fields = 1,
                          .allowed = asserted ? &eng : &mine,
                          .n_allowed = 1}};
    assert_non_null(tu_tmpdir(dir, cap));
    assert_int_equal(cordon_open(dir, NULL, &db, NULL), 0);
    assert_int_equal(cordon_collection_create(db, &sp, NULL), 0);
    op(db, "{\"op\":\"put_subject\",\"id\":\"u\"}");
    op(db, "{\"op\":\"put_group\",\"id\":\"g\"}");
    op(db, "{\"op\":\"add_member\",\"group\":\"g\",\"member\":\"u\"}");
    op(db, "{\"op\":\"grant\",\"to\":\"u\",\"permission\":{\"resource\":\"collection:docs\","
           "\"action\":\"*\"}}");
    assert_int_equal(cordon_put(db, "docs", c, 2, NULL, NULL), 0);
    return db;
}

/* ---- Forced interleavings. ---- */

typedef struct forced {
    cordon_t *db;
    atomic_int armed; /* the hook runs its writes once per arming */
    int deny_fresh;   /* which writes: see forced_hook */
    int unrelated;    /* write a model change that leaves u's view as it is */
    int calls;
    int attempts; /* every point reached: one per attempt of a request */
} forced_t;

/* At the first point after arming: either u leaves g and X is given to g (the model then the
 * ACLs: u can read X in no state), or X gets a deny naming user:bob, a principal no chunk has
 * named before (bob, who asserts group:eng and user:bob, can then read X in no state). */
static void forced_hook(cdn_hook_point_t point, void *arg)
{
    forced_t *f = arg;
    int one = 1;
    if (point != CDN_HOOK_SUBJECT_RESOLVED)
        return;
    f->attempts++;
    if (!atomic_compare_exchange_strong(&f->armed, &one, 0))
        return;
    f->calls++;
    if (f->unrelated) {
        op(f->db, "{\"op\":\"put_subject\",\"id\":\"zed\"}");
        op(f->db, "{\"op\":\"delete_subject\",\"id\":\"zed\"}");
        set_acl(f->db, "docs", "X", "group:g", NULL);
        return;
    }
    if (f->deny_fresh) {
        set_acl(f->db, "docs", "X", "group:eng", "user:bob");
        return;
    }
    op(f->db, "{\"op\":\"remove_member\",\"group\":\"g\",\"member\":\"u\"}");
    set_acl(f->db, "docs", "X", "group:g", NULL);
}

/* The revision a search reports names the state its answer holds. u leaves g and X is given
 * to g before the search locks the collection; u rejoins g while the search holds the lock. The
 * check then finds u's view unchanged and keeps the answer (u reads X in the state after the
 * rejoin), which must carry the rejoin's revision: the one it read under the lock names a
 * state (u outside g) in which u reads X in none. */
static int has_hit(const cordon_result *r, const char *id);

typedef struct relabel {
    cordon_t *db;
    atomic_int stage;
    uint64_t rejoin_rev;
} relabel_t;

static void *rejoin(void *arg)
{
    relabel_t *r = arg;
    if (cordon_model_apply(r->db, "{\"op\":\"add_member\",\"group\":\"g\",\"member\":\"u\"}",
                           &r->rejoin_rev, NULL))
        r->rejoin_rev = 0;
    return NULL;
}

static void relabel_hook(cdn_hook_point_t point, void *arg)
{
    relabel_t *r = arg;
    if (point == CDN_HOOK_SUBJECT_RESOLVED && atomic_load(&r->stage) == 0) {
        atomic_store(&r->stage, 1);
        op(r->db, "{\"op\":\"remove_member\",\"group\":\"g\",\"member\":\"u\"}");
        set_acl(r->db, "docs", "X", "group:g", NULL);
    } else if (point == CDN_HOOK_SEARCH_READ && atomic_load(&r->stage) == 1) {
        /* From another thread, as a writer would: this one holds the collection's read lock,
         * and writers take the engine's write lock before any collection lock. */
        pthread_t w;
        atomic_store(&r->stage, 2);
        assert_int_equal(pthread_create(&w, NULL, rejoin, r), 0);
        pthread_join(w, NULL);
        if (!r->rejoin_rev)
            fail_msg("the rejoin failed");
    }
}

/* The collection dropped between a search's lookup and its read of the collection: the search
 * answers "no such collection", never an internal error for records the drop removed. */
typedef struct dropper {
    atomic_int armed;
    cordon_t *db;
} dropper_t;

static void drop_hook(cdn_hook_point_t point, void *arg)
{
    dropper_t *d = arg;
    int one = 1;
    if (point == CDN_HOOK_SUBJECT_RESOLVED && atomic_compare_exchange_strong(&d->armed, &one, 0))
        assert_int_equal(cordon_collection_drop(d->db, "docs", NULL), 0);
}

static void test_drop_during_a_search_is_no_such_collection(void **state)
{
    (void)state;
    char dir[64];
    dropper_t d = {1, NULL};
    cordon_subject u = {.subject_id = "u"};
    cordon_query q = {.vector = QV, .k = 10, .strategy = CORDON_STRATEGY_EXACT, .with_records = 1};
    cordon_result *res = NULL;
    cordon_error e;
    d.db = open_states(dir, sizeof dir, 0);
    cdn_hook_set(drop_hook, &d);
    int rc = cordon_search(d.db, "docs", &u, &q, &res, &e);
    cdn_hook_set(NULL, NULL);
    assert_int_equal(atomic_load(&d.armed), 0); /* the drop ran inside the search */
    if (rc != CORDON_ERR_NOT_FOUND)
        fail_msg("a search across a drop: %d (%s)", rc, e.message);
    assert_non_null(strstr(e.message, "no such collection"));
    cordon_result_free(res);
    cordon_close(d.db);
    tu_rmrf(dir);
}

static void test_revision_names_the_state_of_an_answer_kept_after_a_model_write(void **state)
{
    (void)state;
    char dir[64];
    relabel_t r = {0};
    cordon_subject u = {.subject_id = "u"};
    cordon_query q = {.vector = QV, .k = 10, .strategy = CORDON_STRATEGY_EXACT};
    cordon_result *res = NULL;
    r.db = open_states(dir, sizeof dir, 0);
    cdn_hook_set(relabel_hook, &r);
    assert_int_equal(cordon_search(r.db, "docs", &u, &q, &res, NULL), 0);
    cdn_hook_set(NULL, NULL);
    assert_int_equal(atomic_load(&r.stage), 2);
    assert_true(has_hit(res, "X")); /* readable after the rejoin */
    assert_int_equal(res->revision, r.rejoin_rev);
    cordon_result_free(res);
    cordon_close(r.db);
    tu_rmrf(dir);
}

static int has_hit(const cordon_result *r, const char *id)
{
    for (size_t i = 0; i < r->n_hits; i++)
        if (!strcmp(r->hits[i].id, id))
            return 1;
    return 0;
}

enum { ASK_VECTOR, ASK_HNSW, ASK_TEXT, ASK_HYBRID, ASK_GET, ASK_COUNT };

/* The search of each kind but get: exact and graph vector searches, text, hybrid. */
static cordon_query query_for(int ask)
{
    cordon_query q = {.vector = QV, .k = 5, .strategy = CORDON_STRATEGY_EXACT};
    if (ask == ASK_HNSW)
        q.strategy = CORDON_STRATEGY_PREFILTER;
    if (ask == ASK_TEXT)
        q.vector = NULL;
    if (ask == ASK_TEXT || ask == ASK_HYBRID)
        q.text = "secret";
    return q;
}

/* Runs one request of kind `ask` as s with the hook armed; returns whether X came back. The
 * request itself must succeed and (but for get) still find Y, which every state lets it read. */
static int ask_with_writes(forced_t *f, const cordon_subject *s, int ask)
{
    cordon_result *r = NULL;
    cordon_record *rec = NULL;
    cordon_error e;
    int got;
    f->calls = f->attempts = 0;
    atomic_store(&f->armed, 1);
    if (ask == ASK_GET) {
        int rc = cordon_get(f->db, "docs", s, "X", &rec, &e);
        assert_true(rc == CORDON_OK || rc == CORDON_ERR_NOT_FOUND);
        got = rc == CORDON_OK;
        cordon_record_free(rec);
    } else {
        cordon_query q = query_for(ask);
        int rc = cordon_search(f->db, "docs", s, &q, &r, &e);
        if (rc)
            fail_msg("search %d: %s", ask, e.message);
        assert_true(has_hit(r, "Y"));
        got = has_hit(r, "X");
        cordon_result_free(r);
    }
    assert_int_equal(f->calls, 1); /* the writes did land inside the request */
    return got;
}

static void test_model_write_between_view_and_acls_is_never_paired_with_them(void **state)
{
    (void)state;
    char dir[64];
    forced_t f = {0};
    cordon_subject u = {.subject_id = "u"};
    f.db = open_states(dir, sizeof dir, 0);
    cdn_hook_set(forced_hook, &f);
    for (int ask = 0; ask < ASK_COUNT; ask++) {
        int got = ask_with_writes(&f, &u, ask);
        if (got)
            fail_msg("request kind %d returned X to u, readable in no state", ask);
        /* back to the first state: X to user:other, u in g */
        set_acl(f.db, "docs", "X", "user:other", NULL);
        op(f.db, "{\"op\":\"add_member\",\"group\":\"g\",\"member\":\"u\"}");
    }
    cdn_hook_set(NULL, NULL);
    cordon_close(f.db);
    tu_rmrf(dir);
}

/* A model write that leaves the subject's decision and view as they were (another subject
 * came and went) does not make a request start over: the answer is that of the state at its
 * check. One that changes them (u leaves g) does, once. Both answers are of a real state. */
static void test_only_model_writes_that_touch_the_subject_restart_a_request(void **state)
{
    (void)state;
    char dir[64];
    forced_t f = {.unrelated = 1};
    cordon_subject u = {.subject_id = "u"};
    f.db = open_states(dir, sizeof dir, 0);
    cdn_hook_set(forced_hook, &f);
    for (int ask = 0; ask < ASK_COUNT; ask++) {
        /* X now allows g and u is in g: the request must see X, in one attempt */
        int got = ask_with_writes(&f, &u, ask);
        assert_int_equal(f.attempts, 1);
        assert_true(got);
        set_acl(f.db, "docs", "X", "user:other", NULL);
    }
    f.unrelated = 0;
    for (int ask = 0; ask < ASK_COUNT; ask++) {
        assert_false(ask_with_writes(&f, &u, ask));
        assert_int_equal(f.attempts, 2);
        set_acl(f.db, "docs", "X", "user:other", NULL);
        op(f.db, "{\"op\":\"add_member\",\"group\":\"g\",\"member\":\"u\"}");
    }
    cdn_hook_set(NULL, NULL);
    cordon_close(f.db);
    tu_rmrf(dir);
}

static void test_deny_naming_a_new_principal_holds_for_a_request_already_running(void **state)
{
    (void)state;
    char dir[64];
    char name[32];
    forced_t f = {.deny_fresh = 1};
    const char *bob[] = {"group:eng", name};
    cordon_subject s = {.principals = bob, .n_principals = 2};
    f.db = open_states(dir, sizeof dir, 1);
    cdn_hook_set(forced_hook, &f);
    for (int ask = 0; ask < ASK_COUNT; ask++) {
        /* a name no chunk has named yet (each round opens a new directory): the deny
         * interns it inside the request */
        snprintf(name, sizeof name, "user:bob");
        int got = ask_with_writes(&f, &s, ask);
        if (got)
            fail_msg("request kind %d returned X to bob after a deny of bob", ask);
        cdn_hook_set(NULL, NULL);
        cordon_close(f.db);
        tu_rmrf(dir);
        f.db = open_states(dir, sizeof dir, 1);
        cdn_hook_set(forced_hook, &f);
    }
    cdn_hook_set(NULL, NULL);
    cordon_close(f.db);
    tu_rmrf(dir);
}

/* ---- The stress test: the probe's four states cycled against readers of every kind. ---- */

typedef struct stress {
    cordon_t *db;
    double deadline;
    atomic_long leaks, requests, errors, cycles;
    atomic_int stop;
} stress_t;

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* S0 u in g, X to other; S1 u out of g; S2 X to g; S3 X to other; S4 = S0: u can read X in
 * no state. */
static void *stress_writer(void *arg)
{
    stress_t *s = arg;
    while (now_s() < s->deadline) {
        op(s->db, "{\"op\":\"remove_member\",\"group\":\"g\",\"member\":\"u\"}");
        set_acl(s->db, "docs", "X", "group:g", NULL);
        set_acl(s->db, "docs", "X", "user:other", NULL);
        op(s->db, "{\"op\":\"add_member\",\"group\":\"g\",\"member\":\"u\"}");
        atomic_fetch_add(&s->cycles, 1);
    }
    atomic_store(&s->stop, 1);
    return NULL;
}

typedef struct reader_arg {
    stress_t *s;
    int kind;
} reader_arg_t;

static void *stress_reader(void *arg)
{
    reader_arg_t *ra = arg;
    stress_t *s = ra->s;
    cordon_subject u = {.subject_id = "u"};
    for (long n = 0; !atomic_load(&s->stop); n++) {
        int ask = (int)((n + ra->kind) % ASK_COUNT);
        cordon_result *r = NULL;
        cordon_record *rec = NULL;
        int rc;
        if (ask == ASK_GET) {
            rc = cordon_get(s->db, "docs", &u, "X", &rec, NULL);
            if (rc == CORDON_OK)
                atomic_fetch_add(&s->leaks, 1);
            else if (rc != CORDON_ERR_NOT_FOUND)
                atomic_fetch_add(&s->errors, 1);
            cordon_record_free(rec);
        } else {
            cordon_query q = query_for(ask);
            rc = cordon_search(s->db, "docs", &u, &q, &r, NULL);
            if (rc)
                atomic_fetch_add(&s->errors, 1);
            else if (has_hit(r, "X"))
                atomic_fetch_add(&s->leaks, 1);
            else if (!has_hit(r, "Y")) /* Y is readable in every state */
                atomic_fetch_add(&s->errors, 1);
            cordon_result_free(r);
        }
        atomic_fetch_add(&s->requests, 1);
    }
    return NULL;
}

#define MAX_READERS 32

static void test_writer_cycling_states_leaks_nothing_to_concurrent_readers(void **state)
{
    (void)state;
    char dir[64];
    stress_t s = {0};
    const char *env = getenv("CORDON_RACE_SECONDS"), *nenv = getenv("CORDON_RACE_READERS");
    double secs = env ? strtod(env, NULL) : 2.0;
    long nreaders = nenv ? strtol(nenv, NULL, 10) : 4;
    pthread_t w, r[MAX_READERS];
    reader_arg_t ra[MAX_READERS];
    if (!(secs > 0))
        secs = 2.0;
    if (nreaders < 1 || nreaders > MAX_READERS)
        nreaders = 4;
    s.db = open_states(dir, sizeof dir, 0);
    s.deadline = now_s() + secs;
    pthread_create(&w, NULL, stress_writer, &s);
    for (int i = 0; i < nreaders; i++) {
        ra[i] = (reader_arg_t){&s, i};
        pthread_create(&r[i], NULL, stress_reader, &ra[i]);
    }
    pthread_join(w, NULL);
    for (int i = 0; i < nreaders; i++)
        pthread_join(r[i], NULL);
    printf("race: %.1f s, %ld readers, %ld writer cycles, %ld requests, %ld leaks, %ld errors\n",
           secs, nreaders, (long)s.cycles, (long)s.requests, (long)s.leaks, (long)s.errors);
    assert_int_equal(s.errors, 0);
    assert_true(s.cycles > 0 && s.requests > 0);
    assert_int_equal(s.leaks, 0);
    cordon_close(s.db);
    tu_rmrf(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_model_write_between_view_and_acls_is_never_paired_with_them),
        cmocka_unit_test(test_deny_naming_a_new_principal_holds_for_a_request_already_running),
        cmocka_unit_test(test_only_model_writes_that_touch_the_subject_restart_a_request),
        cmocka_unit_test(test_revision_names_the_state_of_an_answer_kept_after_a_model_write),
        cmocka_unit_test(test_drop_during_a_search_is_no_such_collection),
        cmocka_unit_test(test_writer_cycling_states_leaks_nothing_to_concurrent_readers),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
