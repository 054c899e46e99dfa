/*
 * Stream and event semantics of the CPU backend: FIFO order, randomized
 * producer/consumer rounds across streams (a consumer never reads before the
 * producer's event; run under ThreadSanitizer in the TSan build), event
 * query/synchronize/elapsed time, sticky errors, copies, and the rules of
 * stream capture.
 */
#include <setjmp.h>
#include <stdatomic.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "lib/core/rng.h"
#include "lib/core/timer.h"
#include "lib/device/cpu/cpu.h"
#include "tests/cpu_device.h"
#include "tests/device/kernels.h"

#define MUST(call) assert_int_equal((call), ERASE_OK)

static erase_device_t *dev;

static int setup(void **state)
{
    return erase_test_cpu_open(1, 1, &dev);
}

static int teardown(void **state)
{
    erase_device_close(dev);
    return 0;
}

static void test_fifo_order(void **state)
{
    erase_stream_t *s;
    MUST(erase_stream_create(dev, &s));
    enum { N = 2000 };
    static int log[N];
    int len = 0;
    for (int i = 0; i < N; i++)
        MUST(k_append(s, log, &len, i));
    MUST(erase_stream_synchronize(s));
    assert_int_equal(len, N);
    int out_of_order = 0;
    for (int i = 0; i < N; i++)
        out_of_order += log[i] != i;
    print_message("FIFO: %d of %d operations out of order\n", out_of_order, N);
    assert_int_equal(out_of_order, 0);
    assert_int_equal(erase_stream_enqueued(s), N);
    erase_stream_destroy(s);
}

/*
 * 10,000 rounds: a random producer stream fills a slot with the round
 * number after a random delay and records an event; a random other stream
 * waits on it and checks every element. A slot is reused only after its
 * previous consumer's event (write-after-read edge). Any missing edge shows
 * as a wrong value here and as a data race under ThreadSanitizer.
 */
static void test_producer_consumer(void **state)
{
    enum { STREAMS = 3, SLOTS = 4, WIDTH = 256, ROUNDS = 10000 };
    erase_stream_t *s[STREAMS];
    erase_event_t *produced[SLOTS], *consumed[SLOTS];
    float *slot[SLOTS];
    int64_t bad[STREAMS] = { 0 };
    for (int i = 0; i < STREAMS; i++)
        MUST(erase_stream_create(dev, &s[i]));
    for (int i = 0; i < SLOTS; i++) {
        MUST(erase_event_create(dev, &produced[i]));
        MUST(erase_event_create(dev, &consumed[i]));
        MUST(erase_malloc(dev, WIDTH * sizeof(float), (void **)&slot[i]));
        memset(slot[i], 0, WIDTH * sizeof(float));
    }
    uint64_t rng = 2026;
    for (int r = 0; r < ROUNDS; r++) {
        int k = r % SLOTS;
        int p = (int)erase_rng_below(&rng, STREAMS);
        int c = (p + 1 + (int)erase_rng_below(&rng, STREAMS - 1)) % STREAMS;
        MUST(erase_stream_wait_event(s[p], consumed[k]));
        MUST(k_fill(s[p], slot[k], WIDTH, (float)r, (int64_t)erase_rng_below(&rng, 20000)));
        MUST(erase_event_record(produced[k], s[p]));
        MUST(erase_stream_wait_event(s[c], produced[k]));
        MUST(k_expect(s[c], slot[k], WIDTH, (float)r, &bad[c]));
        MUST(erase_event_record(consumed[k], s[c]));
    }
    for (int i = 0; i < STREAMS; i++)
        MUST(erase_stream_synchronize(s[i]));
    int64_t total = 0;
    for (int i = 0; i < STREAMS; i++)
        total += bad[i];
    print_message("producer/consumer: %d rounds on %d streams, %lld reads saw a value "
                  "other than their producer's\n", ROUNDS, STREAMS, (long long)total);
    assert_int_equal(total, 0);
    for (int i = 0; i < SLOTS; i++) {
        erase_event_destroy(produced[i]);
        erase_event_destroy(consumed[i]);
        erase_free(dev, slot[i]);
    }
    for (int i = 0; i < STREAMS; i++)
        erase_stream_destroy(s[i]);
}

