/*
 * The pipeline stage executor (lib/sched/pipe.h) under real mpirun (issue
 * 16), run by tests/sched/test-pipe-np1.sh, -np2.sh and -np4.sh as
 * `test-pipe P FIRST`: the world is split by erase_world_init into P
 * stages x (world size / P) dp replicas, so the executor's pipeline and
 * data-parallel groups are real; rank 0 prints TAP lines numbered from
 * FIRST + 1 (the driver numbers several runs into one stream and prints
 * the plan). Models: equivalence_model's small ctr without cuts (7
 * blocks, tables of 40-65 rows, so a batch repeats rows) and a 4-layer
 * gpt (width 32, 2 heads, context 8, vocab 64, tie_head false). SGD
 * lr 1 (dense and embedding), momentum 0, weight decay 0: a step is
 * p <- p - g.
 *
 *  1. Gradient equality vs one process: every rank also builds the whole
 *     model on its own (max_batch = the global batch G = 18) and runs
 *     erase_train_step_serial on the global batch; the pipeline runs its
 *     stage (blocks [floor(sB/P), floor((s+1)B/P))) on its dp rank's rows
 *     [floor(rG/D), floor((r+1)G/D)) of the same batch. After 2 steps each
 *     block of the stage is compared with the reference's. gpipe and 1f1b,
 *     M in {1, 2, 3, 4, 5, 7, 9}. With M = 1 and dp = 1 the pipeline
 *     computes exactly the reference's ops on the same rows: bitwise equal.
 *     Otherwise the micro-batches' (and dp ranks') partial means are summed
 *     in another order than one GEMM / one row reduction over the batch:
 *     float rounding of the gradient of ~1e-7 relative, which p - g then
 *     rounds into p (at most half an ulp of p per step, ~6e-8 |p|); the
 *     measure is the largest difference over the block relative to the
 *     largest update of the block, max|p_pipe - p_ref| / max|p_ref - p0|,
 *     bounded by 1e-5 (a wrong micro-batch scale, e.g. a sum over
 *     micro-batches instead of their mean, gives > 0.1). gpipe and 1f1b
 *     also give bitwise the same parameters (each stage adds its
 *     micro-batches' gradients in increasing m under both), and with dp
 *     2 the replicas of a stage hold bitwise the same parameters.
 *  2. (P = 2, dp = 1) a global batch of 16 split as M in {1, 2, 4, 16}
 *     matches the reference within the same bound, and a final partial
 *     step of 13 samples after a step of 16 (M = 4: micro-batches of 3, 3,
 *     3, 4 in slots sized for 4) is the mean over the 13 (the reference
 *     steps 16 then 13 samples).
 *  3. No deadlock: every M in 1..9 under gpipe, 1f1b and paci with a in
 *     {1, 2, P-1, M}, 3 steps each (paci: erase_pipe_drain after the first
 *     step of a 3-step segment, i.e. mid-segment, then 2 more steps and a
 *     final drain); every stage backwards all 3M micro-batches. The driver
 *     arms the watchdog at 60 s: a hang ends the job non-zero.
 *  4. paci's drift: erase_pipe_stats' max_drift equals its drift_bound,
 *     which equals ceil((P-1-s)/a), on every stage for a in {1, 2, P-1}
 *     (M = 4, 3 steps: N = 12 > P-1-s+a micro-batches, enough to reach the
 *     bound), and the histogram counts every micro-batch; with P = 4 and a
 *     = 1 stage 0's is 3. paci drained after every step (a = M) is bitwise
 *     1f1b: a one-step segment's list is 1f1b's.
 *  5. local (issue 17): the reference is the same model with cuts at the
 *     stage boundaries (ctr's 7 blocks, gpt's 4 layers), trained on one
 *     process as in 1 (each block's input is then detached, and its
 *     producer's weights are those of the same step: the pipeline's lag 0);
 *     3 steps of 18, then erase_pipe_drain (stage s trains the last s
 *     batches there). M in {1, 2, 3, 5}: bitwise at M = 1 and dp 1, else
 *     within BOUND; ctr also drained after step 1 (a new segment refills
 *     the pipeline). Every stage: no gradient received (count and bytes
 *     0), the bytes are the activations plus one 8-byte version per batch
 *     on each of its links, lag measured on all 3 batches of stages s > 0
 *     (none on stage 0) and always 0, 3M micro-batches, and
 *     erase_pipe_step_samples 0 in its fill steps t < s, its share of the
 *     batch after. The no-deadlock runs of 3 include local (drained after
 *     step 1, at the end).
 *  6. Steps in flight (erase-train's loop): gpipe, 1f1b, paci (and paci
 *     a = 1 drained mid-run) on ctr and gpt, steps of 18, 18, 13, with
 *     step t+1 enqueued before step t is waited for (and run to its end
 *     before step t's results are read), give bitwise the parameters,
 *     per-step losses (the two loss buffers), clock (its copy at the
 *     step's end), samples, drift and bytes of one step at a time; a wait
 *     with none in flight, a third
 *     step (local: a second), a drain and a prediction with steps in
 *     flight are ERASE_ERR_STATE with their text.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mpi.h>

#include "lib/comm/comm.h"
#include "lib/nn/train_step.h"
#include "lib/sched/pipe.h"
#include "tests/comm/mpi_tap.h"
#include "tests/sched/equivalence.h"

#define G 18          /* global batch of the equality tests */
#define BOUND 1e-5    /* largest difference relative to the largest update */

