/*
 * The schedule changes timing, never the math: on one rank, 50 steps of
 * ctr (six cuts), dcn (cuts at 2, 4 and 5), mlp and gpt (cuts at 2 and 4 of 6 layers: the NanoChat
 * setting in small; and no cuts, the LM head tied to the embedding) give
 * bitwise the same parameters under off, blocking, async and graph, with
 * updates early or at step end, on one or two side streams, as the
 * reference single-stream step; also with gradient-norm clipping (per
 * sub-graph), whose place in the plan is checked line by line.
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
/* dcn (issue 36): cross layers with x0 carried across blocks, headless
 * blocks before attached boundaries */
static void test_dcn(void **state) { equivalence_check_modes(dev, ERASE_MODEL_DCN, STEPS); }

/* A NaN weight in sub3: the step is found non-finite and updates nothing
 * (also with gradient-norm clipping, grad_clip > 0). */
static void nonfinite(erase_early_backward_t mode, erase_timing_t update, float grad_clip)
{
    erase_model_config_t cfg = equivalence_model(ERASE_MODEL_CTR);
    erase_network_t *net;
    erase_optimizer_t *opt;
    erase_sched_t *sc;
    erase_batch_t batch;
    erase_optim_config_t ocfg = erase_optim_config_default();
    ocfg.grad_clip = grad_clip;
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
    print_message("%s, update %s, grad clip %g: NaN weight in sub3 -> non-finite gradient found in block %s; "
                  "%zu of %zu parameters changed by the step\n", erase_early_backward_name(mode),
                  update == ERASE_AT_EARLY ? "early" : "end", (double)grad_clip,
                  b >= 0 ? erase_network_block_name(net, b) : "(none)", changed, total);
    assert_true(b >= 3);
    assert_int_equal(changed, 0);
    free(before);
    free(after);
    erase_batch_free_random(net, &batch);
    erase_sched_destroy(sc);
    erase_optimizer_destroy(opt);
    erase_network_destroy(net);
}

/* BLAS threads per stream: all cores for off, a share of them for an
 * early mode on a model with cuts (1 + S computing streams), the given
 * number when blas_threads > 0; a negative number is refused. */
static int threads_under(erase_early_backward_t mode, int side, int blas_threads)
{
    erase_model_config_t cfg = equivalence_model(ERASE_MODEL_CTR);
    erase_network_t *net;
    erase_optimizer_t *opt;
    erase_sched_t *sc;
    erase_optim_config_t ocfg = erase_optim_config_default();
    erase_sched_options_t o = erase_sched_options_default();
    o.mode = mode;
    o.side_streams = side;
    o.blas_threads = blas_threads;
    assert_int_equal(erase_network_create(dev, &cfg, 8, &net), ERASE_OK);
    assert_int_equal(erase_optimizer_create(net, &ocfg, &opt), ERASE_OK);
    erase_status_t st = erase_sched_create(net, opt, &o, &sc);
    int threads = st == ERASE_OK ? erase_device_blas_threads(dev) : -1;
    if (st == ERASE_OK)
        erase_sched_destroy(sc);
    erase_optimizer_destroy(opt);
    erase_network_destroy(net);
    return threads;
}

static void test_blas_threads(void **state)
{
    int cores = erase_device_cores(dev);
    assert_int_equal(erase_device_set_blas_threads(dev, 1024), ERASE_OK);
    int most = erase_device_blas_threads(dev); /* the cores, or 1 where the build caps BLAS threads */
    int share2 = cores / 2 < 1 ? 1 : cores / 2, share3 = cores / 3 < 1 ? 1 : cores / 3;
    print_message("%d cores, at most %d BLAS threads per stream\n", cores, most);
    assert_int_equal(threads_under(ERASE_EB_OFF, 1, 0), most);
    assert_int_equal(threads_under(ERASE_EB_GRAPH, 1, 0), share2 < most ? share2 : most);
    assert_int_equal(threads_under(ERASE_EB_ASYNC, 2, 0), share3 < most ? share3 : most);
    assert_int_equal(threads_under(ERASE_EB_OFF, 1, 1), 1);
    assert_int_equal(threads_under(ERASE_EB_GRAPH, 1, 1), 1);
    assert_int_equal(threads_under(ERASE_EB_GRAPH, 1, 4096), most); /* capped at the cores */
    assert_int_equal(threads_under(ERASE_EB_GRAPH, 1, -1), -1);
    const char *msg = erase_error_message(), *want = ": scheduler: -1 BLAS threads per stream (0: automatic)";
    assert_true(strlen(msg) > strlen(want));
    assert_string_equal(msg + strlen(msg) - strlen(want), want); /* after "file:line" */
}

