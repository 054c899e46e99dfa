/*
 * The per-rank scheduler: runs training steps of a network under one of
 * the early-backward modes (DESIGN.md, Schedules; the ERASE method):
 *
 *   off       forward of all blocks, one backward over all blocks in
 *             reverse, the gradient all-reduces, the optimizer: one stream
 *             (the baseline);
 *   blocking  after block b's forward and loss, the host enqueues b's
 *             backward on side stream (b mod S) and its all-reduce and
 *             update on the comm stream; the main stream goes on with
 *             block b+1's forward;
 *   async     the same plan, but a scheduler thread enqueues the backward,
 *             all-reduce and update, so the host never stalls on enqueue;
 *   graph     the async step run eagerly once (allocations on first use),
 *             then captured once as a graph and replayed every step
 *             (launch and collective order fixed).
 *
 * A block's backward can start early only when the boundary after it is a
 * cut; attached blocks form a segment whose backward runs in reverse after
 * the segment's last forward. The schedule changes when and where the ops
 * run, never what they compute: every mode gives bitwise the same
 * parameters (lib/nn/train_step.h is the single-stream reference).
 */
#ifndef ERASE_SCHED_SCHED_H
#define ERASE_SCHED_SCHED_H

#include <stdio.h>

#include "lib/comm/comm.h"
#include "lib/nn/optim.h"

typedef enum {
    ERASE_EB_OFF = 0,
    ERASE_EB_BLOCKING,
    ERASE_EB_ASYNC,
    ERASE_EB_GRAPH
} erase_early_backward_t;

typedef enum { ERASE_AT_EARLY = 0, ERASE_AT_END = 1 } erase_timing_t;

/* Most side streams a plan may use (besides the main and the comm stream). */
#define ERASE_SCHED_MAX_SIDE_STREAMS 16

typedef struct {
    erase_early_backward_t mode;
    erase_timing_t reduce;      /* per-block all-reduce right after the backward, or all at step end */
    erase_timing_t update;      /* per-block optimizer update when its gradients are ready, or at end */
    int side_streams;           /* 1 <= S <= ERASE_SCHED_MAX_SIDE_STREAMS (early modes) */
    int blas_threads;           /* CPU device: BLAS threads per stream, at most its cores;
                                 * 0: cores / (streams that compute at once), see below */
    erase_comm_t *dp;           /* data-parallel group; NULL or size 1: no reduction */
    struct erase_embed_shard *shard; /* sharded embedding tables (lib/sched/embed_shard.h), whose
                                 * gradients go to their owners over dp; NULL: replicated */
    int accumulate;             /* A >= 1 micro-steps per optimizer step (0: 1), each a
                                 * forward and backward of up to the network's max_batch
                                 * samples on a replica of it, their gradients summed (the
                                 * loss a mean over the step's samples); the reduction,
                                 * clipping, update and clock follow the last. Not with
                                 * `shard` */
    int trace;                  /* mark every op's range and enable the device's trace log
                                 * (262,144 records) for erase_sched_trace_collect; on a
                                 * CUDA device the ranges are always marked (NVTX: block
                                 * forward/backward/allreduce/optimizer and the step) */
} erase_sched_options_t;

/* "off", "blocking", "async", "graph" <-> mode; -1 / NULL when unknown. */
int erase_early_backward_parse(const char *name);
const char *erase_early_backward_name(erase_early_backward_t mode);

/* off, reduce early, update early, 1 side stream, no data parallelism. */
erase_sched_options_t erase_sched_options_default(void);

typedef struct erase_sched erase_sched_t;

/*
 * A scheduler for `net` trained by `opt` (both outlive it): creates its
 * streams (main, S side, comm), events, and the step plan. The CPU
 * device's BLAS threads per stream are options->blas_threads or, when 0,
 * cores / (concurrent compute streams): all cores for `off` and for a
 * model without cuts (its backward cannot overlap a forward), cores /
 * (1 + S) otherwise (at least 1).
 * Every mode computes bitwise the same parameters when each GEMM runs with
 * the same BLAS threads; OpenBLAS's AVX2 (Haswell, Zen) SGEMM kernels round
 * differently with another thread count (the partition of C changes which
 * micro-kernel computes an element), so `off` and the early modes agree
 * bitwise on every CPU only with equal blas_threads.
 * Errors: ERASE_ERR_INVALID (bad options), ERASE_ERR_NOMEM.
 */