static erase_world_t world;
static erase_device_t *dev;

/* equivalence_model's ctr and gpt, without cuts; gpt with 4 layers of
 * width 32, vocab 64 and its own LM head (a tied one joins stages). */
static erase_model_config_t model(erase_model_kind_t kind)
{
    erase_model_config_t c = equivalence_model(kind);
    c.cut_mask = 0;
    if (kind == ERASE_MODEL_GPT) {
        c.gpt.layers = 4;
        c.gpt.width = 32;
        c.gpt.vocab = 64;
        c.gpt.tie_head = ERASE_TIE_HEAD_FALSE;
    }
    return c;
}

static erase_optim_config_t sgd(void)
{
    erase_optim_config_t o = erase_optim_config_default();
    o.dense = ERASE_OPTIM_SGD;
    o.embedding = ERASE_OPTIM_SGD;
    o.schedule.base = 1;
    o.embedding_lr = 1;
    o.momentum = 0;
    o.weight_decay = 0;
    return o;
}

/* One pipeline run: kind, M, a (0: M), its steps' global batch sizes. */
typedef struct {
    pipe_kind_t kind;
    int M, accumulate, steps;
    int sizes[3];          /* the global batch of each step */
    int drain_after;       /* paci: erase_pipe_drain after this many steps (0: only at the end) */
    int drain_each;        /* paci: a one-step segment per step */
    int early;             /* early backward of the segments before a stage's last inner cut */
    int ahead;             /* enqueue step t+1 before waiting for step t */
} run_t;

/* A trained network, this stage's blocks and the figures of its run. */
typedef struct {
    erase_network_t *net;
    erase_optimizer_t *opt;
    int first, last;
    erase_pipe_stats_t stats;
    int step_samples[3];   /* erase_pipe_step_samples after each step */
    float losses[3][ERASE_MAX_BLOCKS]; /* erase_pipe_read_losses after each step */
    int64_t clock[3];      /* erase_pipe_clock's step after each step */
} result_t;

static void stage_blocks(int blocks, int *first, int *last)
{
    *first = (int)((int64_t)world.pp_rank * blocks / world.pp_size);
    *last = (int)((int64_t)(world.pp_rank + 1) * blocks / world.pp_size);
}

static int max_size(const run_t *r)
{
    int n = 0;
    for (int t = 0; t < r->steps; t++)
        n = r->sizes[t] > n ? r->sizes[t] : n;
    return n;
}

/* The reference: `cfg` on this process alone, erase_train_step_serial on
 * each whole global batch (seeds 100 + t). */
static void reference(const erase_model_config_t *cfg, const run_t *r, result_t *out)
{
    erase_optim_config_t oc = sgd();
    erase_stream_t *s;
    ERASE_MUST(erase_network_create(dev, cfg, max_size(r), &out->net));
    ERASE_MUST(erase_optimizer_create(out->net, &oc, &out->opt));
    ERASE_MUST(erase_stream_create(dev, &s));
    for (int t = 0; t < r->steps; t++) {
        erase_batch_t b;
        ERASE_MUST(erase_batch_random(out->net, r->sizes[t], 100 + (uint64_t)t, &b));
        ERASE_MUST(erase_train_step_serial(out->net, out->opt, s, &b));
        ERASE_MUST(erase_stream_synchronize(s));
        erase_batch_free_random(out->net, &b);
    }
    erase_stream_destroy(s);
    stage_blocks(erase_network_blocks(out->net), &out->first, &out->last);
}

/* This rank's stage of `cfg` under r, on its dp rank's rows of the same
 * global batches. */
