/*
 * CPU kernel bodies (synchronous; run on a stream's worker by lib/ops, or
 * directly by tests), in single (_f32) and double (_f64) precision from one
 * source, lib/ops/cpu/kernels_impl.h. Shapes and semantics are those of the
 * matching ops in lib/ops/ops.h.
 */
#ifndef ERASE_OPS_CPU_KERNELS_H
#define ERASE_OPS_CPU_KERNELS_H

#include <stddef.h>
#include <stdint.h>

#include "lib/ops/ops.h"

#define ERASE_KERNELS_DECLARE(REAL, S)                                                           \
    void erase_k_linear_forward_##S(int batch, int in, int out, const REAL *x, const REAL *w,   \
                                    const REAL *b, REAL *y);                                     \
    void erase_k_linear_backward_##S(int batch, int in, int out, const REAL *x, const REAL *w,  \
                                     const REAL *dy, REAL *dx, REAL *dw, REAL *db);              \
    void erase_k_relu_forward_##S(size_t n, const REAL *x, REAL *y);                             \
    void erase_k_relu_backward_##S(size_t n, const REAL *y, const REAL *dy, REAL *dx);          \
    void erase_k_gelu_forward_##S(size_t n, const REAL *x, REAL *y);                             \
    void erase_k_gelu_backward_##S(size_t n, const REAL *x, const REAL *dy, REAL *dx);          \
    void erase_k_dropout_##S(size_t n, float p, uint64_t seed, uint64_t offset, const REAL *x,   \
                             REAL *y);                                                           \
    void erase_k_concat_forward_##S(int batch, int n, const int *widths,                        \
                                    const REAL *const *xs, REAL *y);                             \
    void erase_k_concat_backward_##S(int batch, int n, const int *widths, const REAL *dy,       \
                                     REAL *const *dxs);                                          \
    void erase_k_embedding_forward_##S(int batch, int fields, int dim, const uint32_t *rows,    \
                                       const uint32_t *ids, const REAL *const *tables,           \
                                       REAL *out);                                               \
    int erase_k_embedding_backward_field_##S(int batch, int fields, int dim, int f,             \
                                             uint32_t rows, const uint32_t *ids,                 \
                                             const REAL *dout, void *scratch,                    \
                                             uint32_t *out_rows, REAL *out_grads);               \
    void erase_k_embedding_bag_forward_##S(int batch, int fields, int dim, const uint32_t *rows, \
                                           const erase_bag_t *bag, const uint32_t *ids,          \
                                           const REAL *const *tables, REAL *out);                \
    void erase_k_embedding_pool_##S(int batch, int fields, int dim, const erase_bag_t *bag,      \
                                    const REAL *vecs, REAL *out);                                \
    int erase_k_embedding_bag_backward_field_##S(int batch, int fields, int dim, int f,         \
                                                 uint32_t rows, const erase_bag_t *bag,          \
                                                 const uint32_t *ids, const REAL *dout,          \
                                                 void *scratch, uint32_t *out_rows,              \
                                                 REAL *out_grads);                               \
    void erase_k_interaction_forward_##S(int batch, int nvec, int dim, const REAL *dense,       \
                                         const REAL *emb, REAL *out);                            \
    void erase_k_interaction_backward_##S(int batch, int nvec, int dim, const REAL *dense,      \
                                          const REAL *emb, const REAL *dout, REAL *ddense,       \
                                          REAL *demb);                                           \
    double erase_k_bce_with_logits_##S(int batch, const REAL *z, const REAL *y, double weight,  \
                                       REAL *dz);                                                \
    double erase_k_softmax_xent_##S(int batch, int classes, const REAL *z,                      \
                                    const int32_t *labels, double weight, REAL *dz);             \
    void erase_k_layernorm_forward_##S(int batch, int dim, double eps, const REAL *x,           \
                                       const REAL *gamma, const REAL *beta, REAL *y, REAL *mean, \
                                       REAL *rstd);                                              \
    void erase_k_layernorm_backward_##S(int batch, int dim, const REAL *x, const REAL *gamma,   \
                                        const REAL *mean, const REAL *rstd, const REAL *dy,      \
                                        REAL *dx, REAL *dgamma, REAL *dbeta);                    \
    void erase_k_gelu_tanh_forward_##S(size_t n, const REAL *x, REAL *y);                        \
    void erase_k_gelu_tanh_backward_##S(size_t n, const REAL *x, const REAL *dy, REAL *dx);     \
    void erase_k_token_embedding_forward_##S(int batch, int T, int dim, const int32_t *tokens,  \
                                             const REAL *wte, const REAL *wpe, REAL *out);       \
    void erase_k_token_embedding_backward_##S(int batch, int T, int dim, int vocab,             \
                                              const int32_t *tokens, const REAL *dout,           \
                                              REAL *dwte, REAL *dwpe, int accumulate);           \
    void erase_k_attention_forward_##S(int batch, int T, int heads, int dim, const REAL *qkv,   \
                                       REAL *att, REAL *out);                                    \
    void erase_k_attention_backward_##S(int batch, int T, int heads, int dim, const REAL *qkv,  \
                                        const REAL *att, const REAL *dout, REAL *scratch,        \
                                        REAL *dqkv);                                             \
    void erase_k_gqa_attention_forward_##S(int batch, int T, int heads, int kv_heads, int hd,    \
                                           const REAL *q, int ldq, const REAL *k, int ldk,        \
                                           const REAL *v, int ldv, REAL *att, REAL *out);         \
    void erase_k_gqa_attention_backward_##S(int batch, int T, int heads, int kv_heads, int hd,   \
                                            const REAL *q, int ldq, const REAL *k, int ldk,       \
                                            const REAL *v, int ldv, const REAL *att,              \
                                            const REAL *dout, REAL *scratch, REAL *dq, REAL *dk,  \
                                            REAL *dv);                                            \
    void erase_k_gqa_attention_decode_##S(int batch, int t, int cache_len, int heads, int kv_heads,  \
                                          int hd, const REAL *q, int ldq, const REAL *k,           \
                                          const REAL *v, int ldkv, REAL *kcache, REAL *vcache,     \
                                          REAL *scratch, REAL *out);                               \
    void erase_k_attention_decode_##S(int batch, int t, int cache_len, int heads, int dim,      \
                                      const REAL *qkv, REAL *kcache, REAL *vcache,               \
                                      REAL *scratch, REAL *out);

