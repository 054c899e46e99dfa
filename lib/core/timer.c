#include "lib/core/timer.h"

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

double erase_unix_time_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_REALTIME, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

int64_t erase_wall_offset_ns(void)
{
    struct timespec w, m;
    clock_gettime(CLOCK_MONOTONIC, &m);
    clock_gettime(CLOCK_REALTIME, &w);
    return ((int64_t)w.tv_sec - (int64_t)m.tv_sec) * 1000000000 + ((int64_t)w.tv_nsec - (int64_t)m.tv_nsec);
}
