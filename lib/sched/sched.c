/*
 * The scheduler: issues the ops of the step plan (plan.c) to their
 * streams. In async mode the ops marked deferred are issued, in plan
 * order, by a scheduler thread; in graph mode the whole plan is captured
 * once from the main stream and replayed.
 */
#include "lib/sched/sched.h"

#include "lib/core/checked.h"
#include "lib/ops/ops.h"
#include "lib/sched/plan.h"
#include "lib/sched/embed_shard.h"
#include "lib/sched/grad_accum.h"
#include "lib/sched/reduce.h"
#include "lib/sched/trace.h"

#include <limits.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#define MAX_STREAMS (ERASE_SCHED_MAX_SIDE_STREAMS + 2) /* main, side streams, comm */

typedef struct {
    int op;                 /* plan op index, or -1: end of step */
    int micro;              /* the micro-step (0 without --accumulate): which plan, which region */
    erase_batch_t batch;
} deferred_t;

struct erase_sched {
    erase_network_t *net;
    erase_optimizer_t *opt;
    erase_sched_options_t o;
    erase_device_t *dev;
    /* mark every op's range: with --trace, and always on a GPU, where the
     * markers are NVTX ranges (free unless a profiler such as Nsight
     * Systems is attached) that show the schedule on its timeline */
    int marks;
    plan_t plan;                     /* a whole step, or with --accumulate its last micro-step */
    /* --accumulate A > 1 (grad_accum.h): A micro-steps per optimizer step,
     * each on `micro_net`, a replica for micro_size samples, whose
     * gradients `accum` sums into net's; micro-steps 0 .. A-2 run
     * micro_plan. Without: micro_net is net, A is 1. */
    int accumulate, micro_size;
    erase_network_t *micro_net;
    sched_accum_t *accum;
    plan_t micro_plan;
    float *losses;                   /* [blocks]: the step's mean losses, sum of n_m / n x the micro-steps' */
    float *outputs;                  /* [max_batch, out_width]: the last block's head outputs of the step */
    int out_width;
    erase_stream_t *streams[MAX_STREAMS];
    erase_event_t **events;
    sched_reduce_t *reduce;          /* NULL without data parallelism */
    const char *names[ERASE_MAX_BLOCKS];
    /* async: the scheduler thread and its queue */
    pthread_t thread;
    int thread_started;
    pthread_mutex_t lock;
    pthread_cond_t cv;
    deferred_t *queue;
    int qhead, qtail, qcap;
    int stop;
    long steps_posted, steps_issued;
    erase_status_t thread_status;
    char thread_error[1024];
    /* host copy of the optimizer clock, taken by every erase_sched_synchronize */
    erase_optim_clock_t clock;
    /* graph: one per micro-step (each holds its micro-batch's addresses) */
    erase_graph_t **graphs;
    int graph_warm;                  /* the first step ran eagerly (see erase_sched_step) */
    erase_batch_t graph_batch;
    /* trace labels: [block][kind] "<block>/<kind>", stream names */
    char (*labels)[5][48];
    char stream_names[MAX_STREAMS][16];
};

enum { LABEL_FORWARD, LABEL_BACKWARD, LABEL_REDUCE, LABEL_UPDATE, LABEL_CLIP };
static const char step_label[] = "step";

static const char *const mode_names[] = { "off", "blocking", "async", "graph" };

int erase_early_backward_parse(const char *name)
{
    for (int i = 0; i < 4; i++)
        if (!strcmp(name, mode_names[i]))
            return i;
    return -1;
}

const char *erase_early_backward_name(erase_early_backward_t mode)
{
    return mode >= 0 && mode <= ERASE_EB_GRAPH ? mode_names[mode] : NULL;
}

erase_sched_options_t erase_sched_options_default(void)
{
    erase_sched_options_t o = { .mode = ERASE_EB_OFF, .reduce = ERASE_AT_EARLY,
                                .update = ERASE_AT_EARLY, .side_streams = 1, .dp = NULL };
    return o;
}

