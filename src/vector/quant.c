/* quant.c: 8-bit per-dimension codes of float rows: training, encoding, the chunked storage
 * both scans read (quant_scan.c searches with them, quant_bits.c adds the 1-bit codes).
 * Relies on quant_int.h and base/mem.h. */
#include "vector/quant.h"
#include "base/mem.h"
#include "vector/quant_int.h"

#include <math.h>
#include <string.h>

size_t quant_chunk_bytes(const quant_t *q)
{
    return (size_t)QUANT_CHUNK_ROWS * (q->stride + q->bstride);
}

int quant_create(uint32_t dim, quant_t **out, cdn_err_t *err)
{
    if (!out)
        return cdn_err_set(err, CDN_ERR_INVALID, "quant_create: out is NULL; pass a quant_t **");
    *out = NULL;
    if (dim < 1 || dim > 65536)
        return cdn_err_set(err, CDN_ERR_INVALID,
                           "quant dim is %u; it must be 1..65536, the vector field's dimension",
                           dim);
    quant_t *q = cdn_calloc(1, sizeof *q);
    if (!q)
        return cdn_err_set(err, CDN_ERR_NOMEM, "quant_create: out of memory");
    q->dim = dim;
    q->stride = (dim + 31u) & ~31u;
    q->lo = cdn_calloc(q->stride, sizeof(float));
    q->s = cdn_calloc(q->stride, sizeof(float));
    if (!q->lo || !q->s || quant_bits_init(q)) {
        quant_free(q);
        return cdn_err_set(err, CDN_ERR_NOMEM, "quant_create: out of memory");
    }
    *out = q;
    return CDN_OK;
}

void quant_free(quant_t *q)
{
    if (!q)
        return;
    for (size_t i = 0; i < q->n_slabs; i++)
        cdn_free(q->slabs[i]);
    cdn_free(q->slabs);
    cdn_free(q->chunks);
    for (size_t i = 0; i < q->n_retired; i++)
        cdn_free(q->retired[i]);
    cdn_free(q->lo);
    cdn_free(q->s);
    quant_bits_free(q);
    cdn_free(q);
}

int quant_is_trained(const quant_t *q)
{
    return q && q->trained;
}

uint32_t quant_count(const quant_t *q)
{
    return q ? __atomic_load_n(&q->count, __ATOMIC_ACQUIRE) : 0;
}

size_t quant_memory(const quant_t *q)
{
    if (!q)
        return 0;
    return sizeof *q + 2 * (size_t)q->stride * sizeof(float) + q->cap_chunks * sizeof(uint8_t *) +
           q->retired_bytes + q->n_chunks * quant_chunk_bytes(q);
}

static int check_view(const quant_t *q, const vec_view_t *v, cdn_err_t *err)
{
    if (!q || !v)
        return cdn_err_set(err, CDN_ERR_INVALID, "quant: quantizer or view is NULL");
    if (v->dim != q->dim)
        return cdn_err_set(err, CDN_ERR_INVALID,
                           "quant: the view has %u dimensions; the quantizer expects %u", v->dim,
                           q->dim);
    if (v->count && (!v->base || v->stride < v->dim))
        return cdn_err_set(err, CDN_ERR_INVALID,
                           "quant: the view has no rows or a stride below dim");
    return CDN_OK;
}

int quant_train(quant_t *q, const vec_view_t *v, const uint32_t *ids, size_t n, cdn_err_t *err)
{
    int rc = check_view(q, v, err);
    if (rc)
        return rc;
    if (n == 0 || (!ids && n > v->count))
        return cdn_err_set(
            err, CDN_ERR_INVALID,
            "quant_train: %zu training rows requested, %u in the view; pass 1..count", n, v->count);
    float *hi = cdn_malloc((size_t)q->dim * sizeof(float));
    double *sum = cdn_calloc(q->dim, sizeof(double));
    uint64_t *cnt = cdn_calloc(q->dim, sizeof(uint64_t));
    if (!hi || !sum || !cnt) {
        cdn_free(hi);
        cdn_free(sum);
        cdn_free(cnt);
        return cdn_err_set(err, CDN_ERR_NOMEM, "quant_train: out of memory");
    }
    for (uint32_t j = 0; j < q->dim; j++) {
        q->lo[j] = INFINITY;
        hi[j] = -INFINITY;
    }
    for (size_t i = 0; i < n; i++) { /* row by row: the view is row-major */
        uint32_t id = ids ? ids[i] : (uint32_t)i;
        if (id >= v->count) {
            cdn_free(hi);
            cdn_free(sum);
            cdn_free(cnt);
            q->trained = 0; /* lo is half-updated: refuse to encode with it */
            return cdn_err_set(err, CDN_ERR_INVALID,
                               "quant_train: training id %u is past the view's %u rows", id,
                               v->count);
        }
        const float *x = vec_row(v, id);
        for (uint32_t j = 0; j < q->dim; j++)
            if (isfinite(x[j])) {
                q->lo[j] = x[j] < q->lo[j] ? x[j] : q->lo[j];
                hi[j] = x[j] > hi[j] ? x[j] : hi[j];
                sum[j] += x[j];
                cnt[j]++;
            }
    }
    for (uint32_t j = 0; j < q->dim; j++) /* the 1-bit codes' centre: the rows' mean */
        q->center[j] = cnt[j] ? (float)(sum[j] / (double)cnt[j]) : 0;
    cdn_free(sum);
    cdn_free(cnt);
    for (uint32_t j = 0; j < q->dim; j++) {
        if (q->lo[j] > hi[j]) /* no finite value: each row of this dimension carries its error */
            q->lo[j] = hi[j] = 0;
        /* Any lo / s are correct (each row's true error is measured); these make it small. */
        q->s[j] = (float)(((double)hi[j] - (double)q->lo[j]) / 255.0);
    }
    cdn_free(hi);
    q->trained = 1;
    q->count = 0; /* exclusive access: no search holds these chunks */
    for (size_t i = 0; i < q->n_slabs; i++)
        cdn_free(q->slabs[i]);
    q->n_slabs = q->n_chunks = q->slab_left = 0;
    return CDN_OK;
}

