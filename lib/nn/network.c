/*
 * Networks of blocks: construction from a model configuration
 * (docs/models.md), initialisation, and per-block forward and backward
 * enqueued as ops on the stream the caller gives.
 */
#include "lib/nn/network_impl.h"

#include "lib/core/checked.h"
#include "lib/core/rng.h"
#include "lib/ops/ops.h"

#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- construction ------------------------------------------------------- */

erase_status_t erase_network_add_param(erase_network_t *net, int block, const char *path,
                                       erase_param_kind_t kind, erase_param_role_t role, int64_t rows,
                                       int64_t cols, int ndim, int *index)
{
    if (net->nparams == net->params_cap) {
        int cap = net->params_cap ? 2 * net->params_cap : 64;
        erase_param_t *p = realloc(net->params, (size_t)cap * sizeof *p);
        if (!p)
            return ERASE_ERROR(ERASE_ERR_NOMEM, "network: no memory for parameters");
        net->params = p;
        net->params_cap = cap;
    }
    erase_param_t *p = &net->params[net->nparams];
    memset(p, 0, sizeof *p);
    snprintf(p->name, sizeof p->name, "%s/%s", net->blocks[block].name, path);
    p->kind = kind;
    p->role = role;
    p->block = block;
    p->rows = p->held = rows;
    p->cols = cols;
    p->ndim = ndim;
    *index = net->nparams++;
    return ERASE_OK;
}

/* 64-bit FNV-1a of a name, mixed with the model seed: each parameter's own
 * random stream. */
static uint64_t param_seed(uint64_t seed, const char *name)
{
    uint64_t h = 0xcbf29ce484222325ULL;
    for (const char *p = name; *p; p++)
        h = (h ^ (unsigned char)*p) * 0x100000001b3ULL;
    uint64_t s = seed ^ h;
    return erase_rng_next(&s);
}

erase_status_t erase_network_init_param(erase_network_t *net, erase_param_t *p, erase_init_t how, double a)
{
    if (net->shares)
        return ERASE_OK; /* a replica: the values are its network's, initialised there */
    uint64_t rng = param_seed(net->cfg.seed, p->name);
    /* a part of the rows (sharded table): the stream skipped to value row0 x cols, as if the rows before had
     * been drawn (SplitMix64 advances its state by a constant per draw), so every placement initialises a
     * row alike */
    uint64_t draws = how == ERASE_INIT_UNIFORM ? 1 : how == ERASE_INIT_NORMAL ? 2 : 0;
    rng += (uint64_t)p->row0 * (uint64_t)p->cols * draws * 0x9e3779b97f4a7c15ULL;
    float bound = (float)a;
    size_t n = (size_t)erase_param_numel(p), bytes;
    float *host = erase_bytes(sizeof(float), p->held, p->cols, &bytes) ? malloc(bytes ? bytes : 1) : NULL;
    if (!host)
        return ERASE_ERROR(ERASE_ERR_NOMEM, "network: no memory to initialise %s (%zu values)", p->name, n);
    for (size_t i = 0; i < n; i++)
        host[i] = how == ERASE_INIT_UNIFORM  ? erase_rng_uniform(&rng, -bound, bound)
                  : how == ERASE_INIT_NORMAL ? (float)(a * erase_rng_normal(&rng))
                                             : bound;
    erase_status_t st = erase_memcpy_sync(net->dev, p->value, host, sizeof(float) * n);
    free(host);
    ERASE_CHECK(st);
    return ERASE_OK;
}

/* Device memory for a x b elements of `elem` bytes; a size that does not
 * fit a size_t is ERASE_ERR_INVALID saying so (not a wrapped, small
 * allocation). */
