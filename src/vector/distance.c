/* distance.c: float32 distance kernels (scalar, AVX2+FMA, AVX-512F) and the run-time choice of
 * instruction set. Relies on distance.h, GCC target attributes and __builtin_cpu_supports. */
#include "vector/distance.h"
#include "base/err.h"

#include <math.h>
#include <pthread.h>
#include <string.h>

/* ---- portable kernels: the reference every SIMD path is tested against ---- */

static float dot_scalar(const float *a, const float *b, size_t n)
{
    float s0 = 0, s1 = 0, s2 = 0, s3 = 0;
    size_t i = 0;
    for (; i + 4 <= n; i += 4) {
        s0 += a[i] * b[i];
        s1 += a[i + 1] * b[i + 1];
        s2 += a[i + 2] * b[i + 2];
        s3 += a[i + 3] * b[i + 3];
    }
    for (; i < n; i++)
        s0 += a[i] * b[i];
    return (s0 + s1) + (s2 + s3);
}

static float l2sq_scalar(const float *a, const float *b, size_t n)
{
    float s0 = 0, s1 = 0;
    size_t i = 0;
    for (; i + 2 <= n; i += 2) {
        float d0 = a[i] - b[i], d1 = a[i + 1] - b[i + 1];
        s0 += d0 * d0;
        s1 += d1 * d1;
    }
    for (; i < n; i++) {
        float d = a[i] - b[i];
        s0 += d * d;
    }
    return s0 + s1;
}

static void dot4_scalar(const float *q, const float *const r[4], size_t n, float out[4])
{
    for (int j = 0; j < 4; j++)
        out[j] = dot_scalar(q, r[j], n);
}

static void l2sq4_scalar(const float *q, const float *const r[4], size_t n, float out[4])
{
    for (int j = 0; j < 4; j++)
        out[j] = l2sq_scalar(q, r[j], n);
}

/* The scalar 4-row kernels already score the rows one after another. */
#define dot4s_scalar dot4_scalar
#define l2sq4s_scalar l2sq4_scalar

/* The 4-row dot and squared-L2 kernels that read their rows one after another (dot4s_##isa,
 * l2sq4s_##isa), from the ISA's one-row form of its side-by-side kernel (row_##isa). */
#define ROWS_ONE_BY_ONE(isa, attr)                                                                 \
    attr static void dot4s_##isa(const float *q, const float *const r[4], size_t n, float out[4])  \
    {                                                                                              \
        for (int j = 0; j < 4; j++)                                                                \
            out[j] = row_##isa(q, r[j], n, 0);                                                     \
    }                                                                                              \
    attr static void l2sq4s_##isa(const float *q, const float *const r[4], size_t n, float out[4]) \
    {                                                                                              \
        for (int j = 0; j < 4; j++)                                                                \
            out[j] = row_##isa(q, r[j], n, 1);                                                     \
    }

/* The cosine and negated-dot 4-row kernels named cos4 and negdot4, from the 4-row dot kernel
 * dot4. */
#define DERIVED_FOUR(cos4, negdot4, dot4, attr)                                                    \
    attr static void cos4(const float *q, const float *const r[4], size_t n, float out[4])         \
    {                                                                                              \
        dot4(q, r, n, out);                                                                        \
        for (int j = 0; j < 4; j++)                                                                \
            out[j] = 1.0f - out[j];                                                                \
    }                                                                                              \
    attr static void negdot4(const float *q, const float *const r[4], size_t n, float out[4])      \
    {                                                                                              \
        dot4(q, r, n, out);                                                                        \
        for (int j = 0; j < 4; j++)                                                                \
            out[j] = -out[j];                                                                      \
    }

/* Cosine (on unit vectors) and dot product distances, derived from the dot kernel of one ISA
 * so that every metric shares the same tested inner loop; likewise for both 4-row kernels (rows
 * side by side, dot4, and one after another, dot4s). */