static erase_status_t issue_op(erase_sched_t *sc, const plan_op_t *op, const erase_batch_t *batch, int micro);

/* The plan of micro-step m (the last one's is the step's plan). */
static const plan_t *plan_of(const erase_sched_t *sc, int micro)
{
    return micro < sc->accumulate - 1 ? &sc->micro_plan : &sc->plan;
}

/* Issue one op; with tracing, between a begin and an end marker. */
static erase_status_t issue(erase_sched_t *sc, const plan_op_t *op, const erase_batch_t *batch, int micro)
{
    int label = op->kind == PLAN_FORWARD ? LABEL_FORWARD : op->kind == PLAN_BACKWARD ? LABEL_BACKWARD
              : op->kind == PLAN_REDUCE ? LABEL_REDUCE : op->kind == PLAN_UPDATE ? LABEL_UPDATE
              : op->kind == PLAN_CLIP ? LABEL_CLIP : -1;
    if (!sc->marks || label < 0)
        return issue_op(sc, op, batch, micro);
    erase_stream_t *s = sc->streams[op->stream];
    ERASE_CHECK(erase_stream_mark(s, sc->labels[op->block][label], 1));
    ERASE_CHECK(issue_op(sc, op, batch, micro));
    ERASE_CHECK(erase_stream_mark(s, sc->labels[op->block][label], 0));
    return ERASE_OK;
}

static erase_status_t issue_op(erase_sched_t *sc, const plan_op_t *op, const erase_batch_t *batch, int micro)
{
    erase_stream_t *s = sc->streams[op->stream];
    switch (op->kind) {
    case PLAN_CLOCK:
        ERASE_CHECK(erase_optimizer_begin_step(sc->opt, s));
        break;
    case PLAN_FORWARD:
        ERASE_CHECK(erase_network_forward_block(sc->micro_net, op->block, s, batch));
        break;
    case PLAN_BACKWARD:
        ERASE_CHECK(erase_network_backward_block(sc->micro_net, op->block, s, batch));
        break;
    case PLAN_REDUCE:
        ERASE_CHECK(sched_reduce_and_check(sc->reduce, sc->net, sc->opt, op->block, s));
        break;
    case PLAN_CLIP:
        ERASE_CHECK(erase_optimizer_clip_grads(sc->opt, op->block, op->last, s));
        break;
    case PLAN_UPDATE:
        ERASE_CHECK(erase_optimizer_update_block(sc->opt, op->block, s));
        break;
    case PLAN_ACCUMULATE:
        ERASE_CHECK(sched_accum_add(sc->accum, sc->micro_net, micro, op->block, op->block + 1, s));
        break;
    case PLAN_MERGE:
        ERASE_CHECK(sched_accum_merge(sc->accum, op->block, s));
        break;
    case PLAN_ZERO:
        ERASE_CHECK(sched_accum_zero(sc->accum, op->block, s));
        break;
    case PLAN_RECORD:
        ERASE_CHECK(erase_event_record(sc->events[op->event], s));
        break;
    case PLAN_WAIT:
        ERASE_CHECK(erase_stream_wait_event(s, sc->events[op->event]));
        break;
    }
    return ERASE_OK;
}

/* ---- async: the scheduler thread ---------------------------------------- */

static void *thread_main(void *arg)
{
    erase_sched_t *sc = arg;
    pthread_mutex_lock(&sc->lock);
    for (;;) {
        while (sc->qhead == sc->qtail && !sc->stop)
            pthread_cond_wait(&sc->cv, &sc->lock);
        if (sc->qhead == sc->qtail)
            break;
        deferred_t item = sc->queue[sc->qhead];
        sc->qhead = (sc->qhead + 1) % sc->qcap;
        pthread_mutex_unlock(&sc->lock);
        erase_status_t st = ERASE_OK;
        if (item.op >= 0 && sc->thread_status == ERASE_OK)
            st = issue(sc, &plan_of(sc, item.micro)->ops[item.op], &item.batch, item.micro);
        pthread_mutex_lock(&sc->lock);
        if (st != ERASE_OK && sc->thread_status == ERASE_OK) {
            sc->thread_status = st;
            snprintf(sc->thread_error, sizeof sc->thread_error, "%s", erase_error_message());
        }
        if (item.op < 0) {
            sc->steps_issued++;
            pthread_cond_broadcast(&sc->cv);
        }
    }
    pthread_mutex_unlock(&sc->lock);
    return NULL;
}

