/*
 * DLRM pairwise-dot interaction on CUDA with strided batched GEMMs
 * (erase_sgemm_strided_batched, one small matrix per sample); m = nvec - 1
 * embedding vectors E_r [m, dim] per sample, dense vector v0_r [dim].
 *
 * Forward: the dots <v0, e_j> are a 1 x m product written straight into
 * out[r, dim ..]; the Gram matrix E E^T (m x m, scratch) gives the pairs
 * i < j of embeddings, gathered row-major after them; v0 is copied first.
 * Backward: with g0 = dout[r, dim .. dim+m) and S the symmetric m x m
 * matrix of the pair gradients (zero diagonal, scratch):
 *   demb = S E + g0 v0^T,  ddense = dout[r, 0..dim) + g0^T E.
 */
#include "lib/ops/cuda/common.cuh"

// ---------------------------------------------------------------------------
// CUDA kernels

/* Index of pair (a, b), a < b < m, among the row-major pairs of m vectors. */
__device__ inline void pair_of(int t, int m, int *a, int *b)
{
    int i = 0;
    while (t >= m - 1 - i) {
        t -= m - 1 - i;
        i++;
    }
    *a = i;
    *b = i + 1 + t;
}

/* out[r, 0..dim) = dense[r]; out[r, dim + m + t] = gram[r][a, b] for pair t
 * = (a, b) of embeddings (the dense dots were written by the GEMM). */
__global__ void interaction_gather_kernel(size_t elems, int width, int dim, int m,
                                          const float *dense, const float *gram, float *out)
{
    ERASE_CUDA_GRID_LOOP(e, elems)
    {
        size_t r = e / width;
        int c = (int)(e % width);
        if (c < dim) {
            out[e] = dense[r * dim + c];
        } else if (c >= dim + m) {
            int a, b;
            pair_of(c - dim - m, m, &a, &b);
            out[e] = gram[(r * m + a) * m + b];
        }
    }
}

/* sym[r][a, b] = gradient of pair (a, b) or (b, a) of embeddings, 0 on the
 * diagonal; and ddense[r] = dout[r, 0..dim) (the GEMM adds g0^T E). */
__global__ void interaction_scatter_kernel(size_t elems, int width, int dim, int m,
                                           const float *dout, float *sym)
{
    ERASE_CUDA_GRID_LOOP(e, elems)
    {
        size_t r = e / ((size_t)m * m);
        int ab = (int)(e % ((size_t)m * m)), a = ab / m, b = ab % m;
        if (a == b) {
            sym[e] = 0.0f;
        } else {
            int lo = a < b ? a : b, hi = a < b ? b : a;
            /* pairs before row lo: lo * (m - 1) - lo * (lo - 1) / 2 */
            int t = lo * (m - 1) - lo * (lo - 1) / 2 + (hi - lo - 1);
            sym[e] = dout[r * width + dim + m + t];
        }
    }
}

/* ddense[r, d] = dout[r, d] over batch * dim. */
__global__ void interaction_dense_grad_kernel(size_t elems, int width, int dim, const float *dout,
                                              float *ddense)
{
    ERASE_CUDA_GRID_LOOP(e, elems)
    ddense[e] = dout[(e / dim) * width + e % dim];
}

// ---------------------------------------------------------------------------
// kernel launchers

extern "C" erase_status_t erase_cuda_op_interaction_forward(erase_stream_t *s, int batch, int nvec,
                                                            int dim, const float *dense,
                                                            const float *emb, float *out)
{
    if (batch == 0)
        return ERASE_OK;
    int m = nvec - 1, width = dim + nvec * (nvec - 1) / 2;
    float *gram = NULL;
    if (m > 1)
        ERASE_CHECK(erase_cuda_op_scratch(s, sizeof(float) * (size_t)batch * m * m, (void **)&gram));
    /* <v0, e_j>: [1, dim] x E^T -> out[r, dim .. dim + m) */
    ERASE_CHECK(erase_sgemm_strided_batched(s, ERASE_NO_TRANS, ERASE_TRANS, 1, m, dim, 1.0f, dense,
                                            dim, dim, emb, dim, (int64_t)m * dim, 0.0f, out + dim,
                                            m, width, batch));
    if (m > 1)
        ERASE_CHECK(erase_sgemm_strided_batched(s, ERASE_NO_TRANS, ERASE_TRANS, m, m, dim, 1.0f,
                                                emb, dim, (int64_t)m * dim, emb, dim,
                                                (int64_t)m * dim, 0.0f, gram, m, (int64_t)m * m,
                                                batch));
    size_t elems = (size_t)batch * width;
    interaction_gather_kernel<<<erase_cuda_blocks(elems, ERASE_CUDA_THREADS), ERASE_CUDA_THREADS, 0,
                                erase_cuda_stream(s)>>>(elems, width, dim, m, dense, gram, out);
    ERASE_CUDA_CHECK_LAUNCH("interaction forward: gather");
    return ERASE_OK;
}

extern "C" erase_status_t erase_cuda_op_interaction_backward(erase_stream_t *s, int batch, int nvec,
                                                             int dim, const float *dense,
                                                             const float *emb, const float *dout,
                                                             float *ddense, float *demb)
{
    if (batch == 0)
        return ERASE_OK;
    cudaStream_t st = erase_cuda_stream(s);
    int m = nvec - 1, width = dim + nvec * (nvec - 1) / 2;
    float *sym;
    ERASE_CHECK(erase_cuda_op_scratch(s, sizeof(float) * (size_t)batch * m * m, (void **)&sym));
    size_t elems = (size_t)batch * m * m;
    interaction_scatter_kernel<<<erase_cuda_blocks(elems, ERASE_CUDA_THREADS), ERASE_CUDA_THREADS,
                                 0, st>>>(elems, width, dim, m, dout, sym);
    ERASE_CUDA_CHECK_LAUNCH("interaction backward: pair gradients");
    elems = (size_t)batch * dim;
    interaction_dense_grad_kernel<<<erase_cuda_blocks(elems, ERASE_CUDA_THREADS),
                                    ERASE_CUDA_THREADS, 0, st>>>(elems, width, dim, dout, ddense);
    ERASE_CUDA_CHECK_LAUNCH("interaction backward: dense copy");
    const float *g0 = dout + dim;
    /* demb = S E */
    ERASE_CHECK(erase_sgemm_strided_batched(s, ERASE_NO_TRANS, ERASE_NO_TRANS, m, dim, m, 1.0f, sym,
                                            m, (int64_t)m * m, emb, dim, (int64_t)m * dim, 0.0f,
                                            demb, dim, (int64_t)m * dim, batch));
    /* demb += g0 v0^T ([m, 1] x [1, dim]) */
    ERASE_CHECK(erase_sgemm_strided_batched(s, ERASE_NO_TRANS, ERASE_NO_TRANS, m, dim, 1, 1.0f, g0,
                                            1, width, dense, dim, dim, 1.0f, demb, dim,
                                            (int64_t)m * dim, batch));
    /* ddense += g0^T E ([1, m] x [m, dim]) */
    ERASE_CHECK(erase_sgemm_strided_batched(s, ERASE_NO_TRANS, ERASE_NO_TRANS, 1, dim, m, 1.0f, g0,
                                            m, width, emb, dim, (int64_t)m * dim, 1.0f, ddense, dim,
                                            dim, batch));
    return ERASE_OK;
}
