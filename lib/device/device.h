/*
 * erase device layer: the one interface behind which the CPU backend
 * (lib/device/cpu: BLAS + pthreads) and the CUDA backend compute.
 *
 * Semantics follow CUDA's runtime API so that schedules written once run on
 * both backends:
 *   - a stream is an ordered queue of operations; operations of one stream
 *     run one after another, operations of different streams may overlap;
 *   - an event marks a point in a stream ("everything enqueued on the stream
 *     before the record"); another stream can wait on it, the host can
 *     synchronize on or query it, and two completed events give the time
 *     between them;
 *   - a graph is the sequence of operations that the host issued to one or
 *     more streams between begin_capture and end_capture, with their event
 *     edges; launching it replays exactly that sequence (as CUDA stream
 *     capture: operations are recorded, not run, while capturing).
 * Every call returns an erase_status_t; failures inside an operation are
 * sticky on its stream and reported by the next synchronize, as in CUDA.
 *
 * Matrices are row-major (C arrays) throughout erase.
 */
#ifndef ERASE_DEVICE_DEVICE_H
#define ERASE_DEVICE_DEVICE_H

#include <stddef.h>
#include <stdint.h>

#include "lib/core/status.h"

typedef struct erase_device erase_device_t;
typedef struct erase_stream erase_stream_t;
typedef struct erase_event erase_event_t;
typedef struct erase_graph erase_graph_t;

typedef enum {
    ERASE_DEVICE_CPU = 0,  /* BLAS + one worker thread per stream */
    ERASE_DEVICE_CUDA = 1  /* cuBLAS + .cu kernels */
} erase_device_kind_t;

/*
 * Arithmetic of GEMMs (erase_sgemm and every op built on it). Operands and
 * results are fp32 in memory in every mode; accumulation is fp32.
 *   FP32  strict fp32 products (CPU BLAS, cuBLAS without tensor cores):
 *         within float rounding of a double reference (~1e-6 relative)
 *   TF32  CUDA only: tensor cores round the operands to TF32 (10-bit
 *         mantissa, CUBLAS_COMPUTE_32F_FAST_TF32): ~1e-3 relative per GEMM
 *   BF16  CUDA only: operands rounded to bfloat16 (7-bit mantissa,
 *         CUBLAS_COMPUTE_32F_FAST_16BF): ~1e-2 relative per GEMM
 */
typedef enum { ERASE_GEMM_FP32 = 0, ERASE_GEMM_TF32, ERASE_GEMM_BF16 } erase_gemm_precision_t;

/* "fp32", "tf32", "bf16" <-> precision; parse returns -1 for an unknown name. */
const char *erase_gemm_precision_name(erase_gemm_precision_t p);
int erase_gemm_precision_parse(const char *name, erase_gemm_precision_t *out);

typedef struct {
    erase_device_kind_t kind;
    /* BLAS threads used by each GEMM call on any stream of a CPU device;
     * 0 = automatic: all cores (the single-stream baseline's best setting).
     * Schedules that run GEMMs on S streams at once set cores / S. */
    int blas_threads;
    /* Cores this process may use (CPU; 0: all online cores). Ranks sharing
     * a host divide its cores: erase-train gives each cores / local ranks. */
    int cores;
    /* CUDA: the GPU to use (cudaSetDevice numbering); erase-train gives
     * each rank its local rank. Ignored by the CPU backend. */
    int ordinal;
    /* GEMM arithmetic (see erase_gemm_precision_t); the CPU backend takes
     * FP32 only (ERASE_ERR_UNSUPPORTED otherwise). */
    erase_gemm_precision_t gemm;
} erase_device_options_t;

/* Defaults: CPU, automatic BLAS threads. */
erase_device_options_t erase_device_options_default(void);

/*
 * Open a device. The first CPU device of a process loads the BLAS library
 * (see lib/device/cpu/cpu_blas.c for how its kernel is chosen). A CPU device
 * sets flush-to-zero and denormals-are-zero on the calling thread, the BLAS
 * threads and its stream workers, unless ERASE_FTZ=0 (lib/core/fpmode.h).
 * Errors: ERASE_ERR_UNSUPPORTED (backend not built or no GPU),
 * ERASE_ERR_BACKEND (BLAS cannot be loaded), ERASE_ERR_INVALID (ERASE_FTZ
 * neither 0 nor 1), ERASE_ERR_NOMEM.
 */
