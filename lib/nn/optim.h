/*
 * Optimizers of a network: one rule for dense parameters (SGD with
 * momentum, AdamW, or Muon with AdamW for its other groups) and one for embedding tables (row-wise Adagrad or
 * plain SGD, on the rows a batch touched only), a learning-rate schedule,
 * and a step clock in device memory (see erase_optim_clock_t in
 * lib/ops/ops.h) so that a captured step graph replays correctly.
 *
 * Per step: erase_optimizer_begin_step once (advances the clock), then
 * erase_optimizer_update_block for every block, in any order and on any
 * streams ordered after begin_step and after that block's backward (and,
 * with data parallelism, its gradient all-reduce).
 *
 * Muon (ERASE_OPTIM_MUON; erase_muon_update in lib/ops/ops.h) groups the
 * dense parameters as nanochat's setup_optimizers does, by the role the
 * model gave each (erase_param_t.role, lib/nn/param.h): the hidden layers'
 * 2-D weights take Muon at the schedule's rate (nanochat's matrix_lr);
 * embedding matrices (ERASE_ROLE_EMBEDDING, dense: gpt's wpe, and wte
 * untied), heads (ERASE_ROLE_HEAD, gpt's tied wte too) and 1-D parameters take AdamW (beta1, beta2,
 * eps, weight_decay as configured) at embedding_matrix_lr, unembedding_lr
 * and vector_lr, each scaled by the schedule as the Muon rate is.
 * Embedding tables keep their own rule. Slots: Muon's momentum buffer in
 * state[0]; AdamW's moments in state[0], state[1].
 *
 * Gradient-norm clipping (grad_clip > 0): torch.nn.utils.clip_grad_norm_
 * applied to the mean gradient (after the data-parallel all-reduce) of
 * each sub-graph: a maximal run of blocks joined by attached boundaries.
 * Without cuts that is the global norm of the whole model; with cuts each
 * detached sub-graph clips by its own norm, since it cannot wait for the
 * others' gradients (that is the point of the cuts). Dense gradients only:
 * embedding tables' sparse row gradients are neither counted nor clipped.
 * The step plan (lib/sched) issues erase_optimizer_clip_grads for each
 * sub-graph after all its blocks are reduced and before their updates.
 */
#ifndef ERASE_NN_OPTIM_H
#define ERASE_NN_OPTIM_H

#include "lib/core/lr_schedule.h"
#include "lib/ops/ops.h"
#include "lib/nn/network.h"

typedef enum {
    ERASE_OPTIM_SGD = 0,               /* dense or sparse */
    ERASE_OPTIM_ADAMW = 1,             /* dense */
    ERASE_OPTIM_ROWWISE_ADAGRAD = 2,   /* embedding tables */
    ERASE_OPTIM_MUON = 3               /* dense: Muon for hidden matrices, AdamW for the rest */
} erase_optim_kind_t;

typedef struct {
    erase_optim_kind_t dense;       /* SGD, ADAMW or MUON */
    erase_optim_kind_t embedding;   /* SGD or ROWWISE_ADAGRAD */
    erase_lr_schedule_t schedule;   /* learning rate of dense parameters */
    double embedding_lr;            /* embedding learning rate after warm-up (follows the schedule) */
    float momentum;                 /* SGD */
    float beta1, beta2, eps;        /* AdamW (and Muon's AdamW groups) */
    float muon_momentum;            /* Muon's momentum, in [0, 1) */
    int64_t muon_momentum_warmup;   /* steps of nanochat's momentum warm-up from 0.85 (0: none;
                                     * erase_muon_momentum_at in lib/ops/ops.h) */
    double embedding_matrix_lr;     /* Muon: AdamW rate of dense embedding matrices (follows the schedule) */
    double unembedding_lr;          /* Muon: AdamW rate of heads (follows the schedule) */
    double vector_lr;               /* Muon: AdamW rate of 1-D parameters (follows the schedule) */
    float weight_decay;             /* SGD (added to the gradient) and AdamW (decoupled), of
                                     * dense matrices only (ndim 2: weights, embedding matrices
                                     * of the gpt model), never of biases or LayerNorm gains;
                                     * embedding tables' sparse updates take none */
    float adagrad_eps;
    float grad_clip;                /* max L2 norm of each sub-graph's dense gradient
                                     * (see above); 0: no clipping */
} erase_optim_config_t;

