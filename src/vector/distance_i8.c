/* distance_i8.c: 8-bit codes of float rows and distance kernels over them (scalar, AVX2,
 * AVX-512BW, AVX-512 VNNI), chosen once at run time. Relies on distance_i8.h, GCC target attributes
 * and
 * __builtin_cpu_supports. Every kernel sums products of codes as integers, exactly: a row of
 * up to 16,384 codes cannot overflow a 32-bit sum (each product at most 254^2), so all kernels
 * return the same bits and the one-row and four-row forms agree. */
#include "vector/distance_i8.h"

#include <math.h>
#include <pthread.h>

#include "base/mem.h"
#include "vector/quant_int.h"

size_t vec_i8_padded(uint32_t dim)
{
    return ((size_t)dim + VEC_I8_BLOCK - 1) / VEC_I8_BLOCK * VEC_I8_BLOCK;
}

vec_i8_map_t vec_i8_map_for(vec_metric_t m, float lo, float hi)
{
    float half, offset = 0.0f;
    if (m == VEC_METRIC_L2) {
        offset = lo / 2.0f + hi / 2.0f; /* halves first: lo + hi may overflow */
        half = hi / 2.0f - lo / 2.0f;
    } else {
        half = fmaxf(fabsf(lo), fabsf(hi));
    }
    float scale = half > 0.0f && isfinite(half) ? 127.0f / half : 1.0f;
    return (vec_i8_map_t){scale, offset, 1.0f / (scale * scale)};
}

vec_i8_map_t vec_i8_map_of(const vec_view_t *v, vec_metric_t m, float headroom)
{
    float lo = INFINITY, hi = -INFINITY;
    for (uint32_t r = 0; r < v->count; r++) {
        const float *x = vec_row(v, r);
        for (uint32_t d = 0; d < v->dim; d++) {
            lo = x[d] < lo ? x[d] : lo;
            hi = x[d] > hi ? x[d] : hi;
        }
    }
    if (lo > hi) /* no rows (or NaN only) */
        lo = hi = 0.0f;
    float mid = m == VEC_METRIC_L2 ? lo / 2.0f + hi / 2.0f : 0.0f;
    float wlo = mid - (mid - lo) * headroom, whi = mid + (hi - mid) * headroom;
    if (m == VEC_METRIC_COSINE) {
        wlo = fminf(lo, fmaxf(wlo, -1.0f));
        whi = fmaxf(hi, fminf(whi, 1.0f));
    }
    return vec_i8_map_for(m, wlo, whi);
}

int vec_i8_map_fits(const vec_view_t *v, vec_i8_map_t map)
{
    if (v->count == 0 || v->dim == 0)
        return 1;
    double *mean = cdn_calloc(v->dim, sizeof(double));
    if (!mean)
        return 0; /* unknown: the caller's other precisions are always right */
    /* A spread, not a bound: evenly spaced rows estimate it as well as every row does. */
    uint32_t step = v->count > VEC_I8_FIT_SAMPLE ? v->count / VEC_I8_FIT_SAMPLE : 1, n = 0;
    for (uint32_t r = 0; r < v->count; r += step, n++) {
        const float *x = vec_row(v, r);
        for (uint32_t d = 0; d < v->dim; d++)
            mean[d] += x[d];
    }
    for (uint32_t d = 0; d < v->dim; d++)
        mean[d] /= n;
    double dev = 0.0;
    for (uint32_t r = 0; r < v->count; r += step) {
        const float *x = vec_row(v, r);
        for (uint32_t d = 0; d < v->dim; d++)
            dev += fabs(x[d] - mean[d]);
    }
    cdn_free(mean);
    return dev / ((double)n * v->dim) * map.scale >= VEC_I8_MIN_SPAN;
}

size_t vec_i8_from_f32(const float *in, size_t n, vec_i8_map_t map, int8_t *out, size_t padded)
{
    size_t saturated = 0;
    for (size_t i = 0; i < n; i++) {
        float x = (in[i] - map.offset) * map.scale;
        /* Past +-127.5 the nearest code is out of reach (a range's own ends may land a rounding
         * error past 127, and still round to it). */
        if (!(x >= -127.5f && x <= 127.5f)) /* also NaN */
            saturated++;
        x = x > 127.0f ? 127.0f : x >= -127.0f ? x : -127.0f; /* NaN to -127 */
        out[i] = (int8_t)quant_round_even(x);
    }
    for (size_t i = n; i < padded; i++)
        out[i] = 0;
    return saturated;
}