static void test_nonfinite(void **state)
{
    nonfinite(ERASE_EB_OFF, ERASE_AT_EARLY, 0.0f);
    nonfinite(ERASE_EB_ASYNC, ERASE_AT_END, 0.0f);
    nonfinite(ERASE_EB_GRAPH, ERASE_AT_END, 0.0f);
    nonfinite(ERASE_EB_OFF, ERASE_AT_EARLY, 0.05f);
    nonfinite(ERASE_EB_GRAPH, ERASE_AT_END, 0.05f);
}
static void test_mlp(void **state) { equivalence_check_modes(dev, ERASE_MODEL_MLP, STEPS); }

/* Multi-hot ctr (issue 35: MLPerf's hotness, mean pooling): every
 * early-backward mode gives off's parameters bit for bit. */
static void test_ctr_multi_hot(void **state)
{
    erase_model_config_t cfg = equivalence_model(ERASE_MODEL_CTR);
    memcpy(cfg.ctr.hotness, (const uint32_t[ERASE_CTR_FIELDS])ERASE_CTR_HOTNESS_MLPERF, sizeof cfg.ctr.hotness);
    cfg.ctr.pooling = ERASE_POOLING_MEAN;
    equivalence_check_config(dev, &cfg, "ctr multi-hot (mlperf, mean)", 0.0f, STEPS);
}
static void test_gpt(void **state) { equivalence_check_modes(dev, ERASE_MODEL_GPT, STEPS); }

/* No cuts: the last block's LM head, tied to h0/wte, writes wte's gradient
 * from its own backward (on a side stream in the early modes) before block
 * 0's embedding backward adds to it. */
static void test_gpt_tied(void **state)
{
    erase_model_config_t cfg = equivalence_model(ERASE_MODEL_GPT);
    cfg.cut_mask = 0;
    equivalence_check_config(dev, &cfg, "gpt (6 layers, no cuts, tied head)", 0.0f, STEPS);
}

/* With gradient-norm clipping: ctr with cuts at boundaries 2 and 4 (three
 * sub-graphs of several blocks, each clipped by its own norm) and mlp
 * without cuts (one global norm), bitwise equal in every mode. */
static void test_clip_ctr(void **state)
{
    erase_model_config_t cfg = equivalence_model(ERASE_MODEL_CTR);
    cfg.cut_mask = 1u << 2 | 1u << 4;
    equivalence_check_config(dev, &cfg, "ctr (cuts at 2 and 4)", 0.05f, STEPS);
}

static void test_clip_mlp(void **state)
{
    erase_model_config_t cfg = equivalence_model(ERASE_MODEL_MLP);
    cfg.cut_mask = 0;
    equivalence_check_config(dev, &cfg, "mlp (no cuts)", 0.05f, STEPS);
}

/* The plan of mlp with one cut (boundary 2: sub-graphs layer0..layer1 and
 * layer2), clipping on, as erase_sched_print_plan prints it. */