static void pipeline(const erase_model_config_t *cfg, const run_t *r, result_t *out)
{
    int D = world.dp_size, d = world.dp_rank, local = (max_size(r) + D - 1) / D;
    int micro = (local + r->M - 1) / r->M;
    erase_optim_config_t oc = sgd();
    memset(out->losses, 0, sizeof out->losses); /* compared whole: the blocks past the model's too */
    ERASE_MUST(erase_network_create(dev, cfg, micro, &out->net));
    ERASE_MUST(erase_optimizer_create(out->net, &oc, &out->opt));
    stage_blocks(erase_network_blocks(out->net), &out->first, &out->last);
    erase_pipe_options_t po = { .kind = r->kind, .micro_batches = r->M, .micro_size = micro,
                                .accumulate = r->accumulate, .first = out->first, .last = out->last,
                                .pp = erase_pp_comm(), .dp = erase_dp_comm(), .early_backward = r->early };
    erase_pipe_t *pipe;
    int64_t segment = r->drain_each ? 1 : r->steps;
    ERASE_MUST(erase_pipe_create(out->net, out->opt, &po, segment, &pipe));
    erase_batch_t share;
    ERASE_MUST(erase_network_batch_alloc(out->net, local, &share));
    erase_batch_t b[3]; /* each one's copy into `share` runs on the compute stream after the step before */
    int waited = 0;
    for (int t = 0; t < r->steps; t++) {
        int n = r->sizes[t], lo = (int)((int64_t)d * n / D), hi = (int)((int64_t)(d + 1) * n / D);
        ERASE_MUST(erase_batch_random(out->net, n, 100 + (uint64_t)t, &b[t]));
        ERASE_MUST(erase_network_batch_copy(out->net, erase_pipe_stream(pipe), &b[t], lo, hi - lo, &share));
        ERASE_MUST(erase_pipe_step(pipe, &share, NULL));
        int drain = r->drain_each || (r->drain_after && t + 1 == r->drain_after);
        /* ahead: step t waits while step t+1 is enqueued, unless a drain or the end follows it */
        int upto = r->ahead && !drain && t + 1 < r->steps ? t : t + 1;
        for (; waited < upto; waited++) {
            ERASE_MUST(erase_pipe_wait(pipe));
            if (erase_pipe_in_flight(pipe)) /* the step ahead runs to its end first: a result of step
                                             * `waited` that it overwrote would show */
                ERASE_MUST(erase_stream_synchronize(erase_pipe_stream(pipe)));
            out->step_samples[waited] = erase_pipe_step_samples(pipe);
            ERASE_MUST(erase_pipe_read_losses(pipe, out->losses[waited]));
            out->clock[waited] = erase_pipe_clock(pipe).step;
            erase_batch_free_random(out->net, &b[waited]);
        }
        if (drain) {
            ERASE_MUST(erase_pipe_synchronize(pipe));
            ERASE_MUST(erase_pipe_drain(pipe, r->drain_each ? 1 : r->steps - r->drain_after));
        }
    }
    ERASE_MUST(erase_pipe_synchronize(pipe));
    ERASE_MUST(erase_pipe_drain(pipe, 1)); /* as erase-train at the end: paci's cool-down */
    erase_pipe_stats(pipe, &out->stats);
    erase_network_batch_free(out->net, &share);
    erase_pipe_destroy(pipe);
}

static void result_free(result_t *r)
{
    erase_optimizer_destroy(r->opt);
    erase_network_destroy(r->net);
}

/* Block b's parameter values (host, malloc'd, *n floats) of `net`. */
static float *block_values(erase_network_t *net, int b, size_t *n)
{
    int np, first, count;
    erase_param_t *p = erase_network_params(net, &np);
    erase_network_block_params(net, b, &first, &count);
    size_t total = 0;
    for (int i = first; i < first + count; i++)
        total += (size_t)erase_param_numel(&p[i]);
    float *v = malloc((total ? total : 1) * sizeof(float));
    if (!v)
        erase_fatal(__FILE__, __LINE__, "malloc", ERASE_ERR_NOMEM);
    size_t at = 0;
    for (int i = first; i < first + count; i++) {
        ERASE_MUST(erase_network_read_param(net, &p[i], v + at));
        at += (size_t)erase_param_numel(&p[i]);
    }
    *n = total;
    return v;
}

/* Of this stage's blocks: the floats whose bits differ between a and b,
 * and the largest over blocks of max|a - b| / max|b - b0| (b0: the
 * initial values, a fresh network of the same config); *unmoved: blocks
 * whose parameters did not move (the comparison would prove nothing). */
static void compare(const erase_model_config_t *cfg, result_t *a, result_t *b, long *bits, double *rel,
                    long *unmoved)
{
    erase_network_t *init;
    ERASE_MUST(erase_network_create(dev, cfg, 1, &init));
    *bits = 0;
    *rel = 0;
    *unmoved = 0;
    for (int k = a->first; k < a->last; k++) {
        size_t n, n2, n0;
        float *va = block_values(a->net, k, &n), *vb = block_values(b->net, k, &n2), *v0 = block_values(init, k, &n0);
        *bits += (long)equivalence_differ(va, vb, n);
        double r = equivalence_relative(va, vb, v0, n);
        if (r < 0)
            (*unmoved)++;
        else
            *rel = fmax(*rel, r);
        free(va);
        free(vb);
        free(v0);
    }
    erase_network_destroy(init);
}

