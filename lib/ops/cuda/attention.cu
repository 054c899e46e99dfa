/*
 * Causal multi-head self-attention on CUDA (lib/ops/ops.h: the arithmetic
 * of nanoGPT's CausalSelfAttention). The products are cuBLAS
 * strided-batched GEMMs (erase_sgemm_strided_batched) reading q, k and v
 * where they lie inside qkv (row stride 3*dim) and writing the heads of
 * out and dqkv in place (row strides dim and 3*dim): no permuted copies.
 * Sequence b, head h of an operand starts at b * (its sequence stride) +
 * h * (its head stride); both strides are constant, so the batch * heads
 * products are min(batch, heads) calls, each batched over the other.
 * The scale 1/sqrt(hd) is the scores GEMM's alpha, and in dS.
 *
 * Between the GEMMs, one warp per row of the [batch * heads * T, T]
 * matrices (64-bit offsets: batch * heads * T * T may pass 2^31):
 * forward, the causal softmax in place (entries s > t become 0, the row
 * maximum subtracted before expf); backward, the softmax's backward
 * dS = P (dP - rowsum(P dP)) / sqrt(hd) in place. Sums and the
 * backward's products in double, as the CPU kernels (attention_impl.h). The full T x T products are
 * computed and the masked half is zeroed: a kernel skipping it (a fused,
 * flash-style attention) would pay only at long contexts.
 *
 * Decode: a kernel stores the new position's k and v in the caches, then
 * one fused block per (sequence, head) computes the scores of its one
 * query row (a warp per cached position), their softmax and the weighted
 * sum of the cached v rows, as erase_attention_forward's row t.
 */
#include "lib/ops/cuda/common.cuh"

/* Threads of a decode block (a multiple of 32). */
#define DECODE_THREADS 128

// ---------------------------------------------------------------------------
// CUDA kernels

/* Rows grid-stride over warps of the [rows, T] matrix a (row r: position
 * t = r % T): a[s] = softmax over s' <= t of a[s'] for s <= t, 0 after;
 * the exponentials' sum in double, then a[s] *= (float)(1 / sum), as the
 * CPU kernel. */
__global__ void attention_softmax_kernel(size_t rows, int T, float *a)
{
    int lane = threadIdx.x & 31;
    size_t warp = ((size_t)blockIdx.x * blockDim.x + threadIdx.x) >> 5;
    size_t warps = ((size_t)gridDim.x * blockDim.x) >> 5;
    for (size_t r = warp; r < rows; r += warps) {
        float *row = a + r * (size_t)T;
        int t = (int)(r % (size_t)T);
        float m = -INFINITY;
        for (int s = lane; s <= t; s += 32)
            m = row[s] > m ? row[s] : m;
        m = erase_warp_max(m);
        double sum = 0.0;
        for (int s = lane; s <= t; s += 32) {
            float e = expf(row[s] - m);
            row[s] = e;
            sum += e;
        }
        float inv = (float)(1.0 / erase_warp_sum(sum));
        for (int s = lane; s < T; s += 32)
            row[s] = s <= t ? row[s] * inv : 0.0f;
    }
}

/* Rows grid-stride over warps: d (in: dP, out: dS) = scale p (d - sum
 * over s' <= t of p d) for s <= t, 0 after, for the probabilities p of row
 * r; in double, rounded once, as the CPU kernel. */
__global__ void attention_softmax_backward_kernel(size_t rows, int T, double scale,
                                                  const float *p, float *d)
{
    int lane = threadIdx.x & 31;
    size_t warp = ((size_t)blockIdx.x * blockDim.x + threadIdx.x) >> 5;
    size_t warps = ((size_t)gridDim.x * blockDim.x) >> 5;
    for (size_t r = warp; r < rows; r += warps) {
        const float *pr = p + r * (size_t)T;
        float *dr = d + r * (size_t)T;
        int t = (int)(r % (size_t)T);
        double dot = 0.0;
        for (int s = lane; s <= t; s += 32)
            dot += (double)pr[s] * dr[s];
        dot = erase_warp_sum(dot);
        for (int s = lane; s < T; s += 32)
            dr[s] = s <= t ? (float)(scale * pr[s] * (dr[s] - dot)) : 0.0f;
    }
}

/* kcache[b, t, :] = k of qkv[b], vcache[b, t, :] = v of qkv[b]. */
__global__ void attention_cache_kernel(int batch, int t, int cache_len, int dim, const float *qkv,
                                       float *kcache, float *vcache)
{
    ERASE_CUDA_GRID_LOOP(e, (size_t)batch * dim)
    {
        size_t b = e / dim, d = e % dim;
        size_t row = (b * cache_len + t) * dim + d;
        kcache[row] = qkv[b * 3 * dim + dim + d];
        vcache[row] = qkv[b * 3 * dim + 2 * dim + d];
    }
}

