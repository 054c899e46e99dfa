/*
 * Optimizer ops on CUDA (not optim.cu: lib/nn/optim.o would share its
 * archive member name). The clock (step, lr, nonfinite) lives in device
 * memory: every update kernel reads it when it runs, so a captured step
 * graph replays with the current values. Formulas are those of the CPU
 * kernels (lib/ops/cpu/optim_cpu.c): PyTorch's SGD with momentum, AdamW
 * (Loshchilov and Hutter, ICLR 2019) with bias corrections computed in
 * double and rounded to float, torchrec's exact row-wise Adagrad; the
 * sum of squares of gradient-norm clipping (double, a fixed-order
 * two-pass reduction: bitwise the same for equal inputs) and the clip;
 * Muon (Keller Jordan's, as nanochat's muon.py) with its Newton-Schulz
 * products through erase_sgemm (cuBLAS), in single precision.
 */
#include "lib/ops/cuda/common.cuh"

// ---------------------------------------------------------------------------
// CUDA kernels

/* One thread: step += 1, lr from the schedule, nonfinite cleared. */
__global__ void clock_kernel(erase_optim_clock_t *clock, erase_lr_schedule_t schedule)
{
    clock->step += 1;
    clock->lr = (float)erase_lr_at(&schedule, clock->step);
    clock->nonfinite = 0;
}

/* Whether v is NaN or infinite (comparisons with NaN are false). */
__device__ inline int not_finite(float v) { return !(fabsf(v) <= FLT_MAX); }

/* n values (or n per row times *rows) checked; a warp that finds one sets
 * clock->nonfinite to `code` if it is still 0 (an integer CAS: the first
 * finding is kept). No thread leaves before the vote. */
__global__ void check_finite_kernel(const float *x, size_t n, const int *rows, int code,
                                    erase_optim_clock_t *clock)
{
    size_t total = rows ? (size_t)(*rows > 0 ? *rows : 0) * n : n;
    int bad = 0;
    ERASE_CUDA_GRID_LOOP(i, total)
    bad |= not_finite(x[i]);
    if (__any_sync(ERASE_CUDA_FULL_MASK, bad) && (threadIdx.x & 31) == 0)
        atomicCAS((int *)&clock->nonfinite, 0, code);
}

/* Threads of the single-block sum of the per-block partial sums. */
#define SUMSQ_THREADS 1024

/* partial[block] = the block's sum of x[i]^2 in double: each thread's
 * grid-stride items in order, then erase_block_sum. The grid depends only
 * on n (erase_cuda_blocks), so the order is fixed. */
__global__ void sum_squares_kernel(size_t n, const float *x, double *partial)
{
    double acc = 0.0;
    ERASE_CUDA_GRID_LOOP(i, n)
    acc += (double)x[i] * x[i];
    acc = erase_block_sum(acc);
    if (threadIdx.x == 0)
        partial[blockIdx.x] = acc;
}

/* One block: *acc += the partial sums added in a fixed order (rounded once). */
__global__ void __launch_bounds__(SUMSQ_THREADS)
    sum_squares_total_kernel(unsigned parts, const double *partial, float *acc)
{
    double sum = erase_block_sum_of(partial, parts);
    if (threadIdx.x == 0)
        *acc = (float)((double)*acc + sum);
}

/* x *= c with c = max_norm / (sqrt(*sumsq) + 1e-6) in float when c < 1,
 * as torch.nn.utils.clip_grad_norm_ and the CPU kernel (a NaN norm leaves
 * x as it is: the step's finiteness check skips the step). */
__global__ void clip_by_norm_kernel(size_t n, float *x, const float *sumsq, float max_norm)
{
    float c = max_norm / (sqrtf(*sumsq) + 1e-6f);
    if (!(c < 1.0f))
        return;
    ERASE_CUDA_GRID_LOOP(i, n)
    x[i] *= c;
}

/* SGD with momentum: g' = g + wd w; buf = mu buf + g' (g' at step 1). */
__global__ void sgd_kernel(size_t n, float *w, const float *g, float *buf,
                           const erase_optim_clock_t *clock, float lr_mult, float momentum,
                           float wd)
{
    if (clock->nonfinite)
        return; /* a non-finite gradient somewhere: the step is skipped */
    float lr = clock->lr * lr_mult;
    int first = clock->step <= 1;
    ERASE_CUDA_GRID_LOOP(i, n)
    {
        float gi = g[i] + wd * w[i];
        if (buf) {
            buf[i] = first ? gi : momentum * buf[i] + gi;
            gi = buf[i];
        }
        w[i] -= lr * gi;
    }
}

