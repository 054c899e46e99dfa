/* The CPU device: host memory, BLAS thread policy, GEMM, and the backend table. */
#include "lib/device/cpu/cpu_internal.h"

#include "lib/core/fpmode.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int online_cores(void)
{
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n > 0 ? (int)n : 1;
}

static void cpu_close(erase_device_t *dev)
{
    cpu_device_t *d = cpu_device(dev);
    cpu_team_stop(d);
    pthread_mutex_destroy(&d->team_lock);
    pthread_mutex_destroy(&d->lock);
    free(d);
}

static void cpu_describe(const erase_device_t *dev, char *text, size_t size)
{
    const cpu_device_t *d = (const cpu_device_t *)dev;
    const erase_blas_info_t *b = NULL;
    if (erase_blas_load(&b) != ERASE_OK) {
        snprintf(text, size, "cpu: %d cores, BLAS not loaded", d->cores);
        return;
    }
    snprintf(text, size, "cpu: %d core%s, %s kernel %s (%s), %d BLAS thread%s per stream%s, %s, %s",
             d->cores, d->cores == 1 ? "" : "s", b->name, b->kernel, b->kernel_note, d->blas_threads,
             d->blas_threads == 1 ? "" : "s",
             b->has_thread_control ? "" : " (fixed by the library)", erase_cpu_thp_describe(),
             erase_fp_flush_describe());
}

static int cpu_cores(const erase_device_t *dev) { return ((const cpu_device_t *)dev)->cores; }
static int cpu_blas_threads(const erase_device_t *dev) { return ((const cpu_device_t *)dev)->blas_threads; }

/* ThreadSanitizer cannot see OpenBLAS's own thread synchronization (its
 * pool hands work over by spinning on plain memory), so a TSan build runs
 * every BLAS call on the calling stream's thread alone. */
#if defined(__SANITIZE_THREAD__)
#define BLAS_THREADS_MAX 1
#else
#define BLAS_THREADS_MAX 1024
#endif

static erase_status_t cpu_set_blas_threads(erase_device_t *dev, int n)
{
    cpu_device_t *d = cpu_device(dev);
    if (n > d->cores)
        n = d->cores;
    int team = n; /* the team is erase's own threads: not capped under TSan */
    if (n > BLAS_THREADS_MAX)
        n = BLAS_THREADS_MAX;
    pthread_mutex_lock(&d->lock);
    for (cpu_stream_t *s = d->streams; s; s = s->next_in_device)
        if (!cpu_stream_idle(s)) {
            pthread_mutex_unlock(&d->lock);
            return ERASE_ERROR(ERASE_ERR_STATE,
                               "BLAS threads can change only while no stream has work queued");
        }
    d->blas_threads = n;
    d->threads = team;
    erase_blas_set_threads(n);
    pthread_mutex_unlock(&d->lock);
    return ERASE_OK;
}

static erase_status_t cpu_malloc(erase_device_t *dev, size_t bytes, void **ptr)
{
    size_t rounded = (bytes + 63) / 64 * 64;
    if (rounded < bytes)
        return ERASE_ERROR(ERASE_ERR_NOMEM, "cannot allocate %zu bytes of host memory", bytes);
    if (rounded == 0)
        rounded = 64;
    /* 4 MiB and more: 2 MiB aligned and advised huge pages (cpu_hugepages.c) */
    int huge = rounded >= 2 * ERASE_HUGE_PAGE && erase_cpu_thp_advise();
    if (posix_memalign(ptr, huge ? ERASE_HUGE_PAGE : 64, rounded) != 0) {
        *ptr = NULL;
        return ERASE_ERROR(ERASE_ERR_NOMEM, "cannot allocate %zu bytes of host memory", bytes);
    }
    if (huge)
        erase_cpu_thp_advise_range(*ptr, rounded);
    return ERASE_OK;
}

static void cpu_free(erase_device_t *dev, void *ptr) { free(ptr); }

/* Device memory is host memory: the blocking copies are plain ones. */
static erase_status_t cpu_memcpy_sync(erase_device_t *dev, void *dst, const void *src, size_t bytes)
{
    memcpy(dst, src, bytes);
    return ERASE_OK;
}

static erase_status_t cpu_memset_sync(erase_device_t *dev, void *dst, int value, size_t bytes)
{
    memset(dst, value, bytes);
    return ERASE_OK;
}

typedef struct {
    int ta, tb, m, n, k, lda, ldb, ldc, batch;
    float alpha, beta;
    const float *a, *b;
    float *c;
    int64_t sa, sb, sc;
} gemm_args_t;

