/*
 * The pipeline stage executor (DESIGN.md, Pipelines; docs/pipelines.md):
 * runs this rank's stage of a network split into P stages of contiguous
 * blocks under gpipe, 1f1b (flush), paci or local (local parallelism:
 * stages that begin at cuts, trained by their local losses), from the
 * stage's action list (lib/sched/pipe_schedule.h).
 *
 * A stage holds K activation slots, K = the list's max_in_flight: network
 * replicas (erase_network_create_replica) that share the parameters of the
 * network the optimizer updates, each with its own activations, gradients
 * and a device copy of its micro-batch's inputs. Micro-batch m uses slot
 * m mod K (forwards and backwards run in increasing m, so the slot's
 * previous micro-batch is done with it). After each backward the slot's
 * gradients are added into the network's (dense: one axpy per block;
 * embedding rows: packed per micro-batch and merged at the update), each
 * micro-batch's loss gradient scaled by n_m / N (N: the samples of the
 * step on this rank; paci: 1 / a), so an UPDATE sees the mean over its
 * micro-batches; the data-parallel all-reduce of the stage's blocks then
 * runs in the stage's own dp group, as in data-parallel training.
 *
 * Streams: `compute` runs forwards, backwards and updates in list order;
 * four point-to-point streams carry the messages, one per direction of
 * each link (activations from s-1, to s+1; gradients from s+1, to s-1).
 * Deadlock rule: each link direction is a FIFO whose sends and receives
 * are both posted in increasing micro-batch order on their own streams,
 * and a receive waits only for its slot to be free (an earlier action of
 * the same rank); so every message's receive is eventually posted, the
 * sender's stream never blocks another direction, and any P and M run to
 * the end (tested for P <= 4, M <= 9 under each schedule).
 *
 * Accounting (erase_pipe_stats): the compute stream's busy time from
 * events recorded around every action (and by kind of action), over the
 * stream's wall time from each step's start (an event recorded before its
 * first action, which on stages s > 0 waits for its input: that wait is
 * bubble too) to its last action's end (bubble = 1 - busy / wall; the
 * host's time between steps is in neither); every
 * micro-batch's drift (the stage's UPDATEs between its forward and its
 * backward, counted as issued); bytes sent and received; the slots'
 * activation bytes.
 *
 * Local (docs/pipelines.md, "Local parallelism"): stage s trains in step
 * t the batch of step t - s, kept in a ring of its last s + 1 batches
 * (device copies); its output activations are copied into one of two
 * send buffers and leave in the next step, after an 8-byte message with
 * the optimizer clock's step that computed them, from which s + 1
 * measures the version lag; no gradient message; erase_pipe_drain runs
 * the left-over batches, after which the stages hold the parameters of
 * the cut model trained on one rank.
 */
#ifndef ERASE_SCHED_PIPE_H
#define ERASE_SCHED_PIPE_H

#include <stdint.h>
#include <stdio.h>

#include "lib/comm/comm.h"
#include "lib/nn/optim.h"
#include "lib/sched/pipe_schedule.h"

#define ERASE_PIPE_MAX_DRIFT 64   /* drift histogram bins (the last one: >= 63) */

typedef struct {
    pipe_kind_t kind;       /* gpipe, 1f1b, paci or local */
    int micro_batches;      /* M >= 1: micro-batches per step */
    int micro_size;         /* samples of a full micro-batch (the slots' max_batch) */
    int accumulate;         /* paci: backwards per update, a >= 1 (0: M) */
    int first, last;        /* this stage's blocks [first, last) */
    erase_comm_t *pp;       /* the pipeline group: stage = rank in it, P = its size */
    erase_comm_t *dp;       /* the stage's data-parallel group (NULL or size 1: none) */
    int trace;              /* mark every action's range (erase_device_trace_drain) */
    int early_backward;     /* gpipe, 1f1b: the stage's blocks before its last inner cut run their
                             * backward on a side stream right after their forward (the ERASE
                             * method inside a stage); paci ignores it (an early gradient would
                             * join an earlier update's accumulation) */
} erase_pipe_options_t;

