/* test_compact.c: cordon_collection_compact renumbers a collection's live rows and rewrites its
 * files without the rows deletes and replaces left behind: every answer (exact searches, BM25,
 * gets, with their scores) is the same before, after and after a reopen, graph searches leak
 * nothing and keep their recall; the old generation's files are gone; writes and a second
 * compaction work afterwards; a kill before or after its commit leaves the collection as before
 * or as after, with no stray files. Searches beside a compaction: test_compact_race.c.
 * Relies on cmocka, fork and the test hooks (base/testhook.h). */
#include <dirent.h>
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>

#include "base/mem.h"
#include "base/testhook.h"
#include "compact_testutil.h"
#include "store/store.h"

static char before[1 << 17], after[1 << 17];

static void test_compact_keeps_every_answer(void **state)
{
    (void)state;
    char dir[256];
    cordon_t *db = NULL;
    cordon_compact_stats st;
    cordon_error e;
    make_vectors();
    api_db_open(dir, sizeof dir, &db);
    fill(db);
    uint64_t rows0 = rows_of(db);
    assert_int_equal(rows0, N + N * 3 / 10);
    answers(db, before, sizeof before);
    /* The copy loads the renumbered graph, codes and text index written for it: nothing is
     * found unusable and rebuilt (the loaders say so on stderr). */
    char errpath[300];
    snprintf(errpath, sizeof errpath, "%s.stderr", dir);
    int saved = dup(2), fd = open(errpath, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    assert_true(saved >= 0 && fd >= 0);
    fflush(stderr);
    dup2(fd, 2);
    int crc = cordon_collection_compact(db, "docs", &st, &e);
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    close(fd);
    if (crc)
        fail_msg("compact: %s", e.message);
    FILE *ef = fopen(errpath, "r");
    char said[512] = "";
    assert_non_null(ef);
    size_t got = fread(said, 1, sizeof said - 1, ef);
    said[got] = '\0';
    fclose(ef);
    unlink(errpath);
    assert_string_equal(said, "");
    static const char *const ext[] = {"vec", "hnsw", "q8", "text"};
    for (int i = 0; i < 4; i++) { /* written by the compaction, not rebuilt at a later save */
        snprintf(errpath, sizeof errpath, "%s/coll-0-g1.%s", dir, ext[i]);
        assert_int_equal(access(errpath, F_OK), 0);
    }
    assert_int_equal(st.compacted, 1);
    assert_int_equal(st.rows_before, rows0);
    assert_int_equal(st.rows_after, live_count());
    assert_int_equal(rows_of(db), live_count());
    printf("database file %llu -> %llu bytes\n", (unsigned long long)st.db_bytes_before,
           (unsigned long long)st.db_bytes_after);
    /* the moved records' old pages were more than a quarter of the file: rewritten without */
    assert_true(st.db_bytes_after < st.db_bytes_before);
    answers(db, after, sizeof after);
    assert_string_equal(before, after);
    check_graph_searches(db);
    assert_int_equal(file_gens(dir), 1u << 1); /* generation 0's files are gone */

    /* A change of the collection's settings stores the new generation with them. */
    cordon_meta_field mf = {"kind", CORDON_META_KEYWORD};
    cordon_collection_change ch = {
        .attrs_json = "{\"note\":1}", .add_meta_fields = &mf, .n_add_meta_fields = 1};
    assert_int_equal(cordon_collection_alter(db, "docs", &ch, NULL), 0);

    /* The same after a reopen, from the new generation's files. */
    api_db_reopen(dir, &db);
    assert_int_equal(rows_of(db), live_count());
    answers(db, after, sizeof after);
    assert_string_equal(before, after);
    assert_int_equal(file_gens(dir), 1u << 1);

    /* Nothing dead and every row in its place: nothing rewritten. */
    assert_int_equal(cordon_collection_compact(db, "docs", &st, NULL), 0);
    assert_int_equal(st.compacted, 0);
    assert_int_equal(st.rows_after, live_count());
    assert_int_equal(file_gens(dir), 1u << 1);
    assert_int_equal(cordon_collection_compact(db, "nope", NULL, &e), CORDON_ERR_NOT_FOUND);

    /* Writes go on from the new numbering, and a second compaction closes their gaps. */
    put_range(db, 0, 100, 1); /* the same replaced chunks again: new rows, same answers */
    assert_int_equal(rows_of(db), live_count() + 30);
    answers(db, after, sizeof after);
    assert_string_equal(before, after);
    assert_int_equal(cordon_collection_compact(db, "docs", &st, NULL), 0);
    assert_int_equal(st.compacted, 1);
    assert_int_equal(rows_of(db), live_count());
    answers(db, after, sizeof after);
    assert_string_equal(before, after);
    assert_int_equal(file_gens(dir), 1u << 2);
    api_db_close(dir, db);
}

/* A kill at the compaction's last step before its commit, or right after the commit. */
static void crash_at(cdn_hook_point_t point, int committed)
{
    char dir[256];
    cordon_t *db = NULL;
    api_db_open(dir, sizeof dir, &db);
    fill(db);
    uint64_t rows0 = rows_of(db);
    answers(db, before, sizeof before);
    cordon_close(db);
    fflush(NULL);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        cordon_t *cdb = NULL;
        if (cordon_open(dir, NULL, &cdb, NULL))
            _exit(3);
        cdn_hook_kill_after(point, 1);
        cordon_collection_compact(cdb, "docs", NULL, NULL);
        _exit(4); /* the hook kills before this */
    }
    int status;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
    assert_int_equal(cordon_open(dir, NULL, &db, NULL), 0);
    assert_int_equal(rows_of(db), committed ? (uint64_t)live_count() : rows0);
    assert_int_equal(file_gens(dir), committed ? 1u << 1 : 1u); /* the other one swept */
    char left[300];
    snprintf(left, sizeof left, "%s/" STORE_COMPACT_TMP, dir);
    assert_int_equal(access(left, F_OK), -1); /* a database copy left by the kill is removed */
    answers(db, after, sizeof after);
    assert_string_equal(before, after);
    api_db_close(dir, db);
}

