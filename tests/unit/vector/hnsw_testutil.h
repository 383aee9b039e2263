/* hnsw_testutil.h: generated clustered vectors, brute-force ground truth and recall for the
 * HNSW tests. Relies on vector/distance.h and CRoaring; everything static, one copy per test. */
#ifndef CDN_HNSW_TESTUTIL_H
#define CDN_HNSW_TESTUTIL_H

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <roaring/roaring.h>

#include "base/err.h"
#include "vector/distance.h"
#include "vector/hnsw.h"

typedef struct tu_rng {
    uint64_t s;
} tu_rng_t;

static inline uint64_t tu_next(tu_rng_t *r)
{
    uint64_t z = (r->s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static inline double tu_unif(tu_rng_t *r)
{
    return ((double)(tu_next(r) >> 11) + 0.5) / 9007199254740992.0;
}

static inline float tu_gauss(tu_rng_t *r)
{
    return (float)(sqrt(-2.0 * log(tu_unif(r))) * cos(6.283185307179586 * tu_unif(r)));
}

/* n rows of dim floats around `clusters` centres (spread 1, noise sigma); caller frees. When
 * `unit` is set rows are normalised (for cosine). */
static inline float *tu_clustered(uint32_t n, uint32_t dim, uint32_t clusters, float sigma,
                                  uint64_t seed, int unit, uint32_t *cluster_of)
{
    tu_rng_t r = {seed};
    float *centres = malloc(sizeof(float) * clusters * dim);
    float *v = malloc(sizeof(float) * (size_t)n * dim);
    for (uint32_t i = 0; i < clusters * dim; i++)
        centres[i] = tu_gauss(&r);
    for (uint32_t i = 0; i < n; i++) {
        uint32_t c = (uint32_t)(tu_next(&r) % clusters);
        if (cluster_of)
            cluster_of[i] = c;
        for (uint32_t d = 0; d < dim; d++)
            v[(size_t)i * dim + d] = centres[c * dim + d] + sigma * tu_gauss(&r);
        if (unit)
            vec_normalize(v + (size_t)i * dim, dim);
    }
    free(centres);
    return v;
}

/* n queries near the rows of tu_clustered(.., clusters, 1.0, seed, 0, ..): points drawn around
 * the same centres, then moved by Gaussian noise (sigma 0.3, from noise_seed) so that no query
 * is a row of the data set; caller frees. */
static inline float *tu_queries(uint32_t n, uint32_t dim, uint32_t clusters, uint64_t seed,
                                uint64_t noise_seed)
{
    float *q = tu_clustered(n, dim, clusters, 1.0f, seed, 0, NULL);
    tu_rng_t r = {noise_seed};
    for (uint32_t i = 0; q && i < n * dim; i++)
        q[i] += 0.3f * tu_gauss(&r);
    return q;
}

/* Exact top-k of rows admitted by `allowed` (NULL = all) and not in `deleted` (NULL = none).
 * Writes up to k ids nearest first into out; returns how many. */
static inline uint32_t tu_exact(const vec_view_t *view, vec_metric_t m, const float *q,
                                uint32_t n_rows, const roaring_bitmap_t *allowed,
                                const roaring_bitmap_t *deleted, uint32_t k, uint32_t *out)
{
    vec_dist_fn f = vec_dist_for(m);
    float best[256];
    uint32_t n = 0;
    for (uint32_t i = 0; i < n_rows; i++) {
        if (allowed && !roaring_bitmap_contains(allowed, i))
            continue;
        if (deleted && roaring_bitmap_contains(deleted, i))
            continue;
        float d = f(q, vec_row(view, i), view->dim);
        if (n == k && d >= best[n - 1])
            continue;
        uint32_t j = n < k ? n++ : k - 1;
        while (j > 0 && best[j - 1] > d) {
            best[j] = best[j - 1];
            out[j] = out[j - 1];
            j--;
        }
        best[j] = d;
        out[j] = i;
    }
    return n;
}

/* |found ∩ truth| / |truth| (1 when truth is empty and found is too). */
static inline double tu_recall(const hnsw_hit_t *found, uint32_t nf, const uint32_t *truth,
                               uint32_t nt)
{
    if (nt == 0)
        return nf == 0 ? 1.0 : 0.0;
    uint32_t hit = 0;
    for (uint32_t i = 0; i < nt; i++)
        for (uint32_t j = 0; j < nf; j++)
            if (found[j].id == truth[i]) {
                hit++;
                break;
            }
    return (double)hit / nt;
}

/* Mean recall@10 of unfiltered searches at ef for 100 of v's first n rows as queries (rows
 * (i * 389 + 11) % n), against the exact top 10 under metric m; -1 if a search fails. */
static inline double tu_self_recall(hnsw_t *h, const vec_view_t *v, vec_metric_t m, uint32_t n,
                                    uint32_t ef)
{
    double sum = 0;
    for (uint32_t qi = 0; qi < 100; qi++) {
        const float *q = vec_row(v, (qi * 389 + 11) % n);
        hnsw_hit_t hits[10];
        uint32_t got, truth[10];
        if (hnsw_search(h, v, q, 10, ef, NULL, HNSW_MODE_UNFILTERED, 0, NULL, hits, &got))
            return -1.0;
        uint32_t nt = tu_exact(v, m, q, n, NULL, NULL, 10, truth);
        sum += tu_recall(hits, got, truth, nt);
    }
    return sum / 100;
}

/* A graph of every row of v (ids 0 .. v->count - 1), default parameters but ef_construction
 * (0: the default), built with `threads` threads at construction precision prec; *out is NULL
 * on failure. Returns 0 or the first error of hnsw_create / hnsw_build_ex. */
static inline int tu_build_graph_ex(const vec_view_t *v, vec_metric_t metric,
                                    uint32_t ef_construction, uint32_t threads,
                                    hnsw_build_precision_t prec, hnsw_t **out)
{
    hnsw_params_t p = hnsw_params_default();
    uint32_t *ids = (uint32_t *)malloc(sizeof(uint32_t) * (v->count ? v->count : 1));
    if (ef_construction)
        p.ef_construction = ef_construction;
    *out = NULL;
    if (!ids)
        return CDN_ERR_NOMEM;
    for (uint32_t i = 0; i < v->count; i++)
        ids[i] = i;
    int rc = hnsw_create(p, metric, v->dim, out);
    rc = rc ? rc : hnsw_build_ex(*out, v, ids, (uint32_t)v->count, threads, prec);
    if (rc) {
        hnsw_free(*out);
        *out = NULL;
    }
    free(ids);
    return rc;
}

/* tu_build_graph_ex at the precision hnsw_build chooses (AUTO). */
static inline int tu_build_graph(const vec_view_t *v, vec_metric_t metric, uint32_t ef_construction,
                                 uint32_t threads, hnsw_t **out)
{
    return tu_build_graph_ex(v, metric, ef_construction, threads, HNSW_BUILD_AUTO, out);
}

/* A random subset of [0, n) holding each id with probability frac (at least one id). */
static inline roaring_bitmap_t *tu_random_set(uint32_t n, double frac, uint64_t seed)
{
    tu_rng_t r = {seed};
    roaring_bitmap_t *b = roaring_bitmap_create();
    for (uint32_t i = 0; i < n; i++)
        if (tu_unif(&r) < frac)
            roaring_bitmap_add(b, i);
    if (roaring_bitmap_is_empty(b))
        roaring_bitmap_add(b, (uint32_t)(tu_next(&r) % n));
    return b;
}

#endif