static void test_event_query_sync_elapsed(void **state)
{
    erase_stream_t *s;
    erase_event_t *a, *b;
    atomic_int gate = 0;
    MUST(erase_stream_create(dev, &s));
    MUST(erase_event_create(dev, &a));
    MUST(erase_event_create(dev, &b));
    MUST(k_gate(s, &gate));
    MUST(erase_event_record(a, s));
    MUST(k_spin(s, 20 * 1000 * 1000));
    MUST(erase_event_record(b, s));
    /* the gate is closed: neither event can have been reached */
    assert_int_equal(erase_event_query(a), ERASE_ERR_NOT_READY);
    assert_int_equal(erase_event_query(b), ERASE_ERR_NOT_READY);
    double ms = -1;
    assert_int_equal(erase_event_elapsed_ms(a, b, &ms), ERASE_ERR_NOT_READY);
    atomic_store(&gate, 1);
    MUST(erase_event_synchronize(b));
    assert_int_equal(erase_event_query(a), ERASE_OK);
    assert_int_equal(erase_event_query(b), ERASE_OK);
    MUST(erase_event_elapsed_ms(a, b, &ms));
    print_message("elapsed across a 20 ms kernel: %.3f ms (expected >= 20)\n", ms);
    assert_true(ms >= 20.0);
    erase_event_destroy(a);
    erase_event_destroy(b);
    erase_stream_destroy(s);
}

static void test_unrecorded_event(void **state)
{
    erase_stream_t *s;
    erase_event_t *e, *f;
    MUST(erase_stream_create(dev, &s));
    MUST(erase_event_create(dev, &e));
    MUST(erase_event_create(dev, &f));
    assert_int_equal(erase_event_query(e), ERASE_OK);
    MUST(erase_event_synchronize(e));
    MUST(erase_stream_wait_event(s, e));
    MUST(erase_stream_synchronize(s));
    MUST(erase_event_record(f, s));
    MUST(erase_event_synchronize(f));
    double ms;
    assert_int_equal(erase_event_elapsed_ms(e, f, &ms), ERASE_ERR_INVALID);
    assert_non_null(strstr(erase_error_message(), "elapsed time: the start event was never recorded"));
    erase_event_destroy(e);
    erase_event_destroy(f);
    erase_stream_destroy(s);
}

static void test_sticky_error(void **state)
{
    erase_stream_t *s;
    MUST(erase_stream_create(dev, &s));
    int log[4], len = 0;
    MUST(k_append(s, log, &len, 1));
    MUST(k_fail(s, "kernel said no"));
    MUST(k_append(s, log, &len, 2));
    assert_int_equal(erase_stream_synchronize(s), ERASE_ERR_BACKEND);
    print_message("sticky error: %s\n", erase_error_message());
    assert_non_null(strstr(erase_error_message(), "an operation on this stream failed: "));
    assert_non_null(strstr(erase_error_message(), "kernel said no"));
    assert_int_equal(len, 1); /* the operation after the failure did not run */
    assert_int_equal(erase_stream_synchronize(s), ERASE_ERR_BACKEND);
    erase_stream_destroy(s);
}

/* erase_stream_error: no error before the failing operation ran (an
 * event waits on the stream's work, not the host on the stream), the
 * sticky error after it, without a synchronize. */