static void test_compact_survives_a_kill_before_its_commit(void **state)
{
    (void)state;
    make_vectors();
    crash_at(CDN_HOOK_COMPACT_WRITTEN, 0);
}

static void test_compact_survives_a_kill_after_its_commit(void **state)
{
    (void)state;
    make_vectors();
    crash_at(CDN_HOOK_COMMITTED, 1);
    /* later, with the database file's copy written and the environment closed, not renamed:
     * the open removes the copy and reads the file, compacted collection and all */
    crash_at(CDN_HOOK_STORE_COPIED, 1);
}

/* Allocation failures at steps spread over the whole compaction (every step up to 64, then
 * growing by an eighth): each failed compaction reports the error and changes nothing, no
 * answer, no row count, no file. A failure inside the graph repair that runs before writers
 * are held off is absorbed (the pass under the writer lock repairs again), and that compaction
 * must succeed with the same answers; some chunks are then replaced again for the next step. */
/* 1 if the failure armed with cdn_mem_fail_after(n) before a call fired inside it, 0 if it is
 * still pending (the call made fewer allocations); disarms either way. */
static int fired(long n)
{
    int pending = 0;
    for (long i = 0; i <= n && !pending; i++) {
        void *p = cdn_malloc(1);
        pending = p == NULL;
        cdn_free(p);
    }
    cdn_mem_fail_after(-1);
    return !pending;
}