/* ---- portable kernels: the reference the SIMD ones are tested against ---- */

static int32_t dot_scalar(const int8_t *a, const int8_t *b, size_t n)
{
    int32_t s = 0;
    for (size_t i = 0; i < n; i++)
        s += (int32_t)a[i] * b[i];
    return s;
}

static int32_t l2sq_scalar(const int8_t *a, const int8_t *b, size_t n)
{
    int32_t s = 0;
    for (size_t i = 0; i < n; i++) {
        int32_t d = (int32_t)a[i] - b[i];
        s += d * d;
    }
    return s;
}

/* The distance of metric m from an integer sum (dot product, or squared L2 for L2). */
static inline float finish(vec_metric_t m, int32_t sum, float unit)
{
    float v = (float)sum * unit;
    return m == VEC_METRIC_COSINE ? 1.0f - v : m == VEC_METRIC_DOT ? -v : v;
}

/* The metric kernels of one ISA from its integer kernels: dot and dot4 sum products, l2 and
 * l24 squared differences (one row, four rows). */
#define METRIC_KERNELS(isa, dot, dot4, l2, l24, attr)                                              \
    attr static float cos_##isa(const int8_t *a, const int8_t *b, size_t n, float unit)            \
    {                                                                                              \
        return finish(VEC_METRIC_COSINE, dot(a, b, n), unit);                                      \
    }                                                                                              \
    attr static float negdot_##isa(const int8_t *a, const int8_t *b, size_t n, float unit)         \
    {                                                                                              \
        return finish(VEC_METRIC_DOT, dot(a, b, n), unit);                                         \
    }                                                                                              \
    attr static float l2_##isa(const int8_t *a, const int8_t *b, size_t n, float unit)             \
    {                                                                                              \
        return finish(VEC_METRIC_L2, l2(a, b, n), unit);                                           \
    }                                                                                              \
    attr static void cos4_##isa(const int8_t *q, const int8_t *const r[4], size_t n, float unit,   \
                                float out[4])                                                      \
    {                                                                                              \
        int32_t s[4];                                                                              \
        dot4(q, r, n, s);                                                                          \
        for (int j = 0; j < 4; j++)                                                                \
            out[j] = finish(VEC_METRIC_COSINE, s[j], unit);                                        \
    }                                                                                              \
    attr static void negdot4_##isa(const int8_t *q, const int8_t *const r[4], size_t n,            \
                                   float unit, float out[4])                                       \
    {                                                                                              \
        int32_t s[4];                                                                              \
        dot4(q, r, n, s);                                                                          \
        for (int j = 0; j < 4; j++)                                                                \
            out[j] = finish(VEC_METRIC_DOT, s[j], unit);                                           \
    }                                                                                              \
    attr static void l24_##isa(const int8_t *q, const int8_t *const r[4], size_t n, float unit,    \
                               float out[4])                                                       \
    {                                                                                              \
        int32_t s[4];                                                                              \
        l24(q, r, n, s);                                                                           \
        for (int j = 0; j < 4; j++)                                                                \
            out[j] = finish(VEC_METRIC_L2, s[j], unit);                                            \
    }

static void dot4_scalar(const int8_t *q, const int8_t *const r[4], size_t n, int32_t s[4])
{
    for (int j = 0; j < 4; j++)
        s[j] = dot_scalar(q, r[j], n);
}

static void l24_scalar_sum(const int8_t *q, const int8_t *const r[4], size_t n, int32_t s[4])
{
    for (int j = 0; j < 4; j++)
        s[j] = l2sq_scalar(q, r[j], n);
}

METRIC_KERNELS(scalar, dot_scalar, dot4_scalar, l2sq_scalar, l24_scalar_sum, )

#if defined(__x86_64__) && defined(__GNUC__)
#define CDN_I8_X86 1
#include <immintrin.h>

#define AVX2_FN __attribute__((target("avx2")))
#define AVX512_FN __attribute__((target("avx512f,avx512bw")))
#define VNNI_FN __attribute__((target("avx512f,avx512bw,avx512vnni")))

/* Codes at p widened to 16 bits: 16 of them (AVX2), 32 (AVX-512). */
#define WIDEN_256(p) _mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *)(p)))
#define WIDEN_512(p) _mm512_cvtepi8_epi16(_mm256_loadu_si256((const __m256i *)(p)))