#define DERIVED_KERNELS(isa, attr)                                                                 \
    attr static float cos_##isa(const float *a, const float *b, size_t n)                          \
    {                                                                                              \
        return 1.0f - dot_##isa(a, b, n);                                                          \
    }                                                                                              \
    attr static float negdot_##isa(const float *a, const float *b, size_t n)                       \
    {                                                                                              \
        return -dot_##isa(a, b, n);                                                                \
    }                                                                                              \
    DERIVED_FOUR(cos4_##isa, negdot4_##isa, dot4_##isa, attr)                                      \
    DERIVED_FOUR(cos4s_##isa, negdot4s_##isa, dot4s_##isa, attr)

DERIVED_KERNELS(scalar, )

/* ---- x86 SIMD kernels: compiled for their ISA by target attributes, called only after the
 * CPU check in isa_supported(), so the rest of the binary stays baseline x86-64. ---- */
#if defined(__x86_64__) || defined(__i386__)
#define CDN_HAVE_X86 1
#include <immintrin.h>

#define AVX2_FN __attribute__((target("avx2,fma")))
#define AVX512_FN __attribute__((target("avx512f")))

AVX2_FN static inline float hsum_avx2(__m256 v)
{
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_shuffle_ps(s, s, 1));
    return _mm_cvtss_f32(s);
}

/* Lanes 0..r-1 set (r < 8): masked loads never touch memory past the row's end. */
AVX2_FN static inline __m256i tail_mask_avx2(size_t r)
{
    return _mm256_cmpgt_epi32(_mm256_set1_epi32((int)r), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}

AVX2_FN static float dot_avx2(const float *a, const float *b, size_t n)
{
    __m256 s0 = _mm256_setzero_ps(), s1 = s0, s2 = s0, s3 = s0;
    size_t i = 0;
    /* Four accumulators hide the FMA latency; the loads are the real limit. */
    for (; i + 32 <= n; i += 32) {
        s0 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i), s0);
        s1 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i + 8), _mm256_loadu_ps(b + i + 8), s1);
        s2 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i + 16), _mm256_loadu_ps(b + i + 16), s2);
        s3 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i + 24), _mm256_loadu_ps(b + i + 24), s3);
    }
    for (; i + 8 <= n; i += 8)
        s0 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i), s0);
    if (i < n) {
        __m256i m = tail_mask_avx2(n - i);
        s1 = _mm256_fmadd_ps(_mm256_maskload_ps(a + i, m), _mm256_maskload_ps(b + i, m), s1);
    }
    return hsum_avx2(_mm256_add_ps(_mm256_add_ps(s0, s1), _mm256_add_ps(s2, s3)));
}

AVX2_FN static inline __m256 l2_step_avx2(__m256 x, __m256 y, __m256 acc)
{
    __m256 d = _mm256_sub_ps(x, y);
    return _mm256_fmadd_ps(d, d, acc);
}

AVX2_FN static float l2sq_avx2(const float *a, const float *b, size_t n)
{
    __m256 s0 = _mm256_setzero_ps(), s1 = s0, s2 = s0, s3 = s0;
    size_t i = 0;
    for (; i + 32 <= n; i += 32) {
        s0 = l2_step_avx2(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i), s0);
        s1 = l2_step_avx2(_mm256_loadu_ps(a + i + 8), _mm256_loadu_ps(b + i + 8), s1);
        s2 = l2_step_avx2(_mm256_loadu_ps(a + i + 16), _mm256_loadu_ps(b + i + 16), s2);
        s3 = l2_step_avx2(_mm256_loadu_ps(a + i + 24), _mm256_loadu_ps(b + i + 24), s3);
    }
    for (; i + 8 <= n; i += 8)
        s0 = l2_step_avx2(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i), s0);
    if (i < n) {
        __m256i m = tail_mask_avx2(n - i);
        s1 = l2_step_avx2(_mm256_maskload_ps(a + i, m), _mm256_maskload_ps(b + i, m), s1);
    }
    return hsum_avx2(_mm256_add_ps(_mm256_add_ps(s0, s1), _mm256_add_ps(s2, s3)));
}

/* One step of either sum: squared L2 when l2, else the dot product. */
AVX2_FN static inline __m256 acc_avx2(__m256 q, __m256 x, __m256 acc, int l2)
{
    return l2 ? l2_step_avx2(q, x, acc) : _mm256_fmadd_ps(q, x, acc);
}

