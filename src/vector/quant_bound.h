/* quant_bound.h: bounds on a row's float distance from its 8-bit codes' integer sum, for the
 * exact scan (quant_scan.c: which rows to drop) and a traversal's re-ranking (quant_query.c:
 * which rows of its list to leave unread). The bounds hold for the distance any of the
 * library's float kernels returns (exact_search's four-row kernels, vec_dist_for's one-row
 * ones): the rounding slack covers every summation order of the dimension's terms, FMA or
 * not. Internal to src/vector; relies on quant_int.h. */
#ifndef CDN_QUANT_BOUND_H
#define CDN_QUANT_BOUND_H

#include <float.h>
#include <math.h>
#include <stdint.h>

#include "vector/quant_int.h"

/* Exact zero-rounding-error reasoning is replaced by generous bounds: u = 2^-24 is float's unit
 * roundoff, gamma_n = n u / (1 - n u) bounds any summation order of n terms (FMA or not). */
#define QUANT_U (1.0 / 16777216.0)

/* What a query's weights (quant_weigh) leave for the bounds of every row. */
typedef struct quant_bound {
    vec_metric_t m;
    double sigma; /* weight j stands for sigma * w[j] */
    double dw;    /* |sum omega_j c_j - sigma * S| <= dw for every row (weight rounding) */
    double qn;    /* ||query||_2, rounded up */
    double c0;    /* dot: sum q_j lo_j */
    double pmag;  /* dot: sum |q_j| (|lo_j| + 255 s_j), bounds sum |q_j x^_j| */
    double qq;    /* l2: ||q - lo||^2 */
    double eps;   /* relative rounding bound of the float kernels' sums (gamma_n, doubled) */
    double epsd;  /* the same for the double sums here */
    double tiny;  /* absolute slack for float underflow in the float kernels */
} quant_bound_t;

static inline void quant_bound_init(quant_bound_t *b, const quant_t *q, vec_metric_t m,
                                    const quant_weights_t *wt)
{
    b->m = m;
    b->sigma = wt->sigma;
    b->c0 = wt->c0;
    b->dw = (wt->sigma / 2 + wt->maxw * 0x1p-48) * 255.0 * q->dim;
    b->qn = sqrt(wt->qn2) * (1 + 0x1p-40);
    b->eps = 2.0 * ((double)q->dim + 8.0) * QUANT_U;
    b->epsd = ((double)q->dim + 8.0) * 0x1p-50;
    b->tiny = ((double)q->dim + 8.0) * 0x1p-140;
    b->pmag = wt->pmag * (1 + b->epsd);
    b->qq = wt->qq * (1 + b->epsd);
}

/* Bounds for dot and cosine. omega_j = q_j s_j, so q.x^ = c0 + sum omega_j c_j, which the
 * integer sum gives within dw; |q.(x - x^)| <= qn e_r (Cauchy-Schwarz); a float kernel's
 * q.x is within eps * sum |q_j x_j| <= eps (pmag + qn e_r) of the real one, and 1 - dot adds one
 * rounding. `mag` bounds every magnitude involved, so eps * mag also covers the double
 * arithmetic here; if it nears FLT_MAX, partial float sums could overflow: bounds unknown. */
static inline void quant_bound_dot(const quant_bound_t *c, int32_t s, float e, double *lo,
                                   double *hi)
{
    double sum = c->sigma * (double)s;
    double mag = c->pmag + c->qn * e + fabs(c->c0) + 1.0 + c->dw + fabs(sum);
    if (!(mag < FLT_MAX / 4)) {
        *lo = -INFINITY;
        *hi = INFINITY;
        return;
    }
    double d = (c->m == VEC_METRIC_COSINE ? 1.0 : 0.0) - (c->c0 + sum);
    double slack = c->dw + c->qn * e * (1 + c->eps) + c->eps * mag + 2 * c->tiny;
    *lo = d - slack;
    *hi = d + slack;
}

/* Bounds for L2 (squared). ||q - x^||^2 = qq + r_r - 2 sum omega_j c_j (omega_j = (q_j - lo_j)
 * s_j) lies within delta of A (weight rounding, r_r stored in float, double sums); the triangle
 * inequality moves ||q - x|| at most e_r from ||q - x^||; a float kernel's sum of
 * non-negative terms is within a factor 1 +- eps of ||q - x||^2, plus underflow slack. */
