/* test_vector_codes.c: collections get 8-bit and 1-bit codes by default from
 * CORDON_CODES_MIN_DIM dimensions up (int8_scan 0), keep them at any dimension with 1 and never
 * with -1; a collection searching on codes leaves its float rows in the vector file after an
 * open (not resident in the process, read only to re-score), while one without codes maps them
 * all; and both answer an exact search with the same hits and distances.
 * Relies on cmocka and /proc/self/smaps (the resident bytes of each file mapping). */
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <cmocka.h>

#include "cordon.h"
#include "testutil.h"

enum { DIM = 128, ROWS = 20000, QUERIES = 12 };

static void create(cordon_t *db, const char *name, uint32_t dim, int int8_scan, int want_rc)
{
    cordon_collection_spec sp = {
        .name = name, .dim = dim, .int8_scan = int8_scan, .asserted_principals = 1};
    cordon_error e = {0};
    assert_int_equal(cordon_collection_create(db, &sp, &e), want_rc);
}

static int has_codes(cordon_t *db, const char *name)
{
    cordon_collection_info ci;
    assert_int_equal(cordon_collection_info_get(db, name, &ci, NULL), 0);
    return ci.int8_scan;
}

static void test_codes_by_default_from_128_dimensions(void **state)
{
    (void)state;
    char dir[256];
    cordon_t *db = NULL;
    assert_non_null(tu_tmpdir(dir, sizeof dir));
    assert_int_equal(cordon_open(dir, NULL, &db, NULL), 0);
    create(db, "d384", 384, 0, CORDON_OK);
    create(db, "d128", CORDON_CODES_MIN_DIM, 0, CORDON_OK);
    create(db, "d127", CORDON_CODES_MIN_DIM - 1, 0, CORDON_OK);
    create(db, "d384-off", 384, -1, CORDON_OK);
    create(db, "d16-on", 16, 1, CORDON_OK);
    create(db, "text-on", 0, 1, CORDON_OK);
    create(db, "bad", 384, 2, CORDON_ERR_INVALID);
    create(db, "bad2", 384, -2, CORDON_ERR_INVALID);
    assert_int_equal(has_codes(db, "d384"), 1);
    assert_int_equal(has_codes(db, "d128"), 1);
    assert_int_equal(has_codes(db, "d127"), 0);
    assert_int_equal(has_codes(db, "d384-off"), 0);
    assert_int_equal(has_codes(db, "d16-on"), 1);
    assert_int_equal(has_codes(db, "text-on"), 0);
    /* The choice is stored with the collection: a reopen keeps it. */
    cordon_close(db);
    assert_int_equal(cordon_open(dir, NULL, &db, NULL), 0);
    assert_int_equal(has_codes(db, "d384"), 1);
    assert_int_equal(has_codes(db, "d384-off"), 0);
    assert_int_equal(has_codes(db, "d16-on"), 1);
    cordon_close(db);
    tu_rmrf(dir);
}

/* Resident kB of the mapping of `file` (which names it in /proc/self/smaps). */
static long resident_kb(const char *file)
{
    return tu_smaps_kb("Rss:", 0, 0, file);
}

static float vecs[ROWS][DIM];

static void fill(cordon_t *db, const char *name)
{
    static char ids[ROWS][16];
    static cordon_chunk c[ROWS];
    const char *all = "group:all";
    for (int i = 0; i < ROWS; i++) {
        snprintf(ids[i], sizeof ids[i], "c%d", i);
        c[i] = (cordon_chunk){.id = ids[i], .vector = vecs[i], .allowed = &all, .n_allowed = 1};
    }
    assert_int_equal(cordon_put(db, name, c, ROWS, NULL, NULL), 0);
}

