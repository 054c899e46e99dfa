#include "lib/nn/optim.h"

#include "lib/ops/ops.h"

#include <float.h>
#include <stdlib.h>
#include <string.h>

struct erase_optimizer {
    erase_network_t *net;
    erase_device_t *dev;
    erase_optim_config_t cfg;
    erase_optim_clock_t *clock;
    float *sumsq;            /* grad_clip: [blocks], a sub-graph's at its first block */
    float **muon_work;       /* Muon: [blocks] each block's Newton-Schulz scratch (NULL: none) */
};

int erase_optim_muon_updates(const erase_param_t *p)
{
    return p->kind == ERASE_PARAM_DENSE && p->role == ERASE_ROLE_HIDDEN && p->ndim == 2;
}

void erase_optimizer_set_total_steps(erase_optimizer_t *opt, int64_t total_steps)
{
    erase_lr_schedule_set_total(&opt->cfg.schedule, total_steps);
}

erase_optim_config_t erase_optim_config_default(void)
{
    erase_optim_config_t c = {
        .dense = ERASE_OPTIM_ADAMW,
        .embedding = ERASE_OPTIM_ROWWISE_ADAGRAD,
        .schedule = { .base = 1e-3, .warmup_steps = 0, .decay = ERASE_LR_CONSTANT },
        .embedding_lr = 0.02,
        .momentum = 0.9f,
        .beta1 = 0.9f,
        .beta2 = 0.999f,
        .eps = 1e-8f,
        .weight_decay = 0.0f,
        .adagrad_eps = 1e-8f,
        .muon_momentum = 0.95f,
        .embedding_matrix_lr = 0.2,
        .unembedding_lr = 0.004,
        .vector_lr = 0.004,
    };
    return c;
}

/* A device array of n zero floats (an optimizer slot). */
static erase_status_t zeros(erase_device_t *dev, size_t n, float **out)
{
    ERASE_CHECK(erase_malloc(dev, n * sizeof(float), (void **)out));
    ERASE_CHECK(erase_memset_sync(dev, *out, 0, n * sizeof(float)));
    return ERASE_OK;
}

/* Muon's own settings: a momentum in [0, 1), AdamW rates in (0, FLT_MAX],
 * a network with at least one hidden matrix. */
static erase_status_t check_muon(erase_network_t *net, const erase_optim_config_t *cfg)
{
    if (!(cfg->muon_momentum >= 0 && cfg->muon_momentum < 1) || cfg->muon_momentum_warmup < 0)
        return ERASE_ERROR(ERASE_ERR_INVALID, "optimizer: muon momentum %g is not in [0, 1) or its warm-up of "
                           "%lld steps is negative", (double)cfg->muon_momentum,
                           (long long)cfg->muon_momentum_warmup);
    const double lrs[] = { cfg->embedding_matrix_lr, cfg->unembedding_lr, cfg->vector_lr };
    for (size_t i = 0; i < sizeof lrs / sizeof lrs[0]; i++)
        if (!(lrs[i] > 0 && lrs[i] <= FLT_MAX))
            return ERASE_ERROR(ERASE_ERR_INVALID, "optimizer: muon's AdamW learning rates must be in (0, %g] "
                               "(embedding matrices %g, heads %g, 1-d %g)", (double)FLT_MAX,
                               cfg->embedding_matrix_lr, cfg->unembedding_lr, cfg->vector_lr);
    int n, hidden = 0;
    erase_param_t *params = erase_network_params(net, &n);
    for (int i = 0; i < n; i++)
        hidden += erase_optim_muon_updates(&params[i]);
    if (!hidden)
        return ERASE_ERROR(ERASE_ERR_INVALID, "optimizer muon: the model has no hidden layer's weight matrix for "
                           "Muon (embeddings, heads and 1-d parameters take AdamW): use adamw or sgd");
    return ERASE_OK;
}

/* Muon's scratch of block b: enough for its largest hidden matrix (none
 * when it has no hidden matrix). */
static erase_status_t alloc_muon_work(erase_optimizer_t *opt, int b)
{
    int first, count, n;
    erase_param_t *params = erase_network_params(opt->net, &n);
    erase_network_block_params(opt->net, b, &first, &count);
    size_t most = 0;
    for (int i = first; i < first + count; i++)
        if (erase_optim_muon_updates(&params[i])) {
            size_t need = erase_muon_work_floats(params[i].rows, params[i].cols);
            most = need > most ? need : most;
        }
    if (most)
        ERASE_CHECK(erase_malloc(opt->dev, most * sizeof(float), (void **)&opt->muon_work[b]));
    return ERASE_OK;
}

