/* quant_int.h: the quantizer's private layout, shared by quant.c (training, encoding),
 * quant_scan.c (the exact scan), quant_bits.c (1-bit codes), quant_io.c (the file) and
 * quant_query.c (approximate scoring for graph traversal). */
#ifndef CDN_QUANT_INT_H
#define CDN_QUANT_INT_H

#include "base/mem.h"
#include "vector/quant.h"

#include <math.h>

/* Starts fetching a code row the scans or a traversal will score soon, into L2 (hint 1), not
 * L1: scattered rows keep tens of misses in flight all the time, and prefetches into L1 hold
 * the core's few L1 miss buffers until their lines arrive, so the loads of the rows being
 * scored queue behind them. At 1M x 384 (docs/benchmarks.md): the 1-bit filter at 20%
 * readable 1.8 - 2.2 -> 1.5 - 1.7 ms p50, the 8-bit scan at 1% 0.49 - 0.63 -> 0.30 - 0.35, the
 * traversal on codes at 100% 0.32 - 0.34 -> 0.23 - 0.27. */
CDN_PREFETCH_HELPER void quant_prefetch(const void *p)
{
    __builtin_prefetch(p, 0, 1);
}

/* nearbyint(v) for |v| <= 2^51 in the default rounding mode, without a call into libm (per
 * query, one a dimension: about 2 us of a SciFact query at 512 dimensions): adding 1.5 * 2^52
 * leaves no fraction bits, so the sum is v rounded to an integer (ties to even), and
 * subtracting it again is exact. C's floating-point rules keep the compiler from folding the
 * two steps (the project is never built with -ffast-math). Every caller's v is small: weights
 * at most wmax by construction, codes clamped to 0..255 first, 1-bit query planes 0..15. */
static inline double quant_round_even(double v)
{
    const double big = 6755399436890112.0;
    return (v + big) - big;
}

/* Directories retired by growth: it doubles from 8 chunks, so 2^32 rows need at most 20. */
#define QUANT_MAX_RETIRED 24
/* Rounds of the 1-bit codes' rotation (quant_bits.c): sign flips, a permutation, then a
 * Walsh-Hadamard transform of each block; three spread every input over every output. */
#define QUANT_BITS_ROUNDS 3

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
    /* The 1-bit codes (quant_bits.c): each row minus `center` (the training rows' mean,
     * stride floats), padded to bdim = dim rounded up to 64 and rotated; bit i is the sign of
     * rotated coordinate i. A row's bits take bwords words, then its quant_row_meta_t, in
     * bstride bytes. The rotation is fixed by a seed: rounds of sign flips (bsign), a
     * permutation (bperm) and Walsh-Hadamard transforms of bblock coordinates. */
    uint32_t bdim, bwords, bstride, bblock;
    float *center;
    uint32_t *bperm;
    uint8_t *bsign;
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
    uint32_t count, stride, bstride, bmeta; /* bmeta: where a 1-bit row's meta starts */
} quant_snap_t;

static inline quant_snap_t quant_snap(const quant_t *q)
{
    quant_snap_t r;
    r.count = __atomic_load_n(&q->count, __ATOMIC_ACQUIRE);
    r.dir = __atomic_load_n(&q->chunks, __ATOMIC_ACQUIRE);
    r.stride = q->stride;
    r.bstride = q->bstride;
    r.bmeta = q->bwords * 8;
    return r;
}

/* A chunk: QUANT_CHUNK_ROWS code rows of `stride` bytes, then QUANT_CHUNK_ROWS rows of
 * `bstride` bytes: a row's 1-bit code (bwords words) and its quant_row_meta_t. The 8-bit codes'
 * own two floats sit in the 1-bit row's spare bytes (16 of 64 at 384-d) rather than in arrays
 * of their own: 8 MB less at 1M rows, and the bit scan finds them in the line it just read. */
