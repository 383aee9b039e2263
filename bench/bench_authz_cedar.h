/* bench_authz_cedar.h: the Cedar peer of `cordon bench authz`: exports each catalog's model,
 * has bench/peers/cedar/peer.js translate it to Cedar and decide the same requests, and reads
 * back Cedar's decisions and latencies. Relies on authz/ (export), jansson, node and npm.
 */
#ifndef CDN_BENCH_AUTHZ_CEDAR_H
#define CDN_BENCH_AUTHZ_CEDAR_H

#include "authz/authz.h"

/* One request for Cedar, with cordon's decision beside it. */
typedef struct bench_cedar_req {
    const char *check; /* the table row it times, or NULL: asked for the agreement only */
    char subject[32], resource[64], action[16];
    int amount;            /* context.amount */
    int want;              /* cordon's decision: 1 allowed, 0 not */
    int got;               /* Cedar's: 1 allow, 0 deny, -1 no answer */
    double p50, p95, rate; /* Cedar's latency (µs) and calls per second; < 0 untimed */
} bench_cedar_req_t;

typedef struct bench_cedar_cat {
    const char *name;
    authz_model_t *m; /* borrowed */
    bench_cedar_req_t *reqs;
    int n;
    long policies, entities; /* what the translation gave, -1 unknown */
} bench_cedar_cat_t;

/* What the run gave besides each request's answer. */
typedef struct bench_cedar_info {
    char version[32];
    double floor_p50, floor_p95; /* one call on an empty policy set: the binding's own cost */
} bench_cedar_info_t;

/* Runs the peer on the catalogs: timed requests get min(iters, 20000) calls or budget_s
 * seconds, the others one. Fills got and the latencies, and info. Returns 0 when the peer
 * answered every request, 1 otherwise (a note on stderr says why). */
int bench_cedar_run(bench_cedar_cat_t *cats, int ncats, long iters, double budget_s,
                    bench_cedar_info_t *info);

#endif
