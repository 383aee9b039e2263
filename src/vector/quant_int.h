/* quant_int.h: the quantizer's private layout, shared by quant.c (training, encoding, the
 * exact scan) and quant_query.c (approximate scoring for graph traversal). */
#ifndef CDN_QUANT_INT_H
#define CDN_QUANT_INT_H

#include "vector/quant.h"

/* Directories retired by growth: it doubles from 8 chunks, so 2^32 rows need at most 20. */
#define QUANT_MAX_RETIRED 24

struct quant {
    uint32_t dim, stride; /* stride: dim rounded up to 32, the code and weight length */
    int trained;
    float *lo, *s; /* stride floats each, pads zero */
    /* The chunk directory. Searches load it (acquire) once; an append that outgrows it copies it,
     * publishes the copy (release) and keeps the old one in `retired` until quant_free, so a
     * search that started earlier keeps reading valid memory. */
    uint8_t **chunks;
    size_t n_chunks, cap_chunks;
    uint8_t **retired[QUANT_MAX_RETIRED];
    size_t n_retired, retired_bytes;
    uint32_t count; /* published with release after the rows below it are written */
    /* Chunks are cut from slabs (2 MiB-aligned, advised for huge pages: scans and traversals
     * read rows at random), each slab holding as many chunks as the quantizer had so far, up
     * to QUANT_SLAB_MAX_CHUNKS; the slabs are what quant_free releases. */
    uint8_t **slabs;
    size_t n_slabs, cap_slabs;
    uint8_t *slab_next; /* the next chunk of the newest slab */
    size_t slab_left;   /* chunks left in it */
};

#define QUANT_SLAB_MAX_CHUNKS 16

/* What a search reads: the directory and row count loaded once, at its start. */
typedef struct quant_snap {
    uint8_t *const *dir;
    uint32_t count, stride;
} quant_snap_t;

static inline quant_snap_t quant_snap(const quant_t *q)
{
    quant_snap_t r;
    r.count = __atomic_load_n(&q->count, __ATOMIC_ACQUIRE);
    r.dir = __atomic_load_n(&q->chunks, __ATOMIC_ACQUIRE);
    r.stride = q->stride;
    return r;
}

/* A chunk: QUANT_CHUNK_ROWS code rows of `stride` bytes, then QUANT_CHUNK_ROWS floats e_r, then
 * QUANT_CHUNK_ROWS floats r_r = ||x^ - lo||^2 = sum (s_j c_j)^2 (to nearest; L2 needs it). */
static inline uint8_t *quant_row_codes(const quant_snap_t *q, uint32_t id)
{
    return q->dir[id >> QUANT_CHUNK_SHIFT] + (size_t)(id & (QUANT_CHUNK_ROWS - 1)) * q->stride;
}

static inline float *quant_row_err(const quant_snap_t *q, uint32_t id)
{
    float *errs = (float *)(q->dir[id >> QUANT_CHUNK_SHIFT] + (size_t)QUANT_CHUNK_ROWS * q->stride);
    return errs + (id & (QUANT_CHUNK_ROWS - 1));
}

static inline float *quant_row_r(const quant_snap_t *q, uint32_t id)
{
    return quant_row_err(q, id) + QUANT_CHUNK_ROWS;
}

/* Bytes of one chunk: QUANT_CHUNK_ROWS rows of codes, then their e_r and r_r floats. */
size_t quant_chunk_bytes(const quant_t *q);

/* Allocates chunks (and the directory) for rows 0..need-1, new rows unknown; the count is left
 * alone. Returns 0 or CDN_ERR_NOMEM. Exclusive access, or a single appending writer. */
int quant_reserve_rows(quant_t *q, uint64_t need);

/* 1 when n rows spread over 0..count-1, and the last, encode from v to exactly the stored
 * codes, errors and norms (a file of codes checked against the rows it claims to restate). */
int quant_rows_match(const quant_t *q, const vec_view_t *v, uint32_t n);

/* A query's integer weights and constants. omega_j is q_j s_j (dot, cosine) or (q_j - lo_j) s_j
 * (L2), rounded to sigma * w_j with |w_j| within the int32-safe bound: error <= sigma / 2 per
 * unit of code. c0 = sum q_j lo_j, qq = ||q - lo||^2, qn2 = ||q||^2, pmag = sum |q_j| (|lo_j| +
 * 255 s_j), maxw = max |omega_j|, all in double, unrounded. */
typedef struct quant_weights {
    int16_t *w; /* the caller's: stride entries, pads zero */
    double sigma, maxw, qn2, c0, pmag, qq;
} quant_weights_t;

/* Fills out (out->w set by the caller) for query. Returns 1 if the query holds a non-finite
 * value (nothing usable then), else 0. */
int quant_weigh(const quant_t *q, const float *query, int l2, quant_weights_t *out);

#endif
