/*
 * Layer norm on CUDA, one warp per row, statistics in double precision as
 * the CPU kernel (two passes: mean, then biased variance; rstd =
 * 1/sqrt(var + eps)). dgamma and dbeta are column sums in a fixed order
 * (erase_colsum), of the same single-precision terms the CPU adds.
 */
#include "lib/ops/cuda/common.cuh"

// ---------------------------------------------------------------------------
// CUDA kernels

/* Forward of rows grid-stride over warps. */
__global__ void layernorm_forward_kernel(int batch, int dim, double eps, const float *x,
                                         const float *gamma, const float *beta, float *y,
                                         float *mean, float *rstd)
{
    int lane = threadIdx.x & 31;
    int warp = (int)((blockIdx.x * (size_t)blockDim.x + threadIdx.x) >> 5);
    int warps = (int)((gridDim.x * (size_t)blockDim.x) >> 5);
    for (int r = warp; r < batch; r += warps) {
        const float *xr = x + (size_t)r * dim;
        float *yr = y + (size_t)r * dim;
        double mu = 0, var = 0;
        for (int d = lane; d < dim; d += 32)
            mu += xr[d];
        mu = erase_warp_sum(mu) / dim;
        for (int d = lane; d < dim; d += 32)
            var += (xr[d] - mu) * (xr[d] - mu);
        var = erase_warp_sum(var) / dim;
        double rs = 1.0 / sqrt(var + eps);
        for (int d = lane; d < dim; d += 32)
            yr[d] = (float)((xr[d] - mu) * rs * gamma[d] + beta[d]);
        if (lane == 0) {
            mean[r] = (float)mu;
            rstd[r] = (float)rs;
        }
    }
}

/* dx of rows grid-stride over warps: rs * (g - (sum g + xhat sum g xhat) / dim)
 * with g = dy * gamma (a float product, as on the CPU). */
__global__ void layernorm_backward_kernel(int batch, int dim, const float *x, const float *gamma,
                                          const float *mean, const float *rstd, const float *dy,
                                          float *dx)
{
    int lane = threadIdx.x & 31;
    int warp = (int)((blockIdx.x * (size_t)blockDim.x + threadIdx.x) >> 5);
    int warps = (int)((gridDim.x * (size_t)blockDim.x) >> 5);
    for (int r = warp; r < batch; r += warps) {
        const float *xr = x + (size_t)r * dim, *dyr = dy + (size_t)r * dim;
        double mu = mean[r], rs = rstd[r], sum_g = 0, sum_gx = 0;
        for (int d = lane; d < dim; d += 32) {
            double xhat = (xr[d] - mu) * rs, g = dyr[d] * gamma[d];
            sum_g += g;
            sum_gx += g * xhat;
        }
        sum_g = erase_warp_sum(sum_g);
        sum_gx = erase_warp_sum(sum_gx);
        float *dxr = dx + (size_t)r * dim;
        for (int d = lane; d < dim; d += 32) {
            double xhat = (xr[d] - mu) * rs;
            dxr[d] = (float)(rs * (dyr[d] * gamma[d] - (sum_g + xhat * sum_gx) / dim));
        }
    }
}

/* Term (r, d) of dgamma: (float)(dy * xhat). */
struct dgamma_term {
    const float *x, *mean, *rstd, *dy;
    int dim;
    __device__ float operator()(int r, int d) const
    {
        size_t i = (size_t)r * dim + d;
        double mu = mean[r], rs = rstd[r], xhat = (x[i] - mu) * rs;
        return (float)(dy[i] * xhat);
    }
};

/* Term (r, d) of dbeta: dy. */
struct dbeta_term {
    const float *dy;
    int dim;
    __device__ float operator()(int r, int d) const { return dy[(size_t)r * dim + d]; }
};

// ---------------------------------------------------------------------------
// kernel launchers

extern "C" erase_status_t erase_cuda_op_layernorm_forward(erase_stream_t *s, int batch, int dim,
                                                          float eps, const float *x,
                                                          const float *gamma, const float *beta,
                                                          float *y, float *mean, float *rstd)
{
    if (batch == 0)
        return ERASE_OK;
    layernorm_forward_kernel<<<erase_cuda_blocks((size_t)batch * 32, ERASE_CUDA_THREADS),
                               ERASE_CUDA_THREADS, 0, erase_cuda_stream(s)>>>(
        batch, dim, eps, x, gamma, beta, y, mean, rstd);
    ERASE_CUDA_CHECK_LAUNCH("layer norm forward");
    return ERASE_OK;
}

extern "C" erase_status_t erase_cuda_op_layernorm_backward(erase_stream_t *s, int batch, int dim,
                                                           const float *x, const float *gamma,
                                                           const float *mean, const float *rstd,
                                                           const float *dy, float *dx,
                                                           float *dgamma, float *dbeta)
{
    cudaStream_t st = erase_cuda_stream(s);
    if (dx && batch > 0) {
        layernorm_backward_kernel<<<erase_cuda_blocks((size_t)batch * 32, ERASE_CUDA_THREADS),
                                    ERASE_CUDA_THREADS, 0, st>>>(batch, dim, x, gamma, mean, rstd,
                                                                 dy, dx);
        ERASE_CUDA_CHECK_LAUNCH("layer norm backward");
    }
    if (dgamma) {
        erase_colsum(st, batch, dim, dgamma_term{ x, mean, rstd, dy, dim }, dgamma);
        ERASE_CUDA_CHECK_LAUNCH("layer norm backward: dgamma");
    }
    if (dbeta) {
        erase_colsum(st, batch, dim, dbeta_term{ dy, dim }, dbeta);
        ERASE_CUDA_CHECK_LAUNCH("layer norm backward: dbeta");
    }
    return ERASE_OK;
}
