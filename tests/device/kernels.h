/* Small CPU kernels for device-layer tests: deterministic float updates,
 * gates the host opens, and checks that record what a consumer saw. */
#ifndef ERASE_TESTS_DEVICE_KERNELS_H
#define ERASE_TESTS_DEVICE_KERNELS_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "lib/device/device.h"

/* x[i] = x[i] * a + b for i < n. */
erase_status_t k_affine(erase_stream_t *s, float *x, size_t n, float a, float b);
/* y[i] += x[i] * w for i < n. */
erase_status_t k_axpy(erase_stream_t *s, float *y, const float *x, size_t n, float w);
/* x[i] = value for i < n, after spinning `spin_ns` nanoseconds. */
erase_status_t k_fill(erase_stream_t *s, float *x, size_t n, float value, int64_t spin_ns);
/* ++*bad unless x[i] == expected for all i < n; *bad is only touched by this stream. */
erase_status_t k_expect(erase_stream_t *s, const float *x, size_t n, float expected, int64_t *bad);
/* Block the stream's worker until *gate != 0 (host opens it). */
erase_status_t k_gate(erase_stream_t *s, atomic_int *gate);
/* Append `value` to log[(*len)++] (one stream only). */
erase_status_t k_append(erase_stream_t *s, int *log, int *len, int value);
/* Spin for `ns` nanoseconds. */
erase_status_t k_spin(erase_stream_t *s, int64_t ns);
/* *seen = 1 as soon as erase_cpu_stream_awaited() says another stream's
 * worker waits for s, polling for at most `ns` nanoseconds; else 0. */
erase_status_t k_awaited(erase_stream_t *s, int *seen, int64_t ns);
/* erase_cpu_stream_nap(ns); *slept = the nanoseconds it took. */
erase_status_t k_nap(erase_stream_t *s, int64_t ns, int64_t *slept);
/* *current = erase_cpu_stream_current() inside a kernel of s. */
erase_status_t k_current(erase_stream_t *s, erase_stream_t **current);
/* Fail with ERASE_ERR_BACKEND and the message `text`. */
erase_status_t k_fail(erase_stream_t *s, const char *text);

#endif
