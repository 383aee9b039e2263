/* hnsw_order.c: the order in which a large batch is inserted. Relies on vector/distance.h and
 * hnsw_prim.c's worker threads (hnsw_int.h).
 *
 * An insert's construction search reads a few thousand rows and their lists at random. At a
 * million rows of 384 values (384 MB of 8-bit rows, 132 MB of lists) few of them are in any
 * cache, and the build waits on memory. Rows near each other search the same region, so when
 * they go in one after the other each finds much of what it reads still in cache. So rows are
 * clustered (a few rounds of k-means on a sample of a batch; the index keeps the centres for
 * the batches after until it has doubled), and each chunk of a batch is grouped by nearest
 * centre before it goes in, the groups taken along a chain of centres that steps from each to
 * the nearest one not yet taken. Chunks keep the batch's order between them, so every region
 * grows a little in every chunk rather than one region being filled at once (a 200k build
 * sorted whole by a hash of its rows lost recall).
 *
 * Groups must be small: their rows' neighbourhoods have to fit in cache together. On 300k
 * generated topics, 16 or 32 centres bought nothing and 64 to 256 cut the build by 10 - 30%; at
 * 1M, 256 took it from 121 - 147 s to 100 - 110 s (docs/benchmarks.md, "Rows inserted by
 * region"). Measured and not kept: grouping by each row's greedy descent through the upper
 * levels (the node reached at each level: a descent can end at any of several nodes near a
 * row, and only a quarter of consecutive rows then shared a topic), and by the nearest of 256
 * upper-level nodes (half did, and the build was no faster). */
#include "vector/hnsw_int.h"

#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/err.h"
#include "base/mem.h"

struct hnsw_order {
    uint32_t k, dim;
    vec_metric_t metric; /* the clustering's: cosine (centres of unit length) or L2 */
    vec_dist4_fn dot4;   /* minus the dot products of a row with four centres */
    float *centres;      /* k x dim, in chain order */
    float *bias;         /* per centre: 0 for cosine, half its squared length for L2 */
};

_Static_assert(HNSW_ORDER_CENTRES % 4 == 0, "centres are scored four at a time");

/* score[c] = bias[c] - row.c for every centre: under both metrics the nearest centre has the
 * least score (for cosine the centres have unit length and the row's own length scales every
 * dot alike; for L2, |r - c|^2 / 2 = |r|^2 / 2 - r.c + |c|^2 / 2). Four centres a kernel call,
 * so each pass over the row serves four. */
static void score_centres(const hnsw_order_t *o, const float *row, float *score)
{
    for (uint32_t c = 0; c < o->k; c += 4) {
        const float *four[4];
        for (uint32_t i = 0; i < 4; i++)
            four[i] = o->centres + (size_t)(c + i) * o->dim;
        o->dot4(row, four, o->dim, score + c);
        for (uint32_t i = 0; i < 4; i++)
            score[c + i] += o->bias[c + i];
    }
}

/* The centre of [from, k) nearest to row (the first of equals; all NaN: from). */
static uint32_t nearest_from(const hnsw_order_t *o, const float *row, uint32_t from)
{
    float score[HNSW_ORDER_CENTRES], best_score = FLT_MAX;
    uint32_t best = from;
    score_centres(o, row, score);
    for (uint32_t c = from; c < o->k; c++)
        if (score[c] < best_score) {
            best_score = score[c];
            best = c;
        }
    return best;
}

/* Nearest centres of rows ids[0..n) into group[], on the build's threads. */
typedef struct assign_job {
    const hnsw_order_t *o;
    const vec_view_t *view;
    const uint32_t *ids;
    uint32_t *group;
    size_t n;
    _Atomic size_t next;
} assign_job_t;

#define ASSIGN_STEP 64 /* rows a thread takes at a time */

static void *assign_worker(void *arg)
{
    assign_job_t *j = arg;
    for (;;) {
        size_t from = atomic_fetch_add(&j->next, ASSIGN_STEP);
        if (from >= j->n)
            break;
        size_t to = from + ASSIGN_STEP < j->n ? from + ASSIGN_STEP : j->n;
        for (size_t i = from; i < to; i++)
            j->group[i] = nearest_from(j->o, vec_row(j->view, j->ids[i]), 0);
    }
    return NULL;
}

static void assign(const hnsw_order_t *o, const vec_view_t *view, const uint32_t *ids, size_t n,
                   uint32_t *group, unsigned threads)
{
    assign_job_t j = {.o = o, .view = view, .ids = ids, .group = group, .n = n};
    atomic_init(&j.next, 0);
    hnsw_run_threads(threads, assign_worker, &j);
}

