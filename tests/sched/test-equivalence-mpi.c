/*
 * Schedule equivalence under data parallelism (run by mpirun -np 2 and 4):
 * 50 steps of ctr (six cuts; dense all-reduce and sparse embedding
 * gradients gathered and merged), dcn (cuts at 2, 4 and 5) and mlp give
 * bitwise the same parameters
 * under off, blocking, async and graph, with the all-reduce early or at
 * step end, also with gradient-norm clipping, and every rank holds
 * bitwise the same replica. Rank 0 prints
 * TAP; the counts it asserts are summed over all ranks.
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

/* Floats of `p` that differ from rank 0's copy, summed over ranks. */
static int64_t differ_from_rank0(const float *p, size_t n)
{
    float *r0 = malloc(n * sizeof(float));
    memcpy(r0, p, n * sizeof(float));
    assert_int_equal(erase_broadcast(erase_world_comm(), eq_host, r0, n, ERASE_DTYPE_F32, 0), ERASE_OK);
    assert_int_equal(erase_stream_synchronize(eq_host), ERASE_OK);
    int64_t d = (int64_t)equivalence_differ(p, r0, n);
    free(r0);
    return equivalence_sum_ranks(d);
}

/* Train `cfg` under `o` (clipped at grad_clip; 0: not) and check that
 * every rank's parameters equal `ref` (off's) and rank 0's, bitwise. */
static void same_as_off(const erase_model_config_t *cfg, const erase_sched_options_t *o, float grad_clip,
                        const char *what, const float *ref, size_t n_ref)
{
    size_t n;
    float *got = equivalence_train_clipped(eq_dev, cfg, o, grad_clip, STEPS, eq_world.dp_rank, eq_world.dp_size, &n);
    assert_int_equal(n, n_ref);
    int64_t vs_off = equivalence_sum_ranks((int64_t)equivalence_differ(ref, got, n));
    int64_t vs_rank0 = differ_from_rank0(got, n);
    print_message("%s on %d ranks, %-8s reduce %-5s: %lld parameters differ from off, "
                  "%lld between replicas (of %zu per rank)\n", what, eq_world.size,
                  erase_early_backward_name(o->mode), o->reduce == ERASE_AT_EARLY ? "early" : "end",
                  (long long)vs_off, (long long)vs_rank0, n);
    assert_int_equal(vs_off, 0);
    assert_int_equal(vs_rank0, 0);
    free(got);
}

static void equivalent(erase_model_kind_t kind)
{
    erase_model_config_t cfg = equivalence_model(kind);
    const char *name = erase_model_config_name(&cfg);
    erase_sched_options_t base = erase_sched_options_default();
    base.dp = erase_dp_comm();
    base.blas_threads = 1; /* every mode's GEMMs on equal BLAS threads (lib/sched/sched.h) */
    size_t n_ref;
    float *ref = equivalence_train(eq_dev, &cfg, &base, STEPS, eq_world.dp_rank, eq_world.dp_size, &n_ref);
    int64_t replicas = differ_from_rank0(ref, n_ref);
    print_message("%s on %d ranks, off: %lld parameters differ between replicas\n",
                  name, eq_world.size, (long long)replicas);
    assert_int_equal(replicas, 0);
    static const struct { erase_early_backward_t mode; erase_timing_t reduce; int side; } cases[] = {
        { ERASE_EB_BLOCKING, ERASE_AT_EARLY, 1 }, { ERASE_EB_BLOCKING, ERASE_AT_END, 1 },
        { ERASE_EB_ASYNC, ERASE_AT_EARLY, 1 },    { ERASE_EB_ASYNC, ERASE_AT_END, 2 },
        { ERASE_EB_GRAPH, ERASE_AT_EARLY, 1 },    { ERASE_EB_GRAPH, ERASE_AT_END, 1 },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        erase_sched_options_t o = base;
        o.mode = cases[i].mode;
        o.reduce = cases[i].reduce;
        o.side_streams = cases[i].side;
        same_as_off(&cfg, &o, 0.0f, name, ref, n_ref);
    }
    free(ref);
}

/* Gradient-norm clipping after the all-reduce: ctr with cuts at
 * boundaries 2 and 4 (three sub-graphs) clipped at 0.05 gives the same
 * parameters on every rank, under off, async (reduce at end) and graph. */
static void test_clip(void **state)
{
    erase_model_config_t cfg = equivalence_model(ERASE_MODEL_CTR);
    cfg.cut_mask = 1u << 2 | 1u << 4;
    erase_sched_options_t o = erase_sched_options_default();
    o.dp = erase_dp_comm();
    o.blas_threads = 1; /* as in equivalent() */
    size_t n_ref;
    float *ref = equivalence_train_clipped(eq_dev, &cfg, &o, 0.05f, STEPS, eq_world.dp_rank, eq_world.dp_size, &n_ref);
    assert_int_equal(differ_from_rank0(ref, n_ref), 0);
    static const struct { erase_early_backward_t mode; erase_timing_t reduce; } cases[] = {
        { ERASE_EB_ASYNC, ERASE_AT_END }, { ERASE_EB_GRAPH, ERASE_AT_EARLY },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        o.mode = cases[i].mode;
        o.reduce = cases[i].reduce;
        same_as_off(&cfg, &o, 0.05f, "ctr (cuts 2, 4) grad clip 0.05", ref, n_ref);
    }
    free(ref);
}

