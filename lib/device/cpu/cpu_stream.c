/*
 * CPU streams and events. A stream is a FIFO of operations run by one worker
 * thread; an event is (stream, position): reached once the stream has
 * completed that many operations. Every shared field is read and written
 * under the owning stream's (or event's) mutex, so completion of an
 * operation happens-before anything that waited for it.
 */
#include "lib/device/cpu/cpu_internal.h"

#include "lib/core/fpmode.h"
#include "lib/core/timer.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static void run_node(cpu_stream_t *s, cpu_node_t *node)
{
    switch (node->kind) {
    case CPU_OP_KERNEL: {
        pthread_mutex_lock(&s->lock);
        erase_status_t sticky = s->error;
        pthread_mutex_unlock(&s->lock);
        if (sticky != ERASE_OK)
            return; /* after a failure the stream only drains, as in CUDA */
        erase_error_clear();
        erase_status_t st = node->fn(node->args);
        if (st != ERASE_OK) {
            pthread_mutex_lock(&s->lock);
            s->error = st;
            snprintf(s->error_text, sizeof s->error_text, "%s",
                     erase_error_message()[0] ? erase_error_message() : erase_status_name(st));
            pthread_mutex_unlock(&s->lock);
        }
        return;
    }
    case CPU_OP_RECORD: {
        cpu_event_t *e = node->event;
        int64_t t = erase_now_ns();
        pthread_mutex_lock(&e->lock);
        if (e->stream == s && e->seq == node->seq) {
            e->time_seq = node->seq;
            e->time_ns = t;
        }
        pthread_mutex_unlock(&e->lock);
        return;
    }
    case CPU_OP_WAIT:
        cpu_stream_wait_completed(node->wait_stream, node->wait_seq, 1);
        return;
    }
}

/* The stream whose worker this thread is; NULL on other threads. */
static _Thread_local cpu_stream_t *worker_stream;

/* erase_cpu_set_progress_hook's function; NULL: none. */
static void (*_Atomic progress_hook)(void);

void erase_cpu_set_progress_hook(void (*fn)(void))
{
    atomic_store_explicit(&progress_hook, fn, memory_order_release);
}

static void *worker_main(void *arg)
{
    cpu_stream_t *s = arg;
    worker_stream = s;
    erase_fp_thread_init(); /* flush-to-zero: see lib/core/fpmode.h */
    for (;;) {
        pthread_mutex_lock(&s->lock);
        while (!s->head && !s->shutdown)
            pthread_cond_wait(&s->work_cv, &s->lock);
        if (!s->head) {
            pthread_mutex_unlock(&s->lock);
            return NULL;
        }
        cpu_node_t *node = s->head; /* stays at the head until it completed */
        pthread_mutex_unlock(&s->lock);

        run_node(s, node);

        pthread_mutex_lock(&s->lock);
        s->head = node->next;
        if (!s->head)
            s->tail = NULL;
        s->completed = node->seq;
        if (s->completed >= s->wake_at) {
            /* wake waiters only when one of them can go on: a host thread
             * synchronizing on a long queue sleeps until its position */
            s->wake_at = UINT64_MAX;
            pthread_cond_broadcast(&s->done_cv);
        }
        pthread_mutex_unlock(&s->lock);
        free(node);
        void (*hook)(void) = atomic_load_explicit(&progress_hook, memory_order_acquire);
        if (hook)
            hook();
    }
}

void cpu_stream_wait_completed(cpu_stream_t *s, uint64_t seq, int by_worker)
{
    pthread_mutex_lock(&s->lock);
    if (s->completed < seq && by_worker) {
        s->awaited++;
        pthread_cond_broadcast(&s->nap_cv); /* ends erase_cpu_stream_nap */
    } else
        by_worker = 0;
    while (s->completed < seq) {
        if (seq < s->wake_at)
            s->wake_at = seq;
        pthread_cond_wait(&s->done_cv, &s->lock);
    }
    s->awaited -= by_worker;
    pthread_mutex_unlock(&s->lock);
}

int erase_cpu_stream_awaited(void)
{
    cpu_stream_t *s = worker_stream;
    if (!s)
        return 0;
    pthread_mutex_lock(&s->lock);
    int awaited = s->awaited > 0;
    pthread_mutex_unlock(&s->lock);
    return awaited;
}

erase_stream_t *erase_cpu_stream_current(void) { return worker_stream ? &worker_stream->base : NULL; }

cpu_stream_t *cpu_stream_of_worker(void) { return worker_stream; }

