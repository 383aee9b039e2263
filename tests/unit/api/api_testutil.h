/* api_testutil.h: the fixture the API tests share: a database in a fresh temporary directory,
 * reopened in place, closed and removed. Relies on cmocka, the public API and testutil.h. */
#ifndef CDN_API_TESTUTIL_H
#define CDN_API_TESTUTIL_H

#include <stdio.h>
#include <string.h>

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

/* Applies one model operation; fails the test, naming it, when the model refuses it. */
static inline void api_model_op(cordon_t *db, const char *json)
{
    cordon_error err;
    if (cordon_model_apply(db, json, NULL, &err))
        fail_msg("op %.300s failed: %s", json, err.message);
}

/* The ids subject finds in "docs" (an exact search for query, dim floats, k 100), sorted and
 * joined by ',' into out; the search's status (out empty on an error). Checks that the
 * readable count agrees with the hits. */
static inline int api_found_ids(cordon_t *db, const cordon_subject *s, const float *query,
                                char *out, size_t cap)
{
    cordon_query qu = {.vector = query, .k = 100, .strategy = CORDON_STRATEGY_EXACT};
    cordon_result *r;
    int rc = cordon_search(db, "docs", s, &qu, &r, NULL);
    out[0] = '\0';
    if (rc)
        return rc;
    const char *ids[128];
    size_t n = r->n_hits < 128 ? r->n_hits : 128;
    for (size_t i = 0; i < n; i++)
        ids[i] = r->hits[i].id;
    for (size_t i = 1; i < n; i++) /* insertion sort: a handful of ids */
        for (size_t j = i; j > 0 && strcmp(ids[j - 1], ids[j]) > 0; j--) {
            const char *t = ids[j];
            ids[j] = ids[j - 1];
            ids[j - 1] = t;
        }
    for (size_t i = 0; i < n; i++)
        snprintf(out + strlen(out), cap - strlen(out), "%s%s", i ? "," : "", ids[i]);
    assert_int_equal(r->readable, n);
    cordon_result_free(r);
    return 0;
}

/* Closes db (NULL is fine) and removes its directory. */
static inline void api_db_close(const char *dir, cordon_t *db)
{
    cordon_close(db);
    tu_rmrf(dir);
}

#endif
