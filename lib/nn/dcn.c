/*
 * The dcn model (docs/models.md): MLPerf's DLRM-DCNv2 behind the network
 * core (lib/nn/network_impl.h), as TorchRec composes it in
 * torchrec/models/dlrm.py's DLRM_DCN (DenseArch, SparseArch,
 * InteractionDCNArch over torchrec.modules.crossnet.LowRankCrossNet,
 * OverArch) with the sizes of mlcommons/training
 * recommendation_v2/torchrec_dlrm (embedding_dim 128, dense arch
 * 512-256-128, 3 cross layers of rank 512, over arch 1024-1024-512-256-1).
 *
 * Blocks, in order (a cut may sit at any boundary between them):
 *   input     dense arch (13 -> bottom_mlp, ReLU after every layer), the 26
 *             embedding lookups (ctr's layer: erase_network_embedding_*),
 *             x0 = concat(dense, emb_0 .. emb_25), [n, W] with W = 27 D;
 *   crossC    one DCNv2 cross layer (C = 0 .. cross_layers-1):
 *             x_{C+1} = x0 * (W_C (V_C x_C) + b_C) + x_C (full rank:
 *             x0 * (K_C x_C + b_C) + x_C); its body output is the pair
 *             (x0, x_{C+1}) stored [2][n][W] (x0's rows, then x_{C+1}'s),
 *             except the last cross layer's, x_L alone [n, W]: every cross
 *             layer reads x0, so x0 travels with x_C and a cut detaches both;
 *   overJ     one hidden layer of the over arch (J = 0 .. top_layers-2,
 *             Linear + ReLU); the last block's head is the over arch's
 *             final Linear(top_mlp[-2], 1), the main logit.
 * A block before a cut has a local head Linear(width, 1) on its x_C / y
 * (BCE with logits, weight local_loss_weight); a block whose next boundary
 * is attached has none (headless), so the model without cuts is exactly
 * DLRM_DCN. Parameter names are TorchRec's state-dict names with "/" for
 * "." inside "<block>/" (the embedding tables are ctr's "input/emb/F", which
 * export renames), so export is a renaming table.
 */
#include "lib/nn/network_impl.h"

#include "lib/core/checked.h"
#include "lib/ops/ops.h"

#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef enum { DCN_INPUT, DCN_CROSS, DCN_OVER } dcn_kind_t;

/* Linear(in, out), ReLU after it when `relu`. */
typedef struct {
    int in, out, relu;
    int w, b;               /* parameter indices */
    float *y, *dy;          /* [max_batch, out]: output and the gradient at it */
} dense_t;

typedef struct {
    dcn_kind_t kind;
    int ndense;
    dense_t dense[ERASE_MAX_LAYERS]; /* input: the dense arch; over: its one layer */
    int has_head;
    dense_t head;           /* local head, or the over arch's last Linear */
    /* input */
    int table0;             /* first embedding table parameter */
    float *emb, *demb;      /* [max_batch, 26, D] */
    int *counts;            /* [26] rows of each table's sparse gradient */
    float *x0, *dx0;        /* [max_batch, W]: x0 and the gradient at it */
    /* cross */
    int index;              /* C */
    int first, pair;        /* reads x0 alone (C = 0); writes the pair (C < L-1) */
    int kw, kv, kb;         /* W_kernels (full rank: kernels), V_kernels (-1), bias */
    float *v, *dv;          /* [max_batch, rank] */
    float *u, *du;          /* [max_batch, W] */
    float *out;             /* [max_batch, 2W] (pair) or [max_batch, W] */
    float *dout;            /* [max_batch, W]: the gradient at x_{C+1} (with a head) */
    float *dx0_first;       /* [max_batch, W]: C = 0's x0 gradient, added to d_in */
} dcn_block_t;

typedef struct {
    int dim, width, rank;   /* D, W = 27 D, r (0: full rank) */
    dcn_block_t blocks[ERASE_MAX_BLOCKS];
} dcn_t;

static dcn_t *dcn_of(const erase_network_t *net) { return net->model; }

/* ---- construction ------------------------------------------------------- */

