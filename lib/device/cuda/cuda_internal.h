/*
 * Internal types of the CUDA backend (lib/device/cuda only).
 *
 * Threads: CUDA's current device is per host thread, and erase streams are
 * issued to from several threads (the scheduler's thread in async mode, the
 * data reader's staging thread, comm watchdogs). Every backend entry point
 * that talks to CUDA therefore starts with cuda_use(), which makes the
 * device current on the calling thread (one cudaGetDevice compare, and a
 * cudaSetDevice only when it differs).
 *
 * Locks: cuda_device_t.lock guards the trace state (event pool, pending
 * marks, captured marks, retired events, time base) and the capture count;
 * it is taken before the device's trace_lock (device.c), never after.
 * cuda_stream_t.lock guards the stream's open NVTX ranges only.
 */
#ifndef ERASE_DEVICE_CUDA_INTERNAL_H
#define ERASE_DEVICE_CUDA_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <nvtx3/nvToolsExt.h>

#include "lib/device/backend.h"
#include "lib/device/cuda/cuda.h"

/* Captures in progress at once on one device. */
#define CUDA_MAX_CAPTURES 64

typedef struct cuda_device cuda_device_t;
typedef struct cuda_stream cuda_stream_t;
typedef struct cuda_event cuda_event_t;
typedef struct cuda_graph cuda_graph_t;

/* A trace mark waiting for its timing event to complete (or, inside a
 * capture, for its graph to be launched). */
typedef struct {
    const char *label;
    int stream;                 /* erase stream number */
    int begin;
    cudaEvent_t ev;             /* timing event recorded at the mark */
    int pooled;                 /* 1: ev returns to the pool once resolved */
    unsigned long long capture; /* captured marks: the CUDA capture id */
} cuda_mark_t;

/* A growable array of marks. */
typedef struct {
    cuda_mark_t *v;
    size_t n, cap;
} cuda_marks_t;

struct cuda_device {
    erase_device_t base;
    int ordinal;                /* cudaSetDevice number */
    int sms;                    /* multiprocessors */
    int cc_major, cc_minor;     /* compute capability */
    size_t workspace_bytes;     /* cuBLAS workspace per stream */
    erase_gemm_precision_t gemm; /* GEMM arithmetic (erase_device_options_t.gemm) */
    char description[640];
    int *fault;                 /* device: the fault word (one int) */
    int *fault_host;            /* pinned: where it is read into */
    pthread_mutex_t fault_lock; /* one reader of the fault word at a time */
    cudaStream_t aux;           /* private non-blocking stream: blocking copies,
                                   fault word, trace time base */
    nvtxDomainHandle_t nvtx;    /* NVTX domain "erase" */

    pthread_mutex_t lock;       /* the fields below */
    int captures;               /* captures in progress on this device ... */
    unsigned long long active[CUDA_MAX_CAPTURES]; /* ... their CUDA ids (0: free slot) */
    int broken[CUDA_MAX_CAPTURES]; /* a call inside it was refused by erase's own rules */
    cudaEvent_t *pool;          /* free timing events for trace marks */
    size_t pool_n, pool_cap;
    cuda_marks_t pending;       /* issued marks, in issue order */
    cuda_marks_t captured;      /* marks issued inside captures in progress */
    cudaEvent_t *retired;       /* events of destroyed graphs (may still be pending) */
    size_t retired_n, retired_cap;
    cudaEvent_t base_ev;        /* time base: an event ... */
    int64_t base_ns;            /* ... and the CLOCK_MONOTONIC time it completed */
};

/* An open NVTX range of a stream (begin mark without its end yet). */
typedef struct {
    const char *label;
    nvtxRangeId_t id;
} cuda_range_t;

struct cuda_stream {
    erase_stream_t base;
    cuda_device_t *dev;
    cudaStream_t s;
    cublasHandle_t blas;        /* bound to s; used only for GEMMs on s */
    void *workspace;            /* cuBLAS workspace of this handle */
    atomic_uint_fast64_t enqueued;
    unsigned long long capture_id; /* origin of a capture: its CUDA id, else 0 */
    pthread_mutex_t lock;       /* ranges */
    cuda_range_t *ranges;
    size_t nranges, ranges_cap;
};

struct cuda_event {
    erase_event_t base;
    cudaEvent_t ev;             /* created with timing */
    atomic_int recorded;        /* recorded outside a capture at least once */
    atomic_int in_capture;      /* last recorded inside a capture ... */
    _Atomic unsigned long long capture_id; /* ... with this CUDA capture id */
};

struct cuda_graph {
    erase_graph_t base;
    cudaGraph_t graph;
    cudaGraphExec_t exec;
    size_t nodes;
    cuda_marks_t marks;         /* trace marks captured into the graph */
};

static inline cuda_device_t *cuda_device(erase_device_t *d) { return (cuda_device_t *)d; }
static inline cuda_stream_t *cuda_stream_of(erase_stream_t *s) { return (cuda_stream_t *)s; }
static inline cuda_event_t *cuda_event_of(erase_event_t *e) { return (cuda_event_t *)e; }
static inline cuda_graph_t *cuda_graph_of(erase_graph_t *g) { return (cuda_graph_t *)g; }

/* Make the device current on the calling thread. Errors: ERASE_ERR_BACKEND. */
erase_status_t cuda_use(const cuda_device_t *d);

