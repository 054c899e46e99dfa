/*
 * The ctr and mlp models (docs/models.md) behind the network core
 * (lib/nn/network_impl.h): every block is a chain of layers (Linear with
 * or without ReLU; ctr's input block also the embedding lookup, pooled
 * over a field's multi-hot ids as the model's hotness and pooling say,
 * and the pairwise-dot interaction) and a head, with a BCE (ctr) or softmax
 * cross-entropy (mlp) loss on the head's output. The embedding lookup
 * (erase_network_embedding_*) is also dcn's (dcn.c).
 */
#include "lib/nn/network_impl.h"

#include "lib/core/checked.h"
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
    int nlayers;
    layer_t layers[ERASE_MAX_LAYERS + 1];
    layer_t head;
} chain_block_t;

typedef struct {
    chain_block_t blocks[ERASE_MAX_BLOCKS];
} chain_t;

static chain_t *chain_of(const erase_network_t *net) { return net->model; }

/* ---- construction ------------------------------------------------------- */

/* A linear layer: "<path>/weight" [out, in] (a hidden matrix, or a head's
 * weight when `head`) and "<path>/bias" [out]. */
static erase_status_t add_dense(erase_network_t *net, int b, layer_t *l, const char *path, int in,
                                int out, int relu, int head)
{
    char name[48];
    l->kind = LAYER_DENSE;
    l->in = in;
    l->out = out;
    l->relu = relu;
    snprintf(name, sizeof name, "%s/weight", path);
    ERASE_CHECK(erase_network_add_param(net, b, name, ERASE_PARAM_DENSE,
                                        head ? ERASE_ROLE_HEAD : ERASE_ROLE_HIDDEN, out, in, 2, &l->w));
    snprintf(name, sizeof name, "%s/bias", path);
    ERASE_CHECK(erase_network_add_param(net, b, name, ERASE_PARAM_DENSE, ERASE_ROLE_VECTOR, out, 1, 1, &l->b));
    return ERASE_OK;
}

static erase_status_t build_ctr(erase_network_t *net, chain_t *ch)
{
    const erase_model_config_t *c = &net->cfg;
    int dim = c->ctr.embedding_dim;
    int nvec = ERASE_CTR_FIELDS + 1;
    int inter;
    if (!erase_add_int(dim, nvec * (nvec - 1) / 2, &inter))
        return ERASE_ERROR(ERASE_ERR_INVALID, "ctr: the interaction's width, embedding_dim %d + %d "
                           "pairwise dots, is more than %d", dim, nvec * (nvec - 1) / 2, INT_MAX);
    net->nblocks = 1 + c->ctr.subarchs;

    erase_block_t *in = &net->blocks[0];
    chain_block_t *cin = &ch->blocks[0];
    snprintf(in->name, sizeof in->name, "input");
    in->in_width = ERASE_CTR_DENSE;
    in->first_param = net->nparams;
    int width = ERASE_CTR_DENSE;
    for (int i = 0; i < c->ctr.bottom_layers; i++) {
        char path[32];
        snprintf(path, sizeof path, "bottom/%d", i);
        ERASE_CHECK(add_dense(net, 0, &cin->layers[cin->nlayers++], path, width, c->ctr.bottom_mlp[i], 1, 0));
        width = c->ctr.bottom_mlp[i];
    }
    if (width != dim)
        return ERASE_ERROR(ERASE_ERR_INVALID, "ctr: bottom MLP ends at width %d, embedding_dim is %d", width, dim);
    layer_t *x = &cin->layers[cin->nlayers++];
    x->kind = LAYER_INTERACT;
    x->in = dim;
    x->out = inter;
    x->dim = dim;
    ERASE_CHECK(erase_network_embedding_add(net, 0, dim, &x->table0));
    ERASE_CHECK(add_dense(net, 0, &cin->head, "head", inter, 1, 0, 1));
    in->nparams = net->nparams - in->first_param;

    width = inter;
    for (int k = 1; k <= c->ctr.subarchs; k++) {
        erase_block_t *blk = &net->blocks[k];
        chain_block_t *cb = &ch->blocks[k];
        snprintf(blk->name, sizeof blk->name, "sub%d", k);
        blk->in_width = width;
        blk->first_param = net->nparams;
        int w = c->ctr.subarch_width;
        ERASE_CHECK(add_dense(net, k, &cb->layers[cb->nlayers++], "fc0", width, w, 1, 0));
        ERASE_CHECK(add_dense(net, k, &cb->layers[cb->nlayers++], "fc1", w, w, 1, 0));
        ERASE_CHECK(add_dense(net, k, &cb->head, "head", w, 1, 0, 1));
        blk->nparams = net->nparams - blk->first_param;
        width = w;
    }
    return ERASE_OK;
}