static void post(erase_sched_t *sc, int op, int micro, const erase_batch_t *batch)
{
    pthread_mutex_lock(&sc->lock);
    sc->queue[sc->qtail] = (deferred_t){ .op = op, .micro = micro, .batch = *batch };
    sc->qtail = (sc->qtail + 1) % sc->qcap;
    if (op < 0)
        sc->steps_posted++;
    pthread_cond_broadcast(&sc->cv);
    pthread_mutex_unlock(&sc->lock);
}

/* Wait until the thread issued every posted step; its first error, if any. */
static erase_status_t drain(erase_sched_t *sc)
{
    if (!sc->thread_started)
        return ERASE_OK;
    pthread_mutex_lock(&sc->lock);
    while (sc->steps_issued < sc->steps_posted)
        pthread_cond_wait(&sc->cv, &sc->lock);
    erase_status_t st = sc->thread_status;
    char text[sizeof sc->thread_error];
    memcpy(text, sc->thread_error, sizeof text);
    pthread_mutex_unlock(&sc->lock);
    if (st != ERASE_OK)
        return ERASE_ERROR(st, "scheduler thread: %s", text);
    return ERASE_OK;
}

/* ---- steps ---------------------------------------------------------------- */

/* Micro-step m's plan on `batch` (its micro-batch of n_m samples, of a
 * step of n: with --accumulate the step's losses and head outputs gather
 * the micro-steps', on the main stream after its forwards). */
static erase_status_t issue_plan(erase_sched_t *sc, const erase_batch_t *batch, int micro, int first, int n,
                                 int use_thread)
{
    const plan_t *plan = plan_of(sc, micro);
    erase_stream_t *main = sc->streams[0];
    if (sc->marks)
        ERASE_CHECK(erase_stream_mark(main, step_label, 1));
    if (sc->accumulate > 1 && micro == 0)
        ERASE_CHECK(erase_memset_async(main, sc->losses, 0, sizeof(float) * (size_t)erase_network_blocks(sc->net)));
    for (int i = 0; i < plan->nops; i++) {
        if (use_thread && plan->ops[i].deferred)
            post(sc, i, micro, batch);
        else
            ERASE_CHECK(issue(sc, &plan->ops[i], batch, micro));
    }
    if (sc->accumulate > 1) {
        int width, blocks = erase_network_blocks(sc->net);
        const float *z = erase_network_head_output(sc->micro_net, blocks - 1, &width);
        ERASE_CHECK(erase_axpy(main, (size_t)blocks, (float)((double)batch->size / (double)n),
                               erase_network_losses(sc->micro_net), sc->losses));
        ERASE_CHECK(erase_memcpy_async(main, sc->outputs + (size_t)first * (size_t)width, z,
                                       sizeof(float) * (size_t)batch->size * (size_t)width));
    }
    if (sc->marks)
        ERASE_CHECK(erase_stream_mark(main, step_label, 0));
    if (use_thread)
        post(sc, -1, micro, batch);
    return ERASE_OK;
}

static int same_batch(const erase_batch_t *a, const erase_batch_t *b)
{
    return a->size == b->size && a->dense == b->dense && a->sparse == b->sparse &&
           a->label == b->label && a->features == b->features && a->classes == b->classes &&
           a->tokens == b->tokens && a->targets == b->targets;
}