static void test_stream_error(void **state)
{
    erase_stream_t *s;
    erase_event_t *before, *after;
    MUST(erase_stream_create(dev, &s));
    MUST(erase_event_create(dev, &before));
    MUST(erase_event_create(dev, &after));
    int log[4], len = 0;
    MUST(k_append(s, log, &len, 1));
    MUST(erase_event_record(before, s));
    MUST(erase_event_synchronize(before));
    assert_int_equal(erase_stream_error(s), ERASE_OK);
    MUST(k_fail(s, "kernel said no"));
    MUST(erase_event_record(after, s));
    MUST(erase_event_synchronize(after));
    assert_int_equal(erase_stream_error(s), ERASE_ERR_BACKEND);
    assert_non_null(strstr(erase_error_message(), "an operation on this stream failed: "));
    assert_non_null(strstr(erase_error_message(), "kernel said no"));
    assert_int_equal(erase_stream_synchronize(s), ERASE_ERR_BACKEND);
    erase_event_destroy(before);
    erase_event_destroy(after);
    erase_stream_destroy(s);
}

static void test_copies(void **state)
{
    erase_stream_t *s;
    MUST(erase_stream_create(dev, &s));
    enum { N = 1000 };
    unsigned char *a, *b;
    MUST(erase_malloc(dev, N, (void **)&a));
    MUST(erase_malloc(dev, N, (void **)&b));
    assert_int_equal((uintptr_t)a % 64, 0);
    MUST(erase_memset_async(s, a, 0x5a, N));
    MUST(erase_memcpy_async(s, b, a, N));
    MUST(erase_memset_async(s, a, 0, N / 2));
    MUST(erase_stream_synchronize(s));
    for (int i = 0; i < N; i++) {
        assert_int_equal(b[i], 0x5a);
        assert_int_equal(a[i], i < N / 2 ? 0 : 0x5a);
    }
    void *z;
    MUST(erase_malloc(dev, 0, &z));
    assert_non_null(z);
    erase_free(dev, z);
    erase_free(dev, a);
    erase_free(dev, b);
    erase_stream_destroy(s);
}

/* erase_memcpy2d_async: a column of a row-major [5, 4] matrix of ints out
 * to a vector and back into another column; a row of 0 bytes and 0 rows
 * copy nothing; the errors' text. */
static void test_copy2d(void **state)
{
    (void)state;
    erase_stream_t *s;
    MUST(erase_stream_create(dev, &s));
    int32_t *m, *v;
    MUST(erase_malloc(dev, sizeof(int32_t) * 20, (void **)&m));
    MUST(erase_malloc(dev, sizeof(int32_t) * 5, (void **)&v));
    for (int i = 0; i < 20; i++)
        m[i] = i;
    const size_t row = 4 * sizeof(int32_t);
    MUST(erase_memcpy2d_async(s, v, sizeof(int32_t), m + 2, row, sizeof(int32_t), 5)); /* column 2 out */
    MUST(erase_memcpy2d_async(s, m + 1, row, v, sizeof(int32_t), sizeof(int32_t), 5)); /* into column 1 */
    MUST(erase_memcpy2d_async(s, m, row, v, sizeof(int32_t), 0, 5));
    MUST(erase_memcpy2d_async(s, m, row, v, sizeof(int32_t), sizeof(int32_t), 0));
    MUST(erase_stream_synchronize(s));
    for (int i = 0; i < 5; i++) {
        assert_int_equal(v[i], 4 * i + 2);
        for (int j = 0; j < 4; j++)
            assert_int_equal(m[4 * i + j], 4 * i + (j == 1 ? 2 : j));
    }
    assert_int_equal(erase_memcpy2d_async(s, v, 2, m, row, 4, 5), ERASE_ERR_INVALID);
    assert_string_equal(erase_error_reason(), "erase_memcpy2d_async: rows of 4 bytes with pitches 2 (dst) and 16 (src)");
    assert_int_equal(erase_memcpy2d_async(s, v, SIZE_MAX / 2, m, row, 4, 5), ERASE_ERR_INVALID);
    assert_string_equal(erase_error_reason(), "erase_memcpy2d_async: 5 rows of pitch 9223372036854775807 / 16 overflow");
    assert_int_equal(erase_memcpy2d_async(s, NULL, 4, m, row, 4, 5), ERASE_ERR_INVALID);
    assert_string_equal(erase_error_reason(), "erase_memcpy2d_async: NULL pointer for 5 rows of 4 bytes");
    erase_free(dev, m);
    erase_free(dev, v);
    erase_stream_destroy(s);
}

