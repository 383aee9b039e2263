/* test_adversarial_crash.c: kill -9 a writer in the middle of its set_acl batches (each one
 * moving every chunk to a new, never-seen principal) and puts; after a reopen every chunk must
 * carry the ACL of one whole batch, at or after the last acknowledged one, in every read path.
 * Relies on fork/kill, cmocka and tests/testutil.h. */
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/wait.h>
#include <cmocka.h>

#include "cordon.h"
#include "testutil.h"

#define DIM 8
#define NCH 60

static void child(const char *dir, int fd)
{
    cordon_t *db;
    static char ids[NCH][16];
    cordon_acl_change ch[NCH];
    if (cordon_open(dir, NULL, &db, NULL))
        _exit(3);
    for (int i = 0; i < NCH; i++)
        snprintf(ids[i], sizeof ids[i], "c%d", i);
    for (uint32_t k = 1;; k++) {
        char p[32], q[32], pid[32];
        snprintf(p, sizeof p, "group:v%u", k);
        snprintf(q, sizeof q, "w%u", k);
        const char *pp[] = {p}, *qq[] = {q};
        for (int i = 0; i < NCH; i++)
            ch[i] = (cordon_acl_change){ids[i], pp, 1, NULL, 0, NULL, 0};
        if (cordon_set_acl(db, "acl", ch, NCH, NULL, NULL))
            _exit(4);
        uint32_t ack = 2 * k;
        if (write(fd, &ack, sizeof ack) != sizeof ack)
            _exit(5);
        float v[DIM] = {1, (float)k};
        cordon_field fl = {"body", "common put"};
        snprintf(pid, sizeof pid, "p%u", k);
        cordon_chunk c = {
            .id = pid, .vector = v, .fields = &fl, .n_fields = 1, .allowed = qq, .n_allowed = 1};
        if (cordon_put(db, "acl", &c, 1, NULL, NULL))
            _exit(6);
        ack = 2 * k + 1;
        if (write(fd, &ack, sizeof ack) != sizeof ack)
            _exit(5);
    }
}

static int readable_by(cordon_t *db, const char *principal, const char *id)
{
    const char *p[] = {principal};
    cordon_subject s = {.principals = p, .n_principals = 1};
    cordon_record *r = NULL;
    int rc = cordon_get(db, "acl", &s, id, &r, NULL);
    cordon_record_free(r);
    return rc == 0;
}

/* Every read path as `principal`: how many of the NCH chunks it finds. */
static void count_paths(cordon_t *db, const char *principal, size_t counts[4])
{
    const char *p[] = {principal};
    cordon_subject s = {.principals = p, .n_principals = 1};
    float q[DIM] = {1, 1, 1, 1, 1, 1, 1, 1};
    cordon_query qs[4] = {
        {.text = "common", .k = 1000},
        {.vector = q, .k = 1000, .strategy = CORDON_STRATEGY_EXACT},
        {.vector = q, .k = NCH, .strategy = CORDON_STRATEGY_PREFILTER, .ef_search = 400},
        {.query_json = "{\"match_all\":{}}", .k = 1000}};
    for (int m = 0; m < 4; m++) {
        cordon_result *r;
        cordon_error err;
        if (cordon_search(db, "acl", &s, &qs[m], &r, &err))
            fail_msg("search mode %d after the crash: %s", m, err.message);
        counts[m] = 0;
        for (size_t h = 0; h < r->n_hits; h++)
            counts[m] += r->hits[h].id[0] == 'c';
        cordon_result_free(r);
    }
}