/* Enqueue micro-step m (samples [first, first + batch->size) of a step of
 * n) in the scheduler's mode; graph mode: eagerly, or its graph (captured
 * at its first call). */
static erase_status_t micro_step(erase_sched_t *sc, const erase_batch_t *batch, int micro, int first, int n,
                                 int eager)
{
    switch (sc->o.mode) {
    case ERASE_EB_OFF:
    case ERASE_EB_BLOCKING:
        return issue_plan(sc, batch, micro, first, n, 0);
    case ERASE_EB_ASYNC:
        /* cross-step waits name events the thread recorded last step */
        ERASE_CHECK(drain(sc));
        return issue_plan(sc, batch, micro, first, n, 1);
    case ERASE_EB_GRAPH:
        if (eager)
            return issue_plan(sc, batch, micro, first, n, 0);
        if (!sc->graphs[micro]) {
            erase_stream_t *main = sc->streams[0];
            ERASE_CHECK(erase_stream_begin_capture(main));
            erase_status_t st = issue_plan(sc, batch, micro, first, n, 0);
            erase_graph_t *g = NULL;
            erase_status_t end = erase_stream_end_capture(main, &g);
            ERASE_CHECK(st);
            ERASE_CHECK(end);
            sc->graphs[micro] = g;
        }
        return erase_graph_launch(sc->graphs[micro], sc->streams[0]);
    }
    return ERASE_ERROR(ERASE_ERR_INVALID, "scheduler: unknown mode %d", (int)sc->o.mode);
}

erase_status_t erase_sched_step(erase_sched_t *sc, const erase_batch_t *batch)
{
    /* graph mode: the first step runs eagerly (the same plan, so the same
     * result): ops that allocate on first use (CUDA scratch memory, which
     * refuses to grow while capturing; NCCL's lazy connection set-up) do
     * it here rather than inside the capture. The plan's join leaves the
     * main stream after every stream's work, so the graph launched on it
     * next is ordered after this step. */
    int graph = sc->o.mode == ERASE_EB_GRAPH, eager = graph && !sc->graph_warm;
    if (graph && !eager && !same_batch(batch, &sc->graph_batch))
        return ERASE_ERROR(ERASE_ERR_INVALID,
                           "graph mode: every step must use the batch buffers of the first step "
                           "(the captured graph holds their addresses)");
    int A = sc->accumulate, n = batch->size;
    if (A == 1)
        ERASE_CHECK(micro_step(sc, batch, 0, 0, n, eager));
    else if (n < A || n > A * sc->micro_size)
        return ERASE_ERROR(ERASE_ERR_INVALID, "scheduler: a step of %d samples in %d micro-steps (expected %d to %d)",
                           n, A, A, A * sc->micro_size);
    for (int m = 0; A > 1 && m < A; m++) {
        /* micro-batch m: samples [floor(m n / A), floor((m+1) n / A)), its
         * loss scaled by its share of the step's mean */
        int first = (int)((int64_t)m * n / A), end = (int)((int64_t)(m + 1) * n / A);
        erase_batch_t view;
        ERASE_CHECK(erase_network_batch_view(sc->net, batch, first, end - first, &view));
        erase_network_set_loss_scale(sc->micro_net, (float)((double)(end - first) / (double)n));
        ERASE_CHECK(micro_step(sc, &view, m, first, n, eager));
    }
    if (eager) {
        sc->graph_warm = 1;
        sc->graph_batch = *batch;
    }
    return ERASE_OK;
}

erase_status_t erase_sched_synchronize(erase_sched_t *sc)
{
    ERASE_CHECK(drain(sc));
    for (int k = 0; k < sc->plan.nstreams; k++)
        ERASE_CHECK(erase_stream_synchronize(sc->streams[k]));
    /* the step's outcome for the host: nothing writes the clock now */
    ERASE_CHECK(erase_optimizer_read_clock(sc->opt, &sc->clock));
    return ERASE_OK;
}