static inline void quant_bound_l2(const quant_bound_t *c, int32_t s, float e, float r, double *lo,
                                  double *hi)
{
    double sum = c->sigma * (double)s;
    double a = c->qq + (double)r - 2 * sum;
    double delta = 2 * c->dw + 0x1p-23 * (double)r + c->epsd * (c->qq + (double)r + 2 * fabs(sum));
    if (!isfinite(a) || !isfinite(delta)) {
        *lo = -INFINITY;
        *hi = INFINITY;
        return;
    }
    double a_lo = sqrt(fmax(0.0, a - delta)) * (1 - 0x1p-50) - e;
    double a_hi = sqrt(a + delta) * (1 + 0x1p-50) + e;
    *lo = a_lo > 0 ? a_lo * a_lo * (1 - c->eps) - c->tiny : -c->tiny;
    *hi = a_hi * a_hi * (1 + c->eps) + c->tiny;
    if (!(*hi < FLT_MAX / 4))
        *hi = INFINITY;
}

/* The inverse of quant_bound_dot's lower end, for the exact scan, whose rows mostly end on it:
 * an integer sum s below the result, from a row whose e_r is at most e_max, has a lower bound
 * above t, so the row can be dropped on one integer comparison instead of the bound's dozen
 * double operations (SciFact, every row readable: 98% of the rows a query scans). INT32_MIN
 * (nothing dropped) for L2, whose bound also depends on the row's r_r, and whenever the
 * reasoning below does not apply.
 * Why it holds. In exact arithmetic lo = C - sigma s - A(e) - eps sigma |s|, with C = (1 or 0) -
 * c0 and A(e) the rest of the slack (increasing in e): lo falls as s or e grows (sigma > 0, eps <
 * 1), so for e <= e_max it is at least lo(s, e_max), which exceeds t + margin for every s below
 * the root solved here, rounded down by one more. The margin, 1e-9 (1 + |t|), is far above the
 * rounding of either side's double arithmetic (their terms are below FLT_MAX / 8, checked, and
 * each carries a relative error of a few 2^-53), so quant_bound_dot's computed lo exceeds t
 * too; and mag stays below FLT_MAX / 4 for every int32 s, so that lo is never its -inf. */
static inline int32_t quant_bound_drop_below(const quant_bound_t *b, double e_max, double t)
{
    if (b->m == VEC_METRIC_L2 || !(b->sigma > 0) || !(e_max >= 0) || !(e_max < INFINITY) ||
        !(fabs(t) < FLT_MAX))
        return INT32_MIN;
    double mag = b->pmag + b->qn * e_max + fabs(b->c0) + 1.0 + b->dw + b->sigma * 0x1p31;
    if (!(mag < FLT_MAX / 8))
        return INT32_MIN;
    double a = b->dw + b->qn * e_max * (1 + b->eps) +
               b->eps * (b->pmag + b->qn * e_max + fabs(b->c0) + 1.0 + b->dw) + 2 * b->tiny;
    double x = (b->m == VEC_METRIC_COSINE ? 1.0 : 0.0) - b->c0 - a - t - 1e-9 * (1 + fabs(t));
    /* sigma s (1 + eps) < x for s >= 0, sigma s (1 - eps) < x for s < 0 */
    double root = x >= 0 ? x / (b->sigma * (1 + b->eps)) : x / (b->sigma * (1 - b->eps));
    if (!(root > -0x1p31 + 2))
        return INT32_MIN;
    return root >= 0x1p31 ? INT32_MAX : (int32_t)(floor(root) - 1);
}

/* Bounds lo <= d <= hi for a row with integer sum s, error e_r = e and r_r at *r (read for
 * L2 only: dot and cosine do not need it). */
static inline void quant_bound_row(const quant_bound_t *b, int32_t s, float e, const float *r,
                                   double *lo, double *hi)
{
    if (b->m == VEC_METRIC_L2)
        quant_bound_l2(b, s, e, *r, lo, hi);
    else
        quant_bound_dot(b, s, e, lo, hi);
}

#endif
