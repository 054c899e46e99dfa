/*
 * The nanochat model (docs/models.md, `nanochat`) behind the network core
 * (lib/nn/network_impl.h): the transformer of Karpathy's nanochat
 * (nanochat/gpt.py, https://github.com/karpathy/nanochat, as first
 * released), one block per layer ("h0" .. "h<L-1>"; block 0 also holds
 * the token embedding), over N = batch x T rows of width C:
 *
 *   x = norm(wte[tokens])                               (block 0)
 *   q, k, v = c_q(norm(x)), c_k(norm(x)), c_v(norm(x))  (heads, kv_heads, kv_heads of hd)
 *   q, k = norm(rotary(q)), norm(rotary(k))             (per head: QK-norm)
 *   x1 = x + c_proj(causal attention(q, k, v))          (query head h reads kv head
 *                                                        h / (heads / kv_heads))
 *   out = x1 + mlp.c_proj(relu(mlp.c_fc(norm(x1)))^2)
 *   logits = softcap * tanh(lm_head(norm(out)) / softcap)   (a block with a head)
 *
 * norm is RMSNorm without parameters (eps: float32's machine epsilon, as
 * torch's rms_norm); no linear has a bias; the LM head is never tied to
 * wte. The rotary embedding is nanochat's (base 10000, half-split pairs,
 * erase_rotary). The last block's head carries the main loss; a block
 * followed by a cut has a local head (its own lm_head, the same norm and
 * softcap) and loss; any other block has no head. Losses: softmax
 * cross-entropy over the N positions, mean over tokens. Runs on the CPU
 * and on CUDA (the ops of lib/ops/cuda/nanochat.cu and attention.cu,
 * compiled but not yet run on a GPU).
 */
#include "lib/core/checked.h"
#include "lib/nn/network_impl.h"
#include "lib/ops/ops.h"

#include <float.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NANOCHAT_NORM_EPS FLT_EPSILON  /* torch.nn.functional.rms_norm's default for float32 */
#define NANOCHAT_ROTARY_BASE 10000.0f  /* nanochat's _precompute_rotary_embeddings */

/* A layer's forward activations for N rows. */
typedef struct {
    float *xn, *rstd1;          /* [N, C], [N]: norm(x) */
    float *q, *k, *v;           /* [N, H*hd], [N, KV*hd] x 2: q and k rotated in place */
    float *qn, *kn;             /* the rotated q, k after QK-norm */
    float *rstdq, *rstdk;       /* [N*H], [N*KV] */
    float *att;                 /* [B, H, T, T] */
    float *y;                   /* [N, C]: attention output, heads side by side */
    float *x1;                  /* [N, C] */
    float *xn2, *rstd2;         /* [N, C], [N] */
    float *fc, *act;            /* [N, 4C]: c_fc output, relu^2 of it */
    float *out;                 /* [N, C] */
    /* the head (a block with one) */
    float *xf, *rstdf;          /* [N, C], [N] */
    float *logits, *dlogits;    /* [N, V] */
    /* backward scratch */
    float *dout, *dx1, *dln, *dtmp; /* [N, C] */
    float *dbig;                /* [N, 4C] */
    float *dq, *dk, *dv;        /* shapes of q, k, v */
    float *datt;                /* [B, H, T, T] */
    float *dx_in;               /* [N, C]: the input gradient when the core has no d_in */
} nc_layer_t;

typedef struct {
    int T, C, H, KV, hd, V;
    float softcap;
    int wte;
    float *emb, *x0, *rstd0;    /* block 0: wte rows [N, C], norm of them, [N] */
    float *zero_pos;            /* [T, C] zeros: the position table the token embedding op reads */
    float *demb;                /* [N, C] */
    struct {
        int c_q, c_k, c_v, c_proj, c_fc, mlp_proj, lm_head; /* parameter indices; lm_head -1: none */
    } idx[ERASE_MAX_BLOCKS];
    nc_layer_t layers[ERASE_MAX_BLOCKS];
} nanochat_t;

static nanochat_t *nc_of(const erase_network_t *net) { return net->model; }

/* ---- construction ------------------------------------------------------- */

