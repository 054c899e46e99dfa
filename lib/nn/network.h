/*
 * Networks: a chain of blocks (docs/models.md). Block b has a body (its
 * layers), a head and a loss; boundary b (between blocks b-1 and b) is
 * attached (the gradient of block b's input flows into block b-1) or a cut
 * (block b reads block b-1's body output as a detached copy: no gradient
 * crosses). Total loss L = L_main + sum_b lambda_b l_b.
 *
 * The network exposes each block's forward (body, head, loss and the
 * gradient of the weighted loss at the head's output) and backward
 * separately, so a scheduler decides when and on which stream each runs:
 *   - forward_block(b) needs forward_block(b-1) done (it reads its output);
 *   - backward_block(b) needs forward_block(b) done and, when boundary b+1
 *     is attached, backward_block(b+1) done (it adds that block's input
 *     gradient); with boundary b+1 a cut it depends on nothing later;
 *   - forward_block(b) of the next batch overwrites block b's activations:
 *     it must wait for backward_block(b) and backward_block(b+1) of this one.
 * Backward writes (overwrites) every gradient of its block's parameters,
 * except where a model documents a shared parameter (gpt without cuts:
 * the last block's LM head writes wte's gradient, block 0 adds to it, so
 * block 0's backward runs after the last block's, as the attached
 * boundaries already order it).
 *
 * One core for every model: this API, the blocks, cuts, parameters and
 * their gradient buffers, losses and queries are lib/nn/network.c; what a
 * model computes is its own file behind a table of functions
 * (lib/nn/network_impl.h): ctr and mlp in network_chain.c, gpt in gpt.c.
 * A block may have no head (gpt: a layer with no cut after it): its loss
 * stays 0 and its head output is NULL with width 0.
 */
#ifndef ERASE_NN_NETWORK_H
#define ERASE_NN_NETWORK_H

#include "lib/device/device.h"
#include "lib/nn/batch.h"
#include "lib/nn/model_config.h"
#include "lib/nn/param.h"
#include "lib/nn/sharding.h"
#include "lib/ops/ops.h"

typedef struct erase_network erase_network_t;

/*
 * Build the model of `cfg` on `dev` for batches of up to max_batch samples:
 * allocates parameters (initialised from cfg->seed, docs/models.md),
 * gradients and activations. Errors: ERASE_ERR_INVALID, ERASE_ERR_NOMEM.
 */
erase_status_t erase_network_create(erase_device_t *dev, const erase_model_config_t *cfg,
                                    int max_batch, erase_network_t **out);

/*
 * erase_network_create for one rank of a group over which the embedding
 * tables are sharded (issue 19): plan[tables] places the model's embedding
 * tables in parameter order (lib/nn/sharding.h, erase_shard_plan); this
 * rank (0 <= rank < the plan's ranks) allocates and initialises only the
 * rows it holds: each table parameter's row0/held (lib/nn/param.h) are
 * erase_shard_first_row/erase_shard_rows_on, its value [held, cols], its
 * optimizer state per held row. Row i of a table has the same initial
 * values on every placement (the table's random stream skipped to it).
 * Every other parameter is whole. Errors: those of erase_network_create;
 * ERASE_ERR_INVALID for a plan that does not fit the model ("network: a
 * placement of 3 tables for a model of 26").
 */
erase_status_t erase_network_create_placed(erase_device_t *dev, const erase_model_config_t *cfg, int max_batch,
                                           const erase_shard_t *plan, int tables, int rank, erase_network_t **out);
void erase_network_destroy(erase_network_t *net);

const erase_model_config_t *erase_network_config(const erase_network_t *net);
erase_device_t *erase_network_device(const erase_network_t *net);
int erase_network_blocks(const erase_network_t *net);
int erase_network_max_batch(const erase_network_t *net);
/* Device bytes the network allocated for its parameters (not a replica's:
 * they are shared), gradients, activations and losses, at creation
 * (embedding rows reserved later not counted): a replica's is the memory
 * of one pipeline activation slot. */
