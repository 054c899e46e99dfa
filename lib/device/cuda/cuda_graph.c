/*
 * CUDA graphs by stream capture.
 *
 * Capture mode: cudaStreamCaptureModeThreadLocal. The mode does not limit
 * which threads may issue work to a capturing stream (any thread may; the
 * scheduler issues a captured plan from the thread that began the capture,
 * lib/sched/sched.c graph mode, and async mode never captures); it limits
 * which threads are forbidden the "unsafe" calls (cudaMalloc, legacy-stream
 * synchronization...) that would break the capture. Global would make an
 * unrelated thread of the process (the data reader allocating pinned
 * staging memory, a comm watchdog) invalidate a capture on the main
 * thread; ThreadLocal forbids them only on the capturing thread, where they
 * are real mistakes; Relaxed would let those mistakes pass silently.
 *
 * A CUDA graph replays everything on the launch stream: the work captured
 * from side streams runs as branches of the one graph launch, not on the
 * side streams themselves (the CPU backend replays it on them). Both give
 * the captured dependencies; only the stream that later work must wait on
 * differs, and device.h's contract (the launch stream waits for all of
 * the graph) holds on both.
 */
#include "config.h"

#include "lib/device/cuda/cuda_internal.h"

#include <stdlib.h>

erase_status_t cuda_begin_capture(erase_stream_t *stream)
{
    cuda_stream_t *s = cuda_stream_of(stream);
    int cap;
    ERASE_CHECK(cuda_capturing(s, &cap));
    if (cap)
        return ERASE_ERROR(ERASE_ERR_STATE, "begin_capture: stream %d is already capturing",
                           s->base.number);
    CUDA_TRY(cudaStreamBeginCapture(s->s, cudaStreamCaptureModeThreadLocal));
    enum cudaStreamCaptureStatus cs = cudaStreamCaptureStatusNone;
    unsigned long long id = 0;
    cudaError_t rc = cudaStreamGetCaptureInfo(s->s, &cs, &id, NULL, NULL, NULL, NULL);
    if (rc != cudaSuccess || cs != cudaStreamCaptureStatusActive) {
        cudaGraph_t g = NULL;
        if (cudaStreamEndCapture(s->s, &g) == cudaSuccess && g)
            (void)cudaGraphDestroy(g);
        if (rc != cudaSuccess)
            return cuda_fail(__FILE__, __LINE__, rc, "cudaStreamGetCaptureInfo");
        return ERASE_ERROR(ERASE_ERR_BACKEND, "begin_capture: the capture did not start (status %d)",
                           (int)cs);
    }
    erase_status_t st2 = cuda_trace_capture_begin(s->dev, id);
    if (st2 != ERASE_OK) {
        cudaGraph_t g = NULL;
        if (cudaStreamEndCapture(s->s, &g) == cudaSuccess && g)
            (void)cudaGraphDestroy(g);
        return st2;
    }
    s->capture_id = id;
    return ERASE_OK;
}