/* "<path>/weight" [rows, cols] of block b with its role. */
static erase_status_t add_weight(erase_network_t *net, int b, const char *path, erase_param_role_t role,
                                 int64_t rows, int64_t cols, int *index)
{
    char name[48];
    snprintf(name, sizeof name, "%s/weight", path);
    ERASE_CHECK(erase_network_add_param(net, b, name, ERASE_PARAM_DENSE, role, rows, cols, 2, index));
    return ERASE_OK;
}

static erase_status_t nc_build(erase_network_t *net)
{
    const erase_model_config_t *c = &net->cfg;
    nanochat_t *m = calloc(1, sizeof *m);
    if (!m)
        return ERASE_ERROR(ERASE_ERR_NOMEM, "network: no memory");
    net->model = m;
    m->T = c->nanochat.context;
    m->C = c->nanochat.width;
    m->H = c->nanochat.heads;
    m->KV = c->nanochat.kv_heads;
    m->V = c->nanochat.vocab;
    m->softcap = c->nanochat.softcap;
    if (m->T < 1 || m->C < 1 || m->H < 1 || m->KV < 1 || m->V < 1 || m->C % m->H != 0 || (m->C / m->H) % 2 ||
        m->H % m->KV != 0 || !(m->softcap > 0))
        return ERASE_ERROR(ERASE_ERR_INVALID, "nanochat: context %d, width %d, heads %d, kv_heads %d, vocab %d, "
                           "softcap %g (each > 0, width a multiple of heads, an even head dim, heads a multiple "
                           "of kv_heads)", m->T, m->C, m->H, m->KV, m->V, (double)m->softcap);
    m->hd = m->C / m->H;
    int64_t C = m->C, kvw = (int64_t)m->KV * m->hd;
    net->nblocks = c->nanochat.layers;
    for (int k = 0; k < net->nblocks; k++) {
        erase_block_t *blk = &net->blocks[k];
        snprintf(blk->name, sizeof blk->name, "h%d", k);
        blk->in_width = k > 0 ? m->T * m->C : 0;
        blk->first_param = net->nparams;
        if (k == 0)
            ERASE_CHECK(add_weight(net, 0, "wte", ERASE_ROLE_EMBEDDING, m->V, C, &m->wte));
        ERASE_CHECK(add_weight(net, k, "attn/c_q", ERASE_ROLE_HIDDEN, C, C, &m->idx[k].c_q));
        ERASE_CHECK(add_weight(net, k, "attn/c_k", ERASE_ROLE_HIDDEN, kvw, C, &m->idx[k].c_k));
        ERASE_CHECK(add_weight(net, k, "attn/c_v", ERASE_ROLE_HIDDEN, kvw, C, &m->idx[k].c_v));
        ERASE_CHECK(add_weight(net, k, "attn/c_proj", ERASE_ROLE_HIDDEN, C, C, &m->idx[k].c_proj));
        ERASE_CHECK(add_weight(net, k, "mlp/c_fc", ERASE_ROLE_HIDDEN, 4 * C, C, &m->idx[k].c_fc));
        ERASE_CHECK(add_weight(net, k, "mlp/c_proj", ERASE_ROLE_HIDDEN, C, 4 * C, &m->idx[k].mlp_proj));
        m->idx[k].lm_head = -1;
        blk->headless = !(k == net->nblocks - 1 || erase_network_is_cut(net, k + 1));
        if (!blk->headless)
            ERASE_CHECK(add_weight(net, k, "lm_head", ERASE_ROLE_HEAD, m->V, C, &m->idx[k].lm_head));
        blk->nparams = net->nparams - blk->first_param;
    }
    return ERASE_OK;
}

/* nanochat's init_weights (first release): every linear normal with std
 * 1/sqrt(fan_in) x min(1, sqrt(fan_out/fan_in)), then both c_proj and
 * every lm_head zero; wte normal with std 1. */