/* Adds the pairwise products of x and y (16-bit lanes) into the 32-bit lanes of s. */
#define ACC_AVX2(s, x, y) _mm256_add_epi32((s), _mm256_madd_epi16((x), (y)))
#define ACC_MADD(s, x, y) _mm512_add_epi32((s), _mm512_madd_epi16((x), (y)))
#define ACC_VNNI(s, x, y) _mm512_dpwssd_epi32((s), (x), (y))

AVX2_FN static inline int32_t reduce_256(__m256i v)
{
    __m128i s = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
    s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0x4e));
    s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0xb1));
    return _mm_cvtsi128_si32(s);
}

/* The integer kernels of one ISA: vector type V, STEP codes a step (WIDEN loads and widens
 * them), ZERO, ADD and SUB on its lanes, ACC as above, REDUCE to one sum. The one-row kernels
 * take two steps at a time into two sums; a block of 64 codes is a whole number of both. */
#define INT_KERNELS(isa, attr, V, STEP, WIDEN, ZERO, ADD, SUB, ACC, REDUCE)                        \
    attr static int32_t dot_##isa(const int8_t *a, const int8_t *b, size_t n)                      \
    {                                                                                              \
        V s0 = ZERO, s1 = s0;                                                                      \
        for (size_t i = 0; i < n; i += 2 * STEP) {                                                 \
            s0 = ACC(s0, WIDEN(a + i), WIDEN(b + i));                                              \
            s1 = ACC(s1, WIDEN(a + i + STEP), WIDEN(b + i + STEP));                                \
        }                                                                                          \
        return REDUCE(ADD(s0, s1));                                                                \
    }                                                                                              \
    attr static int32_t l2sq_##isa(const int8_t *a, const int8_t *b, size_t n)                     \
    {                                                                                              \
        V s0 = ZERO, s1 = s0;                                                                      \
        for (size_t i = 0; i < n; i += 2 * STEP) {                                                 \
            V d0 = SUB(WIDEN(a + i), WIDEN(b + i));                                                \
            V d1 = SUB(WIDEN(a + i + STEP), WIDEN(b + i + STEP));                                  \
            s0 = ACC(s0, d0, d0);                                                                  \
            s1 = ACC(s1, d1, d1);                                                                  \
        }                                                                                          \
        return REDUCE(ADD(s0, s1));                                                                \
    }                                                                                              \
    /* Four rows side by side against one query (the query widened once a step). */                \
    attr static inline void four_##isa(const int8_t *q, const int8_t *const r[4], size_t n,        \
                                       int32_t out[4], int l2)                                     \
    {                                                                                              \
        const int8_t *r0 = r[0], *r1 = r[1], *r2 = r[2], *r3 = r[3];                               \
        V s0 = ZERO, s1 = s0, s2 = s0, s3 = s0;                                                    \
        for (size_t i = 0; i < n; i += STEP) {                                                     \
            V qv = WIDEN(q + i);                                                                   \
            V x0 = WIDEN(r0 + i), x1 = WIDEN(r1 + i), x2 = WIDEN(r2 + i), x3 = WIDEN(r3 + i);      \
            if (l2) {                                                                              \
                x0 = SUB(qv, x0);                                                                  \
                x1 = SUB(qv, x1);                                                                  \
                x2 = SUB(qv, x2);                                                                  \
                x3 = SUB(qv, x3);                                                                  \
                s0 = ACC(s0, x0, x0);                                                              \
                s1 = ACC(s1, x1, x1);                                                              \
                s2 = ACC(s2, x2, x2);                                                              \
                s3 = ACC(s3, x3, x3);                                                              \
            } else {                                                                               \
                s0 = ACC(s0, qv, x0);                                                              \
                s1 = ACC(s1, qv, x1);                                                              \
                s2 = ACC(s2, qv, x2);                                                              \
                s3 = ACC(s3, qv, x3);                                                              \
            }                                                                                      \
        }                                                                                          \
        out[0] = REDUCE(s0);                                                                       \
        out[1] = REDUCE(s1);                                                                       \
        out[2] = REDUCE(s2);                                                                       \
        out[3] = REDUCE(s3);                                                                       \
    }                                                                                              \
    attr static void dot4_##isa(const int8_t *q, const int8_t *const r[4], size_t n,               \
                                int32_t out[4])                                                    \
    {                                                                                              \
        four_##isa(q, r, n, out, 0);                                                               \
    }                                                                                              \
    attr static void l24_##isa##_sum(const int8_t *q, const int8_t *const r[4], size_t n,          \
                                     int32_t out[4])                                               \
    {                                                                                              \
        four_##isa(q, r, n, out, 1);                                                               \
    }