static double world_max(double v)
{
    double out;
    if (MPI_Allreduce(&v, &out, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD) != MPI_SUCCESS)
        erase_fatal(__FILE__, __LINE__, "MPI_Allreduce", ERASE_ERR_COMM);
    return out;
}

/* Floats of this stage's blocks whose bits differ from dp rank 0's copy
 * (the dp all-reduce gives every replica the same update; 0 without dp). */
static long replica_differ(result_t *a)
{
    if (world.dp_size == 1)
        return 0;
    erase_stream_t *s;
    ERASE_MUST(erase_stream_create(dev, &s));
    long bits = 0;
    for (int k = a->first; k < a->last; k++) {
        size_t n;
        float *v = block_values(a->net, k, &n), *r0 = malloc((n ? n : 1) * sizeof(float));
        if (!r0)
            erase_fatal(__FILE__, __LINE__, "malloc", ERASE_ERR_NOMEM);
        memcpy(r0, v, n * sizeof(float));
        ERASE_MUST(erase_broadcast(erase_dp_comm(), s, r0, n, ERASE_DTYPE_F32, 0));
        ERASE_MUST(erase_stream_synchronize(s));
        for (size_t i = 0; i < n; i++)
            bits += memcmp(&v[i], &r0[i], sizeof(float)) != 0;
        free(v);
        free(r0);
    }
    erase_stream_destroy(s);
    return bits;
}

/* Pipeline vs reference for run r: one TAP line. exact: bitwise expected.
 * With dp > 1 the replicas must also be bitwise equal. */
static void check_equal(const erase_model_config_t *cfg, const run_t *r, const char *what, int exact,
                        result_t *keep)
{
    result_t ref, pipe;
    reference(cfg, r, &ref);
    pipeline(cfg, r, &pipe);
    long bits, unmoved;
    double rel;
    compare(cfg, &pipe, &ref, &bits, &rel, &unmoved);
    long bits_all = world_sum(bits), unmoved_all = world_sum(unmoved), replicas = replica_differ(&pipe);
    long replicas_all = world_sum(replicas);
    double rel_all = world_max(rel);
    char line[400], dp[80] = "";
    if (world.dp_size > 1)
        snprintf(dp, sizeof dp, "; dp replicas bitwise equal (%ld floats differ)", replicas_all);
    if (exact)
        snprintf(line, sizeof line, "%s: bitwise equal to one process (%ld floats differ, %ld blocks unmoved, "
                 "over all ranks; max|p_pipe - p_ref| / max|p_ref - p0| = %.2e)%s", what, bits_all, unmoved_all,
                 rel_all, dp);
    else
        snprintf(line, sizeof line, "%s: max|p_pipe - p_ref| / max|p_ref - p0| = %.2e (bound %.0e; %ld floats differ "
                 "bitwise, %ld blocks unmoved, over all ranks)%s", what, rel_all, BOUND, bits_all, unmoved_all, dp);
    tap((exact ? bits + unmoved : (rel >= BOUND) + unmoved) + replicas, line);
    if (keep)
        *keep = pipe;
    else
        result_free(&pipe);
    result_free(&ref);
}

/* Floats that differ bitwise between two results' stage blocks. */
static long differ(result_t *a, result_t *b)
{
    long bits = 0;
    for (int k = a->first; k < a->last; k++) {
        size_t n, n2;
        float *va = block_values(a->net, k, &n), *vb = block_values(b->net, k, &n2);
        for (size_t i = 0; i < n && n == n2; i++)
            bits += memcmp(&va[i], &vb[i], sizeof(float)) != 0;
        bits += n != n2;
        free(va);
        free(vb);
    }
    return bits;
}

static const char *model_name(erase_model_kind_t k) { return k == ERASE_MODEL_CTR ? "ctr" : "gpt"; }