static erase_status_t init_params(erase_network_t *net)
{
    const nanochat_t *m = nc_of(net);
    erase_param_t *p = net->params;
    ERASE_CHECK(erase_network_init_param(net, &p[m->wte], ERASE_INIT_NORMAL, 1.0));
    for (int k = 0; k < net->nblocks; k++) {
        const int normal[] = { m->idx[k].c_q, m->idx[k].c_k, m->idx[k].c_v, m->idx[k].c_fc };
        for (size_t i = 0; i < sizeof normal / sizeof normal[0]; i++) {
            double in = (double)p[normal[i]].cols, out = (double)p[normal[i]].rows;
            double std = 1.0 / sqrt(in) * fmin(1.0, sqrt(out / in));
            ERASE_CHECK(erase_network_init_param(net, &p[normal[i]], ERASE_INIT_NORMAL, std));
        }
        const int zeros[] = { m->idx[k].c_proj, m->idx[k].mlp_proj, m->idx[k].lm_head };
        for (size_t i = 0; i < sizeof zeros / sizeof zeros[0]; i++)
            if (zeros[i] >= 0)
                ERASE_CHECK(erase_network_init_param(net, &p[zeros[i]], ERASE_INIT_CONSTANT, 0.0));
    }
    return ERASE_OK;
}

/* The buffers of a layer, each with its row count and width. */
#define LAYER_BUFFERS(L, N, C, QW, KW, H, KV, ATT)                                                        \
    { &(L)->xn, N, C }, { &(L)->rstd1, N, 1 }, { &(L)->q, N, QW }, { &(L)->k, N, KW }, { &(L)->v, N, KW }, \
    { &(L)->qn, N, QW }, { &(L)->kn, N, KW }, { &(L)->rstdq, N, H }, { &(L)->rstdk, N, KV },           \
    { &(L)->att, 1, ATT }, { &(L)->y, N, C }, { &(L)->x1, N, C }, { &(L)->xn2, N, C },                  \
    { &(L)->rstd2, N, 1 }, { &(L)->fc, N, 4 * (C) }, { &(L)->act, N, 4 * (C) }, { &(L)->out, N, C },    \
    { &(L)->dx1, N, C }, { &(L)->dln, N, C }, { &(L)->dtmp, N, C }, { &(L)->dbig, N, 4 * (C) },        \
    { &(L)->dq, N, QW }, { &(L)->dk, N, KW }, { &(L)->dv, N, KW }, { &(L)->datt, 1, ATT }

typedef struct {
    float **buf;
    int64_t rows, cols;
} nc_buf_t;

static erase_status_t nc_allocate(erase_network_t *net)
{
    nanochat_t *m = nc_of(net);
    int64_t N = (int64_t)net->max_batch * m->T, C = m->C, QW = C, KW = (int64_t)m->KV * m->hd;
    int64_t att = (int64_t)net->max_batch * m->H * m->T * m->T;
    ERASE_CHECK(init_params(net));
    ERASE_NET_ALLOC(net, m->emb, sizeof(float), N, C);
    ERASE_NET_ALLOC(net, m->x0, sizeof(float), N, C);
    ERASE_NET_ALLOC(net, m->rstd0, sizeof(float), N, 1);
    ERASE_NET_ALLOC(net, m->demb, sizeof(float), N, C);
    ERASE_NET_ALLOC(net, m->zero_pos, sizeof(float), m->T, C);
    ERASE_CHECK(erase_memset_sync(net->dev, m->zero_pos, 0, sizeof(float) * (size_t)m->T * (size_t)C));
    for (int k = 0; k < net->nblocks; k++) {
        nc_layer_t *L = &m->layers[k];
        nc_buf_t bufs[] = { LAYER_BUFFERS(L, N, C, QW, KW, m->H, m->KV, att) };
        for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++)
            ERASE_NET_ALLOC(net, *bufs[i].buf, sizeof(float), bufs[i].rows, bufs[i].cols);
        if (!net->blocks[k].d_in)
            ERASE_NET_ALLOC(net, L->dx_in, sizeof(float), N, C);
        if (m->idx[k].lm_head >= 0) {
            ERASE_NET_ALLOC(net, L->xf, sizeof(float), N, C);
            ERASE_NET_ALLOC(net, L->rstdf, sizeof(float), N, 1);
            ERASE_NET_ALLOC(net, L->logits, sizeof(float), N, m->V);
            ERASE_NET_ALLOC(net, L->dlogits, sizeof(float), N, m->V);
            ERASE_NET_ALLOC(net, L->dout, sizeof(float), N, C);
        }
    }
    return ERASE_OK;
}

