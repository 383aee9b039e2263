/* test_planner.c: every vector strategy under permission filters of every size: no leaks,
 * `complete` only when the hits are the true top-k, recall of `auto`, the plan chosen, and the
 * graph kept right across reopen, a lost checkpoint and a corrupt one.
 * Relies on the public API; the exact-scan threshold is lowered so graph plans run. */
#include <dirent.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/wait.h>
#include <cmocka.h>

#include "cordon.h"
#include "testutil.h"

#define DIM 16
#define N 6000
#define TEAMS 200
#define CLUSTERS 30

typedef struct fx {
    char dir[64];
    cordon_t *db;
    float v[N][DIM];
    int team[N];
} fx_t;

static const cordon_options opts = {.plan_exact_floats = 100 * DIM}; /* exact below 100 rows */

static int setup(void **state)
{
    fx_t *f = calloc(1, sizeof *f);
    float centre[CLUSTERS][DIM];
    uint64_t seed = 5;
    static char ids[N][16], tn[N][16];
    static const char *acl[N][2];
    static cordon_chunk ch[N];
    cordon_collection_spec spec = {
        .asserted_principals = 1, .name = "v", .dim = DIM, .metric = CORDON_METRIC_L2};
    for (int c = 0; c < CLUSTERS; c++)
        for (int d = 0; d < DIM; d++)
            centre[c][d] = tu_randf(&seed) * 10;
    for (int i = 0; i < N; i++) {
        int c = (int)(tu_rand(&seed) % CLUSTERS);
        for (int d = 0; d < DIM; d++)
            f->v[i][d] = centre[c][d] + tu_randf(&seed) - 0.5f;
        f->team[i] = (int)(tu_rand(&seed) % TEAMS);
        snprintf(ids[i], sizeof ids[i], "r%d", i);
        snprintf(tn[i], sizeof tn[i], "t%d", f->team[i]);
        acl[i][0] = tn[i];
        acl[i][1] = "everyone";
        ch[i] = (cordon_chunk){.id = ids[i], .vector = f->v[i], .allowed = acl[i], .n_allowed = 2};
    }
    assert_non_null(tu_tmpdir(f->dir, sizeof f->dir));
    assert_int_equal(cordon_open(f->dir, &opts, &f->db, NULL), 0);
    assert_int_equal(cordon_collection_create(f->db, &spec, NULL), 0);
    for (int i = 0; i < N; i += 1000)
        assert_int_equal(cordon_put(f->db, "v", ch + i, 1000, NULL, NULL), 0);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fx_t *f = *state;
    cordon_close(f->db);
    tu_rmrf(f->dir);
    free(f);
    return 0;
}

static float l2(const float *a, const float *b)
{
    float s = 0;
    for (int d = 0; d < DIM; d++)
        s += (a[d] - b[d]) * (a[d] - b[d]);
    return s;
}

/* Runs queries on collection coll as a subject holding `nteams` teams (or everyone) with a
 * strategy; checks leaks and completeness; returns recall@10 against brute force. */
static double run_in(fx_t *f, const char *coll, int nteams, cordon_strategy strat,
                     const char *want_plan)
{
    uint64_t seed = 77 + (uint64_t)nteams;
    char names[TEAMS][16];
    const char *p[TEAMS];
    int holds[TEAMS] = {0};
    size_t np = 0, found = 0, total = 0;
    if (nteams < 0) {
        p[np++] = "group:everyone";
        for (int t = 0; t < TEAMS; t++)
            holds[t] = 1;
    }
    for (int t = 0; t < nteams; t++) {
        int x = (int)(tu_rand(&seed) % TEAMS);
        holds[x] = 1;
        snprintf(names[np], 16, "t%d", x);
        p[np] = names[np];
        np++;
    }
    for (int qi = 0; qi < 25; qi++) {
        float q[DIM];
        int src = (int)(tu_rand(&seed) % N);
        for (int d = 0; d < DIM; d++)
            q[d] = f->v[src][d] + tu_randf(&seed) * 0.2f;
        cordon_subject s = {.principals = p, .n_principals = np};
        cordon_query cq = {.vector = q, .k = 10, .strategy = strat};
        cordon_result *r;
        assert_int_equal(cordon_search(f->db, coll, &s, &cq, &r, NULL), 0);
        if (want_plan)
            assert_string_equal(r->plan, want_plan);
        int best[10], nb = 0;
        for (int i = 0; i < N; i++) { /* reference top-10 by insertion */
            if (!holds[f->team[i]])
                continue;
            int pos = nb < 10 ? nb++ : 10;
            while (pos > 0 && l2(f->v[best[pos - 1]], q) > l2(f->v[i], q)) {
                if (pos < 10)
                    best[pos] = best[pos - 1];
                pos--;
            }
            if (pos < 10)
                best[pos] = i;
        }
        for (size_t h = 0; h < r->n_hits; h++) {
            int i = tu_num(r->hits[h].id + 1);
            assert_true(holds[f->team[i]]); /* no leak, whatever the strategy */
            for (int b = 0; b < nb; b++)
                found += best[b] == i;
        }
        if (r->complete) { /* complete means exactly the true top-k */
            assert_int_equal(r->n_hits, nb);
            for (size_t h = 0; h < r->n_hits; h++)
                assert_true(fabsf(l2(f->v[tu_num(r->hits[h].id + 1)], q) - l2(f->v[best[h]], q)) <
                            1e-4f);
        }
        total += (size_t)nb;
        cordon_result_free(r);
    }
    return total ? (double)found / (double)total : 1.0;
}

