/*
 * CUDA streams, events and asynchronous copies.
 *
 * A stream is a cudaStream_t created non-blocking (it never synchronizes
 * with the legacy default stream) with its own cuBLAS handle bound to it,
 * its own cuBLAS workspace (set explicitly: GEMMs captured into graphs then
 * use that memory instead of cuBLAS allocating a workspace per capture, and
 * concurrent streams never share one, which keeps results bitwise
 * reproducible), host pointer mode and the device's math mode.
 *
 * An event is a cudaEvent_t created with timing (default flags), so that
 * erase_event_elapsed_ms works on any pair; timing events cost slightly
 * more to record than cudaEventDisableTiming ones, which does not matter at
 * the scale of the ops they fence. Two flags complete CUDA's semantics:
 * `recorded` (elapsed time of an event never recorded is ERASE_ERR_INVALID,
 * where CUDA would answer with a resource-handle error) and `in_capture`
 * (the last record was inside a stream capture: the host may not wait on,
 * query or time it, ERASE_ERR_STATE as on the CPU backend).
 */
#include "config.h"

#include "lib/device/cuda/cuda_internal.h"

#include <stdlib.h>
#include <string.h>

/* ---- streams ---------------------------------------------------------------- */

#define CUBLAS_TRY(call, what)                                                      \
    do {                                                                            \
        cublasStatus_t cublas_try_rc_ = (call);                                     \
        if (cublas_try_rc_ != CUBLAS_STATUS_SUCCESS) {                              \
            st = ERASE_ERROR(ERASE_ERR_BACKEND, "%s: %s", (what),                   \
                             cublasGetStatusString(cublas_try_rc_));                \
            goto fail;                                                              \
        }                                                                           \
    } while (0)

/* Release a partly created stream (every field may be unset). */
static void stream_release(cuda_stream_t *s)
{
    if (s->blas)
        (void)cublasDestroy(s->blas);
    if (s->workspace)
        (void)cudaFree(s->workspace);
    if (s->s)
        (void)cudaStreamDestroy(s->s);
    pthread_mutex_destroy(&s->lock);
    free(s->ranges);
    free(s);
}

erase_status_t cuda_stream_create(erase_device_t *dev, erase_stream_t **out)
{
    cuda_device_t *d = cuda_device(dev);
    ERASE_CHECK(cuda_use(d));
    cuda_stream_t *s = calloc(1, sizeof *s);
    if (!s)
        return ERASE_ERROR(ERASE_ERR_NOMEM, "stream: no memory");
    s->base.dev = dev;
    s->dev = d;
    atomic_init(&s->enqueued, 0);
    pthread_mutex_init(&s->lock, NULL);
    erase_status_t st = ERASE_OK;
    cudaError_t rc = cudaStreamCreateWithFlags(&s->s, cudaStreamNonBlocking);
    if (rc != cudaSuccess) {
        s->s = NULL;
        st = erase_cuda_error(__FILE__, __LINE__, rc, "cudaStreamCreateWithFlags");
        goto fail;
    }
    rc = cudaMalloc(&s->workspace, d->workspace_bytes);
    if (rc != cudaSuccess) {
        s->workspace = NULL;
        st = erase_cuda_error(__FILE__, __LINE__, rc, "cudaMalloc (cuBLAS workspace)");
        goto fail;
    }
    CUBLAS_TRY(cublasCreate(&s->blas), "cublasCreate");
    CUBLAS_TRY(cublasSetStream(s->blas, s->s), "cublasSetStream");
    CUBLAS_TRY(cublasSetWorkspace(s->blas, s->workspace, d->workspace_bytes), "cublasSetWorkspace");
    CUBLAS_TRY(cublasSetPointerMode(s->blas, CUBLAS_POINTER_MODE_HOST), "cublasSetPointerMode");
    /* strict fp32 unless a GEMM asks for tensor cores by its compute type */
    CUBLAS_TRY(cublasSetMathMode(s->blas, CUBLAS_DEFAULT_MATH), "cublasSetMathMode");
    *out = &s->base;
    return ERASE_OK;
fail:
    stream_release(s);
    return st;
}

/* Waits for the stream's work (as device.h asks), then releases it. A
 * capture still open on it is ended and its graph dropped. */
void cuda_stream_destroy(erase_stream_t *stream)
{
    cuda_stream_t *s = cuda_stream_of(stream);
    if (cuda_use(s->dev) == ERASE_OK) {
        int cap = 0;
        (void)cuda_capturing(s, &cap); /* a failed query: nothing to end */
        if (cap) {
            cudaGraph_t g = NULL;
            if (cudaStreamEndCapture(s->s, &g) == cudaSuccess && g)
                (void)cudaGraphDestroy(g);
            if (s->capture_id) {
                (void)cuda_trace_capture_end(s->dev, s->capture_id, NULL);
                s->capture_id = 0;
            }
        }
        (void)cudaStreamSynchronize(s->s);
    }
    cuda_trace_stream_closed(s);
    stream_release(s);
}

