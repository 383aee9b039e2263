/* test_collection_alter.c: collection attrs and metadata fields added after creation
 * (cordon_collection_alter): kept, replaced, indexed for chunks stored before and after, and
 * through a reopen. Relies on cmocka, jansson and the shared API fixture (api_testutil.h). */
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

/* ---- attrs ---- */

static void assert_attrs(cordon_t *db, const char *name, const char *want)
{
    char *got = NULL;
    assert_int_equal(cordon_collection_attrs(db, name, &got, NULL), 0);
    assert_non_null(got);
    if (!json_same(got, want))
        fail_msg("attrs of %s: %s, expected %s", name, got, want);
    cordon_free(got);
}

static void test_attrs_are_kept_replaced_reopened_and_dropped(void **state)
{
    fixture_t *f = *state;
    const char *a1 = "{\"mappings\":{\"properties\":{\"tag\":{\"type\":\"keyword\"}}},"
                     "\"n\":[1,2.5,null,\"\\u00e9\"],\"empty\":{}}";
    const char *a2 = "{\"settings\":{\"number_of_shards\":1}}";
    cordon_collection_spec spec = {.asserted_principals = 1, .name = "at", .attrs_json = a1};
    cordon_error err;
    assert_int_equal(cordon_collection_create(f->db, &spec, &err), 0);
    assert_attrs(f->db, "at", a1);
    /* Not an object: refused, and no collection is left behind. */
    const char *bad[] = {"[1,2]", "\"x\"", "{\"a\":", "", "{\"a\":1,\"a\":2}"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        cordon_collection_spec b = {.asserted_principals = 1, .name = "bad", .attrs_json = bad[i]};
        cordon_collection_info info;
        uint64_t rev = cordon_revision(f->db);
        assert_int_equal(cordon_collection_create(f->db, &b, &err), CORDON_ERR_INVALID);
        assert_non_null(strstr(err.message, "attrs_json"));
        assert_int_equal(cordon_collection_info_get(f->db, "bad", &info, NULL),
                         CORDON_ERR_NOT_FOUND);
        assert_int_equal(cordon_revision(f->db), rev);
        cordon_collection_change ch = {.attrs_json = bad[i]};
        assert_int_equal(cordon_collection_alter(f->db, "at", &ch, &err), CORDON_ERR_INVALID);
        assert_attrs(f->db, "at", a1);
    }
    /* No attrs: {}. */
    cordon_collection_spec plain = {.asserted_principals = 1, .name = "plain"};
    assert_int_equal(cordon_collection_create(f->db, &plain, NULL), 0);
    assert_attrs(f->db, "plain", "{}");
    /* Alter replaces them (whole, not merged), in a write of its own. */
    uint64_t rev = cordon_revision(f->db);
    cordon_collection_change ch = {.attrs_json = a2};
    assert_int_equal(cordon_collection_alter(f->db, "at", &ch, NULL), 0);
    assert_true(cordon_revision(f->db) > rev);
    assert_attrs(f->db, "at", a2);
    assert_attrs(f->db, "plain", "{}");
    /* A change without attrs keeps them. */
    cordon_collection_change none = {0};
    assert_int_equal(cordon_collection_alter(f->db, "at", &none, NULL), 0);
    assert_attrs(f->db, "at", a2);
    char *out = NULL;
    assert_int_equal(cordon_collection_attrs(f->db, "missing", &out, NULL), CORDON_ERR_NOT_FOUND);
    assert_int_equal(cordon_collection_alter(f->db, "missing", &ch, NULL), CORDON_ERR_NOT_FOUND);
    api_db_reopen(f->dir, &f->db);
    assert_attrs(f->db, "at", a2);
    assert_attrs(f->db, "plain", "{}");
    /* Dropped and created again under the same name: the old attrs are gone. */
    assert_int_equal(cordon_collection_drop(f->db, "at", NULL), 0);
    assert_int_equal(cordon_collection_attrs(f->db, "at", &out, NULL), CORDON_ERR_NOT_FOUND);
    spec.attrs_json = NULL;
    assert_int_equal(cordon_collection_create(f->db, &spec, NULL), 0);
    assert_attrs(f->db, "at", "{}");
    api_db_reopen(f->dir, &f->db);
    assert_attrs(f->db, "at", "{}");
}

/* ---- metadata fields added after creation ---- */

#define NMETA 40

/* i % 5: 0 {"metadata":{"source":"a"}}; 1 {"metadata":{"source":"b"}}; 2 {"tag":"x"};
 * 3 {"metadata.source":"a"} (the flat spelling of the same path); 4 {"metadata":{"other":"a"}}.
 * i % 2 == 1: only group:g2 reads it. */