/* From the clock copied by the last erase_sched_synchronize. */
int erase_sched_nonfinite_block(erase_sched_t *sc)
{
    return sc->clock.nonfinite - 1;
}

erase_status_t erase_sched_read_losses(erase_sched_t *sc, float *out)
{
    if (sc->accumulate == 1)
        return erase_network_read_losses(sc->net, out);
    return erase_memcpy_sync(sc->dev, out, sc->losses, sizeof(float) * (size_t)erase_network_blocks(sc->net));
}

const float *erase_sched_head_output(erase_sched_t *sc, int *width)
{
    if (sc->accumulate == 1)
        return erase_network_head_output(sc->net, erase_network_blocks(sc->net) - 1, width);
    *width = sc->out_width;
    return sc->outputs;
}

erase_stream_t *erase_sched_main_stream(erase_sched_t *sc)
{
    return sc->streams[0];
}

size_t erase_sched_trace_collect(erase_sched_t *sc, erase_trace_record_t *out, size_t max)
{
    return erase_trace_collect(sc->dev, sc->streams, sc->plan.nstreams, out, max);
}

const char *erase_sched_stream_name(const erase_sched_t *sc, int k)
{
    return k >= 0 && k < sc->plan.nstreams ? sc->stream_names[k] : NULL;
}

int erase_sched_streams(const erase_sched_t *sc)
{
    return sc->plan.nstreams;
}

void erase_sched_print_plan(const erase_sched_t *sc, FILE *out)
{
    if (sc->accumulate > 1) {
        fprintf(out, "micro-steps 0 .. %d:\n", sc->accumulate - 2);
        plan_print(&sc->micro_plan, sc->names, out);
        fprintf(out, "micro-step %d:\n", sc->accumulate - 1);
    }
    plan_print(&sc->plan, sc->names, out);
}

/* ---- life cycle ------------------------------------------------------------ */

/* --accumulate A > 1: the replica of micro-batches of the network's
 * max_batch samples that runs the micro-steps, the accumulator of their
 * gradients, the step's losses and head outputs (of up to A micro-batches). */
static erase_status_t accumulate_create(erase_sched_t *sc, int blocks)
{
    int A = sc->accumulate;
    sc->micro_size = erase_network_max_batch(sc->net);
    if (A == 1)
        return ERASE_OK;
    if (sc->o.shard)
        return ERASE_ERROR(ERASE_ERR_INVALID, "scheduler: accumulating %d micro-steps with sharded embedding tables "
                           "(their lookups are the network's own, not a replica's: not built)", A);
    if ((int64_t)A * sc->micro_size > INT_MAX)
        return ERASE_ERROR(ERASE_ERR_INVALID, "scheduler: %d micro-steps of %d samples: more than %d in a step", A,
                           sc->micro_size, INT_MAX);
    ERASE_CHECK(erase_network_create_replica(sc->net, sc->micro_size, &sc->micro_net));
    ERASE_CHECK(sched_accum_create(sc->net, 0, blocks, A, sc->micro_size, SCHED_ACCUM_PAIRWISE, &sc->accum));
    erase_network_head_output(sc->net, blocks - 1, &sc->out_width);
    ERASE_CHECK(erase_malloc(sc->dev, sizeof(float) * (size_t)blocks, (void **)&sc->losses));
    size_t bytes;
    if (!erase_bytes(sizeof(float), (int64_t)A * sc->micro_size, sc->out_width, &bytes))
        return ERASE_ERROR(ERASE_ERR_INVALID, "scheduler: head outputs of %d x %d samples overflow", A, sc->micro_size);
    ERASE_CHECK(erase_malloc(sc->dev, bytes ? bytes : 1, (void **)&sc->outputs));
    return ERASE_OK;
}