/* AdamW lr 1e-3 (betas 0.9, 0.999, eps 1e-8, no weight decay) for dense
 * parameters, row-wise Adagrad lr 0.02 (eps 1e-8) for tables, constant,
 * no gradient clipping; for Muon: momentum 0.95, AdamW rates 0.2
 * (embedding matrices), 0.004 (heads), 0.004 (1-D), nanochat's
 * embedding_lr and unembedding_lr before its (width / 768)^-0.5 scaling. */
erase_optim_config_t erase_optim_config_default(void);

/* Whether Muon updates p (a dense 2-D parameter of role ERASE_ROLE_HIDDEN)
 * under ERASE_OPTIM_MUON; the other parameters take AdamW or, tables,
 * the embedding rule. */
int erase_optim_muon_updates(const erase_param_t *p);

typedef struct erase_optimizer erase_optimizer_t;

/* Allocate the state slots of every parameter (zeros) and the clock (and,
 * for Muon, each block's Newton-Schulz scratch).
 * Errors: ERASE_ERR_INVALID (a rule that does not apply, a learning rate
 * outside (0, FLT_MAX]: erase-train's --lr and --embedding-lr rule, a
 * grad_clip outside [0, FLT_MAX], Muon on a network without a hidden
 * matrix or with a momentum outside [0, 1)), ERASE_ERR_NOMEM. */
erase_status_t erase_optimizer_create(erase_network_t *net, const erase_optim_config_t *cfg,
                                      erase_optimizer_t **out);
void erase_optimizer_destroy(erase_optimizer_t *opt);

/* Enqueue the clock's advance: step + 1 and that step's learning rate. */
erase_status_t erase_optimizer_begin_step(erase_optimizer_t *opt, erase_stream_t *s);

/* Enqueue the updates of block b's parameters from their gradients. */
erase_status_t erase_optimizer_update_block(erase_optimizer_t *opt, int b, erase_stream_t *s);

/* The configured grad_clip (0: no clipping). */
float erase_optimizer_grad_clip(const erase_optimizer_t *opt);

/*
 * Enqueue the clipping of sub-graph [first, last] (blocks, inclusive):
 * zero its device float, add the sum of squares of the dense gradients of
 * blocks first..last in that order (a fixed order: every schedule gets the
 * same bits), then scale each of those gradients by min(1, grad_clip /
 * (norm + 1e-6)). Nothing when grad_clip is 0. On one stream, ordered
 * after every reduction of those blocks and before their updates.
 * Errors: ERASE_ERR_INVALID (blocks out of range), those of the ops.
 */
erase_status_t erase_optimizer_clip_grads(erase_optimizer_t *opt, int first, int last,
                                          erase_stream_t *s);

/* The clock (device memory: what ops read and advance; host code uses
 * erase_optimizer_read_clock / erase_optimizer_write_clock). */
erase_optim_clock_t *erase_optimizer_clock(erase_optimizer_t *opt);

/* Blocking copies of the clock to / from host memory (erase_memcpy_sync):
 * read after the streams that advance it are synchronized (the step, its
 * learning rate, a non-finite finding); write before the first step that
 * reads it (resuming a run). Errors: those of erase_memcpy_sync. */
/*
 * Change the learning-rate schedule's total steps (the cosine decay's
 * horizon), e.g. after resuming with another global batch. Takes effect at
 * the next erase_optimizer_begin_step issued: a step graph captured before
 * keeps the value it captured, so call it before the first step.
 */
void erase_optimizer_set_total_steps(erase_optimizer_t *opt, int64_t total_steps);

erase_status_t erase_optimizer_read_clock(erase_optimizer_t *opt, erase_optim_clock_t *out);
erase_status_t erase_optimizer_write_clock(erase_optimizer_t *opt, const erase_optim_clock_t *in);

#endif
