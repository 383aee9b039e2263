/* bench_writers.h: `cordon bench writers`, search latency beside permission and bulk writers.
 * Relies on the public API (cordon.h). */
#ifndef CDN_BENCH_WRITERS_H
#define CDN_BENCH_WRITERS_H

int bench_writers_main(int argc, char **argv);

#endif
