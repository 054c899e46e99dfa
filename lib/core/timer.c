#include "lib/core/timer.h"

#include <stdint.h>
#include <time.h>

int64_t erase_now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

double erase_now_s(void)
{
    return (double)erase_now_ns() * 1e-9;
}

double erase_cpu_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

double erase_unix_time_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_REALTIME, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

int64_t erase_wall_offset_ns(void)
{
    /* the wall clock read between two monotonic reads, against their
     * midpoint; the closest bracket of 8 tries (a thread descheduled
     * between the reads would skew a single pair by its time away) */
    int64_t best = 0, width = INT64_MAX;
    for (int i = 0; i < 8 && width > 1000; i++) {
        struct timespec m0, w, m1;
        clock_gettime(CLOCK_MONOTONIC, &m0);
        clock_gettime(CLOCK_REALTIME, &w);
        clock_gettime(CLOCK_MONOTONIC, &m1);
        int64_t a = (int64_t)m0.tv_sec * 1000000000 + m0.tv_nsec, b = (int64_t)m1.tv_sec * 1000000000 + m1.tv_nsec;
        if (b - a < width) {
            width = b - a;
            best = ((int64_t)w.tv_sec * 1000000000 + w.tv_nsec) - (a + (b - a) / 2);
        }
    }
    return best;
}
