/* Sorted segment reduction (see lib/ops/cuda/sortreduce.cuh). */
#include "lib/ops/cuda/sortreduce.cuh"

#include <limits.h>

#include <cub/device/device_radix_sort.cuh>

/* Threads of the per-segment scan block. */
#define HEADS_THREADS 1024

// ---------------------------------------------------------------------------
// CUDA kernels

/*
 * One block per segment g: walks the sorted entries in tiles; entry i is
 * the head of a run when valid and its row differs from entry i-1's
 * (invalid entries sort last, so a valid entry's predecessor is valid). A
 * block scan numbers the heads: head number u writes out_rows[g][u] and
 * heads[g][u] = i. Finally heads[g][count] = number of valid entries and
 * *out_count[g] = count.
 */
__global__ void __launch_bounds__(HEADS_THREADS)
    sortreduce_heads_kernel(erase_sortreduce_t p, const uint64_t *keys, int *heads)
{
    int g = blockIdx.x;
    const uint64_t *k = keys + (size_t)g * p.seglen;
    int *h = heads + (size_t)g * (p.seglen + 1);
    int count = 0, valid_total = 0; /* same value in every thread */
    for (int tile = 0; tile < p.seglen; tile += blockDim.x) {
        int i = tile + threadIdx.x;
        uint64_t key = i < p.seglen ? k[i] : ERASE_SORT_INVALID(g);
        int valid = !((key >> 32) & 1);
        int head = valid && (i == 0 || (uint32_t)k[i - 1] != (uint32_t)key);
        int heads_in_tile, u = erase_block_scan(head, &heads_in_tile) - 1 + count;
        if (head) {
            h[u] = i;
            p.out_rows[g][u] = (uint32_t)key;
        }
        count += heads_in_tile;
        valid_total += __syncthreads_count(valid);
    }
    if (threadIdx.x == 0) {
        h[count] = valid_total;
        *p.out_count[g] = count;
    }
}

/*
 * chunks[g][i, d] = the sum from 0, in sorted order, of column d of the
 * source vectors of entries i .. i + ERASE_SPARSE_SUM_CHUNK - 1 of the run
 * holding entry i, for every entry i that starts a chunk of its run (a
 * multiple of the chunk size past the run's start); other entries do
 * nothing. The run of entry i: the last run start h[u] <= i (binary
 * search over the `count` starts). Grid: x over seglen * dim, y = segment.
 */
__global__ void sortreduce_chunk_kernel(erase_sortreduce_t p, const int *vals, const int *heads,
                                        float *chunks)
{
    int g = blockIdx.y;
    const int *h = heads + (size_t)g * (p.seglen + 1);
    const int *v = vals + (size_t)g * p.seglen;
    int count = *p.out_count[g];
    int valid = h[count];
    const float *src = p.src + g * p.seg_offset;
    float *part = chunks + (size_t)g * p.seglen * p.dim;
    ERASE_CUDA_GRID_LOOP(e, (size_t)valid * p.dim)
    {
        int i = (int)(e / p.dim), d = (int)(e % p.dim);
        int lo = 0, hi = count - 1; /* h[lo] <= i < h[hi + 1] */
        while (lo < hi) {
            int mid = (lo + hi + 1) / 2;
            if (h[mid] <= i)
                lo = mid;
            else
                hi = mid - 1;
        }
        if ((i - h[lo]) % ERASE_SPARSE_SUM_CHUNK)
            continue;
        int end = min(i + ERASE_SPARSE_SUM_CHUNK, h[lo + 1]);
        float acc = 0.0f;
        for (int j = i; j < end; j++) {
            float x = src[(size_t)v[j] * p.src_stride + d];
            acc += p.divisor ? x / (float)p.divisor[(size_t)v[j] * p.div_stride + g] : x;
        }
        part[e] = acc;
    }
}

/*
 * out_values[g][u, d] = scale * (the chunk sums of run u, column d, added
 * from 0 in order). Grid: x over seglen * dim, y = segment; items past the
 * segment's count do nothing.
 */
__global__ void sortreduce_sum_kernel(erase_sortreduce_t p, const int *heads, const float *chunks)
{
    int g = blockIdx.y;
    const int *h = heads + (size_t)g * (p.seglen + 1);
    size_t count = (size_t)*p.out_count[g];
    const float *part = chunks + (size_t)g * p.seglen * p.dim;
    float *out = p.out_values[g];
    ERASE_CUDA_GRID_LOOP(e, count * p.dim)
    {
        size_t u = e / p.dim;
        int d = (int)(e % p.dim);
        float acc = 0.0f;
        for (int i = h[u]; i < h[u + 1]; i += ERASE_SPARSE_SUM_CHUNK)
            acc += part[(size_t)i * p.dim + d];
        out[e] = acc * p.scale;
    }
}

/*
 * out_values[g][u, d] = scale * the pairwise tree (erase_sparse_merge, lib/ops/ops.h)
 * of the source vectors of run u, column d, over pack indices v[i] /
 * tree_group (ascending within a run: the stable sort kept them so): a
 * stack of partial sums, the top two merged (left + right) while they
 * meet below the level where the next pack meets the top, the rest merged
 * at the end. Pack indices are below 2^31: the stack holds at most 32.
 * Grid: x over seglen * dim, y = segment; items past the count do nothing.
 */
