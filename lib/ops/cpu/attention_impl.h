/*
 * Causal multi-head self-attention on the CPU (part of kernels_impl.h:
 * compiled in float and double; include with REAL, SUF and GEMM defined).
 *
 * Per (sequence, head), q, k and v are strided sub-matrices of qkv
 * (leading dimension 3*dim; head h at column offset h*hd of each third),
 * so the products run through the BLAS without copies. Only the lower
 * triangle of the T x T score matrix matters: the products run over row
 * blocks of ERASE_ATTENTION_BLOCK positions, block [r0, r1) against keys
 * [0, r1) only (about half the work of the full square for long T); the
 * few entries above the diagonal inside a block are computed and then
 * overwritten with 0.
 */

/*
 * Softmax over row[0, n) in place with the row maximum subtracted
 * (numerically stable for any finite scores; the sum in double), then
 * row[n, len) = 0 (the causal mask: those probabilities are exactly 0).
 * The one softmax of the forward and the decode, so both give row t alike.
 */
static inline void SUF(attention_softmax_row)(REAL *row, int n, int len)
{
    REAL m = row[0];
    for (int s = 1; s < n; s++)
        if (row[s] > m)
            m = row[s];
    for (int s = 0; s < n; s++) /* vectorizes: the ordered sum apart */
        row[s] = EXP(row[s] - m);
    double sum = 0;
    for (int s = 0; s < n; s++)
        sum += row[s];
    REAL inv = (REAL)(1.0 / sum);
    for (int s = 0; s < n; s++)
        row[s] *= inv;
    for (int s = n; s < len; s++)
        row[s] = 0;
}

static inline int SUF(attention_block_end)(int r0, int T)
{
    return T - r0 > ERASE_ATTENTION_BLOCK ? r0 + ERASE_ATTENTION_BLOCK : T;
}

/*
 * Grouped-query attention (GQA): query head h reads key/value head
 * h / (heads / kv_heads) (heads a multiple of kv_heads; kv_heads = heads is
 * multi-head attention). Per sequence, row t of q starts at q + t*ldq,
 * head h at column h*hd; k and v alike with ldk, ldv. att [batch, heads,
 * T, T] = causal softmax(q k^T / sqrt(hd)); out [batch, T, heads*hd] = att v.
 */
void SUF(erase_k_gqa_attention_forward)(int batch, int T, int heads, int kv_heads, int hd, const REAL *q,
                                        int ldq, const REAL *k, int ldk, const REAL *v, int ldv, REAL *att,
                                        REAL *out)
{
    const int dim = heads * hd, rep = heads / kv_heads;
    const REAL scale = (REAL)(1.0 / sqrt((double)hd));
    for (int b = 0; b < batch; b++)
        for (int h = 0; h < heads; h++) {
            const REAL *qh = q + (size_t)b * T * ldq + (size_t)h * hd;
            const REAL *kh = k + (size_t)b * T * ldk + (size_t)(h / rep) * hd;
            const REAL *vh = v + (size_t)b * T * ldv + (size_t)(h / rep) * hd;
            REAL *a = att + ((size_t)b * heads + h) * T * T;
            REAL *o = out + (size_t)b * T * dim + (size_t)h * hd;
            for (int r0 = 0, r1; r0 < T; r0 = r1) {
                r1 = SUF(attention_block_end)(r0, T);
                GEMM(0, 1, r1 - r0, r1, hd, scale, qh + (size_t)r0 * ldq, ldq, kh, ldk, 0,
                     a + (size_t)r0 * T, T);
                for (int t = r0; t < r1; t++)
                    SUF(attention_softmax_row)(a + (size_t)t * T, t + 1, T);
                GEMM(0, 0, r1 - r0, hd, r1, 1, a + (size_t)r0 * T, T, vh, ldv, 0, o + (size_t)r0 * dim,
                     dim);
            }
        }
}

/* att [batch, heads, T, T] = causal softmax(q k^T / sqrt(hd)); out [batch, T, dim] = att v. */
void SUF(erase_k_attention_forward)(int batch, int T, int heads, int dim, const REAL *qkv, REAL *att,
                                    REAL *out)
{
    SUF(erase_k_gqa_attention_forward)(batch, T, heads, heads, dim / heads, qkv, 3 * dim, qkv + dim, 3 * dim,
                                       qkv + 2 * dim, 3 * dim, att, out);
}

/*
 * Backward of the GQA forward. With P = att and dO = dout per (sequence,
 * head): dV = P^T dO, dP = dO V^T, dS = P * (dP - rowsum(dP * P)) / sqrt(hd)
 * (into scratch [batch, heads, T, T]), dQ = dS K, dK = dS^T Q; the query
 * heads of a group add their dK and dV in head order (the group's first
 * writes). dq, dk, dv have the leading dimensions of q, k, v. dV and dK by
 * column blocks over rows [c0, T) (P and dS are 0 above the diagonal), dP,
 * dS and dQ by row blocks over columns [0, r1).
 */