static void test_capture_rules(void **state)
{
    erase_stream_t *o, *side;
    erase_event_t *fork, *outside;
    erase_graph_t *g = NULL;
    float *x;
    MUST(erase_stream_create(dev, &o));
    MUST(erase_stream_create(dev, &side));
    MUST(erase_event_create(dev, &fork));
    MUST(erase_event_create(dev, &outside));
    MUST(erase_malloc(dev, 16 * sizeof(float), (void **)&x));

    /* synchronize while capturing */
    MUST(erase_stream_begin_capture(o));
    assert_int_equal(erase_stream_is_capturing(o), 1);
    assert_int_equal(erase_stream_begin_capture(o), ERASE_ERR_STATE);
    assert_int_equal(erase_stream_synchronize(o), ERASE_ERR_STATE);
    assert_non_null(strstr(erase_error_message(), "stream synchronize is not allowed while the stream is capturing"));
    MUST(erase_stream_end_capture(o, &g));
    assert_int_equal(erase_graph_node_count(g), 0);
    erase_graph_destroy(g);

    /* a side stream that joins and is never joined back */
    MUST(erase_stream_begin_capture(o));
    MUST(erase_event_record(fork, o));
    MUST(erase_stream_wait_event(side, fork));
    assert_int_equal(erase_stream_is_capturing(side), 1);
    MUST(k_affine(side, x, 16, 2.0f, 1.0f));
    assert_int_equal(erase_stream_end_capture(side, &g), ERASE_ERR_STATE);
    assert_non_null(strstr(erase_error_message(), "end_capture must be called on the stream that began the capture"));
    assert_int_equal(erase_stream_end_capture(o, &g), ERASE_ERR_STATE);
    print_message("unjoined: %s\n", erase_error_message());
    assert_non_null(strstr(erase_error_message(),
                           "end_capture: captured stream 1 of 2 was not joined back into the origin"));
    assert_null(g);
    assert_int_equal(erase_stream_is_capturing(side), 0);

    /* waiting inside a capture on an event recorded outside it */
    MUST(erase_event_record(outside, side));
    MUST(erase_stream_begin_capture(o));
    assert_int_equal(erase_stream_wait_event(o, outside), ERASE_ERR_STATE);
    assert_int_equal(erase_stream_end_capture(o, &g), ERASE_ERR_STATE);
    assert_non_null(strstr(erase_error_message(), "the capture was invalidated: "));
    assert_non_null(strstr(erase_error_message(), "on an event recorded outside this capture"));

    /* the host cannot wait on an event recorded inside a capture */
    MUST(erase_stream_begin_capture(o));
    MUST(erase_event_record(fork, o));
    MUST(erase_stream_end_capture(o, &g));
    assert_int_equal(erase_event_synchronize(fork), ERASE_ERR_STATE);
    assert_int_equal(erase_stream_wait_event(side, fork), ERASE_ERR_STATE);
    assert_non_null(strstr(erase_error_message(), "recorded inside a stream capture that has ended"));
    erase_graph_destroy(g);

    MUST(erase_stream_synchronize(o));
    MUST(erase_stream_synchronize(side));
    erase_free(dev, x);
    erase_event_destroy(fork);
    erase_event_destroy(outside);
    erase_stream_destroy(o);
    erase_stream_destroy(side);
}

/* erase_cpu_stream_awaited: 1 inside a kernel of a stream another
 * stream's worker is blocked waiting for (lib/comm/mpi_comm.c then polls
 * closely), 0 once that worker went on, 0 while only the host
 * synchronizes (a stream or an event), 0 on a thread that is no stream's worker.
 * The host's cases poll for 100 ms after the gate opens, the host then
 * inside its synchronize (a host descheduled for longer makes them pass
 * without testing; they cannot fail wrongly). */
