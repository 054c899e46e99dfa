/*
 * The DCNv2 cross layer's elementwise op (lib/ops/ops.h: erase_cross_*) on
 * CUDA: y = x0 * u + xl; backward du = dy * x0, dx0 = dy * u (the CPU
 * backend's lib/ops/cpu/cross_cpu.c, element for element).
 */
#include "lib/ops/cuda/common.cuh"

__global__ void cross_forward_kernel(size_t n, const float *x0, const float *u, const float *xl, float *y)
{
    ERASE_CUDA_GRID_LOOP(i, n)
    y[i] = x0[i] * u[i] + xl[i];
}

/* dy is read before du is written: du may be dy; dx0 may be NULL. */
__global__ void cross_backward_kernel(size_t n, const float *x0, const float *u, const float *dy, float *du,
                                      float *dx0)
{
    ERASE_CUDA_GRID_LOOP(i, n)
    {
        float g = dy[i];
        if (dx0)
            dx0[i] = g * u[i];
        du[i] = g * x0[i];
    }
}

extern "C" erase_status_t erase_cuda_op_cross_forward(erase_stream_t *s, size_t n, const float *x0, const float *u,
                                                      const float *xl, float *y)
{
    ERASE_CHECK(erase_cuda_launch_n(s, "cross forward", cross_forward_kernel, n, x0, u, xl, y));
    return ERASE_OK;
}

extern "C" erase_status_t erase_cuda_op_cross_backward(erase_stream_t *s, size_t n, const float *x0, const float *u,
                                                       const float *dy, float *du, float *dx0)
{
    ERASE_CHECK(erase_cuda_launch_n(s, "cross backward", cross_backward_kernel, n, x0, u, dy, du, dx0));
    return ERASE_OK;
}
