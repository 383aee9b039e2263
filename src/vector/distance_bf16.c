/* distance_bf16.c: bf16 conversion and bf16 distance kernels (scalar, AVX-512F, AVX-512 BF16)
 * with the choice made once at run time. Relies on distance_bf16.h, GCC target attributes and
 * __builtin_cpu_supports; sums are float32 in every kernel. */
#include "vector/distance_bf16.h"

#include <pthread.h>
#include <string.h>

size_t vec_bf16_padded(uint32_t dim)
{
    return ((size_t)dim + VEC_BF16_BLOCK - 1) / VEC_BF16_BLOCK * VEC_BF16_BLOCK;
}

void vec_bf16_from_f32(const float *in, size_t n, uint16_t *out, size_t padded)
{
    for (size_t i = 0; i < n; i++) {
        uint32_t u;
        memcpy(&u, &in[i], sizeof u);
        if ((u & 0x7fffffffu) > 0x7f800000u) {
            out[i] = (uint16_t)((u >> 16) | 0x40u); /* quiet NaN, never rounded to infinity */
            continue;
        }
        u += 0x7fffu + ((u >> 16) & 1u); /* round to nearest, ties to even */
        out[i] = (uint16_t)(u >> 16);
    }
    for (size_t i = n; i < padded; i++)
        out[i] = 0;
}

float vec_bf16_to_f32(uint16_t x)
{
    uint32_t u = (uint32_t)x << 16;
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

/* ---- portable kernels: the reference the SIMD ones are tested against ---- */

static float dot_scalar(const uint16_t *a, const uint16_t *b, size_t n)
{
    float s[4] = {0, 0, 0, 0};
    for (size_t i = 0; i < n; i += 4)
        for (int j = 0; j < 4; j++)
            s[j] += vec_bf16_to_f32(a[i + j]) * vec_bf16_to_f32(b[i + j]);
    return (s[0] + s[1]) + (s[2] + s[3]);
}

static float l2sq_scalar(const uint16_t *a, const uint16_t *b, size_t n)
{
    float s[4] = {0, 0, 0, 0};
    for (size_t i = 0; i < n; i += 4)
        for (int j = 0; j < 4; j++) {
            float d = vec_bf16_to_f32(a[i + j]) - vec_bf16_to_f32(b[i + j]);
            s[j] += d * d;
        }
    return (s[0] + s[1]) + (s[2] + s[3]);
}

static void dot4_scalar(const uint16_t *q, const uint16_t *const r[4], size_t n, float out[4])
{
    for (int j = 0; j < 4; j++)
        out[j] = dot_scalar(q, r[j], n);
}

static void l2sq4_scalar(const uint16_t *q, const uint16_t *const r[4], size_t n, float out[4])
{
    for (int j = 0; j < 4; j++)
        out[j] = l2sq_scalar(q, r[j], n);
}

/* Cosine (unit rows) and dot distances from one dot kernel, one-row and four-row. */
#define METRIC_KERNELS(isa, dot, dot4, attr)                                                       \
    attr static float cos_##isa(const uint16_t *a, const uint16_t *b, size_t n)                    \
    {                                                                                              \
        return 1.0f - dot(a, b, n);                                                                \
    }                                                                                              \
    attr static float negdot_##isa(const uint16_t *a, const uint16_t *b, size_t n)                 \
    {                                                                                              \
        return -dot(a, b, n);                                                                      \
    }                                                                                              \
    attr static void cos4_##isa(const uint16_t *q, const uint16_t *const r[4], size_t n,           \
                                float out[4])                                                      \
    {                                                                                              \
        dot4(q, r, n, out);                                                                        \
        for (int j = 0; j < 4; j++)                                                                \
            out[j] = 1.0f - out[j];                                                                \
    }                                                                                              \
    attr static void negdot4_##isa(const uint16_t *q, const uint16_t *const r[4], size_t n,        \
                                   float out[4])                                                   \
    {                                                                                              \
        dot4(q, r, n, out);                                                                        \
        for (int j = 0; j < 4; j++)                                                                \
            out[j] = -out[j];                                                                      \
    }

METRIC_KERNELS(scalar, dot_scalar, dot4_scalar, )

#if defined(__x86_64__) || defined(__i386__)
#define CDN_BF16_X86 1
#include <immintrin.h>

#define AVX512_FN __attribute__((target("avx512f")))
#define AVX512BF16_FN __attribute__((target("avx512f,avx512bf16")))