erase_status_t erase_device_open(const erase_device_options_t *options, erase_device_t **out);

/* Close a device; all its streams, events and graphs must be destroyed first. */
void erase_device_close(erase_device_t *dev);

/*
 * One line describing the device for start-up logs, e.g.
 * "cpu: 2 cores, OpenBLAS 0.3.21 kernel SkylakeX (chosen by erase for
 * AVX-512), 2 BLAS threads per stream, flush-to-zero on". Truncated to
 * `size` bytes.
 */
void erase_device_describe(const erase_device_t *dev, char *text, size_t size);

/* Kind of an open device. */
erase_device_kind_t erase_device_kind(const erase_device_t *dev);

/* Number of hardware threads the backend computes with (CPU: online cores). */
int erase_device_cores(const erase_device_t *dev);

/*
 * BLAS threads per GEMM call (CPU; 1 on CUDA). Setting it is allowed only
 * while no stream of the device has work queued (ERASE_ERR_STATE otherwise);
 * n < 1 is ERASE_ERR_INVALID; n above the core count is clamped.
 */
int erase_device_blas_threads(const erase_device_t *dev);
erase_status_t erase_device_set_blas_threads(erase_device_t *dev, int n);

/* ---- memory ----------------------------------------------------------- */

/*
 * Allocate `bytes` of device memory (CPU: host memory aligned to 64 bytes;
 * CUDA: cudaMalloc). bytes == 0 gives a valid unique pointer.
 * Errors: ERASE_ERR_NOMEM.
 */
erase_status_t erase_malloc(erase_device_t *dev, size_t bytes, void **ptr);
void erase_free(erase_device_t *dev, void *ptr);

/* Enqueue a copy of `bytes` bytes (regions must not overlap) / a fill.
 * Either side of a copy may be device memory or host memory (CUDA:
 * cudaMemcpyDefault through unified addressing; pinned host memory from
 * erase_host_alloc lets the copy overlap compute). */
erase_status_t erase_memcpy_async(erase_stream_t *stream, void *dst, const void *src, size_t bytes);
erase_status_t erase_memset_async(erase_stream_t *stream, void *dst, int value, size_t bytes);
/*
 * Enqueue a strided copy of `rows` rows of `width` bytes: row i from
 * src + i x spitch to dst + i x dpitch (pitches in bytes, >= width; the
 * regions must not overlap), as cudaMemcpy2DAsync defines it (CUDA: that
 * call, cudaMemcpyDefault). A column of a row-major matrix into a vector
 * and back: width = the column's bytes, one pitch the matrix row's, the
 * other the width. Errors: ERASE_ERR_INVALID (a pitch < width, NULL with
 * bytes to copy, a size that overflows), the backend's.
 */
erase_status_t erase_memcpy2d_async(erase_stream_t *stream, void *dst, size_t dpitch, const void *src,
                                    size_t spitch, size_t width, size_t rows);

/*
 * Whether host code may read and write this device's memory directly (1 on
 * the CPU backend, 0 on CUDA). Code that is not itself a kernel moves data
 * with the copies below and never dereferences a device pointer, so that
 * it runs on every backend.
 */
int erase_device_host_accessible(const erase_device_t *dev);

/*
 * Blocking copy / fill between host and device memory of `dev`, outside
 * every stream: the caller makes sure no stream is using the bytes (e.g.
 * after erase_stream_synchronize). CPU: memcpy / memset; CUDA: the copy or
 * fill on the device's private stream, then a synchronize of that stream
 * (complete on return; other streams are not waited for). Errors: ERASE_ERR_INVALID
 * (NULL pointer with bytes), ERASE_ERR_BACKEND (the CUDA call failed).
 */
erase_status_t erase_memcpy_sync(erase_device_t *dev, void *dst, const void *src, size_t bytes);
erase_status_t erase_memset_sync(erase_device_t *dev, void *dst, int value, size_t bytes);

