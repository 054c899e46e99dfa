/* Monotonic wall-clock time for measurements. */
#ifndef ERASE_CORE_TIMER_H
#define ERASE_CORE_TIMER_H

#include <stdint.h>

/* Nanoseconds of CLOCK_MONOTONIC (arbitrary origin). */
int64_t erase_now_ns(void);

/* Seconds of CLOCK_MONOTONIC as a double. */
double erase_now_s(void);

#endif