static const char *meta_of(int i)
{
    static const char *m[] = {"{\"metadata\":{\"source\":\"a\"}}",
                              "{\"metadata\":{\"source\":\"b\"}}", "{\"tag\":\"x\"}",
                              "{\"metadata.source\":\"a\"}", "{\"metadata\":{\"other\":\"a\"}}"};
    return m[i % 5];
}

static int meta_is_a(int i)
{
    return i % 5 == 0 || i % 5 == 3;
}

static void meta_put(cordon_t *db, int from, int to)
{
    static const char *g1[] = {"group:g1"}, *g2[] = {"group:g2"};
    cordon_chunk c[NMETA];
    char ids[NMETA][16];
    float v[DIM] = {1, 2, 3, 4};
    cordon_field fl = {"body", "shared words"};
    for (int i = from; i < to; i++) {
        snprintf(ids[i - from], sizeof ids[0], "m%02d", i);
        c[i - from] = (cordon_chunk){.id = ids[i - from],
                                     .vector = v,
                                     .fields = &fl,
                                     .n_fields = 1,
                                     .metadata_json = meta_of(i),
                                     .allowed = i % 2 ? g2 : g1,
                                     .n_allowed = 1};
    }
    assert_int_equal(cordon_put(db, "meta", c, (size_t)(to - from), NULL, NULL), 0);
}

/* The filter finds exactly the readable chunks below n whose source is a. */
static void assert_source_a(cordon_t *db, int n, const char *what)
{
    const char *g1[] = {"group:g1"};
    cordon_subject s = {.principals = g1, .n_principals = 1};
    float v[DIM] = {1, 2, 3, 4};
    cordon_query qs[] = {
        {.text = "shared", .k = 100, .filter_json = "{\"term\":{\"metadata.source\":\"a\"}}"},
        {.vector = v, .k = 100, .filter_json = "{\"term\":{\"metadata.source\":\"a\"}}"},
        {.query_json = "{\"bool\":{\"filter\":[{\"term\":{\"metadata.source\":\"a\"}}]}}",
         .k = 100},
    };
    for (size_t t = 0; t < sizeof qs / sizeof qs[0]; t++) {
        int want[NMETA] = {0}, nwant = 0;
        for (int i = 0; i < n; i++)
            nwant += want[i] = i % 2 == 0 && meta_is_a(i);
        cordon_result *r = search_ok(db, "meta", &s, &qs[t]);
        if (r->n_hits != (size_t)nwant)
            fail_msg("%s, query %zu: %zu hits, expected %d", what, t, r->n_hits, nwant);
        for (size_t h = 0; h < r->n_hits; h++) {
            int i = id_num(r->hits[h].id);
            assert_true(i >= 0 && i < n && want[i]);
            want[i] = 0; /* once */
        }
        cordon_result_free(r);
    }
}

static int has_field(cordon_t *db, const char *name, cordon_meta_kind kind)
{
    cordon_collection_info info;
    assert_int_equal(cordon_collection_info_get(db, "meta", &info, NULL), 0);
    for (size_t i = 0; i < info.n_meta_fields; i++)
        if (!strcmp(info.meta_fields[i].name, name))
            return info.meta_fields[i].kind == kind;
    return 0;
}

