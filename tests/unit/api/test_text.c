/* test_text.c: text and hybrid search through the public API: permission filtering inside
 * BM25 (the filtered top-k equals an all-seeing ranking filtered afterwards), metadata filters,
 * updates and deletes seen by the next query, the text checkpoint across reopen, bad queries.
 * Relies on the public API. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "api_testutil.h"
#include "cordon.h"

#define N 400
#define GROUPS 8
#define DIM 8

static const char *words[] = {"permission", "vector", "search", "engine", "alpha",  "beta",
                              "gamma",      "delta",  "policy", "salary", "design", "deal"};

typedef struct fx {
    char dir[64];
    cordon_t *db;
    int group[N];
} fx_t;

static int setup(void **state)
{
    fx_t *f = calloc(1, sizeof *f);
    uint64_t seed = 11;
    static char ids[N][16], title[N][64], body[N][256], meta[N][64], gname[N][16];
    static const char *acl[N][1];
    static cordon_field fields[N][2];
    static float vec[N][DIM];
    static cordon_chunk ch[N];
    const char *tf[] = {"title", "body"};
    cordon_meta_field mf[] = {{"kind", CORDON_META_KEYWORD}, {"year", CORDON_META_NUMBER}};
    /* Collection-wide statistics: a subject's filtered ranking is then the all-seeing one
     * filtered (readable-set statistics: test_hidden_stats.c). */
    cordon_collection_spec spec = {.asserted_principals = 1,
                                   .name = "t",
                                   .dim = DIM,
                                   .metric = CORDON_METRIC_L2,
                                   .text_fields = tf,
                                   .n_text_fields = 2,
                                   .analyzer = "english",
                                   .meta_fields = mf,
                                   .n_meta_fields = 2,
                                   .bm25_global_stats = 1};
    for (int i = 0; i < N; i++) {
        size_t at = 0;
        f->group[i] = (int)(tu_rand(&seed) % GROUPS);
        snprintf(ids[i], 16, "d%d", i);
        snprintf(title[i], 64, "%s %s", words[tu_rand(&seed) % 12], words[tu_rand(&seed) % 12]);
        for (int w = 0; w < 12; w++)
            at += (size_t)snprintf(body[i] + at, 256 - at, "%s ", words[tu_rand(&seed) % 12]);
        snprintf(meta[i], 64, "{\"kind\":\"%s\",\"year\":%d}", i % 2 ? "memo" : "report",
                 2000 + i % 20);
        snprintf(gname[i], 16, "g%d", f->group[i]);
        acl[i][0] = gname[i];
        fields[i][0] = (cordon_field){"title", title[i]};
        fields[i][1] = (cordon_field){"body", body[i]};
        for (int d = 0; d < DIM; d++)
            vec[i][d] = tu_randf(&seed);
        ch[i] = (cordon_chunk){.id = ids[i],
                               .vector = vec[i],
                               .fields = fields[i],
                               .n_fields = 2,
                               .metadata_json = meta[i],
                               .allowed = acl[i],
                               .n_allowed = 1};
    }
    api_db_open(f->dir, sizeof f->dir, &f->db);
    assert_int_equal(cordon_collection_create(f->db, &spec, NULL), 0);
    assert_int_equal(cordon_put(f->db, "t", ch, N, NULL, NULL), 0);
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

static const char *all_groups[GROUPS] = {"g0", "g1", "g2", "g3", "g4", "g5", "g6", "g7"};

static void test_filtered_bm25_equals_all_seeing_ranking_filtered(void **state)
{
    fx_t *f = *state;
    const char *queries[] = {"permission search", "salary policy", "vector engines", "deal"};
    for (size_t qi = 0; qi < 4; qi++) {
        cordon_subject all = {.principals = all_groups, .n_principals = GROUPS};
        cordon_query q = {.text = queries[qi], .k = N};
        cordon_result *everything;
        assert_int_equal(cordon_search(f->db, "t", &all, &q, &everything, NULL), 0);
        for (int g = 0; g < GROUPS; g++) {
            cordon_subject one = {.principals = &all_groups[g], .n_principals = 1};
            cordon_query q10 = {.text = queries[qi], .k = 10};
            cordon_result *r;
            assert_int_equal(cordon_search(f->db, "t", &one, &q10, &r, NULL), 0);
            assert_true(r->complete);
            size_t h = 0;
            for (size_t i = 0; i < everything->n_hits && h < r->n_hits; i++) {
                int d = tu_num(everything->hits[i].id + 1);
                if (f->group[d] != g)
                    continue;
                /* Same score at each rank (ties may order differently). */
                assert_true(fabsf(everything->hits[i].score - r->hits[h].score) < 1e-4f);
                h++;
            }
            assert_int_equal(h, r->n_hits);
            for (size_t i = 0; i < r->n_hits; i++)
                assert_int_equal(f->group[tu_num(r->hits[i].id + 1)], g); /* no leak */
            cordon_result_free(r);
        }
        cordon_result_free(everything);
    }
}

