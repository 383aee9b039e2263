/* quant_scan.c: the exact top-k search that prunes with the 8-bit codes (quant_exact_search),
 * and with the 1-bit codes in front (quant_bits_search). Relies on quant_int.h, quant_kern.h
 * (code kernels), exact.h (the float re-rank), topk.h, base/pool.h and CRoaring.
 *
 * Why nothing of the true top-k is pruned. For every allowed row r the scan computes, from its
 * codes, bounds L_r <= d_r <= U_r on d_r, the distance exact_search's float kernel returns for r
 * (bounds derived below, in bounds_dot and bounds_l2, including every float rounding). Let T be
 * the k-th smallest U_r over any k rows that got one. Those k rows have d <= U <= T, so the k-th
 * smallest true distance D_k is <= T. A row with L_r > T has d_r >= L_r > T >= D_k: it is
 * strictly worse than k other rows, so no tie-break by id can bring it into the top k. The scan
 * only drops rows with L_r > T_now, and T_now (the running k-th smallest U of the rows scanned
 * so far, or of the other half's in a split scan) is such a T. The
 * survivors, a superset of the true top k, are re-ranked by exact_search_ids, whose kernels and
 * tie-break are exact_search's own: same distances, same ids. Rows without usable bounds (not
 * encoded, non-finite values, overflow risk) get L = -inf and are always re-ranked. */
#include "base/mem.h"
#include "base/pool.h"
#include "vector/exact.h"
#include "vector/quant.h"
#include "vector/quant_bound.h"
#include "vector/quant_int.h"
#include "vector/quant_kern.h"

#include <float.h>
#include <math.h>
#include <string.h>

/* Ids a scan takes from the allowed set at a time. Each block restarts the prefetch pipeline
 * (its first rows are waited for): at 1M x 384, 20% readable, 1,024 against 256 took the bit
 * scan from 2.0 - 2.6 to 1.5 - 2.2 ms p50 in three pairs of runs (4,096: no better). */
#define QUANT_BLOCK 1024
#define QUANT_PREFETCH_ROWS 8
/* Scans that read at least this many bytes of codes are split over two threads: below it,
 * handing a half to a pool worker is a large share of the scan. 1 MiB: SciFact's 5,183 x 512
 * codes (2.6 MB) split, its 20% (1,037 rows, 0.5 MB) not. The pool's idle workers poll for
 * work a while before they sleep (base/pool.c), so a split between queries close together
 * does not wait for a thread to wake. */
#define QUANT_PAR_MIN_BYTES (1u << 20)

/* ---- search ---- */

typedef struct cand {
    uint32_t id;
    float lb; /* lower bound on the row's float distance, rounded down */
} cand_t;

typedef struct qscan {
    const quant_t *q;
    quant_snap_t r; /* directory and count as of the search's start */
    const vec_view_t *v;
    vec_metric_t m;
    int l2;
    quant_kern4_fn kern4, kern4x; /* four consecutive rows / four scattered rows */
    int16_t *w;                   /* per-query integer weights, stride entries, pads zero */
    quant_bound_t b;              /* what turns a row's integer sum into its bounds */
    /* The shortcut (quant_bound_drop_set): a row whose e_r is at most e_in and which passes
     * `drop` is dropped unjudged; drop was set for t_drop and is set again when t changes.
     * e_in is half a step in every dimension, the error of a row inside the trained range;
     * rows outside it (larger e_r) are judged as before. */
    double e_in, t_drop;
    quant_drop_t drop;
    double t; /* the running threshold T: topk_bound(&ub), or the other half's if smaller */
    /* A scan split in two (scan_split): each half publishes its T in `mine` and reads the
     * other's in `peer` (either is an upper bound on k distances, so either may drop rows of
     * both halves); NULL when the scan is not split. */
    double *mine, *peer;
    topk_t ub;                    /* the k smallest upper bounds seen */
    const quant_bits_query_t *bq; /* quant_bits_search: the 1-bit filter before the codes */
    /* With bq: the k smallest 1-bit estimates seen. A row that enters goes to the codes at once
     * (it is likely near the top and tightens t early); every other row the filter keeps waits
     * in `def` with its interval's lower end, and is read in 8 bits only if that end still
     * reaches t once every row has been estimated (finish_deferred): most no longer do. */
    topk_t eb;
    cand_t *def;
    size_t n_def, cap_def;
    cand_t *cand;
    size_t n_cand, cap_cand;
    quant_stats_t st;
} qscan_t;