/* 1: gpipe and 1f1b vs one process, M in {1, 2, 3, 4, 5, 7, 9}. */
static void test_equality(erase_model_kind_t kind)
{
    static const int Ms[] = { 1, 2, 3, 4, 5, 7, 9 };
    erase_model_config_t cfg = model(kind);
    for (size_t i = 0; i < sizeof Ms / sizeof Ms[0]; i++) {
        result_t kept[2];
        for (int k = 0; k < 2; k++) {
            run_t r = { .kind = k ? PIPE_1F1B : PIPE_GPIPE, .M = Ms[i], .steps = 2, .sizes = { G, G } };
            char what[160];
            snprintf(what, sizeof what, "%s, %s, P %d x dp %d, M %d, 2 steps of %d", model_name(kind),
                     pipe_kind_name(r.kind), world.pp_size, world.dp_size, r.M, G);
            check_equal(&cfg, &r, what, r.M == 1 && world.dp_size == 1, &kept[k]);
        }
        long bits = differ(&kept[0], &kept[1]);
        char what[160];
        snprintf(what, sizeof what, "%s, P %d x dp %d, M %d: gpipe and 1f1b bitwise equal (%ld floats differ)",
                 model_name(kind), world.pp_size, world.dp_size, Ms[i], world_sum(bits));
        tap(bits, what);
        result_free(&kept[0]);
        result_free(&kept[1]);
    }
}

/* The boundaries b (bit b: before block b) where stages 1 .. P-1 of
 * cfg begin (stage_blocks). */
static unsigned stage_starts(const erase_model_config_t *cfg)
{
    int B = erase_model_config_blocks(cfg), P = world.pp_size;
    unsigned starts = 0;
    for (int s = 1; s < P; s++)
        starts |= 1u << (int)((int64_t)s * B / P);
    return starts;
}

/* Early backward inside the stages (ctr, every boundary inside a stage a
 * cut): the side stream's backwards give the parameters of one process
 * (bitwise at M = 1, dp 1) and bitwise those of the same run without it. */
static void test_early(void)
{
    erase_model_config_t cfg = model(ERASE_MODEL_CTR);
    int B = erase_model_config_blocks(&cfg), P = world.pp_size;
    cfg.cut_mask = ((1u << B) - 2) & ~stage_starts(&cfg); /* boundaries 1 .. B-1 but the stages' */
    static const int Ms[] = { 1, 3, 4 };
    for (size_t i = 0; i < sizeof Ms / sizeof Ms[0]; i++)
        for (int k = 0; k < 2; k++) {
            run_t r = { .kind = k ? PIPE_1F1B : PIPE_GPIPE, .M = Ms[i], .steps = 2, .sizes = { G, G }, .early = 1 };
            result_t early, plain;
            char what[200];
            snprintf(what, sizeof what, "ctr with cuts inside the stages, %s, P %d x dp %d, M %d, early backward "
                     "inside the stages", pipe_kind_name(r.kind), P, world.dp_size, r.M);
            check_equal(&cfg, &r, what, r.M == 1 && world.dp_size == 1, &early);
            r.early = 0;
            pipeline(&cfg, &r, &plain);
            long bits = differ(&early, &plain);
            snprintf(what, sizeof what, "ctr with cuts inside the stages, %s, P %d, M %d: early backward inside "
                     "the stages bitwise equal to none (%ld floats differ)", pipe_kind_name(r.kind), P, r.M,
                     world_sum(bits));
            tap(bits, what);
            result_free(&early);
            result_free(&plain);
        }
}

/* 2: a batch of 16 as M in {1, 2, 4, 16}; a final partial step of 13. */
static void test_splits(void)
{
    static const int Ms[] = { 1, 2, 4, 16 };
    erase_model_config_t cfg = model(ERASE_MODEL_CTR);
    for (size_t i = 0; i < sizeof Ms / sizeof Ms[0]; i++) {
        run_t r = { .kind = PIPE_1F1B, .M = Ms[i], .steps = 2, .sizes = { 16, 16 } };
        char what[160];
        snprintf(what, sizeof what, "ctr, 1f1b, P 2, a global batch of 16 as %d micro-batch%s", r.M,
                 r.M == 1 ? "" : "es");
        check_equal(&cfg, &r, what, r.M == 1, NULL);
    }
    for (int k = 0; k < 2; k++) {
        run_t r = { .kind = k ? PIPE_1F1B : PIPE_GPIPE, .M = 4, .steps = 2, .sizes = { 16, 13 } };
        char what[200];
        snprintf(what, sizeof what, "ctr, %s, P 2, a step of 16 then a partial step of 13 as micro-batches of "
                 "3, 3, 3, 4 (the mean over 13)", pipe_kind_name(r.kind));
        check_equal(&cfg, &r, what, 0, NULL);
    }
}

/* model(kind) with a cut at every stage boundary (the local schedule's). */
static erase_model_config_t local_model(erase_model_kind_t kind)
{
    erase_model_config_t c = model(kind);
    c.cut_mask = stage_starts(&c);
    return c;
}