static void test_metadata_filters_and_bool_queries(void **state)
{
    fx_t *f = *state;
    cordon_subject all = {.principals = all_groups, .n_principals = GROUPS};
    cordon_query q = {.k = 1000,
                      .query_json = "{\"bool\":{\"must\":{\"match\":{\"body\":\"policy\"}},"
                                    "\"filter\":[{\"term\":{\"kind\":\"memo\"}},"
                                    "{\"range\":{\"year\":{\"gte\":2010}}}]}}"};
    cordon_result *r;
    assert_int_equal(cordon_search(f->db, "t", &all, &q, &r, NULL), 0);
    assert_true(r->n_hits > 0);
    for (size_t i = 0; i < r->n_hits; i++) {
        int d = tu_num(r->hits[i].id + 1);
        assert_true(d % 2 == 1); /* memo */
        assert_true(2000 + d % 20 >= 2010);
    }
    cordon_result_free(r);
    cordon_error err;
    cordon_query bad = {.query_json = "{\"match\":{\"body\":{\"operator\":\"xor\","
                                      "\"query\":\"a\"}}}"};
    assert_int_equal(cordon_search(f->db, "t", &all, &bad, &r, &err), CORDON_ERR_INVALID);
    cordon_query bad2 = {.query_json = "{\"match\":"};
    assert_int_equal(cordon_search(f->db, "t", &all, &bad2, &r, &err), CORDON_ERR_INVALID);
    assert_non_null(strstr(err.message, "not valid JSON"));
}

static void test_hybrid_is_filtered_and_fused(void **state)
{
    fx_t *f = *state;
    float v[DIM] = {0.5f, 0.5f, 0.5f, 0.5f, 0.5f, 0.5f, 0.5f, 0.5f};
    cordon_subject one = {.principals = &all_groups[3], .n_principals = 1};
    cordon_query q = {
        .vector = v, .text = "salary design", .k = 10, .strategy = CORDON_STRATEGY_EXACT};
    cordon_result *r;
    assert_int_equal(cordon_search(f->db, "t", &one, &q, &r, NULL), 0);
    assert_true(r->n_hits == 10);
    assert_true(r->complete);
    assert_non_null(strstr(r->plan, "rrf"));
    for (size_t i = 0; i < r->n_hits; i++) {
        assert_int_equal(f->group[tu_num(r->hits[i].id + 1)], 3);
        if (i)
            assert_true(r->hits[i - 1].score >= r->hits[i].score);
    }
    cordon_result_free(r);
    q.fusion = CORDON_FUSION_LINEAR;
    assert_int_equal(cordon_search(f->db, "t", &one, &q, &r, NULL), 0);
    assert_non_null(strstr(r->plan, "linear"));
    assert_true(r->hits[0].score <= 1.0f + 1e-5f);
    cordon_result_free(r);
}

static void test_knn_with_a_metadata_filter_stays_inside_it(void **state)
{
    fx_t *f = *state;
    float v[DIM] = {0.2f, 0.9f, 0.1f, 0.4f, 0.5f, 0.5f, 0.3f, 0.8f};
    cordon_subject s = {.principals = all_groups, .n_principals = 4}; /* g0..g3 */
    cordon_query q = {.vector = v,
                      .k = 20,
                      .filter_json = "{\"bool\":{\"filter\":[{\"term\":{\"kind\":\"memo\"}},"
                                     "{\"range\":{\"year\":{\"lt\":2005}}}]}}"};
    cordon_result *r;
    assert_int_equal(cordon_search(f->db, "t", &s, &q, &r, NULL), 0);
    assert_true(r->n_hits > 0);
    assert_true(r->complete);
    for (size_t i = 0; i < r->n_hits; i++) {
        int d = tu_num(r->hits[i].id + 1);
        assert_true(d % 2 == 1 && 2000 + d % 20 < 2005);
        assert_true(f->group[d] < 4);
    }
    cordon_result_free(r);
    cordon_error err;
    q.filter_json = "{\"term\":";
    assert_int_equal(cordon_search(f->db, "t", &s, &q, &r, &err), CORDON_ERR_INVALID);
    assert_non_null(strstr(err.message, "filter is not valid JSON"));
}

static size_t count_hits(cordon_t *db, const char *text)
{
    cordon_subject all = {.principals = all_groups, .n_principals = GROUPS};
    cordon_query q = {.text = text, .k = 1000};
    cordon_result *r;
    assert_int_equal(cordon_search(db, "t", &all, &q, &r, NULL), 0);
    size_t n = r->n_hits;
    cordon_result_free(r);
    return n;
}

static void test_updates_deletes_and_reopen(void **state)
{
    fx_t *f = *state;
    float v[DIM] = {0};
    const char *g[] = {"g0"};
    cordon_field fl[] = {{"title", "zebra"}, {"body", "quokka"}};
    cordon_chunk c = {
        .id = "d1", .vector = v, .fields = fl, .n_fields = 2, .allowed = g, .n_allowed = 1};
    assert_int_equal(count_hits(f->db, "zebra"), 0);
    assert_int_equal(cordon_put(f->db, "t", &c, 1, NULL, NULL), 0);
    assert_int_equal(count_hits(f->db, "zebra quokka"), 1);
    size_t before = count_hits(f->db, "permission");
    const char *gone[] = {"d2"};
    assert_int_equal(cordon_delete(f->db, "t", gone, 1, NULL, NULL, NULL), 0);
    assert_true(count_hits(f->db, "permission") <= before);
    size_t after_delete = count_hits(f->db, "permission");
    cordon_close(f->db);
    char path[128];
    snprintf(path, sizeof path, "%s/coll-0.text", f->dir);
    assert_int_equal(access(path, R_OK), 0); /* a checkpoint, so reopening re-analyzes nothing */
    assert_int_equal(cordon_open(f->dir, NULL, &f->db, NULL), 0);
    assert_int_equal(count_hits(f->db, "zebra"), 1);
    assert_int_equal(count_hits(f->db, "permission"), after_delete);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_filtered_bm25_equals_all_seeing_ranking_filtered,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(test_metadata_filters_and_bool_queries, setup, teardown),
        cmocka_unit_test_setup_teardown(test_hybrid_is_filtered_and_fused, setup, teardown),
        cmocka_unit_test_setup_teardown(test_knn_with_a_metadata_filter_stays_inside_it, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_updates_deletes_and_reopen, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
