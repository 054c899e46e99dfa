/*
 * Optimizers of a network: one rule for dense parameters (SGD with
 * momentum or AdamW) and one for embedding tables (row-wise Adagrad or
 * plain SGD, on the rows a batch touched only), a learning-rate schedule,
 * and a step clock in device memory (see erase_optim_clock_t in
 * lib/ops/ops.h) so that a captured step graph replays correctly.
 *
 * Per step: erase_optimizer_begin_step once (advances the clock), then
 * erase_optimizer_update_block for every block, in any order and on any
 * streams ordered after begin_step and after that block's backward (and,
 * with data parallelism, its gradient all-reduce).
 */
#ifndef ERASE_NN_OPTIM_H
#define ERASE_NN_OPTIM_H

#include "lib/core/lr_schedule.h"
#include "lib/ops/ops.h"
#include "lib/nn/network.h"

typedef enum {
    ERASE_OPTIM_SGD = 0,               /* dense or sparse */
    ERASE_OPTIM_ADAMW = 1,             /* dense */
    ERASE_OPTIM_ROWWISE_ADAGRAD = 2    /* embedding tables */
} erase_optim_kind_t;

typedef struct {
    erase_optim_kind_t dense;       /* SGD or ADAMW */
    erase_optim_kind_t embedding;   /* SGD or ROWWISE_ADAGRAD */
    erase_lr_schedule_t schedule;   /* learning rate of dense parameters */
    double embedding_lr;            /* embedding learning rate after warm-up (follows the schedule) */
    float momentum;                 /* SGD */
    float beta1, beta2, eps;        /* AdamW */
    float weight_decay;             /* SGD (added to the gradient) and AdamW (decoupled), of
                                     * dense matrices only (ndim 2: weights, embedding matrices
                                     * of the gpt model), never of biases or LayerNorm gains;
                                     * embedding tables' sparse updates take none */
    float adagrad_eps;
} erase_optim_config_t;

/* AdamW lr 1e-3 (betas 0.9, 0.999, eps 1e-8, no weight decay) for dense
 * parameters, row-wise Adagrad lr 0.02 (eps 1e-8) for tables, constant. */
erase_optim_config_t erase_optim_config_default(void);

typedef struct erase_optimizer erase_optimizer_t;

/* Allocate the state slots of every parameter (zeros) and the clock.
 * Errors: ERASE_ERR_INVALID (a rule that does not apply, a learning rate
 * outside (0, FLT_MAX]: erase-train's --lr and --embedding-lr rule),
 * ERASE_ERR_NOMEM. */
erase_status_t erase_optimizer_create(erase_network_t *net, const erase_optim_config_t *cfg,
                                      erase_optimizer_t **out);
void erase_optimizer_destroy(erase_optimizer_t *opt);

/* Enqueue the clock's advance: step + 1 and that step's learning rate. */
erase_status_t erase_optimizer_begin_step(erase_optimizer_t *opt, erase_stream_t *s);

/* Enqueue the updates of block b's parameters from their gradients. */
erase_status_t erase_optimizer_update_block(erase_optimizer_t *opt, int b, erase_stream_t *s);

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