static void test_awaited(void **state)
{
    erase_stream_t *a, *b;
    erase_event_t *e;
    MUST(erase_stream_create(dev, &a));
    MUST(erase_stream_create(dev, &b));
    MUST(erase_event_create(dev, &e));
    atomic_int g1 = 0, g2 = 0, g3 = 0;
    int seen_waited = -1, seen_after = -1, seen_host = -1;
    const int64_t s5 = 5000000000LL, ms100 = 100000000LL;

    MUST(k_gate(a, &g1));
    MUST(k_awaited(a, &seen_waited, s5)); /* b's worker blocks on it */
    MUST(erase_event_record(e, a));
    MUST(k_gate(a, &g2));
    MUST(k_awaited(a, &seen_after, ms100));
    MUST(erase_stream_wait_event(b, e));
    atomic_store(&g1, 1);
    MUST(erase_stream_synchronize(b)); /* b's worker went past its wait */
    atomic_store(&g2, 1);
    MUST(erase_stream_synchronize(a));
    assert_int_equal(seen_waited, 1);
    assert_int_equal(seen_after, 0);

    MUST(k_gate(a, &g3));
    MUST(k_awaited(a, &seen_host, ms100));
    atomic_store(&g3, 1);
    MUST(erase_stream_synchronize(a)); /* the host's wait does not count */
    assert_int_equal(seen_host, 0);
    atomic_int g4 = 0;
    int seen_event = -1;
    MUST(k_gate(a, &g4));
    MUST(k_awaited(a, &seen_event, ms100));
    MUST(erase_event_record(e, a));
    atomic_store(&g4, 1);
    MUST(erase_event_synchronize(e)); /* nor does its wait for an event */
    assert_int_equal(seen_event, 0);
    assert_int_equal(erase_cpu_stream_awaited(), 0);

    erase_event_destroy(e);
    erase_stream_destroy(b);
    erase_stream_destroy(a);
}

/* erase_cpu_stream_nap ends early once another stream's worker waits for
 * the stream, or erase_cpu_stream_wake wakes it (also one that came before
 * the nap began); else it sleeps its time; off a worker it is a plain
 * sleep. The early cases nap for 30 s and must return within 10 s (a
 * missed wake-up fails them; a host descheduled for 10 s could too). The
 * host lets the nap begin (5 ms) before it makes b wait or wakes a: a
 * waiter or wake-up already there when the nap begins is the other path. */
static void test_nap(void **state)
{
    erase_stream_t *a, *b, *seen = NULL;
    erase_event_t *e;
    MUST(erase_stream_create(dev, &a));
    MUST(erase_stream_create(dev, &b));
    MUST(erase_event_create(dev, &e));
    const int64_t s30 = 30000000000LL, s10 = 10000000000LL, ms20 = 20000000LL;
    int64_t awaited = -1, woken = -1, early = -1, full = -1;

    MUST(k_current(a, &seen));
    MUST(erase_stream_synchronize(a));
    assert_ptr_equal(seen, a);
    assert_null(erase_cpu_stream_current());

    atomic_int g1 = 0;
    struct timespec ms5 = { 0, 5000000 };
    MUST(k_gate(a, &g1));
    MUST(k_nap(a, s30, &awaited));
    MUST(erase_event_record(e, a));
    atomic_store(&g1, 1);
    nanosleep(&ms5, NULL); /* usually inside the nap by now */
    MUST(erase_stream_wait_event(b, e)); /* b's worker blocks on it: the nap ends */
    MUST(erase_stream_synchronize(b));
    assert_in_range(awaited, 0, s10);

    atomic_int g2 = 0;
    MUST(k_gate(a, &g2));
    MUST(k_nap(a, s30, &woken));
    atomic_store(&g2, 1);
    nanosleep(&ms5, NULL); /* usually inside the nap by now */
    erase_cpu_stream_wake(a);
    MUST(erase_stream_synchronize(a)); /* the host's wait does not end a nap */
    assert_in_range(woken, 0, s10);

    erase_cpu_stream_wake(a); /* before the nap: kept for it */
    MUST(k_nap(a, s30, &early));
    MUST(k_nap(a, ms20, &full)); /* the wake-up was used up */
    MUST(erase_stream_synchronize(a));
    assert_in_range(early, 0, s10);
    assert_in_range(full, ms20, INT64_MAX);

    int64_t t0 = erase_now_ns();
    erase_cpu_stream_nap(ms20);
    assert_in_range(erase_now_ns() - t0, ms20, INT64_MAX);

    erase_event_destroy(e);
    erase_stream_destroy(b);
    erase_stream_destroy(a);
}

