/*
 * Pipeline schedules (DESIGN.md, Pipelines and local parallelism): the
 * per-stage list of actions of GPipe, 1F1B with flush, PACI and local
 * parallelism, built
 * once per configuration like a step plan, and a discrete-event replay of
 * every stage's list (the deadlock check of the tests and the simulator of
 * `erase-bench pipeline --simulate`).
 *
 * P stages s = 0 .. P-1 hold contiguous blocks; micro-batches are numbered
 * 0, 1, 2, ... over the run (step t's are tM .. tM+M-1). The messages are
 * implied by the actions:
 *   FORWARD m  on s > 0 first receives m's activation from s-1; on
 *              s < P-1 it then sends m's activation to s+1;
 *   BACKWARD m on s < P-1 first receives the gradient of m's activation
 *              from s+1; on s > 0 it then sends the gradient of m's input
 *              to s-1 (local: no message: stages begin at cuts);
 *   UPDATE     the stage's optimizer step on the gradients accumulated
 *              since its last UPDATE (no message).
 * Every stage runs its FORWARDs in increasing m and its BACKWARDs in
 * increasing m, so each direction of each link is a FIFO: sends and
 * receives match in order (the executor runs each direction on its own
 * stream; see lib/sched/pipe.h for why that cannot deadlock).
 *
 * Schedules (the literature's definitions):
 *   gpipe  per step: FORWARD of the step's M micro-batches, BACKWARD of
 *          them, UPDATE (Huang et al., "GPipe", 2019; flush every step);
 *   1f1b   per step: warm-up min(M, P-1-s) FORWARDs, then one FORWARD one
 *          BACKWARD while forwards remain, cool-down BACKWARDs, UPDATE
 *          (Narayanan et al., "PipeDream-Flush", 2021; Megatron-LM's
 *          non-interleaved schedule);
 *   paci   1F1B without flush over the whole segment of steps: a stage
 *          runs every BACKWARD whose gradient is due, oldest first, then
 *          at most one FORWARD, and only while fewer than P - s
 *          micro-batches are in flight on it; the last stage runs FORWARD
 *          and BACKWARD back to back. UPDATE after every a-th BACKWARD of
 *          the stage (counted from the segment's start), and after the
 *          segment's last BACKWARD when backwards are left over (the
 *          drain); drift <= ceil((P-1-s)/a) (PACI: "Pipeline Asynchronous
 *          training with Controlled Inconsistency").
 * A segment is the steps between two drains (run start, checkpoints, end).
 */
#ifndef ERASE_SCHED_PIPE_SCHEDULE_H
#define ERASE_SCHED_PIPE_SCHEDULE_H

#include <stdint.h>

#include "lib/core/status.h"

typedef enum { PIPE_GPIPE = 0, PIPE_1F1B, PIPE_PACI, PIPE_LOCAL } pipe_kind_t;

/* "gpipe", "1f1b", "paci", "local" <-> kind; -1 / NULL when unknown. */
int pipe_kind_parse(const char *name);
const char *pipe_kind_name(pipe_kind_t kind);

typedef enum { PIPE_FORWARD = 0, PIPE_BACKWARD, PIPE_UPDATE } pipe_action_kind_t;

typedef struct {
    pipe_action_kind_t kind;
    int64_t micro;      /* FORWARD / BACKWARD: micro-batch number from the segment's start;
                         * UPDATE: -1 */
    int64_t step;       /* the segment step whose erase-train call issues it (0 .. steps-1;
                         * local: s .. steps+s-1, those >= steps in the drain):
                         * a stage issues step t's actions, then waits for them (the run
                         * loop synchronizes every step). A message's send is issued in
                         * a step no later than its receive. */
    int drift;          /* BACKWARD: the UPDATEs this stage issued between this
                         * micro-batch's FORWARD and its BACKWARD (gpipe/1f1b: 0) */
} pipe_action_t;