erase_status_t erase_optimizer_create(erase_network_t *net, const erase_optim_config_t *cfg,
                                      erase_optimizer_t **out)
{
    if (cfg->dense != ERASE_OPTIM_SGD && cfg->dense != ERASE_OPTIM_ADAMW && cfg->dense != ERASE_OPTIM_MUON)
        return ERASE_ERROR(ERASE_ERR_INVALID, "optimizer: dense parameters take sgd, adamw or muon");
    if (cfg->dense == ERASE_OPTIM_MUON)
        ERASE_CHECK(check_muon(net, cfg));
    if (cfg->embedding != ERASE_OPTIM_SGD && cfg->embedding != ERASE_OPTIM_ROWWISE_ADAGRAD)
        return ERASE_ERROR(ERASE_ERR_INVALID, "optimizer: embedding tables take sgd or rowwise_adagrad");
    if (!(cfg->schedule.base > 0 && cfg->schedule.base <= FLT_MAX) ||
        !(cfg->embedding_lr > 0 && cfg->embedding_lr <= FLT_MAX))
        return ERASE_ERROR(ERASE_ERR_INVALID, "optimizer: learning rates must be in (0, %g] (lr %g, embedding lr %g)",
                           (double)FLT_MAX,
                           cfg->schedule.base, cfg->embedding_lr);
    if (!(cfg->grad_clip >= 0 && cfg->grad_clip <= FLT_MAX))
        return ERASE_ERROR(ERASE_ERR_INVALID, "optimizer: grad_clip %g is not in [0, %g]",
                           (double)cfg->grad_clip, (double)FLT_MAX);
    erase_optimizer_t *opt = calloc(1, sizeof *opt);
    if (!opt)
        return ERASE_ERROR(ERASE_ERR_NOMEM, "optimizer: no memory");
    opt->net = net;
    opt->cfg = *cfg;
    int n;
    erase_param_t *params = erase_network_params(net, &n);
    opt->dev = erase_network_device(net);
    erase_status_t st = erase_malloc(opt->dev, sizeof *opt->clock, (void **)&opt->clock);
    if (st == ERASE_OK)
        st = erase_memset_sync(opt->dev, opt->clock, 0, sizeof *opt->clock);
    if (st == ERASE_OK && cfg->grad_clip > 0)
        st = zeros(opt->dev, (size_t)erase_network_blocks(net), &opt->sumsq);
    if (st == ERASE_OK && cfg->dense == ERASE_OPTIM_MUON) {
        opt->muon_work = calloc((size_t)erase_network_blocks(net), sizeof *opt->muon_work);
        if (!opt->muon_work)
            st = ERASE_ERROR(ERASE_ERR_NOMEM, "optimizer: no memory");
        for (int b = 0; st == ERASE_OK && b < erase_network_blocks(net); b++)
            st = alloc_muon_work(opt, b);
    }
    for (int i = 0; st == ERASE_OK && i < n; i++) {
        erase_param_t *p = &params[i];
        size_t numel = (size_t)erase_param_numel(p);
        if (p->kind == ERASE_PARAM_EMBEDDING) {
            if (cfg->embedding == ERASE_OPTIM_ROWWISE_ADAGRAD)
                st = zeros(opt->dev, (size_t)p->held, &p->state[0]); /* one per row held */
        } else if (cfg->dense == ERASE_OPTIM_MUON && erase_optim_muon_updates(p)) {
            st = zeros(opt->dev, numel, &p->state[0]);
        } else if (cfg->dense == ERASE_OPTIM_ADAMW || cfg->dense == ERASE_OPTIM_MUON) {
            st = zeros(opt->dev, numel, &p->state[0]);
            if (st == ERASE_OK)
                st = zeros(opt->dev, numel, &p->state[1]);
        } else if (cfg->momentum != 0.0f) {
            st = zeros(opt->dev, numel, &p->state[0]);
        }
    }
    if (st != ERASE_OK) {
        erase_error_trail(__FILE__, __LINE__);
        erase_optimizer_destroy(opt);
        return st;
    }
    *out = opt;
    return ERASE_OK;
}

void erase_optimizer_destroy(erase_optimizer_t *opt)
{
    if (!opt)
        return;
    int n;
    erase_param_t *params = erase_network_params(opt->net, &n);
    for (int i = 0; i < n; i++)
        for (int k = 0; k < 2; k++) {
            erase_free(opt->dev, params[i].state[k]);
            params[i].state[k] = NULL;
        }
    erase_free(opt->dev, opt->clock);
    erase_free(opt->dev, opt->sumsq);
    if (opt->muon_work)
        for (int b = 0; b < erase_network_blocks(opt->net); b++)
            erase_free(opt->dev, opt->muon_work[b]);
    free(opt->muon_work);
    free(opt);
}

erase_status_t erase_optimizer_begin_step(erase_optimizer_t *opt, erase_stream_t *s)
{
    ERASE_CHECK(erase_optim_clock_advance(s, opt->clock, &opt->cfg.schedule));
    return ERASE_OK;
}

/* Weight decay applies to matrices only (ndim 2: weights, the gpt model's
 * embedding matrices), never to biases or LayerNorm gains (nanoGPT's rule). */