/* Drops candidates whose lower bound already exceeds bound t. */
static void compact(qscan_t *c, float t)
{
    size_t n = 0;
    for (size_t i = 0; i < c->n_cand; i++)
        if (!(c->cand[i].lb > t))
            c->cand[n++] = c->cand[i];
    c->n_cand = n;
}

static int add_cand(qscan_t *c, uint32_t id, float lb)
{
    if (c->n_cand == c->cap_cand) {
        compact(c, topk_bound(&c->ub));
        if (c->n_cand >= c->cap_cand / 2 &&
            cdn_grow((void **)&c->cand, &c->cap_cand, c->n_cand + 1, sizeof(cand_t)))
            return CDN_ERR_NOMEM;
    }
    c->cand[c->n_cand++] = (cand_t){id, lb};
    return CDN_OK;
}

/* Judges one row from its integer code sum: dropped if its lower bound already exceeds the
 * running threshold (then its upper bound could not enter the heap either), else its upper bound
 * joins the heap and the row becomes a candidate. */
static int judge_row(qscan_t *c, uint32_t id, int32_t s, float e)
{
    double lo, hi;
    quant_bound_row(&c->b, s, e, quant_row_r(&c->r, id), &lo, &hi);
    if (lo > c->t)
        return CDN_OK;
    float ub = round_up_f(hi);
    if (!isnan(ub) && topk_push(&c->ub, id, ub) && topk_bound(&c->ub) < c->t) {
        c->t = topk_bound(&c->ub);
        if (c->mine)
            __atomic_store(c->mine, &c->t, __ATOMIC_RELAXED);
    }
    if (lo > c->t)
        return CDN_OK;
    return add_cand(c, id, round_down_f(lo));
}

/* Prefetches the codes of ids[j] (unless it directly follows ids[j - 1]: a run of consecutive
 * rows is one stream the hardware follows) and its e_r / r_r, in its 1-bit row's line. */
CDN_PREFETCH_HELPER void prefetch_row(const qscan_t *c, const uint32_t *ids, size_t j, size_t n)
{
    if (j >= n)
        return;
    if (j == 0 || ids[j] != ids[j - 1] + 1) {
        const char *p = (const char *)quant_row_codes(&c->r, ids[j]);
        for (size_t off = 0; off < c->q->stride; off += 64)
            quant_prefetch(p + off);
    }
    quant_prefetch(quant_row_meta(&c->r, ids[j])); /* e_r and r_r: one line */
}

/* Lowers T to the other half's, when the scan is split and that is smaller. */
static void take_peer_t(qscan_t *c)
{
    double p;
    if (!c->peer)
        return;
    __atomic_load(c->peer, &p, __ATOMIC_RELAXED);
    if (p < c->t)
        c->t = p;
}

/* The 8-bit stage for ids[0..n) (all encoded slots, < r.count): the 4-row kernel (the last
 * group padded with repeats); rows never encoded (e_r = +inf, codes zero) become candidates,
 * rows the shortcut passes are dropped, the others go to judge_row. */