erase_status_t erase_network_alloc(erase_network_t *net, void **ptr, size_t elem, int64_t a, int64_t b)
{
    size_t bytes;
    if (!erase_bytes(elem, a, b, &bytes))
        return ERASE_ERROR(ERASE_ERR_INVALID, "network: a buffer of %lld x %lld elements of %zu bytes "
                           "is larger than memory can address (model sizes or batch %d too large)",
                           (long long)a, (long long)b, elem, net->max_batch);
    ERASE_CHECK(erase_malloc(net->dev, bytes, ptr));
    net->device_bytes += bytes;
    return ERASE_OK;
}

#define ALLOC(ptr, elem, a, b) ERASE_NET_ALLOC(net, ptr, elem, a, b)

static erase_status_t allocate(erase_network_t *net)
{
    /* a table's sparse gradient: up to max_batch x its hotness rows */
    int64_t mb = net->max_batch, hot = erase_network_ids_per_sample(net);
    if (mb * hot > INT_MAX)
        return ERASE_ERROR(ERASE_ERR_INVALID, "network: max_batch %d x hotness %lld ids are more than %d",
                           net->max_batch, (long long)hot, INT_MAX);
    /* one contiguous dense-gradient buffer per block: one all-reduce each */
    for (int b = 0; b < net->nblocks; b++) {
        erase_block_t *blk = &net->blocks[b];
        for (int i = blk->first_param; i < blk->first_param + blk->nparams; i++)
            if (net->params[i].kind == ERASE_PARAM_DENSE)
                blk->grad_count += (size_t)erase_param_numel(&net->params[i]);
        ALLOC(blk->grads, sizeof(float), (int64_t)(blk->grad_count ? blk->grad_count : 1), 1);
        ERASE_CHECK(erase_memset_sync(net->dev, blk->grads, 0, sizeof(float) * blk->grad_count));
        size_t offset = 0;
        for (int i = blk->first_param; i < blk->first_param + blk->nparams; i++)
            if (net->params[i].kind == ERASE_PARAM_DENSE) {
                net->params[i].grad = blk->grads + offset;
                offset += (size_t)erase_param_numel(&net->params[i]);
            }
    }
    for (int i = 0; i < net->nparams; i++) {
        erase_param_t *p = &net->params[i];
        if (net->shares)
            p->value = net->shares->params[i].value; /* a replica: the values are its network's */
        else
            ALLOC(p->value, sizeof(float), p->held ? p->held : 1, p->cols);
        if (p->kind == ERASE_PARAM_DENSE) {
            /* gradient: a slice of the block's buffer */
        } else {
            ALLOC(p->grad_rows, sizeof(uint32_t), mb * hot, 1);
            ALLOC(p->grad_values, sizeof(float), mb * hot, p->cols); /* grad_count: set by the model */
        }
    }
    for (int b = 1; b < net->nblocks; b++)
        if (!erase_network_is_cut(net, b))
            ALLOC(net->blocks[b].d_in, sizeof(float), mb, net->blocks[b].in_width);
    net->sparse_rows = (int)(mb * hot);
    ALLOC(net->losses, sizeof(float), net->nblocks, 1);
    ERASE_CHECK(erase_memset_sync(net->dev, net->losses, 0, sizeof(float) * (size_t)net->nblocks));
    ERASE_CHECK(net->impl->allocate(net));
    return ERASE_OK;
}

/* The rows of each embedding table this rank holds (row0, held) by `plan`
 * (one placement per table, in parameter order), or a replica's by its
 * network's. */
static erase_status_t place(erase_network_t *net, const erase_shard_t *plan, int tables, int rank)
{
    int t = 0;
    for (int i = 0; i < net->nparams; i++) {
        erase_param_t *p = &net->params[i];
        if (net->shares) {
            p->row0 = net->shares->params[i].row0;
            p->held = net->shares->params[i].held;
        } else if (plan && p->kind == ERASE_PARAM_EMBEDDING) {
            if (t >= tables || plan[t].rows != p->rows || rank < 0 || rank >= plan[t].ranks)
                return ERASE_ERROR(ERASE_ERR_INVALID, "network: a placement of %d tables for rank %d does not fit "
                                   "table %s (%lld rows)", tables, rank, p->name, (long long)p->rows);
            p->row0 = erase_shard_first_row(&plan[t], rank);
            p->held = erase_shard_rows_on(&plan[t], rank);
            t++;
        }
    }
    if (plan && t != tables)
        return ERASE_ERROR(ERASE_ERR_INVALID, "network: a placement of %d tables for a model of %d", tables, t);
    return ERASE_OK;
}

