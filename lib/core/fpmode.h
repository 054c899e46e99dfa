/*
 * Flush-to-zero (FTZ) and denormals-are-zero (DAZ) for the threads that
 * compute on the CPU. Once a model fits its data, its losses and gradients
 * reach subnormal floats (below 1.18e-38), and every SSE/AVX operation on
 * them takes a slow microcode path (5-15x slower training on Intel CPUs).
 * FTZ writes zero instead of a subnormal result; DAZ reads a subnormal
 * operand as zero. Both are per-thread state (MXCSR on x86-64, FPCR.FZ on
 * AArch64), copied by a new thread from the thread that creates it.
 *
 * Policy: on, unless the environment sets ERASE_FTZ=0 (to measure the
 * penalty, or to compare results bit for bit with a run that keeps
 * subnormals). Every thread of erase that computes calls
 * erase_fp_thread_init() when it starts: the CPU device on the thread that
 * opens it, before the BLAS library is loaded (so that the BLAS's own pool
 * threads, created at load, inherit it), each stream's worker thread and the
 * data readers' prefetch threads.
 */
#ifndef ERASE_CORE_FPMODE_H
#define ERASE_CORE_FPMODE_H

#include "lib/core/status.h"

/* Bits of erase_fp_flush_state(). */
enum { ERASE_FP_FTZ = 1, ERASE_FP_DAZ = 2 };

/* 1 if this build can set FTZ and DAZ (x86-64, AArch64), else 0. */
int erase_fp_flush_supported(void);

/*
 * The process policy from ERASE_FTZ, read once: *on = 1 if unset, empty or
 * "1", 0 if "0". Errors: ERASE_ERR_INVALID for any other value (message
 * names the variable and the value).
 */
erase_status_t erase_fp_flush_policy(int *on);

/* Set (on = 1) or clear (on = 0) FTZ and DAZ on the calling thread; returns
 * erase_fp_flush_state() afterwards. A no-op where not supported. */
unsigned erase_fp_flush_set(int on);

/* Apply the policy to the calling thread; an invalid ERASE_FTZ counts as on
 * here (erase_fp_flush_policy reports it). Returns erase_fp_flush_state(). */
unsigned erase_fp_thread_init(void);

/* ERASE_FP_FTZ | ERASE_FP_DAZ as set on the calling thread (0 if unsupported). */
unsigned erase_fp_flush_state(void);

/* The policy in words for device lines: "flush-to-zero on",
 * "flush-to-zero off (ERASE_FTZ=0)" or "flush-to-zero unsupported". */
const char *erase_fp_flush_describe(void);

#endif
