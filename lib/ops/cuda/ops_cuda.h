/*
 * Internal to lib/ops/cuda: the launchers of the .cu files, which
 * ops_cuda.c puts into the table erase_ops_cuda, and the per-stream scratch
 * memory some of them use. Signatures and semantics of the ops of
 * lib/ops/ops.h; arguments were validated by lib/ops/ops.c. Each launcher
 * enqueues its kernels (and GEMMs through erase_sgemm*) on the stream's
 * cudaStream_t and returns ERASE_ERR_BACKEND if a launch fails; failures
 * found by a kernel (ops.h: "fails when the op runs") go to the device's
 * fault word (lib/device/cuda/cuda.h) and come back from the next
 * erase_stream_synchronize.
 */
#ifndef ERASE_OPS_CUDA_OPS_CUDA_H
#define ERASE_OPS_CUDA_OPS_CUDA_H

#include "lib/ops/ops_impl.h"

#ifdef __cplusplus
extern "C" {
#endif

/*
 * Device scratch memory of at least `bytes` bytes for the kernels of one op
 * on stream `s` (lib/ops/cuda/scratch.c). One buffer per stream, grown on
 * demand (to at least twice its size) and never freed before the process
 * exits: ops of one stream run one after another, so they may share it,
 * and a graph captured earlier keeps the (smaller) buffer it recorded.
 * Growing needs erase_malloc, which is not allowed while capturing: an op
 * whose scratch must grow during a capture fails with ERASE_ERR_STATE (run
 * the step once eagerly before capturing it). A graph must be replayed on
 * the stream it was captured from (or not while that stream runs ops).
 * Thread-safe. Errors: ERASE_ERR_STATE, ERASE_ERR_NOMEM.
 */
erase_status_t erase_cuda_op_scratch(erase_stream_t *s, size_t bytes, void **ptr);

#define ERASE_CUDA_OP_DECLARE(name, ...) erase_status_t erase_cuda_op_##name(__VA_ARGS__);

ERASE_CUDA_OP_DECLARE(linear_forward, erase_stream_t *s, int batch, int in, int out, const float *x,
                      const float *w, const float *b, float *y)
ERASE_CUDA_OP_DECLARE(linear_backward, erase_stream_t *s, int batch, int in, int out,
                      const float *x, const float *w, const float *dy, float *dx, float *dw,
                      float *db)
ERASE_CUDA_OP_DECLARE(relu_forward, erase_stream_t *s, size_t n, const float *x, float *y)
ERASE_CUDA_OP_DECLARE(relu_backward, erase_stream_t *s, size_t n, const float *y, const float *dy,
                      float *dx)
ERASE_CUDA_OP_DECLARE(gelu_forward, erase_stream_t *s, size_t n, const float *x, float *y)
ERASE_CUDA_OP_DECLARE(gelu_backward, erase_stream_t *s, size_t n, const float *x, const float *dy,
                      float *dx)
ERASE_CUDA_OP_DECLARE(dropout, erase_stream_t *s, size_t n, float p, uint64_t seed,
                      uint64_t offset, const float *x, float *y)
ERASE_CUDA_OP_DECLARE(axpy, erase_stream_t *s, size_t n, float alpha, const float *x, float *y)
ERASE_CUDA_OP_DECLARE(concat_forward, erase_stream_t *s, int batch, int n, const int *widths,
                      const float *const *xs, float *y)
ERASE_CUDA_OP_DECLARE(concat_backward, erase_stream_t *s, int batch, int n, const int *widths,
                      const float *dy, float *const *dxs)
ERASE_CUDA_OP_DECLARE(embedding_forward, erase_stream_t *s, int batch, int fields, int dim,
                      const uint32_t *rows, const erase_bag_t *bag, const uint32_t *ids,
                      const float *const *tables, float *out)
ERASE_CUDA_OP_DECLARE(embedding_backward, erase_stream_t *s, int batch, int fields, int dim,
                      const uint32_t *rows, const erase_bag_t *bag, const uint32_t *ids, const float *dout,
                      uint32_t *const *grad_rows, float *const *grad_values, int *count)
ERASE_CUDA_OP_DECLARE(embedding_pool, erase_stream_t *s, int batch, int fields, int dim, const erase_bag_t *bag,
                      const float *vecs, float *out)
ERASE_CUDA_OP_DECLARE(interaction_forward, erase_stream_t *s, int batch, int nvec, int dim,
                      const float *dense, const float *emb, float *out)
ERASE_CUDA_OP_DECLARE(interaction_backward, erase_stream_t *s, int batch, int nvec, int dim,
                      const float *dense, const float *emb, const float *dout, float *ddense,
                      float *demb)
ERASE_CUDA_OP_DECLARE(bce_with_logits, erase_stream_t *s, int batch, const float *z,
                      const float *y, float weight, float *loss, float *dz)
ERASE_CUDA_OP_DECLARE(softmax_xent, erase_stream_t *s, int batch, int classes, const float *z,
                      const int32_t *labels, float weight, float *loss, float *dz)
ERASE_CUDA_OP_DECLARE(layernorm_forward, erase_stream_t *s, int batch, int dim, float eps,
                      const float *x, const float *gamma, const float *beta, float *y, float *mean,
                      float *rstd)
ERASE_CUDA_OP_DECLARE(layernorm_backward, erase_stream_t *s, int batch, int dim, const float *x,
                      const float *gamma, const float *mean, const float *rstd, const float *dy,
                      float *dx, float *dgamma, float *dbeta)
ERASE_CUDA_OP_DECLARE(sparse_pack, erase_stream_t *s, int tables, int capacity, int dim,
                      const int *const *count, const uint32_t *const *rows,
                      const float *const *values, int *out_counts, uint32_t *out_rows,
                      float *out_values)
ERASE_CUDA_OP_DECLARE(sparse_merge, erase_stream_t *s, int ranks, int tables, int capacity,
                      int dim, float scale, const int *all_counts, const uint32_t *all_rows,
                      const float *all_values, int *const *count, uint32_t *const *rows,
                      float *const *values)
ERASE_CUDA_OP_DECLARE(shard_route, erase_stream_t *s, int n, int tables, const erase_bag_t *bag, const uint32_t *ids,
                      const uint32_t *table_rows, int ranks, const int64_t *bounds,
                      const int32_t *slot, int tmax, int capacity, uint32_t *send_rows,
                      int *send_counts, uint32_t *pos)
ERASE_CUDA_OP_DECLARE(gather_rows, erase_stream_t *s, int n, int dim, const uint32_t *index,
                      size_t index_stride, const float *src, int64_t src_rows, float *out,
                      size_t out_stride)
ERASE_CUDA_OP_DECLARE(sparse_split, erase_stream_t *s, int capacity, int dim, const int *count,
                      const uint32_t *rows, const float *values, int ranks, const int64_t *bounds,
                      const int32_t *slot_index, int *out_counts, uint32_t *out_rows,
                      float *out_values)
ERASE_CUDA_OP_DECLARE(optim_clock_advance, erase_stream_t *s, erase_optim_clock_t *clock,
                      const erase_lr_schedule_t *schedule)
ERASE_CUDA_OP_DECLARE(check_finite, erase_stream_t *s, const float *x, size_t n, const int *rows,
                      int code, erase_optim_clock_t *clock)
ERASE_CUDA_OP_DECLARE(sgd_update, erase_stream_t *s, size_t n, float *w, const float *g,
                      float *buf, const erase_optim_clock_t *clock, float lr_mult, float momentum,
                      float weight_decay)
ERASE_CUDA_OP_DECLARE(adamw_update, erase_stream_t *s, size_t n, float *w, const float *g,
                      float *m, float *v, const erase_optim_clock_t *clock, float lr_mult,
                      float beta1, float beta2, float eps, float weight_decay)
ERASE_CUDA_OP_DECLARE(muon_update, erase_stream_t *s, int64_t rows, int64_t cols, float *w,
                      const float *g, float *buf, float *work, const erase_optim_clock_t *clock,
                      float lr_mult, float momentum, int64_t momentum_warmup)
ERASE_CUDA_OP_DECLARE(rowwise_adagrad_update, erase_stream_t *s, int dim, float *table,
                      float *acc, const uint32_t *grad_rows, const float *grad_values,
                      const int *count, const erase_optim_clock_t *clock, float lr_mult,
                      float eps)
ERASE_CUDA_OP_DECLARE(sparse_sgd_update, erase_stream_t *s, int dim, float *table,
                      const uint32_t *grad_rows, const float *grad_values, const int *count,
                      const erase_optim_clock_t *clock, float lr_mult)
ERASE_CUDA_OP_DECLARE(gelu_tanh_forward, erase_stream_t *s, size_t n, const float *x, float *y)
ERASE_CUDA_OP_DECLARE(gelu_tanh_backward, erase_stream_t *s, size_t n, const float *x,
                      const float *dy, float *dx)
ERASE_CUDA_OP_DECLARE(token_embedding_forward, erase_stream_t *s, int batch, int T, int dim,
                      int vocab, const int32_t *tokens, const float *wte, const float *wpe,
                      float *out)
ERASE_CUDA_OP_DECLARE(token_embedding_backward, erase_stream_t *s, int batch, int T, int dim,
                      int vocab, const int32_t *tokens, const float *dout, float *dwte,
                      float *dwpe, int accumulate)
ERASE_CUDA_OP_DECLARE(attention_forward, erase_stream_t *s, int batch, int T, int heads, int dim,
                      const float *qkv, float *att, float *out)
ERASE_CUDA_OP_DECLARE(attention_backward, erase_stream_t *s, int batch, int T, int heads, int dim,
                      const float *qkv, const float *att, const float *dout, float *scratch,
                      float *dqkv)
ERASE_CUDA_OP_DECLARE(attention_decode, erase_stream_t *s, int batch, int t, int cache_len,
                      int heads, int dim, const float *qkv, float *kcache, float *vcache,
                      float *scratch, float *out)
ERASE_CUDA_OP_DECLARE(rmsnorm_forward, erase_stream_t *s, int rows, int dim, float eps, const float *x,
                      float *y, float *rstd)
ERASE_CUDA_OP_DECLARE(rmsnorm_backward, erase_stream_t *s, int rows, int dim, const float *x,
                      const float *rstd, const float *dy, float *dx)
ERASE_CUDA_OP_DECLARE(rotary, erase_stream_t *s, int batch, int T, int t0, int heads, int hd, float base,
                      int inverse, const float *x, float *y)
ERASE_CUDA_OP_DECLARE(cross_forward, erase_stream_t *s, size_t n, const float *x0, const float *u, const float *xl,
                      float *y)
ERASE_CUDA_OP_DECLARE(cross_backward, erase_stream_t *s, size_t n, const float *x0, const float *u, const float *dy,
                      float *du, float *dx0)
ERASE_CUDA_OP_DECLARE(relu2_forward, erase_stream_t *s, size_t n, const float *x, float *y)
ERASE_CUDA_OP_DECLARE(relu2_backward, erase_stream_t *s, size_t n, const float *x, const float *dy,
                      float *dx)
ERASE_CUDA_OP_DECLARE(softcap_forward, erase_stream_t *s, size_t n, float cap, const float *x, float *y)
ERASE_CUDA_OP_DECLARE(softcap_backward, erase_stream_t *s, size_t n, float cap, const float *y,
                      const float *dy, float *dx)
ERASE_CUDA_OP_DECLARE(gqa_attention_forward, erase_stream_t *s, int batch, int T, int heads, int kv_heads,
                      int hd, const float *q, const float *k, const float *v, float *att, float *out)
ERASE_CUDA_OP_DECLARE(gqa_attention_backward, erase_stream_t *s, int batch, int T, int heads,
                      int kv_heads, int hd, const float *q, const float *k, const float *v,
                      const float *att, const float *dout, float *scratch, float *dq, float *dk,
                      float *dv)
ERASE_CUDA_OP_DECLARE(gqa_attention_decode, erase_stream_t *s, int batch, int t, int cache_len,
                      int heads, int kv_heads, int hd, const float *q, const float *k, const float *v,
                      float *kcache, float *vcache, float *scratch, float *out)
ERASE_CUDA_OP_DECLARE(sum_squares, erase_stream_t *s, size_t n, const float *x, float *acc)
ERASE_CUDA_OP_DECLARE(clip_by_norm, erase_stream_t *s, size_t n, float *x, const float *sumsq,
                      float max_norm)

#ifdef __cplusplus
}
#endif

#endif