/* "<path>/weight" [out, in] and "<path>/bias" [out], as torch.nn.Linear. */
static erase_status_t add_dense(erase_network_t *net, int b, dense_t *l, const char *path, int in, int out, int relu,
                                int head)
{
    char name[ERASE_PARAM_NAME_MAX];
    l->in = in;
    l->out = out;
    l->relu = relu;
    snprintf(name, sizeof name, "%s/weight", path);
    ERASE_CHECK(erase_network_add_param(net, b, name, ERASE_PARAM_DENSE, head ? ERASE_ROLE_HEAD : ERASE_ROLE_HIDDEN,
                                        out, in, 2, &l->w));
    snprintf(name, sizeof name, "%s/bias", path);
    ERASE_CHECK(erase_network_add_param(net, b, name, ERASE_PARAM_DENSE, ERASE_ROLE_VECTOR, out, 1, 1, &l->b));
    return ERASE_OK;
}

/* Block b's head when it has one: the over arch's last Linear for the last
 * block, else a local "head". */
static erase_status_t add_head(erase_network_t *net, int b, dcn_block_t *k, int in)
{
    const erase_model_config_t *c = &net->cfg;
    int last = b == net->nblocks - 1;
    k->has_head = last || erase_network_is_cut(net, b + 1);
    net->blocks[b].headless = !k->has_head;
    if (!k->has_head)
        return ERASE_OK;
    return add_dense(net, b, &k->head, last ? "over_arch/model/1" : "head", in, c->dcn.top_mlp[c->dcn.top_layers - 1],
                     0, 1);
}

static erase_status_t build_input(erase_network_t *net, dcn_t *m)
{
    const erase_model_config_t *c = &net->cfg;
    dcn_block_t *k = &m->blocks[0];
    erase_block_t *blk = &net->blocks[0];
    snprintf(blk->name, sizeof blk->name, "input");
    blk->in_width = ERASE_CTR_DENSE;
    blk->first_param = net->nparams;
    k->kind = DCN_INPUT;
    int width = ERASE_CTR_DENSE;
    for (int i = 0; i < c->ctr.bottom_layers; i++) {
        char path[48];
        snprintf(path, sizeof path, "dense_arch/model/_mlp/%d/_linear", i);
        ERASE_CHECK(add_dense(net, 0, &k->dense[k->ndense++], path, width, c->ctr.bottom_mlp[i], 1, 0));
        width = c->ctr.bottom_mlp[i];
    }
    if (width != m->dim)
        return ERASE_ERROR(ERASE_ERR_INVALID, "dcn: the dense arch ends at width %d, embedding_dim is %d", width,
                           m->dim);
    ERASE_CHECK(erase_network_embedding_add(net, 0, m->dim, &k->table0));
    ERASE_CHECK(add_head(net, 0, k, m->width));
    blk->nparams = net->nparams - blk->first_param;
    return ERASE_OK;
}

/* Cross layer C: TorchRec's LowRankCrossNet parameters W_kernels.C [W, r],
 * V_kernels.C [r, W] and bias.C [W] (CrossNet: kernels.C [W, W], bias.C
 * [W, 1]). */
static erase_status_t build_cross(erase_network_t *net, dcn_t *m, int b, int C)
{
    const erase_model_config_t *c = &net->cfg;
    dcn_block_t *k = &m->blocks[b];
    erase_block_t *blk = &net->blocks[b];
    char name[ERASE_PARAM_NAME_MAX];
    snprintf(blk->name, sizeof blk->name, "cross%d", C);
    k->kind = DCN_CROSS;
    k->index = C;
    k->first = C == 0;
    k->pair = C < c->dcn.cross_layers - 1;
    blk->in_width = k->first ? m->width : 2 * m->width;
    blk->first_param = net->nparams;
    k->kv = -1;
    if (m->rank > 0) {
        snprintf(name, sizeof name, "inter_arch/crossnet/W_kernels/%d", C);
        ERASE_CHECK(erase_network_add_param(net, b, name, ERASE_PARAM_DENSE, ERASE_ROLE_HIDDEN, m->width, m->rank, 2,
                                            &k->kw));
        snprintf(name, sizeof name, "inter_arch/crossnet/V_kernels/%d", C);
        ERASE_CHECK(erase_network_add_param(net, b, name, ERASE_PARAM_DENSE, ERASE_ROLE_HIDDEN, m->rank, m->width, 2,
                                            &k->kv));
    } else {
        snprintf(name, sizeof name, "inter_arch/crossnet/kernels/%d", C);
        ERASE_CHECK(erase_network_add_param(net, b, name, ERASE_PARAM_DENSE, ERASE_ROLE_HIDDEN, m->width, m->width, 2,
                                            &k->kw));
    }
    /* TorchRec 1.9's shapes: LowRankCrossNet's bias [W], CrossNet's [W, 1] */
    snprintf(name, sizeof name, "inter_arch/crossnet/bias/%d", C);
    ERASE_CHECK(erase_network_add_param(net, b, name, ERASE_PARAM_DENSE, ERASE_ROLE_VECTOR, m->width, 1,
                                        m->rank > 0 ? 1 : 2, &k->kb));
    ERASE_CHECK(add_head(net, b, k, m->width));
    blk->nparams = net->nparams - blk->first_param;
    return ERASE_OK;
}

