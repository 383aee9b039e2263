/* test_audit.c: the retrieval audit through the public API. What a subject was shown is what
 * the log says it was shown (hits, ranks, scores, revision, plan); records are found by
 * subject, by returned chunk, by request id, by kind and by time, and page; gets (a hidden
 * chunk included) and is-authorized decisions are recorded; a collection's recording turns
 * off and stays off; with audit_sync a record is durable when the search returns (a child
 * process dies without closing); a log that refuses writes fails the searches it cannot
 * record; concurrent searches each get one record; the library records nothing by default.
 * Relies on cmocka, jansson (to read records back), fork and the store's fault hook. */
/* cmocka.h needs these four first. */
// clang-format off
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
// clang-format on

#include <jansson.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "api_testutil.h"
#include "store/store.h"

#define DIM 4
#define NDOCS 40

typedef struct fx {
    char dir[64];
    cordon_t *db;
} fx_t;

static void op(cordon_t *db, const char *json)
{
    cordon_error err;
    if (cordon_model_apply(db, json, NULL, &err))
        fail_msg("op %s failed: %s", json, err.message);
}

/* alice (eng) reads the even chunks, bob (staff) all; both may search and read docs. */
static void populate(cordon_t *db)
{
    cordon_collection_spec spec = {.name = "docs", .dim = DIM, .metric = CORDON_METRIC_L2};
    const char *tf[] = {"body"};
    spec.text_fields = tf;
    spec.n_text_fields = 1;
    assert_int_equal(cordon_collection_create(db, &spec, NULL), 0);
    op(db, "{\"op\":\"put_subject\",\"id\":\"alice\",\"kind\":\"user\"}");
    op(db, "{\"op\":\"put_subject\",\"id\":\"bob\",\"kind\":\"user\"}");
    op(db, "{\"op\":\"put_group\",\"id\":\"staff\"}");
    op(db, "{\"op\":\"put_group\",\"id\":\"eng\"}");
    op(db, "{\"op\":\"add_member\",\"group\":\"eng\",\"member\":\"alice\"}");
    op(db, "{\"op\":\"add_member\",\"group\":\"staff\",\"member\":\"alice\"}");
    op(db, "{\"op\":\"add_member\",\"group\":\"staff\",\"member\":\"bob\"}");
    op(db, "{\"op\":\"put_role\",\"id\":\"reader\",\"permissions\":["
           "{\"resource\":\"collection:docs\",\"action\":\"search\"},"
           "{\"resource\":\"collection:docs\",\"action\":\"read\"}]}");
    op(db, "{\"op\":\"grant\",\"to\":\"staff\",\"to_kind\":\"group\",\"role\":\"reader\"}");
    cordon_chunk c[NDOCS];
    float v[NDOCS][DIM];
    char ids[NDOCS][16];
    const char *eng[] = {"group:eng"}, *both[] = {"group:eng", "staff"};
    cordon_field f[NDOCS];
    for (int i = 0; i < NDOCS; i++) {
        snprintf(ids[i], sizeof ids[i], "d%02d", i);
        for (int j = 0; j < DIM; j++)
            v[i][j] = (float)((i * 7 + j * 3) % 11);
        f[i] = (cordon_field){"body", i % 3 ? "quarterly report" : "report on the audit"};
        c[i] = (cordon_chunk){.id = ids[i], .vector = v[i], .fields = &f[i], .n_fields = 1};
        c[i].allowed = i % 2 ? both + 1 : eng; /* odd: staff; even: eng only */
        c[i].n_allowed = 1;
    }
    assert_int_equal(cordon_put(db, "docs", c, NDOCS, NULL, NULL), 0);
}

static int open_audited(const char *dir, int sync, cordon_t **db)
{
    cordon_options o = {.audit = 1, .audit_sync = sync, .audit_queries = 1};
    return cordon_open(dir, &o, db, NULL);
}

