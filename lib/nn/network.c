/*
 * Networks of blocks: construction from a model configuration
 * (docs/models.md), initialisation, and per-block forward and backward
 * enqueued as ops on the stream the caller gives.
 */
#include "lib/nn/network.h"

#include "lib/core/checked.h"
#include "lib/core/rng.h"
#include "lib/ops/ops.h"

#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef enum {
    LAYER_DENSE,      /* Linear, optionally followed by ReLU */
    LAYER_INTERACT    /* embedding lookup of the 26 fields + pairwise-dot interaction */
} layer_kind_t;

typedef struct {
    layer_kind_t kind;
    int in, out;
    int relu;
    int w, b;               /* parameter indices (dense) */
    int table0;             /* first of the ERASE_CTR_FIELDS table parameters (interact) */
    int dim;                /* embedding width (interact) */
    float *y;               /* output [max_batch, out] */
    float *dy;              /* gradient at the output [max_batch, out] */
    float *emb, *demb;      /* interact: [max_batch, fields, dim] */
    int *counts;            /* interact: [fields] rows in each table's sparse gradient */
} layer_t;

typedef struct {
    char name[16];
    int nlayers;
    layer_t layers[ERASE_MAX_LAYERS + 1];
    layer_t head;
    int in_width;           /* width of the block input (data or previous body) */
    float weight;           /* lambda, or 1 for the main loss */
    float *d_in;            /* [max_batch, in_width] when boundary `index` is attached */
    int first_param, nparams;
    float *grads;           /* every dense gradient of the block, contiguous */
    size_t grad_count;
} block_t;

struct erase_network {
    erase_device_t *dev;
    erase_model_config_t cfg;
    int max_batch;
    int nblocks;
    block_t blocks[ERASE_MAX_BLOCKS];
    erase_param_t *params;
    int nparams, params_cap;
    float *losses;          /* device [nblocks] */
    int sparse_rows;        /* rows each sparse-gradient buffer holds */
    uint32_t table_rows[ERASE_CTR_FIELDS];
};

/* ---- construction ------------------------------------------------------- */

static erase_status_t add_param(erase_network_t *net, int block, const char *path,
                                erase_param_kind_t kind, int64_t rows, int64_t cols, int ndim,
                                int *index)
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
    p->block = block;
    p->rows = rows;
    p->cols = cols;
    p->ndim = ndim;
    *index = net->nparams++;
    return ERASE_OK;
}

static erase_status_t add_dense(erase_network_t *net, int b, layer_t *l, const char *path, int in,
                                int out, int relu)
{
    char name[48];
    l->kind = LAYER_DENSE;
    l->in = in;
    l->out = out;
    l->relu = relu;
    snprintf(name, sizeof name, "%s/weight", path);
    ERASE_CHECK(add_param(net, b, name, ERASE_PARAM_DENSE, out, in, 2, &l->w));
    snprintf(name, sizeof name, "%s/bias", path);
    ERASE_CHECK(add_param(net, b, name, ERASE_PARAM_DENSE, out, 1, 1, &l->b));
    return ERASE_OK;
}

