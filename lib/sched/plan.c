/* Step plans of the early-backward modes (see plan.h and sched.h). */
#include "lib/sched/plan.h"

#include <stdlib.h>
#include <string.h>

#define MAIN 0

static erase_status_t push(plan_t *p, plan_kind_t kind, int block, int stream, int event, int deferred)
{
    if (p->nops == p->cap) {
        int cap = p->cap ? 2 * p->cap : 64;
        plan_op_t *ops = realloc(p->ops, (size_t)cap * sizeof *ops);
        if (!ops)
            return ERASE_ERROR(ERASE_ERR_NOMEM, "plan: no memory");
        p->ops = ops;
        p->cap = cap;
    }
    p->ops[p->nops++] = (plan_op_t){ .kind = kind, .block = block, .last = block, .stream = stream,
                                     .event = event, .deferred = deferred };
    return ERASE_OK;
}

/* The clipping of sub-graph [lo, hi] on `stream` (see plan_build). */
static erase_status_t clip_subgraph(plan_t *p, int lo, int hi, int stream, int deferred)
{
    ERASE_CHECK(push(p, PLAN_CLIP, lo, stream, -1, deferred));
    p->ops[p->nops - 1].last = hi;
    return ERASE_OK;
}

/* The last block of the sub-graph that starts at block lo. */
static int subgraph_end(int lo, int blocks, const int *cut)
{
    int hi = lo;
    while (hi + 1 < blocks && !cut[hi + 1])
        hi++;
    return hi;
}

#define OP(kind, block, stream, deferred) ERASE_CHECK(push(p, (kind), (block), (stream), -1, (deferred)))
#define RECORD(event, stream, deferred) ERASE_CHECK(push(p, PLAN_RECORD, -1, (stream), (event), (deferred)))
#define WAIT(event, stream, deferred) ERASE_CHECK(push(p, PLAN_WAIT, -1, (stream), (event), (deferred)))

/* Block c's backward on `stream`, with accumulation its gradients added
 * into the step's (and, in the last micro-step, its rows merged). */
static erase_status_t backward_block(plan_t *p, int c, int stream, int deferred, plan_step_t step)
{
    OP(PLAN_BACKWARD, c, stream, deferred);
    if (step != PLAN_STEP_WHOLE)
        OP(PLAN_ACCUMULATE, c, stream, deferred);
    if (step == PLAN_STEP_LAST)
        OP(PLAN_MERGE, c, stream, deferred);
    return ERASE_OK;
}

static erase_status_t build_off(plan_t *p, int blocks, const int *cut, int clip, plan_step_t step)
{
    if (step != PLAN_STEP_MICRO)
        OP(PLAN_CLOCK, -1, MAIN, 0);
    for (int b = 0; b < blocks; b++)
        OP(PLAN_FORWARD, b, MAIN, 0);
    for (int b = blocks - 1; b >= 0; b--)
        ERASE_CHECK(backward_block(p, b, MAIN, 0, step));
    if (step == PLAN_STEP_MICRO)
        return ERASE_OK;
    for (int b = blocks - 1; b >= 0; b--)
        OP(PLAN_REDUCE, b, MAIN, 0);
    for (int lo = 0; clip && lo < blocks; lo = subgraph_end(lo, blocks, cut) + 1)
        ERASE_CHECK(clip_subgraph(p, lo, subgraph_end(lo, blocks, cut), MAIN, 0));
    for (int b = 0; b < blocks; b++) {
        OP(PLAN_UPDATE, b, MAIN, 0);
        if (step == PLAN_STEP_LAST)
            OP(PLAN_ZERO, b, MAIN, 0);
    }
    return ERASE_OK;
}

/* Reduce (if any) then update block c on the comm stream, after its backward. */
static erase_status_t reduce_block(plan_t *p, int c, int comm, int deferred)
{
    WAIT(p->ev.backward_done + c, comm, deferred);
    OP(PLAN_REDUCE, c, comm, deferred);
    RECORD(p->ev.reduced + c, comm, deferred);
    return ERASE_OK;
}

static erase_status_t update_block(plan_t *p, int c, int comm, int deferred, plan_step_t step)
{
    OP(PLAN_UPDATE, c, comm, deferred);
    if (step == PLAN_STEP_LAST)
        OP(PLAN_ZERO, c, comm, deferred);
    RECORD(p->ev.updated + c, comm, deferred);
    return ERASE_OK;
}