static void test_metadata_field_added_later_indexes_old_and_new_chunks(void **state)
{
    fixture_t *f = *state;
    const char *tf[] = {"body"};
    cordon_meta_field color = {"color", CORDON_META_KEYWORD};
    coll_create(f->db, "meta", tf, 1, &color, 1);
    meta_put(f->db, 0, 20);
    const char *g1[] = {"group:g1"};
    cordon_subject s = {.principals = g1, .n_principals = 1};
    cordon_error err;
    cordon_result *r = NULL;
    cordon_query q = {.text = "shared", .filter_json = "{\"term\":{\"metadata.source\":\"a\"}}"};
    assert_int_not_equal(cordon_search(f->db, "meta", &s, &q, &r, &err), 0);
    assert_null(r);
    assert_non_null(strstr(err.message, "metadata.source"));
    assert_false(has_field(f->db, "metadata.source", CORDON_META_KEYWORD));
    /* Added: the chunks already stored are found at once. */
    cordon_meta_field add[] = {{"metadata.source", CORDON_META_KEYWORD},
                               {"tag", CORDON_META_KEYWORD}};
    cordon_collection_change ch = {.add_meta_fields = add, .n_add_meta_fields = 2};
    uint64_t rev = cordon_revision(f->db);
    assert_int_equal(cordon_collection_alter(f->db, "meta", &ch, &err), 0);
    assert_true(cordon_revision(f->db) > rev);
    assert_true(has_field(f->db, "metadata.source", CORDON_META_KEYWORD));
    assert_true(has_field(f->db, "tag", CORDON_META_KEYWORD));
    assert_true(has_field(f->db, "color", CORDON_META_KEYWORD));
    assert_source_a(f->db, 20, "after alter");
    cordon_query tq = {.text = "shared", .k = 100, .filter_json = "{\"term\":{\"tag\":\"x\"}}"};
    r = search_ok(f->db, "meta", &s, &tq);
    assert_int_equal(r->n_hits, 2); /* m02, m12: i % 5 == 2 and even */
    cordon_result_free(r);
    /* Chunks put after the alter, and a replaced one that no longer matches. */
    meta_put(f->db, 20, NMETA);
    assert_source_a(f->db, NMETA, "after more puts");
    const char *ids[] = {"m10"};
    assert_int_equal(cordon_delete(f->db, "meta", ids, 1, NULL, NULL, NULL), 0);
    cordon_chunk moved = {.id = "m10",
                          .vector = (float[DIM]){1, 2, 3, 4},
                          .fields = &(cordon_field){"body", "shared words"},
                          .n_fields = 1,
                          .metadata_json = "{\"metadata\":{\"source\":\"b\"}}",
                          .allowed = g1,
                          .n_allowed = 1};
    assert_int_equal(cordon_put(f->db, "meta", &moved, 1, NULL, NULL), 0);
    cordon_query one = {.text = "shared",
                        .k = 100,
                        .count_total = 1,
                        .filter_json = "{\"term\":{\"metadata.source\":\"a\"}}"};
    r = search_ok(f->db, "meta", &s, &one);
    for (size_t h = 0; h < r->n_hits; h++)
        assert_string_not_equal(r->hits[h].id, "m10");
    size_t before = r->n_hits;
    assert_int_equal(r->total, before);
    cordon_result_free(r);
    cordon_chunk back = moved;
    back.metadata_json = meta_of(10);
    assert_int_equal(cordon_put(f->db, "meta", &back, 1, NULL, NULL), 0);
    assert_source_a(f->db, NMETA, "after the replace");
    /* A restart keeps the field and its index. */
    api_db_reopen(f->dir, &f->db);
    assert_true(has_field(f->db, "metadata.source", CORDON_META_KEYWORD));
    assert_source_a(f->db, NMETA, "after reopen");
    /* The same field again with its kind: nothing to do; with another kind: a conflict that
     * changes nothing. */
    ch.n_add_meta_fields = 1;
    assert_int_equal(cordon_collection_alter(f->db, "meta", &ch, &err), 0);
    cordon_meta_field other[] = {{"metadata.source", CORDON_META_NUMBER}};
    cordon_collection_change bad = {
        .attrs_json = "{\"x\":1}", .add_meta_fields = other, .n_add_meta_fields = 1};
    rev = cordon_revision(f->db);
    assert_int_equal(cordon_collection_alter(f->db, "meta", &bad, &err), CORDON_ERR_CONFLICT);
    assert_non_null(strstr(err.message, "metadata.source"));
    assert_int_equal(cordon_revision(f->db), rev);
    assert_attrs(f->db, "meta", "{}");
    assert_true(has_field(f->db, "metadata.source", CORDON_META_KEYWORD));
    cordon_meta_field clash[] = {{"color", CORDON_META_BOOL}};
    bad.add_meta_fields = clash;
    assert_int_equal(cordon_collection_alter(f->db, "meta", &bad, &err), CORDON_ERR_CONFLICT);
    cordon_meta_field text[] = {{"body", CORDON_META_KEYWORD}};
    bad.add_meta_fields = text;
    assert_int_equal(cordon_collection_alter(f->db, "meta", &bad, &err), CORDON_ERR_INVALID);
    assert_attrs(f->db, "meta", "{}");
    assert_source_a(f->db, NMETA, "after refused changes");
    api_db_reopen(f->dir, &f->db);
    assert_source_a(f->db, NMETA, "after a second reopen");
}