static erase_status_t gemm_kernel(const void *p)
{
    const gemm_args_t *g = p;
    for (int i = 0; i < g->batch; i++)
        erase_cpu_gemm_f32(g->ta, g->tb, g->m, g->n, g->k, g->alpha, g->a + i * g->sa, g->lda,
                         g->b + i * g->sb, g->ldb, g->beta, g->c + i * g->sc, g->ldc);
    return ERASE_OK;
}

erase_status_t cpu_sgemm_strided_batched(erase_stream_t *s, erase_trans_t ta, erase_trans_t tb,
                                         int m, int n, int k, float alpha, const float *a, int lda,
                                         int64_t stride_a, const float *b, int ldb, int64_t stride_b,
                                         float beta, float *c, int ldc, int64_t stride_c, int batch)
{
    gemm_args_t g = { .ta = ta == ERASE_TRANS, .tb = tb == ERASE_TRANS, .m = m, .n = n, .k = k,
                      .lda = lda, .ldb = ldb, .ldc = ldc, .batch = batch, .alpha = alpha,
                      .beta = beta, .a = a, .b = b, .c = c, .sa = stride_a, .sb = stride_b,
                      .sc = stride_c };
    ERASE_CHECK(cpu_stream_push_kernel(cpu_stream(s), gemm_kernel, &g, sizeof g));
    return ERASE_OK;
}

static const erase_backend_t cpu_backend = {
    .name = "cpu",
    .close = cpu_close,
    .describe = cpu_describe,
    .cores = cpu_cores,
    .blas_threads = cpu_blas_threads,
    .set_blas_threads = cpu_set_blas_threads,
    .malloc = cpu_malloc,
    .free = cpu_free,
    .memcpy_async = cpu_memcpy_async,
    .memset_async = cpu_memset_async,
    .memcpy2d_async = cpu_memcpy2d_async,
    .host_accessible = 1,
    .memcpy_sync = cpu_memcpy_sync,
    .memset_sync = cpu_memset_sync,
    .host_alloc = cpu_malloc,
    .host_free = cpu_free,
    .stream_create = cpu_stream_create,
    .stream_destroy = cpu_stream_destroy,
    .stream_synchronize = cpu_stream_synchronize,
    .stream_enqueued = cpu_stream_enqueued,
    .stream_error = cpu_stream_error,
    .event_create = cpu_event_create,
    .event_destroy = cpu_event_destroy,
    .event_record = cpu_event_record,
    .stream_wait_event = cpu_stream_wait_event,
    .event_synchronize = cpu_event_synchronize,
    .event_query = cpu_event_query,
    .event_elapsed_ms = cpu_event_elapsed_ms,
    .begin_capture = cpu_begin_capture,
    .end_capture = cpu_end_capture,
    .is_capturing = cpu_is_capturing,
    .graph_launch = cpu_graph_launch,
    .graph_node_count = cpu_graph_node_count,
    .graph_destroy = cpu_graph_destroy,
    .mark = cpu_stream_mark,
    .sgemm_strided_batched = cpu_sgemm_strided_batched,
};

erase_status_t erase_cpu_device_open(const erase_device_options_t *options, erase_device_t **out)
{
    const erase_blas_info_t *info;
    int flush;
    ERASE_CHECK(erase_fp_flush_policy(&flush));
    erase_fp_thread_init(); /* ops may also run on the thread that opens the device */
    ERASE_CHECK(erase_blas_load(&info));
    cpu_device_t *d = calloc(1, sizeof *d);
    if (!d)
        return ERASE_ERROR(ERASE_ERR_NOMEM, "cpu device: no memory");
    d->base.backend = &cpu_backend;
    d->base.kind = ERASE_DEVICE_CPU;
    d->cores = online_cores();
    if (options->cores > 0 && options->cores < d->cores)
        d->cores = options->cores;
    pthread_mutex_init(&d->lock, NULL);
    pthread_mutex_init(&d->team_lock, NULL);
    int threads = options->blas_threads > 0 ? options->blas_threads : d->cores;
    d->blas_threads = threads > d->cores ? d->cores : threads;
    d->threads = d->blas_threads;
    if (d->blas_threads > BLAS_THREADS_MAX)
        d->blas_threads = BLAS_THREADS_MAX;
    if (!info->has_thread_control)
        d->blas_threads = 1; /* unknown library: we cannot tell, assume its calls are serial */
    erase_blas_set_threads(d->blas_threads);
    *out = &d->base;
    return ERASE_OK;
}
