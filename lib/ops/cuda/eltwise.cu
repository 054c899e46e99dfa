/*
 * Elementwise ops on CUDA: relu, gelu (exact and tanh form), dropout, axpy,
 * concat. Grid-stride kernels of ERASE_CUDA_THREADS threads; the arithmetic
 * is that of the CPU kernels (lib/ops/cpu/kernels_impl.h): gelu in double
 * precision (both forms), dropout
 * from the same Philox4x32-10 stream (lib/core/philox.h), so masks match
 * the CPU bit for bit.
 */
#include "lib/ops/cuda/common.cuh"

// ---------------------------------------------------------------------------
// CUDA kernels

/* y = max(x, 0), NaN kept (x <= 0 is false for NaN). */
__global__ void relu_forward_kernel(size_t n, const float *x, float *y)
{
    ERASE_CUDA_GRID_LOOP(i, n)
    {
        float v = x[i];
        y[i] = v <= 0.0f ? 0.0f : v;
    }
}

/* dx = dy where y > 0, else 0. */
__global__ void relu_backward_kernel(size_t n, const float *y, const float *dy, float *dx)
{
    ERASE_CUDA_GRID_LOOP(i, n)
    dx[i] = y[i] > 0.0f ? dy[i] : 0.0f;
}

/* Exact-erf GELU in double precision, rounded once to float. */
__global__ void gelu_forward_kernel(size_t n, const float *x, float *y)
{
    ERASE_CUDA_GRID_LOOP(i, n)
    {
        double v = x[i];
        y[i] = (float)(0.5 * v * (1.0 + erf(v * 0.70710678118654752440)));
    }
}

/* dx = dy * (Phi(x) + x * phi(x)), in double precision. */
__global__ void gelu_backward_kernel(size_t n, const float *x, const float *dy, float *dx)
{
    ERASE_CUDA_GRID_LOOP(i, n)
    {
        double v = x[i];
        double cdf = 0.5 * (1.0 + erf(v * 0.70710678118654752440));
        double pdf = 0.39894228040143267794 * exp(-0.5 * v * v);
        dx[i] = (float)(dy[i] * (cdf + v * pdf));
    }
}

/* sqrt(2/pi) and the cubic coefficient of GPT-2's tanh GELU. */
#define GELU_TANH_K 0.79788456080286535588
#define GELU_TANH_C 0.044715

/* y = 0.5 x (1 + tanh(u)), u = k (x + c x^3), as x sigmoid(2u) (the same
 * function, without the cancellation of 1 + tanh(u) for x far below 0, as
 * the CPU kernel) in double precision, rounded once; y == x allowed (each
 * element is read before it is written). */
__global__ void gelu_tanh_forward_kernel(size_t n, const float *x, float *y)
{
    ERASE_CUDA_GRID_LOOP(i, n)
    {
        double v = x[i], u = GELU_TANH_K * (v + GELU_TANH_C * v * v * v);
        y[i] = (float)(v / (1.0 + exp(-2.0 * u)));
    }
}

/* dx = dy (s + 2 x s (1 - s) k (1 + 3 c x^2)), s = sigmoid(2u), in double
 * precision (exp overflowing for x far below 0 gives s = 0, not NaN);
 * dx == dy allowed. */
__global__ void gelu_tanh_backward_kernel(size_t n, const float *x, const float *dy, float *dx)
{
    ERASE_CUDA_GRID_LOOP(i, n)
    {
        double v = x[i], u = GELU_TANH_K * (v + GELU_TANH_C * v * v * v);
        double s = 1.0 / (1.0 + exp(-2.0 * u));
        double du = GELU_TANH_K * (1.0 + 3.0 * GELU_TANH_C * v * v);
        dx[i] = (float)(dy[i] * (s + 2.0 * v * s * (1.0 - s) * du));
    }
}

/* One thread per Philox block of 4 elements: block j of the stream
 * (seed, offset) decides elements 4j .. 4j+3, as erase_philox_uniform. */
__global__ void dropout_kernel(size_t n, float p, float scale, uint64_t seed, uint64_t offset,
                               const float *x, float *y)
{
    size_t blocks = (n + 3) / 4;
    ERASE_CUDA_GRID_LOOP(j, blocks)
    {
        uint64_t block = offset + j;
        uint32_t ctr[4] = { (uint32_t)block, (uint32_t)(block >> 32), 0, 0 }, out[4];
        erase_philox4x32(seed, ctr, out);
        for (int k = 0; k < 4; k++) {
            size_t i = 4 * j + k;
            if (i < n) {
                float u = (float)(out[k] >> 8) * (1.0f / 16777216.0f);
                y[i] = u >= p ? x[i] * scale : 0.0f;
            }
        }
    }
}

/* y += alpha * x. */
__global__ void axpy_kernel(size_t n, float alpha, const float *x, float *y)
{
    ERASE_CUDA_GRID_LOOP(i, n)
    y[i] += alpha * x[i];
}

/* The inputs of a concat, passed by value. */
typedef struct {
    int n, total;
    int widths[ERASE_CONCAT_MAX], offsets[ERASE_CONCAT_MAX];
    const float *xs[ERASE_CONCAT_MAX];
    float *dxs[ERASE_CONCAT_MAX];
} concat_params_t;

/* Input holding column c of the concatenation (c < total). */
__device__ inline int concat_input(const concat_params_t &p, int c)
{
    int i = 0;
    while (i + 1 < p.n && c >= p.offsets[i + 1])
        i++;
    return i;
}

