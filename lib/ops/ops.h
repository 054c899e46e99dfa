/*
 * erase ops: the arithmetic of the models, each op declared once and
 * enqueued on a stream of the device that owns its buffers. Shapes are
 * row-major, batch-major ([batch, width]); all pointers are device pointers
 * of that stream's device. A backward op writes (never accumulates into)
 * its outputs; an output pointer given as NULL is not computed where so
 * documented. Errors: ERASE_ERR_INVALID for impossible sizes (checked at
 * enqueue), ERASE_ERR_NOMEM.
 *
 * The CPU implementations are lib/ops/cpu/kernels_impl.h (the same source
 * in double precision is the reference of the gradient tests).
 */
#ifndef ERASE_OPS_OPS_H
#define ERASE_OPS_OPS_H

#include <stdint.h>

#include "lib/core/hd.h"
#include "lib/core/lr_schedule.h"
#include "lib/device/device.h"

/* Most inputs a concat takes, most fields an embedding op takes. */
#define ERASE_CONCAT_MAX 16
#define ERASE_FIELDS_MAX 64

/* y[batch,out] = x[batch,in] w[out,in]^T + b[out] (b may be NULL). */
erase_status_t erase_linear_forward(erase_stream_t *s, int batch, int in, int out, const float *x,
                                    const float *w, const float *b, float *y);

/* dx[batch,in] = dy w; dw[out,in] = dy^T x; db[out] = sum over rows of dy.
 * Any of dx, dw, db may be NULL (not computed). */
erase_status_t erase_linear_backward(erase_stream_t *s, int batch, int in, int out,
                                     const float *x, const float *w, const float *dy, float *dx,
                                     float *dw, float *db);

/* y = max(x, 0) (NaN stays NaN, as torch.relu); dx = dy * (y > 0). In place
 * (y == x, dx == dy) allowed. */
erase_status_t erase_relu_forward(erase_stream_t *s, size_t n, const float *x, float *y);
erase_status_t erase_relu_backward(erase_stream_t *s, size_t n, const float *y, const float *dy,
                                   float *dx);

/* GELU, exact erf form (torch.nn.GELU()); backward takes the input x. */
erase_status_t erase_gelu_forward(erase_stream_t *s, size_t n, const float *x, float *y);
erase_status_t erase_gelu_backward(erase_stream_t *s, size_t n, const float *x, const float *dy,
                                   float *dx);

/*
 * Inverted dropout with drop probability p in [0, 1): element i is kept
 * (scaled by 1/(1-p)) when the Philox4x32-10 uniform of (seed, offset, i)
 * is >= p. The backward is the same op applied to dy with the same
 * (seed, offset): the mask is recomputed, never stored. `offset` counts
 * Philox blocks of 4 elements: successive calls advance it by ceil(n / 4),
 * as PyTorch does, or they reuse shifted random numbers.
 */
erase_status_t erase_dropout(erase_stream_t *s, size_t n, float p, uint64_t seed, uint64_t offset,
                             const float *x, float *y);

/* y[batch, sum widths] = [x_0 | x_1 | ...], at most ERASE_CONCAT_MAX inputs;
 * backward splits dy (a NULL dx_i is skipped). */
erase_status_t erase_concat_forward(erase_stream_t *s, int batch, int n, const int *widths,
                                    const float *const *xs, float *y);
erase_status_t erase_concat_backward(erase_stream_t *s, int batch, int n, const int *widths,
                                     const float *dy, float *const *dxs);

/*
 * Row of a table of `rows` rows (>= 2) for a 32-bit id: rows - 1 (the last
 * row holds "missing") for id 0xFFFFFFFF, else id mod (rows - 1). The one
 * definition every embedding and shard-routing kernel (CPU and CUDA) uses.
 */
static inline ERASE_HD uint32_t erase_embedding_row(uint32_t id, uint32_t rows)
{
    return id == 0xFFFFFFFFu ? rows - 1 : id % (rows - 1);
}

/*
 * Embedding lookup, one id per field (sum pooling of a bag of one):
 * out[batch, fields, dim] = tables[f][erase_embedding_row(ids[r,f], rows[f])].
 * rows[f] >= 2.
 */
erase_status_t erase_embedding_forward(erase_stream_t *s, int batch, int fields, int dim,
                                       const uint32_t *rows, const uint32_t *ids,
                                       const float *const *tables, float *out);