/* Writes the codes of x to c (dim bytes) and returns e = ||x - x^||_2 rounded up, +inf when x
 * holds a non-finite value. x^_j = lo_j + s_j c_j is evaluated in double, where s_j c_j is exact
 * (24 x 8 bits) and the two roundings are covered by the relative and absolute slack added. */
static float encode_row(const quant_t *q, const float *x, uint8_t *c, float *r)
{
    double e2 = 0, n2 = 0, r2 = 0;
    int bad = 0;
    for (uint32_t j = 0; j < q->dim; j++) {
        double xj = x[j], lo = q->lo[j], s = q->s[j], code = 0;
        if (!isfinite(xj)) {
            bad = 1;
            c[j] = 0;
            continue;
        }
        if (s > 0) {
            code = (xj - lo) / s;
            code = quant_round_even(code < 0 ? 0 : code > 255 ? 255 : code);
        }
        c[j] = (uint8_t)code;
        r2 += (s * code) * (s * code);
        double d = xj - (lo + s * code);
        e2 += d * d;
        n2 += xj * xj;
    }
    *r = (float)r2;
    if (bad)
        return INFINITY;
    return round_up_f(sqrt(e2) * (1.0 + 0x1p-40) + sqrt(n2) * 0x1p-50);
}

/* The next chunk's memory: cut from the newest slab, or from a new one. */
static uint8_t *next_chunk(quant_t *q)
{
    if (q->slab_left == 0) {
        size_t chunks = q->n_chunks ? q->n_chunks : 1;
        chunks = chunks > QUANT_SLAB_MAX_CHUNKS ? QUANT_SLAB_MAX_CHUNKS : chunks;
        if (q->n_slabs == q->cap_slabs &&
            cdn_grow((void **)&q->slabs, &q->cap_slabs, q->n_slabs + 1, sizeof(uint8_t *)))
            return NULL;
        size_t bytes = chunks * quant_chunk_bytes(q);
        uint8_t *slab = cdn_aligned_alloc(bytes >= CDN_HUGE_PAGE ? CDN_HUGE_PAGE : 64, bytes);
        if (!slab)
            return NULL;
        cdn_advise_huge(slab, bytes);
        q->slabs[q->n_slabs++] = slab;
        q->slab_next = slab;
        q->slab_left = chunks;
    }
    uint8_t *ch = q->slab_next; /* chunk sizes are multiples of 64: every chunk stays aligned */
    q->slab_next += quant_chunk_bytes(q);
    q->slab_left--;
    return ch;
}

/* Makes sure chunks cover rows 0..need-1; new rows are unknown (e = +inf) until encoded. */
int quant_reserve_rows(quant_t *q, uint64_t need)
{
    size_t want = (size_t)((need + QUANT_CHUNK_ROWS - 1) >> QUANT_CHUNK_SHIFT);
    if (want > q->cap_chunks) {
        size_t cap = q->cap_chunks ? q->cap_chunks : 8;
        while (cap < want)
            cap *= 2;
        if (q->cap_chunks && q->n_retired == QUANT_MAX_RETIRED)
            return CDN_ERR_NOMEM;
        uint8_t **dir = cdn_calloc(cap, sizeof(uint8_t *));
        if (!dir)
            return CDN_ERR_NOMEM;
        if (q->n_chunks)
            memcpy(dir, q->chunks, q->n_chunks * sizeof(uint8_t *));
        if (q->chunks) { /* a running search may still hold it */
            q->retired[q->n_retired++] = q->chunks;
            q->retired_bytes += q->cap_chunks * sizeof(uint8_t *);
        }
        __atomic_store_n(&q->chunks, dir, __ATOMIC_RELEASE);
        q->cap_chunks = cap;
    }
    while (q->n_chunks < want) {
        uint8_t *ch = next_chunk(q);
        if (!ch)
            return CDN_ERR_NOMEM;
        memset(ch, 0, quant_chunk_bytes(q)); /* pads stay zero forever */
        uint8_t *bits = ch + (size_t)QUANT_CHUNK_ROWS * q->stride;
        for (size_t i = 0; i < QUANT_CHUNK_ROWS; i++) { /* unknown until encoded */
            quant_row_meta_t *m = (quant_row_meta_t *)(bits + i * q->bstride + q->bwords * 8u);
            m->e = m->e_r = INFINITY;
        }
        q->chunks[q->n_chunks++] = ch; /* read only for ids below a later-published count */
    }
    return CDN_OK;
}

