/*
 * Sorted segment reduction, shared by the embedding gradient
 * (embedding.cu) and the sparse merge (sparse.cu): `segments` segments
 * (fields, tables) of `seglen` entries each, entry j of segment g a
 * (row, source) pair or invalid. Per segment, the valid entries are
 * sorted by row with a stable sort (source order kept among equal rows),
 * then each distinct row gets the sum of its entries' source vectors added
 * in that order in chunks of ERASE_SPARSE_SUM_CHUNK (lib/ops/ops.h: each
 * chunk from 0, then the chunk sums from 0), or with tree_group > 0 as the
 * pairwise tree over their pack index (erase_sparse_merge), times `scale`. Outputs: out_rows[g][0..count) ascending,
 * out_values[g][count, dim], *out_count[g] = count.
 *
 * The sort is cub::DeviceRadixSort::SortPairs (stable, deterministic) of
 * 64-bit keys segment << 33 | invalid << 32 | row with the entry's source
 * index as value, over all segments at once; a block per segment then
 * marks the first entry of each row (a block scan numbers them); a grid
 * sums every chunk of every run at once (a thread per chunk and column,
 * the chunk's run found by binary search in the run starts), and a grid
 * adds each run's chunk sums; a tree sum is a thread per run and column
 * walking the run with a stack of partial sums. Source vector of source index q in
 * segment g: src + q * src_stride + g * seg_offset (dim floats).
 */
#ifndef ERASE_OPS_CUDA_SORTREDUCE_CUH
#define ERASE_OPS_CUDA_SORTREDUCE_CUH

#include "lib/ops/cuda/common.cuh"

/* Key of an invalid entry in segment g (sorts after the valid ones). */
#define ERASE_SORT_INVALID(g) (((uint64_t)(g) << 33) | ((uint64_t)1 << 32))
/* Key of row `row` in segment g. */
#define ERASE_SORT_KEY(g, row) (((uint64_t)(g) << 33) | (uint64_t)(row))

typedef struct {
    int segments, seglen, dim;
    float scale;
    const float *src;
    size_t src_stride, seg_offset;
    /* NULL, or each source vector divided by divisor[q * div_stride + g]
     * (mean pooling's dout / len) before it is added */
    const uint32_t *divisor;
    size_t div_stride;
    /* 0: chunked sums; > 0: the pairwise tree over the pack index
     * q / tree_group of source index q (the sparse merge's slot) */
    int tree_group;
    uint32_t *out_rows[ERASE_FIELDS_MAX];
    float *out_values[ERASE_FIELDS_MAX];
    int *out_count[ERASE_FIELDS_MAX];
} erase_sortreduce_t;

/* Device buffers of a sorted reduction (carved from the stream's scratch). */
typedef struct {
    uint64_t *keys, *keys_sorted;
    int *vals, *vals_sorted;
    int *heads; /* segments * (seglen + 1): start of each distinct row's run, then the end */
    float *chunks; /* segments * seglen * dim: the sum of the chunk starting at each sorted entry */
    void *cub_tmp;
    size_t cub_bytes;
} erase_sortreduce_buffers_t;

/* Take the buffers for `segments` x `seglen` entries of `dim` floats from
 * the scratch of stream s. Errors: ERASE_ERR_INVALID (more than INT_MAX
 * entries), ERASE_ERR_BACKEND, those of erase_cuda_op_scratch. */
erase_status_t erase_sortreduce_buffers(erase_stream_t *s, int segments, int seglen, int dim,
                                        erase_sortreduce_buffers_t *b);

/* Sort the `segments` x `seglen` entries of b->keys / b->vals (filled by
 * the caller's kernel on the same stream) into b->keys_sorted /
 * b->vals_sorted: stable, by key (segment, then valid rows ascending, then
 * the invalid entries). For a caller that reduces the sorted runs itself
 * (token_embedding.cu). Errors: ERASE_ERR_BACKEND. */
erase_status_t erase_sortreduce_sort(erase_stream_t *s, const erase_sortreduce_buffers_t *b,
                                     int segments, int seglen);

/* Sort b->keys / b->vals (filled by the caller's kernel on the same stream)
 * and reduce as described above. */
erase_status_t erase_sortreduce_run(erase_stream_t *s, const erase_sortreduce_buffers_t *b,
                                    const erase_sortreduce_t *p);

#endif