INT_KERNELS(avx2, AVX2_FN, __m256i, 16, WIDEN_256, _mm256_setzero_si256(), _mm256_add_epi32,
            _mm256_sub_epi16, ACC_AVX2, reduce_256)
INT_KERNELS(avx512, AVX512_FN, __m512i, 32, WIDEN_512, _mm512_setzero_si512(), _mm512_add_epi32,
            _mm512_sub_epi16, ACC_MADD, _mm512_reduce_add_epi32)
INT_KERNELS(vnni, VNNI_FN, __m512i, 32, WIDEN_512, _mm512_setzero_si512(), _mm512_add_epi32,
            _mm512_sub_epi16, ACC_VNNI, _mm512_reduce_add_epi32)
METRIC_KERNELS(avx2, dot_avx2, dot4_avx2, l2sq_avx2, l24_avx2_sum, AVX2_FN)
METRIC_KERNELS(avx512, dot_avx512, dot4_avx512, l2sq_avx512, l24_avx512_sum, AVX512_FN)
METRIC_KERNELS(vnni, dot_vnni, dot4_vnni, l2sq_vnni, l24_vnni_sum, VNNI_FN)
#endif

/* Indexed by vec_i8_isa_t, then vec_metric_t (cosine, dot, L2). */
static const vec_i8_dist_fn kernels[4][3] = {
    [VEC_I8_SCALAR] = {cos_scalar, negdot_scalar, l2_scalar},
#ifdef CDN_I8_X86
    [VEC_I8_AVX2] = {cos_avx2, negdot_avx2, l2_avx2},
    [VEC_I8_AVX512] = {cos_avx512, negdot_avx512, l2_avx512},
    [VEC_I8_AVX512_VNNI] = {cos_vnni, negdot_vnni, l2_vnni},
#endif
};

static const vec_i8_dist4_fn kernels4[4][3] = {
    [VEC_I8_SCALAR] = {cos4_scalar, negdot4_scalar, l24_scalar},
#ifdef CDN_I8_X86
    [VEC_I8_AVX2] = {cos4_avx2, negdot4_avx2, l24_avx2},
    [VEC_I8_AVX512] = {cos4_avx512, negdot4_avx512, l24_avx512},
    [VEC_I8_AVX512_VNNI] = {cos4_vnni, negdot4_vnni, l24_vnni},
#endif
};

/* What the CPU offers, probed once per process (pthread_once: callers on many threads agree). */
static pthread_once_t probe_once = PTHREAD_ONCE_INIT;
static vec_i8_isa_t probe_best = VEC_I8_SCALAR;

static void probe(void)
{
    vec_i8_isa_t best = VEC_I8_SCALAR;
#ifdef CDN_I8_X86
    __builtin_cpu_init();
    if (vec_isa_best() >= VEC_ISA_AVX2)
        best = VEC_I8_AVX2;
    if (vec_isa_best() == VEC_ISA_AVX512 && __builtin_cpu_supports("avx512bw")) {
        best = VEC_I8_AVX512;
        if (__builtin_cpu_supports("avx512vnni"))
            best = VEC_I8_AVX512_VNNI;
    }
#endif
    probe_best = best;
}

vec_i8_isa_t vec_i8_isa_best(void)
{
    pthread_once(&probe_once, probe);
    return probe_best;
}

vec_i8_dist_fn vec_i8_dist_for_isa(vec_metric_t m, vec_i8_isa_t isa)
{
    if ((unsigned)m > VEC_METRIC_L2 || (unsigned)isa > (unsigned)vec_i8_isa_best())
        return NULL;
    return kernels[isa][m];
}

vec_i8_dist4_fn vec_i8_dist4_for_isa(vec_metric_t m, vec_i8_isa_t isa)
{
    if ((unsigned)m > VEC_METRIC_L2 || (unsigned)isa > (unsigned)vec_i8_isa_best())
        return NULL;
    return kernels4[isa][m];
}