/* A network of cfg for max_batch samples; with `shares`, a replica using
 * its parameter values; with `plan`, embedding tables held in part. */
static erase_status_t create(erase_device_t *dev, const erase_model_config_t *cfg, int max_batch,
                             const erase_network_t *shares, const erase_shard_t *plan, int tables, int rank,
                             erase_network_t **out)
{
    if (max_batch < 1)
        return ERASE_ERROR(ERASE_ERR_INVALID, "network: max_batch %d < 1", max_batch);
    int blocks = erase_model_config_blocks(cfg);
    if (blocks < 1 || blocks > ERASE_MAX_BLOCKS)
        return ERASE_ERROR(ERASE_ERR_INVALID, "network: %d blocks (1 to %d)", blocks, ERASE_MAX_BLOCKS);
    erase_network_t *net = calloc(1, sizeof *net);
    if (!net)
        return ERASE_ERROR(ERASE_ERR_NOMEM, "network: no memory");
    net->dev = dev;
    net->cfg = *cfg;
    net->max_batch = max_batch;
    net->shares = shares;
    net->emb_block = -1;
    net->impl = cfg->kind == ERASE_MODEL_GPT        ? &erase_model_gpt
                : cfg->kind == ERASE_MODEL_NANOCHAT ? &erase_model_nanochat
                : cfg->kind == ERASE_MODEL_DCN      ? &erase_model_dcn
                                                    : &erase_model_chain;
    erase_status_t st = net->impl->build(net);
    if (st == ERASE_OK) {
        for (int b = 0; b < net->nblocks; b++)
            net->blocks[b].weight = net->blocks[b].lambda = b == net->nblocks - 1 ? 1.0f : cfg->local_loss_weight;
        st = place(net, plan, tables, rank);
    }
    if (st == ERASE_OK)
        st = allocate(net);
    if (st != ERASE_OK) {
        erase_error_trail(__FILE__, __LINE__);
        erase_network_destroy(net);
        return st;
    }
    *out = net;
    return ERASE_OK;
}

erase_status_t erase_network_create(erase_device_t *dev, const erase_model_config_t *cfg,
                                    int max_batch, erase_network_t **out)
{
    return create(dev, cfg, max_batch, NULL, NULL, 0, 0, out);
}

erase_status_t erase_network_create_placed(erase_device_t *dev, const erase_model_config_t *cfg, int max_batch,
                                           const erase_shard_t *plan, int tables, int rank, erase_network_t **out)
{
    return create(dev, cfg, max_batch, NULL, plan, tables, rank, out);
}

erase_status_t erase_network_create_replica(erase_network_t *net, int max_batch, erase_network_t **out)
{
    erase_status_t st = create(net->dev, &net->cfg, max_batch, net, NULL, 0, 0, out);
    if (st == ERASE_OK && (*out)->nparams != net->nparams) { /* the model builds the same parameters */
        erase_network_destroy(*out);
        return ERASE_ERROR(ERASE_ERR_STATE, "network: a replica of %d parameters built %d",
                           net->nparams, (*out)->nparams);
    }
    return st;
}

void erase_network_destroy(erase_network_t *net)
{
    if (!net)
        return;
    for (int i = 0; i < net->nparams; i++) {
        erase_param_t *p = &net->params[i];
        if (!net->shares)
            erase_free(net->dev, p->value);
        erase_free(net->dev, p->grad_rows);
        erase_free(net->dev, p->grad_values);
        erase_free(net->dev, p->state[0]);
        erase_free(net->dev, p->state[1]);
    }
    if (net->model)
        net->impl->destroy(net);
    for (int b = 0; b < net->nblocks; b++) {
        erase_free(net->dev, net->blocks[b].d_in);
        erase_free(net->dev, net->blocks[b].grads);
    }
    erase_free(net->dev, net->losses);
    free(net->params);
    free(net);
}

