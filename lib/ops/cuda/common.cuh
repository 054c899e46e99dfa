/*
 * Shared pieces of the CUDA kernels of lib/ops/cuda: the C headers of erase
 * included with C linkage (system headers first, so that their include
 * guards keep them out of the extern "C" block), grid sizes for grid-stride
 * loops, warp-shuffle and block reductions with a fixed order (results are
 * bitwise reproducible run to run: no floating-point atomics anywhere), the
 * fault helper, and a column-sum kernel.
 */
#ifndef ERASE_OPS_CUDA_COMMON_CUH
#define ERASE_OPS_CUDA_COMMON_CUH

#include <float.h>
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cuda_runtime_api.h>

extern "C" {
#include "lib/core/philox.h"
#include "lib/core/status.h"
#include "lib/device/device.h"
#include "lib/ops/cuda/ops_cuda.h"
}
#include "lib/device/cuda/cuda.h"

/* Threads per block of the grid-stride kernels. */
#define ERASE_CUDA_THREADS 256
/* Most blocks a grid-stride kernel launches (larger sizes loop). */
#define ERASE_CUDA_MAX_BLOCKS 8192
/* Blocks of kernels whose size is only known on the device (row counts). */
#define ERASE_CUDA_DEVICE_SIZED_BLOCKS 512
#define ERASE_CUDA_FULL_MASK 0xffffffffu

/* Launchers run with the stream's device current: lib/ops/ops.c makes it
 * current before dispatching every CUDA op (a kernel launched into another
 * device's stream fails, and CUB sizes its launches for the current one). */

/* Blocks of `threads` threads covering n items (at least 1, at most
 * ERASE_CUDA_MAX_BLOCKS; kernels loop over the rest). */
static inline unsigned erase_cuda_blocks(size_t n, unsigned threads)
{
    size_t b = (n + threads - 1) / threads;
    if (b < 1)
        b = 1;
    if (b > ERASE_CUDA_MAX_BLOCKS)
        b = ERASE_CUDA_MAX_BLOCKS;
    return (unsigned)b;
}

/* Launch kernel(n, args...) with erase_cuda_blocks(n) blocks of
 * ERASE_CUDA_THREADS threads on the stream of s (a grid-stride kernel over
 * n items); n == 0 launches nothing. Errors: ERASE_ERR_BACKEND naming
 * `what` (a bad launch). */
template <typename... Params, typename... Args>
static inline erase_status_t erase_cuda_launch_n(erase_stream_t *s, const char *what,
                                                 void (*kernel)(size_t, Params...), size_t n,
                                                 Args... args)
{
    if (n == 0)
        return ERASE_OK;
    kernel<<<erase_cuda_blocks(n, ERASE_CUDA_THREADS), ERASE_CUDA_THREADS, 0,
             erase_cuda_stream(s)>>>(n, args...);
    ERASE_CUDA_CHECK_LAUNCH(what);
    return ERASE_OK;
}

/* First index and stride of a 1-D grid-stride loop. */
#define ERASE_CUDA_GRID_LOOP(i, n)                                                           \
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < (size_t)(n);          \
         i += (size_t)gridDim.x * blockDim.x)

/* Sum over the 32 lanes of a warp (butterfly: every lane gets the same
 * bits, as IEEE addition is commutative; the order is fixed). All lanes
 * must call it. */
template <typename T> __device__ inline T erase_warp_sum(T v)
{
    for (int o = 16; o > 0; o >>= 1)
        v += __shfl_xor_sync(ERASE_CUDA_FULL_MASK, v, o);
    return v;
}

/* Maximum over the 32 lanes of a warp (every lane gets it). */
template <typename T> __device__ inline T erase_warp_max(T v)
{
    for (int o = 16; o > 0; o >>= 1) {
        T u = __shfl_xor_sync(ERASE_CUDA_FULL_MASK, v, o);
        v = u > v ? u : v;
    }
    return v;
}

/* Reduce one value per thread over a block (blockDim.x a multiple of 32,
 * at most 1024) with warp_op (erase_warp_sum, erase_warp_max): each warp,
 * then warp 0's lanes reduce the warps' results in a fixed order (lanes
 * past the warps hold `identity`). Every thread gets the result. All
 * threads must call it; it synchronizes the block. */
template <typename T, typename WarpOp>
__device__ inline T erase_block_reduce(T v, T identity, WarpOp warp_op)
{
    __shared__ T part[32];
    int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = blockDim.x >> 5;
    v = warp_op(v);
    __syncthreads(); /* part[] may still be read by a previous call */
    if (lane == 0)
        part[warp] = v;
    __syncthreads();
    return warp_op(lane < warps ? part[lane] : identity);
}

/* Sum over a block in double, in a fixed order (erase_block_reduce). */
__device__ inline double erase_block_sum(double v)
{
    return erase_block_reduce(v, 0.0, [](double x) { return erase_warp_sum(x); });
}

