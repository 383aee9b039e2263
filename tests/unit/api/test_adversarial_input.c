/* test_adversarial_input.c: hostile and odd input through the public API: ids with special
 * bytes, odd principals, k and window sizes at and past their limits, non-finite and extreme
 * query vectors, ES query JSON that reaches for internal ids, duplicate ids in one batch,
 * failed batches that must change nothing, and error messages that must not tell hidden from
 * missing. Relies on cmocka and tests/testutil.h. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "cordon.h"
#include "testutil.h"

#define DIM 4

typedef struct fx {
    char dir[64];
    cordon_t *db;
} fx_t;

static const char *const G0[] = {"group:g0"};
static const char *const G1[] = {"group:g1"};

static void make(cordon_t *db, const char *name, cordon_metric m)
{
    const char *tf[] = {"body"};
    cordon_collection_spec spec = {.asserted_principals = 1,
                                   .name = name,
                                   .dim = DIM,
                                   .metric = m,
                                   .text_fields = tf,
                                   .n_text_fields = 1};
    cordon_error err;
    if (cordon_collection_create(db, &spec, &err))
        fail_msg("create %s: %s", name, err.message);
}

static int setup(void **state)
{
    fx_t *f = calloc(1, sizeof *f);
    assert_non_null(tu_tmpdir(f->dir, sizeof f->dir));
    assert_int_equal(cordon_open(f->dir, NULL, &f->db, NULL), 0);
    make(f->db, "docs", CORDON_METRIC_COSINE);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fx_t *f = *state;
    cordon_close(f->db);
    tu_rmrf(f->dir);
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

static int can_get(cordon_t *db, const char *coll, const char *const *p, size_t n, const char *id)
{
    cordon_subject s = {.principals = p, .n_principals = n};
    cordon_record *r = NULL;
    int rc = cordon_get(db, coll, &s, id, &r, NULL);
    if (rc == 0)
        assert_string_equal(r->id, id);
    cordon_record_free(r);
    return rc == 0;
}

/* ES "ids" matches documents by their _id. Whatever the engine makes of it, a hit whose id is
 * not among the values is a wrong answer (and lets a caller probe rows by number). */
static void test_ids_query_matches_chunk_ids_not_internal_rows(void **state)
{
    fx_t *f = *state;
    const char *order[] = {"5", "zz", "1", "0"}; /* rows 0..3 */
    for (int i = 0; i < 4; i++)
        assert_int_equal(put1(f->db, "docs", order[i], NULL, G0, 1, NULL), 0);
    cordon_subject s = {.principals = G0, .n_principals = 1};
    const char *vals[] = {"1", "0", "5"};
    for (int i = 0; i < 3; i++) {
        char q[64];
        cordon_result *r;
        cordon_error err;
        snprintf(q, sizeof q, "{\"ids\":{\"values\":[\"%s\"]}}", vals[i]);
        cordon_query qu = {.query_json = q};
        int rc = cordon_search(f->db, "docs", &s, &qu, &r, &err);
        if (rc)
            fail_msg("ids query %s refused: %s", q, err.message);
        char wrong[64] = "";
        size_t n = r->n_hits;
        for (size_t h = 0; h < r->n_hits; h++)
            if (strcmp(r->hits[h].id, vals[i]))
                snprintf(wrong, sizeof wrong, "%s", r->hits[h].id);
        cordon_result_free(r);
        if (wrong[0])
            fail_msg("ids query for \"%s\" returned chunk \"%s\" (it matched a row number)",
                     vals[i], wrong);
        assert_int_equal(n, 1);
    }
    /* And string ids, the usual case. */
    cordon_query qs = {.query_json = "{\"ids\":{\"values\":[\"zz\"]}}"};
    cordon_result *r;
    assert_int_equal(cordon_search(f->db, "docs", &s, &qs, &r, NULL), 0);
    assert_int_equal(r->n_hits, 1);
    assert_string_equal(r->hits[0].id, "zz");
    cordon_result_free(r);
}