static erase_status_t build_ctr(erase_network_t *net)
{
    const erase_model_config_t *c = &net->cfg;
    int dim = c->ctr.embedding_dim;
    int nvec = ERASE_CTR_FIELDS + 1;
    int inter;
    if (!erase_add_int(dim, nvec * (nvec - 1) / 2, &inter))
        return ERASE_ERROR(ERASE_ERR_INVALID, "ctr: the interaction's width, embedding_dim %d + %d "
                           "pairwise dots, is more than %d", dim, nvec * (nvec - 1) / 2, INT_MAX);
    net->nblocks = 1 + c->ctr.subarchs;
    memcpy(net->table_rows, c->ctr.table_rows, sizeof net->table_rows);

    block_t *in = &net->blocks[0];
    snprintf(in->name, sizeof in->name, "input");
    in->in_width = ERASE_CTR_DENSE;
    in->first_param = net->nparams;
    int width = ERASE_CTR_DENSE;
    for (int i = 0; i < c->ctr.bottom_layers; i++) {
        char path[32];
        snprintf(path, sizeof path, "bottom/%d", i);
        ERASE_CHECK(add_dense(net, 0, &in->layers[in->nlayers++], path, width, c->ctr.bottom_mlp[i], 1));
        width = c->ctr.bottom_mlp[i];
    }
    if (width != dim)
        return ERASE_ERROR(ERASE_ERR_INVALID, "ctr: bottom MLP ends at width %d, embedding_dim is %d", width, dim);
    layer_t *x = &in->layers[in->nlayers++];
    x->kind = LAYER_INTERACT;
    x->in = dim;
    x->out = inter;
    x->dim = dim;
    for (int f = 0; f < ERASE_CTR_FIELDS; f++) {
        char path[32];
        int idx;
        snprintf(path, sizeof path, "emb/%d", f);
        ERASE_CHECK(add_param(net, 0, path, ERASE_PARAM_EMBEDDING, c->ctr.table_rows[f], dim, 2, &idx));
        if (f == 0)
            x->table0 = idx;
    }
    ERASE_CHECK(add_dense(net, 0, &in->head, "head", inter, 1, 0));
    in->nparams = net->nparams - in->first_param;

    width = inter;
    for (int k = 1; k <= c->ctr.subarchs; k++) {
        block_t *blk = &net->blocks[k];
        snprintf(blk->name, sizeof blk->name, "sub%d", k);
        blk->in_width = width;
        blk->first_param = net->nparams;
        int w = c->ctr.subarch_width;
        ERASE_CHECK(add_dense(net, k, &blk->layers[blk->nlayers++], "fc0", width, w, 1));
        ERASE_CHECK(add_dense(net, k, &blk->layers[blk->nlayers++], "fc1", w, w, 1));
        ERASE_CHECK(add_dense(net, k, &blk->head, "head", w, 1, 0));
        blk->nparams = net->nparams - blk->first_param;
        width = w;
    }
    return ERASE_OK;
}