static void nc_destroy(erase_network_t *net)
{
    nanochat_t *m = nc_of(net);
    if (!m)
        return;
    float *own[] = { m->emb, m->x0, m->rstd0, m->demb, m->zero_pos };
    for (size_t i = 0; i < sizeof own / sizeof own[0]; i++)
        erase_free(net->dev, own[i]);
    for (int k = 0; k < net->nblocks; k++) {
        nc_layer_t *L = &m->layers[k];
        nc_buf_t bufs[] = { LAYER_BUFFERS(L, 0, 0, 0, 0, 0, 0, 0) };
        for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++)
            erase_free(net->dev, *bufs[i].buf);
        float *more[] = { L->dx_in, L->xf, L->rstdf, L->logits, L->dlogits, L->dout };
        for (size_t i = 0; i < sizeof more / sizeof more[0]; i++)
            erase_free(net->dev, more[i]);
    }
    free(m);
}

static const float *nc_body_output(const erase_network_t *net, int b, int *width)
{
    const nanochat_t *m = nc_of(net);
    *width = m->T * m->C;
    return m->layers[b].out;
}

static const float *nc_head_output(const erase_network_t *net, int b, int *width)
{
    const nanochat_t *m = nc_of(net);
    *width = m->idx[b].lm_head >= 0 ? m->T * m->V : 0;
    return m->layers[b].logits;
}

/* ---- forward and backward ------------------------------------------------ */

static const float *block_input(const nanochat_t *m, int b)
{
    return b > 0 ? m->layers[b - 1].out : m->x0;
}

/* Block b's body on n sequences (block 0: from the embeddings of its tokens). */
static erase_status_t body_forward(erase_network_t *net, int b, erase_stream_t *s, const erase_batch_t *batch)
{
    nanochat_t *m = nc_of(net);
    nc_layer_t *L = &m->layers[b];
    const erase_param_t *p = net->params;
    int n = batch->size, N = n * m->T, C = m->C, QW = C, KW = m->KV * m->hd;
    size_t NC = (size_t)N * (size_t)C;
    if (b == 0) {
        ERASE_CHECK(erase_token_embedding_forward(s, n, m->T, C, m->V, batch->tokens, p[m->wte].value, m->zero_pos,
                                                  m->emb));
        ERASE_CHECK(erase_rmsnorm_forward(s, N, C, NANOCHAT_NORM_EPS, m->emb, m->x0, m->rstd0));
    }
    const float *x = block_input(m, b);
    ERASE_CHECK(erase_rmsnorm_forward(s, N, C, NANOCHAT_NORM_EPS, x, L->xn, L->rstd1));
    ERASE_CHECK(erase_linear_forward(s, N, C, QW, L->xn, p[m->idx[b].c_q].value, NULL, L->q));
    ERASE_CHECK(erase_linear_forward(s, N, C, KW, L->xn, p[m->idx[b].c_k].value, NULL, L->k));
    ERASE_CHECK(erase_linear_forward(s, N, C, KW, L->xn, p[m->idx[b].c_v].value, NULL, L->v));
    ERASE_CHECK(erase_rotary(s, n, m->T, 0, m->H, m->hd, NANOCHAT_ROTARY_BASE, 0, L->q, L->q));
    ERASE_CHECK(erase_rotary(s, n, m->T, 0, m->KV, m->hd, NANOCHAT_ROTARY_BASE, 0, L->k, L->k));
    ERASE_CHECK(erase_rmsnorm_forward(s, N * m->H, m->hd, NANOCHAT_NORM_EPS, L->q, L->qn, L->rstdq));
    ERASE_CHECK(erase_rmsnorm_forward(s, N * m->KV, m->hd, NANOCHAT_NORM_EPS, L->k, L->kn, L->rstdk));
    ERASE_CHECK(erase_gqa_attention_forward(s, n, m->T, m->H, m->KV, m->hd, L->qn, L->kn, L->v, L->att, L->y));
    ERASE_CHECK(erase_linear_forward(s, N, C, C, L->y, p[m->idx[b].c_proj].value, NULL, L->x1));
    ERASE_CHECK(erase_axpy(s, NC, 1.0f, x, L->x1));
    ERASE_CHECK(erase_rmsnorm_forward(s, N, C, NANOCHAT_NORM_EPS, L->x1, L->xn2, L->rstd2));
    ERASE_CHECK(erase_linear_forward(s, N, C, 4 * C, L->xn2, p[m->idx[b].c_fc].value, NULL, L->fc));
    ERASE_CHECK(erase_relu2_forward(s, NC * 4, L->fc, L->act));
    ERASE_CHECK(erase_linear_forward(s, N, 4 * C, C, L->act, p[m->idx[b].mlp_proj].value, NULL, L->out));
    ERASE_CHECK(erase_axpy(s, NC, 1.0f, L->x1, L->out));
    return ERASE_OK;
}