/*
 * Block (b, h) = blockIdx.x: p[s] = softmax over s <= t of scale * q . k_s
 * (p: its row of scratch), then out[b, h*hd + j] = sum over s <= t of p[s]
 * v_s[j], added in order of s.
 */
__global__ void __launch_bounds__(DECODE_THREADS)
    attention_decode_kernel(int heads, int dim, int t, int cache_len, float scale,
                            const float *qkv, const float *kcache, const float *vcache,
                            float *scratch, float *out)
{
    int bh = blockIdx.x, b = bh / heads, h = bh % heads, hd = dim / heads;
    int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = blockDim.x >> 5;
    const float *q = qkv + (size_t)b * 3 * dim + (size_t)h * hd;
    const float *kc = kcache + (size_t)b * cache_len * dim + (size_t)h * hd;
    const float *vc = vcache + (size_t)b * cache_len * dim + (size_t)h * hd;
    float *p = scratch + (size_t)bh * cache_len;
    float m = -INFINITY;
    for (int s = warp; s <= t; s += warps) {
        const float *k = kc + (size_t)s * dim;
        float dot = 0.0f;
        for (int j = lane; j < hd; j += 32)
            dot += q[j] * k[j];
        dot = erase_warp_sum(dot) * scale;
        if (lane == 0)
            p[s] = dot;
        m = dot > m ? dot : m;
    }
    m = erase_block_max(m); /* synchronizes: p[] written above is visible */
    double sum = 0.0;
    for (int s = threadIdx.x; s <= t; s += blockDim.x) {
        float e = expf(p[s] - m);
        p[s] = e;
        sum += e;
    }
    float inv = (float)(1.0 / erase_block_sum(sum));
    for (int s = threadIdx.x; s <= t; s += blockDim.x)
        p[s] *= inv;
    __syncthreads();
    for (int j = threadIdx.x; j < hd; j += blockDim.x) {
        float acc = 0.0f;
        for (int s = 0; s <= t; s++)
            acc += p[s] * vc[(size_t)s * dim + j];
        out[(size_t)b * dim + (size_t)h * hd + j] = acc;
    }
}

// ---------------------------------------------------------------------------
// kernel launchers

/* One operand of the per-(sequence, head) products: the matrix of sequence
 * b, head h at p + b * sb + h * sh, row stride ld (elements). */
typedef struct {
    const float *p;
    int ld;
    int64_t sb, sh;
} bh_matrix_t;

/* For every sequence b < batch and head h < heads: C_bh = alpha op(A_bh)
 * op(B_bh) (m x n, inner size k; C's prior contents ignored). */
static erase_status_t gemm_bh(erase_stream_t *s, int batch, int heads, erase_trans_t ta,
                              erase_trans_t tb, int m, int n, int k, float alpha, bh_matrix_t a,
                              bh_matrix_t b, bh_matrix_t c)
{
    int by_heads = heads >= batch; /* batched over heads, a call per sequence */
    int calls = by_heads ? batch : heads, count = by_heads ? heads : batch;
    for (int i = 0; i < calls; i++) {
        int64_t oa = i * (by_heads ? a.sb : a.sh), ob = i * (by_heads ? b.sb : b.sh),
                oc = i * (by_heads ? c.sb : c.sh);
        ERASE_CHECK(erase_sgemm_strided_batched(
            s, ta, tb, m, n, k, alpha, a.p + oa, a.ld, by_heads ? a.sh : a.sb, b.p + ob, b.ld,
            by_heads ? b.sh : b.sb, 0.0f, (float *)c.p + oc, c.ld, by_heads ? c.sh : c.sb, count));
    }
    return ERASE_OK;
}

/* The operands of an attention of this shape. */
typedef struct {
    bh_matrix_t q, k, v; /* inside qkv (or dqkv: same layout) */
    bh_matrix_t att;     /* att or scratch: [batch, heads, T, T] */
    bh_matrix_t out;     /* out or dout: [batch, T, dim] */
    float scale;
    size_t rows; /* batch * heads * T */
} attention_shape_t;

static attention_shape_t attention_shape(int batch, int T, int heads, int dim, const float *qkv,
                                         const float *att, const float *out)
{
    int hd = dim / heads;
    int64_t seq = (int64_t)T * 3 * dim, tt = (int64_t)T * T;
    attention_shape_t a;
    a.q = bh_matrix_t{ qkv, 3 * dim, seq, hd };
    a.k = bh_matrix_t{ qkv + dim, 3 * dim, seq, hd };
    a.v = bh_matrix_t{ qkv + 2 * dim, 3 * dim, seq, hd };
    a.att = bh_matrix_t{ att, T, heads * tt, tt };
    a.out = bh_matrix_t{ out, dim, (int64_t)T * dim, hd };
    a.scale = (float)(1.0 / sqrt((double)hd));
    a.rows = (size_t)batch * heads * T;
    return a;
}