static void test_compact_under_allocation_failures(void **state)
{
    (void)state;
    char dir[256];
    cordon_t *db = NULL;
    make_vectors();
    api_db_open(dir, sizeof dir, &db);
    fill(db);
    uint64_t rows0 = rows_of(db);
    answers(db, before, sizeof before);
    int failed = 0, absorbed = 0, done = 0, gen = 0;
    for (long n = 0; !done && n < 10000000; n = n < 64 ? n + 1 : n + n / 32) {
        cordon_compact_stats st;
        cordon_error e;
        cdn_mem_fail_after(n);
        int rc = cordon_collection_compact(db, "docs", &st, &e);
        int hit = fired(n);
        if (rc == 0) {
            assert_int_equal(st.compacted, 1);
            assert_int_equal(rows_of(db), live_count());
            answers(db, after, sizeof after);
            assert_string_equal(before, after);
            if (!hit) { /* the whole compaction made fewer than n allocations */
                done = 1;
                break;
            }
            /* The failure fell in the repair before the writer lock. Replace 90 chunks with
             * what they hold, for dead rows to compact again. */
            absorbed++;
            gen++;
            put_range(db, 0, 300, 1);
            rows0 = rows_of(db);
            continue;
        }
        assert_true(hit);
        failed++;
        assert_int_equal(rc, CORDON_ERR_NOMEM);
        assert_int_equal(rows_of(db), rows0);
        /* One generation's files, whatever its number: every failure the repair before the
         * writer lock absorbed made a compaction that succeeded. */
        assert_int_equal(file_gen_only(dir), gen);
        answers(db, after, sizeof after);
        assert_string_equal(before, after);
    }
    if (!done || failed < 40)
        fail_msg("%d failures, %d absorbed, done %d", failed, absorbed, done);
    print_message("compact: %d allocation failures, each left everything as it was; %d absorbed "
                  "by the repair before the writer lock\n",
                  failed, absorbed);
    api_db_reopen(dir, &db);
    answers(db, after, sizeof after);
    assert_string_equal(before, after);
    api_db_close(dir, db);
}

/* The answers of a collection without vectors: BM25 for two subjects, and gets. */
static void text_answers(cordon_t *db, char *out, size_t cap)
{
    static const char *const subj[2][2] = {{"group:a", NULL}, {"group:a", "group:b"}};
    out[0] = '\0';
    for (int u = 0; u < 2; u++) {
        cordon_subject su = {.principals = subj[u], .n_principals = (size_t)u + 1};
        cordon_query q = {.text = "common odd", .k = 50};
        cordon_result *r = NULL;
        assert_int_equal(cordon_search(db, "notes", &su, &q, &r, NULL), 0);
        for (size_t i = 0; i < r->n_hits; i++) {
            size_t len = strlen(out);
            snprintf(out + len, cap - len, "%s %.6g;", r->hits[i].id, (double)r->hits[i].score);
        }
        cordon_result_free(r);
        for (int i = 0; i < 300; i += 11) {
            char id[16];
            cordon_record *rec = NULL;
            snprintf(id, sizeof id, "n%d", i);
            int rc = cordon_get(db, "notes", &su, id, &rec, NULL);
            size_t len = strlen(out);
            snprintf(out + len, cap - len, "%s:%d:%s;", id, rc, rc ? "" : rec->fields[0].value);
            cordon_record_free(rec);
        }
    }
}

/* The "notes" collection (text only): 300 chunks readable by group:a or group:b in turn, and
 * with passes 2, the first 100 written again (new rows, their groups shifted). */
static void notes_fill(cordon_t *db, int passes)
{
    const char *tf[] = {"body"};
    cordon_collection_spec spec = {
        .asserted_principals = 1, .name = "notes", .text_fields = tf, .n_text_fields = 1};
    assert_int_equal(cordon_collection_create(db, &spec, NULL), 0);
    for (int pass = 0; pass < passes; pass++) {
        static char ids[300][16], body[300][48];
        static cordon_field f[300];
        static cordon_chunk c[300];
        static const char *ga = "group:a", *gb = "group:b";
        size_t n = 0;
        for (int i = 0; i < (pass ? 100 : 300); i++, n++) {
            snprintf(ids[n], sizeof ids[n], "n%d", i);
            snprintf(body[n], sizeof body[n], "common %s %s", i % 2 ? "odd" : "even",
                     pass ? "again" : "first");
            f[n] = (cordon_field){"body", body[n]};
            c[n] = (cordon_chunk){.id = ids[n],
                                  .fields = &f[n],
                                  .n_fields = 1,
                                  .allowed = (i + pass) % 3 ? &ga : &gb,
                                  .n_allowed = 1};
        }
        assert_int_equal(cordon_put(db, "notes", c, n, NULL, NULL), 0);
    }
}