/* Block b's head on its output: logits = softcap(lm_head(norm(out))). */
static erase_status_t head_forward(erase_network_t *net, int b, erase_stream_t *s, int N)
{
    nanochat_t *m = nc_of(net);
    nc_layer_t *L = &m->layers[b];
    ERASE_CHECK(erase_rmsnorm_forward(s, N, m->C, NANOCHAT_NORM_EPS, L->out, L->xf, L->rstdf));
    ERASE_CHECK(erase_linear_forward(s, N, m->C, m->V, L->xf, net->params[m->idx[b].lm_head].value, NULL,
                                     L->logits));
    ERASE_CHECK(erase_softcap_forward(s, (size_t)N * (size_t)m->V, m->softcap, L->logits, L->logits));
    return ERASE_OK;
}

static erase_status_t nc_forward_block(erase_network_t *net, int b, erase_stream_t *s, const erase_batch_t *batch)
{
    nanochat_t *m = nc_of(net);
    nc_layer_t *L = &m->layers[b];
    int has_head = m->idx[b].lm_head >= 0, N = batch->size * m->T;
    ERASE_CHECK(erase_network_check_tokens("nanochat", batch, has_head));
    ERASE_CHECK(body_forward(net, b, s, batch));
    if (!has_head)
        return ERASE_OK;
    ERASE_CHECK(head_forward(net, b, s, N));
    ERASE_CHECK(erase_softmax_xent(s, N, m->V, L->logits, batch->targets, net->blocks[b].weight, &net->losses[b],
                                   L->dlogits));
    return ERASE_OK;
}

static erase_status_t nc_forward_predict(erase_network_t *net, erase_stream_t *s, const erase_batch_t *batch)
{
    ERASE_CHECK(erase_network_check_tokens("nanochat", batch, 0));
    for (int b = 0; b < net->nblocks; b++)
        ERASE_CHECK(body_forward(net, b, s, batch));
    ERASE_CHECK(head_forward(net, net->nblocks - 1, s, batch->size * nc_of(net)->T));
    return ERASE_OK;
}

/* The gradient at block b's output into L->dout (a block with a head:
 * the head's, plus the next block's input gradient when attached); returns
 * where it is. */
static erase_status_t output_gradient(erase_network_t *net, int b, erase_stream_t *s, int N, const float **dres)
{
    nanochat_t *m = nc_of(net);
    nc_layer_t *L = &m->layers[b];
    erase_param_t *head = m->idx[b].lm_head >= 0 ? &net->params[m->idx[b].lm_head] : NULL;
    size_t NC = (size_t)N * (size_t)m->C;
    if (!head) {
        *dres = net->blocks[b + 1].d_in; /* headless: boundary b+1 is attached */
        return ERASE_OK;
    }
    ERASE_CHECK(erase_softcap_backward(s, (size_t)N * (size_t)m->V, m->softcap, L->logits, L->dlogits,
                                       L->dlogits));
    ERASE_CHECK(erase_linear_backward(s, N, m->C, m->V, L->xf, head->value, L->dlogits, L->dln, head->grad, NULL));
    ERASE_CHECK(erase_rmsnorm_backward(s, N, m->C, L->out, L->rstdf, L->dln, L->dout));
    if (b + 1 < net->nblocks && !erase_network_is_cut(net, b + 1))
        ERASE_CHECK(erase_axpy(s, NC, 1.0f, net->blocks[b + 1].d_in, L->dout));
    *dres = L->dout;
    return ERASE_OK;
}

