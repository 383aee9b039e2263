/* test_api.c: the public API end to end on small generated data: writes, reads and searches
 * as subjects, with a brute-force reference; bad input changes nothing; reopen keeps all.
 * Relies on cmocka and tests/testutil.h. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <sys/stat.h>

#include "api_testutil.h"
#include "cordon.h"
#include "testutil.h"

#define DIM 24
#define NCHUNK 600
#define NGROUP 12

typedef struct fixture {
    char dir[64];
    cordon_t *db;
    float vecs[NCHUNK][DIM];
    int group[NCHUNK];  /* allowed: group:gN; chunks with group -1 have an empty ACL */
    int denied[NCHUNK]; /* -1 or a group denied */
} fixture_t;

static void chunk_id(int i, char *buf, size_t n)
{
    snprintf(buf, n, "c%04d", i);
}

static int setup(void **state)
{
    fixture_t *f = calloc(1, sizeof *f);
    uint64_t seed = 42;
    api_db_open(f->dir, sizeof f->dir, &f->db);
    api_docs_create(f->db, DIM, CORDON_METRIC_L2);
    /* Batches of 100: one transaction (one fsync) each. */
    static char ids[NCHUNK][16], gnames[NCHUNK][16], dnames[NCHUNK][16];
    static const char *allowed[NCHUNK][1], *denied[NCHUNK][1];
    static cordon_chunk batch[NCHUNK];
    static cordon_field body = {"body", "some text"};
    for (int i = 0; i < NCHUNK; i++) {
        for (int d = 0; d < DIM; d++)
            f->vecs[i][d] = tu_randf(&seed) * 2 - 1;
        f->group[i] = (int)(tu_rand(&seed) % (NGROUP + 1)) - 1;
        f->denied[i] = (tu_rand(&seed) % 10 == 0) ? (int)(tu_rand(&seed) % NGROUP) : -1;
        chunk_id(i, ids[i], sizeof ids[i]);
        snprintf(gnames[i], sizeof gnames[i], "g%d", f->group[i]);
        snprintf(dnames[i], sizeof dnames[i], "group:g%d", f->denied[i]);
        allowed[i][0] = gnames[i];
        denied[i][0] = dnames[i];
        batch[i] = (cordon_chunk){.id = ids[i],
                                  .vector = f->vecs[i],
                                  .fields = &body,
                                  .n_fields = 1,
                                  .allowed = allowed[i],
                                  .n_allowed = f->group[i] >= 0,
                                  .denied = denied[i],
                                  .n_denied = f->denied[i] >= 0};
    }
    for (int i = 0; i < NCHUNK; i += 100)
        assert_int_equal(cordon_put(f->db, "docs", batch + i, 100, NULL, NULL), 0);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fixture_t *f = *state;
    api_db_close(f->dir, f->db);
    free(f);
    return 0;
}

/* A subject holding a random set of groups; names[] must have room for NGROUP + 1. */
static size_t random_subject(uint64_t *seed, char names[][16], const char **ptrs, int *holds)
{
    size_t n = 0;
    for (int g = 0; g < NGROUP; g++) {
        holds[g] = tu_rand(seed) % 3 == 0;
        if (holds[g]) {
            snprintf(names[n], 16, (g % 2) ? "g%d" : "group:g%d", g); /* bare = group */
            ptrs[n] = names[n];
            n++;
        }
    }
    return n;
}

static int readable_ref(const fixture_t *f, int i, const int *holds)
{
    return f->group[i] >= 0 && holds[f->group[i]] && !(f->denied[i] >= 0 && holds[f->denied[i]]);
}

static float l2(const float *a, const float *b)
{
    float s = 0;
    for (int d = 0; d < DIM; d++)
        s += (a[d] - b[d]) * (a[d] - b[d]);
    return s;
}