static int code_pass(qscan_t *c, const uint32_t *ids, size_t n)
{
    const quant_t *q = c->q;
    int rc = CDN_OK;
    for (size_t j = 0; j < QUANT_PREFETCH_ROWS; j++)
        prefetch_row(c, ids, j, n);
    for (size_t i = 0; rc == CDN_OK && i < n; i += 4) {
        size_t group = n - i < 4 ? n - i : 4;
        for (size_t j = i + QUANT_PREFETCH_ROWS; j < i + QUANT_PREFETCH_ROWS + 4; j++)
            prefetch_row(c, ids, j, n);
        const uint8_t *rows[4];
        for (size_t j = 0; j < 4; j++)
            rows[j] = quant_row_codes(&c->r, ids[i + (j < group ? j : group - 1)]);
        int32_t d[4];
        if (group == 4 && ids[i + 3] == ids[i] + 3)
            c->kern4(rows, c->w, q->stride, d);
        else
            c->kern4x(rows, c->w, q->stride, d);
        if (c->t != c->t_drop) {
            c->t_drop = c->t;
            quant_bound_drop_set(&c->drop, &c->b, c->e_in, c->t);
        }
        for (size_t j = 0; rc == CDN_OK && j < group; j++) {
            const quant_row_meta_t *mt = quant_row_meta(&c->r, ids[i + j]);
            float e = mt->e_r;
            if (e <= c->e_in && quant_bound_drops(&c->drop, d[j], mt->r_r))
                continue; /* its lower bound is above t: most rows end here */
            rc = e < INFINITY ? judge_row(c, ids[i + j], d[j], e)
                              : add_cand(c, ids[i + j], -INFINITY);
        }
    }
    return rc;
}

/* Rows the 1-bit filter kept (known[0..n), their lower ends and estimates): those among the k
 * best estimates so far stay in known (returned: how many), the rest are deferred. */
static size_t split_kept(qscan_t *c, uint32_t *known, size_t n, const float *lo, const float *est,
                         int *rc)
{
    size_t now = 0;
    for (size_t i = 0; *rc == CDN_OK && i < n; i++) {
        if (topk_push(&c->eb, known[i], est[i])) {
            known[now++] = known[i];
            continue;
        }
        if (c->n_def == c->cap_def &&
            cdn_grow((void **)&c->def, &c->cap_def, c->n_def + 1, sizeof(cand_t)))
            *rc = CDN_ERR_NOMEM;
        else
            c->def[c->n_def++] = (cand_t){known[i], lo[i]};
    }
    return now;
}

/* Scores ids[0..n) (all < v->count; the caller's scratch, reordered here): ids without a code
 * slot become candidates outright; with the 1-bit filter, rows it rules out stop here and the
 * rest are judged now or deferred (split_kept); the rows judged now go through the 8-bit stage
 * (code_pass). */
static int scan_ids(qscan_t *c, uint32_t *ids, size_t n)
{
    float lo[QUANT_BLOCK], est[QUANT_BLOCK];
    const uint32_t count = c->r.count;
    size_t nk = 0;
    int rc = CDN_OK;
    for (size_t i = 0; i < n; i++) { /* those with a slot move to the front, in order */
        uint32_t id = ids[i];
        if (id < count)
            ids[nk++] = id;
        else if (rc == CDN_OK)
            rc = add_cand(c, id, -INFINITY);
    }
    take_peer_t(c);
    if (c->bq && rc == CDN_OK) {
        size_t kept = quant_bits_filter(c->bq, &c->r, ids, nk, c->t, lo, est);
        c->st.filtered += nk - kept;
        nk = split_kept(c, ids, kept, lo, est, &rc);
    }
    if (rc == CDN_OK)
        rc = code_pass(c, ids, nk);
    c->st.scanned += n;
    return rc;
}

/* The deferred rows whose lower end still reaches t go through the 8-bit stage, in id order
 * (as they were deferred); the others count as filtered. */