/* One query against four rows: the query block is loaded once and feeds four FMAs. `l2` picks
 * squared L2 over the dot product; it is a constant at every call site, so it folds away. */
AVX2_FN static inline void four_avx2(const float *q, const float *const r[4], size_t n,
                                     float out[4], int l2)
{
    /* Written out row by row: GCC -O2 keeps a loop over an accumulator array in memory. */
    const float *r0 = r[0], *r1 = r[1], *r2 = r[2], *r3 = r[3];
    __m256 s0 = _mm256_setzero_ps(), s1 = s0, s2 = s0, s3 = s0;
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        __m256 qv = _mm256_loadu_ps(q + i);
        s0 = acc_avx2(qv, _mm256_loadu_ps(r0 + i), s0, l2);
        s1 = acc_avx2(qv, _mm256_loadu_ps(r1 + i), s1, l2);
        s2 = acc_avx2(qv, _mm256_loadu_ps(r2 + i), s2, l2);
        s3 = acc_avx2(qv, _mm256_loadu_ps(r3 + i), s3, l2);
    }
    if (i < n) {
        __m256i m = tail_mask_avx2(n - i);
        __m256 qv = _mm256_maskload_ps(q + i, m);
        s0 = acc_avx2(qv, _mm256_maskload_ps(r0 + i, m), s0, l2);
        s1 = acc_avx2(qv, _mm256_maskload_ps(r1 + i, m), s1, l2);
        s2 = acc_avx2(qv, _mm256_maskload_ps(r2 + i, m), s2, l2);
        s3 = acc_avx2(qv, _mm256_maskload_ps(r3 + i, m), s3, l2);
    }
    out[0] = hsum_avx2(s0);
    out[1] = hsum_avx2(s1);
    out[2] = hsum_avx2(s2);
    out[3] = hsum_avx2(s3);
}

/* One row as four_avx2 scores each of its rows: the same steps in the same order, so that the
 * two 4-row forms give the same bits. */
AVX2_FN static inline float row_avx2(const float *q, const float *x, size_t n, int l2)
{
    __m256 s = _mm256_setzero_ps();
    size_t i = 0;
    for (; i + 8 <= n; i += 8)
        s = acc_avx2(_mm256_loadu_ps(q + i), _mm256_loadu_ps(x + i), s, l2);
    if (i < n) {
        __m256i m = tail_mask_avx2(n - i);
        s = acc_avx2(_mm256_maskload_ps(q + i, m), _mm256_maskload_ps(x + i, m), s, l2);
    }
    return hsum_avx2(s);
}

ROWS_ONE_BY_ONE(avx2, AVX2_FN)

AVX2_FN static void dot4_avx2(const float *q, const float *const r[4], size_t n, float out[4])
{
    four_avx2(q, r, n, out, 0);
}
AVX2_FN static void l2sq4_avx2(const float *q, const float *const r[4], size_t n, float out[4])
{
    four_avx2(q, r, n, out, 1);
}

/* Lanes 0..r-1 set (r < 16). */
static inline __mmask16 tail_mask_avx512(size_t r)
{
    return (__mmask16)((1u << r) - 1u);
}

AVX512_FN static float dot_avx512(const float *a, const float *b, size_t n)
{
    __m512 s0 = _mm512_setzero_ps(), s1 = s0, s2 = s0, s3 = s0;
    size_t i = 0;
    for (; i + 64 <= n; i += 64) {
        s0 = _mm512_fmadd_ps(_mm512_loadu_ps(a + i), _mm512_loadu_ps(b + i), s0);
        s1 = _mm512_fmadd_ps(_mm512_loadu_ps(a + i + 16), _mm512_loadu_ps(b + i + 16), s1);
        s2 = _mm512_fmadd_ps(_mm512_loadu_ps(a + i + 32), _mm512_loadu_ps(b + i + 32), s2);
        s3 = _mm512_fmadd_ps(_mm512_loadu_ps(a + i + 48), _mm512_loadu_ps(b + i + 48), s3);
    }
    for (; i + 16 <= n; i += 16)
        s0 = _mm512_fmadd_ps(_mm512_loadu_ps(a + i), _mm512_loadu_ps(b + i), s0);
    if (i < n) {
        __mmask16 m = tail_mask_avx512(n - i);
        s1 = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(m, a + i), _mm512_maskz_loadu_ps(m, b + i), s1);
    }
    return _mm512_reduce_add_ps(_mm512_add_ps(_mm512_add_ps(s0, s1), _mm512_add_ps(s2, s3)));
}

