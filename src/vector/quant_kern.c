/* quant_kern.c: code-space kernels (scalar, AVX2+FMA, AVX-512F): widen uint8 codes to float and
 * FMA with per-query weights. Relies on quant_kern.h, GCC target attributes, distance.h's ISA check.
 * Any float summation order is fine here: quant.c bounds the rounding of every order. */
#include "vector/quant_kern.h"

static float dot_scalar(const uint8_t *c, const float *w, const float *qoff, size_t n)
{
    (void)qoff;
    float s0 = 0, s1 = 0, s2 = 0, s3 = 0;
    for (size_t i = 0; i < n; i += 4) {
        s0 += w[i] * (float)c[i];
        s1 += w[i + 1] * (float)c[i + 1];
        s2 += w[i + 2] * (float)c[i + 2];
        s3 += w[i + 3] * (float)c[i + 3];
    }
    return (s0 + s1) + (s2 + s3);
}

static float l2_scalar(const uint8_t *c, const float *w, const float *qoff, size_t n)
{
    float s0 = 0, s1 = 0;
    for (size_t i = 0; i < n; i += 2) {
        float t0 = qoff[i] - w[i] * (float)c[i], t1 = qoff[i + 1] - w[i + 1] * (float)c[i + 1];
        s0 += t0 * t0;
        s1 += t1 * t1;
    }
    return s0 + s1;
}

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define AVX2_FN __attribute__((target("avx2,fma")))
#define AVX512_FN __attribute__((target("avx512f")))

AVX2_FN static inline float hsum8(__m256 v)
{
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_shuffle_ps(s, s, 1));
    return _mm_cvtss_f32(s);
}

/* Eight codes at p as floats. */
AVX2_FN static inline __m256 load8(const uint8_t *p)
{
    return _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)p)));
}

AVX2_FN static float dot_avx2(const uint8_t *c, const float *w, const float *qoff, size_t n)
{
    (void)qoff;
    __m256 s0 = _mm256_setzero_ps(), s1 = s0;
    for (size_t i = 0; i < n; i += 16) {
        s0 = _mm256_fmadd_ps(_mm256_loadu_ps(w + i), load8(c + i), s0);
        s1 = _mm256_fmadd_ps(_mm256_loadu_ps(w + i + 8), load8(c + i + 8), s1);
    }
    return hsum8(_mm256_add_ps(s0, s1));
}

AVX2_FN static float l2_avx2(const uint8_t *c, const float *w, const float *qoff, size_t n)
{
    __m256 s0 = _mm256_setzero_ps(), s1 = s0;
    for (size_t i = 0; i < n; i += 16) {
        __m256 t0 = _mm256_fnmadd_ps(_mm256_loadu_ps(w + i), load8(c + i), _mm256_loadu_ps(qoff + i));
        __m256 t1 = _mm256_fnmadd_ps(_mm256_loadu_ps(w + i + 8), load8(c + i + 8),
                                     _mm256_loadu_ps(qoff + i + 8));
        s0 = _mm256_fmadd_ps(t0, t0, s0);
        s1 = _mm256_fmadd_ps(t1, t1, s1);
    }
    return hsum8(_mm256_add_ps(s0, s1));
}

/* Sixteen codes at p as floats. */
AVX512_FN static inline __m512 load16(const uint8_t *p)
{
    return _mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(_mm_loadu_si128((const __m128i *)p)));
}

/* Two accumulators over 16-code steps: a 384-d row is 24 steps, and the loads (one cache line
 * of codes per four steps) are the limit, not the FMA latency. */
AVX512_FN static float dot_avx512(const uint8_t *c, const float *w, const float *qoff, size_t n)
{
    (void)qoff;
    __m512 s0 = _mm512_setzero_ps(), s1 = s0;
    size_t i = 0;
    for (; i + 32 <= n; i += 32) {
        s0 = _mm512_fmadd_ps(_mm512_loadu_ps(w + i), load16(c + i), s0);
        s1 = _mm512_fmadd_ps(_mm512_loadu_ps(w + i + 16), load16(c + i + 16), s1);
    }
    if (i < n)
        s0 = _mm512_fmadd_ps(_mm512_loadu_ps(w + i), load16(c + i), s0);
    return _mm512_reduce_add_ps(_mm512_add_ps(s0, s1));
}