/* Maximum over a block (erase_block_reduce). */
__device__ inline float erase_block_max(float v)
{
    return erase_block_reduce(v, -INFINITY, [](float x) { return erase_warp_max(x); });
}

/* Sum of v[0..n) over one block: thread t adds v[t], v[t + blockDim.x],
 * ... in order, then erase_block_sum. Every thread gets it. */
__device__ inline double erase_block_sum_of(const double *v, size_t n)
{
    double sum = 0.0;
    for (size_t i = threadIdx.x; i < n; i += blockDim.x)
        sum += v[i];
    return erase_block_sum(sum);
}

/* Inclusive prefix sum of one int per thread over a block (blockDim.x a
 * multiple of 32, at most 1024); *total gets the block's sum. Every thread
 * must call it; it synchronizes the block. */
__device__ inline int erase_block_scan(int v, int *total)
{
    __shared__ int part[32];
    int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = blockDim.x >> 5;
    for (int o = 1; o < 32; o <<= 1) {
        int t = __shfl_up_sync(ERASE_CUDA_FULL_MASK, v, o);
        if (lane >= o)
            v += t;
    }
    __syncthreads(); /* part[] may still be read by a previous call */
    if (lane == 31)
        part[warp] = v;
    __syncthreads();
    if (warp == 0) {
        int w = lane < warps ? part[lane] : 0;
        for (int o = 1; o < 32; o <<= 1) {
            int t = __shfl_up_sync(ERASE_CUDA_FULL_MASK, w, o);
            if (lane >= o)
                w += t;
        }
        part[lane] = w;
    }
    __syncthreads();
    if (warp > 0)
        v += part[warp - 1];
    *total = part[warps - 1];
    return v;
}

/* Report a kernel-time failure through the device's fault word (the first
 * fault is kept); see lib/device/cuda/cuda.h. */
__device__ inline void erase_cuda_raise(int *fault, int code)
{
    atomicCAS(fault, 0, code);
}

/* A bag layout (lib/ops/ops.h) by value for kernels: hotness, each
 * field's first column, H, the lengths (device, NULL: one id each). */
typedef struct {
    int hotness[ERASE_FIELDS_MAX], offset[ERASE_FIELDS_MAX];
    int fields, columns, mean;
    const uint32_t *lengths;
} erase_cuda_bag_t;

static inline erase_cuda_bag_t erase_cuda_bag(const erase_bag_t *bag, int fields)
{
    erase_cuda_bag_t b;
    memset(&b, 0, sizeof b);
    b.fields = fields;
    b.mean = bag->pooling == ERASE_BAG_MEAN;
    b.lengths = bag->lengths;
    for (int f = 0; f < fields; f++) {
        b.hotness[f] = bag->hotness[f];
        b.offset[f] = b.columns;
        b.columns += bag->hotness[f];
    }
    return b;
}

/* Sample r's length of field f; one outside [1, hotness] raises
 * ERASE_CUDA_FAULT_BAG_LENGTH and reads as 1 (nothing out of bounds). */
__device__ inline int erase_cuda_bag_length(const erase_cuda_bag_t &b, size_t r, int f, int *fault)
{
    if (!b.lengths)
        return 1;
    uint32_t n = b.lengths[r * b.fields + f];
    if (n < 1 || n > (uint32_t)b.hotness[f]) {
        erase_cuda_raise(fault, ERASE_CUDA_FAULT_BAG_LENGTH);
        return 1;
    }
    return (int)n;
}

/*
 * out[c] = sum over r < rows of term(r, c) for c < cols, in single
 * precision (as the CPU kernels accumulate). Blocks of 32 x 32 threads:
 * thread (x, y) of block b owns column 32b + x and sums rows y, y + 32,
 * ... in order; thread y = 0 then adds the 32 partial sums in order of y.
 * The order depends only on the shape: bitwise reproducible.
 */
template <typename Term>
__global__ void __launch_bounds__(1024) erase_colsum_kernel(int rows, int cols, Term term, float *out)
{
    __shared__ float part[32][33];
    int c = blockIdx.x * 32 + threadIdx.x;
    float acc = 0.0f;
    if (c < cols)
        for (int r = threadIdx.y; r < rows; r += 32)
            acc += term(r, c);
    part[threadIdx.y][threadIdx.x] = acc;
    __syncthreads();
    if (threadIdx.y == 0 && c < cols) {
        float sum = 0.0f;
        for (int y = 0; y < 32; y++)
            sum += part[y][threadIdx.x];
        out[c] = sum;
    }
}

/* Launch erase_colsum_kernel for a rows x cols term on `st`. */
template <typename Term>
static inline void erase_colsum(cudaStream_t st, int rows, int cols, Term term, float *out)
{
    dim3 threads(32, 32);
    erase_colsum_kernel<<<(unsigned)((cols + 31) / 32), threads, 0, st>>>(rows, cols, term, out);
}

#endif