static char *plan_text_accumulating(erase_early_backward_t mode, erase_timing_t reduce, erase_timing_t update,
                                    int accumulate)
{
    erase_model_config_t cfg = equivalence_model(ERASE_MODEL_MLP);
    cfg.cut_mask = 1u << 2;
    erase_network_t *net;
    erase_optimizer_t *opt;
    erase_sched_t *sc;
    erase_optim_config_t ocfg = erase_optim_config_default();
    ocfg.grad_clip = 1.0f;
    erase_sched_options_t o = erase_sched_options_default();
    o.mode = mode;
    o.reduce = reduce;
    o.update = update;
    o.accumulate = accumulate;
    assert_int_equal(erase_network_create(dev, &cfg, 8, &net), ERASE_OK);
    assert_int_equal(erase_optimizer_create(net, &ocfg, &opt), ERASE_OK);
    assert_int_equal(erase_sched_create(net, opt, &o, &sc), ERASE_OK);
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    erase_sched_print_plan(sc, f);
    fclose(f);
    erase_sched_destroy(sc);
    erase_optimizer_destroy(opt);
    erase_network_destroy(net);
    print_message("plan of %s, reduce %s, update %s:\n", erase_early_backward_name(mode),
                  reduce == ERASE_AT_EARLY ? "early" : "end", update == ERASE_AT_EARLY ? "early" : "end");
    for (const char *line = text; *line;) { /* a line each: print_message's buffer is small */
        const char *end = strchr(line, '\n');
        int chars = end ? (int)(end - line) : (int)strlen(line);
        print_message("# %.*s\n", chars, line);
        line += chars + (end != NULL);
    }
    return text;
}

static char *plan_text(erase_early_backward_t mode, erase_timing_t reduce, erase_timing_t update)
{
    return plan_text_accumulating(mode, reduce, update, 1);
}

/* --accumulate 3: micro-steps 0 and 1 forward, backward and add each
 * block's gradients (no clock, reduction, clip or update); the last also
 * merges each block's rows after its sum, then the step's reductions,
 * clips and updates, each update followed by the zeroing of its sums. In
 * an early mode a micro-step frees each block (its `updated` event) after
 * its accumulation, and the last step's reduction waits for the event
 * recorded after the merge. */
static void test_accumulate_plan(void **state)
{
    static const char *const off =
        "micro-steps 0 .. 1:\n"
        "  0 main    forward    layer0\n"
        "  1 main    forward    layer1\n"
        "  2 main    forward    layer2\n"
        "  3 main    backward   layer2\n"
        "  4 main    accumulate layer2\n"
        "  5 main    backward   layer1\n"
        "  6 main    accumulate layer1\n"
        "  7 main    backward   layer0\n"
        "  8 main    accumulate layer0\n"
        "micro-step 2:\n"
        "  0 main    clock     \n"
        "  1 main    forward    layer0\n"
        "  2 main    forward    layer1\n"
        "  3 main    forward    layer2\n"
        "  4 main    backward   layer2\n"
        "  5 main    accumulate layer2\n"
        "  6 main    merge      layer2\n"
        "  7 main    backward   layer1\n"
        "  8 main    accumulate layer1\n"
        "  9 main    merge      layer1\n"
        " 10 main    backward   layer0\n"
        " 11 main    accumulate layer0\n"
        " 12 main    merge      layer0\n"
        " 13 main    all-reduce layer2\n"
        " 14 main    all-reduce layer1\n"
        " 15 main    all-reduce layer0\n"
        " 16 main    clip       layer0..layer1\n"
        " 17 main    clip       layer2\n"
        " 18 main    update     layer0\n"
        " 19 main    zero       layer0\n"
        " 20 main    update     layer1\n"
        " 21 main    zero       layer1\n"
        " 22 main    update     layer2\n"
        " 23 main    zero       layer2\n";
    char *text = plan_text_accumulating(ERASE_EB_OFF, ERASE_AT_EARLY, ERASE_AT_EARLY, 3);
    assert_string_equal(text, off);
    free(text);
    /* events: backward_done 3 + b, updated 9 + b */
    static const char *const micro =
        "  9 side0   backward   layer1\n"
        " 10 side0   accumulate layer1\n"
        " 11 side0   record     event 4\n"
        " 12 side0   record     event 10\n"
        " 13 side0   backward   layer0\n";
    static const char *const last =
        " 10 side0   backward   layer1\n"
        " 11 side0   accumulate layer1\n"
        " 12 side0   merge      layer1\n"
        " 13 side0   record     event 4\n";
    static const char *const update =
        " 25 comm    update     layer1\n"
        " 26 comm    zero       layer1\n"
        " 27 comm    record     event 10\n";
    text = plan_text_accumulating(ERASE_EB_BLOCKING, ERASE_AT_EARLY, ERASE_AT_EARLY, 3);
    const char *second = strstr(text, "micro-step 2:\n");
    assert_non_null(second);
    char *micro_steps = strndup(text, (size_t)(second - text));
    assert_non_null(strstr(micro_steps, micro));
    assert_null(strstr(micro_steps, "clock"));
    assert_null(strstr(micro_steps, "all-reduce"));
    assert_null(strstr(micro_steps, "update"));
    assert_non_null(strstr(second, last));
    assert_non_null(strstr(second, update));
    free(micro_steps);
    free(text);
}

