/* test_hidden_stats.c: "hidden equals missing" for everything a search result carries: a
 * subject's answers (ids, scores to the bit, counts, plan) are the same with and without 500
 * chunks it cannot read, and bm25_global_stats switches to collection-wide statistics.
 * Relies on cmocka, the public API and tests/testutil.h. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h> /* own block: it needs setjmp.h, stdarg.h, stddef.h first */

#include "api_testutil.h"
#include "cordon.h"

#define DIM 4
#define NREAD 40  /* chunks subject A reads (in every collection) */
#define NHIDE 500 /* chunks it does not read (only in the "mixed" collections) */
#define PER (NHIDE / NREAD + 1)

static const char *words[] = {"merger", "acme",  "notes", "quarterly", "board", "vote",
                              "deal",   "audit", "plan",  "budget",    "memo",  "draft"};

typedef struct fx {
    char dir[64];
    cordon_t *db;
} fx_t;

/* Subject A reads group:a chunks unless they deny user:ann; AB reads everything. */
static const char *a_names[] = {"group:a", "user:ann"};
static const char *ab_names[] = {"group:a", "group:b"};
static const cordon_subject subj_a = {.principals = a_names, .n_principals = 2};
static const cordon_subject subj_ab = {.principals = ab_names, .n_principals = 2};

static void make_text(uint64_t *seed, char *buf, size_t size, int n, int heavy)
{
    size_t at = 0;
    for (int w = 0; w < n && at + 16 < size; w++) {
        /* Hidden chunks are long and full of the query terms: they move df, N and avgdl. */
        const char *x = heavy && w % 2 == 0 ? words[w % 4 == 0 ? 0 : 1] : words[tu_rand(seed) % 12];
        at += (size_t)snprintf(buf + at, size - at, "%s ", x);
    }
}

static void create(cordon_t *db, const char *name, int global)
{
    const char *tf[] = {"title", "body"};
    cordon_meta_field mf[] = {{"kind", CORDON_META_KEYWORD}};
    cordon_collection_spec spec = {.name = name,
                                   .dim = DIM,
                                   .metric = CORDON_METRIC_L2,
                                   .text_fields = tf,
                                   .n_text_fields = 2,
                                   .analyzer = "english",
                                   .meta_fields = mf,
                                   .n_meta_fields = 1,
                                   .asserted_principals = 1,
                                   .bm25_global_stats = global};
    assert_int_equal(cordon_collection_create(db, &spec, NULL), 0);
}

/* Writes the readable chunks to every collection and, interleaved with them (so rows differ),
 * the hidden ones to the mixed collections: most only for group:b, some for group:a but
 * denied to user:ann. */
static void fill(cordon_t *db)
{
    static const char *cols[] = {"plain", "mixed", "plaing", "mixedg"};
    static const char *acl_a[] = {"group:a"}, *acl_ab[] = {"group:a", "group:b"};
    static const char *acl_b[] = {"group:b"}, *deny[] = {"user:ann"};
    uint64_t seed = 5;
    for (int i = 0; i < NREAD; i++) {
        char id[16], title[64], body[256], meta[32];
        float v[DIM];
        snprintf(id, sizeof id, "r%d", i);
        make_text(&seed, title, sizeof title, 2 + (int)(tu_rand(&seed) % 3), 0);
        make_text(&seed, body, sizeof body, 3 + (int)(tu_rand(&seed) % 12), 0);
        snprintf(meta, sizeof meta, "{\"kind\":\"%s\"}", i % 3 ? "memo" : "report");
        for (int d = 0; d < DIM; d++)
            v[d] = tu_randf(&seed);
        cordon_field f[2] = {{"title", title}, {"body", body}};
        cordon_chunk c = {.id = id,
                          .vector = v,
                          .fields = f,
                          .n_fields = 2,
                          .metadata_json = meta,
                          .allowed = i % 5 ? acl_a : acl_ab,
                          .n_allowed = i % 5 ? 1 : 2};
        for (int k = 0; k < 4; k++)
            assert_int_equal(cordon_put(db, cols[k], &c, 1, NULL, NULL), 0);
        for (int h = 0; h < PER && i * PER + h < NHIDE; h++) {
            char hid[16], htitle[64], hbody[512];
            float hv[DIM];
            snprintf(hid, sizeof hid, "h%d", i * PER + h);
            make_text(&seed, htitle, sizeof htitle, 3, 1);
            make_text(&seed, hbody, sizeof hbody, 20 + (int)(tu_rand(&seed) % 20), 1);
            for (int d = 0; d < DIM; d++) /* near the query vector: the nearest rows of all */
                hv[d] = 0.5f + 0.01f * tu_randf(&seed);
            cordon_field hf[2] = {{"title", htitle}, {"body", hbody}};
            int denied = h % 7 == 0;
            cordon_chunk hc = {.id = hid,
                               .vector = hv,
                               .fields = hf,
                               .n_fields = 2,
                               .metadata_json = meta,
                               .allowed = denied ? acl_a : acl_b,
                               .n_allowed = 1,
                               .denied = deny,
                               .n_denied = denied};
            assert_int_equal(cordon_put(db, "mixed", &hc, 1, NULL, NULL), 0);
            assert_int_equal(cordon_put(db, "mixedg", &hc, 1, NULL, NULL), 0);
        }
    }
}

