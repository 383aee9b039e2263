/* perm_truth.c: the benchmark's own ground truth: a plain brute-force loop over every chunk,
 * kept apart from the engine's exact scan (vector/exact.c) so that the two cannot share a bug,
 * and the benchmark's own ACL table (teams, departments, divisions) deciding readability.
 * Relies on nothing of the engine. */
#include "base/mem.h"
#include "perm_int.h"

#define PERM_TRUTH_THREADS 2 /* the machine's cores */

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

/* Eight partial sums in a GCC vector (two SSE registers on baseline x86-64): plain code, but
 * without it the ground truth of 1,000 queries over 60,000 x 784 takes minutes. */
typedef float perm_v8 __attribute__((vector_size(32)));

float perm_dist(const perm_corpus_t *c, const float *a, const float *b)
{
    perm_v8 acc = {0}, x, y;
    float t = 0;
    uint32_t d = 0, dim = c->dim;
    int l2 = c->metric == CORDON_METRIC_L2;
    for (; d + 8 <= dim; d += 8) {
        memcpy(&x, a + d, sizeof x);
        memcpy(&y, b + d, sizeof y);
        if (l2) {
            x -= y;
            acc += x * x;
        } else {
            acc += x * y;
        }
    }
    for (; d < dim; d++)
        t += l2 ? (a[d] - b[d]) * (a[d] - b[d]) : a[d] * b[d];
    t += ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7]));
    return l2 ? t : 1.0f - t; /* cosine: rows are unit length */
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

typedef struct truth_job {
    perm_world_t *w;
    size_t first, step;
    int rc;
} truth_job_t;

/* Queries first, first + step, ...: each thread writes only its own queries' truth. */
static void *truth_thread(void *arg)
{
    truth_job_t *j = arg;
    perm_world_t *w = j->w;
    size_t n = w->c.n, nq = w->c.nq;
    float *d = cdn_malloc(n * sizeof *d);
    uint8_t flags[PERM_GROUPS];
    if (!d) {
        j->rc = CDN_ERR_NOMEM;
        return NULL;
    }
    for (size_t q = j->first; q < nq; q += j->step) {
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
    return NULL;
}

int perm_truth_compute(perm_world_t *w, cdn_err_t *err)
{
    truth_job_t job[PERM_TRUTH_THREADS];
    pthread_t th[PERM_TRUTH_THREADS];
    int started[PERM_TRUTH_THREADS] = {0}, rc = CDN_OK;
    w->truth = cdn_calloc((size_t)PERM_LAYOUTS * PERM_SHARES * w->c.nq, sizeof *w->truth);
    if (!w->truth)
        return cdn_err_set(err, CDN_ERR_NOMEM, "out of memory for the ground truth");
    for (int i = 0; i < PERM_TRUTH_THREADS; i++) {
        job[i] = (truth_job_t){w, (size_t)i, PERM_TRUTH_THREADS, CDN_OK};
        started[i] = pthread_create(&th[i], NULL, truth_thread, &job[i]) == 0;
        if (!started[i])
            truth_thread(&job[i]); /* no thread: do its share here */
    }
    for (int i = 0; i < PERM_TRUTH_THREADS; i++) {
        if (started[i])
            pthread_join(th[i], NULL);
        rc = rc ? rc : job[i].rc;
    }
    return rc ? cdn_err_set(err, rc, "out of memory for the ground truth") : CDN_OK;
}