static int finish_deferred(qscan_t *c)
{
    uint32_t ids[QUANT_BLOCK];
    size_t n = 0;
    int rc = CDN_OK;
    take_peer_t(c);
    for (size_t i = 0; rc == CDN_OK && i < c->n_def; i++) {
        if (c->def[i].lb > c->t) {
            c->st.filtered++;
            continue;
        }
        ids[n++] = c->def[i].id;
        if (n == QUANT_BLOCK) {
            rc = code_pass(c, ids, n);
            n = 0;
        }
    }
    if (rc == CDN_OK)
        rc = code_pass(c, ids, n);
    c->n_def = 0;
    return rc;
}

/* Scans the allowed ids in [lo, hi) (all ids there when allowed is NULL). */
static int scan_allowed(qscan_t *c, const roaring_bitmap_t *allowed, uint32_t lo, uint32_t hi)
{
    uint32_t ids[QUANT_BLOCK];
    int rc = CDN_OK;
    if (hi > c->v->count)
        hi = (uint32_t)c->v->count;
    if (!allowed) {
        for (uint64_t start = lo; rc == CDN_OK && start < hi; start += QUANT_BLOCK) {
            uint64_t n = hi - start < QUANT_BLOCK ? hi - start : QUANT_BLOCK;
            for (uint64_t i = 0; i < n; i++)
                ids[i] = (uint32_t)(start + i);
            rc = scan_ids(c, ids, n);
        }
        return rc == CDN_OK && c->bq ? finish_deferred(c) : rc;
    }
    roaring_uint32_iterator_t it;
    roaring_init_iterator(allowed, &it);
    if (lo > 0)
        roaring_move_uint32_iterator_equalorlarger(&it, lo);
    while (rc == CDN_OK && it.has_value) {
        uint32_t n = roaring_read_uint32_iterator(&it, ids, QUANT_BLOCK);
        uint32_t keep = n; /* ids come sorted: the first one at or past hi ends the scan */
        while (keep > 0 && ids[keep - 1] >= hi)
            keep--;
        rc = scan_ids(c, ids, keep);
        if (keep < n)
            break;
    }
    if (rc == CDN_OK && c->bq)
        rc = finish_deferred(c);
    return rc;
}

/* One half of a two-thread scan: its own heap and candidates, the query's weights shared. */
typedef struct qpart {
    qscan_t c;
    const roaring_bitmap_t *allowed;
    uint32_t lo, hi;
    size_t k;
    int rc;
} qpart_t;

static void scan_part(qpart_t *p)
{
    p->rc = topk_init(&p->c.ub, p->k);
    if (p->rc == CDN_OK && p->c.bq)
        p->rc = topk_init(&p->c.eb, p->k);
    if (p->rc == CDN_OK)
        p->rc = scan_allowed(&p->c, p->allowed, p->lo, p->hi);
}

/* The two halves of a split scan, as tasks of the process's pool: 0 is the caller's state. */
typedef struct qsplit {
    qscan_t *c;
    qpart_t *b;
    const roaring_bitmap_t *allowed;
    uint32_t mid;
    int rc;
} qsplit_t;

static void scan_half(void *arg, size_t task)
{
    qsplit_t *s = arg;
    if (task == 0)
        s->rc = scan_allowed(s->c, s->allowed, 0, s->mid);
    else
        scan_part(s->b);
}

/* Scans in two halves when there are enough rows to pay for a second thread (each half keeps
 * its own bounds; the merged heap's k-th upper bound is as tight as one thread's would be,
 * since it holds the k smallest upper bounds of all rows). The halves run on the process's
 * pool (base/pool.h), the caller taking one, so a request starts no thread; with every worker
 * busy the caller scans both, with the same result. On return c holds the merged state. */