erase_status_t erase_sched_create(erase_network_t *net, erase_optimizer_t *opt,
                                  const erase_sched_options_t *options, erase_sched_t **out);
void erase_sched_destroy(erase_sched_t *sched);

/*
 * Enqueue one training step on `batch` (device memory that must stay
 * unchanged until the step's ops that read it ran: erase_sched_synchronize,
 * or per the data loader's events). In graph mode every step must pass the
 * same buffers as the first (ERASE_ERR_INVALID otherwise: the graph holds
 * their addresses). With accumulate A > 1, micro-step m takes samples
 * [floor(m n / A), floor((m+1) n / A)) of the batch's n (A <= n <= A x the
 * network's max_batch, else ERASE_ERR_INVALID), its loss scaled by its
 * share of n (1 / A for equal shares: exact, a power of two when A is).
 */
erase_status_t erase_sched_step(erase_sched_t *sched, const erase_batch_t *batch);

/* Wait until everything enqueued so far has run, then copy the optimizer
 * clock to the host (erase_sched_nonfinite_block reads that copy);
 * returns a stream's sticky error or a failed copy. */
erase_status_t erase_sched_synchronize(erase_sched_t *sched);

/*
 * After erase_sched_synchronize (from its host copy of the optimizer
 * clock; -1 before the first): the block whose gradients were found
 * non-finite in the last step (NaN or infinity, on this rank after the
 * reduction, hence on every rank of the data-parallel group alike), or -1.
 * Such a step updates no parameter: every update of it is skipped (with
 * update early, blocks updated before the finding keep their update; with
 * `off` or update at end none is updated). The caller decides: skip the
 * step and go on, or stop with a clear message.
 */
int erase_sched_nonfinite_block(erase_sched_t *sched);

/* After erase_sched_synchronize: the last step's per-block mean losses
 * [blocks] into host memory `out` (with accumulation the mean over its
 * micro-batches, each weighted by its share of the samples). Errors:
 * those of erase_memcpy_sync. */
erase_status_t erase_sched_read_losses(erase_sched_t *sc, float *out);

/* The last step's head outputs of the last block [step samples, *width]
 * (device memory; the network's own without accumulation). */
const float *erase_sched_head_output(erase_sched_t *sc, int *width);

/* The main stream (forwards); e.g. to order data copies before a step. */
erase_stream_t *erase_sched_main_stream(erase_sched_t *sched);

/*
 * With options.trace: move the device's logged marker records (oldest
 * first, at most `max`) into `out`, with each record's `stream` renumbered
 * to the plan's streams (0 main, 1..S side, S+1 comm; see
 * erase_sched_stream_name). Call after erase_sched_synchronize.
 */
size_t erase_sched_trace_collect(erase_sched_t *sched, erase_trace_record_t *out, size_t max);

/* Name of plan stream k: "main", "side0", ..., "comm". */
const char *erase_sched_stream_name(const erase_sched_t *sched, int k);
int erase_sched_streams(const erase_sched_t *sched);

/*
 * What block b's data-parallel reduction moves on each rank (the cost
 * model's inputs, lib/sched/scale.h): *dense bytes of dense gradients
 * all-reduced, *gathered bytes of sparse embedding gradients all-gathered
 * in *gathers collectives (counts, rows, values: fixed slots of
 * `capacity` rows per table, the per-rank batch; 0 and 0 without
 * tables). Errors: ERASE_ERR_INVALID (tables the reduction refuses).
 */
erase_status_t erase_sched_reduce_bytes(erase_network_t *net, int b, int capacity, double *dense, double *gathered,
                                        int *gathers);

/* Print the step plan (one op per line); with accumulation the plan of
 * micro-steps 0 .. A-2 under "micro-steps 0 .. A-2:", then the last's
 * under "micro-step A-1:". */
void erase_sched_print_plan(const erase_sched_t *sched, FILE *out);

#endif
