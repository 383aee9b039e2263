/* quant_kern.h: code-space kernels for quant.c (uint8 codes widened to float, FMA), scalar, AVX2
 * and AVX-512. Relies on distance.h for vec_isa_t; internal to src/vector. */
#ifndef CDN_QUANT_KERN_H
#define CDN_QUANT_KERN_H

#include <stddef.h>
#include <stdint.h>

#include "vector/distance.h"

/* Codes, weights and offsets are padded to a multiple of 16 elements (`n`), pads all zero, so
 * kernels have no tails. dot: sum w_j c_j. l2: sum (qoff_j - w_j c_j)^2. */
typedef float (*quant_kern_fn)(const uint8_t *c, const float *w, const float *qoff, size_t n);

/* Four rows at once (out[r] = kernel(c[r], ...)): each weight block is loaded once for four
 * rows and the four sums are independent chains, which keeps the FMA units busy. Each lane's
 * arithmetic is the single-row kernel's, so a row's value never depends on its neighbours. */
typedef void (*quant_kern4_fn)(const uint8_t *const c[4], const float *w, const float *qoff,
                               size_t n, float out[4]);

/* The kernel for (l2 or dot-like, isa), or NULL if the CPU lacks isa. */
quant_kern_fn quant_kern_for(int l2, vec_isa_t isa);
quant_kern4_fn quant_kern4_for(int l2, vec_isa_t isa);

#endif
