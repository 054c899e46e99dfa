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

#endif
