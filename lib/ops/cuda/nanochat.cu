/*
 * The nanochat model's pointwise and per-row ops of lib/ops/ops.h on CUDA
 * (parameter-free RMSNorm, rotary embedding, ReLU squared, logit softcap),
 * with the arithmetic of the CPU kernels of lib/ops/cpu/nanochat_cpu.c:
 * RMSNorm's sums in double, one warp per row in a fixed lane order (no
 * atomics: repeated runs give the same bits); the pointwise ops one thread
 * per element (the rotary: per rotated pair) in grid-stride loops.
 * Formulas: RMSNorm y = x / sqrt(mean(x^2) + eps) (torch.nn.functional.
 * rms_norm without weight); rotary as nanochat's apply_rotary_emb (half-split
 * pairs, inv_freq = 1 / base^(2i/hd)); relu2 = relu(x)^2; softcap
 * y = cap tanh(x / cap) (Gemma 2's logit soft-capping, as nanochat).
 * The grouped-query attention is in attention.cu.
 */
#include "lib/ops/cuda/common.cuh"

// ---------------------------------------------------------------------------
// CUDA kernels

/* Rows [rows, dim] grid-stride over warps: rstd[r] = (float)(1 /
 * sqrt(sum x^2 / dim + eps)) with the sum in double, y = x * rstd (floats). */
__global__ void rmsnorm_forward_kernel(int rows, int dim, double eps, const float *x, float *y,
                                       float *rstd)
{
    int lane = threadIdx.x & 31;
    size_t warp = ((size_t)blockIdx.x * blockDim.x + threadIdx.x) >> 5;
    size_t warps = ((size_t)gridDim.x * blockDim.x) >> 5;
    for (size_t r = warp; r < (size_t)rows; r += warps) {
        const float *xr = x + r * dim;
        float *yr = y + r * dim;
        double ss = 0;
        for (int i = lane; i < dim; i += 32)
            ss += (double)xr[i] * xr[i];
        ss = erase_warp_sum(ss);
        float rs = (float)(1.0 / sqrt(ss / dim + eps));
        for (int i = lane; i < dim; i += 32)
            yr[i] = xr[i] * rs;
        if (lane == 0)
            rstd[r] = rs;
    }
}

/* dx of rows grid-stride over warps, in double: with m = sum(dy x rstd) /
 * dim, dx = rstd (dy - x rstd m). */
__global__ void rmsnorm_backward_kernel(int rows, int dim, const float *x, const float *rstd,
                                        const float *dy, float *dx)
{
    int lane = threadIdx.x & 31;
    size_t warp = ((size_t)blockIdx.x * blockDim.x + threadIdx.x) >> 5;
    size_t warps = ((size_t)gridDim.x * blockDim.x) >> 5;
    for (size_t r = warp; r < (size_t)rows; r += warps) {
        const float *xr = x + r * dim, *dyr = dy + r * dim;
        float *dxr = dx + r * dim;
        double rs = rstd[r], dot = 0;
        for (int i = lane; i < dim; i += 32)
            dot += (double)dyr[i] * xr[i] * rs;
        double m = erase_warp_sum(dot) / dim;
        for (int i = lane; i < dim; i += 32)
            dxr[i] = (float)(rs * (dyr[i] - xr[i] * rs * m));
    }
}

/* One thread per pair (b, t, h, i), i < hd/2, of x [batch, T, heads, hd]:
 * angle = (t0 + t) / base^(2i/hd) in float; (x1, x2) = (x[i], x[i + hd/2])
 * rotates to (x1 c + x2 s, -x1 s + x2 c) with c = cos, s = sign sin
 * (sign -1: the inverse rotation, the backward). */
__global__ void rotary_kernel(size_t pairs, int T, int t0, int heads, int hd, float base, float sign,
                              const float *x, float *y)
{
    const int d = hd / 2;
    ERASE_CUDA_GRID_LOOP(e, pairs)
    {
        int i = (int)(e % d);
        size_t row = e / d; /* (b * T + t) * heads + h */
        int t = (int)(row / heads % T);
        /* the power in double, rounded once: the CPU kernel's bits
         * (lib/ops/cpu/nanochat_cpu.c rotary_positions), not device powf's */
        float inv_freq = 1.0f / (float)pow((double)base, (double)((float)(2 * i) / (float)hd));
        float angle = (float)(t0 + t) * inv_freq;
        float c = cosf(angle), sn = sign * sinf(angle);
        size_t off = row * hd;
        float x1 = x[off + i], x2 = x[off + i + d];
        y[off + i] = x1 * c + x2 * sn;
        y[off + i + d] = -x1 * sn + x2 * c;
    }
}

