/* Public device entry points: argument checks, then dispatch to the backend. */
#include "config.h"

#include "lib/device/backend.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define BACKEND(obj) ((obj)->dev->backend)

#define REQUIRE(cond, ...)                                   \
    do {                                                     \
        if (!(cond))                                         \
            return ERASE_ERROR(ERASE_ERR_INVALID, __VA_ARGS__); \
    } while (0)

erase_device_options_t erase_device_options_default(void)
{
    erase_device_options_t o = { .kind = ERASE_DEVICE_CPU, .blas_threads = 0, .cores = 0,
                                 .ordinal = 0 };
    return o;
}

const char *erase_gemm_precision_name(erase_gemm_precision_t p)
{
    return p == ERASE_GEMM_TF32 ? "tf32" : p == ERASE_GEMM_BF16 ? "bf16" : "fp32";
}

int erase_gemm_precision_parse(const char *name, erase_gemm_precision_t *out)
{
    static const erase_gemm_precision_t all[] = { ERASE_GEMM_FP32, ERASE_GEMM_TF32, ERASE_GEMM_BF16 };
    for (size_t i = 0; name && i < sizeof all / sizeof all[0]; i++)
        if (!strcmp(name, erase_gemm_precision_name(all[i]))) {
            *out = all[i];
            return 0;
        }
    return -1;
}

erase_status_t erase_device_open(const erase_device_options_t *options, erase_device_t **out)
{
    REQUIRE(out != NULL, "erase_device_open: out is NULL");
    *out = NULL;
    erase_device_options_t o = options ? *options : erase_device_options_default();
    REQUIRE(o.blas_threads >= 0, "erase_device_open: blas_threads %d < 0", o.blas_threads);
    REQUIRE(o.cores >= 0, "erase_device_open: cores %d < 0", o.cores);
    REQUIRE(o.gemm >= ERASE_GEMM_FP32 && o.gemm <= ERASE_GEMM_BF16,
            "erase_device_open: unknown GEMM precision %d", (int)o.gemm);
    switch (o.kind) {
    case ERASE_DEVICE_CPU:
        if (o.gemm != ERASE_GEMM_FP32)
            return ERASE_ERROR(ERASE_ERR_UNSUPPORTED,
                               "the CPU backend computes GEMMs in fp32 only, not %s (tf32 and "
                               "bf16 are tensor-core modes of the CUDA backend)",
                               erase_gemm_precision_name(o.gemm));
        ERASE_CHECK(erase_cpu_device_open(&o, out));
        pthread_mutex_init(&(*out)->trace_lock, NULL);
        return ERASE_OK;
    case ERASE_DEVICE_CUDA:
#ifdef HAVE_CUDA
        ERASE_CHECK(erase_cuda_device_open(&o, out));
        pthread_mutex_init(&(*out)->trace_lock, NULL);
        return ERASE_OK;
#else
        return ERASE_ERROR(ERASE_ERR_UNSUPPORTED,
                           "this build of erase has no CUDA backend (configured without CUDA)");
#endif
    }
    return ERASE_ERROR(ERASE_ERR_INVALID, "erase_device_open: unknown device kind %d", (int)o.kind);
}

void erase_device_close(erase_device_t *dev)
{
    if (!dev)
        return;
    free(dev->trace);
    dev->trace = NULL;
    pthread_mutex_destroy(&dev->trace_lock);
    dev->backend->close(dev);
}

void erase_device_describe(const erase_device_t *dev, char *text, size_t size)
{
    dev->backend->describe(dev, text, size);
}

erase_device_kind_t erase_device_kind(const erase_device_t *dev) { return dev->kind; }
int erase_device_cores(const erase_device_t *dev) { return dev->backend->cores(dev); }
int erase_device_blas_threads(const erase_device_t *dev) { return dev->backend->blas_threads(dev); }

erase_status_t erase_device_set_blas_threads(erase_device_t *dev, int n)
{
    REQUIRE(n >= 1, "BLAS threads per stream must be at least 1, got %d", n);
    ERASE_CHECK(dev->backend->set_blas_threads(dev, n));
    return ERASE_OK;
}

erase_status_t erase_malloc(erase_device_t *dev, size_t bytes, void **ptr)
{
    REQUIRE(dev && ptr, "erase_malloc: NULL device or result pointer");
    ERASE_CHECK(dev->backend->malloc(dev, bytes, ptr));
    return ERASE_OK;
}