/* 3: every M <= 9 and schedule runs to the end. */
static void test_no_deadlock(void)
{
    int P = world.pp_size;
    for (int kind = PIPE_GPIPE; kind <= PIPE_LOCAL; kind++) {
        erase_model_config_t cfg = kind == PIPE_LOCAL ? local_model(ERASE_MODEL_CTR) : model(ERASE_MODEL_CTR);
        int as[4] = { 1, 2, P - 1, 0 }, na = kind == PIPE_PACI ? 4 : 1;
        long bad = 0, runs = 0;
        for (int M = 1; M <= 9; M++)
            for (int j = 0; j < na; j++) {
                int a = kind == PIPE_PACI ? (as[j] ? as[j] : M) : 0;
                if (kind == PIPE_PACI && (a < 1 || (j > 0 && a == as[0]) || (j > 1 && a == as[1]) ||
                                          (j > 2 && a == as[2])))
                    continue; /* a in {1, 2, P-1, M}, each once */
                run_t r = { .kind = (pipe_kind_t)kind, .M = M, .accumulate = a, .steps = 3,
                            .sizes = { 2 * M, 2 * M, 2 * M }, .drain_after = kind >= PIPE_PACI };
                result_t res;
                pipeline(&cfg, &r, &res);
                int64_t drifted = 0;
                for (int d = 0; d < ERASE_PIPE_MAX_DRIFT; d++)
                    drifted += res.stats.drift[d];
                bad += res.stats.micro_batches != 3 * M || drifted != 3 * M ||
                       res.stats.max_drift > res.stats.drift_bound;
                runs++;
                result_free(&res);
            }
        char what[200];
        snprintf(what, sizeof what, "%s, P %d x dp %d: M = 1 .. 9%s, 3 steps each (%ld runs): every stage "
                 "backwarded all 3M micro-batches, no deadlock", pipe_kind_name((pipe_kind_t)kind), P,
                 world.dp_size, kind == PIPE_PACI ? " x a in {1, 2, P-1, M}, drained after step 1 of 3"
                 : kind == PIPE_LOCAL ? ", drained after step 1 of 3" : "", runs);
        tap(bad, what);
    }
}

/* 4: paci's drift reaches its bound and never passes it; drained paci is 1f1b. */
static void test_drift(void)
{
    erase_model_config_t cfg = model(ERASE_MODEL_CTR);
    int P = world.pp_size, s = world.pp_rank;
    int as[3] = { 1, 2, P - 1 };
    for (int j = 0; j < 3; j++) {
        int a = as[j];
        if (a < 1 || (j == 2 && (a == 1 || a == 2)))
            continue;
        run_t r = { .kind = PIPE_PACI, .M = 4, .accumulate = a, .steps = 3, .sizes = { 8, 8, 8 } };
        result_t res;
        pipeline(&cfg, &r, &res);
        int bound = (P - 1 - s + a - 1) / a;
        int64_t counted = 0;
        for (int d = 0; d < ERASE_PIPE_MAX_DRIFT; d++)
            counted += res.stats.drift[d];
        long bad = res.stats.max_drift != bound || res.stats.drift_bound != bound || counted != 12 ||
                   res.stats.drift[bound] == 0;
        double max0 = world_max(s == 0 && world.dp_rank == 0 ? res.stats.max_drift : -1);
        char what[200];
        snprintf(what, sizeof what, "paci, P %d x dp %d, M 4, a %d, 3 steps: every stage's max_drift = its "
                 "drift_bound = ceil((P-1-s)/a) (stage 0: %.0f), 12 micro-batches in the histogram", P,
                 world.dp_size, a, max0);
        tap(bad, what);
        if (P == 4 && a == 1)
            tap(s == 0 && res.stats.max_drift != 3, "paci, P 4, a 1: stage 0's drift reaches 3 (the bound is tight)");
        result_free(&res);
    }
    for (int M = 3; M <= 4; M++) {
        result_t one, paci;
        run_t r = { .kind = PIPE_1F1B, .M = M, .steps = 3, .sizes = { 2 * M, 2 * M, 2 * M } };
        pipeline(&cfg, &r, &one);
        r.kind = PIPE_PACI;
        r.drain_each = 1;
        pipeline(&cfg, &r, &paci);
        long bits = differ(&one, &paci);
        char what[200];
        snprintf(what, sizeof what, "paci drained after every step (a = M = %d, 3 steps) equals 1f1b bitwise "
                 "(%ld floats differ), drift max %d", M, world_sum(bits), (int)world_max(paci.stats.max_drift));
        tap(bits + (paci.stats.max_drift != 0), what);
        result_free(&one);
        result_free(&paci);
    }
}

/*
 * 6: the host enqueues step t+1 before it waits for step t (erase-train's
 * loop under gpipe, 1f1b and paci): the same parameters, per-step losses,
 * samples and figures bitwise as one step at a time; and the rules'
 * errors (a third step in flight, a drain or prediction with a step in
 * flight, a wait with none, a second step under local).
 */
