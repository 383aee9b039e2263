/* topk.c: the bounded max-heap behind topk.h; (dist, id) is the total order throughout.
 * Relies on base/mem.h for storage. */
#include "base/topk.h"
#include "base/err.h"
#include "base/mem.h"

#include <math.h>

/* True when a is worse (farther) than b: larger distance, or equal distance and larger id. */
static inline bool worse(topk_hit_t a, topk_hit_t b)
{
    return a.dist > b.dist || (a.dist == b.dist && a.id > b.id);
}

static void sift_up(topk_hit_t *h, size_t i)
{
    topk_hit_t x = h[i];
    while (i > 0) {
        size_t p = (i - 1) / 2;
        if (!worse(x, h[p]))
            break;
        h[i] = h[p];
        i = p;
    }
    h[i] = x;
}

static void sift_down(topk_hit_t *h, size_t n, size_t i)
{
    topk_hit_t x = h[i];
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= n)
            break;
        if (c + 1 < n && worse(h[c + 1], h[c]))
            c++;
        if (!worse(h[c], x))
            break;
        h[i] = h[c];
        i = c;
    }
    h[i] = x;
}

int topk_init(topk_t *t, size_t k)
{
    t->n = 0;
    t->k = k;
    t->owned = true;
    t->heap = cdn_malloc((k ? k : 1) * sizeof(topk_hit_t));
    if (!t->heap) {
        t->k = 0;
        return CDN_ERR_NOMEM;
    }
    return CDN_OK;
}

void topk_init_buf(topk_t *t, topk_hit_t *storage, size_t k)
{
    t->heap = storage;
    t->n = 0;
    t->k = k;
    t->owned = false;
}

void topk_free(topk_t *t)
{
    if (!t)
        return;
    if (t->owned)
        cdn_free(t->heap);
    t->heap = NULL;
    t->n = t->k = 0;
}

float topk_worst(const topk_t *t)
{
    return t->n ? t->heap[0].dist : INFINITY;
}

float topk_bound(const topk_t *t)
{
    return t->n == t->k && t->k ? t->heap[0].dist : INFINITY;
}

bool topk_push(topk_t *t, uint32_t id, float dist)
{
    topk_hit_t x = {id, dist};
    if (isnan(dist) || t->k == 0)
        return false;
    if (t->n < t->k) {
        t->heap[t->n] = x;
        sift_up(t->heap, t->n++);
        return true;
    }
    if (!worse(t->heap[0], x))
        return false;
    t->heap[0] = x;
    sift_down(t->heap, t->n, 0);
    return true;
}

bool topk_pop_worst(topk_t *t, topk_hit_t *out)
{
    if (t->n == 0)
        return false;
    /* Write *out last: it may be the slot the heap just gave up (in-place extraction). */
    topk_hit_t worst = t->heap[0];
    t->heap[0] = t->heap[--t->n];
    if (t->n)
        sift_down(t->heap, t->n, 0);
    if (out)
        *out = worst;
    return true;
}

void topk_extract(topk_t *t, topk_hit_t *out, size_t *n_out)
{
    size_t n = t->n;
    /* Popping the worst fills out from the back, so it ends up nearest first. */
    for (size_t i = n; i > 0; i--)
        topk_pop_worst(t, &out[i - 1]);
    *n_out = n;
}