void erase_cpu_stream_wake(erase_stream_t *stream)
{
    cpu_stream_t *s = cpu_stream(stream);
    pthread_mutex_lock(&s->lock);
    s->woken = 1;
    pthread_cond_broadcast(&s->nap_cv);
    pthread_mutex_unlock(&s->lock);
}

void erase_cpu_stream_nap(int64_t ns)
{
    if (ns <= 0)
        return;
    if (ns > 3600 * (int64_t)1000000000)
        ns = 3600 * (int64_t)1000000000; /* an hour: keeps the deadline's arithmetic in range */
    cpu_stream_t *s = worker_stream;
    if (!s) {
        struct timespec nap = { (time_t)(ns / 1000000000), (long)(ns % 1000000000) }, left;
        while (nanosleep(&nap, &left) != 0 && errno == EINTR)
            nap = left; /* a signal: sleep the rest */
        return;
    }
    struct timespec until;
    clock_gettime(CLOCK_MONOTONIC, &until);
    int64_t t = (int64_t)until.tv_nsec + ns;
    until.tv_sec += (time_t)(t / 1000000000);
    until.tv_nsec = (long)(t % 1000000000);
    pthread_mutex_lock(&s->lock);
    while (!s->awaited && !s->woken && pthread_cond_timedwait(&s->nap_cv, &s->lock, &until) == 0)
        ; /* a spurious wake-up: nap on (ETIMEDOUT, or any error: done) */
    s->woken = 0;
    pthread_mutex_unlock(&s->lock);
}

/* Append a node (not capturing); returns its position. Lock held by caller. */
static uint64_t append_locked(cpu_stream_t *s, cpu_node_t *node)
{
    node->next = NULL;
    node->seq = ++s->enqueued;
    if (s->tail)
        s->tail->next = node;
    else
        s->head = node;
    s->tail = node;
    pthread_cond_signal(&s->work_cv);
    return node->seq;
}

static cpu_node_t *node_new(cpu_op_kind_t kind, size_t args_size)
{
    cpu_node_t *node = malloc(sizeof *node + args_size);
    if (!node)
        return NULL;
    memset(node, 0, sizeof *node);
    node->kind = kind;
    node->args_size = args_size;
    return node;
}

erase_status_t cpu_stream_push_kernel(cpu_stream_t *s, erase_cpu_kernel_fn fn, const void *args,
                                      size_t args_size)
{
    pthread_mutex_lock(&s->lock);
    cpu_graph_t *g = s->capture;
    pthread_mutex_unlock(&s->lock);
    if (g) {
        ERASE_CHECK(cpu_graph_add_kernel(g, s, fn, args, args_size));
        return ERASE_OK;
    }
    cpu_node_t *node = node_new(CPU_OP_KERNEL, args_size);
    if (!node)
        return ERASE_ERROR(ERASE_ERR_NOMEM, "stream: no memory for an operation");
    node->fn = fn;
    if (args_size)
        memcpy(node->args, args, args_size);
    pthread_mutex_lock(&s->lock);
    append_locked(s, node);
    pthread_mutex_unlock(&s->lock);
    return ERASE_OK;
}

erase_status_t cpu_stream_push_record(cpu_stream_t *s, cpu_event_t *e)
{
    pthread_mutex_lock(&s->lock);
    cpu_graph_t *g = s->capture;
    pthread_mutex_unlock(&s->lock);
    if (g) {
        ERASE_CHECK(cpu_graph_add_record(g, s, e));
        return ERASE_OK;
    }
    cpu_node_t *node = node_new(CPU_OP_RECORD, 0);
    if (!node)
        return ERASE_ERROR(ERASE_ERR_NOMEM, "stream: no memory for an event record");
    node->event = e;
    /* Event first, then stream: the worker locks them in the other order
     * but never holds both, so there is no lock-order cycle. */
    pthread_mutex_lock(&e->lock);
    pthread_mutex_lock(&s->lock);
    uint64_t seq = append_locked(s, node);
    pthread_mutex_unlock(&s->lock);
    e->stream = s;
    e->seq = seq;
    e->capture_id = 0;
    pthread_mutex_unlock(&e->lock);
    return ERASE_OK;
}