static void test_ctr(void **state) { equivalent(ERASE_MODEL_CTR); }
static void test_mlp(void **state) { equivalent(ERASE_MODEL_MLP); }
/* dcn (issue 36): cuts at 2, 4 and 5, x0 carried across cross blocks */
static void test_dcn(void **state) { equivalent(ERASE_MODEL_DCN); }

/* A graph with the step's collectives inside, replayed 1,000 times. */
static void test_graph_replays(void **state)
{
    erase_model_config_t cfg = equivalence_model(ERASE_MODEL_MLP);
    erase_sched_options_t o = erase_sched_options_default();
    o.dp = erase_dp_comm();
    o.mode = ERASE_EB_GRAPH;
    size_t n;
    float *p = equivalence_train(eq_dev, &cfg, &o, 1000, eq_world.dp_rank, eq_world.dp_size, &n);
    int64_t replicas = differ_from_rank0(p, n);
    int64_t finite = 0;
    for (size_t i = 0; i < n; i++)
        finite += p[i] == p[i] && p[i] - p[i] == 0;
    print_message("graph replayed 1000 times on %d ranks: %lld parameters differ between replicas, "
                  "%lld of %zu finite\n", eq_world.size, (long long)replicas, (long long)finite, n);
    assert_int_equal(replicas, 0);
    assert_int_equal(finite, (int64_t)n);
    free(p);
}

/* A NaN in rank 1's batch only: every rank finds the same block, no rank
 * updates a parameter, the replicas stay identical. */
static void test_nonfinite_agreement(void **state)
{
    erase_model_config_t cfg = equivalence_model(ERASE_MODEL_CTR);
    erase_network_t *net;
    erase_optimizer_t *opt;
    erase_sched_t *sc;
    erase_batch_t batch;
    erase_optim_config_t ocfg = erase_optim_config_default();
    erase_sched_options_t o = erase_sched_options_default();
    o.mode = ERASE_EB_ASYNC;
    o.update = ERASE_AT_END;
    o.dp = erase_dp_comm();
    assert_int_equal(erase_network_create(eq_dev, &cfg, 16, &net), ERASE_OK);
    assert_int_equal(erase_optimizer_create(net, &ocfg, &opt), ERASE_OK);
    assert_int_equal(erase_sched_create(net, opt, &o, &sc), ERASE_OK);
    assert_int_equal(erase_batch_random(net, 16, 40 + (uint64_t)eq_world.dp_rank, &batch), ERASE_OK);
    assert_int_equal(erase_sched_step(sc, &batch), ERASE_OK);
    assert_int_equal(erase_sched_synchronize(sc), ERASE_OK);
    size_t total = erase_network_copy_params(net, NULL);
    float *before = malloc(total * sizeof(float)), *after = malloc(total * sizeof(float));
    erase_network_copy_params(net, before);
    if (eq_world.dp_rank == 1)
        ((float *)batch.dense)[3] = NAN;
    assert_int_equal(erase_sched_step(sc, &batch), ERASE_OK);
    assert_int_equal(erase_sched_synchronize(sc), ERASE_OK);
    int b = erase_sched_nonfinite_block(sc);
    erase_network_copy_params(net, after);
    int64_t sum_b = equivalence_sum_ranks(b), sum_b2 = equivalence_sum_ranks((int64_t)b * b);
    int64_t changed = equivalence_sum_ranks((int64_t)equivalence_differ(before, after, total));
    int64_t replicas = differ_from_rank0(after, total);
    print_message("NaN in rank 1's batch on %d ranks: block found on rank 0: %s, same on every rank: %s; "
                  "%lld parameters changed, %lld differ between replicas\n", eq_world.size,
                  b >= 0 ? erase_network_block_name(net, b) : "(none)",
                  sum_b * sum_b == sum_b2 * eq_world.size ? "yes" : "no", (long long)changed, (long long)replicas);
    assert_int_equal(b, 0);
    assert_true(sum_b == (int64_t)b * eq_world.size && sum_b2 == (int64_t)b * b * eq_world.size);
    assert_int_equal(changed, 0);
    assert_int_equal(replicas, 0);
    free(before);
    free(after);
    erase_batch_free_random(net, &batch);
    erase_sched_destroy(sc);
    erase_optimizer_destroy(opt);
    erase_network_destroy(net);
}

int main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ctr),
        cmocka_unit_test(test_mlp),
        cmocka_unit_test(test_dcn),
        cmocka_unit_test(test_graph_replays),
        cmocka_unit_test(test_clip),
        cmocka_unit_test(test_nonfinite_agreement),
    };
    return equivalence_mpi_main(&argc, &argv, "schedule equivalence", tests, sizeof tests / sizeof tests[0]);
}
