/*
 * Causal self-attention on CUDA (lib/ops/ops.h): the grouped-query
 * attention (GQA) of nanochat, and gpt's multi-head attention (the
 * arithmetic of nanoGPT's CausalSelfAttention) as GQA with kv_heads =
 * heads, as the CPU kernels of attention_impl.h. The products are cuBLAS
 * strided-batched GEMMs (erase_sgemm_strided_batched) reading q, k and v
 * where they lie (gpt: inside qkv, row stride 3*dim) and writing the heads
 * of out, dq, dk and dv in place: no permuted copies. The query heads of
 * one residue r = h % rep (rep = heads / kv_heads) meet key/value head
 * h / rep at constant strides, so per residue sequence b, head h of an
 * operand starts at b * (its sequence stride) + h * (its head stride), and
 * the batch * kv_heads products are min(batch, kv_heads) calls, each
 * batched over the other. A group's dk and dv are added in head order
 * (the GEMM's beta: residue 0 writes, the next ones add), as on the CPU.
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
 * one fused block per (sequence, query head) computes the scores of its
 * one query row against its key/value head (a warp per cached position), their softmax and the weighted
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

/* kcache[b, t, :] = k[b], vcache[b, t, :] = v[b] (rows kvw wide; k and v
 * rows at stride ldkv). */
__global__ void attention_cache_kernel(int batch, int t, int cache_len, int kvw, const float *k,
                                       const float *v, int ldkv, float *kcache, float *vcache)
{
    ERASE_CUDA_GRID_LOOP(e, (size_t)batch * kvw)
    {
        size_t b = e / kvw, d = e % kvw;
        size_t row = (b * cache_len + t) * kvw + d;
        kcache[row] = k[b * ldkv + d];
        vcache[row] = v[b * ldkv + d];
    }
}

/*
 * Block (b, h) = blockIdx.x (query head h of sequence b; key/value head
 * h / rep of the caches [batch, cache_len, kvw]): p[s] = softmax over s <= t
 * of scale * q . k_s (p: its row of scratch [batch, heads, cache_len]), then
 * out[b, h*hd + j] = sum over s <= t of p[s] v_s[j], added in order of s.
 */