erase_status_t cuda_stream_synchronize(erase_stream_t *stream)
{
    cuda_stream_t *s = cuda_stream_of(stream);
    int cap;
    ERASE_CHECK(cuda_capturing(s, &cap));
    if (cap)
        return ERASE_ERROR(ERASE_ERR_STATE,
                           "stream synchronize is not allowed while the stream is capturing");
    cudaError_t rc = cudaStreamSynchronize(s->s);
    if (rc != cudaSuccess)
        return erase_error_set(ERASE_ERR_BACKEND, __FILE__, __LINE__,
                               "an operation on stream %d failed: %s: %s", s->base.number,
                               cudaGetErrorName(rc), cudaGetErrorString(rc));
    ERASE_CHECK(cuda_take_fault(s->dev));
    return ERASE_OK;
}

/* cudaStreamQuery: not ready is no error; a failure of this stream's work
 * (or a sticky one of the context) is, and so is a device-side fault. */
erase_status_t cuda_stream_error(erase_stream_t *stream)
{
    cuda_stream_t *s = cuda_stream_of(stream);
    cudaError_t rc = cudaStreamQuery(s->s);
    if (rc != cudaSuccess && rc != cudaErrorNotReady)
        return erase_error_set(ERASE_ERR_BACKEND, __FILE__, __LINE__,
                               "an operation on stream %d failed: %s: %s", s->base.number,
                               cudaGetErrorName(rc), cudaGetErrorString(rc));
    ERASE_CHECK(cuda_take_fault(s->dev));
    return ERASE_OK;
}

/* Operations issued to the stream: copies, fills, GEMMs, markers, event
 * records and waits, each counted once when issued (inside a capture too),
 * a graph launch counted once. */
uint64_t cuda_stream_enqueued(const erase_stream_t *stream)
{
    return atomic_load(&((const cuda_stream_t *)stream)->enqueued);
}

erase_status_t cuda_memcpy_async(erase_stream_t *stream, void *dst, const void *src, size_t bytes)
{
    cuda_stream_t *s = cuda_stream_of(stream);
    ERASE_CHECK(cuda_use(s->dev));
    if (bytes)
        CUDA_TRY(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, s->s));
    cuda_count(s);
    return ERASE_OK;
}

erase_status_t cuda_memcpy2d_async(erase_stream_t *stream, void *dst, size_t dpitch, const void *src, size_t spitch,
                                   size_t width, size_t rows)
{
    cuda_stream_t *s = cuda_stream_of(stream);
    ERASE_CHECK(cuda_use(s->dev));
    CUDA_TRY(cudaMemcpy2DAsync(dst, dpitch, src, spitch, width, rows, cudaMemcpyDefault, s->s));
    cuda_count(s);
    return ERASE_OK;
}

erase_status_t cuda_memset_async(erase_stream_t *stream, void *dst, int value, size_t bytes)
{
    cuda_stream_t *s = cuda_stream_of(stream);
    ERASE_CHECK(cuda_use(s->dev));
    if (bytes)
        CUDA_TRY(cudaMemsetAsync(dst, value, bytes, s->s));
    cuda_count(s);
    return ERASE_OK;
}

/* ---- events ----------------------------------------------------------------- */

erase_status_t cuda_event_create(erase_device_t *dev, erase_event_t **out)
{
    cuda_device_t *d = cuda_device(dev);
    ERASE_CHECK(cuda_use(d));
    cuda_event_t *e = calloc(1, sizeof *e);
    if (!e)
        return ERASE_ERROR(ERASE_ERR_NOMEM, "event: no memory");
    e->base.dev = dev;
    atomic_init(&e->recorded, 0);
    atomic_init(&e->in_capture, 0);
    atomic_init(&e->capture_id, 0ULL);
    cudaError_t rc = cudaEventCreate(&e->ev);
    if (rc != cudaSuccess) {
        free(e);
        return erase_cuda_error(__FILE__, __LINE__, rc, "cudaEventCreate");
    }
    *out = &e->base;
    return ERASE_OK;
}

/* cudaEventDestroy on an event not yet reached returns at once; CUDA frees
 * it when the device reaches it. */
void cuda_event_destroy(erase_event_t *event)
{
    cuda_event_t *e = cuda_event_of(event);
    if (cuda_use(cuda_device(event->dev)) == ERASE_OK)
        (void)cudaEventDestroy(e->ev);
    free(e);
}

