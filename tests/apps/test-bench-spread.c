/*
 * apps/bench/bench_common: the spread of a benchmark's samples (min,
 * median, max) and the warning every erase-bench subcommand prints when
 * the spread says the machine was busy; the FMA peak on several threads.
 */
#include "apps/bench/bench.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

static void test_spread(void **state)
{
    (void)state;
    double odd[5] = { 3, 1, 2, 5, 4 };
    bench_spread_t s = bench_spread(odd, 5);
    printf("# spread of 3 1 2 5 4: %g %g %g\n", s.min, s.median, s.max);
    assert_true(s.min == 1 && s.median == 3 && s.max == 5);
    double even[4] = { 4, 1, 3, 2 };
    s = bench_spread(even, 4);
    assert_true(s.min == 1 && s.median == 2.5 && s.max == 4);
    double one[1] = { 7 };
    s = bench_spread(one, 1);
    assert_true(s.min == 7 && s.median == 7 && s.max == 7);
    s = bench_spread(NULL, 0);
    assert_true(s.min == 0 && s.median == 0 && s.max == 0);
}

static void test_warning(void **state)
{
    (void)state;
    char text[256];
    /* (1.74 - 1) / 1.2 = 62%: busy */
    bench_spread_t busy = { 1.0, 1.2, 1.74 };
    assert_int_equal(bench_spread_warning(busy, "256x256x256 on 1 thread", "ms", text, sizeof text), 1);
    printf("# %s\n", text);
    assert_string_equal(text, "warning: 256x256x256 on 1 thread: samples spread 62% (1 .. 1.74 ms): "
                              "the machine was busy; figures are not reliable");
    /* 20%: quiet */
    bench_spread_t quiet = { 10, 10.5, 12 };
    assert_int_equal(bench_spread_warning(quiet, "x", "ms", text, sizeof text), 0);
    assert_string_equal(text, "");
    /* the limit itself: (10 - 8) / 8 = 25% is not above it */
    bench_spread_t edge = { 8, 8, 10 };
    assert_true(BENCH_SPREAD_LIMIT == 0.25);
    assert_int_equal(bench_spread_warning(edge, "x", "ms", text, sizeof text), 0);
    edge.max = 10.01;
    assert_int_equal(bench_spread_warning(edge, "x", "GFLOP/s", text, sizeof text), 1);
    assert_string_equal(text, "warning: x: samples spread 25% (8 .. 10 GFLOP/s): the machine was busy; "
                              "figures are not reliable");
    /* no median (no samples): nothing to say */
    bench_spread_t none = { 0, 0, 0 };
    assert_int_equal(bench_spread_warning(none, "x", "ms", text, sizeof text), 0);
}

static void test_peak_threads(void **state)
{
    (void)state;
    const char *isa = NULL;
    double one = bench_fma_peak_gflops(1, &isa), two = bench_fma_peak_gflops(2, &isa);
    printf("# FMA peak (%s): %.1f GFLOP/s on 1 thread, %.1f on 2\n", isa, one, two);
    assert_non_null(isa);
    if (!strcmp(isa, "unknown ISA (no peak)")) {
        assert_true(one == 0 && two == 0);
        return;
    }
    assert_true(one > 0 && two > 0);
    assert_true(bench_fma_peak_gflops(0, &isa) == 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_spread),
        cmocka_unit_test(test_warning),
        cmocka_unit_test(test_peak_threads),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