/* Map a failed CUDA call to an erase status: the stream-capture errors
 * (cudaErrorStreamCapture*, cudaErrorCapturedEvent) become ERASE_ERR_STATE,
 * the rest ERASE_ERR_BACKEND; the message names `what` and the CUDA error. */
erase_status_t cuda_fail(const char *file, int line, cudaError_t err, const char *what);
#define CUDA_TRY(call)                                                        \
    do {                                                                      \
        cudaError_t cuda_try_rc_ = (call);                                    \
        if (cuda_try_rc_ != cudaSuccess)                                      \
            return cuda_fail(__FILE__, __LINE__, cuda_try_rc_, #call);        \
    } while (0)

/* *capturing = whether the stream is capturing (an invalidated capture
 * counts: it still has to be ended), with its device made current first.
 * Errors: ERASE_ERR_BACKEND (the query failed). */
erase_status_t cuda_capturing(cuda_stream_t *s, int *capturing);

/* Count one operation issued to a stream. */
static inline void cuda_count(cuda_stream_t *s) { atomic_fetch_add(&s->enqueued, 1); }

/* Blocking read-and-clear of the fault word (cuda_device.c). */
erase_status_t cuda_take_fault(cuda_device_t *d);

/* Marks array (cuda_trace.c). Errors: ERASE_ERR_NOMEM. */
erase_status_t cuda_marks_push(cuda_marks_t *m, const cuda_mark_t *mark);
void cuda_marks_free(cuda_marks_t *m);

/* Trace (cuda_trace.c). */
erase_status_t cuda_trace_open(cuda_device_t *d);   /* NVTX domain, time base */
void cuda_trace_close(cuda_device_t *d);            /* after every stream/graph is gone */
erase_status_t cuda_stream_mark(erase_stream_t *s, const char *label, int begin);
void cuda_trace_flush(erase_device_t *dev);
/* Capture bookkeeping: count a capture (ERASE_ERR_STATE beyond
 * CUDA_MAX_CAPTURES), hand its marks to a graph at its end (or give them
 * back to the pool when the capture failed: g == NULL). */
erase_status_t cuda_trace_capture_begin(cuda_device_t *d, unsigned long long id);
/* Whether the capture with this id is still in progress on the device. */
int cuda_capture_active(cuda_device_t *d, unsigned long long id);
/* Mark a capture in progress as broken (end_capture then fails, as when
 * CUDA invalidates a capture) / whether it is. */
void cuda_capture_break(cuda_device_t *d, unsigned long long id);
int cuda_capture_is_broken(cuda_device_t *d, unsigned long long id);
erase_status_t cuda_trace_capture_end(cuda_device_t *d, unsigned long long id, cuda_graph_t *g);
/* A graph launch: its captured marks become pending. Errors: NOMEM. */
erase_status_t cuda_trace_graph_launched(cuda_device_t *d, cuda_graph_t *g);
/* A graph is destroyed: its events move to the retired list. */
void cuda_trace_graph_destroyed(cuda_device_t *d, cuda_graph_t *g);
/* Open NVTX ranges of a stream are ended (stream destroy). */
void cuda_trace_stream_closed(cuda_stream_t *s);

/* Backend table functions, by file. */
erase_status_t cuda_stream_create(erase_device_t *dev, erase_stream_t **out);
void cuda_stream_destroy(erase_stream_t *s);
erase_status_t cuda_stream_synchronize(erase_stream_t *s);
uint64_t cuda_stream_enqueued(const erase_stream_t *s);
erase_status_t cuda_stream_error(erase_stream_t *s);
erase_status_t cuda_memcpy_async(erase_stream_t *s, void *dst, const void *src, size_t bytes);
erase_status_t cuda_memset_async(erase_stream_t *s, void *dst, int value, size_t bytes);
erase_status_t cuda_memcpy2d_async(erase_stream_t *s, void *dst, size_t dpitch, const void *src, size_t spitch,
                                   size_t width, size_t rows);
erase_status_t cuda_event_create(erase_device_t *dev, erase_event_t **out);
void cuda_event_destroy(erase_event_t *e);
erase_status_t cuda_event_record(erase_event_t *e, erase_stream_t *s);
erase_status_t cuda_stream_wait_event(erase_stream_t *s, erase_event_t *e);
erase_status_t cuda_event_synchronize(erase_event_t *e);
erase_status_t cuda_event_query(erase_event_t *e);
erase_status_t cuda_event_elapsed_ms(erase_event_t *start, erase_event_t *end, double *ms);
erase_status_t cuda_begin_capture(erase_stream_t *s);
erase_status_t cuda_end_capture(erase_stream_t *s, erase_graph_t **graph);
int cuda_is_capturing(const erase_stream_t *s);
erase_status_t cuda_graph_launch(erase_graph_t *g, erase_stream_t *s);
size_t cuda_graph_node_count(const erase_graph_t *g);
void cuda_graph_destroy(erase_graph_t *g);
erase_status_t cuda_sgemm_strided_batched(erase_stream_t *s, erase_trans_t ta, erase_trans_t tb,
                                          int m, int n, int k, float alpha, const float *a,
                                          int lda, int64_t stride_a, const float *b, int ldb,
                                          int64_t stride_b, float beta, float *c, int ldc,
                                          int64_t stride_c, int batch);

#endif