/*
 * Multi-hot ids (embedding bags; issue 35, lib/nn/batch.h): a sample's ids
 * of field f sit at columns [off_f, off_f + hotness[f]) of its row of
 * H = sum of hotness columns (off_f: the prefix sum), the first lengths[r,
 * f] of them present, the rest padding (never read). lengths NULL: one id
 * per field, its first column (one-hot data). A bag is pooled in column
 * order: out = row(id_0), then out += row(id_j) for j = 1 .. len-1 (one
 * add per element, in that order, on every backend), and for mean pooling
 * out /= len (a float division) when len > 1. This is what TorchRec's
 * KeyedJaggedTensor (values + lengths) and torch.nn.EmbeddingBag (mode
 * "sum" / "mean", input + offsets) compute; the fixed order makes the
 * result bitwise reproducible. hotness all 1 and lengths NULL is the
 * one-hot lookup: every result bitwise as before issue 35.
 */
typedef enum { ERASE_BAG_SUM = 0, ERASE_BAG_MEAN = 1 } erase_bag_pooling_t;

typedef struct {
    int hotness[ERASE_FIELDS_MAX];  /* columns of each field (>= 1) */
    const uint32_t *lengths;        /* device [batch, fields]: 1 .. hotness[f]; NULL: 1 each */
    erase_bag_pooling_t pooling;
} erase_bag_t;

/* H, the columns of a bag layout of `fields` fields (sum of hotness). */
int erase_bag_columns(const erase_bag_t *bag, int fields);

/*
 * Pooled embedding lookup: out[r, f, dim] = the pooling (above) of
 * tables[f][erase_embedding_row(id, rows[f])] over sample r's ids of field
 * f in ids [batch, H]. bag NULL: one-hot (erase_embedding_forward).
 * Errors: as erase_embedding_forward, and ERASE_ERR_INVALID at the call
 * for a hotness below 1 or H above INT_MAX / batch; when the op runs, for a
 * length outside [1, hotness[f]] ("embedding bag: sample r field f has n
 * ids, expected 1 to h").
 */
erase_status_t erase_embedding_bag_forward(erase_stream_t *s, int batch, int fields, int dim,
                                           const uint32_t *rows, const erase_bag_t *bag,
                                           const uint32_t *ids, const float *const *tables, float *out);

/*
 * Backward of the pooled lookup: per field f, the distinct rows touched
 * (ascending) in grad_rows[f][0..count[f]) with the sum, in (sample,
 * column) order chunked as below, of each present id's contribution:
 * dout[r, f, :] (sum pooling) or dout[r, f, :] / len (mean; the division
 * done per contribution). grad_rows[f] holds batch * hotness[f] entries,
 * grad_values[f] that many rows of dim. bag NULL: erase_embedding_backward.
 * Errors: those of erase_embedding_bag_forward.
 */
erase_status_t erase_embedding_bag_backward(erase_stream_t *s, int batch, int fields, int dim,
                                            const uint32_t *rows, const erase_bag_t *bag,
                                            const uint32_t *ids, const float *dout,
                                            uint32_t *const *grad_rows, float *const *grad_values,
                                            int *count);

/*
 * Pool looked-up vectors: out[r, f, :] = the pooling (above) of vecs[r, c,
 * :] over field f's present columns c (vecs [batch, H, dim], as a sharded
 * lookup brings them back). With vecs the rows erase_embedding_bag_forward
 * reads, the result is bitwise its output. Errors: those of
 * erase_embedding_bag_forward (bag must not be NULL).
 */
erase_status_t erase_embedding_pool(erase_stream_t *s, int batch, int fields, int dim, const erase_bag_t *bag,
                                    const float *vecs, float *out);

/*
 * Order of the sums of sparse gradients in the embedding backward: a row's
 * n contributions, in sample order, are added in chunks of
 * ERASE_SPARSE_SUM_CHUNK consecutive ones, each chunk summed from 0 in
 * order, then the chunk sums added from 0 in order. Deterministic on every
 * backend, and the same as one sum in order when n <= the chunk; on a GPU
 * the chunks of a row touched by thousands of samples (a missing value's
 * row) are summed in parallel instead of one after another. (The sparse
 * merge of packs sums a pairwise tree instead: erase_sparse_merge.)
 */
#define ERASE_SPARSE_SUM_CHUNK 64

/*
 * Sparse embedding gradient: for each field f, the distinct rows touched
 * (ascending) in grad_rows[f][0..count[f]) and the sum of their samples'
 * dout rows (in sample order, chunked as above: deterministic) in
 * grad_values[f][count[f], dim]. grad_rows[f] holds `batch` entries, grad_values[f]
 * batch*dim; count is a device array of `fields` ints. Never forms a dense
 * table-sized gradient.
 */
