/*
 * The CUDA device: opening a GPU, its description, device and pinned host
 * memory, blocking copies, the fault word, the error helpers of cuda.h and
 * the backend table.
 *
 * Blocking copies and fills (erase_memcpy_sync / erase_memset_sync) and the
 * fault word go through the device's private non-blocking stream (aux) and
 * a cudaStreamSynchronize of it: complete on return (cudaMemset alone is
 * asynchronous for device memory), they do not wait for the work of other
 * streams (the caller has ordered those, as device.h asks), and they never
 * touch the legacy default stream, which a capture on the calling thread
 * would forbid.
 */
#include "config.h"

#include "lib/device/cuda/cuda_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The root cause of erase_device_open(CUDA) on a machine without a usable
 * GPU starts with this text (tests/device/test-cuda.c checks it). */
#define NO_DEVICE_TEXT "no CUDA device visible: "

/* ---- errors (cuda.h) ------------------------------------------------------ */

/* Both helpers also reset the calling thread's last CUDA error
 * (cudaGetLastError), so that a reported, non-sticky failure is not found
 * again by the next ERASE_CUDA_CHECK_LAUNCH of an unrelated kernel. */
erase_status_t erase_cuda_error(const char *file, int line, cudaError_t err, const char *what)
{
    (void)cudaGetLastError();
    return erase_error_set(ERASE_ERR_BACKEND, file, line, "%s: %s: %s", what,
                           cudaGetErrorName(err), cudaGetErrorString(err));
}

erase_status_t cuda_fail(const char *file, int line, cudaError_t err, const char *what)
{
    (void)cudaGetLastError();
    switch (err) {
    case cudaErrorStreamCaptureUnsupported:
    case cudaErrorStreamCaptureInvalidated:
    case cudaErrorStreamCaptureMerge:
    case cudaErrorStreamCaptureUnmatched:
    case cudaErrorStreamCaptureUnjoined:
    case cudaErrorStreamCaptureIsolation:
    case cudaErrorStreamCaptureImplicit:
    case cudaErrorCapturedEvent:
    case cudaErrorStreamCaptureWrongThread:
        return erase_error_set(ERASE_ERR_STATE, file, line,
                               "%s: not allowed with this stream capture: %s: %s", what,
                               cudaGetErrorName(err), cudaGetErrorString(err));
    default:
        return erase_cuda_error(file, line, err, what);
    }
}

erase_status_t cuda_use(const cuda_device_t *d)
{
    int cur = -1;
    cudaError_t rc = cudaGetDevice(&cur);
    if (rc == cudaSuccess && cur == d->ordinal)
        return ERASE_OK;
    ERASE_CUDA_CHECK(cudaSetDevice(d->ordinal));
    return ERASE_OK;
}

erase_status_t cuda_capturing(cuda_stream_t *s, int *capturing)
{
    *capturing = 0;
    ERASE_CHECK(cuda_use(s->dev));
    enum cudaStreamCaptureStatus cs = cudaStreamCaptureStatusNone;
    cudaError_t rc = cudaStreamIsCapturing(s->s, &cs);
    if (rc != cudaSuccess)
        return cuda_fail(__FILE__, __LINE__, rc, "cudaStreamIsCapturing");
    *capturing = cs != cudaStreamCaptureStatusNone;
    return ERASE_OK;
}

erase_status_t erase_cuda_make_current(const erase_device_t *dev)
{
    if (!dev || dev->kind != ERASE_DEVICE_CUDA)
        return ERASE_ERROR(ERASE_ERR_INVALID, "erase_cuda_make_current: not a CUDA device");
    ERASE_CHECK(cuda_use((const cuda_device_t *)dev));
    return ERASE_OK;
}

int erase_cuda_ordinal(const erase_device_t *dev)
{
    return ((const cuda_device_t *)dev)->ordinal;
}

cudaStream_t erase_cuda_stream(const erase_stream_t *stream)
{
    if (!stream || stream->dev->kind != ERASE_DEVICE_CUDA)
        return NULL;
    return ((const cuda_stream_t *)stream)->s;
}

/* ---- the fault word ---------------------------------------------------------- */

