/* bench_hnsw.h: `cordon bench hnsw`, build, memory, persistence, recall and latency of the HNSW
 * index, unfiltered and under permission filters. Relies on src/vector/hnsw.h and exact.h. */
#ifndef CDN_BENCH_HNSW_H
#define CDN_BENCH_HNSW_H

/* Runs the benchmark with command-line options (--help lists them); prints a table or, with
 * --format json, one JSON object with a `rows` array. Returns 0, 1 on failure, 2 on bad usage. */
int bench_hnsw_main(int argc, char **argv);

#endif