erase_status_t erase_embedding_backward(erase_stream_t *s, int batch, int fields, int dim,
                                        const uint32_t *rows, const uint32_t *ids,
                                        const float *dout, uint32_t *const *grad_rows,
                                        float *const *grad_values, int *count);

/*
 * DLRM feature interaction of nvec = 1 + (fields) vectors of width dim:
 * out[batch, dim + nvec(nvec-1)/2] = [v_0, <v_i, v_j> for i < j row-major]
 * with v_0 = dense[r] and v_i = emb[r, i-1]. Backward gives both inputs'
 * gradients.
 */
erase_status_t erase_interaction_forward(erase_stream_t *s, int batch, int nvec, int dim,
                                         const float *dense, const float *emb, float *out);
erase_status_t erase_interaction_backward(erase_stream_t *s, int batch, int nvec, int dim,
                                          const float *dense, const float *emb, const float *dout,
                                          float *ddense, float *demb);

/*
 * Binary cross-entropy with logits z[batch] and labels y[batch] in [0,1],
 * mean over the batch, exact for |z| up to 1e4 and beyond: *loss (one
 * device float) = mean; dz = weight * (sigmoid(z) - y) / batch (dz may be
 * NULL).
 */
erase_status_t erase_bce_with_logits(erase_stream_t *s, int batch, const float *z, const float *y,
                                     float weight, float *loss, float *dz);

/* Softmax cross-entropy of z[batch, classes] with labels[batch] in
 * [0, classes): *loss = mean; dz = weight * (softmax(z) - onehot) / batch. */
erase_status_t erase_softmax_xent(erase_stream_t *s, int batch, int classes, const float *z,
                                  const int32_t *labels, float weight, float *loss, float *dz);

/* Layer norm over the last dim: y = (x - mean) * rstd * gamma + beta, with
 * mean[batch] and rstd[batch] = 1/sqrt(var + eps) saved for backward. */
erase_status_t erase_layernorm_forward(erase_stream_t *s, int batch, int dim, float eps,
                                       const float *x, const float *gamma, const float *beta,
                                       float *y, float *mean, float *rstd);
erase_status_t erase_layernorm_backward(erase_stream_t *s, int batch, int dim, const float *x,
                                        const float *gamma, const float *mean, const float *rstd,
                                        const float *dy, float *dx, float *dgamma, float *dbeta);

/*
 * The DCNv2 cross layer's elementwise part (Wang et al., "DCN V2", arXiv
 * 2008.13535, eq. 1; TorchRec's torchrec.modules.crossnet.LowRankCrossNet
 * and CrossNet): over n floats, y = x0 * u + xl, with u = W (V xl) + b (low
 * rank) or W xl + b (full rank) computed by the linear ops. Backward from
 * dy: du = dy * x0 and dx0 = dy * u (dx0 NULL: not computed); du may be dy
 * (in place). The gradient of xl is dy itself, which the caller adds.
 */
erase_status_t erase_cross_forward(erase_stream_t *s, size_t n, const float *x0, const float *u, const float *xl,
                                   float *y);
erase_status_t erase_cross_backward(erase_stream_t *s, size_t n, const float *x0, const float *u, const float *dy,
                                    float *du, float *dx0);

/* y[i] += alpha * x[i] for i < n (gradient accumulation across blocks). */
erase_status_t erase_axpy(erase_stream_t *s, size_t n, float alpha, const float *x, float *y);

/* ---- transformer (the gpt model) -------------------------------------------
 * Shapes of a batch of `batch` sequences of T positions each, width `dim`:
 * activations [batch, T, dim] (the linear ops see them as [batch*T, dim]). */

/* GELU, tanh form (GPT-2; torch.nn.GELU(approximate="tanh")):
 * y = 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))); the backward takes
 * the input x. In place (y == x, dx == dy) allowed. */
erase_status_t erase_gelu_tanh_forward(erase_stream_t *s, size_t n, const float *x, float *y);
erase_status_t erase_gelu_tanh_backward(erase_stream_t *s, size_t n, const float *x,
                                        const float *dy, float *dx);

/*
 * Token plus learned position embedding (GPT-2's wte and wpe):
 * out[b, t, :] = wte[tokens[b*T + t], :] + wpe[t, :] for b < batch, t < T.
 * tokens int32 [batch, T] in [0, vocab) (one outside fails when the op
 * runs: ERASE_ERR_INVALID naming it); wte [vocab, dim]; wpe [>= T, dim].
 */
erase_status_t erase_token_embedding_forward(erase_stream_t *s, int batch, int T, int dim, int vocab,
                                             const int32_t *tokens, const float *wte,
                                             const float *wpe, float *out);