erase_status_t erase_sched_create(erase_network_t *net, erase_optimizer_t *opt,
                                  const erase_sched_options_t *options, erase_sched_t **out)
{
    erase_sched_options_t o = options ? *options : erase_sched_options_default();
    if (o.mode < ERASE_EB_OFF || o.mode > ERASE_EB_GRAPH)
        return ERASE_ERROR(ERASE_ERR_INVALID, "scheduler: unknown early-backward mode %d", (int)o.mode);
    if (o.side_streams < 1 || o.side_streams > ERASE_SCHED_MAX_SIDE_STREAMS)
        return ERASE_ERROR(ERASE_ERR_INVALID, "scheduler: %d side streams (1 to %d)", o.side_streams,
                           ERASE_SCHED_MAX_SIDE_STREAMS);
    if (o.accumulate < 0)
        return ERASE_ERROR(ERASE_ERR_INVALID, "scheduler: accumulate %d micro-steps (expected >= 1, or 0: 1)",
                           o.accumulate);
    if (o.blas_threads < 0)
        return ERASE_ERROR(ERASE_ERR_INVALID, "scheduler: %d BLAS threads per stream (0: automatic)",
                           o.blas_threads);
    erase_sched_t *sc = calloc(1, sizeof *sc);
    if (!sc)
        return ERASE_ERROR(ERASE_ERR_NOMEM, "scheduler: no memory");
    sc->net = net;
    sc->opt = opt;
    sc->o = o;
    sc->dev = erase_network_device(net);
    pthread_mutex_init(&sc->lock, NULL);
    pthread_cond_init(&sc->cv, NULL);
    int blocks = erase_network_blocks(net);
    int cut[ERASE_MAX_BLOCKS] = { 0 };
    for (int b = 0; b < blocks; b++) {
        cut[b] = erase_network_is_cut(net, b);
        sc->names[b] = erase_network_block_name(net, b);
    }
    int dp = o.dp && erase_comm_size(o.dp) > 1, clip = erase_optimizer_grad_clip(opt) > 0;
    sc->accumulate = o.accumulate > 1 ? o.accumulate : 1;
    sc->micro_net = net;
    erase_status_t st = accumulate_create(sc, blocks);
    if (st == ERASE_OK)
        st = plan_build(&sc->plan, blocks, cut, clip, &o, sc->accumulate > 1 ? PLAN_STEP_LAST : PLAN_STEP_WHOLE);
    if (st == ERASE_OK && sc->accumulate > 1)
        st = plan_build(&sc->micro_plan, blocks, cut, clip, &o, PLAN_STEP_MICRO);
    if (st == ERASE_OK && !(sc->graphs = calloc((size_t)sc->accumulate, sizeof *sc->graphs)))
        st = ERASE_ERROR(ERASE_ERR_NOMEM, "scheduler: no memory for its graphs");
    /* the merged embedding rows of a step: up to A micro-batches' */
    if (st == ERASE_OK && dp)
        st = sched_reduce_create(net, o.dp, sc->accumulate * sc->micro_size, &sc->reduce);
    if (st == ERASE_OK && sc->reduce)
        sched_reduce_set_shard(sc->reduce, o.shard);
    for (int k = 0; st == ERASE_OK && k < sc->plan.nstreams; k++)
        st = erase_stream_create(sc->dev, &sc->streams[k]);
    if (st == ERASE_OK && !(sc->events = calloc((size_t)sc->plan.ev.count, sizeof *sc->events)))
        st = ERASE_ERROR(ERASE_ERR_NOMEM, "scheduler: no memory for events");
    for (int e = 0; st == ERASE_OK && e < sc->plan.ev.count; e++)
        st = erase_event_create(sc->dev, &sc->events[e]);
    if (st == ERASE_OK && !(sc->labels = calloc((size_t)blocks, sizeof *sc->labels)))
        st = ERASE_ERROR(ERASE_ERR_NOMEM, "scheduler: no memory for labels");
    for (int b = 0; st == ERASE_OK && b < blocks; b++) {
        static const char *const kinds[5] = { "forward", "backward", "allreduce", "optimizer", "clip" };
        for (int k = 0; k < 5; k++) /* sharded tables: the block's gradients also cross by all-to-all */
            snprintf(sc->labels[b][k], sizeof sc->labels[b][k], "%s/%s", sc->names[b],
                     k == 2 && o.shard && erase_embed_shard_block(o.shard) == b ? "allreduce+alltoall" : kinds[k]);
    }
    for (int k = 0; k < sc->plan.nstreams; k++) {
        if (k == 0)
            snprintf(sc->stream_names[k], sizeof sc->stream_names[k], "main");
        else if (k == sc->plan.nstreams - 1)
            snprintf(sc->stream_names[k], sizeof sc->stream_names[k], "comm");
        else
            snprintf(sc->stream_names[k], sizeof sc->stream_names[k], "side%d", k - 1);
    }
    sc->marks = o.trace || erase_device_kind(sc->dev) == ERASE_DEVICE_CUDA;
    if (st == ERASE_OK && o.trace)
        st = erase_device_trace_enable(sc->dev, (size_t)1 << 18);
    int segments = 1; /* runs of attached blocks: backwards can overlap forwards only across a cut */
    for (int b = 1; b < blocks; b++)
        segments += cut[b];
    if (st == ERASE_OK) { /* BLAS threads: given, or the cores shared by the streams computing at once */
        int compute = o.mode == ERASE_EB_OFF || segments == 1 ? 1 : 1 + o.side_streams;
        int threads = o.blas_threads > 0 ? o.blas_threads : erase_device_cores(sc->dev) / compute;
        st = erase_device_set_blas_threads(sc->dev, threads < 1 ? 1 : threads);
    }
    if (st == ERASE_OK && o.mode == ERASE_EB_ASYNC) {
        sc->qcap = (sc->plan.nops > sc->micro_plan.nops ? sc->plan.nops : sc->micro_plan.nops) * 2 + 4;
        if (!(sc->queue = calloc((size_t)sc->qcap, sizeof *sc->queue)))
            st = ERASE_ERROR(ERASE_ERR_NOMEM, "scheduler: no memory for its queue");
        else if (pthread_create(&sc->thread, NULL, thread_main, sc) != 0)
            st = ERASE_ERROR(ERASE_ERR_BACKEND, "scheduler: cannot start its thread");
        else
            sc->thread_started = 1;
    }
    if (st != ERASE_OK) {
        erase_error_trail(__FILE__, __LINE__);
        erase_sched_destroy(sc);
        return st;
    }
    *out = sc;
    return ERASE_OK;
}