/* ---- queries ------------------------------------------------------------ */

const erase_model_config_t *erase_network_config(const erase_network_t *net) { return &net->cfg; }
erase_device_t *erase_network_device(const erase_network_t *net) { return net->dev; }
int erase_network_blocks(const erase_network_t *net) { return net->nblocks; }
int erase_network_max_batch(const erase_network_t *net) { return net->max_batch; }
size_t erase_network_device_bytes(const erase_network_t *net) { return net->device_bytes; }
const char *erase_network_block_name(const erase_network_t *net, int b) { return net->blocks[b].name; }
const float *erase_network_losses(const erase_network_t *net) { return net->losses; }

int erase_network_is_cut(const erase_network_t *net, int b)
{
    return b > 0 && b < net->nblocks && ((net->cfg.cut_mask >> b) & 1u);
}

erase_param_t *erase_network_params(erase_network_t *net, int *count)
{
    *count = net->nparams;
    return net->params;
}

void erase_network_block_params(const erase_network_t *net, int b, int *first, int *count)
{
    *first = net->blocks[b].first_param;
    *count = net->blocks[b].nparams;
}

/* One parameter's values to host memory (blocking). */
erase_status_t erase_network_read_param(erase_network_t *net, const erase_param_t *p, float *out)
{
    ERASE_CHECK(erase_memcpy_sync(net->dev, out, p->value, sizeof(float) * (size_t)erase_param_numel(p)));
    return ERASE_OK;
}

/* One parameter's values from host memory (blocking). */
erase_status_t erase_network_write_param(erase_network_t *net, erase_param_t *p, const float *in)
{
    ERASE_CHECK(erase_memcpy_sync(net->dev, p->value, in, sizeof(float) * (size_t)erase_param_numel(p)));
    return ERASE_OK;
}

/* The per-block losses to host memory (blocking). */
erase_status_t erase_network_read_losses(const erase_network_t *net, float *out)
{
    ERASE_CHECK(erase_memcpy_sync(net->dev, out, net->losses, sizeof(float) * (size_t)net->nblocks));
    return ERASE_OK;
}

/* Every parameter to host memory, concatenated; the float count, 0 on failure. */
size_t erase_network_copy_params(erase_network_t *net, float *out)
{
    size_t total = 0;
    for (int i = 0; i < net->nparams; i++) {
        if (out && erase_network_read_param(net, &net->params[i], out + total) != ERASE_OK) {
            erase_error_trail(__FILE__, __LINE__);
            return 0;
        }
        total += (size_t)erase_param_numel(&net->params[i]);
    }
    return total;
}

erase_status_t erase_network_set_embedding_provider(erase_network_t *net, int b, const erase_embedding_provider_t *p,
                                                    void *ctx)
{
    if (net->shares)
        return ERASE_ERROR(ERASE_ERR_INVALID, "network: a replica keeps its own embedding lookups");
    if (b < 0 || b >= net->nblocks)
        return ERASE_ERROR(ERASE_ERR_INVALID, "network: block %d of %d for an embedding provider", b, net->nblocks);
    int tables = 0;
    for (int i = net->blocks[b].first_param; i < net->blocks[b].first_param + net->blocks[b].nparams; i++)
        tables += net->params[i].kind == ERASE_PARAM_EMBEDDING;
    if (tables == 0)
        return ERASE_ERROR(ERASE_ERR_INVALID, "network: block %s has no embedding lookup to provide",
                           net->blocks[b].name);
    if (p && !p->forward)
        return ERASE_ERROR(ERASE_ERR_INVALID, "network: an embedding provider without forward");
    net->emb_block = p ? b : -1;
    net->emb_provider = p ? *p : (erase_embedding_provider_t){ 0 };
    net->emb_ctx = p ? ctx : NULL;
    return ERASE_OK;
}

