/* perm_sweep.c: cordon's unfiltered recall/QPS curve (all-seeing subject, plain HNSW traversal,
 * ef swept), to set beside hnswlib's and FAISS's "QPS at recall >= 0.99" from peers.py.
 * Relies on include/cordon.h and the benchmark's own ground truth (perm_truth.c). */
#include "base/clock.h"
#include "base/mem.h"
#include "bench_util.h"
#include "perm_int.h"

#include <stdlib.h>
#include <string.h>

static const uint32_t sweep_ef[PERM_SWEEP_MAX] = {10, 16,  24,  32,  48,  64,
                                                  96, 128, 192, 256, 384, 512};

/* Tie-aware recall@10 of hits against the 100%-readable truth of query q. */
static double recall_one(const perm_world_t *w, size_t q, const cordon_result *res)
{
    const perm_truth_t *t = perm_truth_at(w, PERM_RANDOM, PERM_SHARES - 1, q);
    const float *qv = w->c.queries + q * w->c.dim;
    float tol =
        t->n ? t->dist[t->n - 1] +
                   1e-4f * (t->dist[t->n - 1] < 0 ? -t->dist[t->n - 1] : t->dist[t->n - 1]) + 1e-5f
             : 0;
    size_t good = 0;
    for (size_t i = 0; i < res->n_hits; i++) {
        char *end;
        unsigned long id = strtoul(res->hits[i].id + 1, &end, 10);
        if (!*end && id < w->c.n && perm_dist(&w->c, qv, w->c.base + id * w->c.dim) <= tol)
            good++;
    }
    return t->n ? (double)(good < t->n ? good : t->n) / t->n : 1.0;
}

int perm_sweep_unfiltered(const perm_world_t *w, cordon_t *db, const char *all, perm_sweep_t *out,
                          size_t *n)
{
    const char *pr[1] = {all};
    cordon_subject subj = {.principals = pr, .n_principals = 1};
    double *lat = cdn_calloc(w->c.nq, sizeof *lat);
    int rc = lat ? CORDON_OK : CORDON_ERR_NOMEM;
    *n = 0;
    for (size_t e = 0; e < PERM_SWEEP_MAX && rc == CORDON_OK; e++) {
        double recall = 0, total = 0;
        for (size_t q = 0; q < w->c.nq && rc == CORDON_OK; q++) {
            cordon_query qq = {.vector = w->c.queries + q * w->c.dim,
                               .k = PERM_K,
                               .strategy = CORDON_STRATEGY_POSTFILTER,
                               .ef_search = sweep_ef[e]};
            cordon_result *res = NULL;
            uint64_t t0 = cdn_clock_ns();
            rc = cordon_search(db, "perm", &subj, &qq, &res, NULL);
            lat[q] = (double)(cdn_clock_ns() - t0) / 1e6;
            total += lat[q];
            if (rc == CORDON_OK)
                recall += recall_one(w, q, res);
            cordon_result_free(res);
        }
        qsort(lat, w->c.nq, sizeof *lat, bench_cmp_double);
        out[*n] = (perm_sweep_t){sweep_ef[e], recall / (double)w->c.nq,
                                 total > 0 ? (double)w->c.nq / (total / 1e3) : 0, lat[w->c.nq / 2],
                                 lat[(size_t)((double)(w->c.nq - 1) * 0.95 + 0.5)]};
        if (out[(*n)++].recall >= 0.999)
            break;
    }
    cdn_free(lat);
    return rc;
}