static erase_status_t build_mlp(erase_network_t *net, chain_t *ch)
{
    const erase_model_config_t *c = &net->cfg;
    net->nblocks = c->mlp.hidden_layers;
    int width = c->mlp.inputs;
    for (int k = 0; k < net->nblocks; k++) {
        erase_block_t *blk = &net->blocks[k];
        chain_block_t *cb = &ch->blocks[k];
        snprintf(blk->name, sizeof blk->name, "layer%d", k);
        blk->in_width = width;
        blk->first_param = net->nparams;
        int h = c->mlp.hidden[k];
        ERASE_CHECK(add_dense(net, k, &cb->layers[cb->nlayers++], "fc", width, h, 1, 0));
        ERASE_CHECK(add_dense(net, k, &cb->head, "head", h, c->mlp.classes, 0, 1));
        blk->nparams = net->nparams - blk->first_param;
        width = h;
    }
    return ERASE_OK;
}

static erase_status_t chain_build(erase_network_t *net)
{
    chain_t *ch = calloc(1, sizeof *ch);
    if (!ch)
        return ERASE_ERROR(ERASE_ERR_NOMEM, "network: no memory");
    net->model = ch;
    return net->cfg.kind == ERASE_MODEL_CTR ? build_ctr(net, ch) : build_mlp(net, ch);
}

erase_status_t erase_network_embedding_add(erase_network_t *net, int block, int dim, int *table0)
{
    for (int f = 0; f < ERASE_CTR_FIELDS; f++) {
        char path[32];
        int idx;
        snprintf(path, sizeof path, "emb/%d", f);
        ERASE_CHECK(erase_network_add_param(net, block, path, ERASE_PARAM_EMBEDDING, ERASE_ROLE_EMBEDDING,
                                            net->cfg.ctr.table_rows[f], dim, 2, &idx));
        if (f == 0)
            *table0 = idx;
    }
    return ERASE_OK;
}

erase_status_t erase_network_embedding_init(erase_network_t *net, int table0, int *counts)
{
    ERASE_CHECK(erase_memset_sync(net->dev, counts, 0, sizeof(int) * ERASE_CTR_FIELDS));
    for (int f = 0; f < ERASE_CTR_FIELDS; f++) {
        erase_param_t *t = &net->params[table0 + f];
        t->grad_count = &counts[f];
        ERASE_CHECK(erase_network_init_param(net, t, ERASE_INIT_UNIFORM, sqrt(1.0 / (double)t->rows)));
    }
    return ERASE_OK;
}

/* Activations of a layer and its parameters' initial values (docs/models.md):
 * Linear weights and biases uniform in +-1/sqrt(in), embedding rows in
 * +-sqrt(1/rows). */
