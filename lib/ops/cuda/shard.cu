/*
 * The sharded tables' exchange ops of lib/ops/ops.h on CUDA (shard route,
 * gather rows, sparse split), with the row and owner helpers of ops.h
 * (erase_embedding_row, erase_shard_range_owner) the CPU kernels use.
 * Route: every entry padded first, then one thread per (table, rank) walks
 * the table's samples and their columns in order and writes the ids the
 * rank owns (the stable per-owner order without a scan; n x hotness <=
 * capacity). Split: the rows
 * are ascending, so a row's place in its owner's slot is its index minus
 * the first index of the owner's range (a binary search). Deterministic;
 * failures raise ERASE_CUDA_FAULT_SHARD_ROUTE, _GATHER_ROW, _SPARSE_SPLIT.
 */
#include "lib/ops/cuda/common.cuh"

// ---------------------------------------------------------------------------
// CUDA kernels

/* send_rows[e] = ERASE_SHARD_PAD over every entry; send_counts[e] = 0 for
 * the first `slots` entries. */
__global__ void shard_pad_kernel(size_t entries, uint32_t *send_rows, size_t slots,
                                 int *send_counts)
{
    ERASE_CUDA_GRID_LOOP(e, entries)
    {
        send_rows[e] = ERASE_SHARD_PAD;
        if (e < slots)
            send_counts[e] = 0;
    }
}

/* Item e = (table t = e / ranks, rank r = e % ranks): t's present ids
 * owned by r, in (sample, column) order; rank 0's item also marks the
 * columns past a bag's length with a pad in pos. */
__global__ void shard_route_kernel(size_t items, int n, int tables, erase_cuda_bag_t bag, int ranks, int tmax,
                                   int capacity, const uint32_t *ids, const uint32_t *table_rows,
                                   const int64_t *bounds, const int32_t *slot,
                                   uint32_t *send_rows, int *send_counts, uint32_t *pos,
                                   int *fault)
{
    ERASE_CUDA_GRID_LOOP(e, items)
    {
        int t = (int)(e / ranks), r = (int)(e % ranks);
        const int64_t *b = bounds + (size_t)t * (ranks + 1);
        int k = slot[(size_t)t * ranks + r];
        int j = 0;
        for (int i = 0; i < n; i++) {
            int len = erase_cuda_bag_length(bag, (size_t)i, t, fault);
            for (int h = 0; h < bag.hotness[t]; h++) {
                size_t c = (size_t)i * bag.columns + bag.offset[t] + h;
                if (h >= len) {
                    if (r == 0)
                        pos[c] = ERASE_SHARD_PAD;
                    continue;
                }
                uint32_t row = erase_embedding_row(ids[c], table_rows[t]);
                int owner = erase_shard_range_owner(b, ranks, row);
                if (owner == ranks && r == 0)
                    erase_cuda_raise(fault, ERASE_CUDA_FAULT_SHARD_ROUTE);
                if (owner != r)
                    continue;
                if (k < 0 || k >= tmax) {
                    erase_cuda_raise(fault, ERASE_CUDA_FAULT_SHARD_ROUTE);
                    continue;
                }
                size_t at = ((size_t)r * tmax + (size_t)k) * capacity + (size_t)j++;
                send_rows[at] = (uint32_t)(row - b[r]);
                pos[c] = (uint32_t)at;
            }
        }
        if (k >= 0 && k < tmax)
            send_counts[(size_t)r * tmax + (size_t)k] = j;
    }
}

/* out[i*out_stride + c] = src[index[i*index_stride]*dim + c], 0 for a pad. */
__global__ void gather_rows_kernel(size_t elems, int dim, const uint32_t *index,
                                   size_t index_stride, const float *src, int64_t src_rows,
                                   float *out, size_t out_stride, int *fault)
{
    ERASE_CUDA_GRID_LOOP(e, elems)
    {
        size_t i = e / dim;
        int c = (int)(e % dim);
        uint32_t j = index[i * index_stride];
        if (j == ERASE_SHARD_PAD) {
            out[i * out_stride + c] = 0.0f;
        } else if ((int64_t)j >= src_rows) {
            if (c == 0)
                erase_cuda_raise(fault, ERASE_CUDA_FAULT_GATHER_ROW);
        } else {
            out[i * out_stride + c] = src[(size_t)j * dim + c];
        }
    }
}