__global__ void __launch_bounds__(DECODE_THREADS)
    attention_decode_kernel(int heads, int rep, int hd, int t, int cache_len, float scale,
                            const float *qrows, int ldq, const float *kcache, const float *vcache,
                            float *scratch, float *out)
{
    int bh = blockIdx.x, b = bh / heads, h = bh % heads, kvw = heads / rep * hd;
    int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = blockDim.x >> 5;
    const float *q = qrows + (size_t)b * ldq + (size_t)h * hd;
    const float *kc = kcache + (size_t)b * cache_len * kvw + (size_t)(h / rep) * hd;
    const float *vc = vcache + (size_t)b * cache_len * kvw + (size_t)(h / rep) * hd;
    float *p = scratch + (size_t)bh * cache_len;
    float m = -INFINITY;
    for (int s = warp; s <= t; s += warps) {
        const float *k = kc + (size_t)s * kvw;
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
            acc += p[s] * vc[(size_t)s * kvw + j];
        out[(size_t)b * heads * hd + (size_t)h * hd + j] = acc;
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
 * op(B_bh) + beta C_bh (m x n, inner size k; beta 0: C's prior contents
 * ignored). */
static erase_status_t gemm_bh(erase_stream_t *s, int batch, int heads, erase_trans_t ta,
                              erase_trans_t tb, int m, int n, int k, float alpha, bh_matrix_t a,
                              bh_matrix_t b, float beta, bh_matrix_t c)
{
    int by_heads = heads >= batch; /* batched over heads, a call per sequence */
    int calls = by_heads ? batch : heads, count = by_heads ? heads : batch;
    for (int i = 0; i < calls; i++) {
        int64_t oa = i * (by_heads ? a.sb : a.sh), ob = i * (by_heads ? b.sb : b.sh),
                oc = i * (by_heads ? c.sb : c.sh);
        ERASE_CHECK(erase_sgemm_strided_batched(
            s, ta, tb, m, n, k, alpha, a.p + oa, a.ld, by_heads ? a.sh : a.sb, b.p + ob, b.ld,
            by_heads ? b.sh : b.sb, beta, (float *)c.p + oc, c.ld, by_heads ? c.sh : c.sb, count));
    }
    return ERASE_OK;
}

/* Where q, k and v lie: row t of sequence b at p + (b T + t) ld, head h at
 * column h hd (k and v: kv_heads heads, q: heads). */
typedef struct {
    const float *q, *k, *v;
    int ldq, ldk, ldv;
} gqa_operands_t;

/*
 * The operands of the query heads h = g rep + r, g < kv_heads, of one
 * residue r < rep (rep = heads / kv_heads): as heads g of a product batched
 * over kv_heads, query head g rep + r meets key/value head g, so every
 * stride is constant. q, k, v from o (or their gradients: same layout);
 * att [batch, heads, T, T] (or scratch); out [batch, T, heads hd] (or dout).
 */
typedef struct {
    bh_matrix_t q, k, v, att, out;
} gqa_shape_t;

static gqa_shape_t gqa_shape(int T, int heads, int kv_heads, int hd, int r, gqa_operands_t o,
                             const float *att, const float *out)
{
    int rep = heads / kv_heads, dim = heads * hd;
    int64_t tt = (int64_t)T * T;
    gqa_shape_t a;
    a.q = bh_matrix_t{ o.q + (size_t)r * hd, o.ldq, (int64_t)T * o.ldq, (int64_t)rep * hd };
    a.k = bh_matrix_t{ o.k, o.ldk, (int64_t)T * o.ldk, hd };
    a.v = bh_matrix_t{ o.v, o.ldv, (int64_t)T * o.ldv, hd };
    a.att = bh_matrix_t{ att + (size_t)r * tt, T, heads * tt, rep * tt };
    a.out = bh_matrix_t{ out + (size_t)r * hd, dim, (int64_t)T * dim, (int64_t)rep * hd };
    return a;
}

/* Blocks of a kernel with a warp per row. */
static unsigned row_blocks(size_t rows) { return erase_cuda_blocks(rows * 32, ERASE_CUDA_THREADS); }

/* The GQA forward (attention_impl.h): per residue r, att = scale q k^T;
 * the causal softmax of every row; per residue, out = att v. */
static erase_status_t gqa_forward(erase_stream_t *s, int batch, int T, int heads, int kv_heads, int hd,
                                  gqa_operands_t o, float *att, float *out)
{
    if (batch == 0)
        return ERASE_OK;
    int rep = heads / kv_heads;
    float scale = (float)(1.0 / sqrt((double)hd));
    for (int r = 0; r < rep; r++) {
        gqa_shape_t a = gqa_shape(T, heads, kv_heads, hd, r, o, att, out);
        ERASE_CHECK(gemm_bh(s, batch, kv_heads, ERASE_NO_TRANS, ERASE_TRANS, T, T, hd, scale, a.q, a.k,
                            0.0f, a.att));
    }
    size_t rows = (size_t)batch * heads * T;
    attention_softmax_kernel<<<row_blocks(rows), ERASE_CUDA_THREADS, 0, erase_cuda_stream(s)>>>(rows, T,
                                                                                                att);
    ERASE_CUDA_CHECK_LAUNCH("attention forward: softmax");
    for (int r = 0; r < rep; r++) {
        gqa_shape_t a = gqa_shape(T, heads, kv_heads, hd, r, o, att, out);
        ERASE_CHECK(gemm_bh(s, batch, kv_heads, ERASE_NO_TRANS, ERASE_NO_TRANS, T, hd, T, 1.0f, a.att, a.v,
                            0.0f, a.out));
    }
    return ERASE_OK;
}

/* The GQA backward (attention_impl.h): dP = dO v^T into scratch, dv = P^T
 * dO; dS in place of dP; dq = dS k, dk = dS^T q. A group's query heads add
 * their dk and dv in head order (residue 0 writes, the others add): a
 * fixed order, no atomics. g holds dq, dk, dv. */
static erase_status_t gqa_backward(erase_stream_t *s, int batch, int T, int heads, int kv_heads, int hd,
                                   gqa_operands_t o, const float *att, const float *dout, float *scratch,
                                   gqa_operands_t g)
{
    if (batch == 0)
        return ERASE_OK;
    int rep = heads / kv_heads;
    for (int r = 0; r < rep; r++) {
        gqa_shape_t a = gqa_shape(T, heads, kv_heads, hd, r, o, att, dout);
        gqa_shape_t d = gqa_shape(T, heads, kv_heads, hd, r, g, scratch, dout);
        float beta = r ? 1.0f : 0.0f;
        ERASE_CHECK(gemm_bh(s, batch, kv_heads, ERASE_NO_TRANS, ERASE_TRANS, T, T, hd, 1.0f, a.out, a.v, 0.0f,
                            d.att));
        ERASE_CHECK(gemm_bh(s, batch, kv_heads, ERASE_TRANS, ERASE_NO_TRANS, T, hd, T, 1.0f, a.att, a.out,
                            beta, d.v));
    }
    size_t rows = (size_t)batch * heads * T;
    attention_softmax_backward_kernel<<<row_blocks(rows), ERASE_CUDA_THREADS, 0, erase_cuda_stream(s)>>>(
        rows, T, 1.0 / sqrt((double)hd), att, scratch);
    ERASE_CUDA_CHECK_LAUNCH("attention backward: softmax");
    for (int r = 0; r < rep; r++) {
        gqa_shape_t a = gqa_shape(T, heads, kv_heads, hd, r, o, att, dout);
        gqa_shape_t d = gqa_shape(T, heads, kv_heads, hd, r, g, scratch, dout);
        float beta = r ? 1.0f : 0.0f;
        ERASE_CHECK(gemm_bh(s, batch, kv_heads, ERASE_NO_TRANS, ERASE_NO_TRANS, T, hd, T, 1.0f, d.att, a.k,
                            0.0f, d.q));
        ERASE_CHECK(gemm_bh(s, batch, kv_heads, ERASE_TRANS, ERASE_NO_TRANS, T, hd, T, 1.0f, d.att, a.q, beta,
                            d.k));
    }
    return ERASE_OK;
}

/* The GQA decode: k, v rows into the caches, then a block per (sequence,
 * query head). q rows at stride ldq, k and v rows at stride ldkv. */
static erase_status_t gqa_decode(erase_stream_t *s, int batch, int t, int cache_len, int heads, int kv_heads,
                                 int hd, const float *q, int ldq, const float *k, const float *v, int ldkv,
                                 float *kcache, float *vcache, float *scratch, float *out)
{
    if (batch == 0)
        return ERASE_OK;
    cudaStream_t st = erase_cuda_stream(s);
    size_t blocks = (size_t)batch * heads;
    if (blocks > INT32_MAX)
        return ERASE_ERROR(ERASE_ERR_INVALID,
                           "cuda attention decode: batch %d x heads %d = %zu blocks (at most %d)",
                           batch, heads, blocks, INT32_MAX);
    int kvw = kv_heads * hd;
    attention_cache_kernel<<<erase_cuda_blocks((size_t)batch * kvw, ERASE_CUDA_THREADS),
                             ERASE_CUDA_THREADS, 0, st>>>(batch, t, cache_len, kvw, k, v, ldkv, kcache,
                                                          vcache);
    ERASE_CUDA_CHECK_LAUNCH("attention decode: cache");
    float scale = (float)(1.0 / sqrt((double)hd));
    attention_decode_kernel<<<(unsigned)blocks, DECODE_THREADS, 0, st>>>(
        heads, heads / kv_heads, hd, t, cache_len, scale, q, ldq, kcache, vcache, scratch, out);
    ERASE_CUDA_CHECK_LAUNCH("attention decode");
    return ERASE_OK;
}

/* q, k and v of gpt's packed qkv [batch, T, 3 dim] (or dqkv). */
static gqa_operands_t packed_qkv(const float *qkv, int dim)
{
    return gqa_operands_t{ qkv, qkv + dim, qkv + 2 * dim, 3 * dim, 3 * dim, 3 * dim };
}

extern "C" erase_status_t erase_cuda_op_attention_forward(erase_stream_t *s, int batch, int T,
                                                          int heads, int dim, const float *qkv,
                                                          float *att, float *out)
{
    return gqa_forward(s, batch, T, heads, heads, dim / heads, packed_qkv(qkv, dim), att, out);
}

extern "C" erase_status_t erase_cuda_op_attention_backward(erase_stream_t *s, int batch, int T,
                                                           int heads, int dim, const float *qkv,
                                                           const float *att, const float *dout,
                                                           float *scratch, float *dqkv)
{
    return gqa_backward(s, batch, T, heads, heads, dim / heads, packed_qkv(qkv, dim), att, dout, scratch,
                        packed_qkv(dqkv, dim));
}

extern "C" erase_status_t erase_cuda_op_attention_decode(erase_stream_t *s, int batch, int t,
                                                         int cache_len, int heads, int dim,
                                                         const float *qkv, float *kcache,
                                                         float *vcache, float *scratch, float *out)
{
    return gqa_decode(s, batch, t, cache_len, heads, heads, dim / heads, qkv, 3 * dim, qkv + dim,
                      qkv + 2 * dim, 3 * dim, kcache, vcache, scratch, out);
}

extern "C" erase_status_t erase_cuda_op_gqa_attention_forward(erase_stream_t *s, int batch, int T, int heads,
                                                              int kv_heads, int hd, const float *q,
                                                              const float *k, const float *v, float *att,
                                                              float *out)
{
    int ldq = heads * hd, ldkv = kv_heads * hd;
    return gqa_forward(s, batch, T, heads, kv_heads, hd, gqa_operands_t{ q, k, v, ldq, ldkv, ldkv }, att, out);
}

extern "C" erase_status_t erase_cuda_op_gqa_attention_backward(erase_stream_t *s, int batch, int T, int heads,
                                                               int kv_heads, int hd, const float *q,
                                                               const float *k, const float *v,
                                                               const float *att, const float *dout,
                                                               float *scratch, float *dq, float *dk, float *dv)
{
    int ldq = heads * hd, ldkv = kv_heads * hd;
    return gqa_backward(s, batch, T, heads, kv_heads, hd, gqa_operands_t{ q, k, v, ldq, ldkv, ldkv }, att, dout,
                        scratch, gqa_operands_t{ dq, dk, dv, ldq, ldkv, ldkv });
}

extern "C" erase_status_t erase_cuda_op_gqa_attention_decode(erase_stream_t *s, int batch, int t, int cache_len,
                                                             int heads, int kv_heads, int hd, const float *q,
                                                             const float *k, const float *v, float *kcache,
                                                             float *vcache, float *scratch, float *out)
{
    return gqa_decode(s, batch, t, cache_len, heads, kv_heads, hd, q, heads * hd, k, v, kv_heads * hd, kcache,
                      vcache, scratch, out);
}
