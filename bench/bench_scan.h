/* bench_scan.h: `cordon bench scan`, the exact filtered scan against a plain scalar loop.
 * Relies on src/vector/exact.h; see docs/benchmarks-vector.md for figures. */
#ifndef CDN_BENCH_SCAN_H
#define CDN_BENCH_SCAN_H

/* Runs the benchmark with command-line options (--help lists them); prints a table or, with
 * --format json, one JSON object with a `rows` array. Returns 0, 1 on failure, 2 on bad usage. */
int bench_scan_main(int argc, char **argv);

#endif
