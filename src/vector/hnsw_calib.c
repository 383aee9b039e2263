/* hnsw_calib.c: choosing a collection's search breadth (ef) from measured recall: a few stored
 * rows are asked as queries, each hidden from its own traversal (hnsw_search_hiding), the
 * exact answer comes from the scan, and the ladder is climbed until the recall@10 measured is,
 * with confidence, at the target. Relies on vector/hnsw.h, vector/exact.h and vector/quant.h
 * (when the traversal is scored from 8-bit codes, so is the calibration). */
#include "vector/exact.h"
#include "vector/hnsw.h"
#include "vector/hnsw_int.h"
#include "vector/quant.h"

#include "base/err.h"
#include "base/mem.h"

#include <math.h>
#include <stdlib.h>

#define CALIB_K 10
/* Steps of 14 - 25%: with the coarser ladder it replaced (32, 48, 64, 96, ...) a few misses
 * more or less among 64 queries moved the breadth by half, and the search time with it (1M x
 * 128: a fresh graph calibrated to 128 in one build and 192 in the next). */
static const uint32_t calib_ladder[] = {16,  20,  24,  28,  32,  40,  48,  56,  64,  80, 96,
                                        112, 128, 160, 192, 224, 256, 320, 384, 448, 512};
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

/* The rows asked and their exact answers, computed once for every ladder step. */
typedef struct probe {
    uint32_t row;
    size_t nt, nt_tenth; /* 0 where the exact answer was short (the query is skipped) */
    topk_hit_t truth[CALIB_K + 1], truth_tenth[CALIB_K + 1];
} probe_t;

/* One kind of traversal climbing the ladder: answers found and distances at the step. */
typedef struct tally {
    uint32_t found, total; /* total: answers asked for, CALIB_K a query */
    uint64_t dists;
} tally_t;

enum { KIND_UNFILTERED, KIND_DENSE, KIND_FILTERED };

/* Runs every probe at ladder step s with the kind's traversal. */
static int step_run(hnsw_t *h, const vec_view_t *view, const quant_t *codes, const probe_t *pr,
                    uint32_t np, const roaring_bitmap_t *live, const roaring_bitmap_t *tenth,
                    int kind, size_t s, tally_t *t)
{
    hnsw_hit_t got[CALIB_K + 1];
    const roaring_bitmap_t *allowed = kind == KIND_FILTERED ? tenth
                                      : kind == KIND_DENSE  ? live
                                                            : NULL;
    *t = (tally_t){0};
    for (uint32_t i = 0; i < np; i++) {
        const topk_hit_t *truth = kind == KIND_FILTERED ? pr[i].truth_tenth : pr[i].truth;
        size_t nt = kind == KIND_FILTERED ? pr[i].nt_tenth : pr[i].nt;
        hnsw_stats_t st;
        uint32_t n = 0;
        if (nt < CALIB_K + 1)
            continue;
        int rc = hnsw_search_hiding(
            h, view, codes, vec_row(view, pr[i].row), CALIB_K + 1, calib_ladder[s], allowed,
            allowed ? HNSW_MODE_FILTERED : HNSW_MODE_UNFILTERED, pr[i].row, &st, got, &n);
        if (rc)
            return rc;
        t->found += hits_in(got, n, truth, nt, pr[i].row);
        t->total += CALIB_K;
        t->dists += st.distances;
    }
    return CDN_OK;
}

/* Whether `found` of `total` answers make the recall reach target with confidence: the upper
 * Wilson bound (z = 1, about 84% one-sided) of the miss rate is at most 1 - target. With 640
 * answers and a target of 0.99 that allows 3 misses (0.9953 measured), which also covers the
 * hidden rows' small optimism against held-out queries (at 1M x 384: 0.991 / 0.992 hidden,
 * 0.988 / 0.993 held out at ef 96 / 128). A bare "measured >= target" with one ladder step of
 * margin preceded it. */
static int confident(uint32_t found, uint32_t total, double target)
{
    if (!total)
        return 0;
    double n = total, p = (double)(total - found) / n, z = 1.0;
    double ub =
        (p + z * z / (2 * n) + z * sqrt(p * (1 - p) / n + z * z / (4 * n * n))) / (1 + z * z / n);
    return ub <= 1 - target + 1e-12;
}

/* Where a climb stopped: the step's breadth, recall and distances per query. */
typedef struct pick {
    uint32_t ef;
    double recall, cost;
} pick_t;

/* Climbs the ladder from the first step >= floor_ef until the kind's recall is confidently at
 * target, then `extra` steps more, and reports that step. Where no step is confident the
 * recall has levelled off too near the target for the answers asked to show it (1M x 384,
 * 640 answers: 0.9938 at ef 512, held out 0.9950: ties and answers no breadth reaches):
 * then the first step measured at target, `extra` + 1 steps more (about the one step of the
 * coarser ladder that served before the bound: 1M, 96 -> 128, 0.992 held out),
 * else the top.
 * With deep_out, the climb goes on to the first step whose measured recall reaches deep and
 * reports it there (ef 0: no step did). */