/* Over arch layer J: TorchRec's over_arch.model.0._mlp.J._linear. */
static erase_status_t build_over(erase_network_t *net, dcn_t *m, int b, int J)
{
    const erase_model_config_t *c = &net->cfg;
    dcn_block_t *k = &m->blocks[b];
    erase_block_t *blk = &net->blocks[b];
    char path[48];
    snprintf(blk->name, sizeof blk->name, "over%d", J);
    k->kind = DCN_OVER;
    blk->in_width = J == 0 ? m->width : c->dcn.top_mlp[J - 1];
    blk->first_param = net->nparams;
    snprintf(path, sizeof path, "over_arch/model/0/_mlp/%d/_linear", J);
    ERASE_CHECK(add_dense(net, b, &k->dense[k->ndense++], path, blk->in_width, c->dcn.top_mlp[J], 1, 0));
    ERASE_CHECK(add_head(net, b, k, c->dcn.top_mlp[J]));
    blk->nparams = net->nparams - blk->first_param;
    return ERASE_OK;
}

static erase_status_t dcn_build(erase_network_t *net)
{
    const erase_model_config_t *c = &net->cfg;
    dcn_t *m = calloc(1, sizeof *m);
    if (!m)
        return ERASE_ERROR(ERASE_ERR_NOMEM, "network: no memory");
    net->model = m;
    m->dim = c->ctr.embedding_dim;
    m->rank = c->dcn.cross_rank;
    int64_t width;
    if (!erase_mul_i64(ERASE_CTR_FIELDS + 1, m->dim, &width) || width > INT_MAX / 2)
        return ERASE_ERROR(ERASE_ERR_INVALID, "dcn: the interaction's width, 27 x embedding_dim %d, is more than %d",
                           m->dim, INT_MAX / 2);
    m->width = (int)width;
    if (c->dcn.cross_layers < 1 || c->dcn.top_layers < 2)
        return ERASE_ERROR(ERASE_ERR_INVALID, "dcn: %d cross layers and %d over arch widths (at least 1 and 2)",
                           c->dcn.cross_layers, c->dcn.top_layers);
    net->nblocks = erase_model_config_blocks(c);
    ERASE_CHECK(build_input(net, m));
    for (int C = 0; C < c->dcn.cross_layers; C++)
        ERASE_CHECK(build_cross(net, m, 1 + C, C));
    for (int J = 0; J < c->dcn.top_layers - 1; J++)
        ERASE_CHECK(build_over(net, m, 1 + c->dcn.cross_layers + J, J));
    return ERASE_OK;
}

/* A Linear's buffers and torch.nn.Linear's initialisation: weight and bias
 * uniform in +-1/sqrt(in). */
static erase_status_t alloc_dense(erase_network_t *net, dense_t *l)
{
    int64_t mb = net->max_batch;
    ERASE_NET_ALLOC(net, l->y, sizeof(float), mb, l->out);
    ERASE_NET_ALLOC(net, l->dy, sizeof(float), mb, l->out);
    double bound = 1.0 / sqrt((double)l->in);
    ERASE_CHECK(erase_network_init_param(net, &net->params[l->w], ERASE_INIT_UNIFORM, bound));
    ERASE_CHECK(erase_network_init_param(net, &net->params[l->b], ERASE_INIT_UNIFORM, bound));
    return ERASE_OK;
}

