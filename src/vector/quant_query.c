/* quant_query.c: approximate distances from 8-bit codes, for graph traversals that read a
 * quarter of the bytes a float row costs and re-score only their final list in float. Relies on
 * quant_int.h (the code layout, query weights), quant_kern.h (the integer kernels), distance.h.
 *
 * The estimate is the distance to the reconstruction x^_j = lo_j + s_j c_j. For L2,
 * ||q - x^||^2 = ||q - lo||^2 - 2 sum (q_j - lo_j) s_j c_j + sum (s_j c_j)^2, the last term
 * stored per row at encoding; for dot and cosine q.x^ = sum q_j lo_j + sum q_j s_j c_j. The
 * middle sums come from the same exact integer kernel the exact scan uses (quant_kern.h), with
 * the query's weights rounded to 16 bits (a relative error near 2^-15 of the largest weight). */
#include "vector/quant_bound.h"
#include "vector/quant_int.h"

#include <math.h>
#include <string.h>

#include "base/mem.h"
#include "vector/quant_kern.h"

struct quant_query {
    quant_snap_t r; /* directory and count as of quant_query_new */
    const vec_view_t *v;
    const float *query;
    vec_dist_fn dist; /* the float kernel, for rows without codes */
    quant_kern4_fn kern4x;
    vec_metric_t m;
    int16_t *w;
    float sigma, base; /* estimate = base + scale * sigma * sum + (L2) r_r */
    float scale;
    quant_bound_t b; /* for quant_query_bounds */
};

int quant_query_new(const quant_t *q, const vec_view_t *v, vec_metric_t m, const float *query,
                    quant_query_t **out)
{
    if (!out)
        return CDN_ERR_INVALID;
    *out = NULL;
    if (!q || !v || !query || !q->trained || v->dim != q->dim || (unsigned)m > VEC_METRIC_L2)
        return CDN_ERR_INVALID;
    vec_isa_t isa = vec_isa_best();
    while (isa > VEC_ISA_SCALAR && !quant_kern4_for(isa, 1))
        isa = (vec_isa_t)(isa - 1);
    quant_query_t *qq = cdn_calloc(1, sizeof *qq);
    if (!qq)
        return CDN_ERR_NOMEM;
    qq->w = cdn_aligned_alloc(64, (size_t)q->stride * sizeof(int16_t));
    if (!qq->w) {
        cdn_free(qq);
        return CDN_ERR_NOMEM;
    }
    memset(qq->w, 0, (size_t)q->stride * sizeof(int16_t));
    int l2 = m == VEC_METRIC_L2;
    quant_weights_t wt = {.w = qq->w};
    if (quant_weigh(q, query, l2, &wt)) {
        quant_query_free(qq);
        return CDN_ERR_INVALID;
    }
    qq->r = quant_snap(q);
    qq->v = v;
    qq->query = query;
    qq->m = m;
    qq->dist = vec_dist_for(m);
    qq->kern4x = quant_kern4_for(isa, 1);
    qq->sigma = (float)wt.sigma;
    quant_bound_init(&qq->b, q, m, &wt);
    if (l2) {
        qq->base = (float)wt.qq;
        qq->scale = -2.0f;
    } else {
        qq->base = (float)((m == VEC_METRIC_COSINE ? 1.0 : 0.0) - wt.c0);
        qq->scale = -1.0f;
    }
    *out = qq;
    return CDN_OK;
}

void quant_query_free(quant_query_t *qq)
{
    if (!qq)
        return;
    cdn_free(qq->w);
    cdn_free(qq);
}

/* Codes are usable for id: encoded (finite error) and inside the snapshot. */
static inline int has_codes(const quant_query_t *qq, uint32_t id)
{
    return id < qq->r.count && *quant_row_err(&qq->r, id) < INFINITY;
}

void quant_query_score(const quant_query_t *qq, const uint32_t *ids, uint32_t n, float *out)
{
    uint32_t i = 0;
    int l2 = qq->m == VEC_METRIC_L2;
    while (i < n) {
        uint32_t take[4], slot[4], g = 0;
        /* Gather up to four rows with codes; the others are scored in float on the way. */
        for (; i < n && g < 4; i++) {
            if (has_codes(qq, ids[i])) {
                take[g] = ids[i];
                slot[g++] = i;
            } else {
                out[i] = qq->dist(qq->query, vec_row(qq->v, ids[i]), qq->v->dim);
            }
        }
        if (!g)
            break;
        const uint8_t *rows[4];
        for (uint32_t j = 0; j < 4; j++)
            rows[j] = quant_row_codes(&qq->r, take[j < g ? j : g - 1]);
        int32_t s[4];
        qq->kern4x(rows, qq->w, qq->r.stride, s);
        for (uint32_t j = 0; j < g; j++) {
            float d = qq->base + qq->scale * qq->sigma * (float)s[j];
            if (l2)
                d += *quant_row_r(&qq->r, take[j]);
            out[slot[j]] = d;
        }
    }
}

void quant_query_prefetch(const quant_query_t *qq, uint32_t id)
{
    if (id >= qq->r.count)
        return;
    const char *p = (const char *)quant_row_codes(&qq->r, id);
    for (uint32_t off = 0; off < qq->r.stride; off += 64)
        quant_prefetch(p + off);
    quant_prefetch(quant_row_meta(&qq->r, id)); /* e_r and r_r share a line */
}

void quant_query_bounds(const quant_query_t *qq, const uint32_t *ids, uint32_t n, float *lo,
                        float *hi)
{
    for (uint32_t i = 0; i < n; i += 4) {
        uint32_t group = n - i < 4 ? n - i : 4;
        const uint8_t *rows[4];
        int32_t s[4] = {0, 0, 0, 0};
        uint32_t coded = 0, with = 0;
        for (uint32_t j = 0; j < group; j++)
            if (has_codes(qq, ids[i + j])) {
                coded++;
                with = ids[i + j];
            }
        if (coded) { /* rows without codes score a row that has some: unused */
            for (uint32_t j = 0; j < 4; j++) {
                uint32_t id = ids[i + (j < group ? j : group - 1)];
                rows[j] = quant_row_codes(&qq->r, has_codes(qq, id) ? id : with);
            }
            qq->kern4x(rows, qq->w, qq->r.stride, s);
        }
        for (uint32_t j = 0; j < group; j++) {
            uint32_t id = ids[i + j];
            double l = -INFINITY, h = INFINITY;
            if (has_codes(qq, id))
                quant_bound_row(&qq->b, s[j], *quant_row_err(&qq->r, id), quant_row_r(&qq->r, id),
                                &l, &h);
            lo[i + j] = round_down_f(l);
            hi[i + j] = isnan(h) ? INFINITY : round_up_f(h);
        }
    }
}
