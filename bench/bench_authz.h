/* bench_authz.h: `cordon bench authz`: is-authorized and view latency on a small and a
 * large catalog, cold and warm, with Casbin (node) as the peer in the same run. Relies on authz/.
 */
#ifndef CDN_BENCH_AUTHZ_H
#define CDN_BENCH_AUTHZ_H

/* Runs the benchmark; returns a process exit code (0 ok, 1 failure, 2 usage). */
int bench_authz_main(int argc, char **argv);

#endif
