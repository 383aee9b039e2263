/* bench_load.h: `cordon bench load`, concurrent users searching `cordon serve` over HTTP, each as
 * its own subject with its own key, every hit checked against the benchmark's own ACLs; _bulk
 * ingest against the C API; the HTTP overhead. Relies on a `cordon` binary beside cordon-bench
 * (or a running server) and on cordon.h for the C API rows. */
#ifndef CDN_BENCH_LOAD_H
#define CDN_BENCH_LOAD_H

int bench_load_main(int argc, char **argv);

#endif