static int scan_split(qscan_t *c, const roaring_bitmap_t *allowed, size_t k, uint64_t rows)
{
    uint32_t mid = 0;
    cdn_pool_t *pool = cdn_pool_shared();
    uint64_t row_bytes = c->bq ? c->q->bstride : c->q->stride;
    if (rows * row_bytes < QUANT_PAR_MIN_BYTES || cdn_pool_workers(pool) == 0)
        return scan_allowed(c, allowed, 0, UINT32_MAX);
    if (allowed)
        roaring_bitmap_select(allowed, (uint32_t)(rows / 2), &mid);
    else
        mid = (uint32_t)(rows / 2);
    qpart_t b = {.c = *c, .allowed = allowed, .lo = mid, .hi = UINT32_MAX, .k = k};
    b.c.ub = (topk_t){0};
    b.c.eb = (topk_t){0};
    b.c.def = NULL;
    b.c.n_def = b.c.cap_def = 0;
    b.c.cand = NULL;
    b.c.n_cand = b.c.cap_cand = 0;
    b.c.st = (quant_stats_t){0, 0, 0, 0, 0};
    double pub[2] = {c->t, c->t};
    c->mine = b.c.peer = &pub[0];
    b.c.mine = c->peer = &pub[1];
    qsplit_t s = {.c = c, .b = &b, .allowed = allowed, .mid = mid};
    cdn_pool_run(pool, 2, scan_half, &s);
    c->mine = c->peer = NULL;
    int rc = s.rc;
    if (rc == CDN_OK)
        rc = b.rc;
    for (size_t i = 0; rc == CDN_OK && i < b.c.ub.n; i++)
        topk_push(&c->ub, b.c.ub.heap[i].id, b.c.ub.heap[i].dist);
    c->t = topk_bound(&c->ub);
    for (size_t i = 0; rc == CDN_OK && i < b.c.n_cand; i++)
        rc = add_cand(c, b.c.cand[i].id, b.c.cand[i].lb);
    c->st.scanned += b.c.st.scanned;
    c->st.filtered += b.c.st.filtered;
    topk_free(&b.c.ub);
    topk_free(&b.c.eb);
    cdn_free(b.c.def);
    cdn_free(b.c.cand);
    return rc;
}

/* The largest |weight| for a stride: 255 * stride * wmax must stay below 2^31 (int32 sums). */
static int32_t weight_max(uint32_t stride)
{
    int64_t m = (INT64_C(2147483647) / (255 * (int64_t)stride)) - 1;
    return (int32_t)(m > 32767 ? 32767 : m);
}

int quant_weigh(const quant_t *q, const float *query, int l2, quant_weights_t *out)
{
    double qn2 = 0, maxw = 0, c0 = 0, pmag = 0, qq = 0;
    for (uint32_t j = 0; j < q->dim; j++) {
        double x = query[j], lo = q->lo[j], s = q->s[j];
        if (!isfinite(x))
            return 1;
        double om = l2 ? (x - lo) * s : x * s;
        if (fabs(om) > maxw) /* as fmax: om is finite, and a comparison costs no call */
            maxw = fabs(om);
        qn2 += x * x;
        c0 += x * lo;
        pmag += fabs(x) * (fabs(lo) + 255.0 * s);
        qq += (x - lo) * (x - lo);
    }
    int32_t wmax = weight_max(q->stride);
    double sigma = maxw > 0 ? maxw / wmax : 0;
    for (uint32_t j = 0; j < q->dim && sigma > 0; j++) {
        double x = query[j], om = l2 ? (x - q->lo[j]) * q->s[j] : x * q->s[j];
        double r = quant_round_even(om / sigma);
        out->w[j] = (int16_t)(r > wmax ? wmax : r < -wmax ? -wmax : r);
    }
    out->sigma = sigma;
    out->maxw = maxw;
    out->qn2 = qn2;
    out->c0 = c0;
    out->pmag = pmag;
    out->qq = qq;
    return 0;
}

/* Fills the per-query weights and constants. Returns 1 if the query has a non-finite value (then
 * the caller falls back to exact_search). */
static int prepare(qscan_t *c, const float *query)
{
    const quant_t *q = c->q;
    quant_weights_t wt = {.w = c->w};
    double s2 = 0;
    if (quant_weigh(q, query, c->l2, &wt))
        return 1;
    quant_bound_init(&c->b, q, c->m, &wt);
    for (uint32_t j = 0; j < q->dim; j++)
        s2 += (double)q->s[j] * q->s[j];
    c->e_in = 0.5 * sqrt(s2);
    c->t_drop = NAN; /* set at the first rows */
    c->drop.kind = 0;
    return 0;
}

