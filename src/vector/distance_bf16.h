/* distance_bf16.h: bfloat16 copies of float rows and distance kernels over them (scalar,
 * AVX-512F widening, AVX-512 BF16 dot products), for scoring that may trade precision for half
 * the memory traffic (HNSW construction). Relies on distance.h for metrics and ISA detection. */
#ifndef CDN_DISTANCE_BF16_H
#define CDN_DISTANCE_BF16_H

#include <stddef.h>
#include <stdint.h>

#include "vector/distance.h"

/* bf16 rows are padded with zeros to a multiple of this many elements, so kernels need no
 * tails (zeros add nothing to a dot product or a squared difference). */
#define VEC_BF16_BLOCK 32u

/* Kernels in order of preference. AVX512 widens bf16 to float32 and uses FMA (any AVX-512F
 * CPU); AVX512_BF16 multiplies bf16 pairs directly (vdpbf16ps) for dot products. */
typedef enum vec_bf16_isa {
    VEC_BF16_SCALAR = 0,
    VEC_BF16_AVX512 = 1,
    VEC_BF16_AVX512_BF16 = 2,
} vec_bf16_isa_t;

/* A kernel over two padded bf16 rows of n elements (n a multiple of VEC_BF16_BLOCK); lower is
 * nearer, as the float kernel of the same metric. */
typedef float (*vec_bf16_dist_fn)(const uint16_t *a, const uint16_t *b, size_t n);

/* One query row against four rows: out[j] = kernel(q, r[j], n). The query block is loaded once
 * for four rows and four rows' misses overlap. Equal to the one-row kernel up to rounding. */
typedef void (*vec_bf16_dist4_fn)(const uint16_t *q, const uint16_t *const r[4], size_t n,
                                  float out[4]);

/* Elements of a padded row of dim values: dim rounded up to VEC_BF16_BLOCK. */
size_t vec_bf16_padded(uint32_t dim);

/* Writes in[0..n) to out as bf16 (round to nearest, ties to even; NaN stays NaN) and zeros up
 * to out[padded - 1]. padded >= n. */
void vec_bf16_from_f32(const float *in, size_t n, uint16_t *out, size_t padded);

/* The float a bf16 value stands for (exact). */
float vec_bf16_to_f32(uint16_t x);

/* The best bf16 kernel set this CPU runs. */
vec_bf16_isa_t vec_bf16_isa_best(void);

/* The kernel for metric m with instruction set isa, or NULL if the CPU lacks it or m is not a
 * metric. For L2 the AVX512_BF16 set uses the widening kernel (vdpbf16ps only multiplies). */
vec_bf16_dist_fn vec_bf16_dist_for_isa(vec_metric_t m, vec_bf16_isa_t isa);

/* The four-row kernel for metric m with instruction set isa, or NULL as above. */
vec_bf16_dist4_fn vec_bf16_dist4_for_isa(vec_metric_t m, vec_bf16_isa_t isa);

#endif