static erase_status_t build_mlp(erase_network_t *net)
{
    const erase_model_config_t *c = &net->cfg;
    net->nblocks = c->mlp.hidden_layers;
    int width = c->mlp.inputs;
    for (int k = 0; k < net->nblocks; k++) {
        block_t *blk = &net->blocks[k];
        snprintf(blk->name, sizeof blk->name, "layer%d", k);
        blk->in_width = width;
        blk->first_param = net->nparams;
        int h = c->mlp.hidden[k];
        ERASE_CHECK(add_dense(net, k, &blk->layers[blk->nlayers++], "fc", width, h, 1));
        ERASE_CHECK(add_dense(net, k, &blk->head, "head", h, c->mlp.classes, 0));
        blk->nparams = net->nparams - blk->first_param;
        width = h;
    }
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

/* Initialise a parameter from its own random stream (docs/models.md): the
 * values are drawn into a host buffer, in element order, and copied to the
 * device in one blocking copy (device memory is not host memory on every
 * backend). Errors: ERASE_ERR_NOMEM, a failed copy. */
static erase_status_t init_param(const erase_network_t *net, erase_param_t *p, int64_t fan_in)
{
    uint64_t rng = param_seed(net->cfg.seed, p->name);
    float bound = p->kind == ERASE_PARAM_EMBEDDING ? (float)sqrt(1.0 / (double)p->rows)
                                                   : (float)(1.0 / sqrt((double)fan_in));
    size_t n = (size_t)erase_param_numel(p), bytes;
    float *host = erase_bytes(sizeof(float), p->rows, p->cols, &bytes) ? malloc(bytes ? bytes : 1) : NULL;
    if (!host)
        return ERASE_ERROR(ERASE_ERR_NOMEM, "network: no memory to initialise %s (%zu values)", p->name, n);
    for (size_t i = 0; i < n; i++)
        host[i] = erase_rng_uniform(&rng, -bound, bound);
    erase_status_t st = erase_memcpy_sync(net->dev, p->value, host, sizeof(float) * n);
    free(host);
    ERASE_CHECK(st);
    return ERASE_OK;
}

/* Device memory for a x b elements of `elem` bytes; a size that does not
 * fit a size_t is ERASE_ERR_INVALID saying so (not a wrapped, small
 * allocation). */
static erase_status_t alloc_array(erase_network_t *net, void **ptr, size_t elem, int64_t a, int64_t b)
{
    size_t bytes;
    if (!erase_bytes(elem, a, b, &bytes))
        return ERASE_ERROR(ERASE_ERR_INVALID, "network: a buffer of %lld x %lld elements of %zu bytes "
                           "is larger than memory can address (model sizes or batch %d too large)",
                           (long long)a, (long long)b, elem, net->max_batch);
    return erase_malloc(net->dev, bytes, ptr);
}

#define ALLOC(ptr, elem, a, b) ERASE_CHECK(alloc_array(net, (void **)&(ptr), (elem), (a), (b)))

static erase_status_t alloc_layer(erase_network_t *net, layer_t *l)
{
    int64_t mb = net->max_batch;
    ALLOC(l->y, sizeof(float), mb, l->out);
    ALLOC(l->dy, sizeof(float), mb, l->out);
    if (l->kind == LAYER_INTERACT) {
        ALLOC(l->emb, sizeof(float) * ERASE_CTR_FIELDS, mb, l->dim);
        ALLOC(l->demb, sizeof(float) * ERASE_CTR_FIELDS, mb, l->dim);
        ALLOC(l->counts, sizeof(int), ERASE_CTR_FIELDS, 1);
        ERASE_CHECK(erase_memset_sync(net->dev, l->counts, 0, sizeof(int) * ERASE_CTR_FIELDS));
        for (int f = 0; f < ERASE_CTR_FIELDS; f++)
            net->params[l->table0 + f].grad_count = &l->counts[f];
    } else {
        ERASE_CHECK(init_param(net, &net->params[l->w], l->in));
        ERASE_CHECK(init_param(net, &net->params[l->b], l->in));
    }
    return ERASE_OK;
}

static erase_status_t allocate(erase_network_t *net)
{
    int64_t mb = net->max_batch;
    /* one contiguous dense-gradient buffer per block: one all-reduce each */
    for (int b = 0; b < net->nblocks; b++) {
        block_t *blk = &net->blocks[b];
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
        ALLOC(p->value, sizeof(float), p->rows, p->cols);
        if (p->kind == ERASE_PARAM_DENSE) {
            /* gradient: a slice of the block's buffer */
        } else {
            ALLOC(p->grad_rows, sizeof(uint32_t), mb, 1);
            ALLOC(p->grad_values, sizeof(float), mb, p->cols);
            ERASE_CHECK(init_param(net, p, 0)); /* grad_count: set by the layer owning the table */
        }
    }
    for (int b = 0; b < net->nblocks; b++) {
        block_t *blk = &net->blocks[b];
        for (int i = 0; i < blk->nlayers; i++)
            ERASE_CHECK(alloc_layer(net, &blk->layers[i]));
        ERASE_CHECK(alloc_layer(net, &blk->head));
        if (b > 0 && !erase_network_is_cut(net, b))
            ALLOC(blk->d_in, sizeof(float), mb, blk->in_width);
    }
    net->sparse_rows = net->max_batch;
    ALLOC(net->losses, sizeof(float), net->nblocks, 1);
    ERASE_CHECK(erase_memset_sync(net->dev, net->losses, 0, sizeof(float) * (size_t)net->nblocks));
    return ERASE_OK;
}

erase_status_t erase_network_create(erase_device_t *dev, const erase_model_config_t *cfg,
                                    int max_batch, erase_network_t **out)
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
    erase_status_t st = cfg->kind == ERASE_MODEL_CTR ? build_ctr(net) : build_mlp(net);
    if (st == ERASE_OK) {
        for (int b = 0; b < net->nblocks; b++)
            net->blocks[b].weight = b == net->nblocks - 1 ? 1.0f : cfg->local_loss_weight;
        st = allocate(net);
    }
    if (st != ERASE_OK) {
        erase_error_trail(__FILE__, __LINE__);
        erase_network_destroy(net);
        return st;
    }
    *out = net;
    return ERASE_OK;
}