static void test_non_finite_and_extreme_query_vectors(void **state)
{
    fx_t *f = *state;
    make(f->db, "dot", CORDON_METRIC_DOT);
    uint64_t seed = 3;
    for (int i = 0; i < 30; i++) {
        float v[DIM];
        char id[16];
        for (int d = 0; d < DIM; d++)
            v[d] = (tu_randf(&seed) * 2 - 1) * 4;
        snprintf(id, sizeof id, "d%d", i);
        assert_int_equal(put1(f->db, "dot", id, v, G0, 1, NULL), 0);
        assert_int_equal(put1(f->db, "docs", id, v, G0, 1, NULL), 0);
    }
    cordon_subject s = {.principals = G0, .n_principals = 1};
    cordon_result *r = NULL;
    const float bad[] = {NAN, INFINITY, -INFINITY};
    for (int b = 0; b < 3; b++) {
        float q[DIM] = {1, 0, 0, 0};
        q[2] = bad[b];
        for (int strat = 0; strat <= CORDON_STRATEGY_POSTFILTER; strat++) {
            cordon_query qu = {.vector = q, .strategy = (cordon_strategy)strat};
            assert_int_equal(cordon_search(f->db, "docs", &s, &qu, &r, NULL), CORDON_ERR_INVALID);
            cordon_query hy = {.vector = q, .text = "common", .strategy = (cordon_strategy)strat};
            assert_int_equal(cordon_search(f->db, "dot", &s, &hy, &r, NULL), CORDON_ERR_INVALID);
        }
    }
    /* A zero vector has no direction under cosine: refused, naming the field. */
    float zero[DIM] = {0};
    cordon_error err;
    cordon_query zq = {.vector = zero, .strategy = CORDON_STRATEGY_EXACT};
    assert_int_equal(cordon_search(f->db, "docs", &s, &zq, &r, &err), CORDON_ERR_INVALID);
    assert_non_null(strstr(err.message, "knn.query_vector is a zero vector"));
    /* Finite but huge values: the dot products overflow to inf and NaN, which cannot be ranked
     * nor written as JSON: refused with the limit, for queries and chunks alike. */
    float huge[DIM] = {3e38f, 3e38f, -3e38f, 3e38f};
    for (int strat = 0; strat <= CORDON_STRATEGY_EXACT; strat++) {
        cordon_query hq = {.vector = huge, .k = 30, .strategy = (cordon_strategy)strat};
        assert_int_equal(cordon_search(f->db, "dot", &s, &hq, &r, &err), CORDON_ERR_INVALID);
        assert_non_null(strstr(err.message, "knn.query_vector has length"));
    }
    uint64_t rev = cordon_revision(f->db);
    float big[DIM] = {3e38f, -3e38f, 3e38f, -3e38f};
    assert_int_equal(put1(f->db, "dot", "big", big, G0, 1, &err), CORDON_ERR_INVALID);
    assert_non_null(strstr(err.message, "chunk \"big\": vector has length"));
    assert_int_equal(cordon_revision(f->db), rev);
    /* The largest vectors allowed still score finitely against each other. */
    float edge[DIM] = {4.6e18f, -4.6e18f, 4.6e18f, -4.6e18f};
    assert_int_equal(put1(f->db, "dot", "edge", edge, G0, 1, &err), 0);
    for (int strat = 0; strat <= CORDON_STRATEGY_EXACT; strat++) {
        cordon_query eq = {.vector = edge, .k = 31, .strategy = (cordon_strategy)strat};
        assert_int_equal(cordon_search(f->db, "dot", &s, &eq, &r, NULL), 0);
        assert_true(r->n_hits > 0);
        assert_string_equal(r->hits[0].id, "edge");
        for (size_t h = 0; h < r->n_hits; h++)
            if (!isfinite(r->hits[h].score))
                fail_msg("strategy %d: hit %s has score %g", strat, r->hits[h].id,
                         r->hits[h].score);
        cordon_result_free(r);
    }
}

/* A cosine vector whose length is not a normal float normalises to inf/NaN (1 / length
 * overflows): such a chunk would count as readable and never be found while results said
 * complete. Refused for chunks and queries; a length just above the bound works. */
