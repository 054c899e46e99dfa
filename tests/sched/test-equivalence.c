/*
 * The schedule changes timing, never the math: on one rank, 50 steps of
 * ctr (six cuts) and mlp give bitwise the same parameters under off,
 * blocking, async and graph, with updates early or at step end, on one or
 * two side streams, as the reference single-stream step.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include <cmocka.h>

#include "tests/sched/equivalence.h"

#define STEPS 50

static erase_device_t *dev;

static void equivalent(erase_model_kind_t kind)
{
    erase_model_config_t cfg = equivalence_model(kind);
    erase_sched_options_t base = erase_sched_options_default();
    size_t n_ref, n0;
    float *ref = equivalence_train(dev, &cfg, &base, STEPS, 0, 1, &n_ref);
    float *initial = equivalence_train(dev, &cfg, &base, 0, 0, 1, &n0);
    size_t moved = equivalence_differ(ref, initial, n_ref);
    print_message("off moved %zu of %zu parameters in %d steps\n", moved, n_ref, STEPS);
    assert_true(moved > n_ref / 2); /* the comparison below is not between untrained models */
    free(initial);
    static const struct { erase_early_backward_t mode; erase_timing_t update; int side; } cases[] = {
        { ERASE_EB_BLOCKING, ERASE_AT_EARLY, 1 }, { ERASE_EB_BLOCKING, ERASE_AT_END, 1 },
        { ERASE_EB_BLOCKING, ERASE_AT_EARLY, 2 }, { ERASE_EB_ASYNC, ERASE_AT_EARLY, 1 },
        { ERASE_EB_ASYNC, ERASE_AT_END, 2 },      { ERASE_EB_GRAPH, ERASE_AT_EARLY, 1 },
        { ERASE_EB_GRAPH, ERASE_AT_END, 2 },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        erase_sched_options_t o = base;
        o.mode = cases[i].mode;
        o.update = cases[i].update;
        o.side_streams = cases[i].side;
        size_t n;
        float *got = equivalence_train(dev, &cfg, &o, STEPS, 0, 1, &n);
        assert_int_equal(n, n_ref);
        size_t differ = equivalence_differ(ref, got, n);
        print_message("%s, %d steps: %-8s update %-5s %d side stream%s: %zu of %zu parameters differ from off\n",
                      kind == ERASE_MODEL_CTR ? "ctr (six cuts)" : "mlp (three blocks)", STEPS,
                      erase_early_backward_name(o.mode), o.update == ERASE_AT_EARLY ? "early" : "end",
                      o.side_streams, o.side_streams > 1 ? "s" : "", differ, n);
        assert_int_equal(differ, 0);
        free(got);
    }
    free(ref);
}

static void test_ctr(void **state) { equivalent(ERASE_MODEL_CTR); }
static void test_mlp(void **state) { equivalent(ERASE_MODEL_MLP); }

static int setup(void **state)
{
    erase_device_options_t o = erase_device_options_default();
    return erase_device_open(&o, &dev) == ERASE_OK ? 0 : -1;
}

static int teardown(void **state)
{
    erase_device_close(dev);
    return 0;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ctr),
        cmocka_unit_test(test_mlp),
    };
    return cmocka_run_group_tests_name("schedule equivalence on one rank", tests, setup, teardown);
}