static erase_status_t build_early(plan_t *p, int blocks, const int *cut, int clip,
                                  const erase_sched_options_t *o, plan_step_t step)
{
    int micro = step == PLAN_STEP_MICRO; /* no reduction, update or clock */
    int S = o->side_streams, comm = S + 1, graph = o->mode == ERASE_EB_GRAPH;
    int d = o->mode == ERASE_EB_ASYNC || graph; /* deferred to the scheduler thread */
    if (graph) { /* fork: every stream starts after the launch point */
        RECORD(p->ev.fork, MAIN, 0);
        for (int k = 1; k <= comm; k++)
            WAIT(p->ev.fork, k, d);
    }
    /* the clock is read by the updates only: advance it on their stream, in
     * order after the previous step's updates */
    if (!micro)
        OP(PLAN_CLOCK, -1, comm, d);
    int segment = 0, lo = 0;
    for (int b = 0; b < blocks; b++) {
        if (!graph) { /* block b's activations and parameters are free again */
            WAIT(p->ev.updated + b, MAIN, 0);
            if (b + 1 < blocks)
                WAIT(p->ev.updated + b + 1, MAIN, 0);
        }
        OP(PLAN_FORWARD, b, MAIN, 0);
        RECORD(p->ev.forward_done + b, MAIN, 0);
        if (b + 1 < blocks && !cut[b + 1])
            continue; /* attached: the segment goes on */
        /* segment [lo, b] is complete: its backward, in reverse, on a side stream */
        int side = 1 + segment % S;
        WAIT(p->ev.forward_done + b, side, d);
        for (int c = b; c >= lo; c--) {
            ERASE_CHECK(backward_block(p, c, side, d, step));
            RECORD(p->ev.backward_done + c, side, d);
            if (micro) /* the block is free for the next micro-step's forward */
                RECORD(p->ev.updated + c, side, d);
        }
        if (micro) {
            /* the step's reduction and update follow the last micro-step */
        } else if (clip && o->reduce == ERASE_AT_EARLY) { /* the sub-graph's norm needs all its blocks */
            for (int c = b; c >= lo; c--)
                ERASE_CHECK(reduce_block(p, c, comm, d));
            ERASE_CHECK(clip_subgraph(p, lo, b, comm, d));
            for (int c = b; c >= lo && o->update == ERASE_AT_EARLY; c--)
                ERASE_CHECK(update_block(p, c, comm, d, step));
        } else {
            for (int c = b; c >= lo; c--) {
                if (o->reduce == ERASE_AT_EARLY)
                    ERASE_CHECK(reduce_block(p, c, comm, d));
                if (o->reduce == ERASE_AT_EARLY && o->update == ERASE_AT_EARLY)
                    ERASE_CHECK(update_block(p, c, comm, d, step));
            }
        }
        segment++;
        lo = b + 1;
    }
    if (o->reduce == ERASE_AT_END && !micro) {
        for (int c = 0; c < blocks; c++)
            ERASE_CHECK(reduce_block(p, c, comm, d));
        for (int c = 0; clip && c < blocks; c = subgraph_end(c, blocks, cut) + 1)
            ERASE_CHECK(clip_subgraph(p, c, subgraph_end(c, blocks, cut), comm, d));
    }
    if ((o->reduce == ERASE_AT_END || o->update == ERASE_AT_END) && !micro)
        for (int c = 0; c < blocks; c++)
            ERASE_CHECK(update_block(p, c, comm, d, step));
    if (graph) /* join: the launch stream waits for every stream */
        for (int k = 1; k <= comm; k++) {
            RECORD(p->ev.join + k, k, d);
            WAIT(p->ev.join + k, MAIN, d);
        }
    return ERASE_OK;
}

erase_status_t plan_build(plan_t *p, int blocks, const int *cut, int clip,
                          const erase_sched_options_t *o, plan_step_t step)
{
    memset(p, 0, sizeof *p);
    p->nstreams = o->mode == ERASE_EB_OFF ? 1 : o->side_streams + 2;
    p->ev.forward_done = 0;
    p->ev.backward_done = blocks;
    p->ev.reduced = 2 * blocks;
    p->ev.updated = 3 * blocks;
    p->ev.clock = 4 * blocks;
    p->ev.fork = 4 * blocks + 1;
    p->ev.join = 4 * blocks + 2;
    p->ev.count = 4 * blocks + 2 + p->nstreams;
    erase_status_t st = o->mode == ERASE_EB_OFF ? build_off(p, blocks, cut, clip, step)
                                                : build_early(p, blocks, cut, clip, o, step);
    if (st != ERASE_OK) {
        plan_free(p);
        erase_error_trail(__FILE__, __LINE__);
    }
    return st;
}

void plan_free(plan_t *p)
{
    free(p->ops);
    memset(p, 0, sizeof *p);
}

void plan_print(const plan_t *p, const char *const *names, FILE *out)
{
    static const char *kinds[] = { "clock", "forward", "backward", "all-reduce", "clip", "update",
                                   "accumulate", "merge", "zero", "record", "wait" };
    for (int i = 0; i < p->nops; i++) {
        const plan_op_t *op = &p->ops[i];
        char stream[16];
        if (op->stream == 0)
            snprintf(stream, sizeof stream, "main");
        else if (op->stream == p->nstreams - 1)
            snprintf(stream, sizeof stream, "comm");
        else
            snprintf(stream, sizeof stream, "side%d", op->stream - 1);
        fprintf(out, "%3d %-6s %s%-10s", i, stream, op->deferred ? "*" : " ", kinds[op->kind]);
        if (op->block >= 0)
            fprintf(out, " %s", names[op->block]);
        if (op->kind == PLAN_CLIP && op->last != op->block)
            fprintf(out, "..%s", names[op->last]);
        if (op->event >= 0)
            fprintf(out, " event %d", op->event);
        fputc('\n', out);
    }
}
