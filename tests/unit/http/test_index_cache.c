/* test_index_cache.c: the parsed index attrs that searches share (es_index_load_shared): the
 * next load after an attrs change, a drop or a drop and create again sees the new state, a tree
 * is shared only while the text is the same, and threads loading at once agree while another
 * changes the attrs they load. Relies on cmocka, a data directory under /tmp and the server's
 * http/es_mapping.h. */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "http/es_mapping.h"
#include "testutil.h"

typedef struct fixture {
    char dir[64];
    cordon_t *db;
    http_ctx_t ctx;
} fixture_t;

static int setup(void **state)
{
    fixture_t *f = calloc(1, sizeof *f);
    if (!f || !tu_tmpdir(f->dir, sizeof f->dir) || cordon_open(f->dir, NULL, &f->db, NULL) ||
        es_attrs_cache_new(&f->ctx.attrs_cache))
        return -1;
    f->ctx.db = f->db;
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fixture_t *f = *state;
    es_attrs_cache_free(f->ctx.attrs_cache);
    cordon_close(f->db);
    tu_rmrf(f->dir);
    free(f);
    return 0;
}

static void create(fixture_t *f, const char *name, uint32_t dim, const char *attrs)
{
    cordon_collection_spec spec = {
        .name = name, .dim = dim, .metric = CORDON_METRIC_COSINE, .attrs_json = attrs};
    cordon_error err = {0};
    if (cordon_collection_create(f->db, &spec, &err))
        fail_msg("create %s: %s", name, err.message);
}

/* The vector field a shared load of name reports ("" for none), and its dim. */
static const char *vector_of(fixture_t *f, const char *name, uint32_t *dim, json_t **tree)
{
    static char out[64];
    es_index_t ix;
    assert_int_equal(es_index_load_shared(&f->ctx, name, &ix), CORDON_OK);
    snprintf(out, sizeof out, "%s", ix.vector_field ? ix.vector_field : "");
    *dim = ix.info.dim;
    if (tree)
        *tree = ix.attrs;
    es_index_release(&ix);
    return out;
}

static void test_attrs_change_drop_and_recreate_seen_by_next_load(void **state)
{
    fixture_t *f = *state;
    uint32_t dim;
    json_t *t1, *t2;
    create(f, "a", 4, "{\"vector_field\":\"emb\",\"mappings\":{\"properties\":{}}}");
    assert_string_equal(vector_of(f, "a", &dim, &t1), "emb");
    assert_string_equal(vector_of(f, "a", &dim, &t2), "emb");
    assert_ptr_equal(t1, t2); /* the same text: one tree, shared */
    assert_int_equal(dim, 4);
    cordon_collection_change ch = {.attrs_json = "{\"vector_field\":\"emb2\"}"};
    assert_int_equal(cordon_collection_alter(f->db, "a", &ch, NULL), 0);
    assert_string_equal(vector_of(f, "a", &dim, &t2), "emb2");
    assert_ptr_not_equal(t1, t2);
    es_index_t ix;
    assert_int_equal(cordon_collection_drop(f->db, "a", NULL), 0);
    assert_int_equal(es_index_load_shared(&f->ctx, "a", &ix), CORDON_ERR_NOT_FOUND);
    create(f, "a", 3, "{\"vector_field\":\"emb2\"}"); /* the same attrs, another collection */
    assert_string_equal(vector_of(f, "a", &dim, NULL), "emb2");
    assert_int_equal(dim, 3);
    create(f, "b", 2, "{\"vector_field\":\"v\"}");
    assert_string_equal(vector_of(f, "b", &dim, NULL), "v");
    assert_string_equal(vector_of(f, "a", &dim, NULL), "emb2");
    /* The private load is a tree of its own, which its caller may change. */
    es_index_t mine;
    assert_int_equal(es_index_load(&f->ctx, "b", &mine), CORDON_OK);
    assert_int_equal(es_index_load_shared(&f->ctx, "b", &ix), CORDON_OK);
    assert_ptr_not_equal(mine.attrs, ix.attrs);
    json_object_set_new(mine.mappings, "dynamic", json_false());
    assert_null(json_object_get(ix.mappings, "dynamic"));
    es_index_release(&mine);
    es_index_release(&ix);
}

/* More indexes than the cache has slots: each load still answers its own index. */
static void test_many_indexes_each_load_their_own(void **state)
{
    fixture_t *f = *state;
    char name[16], attrs[64];
    uint32_t dim;
    for (int i = 0; i < 40; i++) {
        snprintf(name, sizeof name, "i%d", i);
        snprintf(attrs, sizeof attrs, "{\"vector_field\":\"f%d\"}", i);
        create(f, name, 2, attrs);
    }
    for (int round = 0; round < 2; round++)
        for (int i = 39; i >= 0; i--) {
            char want[16];
            snprintf(name, sizeof name, "i%d", i);
            snprintf(want, sizeof want, "f%d", i);
            assert_string_equal(vector_of(f, name, &dim, NULL), want);
        }
}

typedef struct loader {
    fixture_t *f;
    int bad;
} loader_t;

static void *load_loop(void *arg)
{
    loader_t *l = arg;
    for (int i = 0; i < 2000; i++) {
        es_index_t ix;
        const char *name = i % 2 ? "x" : "y";
        if (es_index_load_shared(&l->f->ctx, name, &ix) != CORDON_OK) {
            l->bad++;
            continue;
        }
        const char *v = ix.vector_field ? ix.vector_field : "";
        l->bad += strcmp(v, i % 2 ? "vx" : "vy") != 0;
        es_index_release(&ix);
    }
    return NULL;
}

/* Changes x's attrs back and forth (the same vector field), so that cached entries are
 * replaced while loaders hold them. */
static void *alter_loop(void *arg)
{
    fixture_t *f = arg;
    for (int i = 0; i < 200; i++) {
        cordon_collection_change ch = {.attrs_json = i % 2 ? "{\"vector_field\":\"vx\"}"
                                                           : "{\"vector_field\":\"vx\",\"n\":1}"};
        if (cordon_collection_alter(f->db, "x", &ch, NULL))
            return (void *)1;
    }
    return NULL;
}

static void test_threads_loading_at_once_agree(void **state)
{
    fixture_t *f = *state;
    pthread_t th[4], writer;
    loader_t l[4];
    void *wrc = NULL;
    create(f, "x", 2, "{\"vector_field\":\"vx\"}");
    create(f, "y", 2, "{\"vector_field\":\"vy\"}");
    for (int i = 0; i < 4; i++) {
        l[i] = (loader_t){f, 0};
        assert_int_equal(pthread_create(&th[i], NULL, load_loop, &l[i]), 0);
    }
    assert_int_equal(pthread_create(&writer, NULL, alter_loop, f), 0);
    for (int i = 0; i < 4; i++) {
        pthread_join(th[i], NULL);
        assert_int_equal(l[i].bad, 0);
    }
    pthread_join(writer, &wrc);
    assert_null(wrc);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_attrs_change_drop_and_recreate_seen_by_next_load,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(test_many_indexes_each_load_their_own, setup, teardown),
        cmocka_unit_test_setup_teardown(test_threads_loading_at_once_agree, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
