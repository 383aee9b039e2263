/* quant_bits.c: 1-bit codes of randomly rotated rows, and the filter that lets the 8-bit scan
 * (quant_scan.c) skip most rows of a large readable set after reading 64 bytes of each (384-d)
 * instead of 392. Relies on quant_int.h and GCC target attributes.
 *
 * Why. A subject whose readable rows lie far from its question (a fifth of a million rows, all
 * in other topics) defeats graph search: its 10th readable answer ranks thousands deep among
 * all rows, and an exact scan of 200,000 8-bit rows reads 77 MB (about 10 ms on this machine).
 * The sign of each coordinate of a randomly rotated row, with two numbers kept per row, gives an
 * estimate of every inner product with an error that shrinks as 1/sqrt(dim) (Gao and Long,
 * RaBitQ, SIGMOD 2024): at 1M x 384 the rows whose estimated interval reaches the k-th best
 * upper end number 0.06 - 7% of the readable set, and they hold the whole top-10 in every
 * measured query (bench/peers/far_study.py).
 *
 * The estimate. y = R (x - c), R orthogonal, so <x - c, v'> = <y, R v'>. Let b = sign(y) (+-1)
 * and u = y / ||y||, o = b / sqrt(D). Then <y, w> ~ ||y|| <o, w> / <o, u> (unbiased over the
 * rotation), with error below eps0 sqrt(1 - <o,u>^2) / (<o,u> sqrt(D - 1)) ||y|| ||w|| with high
 * probability. A row keeps f = ||y||^2 / sum |y_i| (so the estimate is f <b, w>) and e, the
 * error's factor of eps0 ||w||. eps0 is BITS_EPS0: the paper's experiments use 1.9; here 1.9
 * lost 3 of 800 true neighbours in test_quant_bits.c's tight clusters and 2.5 none, at 1% more
 * rows read in 8 bits. The query side
 * w = R (q - c) (L2) or R q (dot, cosine) is rounded to 4 bits per coordinate, and <b, w^>
 * comes from four popcounts of the row's bits AND each bit plane of w^.
 *
 * A probabilistic bound is not a proof: results of this scan are never reported complete. */
#include "base/mem.h"
#include "vector/quant.h"
#include "vector/quant_int.h"

#include <math.h>
#include <string.h>

#define BITS_SEED 0x5eed0b175ull
#define BITS_EPS0 2.5
#define BITS_PLANES 4
#define BITS_PREFETCH 32
#define BITS_BLOCK_MAX 1024u

