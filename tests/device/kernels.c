#include "tests/device/kernels.h"

#include "lib/core/timer.h"
#include "lib/device/cpu/cpu.h"

#include <sched.h>

typedef struct {
    float *y;
    const float *x;
    size_t n;
    float a, b;
    int64_t spin_ns;
    int64_t *bad;
    atomic_int *gate;
    int *log, *len, value;
    const char *text;
} args_t;

static void spin(int64_t ns)
{
    int64_t end = erase_now_ns() + ns;
    while (erase_now_ns() < end)
        ;
}

static erase_status_t affine_fn(const void *p)
{
    const args_t *a = p;
    for (size_t i = 0; i < a->n; i++)
        a->y[i] = a->y[i] * a->a + a->b;
    return ERASE_OK;
}

static erase_status_t axpy_fn(const void *p)
{
    const args_t *a = p;
    for (size_t i = 0; i < a->n; i++)
        a->y[i] += a->x[i] * a->a;
    return ERASE_OK;
}

static erase_status_t fill_fn(const void *p)
{
    const args_t *a = p;
    spin(a->spin_ns);
    for (size_t i = 0; i < a->n; i++)
        a->y[i] = a->a;
    return ERASE_OK;
}

static erase_status_t expect_fn(const void *p)
{
    const args_t *a = p;
    for (size_t i = 0; i < a->n; i++)
        if (a->x[i] != a->a) {
            ++*a->bad;
            break;
        }
    return ERASE_OK;
}

static erase_status_t gate_fn(const void *p)
{
    const args_t *a = p;
    while (!atomic_load(a->gate))
        sched_yield();
    return ERASE_OK;
}

static erase_status_t append_fn(const void *p)
{
    const args_t *a = p;
    a->log[(*a->len)++] = a->value;
    return ERASE_OK;
}

static erase_status_t spin_fn(const void *p)
{
    spin(((const args_t *)p)->spin_ns);
    return ERASE_OK;
}

static erase_status_t awaited_fn(const void *p)
{
    const args_t *a = p;
    int64_t end = erase_now_ns() + a->spin_ns;
    *a->log = 0;
    while (!*a->log && erase_now_ns() < end) {
        *a->log = erase_cpu_stream_awaited();
        sched_yield();
    }
    return ERASE_OK;
}

typedef struct {
    int64_t ns, *slept;
    erase_stream_t **current;
} nap_args_t;

static erase_status_t nap_fn(const void *p)
{
    const nap_args_t *a = p;
    int64_t t0 = erase_now_ns();
    erase_cpu_stream_nap(a->ns);
    *a->slept = erase_now_ns() - t0;
    return ERASE_OK;
}

static erase_status_t current_fn(const void *p)
{
    *((const nap_args_t *)p)->current = erase_cpu_stream_current();
    return ERASE_OK;
}

static erase_status_t fail_fn(const void *p)
{
    return ERASE_ERROR(ERASE_ERR_BACKEND, "%s", ((const args_t *)p)->text);
}

erase_status_t k_affine(erase_stream_t *s, float *x, size_t n, float a, float b)
{
    args_t k = { .y = x, .n = n, .a = a, .b = b };
    return erase_cpu_launch(s, affine_fn, &k, sizeof k);
}

erase_status_t k_axpy(erase_stream_t *s, float *y, const float *x, size_t n, float w)
{
    args_t k = { .y = y, .x = x, .n = n, .a = w };
    return erase_cpu_launch(s, axpy_fn, &k, sizeof k);
}

erase_status_t k_fill(erase_stream_t *s, float *x, size_t n, float value, int64_t spin_ns)
{
    args_t k = { .y = x, .n = n, .a = value, .spin_ns = spin_ns };
    return erase_cpu_launch(s, fill_fn, &k, sizeof k);
}

erase_status_t k_expect(erase_stream_t *s, const float *x, size_t n, float expected, int64_t *bad)
{
    args_t k = { .x = x, .n = n, .a = expected, .bad = bad };
    return erase_cpu_launch(s, expect_fn, &k, sizeof k);
}

erase_status_t k_gate(erase_stream_t *s, atomic_int *gate)
{
    args_t k = { .gate = gate };
    return erase_cpu_launch(s, gate_fn, &k, sizeof k);
}

erase_status_t k_append(erase_stream_t *s, int *log, int *len, int value)
{
    args_t k = { .log = log, .len = len, .value = value };
    return erase_cpu_launch(s, append_fn, &k, sizeof k);
}

erase_status_t k_spin(erase_stream_t *s, int64_t ns)
{
    args_t k = { .spin_ns = ns };
    return erase_cpu_launch(s, spin_fn, &k, sizeof k);
}

erase_status_t k_awaited(erase_stream_t *s, int *seen, int64_t ns)
{
    args_t k = { .log = seen, .spin_ns = ns };
    return erase_cpu_launch(s, awaited_fn, &k, sizeof k);
}

erase_status_t k_nap(erase_stream_t *s, int64_t ns, int64_t *slept)
{
    nap_args_t k = { .ns = ns, .slept = slept };
    return erase_cpu_launch(s, nap_fn, &k, sizeof k);
}

erase_status_t k_current(erase_stream_t *s, erase_stream_t **current)
{
    nap_args_t k = { .current = current };
    return erase_cpu_launch(s, current_fn, &k, sizeof k);
}

erase_status_t k_fail(erase_stream_t *s, const char *text)
{
    args_t k = { .text = text };
    return erase_cpu_launch(s, fail_fn, &k, sizeof k);
}