static uint64_t splitmix(uint64_t z)
{
    z += 0x9e3779b97f4a7c15ull;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* Centre c = the mean of its rows (sum / count), unit length for cosine; its bias follows. A
 * centre that lost every row keeps its place. */
static void centre_update(hnsw_order_t *o, uint32_t c, const double *sum, uint32_t count)
{
    float *ce = o->centres + (size_t)c * o->dim;
    double norm = 0;
    for (uint32_t d = 0; d < o->dim; d++) {
        if (count)
            ce[d] = (float)(sum[d] / count);
        norm += (double)ce[d] * ce[d];
    }
    if (o->metric == VEC_METRIC_COSINE && norm > 0)
        for (uint32_t d = 0; d < o->dim; d++)
            ce[d] = (float)(ce[d] / sqrt(norm));
    o->bias[c] = o->metric == VEC_METRIC_COSINE ? 0.0f : (float)(norm / 2);
}

static void swap_centres(hnsw_order_t *o, uint32_t a, uint32_t b, float *tmp)
{
    if (a == b)
        return; /* memcpy onto itself is undefined */
    size_t bytes = o->dim * sizeof(float);
    memcpy(tmp, o->centres + (size_t)a * o->dim, bytes);
    memcpy(o->centres + (size_t)a * o->dim, o->centres + (size_t)b * o->dim, bytes);
    memcpy(o->centres + (size_t)b * o->dim, tmp, bytes);
    float t = o->bias[a];
    o->bias[a] = o->bias[b];
    o->bias[b] = t;
}

/* Puts the centres in chain order: from the first, each next the nearest not yet taken. */
static void chain(hnsw_order_t *o, float *tmp)
{
    for (uint32_t i = 0; i + 2 < o->k; i++)
        swap_centres(o, i + 1, nearest_from(o, o->centres + (size_t)i * o->dim, i + 1), tmp);
}

/* Lloyd's rounds over the sample's rows; group[] is workspace for the sample's centres. */
static int lloyd(hnsw_order_t *o, const vec_view_t *view, const uint32_t *sample, size_t s,
                 uint32_t *group, unsigned threads)
{
    double *sum = cdn_calloc((size_t)o->k * o->dim, sizeof(double));
    uint32_t *count = cdn_calloc(o->k, sizeof(uint32_t));
    if (!sum || !count) {
        cdn_free(sum);
        cdn_free(count);
        return CDN_ERR_NOMEM;
    }
    for (uint32_t round = 0; round < HNSW_ORDER_ROUNDS; round++) {
        assign(o, view, sample, s, group, threads);
        memset(sum, 0, (size_t)o->k * o->dim * sizeof(double));
        memset(count, 0, o->k * sizeof(uint32_t));
        for (size_t i = 0; i < s; i++) {
            const float *r = vec_row(view, sample[i]);
            double *acc = sum + (size_t)group[i] * o->dim;
            for (uint32_t d = 0; d < o->dim; d++)
                acc[d] += r[d];
            count[group[i]]++;
        }
        for (uint32_t c = 0; c < o->k; c++)
            centre_update(o, c, sum + (size_t)c * o->dim, count[c]);
    }
    cdn_free(sum);
    cdn_free(count);
    return CDN_OK;
}

int hnsw_order_create(const hnsw_t *h, const vec_view_t *view, const uint32_t *ids, size_t n,
                      unsigned threads, hnsw_order_t **out)
{
    *out = NULL;
    size_t s = n < HNSW_ORDER_SAMPLE ? n : HNSW_ORDER_SAMPLE;
    uint32_t k = HNSW_ORDER_CENTRES;
    if (s < (size_t)k * 4 || view->dim == 0)
        return CDN_OK;
    hnsw_order_t *o = cdn_calloc(1, sizeof(*o));
    float *centres = cdn_malloc((size_t)k * view->dim * sizeof(float));
    float *bias = cdn_calloc(k, sizeof(float)), *tmp = cdn_malloc(view->dim * sizeof(float));
    uint32_t *sample = cdn_malloc(s * sizeof(uint32_t)), *group = cdn_malloc(s * sizeof(uint32_t));
    int rc = o && centres && bias && tmp && sample && group ? CDN_OK : CDN_ERR_NOMEM;
    if (rc == CDN_OK) {
        *o = (hnsw_order_t){.k = k, .dim = view->dim, .centres = centres, .bias = bias};
        o->metric = h->metric == VEC_METRIC_COSINE ? VEC_METRIC_COSINE : VEC_METRIC_L2;
        o->dot4 = vec_dist4_for(VEC_METRIC_DOT);
        for (size_t i = 0; i < s; i++) /* spread evenly over the batch */
            sample[i] = ids[i * n / s];
        for (uint32_t c = 0; c < k; c++) { /* seeds: sample rows drawn at random */
            size_t pick = splitmix(((uint64_t)h->p.seed << 32) + c) % s;
            memcpy(centres + (size_t)c * o->dim, vec_row(view, sample[pick]),
                   o->dim * sizeof(float));
            centre_update(o, c, NULL, 0);
        }
        rc = lloyd(o, view, sample, s, group, threads);
    }
    if (rc == CDN_OK)
        chain(o, tmp);
    cdn_free(tmp);
    cdn_free(sample);
    cdn_free(group);
    if (rc) {
        cdn_free(centres);
        cdn_free(bias);
        cdn_free(o);
        return rc;
    }
    *out = o;
    return CDN_OK;
}

void hnsw_order_free(hnsw_order_t *o)
{
    if (!o)
        return;
    cdn_free(o->centres);
    cdn_free(o->bias);
    cdn_free(o);
}

int hnsw_order_chunk(const hnsw_order_t *o, const vec_view_t *view, uint32_t *ids, size_t n,
                     unsigned threads)
{
    if (!o || n < 2)
        return CDN_OK;
    uint32_t *group = cdn_malloc(n * sizeof(uint32_t)), *sorted = cdn_malloc(n * sizeof(uint32_t));
    uint32_t *start = cdn_calloc((size_t)o->k + 1, sizeof(uint32_t));
    if (!group || !sorted || !start) {
        cdn_free(group);
        cdn_free(sorted);
        cdn_free(start);
        return CDN_ERR_NOMEM;
    }
    assign(o, view, ids, n, group, threads);
    /* A counting sort by group: stable, so within a group the rows keep the batch's order. */
    for (size_t i = 0; i < n; i++)
        start[group[i] + 1]++;
    for (uint32_t c = 0; c < o->k; c++)
        start[c + 1] += start[c];
    for (size_t i = 0; i < n; i++)
        sorted[start[group[i]]++] = ids[i];
    memcpy(ids, sorted, n * sizeof(uint32_t));
    cdn_free(group);
    cdn_free(sorted);
    cdn_free(start);
    return CDN_OK;
}

int hnsw_order_copy(const hnsw_order_t *o, hnsw_order_t **out)
{
    *out = NULL;
    if (!o)
        return CDN_OK;
    hnsw_order_t *c = cdn_malloc(sizeof(*c));
    float *centres = cdn_malloc((size_t)o->k * o->dim * sizeof(float));
    float *bias = cdn_malloc(o->k * sizeof(float));
    if (!c || !centres || !bias) {
        cdn_free(c);
        cdn_free(centres);
        cdn_free(bias);
        return CDN_ERR_NOMEM;
    }
    *c = *o;
    c->centres = memcpy(centres, o->centres, (size_t)o->k * o->dim * sizeof(float));
    c->bias = memcpy(bias, o->bias, o->k * sizeof(float));
    *out = c;
    return CDN_OK;
}

size_t hnsw_order_bytes(const hnsw_order_t *o)
{
    return o ? sizeof *o + (size_t)o->k * (o->dim + 1) * sizeof(float) : 0;
}

int hnsw_order_for_batch(hnsw_t *h, const vec_view_t *view, const uint32_t *ids, size_t n,
                         unsigned threads, hnsw_order_t **out)
{
    *out = NULL;
    pthread_mutex_lock(&h->order_lock);
    uint32_t nodes = atomic_load(&h->n_nodes);
    int rc = CDN_OK;
    if (!h->order || nodes >= 2 * (uint64_t)h->order_nodes) {
        hnsw_order_t *fresh = NULL;
        rc = hnsw_order_create(h, view, ids, n, threads, &fresh);
        if (fresh) { /* too small a batch keeps the old ones */
            hnsw_order_free(h->order);
            h->order = fresh;
            h->order_nodes = nodes > n ? nodes : (uint32_t)n;
            atomic_store(&h->order_bytes, hnsw_order_bytes(fresh));
        }
    }
    if (rc == CDN_OK)
        rc = hnsw_order_copy(h->order, out);
    pthread_mutex_unlock(&h->order_lock);
    return rc;
}
