/*
 * Trace writing (lib/sched/trace.c): records paired into Chrome trace
 * events in microseconds from the window's origin; ranges begun before the
 * origin (a pipeline's send whose end was logged after the window opened)
 * and unpaired begins left out; the overlap of blocks' backward ranges
 * ("<block>/backward") with their forward ranges.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "lib/sched/trace.h"

static const char SEND[] = "send gradient", FWD[] = "forward", BWD[] = "backward", BLOCK_FWD[] = "h1/forward",
                  BLOCK_BWD[] = "h1/backward";

static void test_window(void **state)
{
    (void)state;
    const int64_t t0 = 1000000; /* the origin, ns */
    const erase_trace_record_t rec[] = {
        { SEND, 1, 1, t0 - 4000 }, /* a warm-up's send, its end logged late */
        { FWD, 0, 1, t0 + 2000 },
        { SEND, 1, 0, t0 + 2500 },
        { FWD, 0, 0, t0 + 5000 },
        { SEND, 1, 1, t0 + 6000 },
        { SEND, 1, 0, t0 + 7500 },
        { BWD, 0, 1, t0 + 8000 }, /* never ended: left out */
    };
    const char *names[] = { "compute", "grad_out" };
    char *text = NULL;
    size_t len = 0;
    FILE *out = open_memstream(&text, &len);
    assert_non_null(out);
    size_t n = erase_trace_write_events(out, rec, sizeof rec / sizeof rec[0], 1, names, 2, t0, 1);
    fclose(out);
    assert_int_equal(n, 2);
    assert_string_equal(text,
        "{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":1,\"tid\":0,\"args\":{\"name\":\"compute\"}},\n"
        "{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":1,\"tid\":1,\"args\":{\"name\":\"grad_out\"}},\n"
        "{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":1,\"args\":{\"name\":\"rank 1\"}},\n"
        "{\"name\":\"forward\",\"ph\":\"X\",\"pid\":1,\"tid\":0,\"ts\":2.000,\"dur\":3.000},\n"
        "{\"name\":\"send gradient\",\"ph\":\"X\",\"pid\":1,\"tid\":1,\"ts\":6.000,\"dur\":1.500}");
    free(text);
}

static void test_overlap(void **state)
{
    (void)state;
    const erase_trace_record_t rec[] = {
        { BLOCK_FWD, 0, 1, 0 },    { BLOCK_BWD, 1, 1, 1000 }, { BLOCK_FWD, 0, 0, 3000 },
        { BLOCK_BWD, 1, 0, 5000 }, { BLOCK_BWD, 1, 1, 6000 }, { BLOCK_BWD, 1, 0, 7000 },
    };
    erase_trace_overlap_t o = erase_trace_overlap(rec, sizeof rec / sizeof rec[0]);
    assert_float_equal(o.backward_ms, 0.005, 1e-12);   /* 4 us + 1 us */
    assert_float_equal(o.overlapped_ms, 0.002, 1e-12); /* 1 .. 3 us */
    assert_float_equal(o.overlap_fraction, 0.4, 1e-12);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_window),
        cmocka_unit_test(test_overlap),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