static double run(fx_t *f, int nteams, cordon_strategy strat, const char *want_plan)
{
    return run_in(f, "v", nteams, strat, want_plan);
}

static void test_every_strategy_at_every_share_leaks_nothing(void **state)
{
    fx_t *f = *state;
    int shares[] = {1, 10, 60, -1}; /* 0.5%, 5%, 30%, 100% */
    cordon_strategy strats[] = {CORDON_STRATEGY_AUTO, CORDON_STRATEGY_EXACT,
                                CORDON_STRATEGY_PREFILTER, CORDON_STRATEGY_POSTFILTER};
    for (size_t s = 0; s < 4; s++)
        for (size_t i = 0; i < 4; i++)
            run(f, shares[s], strats[i], NULL);
}

static void test_auto_picks_plans_by_readable_size_and_keeps_recall(void **state)
{
    fx_t *f = *state;
    assert_true(run(f, 1, CORDON_STRATEGY_AUTO, "exact") == 1.0);
    assert_true(run(f, 10, CORDON_STRATEGY_AUTO, NULL) >= 0.97);
    /* About 26% readable: the unfiltered pool of 2k / share finds k readable hits. */
    assert_true(run(f, 60, CORDON_STRATEGY_AUTO, "hnsw-unfiltered") >= 0.97);
    assert_true(run(f, -1, CORDON_STRATEGY_AUTO, "hnsw-unfiltered") >= 0.97);
    assert_true(run(f, 10, CORDON_STRATEGY_EXACT, "exact") == 1.0);
}

static void test_int8_codes_give_the_same_exact_results(void **state)
{
    fx_t *f = *state;
    static cordon_chunk ch[N];
    static char ids[N][16];
    const char *every[] = {"everyone"};
    cordon_collection_spec spec = {.asserted_principals = 1,
                                   .name = "q",
                                   .dim = DIM,
                                   .metric = CORDON_METRIC_L2,
                                   .int8_scan = 1};
    assert_int_equal(cordon_collection_create(f->db, &spec, NULL), 0);
    for (int i = 0; i < N; i++) {
        snprintf(ids[i], sizeof ids[i], "r%d", i);
        ch[i] = (cordon_chunk){.id = ids[i], .vector = f->v[i], .allowed = every, .n_allowed = 1};
    }
    /* Small batches first (below the training size), then the rest: codes follow the rows. */
    assert_int_equal(cordon_put(f->db, "q", ch, 500, NULL, NULL), 0);
    assert_int_equal(cordon_put(f->db, "q", ch + 500, N - 500, NULL, NULL), 0);
    char q8[128];
    snprintf(q8, sizeof q8, "%s/coll-1.q8", f->dir);
    /* Passes: codes encoded as rows arrive; codes read from the file written at close; codes
     * re-encoded because the file was damaged. */
    for (int pass = 0; pass < 3; pass++) {
        uint64_t seed = 9;
        for (int qi = 0; qi < 20; qi++) {
            float q[DIM];
            for (int d = 0; d < DIM; d++)
                q[d] = tu_randf(&seed) * 10;
            cordon_subject s = {.principals = every, .n_principals = 1};
            cordon_query cq = {.vector = q, .k = 10, .strategy = CORDON_STRATEGY_EXACT};
            cordon_result *a, *b;
            assert_int_equal(cordon_search(f->db, "q", &s, &cq, &a, NULL), 0);
            assert_int_equal(cordon_search(f->db, "v", &s, &cq, &b, NULL), 0);
            assert_true(a->complete);
            assert_int_equal(a->n_hits, b->n_hits);
            for (size_t h = 0; h < a->n_hits; h++) {
                assert_string_equal(a->hits[h].id, b->hits[h].id);
                assert_true(a->hits[h].score == b->hits[h].score);
            }
            cordon_result_free(a);
            cordon_result_free(b);
        }
        cordon_close(f->db); /* writes the codes file */
        assert_int_equal(access(q8, R_OK), 0);
        if (pass == 1) {
            FILE *fp = fopen(q8, "r+b");
            assert_non_null(fp);
            fseek(fp, 300, SEEK_SET);
            fputs("garbage", fp);
            fclose(fp);
        }
        assert_int_equal(cordon_open(f->dir, &opts, &f->db, NULL), 0);
    }
}

