/*
 * Embedding bags (lookup and pooling) and their sparse gradient on CUDA.
 * Row of an id: erase_embedding_row of lib/ops/ops.h, as the CPU kernel.
 * Pooling: a thread per (sample, field, column of dim) adds the bag's
 * rows in column order from the first one, then divides by the length
 * for mean pooling: the CPU kernel's arithmetic, so both are bitwise
 * equal. The gradient is deterministic and equals the CPU's bit for bit:
 * per field, (row, sample) pairs of the present ids, laid out in (sample,
 * column) order, stably sorted by row (CUB radix sort, see sortreduce.cuh),
 * then each distinct row's contributions (dout, or dout / len for mean
 * pooling) added in that order, chunked, as the CPU kernel does. A length
 * outside [1, hotness] raises ERASE_CUDA_FAULT_BAG_LENGTH.
 */
#include "lib/ops/cuda/sortreduce.cuh"

/* Tables of an embedding op, passed by value. */
typedef struct {
    int batch, fields, dim;
    uint32_t rows[ERASE_FIELDS_MAX];
    const float *tables[ERASE_FIELDS_MAX];
} embedding_params_t;

// ---------------------------------------------------------------------------
// CUDA kernels

/* out[r, f, d] = the pooling of bag (r, f)'s vectors, column d: from the
 * tables (ids not NULL) or from vecs [batch, H, dim]. */
__global__ void embedding_bag_kernel(size_t elems, embedding_params_t p, erase_cuda_bag_t bag,
                                     const uint32_t *ids, const float *vecs, float *out, int *fault)
{
    ERASE_CUDA_GRID_LOOP(e, elems)
    {
        size_t rf = e / p.dim, r = rf / p.fields;
        int d = (int)(e % p.dim), f = (int)(rf % p.fields);
        int len = erase_cuda_bag_length(bag, r, f, fault);
        size_t col = r * bag.columns + bag.offset[f];
        float acc = 0.0f;
        for (int j = 0; j < len; j++) {
            float x = ids ? p.tables[f][(size_t)erase_embedding_row(ids[col + j], p.rows[f]) * p.dim + d]
                          : vecs[(col + j) * p.dim + d];
            acc = j == 0 ? x : acc + x;
        }
        out[e] = bag.mean && len > 1 ? acc / (float)len : acc;
    }
}

/* Sort entries: segment f, entry r * hotness_max + j = (row of column j
 * of field f in sample r, sample r), or invalid past the bag's length. */
__global__ void embedding_keys_kernel(size_t entries, embedding_params_t p, erase_cuda_bag_t bag, int hmax,
                                      const uint32_t *ids, uint64_t *keys, int *vals, int *fault)
{
    ERASE_CUDA_GRID_LOOP(e, entries)
    {
        size_t seglen = (size_t)p.batch * hmax;
        int f = (int)(e / seglen);
        size_t k = e % seglen, r = k / hmax;
        int j = (int)(k % hmax);
        int len = j < bag.hotness[f] ? erase_cuda_bag_length(bag, r, f, fault) : 0;
        keys[e] = j < len ? ERASE_SORT_KEY(f, erase_embedding_row(ids[r * bag.columns + bag.offset[f] + j],
                                                                   p.rows[f]))
                          : ERASE_SORT_INVALID(f);
        vals[e] = (int)r;
    }
}

// ---------------------------------------------------------------------------
// kernel launchers

static embedding_params_t embedding_params(int batch, int fields, int dim, const uint32_t *rows,
                                           const float *const *tables)
{
    embedding_params_t p;
    memset(&p, 0, sizeof p);
    p.batch = batch;
    p.fields = fields;
    p.dim = dim;
    for (int f = 0; f < fields; f++) {
        p.rows[f] = rows ? rows[f] : 0;
        p.tables[f] = tables ? tables[f] : NULL;
    }
    return p;
}

extern "C" erase_status_t erase_cuda_op_embedding_forward(erase_stream_t *s, int batch, int fields,
                                                          int dim, const uint32_t *rows,
                                                          const erase_bag_t *bag, const uint32_t *ids,
                                                          const float *const *tables, float *out)
{
    embedding_params_t p = embedding_params(batch, fields, dim, rows, tables);
    size_t elems = (size_t)batch * fields * dim;
    ERASE_CHECK(erase_cuda_launch_n(s, "embedding forward", embedding_bag_kernel, elems, p,
                                    erase_cuda_bag(bag, fields), ids, (const float *)NULL, out,
                                    erase_cuda_fault_word(s)));
    return ERASE_OK;
}

extern "C" erase_status_t erase_cuda_op_embedding_pool(erase_stream_t *s, int batch, int fields, int dim,
                                                       const erase_bag_t *bag, const float *vecs, float *out)
{
    embedding_params_t p = embedding_params(batch, fields, dim, NULL, NULL);
    size_t elems = (size_t)batch * fields * dim;
    ERASE_CHECK(erase_cuda_launch_n(s, "embedding pool", embedding_bag_kernel, elems, p,
                                    erase_cuda_bag(bag, fields), (const uint32_t *)NULL, vecs, out,
                                    erase_cuda_fault_word(s)));
    return ERASE_OK;
}

extern "C" erase_status_t erase_cuda_op_embedding_backward(erase_stream_t *s, int batch, int fields,
                                                           int dim, const uint32_t *rows,
                                                           const erase_bag_t *bag, const uint32_t *ids,
                                                           const float *dout, uint32_t *const *grad_rows,
                                                           float *const *grad_values, int *count)
{
    embedding_params_t p = embedding_params(batch, fields, dim, rows, NULL);
    erase_cuda_bag_t cb = erase_cuda_bag(bag, fields);
    int hmax = 1;
    for (int f = 0; f < fields; f++)
        hmax = cb.hotness[f] > hmax ? cb.hotness[f] : hmax;
    erase_sortreduce_buffers_t b;
    ERASE_CHECK(erase_sortreduce_buffers(s, fields, batch * hmax, dim, &b)); /* ops.c: batch x H fits an int */
    size_t entries = (size_t)fields * batch * hmax;
    if (entries > 0) {
        embedding_keys_kernel<<<erase_cuda_blocks(entries, ERASE_CUDA_THREADS), ERASE_CUDA_THREADS,
                                0, erase_cuda_stream(s)>>>(entries, p, cb, hmax, ids, b.keys, b.vals,
                                                          erase_cuda_fault_word(s));
        ERASE_CUDA_CHECK_LAUNCH("embedding backward: keys");
    }
    erase_sortreduce_t r;
    memset(&r, 0, sizeof r);
    r.segments = fields;
    r.seglen = batch * hmax;
    r.dim = dim;
    r.scale = 1.0f;
    r.src = dout;
    r.src_stride = (size_t)fields * dim; /* sample q of field f: dout[(q * fields + f) * dim] */
    r.seg_offset = (size_t)dim;
    if (cb.mean && cb.lengths) {
        r.divisor = cb.lengths; /* sample q of field f: lengths[q * fields + f] */
        r.div_stride = (size_t)fields;
    }
    for (int f = 0; f < fields; f++) {
        r.out_rows[f] = grad_rows[f];
        r.out_values[f] = grad_values[f];
        r.out_count[f] = count + f;
    }
    ERASE_CHECK(erase_sortreduce_run(s, &b, &r));
    return ERASE_OK;
}
