/* fusion.c: RRF and min-max linear fusion: contributions are gathered per (id, list), sorted by
 * id to sum them, then the best k are selected. Relies on mem.h and err.h. */
#include "query/fusion.h"

#include <stdlib.h>

#include "base/err.h"
#include "base/mem.h"

typedef struct contrib {
    uint32_t id;
    uint32_t list;
    double score;
} contrib_t;

static int cmp_contrib(const void *a, const void *b)
{
    const contrib_t *x = a, *y = b;
    if (x->id != y->id)
        return x->id < y->id ? -1 : 1;
    if (x->list != y->list)
        return x->list < y->list ? -1 : 1;
    return x->score > y->score ? -1 : x->score < y->score; /* best first within a list */
}

static int cmp_hit(const void *a, const void *b)
{
    const fusion_hit_t *x = a, *y = b;
    if (x->score != y->score)
        return x->score > y->score ? -1 : 1;
    return x->id < y->id ? -1 : x->id > y->id;
}

/* Sums contributions per id (one per list: the best), sorts, keeps k. Frees c. */
static int finish(contrib_t *c, size_t n, size_t k, fusion_hit_t *out, size_t *n_out)
{
    qsort(c, n, sizeof *c, cmp_contrib);
    fusion_hit_t *all = cdn_malloc((n ? n : 1) * sizeof *all);
    if (!all) {
        cdn_free(c);
        return CDN_ERR_NOMEM;
    }
    size_t m = 0;
    for (size_t i = 0; i < n; i++) {
        if (i && c[i].id == c[i - 1].id && c[i].list == c[i - 1].list)
            continue; /* a repeated id in one list counts once, at its best */
        if (m && all[m - 1].id == c[i].id)
            all[m - 1].score += (float)c[i].score;
        else
            all[m++] = (fusion_hit_t){c[i].id, (float)c[i].score};
    }
    qsort(all, m, sizeof *all, cmp_hit);
    *n_out = m < k ? m : k;
    for (size_t i = 0; i < *n_out; i++)
        out[i] = all[i];
    cdn_free(all);
    cdn_free(c);
    return CDN_OK;
}

static size_t window(const fusion_list_t *l, size_t w)
{
    return w && w < l->n ? w : l->n;
}

int fusion_rrf(const fusion_list_t *lists, size_t nlists, uint32_t rank_constant,
               size_t rank_window, size_t k, fusion_hit_t *out, size_t *n_out)
{
    size_t total = 0;
    *n_out = 0;
    for (size_t l = 0; l < nlists; l++) {
        if (lists[l].n && !lists[l].ids)
            return CDN_ERR_INVALID;
        total += window(&lists[l], rank_window);
    }
    contrib_t *c = cdn_malloc((total ? total : 1) * sizeof *c);
    if (!c)
        return CDN_ERR_NOMEM;
    double rc = rank_constant ? rank_constant : 60;
    size_t n = 0;
    for (size_t l = 0; l < nlists; l++)
        for (size_t r = 0; r < window(&lists[l], rank_window); r++)
            c[n++] = (contrib_t){lists[l].ids[r], (uint32_t)l, 1.0 / (rc + (double)(r + 1))};
    return finish(c, n, k, out, n_out);
}

int fusion_linear(const fusion_list_t *lists, const float *weights, size_t nlists,
                  size_t rank_window, size_t k, fusion_hit_t *out, size_t *n_out)
{
    size_t total = 0;
    *n_out = 0;
    for (size_t l = 0; l < nlists; l++) {
        if (lists[l].n && (!lists[l].ids || !lists[l].scores))
            return CDN_ERR_INVALID;
        total += window(&lists[l], rank_window);
    }
    contrib_t *c = cdn_malloc((total ? total : 1) * sizeof *c);
    if (!c)
        return CDN_ERR_NOMEM;
    size_t n = 0;
    for (size_t l = 0; l < nlists; l++) {
        size_t w = window(&lists[l], rank_window);
        double lo = 0, hi = 0, wt = weights ? weights[l] : 1.0;
        for (size_t r = 0; r < w; r++) {
            double s = lists[l].scores[r];
            lo = r == 0 || s < lo ? s : lo;
            hi = r == 0 || s > hi ? s : hi;
        }
        for (size_t r = 0; r < w; r++) {
            double s = hi > lo ? (lists[l].scores[r] - lo) / (hi - lo) : 1.0;
            c[n++] = (contrib_t){lists[l].ids[r], (uint32_t)l, s * wt};
        }
    }
    return finish(c, n, k, out, n_out);
}