/* Keeps the candidates whose lower bound reaches the final threshold and re-ranks them. */
static int rerank(qscan_t *c, const float *query, size_t k, topk_hit_t *out, size_t *n_out)
{
    float t = topk_bound(&c->ub);
    uint32_t *ids = cdn_malloc((c->n_cand ? c->n_cand : 1) * sizeof(uint32_t));
    if (!ids)
        return CDN_ERR_NOMEM;
    size_t n = 0;
    for (size_t i = 0; i < c->n_cand; i++)
        if (!(c->cand[i].lb > t))
            ids[n++] = c->cand[i].id;
    c->st.reranked = n;
    c->st.float_bytes = (uint64_t)n * c->q->dim * sizeof(float);
    int rc = exact_search_ids(c->v, c->m, query, ids, n, k, out, n_out, NULL);
    cdn_free(ids);
    return rc;
}

static int fallback(const vec_view_t *v, vec_metric_t m, const float *query,
                    const roaring_bitmap_t *allowed, size_t k, topk_hit_t *out, size_t *n_out,
                    quant_stats_t *stats)
{
    uint64_t scanned = 0;
    int rc = exact_search(v, m, query, allowed, k, out, n_out, &scanned);
    if (stats)
        *stats = (quant_stats_t){0, scanned, 0, scanned * v->dim * sizeof(float), 0};
    return rc;
}

/* The 8-bit scan, with the 1-bit filter in front when bits is set. */
static int search_isa(const quant_t *q, const vec_view_t *v, vec_metric_t m, vec_isa_t isa,
                      int bits, const float *query, const roaring_bitmap_t *allowed, size_t k,
                      topk_hit_t *out, size_t *n_out, quant_stats_t *stats)
{
    if (n_out)
        *n_out = 0;
    if (stats)
        *stats = (quant_stats_t){0, 0, 0, 0, 0};
    if (!q || !v || !query || (k > 0 && !out) || (unsigned)m > VEC_METRIC_L2 || v->dim != q->dim ||
        (v->count && (!v->base || v->stride < v->dim)))
        return CDN_ERR_INVALID;
    qscan_t c = {
        .q = q, .r = quant_snap(q), .v = v, .m = m, .l2 = m == VEC_METRIC_L2, .t = INFINITY};
    c.kern4 = quant_kern4_for(isa, 0);
    c.kern4x = quant_kern4_for(isa, 1);
    if (!c.kern4 || !c.kern4x)
        return CDN_ERR_UNSUPPORTED;
    if (!q->trained || k == 0 || v->count == 0)
        return fallback(v, m, query, allowed, k, out, n_out, stats);
    c.w = cdn_aligned_alloc(64, (size_t)q->stride * sizeof(int16_t));
    if (!c.w)
        return CDN_ERR_NOMEM;
    memset(c.w, 0, (size_t)q->stride * sizeof(int16_t));
    if (prepare(&c, query)) {
        cdn_free(c.w);
        return fallback(v, m, query, allowed, k, out, n_out, stats);
    }
    quant_bits_query_t *bq = NULL;
    int rc = bits ? quant_bits_query_new(q, m, isa, query, &bq) : CDN_OK;
    c.bq = bq;
    if (rc == CDN_OK)
        rc = topk_init(&c.ub, k);
    if (rc == CDN_OK && bq)
        rc = topk_init(&c.eb, k);
    if (rc == CDN_OK)
        rc = scan_split(&c, allowed, k,
                        allowed ? roaring_bitmap_get_cardinality(allowed) : (uint64_t)v->count);
    if (rc == CDN_OK)
        rc = rerank(&c, query, k, out, n_out);
    c.st.code_bytes =
        (c.st.scanned - c.st.filtered) * q->dim + (bq ? c.st.scanned * q->bstride : 0);
    if (stats && rc == CDN_OK)
        *stats = c.st;
    quant_bits_query_free(bq);
    topk_free(&c.ub);
    topk_free(&c.eb);
    cdn_free(c.def);
    cdn_free(c.cand);
    cdn_free(c.w);
    return rc;
}