static void test_search_matches_brute_force_over_readable_chunks(void **state)
{
    fixture_t *f = *state;
    uint64_t seed = 7;
    for (int trial = 0; trial < 40; trial++) {
        char names[NGROUP + 1][16];
        const char *ptrs[NGROUP + 1];
        int holds[NGROUP];
        float q[DIM];
        size_t n = random_subject(&seed, names, ptrs, holds);
        for (int d = 0; d < DIM; d++)
            q[d] = tu_randf(&seed) * 2 - 1;
        cordon_subject s = {.principals = ptrs, .n_principals = n};
        cordon_query qu = {.vector = q, .k = 10};
        cordon_result *r;
        assert_int_equal(cordon_search(f->db, "docs", &s, &qu, &r, NULL), 0);
        /* Reference: sort the readable chunks by distance with a plain selection. */
        int used[NCHUNK] = {0}, nread = 0;
        for (int i = 0; i < NCHUNK; i++)
            nread += readable_ref(f, i, holds);
        assert_int_equal(r->readable, nread);
        assert_int_equal(r->n_hits, nread < 10 ? nread : 10);
        assert_true(r->complete);
        for (size_t h = 0; h < r->n_hits; h++) {
            int best = -1;
            for (int i = 0; i < NCHUNK; i++)
                if (!used[i] && readable_ref(f, i, holds) &&
                    (best < 0 || l2(f->vecs[i], q) < l2(f->vecs[best], q)))
                    best = i;
            used[best] = 1;
            char id[16];
            chunk_id(best, id, sizeof id);
            assert_string_equal(r->hits[h].id, id);
            assert_true(fabsf(r->hits[h].score - 1.0f / (1.0f + l2(f->vecs[best], q))) < 1e-4f);
        }
        cordon_result_free(r);
    }
}

static void test_empty_acl_is_readable_by_nobody(void **state)
{
    fixture_t *f = *state;
    const char *all[NGROUP + 2];
    char names[NGROUP + 2][16];
    for (int g = 0; g < NGROUP; g++) {
        snprintf(names[g], 16, "g%d", g);
        all[g] = names[g];
    }
    all[NGROUP] = "user:root";
    cordon_subject s = {.principals = all, .n_principals = NGROUP + 1};
    for (int i = 0; i < NCHUNK; i++) {
        char id[16];
        cordon_record *rec = NULL;
        chunk_id(i, id, sizeof id);
        int rc = cordon_get(f->db, "docs", &s, id, &rec, NULL);
        if (f->group[i] < 0 || f->denied[i] >= 0)
            assert_int_equal(rc, CORDON_ERR_NOT_FOUND); /* no ACL, or denied one of ours */
        else
            assert_int_equal(rc, 0);
        cordon_record_free(rec);
    }
}

static void test_hidden_chunk_and_missing_chunk_give_the_same_error(void **state)
{
    fixture_t *f = *state;
    const char *none[] = {"group:nobody-has-this"};
    cordon_subject s = {.principals = none, .n_principals = 1};
    cordon_record *rec = NULL;
    cordon_error e1, e2;
    assert_int_equal(cordon_get(f->db, "docs", &s, "c0001", &rec, &e1), CORDON_ERR_NOT_FOUND);
    assert_int_equal(cordon_get(f->db, "docs", &s, "nope", &rec, &e2), CORDON_ERR_NOT_FOUND);
    /* The messages differ only by the id the caller gave. */
    assert_non_null(strstr(e1.message, "\"c0001\""));
    assert_non_null(strstr(e2.message, "\"nope\""));
    assert_int_equal(strlen(e1.message), strlen(e2.message) + 1);
}

static void test_revoked_group_hides_chunk_on_next_search(void **state)
{
    fixture_t *f = *state;
    int i = 0;
    while (f->group[i] < 0 || f->denied[i] >= 0)
        i++;
    char id[16], g[16];
    chunk_id(i, id, sizeof id);
    snprintf(g, sizeof g, "g%d", f->group[i]);
    const char *mine[] = {g};
    cordon_subject s = {.principals = mine, .n_principals = 1};
    cordon_query q = {.vector = f->vecs[i], .k = 1};
    cordon_result *r;
    assert_int_equal(cordon_search(f->db, "docs", &s, &q, &r, NULL), 0);
    assert_int_equal(r->n_hits, 1);
    assert_string_equal(r->hits[0].id, id);
    cordon_result_free(r);
    const char *other[] = {"group:elsewhere"};
    cordon_acl_change ch = {.id = id, .allowed = other, .n_allowed = 1};
    uint64_t rev0 = cordon_revision(f->db), rev;
    assert_int_equal(cordon_set_acl(f->db, "docs", &ch, 1, &rev, NULL), 0);
    assert_true(rev > rev0);
    assert_int_equal(cordon_search(f->db, "docs", &s, &q, &r, NULL), 0);
    for (size_t h = 0; h < r->n_hits; h++)
        assert_string_not_equal(r->hits[h].id, id);
    assert_true(r->revision >= rev);
    cordon_result_free(r);
    cordon_record *rec;
    const char *newp[] = {"elsewhere"};
    cordon_subject s2 = {.principals = newp, .n_principals = 1};
    assert_int_equal(cordon_get(f->db, "docs", &s2, id, &rec, NULL), 0);
    assert_int_equal(rec->n_allowed, 1);
    assert_string_equal(rec->allowed[0], "group:elsewhere");
    cordon_record_free(rec);
}