erase_status_t cpu_stream_push_wait(cpu_stream_t *s, cpu_event_t *e)
{
    pthread_mutex_lock(&s->lock);
    cpu_graph_t *g = s->capture;
    pthread_mutex_unlock(&s->lock);
    pthread_mutex_lock(&e->lock);
    uint64_t captured = e->capture_id;
    cpu_stream_t *target = e->stream;
    uint64_t seq = e->seq;
    pthread_mutex_unlock(&e->lock);
    if (!target && !captured)
        return ERASE_OK; /* never recorded: already reached, in capture too */
    if (g || captured) {
        /* joining a capture, or waiting inside one: the graph decides */
        ERASE_CHECK(cpu_graph_add_wait(g, s, e));
        return ERASE_OK;
    }
    if (target == s)
        return ERASE_OK; /* a fence on its own stream: already ordered */
    cpu_node_t *node = node_new(CPU_OP_WAIT, 0);
    if (!node)
        return ERASE_ERROR(ERASE_ERR_NOMEM, "stream: no memory for an event wait");
    node->wait_stream = target;
    node->wait_seq = seq;
    pthread_mutex_lock(&s->lock);
    append_locked(s, node);
    pthread_mutex_unlock(&s->lock);
    return ERASE_OK;
}

erase_status_t erase_cpu_launch(erase_stream_t *stream, erase_cpu_kernel_fn fn, const void *args,
                                size_t args_size)
{
    if (!stream || erase_device_kind(stream->dev) != ERASE_DEVICE_CPU)
        return ERASE_ERROR(ERASE_ERR_INVALID, "erase_cpu_launch: not a CPU stream");
    if (!fn || args_size > ERASE_CPU_MAX_ARGS || (args_size && !args))
        return ERASE_ERROR(ERASE_ERR_INVALID, "erase_cpu_launch: bad kernel or %zu argument bytes",
                           args_size);
    ERASE_CHECK(cpu_stream_push_kernel(cpu_stream(stream), fn, args, args_size));
    return ERASE_OK;
}

/* ---- stream lifetime ---------------------------------------------------- */

erase_status_t cpu_stream_create(erase_device_t *dev, erase_stream_t **out)
{
    cpu_stream_t *s = calloc(1, sizeof *s);
    if (!s)
        return ERASE_ERROR(ERASE_ERR_NOMEM, "stream: no memory");
    s->base.dev = dev;
    s->dev = cpu_device(dev);
    s->wake_at = UINT64_MAX;
    pthread_mutex_init(&s->lock, NULL);
    pthread_cond_init(&s->work_cv, NULL);
    pthread_cond_init(&s->done_cv, NULL);
    pthread_condattr_t monotonic;
    pthread_condattr_init(&monotonic);
    pthread_condattr_setclock(&monotonic, CLOCK_MONOTONIC);
    pthread_cond_init(&s->nap_cv, &monotonic);
    pthread_condattr_destroy(&monotonic);
    int rc = pthread_create(&s->worker, NULL, worker_main, s);
    if (rc != 0) {
        pthread_cond_destroy(&s->nap_cv);
        pthread_cond_destroy(&s->done_cv);
        pthread_cond_destroy(&s->work_cv);
        pthread_mutex_destroy(&s->lock);
        free(s);
        return ERASE_ERROR(ERASE_ERR_BACKEND, "stream: cannot start its worker thread (error %d)", rc);
    }
    cpu_device_t *d = s->dev;
    pthread_mutex_lock(&d->lock);
    s->next_in_device = d->streams;
    d->streams = s;
    pthread_mutex_unlock(&d->lock);
    *out = &s->base;
    return ERASE_OK;
}

void cpu_stream_destroy(erase_stream_t *stream)
{
    cpu_stream_t *s = cpu_stream(stream);
    cpu_device_t *d = s->dev;
    pthread_mutex_lock(&d->lock);
    for (cpu_stream_t **p = &d->streams; *p; p = &(*p)->next_in_device)
        if (*p == s) {
            *p = s->next_in_device;
            break;
        }
    pthread_mutex_unlock(&d->lock);
    pthread_mutex_lock(&s->lock);
    s->shutdown = 1; /* the worker drains the queue, then exits */
    pthread_cond_signal(&s->work_cv);
    pthread_mutex_unlock(&s->lock);
    pthread_join(s->worker, NULL);
    pthread_cond_destroy(&s->nap_cv);
    pthread_cond_destroy(&s->done_cv);
    pthread_cond_destroy(&s->work_cv);
    pthread_mutex_destroy(&s->lock);
    free(s);
}

