/* bench_catalog.h: the permission catalogs the authorization benchmarks share: a small one (68
 * permissions, 2 users) and a large one (10,000 users, 1,000 nested groups, 500 roles), built
 * as a stream of model operations ({"op": ...} JSON, the vocabulary of cordon_model_apply) that
 * the caller applies wherever it measures (authz_apply in process, /_cordon/model over HTTP),
 * the same catalog as Casbin policy rows, and the checks each benchmark times with the answers
 * they must give. Relies on jansson. */
#ifndef CDN_BENCH_CATALOG_H
#define CDN_BENCH_CATALOG_H

#include <jansson.h>

#define BENCH_CATALOG_CHECKS 5 /* decided checks; the in-process benchmark adds a view */

/* Applies one operation; non-zero stops the build (the callee says why). */
typedef int (*bench_catalog_op_fn)(void *arg, const char *op_json);

typedef struct bench_check {
    char subject[32], resource[64], action[16];
    int amount; /* context.amount */
} bench_check_t;

typedef struct bench_catalog {
    const char *name; /* "small" or "large" */
    bench_catalog_op_fn op;
    void *arg;
    json_t *policies, *groupings; /* Casbin rows (p = sub, dom, obj, act, cond; g = a, b, dom),
                                   * or NULL when not wanted; owned by the caller */
    bench_check_t checks[BENCH_CATALOG_CHECKS]; /* for the catalog's sample subject */
    long ops, perms, conditional;
} bench_catalog_t;

/* The checks' names and the reason each must give (the engine's reason codes). */
extern const char *const bench_check_names[BENCH_CATALOG_CHECKS];
extern const char *const bench_check_reasons[BENCH_CATALOG_CHECKS];

#define BENCH_CATALOG_LARGE_USERS 10000

/* Streams the small or the large catalog through c->op; 0 or the first failure. */
int bench_catalog_build(bench_catalog_t *c, int large);

/* The five checks of the large catalog for user u (0 <= u < BENCH_CATALOG_LARGE_USERS), on a
 * role it holds through one of its teams (nested groups), in bench_check_names' order. */
void bench_catalog_user_checks(int u, bench_check_t out[BENCH_CATALOG_CHECKS]);

#endif