erase_status_t cuda_end_capture(erase_stream_t *stream, erase_graph_t **out)
{
    cuda_stream_t *s = cuda_stream_of(stream);
    cuda_device_t *d = s->dev;
    ERASE_CHECK(cuda_use(d));
    if (!s->capture_id)
        return ERASE_ERROR(ERASE_ERR_STATE,
                           "end_capture: stream %d did not begin a capture (only the origin "
                           "stream ends it)",
                           s->base.number);
    unsigned long long id = s->capture_id;
    s->capture_id = 0;
    cudaGraph_t graph = NULL;
    cudaError_t rc = cudaStreamEndCapture(s->s, &graph);
    if (rc != cudaSuccess || !graph) {
        if (graph)
            (void)cudaGraphDestroy(graph);
        (void)cuda_trace_capture_end(d, id, NULL);
        if (rc == cudaErrorStreamCaptureUnjoined) {
            (void)cudaGetLastError();
            return ERASE_ERROR(ERASE_ERR_STATE,
                               "end_capture: a stream that joined the capture was not joined back "
                               "into the origin (the origin must wait on an event recorded after "
                               "that stream's last operation); the capture is discarded (%s)",
                               cudaGetErrorName(rc));
        }
        if (rc == cudaErrorStreamCaptureInvalidated) {
            (void)cudaGetLastError();
            return ERASE_ERROR(ERASE_ERR_STATE,
                               "end_capture: the capture was invalidated by an operation that is "
                               "not allowed while capturing (an earlier call returned the "
                               "error); the capture is discarded (%s)",
                               cudaGetErrorName(rc));
        }
        if (rc == cudaSuccess)
            return ERASE_ERROR(ERASE_ERR_BACKEND, "cudaStreamEndCapture returned no graph");
        return cuda_fail(__FILE__, __LINE__, rc, "cudaStreamEndCapture");
    }
    if (cuda_capture_is_broken(d, id)) {
        (void)cudaGraphDestroy(graph);
        (void)cuda_trace_capture_end(d, id, NULL);
        return ERASE_ERROR(ERASE_ERR_STATE,
                           "end_capture: the capture was invalidated: a call inside it was refused "
                           "(a stream waited on an event recorded outside this capture); the "
                           "capture is discarded");
    }
    erase_status_t st = ERASE_OK;
    cuda_graph_t *g = calloc(1, sizeof *g);
    if (!g) {
        (void)cudaGraphDestroy(graph);
        (void)cuda_trace_capture_end(d, id, NULL);
        return ERASE_ERROR(ERASE_ERR_NOMEM, "end_capture: no memory for the graph");
    }
    g->base.dev = &d->base;
    g->graph = graph;
    rc = cudaGraphGetNodes(graph, NULL, &g->nodes);
    if (rc == cudaSuccess)
        rc = cudaGraphInstantiate(&g->exec, graph, 0);
    if (rc != cudaSuccess) {
        st = cuda_fail(__FILE__, __LINE__, rc, "cudaGraphInstantiate of the captured graph");
        g->exec = NULL;
        (void)cuda_trace_capture_end(d, id, NULL);
        (void)cudaGraphDestroy(graph);
        free(g);
        return st;
    }
    st = cuda_trace_capture_end(d, id, g);
    if (st != ERASE_OK) {
        erase_error_trail(__FILE__, __LINE__);
        cuda_graph_destroy(&g->base);
        return st;
    }
    *out = &g->base;
    return ERASE_OK;
}

int cuda_is_capturing(const erase_stream_t *stream)
{
    int cap = 0;
    return cuda_capturing((cuda_stream_t *)stream, &cap) == ERASE_OK && cap;
}

erase_status_t cuda_graph_launch(erase_graph_t *graph, erase_stream_t *stream)
{
    cuda_graph_t *g = cuda_graph_of(graph);
    cuda_stream_t *s = cuda_stream_of(stream);
    int cap;
    ERASE_CHECK(cuda_capturing(s, &cap));
    if (cap) /* CUDA would nest it as a child graph; the CPU backend refuses: so do we */
        return ERASE_ERROR(ERASE_ERR_STATE, "graph launch into a capturing stream is not supported");
    CUDA_TRY(cudaGraphLaunch(g->exec, s->s));
    cuda_count(s);
    ERASE_CHECK(cuda_trace_graph_launched(s->dev, g));
    return ERASE_OK;
}

/* The CUDA graph's node count (kernels, copies, fills, GEMM kernels,
 * marker event records); event records and waits between captured streams
 * are edges, not nodes, so the count differs from the CPU backend's. */
size_t cuda_graph_node_count(const erase_graph_t *graph)
{
    return ((const cuda_graph_t *)graph)->nodes;
}

void cuda_graph_destroy(erase_graph_t *graph)
{
    cuda_graph_t *g = cuda_graph_of(graph);
    cuda_device_t *d = cuda_device(graph->dev);
    if (cuda_use(d) == ERASE_OK) {
        if (g->exec)
            (void)cudaGraphExecDestroy(g->exec);
        if (g->graph)
            (void)cudaGraphDestroy(g->graph);
    }
    cuda_trace_graph_destroyed(d, g);
    free(g);
}