void erase_free(erase_device_t *dev, void *ptr)
{
    if (ptr)
        dev->backend->free(dev, ptr);
}

erase_status_t erase_memcpy_async(erase_stream_t *s, void *dst, const void *src, size_t bytes)
{
    REQUIRE(s != NULL, "erase_memcpy_async: NULL stream");
    REQUIRE(bytes == 0 || (dst && src), "erase_memcpy_async: NULL pointer for %zu bytes", bytes);
    ERASE_CHECK(BACKEND(s)->memcpy_async(s, dst, src, bytes));
    return ERASE_OK;
}

erase_status_t erase_memcpy2d_async(erase_stream_t *s, void *dst, size_t dpitch, const void *src, size_t spitch,
                                    size_t width, size_t rows)
{
    REQUIRE(s != NULL, "erase_memcpy2d_async: NULL stream");
    REQUIRE(dpitch >= width && spitch >= width,
            "erase_memcpy2d_async: rows of %zu bytes with pitches %zu (dst) and %zu (src)", width, dpitch, spitch);
    REQUIRE(rows <= 1 || (dpitch <= (SIZE_MAX - width) / (rows - 1) && spitch <= (SIZE_MAX - width) / (rows - 1)),
            "erase_memcpy2d_async: %zu rows of pitch %zu / %zu overflow", rows, dpitch, spitch);
    if (width == 0 || rows == 0)
        return ERASE_OK;
    REQUIRE(dst && src, "erase_memcpy2d_async: NULL pointer for %zu rows of %zu bytes", rows, width);
    ERASE_CHECK(BACKEND(s)->memcpy2d_async(s, dst, dpitch, src, spitch, width, rows));
    return ERASE_OK;
}

erase_status_t erase_memset_async(erase_stream_t *s, void *dst, int value, size_t bytes)
{
    REQUIRE(s != NULL, "erase_memset_async: NULL stream");
    REQUIRE(bytes == 0 || dst, "erase_memset_async: NULL pointer for %zu bytes", bytes);
    ERASE_CHECK(BACKEND(s)->memset_async(s, dst, value, bytes));
    return ERASE_OK;
}

int erase_device_host_accessible(const erase_device_t *dev) { return dev->backend->host_accessible; }

erase_status_t erase_memcpy_sync(erase_device_t *dev, void *dst, const void *src, size_t bytes)
{
    REQUIRE(dev != NULL, "erase_memcpy_sync: NULL device");
    REQUIRE(bytes == 0 || (dst && src), "erase_memcpy_sync: NULL pointer for %zu bytes", bytes);
    if (bytes == 0)
        return ERASE_OK;
    ERASE_CHECK(dev->backend->memcpy_sync(dev, dst, src, bytes));
    return ERASE_OK;
}

erase_status_t erase_memset_sync(erase_device_t *dev, void *dst, int value, size_t bytes)
{
    REQUIRE(dev != NULL, "erase_memset_sync: NULL device");
    REQUIRE(bytes == 0 || dst, "erase_memset_sync: NULL pointer for %zu bytes", bytes);
    if (bytes == 0)
        return ERASE_OK;
    ERASE_CHECK(dev->backend->memset_sync(dev, dst, value, bytes));
    return ERASE_OK;
}

erase_status_t erase_host_alloc(erase_device_t *dev, size_t bytes, void **ptr)
{
    REQUIRE(dev && ptr, "erase_host_alloc: NULL device or result pointer");
    ERASE_CHECK(dev->backend->host_alloc(dev, bytes, ptr));
    return ERASE_OK;
}

void erase_host_free(erase_device_t *dev, void *ptr)
{
    if (ptr)
        dev->backend->host_free(dev, ptr);
}

erase_status_t erase_stream_create(erase_device_t *dev, erase_stream_t **out)
{
    REQUIRE(dev && out, "erase_stream_create: NULL device or result pointer");
    ERASE_CHECK(dev->backend->stream_create(dev, out));
    (*out)->number = dev->streams_created++;
    return ERASE_OK;
}

void erase_stream_destroy(erase_stream_t *s)
{
    if (s)
        BACKEND(s)->stream_destroy(s);
}