size_t erase_network_device_bytes(const erase_network_t *net);
/* Name of block b ("input", "sub1", "layer0", "h0", ...). */
const char *erase_network_block_name(const erase_network_t *net, int b);
/* 1 if boundary b (0 < b < blocks) is a cut. */
int erase_network_is_cut(const erase_network_t *net, int b);

/* All parameters, in block order; block b owns params [first, first+count). */
erase_param_t *erase_network_params(erase_network_t *net, int *count);
void erase_network_block_params(const erase_network_t *net, int b, int *first, int *count);
/* Block b's dense gradients: one contiguous buffer of *count floats that
 * every dense parameter's `grad` of the block points into (one all-reduce
 * per block). Embedding tables' sparse gradients are separate. */
float *erase_network_block_grads(erase_network_t *net, int b, size_t *count);

/* Grow every embedding table's sparse-gradient buffers to hold `rows` rows
 * (data parallelism merges D ranks' rows: D x max_batch x
 * erase_network_ids_per_sample). Not while a
 * stream uses them. Errors: ERASE_ERR_NOMEM. */
erase_status_t erase_network_reserve_sparse_rows(erase_network_t *net, int rows);

/* Every parameter's values, concatenated in parameter order, copied to
 * `out` (host memory, any backend: erase_network_read_param each). Returns
 * the number of floats; with out == NULL it only counts them; 0 when a
 * copy failed (erase_error_message says why). No stream may be writing
 * the parameters (synchronize first). */
size_t erase_network_copy_params(erase_network_t *net, float *out);

/* Host <-> device copies of one parameter's values (numel floats, blocking,
 * erase_memcpy_sync): the way host code reads or sets parameters on every
 * backend. No stream may be using the values (synchronize first).
 * Errors: those of erase_memcpy_sync. */
erase_status_t erase_network_read_param(erase_network_t *net, const erase_param_t *p, float *out);
erase_status_t erase_network_write_param(erase_network_t *net, erase_param_t *p, const float *in);

/*
 * A replica of `net` for pipelines (DESIGN.md, Pipelines): the same model
 * (blocks, cuts, parameter names and shapes) whose parameters' VALUES are
 * net's (params[i].value points at net's; nothing is initialised), with
 * its own gradients, sparse-gradient rows, d_in buffers, activations and
 * losses for batches of up to max_batch samples: one replica per
 * micro-batch in flight on a stage (an activation slot). Its optimizer
 * state pointers are NULL (the optimizer is net's). Destroy replicas
 * before net. Errors: those of erase_network_create.
 */
erase_status_t erase_network_create_replica(erase_network_t *net, int max_batch, erase_network_t **out);

/*
 * Device buffers for a batch of up to `size` samples of every input the
 * network's model reads (ctr dense [size, 13], sparse [size, H] with H =
 * the sum of ctr.hotness (26 one-hot), label [size], and for multi-hot
 * models sparse_len [size, 26]; mlp features [size, inputs], classes [size]; gpt tokens and
 * targets [size, T]); out->size = size. Free with
 * erase_network_batch_free. Errors: ERASE_ERR_INVALID (a size that
 * overflows), ERASE_ERR_NOMEM.
 */
erase_status_t erase_network_batch_alloc(erase_network_t *net, int size, erase_batch_t *out);
void erase_network_batch_free(erase_network_t *net, erase_batch_t *batch);
/* Enqueue on s the copy of samples [first, first + count) of src into dst
 * (buffers of erase_network_batch_alloc for >= count samples); dst->size
 * = count. Errors: ERASE_ERR_INVALID (a range outside src, a field the
 * model reads missing in src), those of erase_memcpy_async. */
erase_status_t erase_network_batch_copy(erase_network_t *net, erase_stream_t *s, const erase_batch_t *src,
                                        int first, int count, erase_batch_t *dst);