/* Blocks of a kernel with a warp per row. */
static unsigned row_blocks(size_t rows) { return erase_cuda_blocks(rows * 32, ERASE_CUDA_THREADS); }

extern "C" erase_status_t erase_cuda_op_attention_forward(erase_stream_t *s, int batch, int T,
                                                          int heads, int dim, const float *qkv,
                                                          float *att, float *out)
{
    if (batch == 0)
        return ERASE_OK;
    attention_shape_t a = attention_shape(batch, T, heads, dim, qkv, att, out);
    int hd = dim / heads;
    /* att = scale q k^T */
    ERASE_CHECK(gemm_bh(s, batch, heads, ERASE_NO_TRANS, ERASE_TRANS, T, T, hd, a.scale, a.q, a.k,
                        a.att));
    attention_softmax_kernel<<<row_blocks(a.rows), ERASE_CUDA_THREADS, 0, erase_cuda_stream(s)>>>(
        a.rows, T, att);
    ERASE_CUDA_CHECK_LAUNCH("attention forward: softmax");
    /* out = att v */
    ERASE_CHECK(gemm_bh(s, batch, heads, ERASE_NO_TRANS, ERASE_NO_TRANS, T, hd, T, 1.0f, a.att, a.v,
                        a.out));
    return ERASE_OK;
}

extern "C" erase_status_t erase_cuda_op_attention_backward(erase_stream_t *s, int batch, int T,
                                                           int heads, int dim, const float *qkv,
                                                           const float *att, const float *dout,
                                                           float *scratch, float *dqkv)
{
    if (batch == 0)
        return ERASE_OK;
    attention_shape_t a = attention_shape(batch, T, heads, dim, qkv, att, dout);
    attention_shape_t g = attention_shape(batch, T, heads, dim, dqkv, scratch, dout);
    int hd = dim / heads;
    /* scratch = dP = dout v^T; dv = att^T dout */
    ERASE_CHECK(gemm_bh(s, batch, heads, ERASE_NO_TRANS, ERASE_TRANS, T, T, hd, 1.0f, a.out, a.v,
                        g.att));
    ERASE_CHECK(gemm_bh(s, batch, heads, ERASE_TRANS, ERASE_NO_TRANS, T, hd, T, 1.0f, a.att, a.out,
                        g.v));
    attention_softmax_backward_kernel<<<row_blocks(a.rows), ERASE_CUDA_THREADS, 0,
                                        erase_cuda_stream(s)>>>(a.rows, T, 1.0 / sqrt((double)hd),
                                                                att, scratch);
    ERASE_CUDA_CHECK_LAUNCH("attention backward: softmax");
    /* dq = dS k; dk = dS^T q (dS holds the scale) */
    ERASE_CHECK(gemm_bh(s, batch, heads, ERASE_NO_TRANS, ERASE_NO_TRANS, T, hd, T, 1.0f, g.att,
                        a.k, g.q));
    ERASE_CHECK(gemm_bh(s, batch, heads, ERASE_TRANS, ERASE_NO_TRANS, T, hd, T, 1.0f, g.att, a.q,
                        g.k));
    return ERASE_OK;
}

extern "C" erase_status_t erase_cuda_op_attention_decode(erase_stream_t *s, int batch, int t,
                                                         int cache_len, int heads, int dim,
                                                         const float *qkv, float *kcache,
                                                         float *vcache, float *scratch, float *out)
{
    if (batch == 0)
        return ERASE_OK;
    cudaStream_t st = erase_cuda_stream(s);
    size_t blocks = (size_t)batch * heads;
    if (blocks > INT32_MAX)
        return ERASE_ERROR(ERASE_ERR_INVALID,
                           "cuda attention decode: batch %d x heads %d = %zu blocks (at most %d)",
                           batch, heads, blocks, INT32_MAX);
    attention_cache_kernel<<<erase_cuda_blocks((size_t)batch * dim, ERASE_CUDA_THREADS),
                             ERASE_CUDA_THREADS, 0, st>>>(batch, t, cache_len, dim, qkv, kcache,
                                                          vcache);
    ERASE_CUDA_CHECK_LAUNCH("attention decode: cache");
    float scale = (float)(1.0 / sqrt((double)(dim / heads)));
    attention_decode_kernel<<<(unsigned)blocks, DECODE_THREADS, 0, st>>>(
        heads, dim, t, cache_len, scale, qkv, kcache, vcache, scratch, out);
    ERASE_CUDA_CHECK_LAUNCH("attention decode");
    return ERASE_OK;
}
