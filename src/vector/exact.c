/* exact.c: the exhaustive filtered scan: allowed ids in blocks, rows prefetched ahead, four rows
 * per kernel call, a bounded heap. Relies on distance.h, topk.h and CRoaring's bulk iterator. */
#include "vector/exact.h"
#include "base/err.h"
#include "base/mem.h"

/* Ids are pulled from the bitmap this many at a time: big enough to amortise the iterator,
 * small enough to sit on the stack. A multiple of 4 so that only the last block has a tail. */
#define EXACT_BLOCK 256
/* Rows prefetched ahead of the one being scored, on sparse allowed sets. A 384-d row is 24
 * cache lines; 8 rows ahead keeps misses outstanding across the jumps between allowed rows,
 * which the hardware prefetcher cannot predict. (-D to tune; see docs/internals/vector.md.) */
#ifndef EXACT_PREFETCH_ROWS
#define EXACT_PREFETCH_ROWS 8
#endif

typedef struct scan {
    const float *q;
    const vec_view_t *v;
    vec_dist4_fn four, four_seq; /* scattered rows / four consecutive rows */
    topk_t top;
    uint64_t scanned;
} scan_t;

/* Into L2 (hint 1), as the code scans do (quant_int.h's quant_prefetch): eight rows of 24 lines
 * prefetched into L1 hold the core's L1 miss buffers, and the loads of the row being scored
 * wait behind them. `cordon bench scan --size 200000`, 10% readable: 3.6 - 3.9 -> 2.1 - 3.1 ms
 * p50 warm; SciFact's float re-rank of the 8-bit scan's ~19 candidates 6.6 - 9.0 -> 4.3 - 4.5
 * us. */
CDN_PREFETCH_HELPER void prefetch_row(const scan_t *s, uint32_t id)
{
    const char *p = (const char *)vec_row(s->v, id);
    size_t bytes = (size_t)s->v->dim * sizeof(float);
    for (size_t off = 0; off < bytes; off += 64)
        __builtin_prefetch(p + off, 0, 1);
}

/* Prefetches row ids[j] unless it directly follows ids[j - 1]: a run of consecutive rows is one
 * sequential stream, which the hardware prefetcher already follows. */
CDN_PREFETCH_HELPER void prefetch_ahead(const scan_t *s, const uint32_t *ids, size_t j)
{
    if (j == 0 || ids[j] != ids[j - 1] + 1)
        prefetch_row(s, ids[j]);
}

/* Scores ids[0..n) (all < count). Every row goes through the 4-row kernel, the last group padded
 * with repeats of its last row, so a row's distance never depends on where it fell in a block. */
static void scan_ids(scan_t *s, const uint32_t *ids, size_t n)
{
    size_t ahead = n < EXACT_PREFETCH_ROWS ? n : EXACT_PREFETCH_ROWS;
    for (size_t j = 0; j < ahead; j++)
        prefetch_ahead(s, ids, j);
    for (size_t i = 0; i < n; i += 4) {
        size_t group = n - i < 4 ? n - i : 4;
        for (size_t j = i + EXACT_PREFETCH_ROWS; j < i + EXACT_PREFETCH_ROWS + 4 && j < n; j++)
            prefetch_ahead(s, ids, j);
        const float *rows[4];
        for (size_t j = 0; j < 4; j++)
            rows[j] = vec_row(s->v, ids[i + (j < group ? j : group - 1)]);
        float d[4];
        if (group == 4 && ids[i + 3] == ids[i] + 3)
            s->four_seq(s->q, rows, s->v->dim, d);
        else
            s->four(s->q, rows, s->v->dim, d);
        for (size_t j = 0; j < group; j++)
            topk_push(&s->top, ids[i + j], d[j]);
    }
    s->scanned += n;
}

static void scan_all(scan_t *s)
{
    uint32_t ids[EXACT_BLOCK];
    for (uint64_t start = 0; start < s->v->count; start += EXACT_BLOCK) {
        uint64_t n = s->v->count - start < EXACT_BLOCK ? s->v->count - start : EXACT_BLOCK;
        for (uint64_t i = 0; i < n; i++)
            ids[i] = (uint32_t)(start + i);
        scan_ids(s, ids, n);
    }
}

