/* distance_i8.h: 8-bit integer copies of float rows and distance kernels over them (scalar,
 * AVX2, AVX-512BW, AVX-512 VNNI), for scoring that may trade precision for a quarter of the memory
 * traffic (HNSW construction). One map (a scale and, for L2, an offset) holds for a whole copy,
 * so the distance between two stored rows is an exact integer sum times one factor: the kernels
 * give every pair of rows the same value whichever is the query. Relies on distance.h for
 * metrics and ISA detection.
 *
 * Why one scale and not one per row or per dimension: a per-row scale needs a row's metadata
 * beside its codes (one more scattered line a distance, as much time as the row itself when
 * rows are read at random), and a per-dimension one a float multiply a dimension. */
#ifndef CDN_DISTANCE_I8_H
#define CDN_DISTANCE_I8_H

#include <stddef.h>
#include <stdint.h>

#include "vector/distance.h"

/* Rows are padded with zeros to a multiple of this many values (one cache line), so kernels
 * need no tails and rows start on a line (zeros add nothing to a dot product or a difference). */
#define VEC_I8_BLOCK 64u

/* Kernels in order of preference. AVX2 and AVX512 widen to 16 bits and multiply pairs
 * (vpmaddwd; AVX-512BW for 512 bits); AVX512_VNNI fuses the multiply and the sum (vpdpwssd). */
typedef enum vec_i8_isa {
    VEC_I8_SCALAR = 0,
    VEC_I8_AVX2 = 1,
    VEC_I8_AVX512 = 2,
    VEC_I8_AVX512_VNNI = 3,
} vec_i8_isa_t;

/* How a copy's codes stand for floats: x ~ offset + code / scale, codes in [-127, 127].
 * `unit` = 1 / scale^2, the factor that turns an integer sum into a distance. */
typedef struct vec_i8_map {
    float scale;
    float offset;
    float unit;
} vec_i8_map_t;

/* A kernel over two padded rows of n codes (n a multiple of VEC_I8_BLOCK); lower is nearer, as
 * the float kernel of the same metric: cosine 1 - unit * dot (unit rows), dot -unit * dot, L2
 * unit * sum of squared differences. */
typedef float (*vec_i8_dist_fn)(const int8_t *a, const int8_t *b, size_t n, float unit);

/* One query row against four rows: out[j] = kernel(q, r[j], n, unit), the same bits. */
typedef void (*vec_i8_dist4_fn)(const int8_t *q, const int8_t *const r[4], size_t n, float unit,
                                float out[4]);

/* Codes of a padded row of dim values: dim rounded up to VEC_I8_BLOCK. */
size_t vec_i8_padded(uint32_t dim);

/* The map for values in [lo, hi] under metric m: codes span the whole range for L2 (the
 * offset is its middle; a shift changes no difference), and are centred on zero for cosine and
 * dot (a shift would change products). A range of zero width gets scale 1. */
vec_i8_map_t vec_i8_map_for(vec_metric_t m, float lo, float hi);

/* The map for every value of v's rows under metric m (as vec_i8_map_for their range), the
 * range widened `headroom` times (1: not at all) around its middle, so that rows written later
 * mostly fit too; for cosine (unit rows, no value past 1) never past +-1 by the widening. */
vec_i8_map_t vec_i8_map_of(const vec_view_t *v, vec_metric_t m, float headroom);

/* Whether map resolves v's rows finely enough to choose links on: a value's mean distance
 * from its dimension's mean spans VEC_I8_MIN_SPAN codes or more. A few rows far out (one row of
 * 1000s among rows of size 1) stretch one scale over everything, and the other rows would
 * share a handful of codes; such data needs a precision with an exponent (bf16, float). Two
 * passes over at most about 2 x VEC_I8_FIT_SAMPLE evenly spaced rows (a million rows of 384
 * values are 1.5 GB read twice otherwise, on the first batch after every open); 0 also when it
 * cannot allocate dim doubles. */
#define VEC_I8_MIN_SPAN 4.0
#define VEC_I8_FIT_SAMPLE 65536u
int vec_i8_map_fits(const vec_view_t *v, vec_i8_map_t map);

/* Writes in[0..n) to out as codes under map (round to nearest, ties to even) and zeros up to
 * out[padded - 1]. padded >= n. Values whose nearest code is past +-127 (and NaN) saturate;
 * returns how many did, so a caller whose range came from other rows can widen it. */
size_t vec_i8_from_f32(const float *in, size_t n, vec_i8_map_t map, int8_t *out, size_t padded);

/* The best kernel set this CPU runs. */
vec_i8_isa_t vec_i8_isa_best(void);

/* The kernel for metric m with instruction set isa, or NULL if the CPU lacks it or m is not a
 * metric. */
vec_i8_dist_fn vec_i8_dist_for_isa(vec_metric_t m, vec_i8_isa_t isa);

/* The four-row kernel for metric m with instruction set isa, or NULL as above. */
vec_i8_dist4_fn vec_i8_dist4_for_isa(vec_metric_t m, vec_i8_isa_t isa);

#endif