static void test_tiny_cosine_vectors_are_refused_and_small_ones_found(void **state)
{
    fx_t *f = *state;
    cordon_subject s = {.principals = G0, .n_principals = 1};
    const float tiny[DIM] = {1e-40f, 0, 0, 0}, small[DIM] = {0, 3e-38f, 0, 0};
    const float one[DIM] = {1, 0, 0, 0};
    cordon_result *r;
    cordon_error err;
    uint64_t rev = cordon_revision(f->db);
    assert_int_equal(put1(f->db, "docs", "tiny", tiny, G0, 1, &err), CORDON_ERR_INVALID);
    assert_non_null(strstr(err.message, "chunk \"tiny\": vector has length"));
    assert_non_null(strstr(err.message, "too small to normalise"));
    assert_int_equal(cordon_revision(f->db), rev);
    assert_false(can_get(f->db, "docs", G0, 1, "tiny"));
    for (int strat = 0; strat <= CORDON_STRATEGY_POSTFILTER; strat++) {
        cordon_query q = {.vector = tiny, .strategy = (cordon_strategy)strat};
        assert_int_equal(cordon_search(f->db, "docs", &s, &q, &r, &err), CORDON_ERR_INVALID);
        assert_non_null(strstr(err.message, "knn.query_vector has length"));
    }
    assert_int_equal(put1(f->db, "docs", "normal", one, G0, 1, NULL), 0);
    assert_int_equal(put1(f->db, "docs", "small", small, G0, 1, &err), 0);
    cordon_query q = {.vector = small, .k = 2, .strategy = CORDON_STRATEGY_EXACT};
    assert_int_equal(cordon_search(f->db, "docs", &s, &q, &r, NULL), 0);
    assert_int_equal(r->n_hits, 2);
    assert_true(r->complete);
    assert_string_equal(r->hits[0].id, "small");
    assert_true(fabsf(r->hits[0].score - 1.0f) < 1e-5f);
    assert_true(isfinite(r->hits[1].score));
    cordon_result_free(r);
}

/* A query or filter on a field the collection does not index could only match nothing: a typo
 * or an undeclared metadata key would pass for "no results". Refused, naming the field, the
 * same for a subject who reads everything and one who reads nothing. */
static void test_queries_on_fields_the_collection_does_not_index_are_refused(void **state)
{
    fx_t *f = *state;
    static const char *const nobody[] = {"group:nobody"};
    const char *bad[] = {"{\"match\":{\"titel\":\"words\"}}", "{\"term\":{\"dept\":\"hr\"}}",
                         "{\"multi_match\":{\"query\":\"words\",\"fields\":[\"body\",\"dept^2\"]}}",
                         "{\"bool\":{\"must\":[{\"match\":{\"body\":\"words\"}}],"
                         "\"must_not\":[{\"exists\":{\"field\":\"dept\"}}]}}"};
    const char *named[] = {"\"titel\"", "\"dept\"", "\"dept\"", "\"dept\""};
    assert_int_equal(put1(f->db, "docs", "a", NULL, G0, 1, NULL), 0);
    for (int who = 0; who < 2; who++) {
        cordon_subject s = {.principals = who ? nobody : G0, .n_principals = 1};
        for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
            cordon_result *r;
            cordon_error e1, e2;
            cordon_query q = {.query_json = bad[i]};
            cordon_query fq = {.text = "common", .filter_json = bad[i]};
            assert_int_equal(cordon_search(f->db, "docs", &s, &q, &r, &e1), CORDON_ERR_INVALID);
            assert_non_null(strstr(e1.message, named[i]));
            assert_non_null(strstr(e1.message, "not a text or metadata field"));
            assert_int_equal(cordon_search(f->db, "docs", &s, &fq, &r, &e2), CORDON_ERR_INVALID);
            assert_non_null(strstr(e2.message, named[i]));
        }
    }
    cordon_subject s = {.principals = G0, .n_principals = 1};
    cordon_query ok = {.query_json = "{\"match\":{\"body\":\"common\"}}"};
    cordon_result *r;
    assert_int_equal(cordon_search(f->db, "docs", &s, &ok, &r, NULL), 0);
    assert_int_equal(r->n_hits, 1);
    cordon_result_free(r);
}

