/* test_exists.c: cordon_exists, a writer's question: which ids name a stored chunk, hidden ones
 * included, deleted ones not, after a reopen too; and its bad arguments. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "api_testutil.h"

static void put(cordon_t *db, const char *id, const char *group)
{
    const char *allowed[] = {group};
    cordon_field f = {"body", "some text"};
    cordon_chunk c = {.id = id, .fields = &f, .n_fields = 1, .allowed = allowed, .n_allowed = 1};
    assert_int_equal(cordon_put(db, "docs", &c, 1, NULL, NULL), 0);
}

static void test_exists_answers_stored_ids(void **state)
{
    (void)state;
    char dir[256];
    cordon_t *db;
    unsigned char out[5];
    api_db_open(dir, sizeof dir, &db);
    api_docs_create(db, 0, CORDON_METRIC_COSINE);
    put(db, "a", "eng");
    put(db, "b/with slash", "nobody-reads-this");
    put(db, "c", "hr");
    const char *gone = "c";
    assert_int_equal(cordon_delete(db, "docs", &gone, 1, NULL, NULL, NULL), 0);
    const char *ids[] = {"a", "b/with slash", "c", "never", ""};
    memset(out, 7, sizeof out);
    assert_int_equal(cordon_exists(db, "docs", ids, 5, out, NULL), 0);
    assert_int_equal(out[0], 1);
    assert_int_equal(out[1], 1); /* readable by nobody, still stored */
    assert_int_equal(out[2], 0); /* deleted */
    assert_int_equal(out[3], 0);
    assert_int_equal(out[4], 0);
    api_db_reopen(dir, &db);
    memset(out, 7, sizeof out);
    assert_int_equal(cordon_exists(db, "docs", ids, 5, out, NULL), 0);
    assert_true(out[0] == 1 && out[1] == 1 && out[2] == 0 && out[3] == 0);
    cordon_error err;
    assert_int_equal(cordon_exists(db, "nope", ids, 1, out, &err), CORDON_ERR_NOT_FOUND);
    assert_int_equal(cordon_exists(db, "docs", NULL, 1, out, &err), CORDON_ERR_INVALID);
    assert_int_equal(cordon_exists(db, "docs", ids, CORDON_BATCH_MAX + 1, out, &err),
                     CORDON_ERR_LIMIT);
    assert_int_equal(cordon_exists(db, "docs", ids, 0, NULL, NULL), 0);
    api_db_close(dir, db);
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_exists_answers_stored_ids)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
