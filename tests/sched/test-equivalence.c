/*
 * The schedule changes timing, never the math: on one rank, 50 steps of
 * ctr (six cuts), mlp and gpt (cuts at 2 and 4 of 6 layers: the NanoChat
 * setting in small; and no cuts, the LM head tied to the embedding) give bitwise the same parameters under off, blocking,
 * async and graph, with updates early or at step end, on one or two side
 * streams, as the reference single-stream step.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "lib/nn/train_step.h"
#include "tests/sched/equivalence.h"

#define STEPS 50

static erase_device_t *dev;

static void test_ctr(void **state) { equivalence_check_modes(dev, ERASE_MODEL_CTR, STEPS); }

/* A NaN weight in sub3: the step is found non-finite and updates nothing. */
static void nonfinite(erase_early_backward_t mode, erase_timing_t update)
{
    erase_model_config_t cfg = equivalence_model(ERASE_MODEL_CTR);
    erase_network_t *net;
    erase_optimizer_t *opt;
    erase_sched_t *sc;
    erase_batch_t batch;
    erase_optim_config_t ocfg = erase_optim_config_default();
    erase_sched_options_t o = erase_sched_options_default();
    o.mode = mode;
    o.update = update;
    assert_int_equal(erase_network_create(dev, &cfg, 32, &net), ERASE_OK);
    assert_int_equal(erase_optimizer_create(net, &ocfg, &opt), ERASE_OK);
    assert_int_equal(erase_sched_create(net, opt, &o, &sc), ERASE_OK);
    assert_int_equal(erase_batch_random(net, 32, 3, &batch), ERASE_OK);
    assert_int_equal(erase_sched_step(sc, &batch), ERASE_OK);
    assert_int_equal(erase_sched_synchronize(sc), ERASE_OK);
    assert_int_equal(erase_sched_nonfinite_block(sc), -1);
    erase_network_param(net, "sub3/fc0/weight")->value[5] = NAN;
    size_t total = erase_network_copy_params(net, NULL);
    float *before = malloc(total * sizeof(float)), *after = malloc(total * sizeof(float));
    erase_network_copy_params(net, before);
    assert_int_equal(erase_sched_step(sc, &batch), ERASE_OK);
    assert_int_equal(erase_sched_synchronize(sc), ERASE_OK);
    int b = erase_sched_nonfinite_block(sc);
    erase_network_copy_params(net, after);
    size_t changed = equivalence_differ(before, after, total);
    /* NaN != NaN bitwise-equal: equivalence_differ compares bits */
    print_message("%s, update %s: NaN weight in sub3 -> non-finite gradient found in block %s; "
                  "%zu of %zu parameters changed by the step\n", erase_early_backward_name(mode),
                  update == ERASE_AT_EARLY ? "early" : "end", b >= 0 ? erase_network_block_name(net, b) : "(none)",
                  changed, total);
    assert_true(b >= 3);
    assert_int_equal(changed, 0);
    free(before);
    free(after);
    erase_batch_free_random(net, &batch);
    erase_sched_destroy(sc);
    erase_optimizer_destroy(opt);
    erase_network_destroy(net);
}

static void test_nonfinite(void **state)
{
    nonfinite(ERASE_EB_OFF, ERASE_AT_EARLY);
    nonfinite(ERASE_EB_ASYNC, ERASE_AT_END);
    nonfinite(ERASE_EB_GRAPH, ERASE_AT_END);
}
static void test_mlp(void **state) { equivalence_check_modes(dev, ERASE_MODEL_MLP, STEPS); }
static void test_gpt(void **state) { equivalence_check_modes(dev, ERASE_MODEL_GPT, STEPS); }

/* No cuts: the last block's LM head, tied to h0/wte, writes wte's gradient
 * from its own backward (on a side stream in the early modes) before block
 * 0's embedding backward adds to it. */
static void test_gpt_tied(void **state)
{
    erase_model_config_t cfg = equivalence_model(ERASE_MODEL_GPT);
    cfg.cut_mask = 0;
    equivalence_check_config(dev, &cfg, "gpt (6 layers, no cuts, tied head)", STEPS);
}

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
        cmocka_unit_test(test_gpt),
        cmocka_unit_test(test_gpt_tied),
        cmocka_unit_test(test_nonfinite),
    };
    return cmocka_run_group_tests_name("schedule equivalence on one rank", tests, setup, teardown);
}
