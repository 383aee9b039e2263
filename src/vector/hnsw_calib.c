/* hnsw_calib.c: choosing a collection's search breadth (ef) from measured recall: a few stored
 * rows are asked as queries, each hidden from its own traversal (hnsw_search_hiding), the
 * exact answer comes from the scan, and the smallest ef of a ladder whose recall@10 reaches
 * the target wins. Relies on vector/hnsw.h, vector/exact.h and
 * vector/quant.h (when the traversal is scored from 8-bit codes, so is the calibration). */
#include "vector/exact.h"
#include "vector/hnsw.h"
#include "vector/hnsw_int.h"
#include "vector/quant.h"

#include "base/err.h"
#include "base/mem.h"

#include <math.h>
#include <stdlib.h>

#define CALIB_K 10
static const uint32_t calib_ladder[] = {32, 48, 64, 96, 128, 192, 256, 384, 512};
#define CALIB_STEPS (sizeof calib_ladder / sizeof calib_ladder[0])

static int float_cmp(const void *a, const void *b)
{
    float x = *(const float *)a, y = *(const float *)b;
    return (x > y) - (x < y);
}

/* How many of got (minus the query row) are in truth (minus the query row), out of k. */
static uint32_t hits_in(const hnsw_hit_t *got, uint32_t n, const topk_hit_t *truth, size_t nt,
                        uint32_t self)
{
    uint32_t found = 0, used = 0;
    for (uint32_t i = 0; i < n && used < CALIB_K; i++) {
        if (got[i].id == self)
            continue;
        used++;
        for (size_t j = 0, seen = 0; j < nt && seen < CALIB_K; j++) {
            if (truth[j].id == self)
                continue;
            seen++;
            if (truth[j].id == got[i].id) {
                found++;
                break;
            }
        }
    }
    return found;
}

/* A fixed random tenth of live (by a hash of the id), for the filtered measurement. */
static roaring_bitmap_t *tenth_of(const roaring_bitmap_t *live)
{
    roaring_bitmap_t *t = roaring_bitmap_create();
    roaring_uint32_iterator_t it;
    if (!t)
        return NULL;
    roaring_init_iterator(live, &it);
    for (; it.has_value; roaring_advance_uint32_iterator(&it)) {
        uint64_t z = (uint64_t)it.current_value * 0x9e3779b97f4a7c15ull;
        if ((z >> 32) % 10 == 0)
            roaring_bitmap_add(t, it.current_value);
    }
    return t;
}

/* Answers found and distances computed at every ladder step, for one kind of traversal. */
typedef struct tally {
    uint32_t found[CALIB_STEPS];
    uint64_t dists[CALIB_STEPS];
    uint32_t total; /* answers asked for: CALIB_K a query */
} tally_t;

/* Asks row `row` (vector q), hidden from the traversal, at every ladder step, FILTERED to
 * `allowed` or UNFILTERED when it is NULL, and counts the hits that are in truth[0..nt). */
static int ladder(hnsw_t *h, const vec_view_t *view, const quant_t *codes, const float *q,
                  uint32_t row, const roaring_bitmap_t *allowed, const topk_hit_t *truth, size_t nt,
                  tally_t *t)
{
    hnsw_hit_t got[CALIB_K + 1];
    hnsw_stats_t st;
    uint32_t n = 0;
    t->total += CALIB_K;
    for (size_t s = 0; s < CALIB_STEPS; s++) {
        int rc = hnsw_search_hiding(h, view, codes, q, CALIB_K + 1, calib_ladder[s], allowed,
                                    allowed ? HNSW_MODE_FILTERED : HNSW_MODE_UNFILTERED, row, &st,
                                    got, &n);
        if (rc)
            return rc;
        t->found[s] += hits_in(got, n, truth, nt, row);
        t->dists[s] += st.distances;
    }
    return CDN_OK;
}

/* Measures the three traversals with `queries` live rows: the exact answer over the live rows
 * serves both the unfiltered and the every-row-allowed traversal, the one over `tenth` the
 * filtered one. d10[i] gets query i's distance to its 10th other row. */
/* The exact answer: the 8-bit scan when there are codes (the same hits, and it leaves most
 * float rows untouched, so a calibration does not pull the whole vector file into memory). */
static int truth_of(const vec_view_t *view, const quant_t *codes, vec_metric_t metric,
                    const float *q, const roaring_bitmap_t *allowed, topk_hit_t *truth, size_t *nt)
{
    if (codes && quant_is_trained(codes))
        return quant_exact_search(codes, view, metric, q, allowed, CALIB_K + 1, truth, nt, NULL);
    return exact_search(view, metric, q, allowed, CALIB_K + 1, truth, nt, NULL);
}

/* The first live row at or after rank `rank` that sits on level 0 only (a row on the upper
 * levels could not be hidden from the descent); 0 if none within a few ranks. */
static int level0_row(hnsw_t *h, const roaring_bitmap_t *live, uint64_t rank, uint32_t *row)
{
    uint64_t n_live = roaring_bitmap_get_cardinality(live);
    for (uint64_t r = rank; r < n_live && r < rank + 64; r++) {
        if (!roaring_bitmap_select(live, (uint32_t)r, row))
            return 0;
        pthread_rwlock_rdlock(&h->grow_lock);
        int top = *row < h->span ? h->levels[*row] : 1;
        pthread_rwlock_unlock(&h->grow_lock);
        if (top == 0)
            return 1;
    }
    return 0;
}

