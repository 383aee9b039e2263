/* test_compact_race.c: searches and gets running beside compactions (and the writes between
 * them) never see a chunk their subject may not read, never read another chunk's row, and
 * never fail: a reader that took the collection before a compaction committed moves to the
 * new copy. Also run under ThreadSanitizer (make check-tsan).
 * Relies on cmocka and pthreads. */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "compact_testutil.h"

struct reader {
    cordon_t *db;
    atomic_int stop;
    long searches, gets;
};

/* Searches and gets as group g0 until told to stop; any error or unreadable hit fails. */
static void *read_loop(void *arg)
{
    struct reader *r = arg;
    const char *g0 = "group:g0";
    cordon_subject subj = {.principals = &g0, .n_principals = 1};
    uint64_t s = 3;
    while (!atomic_load(&r->stop)) {
        int q = (int)(tu_rand(&s) % QUERIES);
        cordon_query qu = {.vector = queries[q],
                           .k = 10,
                           .strategy =
                               r->searches % 2 ? CORDON_STRATEGY_PREFILTER : CORDON_STRATEGY_EXACT};
        cordon_result *res = NULL;
        cordon_error e;
        if (cordon_search(r->db, "docs", &subj, &qu, &res, &e))
            fail_msg("search beside the compaction: %s", e.message);
        for (size_t i = 0; i < res->n_hits; i++)
            if (!readable(res->hits[i].id, 1u, 0))
                fail_msg("read %s beside the compaction", res->hits[i].id);
        cordon_result_free(res);
        r->searches++;
        int i = (int)(tu_rand(&s) % N);
        char id[16];
        cordon_record *rec = NULL;
        snprintf(id, sizeof id, "c%d", i);
        int rc = cordon_get(r->db, "docs", &subj, id, &rec, NULL);
        if (rc == 0) {
            if (!readable(id, 1u, 0) ||
                memcmp(rec->vector, replaced(i) ? v1[i] : v0[i], sizeof v0[i]) != 0)
                fail_msg("get of %s beside the compaction read another row", id);
            cordon_record_free(rec);
        } else if (rc != CORDON_ERR_NOT_FOUND || readable(id, 1u, 0)) {
            fail_msg("get of %s beside the compaction: %d", id, rc);
        }
        r->gets++;
    }
    return NULL;
}

static void test_searches_beside_a_compaction_stay_exact(void **state)
{
    (void)state;
    char dir[256];
    struct reader r = {0};
    pthread_t th;
    make_vectors();
    api_db_open(dir, sizeof dir, &r.db);
    fill(r.db);
    atomic_init(&r.stop, 0);
    assert_int_equal(pthread_create(&th, NULL, read_loop, &r), 0);
    for (int round = 0; round < 3; round++) {
        put_range(r.db, 0, 300, 1); /* rows to give back */
        cordon_compact_stats st;
        assert_int_equal(cordon_collection_compact(r.db, "docs", &st, NULL), 0);
        assert_int_equal(st.compacted, 1);
    }
    atomic_store(&r.stop, 1);
    pthread_join(th, NULL);
    assert_true(r.searches > 0 && r.gets > 0);
    assert_int_equal(rows_of(r.db), live_count());
    api_db_close(dir, r.db);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_searches_beside_a_compaction_stay_exact),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
