/* bench_util.h: what the benchmark programs share: a seedable random generator for generated
 * data (splitmix64) and option parsing. Relies on libc only. */
#ifndef CDN_BENCH_UTIL_H
#define CDN_BENCH_UTIL_H

#include <stdint.h>

/* splitmix64: seedable, fast, and good enough for test data; *s is the state. */
uint64_t bench_rng_next(uint64_t *s);
/* Uniform in (0, 1). */
double bench_rng_unit(uint64_t *s);
/* Standard normal (Box-Muller, one value per call). */
float bench_rng_gauss(uint64_t *s);

/* Parses a whole number from lo to hi for option `name` of `cordon bench <bench>`; prints what
 * is wrong and returns 2 (the usage exit code) when it is not one, else 0. */
int bench_parse_u64(const char *bench, const char *name, const char *val, uint64_t lo,
                    uint64_t hi, uint64_t *out);

#endif
