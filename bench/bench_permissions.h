/* bench_permissions.h: `cordon bench permissions`, recall, leaks, completeness and latency of
 * every vector strategy under hierarchical permission filters. Relies on include/cordon.h. */
#ifndef CDN_BENCH_PERMISSIONS_H
#define CDN_BENCH_PERMISSIONS_H

/* Runs the benchmark with command-line arguments (argv[0] = "permissions"). Returns 0 when
 * every check held, 1 when a cordon strategy leaked, claimed `complete` wrongly or (with
 * --selftest) fell below recall 0.99, 2 on bad usage or a failure to load. */
int bench_permissions_main(int argc, char **argv);

#endif