erase_status_t cpu_stream_synchronize(erase_stream_t *stream)
{
    cpu_stream_t *s = cpu_stream(stream);
    pthread_mutex_lock(&s->lock);
    if (s->capture) {
        pthread_mutex_unlock(&s->lock);
        return ERASE_ERROR(ERASE_ERR_STATE, "stream synchronize is not allowed while the stream is capturing");
    }
    uint64_t target = s->enqueued;
    while (s->completed < target) {
        if (target < s->wake_at)
            s->wake_at = target;
        pthread_cond_wait(&s->done_cv, &s->lock);
    }
    pthread_mutex_unlock(&s->lock);
    return cpu_stream_error(stream);
}

erase_status_t cpu_stream_error(erase_stream_t *stream)
{
    cpu_stream_t *s = cpu_stream(stream);
    pthread_mutex_lock(&s->lock);
    erase_status_t st = s->error;
    char text[sizeof s->error_text];
    memcpy(text, s->error_text, sizeof text);
    pthread_mutex_unlock(&s->lock);
    if (st != ERASE_OK)
        return ERASE_ERROR(st, "an operation on this stream failed: %s", text);
    return ERASE_OK;
}

uint64_t cpu_stream_enqueued(const erase_stream_t *stream)
{
    cpu_stream_t *s = (cpu_stream_t *)stream;
    pthread_mutex_lock(&s->lock);
    uint64_t n = s->enqueued;
    pthread_mutex_unlock(&s->lock);
    return n;
}

void cpu_device_drain(cpu_device_t *d)
{
    pthread_mutex_lock(&d->lock);
    for (cpu_stream_t *s = d->streams; s; s = s->next_in_device) {
        pthread_mutex_lock(&s->lock);
        uint64_t target = s->enqueued;
        while (s->completed < target) {
            if (target < s->wake_at)
                s->wake_at = target;
            pthread_cond_wait(&s->done_cv, &s->lock);
        }
        pthread_mutex_unlock(&s->lock);
    }
    pthread_mutex_unlock(&d->lock);
}

int cpu_stream_idle(cpu_stream_t *s)
{
    pthread_mutex_lock(&s->lock);
    int idle = s->completed == s->enqueued && !s->capture;
    pthread_mutex_unlock(&s->lock);
    return idle;
}

/* ---- events ------------------------------------------------------------- */

erase_status_t cpu_event_create(erase_device_t *dev, erase_event_t **out)
{
    cpu_event_t *e = calloc(1, sizeof *e);
    if (!e)
        return ERASE_ERROR(ERASE_ERR_NOMEM, "event: no memory");
    e->base.dev = dev;
    pthread_mutex_init(&e->lock, NULL);
    *out = &e->base;
    return ERASE_OK;
}

void cpu_event_destroy(erase_event_t *event)
{
    cpu_event_t *e = cpu_event(event);
    /* Records still queued on any stream point at the event: let them pass. */
    cpu_device_drain(cpu_device(event->dev));
    pthread_mutex_destroy(&e->lock);
    free(e);
}

erase_status_t cpu_event_record(erase_event_t *e, erase_stream_t *s)
{
    ERASE_CHECK(cpu_stream_push_record(cpu_stream(s), cpu_event(e)));
    return ERASE_OK;
}

erase_status_t cpu_stream_wait_event(erase_stream_t *s, erase_event_t *e)
{
    ERASE_CHECK(cpu_stream_push_wait(cpu_stream(s), cpu_event(e)));
    return ERASE_OK;
}

/* Snapshot of an event's last record outside capture. */
static erase_status_t event_target(cpu_event_t *e, cpu_stream_t **s, uint64_t *seq)
{
    pthread_mutex_lock(&e->lock);
    uint64_t captured = e->capture_id;
    *s = e->stream;
    *seq = e->seq;
    pthread_mutex_unlock(&e->lock);
    if (captured)
        return ERASE_ERROR(ERASE_ERR_STATE,
                           "event was last recorded inside a stream capture; the host cannot wait on it");
    return ERASE_OK;
}

erase_status_t cpu_event_synchronize(erase_event_t *event)
{
    cpu_stream_t *s;
    uint64_t seq;
    ERASE_CHECK(event_target(cpu_event(event), &s, &seq));
    if (s)
        cpu_stream_wait_completed(s, seq, 0);
    return ERASE_OK;
}

static int reached(cpu_stream_t *s, uint64_t seq)
{
    if (!s)
        return 1;
    pthread_mutex_lock(&s->lock);
    int done = s->completed >= seq;
    pthread_mutex_unlock(&s->lock);
    return done;
}