static int setup(void **state)
{
    fx_t *f = calloc(1, sizeof *f);
    assert_non_null(tu_tmpdir(f->dir, sizeof f->dir));
    assert_int_equal(open_audited(f->dir, 0, &f->db), 0);
    populate(f->db);
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

typedef struct got {
    json_t *recs; /* array of the records read */
} got_t;

static int keep(void *ctx, uint64_t seq, const char *json, size_t len)
{
    got_t *g = ctx;
    json_error_t je;
    json_t *j = json_loadb(json, len, 0, &je);
    if (!j)
        fail_msg("record %llu is not JSON: %s", (unsigned long long)seq, je.text);
    assert_int_equal(json_integer_value(json_object_get(j, "seq")), (json_int_t)seq);
    json_array_append_new(g->recs, j);
    return 0;
}

/* The records f matches, as a new JSON array. */
static json_t *query(cordon_t *db, const cordon_audit_filter *f, uint64_t *more)
{
    got_t g = {json_array()};
    cordon_error err;
    int rc = cordon_audit_query(db, f, keep, &g, more, &err);
    if (rc)
        fail_msg("audit query: %s", err.message);
    return g.recs;
}

static cordon_result *search_as(cordon_t *db, const char *subject, const char *req,
                                const char *text)
{
    float q[DIM] = {1, 2, 3, 4};
    cordon_subject s = {.subject_id = subject, .request_id = req, .caller = "svc"};
    cordon_query qq = {.vector = text ? NULL : q, .text = text, .k = 5};
    cordon_result *r;
    cordon_error err;
    if (cordon_search(db, "docs", &s, &qq, &r, &err))
        fail_msg("search: %s", err.message);
    return r;
}

/* Record rec shows exactly result r's hits, ranks and scores, its plan and revision. */
static void assert_record_is(json_t *rec, const cordon_result *r, const char *subject)
{
    json_t *hits = json_object_get(rec, "hits");
    assert_string_equal(json_string_value(json_object_get(rec, "subject")), subject);
    assert_string_equal(json_string_value(json_object_get(rec, "kind")), "search");
    assert_string_equal(json_string_value(json_object_get(rec, "plan")), r->plan);
    assert_int_equal(json_integer_value(json_object_get(rec, "revision")), r->revision);
    assert_int_equal(json_integer_value(json_object_get(rec, "seq")), r->audit_seq);
    assert_int_equal(json_array_size(hits), r->n_hits);
    for (size_t i = 0; i < r->n_hits; i++) {
        json_t *h = json_array_get(hits, i);
        assert_string_equal(json_string_value(json_object_get(h, "id")), r->hits[i].id);
        assert_int_equal(json_integer_value(json_object_get(h, "rank")), i + 1);
        assert_float_equal(json_number_value(json_object_get(h, "score")), r->hits[i].score,
                           1e-6 * (1 + r->hits[i].score));
    }
}

static void test_search_records_what_was_shown(void **state)
{
    fx_t *f = *state;
    cordon_result *ra = search_as(f->db, "alice", "req-1", NULL);
    cordon_result *rb = search_as(f->db, "bob", "req-2", "audit");
    assert_true(ra->audit_seq > 0 && rb->audit_seq == ra->audit_seq + 1);
    cordon_audit_filter by_alice = {.subject = "alice"};
    json_t *recs = query(f->db, &by_alice, NULL);
    assert_int_equal(json_array_size(recs), 1);
    json_t *rec = json_array_get(recs, 0);
    assert_record_is(rec, ra, "alice");
    assert_string_equal(json_string_value(json_object_get(rec, "mode")), "vector");
    assert_string_equal(json_string_value(json_object_get(rec, "caller")), "svc");
    assert_string_equal(json_string_value(json_object_get(rec, "request_id")), "req-1");
    assert_int_equal(strlen(json_string_value(json_object_get(rec, "query_hash"))), 16);
    assert_true(json_is_true(json_object_get(json_object_get(rec, "query"), "vector")));
    json_decref(recs);
    cordon_audit_filter by_req = {.request_id = "req-2"};
    recs = query(f->db, &by_req, NULL);
    assert_int_equal(json_array_size(recs), 1);
    assert_record_is(json_array_get(recs, 0), rb, "bob");
    assert_string_equal(json_string_value(json_object_get(
                            json_object_get(json_array_get(recs, 0), "query"), "text")),
                        "audit");
    json_decref(recs);
    /* which subjects were shown chunk X: exactly the searches whose hits held it */
    for (int i = 0; i < NDOCS; i++) {
        char id[16];
        size_t want = 0;
        snprintf(id, sizeof id, "d%02d", i);
        for (size_t h = 0; h < ra->n_hits; h++)
            want += !strcmp(ra->hits[h].id, id);
        for (size_t h = 0; h < rb->n_hits; h++)
            want += !strcmp(rb->hits[h].id, id);
        cordon_audit_filter by_chunk = {.collection = "docs", .chunk_id = id};
        recs = query(f->db, &by_chunk, NULL);
        assert_int_equal(json_array_size(recs), want);
        json_decref(recs);
    }
    cordon_audit_filter bad = {.chunk_id = "d00"}; /* a chunk needs its collection */
    cordon_error err;
    got_t g = {json_array()};
    assert_int_equal(cordon_audit_query(f->db, &bad, keep, &g, NULL, &err), CORDON_ERR_INVALID);
    json_decref(g.recs);
    cordon_result_free(ra);
    cordon_result_free(rb);
}

static void test_get_and_decisions_are_recorded(void **state)
{
    fx_t *f = *state;
    cordon_subject bob = {.subject_id = "bob", .request_id = "g"};
    cordon_record *rec;
    assert_int_equal(cordon_get(f->db, "docs", &bob, "d01", &rec, NULL), 0);
    uint64_t get_seq = rec->audit_seq;
    assert_true(get_seq > 0);
    cordon_record_free(rec);
    assert_int_equal(cordon_get(f->db, "docs", &bob, "d02", &rec, NULL), CORDON_ERR_NOT_FOUND);
    cordon_authz_request q = {
        .subject = "bob", .resource = "collection:docs", .action = "read", .request_id = "g"};
    cordon_decision d;
    assert_int_equal(cordon_is_authorized(f->db, &q, &d, NULL), 0);
    assert_int_equal(d.audit_seq, get_seq + 2); /* after the two gets */
    q.no_audit = 1;                             /* a server's own gate: not recorded */
    assert_int_equal(cordon_is_authorized(f->db, &q, &d, NULL), 0);
    assert_int_equal(d.audit_seq, 0);
    cordon_audit_filter by_req = {.request_id = "g"};
    json_t *recs = query(f->db, &by_req, NULL);
    assert_int_equal(json_array_size(recs), 3);
    json_t *g1 = json_array_get(recs, 0), *g2 = json_array_get(recs, 1),
           *a = json_array_get(recs, 2);
    assert_string_equal(json_string_value(json_object_get(g1, "kind")), "get");
    assert_true(json_is_true(json_object_get(g1, "found")));
    assert_int_equal(json_array_size(json_object_get(g1, "hits")), 1);
    assert_true(json_is_false(json_object_get(g2, "found"))); /* the probe of a hidden chunk */
    assert_string_equal(json_string_value(json_object_get(g2, "requested")), "d02");
    assert_int_equal(json_array_size(json_object_get(g2, "hits")), 0);
    assert_string_equal(json_string_value(json_object_get(a, "kind")), "authorize");
    json_t *dec = json_array_get(json_object_get(a, "decisions"), 0);
    assert_true(json_is_true(json_object_get(dec, "authorized")));
    assert_string_equal(json_string_value(json_object_get(dec, "reason")), d.reason);
    json_decref(recs);
    /* the hidden chunk's own index shows only the get that returned d01, not the probe */
    cordon_audit_filter by_chunk = {.collection = "docs", .chunk_id = "d02"};
    recs = query(f->db, &by_chunk, NULL);
    assert_int_equal(json_array_size(recs), 0);
    json_decref(recs);
    cordon_audit_filter by_kind = {.kind = "get"};
    recs = query(f->db, &by_kind, NULL);
    assert_int_equal(json_array_size(recs), 2);
    json_decref(recs);
}

static void test_time_range_and_paging(void **state)
{
    fx_t *f = *state;
    uint64_t seqs[30];
    for (int i = 0; i < 30; i++) {
        cordon_result *r = search_as(f->db, i % 2 ? "bob" : "alice", NULL, "report");
        seqs[i] = r->audit_seq;
        cordon_result_free(r);
    }
    cordon_audit_filter all = {0};
    json_t *recs = query(f->db, &all, NULL);
    assert_int_equal(json_array_size(recs), 30);
    /* since the time of the 11th record: the 11th on (times never decrease) */
    uint64_t t10 =
        (uint64_t)json_integer_value(json_object_get(json_array_get(recs, 10), "time_us"));
    uint64_t t9 = (uint64_t)json_integer_value(json_object_get(json_array_get(recs, 9), "time_us"));
    json_decref(recs);
    cordon_audit_filter since = {.since_us = t10, .until_us = 0};
    recs = query(f->db, &since, NULL);
    size_t n_since = json_array_size(recs);
    assert_true(n_since >= 20 && n_since <= 30 - (t9 < t10 ? 10 : 0));
    for (size_t i = 0; i < n_since; i++)
        assert_true((uint64_t)json_integer_value(
                        json_object_get(json_array_get(recs, i), "time_us")) >= t10);
    json_decref(recs);
    cordon_audit_filter until = {.until_us = t10};
    recs = query(f->db, &until, NULL);
    assert_int_equal(json_array_size(recs) + n_since, 30);
    json_decref(recs);
    /* pages of 7 of bob's 15, each going on after the last */
    cordon_audit_filter page = {.subject = "bob", .limit = 7};
    size_t total = 0, pages = 0;
    uint64_t more;
    do {
        recs = query(f->db, &page, &more);
        for (size_t i = 0; i < json_array_size(recs); i++) {
            json_t *r = json_array_get(recs, i);
            assert_string_equal(json_string_value(json_object_get(r, "subject")), "bob");
            assert_int_equal(json_integer_value(json_object_get(r, "seq")), seqs[2 * total + 1]);
            total++;
        }
        json_decref(recs);
        page.after_seq = more;
        pages++;
    } while (more);
    assert_int_equal(total, 15);
    assert_int_equal(pages, 3);
}

static void test_collection_off_persists(void **state)
{
    fx_t *f = *state;
    cordon_error err;
    assert_int_equal(cordon_audit_collection(f->db, "nope", 0, &err), CORDON_ERR_NOT_FOUND);
    assert_int_equal(cordon_audit_collection(f->db, "docs", 0, &err), 0);
    cordon_result *r = search_as(f->db, "alice", NULL, "report");
    assert_int_equal(r->audit_seq, 0);
    cordon_result_free(r);
    cordon_close(f->db);
    assert_int_equal(open_audited(f->dir, 0, &f->db), 0);
    r = search_as(f->db, "alice", NULL, "report");
    assert_int_equal(r->audit_seq, 0); /* still off after a restart */
    cordon_result_free(r);
    assert_int_equal(cordon_audit_collection(f->db, "docs", 1, &err), 0);
    r = search_as(f->db, "alice", NULL, "report");
    assert_true(r->audit_seq > 0);
    cordon_result_free(r);
    cordon_audit_info info;
    assert_int_equal(cordon_audit_info_get(f->db, &info, NULL), 0);
    assert_int_equal(info.records, 1);
    assert_true(info.recording && !info.durable && info.flush_ms == 200 && info.bytes > 0);
}

static void test_off_by_default(void **state)
{
    (void)state;
    char dir[64];
    cordon_t *db;
    api_db_open(dir, sizeof dir, &db);
    populate(db);
    cordon_result *r = search_as(db, "alice", NULL, NULL);
    assert_int_equal(r->audit_seq, 0);
    cordon_result_free(r);
    cordon_audit_filter all = {0};
    json_t *recs = query(db, &all, NULL);
    assert_int_equal(json_array_size(recs), 0);
    json_decref(recs);
    cordon_audit_info info;
    assert_int_equal(cordon_audit_info_get(db, &info, NULL), 0);
    assert_false(info.recording);
    cordon_error err;
    assert_int_equal(cordon_audit_collection(db, "docs", 0, &err), CORDON_ERR_CONFLICT);
    api_db_close(dir, db);
}

/* audit_sync: a record is on disk when the search returns, whatever happens next. */
static void test_sync_record_survives_a_crash(void **state)
{
    (void)state;
    char dir[64];
    cordon_t *db;
    assert_non_null(tu_tmpdir(dir, sizeof dir));
    assert_int_equal(open_audited(dir, 1, &db), 0);
    populate(db);
    cordon_close(db);
    int pipefd[2];
    assert_int_equal(pipe(pipefd), 0);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        cordon_t *cdb;
        if (open_audited(dir, 1, &cdb))
            _exit(2);
        uint64_t seqs[5];
        for (int i = 0; i < 5; i++) {
            cordon_result *r = search_as(cdb, "bob", "crash", NULL);
            seqs[i] = r->audit_seq;
            cordon_result_free(r);
        }
        if (write(pipefd[1], seqs, sizeof seqs) != (ssize_t)sizeof seqs)
            _exit(3);
        _exit(0); /* no close: what was acknowledged must already be durable */
    }
    close(pipefd[1]);
    uint64_t seqs[5];
    assert_int_equal(read(pipefd[0], seqs, sizeof seqs), sizeof seqs);
    close(pipefd[0]);
    int st;
    assert_int_equal(waitpid(pid, &st, 0), pid);
    assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    assert_int_equal(cordon_open(dir, NULL, &db, NULL), 0); /* reading needs no recording */
    cordon_audit_filter by_req = {.request_id = "crash"};
    json_t *recs = query(db, &by_req, NULL);
    assert_int_equal(json_array_size(recs), 5);
    for (int i = 0; i < 5; i++)
        assert_int_equal(json_integer_value(json_object_get(json_array_get(recs, i), "seq")),
                         seqs[i]);
    json_decref(recs);
    api_db_close(dir, db);
}

