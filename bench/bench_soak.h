/* bench_soak.h: `cordon bench soak`, mixed reads and writes for a set time, reported once an
 * interval (memory, sizes, latency, errors). Relies on the public API (cordon.h). */
#ifndef CDN_BENCH_SOAK_H
#define CDN_BENCH_SOAK_H

int bench_soak_main(int argc, char **argv);

#endif
