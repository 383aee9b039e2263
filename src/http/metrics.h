/* metrics.h: the server's Prometheus metrics: requests by route and status, their latency and
 * size, the plans searches ran, and gauges the caller reads at scrape time. Relies on base/buf.h.
 *
 * Recording (metrics_request, metrics_search) takes no lock and allocates nothing except the
 * first time a plan name is seen; it may run from any number of threads at once, and at the
 * same time as metrics_render. A scrape reads each counter once; counters of one request may
 * land on either side of a concurrent scrape, but every histogram's _count equals its +Inf
 * bucket. See docs/internals/metrics.md for the families. */
#ifndef CDN_HTTP_METRICS_H
#define CDN_HTTP_METRICS_H

#include "base/buf.h"

#include <stddef.h>
#include <stdint.h>

typedef struct metrics metrics_t;

/* At most this many distinct plan names get their own series; later ones count as "other". */
#define METRICS_PLANS_MAX 32
/* A plan name longer than this counts as "other". */
#define METRICS_PLAN_NAME_MAX 128

/* routes: n route templates such as "GET /{index}/_search"; they label requests, and are
 * copied. Route index n (any index >= n) is the "unmatched" route. Returns 0, CDN_ERR_INVALID
 * (routes NULL while n > 0, a NULL template, or out NULL) or CDN_ERR_NOMEM. Free *out with
 * metrics_free. */
int metrics_create(const char *const *routes, size_t n, metrics_t **out);
void metrics_free(metrics_t *m);

/* One request answered: route index (n = unmatched), HTTP status, seconds taken, response
 * bytes. A status outside the fixed list (200 201 400 401 403 404 405 409 413 429 500 503) is
 * counted as "other"; a negative or NaN duration counts as 0. */
void metrics_request(metrics_t *m, size_t route, int status, double seconds, size_t bytes);

/* One search: the plan that ran (e.g. "exact", "hnsw-filtered", "bm25-maxscore",
 * "rrf(exact,bm25)"; NULL or empty counts as "other"), the size of the subject's readable set,
 * and the hits the final permission re-check dropped. */
void metrics_search(metrics_t *m, const char *plan, uint64_t readable, uint64_t dropped);

typedef struct metrics_collection {
    const char *name;
    uint64_t chunks;
    uint64_t bytes;
} metrics_collection_t;

/* Values only the caller knows, read at scrape time. */
typedef struct metrics_gauges {
    uint64_t revision;
    uint64_t resident_bytes;      /* metrics_resident_bytes(), usually */
    uint64_t resident_file_bytes; /* of which file-backed: metrics_resident_bytes(&file) */
    double cpu_seconds;           /* metrics_cpu_seconds(), usually */
    size_t in_flight;             /* requests being answered, this scrape included */
    const metrics_collection_t *colls;
    size_t n_colls;
    const struct cordon_authorizer_stats *authorizers; /* cordon_authorizer_stats_get */
    size_t n_authorizers;
} metrics_gauges_t;

/* Appends the Prometheus text exposition format (version 0.0.4) to out: every family with its
 * HELP and TYPE lines. g may be NULL: then the gauge families are left out. Returns 0,
 * CDN_ERR_INVALID (a collection without a name), CDN_ERR_NOMEM or CDN_ERR_LIMIT (out's
 * maximum); on failure out is as it was. The HTTP response's
 * Content-Type is METRICS_CONTENT_TYPE. */
int metrics_render(metrics_t *m, const metrics_gauges_t *g, cdn_buf_t *out);
#define METRICS_CONTENT_TYPE "text/plain; version=0.0.4; charset=utf-8"

/* Resident memory of this process from /proc/self/statm (0 if unknown), and in *file (may be
 * NULL) how much of it is shared pages: files mapped from the page cache (the float rows a
 * collection with codes re-scored, the database's pages, the binary), which the kernel may
 * take back under memory pressure. */
uint64_t metrics_resident_bytes(uint64_t *file);
/* CPU time this process has used, user and system, in seconds (getrusage); 0 if unknown. */
double metrics_cpu_seconds(void);

#endif
