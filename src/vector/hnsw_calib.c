/* hnsw_calib.c: choosing a collection's search breadth (ef) from measured recall: a few stored
 * rows are asked as queries, the exact answer comes from the scan, and the smallest ef of a
 * ladder whose recall@10 reaches the target wins. Relies on vector/hnsw.h and vector/exact.h. */
#include "vector/exact.h"
#include "vector/hnsw.h"

#include "base/err.h"
#include "base/mem.h"

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
static uint32_t hits_in(const hnsw_hit_t *got, uint32_t n, const vec_hit_t *truth, size_t nt,
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

int hnsw_calibrate(hnsw_t *h, const vec_view_t *view, const roaring_bitmap_t *live,
                   uint32_t queries, double target, uint32_t floor_ef, hnsw_calib_t *out)
{
    uint64_t n_live = live ? roaring_bitmap_get_cardinality(live) : 0;
    *out = (hnsw_calib_t){0};
    if (!h || !view || !live || queries == 0 || n_live <= CALIB_K + 1)
        return CDN_ERR_INVALID;
    uint32_t found[CALIB_STEPS] = {0}, total = 0;
    float *d10 = cdn_malloc(queries * sizeof(float));
    if (!d10)
        return CDN_ERR_NOMEM;
    hnsw_info_t info;
    hnsw_get_info(h, &info);
    vec_hit_t truth[CALIB_K + 1];
    hnsw_hit_t got[CALIB_K + 1];
    int rc = CDN_OK;
    for (uint32_t i = 0; i < queries && rc == CDN_OK; i++) {
        uint32_t row, n = 0;
        size_t nt = 0;
        /* Rows spread evenly over the live set's ranks: deterministic, and every region. */
        if (!roaring_bitmap_select(live, (uint32_t)((uint64_t)i * n_live / queries), &row) ||
            row >= view->count)
            continue;
        const float *q = vec_row(view, row);
        rc = exact_search(view, info.metric, q, live, CALIB_K + 1, truth, &nt, NULL);
        if (rc || nt < CALIB_K + 1)
            continue;
        /* The 10th other row: the 11th hit, or the 10th if the row did not find itself. */
        d10[total / CALIB_K] = truth[truth[0].id == row || truth[1].id == row ? CALIB_K
                                                                              : CALIB_K - 1].dist;
        total += CALIB_K;
        for (size_t s = 0; s < CALIB_STEPS && rc == CDN_OK; s++) {
            rc = hnsw_search(h, view, q, CALIB_K + 1, calib_ladder[s], NULL,
                             HNSW_MODE_UNFILTERED, 0, NULL, got, &n);
            found[s] += rc ? 0 : hits_in(got, n, truth, nt, row);
        }
    }
    if (rc || total == 0) {
        cdn_free(d10);
        return rc ? rc : CDN_ERR_INVALID;
    }
    out->queries = total / CALIB_K;
    qsort(d10, out->queries, sizeof(float), float_cmp);
    out->d10 = d10[out->queries / 2];
    cdn_free(d10);
    out->ef = calib_ladder[CALIB_STEPS - 1];
    out->recall = (double)found[CALIB_STEPS - 1] / total;
    for (size_t s = 0; s < CALIB_STEPS; s++)
        if (calib_ladder[s] >= floor_ef && (double)found[s] / total >= target) {
            out->ef = calib_ladder[s];
            out->recall = (double)found[s] / total;
            break;
        }
    return CDN_OK;
}