__global__ void sortreduce_tree_kernel(erase_sortreduce_t p, const int *vals, const int *heads)
{
    int g = blockIdx.y;
    const int *h = heads + (size_t)g * (p.seglen + 1);
    const int *v = vals + (size_t)g * p.seglen;
    size_t count = (size_t)*p.out_count[g];
    const float *src = p.src + g * p.seg_offset;
    float *out = p.out_values[g];
    ERASE_CUDA_GRID_LOOP(e, count * p.dim)
    {
        size_t u = e / p.dim;
        int d = (int)(e % p.dim);
        float sum[33];
        int at[33], depth = 0;
        for (int i = h[u]; i < h[u + 1]; i++) {
            int q = v[i] / p.tree_group;
            while (depth >= 2 && 31 - __clz(at[depth - 2] ^ at[depth - 1]) < 31 - __clz(at[depth - 1] ^ q)) {
                sum[depth - 2] += sum[depth - 1];
                depth--;
            }
            float x = src[(size_t)v[i] * p.src_stride + d];
            sum[depth] = p.divisor ? x / (float)p.divisor[(size_t)v[i] * p.div_stride + g] : x;
            at[depth++] = q;
        }
        for (; depth >= 2; depth--)
            sum[depth - 2] += sum[depth - 1];
        out[e] = sum[0] * p.scale;
    }
}

// ---------------------------------------------------------------------------
// launchers

/* Number of bits of x (0 for 0). */
static int bit_width(unsigned x)
{
    int n = 0;
    while (x) {
        n++;
        x >>= 1;
    }
    return n;
}

/* Bits of the sort keys of `segments` segments: 33 for row and invalid flag,
 * then the segment number. */
static int key_bits(int segments) { return 33 + bit_width((unsigned)(segments - 1)); }

/* Round up to 256 bytes, the alignment of each carved buffer. */
static size_t align256(size_t n) { return (n + 255) & ~(size_t)255; }

erase_status_t erase_sortreduce_buffers(erase_stream_t *s, int segments, int seglen, int dim,
                                        erase_sortreduce_buffers_t *b)
{
    size_t n = (size_t)segments * seglen;
    if (n > INT_MAX)
        return ERASE_ERROR(ERASE_ERR_INVALID,
                           "cuda sorted reduction: %d x %d entries (at most %d in all)", segments,
                           seglen, INT_MAX);
    size_t cub_bytes = 0;
    /* Size query only (no device work, allowed while capturing). */
    ERASE_CUDA_CHECK(cub::DeviceRadixSort::SortPairs(
        (void *)NULL, cub_bytes, (const uint64_t *)NULL, (uint64_t *)NULL, (const int *)NULL,
        (int *)NULL, (int)n, 0, key_bits(segments), erase_cuda_stream(s)));
    size_t keys = align256(n * sizeof(uint64_t)), vals = align256(n * sizeof(int));
    size_t heads = align256((size_t)segments * (seglen + 1) * sizeof(int));
    size_t chunks = align256(n * (size_t)(dim > 0 ? dim : 1) * sizeof(float));
    char *base;
    ERASE_CHECK(erase_cuda_op_scratch(s, 2 * keys + 2 * vals + heads + chunks + align256(cub_bytes),
                                      (void **)&base));
    b->keys = (uint64_t *)base;
    b->keys_sorted = (uint64_t *)(base + keys);
    b->vals = (int *)(base + 2 * keys);
    b->vals_sorted = (int *)(base + 2 * keys + vals);
    b->heads = (int *)(base + 2 * keys + 2 * vals);
    b->chunks = (float *)(base + 2 * keys + 2 * vals + heads);
    b->cub_tmp = base + 2 * keys + 2 * vals + heads + chunks;
    b->cub_bytes = cub_bytes;
    return ERASE_OK;
}

erase_status_t erase_sortreduce_sort(erase_stream_t *s, const erase_sortreduce_buffers_t *b,
                                     int segments, int seglen)
{
    int n = segments * seglen; /* at most INT_MAX: erase_sortreduce_buffers checked it */
    size_t cub_bytes = b->cub_bytes;
    if (n > 0)
        ERASE_CUDA_CHECK(cub::DeviceRadixSort::SortPairs(b->cub_tmp, cub_bytes, b->keys,
                                                         b->keys_sorted, b->vals, b->vals_sorted,
                                                         n, 0, key_bits(segments),
                                                         erase_cuda_stream(s)));
    return ERASE_OK;
}

erase_status_t erase_sortreduce_run(erase_stream_t *s, const erase_sortreduce_buffers_t *b,
                                    const erase_sortreduce_t *p)
{
    cudaStream_t st = erase_cuda_stream(s);
    int n = p->segments * p->seglen;
    ERASE_CHECK(erase_sortreduce_sort(s, b, p->segments, p->seglen));
    sortreduce_heads_kernel<<<(unsigned)p->segments, HEADS_THREADS, 0, st>>>(*p, b->keys_sorted,
                                                                              b->heads);
    ERASE_CUDA_CHECK_LAUNCH("sorted reduction: runs");
    if (n > 0) {
        dim3 grid(erase_cuda_blocks((size_t)p->seglen * p->dim, ERASE_CUDA_THREADS),
                  (unsigned)p->segments);
        if (p->tree_group > 0) {
            sortreduce_tree_kernel<<<grid, ERASE_CUDA_THREADS, 0, st>>>(*p, b->vals_sorted, b->heads);
            ERASE_CUDA_CHECK_LAUNCH("sorted reduction: tree sums");
            return ERASE_OK;
        }
        sortreduce_chunk_kernel<<<grid, ERASE_CUDA_THREADS, 0, st>>>(*p, b->vals_sorted, b->heads,
                                                                     b->chunks);
        ERASE_CUDA_CHECK_LAUNCH("sorted reduction: chunk sums");
        sortreduce_sum_kernel<<<grid, ERASE_CUDA_THREADS, 0, st>>>(*p, b->heads, b->chunks);
        ERASE_CUDA_CHECK_LAUNCH("sorted reduction: sums");
    }
    return ERASE_OK;
}