static erase_status_t nc_backward_block(erase_network_t *net, int b, erase_stream_t *s, const erase_batch_t *batch)
{
    nanochat_t *m = nc_of(net);
    nc_layer_t *L = &m->layers[b];
    erase_param_t *p = net->params;
    ERASE_CHECK(erase_network_check_tokens("nanochat", batch, m->idx[b].lm_head >= 0));
    int n = batch->size, N = n * m->T, C = m->C, QW = C, KW = m->KV * m->hd;
    size_t NC = (size_t)N * (size_t)C;
    const float *dres;
    ERASE_CHECK(output_gradient(net, b, s, N, &dres));
    /* MLP branch, then the residual */
    erase_param_t *fc = &p[m->idx[b].c_fc], *mproj = &p[m->idx[b].mlp_proj];
    ERASE_CHECK(erase_linear_backward(s, N, 4 * C, C, L->act, mproj->value, dres, L->dbig, mproj->grad, NULL));
    ERASE_CHECK(erase_relu2_backward(s, NC * 4, L->fc, L->dbig, L->dbig));
    ERASE_CHECK(erase_linear_backward(s, N, C, 4 * C, L->xn2, fc->value, L->dbig, L->dln, fc->grad, NULL));
    ERASE_CHECK(erase_rmsnorm_backward(s, N, C, L->x1, L->rstd2, L->dln, L->dx1));
    ERASE_CHECK(erase_axpy(s, NC, 1.0f, dres, L->dx1));
    /* attention branch */
    erase_param_t *cq = &p[m->idx[b].c_q], *ck = &p[m->idx[b].c_k], *cv = &p[m->idx[b].c_v];
    erase_param_t *cproj = &p[m->idx[b].c_proj];
    ERASE_CHECK(erase_linear_backward(s, N, C, C, L->y, cproj->value, L->dx1, L->dln, cproj->grad, NULL));
    ERASE_CHECK(erase_gqa_attention_backward(s, n, m->T, m->H, m->KV, m->hd, L->qn, L->kn, L->v, L->att, L->dln,
                                             L->datt, L->dq, L->dk, L->dv));
    ERASE_CHECK(erase_rmsnorm_backward(s, N * m->H, m->hd, L->q, L->rstdq, L->dq, L->dq));
    ERASE_CHECK(erase_rmsnorm_backward(s, N * m->KV, m->hd, L->k, L->rstdk, L->dk, L->dk));
    ERASE_CHECK(erase_rotary(s, n, m->T, 0, m->H, m->hd, NANOCHAT_ROTARY_BASE, 1, L->dq, L->dq));
    ERASE_CHECK(erase_rotary(s, n, m->T, 0, m->KV, m->hd, NANOCHAT_ROTARY_BASE, 1, L->dk, L->dk));
    ERASE_CHECK(erase_linear_backward(s, N, C, QW, L->xn, cq->value, L->dq, L->dln, cq->grad, NULL));
    ERASE_CHECK(erase_linear_backward(s, N, C, KW, L->xn, ck->value, L->dk, L->dtmp, ck->grad, NULL));
    ERASE_CHECK(erase_axpy(s, NC, 1.0f, L->dtmp, L->dln));
    ERASE_CHECK(erase_linear_backward(s, N, C, KW, L->xn, cv->value, L->dv, L->dtmp, cv->grad, NULL));
    ERASE_CHECK(erase_axpy(s, NC, 1.0f, L->dtmp, L->dln));
    /* the input's gradient: through norm, plus the residual */
    const float *x = block_input(m, b);
    float *dx = b == 0 ? m->demb : net->blocks[b].d_in ? net->blocks[b].d_in : L->dx_in;
    ERASE_CHECK(erase_rmsnorm_backward(s, N, C, x, L->rstd1, L->dln, dx));
    ERASE_CHECK(erase_axpy(s, NC, 1.0f, L->dx1, dx));
    if (b == 0) { /* through the norm after the embedding into wte */
        ERASE_CHECK(erase_rmsnorm_backward(s, N, C, m->emb, m->rstd0, m->demb, m->demb));
        ERASE_CHECK(erase_token_embedding_backward(s, n, m->T, C, m->V, batch->tokens, m->demb, p[m->wte].grad, NULL,
                                                   0));
    }
    return ERASE_OK;
}