/*
 * Host memory for staging data to the device (the data reader's batches):
 * page-locked on CUDA (cudaMallocHost) so that erase_memcpy_async overlaps
 * compute; 64-byte aligned on the CPU. bytes == 0 gives a unique pointer.
 * Errors: ERASE_ERR_NOMEM.
 */
erase_status_t erase_host_alloc(erase_device_t *dev, size_t bytes, void **ptr);
void erase_host_free(erase_device_t *dev, void *ptr);

/* ---- streams ---------------------------------------------------------- */

/* Create a stream (CPU: starts its worker thread). Errors: ERASE_ERR_NOMEM,
 * ERASE_ERR_BACKEND (thread creation failed). */
erase_status_t erase_stream_create(erase_device_t *dev, erase_stream_t **out);

/* Wait for the stream's work, then destroy it. NULL is a no-op. */
void erase_stream_destroy(erase_stream_t *stream);

/*
 * Block the host until everything enqueued on the stream has run. Returns
 * the stream's sticky error (with its message), if an operation failed.
 * ERASE_ERR_STATE while the stream is capturing.
 */
erase_status_t erase_stream_synchronize(erase_stream_t *stream);

/*
 * The stream's sticky error so far, without waiting (ERASE_OK while none:
 * its work may still be running). For a host that waits on an event of a
 * stream (erase_event_synchronize) and must still learn of a failure on
 * the streams that fed it. Errors: the sticky error, as
 * erase_stream_synchronize reports it.
 */
erase_status_t erase_stream_error(erase_stream_t *stream);

/* Operations enqueued on the stream so far (monotonic; for tests and traces). */
uint64_t erase_stream_enqueued(const erase_stream_t *stream);

/* Device a stream belongs to. */
erase_device_t *erase_stream_device(const erase_stream_t *stream);

/* ---- events ----------------------------------------------------------- */

erase_status_t erase_event_create(erase_device_t *dev, erase_event_t **out);
void erase_event_destroy(erase_event_t *event);

/* Mark the current end of `stream` (records a timestamp when it is reached). */
erase_status_t erase_event_record(erase_event_t *event, erase_stream_t *stream);

/* Make `stream` wait until `event` (as last recorded when this is called)
 * is reached. An event never recorded is already reached. */
erase_status_t erase_stream_wait_event(erase_stream_t *stream, erase_event_t *event);

/* Block the host until the event is reached. */
erase_status_t erase_event_synchronize(erase_event_t *event);

/* ERASE_OK if the event is reached, ERASE_ERR_NOT_READY if not yet. */
erase_status_t erase_event_query(erase_event_t *event);

/* Milliseconds between two reached events. ERASE_ERR_NOT_READY if either is
 * not reached, ERASE_ERR_INVALID if either was never recorded. */
erase_status_t erase_event_elapsed_ms(erase_event_t *start, erase_event_t *end, double *ms);

/* ---- graphs (stream capture) ------------------------------------------ */

/*
 * Start capturing on `stream` (the origin). Until end_capture, operations,
 * event records and waits issued to the origin, and to every stream that
 * waits on an event recorded by a capturing stream (it joins the capture),
 * are recorded instead of run. Every joined stream must be joined back into
 * the origin (the origin waits on an event recorded after the joined
 * stream's last operation) before end_capture. Waiting on an event recorded
 * outside the capture, synchronizing, or querying a capturing stream is
 * ERASE_ERR_STATE.
 */
erase_status_t erase_stream_begin_capture(erase_stream_t *stream);

/* End the capture started on `stream` and return the graph. On an unjoined
 * stream the capture is discarded and ERASE_ERR_STATE returned. */
erase_status_t erase_stream_end_capture(erase_stream_t *stream, erase_graph_t **graph);

/* Whether the stream is capturing (1) or not (0). */
int erase_stream_is_capturing(const erase_stream_t *stream);

/*
 * Replay the graph: its origin's operations go to `stream`, the other
 * captured streams' operations to those streams, in captured order with the
 * captured event edges; `stream` waits for all of them at the end.
 */