/* With 8-bit codes the collection also keeps 1-bit codes, and auto scans them for readable
 * sets above the exact budget and below the pool-first share: every hit readable, never
 * complete (the 1-bit interval is probabilistic), the true top-10 found; after a reopen too. */
static void test_large_readable_sets_get_the_bit_scan(void **state)
{
    fx_t *f = *state;
    static cordon_chunk ch[N];
    static char ids[N][16], tn[N][16];
    static const char *acl[N][2];
    cordon_collection_spec spec = {.asserted_principals = 1,
                                   .name = "b",
                                   .dim = DIM,
                                   .metric = CORDON_METRIC_L2,
                                   .int8_scan = 1};
    assert_int_equal(cordon_collection_create(f->db, &spec, NULL), 0);
    for (int i = 0; i < N; i++) {
        snprintf(ids[i], sizeof ids[i], "r%d", i);
        snprintf(tn[i], sizeof tn[i], "t%d", f->team[i]);
        acl[i][0] = tn[i];
        acl[i][1] = "everyone";
        ch[i] = (cordon_chunk){.id = ids[i], .vector = f->v[i], .allowed = acl[i], .n_allowed = 2};
    }
    assert_int_equal(cordon_put(f->db, "b", ch, N, NULL, NULL), 0);
    for (int pass = 0; pass < 2; pass++) {
        assert_true(run_in(f, "b", 10, CORDON_STRATEGY_AUTO, "scan-1bit") >= 0.99); /* 5% */
        assert_true(run_in(f, "b", 5, CORDON_STRATEGY_AUTO, "scan-1bit") >= 0.99);  /* 2.5% */
        assert_true(run_in(f, "b", 10, CORDON_STRATEGY_EXACT, "exact") == 1.0);
        cordon_close(f->db); /* the codes file now holds the 1-bit codes too */
        assert_int_equal(cordon_open(f->dir, &opts, &f->db, NULL), 0);
    }
}

static void test_graph_is_right_after_reopen_loss_and_corruption(void **state)
{
    fx_t *f = *state;
    char path[128];
    double base = run(f, -1, CORDON_STRATEGY_PREFILTER, NULL);
    cordon_close(f->db); /* writes the checkpoint */
    snprintf(path, sizeof path, "%s/coll-0.hnsw", f->dir);
    assert_int_equal(access(path, R_OK), 0);
    assert_int_equal(cordon_open(f->dir, &opts, &f->db, NULL), 0);
    assert_true(run(f, -1, CORDON_STRATEGY_PREFILTER, NULL) == base);
    /* Rows written after the checkpoint, then a crash (no close): reopen catches up. */
    float far[DIM];
    for (int d = 0; d < DIM; d++)
        far[d] = 1000;
    const char *every[] = {"everyone"};
    cordon_close(f->db);
    pid_t pid = fork();
    if (pid == 0) { /* the writer dies without closing, so no checkpoint is written */
        cordon_t *db;
        cordon_chunk c = {.id = "late", .vector = far, .allowed = every, .n_allowed = 1};
        const char *gone[] = {"r0"};
        if (cordon_open(f->dir, &opts, &db, NULL) || cordon_put(db, "v", &c, 1, NULL, NULL) ||
            cordon_delete(db, "v", gone, 1, NULL, NULL, NULL))
            _exit(1);
        _exit(0);
    }
    int status;
    waitpid(pid, &status, 0);
    assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    assert_int_equal(cordon_open(f->dir, &opts, &f->db, NULL), 0);
    cordon_subject s = {.principals = every, .n_principals = 1};
    cordon_query q = {.vector = far, .k = 1, .strategy = CORDON_STRATEGY_PREFILTER};
    cordon_result *r;
    assert_int_equal(cordon_search(f->db, "v", &s, &q, &r, NULL), 0);
    assert_string_equal(r->hits[0].id, "late");
    cordon_result_free(r);
    q.vector = f->v[0];
    assert_int_equal(cordon_search(f->db, "v", &s, &q, &r, NULL), 0);
    assert_string_not_equal(r->hits[0].id, "r0");
    cordon_result_free(r);
    cordon_close(f->db);
    /* A corrupt checkpoint is rebuilt from the rows. */
    FILE *fp = fopen(path, "r+b");
    assert_non_null(fp);
    fseek(fp, 100, SEEK_SET);
    fputs("garbage garbage garbage", fp);
    fclose(fp);
    assert_int_equal(cordon_open(f->dir, &opts, &f->db, NULL), 0);
    assert_true(run(f, -1, CORDON_STRATEGY_PREFILTER, NULL) >= 0.95);
}