static uint64_t splitmix(uint64_t *s)
{
    uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

int quant_bits_init(quant_t *q)
{
    q->bdim = (q->dim + 63u) & ~63u;
    q->bwords = q->bdim / 64;
    uint32_t need = q->bwords * 8 + (uint32_t)sizeof(quant_row_meta_t);
    q->bstride = need <= 64 ? 64 : (need + 15u) & ~15u;
    q->bblock = q->bdim & (~q->bdim + 1); /* the largest power of two dividing bdim */
    if (q->bblock > BITS_BLOCK_MAX)
        q->bblock = BITS_BLOCK_MAX;
    q->center = cdn_calloc(q->stride, sizeof(float));
    q->bperm = cdn_malloc((size_t)QUANT_BITS_ROUNDS * q->bdim * sizeof(uint32_t));
    q->bsign = cdn_malloc((size_t)QUANT_BITS_ROUNDS * q->bdim);
    if (!q->center || !q->bperm || !q->bsign)
        return CDN_ERR_NOMEM;
    uint64_t s = BITS_SEED ^ q->bdim;
    for (uint32_t r = 0; r < QUANT_BITS_ROUNDS; r++) {
        uint32_t *p = q->bperm + (size_t)r * q->bdim;
        for (uint32_t i = 0; i < q->bdim; i++) {
            p[i] = i;
            q->bsign[(size_t)r * q->bdim + i] = (uint8_t)(splitmix(&s) & 1);
        }
        for (uint32_t i = q->bdim - 1; i > 0; i--) { /* Fisher-Yates */
            uint32_t j = (uint32_t)(splitmix(&s) % (i + 1));
            uint32_t t = p[i];
            p[i] = p[j];
            p[j] = t;
        }
    }
    return CDN_OK;
}

void quant_bits_free(quant_t *q)
{
    cdn_free(q->center);
    cdn_free(q->bperm);
    cdn_free(q->bsign);
}

/* In-place orthonormal Walsh-Hadamard transform of each block of n = q->bblock values. */
static void fwht_blocks(float *x, uint32_t d, uint32_t n)
{
    float scale = 1.0f / sqrtf((float)n);
    for (uint32_t b = 0; b < d; b += n) {
        float *y = x + b;
        for (uint32_t h = 1; h < n; h *= 2)
            for (uint32_t i = 0; i < n; i += 2 * h)
                for (uint32_t j = i; j < i + h; j++) {
                    float a = y[j], c = y[j + h];
                    y[j] = a + c;
                    y[j + h] = a - c;
                }
        for (uint32_t i = 0; i < n; i++)
            y[i] *= scale;
    }
}

/* out = R in (bdim floats each; tmp is bdim floats of scratch). */
static void rotate(const quant_t *q, const float *in, float *out, float *tmp)
{
    memcpy(out, in, q->bdim * sizeof(float));
    for (uint32_t r = 0; r < QUANT_BITS_ROUNDS; r++) {
        const uint32_t *p = q->bperm + (size_t)r * q->bdim;
        const uint8_t *sg = q->bsign + (size_t)r * q->bdim;
        for (uint32_t i = 0; i < q->bdim; i++)
            tmp[i] = sg[p[i]] ? -out[p[i]] : out[p[i]];
        fwht_blocks(tmp, q->bdim, q->bblock);
        memcpy(out, tmp, q->bdim * sizeof(float));
    }
}

void quant_bits_encode(const quant_t *q, const float *x, float *scratch, uint8_t *row)
{
    float *in = scratch, *y = scratch + q->bdim, *tmp = scratch + 2 * (size_t)q->bdim;
    uint64_t *bits = (uint64_t *)row;
    quant_row_meta_t *m = (quant_row_meta_t *)(row + (size_t)q->bwords * 8);
    int bad = 0;
    memset(in, 0, q->bdim * sizeof(float));
    for (uint32_t j = 0; j < q->dim; j++) {
        bad |= !isfinite(x[j]);
        in[j] = isfinite(x[j]) ? x[j] - q->center[j] : 0;
    }
    rotate(q, in, y, tmp);
    double l1 = 0, n2 = 0;
    memset(bits, 0, (size_t)q->bwords * 8);
    for (uint32_t i = 0; i < q->bdim; i++) {
        if (y[i] > 0)
            bits[i / 64] |= 1ull << (i % 64);
        l1 += fabs(y[i]);
        n2 += (double)y[i] * y[i];
    }
    if (bad || !isfinite(n2)) {
        m->f = 0;
        m->e = INFINITY;
    } else if (l1 <= 0) { /* the row is the centre: <y, w> = 0 exactly */
        m->f = m->e = 0;
    } else {
        double a = l1 / (sqrt((double)q->bdim) * sqrt(n2)); /* <o, u> */
        m->f = (float)(n2 / l1);
        m->e = (float)(sqrt(fmax(0.0, 1 - a * a)) / (a * sqrt((double)q->bdim - 1)) * sqrt(n2));
    }
}

/* ---- kernels: for each row, the sum over planes j of 2^j popcount(bits AND plane_j) ----
 * A kernel scores a batch of rows (ids into the snapshot's chunks), prefetching BITS_PREFETCH
 * rows ahead: the rows of a readable set are scattered, and each is one cache line. */

/* bdim is at most 65,600: a row's count of set bits fits 17 bits, S (at most 15 bdim) 20. */
#define BITS_PC_BITS 17

/* Scores rows ids[0..n) of r against the query's BITS_PLANES planes (pstride words apart; a row
 * has `words` words): out[i] = (S << BITS_PC_BITS) | the row's count of set bits. */
typedef void (*bits_fn)(const quant_snap_t *r, const uint32_t *ids, size_t n, const uint64_t *p,
                        uint32_t words, uint32_t ps, uint64_t *out);

/* The estimate's constants, in float as both forms of the filter use them (prepare):
 * <bits as +-1, w^> = a S + b pc - sum; estimate = base + sign * f <bits, w^> (+ ||y||^2 for
 * L2, ||y||^2 = dd f^2 - dd1 e^2); vn = eps0 ||w||, times 2 for L2: the error's scale. */
typedef struct bits_consts {
    float a, b, base, sum, sign, vn, dd, dd1;
    int l2;
} bits_consts_t;
/* The filter over a batch of ids, in place (see quant_bits_filter). */
typedef size_t (*bits_filter_fn)(const quant_bits_query_t *bq, const quant_snap_t *r, uint32_t *ids,
                                 size_t n, float t, float *lo, float *est);

struct quant_bits_query {
    const quant_t *q;
    vec_metric_t m;
    bits_fn kern;        /* the sums alone (filter_sums) */
    bits_filter_fn filt; /* the whole filter */
    uint64_t *planes;    /* BITS_PLANES planes of pstride words */
    uint32_t pstride;    /* bwords rounded up to 8 (the AVX-512 kernel reads 8 at a time) */
    bits_consts_t k;
};

static inline uint32_t pop_soft(uint64_t x)
{
    x = x - ((x >> 1) & 0x5555555555555555ull);
    x = (x & 0x3333333333333333ull) + ((x >> 2) & 0x3333333333333333ull);
    x = (x + (x >> 4)) & 0x0F0F0F0F0F0F0F0Full;
    return (uint32_t)((x * 0x0101010101010101ull) >> 56);
}

/* 32 rows ahead (quant_prefetch): 16 or 24 did half as well, 64 worse. */
CDN_PREFETCH_HELPER void prefetch_ahead(const quant_snap_t *r, const uint32_t *ids, size_t n,
                                        size_t i)
{
    if (i + BITS_PREFETCH < n)
        quant_prefetch(quant_row_bits(r, ids[i + BITS_PREFETCH]));
}

CDN_PREFETCH_HELPER void prefetch_first(const quant_snap_t *r, const uint32_t *ids, size_t n)
{
    for (size_t i = 0; i < n && i < BITS_PREFETCH; i++)
        __builtin_prefetch(quant_row_bits(r, ids[i]), 0, 3);
}

static void bits_scalar(const quant_snap_t *r, const uint32_t *ids, size_t n, const uint64_t *p,
                        uint32_t words, uint32_t ps, uint64_t *out)
{
    prefetch_first(r, ids, n);
    for (size_t i = 0; i < n; i++) {
        prefetch_ahead(r, ids, n, i);
        const uint64_t *row = (const uint64_t *)quant_row_bits(r, ids[i]);
        uint64_t s = 0, pc = 0;
        for (uint32_t w = 0; w < words; w++)
            pc += pop_soft(row[w]);
        for (uint32_t j = 0; j < BITS_PLANES; j++)
            for (uint32_t w = 0; w < words; w++)
                s += (uint64_t)pop_soft(row[w] & p[j * ps + w]) << j;
        out[i] = s << BITS_PC_BITS | pc;
    }
}

__attribute__((target("popcnt"))) static void bits_popcnt(const quant_snap_t *r,
                                                          const uint32_t *ids, size_t n,
                                                          const uint64_t *p, uint32_t words,
                                                          uint32_t ps, uint64_t *out)
{
    prefetch_first(r, ids, n);
    for (size_t i = 0; i < n; i++) {
        prefetch_ahead(r, ids, n, i);
        const uint64_t *row = (const uint64_t *)quant_row_bits(r, ids[i]);
        uint64_t s = 0;
        for (uint32_t w = 0; w < words; w++) {
            uint64_t x = row[w];
            s += ((uint64_t)__builtin_popcountll(x & p[w]) << BITS_PC_BITS) +
                 ((uint64_t)__builtin_popcountll(x & p[ps + w]) << (BITS_PC_BITS + 1)) +
                 ((uint64_t)__builtin_popcountll(x & p[2 * ps + w]) << (BITS_PC_BITS + 2)) +
                 ((uint64_t)__builtin_popcountll(x & p[3 * ps + w]) << (BITS_PC_BITS + 3)) +
                 (uint64_t)__builtin_popcountll(x);
        }
        out[i] = s;
    }
}

#if defined(__x86_64__)
#include <immintrin.h>
#define BITS512_FN __attribute__((target("avx512f,avx512vpopcntdq")))

/* What eight words x of a row add to its accumulator against the query's planes p0 .. p3:
 * lane i holds (S << BITS_PC_BITS) + set bits of word i. */
BITS512_FN static inline __m512i word_acc(__m512i x, __m512i p0, __m512i p1, __m512i p2, __m512i p3)
{
    __m512i c0 = _mm512_popcnt_epi64(_mm512_and_si512(x, p0));
    __m512i c1 = _mm512_popcnt_epi64(_mm512_and_si512(x, p1));
    __m512i c2 = _mm512_popcnt_epi64(_mm512_and_si512(x, p2));
    __m512i c3 = _mm512_popcnt_epi64(_mm512_and_si512(x, p3));
    __m512i sum =
        _mm512_add_epi64(_mm512_add_epi64(c0, _mm512_slli_epi64(c1, 1)),
                         _mm512_add_epi64(_mm512_slli_epi64(c2, 2), _mm512_slli_epi64(c3, 3)));
    return _mm512_add_epi64(_mm512_slli_epi64(sum, BITS_PC_BITS), _mm512_popcnt_epi64(x));
}

/* One row's accumulator: lane i holds (S << BITS_PC_BITS) + set bits over words i, i + 8, ...;
 * its lanes' sum is what the sums kernels return. */
BITS512_FN static inline __m512i row_acc_avx512(const uint64_t *row, const uint64_t *p,
                                                uint32_t words, uint32_t ps)
{
    __m512i acc = _mm512_setzero_si512();
    for (uint32_t w = 0; w < words; w += 8) {
        /* masked: nothing is read past the row's bits */
        __mmask8 k = words - w >= 8 ? 0xFF : (__mmask8)((1u << (words - w)) - 1);
        __m512i x = _mm512_maskz_loadu_epi64(k, row + w);
        acc = _mm512_add_epi64(
            acc, word_acc(x, _mm512_loadu_si512(p + w), _mm512_loadu_si512(p + ps + w),
                          _mm512_loadu_si512(p + 2 * ps + w), _mm512_loadu_si512(p + 3 * ps + w)));
    }
    return acc;
}

BITS512_FN static void bits_avx512(const quant_snap_t *r, const uint32_t *ids, size_t n,
                                   const uint64_t *p, uint32_t words, uint32_t ps, uint64_t *out)
{
    prefetch_first(r, ids, n);
    for (size_t i = 0; i < n; i++) {
        prefetch_ahead(r, ids, n, i);
        const uint64_t *row = (const uint64_t *)quant_row_bits(r, ids[i]);
        out[i] = (uint64_t)_mm512_reduce_add_epi64(row_acc_avx512(row, p, words, ps));
    }
}

/* The sums of eight rows' accumulators (lane j of the result: row j's total): pairs of rows,
 * then halves of blocks, then blocks, each step one shuffle and one add. */
BITS512_FN static inline __m512i sum8_avx512(const __m512i acc[8])
{
    __m512i t01 = _mm512_add_epi64(_mm512_unpacklo_epi64(acc[0], acc[1]),
                                   _mm512_unpackhi_epi64(acc[0], acc[1]));
    __m512i t23 = _mm512_add_epi64(_mm512_unpacklo_epi64(acc[2], acc[3]),
                                   _mm512_unpackhi_epi64(acc[2], acc[3]));
    __m512i t45 = _mm512_add_epi64(_mm512_unpacklo_epi64(acc[4], acc[5]),
                                   _mm512_unpackhi_epi64(acc[4], acc[5]));
    __m512i t67 = _mm512_add_epi64(_mm512_unpacklo_epi64(acc[6], acc[7]),
                                   _mm512_unpackhi_epi64(acc[6], acc[7]));
    /* t01's 128-bit block b holds rows 0 and 1 over lanes 2b and 2b + 1 */
    __m512i u03 = _mm512_add_epi64(_mm512_shuffle_i64x2(t01, t23, _MM_SHUFFLE(2, 0, 2, 0)),
                                   _mm512_shuffle_i64x2(t01, t23, _MM_SHUFFLE(3, 1, 3, 1)));
    __m512i u47 = _mm512_add_epi64(_mm512_shuffle_i64x2(t45, t67, _MM_SHUFFLE(2, 0, 2, 0)),
                                   _mm512_shuffle_i64x2(t45, t67, _MM_SHUFFLE(3, 1, 3, 1)));
    /* u03's blocks: rows 0-1 lanes 0-3, rows 0-1 lanes 4-7, rows 2-3 lanes 0-3, rows 2-3 4-7 */
    return _mm512_add_epi64(_mm512_shuffle_i64x2(u03, u47, _MM_SHUFFLE(2, 0, 2, 0)),
                            _mm512_shuffle_i64x2(u03, u47, _MM_SHUFFLE(3, 1, 3, 1)));
}

#define FILTER512_FN __attribute__((target("avx512f,avx512vl,avx512dq,avx512vpopcntdq")))

/* row_acc_avx512 for a row of at most eight words (up to 512 dimensions) already loaded (lanes
 * past the row's words are cleared here), the query's planes held in registers across rows
 * rather than loaded again for each: the same sums. */
FILTER512_FN static inline __m512i row_acc_short(__m512i line, __mmask8 k, const __m512i *pl)
{
    return word_acc(_mm512_maskz_mov_epi64(k, line), pl[0], pl[1], pl[2], pl[3]);
}

/* The whole filter, eight rows at a time: each row's popcounts stay in a vector (no reduction
 * per row), eight rows are summed together (sum8_avx512), and their estimates computed side by
 * side with bits_low's operations in bits_low's order (so the rows kept are the same). `form` is
 * a constant in each caller: 0 any row, 1 rows of at most eight words (row_acc_short), 2 rows
 * of at most seven, whose f and e (the word after the bits) come in the same 64-byte load and
 * are moved into place in registers instead of through memory (384 dimensions: six words). */
FILTER512_FN static inline __attribute__((always_inline)) size_t
filter_avx512_with(const quant_bits_query_t *bq, const quant_snap_t *r, uint32_t *ids, size_t n,
                   float t_max, float *lo_out, float *est_out, int form)
{
    const bits_consts_t *k = &bq->k;
    const uint32_t words = bq->q->bwords, ps = bq->pstride;
    const uint64_t *p = bq->planes;
    const __m256 a = _mm256_set1_ps(k->a), b = _mm256_set1_ps(k->b), sum = _mm256_set1_ps(k->sum),
                 base = _mm256_set1_ps(k->base), sign = _mm256_set1_ps(k->sign),
                 vn = _mm256_set1_ps(k->vn), t = _mm256_set1_ps(t_max), dd = _mm256_set1_ps(k->dd),
                 dd1 = _mm256_set1_ps(k->dd1);
    const __m512i low = _mm512_set1_epi64((1u << BITS_PC_BITS) - 1);
    const __mmask8 kw = words >= 8 ? 0xFF : (__mmask8)((1u << words) - 1);
    __m512i pl[BITS_PLANES];
    for (uint32_t j = 0; j < BITS_PLANES; j++)
        pl[j] = form ? _mm512_maskz_loadu_epi64(kw, p + (size_t)j * ps) : _mm512_setzero_si512();
    const __m512i meta_at = _mm512_set1_epi64(words); /* form 2: the word holding f and e */
    size_t keep = 0;
    prefetch_first(r, ids, n);
    for (size_t i = 0; i < n; i += 8) {
        size_t m = n - i < 8 ? n - i : 8;
        __m512i acc[8];
        float f[8] = {0}, e[8] = {0};
        __m512i fe = _mm512_setzero_si512(); /* form 2: lane j = row j's f (low) and e (high) */
        uint32_t id8[8];
        for (size_t j = 0; j < 8; j++) {
            acc[j] = _mm512_setzero_si512();
            if (j >= m)
                continue;
            prefetch_ahead(r, ids, n, i + j);
            id8[j] = ids[i + j];
            const uint64_t *row = (const uint64_t *)quant_row_bits(r, id8[j]);
            if (form == 0) {
                acc[j] = row_acc_avx512(row, p, words, ps);
            } else {
                __m512i line =
                    form == 2 ? _mm512_loadu_si512(row) : _mm512_maskz_loadu_epi64(kw, row);
                acc[j] = row_acc_short(line, kw, pl);
                if (form == 2) {
                    fe = _mm512_mask_permutexvar_epi64(fe, (__mmask8)(1u << j), meta_at, line);
                    continue;
                }
            }
            const quant_row_meta_t *mt =
                (const quant_row_meta_t *)((const uint8_t *)row + r->bmeta);
            f[j] = mt->f;
            e[j] = mt->e;
        }
        __m512i sums = sum8_avx512(acc);
        __m256 s = _mm512_cvtepu64_ps(_mm512_srli_epi64(sums, BITS_PC_BITS));
        __m256 pc = _mm512_cvtepu64_ps(_mm512_and_si512(sums, low));
        __m256 fv = form == 2 ? _mm256_castsi256_ps(_mm512_cvtepi64_epi32(fe)) : _mm256_loadu_ps(f);
        __m256 ev = form == 2
                        ? _mm256_castsi256_ps(_mm512_cvtepi64_epi32(_mm512_srli_epi64(fe, 32)))
                        : _mm256_loadu_ps(e);
        __m256 ip = _mm256_mul_ps(
            fv, _mm256_sub_ps(_mm256_add_ps(_mm256_mul_ps(a, s), _mm256_mul_ps(b, pc)), sum));
        __m256 est = _mm256_add_ps(base, _mm256_mul_ps(sign, ip));
        if (k->l2)
            est = _mm256_add_ps(est, _mm256_sub_ps(_mm256_mul_ps(_mm256_mul_ps(dd, fv), fv),
                                                   _mm256_mul_ps(_mm256_mul_ps(dd1, ev), ev)));
        else
            est = _mm256_add_ps(est, _mm256_setzero_ps());
        __m256 lo = _mm256_sub_ps(est, _mm256_mul_ps(ev, vn));
        /* kept: !(lo > t), NaN included */
        unsigned kept = (unsigned)_mm256_cmp_ps_mask(lo, t, _CMP_NGT_UQ) & ((1u << m) - 1);
        if (kept) {
            float lo8[8], est8[8];
            _mm256_storeu_ps(lo8, lo);
            _mm256_storeu_ps(est8, est);
            while (kept) {
                unsigned j = (unsigned)__builtin_ctz(kept);
                lo_out[keep] = lo8[j];
                est_out[keep] = est8[j];
                ids[keep++] = id8[j];
                kept &= kept - 1;
            }
        }
    }
    return keep;
}

FILTER512_FN static size_t filter_avx512(const quant_bits_query_t *bq, const quant_snap_t *r,
                                         uint32_t *ids, size_t n, float t_max, float *lo_out,
                                         float *est_out)
{
    if (bq->q->bwords <= 7 && r->bmeta == bq->q->bwords * 8)
        return filter_avx512_with(bq, r, ids, n, t_max, lo_out, est_out, 2);
    if (bq->q->bwords <= 8)
        return filter_avx512_with(bq, r, ids, n, t_max, lo_out, est_out, 1);
    return filter_avx512_with(bq, r, ids, n, t_max, lo_out, est_out, 0);
}
#endif

/* The kernel for isa: SCALAR the portable one, AVX2 the popcnt instruction, AVX512 the
 * VPOPCNTQ one; NULL when this CPU lacks it. */
static bits_fn bits_for(vec_isa_t isa)
{
    __builtin_cpu_init();
    switch (isa) {
    case VEC_ISA_SCALAR: return bits_scalar;
    case VEC_ISA_AVX2: return __builtin_cpu_supports("popcnt") ? bits_popcnt : NULL;
    case VEC_ISA_AVX512:
#if defined(__x86_64__)
        if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512vpopcntdq"))
            return bits_avx512;
#endif
        return NULL;
    }
    return NULL;
}

/* The estimate (*est) and its interval's lower end for one row, in float (the interval is eps0
 * standard errors wide, far above float rounding; an unusable code, e = +inf, gives -inf or NaN and
 * stays). The AVX-512 filter computes the same operations in the same order, so both keep the same
 * rows. */
static inline float bits_low(const bits_consts_t *k, uint64_t sums, float f, float e, float *est)
{
    float s = (float)(sums >> BITS_PC_BITS);
    float pc = (float)(sums & ((1u << BITS_PC_BITS) - 1));
    float ip = f * (k->a * s + k->b * pc - k->sum);
    float n2 = k->l2 ? k->dd * f * f - k->dd1 * e * e : 0.0f;
    *est = k->base + k->sign * ip + n2;
    return *est - e * k->vn;
}

/* The filter from a sums kernel: QUANT_BITS_BATCH rows scored, then each judged. */
static size_t filter_sums(const quant_bits_query_t *bq, const quant_snap_t *r, uint32_t *ids,
                          size_t n, float t, float *lo, float *est)
{
    uint64_t sums[QUANT_BITS_BATCH];
    size_t keep = 0;
    for (size_t from = 0; from < n; from += QUANT_BITS_BATCH) {
        size_t m = n - from < QUANT_BITS_BATCH ? n - from : QUANT_BITS_BATCH;
        bq->kern(r, ids + from, m, bq->planes, bq->q->bwords, bq->pstride, sums);
        for (size_t i = 0; i < m; i++) { /* the rows are in cache now */
            uint32_t id = ids[from + i];
            const quant_row_meta_t *mt = quant_row_meta(r, id);
            float e, l = bits_low(&bq->k, sums[i], mt->f, mt->e, &e);
            if (!(l > t)) {
                lo[keep] = l;
                est[keep] = e;
                ids[keep++] = id;
            }
        }
    }
    return keep;
}

/* The filter for isa: the fused AVX-512 one where the CPU has what it needs besides VPOPCNTQ,
 * else the sums kernel's. */
static bits_filter_fn filter_for(vec_isa_t isa)
{
#if defined(__x86_64__)
    if (isa == VEC_ISA_AVX512 && bits_for(isa) && __builtin_cpu_supports("avx512vl") &&
        __builtin_cpu_supports("avx512dq"))
        return filter_avx512;
#endif
    (void)isa;
    return filter_sums;
}

int quant_bits_isa_ok(vec_isa_t isa)
{
    return bits_for(isa) != NULL;
}

/* ---- the filter ---- */

/* Rotates and rounds the query; fills the planes and the constants of the estimate. */
static void prepare(quant_bits_query_t *bq, const float *query, float *buf)
{
    const quant_t *q = bq->q;
    float *in = buf, *w = buf + q->bdim, *tmp = buf + 2 * (size_t)q->bdim;
    int l2 = bq->m == VEC_METRIC_L2;
    double cq = 0;
    memset(in, 0, q->bdim * sizeof(float));
    for (uint32_t j = 0; j < q->dim; j++) {
        in[j] = l2 ? query[j] - q->center[j] : query[j];
        cq += (double)query[j] * q->center[j];
    }
    rotate(q, in, w, tmp);
    float lo = w[0], hi = w[0];
    double n2 = 0;
    for (uint32_t i = 0; i < q->bdim; i++) {
        lo = w[i] < lo ? w[i] : lo;
        hi = w[i] > hi ? w[i] : hi;
        n2 += (double)w[i] * w[i];
    }
    double dl = hi > lo ? ((double)hi - lo) / 15.0 : 0, sum = 0;
    memset(bq->planes, 0, (size_t)BITS_PLANES * bq->pstride * 8);
    for (uint32_t i = 0; i < q->bdim; i++) {
        uint32_t u = dl > 0 ? (uint32_t)quant_round_even((w[i] - lo) / dl) : 0;
        u = u > 15 ? 15 : u;
        sum += lo + dl * u;
        for (uint32_t j = 0; j < BITS_PLANES; j++)
            if (u >> j & 1)
                bq->planes[j * bq->pstride + i / 64] |= 1ull << (i % 64);
    }
    bq->k.a = (float)(2 * dl);
    bq->k.b = (float)(2 * (double)lo);
    bq->k.sum = (float)sum;
    /* cosine: 1 - <x, q> = 1 - <c, q> - <y, w>; dot: -<c, q> - <y, w>;
     * L2: ||x - q||^2 = ||y||^2 + ||w||^2 - 2 <y, w> (||y||^2 added per row). */
    bq->k.base = (float)(bq->m == VEC_METRIC_COSINE ? 1 - cq : bq->m == VEC_METRIC_DOT ? -cq : n2);
    bq->k.sign = l2 ? -2.0f : -1.0f;
    bq->k.vn = (float)(BITS_EPS0 * sqrt(n2) * (l2 ? 2 : 1));
    bq->k.dd = (float)q->bdim;
    bq->k.dd1 = (float)(q->bdim - 1);
    bq->k.l2 = l2;
}

int quant_bits_query_new(const quant_t *q, vec_metric_t m, vec_isa_t isa, const float *query,
                         quant_bits_query_t **out)
{
    *out = NULL;
    bits_fn kern = bits_for(isa);
    if (!kern)
        return CDN_ERR_UNSUPPORTED;
    quant_bits_query_t *bq = cdn_calloc(1, sizeof *bq);
    float *buf = cdn_malloc(3 * (size_t)q->bdim * sizeof(float));
    if (bq) {
        bq->q = q;
        bq->m = m;
        bq->kern = kern;
        bq->filt = filter_for(isa);
        bq->pstride = (q->bwords + 7u) & ~7u;
        bq->planes = cdn_aligned_alloc(64, (size_t)BITS_PLANES * bq->pstride * 8);
    }
    if (!bq || !buf || !bq->planes) {
        cdn_free(buf);
        quant_bits_query_free(bq);
        return CDN_ERR_NOMEM;
    }
    prepare(bq, query, buf);
    cdn_free(buf);
    *out = bq;
    return CDN_OK;
}

void quant_bits_query_free(quant_bits_query_t *bq)
{
    if (!bq)
        return;
    cdn_free(bq->planes);
    cdn_free(bq);
}

size_t quant_bits_filter(const quant_bits_query_t *bq, const quant_snap_t *r, uint32_t *ids,
                         size_t n, double t, float *lo, float *est)
{
    return bq->filt(bq, r, ids, n, (float)t, lo, est);
}