AVX512_FN static float l2_avx512(const uint8_t *c, const float *w, const float *qoff, size_t n)
{
    __m512 s0 = _mm512_setzero_ps(), s1 = s0;
    size_t i = 0;
    for (; i + 32 <= n; i += 32) {
        __m512 t0 = _mm512_fnmadd_ps(_mm512_loadu_ps(w + i), load16(c + i), _mm512_loadu_ps(qoff + i));
        __m512 t1 = _mm512_fnmadd_ps(_mm512_loadu_ps(w + i + 16), load16(c + i + 16),
                                     _mm512_loadu_ps(qoff + i + 16));
        s0 = _mm512_fmadd_ps(t0, t0, s0);
        s1 = _mm512_fmadd_ps(t1, t1, s1);
    }
    if (i < n) {
        __m512 t0 = _mm512_fnmadd_ps(_mm512_loadu_ps(w + i), load16(c + i), _mm512_loadu_ps(qoff + i));
        s0 = _mm512_fmadd_ps(t0, t0, s0);
    }
    return _mm512_reduce_add_ps(_mm512_add_ps(s0, s1));
}
#endif

quant_kern_fn quant_kern_for(int l2, vec_isa_t isa)
{
    /* distance.c owns the CPU check: a NULL float kernel means the CPU lacks isa. */
    if (!vec_dist_for_isa(VEC_METRIC_DOT, isa))
        return NULL;
    switch (isa) {
    case VEC_ISA_SCALAR:
        return l2 ? l2_scalar : dot_scalar;
#if defined(__x86_64__) || defined(__i386__)
    case VEC_ISA_AVX2:
        return l2 ? l2_avx2 : dot_avx2;
    case VEC_ISA_AVX512:
        return l2 ? l2_avx512 : dot_avx512;
#endif
    default:
        return NULL;
    }
}

/* ---- four rows per call ---- */

static void dot4_scalar(const uint8_t *const c[4], const float *w, const float *qoff, size_t n,
                        float out[4])
{
    for (int r = 0; r < 4; r++)
        out[r] = dot_scalar(c[r], w, qoff, n);
}

static void l24_scalar(const uint8_t *const c[4], const float *w, const float *qoff, size_t n,
                       float out[4])
{
    for (int r = 0; r < 4; r++)
        out[r] = l2_scalar(c[r], w, qoff, n);
}

#if defined(__x86_64__) || defined(__i386__)
AVX2_FN static void dot4_avx2(const uint8_t *const c[4], const float *w, const float *qoff,
                              size_t n, float out[4])
{
    for (int r = 0; r < 4; r++) /* AVX2 is the fallback path: keep it simple */
        out[r] = dot_avx2(c[r], w, qoff, n);
}

AVX2_FN static void l24_avx2(const uint8_t *const c[4], const float *w, const float *qoff,
                             size_t n, float out[4])
{
    for (int r = 0; r < 4; r++)
        out[r] = l2_avx2(c[r], w, qoff, n);
}

AVX512_FN static void dot4_avx512(const uint8_t *const c[4], const float *w, const float *qoff,
                                  size_t n, float out[4])
{
    (void)qoff;
    __m512 s0 = _mm512_setzero_ps(), s1 = s0, s2 = s0, s3 = s0;
    for (size_t i = 0; i < n; i += 16) {
        __m512 wv = _mm512_loadu_ps(w + i);
        s0 = _mm512_fmadd_ps(wv, load16(c[0] + i), s0);
        s1 = _mm512_fmadd_ps(wv, load16(c[1] + i), s1);
        s2 = _mm512_fmadd_ps(wv, load16(c[2] + i), s2);
        s3 = _mm512_fmadd_ps(wv, load16(c[3] + i), s3);
    }
    out[0] = _mm512_reduce_add_ps(s0);
    out[1] = _mm512_reduce_add_ps(s1);
    out[2] = _mm512_reduce_add_ps(s2);
    out[3] = _mm512_reduce_add_ps(s3);
}

AVX512_FN static void l24_avx512(const uint8_t *const c[4], const float *w, const float *qoff,
                                 size_t n, float out[4])
{
    __m512 s[4] = {_mm512_setzero_ps(), _mm512_setzero_ps(), _mm512_setzero_ps(),
                   _mm512_setzero_ps()};
    for (size_t i = 0; i < n; i += 16) {
        __m512 wv = _mm512_loadu_ps(w + i), qv = _mm512_loadu_ps(qoff + i);
        for (int r = 0; r < 4; r++) {
            __m512 t = _mm512_fnmadd_ps(wv, load16(c[r] + i), qv);
            s[r] = _mm512_fmadd_ps(t, t, s[r]);
        }
    }
    for (int r = 0; r < 4; r++)
        out[r] = _mm512_reduce_add_ps(s[r]);
}
#endif

quant_kern4_fn quant_kern4_for(int l2, vec_isa_t isa)
{
    if (!vec_dist_for_isa(VEC_METRIC_DOT, isa))
        return NULL;
    switch (isa) {
    case VEC_ISA_SCALAR:
        return l2 ? l24_scalar : dot4_scalar;
#if defined(__x86_64__) || defined(__i386__)
    case VEC_ISA_AVX2:
        return l2 ? l24_avx2 : dot4_avx2;
    case VEC_ISA_AVX512:
        return l2 ? l24_avx512 : dot4_avx512;
#endif
    default:
        return NULL;
    }
}
