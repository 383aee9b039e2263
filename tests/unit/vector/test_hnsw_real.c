/* test_hnsw_real.c: HNSW recall on real 512-d sentence vectors (SciFact, USE-lite), unfiltered
 * and under random permission sets. Relies on cmocka and CORDON_SHARED_DATA (skips without). */
/* cmocka.h needs these four first. */
// clang-format off
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
// clang-format on

#include "base/err.h"
#include "unit/vector/hnsw_testutil.h"

#define K 10
#define NQ 150

typedef struct fixture {
    float *docs, *queries;
    uint32_t n_docs, n_queries, dim;
    vec_view_t view;
    hnsw_t *h;
} fixture_t;

/* Reads an fvecs file (int32 dim, then dim floats, per row); NULL when absent or malformed. */
static float *read_fvecs(const char *path, uint32_t *rows, uint32_t *dim)
{
    FILE *fp = fopen(path, "rb");
    if (!fp)
        return NULL;
    int32_t d = 0;
    float *v = NULL;
    if (fread(&d, 4, 1, fp) == 1 && d > 0 && d <= 4096 && !fseek(fp, 0, SEEK_END)) {
        long size = ftell(fp);
        long row = 4 + 4L * d;
        uint32_t n = (uint32_t)(size / row);
        v = size % row == 0 ? malloc(sizeof(float) * (size_t)n * (size_t)d) : NULL;
        rewind(fp);
        for (uint32_t i = 0; v && i < n; i++) {
            int32_t dd;
            if (fread(&dd, 4, 1, fp) != 1 || dd != d ||
                fread(v + (size_t)i * d, 4, (size_t)d, fp) != (size_t)d) {
                free(v);
                v = NULL;
            }
        }
        *rows = n;
        *dim = (uint32_t)d;
    }
    fclose(fp);
    return v;
}

static int setup(void **state)
{
    const char *root = getenv("CORDON_SHARED_DATA");
    char p[1024];
    fixture_t *f = calloc(1, sizeof(*f));
    *state = f;
    snprintf(p, sizeof p, "%s/scifact/use-lite/corpus.fvecs", root ? root : "../shared/data");
    f->docs = read_fvecs(p, &f->n_docs, &f->dim);
    snprintf(p, sizeof p, "%s/scifact/use-lite/queries.fvecs", root ? root : "../shared/data");
    uint32_t qdim = 0;
    f->queries = read_fvecs(p, &f->n_queries, &qdim);
    if (!f->docs || !f->queries || qdim != f->dim) {
        printf("SKIP: SciFact use-lite vectors not found under %s/scifact/use-lite "
               "(set CORDON_SHARED_DATA)\n",
               root ? root : "../shared/data");
        return 0;
    }
    f->view = (vec_view_t){f->docs, f->dim, f->dim, f->n_docs};
    return tu_build_graph(&f->view, VEC_METRIC_COSINE, 100, 2, &f->h);
}

static int teardown(void **state)
{
    fixture_t *f = *state;
    hnsw_free(f->h);
    free(f->docs);
    free(f->queries);
    free(f);
    return 0;
}

/* Mean recall@K; visits[0] and visits[1] get the mean visited nodes and distances. */
static double recall(fixture_t *f, const roaring_bitmap_t *allowed, uint32_t ef, double visits[2])
{
    double sum = 0, vis = 0, dist = 0;
    uint32_t nq = f->n_queries < NQ ? f->n_queries : NQ;
    for (uint32_t qi = 0; qi < nq; qi++) {
        const float *q = f->queries + (size_t)qi * f->dim;
        hnsw_hit_t hits[K];
        uint32_t n, truth[K];
        hnsw_stats_t st;
        hnsw_mode_t mode = allowed ? HNSW_MODE_FILTERED : HNSW_MODE_UNFILTERED;
        assert_int_equal(hnsw_search(f->h, &f->view, q, K, ef, allowed, mode, 0, &st, hits, &n), 0);
        for (uint32_t i = 0; i < n && allowed; i++)
            assert_true(roaring_bitmap_contains(allowed, hits[i].id));
        uint32_t nt = tu_exact(&f->view, VEC_METRIC_COSINE, q, f->n_docs, allowed, NULL, K, truth);
        sum += tu_recall(hits, n, truth, nt);
        vis += (double)st.visited;
        dist += (double)st.distances;
    }
    visits[0] = vis / nq;
    visits[1] = dist / nq;
    return sum / nq;
}

static void test_real_vectors_unfiltered_recall(void **state)
{
    fixture_t *f = *state;
    if (!f->h)
        skip(); /* the corpus is absent: setup said so */
    double v[2], r = recall(f, NULL, 64, v);
    print_message("scifact unfiltered ef=64 recall@10 %.4f (%.0f visits, %.0f distances)\n", r,
                  v[0], v[1]);
    assert_true(r >= 0.95);
}

static void filtered(fixture_t *f, double frac, uint32_t ef)
{
    roaring_bitmap_t *allowed = tu_random_set(f->n_docs, frac, 1234 + (uint64_t)(frac * 1000));
    double v[2], r = recall(f, allowed, ef, v);
    print_message("scifact filtered %.0f%% (%llu ids) ef=%u recall@10 %.4f (%.0f visits, %.0f "
                  "distances)\n",
                  frac * 100, (unsigned long long)roaring_bitmap_get_cardinality(allowed), ef, r,
                  v[0], v[1]);
    assert_true(r >= 0.9);
    roaring_bitmap_free(allowed);
}

static void test_real_vectors_one_percent_allowed_recall(void **state)
{
    fixture_t *f = *state;
    if (!f->h)
        skip(); /* the corpus is absent: setup said so */
    filtered(f, 0.01, 64);
}

static void test_real_vectors_ten_percent_allowed_recall(void **state)
{
    fixture_t *f = *state;
    if (!f->h)
        skip(); /* the corpus is absent: setup said so */
    filtered(f, 0.10, 64);
    filtered(f, 0.10, 32);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_real_vectors_unfiltered_recall),
        cmocka_unit_test(test_real_vectors_one_percent_allowed_recall),
        cmocka_unit_test(test_real_vectors_ten_percent_allowed_recall),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