/* Rows written with their groups interleaved and none dead are still renumbered, into runs by
 * ACL (acl_order_rows): every answer the same, before and after a reopen; once in that order,
 * a compaction has nothing to do. */
static void test_compact_orders_rows_without_gaps(void **state)
{
    (void)state;
    char dir[256];
    cordon_t *db = NULL;
    cordon_compact_stats st;
    api_db_open(dir, sizeof dir, &db);
    notes_fill(db, 1);
    text_answers(db, before, sizeof before);
    assert_int_equal(cordon_collection_compact(db, "notes", &st, NULL), 0);
    assert_int_equal(st.compacted, 1);
    assert_int_equal(st.rows_before, 300);
    assert_int_equal(st.rows_after, 300);
    text_answers(db, after, sizeof after);
    assert_string_equal(before, after);
    assert_int_equal(file_gens(dir), 1u << 1);
    api_db_reopen(dir, &db);
    text_answers(db, after, sizeof after);
    assert_string_equal(before, after);
    assert_int_equal(cordon_collection_compact(db, "notes", &st, NULL), 0);
    assert_int_equal(st.compacted, 0);
    assert_int_equal(file_gens(dir), 1u << 1);
    api_db_close(dir, db);
}

/* A collection without vectors has rows too: its text index and records are renumbered. */
static void test_compact_a_collection_without_vectors(void **state)
{
    (void)state;
    char dir[256];
    cordon_t *db = NULL;
    api_db_open(dir, sizeof dir, &db);
    notes_fill(db, 2);
    const char *del[] = {"n3", "n11", "n150", "n299"};
    assert_int_equal(cordon_delete(db, "notes", del, 4, NULL, NULL, NULL), 0);
    text_answers(db, before, sizeof before);
    cordon_compact_stats st;
    assert_int_equal(cordon_collection_compact(db, "notes", &st, NULL), 0);
    assert_int_equal(st.rows_before, 400);
    assert_int_equal(st.rows_after, 296);
    text_answers(db, after, sizeof after);
    assert_string_equal(before, after);
    api_db_reopen(dir, &db);
    text_answers(db, after, sizeof after);
    assert_string_equal(before, after);
    api_db_close(dir, db);
}

/* Copies the files of directory from (and of its subdirectories) into to, which is created. */
static void copy_dir(const char *from, const char *to)
{
    DIR *d = opendir(from);
    struct dirent *de;
    assert_non_null(d);
    assert_int_equal(mkdir(to, 0700), 0);
    while ((de = readdir(d)) != NULL) {
        char src[512], dst[512];
        struct stat st;
        if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
            continue;
        snprintf(src, sizeof src, "%s/%s", from, de->d_name);
        snprintf(dst, sizeof dst, "%s/%s", to, de->d_name);
        assert_int_equal(stat(src, &st), 0);
        if (S_ISDIR(st.st_mode)) {
            copy_dir(src, dst);
            continue;
        }
        int in = open(src, O_RDONLY), out = open(dst, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        assert_true(in >= 0 && out >= 0);
        char buf[1 << 16];
        ssize_t got;
        while ((got = read(in, buf, sizeof buf)) > 0)
            assert_int_equal(write(out, buf, (size_t)got), got);
        assert_int_equal(got, 0);
        close(in);
        close(out);
    }
    closedir(d);
}

/* Forks a process that opens dir and compacts "docs"; kills it delay_us after the compaction
 * began (never, when negative). Returns its wait status; *span_us (if not NULL) the time from
 * the compaction's start to the process's end. */
static int compact_in_child(const char *dir, long delay_us, long *span_us)
{
    int pfd[2];
    assert_int_equal(pipe(pfd), 0);
    fflush(NULL);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        cordon_t *cdb = NULL;
        close(pfd[0]);
        if (cordon_open(dir, NULL, &cdb, NULL) || write(pfd[1], "c", 1) != 1 ||
            cordon_collection_compact(cdb, "docs", NULL, NULL))
            _exit(3);
        _exit(0); /* no close: the compaction's commit is what must last */
    }
    close(pfd[1]);
    char c;
    struct timespec t0, t1;
    ssize_t got = read(pfd[0], &c, 1); /* the open is done: the compaction begins */
    close(pfd[0]);
    clock_gettime(CLOCK_MONOTONIC, &t0);
    if (got == 1 && delay_us >= 0) {
        usleep((useconds_t)delay_us);
        kill(pid, SIGKILL);
    }
    int status;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    if (span_us)
        *span_us = (t1.tv_sec - t0.tv_sec) * 1000000L + (t1.tv_nsec - t0.tv_nsec) / 1000;
    return status;
}