/* The progress hook runs after every operation a worker completes, and
 * not at all once removed. */
static atomic_int hook_calls;
static void count_hook(void) { atomic_fetch_add(&hook_calls, 1); }

static void test_progress_hook(void **state)
{
    erase_stream_t *a;
    MUST(erase_stream_create(dev, &a));
    atomic_store(&hook_calls, 0);
    erase_cpu_set_progress_hook(count_hook);
    for (int i = 0; i < 5; i++)
        MUST(k_spin(a, 1000));
    MUST(erase_stream_synchronize(a));
    /* the worker calls it after publishing the completion the host waits
     * for: the last call may come just after the synchronize */
    struct timespec ms1 = { 0, 1000000 };
    for (int i = 0; i < 10000 && atomic_load(&hook_calls) < 5; i++)
        nanosleep(&ms1, NULL);
    assert_int_equal(atomic_load(&hook_calls), 5);
    erase_cpu_set_progress_hook(NULL);
    MUST(k_spin(a, 1000));
    MUST(k_spin(a, 1000)); /* a call after the first would come before the second completes */
    MUST(erase_stream_synchronize(a));
    assert_int_equal(atomic_load(&hook_calls), 5);
    erase_stream_destroy(a);
}

static void test_blas_threads(void **state)
{
    int cores = erase_device_cores(dev);
    MUST(erase_device_set_blas_threads(dev, cores + 5));
#if defined(__SANITIZE_THREAD__)
    assert_int_equal(erase_device_blas_threads(dev), 1); /* TSan builds run BLAS single-threaded */
#else
    assert_int_equal(erase_device_blas_threads(dev), cores);
#endif
    assert_int_equal(erase_device_set_blas_threads(dev, 0), ERASE_ERR_INVALID);
    assert_non_null(strstr(erase_error_message(), "BLAS threads per stream must be at least 1, got 0"));
    erase_stream_t *s;
    atomic_int gate = 0;
    MUST(erase_stream_create(dev, &s));
    MUST(k_gate(s, &gate));
    assert_int_equal(erase_device_set_blas_threads(dev, 1), ERASE_ERR_STATE);
    atomic_store(&gate, 1);
    MUST(erase_stream_synchronize(s));
    MUST(erase_device_set_blas_threads(dev, 1));
    assert_int_equal(erase_device_blas_threads(dev), 1);
    erase_stream_destroy(s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fifo_order),
        cmocka_unit_test(test_producer_consumer),
        cmocka_unit_test(test_event_query_sync_elapsed),
        cmocka_unit_test(test_unrecorded_event),
        cmocka_unit_test(test_sticky_error),
        cmocka_unit_test(test_stream_error),
        cmocka_unit_test(test_copies),
        cmocka_unit_test(test_copy2d),
        cmocka_unit_test(test_capture_rules),
        cmocka_unit_test(test_awaited),
        cmocka_unit_test(test_nap),
        cmocka_unit_test(test_progress_hook),
        cmocka_unit_test(test_blas_threads),
    };
    return cmocka_run_group_tests_name("device streams and events", tests, setup, teardown);
}
