/* distance.c: portable distance kernels and the run-time choice of instruction set.
 * Relies on distance.h; SIMD variants live beside these and are picked by CPU features. */
#include "vector/distance.h"
#include "base/err.h"

#include <math.h>
#include <string.h>

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

static float cos_dist_scalar(const float *a, const float *b, size_t n)
{
    return 1.0f - dot_scalar(a, b, n);
}
static float neg_dot_scalar(const float *a, const float *b, size_t n)
{
    return -dot_scalar(a, b, n);
}

vec_dist_fn vec_dist_for_isa(vec_metric_t m, vec_isa_t isa)
{
    if (isa != VEC_ISA_SCALAR)
        return NULL; /* SIMD paths: to be added */
    switch (m) {
    case VEC_METRIC_COSINE: return cos_dist_scalar;
    case VEC_METRIC_DOT: return neg_dot_scalar;
    case VEC_METRIC_L2: return l2sq_scalar;
    }
    return NULL;
}

vec_isa_t vec_isa_best(void) { return VEC_ISA_SCALAR; }

vec_dist_fn vec_dist_for(vec_metric_t m) { return vec_dist_for_isa(m, vec_isa_best()); }

float vec_dot(const float *a, const float *b, size_t n) { return dot_scalar(a, b, n); }
float vec_l2sq(const float *a, const float *b, size_t n) { return l2sq_scalar(a, b, n); }

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