static void test_metadata_number_field_added_later_filters_nested_ranges(void **state)
{
    fixture_t *f = *state;
    const char *tf[] = {"body"};
    const char *g1[] = {"group:g1"};
    coll_create(f->db, "meta", tf, 1, NULL, 0);
    cordon_chunk c[30];
    char ids[30][16], metas[30][64];
    float v[DIM] = {1, 0, 0, 0};
    cordon_field fl = {"body", "words"};
    for (int i = 0; i < 30; i++) {
        snprintf(ids[i], sizeof ids[i], "n%02d", i);
        snprintf(metas[i], sizeof metas[i], "{\"doc\":{\"stats\":{\"year\":%d}}}", 2000 + i);
        c[i] = (cordon_chunk){.id = ids[i],
                              .vector = v,
                              .fields = &fl,
                              .n_fields = 1,
                              .metadata_json = metas[i],
                              .allowed = g1,
                              .n_allowed = 1};
    }
    assert_int_equal(cordon_put(f->db, "meta", c, 30, NULL, NULL), 0);
    cordon_meta_field add = {"doc.stats.year", CORDON_META_NUMBER};
    cordon_collection_change ch = {.add_meta_fields = &add, .n_add_meta_fields = 1};
    assert_int_equal(cordon_collection_alter(f->db, "meta", &ch, NULL), 0);
    cordon_subject s = {.principals = g1, .n_principals = 1};
    cordon_query q = {.vector = v,
                      .k = 100,
                      .count_total = 1,
                      .filter_json = "{\"range\":{\"doc.stats.year\":{\"gte\":2010,\"lt\":2015}}}"};
    cordon_result *r = search_ok(f->db, "meta", &s, &q);
    assert_int_equal(r->n_hits, 5);
    assert_int_equal(r->total, 5);
    for (size_t h = 0; h < r->n_hits; h++) {
        int i = id_num(r->hits[h].id);
        assert_true(i >= 10 && i < 15);
    }
    cordon_result_free(r);
}

/* Copies file from to file to; returns 0 on success. */
static int copy_file(const char *from, const char *to)
{
    FILE *in = fopen(from, "rb"), *out = in ? fopen(to, "wb") : NULL;
    char buf[4096];
    size_t n;
    int rc = in && out ? 0 : -1;
    while (rc == 0 && (n = fread(buf, 1, sizeof buf, in)) > 0)
        rc = fwrite(buf, 1, n, out) == n ? 0 : -1;
    if (in)
        fclose(in);
    if (out && fclose(out))
        rc = -1;
    return rc;
}

/* The one text checkpoint in dir (path into buf); fails the test unless there is exactly one. */
static void text_checkpoint(const char *dir, char *buf, size_t size)
{
    int found = 0;
    for (uint32_t id = 0; id < 64; id++) {
        char p[128];
        snprintf(p, sizeof p, "%s/coll-%u.text", dir, id);
        if (access(p, F_OK) == 0) {
            snprintf(buf, size, "%s", p);
            found++;
        }
    }
    assert_int_equal(found, 1);
}

static void test_metadata_field_added_later_survives_a_stale_text_checkpoint(void **state)
{
    fixture_t *f = *state;
    const char *tf[] = {"body"};
    char ckpt[128], saved[160];
    coll_create(f->db, "meta", tf, 1, NULL, 0);
    meta_put(f->db, 0, NMETA);
    api_db_reopen(f->dir, &f->db); /* the close leaves a text checkpoint without the field */
    text_checkpoint(f->dir, ckpt, sizeof ckpt);
    snprintf(saved, sizeof saved, "%s.before", ckpt);
    assert_int_equal(copy_file(ckpt, saved), 0);
    cordon_meta_field add = {"metadata.source", CORDON_META_KEYWORD};
    cordon_collection_change ch = {.add_meta_fields = &add, .n_add_meta_fields = 1};
    assert_int_equal(cordon_collection_alter(f->db, "meta", &ch, NULL), 0);
    assert_source_a(f->db, NMETA, "after alter");
    cordon_close(f->db);
    f->db = NULL;
    /* A process killed right after the alter's commit leaves the old checkpoint in place. */
    assert_int_equal(copy_file(saved, ckpt), 0);
    assert_int_equal(remove(saved), 0);
    assert_int_equal(cordon_open(f->dir, NULL, &f->db, NULL), 0);
    assert_true(has_field(f->db, "metadata.source", CORDON_META_KEYWORD));
    assert_source_a(f->db, NMETA, "after reopen over the old checkpoint");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_attrs_are_kept_replaced_reopened_and_dropped, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_metadata_field_added_later_indexes_old_and_new_chunks,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(
            test_metadata_number_field_added_later_filters_nested_ranges, setup, teardown),
        cmocka_unit_test_setup_teardown(
            test_metadata_field_added_later_survives_a_stale_text_checkpoint, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
