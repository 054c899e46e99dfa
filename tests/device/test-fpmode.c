/*
 * Flush-to-zero (FTZ) and denormals-are-zero (DAZ) on every thread of the
 * CPU backend that computes (lib/core/fpmode.h): the thread that opened the
 * device, each stream's worker, and the BLAS library's own threads, which
 * must inherit it from the thread that loaded the library. Subnormal floats
 * make every SSE/AVX operation on them take a slow microcode path, which
 * made CPU training 5-15x slower once a model fitted its data.
 *
 * Values are checked by their bits: with DAZ on the test's own thread, a
 * subnormal compares equal to zero.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "lib/core/fpmode.h"
#include "lib/device/cpu/cpu.h"
#include "lib/device/device.h"
#include "tests/cpu_device.h"

#define MUST(call) assert_int_equal((call), ERASE_OK)

#define BOTH (ERASE_FP_FTZ | ERASE_FP_DAZ)

static erase_device_t *dev;
static const char *self; /* argv[0], run again for test_env_policy */

static int setup(void **state)
{
    return erase_test_cpu_open(2, 0, &dev); /* a multi-threaded BLAS where the machine has 2 cores */
}

static int teardown(void **state)
{
    erase_device_close(dev);
    return 0;
}

/* Bits of a float that are not the sign: 0 only for +-0. */
static uint32_t magnitude_bits(float x)
{
    uint32_t u;
    memcpy(&u, &x, sizeof u);
    return u & 0x7fffffffu;
}

static void test_device_line(void **state)
{
    char text[1024];
    erase_device_describe(dev, text, sizeof text);
    print_message("device: %s\n", text);
    assert_non_null(strstr(text, ", flush-to-zero on"));
}

static void test_opening_thread(void **state)
{
    unsigned mode = erase_fp_flush_state();
    print_message("thread that opened the device: FTZ %d DAZ %d\n", !!(mode & ERASE_FP_FTZ),
                  !!(mode & ERASE_FP_DAZ));
    assert_int_equal(mode, BOTH);
}

typedef struct {
    unsigned *out;
} record_args_t;

static erase_status_t record_mode(const void *p)
{
    const record_args_t *a = p;
    *a->out = erase_fp_flush_state();
    return ERASE_OK;
}

static void test_stream_workers(void **state)
{
    enum { STREAMS = 4 };
    erase_stream_t *s[STREAMS];
    unsigned mode[STREAMS];
    for (int i = 0; i < STREAMS; i++) {
        MUST(erase_stream_create(dev, &s[i]));
        mode[i] = 0xdead;
        record_args_t a = { .out = &mode[i] };
        MUST(erase_cpu_launch(s[i], record_mode, &a, sizeof a));
    }
    for (int i = 0; i < STREAMS; i++) {
        MUST(erase_stream_synchronize(s[i]));
        print_message("stream %d worker: FTZ %d DAZ %d\n", i, !!(mode[i] & ERASE_FP_FTZ),
                      !!(mode[i] & ERASE_FP_DAZ));
        assert_int_equal(mode[i], BOTH);
        erase_stream_destroy(s[i]);
    }
}

/*
 * C = A B, 256 x 256 x 256 (large enough for OpenBLAS to split it over its
 * threads), on a stream: count the elements of C that are not zero.
 */