static void scan_bitmap(scan_t *s, const roaring_bitmap_t *allowed)
{
    uint32_t ids[EXACT_BLOCK];
    roaring_uint32_iterator_t it;
    roaring_init_iterator(allowed, &it);
    while (it.has_value) {
        uint32_t n = roaring_read_uint32_iterator(&it, ids, EXACT_BLOCK);
        /* Ids come sorted: the first one past the view ends the scan. */
        uint32_t keep = n;
        while (keep > 0 && ids[keep - 1] >= s->v->count)
            keep--;
        scan_ids(s, ids, keep);
        if (keep < n)
            break;
    }
}

static void scan_array(scan_t *s, const uint32_t *ids, size_t n_ids)
{
    uint32_t block[EXACT_BLOCK];
    size_t n = 0;
    for (size_t i = 0; i < n_ids; i++) {
        if (ids[i] >= s->v->count)
            continue;
        block[n++] = ids[i];
        if (n == EXACT_BLOCK) {
            scan_ids(s, block, n);
            n = 0;
        }
    }
    scan_ids(s, block, n);
}

/* Checks arguments and prepares s with its heap kept in the caller's out array. */
static int scan_begin(scan_t *s, const vec_view_t *v, vec_metric_t m, vec_isa_t isa,
                      const float *query, size_t k, size_t limit, topk_hit_t *out)
{
    if (!v || !query || (k > 0 && !out) || (unsigned)m > VEC_METRIC_L2 ||
        (v->count && (!v->base || v->stride < v->dim)))
        return CDN_ERR_INVALID;
    s->four = vec_dist4_for_isa(m, isa);
    s->four_seq = vec_dist4_seq_for_isa(m, isa);
    if (!s->four || !s->four_seq)
        return CDN_ERR_UNSUPPORTED;
    s->q = query;
    s->v = v;
    s->scanned = 0;
    topk_init_buf(&s->top, out, k < limit ? k : limit);
    return CDN_OK;
}

static void scan_end(scan_t *s, topk_hit_t *out, size_t *n_out, uint64_t *scanned)
{
    size_t n = 0;
    if (s->top.k)
        topk_extract(&s->top, out, &n);
    if (n_out)
        *n_out = n;
    if (scanned)
        *scanned = s->scanned;
}

int exact_search_isa(const vec_view_t *v, vec_metric_t m, vec_isa_t isa, const float *query,
                     const roaring_bitmap_t *allowed, size_t k, topk_hit_t *out, size_t *n_out,
                     uint64_t *scanned)
{
    scan_t s;
    if (n_out)
        *n_out = 0;
    if (scanned)
        *scanned = 0;
    int rc = scan_begin(&s, v, m, isa, query, k, v ? v->count : 0, out);
    if (rc != CDN_OK)
        return rc;
    if (s.top.k == 0)
        return CDN_OK;
    if (allowed)
        scan_bitmap(&s, allowed);
    else
        scan_all(&s);
    scan_end(&s, out, n_out, scanned);
    return CDN_OK;
}

int exact_search(const vec_view_t *v, vec_metric_t m, const float *query,
                 const roaring_bitmap_t *allowed, size_t k, topk_hit_t *out, size_t *n_out,
                 uint64_t *scanned)
{
    return exact_search_isa(v, m, vec_isa_best(), query, allowed, k, out, n_out, scanned);
}

int exact_search_ids(const vec_view_t *v, vec_metric_t m, const float *query, const uint32_t *ids,
                     size_t n_ids, size_t k, topk_hit_t *out, size_t *n_out, uint64_t *scanned)
{
    scan_t s;
    if (n_out)
        *n_out = 0;
    if (scanned)
        *scanned = 0;
    if (n_ids && !ids)
        return CDN_ERR_INVALID;
    int rc = scan_begin(&s, v, m, vec_isa_best(), query, k, n_ids, out);
    if (rc != CDN_OK)
        return rc;
    if (s.top.k == 0)
        return CDN_OK;
    scan_array(&s, ids, n_ids);
    scan_end(&s, out, n_out, scanned);
    return CDN_OK;
}