typedef struct {
    int stage, stages;
    int64_t steps, micro_batches;       /* since erase_pipe_create / the last stats reset */
    double busy_ms, wall_ms;            /* compute stream, summed over steps */
    double action_ms[3];                /* busy_ms by action: [pipe_action_kind_t] forward, backward, update */
    double bubble;                      /* 1 - busy / wall (0 before the first step) */
    int64_t drift[ERASE_PIPE_MAX_DRIFT];/* micro-batches by measured drift */
    int max_drift, drift_bound;         /* measured; ceil((P-1-s)/a) (gpipe/1f1b 0) */
    int64_t bytes_sent, bytes_received; /* point-to-point, summed over steps */
    int64_t activation_bytes;           /* of them: activations sent + received */
    int64_t gradient_bytes;             /* of them: gradients sent + received (local: 0) */
    int64_t gradient_receives;          /* gradient messages received (local: 0) */
    int64_t lag[ERASE_PIPE_MAX_DRIFT];  /* local: batches by version lag (this stage's updates minus
                                         * those of stage s-1's weights that computed its input) */
    int max_lag;
    int64_t lag_batches;                /* batches whose lag was measured (stage 0: none) */
    int slots;                          /* activation slots K */
    size_t slot_bytes;                  /* device bytes the K replicas allocated */
    int64_t drains;                     /* paci: drains so far */
    double drain_ms;                    /* paci: host time spent in drains */
} erase_pipe_stats_t;

typedef struct erase_pipe erase_pipe_t;

/*
 * A stage executor for blocks [o->first, o->last) of `net` (built for
 * micro-batches of o->micro_size samples and updated by `opt`; both
 * outlive it). Boundaries o->first and o->last with other stages must
 * be attached under gpipe, 1f1b and paci (they pass gradients across
 * stages) and cuts under local; the other kind is ERASE_ERR_INVALID,
 * naming the boundary.
 * `steps`: the length of the first segment (the run's remaining steps;
 * erase_pipe_drain starts a new one). Creates the streams, the K replicas
 * and their batch buffers. Errors: ERASE_ERR_INVALID (options, naming
 * them), ERASE_ERR_NOMEM, those of the replicas.
 */
erase_status_t erase_pipe_create(erase_network_t *net, erase_optimizer_t *opt, const erase_pipe_options_t *o,
                                 int64_t steps, erase_pipe_t **out);
void erase_pipe_destroy(erase_pipe_t *pipe);

/* The compute stream (load the step's batch on it). */
erase_stream_t *erase_pipe_stream(erase_pipe_t *pipe);

/*
 * Enqueue this stage's actions of the segment's next step on `batch` (the
 * rank's share of the global batch, device memory of batch->size samples
 * that the micro-batch copies read on the compute stream as they run: a
 * later copy into the same memory enqueued on erase_pipe_stream is safe):
 * micro-batch m of the step takes samples
 * [floor(m n / M), floor((m+1) n / M)) (n = batch->size; n < M leaves
 * micro-batches empty, which every stage skips alike). On the last stage,
 * `outputs` (memory erase_memcpy_async reaches: host or device, [n,
 * width] floats, or NULL) receives the last block's head output of the
 * step's micro-batches; each step in flight needs its own.
 * Steps in flight: the host may enqueue step t+1 before it waits for step
 * t (erase_pipe_wait), so that the stage's streams never wait for the
 * host's work between steps (reading a batch, scoring outputs, a
 * collective of the progress line); at most two (one under local, whose
 * version accounting needs the receive streams idle). The arithmetic and
 * the messages are the same either way (stream order).
 * Errors: ERASE_ERR_STATE (the segment is over; two steps in flight, or
 * one under local), those of the ops and the communicators.
 */
erase_status_t erase_pipe_step(erase_pipe_t *pipe, const erase_batch_t *batch, float *outputs);