const char *erase_cuda_fault_text(int code)
{
    switch (code) {
    case ERASE_CUDA_FAULT_NONE:
        return "no fault";
    case ERASE_CUDA_FAULT_SPARSE_PACK_CAPACITY:
        return "sparse pack: a table's row count is above the pack capacity";
    case ERASE_CUDA_FAULT_SPARSE_MERGE_COUNT:
        return "sparse merge: a pack's row count is outside [0, capacity]";
    case ERASE_CUDA_FAULT_CLASS_LABEL:
        return "softmax cross-entropy: a class label is outside [0, classes)";
    case ERASE_CUDA_FAULT_TOKEN:
        return "token embedding: a token is outside [0, vocab)";
    case ERASE_CUDA_FAULT_SHARD_ROUTE:
        return "shard route: a row's owner has no slot in [0, tmax), or the row is outside the bounds";
    case ERASE_CUDA_FAULT_GATHER_ROW:
        return "gather rows: an index is not below the source's rows";
    case ERASE_CUDA_FAULT_BAG_LENGTH:
        return "embedding bag: a sample's length of a field is outside [1, hotness]";
    case ERASE_CUDA_FAULT_SPARSE_SPLIT:
        return "sparse split: a row's owner has no slot, a row is outside the bounds, or a slot's "
               "rows are above the capacity";
    }
    return "unknown fault code";
}

int *erase_cuda_fault_word(const erase_stream_t *stream)
{
    return ((const cuda_stream_t *)stream)->dev->fault;
}

erase_status_t cuda_take_fault(cuda_device_t *d)
{
    ERASE_CHECK(cuda_use(d));
    pthread_mutex_lock(&d->fault_lock);
    erase_status_t st = ERASE_OK;
    cudaError_t rc = cudaMemcpyAsync(d->fault_host, d->fault, sizeof(int), cudaMemcpyDeviceToHost,
                                     d->aux);
    if (rc == cudaSuccess)
        rc = cudaStreamSynchronize(d->aux);
    if (rc != cudaSuccess) {
        st = erase_cuda_error(__FILE__, __LINE__, rc, "reading the device fault word");
        goto out;
    }
    int code = *d->fault_host;
    if (code != 0) {
        /* clear it only when set: the common path is one 4-byte read */
        rc = cudaMemsetAsync(d->fault, 0, sizeof(int), d->aux);
        if (rc == cudaSuccess)
            rc = cudaStreamSynchronize(d->aux);
        if (rc != cudaSuccess)
            st = erase_cuda_error(__FILE__, __LINE__, rc, "clearing the device fault word");
        else
            st = ERASE_ERROR(ERASE_ERR_INVALID, "a kernel reported fault %d: %s", code,
                             erase_cuda_fault_text(code));
    }
out:
    pthread_mutex_unlock(&d->fault_lock);
    return st;
}

erase_status_t erase_cuda_take_fault(erase_device_t *dev)
{
    if (!dev || dev->kind != ERASE_DEVICE_CUDA)
        return ERASE_ERROR(ERASE_ERR_INVALID, "erase_cuda_take_fault: not a CUDA device");
    ERASE_CHECK(cuda_take_fault(cuda_device(dev)));
    return ERASE_OK;
}

/* ---- device queries ----------------------------------------------------------- */

static void cuda_describe(const erase_device_t *dev, char *text, size_t size)
{
    snprintf(text, size, "%s", ((const cuda_device_t *)dev)->description);
}

/* Cores = streaming multiprocessors: the unit of parallel work a GPU
 * schedules, which is what callers divide among concurrent streams. */
static int cuda_cores(const erase_device_t *dev)
{
    int sms = ((const cuda_device_t *)dev)->sms;
    return sms > 0 ? sms : 1;
}

/* cuBLAS has no host threads to set: 1, and any n >= 1 is accepted as a
 * no-op (device.c has rejected n < 1), so schedules that divide BLAS
 * threads among streams run unchanged on a GPU. */
static int cuda_blas_threads(const erase_device_t *dev) { return 1; }
static erase_status_t cuda_set_blas_threads(erase_device_t *dev, int n) { return ERASE_OK; }

/* ---- memory ---------------------------------------------------------------- */

/* cudaMalloc's allocation granule: bytes == 0 still gets a unique pointer. */
#define CUDA_MIN_ALLOC 256

static erase_status_t cuda_malloc(erase_device_t *dev, size_t bytes, void **ptr)
{
    cuda_device_t *d = cuda_device(dev);
    *ptr = NULL;
    ERASE_CHECK(cuda_use(d));
    cudaError_t rc = cudaMalloc(ptr, bytes ? bytes : CUDA_MIN_ALLOC);
    if (rc != cudaSuccess) {
        *ptr = NULL;
        if (rc == cudaErrorMemoryAllocation)
            return ERASE_ERROR(ERASE_ERR_NOMEM, "cudaMalloc of %zu bytes on cuda:%d: %s", bytes,
                               d->ordinal, cudaGetErrorString(rc));
        return cuda_fail(__FILE__, __LINE__, rc, "cudaMalloc");
    }
    return ERASE_OK;
}

/* cudaFree synchronizes the device; its error (a sticky one from earlier
 * work) is reported by the next synchronize, so it is not lost here. */
