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
    void erase_k_attention_decode_##S(int batch, int t, int cache_len, int heads, int dim,      \
                                      const REAL *qkv, REAL *kcache, REAL *vcache,               \
                                      REAL *scratch, REAL *out);

ERASE_KERNELS_DECLARE(float, f32)
ERASE_KERNELS_DECLARE(double, f64)

/* Rows of the causal attention's row blocks (lib/ops/cpu/attention_impl.h):
 * each block of positions is multiplied with the keys up to its end only. */
#define ERASE_ATTENTION_BLOCK 64

/* Bytes of scratch erase_k_embedding_backward_field_* needs for `batch`. */
#define ERASE_EMBEDDING_SCRATCH_BYTES(batch) ((size_t)(batch) * 16)

#endif
