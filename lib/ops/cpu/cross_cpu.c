/*
 * The DCNv2 cross layer's elementwise op (lib/ops/ops.h: erase_cross_*) on
 * the CPU backend: y = x0 * u + xl; backward du = dy * x0, dx0 = dy * u.
 * Element-wise, split over the stream's threads (erase_cpu_parallel); each
 * element's value does not depend on the split.
 */
#include "lib/ops/cpu/ops_cpu.h"

#include "lib/core/simd.h"

typedef struct {
    size_t n;
    const float *x0, *u, *xl, *dy;
    float *y, *du, *dx0;
} cross_args_t;

ERASE_SIMD_CLONES static void cross_fwd_range(void *p, size_t begin, size_t end)
{
    const cross_args_t *a = p;
    const float *x0 = a->x0, *u = a->u, *xl = a->xl;
    float *y = a->y;
    for (size_t i = begin; i < end; i++)
        y[i] = x0[i] * u[i] + xl[i];
}

/* dy is read before du is written: du may be dy. */
ERASE_SIMD_CLONES static void cross_bwd_range(void *p, size_t begin, size_t end)
{
    const cross_args_t *a = p;
    const float *x0 = a->x0, *u = a->u, *dy = a->dy;
    float *du = a->du, *dx0 = a->dx0;
    if (dx0) {
        for (size_t i = begin; i < end; i++) {
            float g = dy[i];
            dx0[i] = g * u[i];
            du[i] = g * x0[i];
        }
    } else {
        for (size_t i = begin; i < end; i++)
            du[i] = dy[i] * x0[i];
    }
}

static erase_status_t cross_fwd_k(const void *p)
{
    cross_args_t a = *(const cross_args_t *)p;
    erase_cpu_parallel(a.n, ERASE_CPU_PARALLEL_ELEMENTS, cross_fwd_range, &a);
    return ERASE_OK;
}

static erase_status_t cross_bwd_k(const void *p)
{
    cross_args_t a = *(const cross_args_t *)p;
    erase_cpu_parallel(a.n, ERASE_CPU_PARALLEL_ELEMENTS, cross_bwd_range, &a);
    return ERASE_OK;
}

erase_status_t erase_cpu_cross_forward(erase_stream_t *s, size_t n, const float *x0, const float *u, const float *xl,
                                       float *y)
{
    cross_args_t a = { .n = n, .x0 = x0, .u = u, .xl = xl, .y = y };
    LAUNCH(s, cross_fwd_k, a);
}

erase_status_t erase_cpu_cross_backward(erase_stream_t *s, size_t n, const float *x0, const float *u,
                                        const float *dy, float *du, float *dx0)
{
    cross_args_t a = { .n = n, .x0 = x0, .u = u, .dy = dy, .du = du, .dx0 = dx0 };
    LAUNCH(s, cross_bwd_k, a);
}