/* ---- generation: one position at a time against key/value caches ---------- */

/*
 * The decoder of `batch` sequences: per layer the keys (rotated and
 * normed, as the forward's attention reads them) and values of the
 * positions decoded so far, caches [batch, T, KV*hd], and one position's
 * activations in the layer buffers' layout (rows = batch).
 */
typedef struct {
    erase_network_t *net;
    int batch;
    float *kcache[ERASE_MAX_BLOCKS], *vcache[ERASE_MAX_BLOCKS];
    float *x, *xn, *rstd, *q, *k, *v, *qn, *kn, *rstdq, *rstdk, *y, *fc, *xf, *logits, *scratch;
} nc_decoder_t;

static void nc_decoder_destroy(void *state)
{
    nc_decoder_t *d = state;
    if (!d)
        return;
    erase_network_t *net = d->net;
    for (int k = 0; k < ERASE_MAX_BLOCKS; k++) {
        erase_free(net->dev, d->kcache[k]);
        erase_free(net->dev, d->vcache[k]);
    }
    float *bufs[] = { d->x, d->xn, d->rstd, d->q, d->k, d->v, d->qn, d->kn, d->rstdq, d->rstdk, d->y, d->fc,
                      d->xf, d->logits, d->scratch };
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++)
        erase_free(net->dev, bufs[i]);
    free(d);
}

static erase_status_t nc_decoder_alloc(nc_decoder_t *d)
{
    erase_network_t *net = d->net;
    const nanochat_t *m = nc_of(net);
    int64_t B = d->batch, C = m->C, KW = (int64_t)m->KV * m->hd;
    for (int k = 0; k < net->nblocks; k++) {
        ERASE_NET_ALLOC(net, d->kcache[k], sizeof(float), B, (int64_t)m->T * KW);
        ERASE_NET_ALLOC(net, d->vcache[k], sizeof(float), B, (int64_t)m->T * KW);
    }
    nc_buf_t bufs[] = { { &d->x, B, C },        { &d->xn, B, C },      { &d->rstd, B, 1 },  { &d->q, B, C },
                        { &d->k, B, KW },       { &d->v, B, KW },      { &d->qn, B, C },    { &d->kn, B, KW },
                        { &d->rstdq, B, m->H }, { &d->rstdk, B, m->KV }, { &d->y, B, C },   { &d->fc, B, 4 * C },
                        { &d->xf, B, C },       { &d->logits, B, m->V }, { &d->scratch, B, (int64_t)m->H * m->T } };
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++)
        ERASE_NET_ALLOC(net, *bufs[i].buf, sizeof(float), bufs[i].rows, bufs[i].cols);
    return ERASE_OK;
}

static erase_status_t nc_decoder_create(erase_network_t *net, int batch, void **out)
{
    nc_decoder_t *d = calloc(1, sizeof *d);
    if (!d)
        return ERASE_ERROR(ERASE_ERR_NOMEM, "nanochat decoder: no memory");
    d->net = net;
    d->batch = batch;
    erase_status_t st = nc_decoder_alloc(d);
    if (st != ERASE_OK) {
        erase_error_trail(__FILE__, __LINE__);
        nc_decoder_destroy(d);
        return st;
    }
    *out = d;
    return ERASE_OK;
}

/* Position t of every sequence: the forward of one row per sequence, the
 * rotary angle of position t, attention against the caches. */