static void test_ahead(erase_model_kind_t kind)
{
    static const struct { pipe_kind_t kind; int M, a, drain_after; } runs[] = {
        { PIPE_GPIPE, 3, 0, 0 }, { PIPE_1F1B, 4, 0, 0 }, { PIPE_PACI, 4, 0, 0 }, { PIPE_PACI, 3, 1, 2 }
    };
    erase_model_config_t cfg = model(kind);
    for (size_t i = 0; i < sizeof runs / sizeof runs[0]; i++) {
        run_t r = { .kind = runs[i].kind, .M = runs[i].M, .accumulate = runs[i].a, .steps = 3,
                    .sizes = { G, G, 13 }, .drain_after = runs[i].drain_after };
        result_t one, ahead;
        pipeline(&cfg, &r, &one);
        r.ahead = 1;
        pipeline(&cfg, &r, &ahead);
        long bits = differ(&one, &ahead);
        long other = memcmp(one.losses, ahead.losses, sizeof one.losses) != 0 ||
                     memcmp(one.clock, ahead.clock, sizeof one.clock) != 0 ||
                     memcmp(one.step_samples, ahead.step_samples, sizeof one.step_samples) != 0 ||
                     memcmp(one.stats.drift, ahead.stats.drift, sizeof one.stats.drift) != 0 ||
                     one.stats.steps != 3 || ahead.stats.steps != 3 ||
                     one.stats.micro_batches != ahead.stats.micro_batches ||
                     one.stats.bytes_sent != ahead.stats.bytes_sent ||
                     one.stats.bytes_received != ahead.stats.bytes_received || !(ahead.stats.busy_ms > 0) ||
                     ahead.stats.wall_ms < ahead.stats.busy_ms;
        char what[320];
        snprintf(what, sizeof what, "%s, %s, P %d x dp %d, M %d%s, steps of 18, 18, 13%s, step t+1 enqueued "
                 "before step t is waited for: parameters bitwise equal (%ld floats differ), losses, clock, "
                 "samples, drift and bytes equal", model_name(kind), pipe_kind_name(r.kind), world.pp_size, world.dp_size,
                 r.M, r.accumulate ? ", a 1" : "", r.drain_after ? ", drained after step 2" : "",
                 world_sum(bits));
        tap(bits + world_sum(other), what);
        result_free(&one);
        result_free(&ahead);
    }
}

/* 6: the rules of steps in flight, with their error text. */
static void test_ahead_errors(void)
{
    erase_model_config_t cfg = model(ERASE_MODEL_CTR);
    for (int local = 0; local < 2; local++) {
        erase_model_config_t c = local ? local_model(ERASE_MODEL_CTR) : cfg;
        erase_network_t *net;
        erase_optimizer_t *opt;
        erase_optim_config_t oc = sgd();
        ERASE_MUST(erase_network_create(dev, &c, 8, &net));
        ERASE_MUST(erase_optimizer_create(net, &oc, &opt));
        int first, last;
        stage_blocks(erase_network_blocks(net), &first, &last);
        erase_pipe_options_t po = { .kind = local ? PIPE_LOCAL : PIPE_1F1B, .micro_batches = 2, .micro_size = 4,
                                    .first = first, .last = last, .pp = erase_pp_comm(), .dp = erase_dp_comm() };
        erase_pipe_t *pipe;
        ERASE_MUST(erase_pipe_create(net, opt, &po, 4, &pipe));
        erase_batch_t b;
        ERASE_MUST(erase_batch_random(net, 8, 7, &b));
        long bad = 0;
        bad += erase_pipe_wait(pipe) != ERASE_ERR_STATE ||
               !strstr(erase_error_message(), ": pipeline: no step in flight to wait for");
        ERASE_MUST(erase_pipe_step(pipe, &b, NULL));
        int inflight = local ? 1 : 2;
        if (!local)
            ERASE_MUST(erase_pipe_step(pipe, &b, NULL));
        bad += erase_pipe_in_flight(pipe) != inflight;
        bad += erase_pipe_step(pipe, &b, NULL) != ERASE_ERR_STATE ||
               !strstr(erase_error_message(), local ? ": pipeline: 1 step in flight (at most one under local: "
                       "wait for the oldest first)" : ": pipeline: 2 steps in flight (at most two: wait for the "
                       "oldest first)");
        bad += erase_pipe_drain(pipe, 1) != ERASE_ERR_STATE ||
               !strstr(erase_error_message(), local ? ": pipeline: a drain with 1 step in flight (wait for it first)"
                       : ": pipeline: a drain with 2 steps in flight (wait for them first)");
        bad += erase_pipe_predict(pipe, &b, NULL) != ERASE_ERR_STATE ||
               strstr(erase_error_message(), "pipeline: a prediction with ") == NULL;
        ERASE_MUST(erase_pipe_wait(pipe));
        bad += erase_pipe_in_flight(pipe) != inflight - 1;
        ERASE_MUST(erase_pipe_synchronize(pipe));
        bad += erase_pipe_in_flight(pipe) != 0;
        ERASE_MUST(erase_pipe_drain(pipe, 1));
        erase_pipe_destroy(pipe);
        erase_batch_free_random(net, &b);
        erase_optimizer_destroy(opt);
        erase_network_destroy(net);
        tap(world_sum(bad), local ? "local: a second step in flight, a drain and a prediction with one in flight "
                                    "are refused (ERASE_ERR_STATE, their text)"
                                  : "1f1b: a wait with no step in flight, a third step, a drain and a prediction "
                                    "with steps in flight are refused (ERASE_ERR_STATE, their text)");
    }
}