AVX512_FN static inline __m512 l2_step_avx512(__m512 x, __m512 y, __m512 acc)
{
    __m512 d = _mm512_sub_ps(x, y);
    return _mm512_fmadd_ps(d, d, acc);
}

AVX512_FN static float l2sq_avx512(const float *a, const float *b, size_t n)
{
    __m512 s0 = _mm512_setzero_ps(), s1 = s0, s2 = s0, s3 = s0;
    size_t i = 0;
    for (; i + 64 <= n; i += 64) {
        s0 = l2_step_avx512(_mm512_loadu_ps(a + i), _mm512_loadu_ps(b + i), s0);
        s1 = l2_step_avx512(_mm512_loadu_ps(a + i + 16), _mm512_loadu_ps(b + i + 16), s1);
        s2 = l2_step_avx512(_mm512_loadu_ps(a + i + 32), _mm512_loadu_ps(b + i + 32), s2);
        s3 = l2_step_avx512(_mm512_loadu_ps(a + i + 48), _mm512_loadu_ps(b + i + 48), s3);
    }
    for (; i + 16 <= n; i += 16)
        s0 = l2_step_avx512(_mm512_loadu_ps(a + i), _mm512_loadu_ps(b + i), s0);
    if (i < n) {
        __mmask16 m = tail_mask_avx512(n - i);
        s1 = l2_step_avx512(_mm512_maskz_loadu_ps(m, a + i), _mm512_maskz_loadu_ps(m, b + i), s1);
    }
    return _mm512_reduce_add_ps(_mm512_add_ps(_mm512_add_ps(s0, s1), _mm512_add_ps(s2, s3)));
}

/* One step of either sum: squared L2 when l2, else the dot product. */
AVX512_FN static inline __m512 acc_avx512(__m512 q, __m512 x, __m512 acc, int l2)
{
    return l2 ? l2_step_avx512(q, x, acc) : _mm512_fmadd_ps(q, x, acc);
}

AVX512_FN static inline void four_avx512(const float *q, const float *const r[4], size_t n,
                                         float out[4], int l2)
{
    /* Written out row by row: GCC -O2 keeps a loop over an accumulator array in memory. */
    const float *r0 = r[0], *r1 = r[1], *r2 = r[2], *r3 = r[3];
    __m512 s0 = _mm512_setzero_ps(), s1 = s0, s2 = s0, s3 = s0;
    size_t i = 0;
    for (; i + 16 <= n; i += 16) {
        __m512 qv = _mm512_loadu_ps(q + i);
        s0 = acc_avx512(qv, _mm512_loadu_ps(r0 + i), s0, l2);
        s1 = acc_avx512(qv, _mm512_loadu_ps(r1 + i), s1, l2);
        s2 = acc_avx512(qv, _mm512_loadu_ps(r2 + i), s2, l2);
        s3 = acc_avx512(qv, _mm512_loadu_ps(r3 + i), s3, l2);
    }
    if (i < n) {
        __mmask16 m = tail_mask_avx512(n - i);
        __m512 qv = _mm512_maskz_loadu_ps(m, q + i);
        s0 = acc_avx512(qv, _mm512_maskz_loadu_ps(m, r0 + i), s0, l2);
        s1 = acc_avx512(qv, _mm512_maskz_loadu_ps(m, r1 + i), s1, l2);
        s2 = acc_avx512(qv, _mm512_maskz_loadu_ps(m, r2 + i), s2, l2);
        s3 = acc_avx512(qv, _mm512_maskz_loadu_ps(m, r3 + i), s3, l2);
    }
    out[0] = _mm512_reduce_add_ps(s0);
    out[1] = _mm512_reduce_add_ps(s1);
    out[2] = _mm512_reduce_add_ps(s2);
    out[3] = _mm512_reduce_add_ps(s3);
}