static int climb(hnsw_t *h, const vec_view_t *view, const quant_t *codes, const probe_t *pr,
                 uint32_t np, const roaring_bitmap_t *live, const roaring_bitmap_t *tenth, int kind,
                 double target, uint32_t floor_ef, size_t extra, pick_t *out, double deep,
                 pick_t *deep_out)
{
    const size_t none = CALIB_STEPS, last = CALIB_STEPS - 1;
    pick_t at[CALIB_STEPS];
    size_t s = 0, want = none, reached = none;
    tally_t t;
    if (deep_out)
        *deep_out = (pick_t){0};
    while (s < last && calib_ladder[s] < floor_ef)
        s++;
    for (; s < CALIB_STEPS; s++) {
        int rc = step_run(h, view, codes, pr, np, live, tenth, kind, s, &t);
        if (rc)
            return rc;
        if (!t.total)
            return CDN_ERR_INVALID;
        at[s] = (pick_t){calib_ladder[s], (double)t.found / t.total,
                         (double)t.dists / (t.total / CALIB_K)};
        if (reached == none && at[s].recall >= target)
            reached = s;
        if (want == none && confident(t.found, t.total, target))
            want = s + extra < last ? s + extra : last;
        if (deep_out && !deep_out->ef && at[s].recall >= deep)
            *deep_out = at[s];
        if (want != none && s >= want && (!deep_out || deep_out->ef))
            break;
    }
    if (want == none) /* climbed to the top (s == CALIB_STEPS): every step was measured */
        want = reached == none ? last : reached + extra + 1 < last ? reached + extra + 1 : last;
    *out = at[want];
    return CDN_OK;
}

/* Picks the rows asked (spread evenly over the live set's ranks: deterministic, and every
 * region) and computes their exact answers among the live rows and among the tenth. d10[i]
 * gets probe i's distance to its 10th other row; *np the probes kept. */
static int probes_of(hnsw_t *h, const vec_view_t *view, const quant_t *codes, vec_metric_t metric,
                     const roaring_bitmap_t *live, const roaring_bitmap_t *tenth, uint32_t queries,
                     probe_t *pr, float *d10, uint32_t *np)
{
    uint64_t n_live = roaring_bitmap_get_cardinality(live);
    int use_tenth = roaring_bitmap_get_cardinality(tenth) > CALIB_K + 1;
    *np = 0;
    for (uint32_t i = 0; i < queries; i++) {
        probe_t *p = &pr[*np];
        if (!level0_row(h, live, (uint64_t)i * n_live / queries, &p->row) || p->row >= view->count)
            continue;
        const float *q = vec_row(view, p->row);
        int rc = truth_of(view, codes, metric, q, live, p->truth, &p->nt);
        if (rc)
            return rc;
        if (p->nt < CALIB_K + 1)
            continue;
        p->nt_tenth = 0;
        if (use_tenth &&
            (rc = truth_of(view, codes, metric, q, tenth, p->truth_tenth, &p->nt_tenth)) != CDN_OK)
            return rc;
        /* The 10th other row: the 11th hit, or the 10th if the row did not find itself. */
        d10[*np] =
            p->truth[p->truth[0].id == p->row || p->truth[1].id == p->row ? CALIB_K : CALIB_K - 1]
                .dist;
        (*np)++;
    }
    return CDN_OK;
}

int hnsw_calibrate(hnsw_t *h, const vec_view_t *view, const quant_t *codes,
                   const roaring_bitmap_t *live, uint32_t queries, double target, double deep,
                   uint32_t floor_ef, hnsw_calib_t *out)
{
    uint64_t n_live = live ? roaring_bitmap_get_cardinality(live) : 0;
    *out = (hnsw_calib_t){0};
    if (!h || !view || !live || queries == 0 || n_live <= CALIB_K + 1)
        return CDN_ERR_INVALID;
    hnsw_info_t info;
    hnsw_get_info(h, &info);
    uint32_t np = 0;
    float *d10 = cdn_malloc(queries * sizeof(float));
    probe_t *pr = d10 ? cdn_malloc(queries * sizeof *pr) : NULL;
    roaring_bitmap_t *tenth = pr ? tenth_of(live) : NULL;
    int rc = tenth ? CDN_OK : CDN_ERR_NOMEM;
    if (rc == CDN_OK)
        rc = probes_of(h, view, codes, info.metric, live, tenth, queries, pr, d10, &np);
    if (rc == CDN_OK && np == 0)
        rc = CDN_ERR_INVALID;
    pick_t unf = {0}, dense = {0}, filt = {0}, deep_pick = {0};
    if (rc == CDN_OK)
        rc = climb(h, view, codes, pr, np, live, tenth, KIND_UNFILTERED, target, 0, 1, &unf, deep,
                   &deep_pick);
    /* Every breadth keeps a step past its confident one: the graph changes under writes until
     * the next measurement (1M x 128, 20% of the rows replaced since the load: recall 0.9896
     * at the breadth confident at load, 128). The every-row traversal keeps two: its seeds
     * come from a sample, not the descent the hidden row is kept out of. */
    if (rc == CDN_OK)
        rc = climb(h, view, codes, pr, np, live, tenth, KIND_DENSE, target, 0, 2, &dense, 0, NULL);
    if (rc == CDN_OK) {
        rc = climb(h, view, codes, pr, np, live, tenth, KIND_FILTERED, target, floor_ef, 1, &filt,
                   0, NULL);
        if (rc == CDN_ERR_INVALID) { /* too few rows in the tenth: the unfiltered breadth */
            filt = (pick_t){unf.ef > floor_ef ? unf.ef : floor_ef, 0, 0};
            rc = CDN_OK;
        }
    }
    out->ef = unf.ef;
    out->recall = unf.recall;
    out->cost = unf.cost;
    out->ef_deep = deep_pick.ef;
    out->recall_deep = deep_pick.recall;
    out->ef_dense = dense.ef;
    out->recall_dense = dense.recall;
    out->cost_dense = dense.cost;
    out->ef_filtered = filt.ef;
    out->recall_filtered = filt.recall;
    if (rc == CDN_OK) {
        out->queries = np;
        qsort(d10, np, sizeof(float), float_cmp);
        out->d10 = d10[np / 2];
    }
    roaring_bitmap_free(tenth);
    cdn_free(pr);
    cdn_free(d10);
    return rc;
}