static void cuda_free(erase_device_t *dev, void *ptr)
{
    if (cuda_use(cuda_device(dev)) == ERASE_OK)
        (void)cudaFree(ptr);
}

static erase_status_t cuda_host_alloc(erase_device_t *dev, size_t bytes, void **ptr)
{
    cuda_device_t *d = cuda_device(dev);
    *ptr = NULL;
    ERASE_CHECK(cuda_use(d));
    cudaError_t rc = cudaMallocHost(ptr, bytes ? bytes : 64);
    if (rc != cudaSuccess) {
        *ptr = NULL;
        if (rc == cudaErrorMemoryAllocation)
            return ERASE_ERROR(ERASE_ERR_NOMEM, "cudaMallocHost of %zu bytes: %s", bytes,
                               cudaGetErrorString(rc));
        return cuda_fail(__FILE__, __LINE__, rc, "cudaMallocHost");
    }
    return ERASE_OK;
}

static void cuda_host_free(erase_device_t *dev, void *ptr)
{
    if (cuda_use(cuda_device(dev)) == ERASE_OK)
        (void)cudaFreeHost(ptr);
}

static erase_status_t cuda_memcpy_sync(erase_device_t *dev, void *dst, const void *src, size_t bytes)
{
    cuda_device_t *d = cuda_device(dev);
    ERASE_CHECK(cuda_use(d));
    CUDA_TRY(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, d->aux));
    CUDA_TRY(cudaStreamSynchronize(d->aux));
    return ERASE_OK;
}

static erase_status_t cuda_memset_sync(erase_device_t *dev, void *dst, int value, size_t bytes)
{
    cuda_device_t *d = cuda_device(dev);
    ERASE_CHECK(cuda_use(d));
    CUDA_TRY(cudaMemsetAsync(dst, value, bytes, d->aux));
    CUDA_TRY(cudaStreamSynchronize(d->aux));
    return ERASE_OK;
}

/* ---- open / close ------------------------------------------------------------ */

/* Release what open made; safe on a partly opened device. */
static void device_release(cuda_device_t *d)
{
    if (cuda_use(d) == ERASE_OK) {
        cuda_trace_close(d);
        if (d->aux)
            (void)cudaStreamSynchronize(d->aux);
        if (d->fault)
            (void)cudaFree(d->fault);
        if (d->fault_host)
            (void)cudaFreeHost(d->fault_host);
        if (d->aux)
            (void)cudaStreamDestroy(d->aux);
    }
    pthread_mutex_destroy(&d->lock);
    pthread_mutex_destroy(&d->fault_lock);
    free(d);
}

static void cuda_close(erase_device_t *dev) { device_release(cuda_device(dev)); }

static void version_text(int v, char *text, size_t size)
{
    snprintf(text, size, "%d.%d", v / 1000, (v % 1000) / 10);
}

static const erase_backend_t cuda_backend;

/* Fill the description line; needs the device current. */
static erase_status_t describe_init(cuda_device_t *d, const char *math_name)
{
    struct cudaDeviceProp prop;
    CUDA_TRY(cudaGetDeviceProperties(&prop, d->ordinal));
    int rt = 0, drv = 0, bmaj = 0, bmin = 0, bpatch = 0;
    CUDA_TRY(cudaRuntimeGetVersion(&rt));
    CUDA_TRY(cudaDriverGetVersion(&drv));
    cublasStatus_t bs = cublasGetProperty(MAJOR_VERSION, &bmaj);
    if (bs == CUBLAS_STATUS_SUCCESS)
        bs = cublasGetProperty(MINOR_VERSION, &bmin);
    if (bs == CUBLAS_STATUS_SUCCESS)
        bs = cublasGetProperty(PATCH_LEVEL, &bpatch);
    if (bs != CUBLAS_STATUS_SUCCESS)
        return ERASE_ERROR(ERASE_ERR_BACKEND, "cublasGetProperty: %s", cublasGetStatusString(bs));
    d->sms = prop.multiProcessorCount;
    d->cc_major = prop.major;
    d->cc_minor = prop.minor;
    char rts[16], drvs[16];
    version_text(rt, rts, sizeof rts);
    version_text(drv, drvs, sizeof drvs);
    snprintf(d->description, sizeof d->description,
             "cuda:%d %s, %d SMs, %.1f GiB, compute %d.%d, CUDA runtime %s / driver %s, "
             "cuBLAS %d.%d.%d (%s math)",
             d->ordinal, prop.name, prop.multiProcessorCount,
             (double)prop.totalGlobalMem / (1024.0 * 1024.0 * 1024.0), prop.major, prop.minor, rts,
             drvs, bmaj, bmin, bpatch, math_name);
    return ERASE_OK;
}

