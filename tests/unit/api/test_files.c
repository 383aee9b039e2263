/* test_files.c: the data directory holds protected text, so only its owner may read it: the
 * directory is created 0700 and every file in it 0600 whatever the umask, and an existing
 * directory open to others is still opened (with a warning). One handle at a time opens a
 * directory, in this process or another. Relies on cmocka and nftw. */
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include "cordon.h"
#include "testutil.h"

static int files_seen, files_open_to_others;
static char first_bad[512];

static int check_one(const char *p, const struct stat *sb, int flag, struct FTW *ftw)
{
    (void)ftw;
    if (flag != FTW_F && flag != FTW_D && flag != FTW_DP)
        return 0;
    files_seen += flag == FTW_F;
    if ((sb->st_mode & 077) && !files_open_to_others++)
        snprintf(first_bad, sizeof first_bad, "%s mode %04o", p, (unsigned)(sb->st_mode & 07777));
    return 0;
}

/* Fills a collection with vectors, text, metadata and model changes, then closes it, so that
 * every kind of file the engine writes (database, lock, vectors, graph, codes, text index,
 * calibration) is there to check. */
static void fill(cordon_t *db)
{
    enum { N = 1200, DIM = 8 };
    static float v[N][DIM];
    static char ids[N][16];
    static cordon_chunk c[N];
    const char *tf[] = {"body"}, *eng = "group:eng";
    cordon_field f = {"body", "protected words"};
    cordon_collection_spec sp = {
        .name = "docs", .dim = DIM, .text_fields = tf, .n_text_fields = 1, .int8_scan = 1};
    uint64_t s = 7;
    assert_int_equal(cordon_collection_create(db, &sp, NULL), 0);
    for (int i = 0; i < N; i++) {
        for (int d = 0; d < DIM; d++)
            v[i][d] = (float)(tu_rand(&s) % 1000) / 1000.0f + 0.001f;
        snprintf(ids[i], sizeof ids[i], "c%d", i);
        c[i] = (cordon_chunk){.id = ids[i],
                              .vector = v[i],
                              .fields = &f,
                              .n_fields = 1,
                              .allowed = &eng,
                              .n_allowed = 1};
    }
    assert_int_equal(cordon_put(db, "docs", c, N, NULL, NULL), 0);
    assert_int_equal(cordon_model_apply(db, "{\"op\":\"put_subject\",\"id\":\"a\"}", NULL, NULL),
                     0);
}

static void test_data_directory_and_files_are_private_whatever_the_umask(void **state)
{
    (void)state;
    char parent[64], dir[128];
    cordon_t *db;
    struct stat st;
    mode_t old = umask(0);
    assert_non_null(tu_tmpdir(parent, sizeof parent));
    snprintf(dir, sizeof dir, "%s/data", parent);
    assert_int_equal(cordon_open(dir, NULL, &db, NULL), 0);
    fill(db);
    cordon_close(db);
    assert_int_equal(cordon_open(dir, NULL, &db, NULL), 0); /* reopen: files rewritten */
    cordon_close(db);
    umask(old);
    assert_int_equal(stat(dir, &st), 0);
    assert_int_equal(st.st_mode & 07777, 0700);
    files_seen = files_open_to_others = 0;
    nftw(dir, check_one, 16, FTW_PHYS);
    if (files_open_to_others)
        fail_msg("%d files or directories open to others, first %s", files_open_to_others,
                 first_bad);
    assert_true(files_seen >= 4); /* data.mdb, lock.mdb, vectors, and the checkpoints */
    tu_rmrf(parent);
}

static void test_existing_directory_open_to_others_still_opens(void **state)
{
    (void)state;
    char dir[64];
    cordon_t *db;
    struct stat st;
    assert_non_null(tu_tmpdir(dir, sizeof dir));
    assert_int_equal(chmod(dir, 0755), 0);
    assert_int_equal(cordon_open(dir, NULL, &db, NULL), 0); /* warns on stderr */
    cordon_close(db);
    assert_int_equal(stat(dir, &st), 0);
    assert_int_equal(st.st_mode & 07777, 0755); /* the owner's choice: warned about, not changed */
    tu_rmrf(dir);
}

/* A second handle on an open directory (in this process, or in another) is refused, naming the
 * process that holds it; closing the first, or killing its process, lets the next one open. */
static void test_a_directory_opens_in_one_handle_at_a_time(void **state)
{
    (void)state;
    char parent[64], dir[128], pid[32];
    cordon_t *db, *second = NULL;
    cordon_error err;
    int status, go[2], ready[2];
    assert_non_null(tu_tmpdir(parent, sizeof parent));
    snprintf(dir, sizeof dir, "%s/data", parent);
    assert_int_equal(cordon_open(dir, NULL, &db, NULL), 0);
    fill(db);
    assert_int_equal(cordon_open(dir, NULL, &second, &err), CORDON_ERR_CONFLICT);
    assert_null(second);
    snprintf(pid, sizeof pid, "process %ld", (long)getpid());
    assert_non_null(strstr(err.message, pid));
    pid_t child = fork();
    assert_true(child >= 0);
    if (child == 0) { /* another process: refused too */
        cordon_t *c = NULL;
        _exit(cordon_open(dir, NULL, &c, NULL) == CORDON_ERR_CONFLICT && !c ? 0 : 1);
    }
    assert_int_equal(waitpid(child, &status, 0), child);
    assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    cordon_close(db);

    /* a process that holds it and is killed leaves it free */
    assert_int_equal(pipe(go), 0);
    assert_int_equal(pipe(ready), 0);
    child = fork();
    assert_true(child >= 0);
    if (child == 0) {
        cordon_t *c = NULL;
        char b = cordon_open(dir, NULL, &c, NULL) == 0 ? 'y' : 'n';
        if (write(ready[1], &b, 1) != 1 || read(go[0], &b, 1) < 0)
            _exit(1);
        _exit(0);
    }
    char b = 0;
    assert_int_equal(read(ready[0], &b, 1), 1);
    assert_int_equal(b, 'y');
    assert_int_equal(cordon_open(dir, NULL, &second, &err), CORDON_ERR_CONFLICT);
    assert_int_equal(kill(child, SIGKILL), 0);
    assert_int_equal(waitpid(child, &status, 0), child);
    assert_int_equal(cordon_open(dir, NULL, &db, NULL), 0);
    cordon_close(db);
    for (int i = 0; i < 2; i++) {
        close(go[i]);
        close(ready[i]);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_data_directory_and_files_are_private_whatever_the_umask),
        cmocka_unit_test(test_existing_directory_open_to_others_still_opens),
        cmocka_unit_test(test_a_directory_opens_in_one_handle_at_a_time),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