ERASE_KERNELS_DECLARE(float, f32)
ERASE_KERNELS_DECLARE(double, f64)

/*
 * exp(x) in float, branch-free so that the loops calling it vectorize
 * (libm's expf is a call per element): Cephes' range reduction x = n ln2
 * + r, |r| <= ln2/2, a degree-7 polynomial for e^r, then 2^n in two exact
 * factors. Relative error below 2.5e-7 for x in [-87.33, 88.72] (the
 * normal range); x below it gives 0 (no subnormal results), above it
 * +inf; NaN gives NaN.
 */
static inline float erase_k_exp_f32(float x)
{
    const float lo = -87.33654f, hi = 88.72283f;
    float xc = x < lo ? lo : x > hi ? hi : x; /* NaN passes */
    float n = __builtin_rintf((xc == xc ? xc : 0) * 1.44269504088896341f); /* an int for NaN too */
    float r = xc - n * 0.693359375f - n * -2.12194440e-4f;
    float p = 1.9875691500e-4f;
    p = p * r + 1.3981999507e-3f;
    p = p * r + 8.3334519073e-3f;
    p = p * r + 4.1665795894e-2f;
    p = p * r + 1.6666665459e-1f;
    p = p * r + 5.0000001201e-1f;
    p = p * r * r + r + 1.0f;
    int32_t k = (int32_t)n, k1 = k / 2, k2 = k - k1; /* each in [-63, 64] */
    uint32_t b1 = (uint32_t)(k1 + 127) << 23, b2 = (uint32_t)(k2 + 127) << 23;
    float s1, s2;
    __builtin_memcpy(&s1, &b1, sizeof s1);
    __builtin_memcpy(&s2, &b2, sizeof s2);
    float e = p * s1 * s2;
    return x < lo ? 0.0f : x > hi ? __builtin_inff() : e;
}

/* Rows of the causal attention's row blocks (lib/ops/cpu/attention_impl.h):
 * each block of positions is multiplied with the keys up to its end only. */
#define ERASE_ATTENTION_BLOCK 64

/* Bytes of scratch erase_k_embedding_backward_field_* needs for `batch`
 * ids (the bag kernel: batch x the field's hotness). */
#define ERASE_EMBEDDING_SCRATCH_BYTES(batch) ((size_t)(batch) * 16)

/*
 * The bag kernels' lengths check (they trust it): 1 with the first sample
 * and field whose length lies outside [1, hotness[f]] and that length;
 * 0 when every length is good (bag NULL or without lengths: always).
 */
static inline int erase_k_bag_bad_length(int batch, int fields, const erase_bag_t *bag, int *sample, int *field,
                                         uint32_t *length)
{
    for (int r = 0; bag && bag->lengths && r < batch; r++)
        for (int f = 0; f < fields; f++) {
            uint32_t n = bag->lengths[(size_t)r * fields + f];
            if (n < 1 || n > (uint32_t)bag->hotness[f]) {
                *sample = r;
                *field = f;
                *length = n;
                return 1;
            }
        }
    return 0;
}

#endif
