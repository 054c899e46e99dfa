/*
 * The dcn model's cross-layer op on the CPU backend (lib/ops/ops.h:
 * erase_cross_forward/backward, issue 36): y = x0 * u + xl, du = dy * x0,
 * dx0 = dy * u, against the formula in double (per element |got - ref| <=
 * 1e-6 (|ref| + 1): one float rounding of each product and sum), with dx0
 * given and NULL, du in place of dy, and sizes across the threads' split.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "lib/core/rng.h"
#include "lib/ops/ops.h"
#include "tests/cpu_device.h"

#define MUST(call) assert_int_equal((call), ERASE_OK)

static erase_device_t *dev;
static erase_stream_t *stream;

static float *filled(uint64_t seed, size_t n, float lo, float hi)
{
    float *v = malloc(n * sizeof *v);
    assert_non_null(v);
    for (size_t i = 0; i < n; i++)
        v[i] = erase_rng_uniform(&seed, lo, hi);
    return v;
}

static void expect_near(const char *what, const float *got, const double *ref, size_t n)
{
    double worst = 0;
    for (size_t i = 0; i < n; i++)
        worst = fmax(worst, fabs((double)got[i] - ref[i]) / (fabs(ref[i]) + 1));
    print_message("cross %-26s n = %6zu: worst |got - ref| / (|ref| + 1) = %.2e (bound 1e-6)\n", what, n, worst);
    assert_true(worst <= 1e-6);
}

static void check(size_t n)
{
    float *x0 = filled(1, n, -2, 2), *u = filled(2, n, -3, 3), *xl = filled(3, n, -2, 2), *dy = filled(4, n, -1, 1);
    float *y = malloc(n * sizeof *y), *du = malloc(n * sizeof *du), *dx0 = malloc(n * sizeof *dx0);
    float *du_only = malloc(n * sizeof *du_only), *in_place = malloc(n * sizeof *in_place);
    double *ry = malloc(n * sizeof *ry), *rdu = malloc(n * sizeof *rdu), *rdx0 = malloc(n * sizeof *rdx0);
    assert_true(y && du && dx0 && du_only && in_place && ry && rdu && rdx0);
    memcpy(in_place, dy, n * sizeof *dy);
    MUST(erase_cross_forward(stream, n, x0, u, xl, y));
    MUST(erase_cross_backward(stream, n, x0, u, dy, du, dx0));
    MUST(erase_cross_backward(stream, n, x0, u, dy, du_only, NULL));
    MUST(erase_cross_backward(stream, n, x0, u, in_place, in_place, NULL));
    MUST(erase_stream_synchronize(stream));
    for (size_t i = 0; i < n; i++) {
        ry[i] = (double)x0[i] * u[i] + xl[i];
        rdu[i] = (double)dy[i] * x0[i];
        rdx0[i] = (double)dy[i] * u[i];
    }
    expect_near("forward y", y, ry, n);
    expect_near("backward du", du, rdu, n);
    expect_near("backward dx0", dx0, rdx0, n);
    assert_memory_equal(du_only, du, n * sizeof *du); /* dx0 NULL: du the same */
    assert_memory_equal(in_place, du, n * sizeof *du); /* du in place of dy: the same */
    free(x0), free(u), free(xl), free(dy), free(y), free(du), free(dx0), free(du_only), free(in_place);
    free(ry), free(rdu), free(rdx0);
}

static void test_cross(void **state)
{
    (void)state;
    check(1);
    check(108);
    check(70001); /* more than one erase_cpu_parallel grain */
}

/* NULL inputs are refused at enqueue with the op's name. */
static void test_cross_errors(void **state)
{
    (void)state;
    float a[4] = { 0 };
    assert_int_equal(erase_cross_forward(stream, 4, a, NULL, a, a), ERASE_ERR_INVALID);
    assert_non_null(strstr(erase_error_message(), "cross forward: NULL x0, u, xl or y"));
    assert_int_equal(erase_cross_backward(stream, 4, a, a, a, NULL, a), ERASE_ERR_INVALID);
    assert_non_null(strstr(erase_error_message(), "cross backward: NULL x0, u, dy or du"));
    assert_int_equal(erase_cross_forward(stream, 0, NULL, NULL, NULL, NULL), ERASE_OK);
}

static int setup(void **state)
{
    (void)state;
    if (erase_test_cpu_open(1, 0, &dev) != 0 || erase_stream_create(dev, &stream) != ERASE_OK)
        return -1;
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    erase_stream_destroy(stream);
    erase_device_close(dev);
    return 0;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_cross),
        cmocka_unit_test(test_cross_errors),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