static void test_ids_with_special_bytes_round_trip_and_bad_ids_are_refused(void **state)
{
    fx_t *f = *state;
    static char longid[CORDON_ID_MAX + 2];
    memset(longid, 'x', CORDON_ID_MAX);
    longid[CORDON_ID_MAX] = '\0';
    const char *good[] = {"a b",
                          "quote\"",
                          "back\\slash",
                          "slash/x",
                          "%00",
                          "\xc3\xbcn\xc3\xaf",
                          "\xf0\x9f\x98\x80",
                          "group:g0",
                          "c001",
                          "{}",
                          longid + 8};
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
        cordon_error err;
        if (put1(f->db, "docs", good[i], NULL, G0, 1, &err))
            fail_msg("id %zu refused: %s", i, err.message);
        assert_true(can_get(f->db, "docs", G0, 1, good[i]));
        assert_false(can_get(f->db, "docs", G1, 1, good[i]));
    }
    cordon_subject s = {.principals = G0, .n_principals = 1};
    cordon_query q = {.text = "common", .k = 100};
    cordon_result *r;
    assert_int_equal(cordon_search(f->db, "docs", &s, &q, &r, NULL), 0);
    assert_int_equal(r->n_hits, sizeof good / sizeof good[0]);
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
        int found = 0;
        for (size_t h = 0; h < r->n_hits; h++)
            found += !strcmp(r->hits[h].id, good[i]);
        assert_int_equal(found, 1);
    }
    cordon_result_free(r);
    longid[CORDON_ID_MAX] = 'x';
    longid[CORDON_ID_MAX + 1] = '\0'; /* one past the limit */
    /* The header promises "UTF-8 without controls": DEL and C1 controls are controls, and a
     * byte sequence that is not UTF-8 cannot be returned in a JSON response. */
    const char *bad[] = {"", longid, "a\nb", "\t", "a\x7f", "\xff\xfe", "\xc3", "a\xc2\x85"};
    char accepted[128] = "";
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        uint64_t rev = cordon_revision(f->db);
        cordon_error err;
        int rc = put1(f->db, "docs", bad[i], NULL, G0, 1, &err);
        if (rc != CORDON_ERR_INVALID)
            snprintf(accepted + strlen(accepted), sizeof accepted - strlen(accepted), " %zu", i);
        else
            assert_int_equal(cordon_revision(f->db), rev);
    }
    if (accepted[0])
        fail_msg("bad ids accepted (indexes into bad[]):%s", accepted);
}

/* CORDON_ID_MAX is 512: an id of exactly that length is valid input and must be stored (not
 * fail deep in the store with an I/O error). */
static void test_id_of_the_documented_maximum_length_is_stored(void **state)
{
    fx_t *f = *state;
    static char id[CORDON_ID_MAX + 1];
    for (size_t len = CORDON_ID_MAX - 8; len <= CORDON_ID_MAX; len++) {
        cordon_error err;
        memset(id, 'm', len);
        id[len] = '\0';
        int rc = put1(f->db, "docs", id, NULL, G0, 1, &err);
        if (rc)
            fail_msg("id of %zu bytes (limit %d) refused: %d %s", len, CORDON_ID_MAX, rc,
                     err.message);
        assert_true(can_get(f->db, "docs", G0, 1, id));
    }
}

static void test_odd_principals_in_acls_are_refused_and_change_nothing(void **state)
{
    fx_t *f = *state;
    static char longp[300];
    memset(longp, 'p', sizeof longp - 1);
    const char *bad[] = {"group:", ":eng", "", longp, "g\x01", "user:\x1b[31m"};
    uint64_t rev = cordon_revision(f->db);
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        const char *one[] = {bad[i]};
        assert_int_not_equal(put1(f->db, "docs", "odd", NULL, one, 1, NULL), 0);
        const char *mixed[] = {"group:g0", bad[i]};
        assert_int_not_equal(put1(f->db, "docs", "odd", NULL, mixed, 2, NULL), 0);
    }
    const char *withnull[] = {"group:g0", NULL};
    assert_int_equal(put1(f->db, "docs", "odd", NULL, withnull, 2, NULL), CORDON_ERR_INVALID);
    assert_int_equal(cordon_revision(f->db), rev);
    assert_false(can_get(f->db, "docs", G0, 1, "odd"));
    /* Subjects presenting such names read nothing (an error is fine, an open door is not). */
    assert_int_equal(put1(f->db, "docs", "plain", NULL, G0, 1, NULL), 0);
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        const char *p[] = {bad[i]};
        cordon_subject s = {.principals = p, .n_principals = 1};
        cordon_query q = {.text = "common"};
        cordon_result *r;
        if (cordon_search(f->db, "docs", &s, &q, &r, NULL) == 0) {
            assert_int_equal(r->n_hits, 0);
            assert_int_equal(r->readable, 0);
            cordon_result_free(r);
        }
        assert_false(can_get(f->db, "docs", p, 1, "plain"));
    }
    /* Too many principals on one chunk. */
    static const char *many[1100];
    static char names[1100][16];
    for (int i = 0; i < 1100; i++) {
        snprintf(names[i], sizeof names[i], "g%d", i);
        many[i] = names[i];
    }
    assert_int_equal(put1(f->db, "docs", "many", NULL, many, 1100, NULL), CORDON_ERR_LIMIT);
    assert_false(can_get(f->db, "docs", many, 1100, "many"));
}

