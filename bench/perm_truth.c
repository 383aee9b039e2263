/* perm_truth.c: the benchmark's own ground truth: a plain brute-force loop over every chunk,
 * kept apart from the engine's exact scan (vector/exact.c) so that the two cannot share a bug,
 * and the benchmark's own ACL table (teams, departments, divisions) deciding readability.
 * Relies on nothing of the engine. */
#include "base/mem.h"
#include "perm_int.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

float perm_dist(const perm_corpus_t *c, const float *a, const float *b)
{
    /* Eight partial sums, so that the compiler may keep them in one vector register. */
    float s[8] = {0};
    uint32_t d = 0, dim = c->dim;
    if (c->metric == CORDON_METRIC_L2) {
        for (; d + 8 <= dim; d += 8)
            for (int j = 0; j < 8; j++)
                s[j] += (a[d + j] - b[d + j]) * (a[d + j] - b[d + j]);
        for (; d < dim; d++)
            s[0] += (a[d] - b[d]) * (a[d] - b[d]);
    } else {
        for (; d + 8 <= dim; d += 8)
            for (int j = 0; j < 8; j++)
                s[j] += a[d + j] * b[d + j];
        for (; d < dim; d++)
            s[0] += a[d] * b[d];
    }
    float t = ((s[0] + s[1]) + (s[2] + s[3])) + ((s[4] + s[5]) + (s[6] + s[7]));
    return c->metric == CORDON_METRIC_L2 ? t : 1.0f - t; /* cosine: rows are unit length */
}

void perm_held_flags(const perm_world_t *w, int layout, int share, size_t q,
                     uint8_t flags[PERM_GROUPS])
{
    memset(flags, 0, PERM_GROUPS);
    for (int j = 0; j < perm_shares[share].count; j++)
        flags[w->held[(size_t)layout * w->c.nq + q][share][j]] = 1;
}

void perm_group_name(int layout, unsigned g, char *buf, size_t size)
{
    const char *pre = layout == PERM_RANDOM ? "rand" : "topic";
    if (g < PERM_TEAMS)
        snprintf(buf, size, "%s-team-%u", pre, g);
    else if (g < PERM_TEAMS + PERM_DEPTS)
        snprintf(buf, size, "%s-dept-%u", pre, g - PERM_TEAMS);
    else
        snprintf(buf, size, "%s-div-%u", pre, g - PERM_TEAMS - PERM_DEPTS);
}

/* Keeps the k nearest (dist, then id) in t, sorted. */
static void topk_push(perm_truth_t *t, uint32_t id, float d)
{
    uint32_t i = t->n < PERM_K ? t->n++ : PERM_K;
    if (i == PERM_K) {
        if (d >= t->dist[PERM_K - 1])
            return;
        i = PERM_K - 1;
    }
    while (i > 0 && t->dist[i - 1] > d) {
        t->dist[i] = t->dist[i - 1];
        t->ids[i] = t->ids[i - 1];
        i--;
    }
    t->dist[i] = d;
    t->ids[i] = id;
}

int perm_truth_compute(perm_world_t *w, cdn_err_t *err)
{
    size_t n = w->c.n, nq = w->c.nq;
    float *d = cdn_malloc(n * sizeof *d);
    uint8_t flags[PERM_GROUPS];
    w->truth = cdn_calloc((size_t)PERM_LAYOUTS * PERM_SHARES * nq, sizeof *w->truth);
    if (!d || !w->truth) {
        cdn_free(d);
        return cdn_err_set(err, CDN_ERR_NOMEM, "out of memory for the ground truth");
    }
    for (size_t q = 0; q < nq; q++) {
        const float *qv = w->c.queries + q * w->c.dim;
        for (size_t i = 0; i < n; i++)
            d[i] = perm_dist(&w->c, qv, w->c.base + i * w->c.dim);
        for (int l = 0; l < PERM_LAYOUTS; l++)
            for (int s = 0; s < PERM_SHARES; s++) {
                perm_truth_t *t = perm_truth_at(w, l, s, q);
                perm_held_flags(w, l, s, q, flags);
                for (size_t i = 0; i < n; i++)
                    if (perm_readable(w, l, flags, i)) {
                        t->readable++;
                        topk_push(t, (uint32_t)i, d[i]);
                    }
            }
    }
    cdn_free(d);
    return CDN_OK;
}