static int setup(void **state)
{
    fx_t *f = calloc(1, sizeof *f);
    api_db_open(f->dir, sizeof f->dir, &f->db);
    create(f->db, "plain", 0);
    create(f->db, "mixed", 0);
    create(f->db, "plaing", 1);
    create(f->db, "mixedg", 1);
    fill(f->db);
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

static const float qvec[DIM] = {0.5f, 0.5f, 0.5f, 0.5f};

/* Text, vector and hybrid queries of every plan kind. */
static const cordon_query queries[] = {
    {.text = "merger acme notes", .k = 10},
    {.query_json = "{\"match\":{\"body\":{\"query\":\"merger board\",\"operator\":\"and\"}}}",
     .k = 10},
    {.query_json = "{\"match_phrase\":{\"body\":\"merger acme\"}}", .k = 10},
    {.query_json = "{\"fuzzy\":{\"body\":{\"value\":\"mergr\"}}}", .k = 10},
    {.query_json = "{\"multi_match\":{\"query\":\"acme deal\",\"fields\":[\"title\",\"body\"]}}",
     .k = 10},
    {.query_json = "{\"bool\":{\"must\":{\"match\":{\"body\":\"merger vote\"}},"
                   "\"filter\":{\"term\":{\"kind\":\"memo\"}}}}",
     .k = 10},
    {.text = "acme audit", .k = 10, .filter_json = "{\"term\":{\"kind\":\"memo\"}}"},
    {.vector = qvec, .k = 5},
    {.vector = qvec, .k = 5, .strategy = CORDON_STRATEGY_EXACT},
    {.vector = qvec, .k = 5, .strategy = CORDON_STRATEGY_POSTFILTER},
    {.vector = qvec, .k = 5, .text = "merger budget"},
    {.vector = qvec, .k = 5, .text = "merger budget", .fusion = CORDON_FUSION_LINEAR},
    {.vector = qvec, .k = 5, .text = "acme", .filter_json = "{\"term\":{\"kind\":\"memo\"}}"},
};
#define NQ (sizeof queries / sizeof queries[0])

/* Every field of the two results but the revision, scores compared bit for bit. */
static void assert_same_result(const cordon_result *x, const cordon_result *y, size_t qi)
{
    if (x->n_hits != y->n_hits)
        fail_msg("query %zu: %zu hits against %zu", qi, x->n_hits, y->n_hits);
    for (size_t i = 0; i < x->n_hits; i++) {
        if (strcmp(x->hits[i].id, y->hits[i].id))
            fail_msg("query %zu rank %zu: %s against %s", qi, i, x->hits[i].id, y->hits[i].id);
        if (memcmp(&x->hits[i].score, &y->hits[i].score, sizeof(float)))
            fail_msg("query %zu rank %zu (%s): score %.9g against %.9g", qi, i, x->hits[i].id,
                     (double)x->hits[i].score, (double)y->hits[i].score);
    }
    assert_int_equal(x->complete, y->complete);
    assert_string_equal(x->plan, y->plan);
    assert_int_equal(x->readable, y->readable);
    if (x->candidates != y->candidates)
        fail_msg("query %zu: candidates %llu against %llu", qi, (unsigned long long)x->candidates,
                 (unsigned long long)y->candidates);
}

static void test_hidden_chunks_change_nothing_a_subject_sees_but_the_revision(void **state)
{
    fx_t *f = *state;
    for (size_t qi = 0; qi < NQ; qi++) {
        cordon_result *p, *m;
        assert_int_equal(cordon_search(f->db, "plain", &subj_a, &queries[qi], &p, NULL), 0);
        assert_int_equal(cordon_search(f->db, "mixed", &subj_a, &queries[qi], &m, NULL), 0);
        assert_true(p->n_hits > 0);
        assert_same_result(p, m, qi);
        cordon_result_free(p);
        cordon_result_free(m);
    }
}

/* The score each id of r has in all (hits of a search that reads everything), or fail. */
static float score_in(const cordon_result *all, const char *id)
{
    for (size_t i = 0; i < all->n_hits; i++)
        if (!strcmp(all->hits[i].id, id))
            return all->hits[i].score;
    fail_msg("%s is missing from the all-seeing result", id);
    return 0;
}

/* Text queries only (the first 7): scores from collection-wide statistics. */
static void check_global(cordon_t *db, int *differs)
{
    for (size_t qi = 0; qi < 7; qi++) {
        cordon_query wide = queries[qi];
        wide.k = NREAD + NHIDE;
        cordon_result *g, *all, *all_rs, *p;
        assert_int_equal(cordon_search(db, "mixedg", &subj_a, &queries[qi], &g, NULL), 0);
        assert_int_equal(cordon_search(db, "mixedg", &subj_ab, &wide, &all, NULL), 0);
        assert_int_equal(cordon_search(db, "mixed", &subj_ab, &wide, &all_rs, NULL), 0);
        assert_int_equal(cordon_search(db, "plain", &subj_a, &queries[qi], &p, NULL), 0);
        assert_true(g->n_hits > 0);
        for (size_t i = 0; i < g->n_hits; i++) {
            float s = score_in(all, g->hits[i].id);
            if (memcmp(&s, &g->hits[i].score, sizeof s))
                fail_msg("query %zu: %s scores %.9g, collection-wide %.9g", qi, g->hits[i].id,
                         (double)g->hits[i].score, (double)s);
        }
        /* Reading everything, readable-set statistics are the collection-wide ones. */
        assert_same_result(all, all_rs, qi);
        for (size_t i = 0; i < g->n_hits && i < p->n_hits; i++)
            *differs += memcmp(&g->hits[i].score, &p->hits[i].score, sizeof(float)) != 0;
        /* Without hidden chunks the setting changes nothing. */
        cordon_result *pg;
        assert_int_equal(cordon_search(db, "plaing", &subj_a, &queries[qi], &pg, NULL), 0);
        assert_same_result(p, pg, qi);
        cordon_result_free(pg);
        cordon_result_free(g);
        cordon_result_free(all);
        cordon_result_free(all_rs);
        cordon_result_free(p);
    }
}

static void test_global_stats_score_as_the_whole_collection_also_after_reopen(void **state)
{
    fx_t *f = *state;
    int differs = 0;
    check_global(f->db, &differs);
    assert_true(differs > 0); /* hidden chunks do move collection-wide scores */
    api_db_reopen(f->dir, &f->db);
    differs = 0;
    check_global(f->db, &differs);
    assert_true(differs > 0);
    test_hidden_chunks_change_nothing_a_subject_sees_but_the_revision(state);
}

/* With report_work, candidates counts the work done, hidden rows included (benchmarks). */
static void test_report_work_counts_scores_computed(void **state)
{
    fx_t *f = *state;
    cordon_t *db;
    cordon_close(f->db);
    f->db = NULL;
    cordon_options o = {.report_work = 1};
    assert_int_equal(cordon_open(f->dir, &o, &db, NULL), 0);
    cordon_result *p, *m;
    assert_int_equal(cordon_search(db, "plain", &subj_a, &queries[9], &p, NULL), 0);
    assert_int_equal(cordon_search(db, "mixed", &subj_a, &queries[9], &m, NULL), 0);
    assert_true(m->candidates > p->candidates);
    cordon_result_free(p);
    cordon_result_free(m);
    cordon_close(db);
    assert_int_equal(cordon_open(f->dir, NULL, &f->db, NULL), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_hidden_chunks_change_nothing_a_subject_sees_but_the_revision),
        cmocka_unit_test(test_global_stats_score_as_the_whole_collection_also_after_reopen),
        cmocka_unit_test(test_report_work_counts_scores_computed),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