erase_status_t erase_graph_launch(erase_graph_t *graph, erase_stream_t *stream);

/* Number of recorded operations, records and waits in the graph. */
size_t erase_graph_node_count(const erase_graph_t *graph);

void erase_graph_destroy(erase_graph_t *graph);

/* ---- tracing ------------------------------------------------------------
 * Markers are operations like any other (captured into graphs too): when
 * one runs, the device appends (label, stream, time) to its trace log, if
 * tracing is enabled; otherwise markers cost one queue entry. */

typedef struct {
    const char *label;     /* as given to erase_stream_mark (must outlive the log) */
    int stream;            /* the stream's number on its device (creation order, from 0) */
    int begin;             /* 1 begin, 0 end of a range */
    int64_t time_ns;       /* CLOCK_MONOTONIC when the marker ran */
} erase_trace_record_t;

/* Start logging markers, keeping up to `capacity` records (older ones are
 * dropped and counted). Errors: ERASE_ERR_NOMEM. */
erase_status_t erase_device_trace_enable(erase_device_t *dev, size_t capacity);

/* Enqueue a marker: the begin (begin = 1) or end (0) of range `label`. */
erase_status_t erase_stream_mark(erase_stream_t *stream, const char *label, int begin);

/* Number of a stream on its device (0, 1, ... in creation order). */
int erase_stream_number(const erase_stream_t *stream);

/* Move up to `max` logged records (oldest first) into `out`; returns how
 * many. *dropped (if not NULL) gets the records lost to a full log. */
size_t erase_device_trace_drain(erase_device_t *dev, erase_trace_record_t *out, size_t max,
                                size_t *dropped);

/* ---- GEMM ------------------------------------------------------------- */

typedef enum { ERASE_NO_TRANS = 0, ERASE_TRANS = 1 } erase_trans_t;

/*
 * C = alpha * op(A) * op(B) + beta * C, single precision, row-major:
 * op(A) is m x k, op(B) is k x n, C is m x n; lda, ldb, ldc are row strides
 * in elements (lda >= k if A is not transposed, >= m if it is; likewise for
 * B; ldc >= n). beta == 0 ignores C's prior contents (NaN included).
 * m, n or k == 0 are valid (k == 0 gives C = beta * C).
 * Backends: cblas_sgemm (CPU), cublasSgemm (CUDA).
 * Errors: ERASE_ERR_INVALID for negative sizes or short leading dimensions.
 */
erase_status_t erase_sgemm(erase_stream_t *stream, erase_trans_t transa, erase_trans_t transb,
                           int m, int n, int k, float alpha, const float *a, int lda,
                           const float *b, int ldb, float beta, float *c, int ldc);

/*
 * `batch` independent GEMMs as erase_sgemm, matrix i at a + i*stride_a,
 * b + i*stride_b, c + i*stride_c (strides in elements; a stride of 0 reuses
 * one matrix for every batch entry, except for C).
 */
erase_status_t erase_sgemm_strided_batched(erase_stream_t *stream, erase_trans_t transa,
                                           erase_trans_t transb, int m, int n, int k,
                                           float alpha, const float *a, int lda, int64_t stride_a,
                                           const float *b, int ldb, int64_t stride_b, float beta,
                                           float *c, int ldc, int64_t stride_c, int batch);

/*
 * The device's SGEMM peak as erase measures it: `samples` (1 to 64)
 * samples of GFLOP/s (1e9 floating-point operations per second, 2 per
 * multiply-add), each of three 1024 x 1024 x 1024 erase_sgemm products on
 * stream s, after one warm-up sample, with the stream's BLAS threads, in
 * gflops[0 .. samples) (lib/device/peak.c; callers take the median). The
 * basis of MFU in erase-train and erase-bench. About 0.1 s per sample at
 * 100 GFLOP/s. Errors: ERASE_ERR_INVALID (samples), ERASE_ERR_NOMEM,
 * those of the GEMM.
 */
erase_status_t erase_device_sgemm_peak(erase_device_t *dev, erase_stream_t *s, int samples, double *gflops);

#endif