/* Samples [first, first + count) of src as a batch whose field pointers
 * point into src's buffers (no copy; valid while src's are); dst->size =
 * count. Errors: ERASE_ERR_INVALID (as erase_network_batch_copy). */
erase_status_t erase_network_batch_view(const erase_network_t *net, const erase_batch_t *src, int first, int count,
                                        erase_batch_t *dst);

/*
 * Scale the gradient of every block's weighted loss by `scale` in the
 * forwards enqueued from now on (the losses reported stay unscaled; 1 at
 * creation). Pipelines pass n_m / N for micro-batch m of n_m samples of a
 * global batch of N on the rank, so that the micro-batches' summed
 * gradients are the global batch's mean, as GPipe and Megatron-LM scale
 * the loss by 1 / micro-batches; PACI passes 1 / a. A power of two scales
 * exactly.
 */
void erase_network_set_loss_scale(erase_network_t *net, float scale);

/*
 * The buffer block b (1 <= b < blocks) reads as its input: block b-1's
 * body output [max_batch, *width] floats, writable, so that a pipeline
 * stage whose first block is b can receive the previous stage's
 * activation into it. NULL for b out of range.
 */
float *erase_network_block_input(erase_network_t *net, int b, int *width);

/*
 * d_in of block b (1 <= b < blocks, boundary b attached): the gradient of
 * block b's input [max_batch, *width] floats. Block b's backward writes it
 * and block b-1's backward reads (adds) it, so a stage whose first block
 * is b sends it and a stage whose last block is b-1 receives into it.
 * NULL (width 0) at a cut or for b out of range.
 */
float *erase_network_input_grad(erase_network_t *net, int b, int *width);

/* Host copy of the last forward's unweighted mean losses, [blocks] floats
 * (after the streams that ran the forwards are synchronized). */
erase_status_t erase_network_read_losses(const erase_network_t *net, float *out);

/*
 * Floating-point operations of training on one sample (forward and
 * backward, not the optimizer), as nanoGPT's estimate_mfu and the PaLM
 * paper (Chowdhery et al. 2022, appendix B) count them: for gpt, T x (6N
 * + 12 L C T) with N every parameter but the position embedding (the
 * matrix products 6N, causal attention's scores and mixing 12 L C T per
 * token, counted over the whole T x T square as they do). The basis of
 * MFU (model FLOPs utilization). 0 for models whose work is not counted
 * (ctr, mlp: their time goes to memory-bound embeddings and small GEMMs).
 */
double erase_network_flops_per_sample(const erase_network_t *net);

/*
 * Embedding lookups served from elsewhere (sharded embeddings, DESIGN.md):
 * a provider fills emb [n, fields, dim] (the block's tables in parameter
 * order, e.g. ctr's 26) for the ids [n, H] and lengths [n, fields] (NULL:
 * one id per field) of a batch of n samples (lib/nn/batch.h), pooled as
 * the model's erase_network_bag says, enqueued on stream s, where the
 * network would look the rows up in its own tables
 * (erase_embedding_bag_forward). lib/sched registers one (the
 * table-wise all-to-all of lib/sched/embed_shard.h): lib/nn never calls
 * lib/comm. The backward is unchanged: the block's backward writes each
 * table's local sparse gradient (erase_embedding_backward), and the
 * scheduler's reduction sends it to the table's owner. The provider's
 * collectives need every rank of its group in the same order: a rank with
 * no samples of a batch calls erase_network_forward_predict with 0 (see
 * there). Returns ERASE_OK or its error.
 */
typedef struct {
    erase_status_t (*forward)(void *ctx, erase_stream_t *s, int n, const uint32_t *ids, const uint32_t *lengths,
                              float *emb);
} erase_embedding_provider_t;