static int measure(hnsw_t *h, const vec_view_t *view, const quant_t *codes, vec_metric_t metric,
                   const roaring_bitmap_t *live, const roaring_bitmap_t *tenth, uint32_t queries,
                   tally_t *unf, tally_t *filt, tally_t *dense, float *d10)
{
    uint64_t n_live = roaring_bitmap_get_cardinality(live);
    int use_tenth = roaring_bitmap_get_cardinality(tenth) > CALIB_K + 1;
    topk_hit_t truth[CALIB_K + 1];
    int rc = CDN_OK;
    for (uint32_t i = 0; i < queries && rc == CDN_OK; i++) {
        uint32_t row;
        size_t nt = 0;
        /* Rows spread evenly over the live set's ranks: deterministic, and every region. */
        if (!level0_row(h, live, (uint64_t)i * n_live / queries, &row) || row >= view->count)
            continue;
        const float *q = vec_row(view, row);
        rc = truth_of(view, codes, metric, q, live, truth, &nt);
        if (rc || nt < CALIB_K + 1)
            continue;
        /* The 10th other row: the 11th hit, or the 10th if the row did not find itself. */
        d10[unf->total / CALIB_K] =
            truth[truth[0].id == row || truth[1].id == row ? CALIB_K : CALIB_K - 1].dist;
        rc = ladder(h, view, codes, q, row, NULL, truth, nt, unf);
        if (rc == CDN_OK)
            rc = ladder(h, view, codes, q, row, live, truth, nt, dense);
        if (rc == CDN_OK && use_tenth &&
            (rc = truth_of(view, codes, metric, q, tenth, truth, &nt)) == CDN_OK &&
            nt == CALIB_K + 1)
            rc = ladder(h, view, codes, q, row, tenth, truth, nt, filt);
    }
    return rc;
}

/* The smallest ladder ef >= floor_ef whose recall reaches target (else the largest), moved up
 * `margin` steps. A stored row asked as a query is linked to its own answers, which flattered
 * the measurement (1M x 384, every row allowed, ef 64: 0.991 on stored rows, 0.974 held out);
 * the row is now hidden from its traversal, and the hidden measurement tracks held-out queries
 * within 0.003 at 1M (unfiltered, seeded: 0.977 / 0.991 / 0.992 at ef 64 / 96 / 128 against
 * 0.974 / 0.988 / 0.993). One step of margin stays for the noise of 64 queries; the every-row
 * traversal keeps the two it was given before rows were hidden (ef 128 at 1M: 0.993 held out). */
static size_t pick(const tally_t *t, double target, uint32_t floor_ef, size_t margin, uint32_t *ef,
                   double *recall)
{
    size_t s = 0;
    while (s < CALIB_STEPS && t->total &&
           (calib_ladder[s] < floor_ef || (double)t->found[s] / t->total < target))
        s++;
    s = s + margin < CALIB_STEPS ? s + margin : CALIB_STEPS - 1;
    *ef = calib_ladder[s];
    *recall = t->total ? (double)t->found[s] / t->total : 0;
    return s;
}

/* Mean distances per query at ladder step s. */
static double cost_at(const tally_t *t, size_t s)
{
    return t->total ? (double)t->dists[s] / (t->total / CALIB_K) : INFINITY;
}

int hnsw_calibrate(hnsw_t *h, const vec_view_t *view, const quant_t *codes,
                   const roaring_bitmap_t *live, uint32_t queries, double target, uint32_t floor_ef,
                   hnsw_calib_t *out)
{
    uint64_t n_live = live ? roaring_bitmap_get_cardinality(live) : 0;
    *out = (hnsw_calib_t){0};
    if (!h || !view || !live || queries == 0 || n_live <= CALIB_K + 1)
        return CDN_ERR_INVALID;
    tally_t unf = {0}, filt = {0}, dense = {0};
    hnsw_info_t info;
    hnsw_get_info(h, &info);
    float *d10 = cdn_malloc(queries * sizeof(float));
    roaring_bitmap_t *tenth = d10 ? tenth_of(live) : NULL;
    int rc = tenth ? CDN_OK : CDN_ERR_NOMEM;
    if (rc == CDN_OK)
        rc = measure(h, view, codes, info.metric, live, tenth, queries, &unf, &filt, &dense, d10);
    if (rc == CDN_OK && unf.total == 0)
        rc = CDN_ERR_INVALID;
    if (rc == CDN_OK) {
        out->queries = unf.total / CALIB_K;
        out->cost = cost_at(&unf, pick(&unf, target, floor_ef, 1, &out->ef, &out->recall));
        pick(&filt, target, floor_ef, 1, &out->ef_filtered, &out->recall_filtered);
        if (!filt.total)
            out->ef_filtered = out->ef;
        out->cost_dense =
            cost_at(&dense, pick(&dense, target, floor_ef, 2, &out->ef_dense, &out->recall_dense));
        qsort(d10, out->queries, sizeof(float), float_cmp);
        out->d10 = d10[out->queries / 2];
    }
    roaring_bitmap_free(tenth);
    cdn_free(d10);
    return rc;
}