/* AdamW; thread 0 of each block computes the step's scalars. */
__global__ void adamw_kernel(size_t n, float *w, const float *g, float *m, float *v,
                             const erase_optim_clock_t *clock, float lr_mult, float beta1,
                             float beta2, float eps, float wd)
{
    __shared__ float scalars[3]; /* step_size, sqrt(bc2), decay */
    if (clock->nonfinite)
        return; /* uniform over the grid: no thread reaches the barrier */
    if (threadIdx.x == 0) {
        float lr = clock->lr * lr_mult;
        double t = (double)clock->step;
        float bc1 = (float)(1.0 - pow((double)beta1, t)), bc2 = (float)(1.0 - pow((double)beta2, t));
        scalars[0] = lr / bc1;
        scalars[1] = sqrtf(bc2);
        scalars[2] = 1.0f - lr * wd;
    }
    __syncthreads();
    float step_size = scalars[0], bc2_sqrt = scalars[1], decay = scalars[2];
    ERASE_CUDA_GRID_LOOP(i, n)
    {
        float gi = g[i];
        w[i] *= decay;
        m[i] = beta1 * m[i] + (1.0f - beta1) * gi;
        v[i] = beta2 * v[i] + (1.0f - beta2) * gi * gi;
        w[i] -= step_size * m[i] / (sqrtf(v[i]) / bc2_sqrt + eps);
    }
}

/* torch.lerp(a, b, t), as the CPU kernel. */
__device__ inline float muon_lerp(float a, float b, float t)
{
    return t < 0.5f ? a + t * (b - a) : b - (b - a) * (1.0f - t);
}

/* Muon's momentum and Nesterov step: buf = lerp(buf, g, 1 - mu); the
 * update lerp(g, buf, mu) into x [k, n], transposed when tall. Nothing
 * on a non-finite step (the rest of the update is then skipped too). */
__global__ void muon_momentum_kernel(size_t n, int64_t cols, int64_t wide, int tall, float *buf,
                                     const float *g, float *x, const erase_optim_clock_t *clock,
                                     float momentum, int64_t warmup)
{
    if (clock->nonfinite)
        return;
    float mu = erase_muon_momentum_at(momentum, warmup, clock->step);
    ERASE_CUDA_GRID_LOOP(i, n)
    {
        buf[i] = muon_lerp(buf[i], g[i], 1.0f - mu);
        float u = muon_lerp(g[i], buf[i], mu);
        size_t r = i / (size_t)cols, c = i % (size_t)cols;
        x[tall ? c * (size_t)wide + r : i] = u;
    }
}

/* x /= sqrt(*sumsq) + 1e-7 (the Frobenius norm, as the CPU kernel). */
__global__ void muon_normalize_kernel(size_t n, float *x, const float *sumsq)
{
    float denom = (float)sqrt((double)*sumsq) + 1e-7f;
    ERASE_CUDA_GRID_LOOP(i, n)
    x[i] /= denom;
}

/* out = c * in. */
__global__ void muon_scale_kernel(size_t n, float *out, const float *in, float c)
{
    ERASE_CUDA_GRID_LOOP(i, n)
    out[i] = c * in[i];
}

/* w -= lr lr_mult sqrt(max(1, rows / cols)) x (x transposed back when tall). */
__global__ void muon_apply_kernel(size_t n, int64_t rows, int64_t cols, int tall, float *w,
                                  const float *x, const erase_optim_clock_t *clock, float lr_mult)
{
    if (clock->nonfinite)
        return;
    float aspect = (float)rows / (float)cols;
    float step = clock->lr * lr_mult * sqrtf(aspect > 1.0f ? aspect : 1.0f);
    ERASE_CUDA_GRID_LOOP(i, n)
    {
        size_t r = i / (size_t)cols, c = i % (size_t)cols;
        w[i] -= step * x[tall ? c * (size_t)rows + r : i];
    }
}

/* Row-wise Adagrad: one warp per gradient row (rows distinct, as
 * erase_embedding_backward and erase_sparse_merge give them). */