static erase_status_t alloc_layer(erase_network_t *net, layer_t *l)
{
    int64_t mb = net->max_batch;
    ERASE_NET_ALLOC(net, l->y, sizeof(float), mb, l->out);
    ERASE_NET_ALLOC(net, l->dy, sizeof(float), mb, l->out);
    if (l->kind == LAYER_INTERACT) {
        ERASE_NET_ALLOC(net, l->emb, sizeof(float) * ERASE_CTR_FIELDS, mb, l->dim);
        ERASE_NET_ALLOC(net, l->demb, sizeof(float) * ERASE_CTR_FIELDS, mb, l->dim);
        ERASE_NET_ALLOC(net, l->counts, sizeof(int), ERASE_CTR_FIELDS, 1);
        ERASE_CHECK(erase_network_embedding_init(net, l->table0, l->counts));
    } else {
        double bound = 1.0 / sqrt((double)l->in);
        ERASE_CHECK(erase_network_init_param(net, &net->params[l->w], ERASE_INIT_UNIFORM, bound));
        ERASE_CHECK(erase_network_init_param(net, &net->params[l->b], ERASE_INIT_UNIFORM, bound));
    }
    return ERASE_OK;
}

static erase_status_t chain_allocate(erase_network_t *net)
{
    chain_t *ch = chain_of(net);
    for (int b = 0; b < net->nblocks; b++) {
        chain_block_t *cb = &ch->blocks[b];
        for (int i = 0; i < cb->nlayers; i++)
            ERASE_CHECK(alloc_layer(net, &cb->layers[i]));
        ERASE_CHECK(alloc_layer(net, &cb->head));
    }
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

static void chain_destroy(erase_network_t *net)
{
    chain_t *ch = chain_of(net);
    for (int b = 0; b < net->nblocks; b++) {
        for (int i = 0; i < ch->blocks[b].nlayers; i++)
            free_layer(net, &ch->blocks[b].layers[i]);
        free_layer(net, &ch->blocks[b].head);
    }
    free(ch);
}

static const float *chain_body_output(const erase_network_t *net, int b, int *width)
{
    const chain_block_t *cb = &chain_of(net)->blocks[b];
    const layer_t *last = &cb->layers[cb->nlayers - 1];
    *width = last->out;
    return last->y;
}

static const float *chain_head_output(const erase_network_t *net, int b, int *width)
{
    const chain_block_t *cb = &chain_of(net)->blocks[b];
    *width = cb->head.out;
    return cb->head.y;
}

/* ---- forward and backward ------------------------------------------------ */

/* The input block b reads: the data for block 0, else block b-1's body. */
static const float *block_input(const erase_network_t *net, int b, const erase_batch_t *batch)
{
    if (b > 0) {
        int w;
        return chain_body_output(net, b - 1, &w);
    }
    return net->cfg.kind == ERASE_MODEL_CTR ? batch->dense : batch->features;
}

/* ---- the embedding lookup (ctr's and dcn's) -------------------------------- */

erase_status_t erase_network_embedding_forward(erase_network_t *net, erase_stream_t *s, int n, int table0, int dim,
                                               const erase_batch_t *batch, float *emb)
{
    if (net->emb_block >= 0) { /* the lookup is block 0's */
        ERASE_CHECK(net->emb_provider.forward(net->emb_ctx, s, n, batch->sparse, batch->sparse_len, emb));
    } else {
        const float *tables[ERASE_CTR_FIELDS];
        erase_bag_t bag = erase_network_bag(net, batch->sparse_len);
        for (int f = 0; f < ERASE_CTR_FIELDS; f++)
            tables[f] = net->params[table0 + f].value;
        ERASE_CHECK(erase_embedding_bag_forward(s, n, ERASE_CTR_FIELDS, dim, net->cfg.ctr.table_rows, &bag,
                                                batch->sparse, tables, emb));
    }
    return ERASE_OK;
}

erase_status_t erase_network_embedding_backward(erase_network_t *net, erase_stream_t *s, int n, int table0, int dim,
                                                const erase_batch_t *batch, const float *demb, int *counts)
{
    uint32_t *rows[ERASE_CTR_FIELDS];
    float *values[ERASE_CTR_FIELDS];
    for (int f = 0; f < ERASE_CTR_FIELDS; f++) {
        rows[f] = net->params[table0 + f].grad_rows;
        values[f] = net->params[table0 + f].grad_values;
    }
    erase_bag_t bag = erase_network_bag(net, batch->sparse_len);
    ERASE_CHECK(erase_embedding_bag_backward(s, n, ERASE_CTR_FIELDS, dim, net->cfg.ctr.table_rows, &bag,
                                             batch->sparse, demb, rows, values, counts));
    return ERASE_OK;
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
    ERASE_CHECK(erase_network_embedding_forward(net, s, n, l->table0, l->dim, batch, l->emb));
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
    ERASE_CHECK(erase_network_embedding_backward(net, s, n, l->table0, l->dim, batch, l->demb, l->counts));
    return ERASE_OK;
}

/* Block b's body (its layers) from its input. */
static erase_status_t body_forward(erase_network_t *net, int b, erase_stream_t *s, const erase_batch_t *batch)
{
    chain_block_t *cb = &chain_of(net)->blocks[b];
    const float *x = block_input(net, b, batch);
    for (int i = 0; i < cb->nlayers; i++) {
        ERASE_CHECK(layer_forward(net, &cb->layers[i], s, batch->size, x, batch));
        x = cb->layers[i].y;
    }
    return ERASE_OK;
}

static erase_status_t chain_forward_block(erase_network_t *net, int b, erase_stream_t *s,
                                          const erase_batch_t *batch)
{
    chain_block_t *cb = &chain_of(net)->blocks[b];
    int n = batch->size;
    ERASE_CHECK(body_forward(net, b, s, batch));
    ERASE_CHECK(layer_forward(net, &cb->head, s, n, cb->layers[cb->nlayers - 1].y, batch));
    if (net->cfg.kind == ERASE_MODEL_CTR)
        ERASE_CHECK(erase_bce_with_logits(s, n, cb->head.y, batch->label, net->blocks[b].weight,
                                          &net->losses[b], cb->head.dy));
    else
        ERASE_CHECK(erase_softmax_xent(s, n, cb->head.out, cb->head.y, batch->classes,
                                       net->blocks[b].weight, &net->losses[b], cb->head.dy));
    return ERASE_OK;
}

static erase_status_t chain_forward_predict(erase_network_t *net, erase_stream_t *s, const erase_batch_t *batch)
{
    for (int b = 0; b < net->nblocks; b++)
        ERASE_CHECK(body_forward(net, b, s, batch));
    chain_block_t *last = &chain_of(net)->blocks[net->nblocks - 1];
    ERASE_CHECK(layer_forward(net, &last->head, s, batch->size, last->layers[last->nlayers - 1].y, batch));
    return ERASE_OK;
}

static erase_status_t chain_backward_block(erase_network_t *net, int b, erase_stream_t *s,
                                           const erase_batch_t *batch)
{
    chain_block_t *cb = &chain_of(net)->blocks[b];
    int n = batch->size;
    layer_t *last = &cb->layers[cb->nlayers - 1];
    /* head: its input gradient becomes the body output's gradient */
    ERASE_CHECK(layer_backward(net, &cb->head, s, n, last->y, last->dy, batch));
    if (b + 1 < net->nblocks && !erase_network_is_cut(net, b + 1))
        ERASE_CHECK(erase_axpy(s, (size_t)n * last->out, 1.0f, net->blocks[b + 1].d_in, last->dy));
    for (int i = cb->nlayers - 1; i >= 0; i--) {
        layer_t *l = &cb->layers[i];
        const float *x = i > 0 ? cb->layers[i - 1].y : block_input(net, b, batch);
        float *dx = i > 0 ? cb->layers[i - 1].dy : net->blocks[b].d_in; /* NULL at a cut or block 0 */
        ERASE_CHECK(layer_backward(net, l, s, n, x, dx, batch));
    }
    return ERASE_OK;
}

const erase_model_impl_t erase_model_chain = {
    .build = chain_build,
    .allocate = chain_allocate,
    .forward_block = chain_forward_block,
    .backward_block = chain_backward_block,
    .forward_predict = chain_forward_predict,
    .body_output = chain_body_output,
    .head_output = chain_head_output,
    .destroy = chain_destroy,
};