/* torch.nn.init.xavier_normal_: normal with std sqrt(2 / (fan_in + fan_out)). */
static erase_status_t init_xavier_normal(erase_network_t *net, int index)
{
    erase_param_t *p = &net->params[index];
    return erase_network_init_param(net, p, ERASE_INIT_NORMAL, sqrt(2.0 / (double)(p->rows + p->cols)));
}

static erase_status_t alloc_block(erase_network_t *net, dcn_t *m, dcn_block_t *k)
{
    int64_t mb = net->max_batch, W = m->width;
    for (int i = 0; i < k->ndense; i++)
        ERASE_CHECK(alloc_dense(net, &k->dense[i]));
    if (k->has_head)
        ERASE_CHECK(alloc_dense(net, &k->head));
    if (k->kind == DCN_INPUT) {
        ERASE_NET_ALLOC(net, k->emb, sizeof(float) * ERASE_CTR_FIELDS, mb, m->dim);
        ERASE_NET_ALLOC(net, k->demb, sizeof(float) * ERASE_CTR_FIELDS, mb, m->dim);
        ERASE_NET_ALLOC(net, k->counts, sizeof(int), ERASE_CTR_FIELDS, 1);
        ERASE_NET_ALLOC(net, k->x0, sizeof(float), mb, W);
        ERASE_NET_ALLOC(net, k->dx0, sizeof(float), mb, W);
        ERASE_CHECK(erase_network_embedding_init(net, k->table0, k->counts));
    } else if (k->kind == DCN_CROSS) {
        if (m->rank > 0) {
            ERASE_NET_ALLOC(net, k->v, sizeof(float), mb, m->rank);
            ERASE_NET_ALLOC(net, k->dv, sizeof(float), mb, m->rank);
            ERASE_CHECK(init_xavier_normal(net, k->kv));
        }
        ERASE_CHECK(init_xavier_normal(net, k->kw));
        ERASE_CHECK(erase_network_init_param(net, &net->params[k->kb], ERASE_INIT_CONSTANT, 0.0));
        ERASE_NET_ALLOC(net, k->u, sizeof(float), mb, W);
        ERASE_NET_ALLOC(net, k->du, sizeof(float), mb, W);
        ERASE_NET_ALLOC(net, k->out, sizeof(float), mb, k->pair ? 2 * W : W);
        if (k->first)
            ERASE_NET_ALLOC(net, k->dx0_first, sizeof(float), mb, W);
        if (k->has_head)
            ERASE_NET_ALLOC(net, k->dout, sizeof(float), mb, W);
    }
    return ERASE_OK;
}

static erase_status_t dcn_allocate(erase_network_t *net)
{
    dcn_t *m = dcn_of(net);
    for (int b = 0; b < net->nblocks; b++)
        ERASE_CHECK(alloc_block(net, m, &m->blocks[b]));
    return ERASE_OK;
}

static void free_dense(erase_network_t *net, dense_t *l)
{
    erase_free(net->dev, l->y);
    erase_free(net->dev, l->dy);
}

static void dcn_destroy(erase_network_t *net)
{
    dcn_t *m = dcn_of(net);
    for (int b = 0; b < net->nblocks; b++) {
        dcn_block_t *k = &m->blocks[b];
        for (int i = 0; i < k->ndense; i++)
            free_dense(net, &k->dense[i]);
        free_dense(net, &k->head);
        void *bufs[] = { k->emb, k->demb, k->counts, k->x0, k->dx0, k->v, k->dv, k->u, k->du, k->out, k->dout,
                         k->dx0_first };
        for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++)
            erase_free(net->dev, bufs[i]);
    }
    free(m);
}

/* ---- queries ------------------------------------------------------------- */