/* Sixteen bf16 at p as float32: a bf16 is the high half of a float's bits. */
AVX512_FN static inline __m512 widen16(const uint16_t *p)
{
    __m256i h = _mm256_loadu_si256((const __m256i *)p);
    return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
}

AVX512_FN static float dot_avx512(const uint16_t *a, const uint16_t *b, size_t n)
{
    __m512 s0 = _mm512_setzero_ps(), s1 = s0;
    for (size_t i = 0; i < n; i += 32) {
        s0 = _mm512_fmadd_ps(widen16(a + i), widen16(b + i), s0);
        s1 = _mm512_fmadd_ps(widen16(a + i + 16), widen16(b + i + 16), s1);
    }
    return _mm512_reduce_add_ps(_mm512_add_ps(s0, s1));
}

AVX512_FN static float l2sq_avx512(const uint16_t *a, const uint16_t *b, size_t n)
{
    __m512 s0 = _mm512_setzero_ps(), s1 = s0;
    for (size_t i = 0; i < n; i += 32) {
        __m512 d0 = _mm512_sub_ps(widen16(a + i), widen16(b + i));
        __m512 d1 = _mm512_sub_ps(widen16(a + i + 16), widen16(b + i + 16));
        s0 = _mm512_fmadd_ps(d0, d0, s0);
        s1 = _mm512_fmadd_ps(d1, d1, s1);
    }
    return _mm512_reduce_add_ps(_mm512_add_ps(s0, s1));
}

/* 32 bf16 pairs per instruction, products summed in float32. Two accumulators over 64
 * elements hide the latency; a row of 384 is six steps. */
AVX512BF16_FN static float dot_avx512bf16(const uint16_t *a, const uint16_t *b, size_t n)
{
    __m512 s0 = _mm512_setzero_ps(), s1 = s0;
    size_t i = 0;
    for (; i + 64 <= n; i += 64) {
        s0 = _mm512_dpbf16_ps(s0, (__m512bh)_mm512_loadu_si512(a + i),
                              (__m512bh)_mm512_loadu_si512(b + i));
        s1 = _mm512_dpbf16_ps(s1, (__m512bh)_mm512_loadu_si512(a + i + 32),
                              (__m512bh)_mm512_loadu_si512(b + i + 32));
    }
    if (i < n)
        s0 = _mm512_dpbf16_ps(s0, (__m512bh)_mm512_loadu_si512(a + i),
                              (__m512bh)_mm512_loadu_si512(b + i));
    return _mm512_reduce_add_ps(_mm512_add_ps(s0, s1));
}

/* Four rows against one query, widened: written out row by row (GCC -O2 keeps a loop over an
 * accumulator array in memory). l2 is a constant at each call site and folds away. */
AVX512_FN static inline void four_avx512(const uint16_t *q, const uint16_t *const r[4], size_t n,
                                         float out[4], int l2)
{
    const uint16_t *r0 = r[0], *r1 = r[1], *r2 = r[2], *r3 = r[3];
    __m512 s0 = _mm512_setzero_ps(), s1 = s0, s2 = s0, s3 = s0;
    for (size_t i = 0; i < n; i += 16) {
        __m512 qv = widen16(q + i);
        __m512 x0 = widen16(r0 + i), x1 = widen16(r1 + i), x2 = widen16(r2 + i),
               x3 = widen16(r3 + i);
        if (l2) {
            x0 = _mm512_sub_ps(qv, x0);
            x1 = _mm512_sub_ps(qv, x1);
            x2 = _mm512_sub_ps(qv, x2);
            x3 = _mm512_sub_ps(qv, x3);
            s0 = _mm512_fmadd_ps(x0, x0, s0);
            s1 = _mm512_fmadd_ps(x1, x1, s1);
            s2 = _mm512_fmadd_ps(x2, x2, s2);
            s3 = _mm512_fmadd_ps(x3, x3, s3);
        } else {
            s0 = _mm512_fmadd_ps(qv, x0, s0);
            s1 = _mm512_fmadd_ps(qv, x1, s1);
            s2 = _mm512_fmadd_ps(qv, x2, s2);
            s3 = _mm512_fmadd_ps(qv, x3, s3);
        }
    }
    out[0] = _mm512_reduce_add_ps(s0);
    out[1] = _mm512_reduce_add_ps(s1);
    out[2] = _mm512_reduce_add_ps(s2);
    out[3] = _mm512_reduce_add_ps(s3);
}