static erase_status_t nc_decode_step(void *state, erase_stream_t *s, int t, const int32_t *tokens,
                                     const float **logits)
{
    nc_decoder_t *d = state;
    erase_network_t *net = d->net;
    const nanochat_t *m = nc_of(net);
    const erase_param_t *p = net->params;
    int B = d->batch, C = m->C, KW = m->KV * m->hd;
    size_t BC = (size_t)B * (size_t)C;
    if (t < 0 || t >= m->T)
        return ERASE_ERROR(ERASE_ERR_INVALID, "nanochat decoder: position %d outside the context 0..%d", t, m->T - 1);
    /* one position: the zero table's row 0 is the position table of T = 1 */
    ERASE_CHECK(erase_token_embedding_forward(s, B, 1, C, m->V, tokens, p[m->wte].value, m->zero_pos, d->xf));
    ERASE_CHECK(erase_rmsnorm_forward(s, B, C, NANOCHAT_NORM_EPS, d->xf, d->x, d->rstd));
    for (int b = 0; b < net->nblocks; b++) {
        ERASE_CHECK(erase_rmsnorm_forward(s, B, C, NANOCHAT_NORM_EPS, d->x, d->xn, d->rstd));
        ERASE_CHECK(erase_linear_forward(s, B, C, C, d->xn, p[m->idx[b].c_q].value, NULL, d->q));
        ERASE_CHECK(erase_linear_forward(s, B, C, KW, d->xn, p[m->idx[b].c_k].value, NULL, d->k));
        ERASE_CHECK(erase_linear_forward(s, B, C, KW, d->xn, p[m->idx[b].c_v].value, NULL, d->v));
        ERASE_CHECK(erase_rotary(s, B, 1, t, m->H, m->hd, NANOCHAT_ROTARY_BASE, 0, d->q, d->q));
        ERASE_CHECK(erase_rotary(s, B, 1, t, m->KV, m->hd, NANOCHAT_ROTARY_BASE, 0, d->k, d->k));
        ERASE_CHECK(erase_rmsnorm_forward(s, B * m->H, m->hd, NANOCHAT_NORM_EPS, d->q, d->qn, d->rstdq));
        ERASE_CHECK(erase_rmsnorm_forward(s, B * m->KV, m->hd, NANOCHAT_NORM_EPS, d->k, d->kn, d->rstdk));
        ERASE_CHECK(erase_gqa_attention_decode(s, B, t, m->T, m->H, m->KV, m->hd, d->qn, d->kn, d->v, d->kcache[b],
                                               d->vcache[b], d->scratch, d->y));
        ERASE_CHECK(erase_linear_forward(s, B, C, C, d->y, p[m->idx[b].c_proj].value, NULL, d->xn));
        ERASE_CHECK(erase_axpy(s, BC, 1.0f, d->xn, d->x));
        ERASE_CHECK(erase_rmsnorm_forward(s, B, C, NANOCHAT_NORM_EPS, d->x, d->xn, d->rstd));
        ERASE_CHECK(erase_linear_forward(s, B, C, 4 * C, d->xn, p[m->idx[b].c_fc].value, NULL, d->fc));
        ERASE_CHECK(erase_relu2_forward(s, BC * 4, d->fc, d->fc));
        ERASE_CHECK(erase_linear_forward(s, B, 4 * C, C, d->fc, p[m->idx[b].mlp_proj].value, NULL, d->xn));
        ERASE_CHECK(erase_axpy(s, BC, 1.0f, d->xn, d->x));
    }
    int last = net->nblocks - 1;
    ERASE_CHECK(erase_rmsnorm_forward(s, B, C, NANOCHAT_NORM_EPS, d->x, d->xf, d->rstd));
    ERASE_CHECK(erase_linear_forward(s, B, C, m->V, d->xf, p[m->idx[last].lm_head].value, NULL, d->logits));
    ERASE_CHECK(erase_softcap_forward(s, (size_t)B * (size_t)m->V, m->softcap, d->logits, d->logits));
    *logits = d->logits;
    return ERASE_OK;
}

/* T x (6N + 12 L C T), N: every parameter but wte (nanochat's
 * estimate_flops). */
static double nc_flops_per_sample(const erase_network_t *net)
{
    const nanochat_t *m = nc_of(net);
    return erase_network_transformer_flops(net, m->wte, m->T, m->C);
}

const erase_model_impl_t erase_model_nanochat = {
    .build = nc_build,
    .allocate = nc_allocate,
    .forward_block = nc_forward_block,
    .backward_block = nc_backward_block,
    .forward_predict = nc_forward_predict,
    .body_output = nc_body_output,
    .head_output = nc_head_output,
    .flops_per_sample = nc_flops_per_sample,
    .destroy = nc_destroy,
    .decoder_create = nc_decoder_create,
    .decode_step = nc_decode_step,
    .decoder_destroy = nc_decoder_destroy,
};
