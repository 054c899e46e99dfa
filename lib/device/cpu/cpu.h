/*
 * CPU backend entry points used by the CPU implementations of ops
 * (lib/ops/cpu): a kernel is a function run by a stream's worker thread on a
 * copy of its argument struct, exactly as a CUDA kernel runs on the copy of
 * its parameters made at launch. A kernel launched while the stream is
 * capturing is recorded into the graph with its argument copy.
 */
#ifndef ERASE_DEVICE_CPU_CPU_H
#define ERASE_DEVICE_CPU_CPU_H

#include "lib/device/device.h"

/* A CPU kernel: reads its arguments, computes, returns ERASE_OK or a failure
 * (which becomes the stream's sticky error). */
typedef erase_status_t (*erase_cpu_kernel_fn)(const void *args);

/*
 * Enqueue `fn` on a CPU stream with a copy of `args_size` bytes of `args`
 * (at most ERASE_CPU_MAX_ARGS). Errors: ERASE_ERR_INVALID (not a CPU stream,
 * arguments too large), ERASE_ERR_NOMEM.
 */
#define ERASE_CPU_MAX_ARGS 4096
erase_status_t erase_cpu_launch(erase_stream_t *stream, erase_cpu_kernel_fn fn, const void *args,
                                size_t args_size);

/*
 * GEMM for use inside a CPU kernel (already on a stream's worker thread):
 * runs synchronously through the loaded BLAS with the device's BLAS thread
 * count. Row-major, C = alpha op(A) op(B) + beta C with op(A) m x k,
 * op(B) k x n (as erase_sgemm); the caller has validated the shapes.
 */
void erase_cpu_gemm_f32(int transa, int transb, int m, int n, int k, float alpha, const float *a,
                        int lda, const float *b, int ldb, float beta, float *c, int ldc);
void erase_cpu_gemm_f64(int transa, int transb, int m, int n, int k, double alpha,
                        const double *a, int lda, const double *b, int ldb, double beta, double *c,
                        int ldc);

/*
 * Split a kernel's loop over the threads of the stream that runs it:
 * fn(ctx, begin, end) is called on disjoint ranges that cover [0, n), each
 * starting at a multiple of `grain` (0 means 1), on the calling stream's
 * worker and, when a stream has more than one thread
 * (erase_device_set_blas_threads: the threads of a stream, for its GEMMs
 * and its other kernels alike; the BLAS itself may be held to fewer, as in
 * a ThreadSanitizer build or with a library whose threads erase cannot
 * set), on up to that many minus one helper threads of the device's
 * kernel team (lib/device/cpu/cpu_team.c); returns when every range has
 * run. Alone on the caller, as one call fn(ctx, 0, n): outside a stream's
 * worker, with one thread per stream, with n <= grain, or
 * while another stream's region holds the team. How [0, n) is split
 * depends on the thread count, so fn must write for each index what that
 * index alone decides: a sum over indices is summed in blocks whose
 * bounds do not depend on the split (one range per block), then the blocks
 * in order, and gives the same bits on any number of threads. fn runs
 * with the stream worker's floating-point mode and must not launch or
 * wait for stream operations. No error return: fn reports through ctx.
 */
typedef void (*erase_cpu_range_fn)(void *ctx, size_t begin, size_t end);
void erase_cpu_parallel(size_t n, size_t grain, erase_cpu_range_fn fn, void *ctx);

/* The grain of an element-wise loop given to erase_cpu_parallel: about
 * ten microseconds of work a part (fewer elements are not split). */
#define ERASE_CPU_PARALLEL_ELEMENTS 16384

/*
 * Whether another stream's worker is blocked waiting (a stream wait on an
 * event) for an operation of the stream whose kernel calls this: 1 or 0;
 * always 0 outside a stream's worker thread, and a host thread's
 * synchronize does not count. A kernel that polls for something outside
 * the process (a receive: lib/comm/mpi_comm.c) polls closely while it is
 * awaited (the waiting worker is blocked, so its core usually idles) and
 * sleeps longer between polls otherwise, when the core runs compute.
 */
int erase_cpu_stream_awaited(void);

/*
 * Sleep up to `ns` nanoseconds (CLOCK_MONOTONIC; ns <= 0: return at once;
 * capped at an hour), returning early, within a thread wake-up, once
 * another stream's worker blocks waiting for the stream whose kernel calls
 * this, or erase_cpu_stream_wake wakes it (at once if either happened
 * already: a wake-up before the nap is kept for it); outside a stream's
 * worker thread, a plain nanosleep(ns) (resumed after a signal). For a
 * kernel that polls (lib/comm/mpi_wait.c): it naps long while its core
 * runs compute, each wake-up preempting the compute thread, and still
 * goes on at once when the compute stream came to need it. No error
 * return; the caller checks what it polls for after every nap.
 */
void erase_cpu_stream_nap(int64_t ns);

/* The stream whose worker thread calls this; NULL on any other thread.
 * No error return. */
erase_stream_t *erase_cpu_stream_current(void);

/* End stream s's worker's erase_cpu_stream_nap now, or its next one at
 * once. s: a CPU stream. Any thread; no error return. */
void erase_cpu_stream_wake(erase_stream_t *s);

/*
 * Have every CPU stream worker (of every device) call fn after each
 * operation it completes, with no lock of the stream held; NULL: none. For
 * progress that the compute thread can drive between its operations
 * without a wake-up of its own (lib/comm/mpi_wait.c tests the waiting
 * sends and receives). fn runs often: it must return within microseconds
 * and never wait for another operation (short locks only).
 * Process-wide; the last call wins. No error return.
 */
void erase_cpu_set_progress_hook(void (*fn)(void));

#endif