static void test_float_rows_stay_in_the_file_of_a_collection_with_codes(void **state)
{
    (void)state;
    char dir[256], coded_vec[300], float_vec[300];
    cordon_t *db = NULL;
    uint64_t s = 11;
    assert_non_null(tu_tmpdir(dir, sizeof dir));
    for (int i = 0; i < ROWS; i++) /* clusters, as embeddings have */
        for (int d = 0; d < DIM; d++)
            vecs[i][d] = (float)((i % 37) == d % 37) + (float)(tu_rand(&s) % 1000) / 4000.0f;
    assert_int_equal(cordon_open(dir, NULL, &db, NULL), 0);
    create(db, "coded", DIM, 0, CORDON_OK);   /* file coll-0.vec */
    create(db, "floats", DIM, -1, CORDON_OK); /* file coll-1.vec */
    fill(db, "coded");
    fill(db, "floats");
    cordon_close(db);
    snprintf(coded_vec, sizeof coded_vec, "%s/coll-0.vec", dir);
    snprintf(float_vec, sizeof float_vec, "%s/coll-1.vec", dir);
    assert_int_equal(cordon_open(dir, NULL, &db, NULL), 0);
    long rows_kb = (long)ROWS * DIM * 4 / 1024;
    long coded_kb = resident_kb(coded_vec), float_kb = resident_kb(float_vec);
    /* The float collection's rows are all paged in, the coded one's none (the page holding
     * the header at most). */
    assert_true(float_kb >= rows_kb * 9 / 10);
    assert_true(coded_kb <= 8);

    /* The same exact answers from both; the coded collection reads only the rows it
     * re-scores. */
    const char *all = "group:all";
    cordon_subject subj = {.principals = &all, .n_principals = 1};
    for (int q = 0; q < QUERIES; q++) {
        float query[DIM];
        for (int d = 0; d < DIM; d++)
            query[d] = vecs[q * 97][d] + (float)(tu_rand(&s) % 100) / 1000.0f;
        cordon_query qq = {.vector = query, .k = 10, .strategy = CORDON_STRATEGY_EXACT};
        cordon_result *a = NULL, *b = NULL;
        assert_int_equal(cordon_search(db, "coded", &subj, &qq, &a, NULL), 0);
        assert_int_equal(cordon_search(db, "floats", &subj, &qq, &b, NULL), 0);
        assert_int_equal(a->n_hits, 10);
        assert_int_equal(b->n_hits, 10);
        assert_true(a->complete && b->complete);
        for (size_t i = 0; i < a->n_hits; i++) {
            assert_string_equal(a->hits[i].id, b->hits[i].id);
            assert_true(a->hits[i].score == b->hits[i].score);
        }
        cordon_result_free(a);
        cordon_result_free(b);
        qq.strategy = CORDON_STRATEGY_AUTO; /* a graph traversal on the codes */
        assert_int_equal(cordon_search(db, "coded", &subj, &qq, &a, NULL), 0);
        assert_int_equal(a->n_hits, 10);
        cordon_result_free(a);
    }
    cordon_close(db);
    tu_rmrf(dir);
}

/* The pages of path in the page cache (mincore of a mapping of our own), -1 if unknown. */
static long cached_pages(const char *path)
{
    int fd = open(path, O_RDONLY);
    struct stat st;
    long n = -1;
    if (fd >= 0 && fstat(fd, &st) == 0 && st.st_size > 0) {
        size_t page = (size_t)sysconf(_SC_PAGESIZE), np = ((size_t)st.st_size + page - 1) / page;
        unsigned char *vec = malloc(np);
        void *m = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_SHARED, fd, 0);
        if (vec && m != MAP_FAILED && mincore(m, (size_t)st.st_size, vec) == 0)
            for (size_t i = n = 0; i < np; i++)
                n += vec[i] & 1;
        if (m != MAP_FAILED)
            munmap(m, (size_t)st.st_size);
        free(vec);
    }
    if (fd >= 0)
        close(fd);
    return n;
}

/* Cold, as after a restart of the machine: a search brings in the pages of the rows it
 * re-scores, not their neighbours (no read-ahead), so a few searches leave the rows' file
 * mostly out of the process and out of the page cache. */
static void test_a_cold_search_reads_only_the_rows_it_rescores(void **state)
{
    (void)state;
    char dir[256], vec[300];
    cordon_t *db = NULL;
    uint64_t s = 5;
    assert_non_null(tu_tmpdir(dir, sizeof dir));
    for (int i = 0; i < ROWS; i++)
        for (int d = 0; d < DIM; d++)
            vecs[i][d] = tu_randf(&s) - 0.5f;
    assert_int_equal(cordon_open(dir, NULL, &db, NULL), 0);
    create(db, "coded", DIM, 0, CORDON_OK);
    fill(db, "coded");
    cordon_close(db);
    snprintf(vec, sizeof vec, "%s/coll-0.vec", dir);
    assert_int_equal(cordon_open(dir, NULL, &db, NULL), 0);
    int fd = open(vec, O_RDONLY);
    assert_true(fd >= 0);
    assert_int_equal(posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED), 0);
    close(fd);
    long file_pages = (long)ROWS * DIM * 4 / sysconf(_SC_PAGESIZE);
    if (cached_pages(vec) > file_pages / 10) { /* tmpfs keeps its pages */
        cordon_close(db);
        tu_rmrf(dir);
        skip();
    }
    const char *all = "group:all";
    cordon_subject subj = {.principals = &all, .n_principals = 1};
    for (int q = 0; q < 3; q++) {
        cordon_query qq = {.vector = vecs[q * 101], .k = 10, .strategy = CORDON_STRATEGY_EXACT};
        cordon_result *a = NULL;
        assert_int_equal(cordon_search(db, "coded", &subj, &qq, &a, NULL), 0);
        assert_int_equal(a->n_hits, 10);
        char want[16];
        snprintf(want, sizeof want, "c%d", q * 101); /* a stored row is its own nearest */
        assert_string_equal(a->hits[0].id, want);
        cordon_result_free(a);
    }
    long resident = resident_kb(vec) * 1024 / sysconf(_SC_PAGESIZE), cached = cached_pages(vec);
    /* Three searches re-score some tens of rows each: a page a row at most. */
    assert_true(resident <= 400);
    assert_true(cached <= 400);
    assert_true(file_pages > 2000);
    cordon_close(db);
    tu_rmrf(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_codes_by_default_from_128_dimensions),
        cmocka_unit_test(test_float_rows_stay_in_the_file_of_a_collection_with_codes),
        cmocka_unit_test(test_a_cold_search_reads_only_the_rows_it_rescores),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