/* A log that refuses to write fails the searches it cannot record, and recovers. */
static void test_unrecordable_search_fails_closed(void **state)
{
    (void)state;
    char dir[64];
    cordon_t *db;
    cordon_error err;
    assert_non_null(tu_tmpdir(dir, sizeof dir));
    assert_int_equal(open_audited(dir, 1, &db), 0);
    populate(db);
    float q[DIM] = {1};
    cordon_subject s = {.subject_id = "bob"};
    cordon_query qq = {.vector = q, .k = 3};
    cordon_result *r = NULL;
    store_fail_after(0); /* the audit's next write fails */
    assert_int_equal(cordon_search(db, "docs", &s, &qq, &r, &err), CORDON_ERR_IO);
    assert_null(r);
    assert_non_null(strstr(err.message, "audit"));
    store_fail_after(-1);
    /* the writer retries: searches answer again once the log takes the records */
    int ok = 0;
    for (int i = 0; i < 100 && !ok; i++) {
        if (cordon_search(db, "docs", &s, &qq, &r, &err) == 0) {
            ok = 1;
            cordon_result_free(r);
        } else {
            assert_int_equal(err.code, CORDON_ERR_IO);
            usleep(50000);
        }
    }
    assert_true(ok);
    api_db_close(dir, db);
}