/*
 * Backward of the token and position embedding, deterministic on every
 * backend: dwpe[t, :] = sum over b (ascending) of dout[b, t, :] for t < T
 * (written); dwte[v, :] = the sum of dout[b, t, :] over the positions with
 * tokens[b*T + t] == v, added in ascending b*T + t order, for every v <
 * vocab. accumulate = 0 writes dwte (rows no token touched become 0);
 * accumulate = 1 adds the sums to what dwte holds (the gradient an LM head
 * tied to wte already wrote there). dwte or dwpe NULL: not computed.
 */
erase_status_t erase_token_embedding_backward(erase_stream_t *s, int batch, int T, int dim, int vocab,
                                              const int32_t *tokens, const float *dout,
                                              float *dwte, float *dwpe, int accumulate);

/*
 * Causal multi-head self-attention (GPT-2; the arithmetic of nanoGPT's
 * CausalSelfAttention and llm.c's attention_forward). dim = heads * hd.
 * qkv [batch, T, 3*dim]: at each position q | k | v, head h in columns
 * [h*hd, (h+1)*hd) of each. att [batch, heads, T, T] is written with the
 * probabilities softmax_s(q_t . k_s / sqrt(hd)) for s <= t and 0 for
 * s > t (saved for the backward), computed with the row maximum
 * subtracted (numerically stable). out [batch, T, dim] = att v, heads
 * side by side.
 */
erase_status_t erase_attention_forward(erase_stream_t *s, int batch, int T, int heads, int dim,
                                       const float *qkv, float *att, float *out);

/*
 * Backward of erase_attention_forward: dqkv [batch, T, 3*dim] (written)
 * from the forward's qkv and att and the output gradient dout [batch, T,
 * dim]; scratch [batch, heads, T, T] is overwritten.
 */
erase_status_t erase_attention_backward(erase_stream_t *s, int batch, int T, int heads, int dim,
                                        const float *qkv, const float *att, const float *dout,
                                        float *scratch, float *dqkv);

/*
 * One new position t of each of `batch` sequences against a key/value
 * cache (generation: a token costs one position's forward). qkv [batch,
 * 3*dim] is the new position's q | k | v; its k and v are first stored in
 * row t of kcache and vcache [batch, cache_len, dim] (rows < t hold the
 * earlier positions), then out [batch, dim] = softmax(q . k_s / sqrt(hd))
 * over s <= t, times v, per head: what erase_attention_forward gives at
 * row t. scratch [batch, heads, cache_len] is overwritten. 0 <= t <
 * cache_len.
 */
erase_status_t erase_attention_decode(erase_stream_t *s, int batch, int t, int cache_len, int heads,
                                      int dim, const float *qkv, float *kcache, float *vcache,
                                      float *scratch, float *out);

/* ---- the nanochat model's ops (docs/models.md, `nanochat`) ----------------- */

/*
 * Parameter-free RMSNorm over the last dim (torch.nn.functional.rms_norm
 * without a weight, as nanochat's norm()): rstd[r] = 1/sqrt(mean_i x[r,i]^2
 * + eps), y = x * rstd, for `rows` rows of `dim` floats; rstd [rows] is
 * saved for the backward. In place (y == x) allowed.
 */
erase_status_t erase_rmsnorm_forward(erase_stream_t *s, int rows, int dim, float eps, const float *x, float *y,
                                     float *rstd);

/* Backward of erase_rmsnorm_forward: dx = rstd * (dy - y * mean_i(dy * y))
 * with y = x * rstd, from the forward's x and rstd. In place (dx == dy)
 * allowed. */
erase_status_t erase_rmsnorm_backward(erase_stream_t *s, int rows, int dim, const float *x, const float *rstd,
                                      const float *dy, float *dx);

/*
 * Rotary position embedding (RoPE) in nanochat's half-split layout
 * (nanochat/gpt.py apply_rotary_emb): x [batch, T, heads, hd] (hd even,
 * d = hd/2); at position p = t0 + t, channel pair (i, i + d) of every head
 * rotates by the angle p * base^(-2i/hd) (the frequencies computed in
 * float as torch does): y_i = x_i cos + x_{i+d} sin, y_{i+d} = -x_i sin +
 * x_{i+d} cos. t0 > 0 places a decode step. `inverse` 1: the rotation back
 * (y_i = x_i cos - x_{i+d} sin, ...), which is the backward. In place
 * allowed.
 */
