/*
 * Sparse-gradient pack and merge on CUDA. Pack copies each table's rows
 * and values into its fixed-capacity slot; a count outside [0, capacity]
 * raises ERASE_CUDA_FAULT_SPARSE_PACK_CAPACITY. Merge is a sorted segment
 * reduction (sortreduce.cuh) with one segment per table holding the
 * ranks' slots in rank order: the stable sort keeps rank order among equal
 * rows, and a row's vectors are summed as the pairwise tree over the pack
 * index (slot / (tables x capacity)), then scaled, as the CPU's k-way
 * merge does, bit for bit. A pack count outside [0, capacity] raises
 * ERASE_CUDA_FAULT_SPARSE_MERGE_COUNT (that pack is left out).
 */
#include "lib/ops/cuda/sortreduce.cuh"

#include <limits.h>

/* Sources of a pack, passed by value. */
typedef struct {
    int capacity, dim;
    const int *count[ERASE_FIELDS_MAX];
    const uint32_t *rows[ERASE_FIELDS_MAX];
    const float *values[ERASE_FIELDS_MAX];
} pack_params_t;

// ---------------------------------------------------------------------------
// CUDA kernels

/* Grid: x over capacity * dim, y = table. */
__global__ void pack_kernel(pack_params_t p, int *out_counts, uint32_t *out_rows,
                            float *out_values, int *fault)
{
    int t = blockIdx.y;
    int n = *p.count[t];
    if (n < 0 || n > p.capacity) {
        if (blockIdx.x == 0 && threadIdx.x == 0)
            erase_cuda_raise(fault, ERASE_CUDA_FAULT_SPARSE_PACK_CAPACITY);
        return;
    }
    if (blockIdx.x == 0 && threadIdx.x == 0)
        out_counts[t] = n;
    size_t slot = (size_t)t * p.capacity;
    ERASE_CUDA_GRID_LOOP(e, (size_t)n * p.dim)
    {
        out_values[slot * p.dim + e] = p.values[t][e];
        if (e % p.dim == 0)
            out_rows[slot + e / p.dim] = p.rows[t][e / p.dim];
    }
}

/* Sort entries: segment t, entry j = rank q = j / capacity, position i =
 * j % capacity of q's pack of table t (valid when i < its count); source =
 * its slot (q * tables + t) * capacity + i. */
__global__ void merge_keys_kernel(size_t entries, int tables, int capacity, const int *all_counts,
                                  const uint32_t *all_rows, uint64_t *keys, int *vals, int *fault)
{
    size_t seglen = entries / tables;
    ERASE_CUDA_GRID_LOOP(e, entries)
    {
        int t = (int)(e / seglen);
        size_t j = e % seglen;
        int q = (int)(j / capacity), i = (int)(j % capacity);
        int n = all_counts[q * tables + t];
        size_t slot = ((size_t)q * tables + t) * capacity + i;
        if (n < 0 || n > capacity) {
            if (i == 0)
                erase_cuda_raise(fault, ERASE_CUDA_FAULT_SPARSE_MERGE_COUNT);
            keys[e] = ERASE_SORT_INVALID(t);
        } else {
            keys[e] = i < n ? ERASE_SORT_KEY(t, all_rows[slot]) : ERASE_SORT_INVALID(t);
        }
        vals[e] = (int)slot;
    }
}

// ---------------------------------------------------------------------------
// kernel launchers

extern "C" erase_status_t erase_cuda_op_sparse_pack(erase_stream_t *s, int tables, int capacity,
                                                    int dim, const int *const *count,
                                                    const uint32_t *const *rows,
                                                    const float *const *values, int *out_counts,
                                                    uint32_t *out_rows, float *out_values)
{
    pack_params_t p;
    memset(&p, 0, sizeof p);
    p.capacity = capacity;
    p.dim = dim;
    for (int t = 0; t < tables; t++) {
        p.count[t] = count[t];
        p.rows[t] = rows[t];
        p.values[t] = values[t];
    }
    dim3 grid(erase_cuda_blocks((size_t)capacity * dim, ERASE_CUDA_THREADS), (unsigned)tables);
    pack_kernel<<<grid, ERASE_CUDA_THREADS, 0, erase_cuda_stream(s)>>>(
        p, out_counts, out_rows, out_values, erase_cuda_fault_word(s));
    ERASE_CUDA_CHECK_LAUNCH("sparse pack");
    return ERASE_OK;
}

extern "C" erase_status_t erase_cuda_op_sparse_merge(erase_stream_t *s, int ranks, int tables,
                                                     int capacity, int dim, float scale,
                                                     const int *all_counts,
                                                     const uint32_t *all_rows,
                                                     const float *all_values, int *const *count,
                                                     uint32_t *const *rows, float *const *values)
{
    size_t seglen = (size_t)ranks * capacity;
    if (seglen > INT_MAX || (size_t)ranks * tables * capacity > INT_MAX)
        return ERASE_ERROR(ERASE_ERR_INVALID,
                           "cuda sparse merge: %d ranks x %d tables x capacity %d above %d slots",
                           ranks, tables, capacity, INT_MAX);
    erase_sortreduce_buffers_t b;
    /* dim 0: the tree sums (tree_group below) read the sources directly and
     * never touch b.chunks, so no [entries, dim] chunk buffer (as large as
     * all_values) is taken from the scratch */
    ERASE_CHECK(erase_sortreduce_buffers(s, tables, (int)seglen, 0, &b));
    size_t entries = (size_t)tables * seglen;
    merge_keys_kernel<<<erase_cuda_blocks(entries, ERASE_CUDA_THREADS), ERASE_CUDA_THREADS, 0,
                        erase_cuda_stream(s)>>>(entries, tables, capacity, all_counts, all_rows,
                                                b.keys, b.vals, erase_cuda_fault_word(s));
    ERASE_CUDA_CHECK_LAUNCH("sparse merge: keys");
    erase_sortreduce_t r;
    memset(&r, 0, sizeof r);
    r.segments = tables;
    r.seglen = (int)seglen;
    r.dim = dim;
    r.scale = scale;
    r.src = all_values; /* slot q: all_values[q * dim] */
    r.src_stride = (size_t)dim;
    r.seg_offset = 0;
    r.tree_group = tables * capacity; /* slot (q * tables + t) * capacity + i: pack q */
    for (int t = 0; t < tables; t++) {
        r.out_rows[t] = rows[t];
        r.out_values[t] = values[t];
        r.out_count[t] = count[t];
    }
    ERASE_CHECK(erase_sortreduce_run(s, &b, &r));
    return ERASE_OK;
}
