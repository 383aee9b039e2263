/* test_search_pages.c: hits with their records, hits.total, from and search_after paging and
 * the tie order they share, each against what the test put.
 * Relies on cmocka, jansson (to compare JSON) and the shared API fixture (api_testutil.h). */
#include <inttypes.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <jansson.h>

#include "api_testutil.h"
#include "cordon.h"
#include "testutil.h"

#define DIM 4

typedef struct fixture {
    char dir[64];
    cordon_t *db;
} fixture_t;

static int setup(void **state)
{
    fixture_t *f = calloc(1, sizeof *f);
    api_db_open(f->dir, sizeof f->dir, &f->db);
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

/* A collection of asserted principals with DIM-float L2 vectors (stored as given, so a record's
 * vector can be compared bit for bit), text fields tf and metadata fields mf. */
static void coll_create(cordon_t *db, const char *name, const char *const *tf, size_t ntf,
                        const cordon_meta_field *mf, size_t nmf)
{
    cordon_collection_spec spec = {.asserted_principals = 1,
                                   .name = name,
                                   .dim = DIM,
                                   .metric = CORDON_METRIC_L2,
                                   .text_fields = tf,
                                   .n_text_fields = ntf,
                                   .meta_fields = mf,
                                   .n_meta_fields = nmf};
    assert_int_equal(cordon_collection_create(db, &spec, NULL), 0);
}

static cordon_result *search_ok(cordon_t *db, const char *coll, const cordon_subject *s,
                                const cordon_query *q)
{
    cordon_result *r = NULL;
    cordon_error err = {0, ""};
    int rc = cordon_search(db, coll, s, q, &r, &err);
    if (rc)
        fail_msg("cordon_search: %d %s", rc, err.message);
    return r;
}

static int json_same(const char *a, const char *b)
{
    json_t *x = json_loads(a, 0, NULL), *y = json_loads(b, 0, NULL);
    int same = x && y && json_equal(x, y);
    json_decref(x);
    json_decref(y);
    return same;
}

static int id_num(const char *id)
{
    return tu_num(id + 1);
}

/* Hits best first, equal scores by id. */
static void assert_ranked(const cordon_result *r)
{
    for (size_t h = 1; h < r->n_hits; h++) {
        assert_true(r->hits[h - 1].score >= r->hits[h].score);
        if (r->hits[h - 1].score == r->hits[h].score)
            assert_true(strcmp(r->hits[h - 1].id, r->hits[h].id) < 0);
    }
}

/* ---- with_records ---- */

#define NREC 48

typedef struct rec_input {
    char id[16];
    float vec[DIM];
    char title[32], body[48], meta[160];
    int has_title;
    const char *allowed[2];
    size_t n_allowed;
    const char *denied[1];
    size_t n_denied;
} rec_input_t;

/* i % 4: 0 allowed g1; 1 allowed g2; 2 allowed g1 and g2; 3 allowed g1 and g2, bob denied.
 * The subject holds group:g1 and user:bob, so it reads kinds 0 and 2. */
static int rec_readable(int i)
{
    return i % 4 == 0 || i % 4 == 2;
}

static void rec_fill(rec_input_t *in, int i, uint64_t *seed)
{
    snprintf(in->id, sizeof in->id, "r%02d", i);
    for (int d = 0; d < DIM; d++)
        in->vec[d] = tu_randf(seed) * 2 - 1;
    in->has_title = i % 3 != 0;
    snprintf(in->title, sizeof in->title, "title %d", i);
    snprintf(in->body, sizeof in->body, "alpha bravo%d charlie", i);
    snprintf(in->meta, sizeof in->meta,
             "{\"n\":%d,\"nested\":{\"k\":\"v%d\",\"list\":[1,2.5,\"x\"]},\"s\":\"\\u00e9\\\"q\"}",
             i, i);
    in->n_allowed = 0;
    in->n_denied = 0;
    if (i % 4 != 1)
        in->allowed[in->n_allowed++] = "group:g1";
    if (i % 4 != 0)
        in->allowed[in->n_allowed++] = "group:g2";
    if (i % 4 == 3)
        in->denied[in->n_denied++] = "user:bob";
}

static void rec_put(cordon_t *db, rec_input_t *in, size_t n)
{
    cordon_chunk c[NREC];
    cordon_field fl[NREC][2];
    for (size_t i = 0; i < n; i++) {
        size_t nf = 0;
        fl[i][nf++] = (cordon_field){"body", in[i].body};
        if (in[i].has_title)
            fl[i][nf++] = (cordon_field){"title", in[i].title};
        c[i] = (cordon_chunk){.id = in[i].id,
                              .vector = in[i].vec,
                              .fields = fl[i],
                              .n_fields = nf,
                              .metadata_json = in[i].meta,
                              .allowed = in[i].allowed,
                              .n_allowed = in[i].n_allowed,
                              .denied = in[i].denied,
                              .n_denied = in[i].n_denied};
    }
    assert_int_equal(cordon_put(db, "recs", c, n, NULL, NULL), 0);
}

static const char *field_of(const cordon_record *r, const char *name)
{
    for (size_t i = 0; i < r->n_fields; i++)
        if (!strcmp(r->fields[i].name, name))
            return r->fields[i].value;
    return NULL;
}

/* Every hit of r carries the record in[] holds for it, at r's revision, and is readable; its
 * vector too unless without_vectors. */
static void check_records(const cordon_result *r, const rec_input_t *in, int without_vectors)
{
    for (size_t h = 0; h < r->n_hits; h++) {
        const cordon_hit *hit = &r->hits[h];
        const cordon_record *rec = hit->record;
        int i = id_num(hit->id);
        assert_true(i >= 0 && i < NREC);
        assert_true(rec_readable(i));
        assert_non_null(rec);
        assert_string_equal(rec->id, hit->id);
        assert_int_equal(rec->revision, r->revision);
        if (without_vectors) {
            assert_int_equal(rec->dim, 0);
            assert_null(rec->vector);
        } else {
            assert_int_equal(rec->dim, DIM);
            assert_non_null(rec->vector);
            assert_memory_equal(rec->vector, in[i].vec, sizeof in[i].vec);
        }
        assert_int_equal(rec->n_fields, in[i].has_title ? 2 : 1);
        assert_string_equal(field_of(rec, "body"), in[i].body);
        if (in[i].has_title)
            assert_string_equal(field_of(rec, "title"), in[i].title);
        else
            assert_null(field_of(rec, "title"));
        assert_true(json_same(rec->metadata_json, in[i].meta));
        assert_int_equal(rec->n_allowed, in[i].n_allowed);
        for (size_t a = 0; a < rec->n_allowed; a++)
            assert_string_equal(rec->allowed[a], in[i].allowed[a]);
        assert_int_equal(rec->n_denied, in[i].n_denied);
    }
}

static void test_hits_carry_the_records_that_were_put_and_only_readable_ones(void **state)
{
    fixture_t *f = *state;
    static rec_input_t in[NREC];
    uint64_t seed = 11;
    const char *tf[] = {"title", "body"};
    coll_create(f->db, "recs", tf, 2, NULL, 0);
    for (int i = 0; i < NREC; i++)
        rec_fill(&in[i], i, &seed);
    rec_put(f->db, in, NREC);
    const char *mine[] = {"group:g1", "user:bob"};
    cordon_subject s = {.principals = mine, .n_principals = 2};
    float qv[DIM] = {0.1f, -0.2f, 0.3f, 0.0f};
    cordon_query qs[] = {
        {.text = "alpha", .k = 100, .with_records = 1},
        {.vector = qv, .k = 100, .strategy = CORDON_STRATEGY_EXACT, .with_records = 1},
        {.vector = qv, .text = "alpha", .k = 100, .with_records = 1},
        {.text = "alpha", .k = 5, .from = 7, .with_records = 1},
        {.vector = qv, .text = "alpha", .k = 100, .with_records = 1, .records_without_vectors = 1},
    };
    for (size_t t = 0; t < sizeof qs / sizeof qs[0]; t++) {
        cordon_result *r = search_ok(f->db, "recs", &s, &qs[t]);
        assert_int_equal(r->readable, NREC / 2);
        assert_int_equal(r->n_hits, qs[t].from ? 5 : NREC / 2);
        check_records(r, in, qs[t].records_without_vectors);
        cordon_result_free(r);
    }
    /* Without with_records no hit has one. */
    cordon_query plain = {.text = "alpha", .k = 100};
    cordon_result *r = search_ok(f->db, "recs", &s, &plain);
    assert_int_equal(r->n_hits, NREC / 2);
    for (size_t h = 0; h < r->n_hits; h++)
        assert_null(r->hits[h].record);
    cordon_result_free(r);
    /* Replacing chunks: the records are the new versions, at the revision of the write. */
    for (int i = 0; i < NREC; i += 2)
        rec_fill(&in[i], i, &seed);
    for (int i = 0; i < NREC; i += 2) {
        snprintf(in[i].meta, sizeof in[i].meta, "{\"n\":%d,\"second\":true}", i);
        rec_put(f->db, &in[i], 1);
    }
    r = search_ok(f->db, "recs", &s, &qs[0]);
    assert_int_equal(r->n_hits, NREC / 2);
    assert_int_equal(r->revision, cordon_revision(f->db));
    check_records(r, in, 0);
    cordon_result_free(r);
    /* A subject that holds only the other group reads the other half, and only it. */
    const char *other[] = {"group:g2"};
    cordon_subject s2 = {.principals = other, .n_principals = 1};
    r = search_ok(f->db, "recs", &s2, &qs[0]);
    assert_int_equal(r->n_hits, 3 * NREC / 4);
    for (size_t h = 0; h < r->n_hits; h++) {
        int i = id_num(r->hits[h].id);
        assert_int_not_equal(i % 4, 0);
        assert_string_equal(r->hits[h].record->id, r->hits[h].id);
        assert_memory_equal(r->hits[h].record->vector, in[i].vec, sizeof in[i].vec);
    }
    cordon_result_free(r);
}

/* ---- count_total ---- */

#define NCNT 400

typedef struct cnt_doc {
    int apple, cherry, red, group, bob_denied;
} cnt_doc_t;

static void cnt_setup(cordon_t *db, cnt_doc_t *docs)
{
    const char *tf[] = {"body"};
    cordon_meta_field mf[] = {{"color", CORDON_META_KEYWORD}};
    static char ids[NCNT][16], bodies[NCNT][64], metas[NCNT][32];
    static const char *groups[] = {"group:g0", "group:g1", "group:g2"}, *bob[] = {"user:bob"};
    static cordon_chunk c[NCNT];
    static cordon_field fl[NCNT];
    static float vecs[NCNT][DIM];
    uint64_t seed = 5;
    coll_create(db, "cnt", tf, 1, mf, 1);
    for (int i = 0; i < NCNT; i++) {
        cnt_doc_t *d = &docs[i];
        d->apple = tu_rand(&seed) % 3 == 0;
        d->cherry = tu_rand(&seed) % 5 == 0;
        d->red = tu_rand(&seed) % 2 == 0;
        d->group = (int)(tu_rand(&seed) % 3);
        d->bob_denied = tu_rand(&seed) % 7 == 0;
        snprintf(ids[i], sizeof ids[i], "c%03d", i);
        /* Lengths vary so that BM25 pruning has bounds to work with. */
        snprintf(bodies[i], sizeof bodies[i], "%s%s fig w%d%s", d->apple ? "apple " : "",
                 d->cherry ? "cherry cherry " : "", i, i % 5 ? " fig fig olive" : "");
        snprintf(metas[i], sizeof metas[i], "{\"color\":\"%s\"}", d->red ? "red" : "blue");
        for (int k = 0; k < DIM; k++)
            vecs[i][k] = tu_randf(&seed);
        fl[i] = (cordon_field){"body", bodies[i]};
        c[i] = (cordon_chunk){.id = ids[i],
                              .vector = vecs[i],
                              .fields = &fl[i],
                              .n_fields = 1,
                              .metadata_json = metas[i],
                              .allowed = &groups[d->group],
                              .n_allowed = 1,
                              .denied = bob,
                              .n_denied = d->bob_denied};
    }
    assert_int_equal(cordon_put(db, "cnt", c, NCNT, NULL, NULL), 0);
}

/* The subject holds g0, g1 and user:bob. */
static int cnt_readable(const cnt_doc_t *d)
{
    return d->group != 2 && !d->bob_denied;
}

static uint64_t cnt_count(const cnt_doc_t *docs, int all, int apple, int cherry, int red_only)
{
    uint64_t n = 0;
    for (int i = 0; i < NCNT; i++) {
        const cnt_doc_t *d = &docs[i];
        if ((all || cnt_readable(d)) && ((apple && d->apple) || (cherry && d->cherry)) &&
            (!red_only || d->red))
            n++;
    }
    return n;
}

static void test_total_counts_readable_matches_only(void **state)
{
    fixture_t *f = *state;
    static cnt_doc_t docs[NCNT];
    cnt_setup(f->db, docs);
    const char *mine[] = {"group:g0", "group:g1", "user:bob"};
    const char *all[] = {"group:g0", "group:g1", "group:g2"};
    cordon_subject s = {.principals = mine, .n_principals = 3};
    cordon_subject admin = {.principals = all, .n_principals = 3};
    uint64_t apples = cnt_count(docs, 0, 1, 0, 0), either = cnt_count(docs, 0, 1, 1, 0);
    uint64_t red_apples = cnt_count(docs, 0, 1, 0, 1), all_apples = cnt_count(docs, 1, 1, 0, 0);
    assert_true(apples > 20 && either > apples && red_apples < apples && all_apples > apples);
    struct {
        cordon_query q;
        const cordon_subject *s;
        uint64_t total;
    } cases[] = {
        {{.text = "apple", .k = 5, .count_total = 1}, &s, apples},
        {{.text = "apple", .k = 1, .count_total = 1}, &s, apples},
        {{.text = "apple", .k = 1000, .count_total = 1}, &s, apples},
        {{.text = "apple cherry", .k = 1, .count_total = 1}, &s, either},
        {{.text = "apple cherry", .k = 3, .from = 4, .count_total = 1}, &s, either},
        {{.query_json = "{\"match\":{\"body\":\"cherry apple\"}}", .k = 2, .count_total = 1},
         &s,
         either},
        {{.text = "apple",
          .k = 3,
          .filter_json = "{\"term\":{\"color\":\"red\"}}",
          .count_total = 1},
         &s,
         red_apples},
        {{.text = "apple", .k = 5, .count_total = 1}, &admin, all_apples},
        {{.text = "nosuchword", .k = 5, .count_total = 1}, &s, 0},
        {{.text = "apple", .k = 5}, &s, 0}, /* no count_total: no total */
    };
    for (size_t t = 0; t < sizeof cases / sizeof cases[0]; t++) {
        cordon_result *r = search_ok(f->db, "cnt", cases[t].s, &cases[t].q);
        if (r->total != cases[t].total)
            fail_msg("case %zu: total %" PRIu64 ", expected %" PRIu64, t, r->total, cases[t].total);
        uint64_t want = cases[t].q.count_total ? cases[t].total : apples;
        size_t k = cases[t].q.k, from = cases[t].q.from;
        assert_int_equal(r->n_hits, want > from ? (want - from < k ? want - from : k) : 0);
        cordon_result_free(r);
    }
}

static void test_total_of_vector_and_hybrid_queries(void **state)
{
    fixture_t *f = *state;
    static cnt_doc_t docs[NCNT];
    cnt_setup(f->db, docs);
    const char *mine[] = {"group:g0", "group:g1", "user:bob"};
    cordon_subject s = {.principals = mine, .n_principals = 3};
    float qv[DIM] = {0.5f, 0.5f, 0.5f, 0.5f};
    uint64_t readable = 0, apples = cnt_count(docs, 0, 1, 0, 0);
    for (int i = 0; i < NCNT; i++)
        readable += cnt_readable(&docs[i]);
    /* A vector query's total is its hits. */
    cordon_query vq = {.vector = qv, .k = 7, .count_total = 1};
    cordon_result *r = search_ok(f->db, "cnt", &s, &vq);
    assert_int_equal(r->n_hits, 7);
    assert_int_equal(r->total, 7);
    cordon_result_free(r);
    vq.k = 1000;
    vq.strategy = CORDON_STRATEGY_EXACT;
    r = search_ok(f->db, "cnt", &s, &vq);
    assert_int_equal(r->n_hits, readable);
    assert_int_equal(r->total, readable);
    cordon_result_free(r);
    vq.count_total = 0;
    r = search_ok(f->db, "cnt", &s, &vq);
    assert_int_equal(r->total, 0);
    cordon_result_free(r);
    /* Hybrid: every readable text match, plus the hits only the vector side brought, whether
     * the text side is a plain match (ranked by MaxScore) or a tree evaluated in full, with a
     * cap on the count or without. */
    size_t ks[] = {5, 10, 150};
    const char *text_queries[] = {NULL, "{\"match\":{\"body\":\"apple\"}}",
                                  "{\"bool\":{\"should\":[{\"match\":{\"body\":\"apple\"}},"
                                  "{\"match_phrase\":{\"body\":\"apple\"}}]}}"};
    for (size_t t = 0; t < 3 * 3 * 2; t++) {
        cordon_query hq = {.vector = qv,
                           .text = text_queries[t / 3 % 3] ? NULL : "apple",
                           .query_json = text_queries[t / 3 % 3],
                           .k = ks[t % 3],
                           .count_total = 1,
                           .total_max = t / 9 ? 10000 : 0};
        r = search_ok(f->db, "cnt", &s, &hq);
        uint64_t vector_only = 0;
        for (size_t h = 0; h < r->n_hits; h++) {
            int i = id_num(r->hits[h].id);
            assert_true(cnt_readable(&docs[i]));
            vector_only += !docs[i].apple;
        }
        assert_true(r->total >= apples);
        assert_int_equal(r->total, apples + vector_only);
        assert_true(r->total <= readable);
        cordon_result_free(r);
    }
    /* vector_k: the vector side brings its k nearest only, so at most that many hits the text
     * does not match, where the whole window brings more. */
    size_t vector_only[2] = {0, 0};
    for (int with_k = 0; with_k < 2; with_k++) {
        cordon_query hq = {.vector = qv, .text = "apple", .k = 150, .vector_k = with_k ? 1 : 0};
        r = search_ok(f->db, "cnt", &s, &hq);
        for (size_t h = 0; h < r->n_hits; h++)
            vector_only[with_k] += !docs[id_num(r->hits[h].id)].apple;
        cordon_result_free(r);
    }
    assert_true(vector_only[0] > 1);
    assert_true(vector_only[1] <= 1);
}

/* Concatenates the ids of pages of k (by from, or by search_after when after) of query q into
 * ids, until a page is short or max ids are in; returns how many. */
static size_t walk_pages(cordon_t *db, const char *coll, const cordon_subject *s,
                         const cordon_query *q, size_t k, int after, char (*ids)[16], size_t max)
{
    size_t n = 0;
    char last_id[16] = "";
    float last_score = 0;
    for (size_t page = 0; page <= max / k + 1; page++) {
        cordon_query pq = *q;
        pq.k = k;
        pq.from = after ? 0 : page * k;
        pq.after_id = after && page ? last_id : NULL;
        pq.after_score = last_score;
        cordon_result *r = search_ok(db, coll, s, &pq);
        assert_ranked(r);
        for (size_t h = 0; h < r->n_hits && n < max; h++)
            snprintf(ids[n++], 16, "%s", r->hits[h].id);
        size_t got = r->n_hits;
        if (got) {
            snprintf(last_id, sizeof last_id, "%s", r->hits[got - 1].id);
            last_score = r->hits[got - 1].score;
        }
        cordon_result_free(r);
        if (got < k || n == max)
            return n;
    }
    fail_msg("the pages did not end");
    return n;
}

static void test_hybrid_pages_come_from_one_fused_ranking(void **state)
{
    fixture_t *f = *state;
    static cnt_doc_t docs[NCNT];
    cnt_setup(f->db, docs);
    const char *mine[] = {"group:g0", "group:g1", "user:bob"};
    cordon_subject s = {.principals = mine, .n_principals = 3};
    float qv[DIM] = {0.2f, 0.9f, 0.4f, 0.1f};
    char ids[80][16];
    /* Each side's window fixed at 60: from pages and search_after walk the same 60. */
    cordon_query q = {.vector = qv, .text = "apple", .k = 60, .rank_window_size = 60};
    cordon_result *full = search_ok(f->db, "cnt", &s, &q);
    assert_int_equal(full->n_hits, 60);
    assert_ranked(full);
    int tied = 0;
    for (size_t h = 1; h < full->n_hits; h++)
        tied |= full->hits[h].score == full->hits[h - 1].score;
    assert_true(tied); /* reciprocal ranks tie: the id order is what pages agree on */
    /* from pages past 60 widen the window with them; search_after pages stop at its end. */
    size_t n = walk_pages(f->db, "cnt", &s, &q, 6, 0, ids, 60);
    assert_int_equal(n, 60);
    for (size_t h = 0; h < n; h++)
        assert_string_equal(ids[h], full->hits[h].id);
    n = walk_pages(f->db, "cnt", &s, &q, 6, 1, ids, 80);
    assert_int_equal(n, 60);
    for (size_t h = 0; h < n; h++)
        assert_string_equal(ids[h], full->hits[h].id);
    cordon_result_free(full);
    /* The default window (100): two pages of five are the top ten. */
    cordon_query d = {.vector = qv, .text = "apple", .k = 10};
    cordon_result *top = search_ok(f->db, "cnt", &s, &d);
    assert_int_equal(top->n_hits, 10);
    n = 0;
    for (size_t from = 0; from < 10; from += 5) {
        cordon_query pq = {.vector = qv, .text = "apple", .k = 5, .from = from};
        cordon_result *p = search_ok(f->db, "cnt", &s, &pq);
        for (size_t h = 0; h < p->n_hits; h++, n++) {
            assert_string_equal(p->hits[h].id, top->hits[n].id);
            assert_true(p->hits[h].score == top->hits[n].score);
        }
        cordon_result_free(p);
    }
    assert_int_equal(n, 10);
    cordon_result_free(top);
}

/* ---- from paging and the tie order ---- */

#define NTIE 30

/* Ids p00..p29 in three score tiers (body length; tier i % 3), put in reverse id order so that
 * row order and id order disagree; p30..p39 match too but only group:g2 reads them. */
static void tie_setup(cordon_t *db)
{
    const char *tf[] = {"body"};
    static const char *tiers[] = {"apple", "apple kiwi", "apple kiwi kiwi"};
    static const char *g1[] = {"group:g1"}, *g2[] = {"group:g2"};
    static char ids[NTIE + 10][16];
    static cordon_chunk c[NTIE + 10];
    static cordon_field fl[NTIE + 10];
    static const float same[DIM] = {1, 0, 0, 0};
    coll_create(db, "tie", tf, 1, NULL, 0);
    for (int n = 0; n < NTIE + 10; n++) {
        int i = NTIE + 9 - n;
        snprintf(ids[n], sizeof ids[n], "p%02d", i);
        fl[n] = (cordon_field){"body", tiers[i % 3]};
        c[n] = (cordon_chunk){.id = ids[n],
                              .vector = same,
                              .fields = &fl[n],
                              .n_fields = 1,
                              .allowed = i < NTIE ? g1 : g2,
                              .n_allowed = 1};
    }
    assert_int_equal(cordon_put(db, "tie", c, NTIE + 10, NULL, NULL), 0);
}

/* The documented ranking of the text query "apple": tier, then id. */
static void tie_expected(char out[NTIE][16])
{
    int n = 0;
    for (int tier = 0; tier < 3; tier++)
        for (int i = tier; i < NTIE; i += 3)
            snprintf(out[n++], 16, "p%02d", i);
}

static void test_equal_scores_rank_by_id_and_from_pages_concatenate(void **state)
{
    fixture_t *f = *state;
    char want[NTIE][16];
    tie_setup(f->db);
    tie_expected(want);
    const char *g1[] = {"group:g1"};
    cordon_subject s = {.principals = g1, .n_principals = 1};
    float same[DIM] = {1, 0, 0, 0};
    cordon_query tq = {.text = "apple", .k = 10};
    cordon_result *top = search_ok(f->db, "tie", &s, &tq);
    assert_int_equal(top->n_hits, 10);
    assert_ranked(top);
    assert_true(top->hits[0].score == top->hits[9].score); /* one tier: all tied */
    for (size_t h = 0; h < 10; h++)
        assert_string_equal(top->hits[h].id, want[h]);
    /* Two pages of five are the ten. */
    for (size_t from = 0; from < 10; from += 5) {
        cordon_query pq = {.text = "apple", .k = 5, .from = from};
        cordon_result *p = search_ok(f->db, "tie", &s, &pq);
        assert_int_equal(p->n_hits, 5);
        for (size_t h = 0; h < 5; h++) {
            assert_string_equal(p->hits[h].id, top->hits[from + h].id);
            assert_true(p->hits[h].score == top->hits[from + h].score);
        }
        cordon_result_free(p);
    }
    cordon_result_free(top);
    /* Pages of every size walk the whole ranking, across tiers, and stop at its end. */
    for (size_t k = 1; k <= 7; k++) {
        size_t seen = 0;
        for (size_t from = 0; from <= NTIE; from += k) {
            cordon_query pq = {.text = "apple", .k = k, .from = from};
            cordon_result *p = search_ok(f->db, "tie", &s, &pq);
            assert_int_equal(p->n_hits, from >= NTIE ? 0 : (NTIE - from < k ? NTIE - from : k));
            for (size_t h = 0; h < p->n_hits; h++)
                assert_string_equal(p->hits[h].id, want[seen++]);
            cordon_result_free(p);
        }
        assert_int_equal(seen, NTIE);
    }
    /* Vectors: every readable chunk at distance 0, so the order is the ids'. */
    for (size_t from = 0; from < NTIE; from += 4) {
        cordon_query vq = {.vector = same, .k = 4, .from = from, .strategy = CORDON_STRATEGY_EXACT};
        cordon_result *p = search_ok(f->db, "tie", &s, &vq);
        assert_int_equal(p->n_hits, NTIE - from < 4 ? NTIE - from : 4);
        for (size_t h = 0; h < p->n_hits; h++) {
            char id[16];
            snprintf(id, sizeof id, "p%02zu", from + h);
            assert_string_equal(p->hits[h].id, id);
        }
        cordon_result_free(p);
    }
}

static void test_from_past_the_k_limit_is_refused(void **state)
{
    fixture_t *f = *state;
    tie_setup(f->db);
    const char *g1[] = {"group:g1"};
    cordon_subject s = {.principals = g1, .n_principals = 1};
    cordon_error err;
    cordon_result *r = NULL;
    cordon_query q = {.text = "apple", .k = 10, .from = CORDON_K_MAX - 9};
    assert_int_equal(cordon_search(f->db, "tie", &s, &q, &r, &err), CORDON_ERR_LIMIT);
    assert_null(r);
    assert_non_null(strstr(err.message, "after_id"));
    q.from = SIZE_MAX - 3; /* no wrap-around into an acceptable sum */
    assert_int_equal(cordon_search(f->db, "tie", &s, &q, &r, &err), CORDON_ERR_LIMIT);
    q.from = 0;
    q.k = CORDON_K_MAX + 1; /* k alone past the limit is bad input, as it always was */
    assert_int_equal(cordon_search(f->db, "tie", &s, &q, &r, &err), CORDON_ERR_INVALID);
    q.k = 1;
    q.from = CORDON_K_MAX;
    assert_int_equal(cordon_search(f->db, "tie", &s, &q, &r, &err), CORDON_ERR_LIMIT);
    q.k = 10;
    q.from = CORDON_K_MAX - 10; /* at the limit: fine, and past the ranking's end */
    r = search_ok(f->db, "tie", &s, &q);
    assert_int_equal(r->n_hits, 0);
    cordon_result_free(r);
}

/* ---- search_after ---- */

#define NWALK 57

/* NWALK readable chunks match "apple" in four score tiers (length); 20 more match but only
 * group:g2 reads them, 10 match but deny user:bob, 15 readable ones do not match. Put in a
 * shuffled order. Returns the ranking (tier, then id) in want. */
static void walk_setup(cordon_t *db, char want[NWALK][16])
{
    enum { N = NWALK + 45 };
    const char *tf[] = {"body"};
    static const char *tiers[] = {"apple", "apple kiwi", "apple kiwi kiwi", "apple kiwi kiwi kiwi"};
    static const char *g1[] = {"group:g1"}, *g2[] = {"group:g2"}, *bob[] = {"user:bob"};
    static char ids[N][16];
    static cordon_chunk c[N];
    static cordon_field fl[N];
    static float vecs[N][DIM];
    int order[N];
    uint64_t seed = 3;
    coll_create(db, "walk", tf, 1, NULL, 0);
    for (int i = 0; i < N; i++)
        order[i] = i;
    for (int i = N - 1; i > 0; i--) {
        int j = (int)(tu_rand(&seed) % (uint64_t)(i + 1)), t = order[i];
        order[i] = order[j];
        order[j] = t;
    }
    for (int n = 0; n < N; n++) {
        int i = order[n];
        snprintf(ids[n], sizeof ids[n], "w%03d", i);
        for (int d = 0; d < DIM; d++)
            vecs[n][d] = (float)(i % 5); /* five tiers of equal vectors */
        fl[n] = (cordon_field){"body", i < NWALK + 30 ? tiers[i % 4] : "kiwi"};
        c[n] = (cordon_chunk){.id = ids[n],
                              .vector = vecs[n],
                              .fields = &fl[n],
                              .n_fields = 1,
                              .allowed = i >= NWALK && i < NWALK + 20 ? g2 : g1,
                              .n_allowed = 1,
                              .denied = bob,
                              .n_denied = i >= NWALK + 20 && i < NWALK + 30};
    }
    assert_int_equal(cordon_put(db, "walk", c, N, NULL, NULL), 0);
    int w = 0;
    for (int tier = 0; tier < 4; tier++)
        for (int i = tier; i < NWALK; i += 4)
            snprintf(want[w++], 16, "w%03d", i);
}

static void test_search_after_walks_every_readable_match_once_in_order(void **state)
{
    fixture_t *f = *state;
    char want[NWALK][16];
    walk_setup(f->db, want);
    const char *mine[] = {"group:g1", "user:bob"};
    cordon_subject s = {.principals = mine, .n_principals = 2};
    char ids[NWALK + 10][16];
    cordon_query walk = {.text = "apple"};
    size_t n = walk_pages(f->db, "walk", &s, &walk, 10, 1, ids, NWALK + 10);
    assert_int_equal(n, NWALK);
    for (size_t h = 0; h < n; h++)
        assert_string_equal(ids[h], want[h]);
    /* search_after and from together: skip from hits past the key. */
    cordon_query full = {.text = "apple", .k = NWALK};
    cordon_result *all = search_ok(f->db, "walk", &s, &full);
    assert_int_equal(all->n_hits, NWALK);
    for (size_t h = 0; h < NWALK; h++)
        assert_string_equal(all->hits[h].id, want[h]);
    size_t keys[] = {0, 9, 13, 14, 28, 40, 55};
    for (size_t t = 0; t < sizeof keys / sizeof keys[0]; t++) {
        size_t key = keys[t];
        cordon_query q = {.text = "apple",
                          .k = 3,
                          .from = 2,
                          .after_id = all->hits[key].id,
                          .after_score = all->hits[key].score,
                          .count_total = 1};
        cordon_result *r = search_ok(f->db, "walk", &s, &q);
        assert_int_equal(r->total, NWALK); /* the query's matches, wherever the page is */
        size_t left = NWALK - key - 1 > 2 ? NWALK - key - 3 : 0;
        assert_int_equal(r->n_hits, left < 3 ? left : 3);
        for (size_t h = 0; h < r->n_hits; h++)
            assert_string_equal(r->hits[h].id, all->hits[key + 3 + h].id);
        cordon_result_free(r);
    }
    cordon_result_free(all);
}

static void test_search_after_walks_tied_vectors(void **state)
{
    fixture_t *f = *state;
    char want[NWALK][16];
    walk_setup(f->db, want);
    const char *mine[] = {"group:g1", "user:bob"};
    cordon_subject s = {.principals = mine, .n_principals = 2};
    float qv[DIM] = {0, 0, 0, 0};
    /* The readable chunks: matching or not, not g2's, not those denying bob. */
    int readable[NWALK + 45] = {0};
    size_t nread = 0;
    for (int i = 0; i < NWALK + 45; i++) {
        readable[i] = !(i >= NWALK && i < NWALK + 30);
        nread += readable[i];
    }
    int seen[NWALK + 45] = {0};
    char last_id[16] = "";
    float last_score = 0;
    size_t total = 0;
    for (int page = 0; page < 20; page++) {
        cordon_query q = {.vector = qv,
                          .k = 7,
                          .strategy = CORDON_STRATEGY_EXACT,
                          .after_id = page ? last_id : NULL,
                          .after_score = last_score};
        cordon_result *r = search_ok(f->db, "walk", &s, &q);
        assert_ranked(r);
        for (size_t h = 0; h < r->n_hits; h++) {
            int i = id_num(r->hits[h].id);
            assert_true(readable[i]);
            assert_false(seen[i]);
            seen[i] = 1;
            total++;
            if (page)
                assert_true(r->hits[h].score < last_score ||
                            (r->hits[h].score == last_score && strcmp(r->hits[h].id, last_id) > 0));
        }
        size_t n = r->n_hits;
        if (n) {
            snprintf(last_id, sizeof last_id, "%s", r->hits[n - 1].id);
            last_score = r->hits[n - 1].score;
        }
        cordon_result_free(r);
        if (n < 7)
            break;
    }
    assert_int_equal(total, nread);
}

static void test_non_finite_after_score_is_refused(void **state)
{
    fixture_t *f = *state;
    tie_setup(f->db);
    const char *g1[] = {"group:g1"};
    cordon_subject s = {.principals = g1, .n_principals = 1};
    float bad[] = {NAN, INFINITY, -INFINITY};
    for (size_t t = 0; t < 3; t++) {
        cordon_error err;
        cordon_result *r = NULL;
        cordon_query q = {.text = "apple", .after_id = "p03", .after_score = bad[t]};
        assert_int_equal(cordon_search(f->db, "tie", &s, &q, &r, &err), CORDON_ERR_INVALID);
        assert_null(r);
        assert_non_null(strstr(err.message, "after_score"));
        /* Without after_id the score is not read. */
        q.after_id = NULL;
        r = search_ok(f->db, "tie", &s, &q);
        assert_int_equal(r->n_hits, 10);
        cordon_result_free(r);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(
            test_hits_carry_the_records_that_were_put_and_only_readable_ones, setup, teardown),
        cmocka_unit_test_setup_teardown(test_total_counts_readable_matches_only, setup, teardown),
        cmocka_unit_test_setup_teardown(test_total_of_vector_and_hybrid_queries, setup, teardown),
        cmocka_unit_test_setup_teardown(test_hybrid_pages_come_from_one_fused_ranking, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_equal_scores_rank_by_id_and_from_pages_concatenate,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(test_from_past_the_k_limit_is_refused, setup, teardown),
        cmocka_unit_test_setup_teardown(test_search_after_walks_every_readable_match_once_in_order,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(test_search_after_walks_tied_vectors, setup, teardown),
        cmocka_unit_test_setup_teardown(test_non_finite_after_score_is_refused, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
