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
    double sum = 0;
    for (int s = 0; s < n; s++) {
        row[s] = EXP(row[s] - m);
        sum += row[s];
    }
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

/* att [batch, heads, T, T] = causal softmax(q k^T / sqrt(hd)); out [batch, T, dim] = att v. */
void SUF(erase_k_attention_forward)(int batch, int T, int heads, int dim, const REAL *qkv, REAL *att,
                                    REAL *out)
{
    const int hd = dim / heads, ld = 3 * dim;
    const REAL scale = (REAL)(1.0 / sqrt((double)hd));
    for (int b = 0; b < batch; b++)
        for (int h = 0; h < heads; h++) {
            const REAL *q = qkv + (size_t)b * T * ld + (size_t)h * hd, *k = q + dim, *v = q + 2 * dim;
            REAL *a = att + ((size_t)b * heads + h) * T * T;
            REAL *o = out + (size_t)b * T * dim + (size_t)h * hd;
            for (int r0 = 0, r1; r0 < T; r0 = r1) {
                r1 = SUF(attention_block_end)(r0, T);
                GEMM(0, 1, r1 - r0, r1, hd, scale, q + (size_t)r0 * ld, ld, k, ld, 0,
                     a + (size_t)r0 * T, T);
                for (int t = r0; t < r1; t++)
                    SUF(attention_softmax_row)(a + (size_t)t * T, t + 1, T);
                GEMM(0, 0, r1 - r0, hd, r1, 1, a + (size_t)r0 * T, T, v, ld, 0, o + (size_t)r0 * dim,
                     dim);
            }
        }
}

/*
 * With P = att and dO = dout per (sequence, head): dV = P^T dO, dP = dO V^T,
 * dS = P * (dP - rowsum(dP * P)) / sqrt(hd) (into scratch), dQ = dS K,
 * dK = dS^T Q. dV and dK by column blocks over rows [c0, T) (P and dS are
 * 0 above the diagonal), dP, dS and dQ by row blocks over columns [0, r1).
 */
void SUF(erase_k_attention_backward)(int batch, int T, int heads, int dim, const REAL *qkv,
                                     const REAL *att, const REAL *dout, REAL *scratch, REAL *dqkv)
{
    const int hd = dim / heads, ld = 3 * dim;
    const double scale = 1.0 / sqrt((double)hd);
    for (int b = 0; b < batch; b++)
        for (int h = 0; h < heads; h++) {
            size_t qoff = (size_t)b * T * ld + (size_t)h * hd;
            const REAL *q = qkv + qoff, *k = q + dim, *v = q + 2 * dim;
            REAL *dq = dqkv + qoff, *dk = dq + dim, *dv = dq + 2 * dim;
            const REAL *a = att + ((size_t)b * heads + h) * T * T;
            const REAL *dO = dout + (size_t)b * T * dim + (size_t)h * hd;
            REAL *ds = scratch + ((size_t)b * heads + h) * T * T;
            for (int c0 = 0, c1; c0 < T; c0 = c1) {
                c1 = SUF(attention_block_end)(c0, T);
                GEMM(1, 0, c1 - c0, hd, T - c0, 1, a + (size_t)c0 * T + c0, T, dO + (size_t)c0 * dim,
                     dim, 0, dv + (size_t)c0 * ld, ld);
            }
            for (int r0 = 0, r1; r0 < T; r0 = r1) {
                r1 = SUF(attention_block_end)(r0, T);
                GEMM(0, 1, r1 - r0, r1, hd, 1, dO + (size_t)r0 * dim, dim, v, ld, 0,
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
                GEMM(0, 0, r1 - r0, hd, r1, 1, ds + (size_t)r0 * T, T, k, ld, 0, dq + (size_t)r0 * ld,
                     ld);
            }
            for (int c0 = 0, c1; c0 < T; c0 = c1) {
                c1 = SUF(attention_block_end)(c0, T);
                GEMM(1, 0, c1 - c0, hd, T - c0, 1, ds + (size_t)c0 * T + c0, T, q + (size_t)c0 * ld,
                     ld, 0, dk + (size_t)c0 * ld, ld);
            }
        }
}

/*
 * Position t of each sequence against the caches: k and v of qkv [batch,
 * 3*dim] stored at row t of kcache / vcache [batch, cache_len, dim], then
 * per head the scores of rows 0..t into scratch [batch, heads, cache_len],
 * the softmax of the forward, out [batch, dim] = p V.
 */
void SUF(erase_k_attention_decode)(int batch, int t, int cache_len, int heads, int dim,
                                   const REAL *qkv, REAL *kcache, REAL *vcache, REAL *scratch,
                                   REAL *out)
{
    const int hd = dim / heads;
    const REAL scale = (REAL)(1.0 / sqrt((double)hd));
    for (int b = 0; b < batch; b++) {
        const REAL *x = qkv + (size_t)b * 3 * dim;
        REAL *kc = kcache + (size_t)b * cache_len * dim, *vc = vcache + (size_t)b * cache_len * dim;
        memcpy(kc + (size_t)t * dim, x + dim, sizeof(REAL) * (size_t)dim);
        memcpy(vc + (size_t)t * dim, x + 2 * dim, sizeof(REAL) * (size_t)dim);
        for (int h = 0; h < heads; h++) {
            REAL *p = scratch + ((size_t)b * heads + h) * cache_len;
            GEMM(0, 1, 1, t + 1, hd, scale, x + (size_t)h * hd, hd, kc + (size_t)h * hd, dim, 0, p,
                 t + 1);
            SUF(attention_softmax_row)(p, t + 1, t + 1);
            GEMM(0, 0, 1, hd, t + 1, 1, p, t + 1, vc + (size_t)h * hd, dim, 0,
                 out + (size_t)b * dim + (size_t)h * hd, hd);
        }
    }
}