erase_status_t erase_stream_synchronize(erase_stream_t *s)
{
    REQUIRE(s != NULL, "erase_stream_synchronize: NULL stream");
    ERASE_CHECK(BACKEND(s)->stream_synchronize(s));
    return ERASE_OK;
}

erase_status_t erase_stream_error(erase_stream_t *s)
{
    REQUIRE(s != NULL, "erase_stream_error: NULL stream");
    ERASE_CHECK(BACKEND(s)->stream_error(s));
    return ERASE_OK;
}

uint64_t erase_stream_enqueued(const erase_stream_t *s) { return BACKEND(s)->stream_enqueued(s); }
erase_device_t *erase_stream_device(const erase_stream_t *s) { return s->dev; }

erase_status_t erase_event_create(erase_device_t *dev, erase_event_t **out)
{
    REQUIRE(dev && out, "erase_event_create: NULL device or result pointer");
    ERASE_CHECK(dev->backend->event_create(dev, out));
    return ERASE_OK;
}

void erase_event_destroy(erase_event_t *e)
{
    if (e)
        BACKEND(e)->event_destroy(e);
}

erase_status_t erase_event_record(erase_event_t *e, erase_stream_t *s)
{
    REQUIRE(e && s, "erase_event_record: NULL event or stream");
    REQUIRE(e->dev == s->dev, "erase_event_record: event and stream belong to different devices");
    ERASE_CHECK(BACKEND(s)->event_record(e, s));
    return ERASE_OK;
}

erase_status_t erase_stream_wait_event(erase_stream_t *s, erase_event_t *e)
{
    REQUIRE(e && s, "erase_stream_wait_event: NULL event or stream");
    REQUIRE(e->dev == s->dev, "erase_stream_wait_event: event and stream belong to different devices");
    ERASE_CHECK(BACKEND(s)->stream_wait_event(s, e));
    return ERASE_OK;
}

erase_status_t erase_event_synchronize(erase_event_t *e)
{
    REQUIRE(e != NULL, "erase_event_synchronize: NULL event");
    ERASE_CHECK(BACKEND(e)->event_synchronize(e));
    return ERASE_OK;
}

erase_status_t erase_event_query(erase_event_t *e)
{
    REQUIRE(e != NULL, "erase_event_query: NULL event");
    return BACKEND(e)->event_query(e); /* NOT_READY is an answer, not a failure */
}

erase_status_t erase_event_elapsed_ms(erase_event_t *start, erase_event_t *end, double *ms)
{
    REQUIRE(start && end && ms, "erase_event_elapsed_ms: NULL argument");
    REQUIRE(start->dev == end->dev, "erase_event_elapsed_ms: events of different devices");
    return BACKEND(start)->event_elapsed_ms(start, end, ms);
}

erase_status_t erase_stream_begin_capture(erase_stream_t *s)
{
    REQUIRE(s != NULL, "erase_stream_begin_capture: NULL stream");
    ERASE_CHECK(BACKEND(s)->begin_capture(s));
    return ERASE_OK;
}

erase_status_t erase_stream_end_capture(erase_stream_t *s, erase_graph_t **graph)
{
    REQUIRE(s && graph, "erase_stream_end_capture: NULL stream or result pointer");
    *graph = NULL;
    ERASE_CHECK(BACKEND(s)->end_capture(s, graph));
    return ERASE_OK;
}

int erase_stream_is_capturing(const erase_stream_t *s) { return BACKEND(s)->is_capturing(s); }

erase_status_t erase_graph_launch(erase_graph_t *g, erase_stream_t *s)
{
    REQUIRE(g && s, "erase_graph_launch: NULL graph or stream");
    REQUIRE(g->dev == s->dev, "erase_graph_launch: graph and stream belong to different devices");
    ERASE_CHECK(BACKEND(s)->graph_launch(g, s));
    return ERASE_OK;
}

size_t erase_graph_node_count(const erase_graph_t *g) { return BACKEND(g)->graph_node_count(g); }

void erase_graph_destroy(erase_graph_t *g)
{
    if (g)
        BACKEND(g)->graph_destroy(g);
}