/* Counts files of the data directory whose names end in suffix; the last one goes to path. */
static int count_suffix(const char *dir, const char *suffix, char *path, size_t size)
{
    DIR *d = opendir(dir);
    struct dirent *de;
    int n = 0;
    assert_non_null(d);
    while ((de = readdir(d)) != NULL) {
        size_t l = strlen(de->d_name), ls = strlen(suffix);
        if (l > ls && !strcmp(de->d_name + l - ls, suffix)) {
            n++;
            snprintf(path, size, "%s/%s", dir, de->d_name);
        }
    }
    closedir(d);
    return n;
}

/* Collections of 20,000 live rows and more get their recall measured when the graph is
 * checkpointed (at close), one file each; dropping a collection removes its file. */
static void test_checkpoint_measures_recall_and_drop_removes_it(void **state)
{
    fx_t *f = *state;
    enum { CN = 20000, CD = 8 };
    static float v[CN][CD];
    static char ids[CN][16];
    static cordon_chunk ch[CN];
    static const char *acl[1] = {"everyone"};
    uint64_t seed = 11;
    cordon_collection_spec open_ef = {.asserted_principals = 1,
                                      .name = "cal",
                                      .dim = CD,
                                      .metric = CORDON_METRIC_L2,
                                      .hnsw_ef_construction = 40};
    for (int i = 0; i < CN; i++) {
        for (int d = 0; d < CD; d++)
            v[i][d] = tu_randf(&seed);
        snprintf(ids[i], sizeof ids[i], "c%d", i);
        ch[i] = (cordon_chunk){.id = ids[i], .vector = v[i], .allowed = acl, .n_allowed = 1};
    }
    assert_int_equal(cordon_collection_create(f->db, &open_ef, NULL), 0);
    assert_int_equal(cordon_put(f->db, "cal", ch, CN, NULL, NULL), 0);
    cordon_close(f->db);
    char path[512], line[160];
    assert_int_equal(count_suffix(f->dir, ".efauto", path, sizeof path), 1);
    FILE *fp = fopen(path, "r");
    assert_non_null(fp);
    assert_non_null(fgets(line, sizeof line, fp));
    fclose(fp);
    unsigned rows = 0, ef = 0, nq = 0;
    unsigned efq = 0, efd = 0, dense = 9, efp = 9999;
    double recall = 0, d10 = 0, recallq = 0, recalld = 0, recallp = 0;
    assert_int_equal(sscanf(line,
                            "cordon-efauto 6 rows %u ef %u recall %lf queries %u d10 %lf efq %u "
                            "recallq %lf efd %u recalld %lf dense %u efp %u recallp %lf",
                            &rows, &ef, &recall, &nq, &d10, &efq, &recallq, &efd, &recalld, &dense,
                            &efp, &recallp),
                     12);
    assert_true(dense <= 1);
    assert_true(efd >= 16 && efd <= 512);
    assert_true(recalld >= 0.99 || efd == 512);
    assert_true(d10 > 0);
    assert_true(efq >= 64 && efq <= 512); /* the filtered breadth keeps the default's floor */
    assert_true(recallq >= 0.99 || efq == 512);
    assert_int_equal(rows, CN);
    assert_true(ef >= 16 && ef <= 512);
    assert_true(recall >= 0.99 || ef == 512);
    assert_true(efp == 0 || (efp >= ef && efp <= 512 && recallp >= 0.997));
    assert_int_equal(nq, 256); /* small rows: the most a calibration asks (coll.h) */
    assert_int_equal(cordon_open(f->dir, &opts, &f->db, NULL), 0);
    assert_int_equal(cordon_collection_drop(f->db, "cal", NULL), 0);
    assert_int_equal(count_suffix(f->dir, ".efauto", path, sizeof path), 0);
}