/* Serve block b's embedding lookup by p (copied; NULL: the network's own
 * tables again) with ctx. Not on a replica (pipelines keep their own
 * lookups). Errors: ERASE_ERR_INVALID (block b has no embedding lookup,
 * p without forward, a replica). */
erase_status_t erase_network_set_embedding_provider(erase_network_t *net, int b, const erase_embedding_provider_t *p,
                                                    void *ctx);

/* The layout of ctr's multi-hot ids (lib/ops/ops.h's erase_bag_t: the
 * model's hotness and pooling) with `lengths` (device [n, 26] or NULL);
 * one-hot for the other models. */
erase_bag_t erase_network_bag(const erase_network_t *net, const uint32_t *lengths);

/* The most ids one sample brings to one table (ctr's largest hotness;
 * 1 for one-hot models): a table's sparse gradient holds up to max_batch
 * times as many rows. */
int erase_network_ids_per_sample(const erase_network_t *net);

/* Parameter by name, or NULL. */
erase_param_t *erase_network_param(erase_network_t *net, const char *name);

/* Enqueue block b's forward: body, head, loss (into losses[b]) and the
 * gradient of lambda_b * loss at the head output. */
erase_status_t erase_network_forward_block(erase_network_t *net, int b, erase_stream_t *s,
                                           const erase_batch_t *batch);
/* Enqueue the forward of prediction (evaluation, scoring): every block's
 * body and the last block's head only (no local heads, no losses, no
 * gradients), so that the last head output [batch->size, head width]
 * (erase_network_head_output of the last block) holds the network's
 * output, equal to what erase_network_forward_block of every block leaves
 * there. A batch of 0 samples with an embedding provider set only calls
 * the provider (with n 0), so that a rank with no samples takes part in
 * its collectives. Errors: those of check_batch (an empty batch or one
 * larger than the network's, or missing inputs), of the ops. */
erase_status_t erase_network_forward_predict(erase_network_t *net, erase_stream_t *s, const erase_batch_t *batch);

/*
 * Generation with key/value caches, for the language models (gpt,
 * nanochat): one position of `batch` sequences per step, each costing one
 * position's forward. erase_network_decode_step enqueues position t
 * (0 <= t < context) of every sequence: tokens [batch] int32 (device
 * memory) are the tokens at position t; *logits (device [batch, vocab],
 * the decoder's buffer, valid until the next step) is the last block's
 * head output at position t: what erase_network_forward_predict gives at
 * t for the same tokens at 0..t. Positions 0..t-1 must have been decoded
 * before, in order (t = 0 starts new sequences). The network's parameters
 * are read at every step. Errors: ERASE_ERR_UNSUPPORTED (a model without
 * a decoder: ctr, mlp), ERASE_ERR_INVALID (batch < 1, t out of range),
 * ERASE_ERR_NOMEM, those of the ops.
 */
typedef struct erase_network_decoder erase_network_decoder_t;
erase_status_t erase_network_decoder_create(erase_network_t *net, int batch, erase_network_decoder_t **out);
erase_status_t erase_network_decode_step(erase_network_decoder_t *d, erase_stream_t *s, int t, const int32_t *tokens,
                                         const float **logits);
void erase_network_decoder_destroy(erase_network_decoder_t *d);
/* Enqueue block b's backward: the gradients of its parameters. */
erase_status_t erase_network_backward_block(erase_network_t *net, int b, erase_stream_t *s,
                                            const erase_batch_t *batch);

/* Device array [blocks] of the last forward's unweighted mean losses (ops
 * read it; host code reads erase_network_read_losses). */
const float *erase_network_losses(const erase_network_t *net);
/* Block b's body output [batch, width] and head output [batch, head width]
 * (gpt: width T*C and T*vocab, the logits of each position; a block
 * without a head: NULL, width 0). */
const float *erase_network_body_output(const erase_network_t *net, int b, int *width);
const float *erase_network_head_output(const erase_network_t *net, int b, int *width);

#endif
