/* distance.h: float32 distance kernels (cosine, dot product, L2) with scalar, AVX2 and AVX-512
 * paths chosen once at run time. Relies on nothing but the CPU; pure functions, no state. */
#ifndef CDN_DISTANCE_H
#define CDN_DISTANCE_H

#include <stddef.h>
#include <stdint.h>

#include "base/err.h"

/* How a collection compares vectors. Values are stored on disk: never renumber. */
typedef enum vec_metric {
    VEC_METRIC_COSINE = 0, /* vectors are L2-normalised on ingest; distance = 1 - dot */
    VEC_METRIC_DOT = 1,    /* distance = -dot */
    VEC_METRIC_L2 = 2,     /* distance = squared Euclidean distance */
} vec_metric_t;

/* Instruction sets a kernel can use, best last. */
typedef enum vec_isa { VEC_ISA_SCALAR = 0, VEC_ISA_AVX2 = 1, VEC_ISA_AVX512 = 2 } vec_isa_t;

/* A kernel: lower is nearer, for every metric. `n` may be any length (no multiple needed). */
typedef float (*vec_dist_fn)(const float *a, const float *b, size_t n);

/* Rows of equal dimension laid out at a fixed stride (in floats, >= dim); the memory belongs
 * to whoever made the view (typically store/vecfile) and outlives any search over it. */
typedef struct vec_view {
    const float *base;
    size_t stride;
    uint32_t dim;
    uint32_t count; /* rows 0 .. count-1 are readable */
} vec_view_t;

static inline const float *vec_row(const vec_view_t *v, uint32_t id)
{
    return v->base + (size_t)id * v->stride;
}

/* The distance kernel for metric m using the best instruction set this CPU has. */
vec_dist_fn vec_dist_for(vec_metric_t m);
/* The kernel for metric m with a given instruction set, or NULL if the CPU lacks it. */
vec_dist_fn vec_dist_for_isa(vec_metric_t m, vec_isa_t isa);

/* Distances from one query to four rows at once (out[j] = kernel(q, rows[j], n)): the query is
 * loaded once per block for four rows, which the exact scan uses to cut load traffic. */
typedef void (*vec_dist4_fn)(const float *q, const float *const rows[4], size_t n, float out[4]);

/* The 4-row kernel for metric m with the best instruction set / a given one (NULL if the CPU
 * lacks it). Results equal the single-row kernel of the same ISA up to float rounding. */
vec_dist4_fn vec_dist4_for(vec_metric_t m);
vec_dist4_fn vec_dist4_for_isa(vec_metric_t m, vec_isa_t isa);

/* The same as vec_dist4_for_isa's kernel, bit for bit, for four rows that lie one after another
 * in memory: it reads them one after another rather than side by side. Side by side keeps four
 * misses in flight for scattered rows; on consecutive rows it is four interleaved streams, which
 * the hardware prefetcher follows badly (200k x 384 float scan, all rows, AMD EPYC: 30 ms
 * against 16 ms). NULL if the CPU lacks isa. */
vec_dist4_fn vec_dist4_seq_for_isa(vec_metric_t m, vec_isa_t isa);

/* Dot product and squared L2 with the best instruction set. */
float vec_dot(const float *a, const float *b, size_t n);
float vec_l2sq(const float *a, const float *b, size_t n);

/* The instruction set vec_dist_for uses on this CPU, and its name ("avx512", "avx2", "scalar").*/
vec_isa_t vec_isa_best(void);
const char *vec_isa_name(vec_isa_t isa);

/* Converts a distance to the score a caller sees (higher is better): cosine and dot give the
 * dot product, L2 gives 1 / (1 + squared distance), as Elasticsearch does. */
float vec_score_from_dist(vec_metric_t m, float dist);

/* Scales v in place to unit length (zero vectors are left as they are). */
void vec_normalize(float *v, size_t n);

/* The bounds every stored or query vector keeps, so that no distance or score can overflow or
 * turn into inf/NaN: squared length at most VEC_NORM2_MAX (FLT_MAX / 4: then |a - b|^2, a.b and
 * every partial sum of the kernels stay finite floats), and for cosine a length of at least
 * VEC_COSINE_NORM_MIN (FLT_MIN, the smallest normal float: below it 1 / length is not a finite
 * float and the normalised vector would hold inf). */
#define VEC_NORM2_MAX 8.507059e37
#define VEC_COSINE_NORM_MIN 1.1754944e-38

/* Checks that v (n values) is a vector the metric can store or search: every value finite,
 * the squared length within VEC_NORM2_MAX, and for cosine a length of at least
 * VEC_COSINE_NORM_MIN. `what` names the vector in the message ("knn.query_vector",
 * "chunk \"x\": vector"). Returns 0 or CDN_ERR_INVALID. */
int vec_check(const float *v, size_t n, vec_metric_t m, const char *what, cdn_err_t *err);

/* Parses "cosine" / "dot_product" / "l2_norm" (the Elasticsearch names); 0 or CDN_ERR_INVALID.*/
int vec_metric_parse(const char *s, vec_metric_t *out);
const char *vec_metric_name(vec_metric_t m);

#endif