int quant_encode_rows(quant_t *q, const vec_view_t *v, uint32_t first, uint32_t n, cdn_err_t *err)
{
    int rc = check_view(q, v, err);
    if (rc)
        return rc;
    if (!q->trained)
        return cdn_err_set(err, CDN_ERR_INVALID,
                           "quant_encode_rows: the quantizer is untrained; call quant_train first");
    if ((uint64_t)first + n > v->count)
        return cdn_err_set(err, CDN_ERR_INVALID,
                           "quant_encode_rows: rows %u..%llu are past the view's %u rows", first,
                           (unsigned long long)first + n, v->count);
    if (quant_reserve_rows(q, (uint64_t)first + n))
        return cdn_err_set(err, CDN_ERR_NOMEM, "quant_encode_rows: out of memory");
    float *scratch = cdn_malloc(3 * (size_t)q->bdim * sizeof(float));
    if (!scratch)
        return cdn_err_set(err, CDN_ERR_NOMEM, "quant_encode_rows: out of memory");
    quant_snap_t r = quant_snap(q);
    r.dir = q->chunks; /* the writer's: it may have just grown */
    for (uint32_t i = 0; i < n; i++) {
        quant_bits_encode(q, vec_row(v, first + i), scratch, quant_row_bits(&r, first + i));
        *quant_row_err(&r, first + i) = encode_row(
            q, vec_row(v, first + i), quant_row_codes(&r, first + i), quant_row_r(&r, first + i));
    }
    cdn_free(scratch);
    if (first + n > q->count) /* publish: the rows are complete before a search can see them */
        __atomic_store_n(&q->count, first + n, __ATOMIC_RELEASE);
    return CDN_OK;
}

int quant_rows_match(const quant_t *q, const vec_view_t *v, uint32_t n)
{
    quant_snap_t r = quant_snap(q);
    uint8_t *c = cdn_malloc(q->stride), *b = cdn_aligned_alloc(64, q->bstride);
    float *scratch = cdn_malloc(3 * (size_t)q->bdim * sizeof(float));
    int same = c && b && scratch;
    for (uint32_t i = 0; same && r.count && i <= n; i++) {
        /* n rows spread over the range, then the last one (the most recently encoded). */
        uint32_t id = i < n ? (uint32_t)((uint64_t)i * r.count / n) : r.count - 1;
        memset(c, 0, q->stride);
        memset(b, 0, q->bstride);
        quant_row_meta_t *m = (quant_row_meta_t *)(b + r.bmeta);
        quant_bits_encode(q, vec_row(v, id), scratch, b);
        m->e_r = encode_row(q, vec_row(v, id), c, &m->r_r);
        same = !memcmp(c, quant_row_codes(&r, id), q->stride) &&
               !memcmp(b, quant_row_bits(&r, id), r.bmeta + sizeof *m);
    }
    cdn_free(c);
    cdn_free(b);
    cdn_free(scratch);
    return same;
}

int quant_compact(const quant_t *q, const uint32_t *map, uint32_t n_map, uint32_t n_new,
                  quant_t **out)
{
    quant_t *o = NULL;
    *out = NULL;
    if (!q || !q->trained || (n_map && !map))
        return CDN_ERR_INVALID;
    quant_snap_t r = quant_snap(q);
    if (n_map > r.count)
        n_map = r.count; /* rows past the count were never encoded */
    for (uint32_t i = 0; i < n_map; i++)
        if (map[i] != UINT32_MAX && map[i] >= n_new)
            return CDN_ERR_INVALID;
    if (quant_create(q->dim, &o, NULL))
        return CDN_ERR_NOMEM;
    memcpy(o->lo, q->lo, q->stride * sizeof(float));
    memcpy(o->s, q->s, q->stride * sizeof(float));
    memcpy(o->center, q->center, q->stride * sizeof(float));
    o->trained = 1;
    if (n_new && quant_reserve_rows(o, n_new)) {
        quant_free(o);
        return CDN_ERR_NOMEM;
    }
    quant_snap_t w = quant_snap(o);
    w.dir = o->chunks;
    for (uint32_t i = 0; i < n_map; i++) {
        if (map[i] == UINT32_MAX)
            continue;
        memcpy(quant_row_codes(&w, map[i]), quant_row_codes(&r, i), q->stride);
        memcpy(quant_row_bits(&w, map[i]), quant_row_bits(&r, i), q->bstride);
    }
    __atomic_store_n(&o->count, n_new, __ATOMIC_RELEASE);
    *out = o;
    return CDN_OK;
}