typedef struct worker {
    cordon_t *db;
    uint64_t seqs[50];
} worker_t;

static void *search_many(void *arg)
{
    worker_t *w = arg;
    for (int i = 0; i < 50; i++) {
        cordon_result *r = search_as(w->db, i % 2 ? "alice" : "bob", NULL, "report");
        w->seqs[i] = r->audit_seq;
        cordon_result_free(r);
    }
    return NULL;
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

static void test_concurrent_searches_one_record_each(void **state)
{
    fx_t *f = *state;
    enum { T = 4 };
    pthread_t th[T];
    worker_t w[T];
    uint64_t all[T * 50];
    for (int i = 0; i < T; i++) {
        w[i].db = f->db;
        assert_int_equal(pthread_create(&th[i], NULL, search_many, &w[i]), 0);
    }
    for (int i = 0; i < T; i++) {
        pthread_join(th[i], NULL);
        memcpy(all + i * 50, w[i].seqs, sizeof w[i].seqs);
    }
    qsort(all, T * 50, sizeof *all, cmp_u64);
    for (int i = 0; i < T * 50; i++)
        assert_int_equal(all[i], all[0] + (uint64_t)i); /* unique and gapless */
    cordon_audit_filter all_f = {0};
    json_t *recs = query(f->db, &all_f, NULL);
    assert_int_equal(json_array_size(recs), T * 50);
    json_decref(recs);
}

static void test_bad_labels_refused(void **state)
{
    fx_t *f = *state;
    char big[CORDON_REQUEST_ID_MAX + 2];
    memset(big, 'r', sizeof big - 1);
    big[sizeof big - 1] = 0;
    float q[DIM] = {1};
    cordon_query qq = {.vector = q};
    cordon_result *r = NULL;
    cordon_error err;
    cordon_subject s = {.subject_id = "bob", .request_id = big};
    assert_int_equal(cordon_search(f->db, "docs", &s, &qq, &r, &err), CORDON_ERR_LIMIT);
    s.request_id = "line\nbreak";
    assert_int_equal(cordon_search(f->db, "docs", &s, &qq, &r, &err), CORDON_ERR_INVALID);
    s.request_id = NULL;
    s.caller = "\xff\xfe";
    assert_int_equal(cordon_search(f->db, "docs", &s, &qq, &r, &err), CORDON_ERR_INVALID);
    assert_null(r);
    cordon_audit_info info;
    assert_int_equal(cordon_audit_info_get(f->db, &info, NULL), 0);
    assert_int_equal(info.records, 0); /* refused calls record nothing */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_search_records_what_was_shown, setup, teardown),
        cmocka_unit_test_setup_teardown(test_get_and_decisions_are_recorded, setup, teardown),
        cmocka_unit_test_setup_teardown(test_time_range_and_paging, setup, teardown),
        cmocka_unit_test_setup_teardown(test_collection_off_persists, setup, teardown),
        cmocka_unit_test(test_off_by_default),
        cmocka_unit_test(test_sync_record_survives_a_crash),
        cmocka_unit_test(test_unrecordable_search_fails_closed),
        cmocka_unit_test_setup_teardown(test_concurrent_searches_one_record_each, setup, teardown),
        cmocka_unit_test_setup_teardown(test_bad_labels_refused, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