static void test_failed_batches_change_nothing(void **state)
{
    fx_t *f = *state;
    assert_int_equal(put1(f->db, "docs", "x", NULL, G0, 1, NULL), 0);
    uint64_t rev = cordon_revision(f->db);
    /* A set_acl batch naming a missing chunk: the change to x must not happen either. */
    const char *newp[] = {"group:brand-new"};
    cordon_acl_change ch[2] = {{"x", newp, 1, NULL, 0, NULL, 0},
                               {"missing", G1, 1, NULL, 0, NULL, 0}};
    assert_int_equal(cordon_set_acl(f->db, "docs", ch, 2, NULL, NULL), CORDON_ERR_NOT_FOUND);
    assert_int_equal(cordon_revision(f->db), rev);
    assert_true(can_get(f->db, "docs", G0, 1, "x"));
    assert_false(can_get(f->db, "docs", newp, 1, "x"));
    /* A put batch whose last chunk is bad: the first must not land. */
    float nanv[DIM] = {1, NAN, 0, 0};
    cordon_field fl = {"body", "text"};
    cordon_chunk c[2] = {{.id = "y",
                          .vector = (float[DIM]){1, 0, 0, 0},
                          .fields = &fl,
                          .n_fields = 1,
                          .allowed = G0,
                          .n_allowed = 1},
                         {.id = "z", .vector = nanv, .allowed = G0, .n_allowed = 1}};
    assert_int_equal(cordon_put(f->db, "docs", c, 2, NULL, NULL), CORDON_ERR_INVALID);
    assert_false(can_get(f->db, "docs", G0, 1, "y"));
    assert_int_equal(cordon_revision(f->db), rev);
    /* Deleting nothing bumps nothing. */
    const char *gone[] = {"never-was"};
    size_t deleted = 9;
    uint64_t r2 = 0;
    assert_int_equal(cordon_delete(f->db, "docs", gone, 1, &deleted, &r2, NULL), 0);
    assert_int_equal(deleted, 0);
    assert_int_equal(cordon_revision(f->db), rev);
    /* Then a later, good write gets a larger revision, and searches report it. */
    uint64_t r3 = 0;
    cordon_chunk ok = c[0];
    assert_int_equal(cordon_put(f->db, "docs", &ok, 1, &r3, NULL), 0);
    assert_true(r3 > rev);
    cordon_subject s = {.principals = G0, .n_principals = 1};
    cordon_query q = {.text = "text"};
    cordon_result *r;
    assert_int_equal(cordon_search(f->db, "docs", &s, &q, &r, NULL), 0);
    assert_int_equal(r->revision, r3);
    cordon_result_free(r);
    /* The interned-then-rolled-back principal must not open x after a reopen either. */
    cordon_close(f->db);
    assert_int_equal(cordon_open(f->dir, NULL, &f->db, NULL), 0);
    assert_false(can_get(f->db, "docs", newp, 1, "x"));
    assert_true(can_get(f->db, "docs", G0, 1, "x"));
}

