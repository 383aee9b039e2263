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

/* The exact scan's shortcut: most of its rows end on their lower bound, and for the running
 * threshold t the rows whose bound is above it can be told from their integer sum (and, for
 * L2, their r_r) by one comparison instead of the bound's dozen double operations and a square
 * root (SciFact, every row readable: 98% of the rows a query scans). A row passes the test
 * only if its bound, as quant_bound_dot or quant_bound_l2 computes it, is above t, provided
 * its e_r is at most the e_max the test was set for; every other row is judged as before.
 * Why it holds. In exact arithmetic the lower bound falls as the sum or e_r grows (sigma >= 0,
 * eps, epsd < 1) and, for L2, rises with r_r, so the test solves the bound's formula for the
 * sum (dot, cosine: lo = C - sigma s - A(e) - eps sigma |s|, C = (1 or 0) - c0) or for the
 * squared distance under the root (L2: a - delta, affine in r_r, s and |s|, must exceed
 * ((tau + e) / (1 - 2^-50))^2, tau = sqrt((t + tiny) / (1 - eps))) with e = e_max and a margin
 * of 1e-9 relative to every term involved, far above the few 2^-53 of rounding either side's
 * doubles carry; the dot test also gives up one more unit of the sum. Magnitudes that could
 * reach the bounds' -inf (mag near FLT_MAX, a non-finite r_r) are never passed. */
typedef struct quant_drop {
    int kind;                  /* 0 nothing passes; 1 dot and cosine; 2 L2 */
    int32_t below;             /* dot: sums below it pass */
    double cr, sig2, sig2e, k; /* L2: r cr - sig2 s - sig2e |s| > k passes */
} quant_drop_t;

static inline void quant_bound_drop_set(quant_drop_t *d, const quant_bound_t *b, double e_max,
                                        double t)
{
    d->kind = 0;
    if (!(b->sigma >= 0) || !(b->sigma < 1e30) || !(e_max >= 0) || !(e_max < INFINITY) ||
        !(fabs(t) < FLT_MAX))
        return;
    if (b->m == VEC_METRIC_L2) {
        if (!(t >= 0) || !(b->qq < 1e300))
            return;
        double tau = sqrt((t + b->tiny) / (1 - b->eps));
        double q = (tau + e_max) / (1 - 0x1p-50);
        q = q * q;
        d->cr = 1 - 0x1p-23 - b->epsd - 1e-9;
        d->sig2 = 2 * b->sigma;
        d->sig2e = 2 * b->sigma * (b->epsd + 1e-9);
        d->k = q * (1 + 1e-9) + 2 * b->dw - b->qq * (1 - b->epsd) + 1e-9 * (1 + b->qq);
        d->kind = 2;
        return;
    }
    if (!(b->sigma > 0))
        return;
    /* quant_bound_dot's mag without its |sum| term, at e_max; with the largest |sum| it must
     * stay far from FLT_MAX */
    double mag0 = b->pmag + b->qn * e_max + fabs(b->c0) + 1.0 + b->dw;
    if (!(mag0 + b->sigma * 0x1p31 < FLT_MAX / 8))
        return;
    double a = b->dw + b->qn * e_max * (1 + b->eps) + b->eps * mag0 + 2 * b->tiny;
    double x = (b->m == VEC_METRIC_COSINE ? 1.0 : 0.0) - b->c0 - a - t - 1e-9 * (1 + fabs(t));
    /* sigma s (1 + eps) < x for s >= 0, sigma s (1 - eps) < x for s < 0 */
    double root = x >= 0 ? x / (b->sigma * (1 + b->eps)) : x / (b->sigma * (1 - b->eps));
    if (!(root > -0x1p31 + 2))
        return;
    d->below = root >= 0x1p31 ? INT32_MAX : (int32_t)(floor(root) - 1);
    d->kind = 1;
}

/* Whether a row with integer sum s and r_r = r (read for L2 only) passes the test set by
 * quant_bound_drop_set: its lower bound is above t, if its e_r is at most that e_max. */
static inline int quant_bound_drops(const quant_drop_t *d, int32_t s, float r)
{
    if (d->kind == 1)
        return s < d->below;
    return d->kind == 2 && r <= FLT_MAX &&
           (double)r * d->cr - d->sig2 * (double)s - d->sig2e * fabs((double)s) > d->k;
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