void SUF(erase_k_gqa_attention_backward)(int batch, int T, int heads, int kv_heads, int hd, const REAL *q,
                                         int ldq, const REAL *k, int ldk, const REAL *v, int ldv,
                                         const REAL *att, const REAL *dout, REAL *scratch, REAL *dq, REAL *dk,
                                         REAL *dv)
{
    const int dim = heads * hd, rep = heads / kv_heads;
    const double scale = 1.0 / sqrt((double)hd);
    for (int b = 0; b < batch; b++)
        for (int h = 0; h < heads; h++) {
            size_t qoff = (size_t)b * T * ldq + (size_t)h * hd;
            size_t koff = (size_t)b * T * ldk + (size_t)(h / rep) * hd;
            size_t voff = (size_t)b * T * ldv + (size_t)(h / rep) * hd;
            const REAL *qh = q + qoff, *kh = k + koff, *vh = v + voff;
            REAL *dqh = dq + qoff, *dkh = dk + koff, *dvh = dv + voff;
            const REAL beta = h % rep ? 1 : 0; /* the group's first query head writes */
            const REAL *a = att + ((size_t)b * heads + h) * T * T;
            const REAL *dO = dout + (size_t)b * T * dim + (size_t)h * hd;
            REAL *ds = scratch + ((size_t)b * heads + h) * T * T;
            for (int c0 = 0, c1; c0 < T; c0 = c1) {
                c1 = SUF(attention_block_end)(c0, T);
                GEMM(1, 0, c1 - c0, hd, T - c0, 1, a + (size_t)c0 * T + c0, T, dO + (size_t)c0 * dim,
                     dim, beta, dvh + (size_t)c0 * ldv, ldv);
            }
            for (int r0 = 0, r1; r0 < T; r0 = r1) {
                r1 = SUF(attention_block_end)(r0, T);
                GEMM(0, 1, r1 - r0, r1, hd, 1, dO + (size_t)r0 * dim, dim, vh, ldv, 0,
                     ds + (size_t)r0 * T, T);
                for (int t = r0; t < r1; t++) {
                    const REAL *p = a + (size_t)t * T;
                    REAL *g = ds + (size_t)t * T;
                    double dot = 0;
                    for (int s = 0; s <= t; s++)
                        dot += (double)p[s] * g[s];
                    for (int s = 0; s <= t; s++)
                        g[s] = (REAL)(scale * p[s] * (g[s] - dot));
                    for (int s = t + 1; s < r1; s++)
                        g[s] = 0;
                }
                GEMM(0, 0, r1 - r0, hd, r1, 1, ds + (size_t)r0 * T, T, kh, ldk, 0, dqh + (size_t)r0 * ldq,
                     ldq);
            }
            for (int c0 = 0, c1; c0 < T; c0 = c1) {
                c1 = SUF(attention_block_end)(c0, T);
                GEMM(1, 0, c1 - c0, hd, T - c0, 1, ds + (size_t)c0 * T + c0, T, qh + (size_t)c0 * ldq,
                     ldq, beta, dkh + (size_t)c0 * ldk, ldk);
            }
        }
}

/* Backward of erase_k_attention_forward: the GQA backward with kv_heads = heads. */
void SUF(erase_k_attention_backward)(int batch, int T, int heads, int dim, const REAL *qkv,
                                     const REAL *att, const REAL *dout, REAL *scratch, REAL *dqkv)
{
    SUF(erase_k_gqa_attention_backward)(batch, T, heads, heads, dim / heads, qkv, 3 * dim, qkv + dim, 3 * dim,
                                        qkv + 2 * dim, 3 * dim, att, dout, scratch, dqkv, dqkv + dim,
                                        dqkv + 2 * dim);
}

/*
 * GQA at position t of each sequence against the caches: k and v [batch,
 * kv_heads*hd] stored at row t of kcache / vcache [batch, cache_len,
 * kv_heads*hd], then per query head h the scores of rows 0..t of key/value
 * head h / (heads/kv_heads) into scratch [batch, heads, cache_len], the
 * softmax of the forward, out [batch, heads*hd] = p V. q [batch, heads*hd]
 * and k, v have leading dimensions ldq and ldkv.
 */
void SUF(erase_k_gqa_attention_decode)(int batch, int t, int cache_len, int heads, int kv_heads, int hd,
                                       const REAL *q, int ldq, const REAL *k, const REAL *v, int ldkv,
                                       REAL *kcache, REAL *vcache, REAL *scratch, REAL *out)
{
    const int kvw = kv_heads * hd, rep = heads / kv_heads;
    const REAL scale = (REAL)(1.0 / sqrt((double)hd));
    for (int b = 0; b < batch; b++) {
        REAL *kc = kcache + (size_t)b * cache_len * kvw, *vc = vcache + (size_t)b * cache_len * kvw;
        memcpy(kc + (size_t)t * kvw, k + (size_t)b * ldkv, sizeof(REAL) * (size_t)kvw);
        memcpy(vc + (size_t)t * kvw, v + (size_t)b * ldkv, sizeof(REAL) * (size_t)kvw);
        for (int h = 0; h < heads; h++) {
            REAL *p = scratch + ((size_t)b * heads + h) * cache_len;
            size_t kvo = (size_t)(h / rep) * hd;
            GEMM(0, 1, 1, t + 1, hd, scale, q + (size_t)b * ldq + (size_t)h * hd, hd, kc + kvo, kvw, 0, p,
                 t + 1);
            SUF(attention_softmax_row)(p, t + 1, t + 1);
            GEMM(0, 0, 1, hd, t + 1, 1, p, t + 1, vc + kvo, kvw, 0, out + (size_t)b * heads * hd + (size_t)h * hd,
                 hd);
        }
    }
}

/* Position t against the caches, multi-head on packed qkv [batch, 3*dim]:
 * the GQA decode with kv_heads = heads. */
void SUF(erase_k_attention_decode)(int batch, int t, int cache_len, int heads, int dim,
                                   const REAL *qkv, REAL *kcache, REAL *vcache, REAL *scratch,
                                   REAL *out)
{
    SUF(erase_k_gqa_attention_decode)(batch, t, cache_len, heads, heads, dim / heads, qkv, 3 * dim, qkv + dim,
                                      qkv + 2 * dim, 3 * dim, kcache, vcache, scratch, out);
}