/* y[r, c] = x_i[r, c - offset_i] over batch * total elements. */
__global__ void concat_forward_kernel(size_t elems, concat_params_t p, float *y)
{
    ERASE_CUDA_GRID_LOOP(e, elems)
    {
        size_t r = e / p.total;
        int c = (int)(e % p.total), i = concat_input(p, c);
        y[e] = p.xs[i][r * p.widths[i] + (c - p.offsets[i])];
    }
}

/* dx_i[r, c - offset_i] = dy[r, c]; NULL dx_i skipped. */
__global__ void concat_backward_kernel(size_t elems, concat_params_t p, const float *dy)
{
    ERASE_CUDA_GRID_LOOP(e, elems)
    {
        size_t r = e / p.total;
        int c = (int)(e % p.total), i = concat_input(p, c);
        if (p.dxs[i])
            p.dxs[i][r * p.widths[i] + (c - p.offsets[i])] = dy[e];
    }
}

// ---------------------------------------------------------------------------
// kernel launchers

extern "C" erase_status_t erase_cuda_op_relu_forward(erase_stream_t *s, size_t n, const float *x,
                                                     float *y)
{
    ERASE_CHECK(erase_cuda_launch_n(s, "relu forward", relu_forward_kernel, n, x, y));
    return ERASE_OK;
}

extern "C" erase_status_t erase_cuda_op_relu_backward(erase_stream_t *s, size_t n, const float *y,
                                                      const float *dy, float *dx)
{
    ERASE_CHECK(erase_cuda_launch_n(s, "relu backward", relu_backward_kernel, n, y, dy, dx));
    return ERASE_OK;
}

extern "C" erase_status_t erase_cuda_op_gelu_forward(erase_stream_t *s, size_t n, const float *x,
                                                     float *y)
{
    ERASE_CHECK(erase_cuda_launch_n(s, "gelu forward", gelu_forward_kernel, n, x, y));
    return ERASE_OK;
}

extern "C" erase_status_t erase_cuda_op_gelu_backward(erase_stream_t *s, size_t n, const float *x,
                                                      const float *dy, float *dx)
{
    ERASE_CHECK(erase_cuda_launch_n(s, "gelu backward", gelu_backward_kernel, n, x, dy, dx));
    return ERASE_OK;
}

extern "C" erase_status_t erase_cuda_op_gelu_tanh_forward(erase_stream_t *s, size_t n,
                                                          const float *x, float *y)
{
    ERASE_CHECK(erase_cuda_launch_n(s, "gelu tanh forward", gelu_tanh_forward_kernel, n, x, y));
    return ERASE_OK;
}

extern "C" erase_status_t erase_cuda_op_gelu_tanh_backward(erase_stream_t *s, size_t n,
                                                           const float *x, const float *dy,
                                                           float *dx)
{
    ERASE_CHECK(
        erase_cuda_launch_n(s, "gelu tanh backward", gelu_tanh_backward_kernel, n, x, dy, dx));
    return ERASE_OK;
}

extern "C" erase_status_t erase_cuda_op_dropout(erase_stream_t *s, size_t n, float p, uint64_t seed,
                                                uint64_t offset, const float *x, float *y)
{
    if (n == 0)
        return ERASE_OK;
    float scale = p < 1 ? (float)(1.0 / (1.0 - p)) : 0; /* as the CPU kernel */
    size_t blocks = (n + 3) / 4;
    dropout_kernel<<<erase_cuda_blocks(blocks, ERASE_CUDA_THREADS), ERASE_CUDA_THREADS, 0,
                     erase_cuda_stream(s)>>>(n, p, scale, seed, offset, x, y);
    ERASE_CUDA_CHECK_LAUNCH("dropout");
    return ERASE_OK;
}

extern "C" erase_status_t erase_cuda_op_axpy(erase_stream_t *s, size_t n, float alpha,
                                             const float *x, float *y)
{
    ERASE_CHECK(erase_cuda_launch_n(s, "axpy", axpy_kernel, n, alpha, x, y));
    return ERASE_OK;
}

/* The shape part of a concat's parameters: widths and column offsets. */
static void concat_params(concat_params_t *p, int n, const int *widths)
{
    memset(p, 0, sizeof *p);
    p->n = n;
    for (int i = 0; i < n; i++) {
        p->widths[i] = widths[i];
        p->offsets[i] = p->total;
        p->total += widths[i];
    }
}

extern "C" erase_status_t erase_cuda_op_concat_forward(erase_stream_t *s, int batch, int n,
                                                       const int *widths, const float *const *xs,
                                                       float *y)
{
    concat_params_t p;
    concat_params(&p, n, widths);
    for (int i = 0; i < n; i++)
        p.xs[i] = xs[i];
    size_t elems = (size_t)batch * p.total;
    ERASE_CHECK(erase_cuda_launch_n(s, "concat forward", concat_forward_kernel, elems, p, y));
    return ERASE_OK;
}

extern "C" erase_status_t erase_cuda_op_concat_backward(erase_stream_t *s, int batch, int n,
                                                        const int *widths, const float *dy,
                                                        float *const *dxs)
{
    concat_params_t p;
    concat_params(&p, n, widths);
    for (int i = 0; i < n; i++)
        p.dxs[i] = dxs[i];
    size_t elems = (size_t)batch * p.total;
    ERASE_CHECK(erase_cuda_launch_n(s, "concat backward", concat_backward_kernel, elems, p, dy));
    return ERASE_OK;
}