/* SIGKILL at random moments of a compaction (spread over the time one takes, from its start
 * to its process's end), then a reopen: the collection is
 * exactly as before (generation 0's files, every dead row) or exactly as after (generation 1's,
 * the live rows), every answer the same, no database copy left. CORDON_COMPACT_KILL_TRIALS sets
 * the trials (6 by default; a failure prints its seed). */
static void test_compact_survives_kills_at_random_moments(void **state)
{
    (void)state;
    char tmpl[200], dir[256];
    cordon_t *db = NULL;
    const char *env = getenv("CORDON_COMPACT_KILL_TRIALS");
    int trials = env ? atoi(env) : 6, outcome[2] = {0, 0}, killed = 0, copying = 0;
    uint64_t seed = 0x6b696c6cu;
    make_vectors();
    api_db_open(tmpl, sizeof tmpl, &db);
    fill(db);
    uint64_t rows0 = rows_of(db);
    answers(db, before, sizeof before);
    cordon_close(db);
    /* How long a compaction takes here: the kills are spread over it. */
    snprintf(dir, sizeof dir, "%s-t", tmpl);
    copy_dir(tmpl, dir);
    long span_us = 0;
    int status = compact_in_child(dir, -1, &span_us);
    assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    tu_rmrf(dir);
    for (int t = 0; t < trials; t++) {
        uint64_t trial_seed = seed + (uint64_t)t;
        long delay = (long)(tu_rand(&trial_seed) % (uint64_t)(span_us + 1));
        copy_dir(tmpl, dir);
        status = compact_in_child(dir, delay, NULL);
        if (WIFSIGNALED(status))
            killed++;
        else
            assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
        char left[400];
        snprintf(left, sizeof left, "%s/" STORE_COMPACT_TMP, dir);
        copying += access(left, F_OK) == 0; /* killed while the database file was copied */
        assert_int_equal(cordon_open(dir, NULL, &db, NULL), 0);
        uint64_t rows = rows_of(db);
        unsigned gens = file_gens(dir);
        if (!((rows == rows0 && gens == 1u) || (rows == (uint64_t)live_count() && gens == 2u)))
            fail_msg("trial %d (kill after %ld us): %llu rows, generations %#x", t, delay,
                     (unsigned long long)rows, gens);
        outcome[gens == 2u]++;
        assert_int_equal(access(left, F_OK), -1);
        answers(db, after, sizeof after);
        if (strcmp(before, after))
            fail_msg("trial %d (kill after %ld us): the answers changed", t, delay);
        api_db_close(dir, db);
    }
    tu_rmrf(tmpl);
    print_message("compact: %d kills at random moments (of %d trials, %ld us each), %d while "
                  "the database file was copied; %d found as before, %d as after\n",
                  killed, trials, span_us, copying, outcome[0], outcome[1]);
    assert_true(trials == 0 || killed > 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_compact_keeps_every_answer),
        cmocka_unit_test(test_compact_survives_a_kill_before_its_commit),
        cmocka_unit_test(test_compact_survives_a_kill_after_its_commit),
        cmocka_unit_test(test_compact_survives_kills_at_random_moments),
        cmocka_unit_test(test_compact_under_allocation_failures),
        cmocka_unit_test(test_compact_a_collection_without_vectors),
        cmocka_unit_test(test_compact_orders_rows_without_gaps),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