static void test_clip_plan(void **state)
{
    static const char *const off =
        "  0 main    clock     \n"
        "  1 main    forward    layer0\n"
        "  2 main    forward    layer1\n"
        "  3 main    forward    layer2\n"
        "  4 main    backward   layer2\n"
        "  5 main    backward   layer1\n"
        "  6 main    backward   layer0\n"
        "  7 main    all-reduce layer2\n"
        "  8 main    all-reduce layer1\n"
        "  9 main    all-reduce layer0\n"
        " 10 main    clip       layer0..layer1\n"
        " 11 main    clip       layer2\n"
        " 12 main    update     layer0\n"
        " 13 main    update     layer1\n"
        " 14 main    update     layer2\n";
    char *text = plan_text(ERASE_EB_OFF, ERASE_AT_EARLY, ERASE_AT_EARLY);
    assert_string_equal(text, off);
    free(text);
    /* blocking: the first sub-graph's reductions, its clip, then its
     * updates, before the second sub-graph's forward */
    static const char *const blocking =
        " 14 comm    wait       event 4\n"
        " 15 comm    all-reduce layer1\n"
        " 16 comm    record     event 7\n"
        " 17 comm    wait       event 3\n"
        " 18 comm    all-reduce layer0\n"
        " 19 comm    record     event 6\n"
        " 20 comm    clip       layer0..layer1\n"
        " 21 comm    update     layer1\n"
        " 22 comm    record     event 10\n"
        " 23 comm    update     layer0\n"
        " 24 comm    record     event 9\n"
        " 25 main    wait       event 11\n"
        " 26 main    forward    layer2\n";
    text = plan_text(ERASE_EB_BLOCKING, ERASE_AT_EARLY, ERASE_AT_EARLY);
    assert_non_null(strstr(text, blocking));
    free(text);
    /* reduce at end: every reduction, then each sub-graph's clip, then the updates */
    static const char *const at_end =
        " 24 comm   *wait       event 5\n"
        " 25 comm   *all-reduce layer2\n"
        " 26 comm   *record     event 8\n"
        " 27 comm   *clip       layer0..layer1\n"
        " 28 comm   *clip       layer2\n"
        " 29 comm   *update     layer0\n";
    text = plan_text(ERASE_EB_GRAPH, ERASE_AT_END, ERASE_AT_END);
    assert_non_null(strstr(text, at_end));
    free(text);
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
        cmocka_unit_test(test_dcn),
        cmocka_unit_test(test_ctr_multi_hot),
        cmocka_unit_test(test_mlp),
        cmocka_unit_test(test_gpt),
        cmocka_unit_test(test_gpt_tied),
        cmocka_unit_test(test_nonfinite),
        cmocka_unit_test(test_blas_threads),
        cmocka_unit_test(test_clip_plan),
        cmocka_unit_test(test_accumulate_plan),
        cmocka_unit_test(test_clip_ctr),
        cmocka_unit_test(test_clip_mlp),
    };
    return cmocka_run_group_tests_name("schedule equivalence on one rank", tests, setup, teardown);
}