static float decay_of(const erase_optim_config_t *c, const erase_param_t *p)
{
    return p->ndim == 2 ? c->weight_decay : 0.0f;
}

/* Under Muon, the AdamW rate of a parameter Muon does not update, as a
 * multiple of the schedule's base rate (its group's rate / Muon's). */
static float muon_adamw_mult(const erase_optim_config_t *c, const erase_param_t *p)
{
    double lr = p->role == ERASE_ROLE_HEAD        ? c->unembedding_lr
                : p->role == ERASE_ROLE_EMBEDDING ? c->embedding_matrix_lr
                                                  : c->vector_lr;
    return (float)(lr / c->schedule.base);
}

erase_status_t erase_optimizer_update_block(erase_optimizer_t *opt, int b, erase_stream_t *s)
{
    const erase_optim_config_t *c = &opt->cfg;
    int first, count, n;
    erase_param_t *params = erase_network_params(opt->net, &n);
    erase_network_block_params(opt->net, b, &first, &count);
    float emb_mult = (float)(c->embedding_lr / c->schedule.base);
    for (int i = first; i < first + count; i++) {
        erase_param_t *p = &params[i];
        if (p->kind == ERASE_PARAM_EMBEDDING) {
            if (c->embedding == ERASE_OPTIM_ROWWISE_ADAGRAD)
                ERASE_CHECK(erase_rowwise_adagrad_update(s, (int)p->cols, p->value, p->state[0],
                                                         p->grad_rows, p->grad_values, p->grad_count,
                                                         opt->clock, emb_mult, c->adagrad_eps));
            else
                ERASE_CHECK(erase_sparse_sgd_update(s, (int)p->cols, p->value, p->grad_rows,
                                                    p->grad_values, p->grad_count, opt->clock,
                                                    emb_mult));
        } else if (c->dense == ERASE_OPTIM_MUON && erase_optim_muon_updates(p)) {
            ERASE_CHECK(erase_muon_update(s, p->rows, p->cols, p->value, p->grad, p->state[0],
                                          opt->muon_work[b], opt->clock, 1.0f, c->muon_momentum,
                                          c->muon_momentum_warmup));
        } else if (c->dense == ERASE_OPTIM_ADAMW || c->dense == ERASE_OPTIM_MUON) {
            float mult = c->dense == ERASE_OPTIM_MUON ? muon_adamw_mult(c, p) : 1.0f;
            ERASE_CHECK(erase_adamw_update(s, (size_t)erase_param_numel(p), p->value, p->grad,
                                           p->state[0], p->state[1], opt->clock, mult, c->beta1,
                                           c->beta2, c->eps, decay_of(c, p)));
        } else {
            ERASE_CHECK(erase_sgd_update(s, (size_t)erase_param_numel(p), p->value, p->grad,
                                         p->state[0], opt->clock, 1.0f, c->momentum,
                                         decay_of(c, p)));
        }
    }
    return ERASE_OK;
}

float erase_optimizer_grad_clip(const erase_optimizer_t *opt)
{
    return opt->cfg.grad_clip;
}

erase_status_t erase_optimizer_clip_grads(erase_optimizer_t *opt, int first, int last,
                                          erase_stream_t *s)
{
    if (opt->cfg.grad_clip == 0.0f)
        return ERASE_OK;
    int blocks = erase_network_blocks(opt->net);
    if (first < 0 || last < first || last >= blocks)
        return ERASE_ERROR(ERASE_ERR_INVALID, "optimizer: clip of blocks %d..%d (the network has %d)",
                           first, last, blocks);
    float *acc = &opt->sumsq[first];
    ERASE_CHECK(erase_memset_async(s, acc, 0, sizeof *acc));
    for (int b = first; b <= last; b++) {
        size_t count;
        const float *g = erase_network_block_grads(opt->net, b, &count);
        ERASE_CHECK(erase_sum_squares(s, count, g, acc));
    }
    for (int b = first; b <= last; b++) {
        size_t count;
        float *g = erase_network_block_grads(opt->net, b, &count);
        ERASE_CHECK(erase_clip_by_norm(s, count, g, acc, opt->cfg.grad_clip));
    }
    return ERASE_OK;
}

/* The device clock (for ops; the host uses read_clock / write_clock). */
erase_optim_clock_t *erase_optimizer_clock(erase_optimizer_t *opt)
{
    return opt->clock;
}

/* Host copy of the device clock (blocking). */
erase_status_t erase_optimizer_read_clock(erase_optimizer_t *opt, erase_optim_clock_t *out)
{
    ERASE_CHECK(erase_memcpy_sync(opt->dev, out, opt->clock, sizeof *out));
    return ERASE_OK;
}

/* Set the device clock from host memory (blocking). */
erase_status_t erase_optimizer_write_clock(erase_optimizer_t *opt, const erase_optim_clock_t *in)
{
    ERASE_CHECK(erase_memcpy_sync(opt->dev, opt->clock, in, sizeof *in));
    return ERASE_OK;
}