erase_status_t erase_rotary(erase_stream_t *s, int batch, int T, int t0, int heads, int hd, float base,
                            int inverse, const float *x, float *y);

/* ReLU squared: y = max(x, 0)^2; backward dx = dy * 2 max(x, 0). In place
 * allowed. */
erase_status_t erase_relu2_forward(erase_stream_t *s, size_t n, const float *x, float *y);
erase_status_t erase_relu2_backward(erase_stream_t *s, size_t n, const float *x, const float *dy, float *dx);

/* Logit softcap (nanochat, Gemma 2): y = cap * tanh(x / cap), cap > 0;
 * backward from the forward's output y: dx = dy * (1 - (y / cap)^2). In
 * place allowed. */
erase_status_t erase_softcap_forward(erase_stream_t *s, size_t n, float cap, const float *x, float *y);
erase_status_t erase_softcap_backward(erase_stream_t *s, size_t n, float cap, const float *y, const float *dy,
                                      float *dx);

/*
 * Causal grouped-query attention (nanochat's CausalSelfAttention with
 * n_kv_head; kv_heads = heads is multi-head attention): q [batch, T,
 * heads*hd], k and v [batch, T, kv_heads*hd], query head h reading
 * key/value head h / (heads/kv_heads). att [batch, heads, T, T] and out
 * [batch, T, heads*hd] as erase_attention_forward's. heads a multiple of
 * kv_heads.
 */
erase_status_t erase_gqa_attention_forward(erase_stream_t *s, int batch, int T, int heads, int kv_heads, int hd,
                                           const float *q, const float *k, const float *v, float *att,
                                           float *out);

/* Backward of erase_gqa_attention_forward: dq, dk, dv (shapes of q, k, v;
 * written) from the forward's inputs and att and dout [batch, T,
 * heads*hd]; scratch [batch, heads, T, T] is overwritten. */
erase_status_t erase_gqa_attention_backward(erase_stream_t *s, int batch, int T, int heads, int kv_heads, int hd,
                                            const float *q, const float *k, const float *v, const float *att,
                                            const float *dout, float *scratch, float *dq, float *dk, float *dv);

/*
 * One new position t of each of `batch` sequences against a grouped-query
 * key/value cache: q [batch, heads*hd], k and v [batch, kv_heads*hd] of
 * the new position; k and v are first stored in row t of kcache and
 * vcache [batch, cache_len, kv_heads*hd], then out [batch, heads*hd] is
 * what erase_gqa_attention_forward gives at row t. scratch [batch, heads,
 * cache_len] is overwritten. 0 <= t < cache_len.
 */
erase_status_t erase_gqa_attention_decode(erase_stream_t *s, int batch, int t, int cache_len, int heads, int kv_heads,
                                          int hd, const float *q, const float *k, const float *v, float *kcache,
                                          float *vcache, float *scratch, float *out);

/* ---- gradient-norm clipping ------------------------------------------------ */

/* *acc += sum of x[i]^2 for i < n (acc: one device float; its order of
 * summation is fixed per backend, so equal inputs give equal sums). */
erase_status_t erase_sum_squares(erase_stream_t *s, size_t n, const float *x, float *acc);

/* x[i] *= min(1, max_norm / (sqrt(*sumsq) + 1e-6)) for i < n (PyTorch's
 * torch.nn.utils.clip_grad_norm_ with sumsq the squared total norm);
 * max_norm > 0. */
erase_status_t erase_clip_by_norm(erase_stream_t *s, size_t n, float *x, const float *sumsq,
                                  float max_norm);

/* ---- sparse gradients across ranks ---------------------------------------- */

/*
 * Pack the sparse gradients of `tables` tables (table t: *count[t] rows
 * rows[t][i] with values[t][i*dim ..]) into fixed-capacity slots:
 * out_counts[t], out_rows[t*capacity + i], out_values[(t*capacity + i)*dim].
 * A count above `capacity` fails (ERASE_ERR_INVALID) when the op runs.
 */
erase_status_t erase_sparse_pack(erase_stream_t *s, int tables, int capacity, int dim,
                                 const int *const *count, const uint32_t *const *rows,
                                 const float *const *values, int *out_counts, uint32_t *out_rows,
                                 float *out_values);

