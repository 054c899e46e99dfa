/*
 * Embedding lookup and its sparse gradient on CUDA. Row of an id:
 * erase_embedding_row of lib/ops/ops.h, as the CPU kernel.
 * The gradient is deterministic and equals the CPU's bit for bit: per
 * field, (row, sample) pairs stably sorted by row (CUB radix sort, see
 * sortreduce.cuh), then each distinct row's dout vectors added in sample
 * order starting from 0, as the CPU kernel does.
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

/* out[r, f, d] = tables[f][row(ids[r, f]), d] over batch * fields * dim. */
__global__ void embedding_forward_kernel(size_t elems, embedding_params_t p, const uint32_t *ids,
                                         float *out)
{
    ERASE_CUDA_GRID_LOOP(e, elems)
    {
        size_t rf = e / p.dim;
        int d = (int)(e % p.dim), f = (int)(rf % p.fields);
        uint32_t row = erase_embedding_row(ids[rf], p.rows[f]);
        out[e] = p.tables[f][(size_t)row * p.dim + d];
    }
}

/* Sort entries: segment f, entry r = (row(ids[r, f]), sample r). */
__global__ void embedding_keys_kernel(size_t entries, embedding_params_t p, const uint32_t *ids,
                                      uint64_t *keys, int *vals)
{
    ERASE_CUDA_GRID_LOOP(e, entries)
    {
        int f = (int)(e / p.batch), r = (int)(e % p.batch);
        keys[e] = ERASE_SORT_KEY(f, erase_embedding_row(ids[(size_t)r * p.fields + f], p.rows[f]));
        vals[e] = r;
    }
}

// ---------------------------------------------------------------------------
// kernel launchers

extern "C" erase_status_t erase_cuda_op_embedding_forward(erase_stream_t *s, int batch, int fields,
                                                          int dim, const uint32_t *rows,
                                                          const uint32_t *ids,
                                                          const float *const *tables, float *out)
{
    embedding_params_t p;
    memset(&p, 0, sizeof p);
    p.batch = batch;
    p.fields = fields;
    p.dim = dim;
    for (int f = 0; f < fields; f++) {
        p.rows[f] = rows[f];
        p.tables[f] = tables[f];
    }
    size_t elems = (size_t)batch * fields * dim;
    ERASE_CHECK(
        erase_cuda_launch_n(s, "embedding forward", embedding_forward_kernel, elems, p, ids, out));
    return ERASE_OK;
}

extern "C" erase_status_t erase_cuda_op_embedding_backward(erase_stream_t *s, int batch, int fields,
                                                           int dim, const uint32_t *rows,
                                                           const uint32_t *ids, const float *dout,
                                                           uint32_t *const *grad_rows,
                                                           float *const *grad_values, int *count)
{
    embedding_params_t p;
    memset(&p, 0, sizeof p);
    p.batch = batch;
    p.fields = fields;
    p.dim = dim;
    for (int f = 0; f < fields; f++)
        p.rows[f] = rows[f];
    erase_sortreduce_buffers_t b;
    ERASE_CHECK(erase_sortreduce_buffers(s, fields, batch, dim, &b));
    size_t entries = (size_t)fields * batch;
    if (entries > 0) {
        embedding_keys_kernel<<<erase_cuda_blocks(entries, ERASE_CUDA_THREADS), ERASE_CUDA_THREADS,
                                0, erase_cuda_stream(s)>>>(entries, p, ids, b.keys, b.vals);
        ERASE_CUDA_CHECK_LAUNCH("embedding backward: keys");
    }
    erase_sortreduce_t r;
    memset(&r, 0, sizeof r);
    r.segments = fields;
    r.seglen = batch;
    r.dim = dim;
    r.scale = 1.0f;
    r.src = dout;
    r.src_stride = (size_t)fields * dim; /* sample q of field f: dout[(q * fields + f) * dim] */
    r.seg_offset = (size_t)dim;
    for (int f = 0; f < fields; f++) {
        r.out_rows[f] = grad_rows[f];
        r.out_values[f] = grad_values[f];
        r.out_count[f] = count + f;
    }
    ERASE_CHECK(erase_sortreduce_run(s, &b, &r));
    return ERASE_OK;
}
