/*
 * Internal to lib/ops/cpu: the optimizer (optim_cpu.c), sparse-gradient
 * (sparse_cpu.c), sharded-exchange (shard_cpu.c) and transformer
 * (transformer_cpu.c) launchers that ops_cpu.c puts into the table
 * erase_ops_cpu.
 * Signatures and semantics of the ops of lib/ops/ops.h; arguments were
 * validated by lib/ops/ops.c.
 */
#ifndef ERASE_OPS_CPU_OPS_CPU_H
#define ERASE_OPS_CPU_OPS_CPU_H

#include "lib/device/cpu/cpu.h"
#include "lib/ops/ops_impl.h"

/* Enqueue kernel `fn` on CPU stream s with a copy of the argument struct
 * `args`, and return from the launcher (its failure, or ERASE_OK). */
#define LAUNCH(s, fn, args)                                              \
    do {                                                                 \
        ERASE_CHECK(erase_cpu_launch((s), (fn), &(args), sizeof(args))); \
        return ERASE_OK;                                                 \
    } while (0)

erase_status_t erase_cpu_sparse_pack(erase_stream_t *s, int tables, int capacity, int dim,
                                     const int *const *count, const uint32_t *const *rows,
                                     const float *const *values, int *out_counts,
                                     uint32_t *out_rows, float *out_values);
erase_status_t erase_cpu_sparse_merge(erase_stream_t *s, int ranks, int tables, int capacity,
                                      int dim, float scale, const int *all_counts,
                                      const uint32_t *all_rows, const float *all_values,
                                      int *const *count, uint32_t *const *rows,
                                      float *const *values);
erase_status_t erase_cpu_shard_route(erase_stream_t *s, int n, int tables, const erase_bag_t *bag, const uint32_t *ids,
                                     const uint32_t *table_rows, int ranks, const int64_t *bounds,
                                     const int32_t *slot, int tmax, int capacity,
                                     uint32_t *send_rows, int *send_counts, uint32_t *pos);
erase_status_t erase_cpu_gather_rows(erase_stream_t *s, int n, int dim, const uint32_t *index,
                                     size_t index_stride, const float *src, int64_t src_rows,
                                     float *out, size_t out_stride);
erase_status_t erase_cpu_sparse_split(erase_stream_t *s, int capacity, int dim, const int *count,
                                      const uint32_t *rows, const float *values, int ranks,
                                      const int64_t *bounds, const int32_t *slot_index,
                                      int *out_counts, uint32_t *out_rows, float *out_values);
erase_status_t erase_cpu_optim_clock_advance(erase_stream_t *s, erase_optim_clock_t *clock,
                                             const erase_lr_schedule_t *schedule);
erase_status_t erase_cpu_check_finite(erase_stream_t *s, const float *x, size_t n,
                                      const int *rows, int code, erase_optim_clock_t *clock);
erase_status_t erase_cpu_sgd_update(erase_stream_t *s, size_t n, float *w, const float *g,
                                    float *buf, const erase_optim_clock_t *clock, float lr_mult,
                                    float momentum, float weight_decay);
erase_status_t erase_cpu_muon_update(erase_stream_t *s, int64_t rows, int64_t cols, float *w,
                                     const float *g, float *buf, float *work,
                                     const erase_optim_clock_t *clock, float lr_mult, float momentum,
                                     int64_t momentum_warmup);
erase_status_t erase_cpu_adamw_update(erase_stream_t *s, size_t n, float *w, const float *g,
                                      float *m, float *v, const erase_optim_clock_t *clock,
                                      float lr_mult, float beta1, float beta2, float eps,
                                      float weight_decay);
erase_status_t erase_cpu_sum_squares(erase_stream_t *s, size_t n, const float *x, float *acc);
erase_status_t erase_cpu_clip_by_norm(erase_stream_t *s, size_t n, float *x, const float *sumsq,
                                      float max_norm);
erase_status_t erase_cpu_rowwise_adagrad_update(erase_stream_t *s, int dim, float *table,
                                                float *acc, const uint32_t *grad_rows,
                                                const float *grad_values, const int *count,
                                                const erase_optim_clock_t *clock, float lr_mult,
                                                float eps);
erase_status_t erase_cpu_sparse_sgd_update(erase_stream_t *s, int dim, float *table,
                                           const uint32_t *grad_rows, const float *grad_values,
                                           const int *count, const erase_optim_clock_t *clock,
                                           float lr_mult);
erase_status_t erase_cpu_token_embedding_forward(erase_stream_t *s, int batch, int T, int dim,
                                                 int vocab, const int32_t *tokens, const float *wte,
                                                 const float *wpe, float *out);
erase_status_t erase_cpu_token_embedding_backward(erase_stream_t *s, int batch, int T, int dim,
                                                  int vocab, const int32_t *tokens,
                                                  const float *dout, float *dwte, float *dwpe,
                                                  int accumulate);
erase_status_t erase_cpu_attention_forward(erase_stream_t *s, int batch, int T, int heads, int dim,
                                           const float *qkv, float *att, float *out);
erase_status_t erase_cpu_attention_backward(erase_stream_t *s, int batch, int T, int heads,
                                            int dim, const float *qkv, const float *att,
                                            const float *dout, float *scratch, float *dqkv);
erase_status_t erase_cpu_attention_decode(erase_stream_t *s, int batch, int t, int cache_len,
                                          int heads, int dim, const float *qkv, float *kcache,
                                          float *vcache, float *scratch, float *out);

/* the dcn model's cross layer (cross_cpu.c) */
erase_status_t erase_cpu_cross_forward(erase_stream_t *s, size_t n, const float *x0, const float *u, const float *xl,
                                       float *y);
erase_status_t erase_cpu_cross_backward(erase_stream_t *s, size_t n, const float *x0, const float *u,
                                        const float *dy, float *du, float *dx0);

/* the nanochat model's ops (nanochat_cpu.c) */
erase_status_t erase_cpu_rmsnorm_forward(erase_stream_t *s, int rows, int dim, float eps, const float *x, float *y, float *rstd);
erase_status_t erase_cpu_rmsnorm_backward(erase_stream_t *s, int rows, int dim, const float *x, const float *rstd, const float *dy, float *dx);
erase_status_t erase_cpu_rotary(erase_stream_t *s, int batch, int T, int t0, int heads, int hd, float base, int inverse, const float *x, float *y);
erase_status_t erase_cpu_relu2_forward(erase_stream_t *s, size_t n, const float *x, float *y);
erase_status_t erase_cpu_relu2_backward(erase_stream_t *s, size_t n, const float *x, const float *dy, float *dx);
erase_status_t erase_cpu_softcap_forward(erase_stream_t *s, size_t n, float cap, const float *x, float *y);
erase_status_t erase_cpu_softcap_backward(erase_stream_t *s, size_t n, float cap, const float *y, const float *dy, float *dx);
erase_status_t erase_cpu_gqa_attention_forward(erase_stream_t *s, int batch, int T, int heads, int kv_heads, int hd, const float *q, const float *k, const float *v, float *att, float *out);
erase_status_t erase_cpu_gqa_attention_backward(erase_stream_t *s, int batch, int T, int heads, int kv_heads, int hd, const float *q, const float *k, const float *v, const float *att, const float *dout, float *scratch, float *dq, float *dk, float *dv);

erase_status_t erase_cpu_gqa_attention_decode(erase_stream_t *s, int batch, int t, int cache_len, int heads,
                                              int kv_heads, int hd, const float *q, const float *k, const float *v,
                                              float *kcache, float *vcache, float *scratch, float *out);

#endif
