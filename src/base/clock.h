/* clock.h: monotonic time for measurements and wall time for records.
 * Relies on clock_gettime. */
#ifndef CDN_CLOCK_H
#define CDN_CLOCK_H

#include <stdint.h>

/* Nanoseconds from an arbitrary fixed point; only differences mean anything. */
uint64_t cdn_clock_ns(void);
/* Milliseconds since the Unix epoch. */
uint64_t cdn_clock_wall_ms(void);

#endif