static int gemm_nonzero(const char *what, float a_value, float b_value)
{
    enum { N = 256 };
    float *a, *b, *c;
    MUST(erase_malloc(dev, sizeof(float) * N * N, (void **)&a));
    MUST(erase_malloc(dev, sizeof(float) * N * N, (void **)&b));
    MUST(erase_malloc(dev, sizeof(float) * N * N, (void **)&c));
    for (int i = 0; i < N * N; i++) {
        a[i] = a_value;
        b[i] = b_value;
        c[i] = 1.0f;
    }
    erase_stream_t *s;
    MUST(erase_stream_create(dev, &s));
    MUST(erase_sgemm(s, ERASE_NO_TRANS, ERASE_NO_TRANS, N, N, N, 1.0f, a, N, b, N, 0.0f, c, N));
    MUST(erase_stream_synchronize(s));
    erase_stream_destroy(s);
    int nonzero = 0;
    for (int i = 0; i < N * N; i++)
        nonzero += magnitude_bits(c[i]) != 0;
    print_message("GEMM of %s, k = %d, %d BLAS threads: %d of %d elements not zero\n", what, N,
                  erase_device_blas_threads(dev), nonzero, N * N);
    erase_free(dev, a);
    erase_free(dev, b);
    erase_free(dev, c);
    return nonzero;
}

/* FTZ: normal inputs whose products (1e-42) are subnormal give zero. */
static void test_blas_flushes_results(void **state)
{
    assert_int_equal(gemm_nonzero("1e-21 x 1e-21 (2.56e-40 without FTZ)", 1e-21f, 1e-21f), 0);
}

/* DAZ: subnormal inputs (1e-40) read as zero, although 256 of them would
 * sum to a normal 2.56e-38. */
static void test_blas_reads_subnormals_as_zero(void **state)
{
    assert_int_equal(gemm_nonzero("1e-40 x 1 (2.56e-38 without DAZ)", 1e-40f, 1.0f), 0);
}

/* The child of test_env_policy: open a device under the environment's
 * ERASE_FTZ and print its device line and a stream worker's mode, or the
 * error. */
static int child(void)
{
    erase_device_options_t o = erase_device_options_default();
    if (erase_device_open(&o, &dev) != ERASE_OK) {
        printf("error: %s\n", erase_error_reason());
        return 1;
    }
    char text[1024];
    erase_device_describe(dev, text, sizeof text);
    erase_stream_t *s;
    unsigned mode = 0xdead;
    record_args_t a = { .out = &mode };
    if (erase_stream_create(dev, &s) != ERASE_OK || erase_cpu_launch(s, record_mode, &a, sizeof a) ||
        erase_stream_synchronize(s) != ERASE_OK)
        return 1;
    erase_stream_destroy(s);
    printf("device: %s\nworker: %u\n", text, mode);
    erase_device_close(dev);
    return 0;
}

/* Run the child with ERASE_FTZ=value; its output in `out`. */
static void run_child(const char *value, char *out, size_t size)
{
    char cmd[4200];
    snprintf(cmd, sizeof cmd, "ERASE_FTZ='%s' %s --child", value, self);
    FILE *p = popen(cmd, "r");
    assert_non_null(p);
    size_t n = fread(out, 1, size - 1, p);
    out[n] = '\0';
    pclose(p);
    print_message("ERASE_FTZ=%s:\n%s", value, out);
}

/* ERASE_FTZ=0 keeps subnormals (and says so); another value is refused. */
static void test_env_policy(void **state)
{
    char out[4096];
    run_child("0", out, sizeof out);
    assert_non_null(strstr(out, ", flush-to-zero off (ERASE_FTZ=0)\nworker: 0\n"));
    run_child("yes", out, sizeof out);
    assert_string_equal(out, "error: ERASE_FTZ must be 0 (keep subnormal floats) or 1 (flush them "
                             "to zero, the default), got 'yes'\n");
}

int main(int argc, char **argv)
{
    if (argc == 2 && strcmp(argv[1], "--child") == 0)
        return child();
    self = argv[0];
    unsetenv("ERASE_FTZ"); /* the default policy */
    if (!erase_fp_flush_supported()) {
        printf("1..0 # SKIP no flush-to-zero control on this CPU\n");
        return 0;
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_device_line),
        cmocka_unit_test(test_opening_thread),
        cmocka_unit_test(test_stream_workers),
        cmocka_unit_test(test_blas_flushes_results),
        cmocka_unit_test(test_blas_reads_subnormals_as_zero),
        cmocka_unit_test(test_env_policy),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