/* Steps enqueued and not yet waited for: 0, 1 or 2. */
int erase_pipe_in_flight(const erase_pipe_t *pipe);

/*
 * Wait for the oldest step in flight (an event after its last action on
 * the compute stream, which waited for its receives) and account its
 * timing spans; it becomes "the last step" of read_losses, step_samples
 * and nonfinite_block. With no younger step enqueued it also waits for
 * the receive streams, as synchronize does; with one, it returns a
 * stream's sticky error so far (erase_stream_error) without waiting for
 * the younger step. Errors: ERASE_ERR_STATE (no step in flight), the
 * streams' sticky errors.
 */
erase_status_t erase_pipe_wait(erase_pipe_t *pipe);

/* Wait for every step in flight (erase_pipe_wait), then for the compute
 * and receive streams (not the sends: a gradient sent in this step may be
 * received by the previous stage in its next step, under paci; a slot's
 * buffer is reused only after its send, by events), account a drain's
 * events and read the optimizer's clock. Returns a stream's sticky
 * error. */
erase_status_t erase_pipe_synchronize(erase_pipe_t *pipe);

/*
 * Host copy [blocks] of the last waited step's mean losses of this stage's
 * blocks (weighted by micro-batch size; other blocks 0). Valid until the
 * host enqueues the second step after it (each step in flight has its
 * own buffer).
 */
erase_status_t erase_pipe_read_losses(erase_pipe_t *pipe, float *out);

/*
 * paci: run every micro-batch still in flight to its backward (and the
 * update of a partial accumulation); local: train the stage's left-over
 * batches (stage s: the last s steps'); wait for it, and start a new segment
 * of `steps` steps (a checkpoint then holds a state with nothing in
 * flight, from which a resumed run continues bitwise). gpipe / 1f1b have
 * nothing in flight between steps: only the new segment. Collective over
 * the pipeline group (every stage drains at the same step). Errors:
 * ERASE_ERR_STATE with a step in flight (wait for it first).
 */
erase_status_t erase_pipe_drain(erase_pipe_t *pipe, int64_t steps);

/*
 * Forward only (evaluation): the network's prediction for `batch` (any
 * size: run in pieces of the network's max_batch, which may exceed
 * micro_size: erase-train builds it for a whole rank batch), through the
 * stages in order; on
 * the last stage `outputs` [n, width] receives the last head's output.
 * Waits for it. Collective over the pipeline group. Errors:
 * ERASE_ERR_STATE with a step in flight (wait for it first).
 */
erase_status_t erase_pipe_predict(erase_pipe_t *pipe, const erase_batch_t *batch, float *outputs);

/* The samples this stage trained in the last waited step: its batch's
 * (its losses are read_losses'); 0 in a fill step of local, whose stage s
 * trains in step t the batch of step t - s. */
int erase_pipe_step_samples(const erase_pipe_t *pipe);

/* Accounting so far (after synchronize). */
void erase_pipe_stats(const erase_pipe_t *pipe, erase_pipe_stats_t *out);
void erase_pipe_reset_stats(erase_pipe_t *pipe);

/* With o->trace: move the device's marker records (at most max) into
 * out, each record's stream renumbered 0 compute, 1 act_in, 2 act_out,
 * 3 grad_in, 4 grad_out, 5 side (early backward inside the stage)
 * (erase_pipe_stream_name). After synchronize. */
size_t erase_pipe_trace_collect(erase_pipe_t *pipe, erase_trace_record_t *out, size_t max);
const char *erase_pipe_stream_name(int k);
#define ERASE_PIPE_STREAMS 6

/* The optimizer's clock as the last waited step left it (its copy on the
 * compute stream: a step enqueued ahead may be advancing the device's);
 * after synchronize, the device's. */
erase_optim_clock_t erase_pipe_clock(const erase_pipe_t *pipe);

/* The non-finite block of the last update up to the last waited step
 * (as erase_sched_nonfinite_block), or -1. */
int erase_pipe_nonfinite_block(erase_pipe_t *pipe);

#endif
