/* api_testutil.h: the fixture the API tests share: a database in a fresh temporary directory,
 * reopened in place, closed and removed. Relies on cmocka, the public API and testutil.h. */
#ifndef CDN_API_TESTUTIL_H
#define CDN_API_TESTUTIL_H

#include "cordon.h"
#include "testutil.h"

/* Makes a temporary directory (its path into dir, at least 64 bytes) and opens a database in
 * it with default options; fails the test if either cannot be done. */
static inline void api_db_open(char *dir, size_t size, cordon_t **db)
{
    assert_non_null(tu_tmpdir(dir, size));
    assert_int_equal(cordon_open(dir, NULL, db, NULL), 0);
}

/* Closes *db and opens the same directory again, as a restart would. */
static inline void api_db_reopen(const char *dir, cordon_t **db)
{
    cordon_close(*db);
    *db = NULL;
    assert_int_equal(cordon_open(dir, NULL, db, NULL), 0);
}

/* Creates the collection most API tests use: "docs", dim vectors compared by metric, one
 * text field "body", asserted principals allowed. */
static inline void api_docs_create(cordon_t *db, uint32_t dim, cordon_metric metric)
{
    const char *tf[] = {"body"};
    cordon_collection_spec spec = {.asserted_principals = 1,
                                   .name = "docs",
                                   .dim = dim,
                                   .metric = metric,
                                   .text_fields = tf,
                                   .n_text_fields = 1};
    assert_int_equal(cordon_collection_create(db, &spec, NULL), 0);
}

/* Closes db (NULL is fine) and removes its directory. */
static inline void api_db_close(const char *dir, cordon_t *db)
{
    cordon_close(db);
    tu_rmrf(dir);
}

#endif