/*
 * Merge the packs of `ranks` ranks (concatenated by rank, as an all-gather
 * of erase_sparse_pack's buffers leaves them; or a rank's micro-batches),
 * each pack's rows of a table unique and ascending (as erase_sparse_pack
 * and erase_sparse_split leave them), into each table's ascending unique
 * rows: the vectors of a row are summed
 * as the pairwise tree over the pack index, the order of the dense
 * gradients' sums (lib/sched/grad_accum.c, the all-reduce of a power-of-two
 * number of ranks): packs 2i and 2i+1 first, then pairs of those, and so
 * on (level k adds the sums of packs that differ first in bit k of their
 * index, left + right); a pack without the row leaves the other's sum as
 * it is (no add of a zero). So merging W packs that each hold the tree of
 * P packs gives the tree of the W x P packs, bitwise, when P is a power of
 * two: the same sums for 1 rank of 4 micro-batches, 2 of 2 and 4 of 1.
 * Then every value is multiplied by `scale` (1/ranks for a mean). Writes
 * *count[t], rows[t], values[t] (room for ranks * capacity rows each).
 * Every rank merging the same packs gets bitwise the same result, on
 * every backend. Errors: ERASE_ERR_INVALID (bad sizes, a pack count
 * outside [0, capacity], more than 1024 ranks on the CPU).
 */
erase_status_t erase_sparse_merge(erase_stream_t *s, int ranks, int tables, int capacity, int dim,
                                  float scale, const int *all_counts, const uint32_t *all_rows,
                                  const float *all_values, int *const *count, uint32_t *const *rows,
                                  float *const *values);

/* ---- the sharded tables' exchange (row ranges across ranks) ----------------
 * A table t of R_t rows is split into row ranges: rank r holds the global
 * rows [bounds[r], bounds[r+1]) (bounds[0] = 0, bounds[ranks] = R_t,
 * non-decreasing; a table-wise table is one range, the others empty). The
 * fixed-size all-to-all buffers hold, per destination rank r, tmax slots of
 * `capacity` entries; table t's slot in rank r's block is slot[t][r]. */

/* An empty entry of a routed slot (and of a gather's index: a zero row). */
#define ERASE_SHARD_PAD 0xFFFFFFFFu

/* The rank r with bounds[r] <= row < bounds[r+1] among `ranks` ranges
 * (bounds [ranks+1], non-decreasing): ranks when row >= bounds[ranks].
 * Binary search; the one definition the routing and split kernels use. */