/* A subject whose readable rows all lie far from the query (their documents are about other
 * things) gets the exact scan once the collection is calibrated ("exact-far"): complete, and
 * exactly the brute force's top 10 of those rows. A subject reading rows around the query
 * keeps the graph. */
static void test_far_readable_rows_are_answered_by_the_exact_scan(void **state)
{
    fx_t *f = *state;
    /* 15% far rows: the unfiltered pool tried first for such shares finds none of them near
     * the query, and the filtered plan (then the exact scan) answers. */
    enum { CN = 20000, CD = 8, NFAR = 3000 };
    static float v[CN][CD];
    static char ids[CN][16];
    static cordon_chunk ch[CN];
    static const char *near_acl[1] = {"near"}, *far_acl[1] = {"far"};
    uint64_t seed = 23;
    cordon_collection_spec spec = {.asserted_principals = 1,
                                   .name = "two",
                                   .dim = CD,
                                   .metric = CORDON_METRIC_L2,
                                   .hnsw_ef_construction = 40};
    for (int i = 0; i < CN; i++) {
        for (int d = 0; d < CD; d++)
            v[i][d] = tu_randf(&seed) + (i < NFAR ? 20.0f : 0.0f);
        snprintf(ids[i], sizeof ids[i], "t%d", i);
        ch[i] = (cordon_chunk){
            .id = ids[i], .vector = v[i], .allowed = i < NFAR ? far_acl : near_acl, .n_allowed = 1};
    }
    assert_int_equal(cordon_collection_create(f->db, &spec, NULL), 0);
    assert_int_equal(cordon_put(f->db, "two", ch, CN, NULL, NULL), 0);
    cordon_close(f->db); /* the checkpoint calibrates */
    assert_int_equal(cordon_open(f->dir, &opts, &f->db, NULL), 0);
    float q[CD];
    for (int d = 0; d < CD; d++)
        q[d] = tu_randf(&seed);
    const char *far_p[1] = {"far"}, *near_p[1] = {"near"};
    cordon_subject far_s = {.principals = far_p, .n_principals = 1};
    cordon_subject near_s = {.principals = near_p, .n_principals = 1};
    cordon_query qq = {.vector = q, .k = 10};
    cordon_result *r;
    assert_int_equal(cordon_search(f->db, "two", &far_s, &qq, &r, NULL), 0);
    assert_string_equal(r->plan, "exact-far");
    assert_true(r->complete);
    assert_int_equal(r->n_hits, 10);
    float best[10]; /* the 10 nearest far rows' distances, by brute force */
    for (int j = 0; j < 10; j++)
        best[j] = INFINITY;
    for (int i = 0; i < NFAR; i++) {
        float d = 0;
        for (int k = 0; k < CD; k++)
            d += (q[k] - v[i][k]) * (q[k] - v[i][k]);
        for (int j = 0; j < 10; j++)
            if (d < best[j]) {
                for (int m = 9; m > j; m--)
                    best[m] = best[m - 1];
                best[j] = d;
                break;
            }
    }
    for (size_t h = 0; h < r->n_hits; h++) {
        int row = (int)strtol(r->hits[h].id + 1, NULL, 10);
        assert_true(row < NFAR);
        float d = 0;
        for (int k = 0; k < CD; k++)
            d += (q[k] - v[row][k]) * (q[k] - v[row][k]);
        assert_true(d <= best[9]);
    }
    cordon_result_free(r);
    assert_int_equal(cordon_search(f->db, "two", &near_s, &qq, &r, NULL), 0);
    assert_string_not_equal(r->plan, "exact-far");
    cordon_result_free(r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_every_strategy_at_every_share_leaks_nothing, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_auto_picks_plans_by_readable_size_and_keeps_recall,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(test_graph_is_right_after_reopen_loss_and_corruption, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_checkpoint_measures_recall_and_drop_removes_it, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_far_readable_rows_are_answered_by_the_exact_scan,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(test_int8_codes_give_the_same_exact_results, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_large_readable_sets_get_the_bit_scan, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