typedef struct {
    pipe_kind_t kind;
    int stages;         /* P >= 1 */
    int stage;          /* 0 <= s < P */
    int micro_batches;  /* M >= 1 per step */
    int accumulate;     /* paci: a >= 1 backwards per UPDATE (ignored by gpipe / 1f1b) */
    int64_t steps;      /* steps in the segment >= 1 */
} pipe_schedule_options_t;

typedef struct {
    pipe_action_t *actions;
    int64_t count;
    int max_in_flight;  /* most micro-batches forwarded and not yet backwarded at once
                         * (activation slots the stage needs): gpipe min(M, ...) = M,
                         * 1f1b / paci min(P - s, micro-batches of the segment), local 1 */
    int max_drift;      /* the largest `drift` of its BACKWARDs */
    pipe_schedule_options_t options;  /* what it was built from (pipe_replay checks that the
                                       * P lists are stages 0 .. P-1 of one schedule) */
} pipe_schedule_t;

/*
 * Build stage o->stage's action list for the segment. Errors:
 * ERASE_ERR_INVALID (a bad option, naming it and the expected range;
 * M x steps that overflows), ERASE_ERR_NOMEM.
 */
erase_status_t pipe_schedule_build(const pipe_schedule_options_t *o, pipe_schedule_t *out);
void pipe_schedule_free(pipe_schedule_t *sc);

/* ceil((P-1-s)/a): paci's drift bound at stage s (gpipe / 1f1b / local: 0); -1
 * for P < 1, s outside 0 .. P-1 or (paci) a < 1. */
int pipe_drift_bound(pipe_kind_t kind, int stages, int stage, int accumulate);

/* (P-1)/(M+P-1): the analytic bubble of gpipe and 1f1b with equal stage
 * times and free communication (Huang et al. 2019); exact in pipe_replay
 * for any forward and backward times when updates take no time. NaN for
 * P < 1 or M < 1. */
double pipe_bubble_analytic(int stages, int micro_batches);

/* ---- replay: the discrete-event simulation of all stages ------------------ */

/* Times of one stage (seconds): a micro-batch's forward and backward, an
 * update, and the host's time between two of its steps (host_s: a step's
 * first action starts no earlier than host_s after the end of the
 * previous step's last action, as erase-train waits for a step, reads its
 * losses and loads the next batch before it issues the next; 0: steps
 * back to back); a message costs latency + bytes / bandwidth on its link. */
typedef struct {
    double forward_s, backward_s, update_s, host_s;
} pipe_stage_time_t;

typedef struct {
    double latency_s;           /* per message */
    double bandwidth_Bps;       /* bytes per second of one link direction (> 0) */
    double activation_bytes;    /* one micro-batch's activation (= its gradient) at each boundary */
} pipe_link_t;

typedef struct {
    double makespan_s;          /* the last action's end */
    double throughput_mbps;     /* micro-batches per second: micro-batches / makespan */
    double bubble[64];          /* per stage: 1 - busy / makespan */
    int max_drift[64];          /* per stage */
    int deadlock;               /* 1: some stage could not proceed (the lists do not match) */
    int64_t stuck_stage, stuck_action;  /* where, when deadlock: the stage and the index of
                                         * the action it waits at (pipe_schedule.c says
                                         * which stage is named) */
} pipe_replay_t;

/*
 * Replay the P lists (lists[s] of stage s, as built above for one kind,
 * M, a and steps; at most 64 stages) as the executor runs them (local:
 * its drain steps too, back to back after the segment): a stage
 * runs its actions in order on one compute resource; a receive waits for
 * the matching send (FIFO per link direction) plus the link's time; sends
 * do not block compute. Fills *out (deadlock set when the lists cannot all
 * finish). Errors: ERASE_ERR_INVALID (P > 64, lists of other kinds),
 * ERASE_ERR_NOMEM.
 */
erase_status_t pipe_replay(const pipe_schedule_t *lists, int stages, const pipe_stage_time_t *times,
                           const pipe_link_t *link, pipe_replay_t *out);

#endif