static inline ERASE_HD int erase_shard_range_owner(const int64_t *bounds, int ranks, int64_t row)
{
    int lo = 0, hi = ranks; /* the answer is the count of k in [1, ranks] with bounds[k] <= row */
    while (lo < hi) {
        int mid = lo + (hi - lo) / 2;
        if (bounds[mid + 1] <= row)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/*
 * Input distribution of a row-sharded lookup (TorchRec's input dist, with
 * fixed-size slots): route the ids of a batch to the ranks that hold their
 * rows. ids [n, tables] (sample-major, as a ctr batch); table_rows [tables]
 * (R_t >= 2); bounds [tables][ranks+1] (table t's ranges, as above); slot
 * [tables][ranks]: the slot k (0 <= k < tmax) of table t in rank r's block,
 * -1 where rank r holds no rows of t. All device arrays.
 * For each table t and sample i in order: row = erase_embedding_row(id,
 * R_t), r = its owner, j = the number of earlier samples of table t routed
 * to r; send_rows[(r*tmax + slot[t][r])*capacity + j] = row - bounds[t][r]
 * (the row local to its owner) and pos[i*tables + t] = that same index.
 * Every other entry of send_rows [ranks][tmax][capacity] is
 * ERASE_SHARD_PAD: the op writes all of it. send_counts [ranks][tmax]
 * (device ints): the entries routed into each slot (the j's count), 0 for
 * a slot no table fills: the counts of erase_alltoall_slots, which moves
 * only those. Deterministic.
 * Errors: ERASE_ERR_INVALID at the call for n outside [0, capacity], tables,
 * ranks, tmax or capacity below 1, or ranks*tmax*capacity at or above
 * ERASE_SHARD_PAD; when the op runs, for a row whose owner's slot is not in
 * [0, tmax) or a row outside [0, bounds[t][ranks]).
 */
erase_status_t erase_shard_route(erase_stream_t *s, int n, int tables, const uint32_t *ids,
                                 const uint32_t *table_rows, int ranks, const int64_t *bounds,
                                 const int32_t *slot, int tmax, int capacity, uint32_t *send_rows,
                                 int *send_counts, uint32_t *pos);

/*
 * The same for multi-hot ids [n, H] (bag: the layout above; NULL is
 * erase_shard_route): table t's present ids are routed in (sample, column)
 * order; pos [n, H]: pos[i*H + c] = where column c of sample i went, or
 * ERASE_SHARD_PAD for a column past its field's length (nothing routed;
 * erase_gather_rows unpacks a zero vector the pooling never reads).
 * capacity bounds the entries of a slot: n * hotness[t] <= capacity for
 * every table. Errors: those of erase_shard_route, and of
 * erase_embedding_bag_forward for the lengths.
 */
erase_status_t erase_shard_route_bag(erase_stream_t *s, int n, int tables, const erase_bag_t *bag,
                                     const uint32_t *ids, const uint32_t *table_rows, int ranks,
                                     const int64_t *bounds, const int32_t *slot, int tmax, int capacity,
                                     uint32_t *send_rows, int *send_counts, uint32_t *pos);

/*
 * Row gather: for i < n, j = index[i*index_stride]; out[i*out_stride + c]
 * (c < dim) = 0 when j == ERASE_SHARD_PAD, else src[j*dim + c] (src:
 * [src_rows, dim]). Strides in elements (index_stride >= 1, out_stride >=
 * dim). An owner looks up its routed rows in its part of a table with it
 * (index = the received send_rows); a sender unpacks the returned vectors
 * into emb [n, tables, dim] with index = pos + t, index_stride = tables,
 * out = emb + t*dim, out_stride = tables*dim.
 * Errors: ERASE_ERR_INVALID at the call for a bad shape; when the op runs,
 * for an index (not ERASE_SHARD_PAD) at or above src_rows.
 */
erase_status_t erase_gather_rows(erase_stream_t *s, int n, int dim, const uint32_t *index,
                                 size_t index_stride, const float *src, int64_t src_rows,
                                 float *out, size_t out_stride);

/*
 * Split one table's sparse gradient by owner (the backward's input to the
 * gradient all-to-all): *count distinct ascending global rows in rows,
 * values [count, dim], as erase_embedding_backward leaves them; bounds
 * [ranks+1] (this table's ranges); slot_index [ranks]: the slot q (counted
 * in slots, e.g. r*tmax + k) where rank r's part goes, -1 where r holds no
 * rows. For every r with q >= 0: out_counts[q] = the rows in
 * [bounds[r], bounds[r+1]); out_rows[q*capacity + j] = the j-th of them -
 * bounds[r] (ascending); out_values[(q*capacity + j)*dim + c] = its values.
 * Other slots are left alone. All device arrays.
 * Errors: ERASE_ERR_INVALID at the call for ranks, capacity or dim below 1;
 * when the op runs, for *count below 0, a row of a rank whose q is -1, a
 * row at or above bounds[ranks], or a slot's count above capacity.
 */
erase_status_t erase_sparse_split(erase_stream_t *s, int capacity, int dim, const int *count,
                                  const uint32_t *rows, const float *values, int ranks,
                                  const int64_t *bounds, const int32_t *slot_index,
                                  int *out_counts, uint32_t *out_rows, float *out_values);

/* ---- optimizers --------------------------------------------------------
 * The step number and learning rate live in device memory (an optimizer
 * clock) and are advanced by an op, so a captured step graph replays with
 * the right values; every update reads them when it runs. */
typedef struct {
    int64_t step;   /* updates applied so far, including the current one */
    float lr;       /* learning rate of the current update */
    int32_t nonfinite; /* set by erase_check_finite (its code): every update of this step is skipped */
} erase_optim_clock_t;

/* clock->step += 1; clock->lr = erase_lr_at(schedule, clock->step);
 * clock->nonfinite = 0. */
erase_status_t erase_optim_clock_advance(erase_stream_t *s, erase_optim_clock_t *clock,
                                         const erase_lr_schedule_t *schedule);

/*
 * If any of x[0..n) is NaN or infinite and clock->nonfinite is still 0,
 * set it to `code` (> 0; e.g. 1 + the block's index): the first finding of
 * a step is kept. With `rows` not NULL, n is per row and *rows rows are
 * checked (a sparse gradient's values). Every optimizer update reading the
 * clock then leaves its parameters unchanged.
 */
erase_status_t erase_check_finite(erase_stream_t *s, const float *x, size_t n, const int *rows,
                                  int code, erase_optim_clock_t *clock);

/* SGD with momentum (PyTorch's form): g' = g + wd*w; buf = mu*buf + g'
 * (buf = g' at step 1); w -= lr * lr_mult * buf. buf may be NULL when mu = 0. */
erase_status_t erase_sgd_update(erase_stream_t *s, size_t n, float *w, const float *g, float *buf,
                                const erase_optim_clock_t *clock, float lr_mult, float momentum,
                                float weight_decay);

/* AdamW (Loshchilov and Hutter, "Decoupled weight decay regularization",
 * ICLR 2019; PyTorch's torch.optim.AdamW): w *= 1 - lr*wd; m, v moments;
 * w -= lr * mhat / (sqrt(vhat) + eps) with bias-corrected mhat, vhat. */
erase_status_t erase_adamw_update(erase_stream_t *s, size_t n, float *w, const float *g, float *m,
                                  float *v, const erase_optim_clock_t *clock, float lr_mult,
                                  float beta1, float beta2, float eps, float weight_decay);

/*
 * Muon (Keller Jordan, "Muon: an optimizer for hidden layers in neural
 * networks", 2024, kellerjordan.github.io/posts/muon; the form of
 * nanochat's nanochat/muon.py, 2025) on one matrix w [rows, cols] (rows =
 * outputs, cols = inputs: PyTorch's Linear weight) with gradient g:
 *   buf = lerp(buf, g, 1 - momentum)            momentum buffer [rows, cols]
 *   u   = lerp(g, buf, momentum)                Nesterov (g is not written)
 *   X   = u, or u^T when rows > cols            (k x n, k = min, n = max)
 *   X  /= ||X||_F + 1e-7
 *   5 times: A = X X^T; B = b A + c A A; X = a X + B X
 *            with (a, b, c) = (3.4445, -4.7750, 2.0315)
 *   w  -= lr * lr_mult * sqrt(max(1, rows / cols)) * X (transposed back)
 * in single precision throughout (nanochat iterates in bfloat16), lerp as
 * PyTorch's torch.lerp. lr from the clock; nothing when clock->nonfinite.
 * momentum_warmup > 0: the momentum of step t (the clock's) is
 * erase_muon_momentum_at(momentum, momentum_warmup, t), nanochat's
 * base_train.py warm-up from 0.85; 0: `momentum` throughout.
 * work: erase_muon_work_floats(rows, cols) floats of device memory that no
 * other op uses while this one runs. Errors: ERASE_ERR_INVALID (a shape
 * below 1x1 or over INT_MAX elements, momentum outside [0, 1), a negative
 * warm-up, no buffer or work).
 */
erase_status_t erase_muon_update(erase_stream_t *s, int64_t rows, int64_t cols, float *w, const float *g,
                                 float *buf, float *work, const erase_optim_clock_t *clock, float lr_mult,
                                 float momentum, int64_t momentum_warmup);

/* Muon's momentum at step t (1-based) with a warm-up of w steps (nanochat's
 * get_muon_momentum with it = t - 1 and 300 steps): (1 - f) 0.85 + f m with
 * f = min((t - 1) / w, 1); m when w is 0. */
ERASE_HD static inline float erase_muon_momentum_at(float m, int64_t w, int64_t t)
{
    if (w <= 0)
        return m;
    float f = t - 1 >= w ? 1.0f : (float)(t - 1) / (float)w;
    return (1.0f - f) * 0.85f + f * m;
}

/* Floats of scratch erase_muon_update needs for a [rows, cols] matrix:
 * 2 k n + 2 k k + 1 with k = min(rows, cols), n = max(rows, cols). */
size_t erase_muon_work_floats(int64_t rows, int64_t cols);

/* The Newton-Schulz quintic's coefficients and step count (nanochat's
 * zeropower_via_newtonschulz5), for the backends. */
#define ERASE_MUON_NS_A 3.4445f
#define ERASE_MUON_NS_B (-4.7750f)
#define ERASE_MUON_NS_C 2.0315f
#define ERASE_MUON_NS_STEPS 5

/*
 * Row-wise Adagrad on the rows of a sparse gradient (as torchrec's
 * EXACT_ROWWISE_ADAGRAD): for each touched row r with gradient g[dim],
 * acc[r] += mean(g^2); table[r] -= lr * lr_mult * g / (sqrt(acc[r]) + eps).
 * Rows not in the gradient are untouched. grad_rows, grad_values, count as
 * produced by erase_embedding_backward for one table.
 */
erase_status_t erase_rowwise_adagrad_update(erase_stream_t *s, int dim, float *table, float *acc,
                                            const uint32_t *grad_rows, const float *grad_values,
                                            const int *count, const erase_optim_clock_t *clock,
                                            float lr_mult, float eps);

/* Plain SGD on the rows of a sparse gradient: table[r] -= lr * lr_mult * g. */
erase_status_t erase_sparse_sgd_update(erase_stream_t *s, int dim, float *table,
                                       const uint32_t *grad_rows, const float *grad_values,
                                       const int *count, const erase_optim_clock_t *clock,
                                       float lr_mult);

#endif