int quant_exact_search_isa(const quant_t *q, const vec_view_t *v, vec_metric_t m, vec_isa_t isa,
                           const float *query, const roaring_bitmap_t *allowed, size_t k,
                           topk_hit_t *out, size_t *n_out, quant_stats_t *stats)
{
    return search_isa(q, v, m, isa, 0, query, allowed, k, out, n_out, stats);
}

int quant_bits_search_isa(const quant_t *q, const vec_view_t *v, vec_metric_t m, vec_isa_t isa,
                          const float *query, const roaring_bitmap_t *allowed, size_t k,
                          topk_hit_t *out, size_t *n_out, quant_stats_t *stats)
{
    return search_isa(q, v, m, isa, 1, query, allowed, k, out, n_out, stats);
}

/* The best instruction set with an 8-bit kernel (AVX-512 without AVX-512BW has none here) and,
 * for the bit scan, a popcount kernel (AVX-512 needs VPOPCNTDQ too). */
static vec_isa_t best_isa(int bits)
{
    vec_isa_t isa = vec_isa_best();
    while (isa > VEC_ISA_SCALAR && (!quant_kern4_for(isa, 0) || (bits && !quant_bits_isa_ok(isa))))
        isa = (vec_isa_t)(isa - 1);
    return isa;
}

int quant_exact_search(const quant_t *q, const vec_view_t *v, vec_metric_t m, const float *query,
                       const roaring_bitmap_t *allowed, size_t k, topk_hit_t *out, size_t *n_out,
                       quant_stats_t *stats)
{
    return search_isa(q, v, m, best_isa(0), 0, query, allowed, k, out, n_out, stats);
}

int quant_bits_search(const quant_t *q, const vec_view_t *v, vec_metric_t m, const float *query,
                      const roaring_bitmap_t *allowed, size_t k, topk_hit_t *out, size_t *n_out,
                      quant_stats_t *stats)
{
    return search_isa(q, v, m, best_isa(1), 1, query, allowed, k, out, n_out, stats);
}

int quant_code_dot(const quant_t *q, vec_isa_t isa, const int16_t *w, uint32_t id, int32_t *out)
{
    if (!q || !w || !out || id >= quant_count(q))
        return CDN_ERR_INVALID;
    quant_snap_t r = quant_snap(q);
    int32_t wmax = weight_max(q->stride);
    for (uint32_t j = 0; j < q->dim; j++)
        if (w[j] > wmax || w[j] < -wmax)
            return CDN_ERR_INVALID;
    quant_kern4_fn kern4 = quant_kern4_for(isa, id % 2);
    if (!kern4)
        return CDN_ERR_UNSUPPORTED;
    int16_t *buf = cdn_aligned_alloc(64, (size_t)q->stride * sizeof(int16_t));
    if (!buf)
        return CDN_ERR_NOMEM;
    memset(buf, 0, (size_t)q->stride * sizeof(int16_t));
    memcpy(buf, w, q->dim * sizeof(int16_t));
    /* The row sits in lane id % 4 with row 0 around it: lanes must not leak into each other. */
    const uint8_t *rows[4] = {quant_row_codes(&r, 0), quant_row_codes(&r, 0),
                              quant_row_codes(&r, 0), quant_row_codes(&r, 0)};
    rows[id % 4] = quant_row_codes(&r, id);
    int32_t d[4];
    kern4(rows, buf, q->stride, d);
    *out = d[id % 4];
    cdn_free(buf);
    return CDN_OK;
}
