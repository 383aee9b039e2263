/* clock.c: thin wrappers over clock_gettime.
 * Relies on POSIX clocks. */
#include "base/clock.h"

#include <time.h>

uint64_t cdn_clock_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}
