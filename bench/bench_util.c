/* bench_util.c: the benchmarks' shared random generator and option parsing.
 * Relies on libc math for the normal variates. */
#include "bench_util.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

uint64_t bench_rng_next(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

double bench_rng_unit(uint64_t *s)
{
    return ((bench_rng_next(s) >> 11) + 0.5) / 9007199254740992.0;
}

float bench_rng_gauss(uint64_t *s)
{
    return (float)(sqrt(-2.0 * log(bench_rng_unit(s))) * cos(6.283185307179586 * bench_rng_unit(s)));
}

int bench_parse_u64(const char *bench, const char *name, const char *val, uint64_t lo,
                    uint64_t hi, uint64_t *out)
{
    char *end;
    errno = 0;
    unsigned long long v = val ? strtoull(val, &end, 10) : 0;
    if (!val || errno || *end || v < lo || v > hi || val[0] == '-') {
        fprintf(stderr, "cordon bench %s: %s needs a whole number from %llu to %llu (got '%s')\n",
                bench, name, (unsigned long long)lo, (unsigned long long)hi, val ? val : "");
        return 2;
    }
    *out = v;
    return 0;
}
