/*
 * Trace markers on the CUDA backend (erase_stream_mark and the device's
 * trace log of device.h).
 *
 * NVTX: every marker opens (begin) or closes (end) a range of the "erase"
 * NVTX domain named by its label, with nvtxDomainRangeStartEx /
 * nvtxDomainRangeEnd (start/end ranges, unlike push/pop, may be closed on
 * another thread). The ranges are host-side: they show when the host
 * issued the work, not when the GPU ran it. Issued inside a capture they
 * mark the capture; graph replays emit no NVTX (Nsight Systems shows the
 * replayed nodes themselves with --cuda-graph-trace=node). NVTX costs a
 * branch when no tool is attached.
 *
 * Trace log: when tracing is enabled (erase_device_trace_enable), a marker
 * also records a timing cudaEvent (from a pool) at its place in the stream
 * and is kept pending as (label, stream, begin, event). Inside a capture
 * the record is cudaEventRecordWithFlags(cudaEventRecordExternal), which
 * makes it an event-record node of the graph: the mark then belongs to the
 * graph and becomes pending again at every launch. erase_device_trace_drain
 * calls cuda_trace_flush (the backend's trace_flush hook), which turns the
 * pending marks whose event has completed into records, in issue order
 * (a mark not yet reached holds back the later ones until a later drain),
 * with
 *     time_ns = base_ns + cudaEventElapsedTime(base event, mark event),
 * where the base event is recorded on the device's private stream and
 * synchronized, and base_ns is the midpoint of the host CLOCK_MONOTONIC
 * times around that (re-based at every drain, so the float milliseconds
 * stay short). Accuracy: the differences between marks are those of CUDA
 * events (about 0.5 us resolution); the offset to host time is good to
 * half the base window (a few microseconds). A graph replayed again before
 * a drain re-records its events, so all of its pending marks then carry
 * the last replay's times: drain after each replay to get each replay's
 * times. While any capture is in progress on the device, flush does
 * nothing (a query or synchronize could break the capture); the marks stay
 * pending.
 */
#include "config.h"

#include "lib/device/cuda/cuda_internal.h"

#include "lib/core/timer.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- growable arrays --------------------------------------------------------- */

erase_status_t cuda_marks_push(cuda_marks_t *m, const cuda_mark_t *mark)
{
    if (m->n == m->cap) {
        size_t cap = m->cap ? 2 * m->cap : 64;
        cuda_mark_t *v = realloc(m->v, cap * sizeof *v);
        if (!v)
            return ERASE_ERROR(ERASE_ERR_NOMEM, "trace: no memory for %zu pending marks", cap);
        m->v = v;
        m->cap = cap;
    }
    m->v[m->n++] = *mark;
    return ERASE_OK;
}

void cuda_marks_free(cuda_marks_t *m)
{
    free(m->v);
    m->v = NULL;
    m->n = m->cap = 0;
}

/* Append an event to an array of events; 0 on success, -1 without memory. */
static int events_push(cudaEvent_t **v, size_t *n, size_t *cap, cudaEvent_t ev)
{
    if (*n == *cap) {
        size_t c = *cap ? 2 * *cap : 64;
        cudaEvent_t *p = realloc(*v, c * sizeof *p);
        if (!p)
            return -1;
        *v = p;
        *cap = c;
    }
    (*v)[(*n)++] = ev;
    return 0;
}

/* Give a mark's event back to the pool (d->lock held); destroyed if the
 * pool cannot grow. */
static void pool_put(cuda_device_t *d, cudaEvent_t ev)
{
    if (events_push(&d->pool, &d->pool_n, &d->pool_cap, ev) != 0)
        (void)cudaEventDestroy(ev);
}

/* An event for a mark (d->lock held): from the pool or a new timing event. */
static erase_status_t pool_get(cuda_device_t *d, cudaEvent_t *ev)
{
    if (d->pool_n > 0) {
        *ev = d->pool[--d->pool_n];
        return ERASE_OK;
    }
    ERASE_CUDA_CHECK(cudaEventCreate(ev));
    return ERASE_OK;
}

/* ---- time base ---------------------------------------------------------------- */

