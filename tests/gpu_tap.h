/*
 * TAP for GPU tests on a machine without a GPU. cmocka 1.1.5 prints a
 * skipped case as "not ok N # SKIP", which automake's TAP driver counts as
 * a failure; so a GPU test whose device cannot be opened prints its plan
 * and "ok N # SKIP <case>: <reason>" for cases first..n-1 itself.
 */
#ifndef ERASE_TESTS_GPU_TAP_H
#define ERASE_TESTS_GPU_TAP_H

#include <stdio.h>

/* Print "1..n" if first == 0, then one SKIP line per case from `first`
 * (0-based) with `reason` (the device's error text). Returns 0. */
static inline int gpu_tap_skip(const struct CMUnitTest *tests, size_t n, size_t first,
                               const char *reason)
{
    if (first == 0)
        printf("1..%zu\n", n);
    for (size_t i = first; i < n; i++)
        printf("ok %zu # SKIP %s: %s\n", i + 1, tests[i].name, reason);
    return 0;
}

#endif
