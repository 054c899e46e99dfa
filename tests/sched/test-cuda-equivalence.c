/*
 * The schedules on a GPU (SKIP without one): on one CUDA device, ctr (six
 * cuts) and mlp give bitwise the same parameters under off, blocking, async
 * and graph (the CUDA kernels are deterministic: no float atomics, cuBLAS
 * with one workspace per stream), and off on the GPU stays within 1e-4
 * (norm-wise) of off on the CPU backend, the oracle, after the same steps.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include <cmocka.h>

#include "tests/gpu_tap.h"
#include "tests/sched/equivalence.h"

#define STEPS 20

static erase_device_t *cpu, *gpu;

static void test_ctr_modes(void **state) { equivalence_check_modes(gpu, ERASE_MODEL_CTR, STEPS); }
static void test_mlp_modes(void **state) { equivalence_check_modes(gpu, ERASE_MODEL_MLP, STEPS); }

/* ||a - b|| / ||b|| in double. */
static double relative_error(const float *a, const float *b, size_t n)
{
    double num = 0, den = 0;
    for (size_t i = 0; i < n; i++) {
        double d = (double)a[i] - (double)b[i];
        num += d * d;
        den += (double)b[i] * (double)b[i];
    }
    return den > 0 ? sqrt(num / den) : sqrt(num);
}

static void cpu_vs_gpu(erase_model_kind_t kind)
{
    erase_model_config_t cfg = equivalence_model(kind);
    erase_sched_options_t o = erase_sched_options_default();
    size_t nc, ng;
    float *ref = equivalence_train(cpu, &cfg, &o, STEPS, 0, 1, &nc);
    float *got = equivalence_train(gpu, &cfg, &o, STEPS, 0, 1, &ng);
    assert_int_equal(nc, ng);
    int finite = 1;
    for (size_t i = 0; i < ng; i++)
        finite &= isfinite(got[i]) != 0;
    double err = relative_error(got, ref, nc);
    print_message("%s, %d steps: GPU vs CPU parameters %.3g relative (norm-wise), %zu of %zu bitwise equal\n",
                  kind == ERASE_MODEL_CTR ? "ctr" : "mlp", STEPS, err,
                  nc - equivalence_differ(got, ref, nc), nc);
    assert_true(finite);
    assert_true(err <= 1e-4);
    free(ref);
    free(got);
}

static void test_ctr_cpu(void **state) { cpu_vs_gpu(ERASE_MODEL_CTR); }
static void test_mlp_cpu(void **state) { cpu_vs_gpu(ERASE_MODEL_MLP); }

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ctr_modes),
        cmocka_unit_test(test_mlp_modes),
        cmocka_unit_test(test_ctr_cpu),
        cmocka_unit_test(test_mlp_cpu),
    };
    size_t n = sizeof tests / sizeof tests[0];
    erase_device_options_t o = erase_device_options_default();
    if (erase_device_open(&o, &cpu) != ERASE_OK) {
        fprintf(stderr, "CPU device: %s\n", erase_error_message());
        return 1;
    }
    o.kind = ERASE_DEVICE_CUDA;
    if (erase_device_open(&o, &gpu) != ERASE_OK) {
        gpu_tap_skip(tests, n, 0, erase_error_message());
        erase_device_close(cpu);
        return 0;
    }
    int failed = cmocka_run_group_tests_name("schedules on a CUDA device", tests, NULL, NULL);
    erase_device_close(gpu);
    erase_device_close(cpu);
    return failed;
}