erase_status_t cpu_event_query(erase_event_t *event)
{
    cpu_stream_t *s;
    uint64_t seq;
    ERASE_CHECK(event_target(cpu_event(event), &s, &seq));
    return reached(s, seq) ? ERASE_OK : ERASE_ERR_NOT_READY;
}

static erase_status_t event_time(cpu_event_t *e, int64_t *t, const char *which)
{
    cpu_stream_t *s;
    uint64_t seq;
    ERASE_CHECK(event_target(e, &s, &seq));
    if (!s)
        return ERASE_ERROR(ERASE_ERR_INVALID, "elapsed time: the %s event was never recorded", which);
    if (!reached(s, seq))
        return ERASE_ERR_NOT_READY;
    pthread_mutex_lock(&e->lock);
    int ok = e->time_seq == seq && e->stream == s;
    *t = e->time_ns;
    pthread_mutex_unlock(&e->lock);
    if (!ok) /* re-recorded since the snapshot: not reached yet */
        return ERASE_ERR_NOT_READY;
    return ERASE_OK;
}

erase_status_t cpu_event_elapsed_ms(erase_event_t *start, erase_event_t *end, double *ms)
{
    int64_t t0, t1;
    erase_status_t st = event_time(cpu_event(start), &t0, "start");
    if (st != ERASE_OK)
        return st;
    st = event_time(cpu_event(end), &t1, "end");
    if (st != ERASE_OK)
        return st;
    *ms = (double)(t1 - t0) / 1e6;
    return ERASE_OK;
}

/* ---- trace markers ------------------------------------------------------ */

typedef struct {
    erase_device_t *dev;
    const char *label;
    int stream, begin;
} mark_args_t;

static erase_status_t mark_kernel(const void *p)
{
    const mark_args_t *a = p;
    erase_trace_record_t rec = { .label = a->label, .stream = a->stream, .begin = a->begin,
                                 .time_ns = erase_now_ns() };
    erase_device_trace_append(a->dev, &rec);
    return ERASE_OK;
}

erase_status_t cpu_stream_mark(erase_stream_t *s, const char *label, int begin)
{
    mark_args_t a = { .dev = s->dev, .label = label, .stream = s->number, .begin = begin };
    ERASE_CHECK(cpu_stream_push_kernel(cpu_stream(s), mark_kernel, &a, sizeof a));
    return ERASE_OK;
}

/* ---- copies ------------------------------------------------------------- */

typedef struct {
    void *dst;
    const void *src;
    size_t bytes;
    int value;
} copy_args_t;

static erase_status_t copy_kernel(const void *p)
{
    const copy_args_t *a = p;
    memcpy(a->dst, a->src, a->bytes);
    return ERASE_OK;
}

static erase_status_t fill_kernel(const void *p)
{
    const copy_args_t *a = p;
    memset(a->dst, a->value, a->bytes);
    return ERASE_OK;
}

erase_status_t cpu_memcpy_async(erase_stream_t *s, void *dst, const void *src, size_t bytes)
{
    copy_args_t a = { .dst = dst, .src = src, .bytes = bytes };
    ERASE_CHECK(cpu_stream_push_kernel(cpu_stream(s), copy_kernel, &a, sizeof a));
    return ERASE_OK;
}

typedef struct {
    unsigned char *dst;
    const unsigned char *src;
    size_t dpitch, spitch, width, rows;
} copy2d_args_t;

static erase_status_t copy2d_kernel(const void *p)
{
    const copy2d_args_t *a = p;
    for (size_t i = 0; i < a->rows; i++)
        memcpy(a->dst + i * a->dpitch, a->src + i * a->spitch, a->width);
    return ERASE_OK;
}

erase_status_t cpu_memcpy2d_async(erase_stream_t *s, void *dst, size_t dpitch, const void *src, size_t spitch,
                                  size_t width, size_t rows)
{
    copy2d_args_t a = { .dst = dst, .src = src, .dpitch = dpitch, .spitch = spitch, .width = width, .rows = rows };
    ERASE_CHECK(cpu_stream_push_kernel(cpu_stream(s), copy2d_kernel, &a, sizeof a));
    return ERASE_OK;
}

erase_status_t cpu_memset_async(erase_stream_t *s, void *dst, int value, size_t bytes)
{
    copy_args_t a = { .dst = dst, .bytes = bytes, .value = value };
    ERASE_CHECK(cpu_stream_push_kernel(cpu_stream(s), fill_kernel, &a, sizeof a));
    return ERASE_OK;
}
