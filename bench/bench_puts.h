/* bench_puts.h: `cordon bench puts`, the time of batches of writes into an existing data
 * directory (a large collection reopened, as a server restarted under ingest). Relies on
 * cordon.h. */
#ifndef CDN_BENCH_PUTS_H
#define CDN_BENCH_PUTS_H

int bench_puts_main(int argc, char **argv);

#endif