__global__ void adagrad_kernel(int dim, float *table, float *acc, const uint32_t *grad_rows,
                               const float *grad_values, const int *count,
                               const erase_optim_clock_t *clock, float lr_mult, float eps)
{
    if (clock->nonfinite)
        return;
    float lr = clock->lr * lr_mult;
    int lane = threadIdx.x & 31;
    int warp = (int)((blockIdx.x * (size_t)blockDim.x + threadIdx.x) >> 5);
    int warps = (int)((gridDim.x * (size_t)blockDim.x) >> 5);
    int rows = *count;
    for (int i = warp; i < rows; i += warps) {
        const float *gi = grad_values + (size_t)i * dim;
        uint32_t row = grad_rows[i];
        float *w = table + (size_t)row * dim;
        float sq = 0.0f;
        for (int d = lane; d < dim; d += 32)
            sq += gi[d] * gi[d];
        sq = erase_warp_sum(sq);
        float a = acc[row] + sq / (float)dim;
        __syncwarp();
        if (lane == 0)
            acc[row] = a;
        float scale = lr / (sqrtf(a) + eps);
        for (int d = lane; d < dim; d += 32)
            w[d] -= scale * gi[d];
    }
}

/* Sparse SGD over *count rows x dim. */
__global__ void sparse_sgd_kernel(int dim, float *table, const uint32_t *grad_rows,
                                  const float *grad_values, const int *count,
                                  const erase_optim_clock_t *clock, float lr_mult)
{
    if (clock->nonfinite)
        return;
    float lr = clock->lr * lr_mult;
    size_t total = (size_t)(*count > 0 ? *count : 0) * dim;
    ERASE_CUDA_GRID_LOOP(e, total)
    {
        size_t i = e / dim;
        table[(size_t)grad_rows[i] * dim + e % dim] -= lr * grad_values[e];
    }
}

// ---------------------------------------------------------------------------
// kernel launchers

extern "C" erase_status_t erase_cuda_op_optim_clock_advance(erase_stream_t *s,
                                                            erase_optim_clock_t *clock,
                                                            const erase_lr_schedule_t *schedule)
{
    clock_kernel<<<1, 1, 0, erase_cuda_stream(s)>>>(clock, *schedule);
    ERASE_CUDA_CHECK_LAUNCH("optimizer clock");
    return ERASE_OK;
}

extern "C" erase_status_t erase_cuda_op_check_finite(erase_stream_t *s, const float *x, size_t n,
                                                     const int *rows, int code,
                                                     erase_optim_clock_t *clock)
{
    /* With rows, the size is on the device: a fixed grid loops over it. */
    unsigned blocks = rows ? ERASE_CUDA_DEVICE_SIZED_BLOCKS : erase_cuda_blocks(n, ERASE_CUDA_THREADS);
    check_finite_kernel<<<blocks, ERASE_CUDA_THREADS, 0, erase_cuda_stream(s)>>>(x, n, rows, code,
                                                                                 clock);
    ERASE_CUDA_CHECK_LAUNCH("check finite");
    return ERASE_OK;
}

extern "C" erase_status_t erase_cuda_op_sgd_update(erase_stream_t *s, size_t n, float *w,
                                                   const float *g, float *buf,
                                                   const erase_optim_clock_t *clock, float lr_mult,
                                                   float momentum, float weight_decay)
{
    ERASE_CHECK(erase_cuda_launch_n(s, "sgd update", sgd_kernel, n, w, g,
                                    momentum != 0.0f ? buf : NULL, clock, lr_mult, momentum,
                                    weight_decay));
    return ERASE_OK;
}

extern "C" erase_status_t erase_cuda_op_adamw_update(erase_stream_t *s, size_t n, float *w,
                                                     const float *g, float *m, float *v,
                                                     const erase_optim_clock_t *clock,
                                                     float lr_mult, float beta1, float beta2,
                                                     float eps, float weight_decay)
{
    ERASE_CHECK(erase_cuda_launch_n(s, "adamw update", adamw_kernel, n, w, g, m, v, clock, lr_mult, beta1, beta2, eps, weight_decay));
    return ERASE_OK;
}

/* erase_muon_update (lib/ops/ops.h); work: X, X2 [k, n], A, B [k, k], then
 * the sum of squares (one float). */
