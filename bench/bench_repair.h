/* bench_repair.h: `cordon bench repair`, a graph whose nodes were replaced and repaired against
 * a fresh build of the same rows, without the store. Relies on vector/hnsw.h. */
#ifndef CDN_BENCH_REPAIR_H
#define CDN_BENCH_REPAIR_H

int bench_repair_main(int argc, char **argv);

#endif