static const float *dcn_body_output(const erase_network_t *net, int b, int *width)
{
    const dcn_t *m = dcn_of(net);
    const dcn_block_t *k = &m->blocks[b];
    if (k->kind == DCN_INPUT) {
        *width = m->width;
        return k->x0;
    }
    if (k->kind == DCN_CROSS) {
        *width = k->pair ? 2 * m->width : m->width;
        return k->out;
    }
    *width = k->dense[k->ndense - 1].out;
    return k->dense[k->ndense - 1].y;
}

static const float *dcn_head_output(const erase_network_t *net, int b, int *width)
{
    const dcn_block_t *k = &dcn_of(net)->blocks[b];
    *width = k->has_head ? k->head.out : 0;
    return k->has_head ? k->head.y : NULL;
}

/* What block b's head (and the next block) reads of its body: x_{C+1} for a
 * cross layer (the second half of a pair), else the whole body. */
static const float *head_input(const erase_network_t *net, int b, int n)
{
    const dcn_t *m = dcn_of(net);
    const dcn_block_t *k = &m->blocks[b];
    int w;
    const float *body = dcn_body_output(net, b, &w);
    return k->kind == DCN_CROSS && k->pair ? body + (size_t)n * m->width : body;
}

/* ---- forward ------------------------------------------------------------- */

static erase_status_t dense_forward(erase_network_t *net, dense_t *l, erase_stream_t *s, int n, const float *x)
{
    ERASE_CHECK(erase_linear_forward(s, n, l->in, l->out, x, net->params[l->w].value, net->params[l->b].value, l->y));
    if (l->relu)
        ERASE_CHECK(erase_relu_forward(s, (size_t)n * l->out, l->y, l->y));
    return ERASE_OK;
}

/* Backward of a Linear from l->dy (the gradient at its output, after the
 * ReLU: consumed in place); dx may be NULL. */
static erase_status_t dense_backward(erase_network_t *net, dense_t *l, erase_stream_t *s, int n, const float *x,
                                     float *dx)
{
    erase_param_t *w = &net->params[l->w], *b = &net->params[l->b];
    if (l->relu)
        ERASE_CHECK(erase_relu_backward(s, (size_t)n * l->out, l->y, l->dy, l->dy));
    ERASE_CHECK(erase_linear_backward(s, n, l->in, l->out, x, w->value, l->dy, dx, w->grad, b->grad));
    return ERASE_OK;
}

/* x0 and x_C of cross block b, from its input (block b-1's body). */
static void cross_inputs(const erase_network_t *net, const dcn_block_t *k, int b, int n, const float **x0,
                         const float **xl)
{
    int w;
    const float *in = dcn_body_output(net, b - 1, &w);
    *x0 = in;
    *xl = k->first ? in : in + (size_t)n * dcn_of(net)->width;
}

static erase_status_t cross_forward(erase_network_t *net, dcn_t *m, dcn_block_t *k, int b, erase_stream_t *s, int n)
{
    const float *x0, *xl;
    cross_inputs(net, k, b, n, &x0, &xl);
    const float *bias = net->params[k->kb].value;
    size_t nw = (size_t)n * m->width;
    if (m->rank > 0) {
        ERASE_CHECK(erase_linear_forward(s, n, m->width, m->rank, xl, net->params[k->kv].value, NULL, k->v));
        ERASE_CHECK(erase_linear_forward(s, n, m->rank, m->width, k->v, net->params[k->kw].value, bias, k->u));
    } else {
        ERASE_CHECK(erase_linear_forward(s, n, m->width, m->width, xl, net->params[k->kw].value, bias, k->u));
    }
    float *y = k->out;
    if (k->pair) {
        ERASE_CHECK(erase_memcpy_async(s, k->out, x0, sizeof(float) * nw));
        y = k->out + nw;
    }
    ERASE_CHECK(erase_cross_forward(s, nw, x0, k->u, xl, y));
    return ERASE_OK;
}

static erase_status_t input_forward(erase_network_t *net, dcn_t *m, dcn_block_t *k, erase_stream_t *s,
                                    const erase_batch_t *batch)
{
    int n = batch->size;
    const float *x = batch->dense;
    for (int i = 0; i < k->ndense; i++) {
        ERASE_CHECK(dense_forward(net, &k->dense[i], s, n, x));
        x = k->dense[i].y;
    }
    ERASE_CHECK(erase_network_embedding_forward(net, s, n, k->table0, m->dim, batch, k->emb));
    int widths[2] = { m->dim, ERASE_CTR_FIELDS * m->dim };
    const float *parts[2] = { x, k->emb };
    ERASE_CHECK(erase_concat_forward(s, n, 2, widths, parts, k->x0));
    return ERASE_OK;
}