/* y = max(x, 0)^2. */
__global__ void relu2_forward_kernel(size_t n, const float *x, float *y)
{
    ERASE_CUDA_GRID_LOOP(i, n)
    {
        float r = x[i] > 0 ? x[i] : 0.0f;
        y[i] = r * r;
    }
}

/* dx = dy 2 max(x, 0), the CPU kernel's product: a NaN or infinite dy
 * stays non-finite where x <= 0 (dy * 0), as ops.h's formula. */
__global__ void relu2_backward_kernel(size_t n, const float *x, const float *dy, float *dx)
{
    ERASE_CUDA_GRID_LOOP(i, n)
    dx[i] = dy[i] * 2.0f * (x[i] > 0.0f ? x[i] : 0.0f);
}

/* y = cap tanh(x / cap). */
__global__ void softcap_forward_kernel(size_t n, float cap, const float *x, float *y)
{
    ERASE_CUDA_GRID_LOOP(i, n)
    y[i] = cap * tanhf(x[i] / cap);
}

/* From the forward's output y: dx = dy (1 - (y / cap)^2). */
__global__ void softcap_backward_kernel(size_t n, float cap, const float *y, const float *dy, float *dx)
{
    ERASE_CUDA_GRID_LOOP(i, n)
    {
        float u = y[i] / cap;
        dx[i] = dy[i] * (1.0f - u * u);
    }
}

// ---------------------------------------------------------------------------
// kernel launchers

/* Blocks of a kernel with a warp per row. */
static unsigned warp_row_blocks(int rows) { return erase_cuda_blocks((size_t)rows * 32, ERASE_CUDA_THREADS); }

extern "C" erase_status_t erase_cuda_op_rmsnorm_forward(erase_stream_t *s, int rows, int dim, float eps,
                                                        const float *x, float *y, float *rstd)
{
    if (rows == 0)
        return ERASE_OK;
    rmsnorm_forward_kernel<<<warp_row_blocks(rows), ERASE_CUDA_THREADS, 0, erase_cuda_stream(s)>>>(
        rows, dim, eps, x, y, rstd);
    ERASE_CUDA_CHECK_LAUNCH("rmsnorm forward");
    return ERASE_OK;
}

extern "C" erase_status_t erase_cuda_op_rmsnorm_backward(erase_stream_t *s, int rows, int dim, const float *x,
                                                         const float *rstd, const float *dy, float *dx)
{
    if (rows == 0)
        return ERASE_OK;
    rmsnorm_backward_kernel<<<warp_row_blocks(rows), ERASE_CUDA_THREADS, 0, erase_cuda_stream(s)>>>(
        rows, dim, x, rstd, dy, dx);
    ERASE_CUDA_CHECK_LAUNCH("rmsnorm backward");
    return ERASE_OK;
}

extern "C" erase_status_t erase_cuda_op_rotary(erase_stream_t *s, int batch, int T, int t0, int heads, int hd,
                                               float base, int inverse, const float *x, float *y)
{
    size_t pairs = (size_t)batch * T * heads * (hd / 2);
    ERASE_CHECK(erase_cuda_launch_n(s, "rotary", rotary_kernel, pairs, T, t0, heads, hd, base,
                                    inverse ? -1.0f : 1.0f, x, y));
    return ERASE_OK;
}

extern "C" erase_status_t erase_cuda_op_relu2_forward(erase_stream_t *s, size_t n, const float *x, float *y)
{
    ERASE_CHECK(erase_cuda_launch_n(s, "relu2 forward", relu2_forward_kernel, n, x, y));
    return ERASE_OK;
}

extern "C" erase_status_t erase_cuda_op_relu2_backward(erase_stream_t *s, size_t n, const float *x,
                                                       const float *dy, float *dx)
{
    ERASE_CHECK(erase_cuda_launch_n(s, "relu2 backward", relu2_backward_kernel, n, x, dy, dx));
    return ERASE_OK;
}

extern "C" erase_status_t erase_cuda_op_softcap_forward(erase_stream_t *s, size_t n, float cap, const float *x,
                                                        float *y)
{
    ERASE_CHECK(erase_cuda_launch_n(s, "softcap forward", softcap_forward_kernel, n, cap, x, y));
    return ERASE_OK;
}

extern "C" erase_status_t erase_cuda_op_softcap_backward(erase_stream_t *s, size_t n, float cap, const float *y,
                                                         const float *dy, float *dx)
{
    ERASE_CHECK(erase_cuda_launch_n(s, "softcap backward", softcap_backward_kernel, n, cap, y, dy, dx));
    return ERASE_OK;
}