/* 5: local vs one process of the same cut model, and its figures. */
static void test_local(erase_model_kind_t kind)
{
    static const struct { int M, drain_after; } runs[] = { { 1, 0 }, { 2, 0 }, { 3, 0 }, { 5, 0 }, { 1, 1 }, { 2, 1 } };
    erase_model_config_t cfg = local_model(kind);
    int P = world.pp_size, s = world.pp_rank, D = world.dp_size, d = world.dp_rank;
    int share = (int)((int64_t)(d + 1) * G / D) - (int)((int64_t)d * G / D);
    for (size_t i = 0; i < sizeof runs / sizeof runs[0]; i++) {
        if (runs[i].drain_after && kind != ERASE_MODEL_CTR)
            continue;
        run_t r = { .kind = PIPE_LOCAL, .M = runs[i].M, .steps = 3, .sizes = { G, G, G },
                    .drain_after = runs[i].drain_after };
        char what[320];
        const char *drained = r.drain_after ? ", drained after step 1 and at the end" : ", drained at the end";
        snprintf(what, sizeof what, "%s cut at the stage boundaries, local, P %d x dp %d, M %d, 3 steps of %d%s",
                 model_name(kind), P, D, r.M, G, drained);
        result_t res;
        check_equal(&cfg, &r, what, r.M == 1 && D == 1, &res);
        const erase_pipe_stats_t *st = &res.stats;
        int64_t links = (s > 0) + (s < P - 1), batches = s > 0 ? 3 : 0;
        long bad = st->gradient_receives != 0 || st->gradient_bytes != 0 ||
                   st->bytes_sent + st->bytes_received - st->activation_bytes != 3 * 8 * links ||
                   (P > 1 && st->activation_bytes == 0) || st->lag_batches != batches || st->lag[0] != batches ||
                   st->max_lag != 0 || st->micro_batches != 3 * r.M;
        for (int t = 0; t < 3; t++) /* the segment restarts after a drain: its fill again */
            bad += res.step_samples[t] != (t - (t >= r.drain_after ? r.drain_after : 0) >= s ? share : 0);
        double lag_last = world_max(s == P - 1 && d == 0 ? (double)st->lag_batches : -1);
        snprintf(what, sizeof what, "%s, local, P %d x dp %d, M %d%s: no gradient received (count, bytes 0), "
                 "bytes = activations + an 8-byte version per batch and link, lag 0 on all 3 batches of stages "
                 "s > 0 (last stage: %.0f measured), 3M micro-batches, no samples in fill steps",
                 model_name(kind), P, D, r.M, drained, lag_last);
        tap(bad, what);
        result_free(&res);
    }
}

int main(int argc, char **argv)
{
    int P = argc > 1 ? atoi(argv[1]) : 1;
    erase_world_options_t wo = { .pp_size = P };
    ERASE_MUST(erase_world_init(&argc, &argv, &wo, &world));
    mpi_tap_rank = world.rank;
    mpi_tap_n = argc > 2 ? atoi(argv[2]) : 0;
    erase_device_options_t d = erase_device_options_default();
    d.blas_threads = 1;
    ERASE_MUST(erase_device_open(&d, &dev));
    if (world.rank == 0) {
        printf("# test-pipe: %d ranks = %d stages x %d dp\n", world.size, world.pp_size, world.dp_size);
        fflush(stdout);
    }
    test_equality(ERASE_MODEL_CTR);
    test_equality(ERASE_MODEL_GPT);
    test_early();
    if (world.pp_size == 2 && world.dp_size == 1)
        test_splits();
    test_no_deadlock();
    test_drift();
    test_local(ERASE_MODEL_CTR);
    test_local(ERASE_MODEL_GPT);
    test_ahead(ERASE_MODEL_CTR);
    test_ahead(ERASE_MODEL_GPT);
    test_ahead_errors();
    erase_device_close(dev);
    erase_world_finalize();
    return 0;
}
