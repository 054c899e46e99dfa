/* Monotonic wall-clock time for measurements; the calendar time for logs. */
#ifndef ERASE_CORE_TIMER_H
#define ERASE_CORE_TIMER_H

#include <stdint.h>

/* Nanoseconds of CLOCK_MONOTONIC (arbitrary origin). */
int64_t erase_now_ns(void);

/* Seconds of CLOCK_MONOTONIC as a double. */
double erase_now_s(void);

/* CPU seconds of the process so far (every thread; CLOCK_PROCESS_CPUTIME_ID):
 * what a measurement costs whatever else shares the machine. */
double erase_cpu_s(void);

/* Seconds since the Unix epoch (CLOCK_REALTIME, with its fraction): the
 * time of day a log record was written, not for measuring durations. */
double erase_unix_time_s(void);

/* Nanoseconds from CLOCK_MONOTONIC to CLOCK_REALTIME now (the wall clock
 * read between two monotonic reads, the closest of a few tries: within a
 * microsecond or so): add it to an erase_now_ns() time to place that time
 * on the wall clock, which ranks on one host share exactly and hosts share
 * to their clock synchronization's accuracy (a trace's one timeline:
 * apps/train/loop.c). No error return. */
int64_t erase_wall_offset_ns(void);

#endif
