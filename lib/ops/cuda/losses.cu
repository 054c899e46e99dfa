/*
 * Losses on CUDA, in double precision as the CPU kernels: binary
 * cross-entropy with logits (l = max(z,0) - z y + log1p(exp(-|z|)), exact
 * for any finite z) and softmax cross-entropy. The mean over the batch is
 * a fixed-order reduction (per-thread sums, warp shuffles, warps in order;
 * no atomics): bitwise the same on every run.
 */
#include "lib/ops/cuda/common.cuh"

/* Threads of the single-block reductions. */
#define LOSS_THREADS 1024

// ---------------------------------------------------------------------------
// CUDA kernels

/* One block: thread t takes samples t, t + blockDim, ...; writes dz and
 * adds its losses; the block sum / batch goes to *loss. */
__global__ void __launch_bounds__(LOSS_THREADS)
    bce_kernel(int batch, const float *z, const float *y, double weight, float *loss, float *dz)
{
    double sum = 0;
    for (int r = threadIdx.x; r < batch; r += blockDim.x) {
        double v = z[r], t = y[r];
        sum += (v > 0 ? v : 0) - v * t + log1p(exp(-fabs(v)));
        if (dz) {
            double sg = v >= 0 ? 1.0 / (1.0 + exp(-v)) : exp(v) / (1.0 + exp(v));
            dz[r] = (float)(weight * (sg - t) / batch);
        }
    }
    sum = erase_block_sum(sum);
    if (threadIdx.x == 0)
        *loss = (float)(batch ? sum / batch : 0);
}

/*
 * One warp per row (rows grid-stride over warps): max, log-sum-exp, the
 * row's loss lse - z[label] into row_loss[r], and dz. A label outside
 * [0, classes) raises ERASE_CUDA_FAULT_CLASS_LABEL and leaves the row out.
 */
__global__ void xent_rows_kernel(int batch, int classes, const float *z, const int32_t *labels,
                                 double weight, float *dz, double *row_loss, int *fault)
{
    int lane = threadIdx.x & 31;
    int warp = (int)((blockIdx.x * (size_t)blockDim.x + threadIdx.x) >> 5);
    int warps = (int)((gridDim.x * (size_t)blockDim.x) >> 5);
    for (int r = warp; r < batch; r += warps) {
        const float *zr = z + (size_t)r * classes;
        int label = labels[r];
        if (label < 0 || label >= classes) {
            if (lane == 0) {
                erase_cuda_raise(fault, ERASE_CUDA_FAULT_CLASS_LABEL);
                row_loss[r] = 0;
            }
            continue;
        }
        double m = -INFINITY;
        for (int c = lane; c < classes; c += 32)
            m = zr[c] > m ? zr[c] : m;
        m = erase_warp_max(m);
        double se = 0;
        for (int c = lane; c < classes; c += 32)
            se += exp(zr[c] - m);
        se = erase_warp_sum(se);
        double lse = m + log(se);
        if (lane == 0)
            row_loss[r] = lse - zr[label];
        if (dz) {
            float *dzr = dz + (size_t)r * classes;
            for (int c = lane; c < classes; c += 32)
                dzr[c] = (float)(weight * (exp(zr[c] - lse) - (c == label)) / batch);
        }
    }
}

/* One block: *loss = (sum of row_loss in a fixed order) / batch. */
__global__ void __launch_bounds__(LOSS_THREADS)
    mean_kernel(int batch, const double *row_loss, float *loss)
{
    double sum = erase_block_sum_of(row_loss, (size_t)batch);
    if (threadIdx.x == 0)
        *loss = (float)(batch ? sum / batch : 0);
}

// ---------------------------------------------------------------------------
// kernel launchers

extern "C" erase_status_t erase_cuda_op_bce_with_logits(erase_stream_t *s, int batch, const float *z,
                                                        const float *y, float weight, float *loss,
                                                        float *dz)
{
    bce_kernel<<<1, LOSS_THREADS, 0, erase_cuda_stream(s)>>>(batch, z, y, weight, loss, dz);
    ERASE_CUDA_CHECK_LAUNCH("bce with logits");
    return ERASE_OK;
}

extern "C" erase_status_t erase_cuda_op_softmax_xent(erase_stream_t *s, int batch, int classes,
                                                     const float *z, const int32_t *labels,
                                                     float weight, float *loss, float *dz)
{
    cudaStream_t st = erase_cuda_stream(s);
    double *row_loss = NULL;
    if (batch > 0) {
        ERASE_CHECK(erase_cuda_op_scratch(s, sizeof(double) * (size_t)batch, (void **)&row_loss));
        xent_rows_kernel<<<erase_cuda_blocks((size_t)batch * 32, ERASE_CUDA_THREADS),
                           ERASE_CUDA_THREADS, 0, st>>>(batch, classes, z, labels, weight, dz,
                                                        row_loss, erase_cuda_fault_word(s));
        ERASE_CUDA_CHECK_LAUNCH("softmax cross-entropy: rows");
    }
    mean_kernel<<<1, LOSS_THREADS, 0, st>>>(batch, row_loss, loss);
    ERASE_CUDA_CHECK_LAUNCH("softmax cross-entropy: mean");
    return ERASE_OK;
}