/* One row as four_avx512 scores each of its rows (same steps, same order, same bits). */
AVX512_FN static inline float row_avx512(const float *q, const float *x, size_t n, int l2)
{
    __m512 s = _mm512_setzero_ps();
    size_t i = 0;
    for (; i + 16 <= n; i += 16)
        s = acc_avx512(_mm512_loadu_ps(q + i), _mm512_loadu_ps(x + i), s, l2);
    if (i < n) {
        __mmask16 m = tail_mask_avx512(n - i);
        s = acc_avx512(_mm512_maskz_loadu_ps(m, q + i), _mm512_maskz_loadu_ps(m, x + i), s, l2);
    }
    return _mm512_reduce_add_ps(s);
}

ROWS_ONE_BY_ONE(avx512, AVX512_FN)

AVX512_FN static void dot4_avx512(const float *q, const float *const r[4], size_t n, float out[4])
{
    four_avx512(q, r, n, out, 0);
}
AVX512_FN static void l2sq4_avx512(const float *q, const float *const r[4], size_t n, float out[4])
{
    four_avx512(q, r, n, out, 1);
}

DERIVED_KERNELS(avx2, AVX2_FN)
DERIVED_KERNELS(avx512, AVX512_FN)
#endif

/* ---- the choice of kernels ---- */

/* One ISA's kernels, indexed by vec_metric_t (cosine, dot, L2). */
typedef struct kernel_set {
    vec_dist_fn dot;
    vec_dist_fn one[3];
    vec_dist4_fn four[3];
    vec_dist4_fn four_seq[3];
} kernel_set_t;

static const kernel_set_t kernel_sets[3] = {
    [VEC_ISA_SCALAR] = {dot_scalar,
                        {cos_scalar, negdot_scalar, l2sq_scalar},
                        {cos4_scalar, negdot4_scalar, l2sq4_scalar},
                        {cos4s_scalar, negdot4s_scalar, l2sq4s_scalar}},
#ifdef CDN_HAVE_X86
    [VEC_ISA_AVX2] = {dot_avx2,
                      {cos_avx2, negdot_avx2, l2sq_avx2},
                      {cos4_avx2, negdot4_avx2, l2sq4_avx2},
                      {cos4s_avx2, negdot4s_avx2, l2sq4s_avx2}},
    [VEC_ISA_AVX512] = {dot_avx512,
                        {cos_avx512, negdot_avx512, l2sq_avx512},
                        {cos4_avx512, negdot4_avx512, l2sq4_avx512},
                        {cos4s_avx512, negdot4s_avx512, l2sq4s_avx512}},
#endif
};

/* What the CPU offers, found once per process: pthread_once makes the first callers on many
 * threads agree, and later calls cost one load. Written only inside cpu_probe. */
static pthread_once_t cpu_once = PTHREAD_ONCE_INIT;
static unsigned cpu_isa_mask = 1u << VEC_ISA_SCALAR;
static vec_isa_t cpu_best = VEC_ISA_SCALAR;

static void cpu_probe(void)
{
    unsigned mask = 1u << VEC_ISA_SCALAR;
#ifdef CDN_HAVE_X86
    __builtin_cpu_init();
    /* libgcc also checks that the OS saves the wide registers (XCR0) before it reports these. */
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
        mask |= 1u << VEC_ISA_AVX2;
    if (__builtin_cpu_supports("avx512f"))
        mask |= 1u << VEC_ISA_AVX512;
#endif
    cpu_isa_mask = mask;
    cpu_best = (mask & (1u << VEC_ISA_AVX512)) ? VEC_ISA_AVX512
               : (mask & (1u << VEC_ISA_AVX2)) ? VEC_ISA_AVX2
                                               : VEC_ISA_SCALAR;
}

static int isa_usable(vec_isa_t isa)
{
    pthread_once(&cpu_once, cpu_probe);
    return (unsigned)isa <= VEC_ISA_AVX512 && (cpu_isa_mask & (1u << isa));
}

static int metric_valid(vec_metric_t m)
{
    return (unsigned)m <= VEC_METRIC_L2;
}

vec_isa_t vec_isa_best(void)
{
    pthread_once(&cpu_once, cpu_probe);
    return cpu_best;
}