erase_status_t erase_device_trace_enable(erase_device_t *dev, size_t capacity)
{
    REQUIRE(dev && capacity > 0, "trace: NULL device or zero capacity");
    erase_trace_record_t *log = calloc(capacity, sizeof *log);
    if (!log)
        return ERASE_ERROR(ERASE_ERR_NOMEM, "trace: no memory for %zu records", capacity);
    pthread_mutex_lock(&dev->trace_lock);
    free(dev->trace);
    dev->trace = log;
    dev->trace_cap = capacity;
    dev->trace_head = dev->trace_len = dev->trace_dropped = 0;
    pthread_mutex_unlock(&dev->trace_lock);
    return ERASE_OK;
}

void erase_device_trace_append(erase_device_t *dev, const erase_trace_record_t *rec)
{
    pthread_mutex_lock(&dev->trace_lock);
    if (dev->trace) {
        if (dev->trace_len == dev->trace_cap) { /* full: drop the oldest */
            dev->trace_head = (dev->trace_head + 1) % dev->trace_cap;
            dev->trace_len--;
            dev->trace_dropped++;
        }
        dev->trace[(dev->trace_head + dev->trace_len) % dev->trace_cap] = *rec;
        dev->trace_len++;
    }
    pthread_mutex_unlock(&dev->trace_lock);
}

size_t erase_device_trace_drain(erase_device_t *dev, erase_trace_record_t *out, size_t max,
                                size_t *dropped)
{
    if (dev->backend->trace_flush)
        dev->backend->trace_flush(dev);
    pthread_mutex_lock(&dev->trace_lock);
    size_t n = 0;
    while (n < max && dev->trace_len > 0) {
        out[n++] = dev->trace[dev->trace_head];
        dev->trace_head = (dev->trace_head + 1) % dev->trace_cap;
        dev->trace_len--;
    }
    if (dropped)
        *dropped = dev->trace_dropped;
    pthread_mutex_unlock(&dev->trace_lock);
    return n;
}

erase_status_t erase_stream_mark(erase_stream_t *s, const char *label, int begin)
{
    REQUIRE(s && label, "erase_stream_mark: NULL stream or label");
    ERASE_CHECK(BACKEND(s)->mark(s, label, begin));
    return ERASE_OK;
}

int erase_stream_number(const erase_stream_t *s) { return s->number; }

erase_status_t erase_sgemm(erase_stream_t *s, erase_trans_t ta, erase_trans_t tb, int m, int n,
                           int k, float alpha, const float *a, int lda, const float *b, int ldb,
                           float beta, float *c, int ldc)
{
    ERASE_CHECK(erase_sgemm_strided_batched(s, ta, tb, m, n, k, alpha, a, lda, 0, b, ldb, 0,
                                            beta, c, ldc, 0, 1));
    return ERASE_OK;
}

erase_status_t erase_sgemm_strided_batched(erase_stream_t *s, erase_trans_t ta, erase_trans_t tb,
                                           int m, int n, int k, float alpha, const float *a,
                                           int lda, int64_t stride_a, const float *b, int ldb,
                                           int64_t stride_b, float beta, float *c, int ldc,
                                           int64_t stride_c, int batch)
{
    REQUIRE(s != NULL, "sgemm: NULL stream");
    REQUIRE(m >= 0 && n >= 0 && k >= 0 && batch >= 0,
            "sgemm: negative size m=%d n=%d k=%d batch=%d", m, n, k, batch);
    int a_cols = ta == ERASE_NO_TRANS ? k : m;
    int b_cols = tb == ERASE_NO_TRANS ? n : k;
    REQUIRE(lda >= (a_cols > 1 ? a_cols : 1), "sgemm: lda=%d < %d (columns of A as stored)", lda, a_cols);
    REQUIRE(ldb >= (b_cols > 1 ? b_cols : 1), "sgemm: ldb=%d < %d (columns of B as stored)", ldb, b_cols);
    REQUIRE(ldc >= (n > 1 ? n : 1), "sgemm: ldc=%d < n=%d", ldc, n);
    REQUIRE(batch <= 1 || stride_c != 0, "sgemm: batched GEMM with stride_c == 0 would race on C");
    if (m == 0 || n == 0 || batch == 0)
        return ERASE_OK;
    REQUIRE(c != NULL && (k == 0 || (a && b)), "sgemm: NULL matrix pointer");
    ERASE_CHECK(BACKEND(s)->sgemm_strided_batched(s, ta, tb, m, n, k, alpha, a, lda, stride_a, b,
                                                  ldb, stride_b, beta, c, ldc, stride_c, batch));
    return ERASE_OK;
}