int erase_network_ids_per_sample(const erase_network_t *net)
{
    int h = erase_model_config_max_hotness(&net->cfg);
    return h > 1 ? h : 1;
}

erase_bag_t erase_network_bag(const erase_network_t *net, const uint32_t *lengths)
{
    erase_bag_t bag;
    memset(&bag, 0, sizeof bag);
    int ctr = erase_model_config_has_tables(&net->cfg);
    for (int f = 0; f < ERASE_CTR_FIELDS; f++)
        bag.hotness[f] = ctr && net->cfg.ctr.hotness[f] > 1 ? (int)net->cfg.ctr.hotness[f] : 1;
    bag.lengths = lengths;
    bag.pooling = ctr && net->cfg.ctr.pooling == ERASE_POOLING_MEAN ? ERASE_BAG_MEAN : ERASE_BAG_SUM;
    return bag;
}

erase_param_t *erase_network_param(erase_network_t *net, const char *name)
{
    for (int i = 0; i < net->nparams; i++)
        if (!strcmp(net->params[i].name, name))
            return &net->params[i];
    return NULL;
}

float *erase_network_block_grads(erase_network_t *net, int b, size_t *count)
{
    *count = net->blocks[b].grad_count;
    return net->blocks[b].grads;
}

erase_status_t erase_network_reserve_sparse_rows(erase_network_t *net, int rows)
{
    if (rows <= net->sparse_rows)
        return ERASE_OK;
    for (int i = 0; i < net->nparams; i++) {
        erase_param_t *p = &net->params[i];
        if (p->kind != ERASE_PARAM_EMBEDDING)
            continue;
        uint32_t *r;
        float *v;
        ERASE_CHECK(erase_malloc(net->dev, sizeof(uint32_t) * (size_t)rows, (void **)&r));
        if (erase_malloc(net->dev, sizeof(float) * (size_t)rows * (size_t)p->cols, (void **)&v) != ERASE_OK) {
            erase_free(net->dev, r);
            return ERASE_ERROR(ERASE_ERR_NOMEM, "network: no memory for %d sparse rows of %s", rows, p->name);
        }
        erase_free(net->dev, p->grad_rows);
        erase_free(net->dev, p->grad_values);
        p->grad_rows = r;
        p->grad_values = v;
    }
    net->sparse_rows = rows;
    return ERASE_OK;
}

const float *erase_network_body_output(const erase_network_t *net, int b, int *width)
{
    return net->impl->body_output(net, b, width);
}

const float *erase_network_head_output(const erase_network_t *net, int b, int *width)
{
    return net->impl->head_output(net, b, width);
}

void erase_network_set_loss_scale(erase_network_t *net, float scale)
{
    for (int b = 0; b < net->nblocks; b++)
        net->blocks[b].weight = net->blocks[b].lambda * scale;
}

float *erase_network_block_input(erase_network_t *net, int b, int *width)
{
    *width = 0;
    if (b < 1 || b >= net->nblocks)
        return NULL;
    /* the model's own activation buffer, which its forward of block b-1 writes */
    return (float *)net->impl->body_output(net, b - 1, width);
}

float *erase_network_input_grad(erase_network_t *net, int b, int *width)
{
    *width = 0;
    if (b < 1 || b >= net->nblocks || erase_network_is_cut(net, b))
        return NULL;
    *width = net->blocks[b].in_width;
    return net->blocks[b].d_in;
}

/* ---- forward and backward: checked here, computed by the model ------------ */