/* Record the base event on the private stream, wait for it, and take the
 * midpoint of the host times around it (d->lock held, no capture). */
static erase_status_t rebase(cuda_device_t *d)
{
    int64_t t0 = erase_now_ns();
    ERASE_CUDA_CHECK(cudaEventRecord(d->base_ev, d->aux));
    ERASE_CUDA_CHECK(cudaEventSynchronize(d->base_ev));
    int64_t t1 = erase_now_ns();
    d->base_ns = t0 + (t1 - t0) / 2;
    return ERASE_OK;
}

erase_status_t cuda_trace_open(cuda_device_t *d)
{
    d->nvtx = nvtxDomainCreateA("erase");
    ERASE_CUDA_CHECK(cudaEventCreate(&d->base_ev));
    ERASE_CHECK(rebase(d));
    return ERASE_OK;
}

void cuda_trace_close(cuda_device_t *d)
{
    pthread_mutex_lock(&d->lock);
    for (size_t i = 0; i < d->pending.n; i++)
        if (d->pending.v[i].pooled)
            (void)cudaEventDestroy(d->pending.v[i].ev);
    for (size_t i = 0; i < d->captured.n; i++) /* captures never ended */
        (void)cudaEventDestroy(d->captured.v[i].ev);
    for (size_t i = 0; i < d->pool_n; i++)
        (void)cudaEventDestroy(d->pool[i]);
    for (size_t i = 0; i < d->retired_n; i++)
        (void)cudaEventDestroy(d->retired[i]);
    cuda_marks_free(&d->pending);
    cuda_marks_free(&d->captured);
    free(d->pool);
    free(d->retired);
    d->pool = d->retired = NULL;
    d->pool_n = d->pool_cap = d->retired_n = d->retired_cap = 0;
    if (d->base_ev)
        (void)cudaEventDestroy(d->base_ev);
    d->base_ev = NULL;
    pthread_mutex_unlock(&d->lock);
    if (d->nvtx)
        nvtxDomainDestroy(d->nvtx);
    d->nvtx = NULL;
}

/* ---- markers ------------------------------------------------------------------ */

static int tracing(erase_device_t *dev)
{
    pthread_mutex_lock(&dev->trace_lock);
    int on = dev->trace != NULL;
    pthread_mutex_unlock(&dev->trace_lock);
    return on;
}

/* NVTX side of a marker: open a range, or close the innermost open range of
 * this stream with the same label (an end without a begin is ignored). */
static erase_status_t nvtx_mark(cuda_stream_t *s, const char *label, int begin)
{
    nvtxDomainHandle_t dom = s->dev->nvtx;
    pthread_mutex_lock(&s->lock);
    erase_status_t st = ERASE_OK;
    if (begin) {
        if (s->nranges == s->ranges_cap) {
            size_t cap = s->ranges_cap ? 2 * s->ranges_cap : 16;
            cuda_range_t *r = realloc(s->ranges, cap * sizeof *r);
            if (!r) {
                st = ERASE_ERROR(ERASE_ERR_NOMEM, "trace: no memory for %zu NVTX ranges", cap);
                goto out;
            }
            s->ranges = r;
            s->ranges_cap = cap;
        }
        nvtxEventAttributes_t attr;
        memset(&attr, 0, sizeof attr);
        attr.version = NVTX_VERSION;
        attr.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
        attr.messageType = NVTX_MESSAGE_TYPE_ASCII;
        attr.message.ascii = label;
        s->ranges[s->nranges].label = label;
        s->ranges[s->nranges].id = nvtxDomainRangeStartEx(dom, &attr);
        s->nranges++;
    } else {
        for (size_t i = s->nranges; i-- > 0;)
            if (s->ranges[i].label == label || strcmp(s->ranges[i].label, label) == 0) {
                nvtxDomainRangeEnd(dom, s->ranges[i].id);
                memmove(&s->ranges[i], &s->ranges[i + 1], (s->nranges - i - 1) * sizeof *s->ranges);
                s->nranges--;
                break;
            }
    }
out:
    pthread_mutex_unlock(&s->lock);
    return st;
}