AVX512_FN static void dot4_avx512(const uint16_t *q, const uint16_t *const r[4], size_t n,
                                  float out[4])
{
    four_avx512(q, r, n, out, 0);
}

AVX512_FN static void l2sq4_avx512(const uint16_t *q, const uint16_t *const r[4], size_t n,
                                   float out[4])
{
    four_avx512(q, r, n, out, 1);
}

AVX512BF16_FN static void dot4_avx512bf16(const uint16_t *q, const uint16_t *const r[4], size_t n,
                                          float out[4])
{
    const uint16_t *r0 = r[0], *r1 = r[1], *r2 = r[2], *r3 = r[3];
    __m512 s0 = _mm512_setzero_ps(), s1 = s0, s2 = s0, s3 = s0;
    for (size_t i = 0; i < n; i += 32) {
        __m512bh qv = (__m512bh)_mm512_loadu_si512(q + i);
        s0 = _mm512_dpbf16_ps(s0, qv, (__m512bh)_mm512_loadu_si512(r0 + i));
        s1 = _mm512_dpbf16_ps(s1, qv, (__m512bh)_mm512_loadu_si512(r1 + i));
        s2 = _mm512_dpbf16_ps(s2, qv, (__m512bh)_mm512_loadu_si512(r2 + i));
        s3 = _mm512_dpbf16_ps(s3, qv, (__m512bh)_mm512_loadu_si512(r3 + i));
    }
    out[0] = _mm512_reduce_add_ps(s0);
    out[1] = _mm512_reduce_add_ps(s1);
    out[2] = _mm512_reduce_add_ps(s2);
    out[3] = _mm512_reduce_add_ps(s3);
}

METRIC_KERNELS(avx512, dot_avx512, dot4_avx512, AVX512_FN)
METRIC_KERNELS(avx512bf16, dot_avx512bf16, dot4_avx512bf16, AVX512BF16_FN)
#endif

/* Indexed by vec_bf16_isa_t, then vec_metric_t (cosine, dot, L2). */
static const vec_bf16_dist_fn kernels[3][3] = {
    [VEC_BF16_SCALAR] = {cos_scalar, negdot_scalar, l2sq_scalar},
#ifdef CDN_BF16_X86
    [VEC_BF16_AVX512] = {cos_avx512, negdot_avx512, l2sq_avx512},
    [VEC_BF16_AVX512_BF16] = {cos_avx512bf16, negdot_avx512bf16, l2sq_avx512},
#endif
};

static const vec_bf16_dist4_fn kernels4[3][3] = {
    [VEC_BF16_SCALAR] = {cos4_scalar, negdot4_scalar, l2sq4_scalar},
#ifdef CDN_BF16_X86
    [VEC_BF16_AVX512] = {cos4_avx512, negdot4_avx512, l2sq4_avx512},
    [VEC_BF16_AVX512_BF16] = {cos4_avx512bf16, negdot4_avx512bf16, l2sq4_avx512},
#endif
};

/* What the CPU offers, probed once per process (pthread_once: callers on many threads agree). */
static pthread_once_t probe_once = PTHREAD_ONCE_INIT;
static vec_bf16_isa_t probe_best = VEC_BF16_SCALAR;

static void probe(void)
{
    vec_bf16_isa_t best = VEC_BF16_SCALAR;
#ifdef CDN_BF16_X86
    if (vec_isa_best() == VEC_ISA_AVX512) {
        best = VEC_BF16_AVX512;
        __builtin_cpu_init();
        if (__builtin_cpu_supports("avx512bf16"))
            best = VEC_BF16_AVX512_BF16;
    }
#endif
    probe_best = best;
}

vec_bf16_isa_t vec_bf16_isa_best(void)
{
    pthread_once(&probe_once, probe);
    return probe_best;
}

vec_bf16_dist_fn vec_bf16_dist_for_isa(vec_metric_t m, vec_bf16_isa_t isa)
{
    if ((unsigned)m > VEC_METRIC_L2 || (unsigned)isa > (unsigned)vec_bf16_isa_best())
        return NULL;
    return kernels[isa][m];
}

vec_bf16_dist4_fn vec_bf16_dist4_for_isa(vec_metric_t m, vec_bf16_isa_t isa)
{
    if ((unsigned)m > VEC_METRIC_L2 || (unsigned)isa > (unsigned)vec_bf16_isa_best())
        return NULL;
    return kernels4[isa][m];
}