/* The first index i < n with rows[i] >= key (rows ascending), n if none. */
__device__ inline int shard_lower_bound(const uint32_t *rows, int n, int64_t key)
{
    int lo = 0, hi = n;
    while (lo < hi) {
        int mid = lo + (hi - lo) / 2;
        if ((int64_t)rows[mid] < key)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* Item r: rank r's count into its slot; the faults of the whole split. */
__global__ void split_counts_kernel(size_t ranks, int capacity, const int *count,
                                    const uint32_t *rows, const int64_t *bounds,
                                    const int32_t *slot_index, int *out_counts, int *fault)
{
    ERASE_CUDA_GRID_LOOP(r, ranks)
    {
        int n = *count;
        if (n < 0) {
            if (r == 0)
                erase_cuda_raise(fault, ERASE_CUDA_FAULT_SPARSE_SPLIT);
            continue;
        }
        int lo = shard_lower_bound(rows, n, bounds[r]), hi = shard_lower_bound(rows, n, bounds[r + 1]);
        int q = slot_index[r];
        if (q >= 0)
            out_counts[q] = hi - lo;
        if ((q < 0 && hi > lo) || hi - lo > capacity || (r == ranks - 1 && hi < n))
            erase_cuda_raise(fault, ERASE_CUDA_FAULT_SPARSE_SPLIT);
    }
}

/* Element e = (row i, column c) of the gradient (a device-sized grid loop). */
__global__ void split_values_kernel(int capacity, int dim, const int *count, const uint32_t *rows,
                                    const float *values, int ranks, const int64_t *bounds,
                                    const int32_t *slot_index, uint32_t *out_rows,
                                    float *out_values)
{
    int n = *count;
    if (n < 0)
        return;
    ERASE_CUDA_GRID_LOOP(e, (size_t)n * dim)
    {
        int i = (int)(e / dim), c = (int)(e % dim);
        uint32_t row = rows[i];
        int r = erase_shard_range_owner(bounds, ranks, row);
        if (r == ranks || slot_index[r] < 0)
            continue; /* split_counts_kernel raised the fault */
        int j = i - shard_lower_bound(rows, n, bounds[r]);
        if (j >= capacity)
            continue;
        size_t at = (size_t)slot_index[r] * capacity + (size_t)j;
        out_values[at * dim + c] = values[e];
        if (c == 0)
            out_rows[at] = (uint32_t)(row - bounds[r]);
    }
}

// ---------------------------------------------------------------------------
// kernel launchers

extern "C" erase_status_t erase_cuda_op_shard_route(erase_stream_t *s, int n, int tables,
                                                    const erase_bag_t *bag, const uint32_t *ids,
                                                    const uint32_t *table_rows, int ranks,
                                                    const int64_t *bounds, const int32_t *slot,
                                                    int tmax, int capacity, uint32_t *send_rows,
                                                    int *send_counts, uint32_t *pos)
{
    size_t entries = (size_t)ranks * tmax * capacity, slots = (size_t)ranks * tmax;
    ERASE_CHECK(erase_cuda_launch_n(s, "shard route: pad", shard_pad_kernel, entries, send_rows,
                                    slots, send_counts));
    if (n == 0)
        return ERASE_OK;
    ERASE_CHECK(erase_cuda_launch_n(s, "shard route", shard_route_kernel, (size_t)tables * ranks, n,
                                    tables, erase_cuda_bag(bag, tables), ranks, tmax, capacity, ids, table_rows, bounds, slot,
                                    send_rows, send_counts, pos, erase_cuda_fault_word(s)));
    return ERASE_OK;
}

extern "C" erase_status_t erase_cuda_op_gather_rows(erase_stream_t *s, int n, int dim,
                                                    const uint32_t *index, size_t index_stride,
                                                    const float *src, int64_t src_rows, float *out,
                                                    size_t out_stride)
{
    ERASE_CHECK(erase_cuda_launch_n(s, "gather rows", gather_rows_kernel, (size_t)n * dim, dim,
                                    index, index_stride, src, src_rows, out, out_stride,
                                    erase_cuda_fault_word(s)));
    return ERASE_OK;
}

extern "C" erase_status_t erase_cuda_op_sparse_split(erase_stream_t *s, int capacity, int dim,
                                                     const int *count, const uint32_t *rows,
                                                     const float *values, int ranks,
                                                     const int64_t *bounds,
                                                     const int32_t *slot_index, int *out_counts,
                                                     uint32_t *out_rows, float *out_values)
{
    ERASE_CHECK(erase_cuda_launch_n(s, "sparse split: counts", split_counts_kernel, (size_t)ranks,
                                    capacity, count, rows, bounds, slot_index, out_counts,
                                    erase_cuda_fault_word(s)));
    split_values_kernel<<<ERASE_CUDA_DEVICE_SIZED_BLOCKS, ERASE_CUDA_THREADS, 0,
                          erase_cuda_stream(s)>>>(capacity, dim, count, rows, values, ranks,
                                                  bounds, slot_index, out_rows, out_values);
    ERASE_CUDA_CHECK_LAUNCH("sparse split: values");
    return ERASE_OK;
}