/* Duplicate ids in one batch: the last one wins, in memory and after a reopen alike. */
static void test_duplicate_ids_in_one_batch_keep_the_last(void **state)
{
    fx_t *f = *state;
    make(f->db, "dup", CORDON_METRIC_L2);
    cordon_field fl = {"body", "dup"};
    float v1[DIM] = {1, 0, 0, 0}, v2[DIM] = {0, 1, 0, 0};
    cordon_chunk c[2] = {
        {.id = "x", .vector = v1, .fields = &fl, .n_fields = 1, .allowed = G0, .n_allowed = 1},
        {.id = "x", .vector = v2, .fields = &fl, .n_fields = 1, .allowed = G1, .n_allowed = 1}};
    const char *G2[] = {"group:g2"}, *G3[] = {"group:g3"};
    cordon_acl_change ch[2] = {{"x", G2, 1, NULL, 0, NULL, 0}, {"x", G3, 1, NULL, 0, NULL, 0}};
    for (int pass = 0; pass < 2; pass++) {
        if (pass == 0) {
            assert_int_equal(cordon_put(f->db, "dup", c, 2, NULL, NULL), 0);
        } else {
            cordon_close(f->db);
            assert_int_equal(cordon_open(f->dir, NULL, &f->db, NULL), 0);
        }
        cordon_collection_info info;
        assert_int_equal(cordon_collection_info_get(f->db, "dup", &info, NULL), 0);
        assert_int_equal(info.chunks, 1);
        assert_false(can_get(f->db, "dup", G0, 1, "x"));
        assert_true(can_get(f->db, "dup", G1, 1, "x"));
        cordon_subject s = {.principals = G1, .n_principals = 1};
        cordon_query q = {.vector = v2, .k = 10, .strategy = CORDON_STRATEGY_EXACT};
        cordon_result *r;
        assert_int_equal(cordon_search(f->db, "dup", &s, &q, &r, NULL), 0);
        assert_int_equal(r->n_hits, 1);
        assert_true(r->hits[0].score > 0.99f); /* the second vector */
        cordon_result_free(r);
    }
    for (int pass = 0; pass < 2; pass++) {
        if (pass == 0) {
            assert_int_equal(cordon_set_acl(f->db, "dup", ch, 2, NULL, NULL), 0);
        } else {
            cordon_close(f->db);
            assert_int_equal(cordon_open(f->dir, NULL, &f->db, NULL), 0);
        }
        assert_false(can_get(f->db, "dup", G1, 1, "x"));
        assert_false(can_get(f->db, "dup", G2, 1, "x"));
        assert_true(can_get(f->db, "dup", G3, 1, "x"));
    }
    const char *ids[] = {"x", "x"};
    size_t deleted = 0;
    assert_int_equal(cordon_delete(f->db, "dup", ids, 2, &deleted, NULL, NULL), 0);
    assert_int_equal(deleted, 1);
}

static void test_dropped_collection_leaves_nothing_behind(void **state)
{
    fx_t *f = *state;
    make(f->db, "tmp", CORDON_METRIC_L2);
    for (int i = 0; i < 10; i++) {
        char id[16];
        snprintf(id, sizeof id, "t%d", i);
        assert_int_equal(put1(f->db, "tmp", id, NULL, G0, 1, NULL), 0);
    }
    assert_int_equal(cordon_collection_drop(f->db, "tmp", NULL), 0);
    cordon_subject s = {.principals = G0, .n_principals = 1};
    cordon_query q = {.text = "common"};
    cordon_result *r;
    assert_int_equal(cordon_search(f->db, "tmp", &s, &q, &r, NULL), CORDON_ERR_NOT_FOUND);
    assert_int_equal(cordon_collection_drop(f->db, "tmp", NULL), CORDON_ERR_NOT_FOUND);
    const char *tf[] = {"body"};
    cordon_collection_spec spec = {.asserted_principals = 1,
                                   .name = "tmp",
                                   .dim = DIM * 2,
                                   .text_fields = tf,
                                   .n_text_fields = 1};
    for (int pass = 0; pass < 2; pass++) {
        if (pass == 0) {
            assert_int_equal(cordon_collection_create(f->db, &spec, NULL), 0);
        } else {
            cordon_close(f->db);
            assert_int_equal(cordon_open(f->dir, NULL, &f->db, NULL), 0);
        }
        assert_int_equal(cordon_search(f->db, "tmp", &s, &q, &r, NULL), 0);
        assert_int_equal(r->n_hits, 0);
        assert_int_equal(r->readable, 0);
        cordon_result_free(r);
        assert_false(can_get(f->db, "tmp", G0, 1, "t3"));
    }
}

/* A subject of the model that may not search a collection gets the error of a collection that
 * does not exist, word for word but the name. */