/* Block b's body from its input. */
static erase_status_t body_forward(erase_network_t *net, int b, erase_stream_t *s, const erase_batch_t *batch)
{
    dcn_t *m = dcn_of(net);
    dcn_block_t *k = &m->blocks[b];
    if (k->kind == DCN_INPUT)
        return input_forward(net, m, k, s, batch);
    if (k->kind == DCN_CROSS)
        return cross_forward(net, m, k, b, s, batch->size);
    int w;
    return dense_forward(net, &k->dense[0], s, batch->size, dcn_body_output(net, b - 1, &w));
}

static erase_status_t dcn_forward_block(erase_network_t *net, int b, erase_stream_t *s, const erase_batch_t *batch)
{
    dcn_block_t *k = &dcn_of(net)->blocks[b];
    int n = batch->size;
    ERASE_CHECK(body_forward(net, b, s, batch));
    if (!k->has_head)
        return ERASE_OK;
    ERASE_CHECK(dense_forward(net, &k->head, s, n, head_input(net, b, n)));
    ERASE_CHECK(erase_bce_with_logits(s, n, k->head.y, batch->label, net->blocks[b].weight, &net->losses[b],
                                      k->head.dy));
    return ERASE_OK;
}

static erase_status_t dcn_forward_predict(erase_network_t *net, erase_stream_t *s, const erase_batch_t *batch)
{
    for (int b = 0; b < net->nblocks; b++)
        ERASE_CHECK(body_forward(net, b, s, batch));
    int last = net->nblocks - 1;
    dcn_block_t *k = &dcn_of(net)->blocks[last];
    ERASE_CHECK(dense_forward(net, &k->head, s, batch->size, head_input(net, last, batch->size)));
    return ERASE_OK;
}

/* ---- backward ------------------------------------------------------------ */

/*
 * The gradient at block b's output from its head and from block b+1 (when
 * boundary b+1 is attached): *g_out of the part the head reads (x_{C+1}, or
 * the whole body) and *g_x0 of a pair's x0 (NULL: none). With a head, it
 * is written into `own` (the head's input gradient, plus block b+1's);
 * without one, it is block b+1's d_in itself (only read).
 */
static erase_status_t output_grad(erase_network_t *net, int b, erase_stream_t *s, int n, float *own,
                                  const float **g_out, const float **g_x0)
{
    dcn_t *m = dcn_of(net);
    dcn_block_t *k = &m->blocks[b];
    int pair = k->kind == DCN_CROSS && k->pair;
    int attached = b + 1 < net->nblocks && !erase_network_is_cut(net, b + 1);
    const float *next = attached ? net->blocks[b + 1].d_in : NULL;
    size_t half = pair ? (size_t)n * m->width : 0;
    *g_x0 = next && pair ? next : NULL;
    if (!k->has_head) {
        *g_out = next + half;
        return ERASE_OK;
    }
    erase_param_t *hw = &net->params[k->head.w], *hb = &net->params[k->head.b];
    ERASE_CHECK(erase_linear_backward(s, n, k->head.in, k->head.out, head_input(net, b, n), hw->value, k->head.dy,
                                      own, hw->grad, hb->grad));
    if (next)
        ERASE_CHECK(erase_axpy(s, (size_t)n * k->head.in, 1.0f, next + half, own));
    *g_out = own;
    return ERASE_OK;
}