void erase_sched_destroy(erase_sched_t *sc)
{
    if (!sc)
        return;
    if (sc->thread_started) {
        drain(sc);
        pthread_mutex_lock(&sc->lock);
        sc->stop = 1;
        pthread_cond_broadcast(&sc->cv);
        pthread_mutex_unlock(&sc->lock);
        pthread_join(sc->thread, NULL);
    }
    for (int k = 0; k < sc->plan.nstreams; k++)
        if (sc->streams[k])
            erase_stream_synchronize(sc->streams[k]);
    for (int m = 0; sc->graphs && m < sc->accumulate; m++)
        erase_graph_destroy(sc->graphs[m]);
    free(sc->graphs);
    if (sc->events)
        for (int e = 0; e < sc->plan.ev.count; e++)
            erase_event_destroy(sc->events[e]);
    free(sc->events);
    for (int k = 0; k < sc->plan.nstreams; k++)
        erase_stream_destroy(sc->streams[k]);
    sched_reduce_destroy(sc->reduce);
    sched_accum_destroy(sc->accum);
    if (sc->micro_net != sc->net)
        erase_network_destroy(sc->micro_net);
    erase_free(sc->dev, sc->losses);
    erase_free(sc->dev, sc->outputs);
    plan_free(&sc->plan);
    plan_free(&sc->micro_plan);
    free(sc->labels);
    free(sc->queue);
    pthread_cond_destroy(&sc->cv);
    pthread_mutex_destroy(&sc->lock);
    free(sc);
}