typedef struct quant_row_meta {
    /* The 1-bit code (y: the row minus the centre, rotated, D = bdim coordinates):
     * f = ||y||^2 / sum |y_i| turns <sign bits, v> into the estimate of <y, v>; e = the
     * estimate's standard error per unit of ||v|| (+inf: no usable code, always re-ranked).
     * ||y||^2 = D f^2 - (D - 1) e^2 (L2 needs it). */
    float f, e;
    /* The 8-bit codes: e_r = ||x - x^||_2 rounded up (+inf: unknown), r_r = ||x^ - lo||^2. */
    float e_r, r_r;
} quant_row_meta_t;

static inline uint8_t *quant_row_codes(const quant_snap_t *q, uint32_t id)
{
    return q->dir[id >> QUANT_CHUNK_SHIFT] + (size_t)(id & (QUANT_CHUNK_ROWS - 1)) * q->stride;
}

static inline uint8_t *quant_row_bits(const quant_snap_t *q, uint32_t id)
{
    return q->dir[id >> QUANT_CHUNK_SHIFT] + (size_t)QUANT_CHUNK_ROWS * q->stride +
           (size_t)(id & (QUANT_CHUNK_ROWS - 1)) * q->bstride;
}

static inline quant_row_meta_t *quant_row_meta(const quant_snap_t *q, uint32_t id)
{
    return (quant_row_meta_t *)(quant_row_bits(q, id) + q->bmeta);
}

static inline float *quant_row_err(const quant_snap_t *q, uint32_t id)
{
    return &quant_row_meta(q, id)->e_r;
}

static inline float *quant_row_r(const quant_snap_t *q, uint32_t id)
{
    return &quant_row_meta(q, id)->r_r;
}

/* Sets up q's rotation (bdim, bwords, bstride, bblock, bperm, bsign; center zeroed) for
 * q->dim. Returns 0 or CDN_ERR_NOMEM. */
int quant_bits_init(quant_t *q);
void quant_bits_free(quant_t *q);

/* Writes x's 1-bit code and its f, e to row (bstride bytes; e_r and r_r are left alone), using
 * scratch (3 bdim floats). A non-finite x gets e = +inf. */
void quant_bits_encode(const quant_t *q, const float *x, float *scratch, uint8_t *row);

/* 1 when this CPU has the popcount kernel quant_bits_search_isa uses for isa. */
int quant_bits_isa_ok(vec_isa_t isa);

/* Rows quant_bits_filter scores per kernel call (the scan hands it at most QUANT_BLOCK). */
#define QUANT_BITS_BATCH 256

/* A query prepared against the 1-bit codes (rotated, rounded to 4 bits, as bit planes). */
typedef struct quant_bits_query quant_bits_query_t;

/* Prepares query (dim finite floats) for metric m with the popcount kernel of isa. Returns 0,
 * CDN_ERR_UNSUPPORTED (this CPU lacks isa) or CDN_ERR_NOMEM. */
int quant_bits_query_new(const quant_t *q, vec_metric_t m, vec_isa_t isa, const float *query,
                         quant_bits_query_t **out);
void quant_bits_query_free(quant_bits_query_t *bq);

/* Keeps (in place, in order) the ids among ids[0..n) (all below r->count) whose estimated
 * distance interval reaches t, or whose code is unusable; returns how many. For each kept id,
 * lo and est (n floats each, the caller's) get its interval's lower end and the estimate itself
 * (NaN or -inf for an unusable code). */
size_t quant_bits_filter(const quant_bits_query_t *bq, const quant_snap_t *r, uint32_t *ids,
                         size_t n, double t, float *lo, float *est);

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

/* x rounded to float, up (down): never below (above) x. The codes' error e_r and the scans'
 * bounds are rounded outward so that float storage never makes a bound wrong. */
static inline float round_up_f(double x)
{
    float f = (float)x;
    if ((double)f < x)
        f = nextafterf(f, INFINITY);
    return f;
}

static inline float round_down_f(double x)
{
    float f = (float)x;
    if ((double)f > x)
        f = nextafterf(f, -INFINITY);
    return f;
}

#endif