static void expect_rejected(fixture_t *f, const cordon_chunk *c, int code, const char *needle)
{
    uint64_t rev = cordon_revision(f->db);
    cordon_collection_info info;
    cordon_error err;
    assert_int_equal(cordon_collection_info_get(f->db, "docs", &info, NULL), 0);
    uint64_t before = info.chunks;
    cordon_chunk batch[2] = {{.id = "fine-one", .vector = f->vecs[0]}, *c};
    assert_int_equal(cordon_put(f->db, "docs", batch, 2, NULL, &err), code);
    assert_non_null(strstr(err.message, needle));
    /* The check a loader runs first refuses exactly what the put refuses. */
    assert_int_equal(cordon_chunk_check(f->db, "docs", &batch[0], NULL), 0);
    assert_int_equal(cordon_chunk_check(f->db, "docs", c, &err), code);
    assert_non_null(strstr(err.message, needle));
    assert_int_equal(cordon_revision(f->db), rev);
    assert_int_equal(cordon_collection_info_get(f->db, "docs", &info, NULL), 0);
    assert_int_equal(info.chunks, before);
}

static void test_bad_chunks_are_refused_and_change_nothing(void **state)
{
    fixture_t *f = *state;
    float nan_vec[DIM];
    memcpy(nan_vec, f->vecs[1], sizeof nan_vec);
    nan_vec[5] = NAN;
    cordon_field bad_field = {"title", "x"};
    expect_rejected(f, &(cordon_chunk){.id = "x", .vector = nan_vec}, CORDON_ERR_INVALID,
                    "value 5 is not a finite number");
    expect_rejected(f, &(cordon_chunk){.id = NULL, .vector = f->vecs[1]}, CORDON_ERR_INVALID,
                    "no id");
    expect_rejected(f, &(cordon_chunk){.id = "x"}, CORDON_ERR_INVALID, "needs 24 values");
    expect_rejected(f, &(cordon_chunk){.id = "x", .vector = f->vecs[1], .metadata_json = "{"},
                    CORDON_ERR_INVALID, "not valid JSON");
    expect_rejected(f, &(cordon_chunk){.id = "x", .vector = f->vecs[1], .metadata_json = "[1]"},
                    CORDON_ERR_INVALID, "must be a JSON object");
    expect_rejected(
        f, &(cordon_chunk){.id = "x", .vector = f->vecs[1], .fields = &bad_field, .n_fields = 1},
        CORDON_ERR_INVALID, "\"title\" is not a text field");
    const char *bad_prin[] = {"user:"};
    expect_rejected(
        f, &(cordon_chunk){.id = "x", .vector = f->vecs[1], .allowed = bad_prin, .n_allowed = 1},
        CORDON_ERR_INVALID, "has a kind but no name");
    cordon_error err;
    cordon_chunk ok = {.id = "x", .vector = f->vecs[1]};
    assert_int_equal(cordon_put(f->db, "nope", &ok, 1, NULL, &err), CORDON_ERR_NOT_FOUND);
    assert_non_null(strstr(err.message, "no such collection \"nope\""));
    cordon_query q = {.vector = nan_vec};
    cordon_subject s = {.principals = NULL, .n_principals = 0};
    cordon_result *r;
    assert_int_equal(cordon_search(f->db, "docs", &s, &q, &r, &err), CORDON_ERR_INVALID);
    assert_non_null(strstr(err.message, "knn.query_vector value 5"));
}