vec_dist_fn vec_dist_for_isa(vec_metric_t m, vec_isa_t isa)
{
    if (!metric_valid(m) || !isa_usable(isa))
        return NULL;
    return kernel_sets[isa].one[m];
}

vec_dist4_fn vec_dist4_for_isa(vec_metric_t m, vec_isa_t isa)
{
    if (!metric_valid(m) || !isa_usable(isa))
        return NULL;
    return kernel_sets[isa].four[m];
}

vec_dist4_fn vec_dist4_seq_for_isa(vec_metric_t m, vec_isa_t isa)
{
    if (!metric_valid(m) || !isa_usable(isa))
        return NULL;
    return kernel_sets[isa].four_seq[m];
}

vec_dist_fn vec_dist_for(vec_metric_t m)
{
    return vec_dist_for_isa(m, vec_isa_best());
}
vec_dist4_fn vec_dist4_for(vec_metric_t m)
{
    return vec_dist4_for_isa(m, vec_isa_best());
}

float vec_dot(const float *a, const float *b, size_t n)
{
    return kernel_sets[vec_isa_best()].dot(a, b, n);
}

float vec_l2sq(const float *a, const float *b, size_t n)
{
    return kernel_sets[vec_isa_best()].one[VEC_METRIC_L2](a, b, n);
}

const char *vec_isa_name(vec_isa_t isa)
{
    switch (isa) {
    case VEC_ISA_AVX512: return "avx512";
    case VEC_ISA_AVX2: return "avx2";
    default: return "scalar";
    }
}

float vec_score_from_dist(vec_metric_t m, float dist)
{
    switch (m) {
    case VEC_METRIC_COSINE: return 1.0f - dist;
    case VEC_METRIC_DOT: return -dist;
    case VEC_METRIC_L2: return 1.0f / (1.0f + dist);
    }
    return 0;
}

void vec_normalize(float *v, size_t n)
{
    double s = 0;
    for (size_t i = 0; i < n; i++)
        s += (double)v[i] * v[i];
    if (s > 0) {
        float inv = (float)(1.0 / sqrt(s));
        for (size_t i = 0; i < n; i++)
            v[i] *= inv;
    }
}

int vec_check(const float *v, size_t n, vec_metric_t m, const char *what, cdn_err_t *err)
{
    double s = 0;
    for (size_t i = 0; i < n; i++) {
        if (!isfinite(v[i]))
            return cdn_err_set(err, CDN_ERR_INVALID, "%s value %zu is not a finite number", what,
                               i);
        s += (double)v[i] * v[i];
    }
    if (s > VEC_NORM2_MAX)
        return cdn_err_set(err, CDN_ERR_INVALID,
                           "%s has length %.3g; the limit is %.3g (scale "
                           "it down: larger vectors overflow distances)",
                           what, sqrt(s), sqrt(VEC_NORM2_MAX));
    if (m == VEC_METRIC_COSINE && s == 0)
        return cdn_err_set(err, CDN_ERR_INVALID,
                           "%s is a zero vector, which has no direction; "
                           "cosine similarity needs a non-zero vector",
                           what);
    if (m == VEC_METRIC_COSINE && sqrt(s) < VEC_COSINE_NORM_MIN)
        return cdn_err_set(err, CDN_ERR_INVALID,
                           "%s has length %.3g, too small to normalise "
                           "(cosine needs at least %.3g): scale it up",
                           what, sqrt(s), VEC_COSINE_NORM_MIN);
    return CDN_OK;
}

int vec_metric_parse(const char *s, vec_metric_t *out)
{
    if (!strcmp(s, "cosine"))
        *out = VEC_METRIC_COSINE;
    else if (!strcmp(s, "dot_product") || !strcmp(s, "dot"))
        *out = VEC_METRIC_DOT;
    else if (!strcmp(s, "l2_norm") || !strcmp(s, "l2"))
        *out = VEC_METRIC_L2;
    else
        return CDN_ERR_INVALID;
    return CDN_OK;
}

const char *vec_metric_name(vec_metric_t m)
{
    switch (m) {
    case VEC_METRIC_COSINE: return "cosine";
    case VEC_METRIC_DOT: return "dot_product";
    case VEC_METRIC_L2: return "l2_norm";
    }
    return "unknown";
}
