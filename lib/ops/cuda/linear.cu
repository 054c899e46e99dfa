/*
 * Linear layer on CUDA: the products through erase_sgemm (cuBLAS in the
 * CUDA backend), the bias add and the bias gradient here. db is a column
 * sum in a fixed order (erase_colsum: no atomics, bitwise reproducible).
 */
#include "lib/ops/cuda/common.cuh"

// ---------------------------------------------------------------------------
// CUDA kernels

/* y[r, j] += b[j] over batch * out elements. */
__global__ void bias_add_kernel(size_t elems, int out, const float *b, float *y)
{
    ERASE_CUDA_GRID_LOOP(e, elems)
    y[e] += b[e % out];
}

/* Element (r, c) of dy[batch, out], the term of db[c]. */
struct dy_term {
    const float *dy;
    int out;
    __device__ float operator()(int r, int c) const { return dy[(size_t)r * out + c]; }
};

// ---------------------------------------------------------------------------
// kernel launchers

extern "C" erase_status_t erase_cuda_op_linear_forward(erase_stream_t *s, int batch, int in,
                                                       int out, const float *x, const float *w,
                                                       const float *b, float *y)
{
    cudaStream_t st = erase_cuda_stream(s);
    if (in > 0)
        ERASE_CHECK(erase_sgemm(s, ERASE_NO_TRANS, ERASE_TRANS, batch, out, in, 1.0f, x, in, w, in,
                                0.0f, y, out));
    else
        ERASE_CUDA_CHECK(cudaMemsetAsync(y, 0, sizeof(float) * (size_t)batch * out, st));
    if (b) {
        size_t elems = (size_t)batch * out;
        bias_add_kernel<<<erase_cuda_blocks(elems, ERASE_CUDA_THREADS), ERASE_CUDA_THREADS, 0, st>>>(
            elems, out, b, y);
        ERASE_CUDA_CHECK_LAUNCH("linear forward: bias");
    }
    return ERASE_OK;
}

extern "C" erase_status_t erase_cuda_op_linear_backward(erase_stream_t *s, int batch, int in,
                                                        int out, const float *x, const float *w,
                                                        const float *dy, float *dx, float *dw,
                                                        float *db)
{
    cudaStream_t st = erase_cuda_stream(s);
    if (dx && batch > 0)
        ERASE_CHECK(erase_sgemm(s, ERASE_NO_TRANS, ERASE_NO_TRANS, batch, in, out, 1.0f, dy, out, w,
                                in, 0.0f, dx, in));
    if (dw) {
        if (batch > 0)
            ERASE_CHECK(erase_sgemm(s, ERASE_TRANS, ERASE_NO_TRANS, out, in, batch, 1.0f, dy, out,
                                    x, in, 0.0f, dw, in));
        else
            ERASE_CUDA_CHECK(cudaMemsetAsync(dw, 0, sizeof(float) * (size_t)out * in, st));
    }
    if (db) {
        erase_colsum(st, batch, out, dy_term{ dy, out }, db);
        ERASE_CUDA_CHECK_LAUNCH("linear backward: bias gradient");
    }
    return ERASE_OK;
}
