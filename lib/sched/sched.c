/*
 * The scheduler: issues the ops of the step plan (plan.c) to their
 * streams. In async mode the ops marked deferred are issued, in plan
 * order, by a scheduler thread; in graph mode the whole plan is captured
 * once from the main stream and replayed.
 */
#include "lib/sched/sched.h"

#include "lib/sched/plan.h"
#include "lib/sched/embed_shard.h"
#include "lib/sched/reduce.h"
#include "lib/sched/trace.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#define MAX_STREAMS (ERASE_SCHED_MAX_SIDE_STREAMS + 2) /* main, side streams, comm */

typedef struct {
    int op;                 /* plan op index, or -1: end of step */
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
    plan_t plan;
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
    /* graph */
    erase_graph_t *graph;
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

static erase_status_t issue_op(erase_sched_t *sc, const plan_op_t *op, const erase_batch_t *batch);

/* Issue one op; with tracing, between a begin and an end marker. */
static erase_status_t issue(erase_sched_t *sc, const plan_op_t *op, const erase_batch_t *batch)
{
    int label = op->kind == PLAN_FORWARD ? LABEL_FORWARD : op->kind == PLAN_BACKWARD ? LABEL_BACKWARD
              : op->kind == PLAN_REDUCE ? LABEL_REDUCE : op->kind == PLAN_UPDATE ? LABEL_UPDATE
              : op->kind == PLAN_CLIP ? LABEL_CLIP : -1;
    if (!sc->marks || label < 0)
        return issue_op(sc, op, batch);
    erase_stream_t *s = sc->streams[op->stream];
    ERASE_CHECK(erase_stream_mark(s, sc->labels[op->block][label], 1));
    ERASE_CHECK(issue_op(sc, op, batch));
    ERASE_CHECK(erase_stream_mark(s, sc->labels[op->block][label], 0));
    return ERASE_OK;
}

static erase_status_t issue_op(erase_sched_t *sc, const plan_op_t *op, const erase_batch_t *batch)
{
    erase_stream_t *s = sc->streams[op->stream];
    switch (op->kind) {
    case PLAN_CLOCK:
        ERASE_CHECK(erase_optimizer_begin_step(sc->opt, s));
        break;
    case PLAN_FORWARD:
        ERASE_CHECK(erase_network_forward_block(sc->net, op->block, s, batch));
        break;
    case PLAN_BACKWARD:
        ERASE_CHECK(erase_network_backward_block(sc->net, op->block, s, batch));
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
            st = issue(sc, &sc->plan.ops[item.op], &item.batch);
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

static void post(erase_sched_t *sc, int op, const erase_batch_t *batch)
{
    pthread_mutex_lock(&sc->lock);
    sc->queue[sc->qtail] = (deferred_t){ .op = op, .batch = *batch };
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

static erase_status_t issue_plan(erase_sched_t *sc, const erase_batch_t *batch, int use_thread)
{
    if (sc->marks)
        ERASE_CHECK(erase_stream_mark(sc->streams[0], step_label, 1));
    for (int i = 0; i < sc->plan.nops; i++) {
        if (use_thread && sc->plan.ops[i].deferred)
            post(sc, i, batch);
        else
            ERASE_CHECK(issue(sc, &sc->plan.ops[i], batch));
    }
    if (sc->marks)
        ERASE_CHECK(erase_stream_mark(sc->streams[0], step_label, 0));
    if (use_thread)
        post(sc, -1, batch);
    return ERASE_OK;
}

static int same_batch(const erase_batch_t *a, const erase_batch_t *b)
{
    return a->size == b->size && a->dense == b->dense && a->sparse == b->sparse &&
           a->label == b->label && a->features == b->features && a->classes == b->classes;
}

erase_status_t erase_sched_step(erase_sched_t *sc, const erase_batch_t *batch)
{
    switch (sc->o.mode) {
    case ERASE_EB_OFF:
    case ERASE_EB_BLOCKING:
        ERASE_CHECK(issue_plan(sc, batch, 0));
        return ERASE_OK;
    case ERASE_EB_ASYNC:
        /* cross-step waits name events the thread recorded last step */
        ERASE_CHECK(drain(sc));
        ERASE_CHECK(issue_plan(sc, batch, 1));
        return ERASE_OK;
    case ERASE_EB_GRAPH:
        if (!sc->graph && !sc->graph_warm) {
            /* the first step runs eagerly (the same plan, so the same
             * result): ops that allocate on first use (CUDA scratch
             * memory, which refuses to grow while capturing; NCCL's lazy
             * connection set-up) do it here rather than inside the
             * capture. The plan's join leaves the main stream after every
             * stream's work, so the graph launched on it next is ordered
             * after this step. */
            ERASE_CHECK(issue_plan(sc, batch, 0));
            sc->graph_warm = 1;
            sc->graph_batch = *batch;
            return ERASE_OK;
        }
        if (!same_batch(batch, &sc->graph_batch))
            return ERASE_ERROR(ERASE_ERR_INVALID,
                               "graph mode: every step must use the batch buffers of the first step "
                               "(the captured graph holds their addresses)");
        if (!sc->graph) {
            erase_stream_t *main = sc->streams[0];
            ERASE_CHECK(erase_stream_begin_capture(main));
            erase_status_t st = issue_plan(sc, batch, 0);
            erase_graph_t *g = NULL;
            erase_status_t end = erase_stream_end_capture(main, &g);
            ERASE_CHECK(st);
            ERASE_CHECK(end);
            sc->graph = g;
        }
        ERASE_CHECK(erase_graph_launch(sc->graph, sc->streams[0]));
        return ERASE_OK;
    }
    return ERASE_ERROR(ERASE_ERR_INVALID, "scheduler: unknown mode %d", (int)sc->o.mode);
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
    plan_print(&sc->plan, sc->names, out);
}

/* ---- life cycle ------------------------------------------------------------ */

erase_status_t erase_sched_create(erase_network_t *net, erase_optimizer_t *opt,
                                  const erase_sched_options_t *options, erase_sched_t **out)
{
    erase_sched_options_t o = options ? *options : erase_sched_options_default();
    if (o.mode < ERASE_EB_OFF || o.mode > ERASE_EB_GRAPH)
        return ERASE_ERROR(ERASE_ERR_INVALID, "scheduler: unknown early-backward mode %d", (int)o.mode);
    if (o.side_streams < 1 || o.side_streams > ERASE_SCHED_MAX_SIDE_STREAMS)
        return ERASE_ERROR(ERASE_ERR_INVALID, "scheduler: %d side streams (1 to %d)", o.side_streams,
                           ERASE_SCHED_MAX_SIDE_STREAMS);
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
    int dp = o.dp && erase_comm_size(o.dp) > 1;
    erase_status_t st = plan_build(&sc->plan, blocks, cut, erase_optimizer_grad_clip(opt) > 0, &o);
    if (st == ERASE_OK && dp)
        st = sched_reduce_create(net, o.dp, erase_network_max_batch(net), &sc->reduce);
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
        sc->qcap = sc->plan.nops * 2 + 4;
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
    erase_graph_destroy(sc->graph);
    if (sc->events)
        for (int e = 0; e < sc->plan.ev.count; e++)
            erase_event_destroy(sc->events[e]);
    free(sc->events);
    for (int k = 0; k < sc->plan.nstreams; k++)
        erase_stream_destroy(sc->streams[k]);
    sched_reduce_destroy(sc->reduce);
    plan_free(&sc->plan);
    free(sc->labels);
    free(sc->queue);
    pthread_cond_destroy(&sc->cv);
    pthread_mutex_destroy(&sc->lock);
    free(sc);
}
