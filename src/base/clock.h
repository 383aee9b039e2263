/* clock.h: monotonic time for measurements.
 * Relies on clock_gettime. */
#ifndef CDN_CLOCK_H
#define CDN_CLOCK_H

#include <stdint.h>

/* Nanoseconds from an arbitrary fixed point; only differences mean anything. */
uint64_t cdn_clock_ns(void);

#endif