static void free_layer(erase_network_t *net, layer_t *l)
{
    erase_free(net->dev, l->y);
    erase_free(net->dev, l->dy);
    erase_free(net->dev, l->emb);
    erase_free(net->dev, l->demb);
    erase_free(net->dev, l->counts);
}

void erase_network_destroy(erase_network_t *net)
{
    if (!net)
        return;
    for (int i = 0; i < net->nparams; i++) {
        erase_param_t *p = &net->params[i];
        erase_free(net->dev, p->value);
        erase_free(net->dev, p->grad_rows);
        erase_free(net->dev, p->grad_values);
        erase_free(net->dev, p->state[0]);
        erase_free(net->dev, p->state[1]);
    }
    for (int b = 0; b < net->nblocks; b++) {
        for (int i = 0; i < net->blocks[b].nlayers; i++)
            free_layer(net, &net->blocks[b].layers[i]);
        free_layer(net, &net->blocks[b].head);
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
    const block_t *blk = &net->blocks[b];
    const layer_t *last = &blk->layers[blk->nlayers - 1];
    *width = last->out;
    return last->y;
}

const float *erase_network_head_output(const erase_network_t *net, int b, int *width)
{
    *width = net->blocks[b].head.out;
    return net->blocks[b].head.y;
}

/* ---- forward and backward ------------------------------------------------ */

/* The input block b reads: the data for block 0, else block b-1's body. */
static const float *block_input(const erase_network_t *net, int b, const erase_batch_t *batch)
{
    if (b > 0) {
        int w;
        return erase_network_body_output(net, b - 1, &w);
    }
    return net->cfg.kind == ERASE_MODEL_CTR ? batch->dense : batch->features;
}

static erase_status_t layer_forward(erase_network_t *net, layer_t *l, erase_stream_t *s, int n,
                                    const float *x, const erase_batch_t *batch)
{
    if (l->kind == LAYER_DENSE) {
        const erase_param_t *w = &net->params[l->w], *b = &net->params[l->b];
        ERASE_CHECK(erase_linear_forward(s, n, l->in, l->out, x, w->value, b->value, l->y));
        if (l->relu)
            ERASE_CHECK(erase_relu_forward(s, (size_t)n * l->out, l->y, l->y));
        return ERASE_OK;
    }
    const float *tables[ERASE_CTR_FIELDS];
    for (int f = 0; f < ERASE_CTR_FIELDS; f++)
        tables[f] = net->params[l->table0 + f].value;
    ERASE_CHECK(erase_embedding_forward(s, n, ERASE_CTR_FIELDS, l->dim, net->table_rows,
                                        batch->sparse, tables, l->emb));
    ERASE_CHECK(erase_interaction_forward(s, n, ERASE_CTR_FIELDS + 1, l->dim, x, l->emb, l->y));
    return ERASE_OK;
}

/* Backward of one layer from l->dy (consumed in place); dx may be NULL. */
static erase_status_t layer_backward(erase_network_t *net, layer_t *l, erase_stream_t *s, int n,
                                     const float *x, float *dx, const erase_batch_t *batch)
{
    if (l->kind == LAYER_DENSE) {
        erase_param_t *w = &net->params[l->w], *b = &net->params[l->b];
        if (l->relu)
            ERASE_CHECK(erase_relu_backward(s, (size_t)n * l->out, l->y, l->dy, l->dy));
        ERASE_CHECK(erase_linear_backward(s, n, l->in, l->out, x, w->value, l->dy, dx, w->grad, b->grad));
        return ERASE_OK;
    }
    ERASE_CHECK(erase_interaction_backward(s, n, ERASE_CTR_FIELDS + 1, l->dim, x, l->emb, l->dy,
                                           dx, l->demb));
    uint32_t *rows[ERASE_CTR_FIELDS];
    float *values[ERASE_CTR_FIELDS];
    for (int f = 0; f < ERASE_CTR_FIELDS; f++) {
        rows[f] = net->params[l->table0 + f].grad_rows;
        values[f] = net->params[l->table0 + f].grad_values;
    }
    ERASE_CHECK(erase_embedding_backward(s, n, ERASE_CTR_FIELDS, l->dim, net->table_rows,
                                         batch->sparse, l->demb, rows, values, l->counts));
    return ERASE_OK;
}

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
    block_t *blk = &net->blocks[b];
    int n = batch->size;
    const float *x = block_input(net, b, batch);
    for (int i = 0; i < blk->nlayers; i++) {
        ERASE_CHECK(layer_forward(net, &blk->layers[i], s, n, x, batch));
        x = blk->layers[i].y;
    }
    ERASE_CHECK(layer_forward(net, &blk->head, s, n, x, batch));
    if (net->cfg.kind == ERASE_MODEL_CTR)
        ERASE_CHECK(erase_bce_with_logits(s, n, blk->head.y, batch->label, blk->weight,
                                          &net->losses[b], blk->head.dy));
    else
        ERASE_CHECK(erase_softmax_xent(s, n, blk->head.out, blk->head.y, batch->classes,
                                       blk->weight, &net->losses[b], blk->head.dy));
    return ERASE_OK;
}

