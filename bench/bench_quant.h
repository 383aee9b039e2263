/* bench_quant.h: `cordon bench quant`, the 8-bit pruned exact scan against exact_search in the
 * same run. Relies on src/vector/quant.h and exact.h; see docs/benchmarks-quant.md for figures. */
#ifndef CDN_BENCH_QUANT_H
#define CDN_BENCH_QUANT_H

/* Runs the benchmark with command-line options (--help lists them); prints a table or, with
 * --format json, one JSON object with a `rows` array. Returns 0, 1 on failure, 2 on bad usage. */
int bench_quant_main(int argc, char **argv);

#endif