static void test_unknown_principal_kind_is_refused_everywhere(void **state)
{
    fixture_t *f = *state;
    const char *typo[] = {"usr:mallory"}, *eng[] = {"group:eng"};
    expect_rejected(
        f, &(cordon_chunk){.id = "x", .vector = f->vecs[1], .allowed = typo, .n_allowed = 1},
        CORDON_ERR_INVALID, "\"usr:mallory\" has an unknown kind");
    expect_rejected(f,
                    &(cordon_chunk){.id = "x",
                                    .vector = f->vecs[1],
                                    .allowed = eng,
                                    .n_allowed = 1,
                                    .denied = typo,
                                    .n_denied = 1},
                    CORDON_ERR_INVALID, "\"usr:mallory\" has an unknown kind");
    cordon_error err;
    cordon_record *rec;
    cordon_subject as_eng = {.principals = eng, .n_principals = 1};
    assert_int_equal(cordon_get(f->db, "docs", &as_eng, "x", &rec, NULL), CORDON_ERR_NOT_FOUND);
    /* The ACL change path and the asserted principals of a search follow the same rule. */
    cordon_chunk ok = {.id = "kinded", .vector = f->vecs[1], .allowed = eng, .n_allowed = 1};
    assert_int_equal(cordon_put(f->db, "docs", &ok, 1, NULL, NULL), 0);
    cordon_acl_change ch = {
        .id = "kinded", .allowed = eng, .n_allowed = 1, .denied = typo, .n_denied = 1};
    assert_int_equal(cordon_set_acl(f->db, "docs", &ch, 1, NULL, &err), CORDON_ERR_INVALID);
    assert_non_null(strstr(err.message, "usr:mallory"));
    cordon_subject as_typo = {.principals = typo, .n_principals = 1};
    cordon_query q = {.vector = f->vecs[1]};
    cordon_result *r;
    assert_int_equal(cordon_search(f->db, "docs", &as_typo, &q, &r, &err), CORDON_ERR_INVALID);
    assert_non_null(strstr(err.message, "usr:mallory"));
}

static void test_chunk_check_refuses_a_control_character_in_an_id_and_writes_nothing(void **state)
{
    fixture_t *f = *state;
    const char *g[] = {"group:g1"};
    uint64_t rev = cordon_revision(f->db);
    cordon_error err;
    cordon_chunk ok = {.id = "checked", .vector = f->vecs[2], .allowed = g, .n_allowed = 1};
    cordon_chunk bad = {.id = "bad\x02", .vector = f->vecs[2], .allowed = g, .n_allowed = 1};
    assert_int_equal(cordon_chunk_check(f->db, "docs", &ok, &err), 0);
    assert_int_equal(cordon_chunk_check(f->db, "docs", &bad, &err), CORDON_ERR_INVALID);
    assert_non_null(strstr(err.message, "control character at byte 3"));
    assert_null(strstr(err.message, "chunk 0"));
    assert_int_equal(cordon_chunk_check(f->db, "nope", &ok, &err), CORDON_ERR_NOT_FOUND);
    assert_int_equal(cordon_revision(f->db), rev);
    cordon_record *rec;
    cordon_subject s = {.principals = g, .n_principals = 1};
    assert_int_equal(cordon_get(f->db, "docs", &s, "checked", &rec, NULL), CORDON_ERR_NOT_FOUND);
}

static void test_must_exist_opens_nothing_and_creates_nothing(void **state)
{
    fixture_t *f = *state;
    char missing[160], empty[96];
    cordon_options opts = {.must_exist = 1};
    cordon_error err;
    cordon_t *db = NULL;
    struct stat st;
    snprintf(missing, sizeof missing, "%s/typo", f->dir);
    assert_int_equal(cordon_open(missing, &opts, &db, &err), CORDON_ERR_NOT_FOUND);
    assert_null(db);
    assert_non_null(strstr(err.message, missing));
    assert_non_null(strstr(err.message, "cordon load --create"));
    assert_int_not_equal(stat(missing, &st), 0);
    /* A directory without a database is no database either, and stays empty. */
    snprintf(empty, sizeof empty, "%s/empty", f->dir);
    assert_int_equal(mkdir(empty, 0700), 0);
    assert_int_equal(cordon_open(empty, &opts, &db, &err), CORDON_ERR_NOT_FOUND);
    snprintf(missing, sizeof missing, "%s/data.mdb", empty);
    assert_int_not_equal(stat(missing, &st), 0);
}

