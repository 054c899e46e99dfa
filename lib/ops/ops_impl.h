/*
 * The table of implementations of the ops of lib/ops/ops.h, one per device
 * kind (internal to lib/ops). lib/ops/ops.c validates every op's arguments
 * once, then calls the member of the table of the stream's device kind;
 * members have the signatures of the ops and may assume valid arguments
 * (shapes in range, pointers the op requires not NULL). Failures found
 * while an op runs (a sparse pack over capacity, a label out of range) are
 * the implementations' own: returned by the CPU kernel to its stream,
 * raised through the device's fault word on CUDA.
 */
#ifndef ERASE_OPS_OPS_IMPL_H
#define ERASE_OPS_OPS_IMPL_H

#include "config.h"
#include "lib/ops/ops.h"

typedef struct erase_ops_impl {
    const char *name;
    erase_status_t (*linear_forward)(erase_stream_t *s, int batch, int in, int out, const float *x,
                                     const float *w, const float *b, float *y);
    erase_status_t (*linear_backward)(erase_stream_t *s, int batch, int in, int out, const float *x,
                                      const float *w, const float *dy, float *dx, float *dw,
                                      float *db);
    erase_status_t (*relu_forward)(erase_stream_t *s, size_t n, const float *x, float *y);
    erase_status_t (*relu_backward)(erase_stream_t *s, size_t n, const float *y, const float *dy,
                                    float *dx);
    erase_status_t (*gelu_forward)(erase_stream_t *s, size_t n, const float *x, float *y);
    erase_status_t (*gelu_backward)(erase_stream_t *s, size_t n, const float *x, const float *dy,
                                    float *dx);
    erase_status_t (*dropout)(erase_stream_t *s, size_t n, float p, uint64_t seed, uint64_t offset,
                              const float *x, float *y);
    erase_status_t (*concat_forward)(erase_stream_t *s, int batch, int n, const int *widths,
                                     const float *const *xs, float *y);
    erase_status_t (*concat_backward)(erase_stream_t *s, int batch, int n, const int *widths,
                                      const float *dy, float *const *dxs);
    /* bag: never NULL here (lib/ops/ops.c passes the one-hot layout) */
    erase_status_t (*embedding_forward)(erase_stream_t *s, int batch, int fields, int dim,
                                        const uint32_t *rows, const erase_bag_t *bag, const uint32_t *ids,
                                        const float *const *tables, float *out);
    erase_status_t (*embedding_backward)(erase_stream_t *s, int batch, int fields, int dim,
                                         const uint32_t *rows, const erase_bag_t *bag, const uint32_t *ids,
                                         const float *dout, uint32_t *const *grad_rows,
                                         float *const *grad_values, int *count);
    erase_status_t (*embedding_pool)(erase_stream_t *s, int batch, int fields, int dim, const erase_bag_t *bag,
                                     const float *vecs, float *out);
    erase_status_t (*interaction_forward)(erase_stream_t *s, int batch, int nvec, int dim,
                                          const float *dense, const float *emb, float *out);
    erase_status_t (*interaction_backward)(erase_stream_t *s, int batch, int nvec, int dim,
                                           const float *dense, const float *emb,
                                           const float *dout, float *ddense, float *demb);
    erase_status_t (*bce_with_logits)(erase_stream_t *s, int batch, const float *z, const float *y,
                                      float weight, float *loss, float *dz);
    erase_status_t (*softmax_xent)(erase_stream_t *s, int batch, int classes, const float *z,
                                   const int32_t *labels, float weight, float *loss, float *dz);
    erase_status_t (*layernorm_forward)(erase_stream_t *s, int batch, int dim, float eps,
                                        const float *x, const float *gamma, const float *beta,
                                        float *y, float *mean, float *rstd);
    erase_status_t (*layernorm_backward)(erase_stream_t *s, int batch, int dim, const float *x,
                                         const float *gamma, const float *mean, const float *rstd,
                                         const float *dy, float *dx, float *dgamma, float *dbeta);
    erase_status_t (*axpy)(erase_stream_t *s, size_t n, float alpha, const float *x, float *y);
    erase_status_t (*sparse_pack)(erase_stream_t *s, int tables, int capacity, int dim,
                                  const int *const *count, const uint32_t *const *rows,
                                  const float *const *values, int *out_counts, uint32_t *out_rows,
                                  float *out_values);
    erase_status_t (*sparse_merge)(erase_stream_t *s, int ranks, int tables, int capacity, int dim,
                                   float scale, const int *all_counts, const uint32_t *all_rows,
                                   const float *all_values, int *const *count,
                                   uint32_t *const *rows, float *const *values);
    erase_status_t (*shard_route)(erase_stream_t *s, int n, int tables, const erase_bag_t *bag, const uint32_t *ids,
                                  const uint32_t *table_rows, int ranks, const int64_t *bounds,
                                  const int32_t *slot, int tmax, int capacity, uint32_t *send_rows,
                                  int *send_counts, uint32_t *pos);
    erase_status_t (*gather_rows)(erase_stream_t *s, int n, int dim, const uint32_t *index,
                                  size_t index_stride, const float *src, int64_t src_rows,
                                  float *out, size_t out_stride);
    erase_status_t (*sparse_split)(erase_stream_t *s, int capacity, int dim, const int *count,
                                   const uint32_t *rows, const float *values, int ranks,
                                   const int64_t *bounds, const int32_t *slot_index,
                                   int *out_counts, uint32_t *out_rows, float *out_values);
    erase_status_t (*optim_clock_advance)(erase_stream_t *s, erase_optim_clock_t *clock,
                                          const erase_lr_schedule_t *schedule);
    erase_status_t (*check_finite)(erase_stream_t *s, const float *x, size_t n, const int *rows,
                                   int code, erase_optim_clock_t *clock);
    erase_status_t (*sgd_update)(erase_stream_t *s, size_t n, float *w, const float *g, float *buf,
                                 const erase_optim_clock_t *clock, float lr_mult, float momentum,
                                 float weight_decay);
    erase_status_t (*adamw_update)(erase_stream_t *s, size_t n, float *w, const float *g, float *m,
                                   float *v, const erase_optim_clock_t *clock, float lr_mult,
                                   float beta1, float beta2, float eps, float weight_decay);
    erase_status_t (*muon_update)(erase_stream_t *s, int64_t rows, int64_t cols, float *w, const float *g,
                                  float *buf, float *work, const erase_optim_clock_t *clock, float lr_mult,
                                  float momentum, int64_t momentum_warmup);
    erase_status_t (*rowwise_adagrad_update)(erase_stream_t *s, int dim, float *table, float *acc,
                                             const uint32_t *grad_rows, const float *grad_values,
                                             const int *count, const erase_optim_clock_t *clock,
                                             float lr_mult, float eps);
    erase_status_t (*sparse_sgd_update)(erase_stream_t *s, int dim, float *table,
                                        const uint32_t *grad_rows, const float *grad_values,
                                        const int *count, const erase_optim_clock_t *clock,
                                        float lr_mult);
    /* the gpt model's ops and gradient-norm clipping */
    erase_status_t (*gelu_tanh_forward)(erase_stream_t *s, size_t n, const float *x, float *y);
    erase_status_t (*gelu_tanh_backward)(erase_stream_t *s, size_t n, const float *x,
                                         const float *dy, float *dx);
    erase_status_t (*token_embedding_forward)(erase_stream_t *s, int batch, int T, int dim, int vocab,
                                              const int32_t *tokens, const float *wte,
                                              const float *wpe, float *out);
    erase_status_t (*token_embedding_backward)(erase_stream_t *s, int batch, int T, int dim, int vocab,
                                               const int32_t *tokens, const float *dout,
                                               float *dwte, float *dwpe, int accumulate);
    erase_status_t (*attention_forward)(erase_stream_t *s, int batch, int T, int heads, int dim,
                                        const float *qkv, float *att, float *out);
    erase_status_t (*attention_backward)(erase_stream_t *s, int batch, int T, int heads, int dim,
                                         const float *qkv, const float *att, const float *dout,
                                         float *scratch, float *dqkv);
    erase_status_t (*attention_decode)(erase_stream_t *s, int batch, int t, int cache_len, int heads,
                                       int dim, const float *qkv, float *kcache, float *vcache,
                                       float *scratch, float *out);
    /* the nanochat model's ops (NULL on a device without them) */
    erase_status_t (*rmsnorm_forward)(erase_stream_t *s, int rows, int dim, float eps, const float *x,
                                      float *y, float *rstd);
    erase_status_t (*rmsnorm_backward)(erase_stream_t *s, int rows, int dim, const float *x,
                                       const float *rstd, const float *dy, float *dx);
    erase_status_t (*rotary)(erase_stream_t *s, int batch, int T, int t0, int heads, int hd, float base,
                             int inverse, const float *x, float *y);
    erase_status_t (*cross_forward)(erase_stream_t *s, size_t n, const float *x0, const float *u, const float *xl,
                                    float *y);
    erase_status_t (*cross_backward)(erase_stream_t *s, size_t n, const float *x0, const float *u, const float *dy,
                                     float *du, float *dx0);
    erase_status_t (*relu2_forward)(erase_stream_t *s, size_t n, const float *x, float *y);
    erase_status_t (*relu2_backward)(erase_stream_t *s, size_t n, const float *x, const float *dy, float *dx);
    erase_status_t (*softcap_forward)(erase_stream_t *s, size_t n, float cap, const float *x, float *y);
    erase_status_t (*softcap_backward)(erase_stream_t *s, size_t n, float cap, const float *y,
                                       const float *dy, float *dx);
    erase_status_t (*gqa_attention_forward)(erase_stream_t *s, int batch, int T, int heads, int kv_heads,
                                            int hd, const float *q, const float *k, const float *v,
                                            float *att, float *out);
    erase_status_t (*gqa_attention_backward)(erase_stream_t *s, int batch, int T, int heads, int kv_heads,
                                             int hd, const float *q, const float *k, const float *v,
                                             const float *att, const float *dout, float *scratch,
                                             float *dq, float *dk, float *dv);
    erase_status_t (*gqa_attention_decode)(erase_stream_t *s, int batch, int t, int cache_len, int heads,
                                           int kv_heads, int hd, const float *q, const float *k, const float *v,
                                           float *kcache, float *vcache, float *scratch, float *out);
    erase_status_t (*sum_squares)(erase_stream_t *s, size_t n, const float *x, float *acc);
    erase_status_t (*clip_by_norm)(erase_stream_t *s, size_t n, float *x, const float *sumsq,
                                   float max_norm);
} erase_ops_impl_t;

/* lib/ops/cpu: the single-precision kernels of kernels_impl.h run by the
 * stream's worker thread. */
extern const erase_ops_impl_t erase_ops_cpu;

#ifdef HAVE_CUDA
/* lib/ops/cuda: the .cu kernels and cuBLAS GEMMs (through erase_sgemm). */
extern const erase_ops_impl_t erase_ops_cuda;
#endif

#endif
