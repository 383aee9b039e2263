/* test_crash.c: kill -9 a loader in the middle of its batches and check that every batch it
 * acknowledged survives, whole, and that no batch survives in part.
 * Relies on fork/kill and the public API. */
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/wait.h>
#include <cmocka.h>

#include "cordon.h"
#include "testutil.h"

#define DIM 16
#define PER_BATCH 25

static void child_load(const char *dir, int fd, uint64_t seed)
{
    cordon_t *db;
    if (cordon_open(dir, NULL, &db, NULL))
        _exit(3);
    static char ids[PER_BATCH][32];
    static float vecs[PER_BATCH][DIM];
    const char *allowed[] = {"group:loader"};
    cordon_chunk c[PER_BATCH];
    for (uint32_t b = 0;; b++) {
        for (int i = 0; i < PER_BATCH; i++) {
            snprintf(ids[i], sizeof ids[i], "b%u-%d", b, i);
            for (int d = 0; d < DIM; d++)
                vecs[i][d] = tu_randf(&seed);
            c[i] = (cordon_chunk){.id = ids[i],
                                  .vector = vecs[i],
                                  .allowed = allowed,
                                  .n_allowed = 1,
                                  .metadata_json = "{\"batch\": true}"};
        }
        if (cordon_put(db, "load", c, PER_BATCH, NULL, NULL))
            _exit(4);
        if (write(fd, &b, sizeof b) != sizeof b) /* the acknowledgement */
            _exit(5);
    }
}

static int present(cordon_t *db, uint32_t b, int i)
{
    char id[32];
    const char *p[] = {"group:loader"};
    cordon_subject s = {.principals = p, .n_principals = 1};
    cordon_record *r = NULL;
    snprintf(id, sizeof id, "b%u-%d", b, i);
    int rc = cordon_get(db, "load", &s, id, &r, NULL);
    cordon_record_free(r);
    return rc == 0;
}

static void test_kill_mid_load_loses_no_acknowledged_batch(void **state)
{
    (void)state;
    uint64_t seed = 1234;
    for (int round = 0; round < 4; round++) {
        char dir[64];
        int fds[2];
        cordon_t *db;
        cordon_collection_spec spec = {
            .asserted_principals = 1, .name = "load", .dim = DIM, .metric = CORDON_METRIC_L2};
        assert_non_null(tu_tmpdir(dir, sizeof dir));
        assert_int_equal(cordon_open(dir, NULL, &db, NULL), 0);
        assert_int_equal(cordon_collection_create(db, &spec, NULL), 0);
        cordon_close(db);
        assert_int_equal(pipe(fds), 0);
        pid_t pid = fork();
        assert_true(pid >= 0);
        if (pid == 0) {
            close(fds[0]);
            child_load(dir, fds[1], seed + (uint64_t)round);
        }
        close(fds[1]);
        uint32_t b, last = UINT32_MAX, want = 2 + (uint32_t)(tu_rand(&seed) % 12);
        int acked = 0;
        while (read(fds[0], &b, sizeof b) == sizeof b) {
            last = b;
            acked++;
            if ((uint32_t)acked >= want) {
                usleep((useconds_t)(tu_rand(&seed) % 3000)); /* land somewhere in a batch */
                kill(pid, SIGKILL);
                break;
            }
        }
        int status;
        waitpid(pid, &status, 0);
        while (read(fds[0], &b, sizeof b) == sizeof b) /* acks sent before death count */
            last = b;
        close(fds[0]);
        assert_true(WIFSIGNALED(status));
        assert_int_equal(cordon_open(dir, NULL, &db, NULL), 0);
        for (uint32_t k = 0; k <= last; k++)
            for (int i = 0; i < PER_BATCH; i++)
                assert_true(present(db, k, i));
        /* The batch after the last acknowledged one is all there or not there at all. */
        int next = 0;
        for (int i = 0; i < PER_BATCH; i++)
            next += present(db, last + 1, i);
        assert_true(next == 0 || next == PER_BATCH);
        cordon_collection_info info;
        assert_int_equal(cordon_collection_info_get(db, "load", &info, NULL), 0);
        assert_int_equal(info.chunks, (uint64_t)(last + 1 + (next ? 1 : 0)) * PER_BATCH);
        /* And the store keeps working after the crash: one more batch. */
        float v[DIM] = {1};
        const char *allowed[] = {"group:loader"};
        cordon_chunk c = {.id = "after", .vector = v, .allowed = allowed, .n_allowed = 1};
        assert_int_equal(cordon_put(db, "load", &c, 1, NULL, NULL), 0);
        float q[DIM] = {1};
        cordon_subject s = {.principals = allowed, .n_principals = 1};
        cordon_query qu = {.vector = q, .k = 1};
        cordon_result *r;
        assert_int_equal(cordon_search(db, "load", &s, &qu, &r, NULL), 0);
        assert_string_equal(r->hits[0].id, "after");
        cordon_result_free(r);
        cordon_close(db);
        tu_rmrf(dir);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_kill_mid_load_loses_no_acknowledged_batch),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