static erase_status_t check_batch(const erase_network_t *net, int b, const erase_batch_t *batch)
{
    if (b < 0 || b >= net->nblocks)
        return ERASE_ERROR(ERASE_ERR_INVALID, "network: block %d of %d", b, net->nblocks);
    if (batch->size < 1 || batch->size > net->max_batch)
        return ERASE_ERROR(ERASE_ERR_INVALID, "network: batch of %d samples (1 to %d)", batch->size,
                           net->max_batch);
    return ERASE_OK;
}

erase_status_t erase_network_forward_block(erase_network_t *net, int b, erase_stream_t *s,
                                           const erase_batch_t *batch)
{
    ERASE_CHECK(check_batch(net, b, batch));
    ERASE_CHECK(net->impl->forward_block(net, b, s, batch));
    return ERASE_OK;
}

double erase_network_flops_per_sample(const erase_network_t *net)
{
    return net->impl->flops_per_sample ? net->impl->flops_per_sample(net) : 0;
}

erase_status_t erase_network_forward_predict(erase_network_t *net, erase_stream_t *s, const erase_batch_t *batch)
{
    if (batch->size == 0 && net->emb_block >= 0) /* the provider's collectives, with nothing to look up */
        return net->emb_provider.forward(net->emb_ctx, s, 0, batch->sparse, batch->sparse_len, NULL);
    ERASE_CHECK(check_batch(net, 0, batch));
    ERASE_CHECK(net->impl->forward_predict(net, s, batch));
    return ERASE_OK;
}

erase_status_t erase_network_backward_block(erase_network_t *net, int b, erase_stream_t *s,
                                            const erase_batch_t *batch)
{
    ERASE_CHECK(check_batch(net, b, batch));
    ERASE_CHECK(net->impl->backward_block(net, b, s, batch));
    return ERASE_OK;
}

struct erase_network_decoder {
    const erase_model_impl_t *impl;
    void *state;
};

erase_status_t erase_network_decoder_create(erase_network_t *net, int batch, erase_network_decoder_t **out)
{
    if (!net->impl->decoder_create)
        return ERASE_ERROR(ERASE_ERR_UNSUPPORTED, "network: a %s model has no key/value-cache decoder",
                           erase_model_config_name(&net->cfg));
    if (batch < 1)
        return ERASE_ERROR(ERASE_ERR_INVALID, "%s decoder: batch %d < 1", erase_model_config_name(&net->cfg), batch);
    erase_network_decoder_t *d = calloc(1, sizeof *d);
    if (!d)
        return ERASE_ERROR(ERASE_ERR_NOMEM, "network: no memory for a decoder");
    d->impl = net->impl;
    erase_status_t st = net->impl->decoder_create(net, batch, &d->state);
    if (st != ERASE_OK) {
        erase_error_trail(__FILE__, __LINE__);
        free(d);
        return st;
    }
    *out = d;
    return ERASE_OK;
}

erase_status_t erase_network_decode_step(erase_network_decoder_t *d, erase_stream_t *s, int t, const int32_t *tokens,
                                         const float **logits)
{
    ERASE_CHECK(d->impl->decode_step(d->state, s, t, tokens, logits));
    return ERASE_OK;
}

void erase_network_decoder_destroy(erase_network_decoder_t *d)
{
    if (!d)
        return;
    d->impl->decoder_destroy(d->state);
    free(d);
}

erase_status_t erase_network_check_tokens(const char *model, const erase_batch_t *batch, int need_targets)
{
    if (!batch->tokens || (need_targets && !batch->targets))
        return ERASE_ERROR(ERASE_ERR_INVALID, "%s: the batch has no %s (the lm task's batch->%s)", model,
                           batch->tokens ? "targets" : "tokens", batch->tokens ? "targets" : "tokens");
    return ERASE_OK;
}

double erase_network_transformer_flops(const erase_network_t *net, int skip, int T, int C)
{
    double n = 0;
    for (int i = 0; i < net->nparams; i++)
        if (i != skip)
            n += (double)erase_param_numel(&net->params[i]);
    return (double)T * (6.0 * n + 12.0 * net->nblocks * (double)C * T);
}