erase_status_t cuda_event_record(erase_event_t *event, erase_stream_t *stream)
{
    cuda_event_t *e = cuda_event_of(event);
    cuda_stream_t *s = cuda_stream_of(stream);
    ERASE_CHECK(cuda_use(s->dev));
    enum cudaStreamCaptureStatus cs = cudaStreamCaptureStatusNone;
    unsigned long long id = 0;
    CUDA_TRY(cudaStreamGetCaptureInfo(s->s, &cs, &id, NULL, NULL, NULL, NULL));
    int cap = cs != cudaStreamCaptureStatusNone;
    /* inside a capture the record is a dependency point of the graph (for
     * the waits that fork and join streams), not a timestamp */
    CUDA_TRY(cudaEventRecord(e->ev, s->s));
    atomic_store(&e->capture_id, cap ? id : 0ULL);
    atomic_store(&e->in_capture, cap);
    if (!cap)
        atomic_store(&e->recorded, 1);
    cuda_count(s);
    return ERASE_OK;
}

erase_status_t cuda_stream_wait_event(erase_stream_t *stream, erase_event_t *event)
{
    cuda_event_t *e = cuda_event_of(event);
    cuda_stream_t *s = cuda_stream_of(stream);
    if (!atomic_load(&e->recorded) && !atomic_load(&e->in_capture))
        return ERASE_OK; /* never recorded: already reached (capturing or not) */
    if (atomic_load(&e->in_capture) && !cuda_capture_active(s->dev, atomic_load(&e->capture_id)))
        return ERASE_ERROR(ERASE_ERR_STATE,
                           "stream wait: the event was last recorded inside a stream capture that "
                           "has ended; only its graph can use it");
    ERASE_CHECK(cuda_use(s->dev));
    if (!atomic_load(&e->in_capture)) {
        /* recorded outside every capture: a capturing stream may not wait
         * on it (device.h); the capture is broken, as on the CPU backend */
        enum cudaStreamCaptureStatus cs = cudaStreamCaptureStatusNone;
        unsigned long long id = 0;
        CUDA_TRY(cudaStreamGetCaptureInfo(s->s, &cs, &id, NULL, NULL, NULL, NULL));
        if (cs != cudaStreamCaptureStatusNone) {
            cuda_capture_break(s->dev, id);
            return ERASE_ERROR(ERASE_ERR_STATE,
                               "stream wait inside a capture on an event recorded outside this "
                               "capture; the capture is invalidated");
        }
    }
    /* other capture errors (e.g. an event of another capture) come from
     * CUDA as cudaErrorStreamCapture*: ERASE_ERR_STATE */
    CUDA_TRY(cudaStreamWaitEvent(s->s, e->ev, cudaEventWaitDefault));
    cuda_count(s);
    return ERASE_OK;
}

static erase_status_t not_in_capture(cuda_event_t *e, const char *what)
{
    if (atomic_load(&e->in_capture))
        return ERASE_ERROR(ERASE_ERR_STATE,
                           "%s: the event was last recorded inside a stream capture; the host "
                           "cannot wait on it",
                           what);
    return ERASE_OK;
}

erase_status_t cuda_event_synchronize(erase_event_t *event)
{
    cuda_event_t *e = cuda_event_of(event);
    ERASE_CHECK(not_in_capture(e, "event synchronize"));
    ERASE_CHECK(cuda_use(cuda_device(event->dev)));
    CUDA_TRY(cudaEventSynchronize(e->ev)); /* never recorded: returns at once */
    return ERASE_OK;
}

erase_status_t cuda_event_query(erase_event_t *event)
{
    cuda_event_t *e = cuda_event_of(event);
    ERASE_CHECK(not_in_capture(e, "event query"));
    ERASE_CHECK(cuda_use(cuda_device(event->dev)));
    cudaError_t rc = cudaEventQuery(e->ev);
    if (rc == cudaSuccess)
        return ERASE_OK;
    if (rc == cudaErrorNotReady)
        return ERASE_ERR_NOT_READY;
    return cuda_fail(__FILE__, __LINE__, rc, "cudaEventQuery");
}

erase_status_t cuda_event_elapsed_ms(erase_event_t *start, erase_event_t *end, double *ms)
{
    cuda_event_t *a = cuda_event_of(start), *b = cuda_event_of(end);
    ERASE_CHECK(not_in_capture(a, "elapsed time (start event)"));
    ERASE_CHECK(not_in_capture(b, "elapsed time (end event)"));
    if (!atomic_load(&a->recorded))
        return ERASE_ERROR(ERASE_ERR_INVALID, "elapsed time: the start event was never recorded");
    if (!atomic_load(&b->recorded))
        return ERASE_ERROR(ERASE_ERR_INVALID, "elapsed time: the end event was never recorded");
    ERASE_CHECK(cuda_use(cuda_device(start->dev)));
    float t = 0.0f;
    cudaError_t rc = cudaEventElapsedTime(&t, a->ev, b->ev);
    if (rc == cudaErrorNotReady)
        return ERASE_ERR_NOT_READY;
    if (rc != cudaSuccess)
        return cuda_fail(__FILE__, __LINE__, rc, "cudaEventElapsedTime");
    *ms = t;
    return ERASE_OK;
}
