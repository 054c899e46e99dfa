/*
 * Step plans (internal to lib/sched): the operations of one training step,
 * each bound to a stream, with the event edges that remain, in the order
 * they are issued. Built once per configuration; identical on every rank
 * of a data-parallel group, so collectives appear in one fixed order.
 *
 * Streams: 0 = main (forwards), 1..S = side streams (backwards, early
 * modes), S+1 = comm (gradient reductions and optimizer updates).
 */
#ifndef ERASE_SCHED_PLAN_H
#define ERASE_SCHED_PLAN_H

#include "lib/sched/sched.h"

typedef enum {
    PLAN_CLOCK,      /* optimizer clock advance (step number, learning rate) */
    PLAN_FORWARD,    /* block forward, head and loss */
    PLAN_BACKWARD,   /* block backward */
    PLAN_REDUCE,     /* block gradient all-reduce (data parallel) and finiteness check */
    PLAN_CLIP,       /* gradient-norm clipping of sub-graph [block, last] */
    PLAN_UPDATE,     /* block optimizer update */
    PLAN_ACCUMULATE, /* --accumulate: add the micro-batch's block gradients into the step's */
    PLAN_MERGE,      /* --accumulate: merge the step's packed embedding rows of the block */
    PLAN_ZERO,       /* --accumulate: zero the block's summed gradients after its update */
    PLAN_RECORD,     /* record event `event` on the stream */
    PLAN_WAIT        /* the stream waits on event `event` */
} plan_kind_t;

typedef struct {
    plan_kind_t kind;
    int block;       /* FORWARD .. UPDATE (CLIP: the sub-graph's first block) */
    int last;        /* CLIP: the sub-graph's last block */
    int stream;      /* 0 main, 1..S side, S+1 comm */
    int event;       /* RECORD / WAIT: index into the plan's events */
    int deferred;    /* async mode: issued by the scheduler thread, not the host */
} plan_op_t;

/* Events of a plan, by role (index = base + block). */
typedef struct {
    int forward_done;    /* + b: after block b's forward (main) */
    int backward_done;   /* + b: after block b's backward */
    int reduced;         /* + b: after block b's reduction */
    int updated;         /* + b: after block b's update (cross-step edge) */
    int clock;           /* after the clock advance */
    int fork;            /* main, at step start (graph capture fork) */
    int join;            /* + k: last op of stream k (graph capture join) */
    int count;
} plan_events_t;

/* Which step a plan runs (--accumulate A: A micro-steps per optimizer step). */
typedef enum {
    PLAN_STEP_WHOLE = 0, /* no accumulation: forward, backward, reduce, update */
    PLAN_STEP_MICRO,     /* micro-step 0 .. A-2: forward, backward, accumulate (no clock, reduce, update) */
    PLAN_STEP_LAST       /* micro-step A-1: also merge, then the step's reduce, clip, update and zeroing */
} plan_step_t;

typedef struct {
    plan_op_t *ops;
    int nops, cap;
    int nstreams;        /* S + 2 */
    plan_events_t ev;
} plan_t;

/*
 * Build the plan of one step for `blocks` blocks with cuts cut[b] (b >= 1)
 * and the options' mode, reduce and update timing and side streams. With
 * `clip`, each sub-graph (a maximal run of attached blocks) gets one CLIP
 * op on the stream of its updates, after all its blocks' reductions and
 * before any of their updates. With accumulation (`step` MICRO or LAST)
 * each block's backward is followed, on its stream, by its ACCUMULATE
 * (LAST: and MERGE) before the event its reduction waits for; a MICRO
 * plan records the block's `updated` event there (its next forward may
 * overwrite what the backward read), a LAST plan zeroes the block's sums
 * right after its update. Every plan has the same events, so that the
 * cross-step waits of one name the records of another.
 * Errors: ERASE_ERR_NOMEM.
 */
erase_status_t plan_build(plan_t *plan, int blocks, const int *cut, int clip,
                          const erase_sched_options_t *o, plan_step_t step);
void plan_free(plan_t *plan);

/* One line per op, for logs and tests ("  3 main    forward    sub1";
 * a clip names its sub-graph's first and last block: "clip sub1..sub3"). */
void plan_print(const plan_t *plan, const char *const *block_names, FILE *out);

#endif
