/* quant_kern.h: the code-space kernel for quant_scan.c and quant_query.c: exact integer dot
 * products of uint8 codes with int16 query weights, scalar, AVX2 and AVX-512BW. Relies on
 * distance.h for vec_isa_t. */
#ifndef CDN_QUANT_KERN_H
#define CDN_QUANT_KERN_H

#include <stddef.h>
#include <stdint.h>

#include "vector/distance.h"

/* out[r] = sum_j w[j] * c[r][j] over n elements (n a multiple of 32, pads zero), computed in
 * int32 without rounding: every instruction set returns the same integers. The caller keeps
 * 255 * n * max|w| below 2^31 so no lane can overflow. Four rows per call to amortise the
 * indirect call; the SIMD kernels read them one after the other (one sequential stream). */
typedef void (*quant_kern4_fn)(const uint8_t *const c[4], const int16_t *w, size_t n,
                               int32_t out[4]);

/* The kernel for isa, or NULL if this CPU lacks it (AVX-512 also needs AVX-512BW). `scattered`
 * picks the variant for four rows far apart (interleaved loads) over the one for four
 * consecutive rows (one stream); both return the same integers. */
quant_kern4_fn quant_kern4_for(vec_isa_t isa, int scattered);

#endif