erase_status_t erase_network_forward_predict(erase_network_t *net, erase_stream_t *s, const erase_batch_t *batch)
{
    for (int b = 0; b < net->nblocks; b++) {
        ERASE_CHECK(check_batch(net, b, batch));
        block_t *blk = &net->blocks[b];
        const float *x = block_input(net, b, batch);
        for (int i = 0; i < blk->nlayers; i++) {
            ERASE_CHECK(layer_forward(net, &blk->layers[i], s, batch->size, x, batch));
            x = blk->layers[i].y;
        }
        if (b == net->nblocks - 1)
            ERASE_CHECK(layer_forward(net, &blk->head, s, batch->size, x, batch));
    }
    return ERASE_OK;
}

erase_status_t erase_network_backward_block(erase_network_t *net, int b, erase_stream_t *s,
                                            const erase_batch_t *batch)
{
    ERASE_CHECK(check_batch(net, b, batch));
    block_t *blk = &net->blocks[b];
    int n = batch->size;
    layer_t *last = &blk->layers[blk->nlayers - 1];
    /* head: its input gradient becomes the body output's gradient */
    ERASE_CHECK(layer_backward(net, &blk->head, s, n, last->y, last->dy, batch));
    if (b + 1 < net->nblocks && !erase_network_is_cut(net, b + 1))
        ERASE_CHECK(erase_axpy(s, (size_t)n * last->out, 1.0f, net->blocks[b + 1].d_in, last->dy));
    for (int i = blk->nlayers - 1; i >= 0; i--) {
        layer_t *l = &blk->layers[i];
        const float *x = i > 0 ? blk->layers[i - 1].y : block_input(net, b, batch);
        float *dx = i > 0 ? blk->layers[i - 1].dy : blk->d_in; /* NULL at a cut or block 0 */
        ERASE_CHECK(layer_backward(net, l, s, n, x, dx, batch));
    }
    return ERASE_OK;
}