static void test_model_subject_without_permission_sees_a_missing_collection(void **state)
{
    fx_t *f = *state;
    const char *ops[] = {
        "{\"op\":\"put_subject\",\"id\":\"alice\",\"kind\":\"user\"}",
        "{\"op\":\"put_subject\",\"id\":\"mallory\",\"kind\":\"user\"}",
        "{\"op\":\"put_role\",\"id\":\"r\",\"permissions\":[{\"resource\":\"collection:docs\","
        "\"action\":\"search\"},{\"resource\":\"collection:docs\",\"action\":\"read\"},"
        "{\"resource\":\"collection:nope\",\"action\":\"search\"}]}",
        "{\"op\":\"grant\",\"to\":\"alice\",\"to_kind\":\"subject\",\"role\":\"r\"}",
    };
    for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++)
        assert_int_equal(cordon_model_apply(f->db, ops[i], NULL, NULL), 0);
    const char *ua[] = {"user:alice"};
    assert_int_equal(put1(f->db, "docs", "a1", NULL, ua, 1, NULL), 0);
    cordon_query q = {.text = "common"};
    cordon_result *r;
    cordon_error missing, e;
    cordon_subject alice = {.subject_id = "alice"};
    assert_int_equal(cordon_search(f->db, "docs", &alice, &q, &r, NULL), 0);
    assert_int_equal(r->n_hits, 1);
    cordon_result_free(r);
    assert_int_equal(cordon_search(f->db, "nope", &alice, &q, &r, &missing), CORDON_ERR_NOT_FOUND);
    const char *p = strstr(missing.message, "nope");
    assert_non_null(p);
    char want[CORDON_ERROR_MAX];
    snprintf(want, sizeof want, "%.*sdocs%s", (int)(p - missing.message), missing.message, p + 4);
    const char *who[] = {"mallory", "ghost", "service:alice", "ALICE", "", "alice ", "group:alice"};
    for (size_t i = 0; i < sizeof who / sizeof who[0]; i++) {
        cordon_subject s = {.subject_id = who[i]};
        cordon_record *rec = NULL;
        int rc = cordon_search(f->db, "docs", &s, &q, &r, &e);
        if (rc == 0)
            fail_msg("subject \"%s\" searched docs and got %zu hits", who[i], r->n_hits);
        assert_int_equal(rc, CORDON_ERR_NOT_FOUND);
        assert_string_equal(e.message, want);
        rc = cordon_get(f->db, "docs", &s, "a1", &rec, &e);
        assert_int_equal(rc, CORDON_ERR_NOT_FOUND);
    }
}

/* Query JSON that is not a query, or asks for what is not there, is refused cleanly. */
static void test_malformed_query_json_is_refused(void **state)
{
    fx_t *f = *state;
    assert_int_equal(put1(f->db, "docs", "q1", NULL, G0, 1, NULL), 0);
    assert_int_equal(put1(f->db, "docs", "q2", NULL, G1, 1, NULL), 0);
    cordon_subject s = {.principals = G0, .n_principals = 1};
    const char *bad[] = {"",
                         "not json",
                         "[]",
                         "{}",
                         "{\"match\":{}}",
                         "{\"script\":{\"source\":\"1\"}}",
                         "{\"match\":{\"body\":\"x\"},\"term\":{\"body\":\"y\"}}",
                         "{\"bool\":{\"must\":[{\"nope\":{}}]}}",
                         "{\"range\":{\"num\":{\"gte\":{}}}}"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        cordon_query q = {.query_json = bad[i]};
        cordon_result *r = NULL;
        cordon_error err;
        int rc = cordon_search(f->db, "docs", &s, &q, &r, &err);
        if (rc == 0)
            fail_msg("query %s accepted", bad[i]);
        assert_true(err.message[0] != '\0');
    }
    /* Deeply nested bools: refused or answered, never a crash, and never q2. */
    static char deep[100000];
    size_t at = 0;
    for (int i = 0; i < 3000; i++)
        at += (size_t)snprintf(deep + at, sizeof deep - at, "{\"bool\":{\"must\":[");
    at += (size_t)snprintf(deep + at, sizeof deep - at, "{\"match_all\":{}}");
    for (int i = 0; i < 3000; i++)
        at += (size_t)snprintf(deep + at, sizeof deep - at, "]}}");
    cordon_query dq = {.query_json = deep};
    cordon_result *r;
    if (cordon_search(f->db, "docs", &s, &dq, &r, NULL) == 0) {
        for (size_t h = 0; h < r->n_hits; h++)
            assert_string_not_equal(r->hits[h].id, "q2");
        cordon_result_free(r);
    }
    /* A query on the ACL itself must not widen anything. */
    const char *acl_q[] = {"{\"term\":{\"allowed\":\"group:g1\"}}",
                           "{\"term\":{\"allowed_groups\":\"g1\"}}",
                           "{\"exists\":{\"field\":\"_acl\"}}"};
    for (size_t i = 0; i < 3; i++) {
        cordon_query q = {.query_json = acl_q[i]};
        if (cordon_search(f->db, "docs", &s, &q, &r, NULL) == 0) {
            for (size_t h = 0; h < r->n_hits; h++)
                assert_string_not_equal(r->hits[h].id, "q2");
            cordon_result_free(r);
        }
    }
}