static erase_status_t cross_backward(erase_network_t *net, dcn_t *m, dcn_block_t *k, int b, erase_stream_t *s, int n)
{
    const float *x0, *xl, *g, *g_x0;
    cross_inputs(net, k, b, n, &x0, &xl);
    size_t nw = (size_t)n * m->width;
    ERASE_CHECK(output_grad(net, b, s, n, k->dout, &g, &g_x0));
    float *d_in = net->blocks[b].d_in; /* NULL at a cut */
    float *dx0 = d_in ? (k->first ? k->dx0_first : d_in) : NULL;
    float *dxl = d_in ? (k->first ? d_in : d_in + nw) : NULL;
    ERASE_CHECK(erase_cross_backward(s, nw, x0, k->u, g, k->du, dx0));
    erase_param_t *pw = &net->params[k->kw], *pb = &net->params[k->kb];
    if (m->rank > 0) {
        erase_param_t *pv = &net->params[k->kv];
        ERASE_CHECK(erase_linear_backward(s, n, m->rank, m->width, k->v, pw->value, k->du, k->dv, pw->grad, pb->grad));
        ERASE_CHECK(erase_linear_backward(s, n, m->width, m->rank, xl, pv->value, k->dv, dxl, pv->grad, NULL));
    } else {
        ERASE_CHECK(erase_linear_backward(s, n, m->width, m->width, xl, pw->value, k->du, dxl, pw->grad, pb->grad));
    }
    if (!d_in)
        return ERASE_OK;
    /* dL/dx_{C+1} reaches x_C unchanged (the residual) */
    ERASE_CHECK(erase_axpy(s, nw, 1.0f, g, dxl));
    if (g_x0)
        ERASE_CHECK(erase_axpy(s, nw, 1.0f, g_x0, dx0));
    if (k->first)
        ERASE_CHECK(erase_axpy(s, nw, 1.0f, k->dx0_first, d_in));
    return ERASE_OK;
}

static erase_status_t dcn_backward_block(erase_network_t *net, int b, erase_stream_t *s, const erase_batch_t *batch)
{
    dcn_t *m = dcn_of(net);
    dcn_block_t *k = &m->blocks[b];
    int n = batch->size;
    const float *g, *g_x0;
    if (k->kind == DCN_CROSS)
        return cross_backward(net, m, k, b, s, n);
    if (k->kind == DCN_OVER) {
        dense_t *l = &k->dense[0];
        ERASE_CHECK(output_grad(net, b, s, n, l->dy, &g, &g_x0));
        if (g != l->dy)
            ERASE_CHECK(erase_memcpy_async(s, l->dy, g, sizeof(float) * (size_t)n * l->out));
        int w;
        return dense_backward(net, l, s, n, dcn_body_output(net, b - 1, &w), net->blocks[b].d_in);
    }
    ERASE_CHECK(output_grad(net, b, s, n, k->dx0, &g, &g_x0));
    dense_t *top = &k->dense[k->ndense - 1];
    int widths[2] = { m->dim, ERASE_CTR_FIELDS * m->dim };
    float *parts[2] = { top->dy, k->demb };
    ERASE_CHECK(erase_concat_backward(s, n, 2, widths, g, parts));
    ERASE_CHECK(erase_network_embedding_backward(net, s, n, k->table0, m->dim, batch, k->demb, k->counts));
    for (int i = k->ndense - 1; i >= 0; i--)
        ERASE_CHECK(dense_backward(net, &k->dense[i], s, n, i > 0 ? k->dense[i - 1].y : batch->dense,
                                   i > 0 ? k->dense[i - 1].dy : NULL));
    return ERASE_OK;
}

/* Training FLOPs per sample: 6 x the multiply-adds of the Linears and the
 * cross layers' projections (forward 2, backward 4); the elementwise ops
 * and lookups are not counted. */
static double dcn_flops_per_sample(const erase_network_t *net)
{
    double macs = 0;
    for (int i = 0; i < net->nparams; i++)
        if (net->params[i].kind == ERASE_PARAM_DENSE && net->params[i].ndim == 2 && net->params[i].cols > 1)
            macs += (double)net->params[i].rows * (double)net->params[i].cols;
    return 6.0 * macs;
}

const erase_model_impl_t erase_model_dcn = {
    .build = dcn_build,
    .allocate = dcn_allocate,
    .forward_block = dcn_forward_block,
    .backward_block = dcn_backward_block,
    .forward_predict = dcn_forward_predict,
    .body_output = dcn_body_output,
    .head_output = dcn_head_output,
    .flops_per_sample = dcn_flops_per_sample,
    .destroy = dcn_destroy,
};