void cuda_trace_stream_closed(cuda_stream_t *s)
{
    pthread_mutex_lock(&s->lock);
    for (size_t i = 0; i < s->nranges; i++)
        nvtxDomainRangeEnd(s->dev->nvtx, s->ranges[i].id);
    s->nranges = 0;
    pthread_mutex_unlock(&s->lock);
}

erase_status_t cuda_stream_mark(erase_stream_t *stream, const char *label, int begin)
{
    cuda_stream_t *s = cuda_stream_of(stream);
    cuda_device_t *d = s->dev;
    ERASE_CHECK(cuda_use(d));
    ERASE_CHECK(nvtx_mark(s, label, begin));
    if (tracing(&d->base)) {
        erase_status_t st = ERASE_OK;
        enum cudaStreamCaptureStatus cs = cudaStreamCaptureStatusNone;
        unsigned long long id = 0;
        cudaError_t rc = cudaStreamGetCaptureInfo(s->s, &cs, &id, NULL, NULL, NULL, NULL);
        if (rc != cudaSuccess)
            return cuda_fail(__FILE__, __LINE__, rc, "cudaStreamGetCaptureInfo (trace mark)");
        int cap = cs != cudaStreamCaptureStatusNone;
        pthread_mutex_lock(&d->lock);
        cuda_mark_t m = { .label = label, .stream = s->base.number, .begin = begin,
                          .pooled = !cap, .capture = cap ? id : 0 };
        st = pool_get(d, &m.ev);
        if (st == ERASE_OK) {
            rc = cap ? cudaEventRecordWithFlags(m.ev, s->s, cudaEventRecordExternal)
                     : cudaEventRecord(m.ev, s->s);
            if (rc != cudaSuccess) {
                st = cuda_fail(__FILE__, __LINE__, rc,
                               cap ? "cudaEventRecordWithFlags (captured trace mark)"
                                   : "cudaEventRecord (trace mark)");
                pool_put(d, m.ev);
            } else {
                st = cuda_marks_push(cap ? &d->captured : &d->pending, &m);
                if (st != ERASE_OK)
                    pool_put(d, m.ev); /* recorded but never read: harmless */
            }
        }
        pthread_mutex_unlock(&d->lock);
        if (st != ERASE_OK) {
            erase_error_trail(__FILE__, __LINE__);
            return st;
        }
    }
    cuda_count(s);
    return ERASE_OK;
}

/* ---- captures and graphs ------------------------------------------------------ */

erase_status_t cuda_trace_capture_begin(cuda_device_t *d, unsigned long long id)
{
    pthread_mutex_lock(&d->lock);
    for (int i = 0; i < CUDA_MAX_CAPTURES; i++)
        if (d->active[i] == 0) {
            d->active[i] = id;
            d->broken[i] = 0;
            d->captures++;
            pthread_mutex_unlock(&d->lock);
            return ERASE_OK;
        }
    pthread_mutex_unlock(&d->lock);
    return ERASE_ERROR(ERASE_ERR_STATE, "begin_capture: too many captures in progress (at most %d)",
                       CUDA_MAX_CAPTURES);
}

void cuda_capture_break(cuda_device_t *d, unsigned long long id)
{
    pthread_mutex_lock(&d->lock);
    for (int i = 0; i < CUDA_MAX_CAPTURES; i++)
        if (id != 0 && d->active[i] == id)
            d->broken[i] = 1;
    pthread_mutex_unlock(&d->lock);
}

int cuda_capture_is_broken(cuda_device_t *d, unsigned long long id)
{
    int broken = 0;
    pthread_mutex_lock(&d->lock);
    for (int i = 0; i < CUDA_MAX_CAPTURES; i++)
        if (id != 0 && d->active[i] == id)
            broken = d->broken[i];
    pthread_mutex_unlock(&d->lock);
    return broken;
}

int cuda_capture_active(cuda_device_t *d, unsigned long long id)
{
    int found = 0;
    pthread_mutex_lock(&d->lock);
    for (int i = 0; i < CUDA_MAX_CAPTURES && !found; i++)
        found = id != 0 && d->active[i] == id;
    pthread_mutex_unlock(&d->lock);
    return found;
}