static void test_update_replaces_vector_and_delete_removes(void **state)
{
    fixture_t *f = *state;
    const char *g[] = {"group:upd"};
    cordon_subject s = {.principals = g, .n_principals = 1};
    float far[DIM], near[DIM];
    for (int d = 0; d < DIM; d++) {
        far[d] = 50;
        near[d] = -50;
    }
    cordon_chunk c = {.id = "moving", .vector = far, .allowed = g, .n_allowed = 1};
    assert_int_equal(cordon_put(f->db, "docs", &c, 1, NULL, NULL), 0);
    c.vector = near;
    assert_int_equal(cordon_put(f->db, "docs", &c, 1, NULL, NULL), 0);
    cordon_query q = {.vector = far, .k = 5};
    cordon_result *r;
    assert_int_equal(cordon_search(f->db, "docs", &s, &q, &r, NULL), 0);
    assert_int_equal(r->readable, 1); /* the old version is gone, not a second chunk */
    assert_int_equal(r->n_hits, 1);
    assert_true(r->hits[0].score < 1.0f / (1.0f + 100.0f * DIM * 100.0f) * 2);
    cordon_result_free(r);
    const char *ids[] = {"moving", "never-existed"};
    size_t deleted = 9;
    assert_int_equal(cordon_delete(f->db, "docs", ids, 2, &deleted, NULL, NULL), 0);
    assert_int_equal(deleted, 1);
    assert_int_equal(cordon_search(f->db, "docs", &s, &q, &r, NULL), 0);
    assert_int_equal(r->readable, 0);
    assert_int_equal(r->n_hits, 0);
    cordon_result_free(r);
}

static void test_reopen_keeps_every_acknowledged_chunk(void **state)
{
    fixture_t *f = *state;
    uint64_t seed = 99, rev = cordon_revision(f->db);
    char names[NGROUP + 1][16];
    const char *ptrs[NGROUP + 1];
    int holds[NGROUP];
    size_t n = random_subject(&seed, names, ptrs, holds);
    cordon_subject s = {.principals = ptrs, .n_principals = n};
    cordon_query q = {.vector = f->vecs[3], .k = 20};
    cordon_result *a, *b;
    assert_int_equal(cordon_search(f->db, "docs", &s, &q, &a, NULL), 0);
    cordon_close(f->db);
    assert_int_equal(cordon_open(f->dir, NULL, &f->db, NULL), 0);
    assert_int_equal(cordon_revision(f->db), rev);
    assert_int_equal(cordon_search(f->db, "docs", &s, &q, &b, NULL), 0);
    assert_int_equal(a->n_hits, b->n_hits);
    assert_int_equal(a->readable, b->readable);
    for (size_t i = 0; i < a->n_hits; i++)
        assert_string_equal(a->hits[i].id, b->hits[i].id);
    cordon_result_free(a);
    cordon_result_free(b);
}

static void test_collections_create_list_drop(void **state)
{
    fixture_t *f = *state;
    cordon_collection_spec bad = {.name = "Bad Name", .dim = 4};
    cordon_error err;
    assert_int_equal(cordon_collection_create(f->db, &bad, &err), CORDON_ERR_INVALID);
    cordon_collection_spec dup = {.name = "docs", .dim = 4};
    assert_int_equal(cordon_collection_create(f->db, &dup, &err), CORDON_ERR_EXISTS);
    cordon_collection_spec other = {
        .asserted_principals = 1, .name = "another", .dim = 4, .metric = CORDON_METRIC_COSINE};
    assert_int_equal(cordon_collection_create(f->db, &other, NULL), 0);
    cordon_collection_info *list;
    size_t n;
    assert_int_equal(cordon_collection_list(f->db, &list, &n, NULL), 0);
    assert_int_equal(n, 2);
    assert_string_equal(list[0].name, "another");
    assert_string_equal(list[1].name, "docs");
    assert_int_equal(list[1].chunks, NCHUNK);
    cordon_free(list);
    assert_int_equal(cordon_collection_drop(f->db, "another", NULL), 0);
    assert_int_equal(cordon_collection_drop(f->db, "another", &err), CORDON_ERR_NOT_FOUND);
    cordon_close(f->db);
    assert_int_equal(cordon_open(f->dir, NULL, &f->db, NULL), 0);
    assert_int_equal(cordon_collection_list(f->db, &list, &n, NULL), 0);
    assert_int_equal(n, 1);
    cordon_free(list);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_search_matches_brute_force_over_readable_chunks, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_empty_acl_is_readable_by_nobody, setup, teardown),
        cmocka_unit_test_setup_teardown(test_hidden_chunk_and_missing_chunk_give_the_same_error,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(test_revoked_group_hides_chunk_on_next_search, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_unknown_principal_kind_is_refused_everywhere, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(
            test_chunk_check_refuses_a_control_character_in_an_id_and_writes_nothing, setup,
            teardown),
        cmocka_unit_test_setup_teardown(test_must_exist_opens_nothing_and_creates_nothing, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_bad_chunks_are_refused_and_change_nothing, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_update_replaces_vector_and_delete_removes, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_reopen_keeps_every_acknowledged_chunk, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_collections_create_list_drop, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