extern "C" erase_status_t erase_cuda_op_muon_update(erase_stream_t *s, int64_t rows, int64_t cols, float *w,
                                                    const float *g, float *buf, float *work,
                                                    const erase_optim_clock_t *clock, float lr_mult,
                                                    float momentum, int64_t momentum_warmup)
{
    int tall = rows > cols;
    int k = (int)(tall ? cols : rows), n = (int)(tall ? rows : cols);
    size_t kn = (size_t)k * n, kk = (size_t)k * k;
    float *x = work, *x2 = x + kn, *am = x2 + kn, *bm = am + kk, *sumsq = bm + kk;
    ERASE_CHECK(erase_cuda_launch_n(s, "muon momentum", muon_momentum_kernel, kn, cols, (int64_t)n, tall, buf,
                                    g, x, clock, momentum, momentum_warmup));
    ERASE_CHECK(erase_memset_async(s, sumsq, 0, sizeof *sumsq));
    ERASE_CHECK(erase_cuda_op_sum_squares(s, kn, x, sumsq));
    ERASE_CHECK(erase_cuda_launch_n(s, "muon normalize", muon_normalize_kernel, kn, x, (const float *)sumsq));
    for (int step = 0; step < ERASE_MUON_NS_STEPS; step++) {
        ERASE_CHECK(erase_sgemm(s, ERASE_NO_TRANS, ERASE_TRANS, k, k, n, 1.0f, x, n, x, n, 0.0f, am, k));
        ERASE_CHECK(erase_cuda_launch_n(s, "muon B", muon_scale_kernel, kk, bm, (const float *)am, ERASE_MUON_NS_B));
        ERASE_CHECK(erase_sgemm(s, ERASE_NO_TRANS, ERASE_NO_TRANS, k, k, k, ERASE_MUON_NS_C, am, k, am, k, 1.0f,
                                bm, k));
        ERASE_CHECK(erase_cuda_launch_n(s, "muon aX", muon_scale_kernel, kn, x2, (const float *)x, ERASE_MUON_NS_A));
        ERASE_CHECK(erase_sgemm(s, ERASE_NO_TRANS, ERASE_NO_TRANS, k, n, k, 1.0f, bm, k, x, n, 1.0f, x2, n));
        float *t = x;
        x = x2;
        x2 = t;
    }
    ERASE_CHECK(erase_cuda_launch_n(s, "muon update", muon_apply_kernel, kn, rows, cols, tall, w,
                                    (const float *)x, clock, lr_mult));
    return ERASE_OK;
}

extern "C" erase_status_t erase_cuda_op_rowwise_adagrad_update(
    erase_stream_t *s, int dim, float *table, float *acc, const uint32_t *grad_rows,
    const float *grad_values, const int *count, const erase_optim_clock_t *clock, float lr_mult,
    float eps)
{
    adagrad_kernel<<<ERASE_CUDA_DEVICE_SIZED_BLOCKS, ERASE_CUDA_THREADS, 0, erase_cuda_stream(s)>>>(
        dim, table, acc, grad_rows, grad_values, count, clock, lr_mult, eps);
    ERASE_CUDA_CHECK_LAUNCH("row-wise adagrad update");
    return ERASE_OK;
}

extern "C" erase_status_t erase_cuda_op_sparse_sgd_update(erase_stream_t *s, int dim, float *table,
                                                          const uint32_t *grad_rows,
                                                          const float *grad_values,
                                                          const int *count,
                                                          const erase_optim_clock_t *clock,
                                                          float lr_mult)
{
    sparse_sgd_kernel<<<ERASE_CUDA_DEVICE_SIZED_BLOCKS, ERASE_CUDA_THREADS, 0,
                        erase_cuda_stream(s)>>>(dim, table, grad_rows, grad_values, count, clock,
                                                lr_mult);
    ERASE_CUDA_CHECK_LAUNCH("sparse sgd update");
    return ERASE_OK;
}

extern "C" erase_status_t erase_cuda_op_sum_squares(erase_stream_t *s, size_t n, const float *x,
                                                    float *acc)
{
    if (n == 0)
        return ERASE_OK;
    cudaStream_t st = erase_cuda_stream(s);
    unsigned blocks = erase_cuda_blocks(n, ERASE_CUDA_THREADS);
    double *partial;
    ERASE_CHECK(erase_cuda_op_scratch(s, sizeof(double) * blocks, (void **)&partial));
    sum_squares_kernel<<<blocks, ERASE_CUDA_THREADS, 0, st>>>(n, x, partial);
    ERASE_CUDA_CHECK_LAUNCH("sum of squares");
    sum_squares_total_kernel<<<1, SUMSQ_THREADS, 0, st>>>(blocks, partial, acc);
    ERASE_CUDA_CHECK_LAUNCH("sum of squares: total");
    return ERASE_OK;
}

extern "C" erase_status_t erase_cuda_op_clip_by_norm(erase_stream_t *s, size_t n, float *x,
                                                     const float *sumsq, float max_norm)
{
    ERASE_CHECK(erase_cuda_launch_n(s, "clip by norm", clip_by_norm_kernel, n, x, sumsq, max_norm));
    return ERASE_OK;
}