static void test_kill_mid_set_acl_keeps_whole_acknowledged_batches(void **state)
{
    (void)state;
    uint64_t seed = 77;
    for (int round = 0; round < 4; round++) {
        char dir[64];
        int fds[2];
        cordon_t *db;
        const char *tf[] = {"body"};
        cordon_collection_spec spec = {.asserted_principals = 1,
                                       .name = "acl",
                                       .dim = DIM,
                                       .text_fields = tf,
                                       .n_text_fields = 1};
        assert_non_null(tu_tmpdir(dir, sizeof dir));
        assert_int_equal(cordon_open(dir, NULL, &db, NULL), 0);
        assert_int_equal(cordon_collection_create(db, &spec, NULL), 0);
        static char ids[NCH][16];
        static float v[NCH][DIM];
        cordon_chunk c[NCH];
        cordon_field fl = {"body", "common chunk"};
        const char *v0[] = {"group:v0"};
        for (int i = 0; i < NCH; i++) {
            snprintf(ids[i], sizeof ids[i], "c%d", i);
            for (int d = 0; d < DIM; d++)
                v[i][d] = tu_randf(&seed);
            c[i] = (cordon_chunk){.id = ids[i],
                                  .vector = v[i],
                                  .fields = &fl,
                                  .n_fields = 1,
                                  .allowed = v0,
                                  .n_allowed = 1};
        }
        assert_int_equal(cordon_put(db, "acl", c, NCH, NULL, NULL), 0);
        cordon_close(db);
        /* Half the rounds crash with index checkpoints on disk, half without. */
        if (round % 2) {
            char path[128];
            snprintf(path, sizeof path, "%s/coll-0.text", dir);
            unlink(path);
            snprintf(path, sizeof path, "%s/coll-0.hnsw", dir);
            unlink(path);
        }
        assert_int_equal(pipe(fds), 0);
        pid_t pid = fork();
        assert_true(pid >= 0);
        if (pid == 0) {
            close(fds[0]);
            child(dir, fds[1]);
        }
        close(fds[1]);
        uint32_t ack, last = 0, want = 3 + (uint32_t)(tu_rand(&seed) % 20);
        uint32_t n = 0;
        while (read(fds[0], &ack, sizeof ack) == sizeof ack) {
            last = ack;
            if (++n >= want) {
                kill(pid, SIGKILL);
                break;
            }
        }
        int status;
        waitpid(pid, &status, 0);
        while (read(fds[0], &ack, sizeof ack) == sizeof ack)
            last = ack;
        close(fds[0]);
        assert_true(WIFSIGNALED(status));
        assert_int_equal(cordon_open(dir, NULL, &db, NULL), 0);
        /* The ACL batch in force is the last acknowledged one or the one after it. */
        uint32_t k_acked = last / 2, k = 0;
        char pa[32], pb[32];
        snprintf(pa, sizeof pa, "v%u", k_acked);
        snprintf(pb, sizeof pb, "group:v%u", k_acked + 1);
        int na = 0, nb = 0;
        for (int i = 0; i < NCH; i++) {
            na += readable_by(db, pa, ids[i]);
            nb += readable_by(db, pb, ids[i]);
        }
        if (!((na == NCH && nb == 0) || (na == 0 && nb == NCH)))
            fail_msg("round %d: after ack %u: %d chunks on batch %u, %d on batch %u", round, last,
                     na, k_acked, nb, k_acked + 1);
        k = na ? k_acked : k_acked + 1;
        /* No chunk readable by an older batch's principal. */
        if (k > 0) {
            char old[32];
            snprintf(old, sizeof old, "v%u", k - 1);
            for (int i = 0; i < NCH; i++)
                assert_false(readable_by(db, old, ids[i]));
        }
        /* Every read path agrees. */
        size_t counts[4];
        count_paths(db, na ? pa : pb, counts);
        for (int m = 0; m < 4; m++)
            if (counts[m] != NCH)
                fail_msg("round %d: read path %d finds %zu of %d chunks", round, m, counts[m], NCH);
        count_paths(db, na ? pb : pa, counts);
        for (int m = 0; m < 4; m++)
            assert_int_equal(counts[m], 0);
        /* Every acknowledged put is there, readable by its own principal only. */
        for (uint32_t j = 1; 2 * j + 1 <= last; j++) {
            char pid_s[32], w[32];
            snprintf(pid_s, sizeof pid_s, "p%u", j);
            snprintf(w, sizeof w, "group:w%u", j);
            assert_true(readable_by(db, w, pid_s));
            assert_false(readable_by(db, pa, pid_s));
        }
        cordon_close(db);
        tu_rmrf(dir);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_kill_mid_set_acl_keeps_whole_acknowledged_batches),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