erase_status_t erase_cuda_device_open(const erase_device_options_t *options, erase_device_t **out)
{
    int count = 0;
    cudaError_t rc = cudaGetDeviceCount(&count);
    if (rc != cudaSuccess)
        return ERASE_ERROR(ERASE_ERR_UNSUPPORTED, NO_DEVICE_TEXT "cudaGetDeviceCount: %s: %s",
                           cudaGetErrorName(rc), cudaGetErrorString(rc));
    if (count == 0)
        return ERASE_ERROR(ERASE_ERR_UNSUPPORTED, NO_DEVICE_TEXT "cudaGetDeviceCount found 0 GPUs");
    if (options->ordinal < 0 || options->ordinal >= count)
        return ERASE_ERROR(ERASE_ERR_INVALID, "CUDA device ordinal %d is out of range: %d GPU%s visible",
                           options->ordinal, count, count == 1 ? "" : "s");

    cuda_device_t *d = calloc(1, sizeof *d);
    if (!d)
        return ERASE_ERROR(ERASE_ERR_NOMEM, "cuda device: no memory");
    d->base.backend = &cuda_backend;
    d->base.kind = ERASE_DEVICE_CUDA;
    d->ordinal = options->ordinal;
    d->gemm = options->gemm;
    pthread_mutex_init(&d->lock, NULL);
    pthread_mutex_init(&d->fault_lock, NULL);
    erase_status_t st;
    rc = cudaSetDevice(d->ordinal);
    if (rc != cudaSuccess) {
        st = erase_cuda_error(__FILE__, __LINE__, rc, "cudaSetDevice");
        goto fail;
    }
    ERASE_CHECK_GOTO(describe_init(d, erase_gemm_precision_name(d->gemm)), st, fail);
    /* cuBLAS's recommended workspace: 32 MiB on Hopper and newer, 4 MiB before */
    d->workspace_bytes = (size_t)(d->cc_major >= 9 ? 32 : 4) << 20;
    rc = cudaStreamCreateWithFlags(&d->aux, cudaStreamNonBlocking);
    if (rc == cudaSuccess)
        rc = cudaMalloc((void **)&d->fault, sizeof(int));
    if (rc == cudaSuccess)
        rc = cudaMallocHost((void **)&d->fault_host, sizeof(int));
    if (rc == cudaSuccess)
        rc = cudaMemsetAsync(d->fault, 0, sizeof(int), d->aux);
    if (rc == cudaSuccess)
        rc = cudaStreamSynchronize(d->aux);
    if (rc != cudaSuccess) {
        st = erase_cuda_error(__FILE__, __LINE__, rc, "cuda device: private stream and fault word");
        goto fail;
    }
    ERASE_CHECK_GOTO(cuda_trace_open(d), st, fail);
    *out = &d->base;
    return ERASE_OK;
fail:
    device_release(d);
    return st;
}

static const erase_backend_t cuda_backend = {
    .name = "cuda",
    .close = cuda_close,
    .describe = cuda_describe,
    .cores = cuda_cores,
    .blas_threads = cuda_blas_threads,
    .set_blas_threads = cuda_set_blas_threads,
    .malloc = cuda_malloc,
    .free = cuda_free,
    .memcpy_async = cuda_memcpy_async,
    .memset_async = cuda_memset_async,
    .memcpy2d_async = cuda_memcpy2d_async,
    .host_accessible = 0,
    .memcpy_sync = cuda_memcpy_sync,
    .memset_sync = cuda_memset_sync,
    .host_alloc = cuda_host_alloc,
    .host_free = cuda_host_free,
    .stream_create = cuda_stream_create,
    .stream_destroy = cuda_stream_destroy,
    .stream_synchronize = cuda_stream_synchronize,
    .stream_enqueued = cuda_stream_enqueued,
    .stream_error = cuda_stream_error,
    .event_create = cuda_event_create,
    .event_destroy = cuda_event_destroy,
    .event_record = cuda_event_record,
    .stream_wait_event = cuda_stream_wait_event,
    .event_synchronize = cuda_event_synchronize,
    .event_query = cuda_event_query,
    .event_elapsed_ms = cuda_event_elapsed_ms,
    .begin_capture = cuda_begin_capture,
    .end_capture = cuda_end_capture,
    .is_capturing = cuda_is_capturing,
    .graph_launch = cuda_graph_launch,
    .graph_node_count = cuda_graph_node_count,
    .graph_destroy = cuda_graph_destroy,
    .mark = cuda_stream_mark,
    .trace_flush = cuda_trace_flush,
    .sgemm_strided_batched = cuda_sgemm_strided_batched,
};