erase_status_t cuda_trace_capture_end(cuda_device_t *d, unsigned long long id, cuda_graph_t *g)
{
    erase_status_t st = ERASE_OK;
    pthread_mutex_lock(&d->lock);
    for (int i = 0; i < CUDA_MAX_CAPTURES; i++)
        if (d->active[i] == id) {
            d->active[i] = 0;
            d->broken[i] = 0;
            d->captures--;
            break;
        }
    size_t keep = 0;
    for (size_t i = 0; i < d->captured.n; i++) {
        cuda_mark_t m = d->captured.v[i];
        if (m.capture != id) {
            d->captured.v[keep++] = m;
            continue;
        }
        if (g && st == ERASE_OK) {
            st = cuda_marks_push(&g->marks, &m);
            if (st == ERASE_OK)
                continue;
        }
        /* failed capture (or no memory): the event was never a real record */
        pool_put(d, m.ev);
    }
    d->captured.n = keep;
    pthread_mutex_unlock(&d->lock);
    return st;
}

erase_status_t cuda_trace_graph_launched(cuda_device_t *d, cuda_graph_t *g)
{
    if (g->marks.n == 0 || !tracing(&d->base))
        return ERASE_OK;
    erase_status_t st = ERASE_OK;
    pthread_mutex_lock(&d->lock);
    for (size_t i = 0; i < g->marks.n && st == ERASE_OK; i++) {
        cuda_mark_t m = g->marks.v[i];
        m.pooled = 0; /* the graph (then the retired list) owns the event */
        m.capture = 0;
        st = cuda_marks_push(&d->pending, &m);
    }
    pthread_mutex_unlock(&d->lock);
    return st;
}

/* The graph's mark events may still be pending (or in flight): they move
 * to the retired list, destroyed when the device closes. */
void cuda_trace_graph_destroyed(cuda_device_t *d, cuda_graph_t *g)
{
    pthread_mutex_lock(&d->lock);
    for (size_t i = 0; i < g->marks.n; i++)
        if (events_push(&d->retired, &d->retired_n, &d->retired_cap, g->marks.v[i].ev) != 0)
            (void)cudaEventDestroy(g->marks.v[i].ev); /* a pending mark of it is then dropped */
    pthread_mutex_unlock(&d->lock);
    cuda_marks_free(&g->marks);
}

/* ---- drain ---------------------------------------------------------------------- */

/* A pending mark whose time cannot be read is counted as dropped. */
static void count_dropped(erase_device_t *dev)
{
    pthread_mutex_lock(&dev->trace_lock);
    dev->trace_dropped++;
    pthread_mutex_unlock(&dev->trace_lock);
}

void cuda_trace_flush(erase_device_t *dev)
{
    cuda_device_t *d = cuda_device(dev);
    if (cuda_use(d) != ERASE_OK)
        return;
    pthread_mutex_lock(&d->lock);
    if (d->captures > 0) {
        pthread_mutex_unlock(&d->lock);
        return;
    }
    size_t i = 0;
    for (; i < d->pending.n; i++) {
        cuda_mark_t *m = &d->pending.v[i];
        cudaError_t rc = cudaEventQuery(m->ev);
        if (rc == cudaErrorNotReady)
            break;
        float ms = 0.0f;
        if (rc == cudaSuccess)
            rc = cudaEventElapsedTime(&ms, d->base_ev, m->ev);
        if (rc == cudaSuccess) {
            erase_trace_record_t rec = { .label = m->label, .stream = m->stream,
                                         .begin = m->begin,
                                         .time_ns = d->base_ns + (int64_t)llround((double)ms * 1e6) };
            erase_device_trace_append(dev, &rec);
        } else {
            (void)cudaGetLastError();
            count_dropped(dev);
        }
        if (m->pooled)
            pool_put(d, m->ev);
    }
    if (i > 0) {
        memmove(d->pending.v, d->pending.v + i, (d->pending.n - i) * sizeof *d->pending.v);
        d->pending.n -= i;
    }
    if (rebase(d) != ERASE_OK)
        (void)cudaGetLastError(); /* keep the old base; the next drain tries again */
    pthread_mutex_unlock(&d->lock);
}