/* Text and principals that are not UTF-8 are bad input (INVALID), not "out of memory"; and a
 * principal that was accepted shows in the chunk's record as it is enforced. */
static void test_non_utf8_text_and_principals_are_refused_as_invalid(void **state)
{
    fx_t *f = *state;
    float v[DIM] = {1, 0, 0, 0};
    cordon_field bad_text = {"body", "caf\xe9"};
    cordon_chunk c = {
        .id = "u1", .vector = v, .fields = &bad_text, .n_fields = 1, .allowed = G0, .n_allowed = 1};
    cordon_error err;
    int rc_text = cordon_put(f->db, "docs", &c, 1, NULL, &err), rc;
    char text_msg[CORDON_ERROR_MAX];
    memcpy(text_msg, err.message, sizeof text_msg);
    const char *badp[] = {"group:caf\xe9"};
    cordon_chunk d = {.id = "u2", .vector = v, .allowed = badp, .n_allowed = 1};
    rc = cordon_put(f->db, "docs", &d, 1, NULL, &err);
    assert_int_equal(put1(f->db, "docs", "u3", NULL, G0, 1, NULL), 0);
    cordon_acl_change ch = {"u3", badp, 1, G1, 1, NULL, 0};
    int rc2 = cordon_set_acl(f->db, "docs", &ch, 1, NULL, &err);
    if (rc2 == 0) {
        /* Accepted: the record must list what the index enforces. */
        cordon_subject s = {.principals = badp, .n_principals = 1};
        cordon_record *r = NULL;
        assert_int_equal(cordon_get(f->db, "docs", &s, "u3", &r, NULL), 0);
        size_t n_allowed = r->n_allowed;
        cordon_record_free(r);
        if (n_allowed != 1)
            fail_msg("set_acl stored a record listing %zu allowed principals; the index "
                     "enforces 1",
                     n_allowed);
    }
    if (rc != CORDON_ERR_INVALID)
        fail_msg("principal that is not UTF-8 in put: %d (%s)", rc, rc ? err.message : "ok");
    if (rc_text != CORDON_ERR_INVALID)
        fail_msg("text that is not UTF-8: %d (%s)", rc_text, rc_text ? text_msg : "accepted");
}

int main(void)
{
#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)
    const struct CMUnitTest tests[] = {
        T(test_ids_query_matches_chunk_ids_not_internal_rows),
        T(test_non_finite_and_extreme_query_vectors),
        T(test_tiny_cosine_vectors_are_refused_and_small_ones_found),
        T(test_queries_on_fields_the_collection_does_not_index_are_refused),
        T(test_ids_with_special_bytes_round_trip_and_bad_ids_are_refused),
        T(test_id_of_the_documented_maximum_length_is_stored),
        T(test_odd_principals_in_acls_are_refused_and_change_nothing),
        T(test_failed_batches_change_nothing),
        T(test_duplicate_ids_in_one_batch_keep_the_last),
        T(test_dropped_collection_leaves_nothing_behind),
        T(test_model_subject_without_permission_sees_a_missing_collection),
        T(test_malformed_query_json_is_refused),
        T(test_non_utf8_text_and_principals_are_refused_as_invalid),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
