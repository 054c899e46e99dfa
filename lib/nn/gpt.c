/*
 * The gpt model (docs/models.md, `gpt`) behind the network core
 * (lib/nn/network_impl.h): GPT-2 as nanoGPT and llm.c define it, one
 * block per transformer layer ("h0" .. "h<L-1>"; block 0 also holds the
 * token and position embeddings wte and wpe):
 *
 *   x = wte[tokens] + wpe[positions]                    (block 0)
 *   x1 = x + c_proj(attention(c_attn(ln_1(x))))
 *   out = x1 + mlp.c_proj(gelu_tanh(mlp.c_fc(ln_2(x1))))
 *   logits = lm_head(ln_f(out))                         (a block with a head)
 *
 * over N = batch * T rows of width C. The last block's head carries the
 * main loss and is tied to wte as the model file's tie_head says (default:
 * when the model has no cuts; erase_model_config_tied_head): the head's
 * backward writes wte's gradient, block 0's embedding backward adds to
 * it. Untied (tie_head = false, or any cut) it has its own weight. A block followed by a cut has a
 * local head (its own ln_f and lm_head) and loss; any other block has no
 * head and no loss. Losses: softmax cross-entropy over the N positions,
 * mean over tokens.
 */
#include "lib/nn/gpt.h"

#include "lib/core/checked.h"
#include "lib/nn/network_impl.h"
#include "lib/ops/ops.h"

#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The forward activations of a layer for `rows` rows (batch x positions). */
typedef struct {
    float *ln1, *ln1_mean, *ln1_rstd;   /* [rows, C], [rows], [rows] */
    float *qkv;                         /* [rows, 3C] */
    float *atty;                        /* [rows, C]: attention output, heads side by side */
    float *x1;                          /* [rows, C]: x + attention branch */
    float *ln2, *ln2_mean, *ln2_rstd;
    float *fch, *fcg;                   /* [rows, 4C]: c_fc output, after GELU (may be one buffer) */
    float *out;                         /* [rows, C]: the layer's output (may be its input x) */
} gpt_acts_t;

/* A head's activations. */
typedef struct {
    float *lnf, *lnf_mean, *lnf_rstd;   /* [rows, C], [rows], [rows] */
    float *logits;                      /* [rows, vocab] */
} gpt_head_acts_t;

typedef struct {
    /* parameter indices; -1: none */
    int ln1_w, ln1_b, qkv_w, qkv_b, aproj_w, aproj_b, ln2_w, ln2_b, fc_w, fc_b, mproj_w, mproj_b;
    int lnf_w, lnf_b, head_w;   /* head_w: wte's index when tied */
    int has_head;
    gpt_acts_t a;                       /* [N = max_batch * T] rows */
    float *att;                         /* [max_batch, H, T, T] */
    gpt_head_acts_t h;
    float *dlogits;                     /* [N, vocab] */
    /* backward scratch */
    float *dout;                        /* [N, C]: gradient at out (a block with a head) */
    float *dx1, *dln;                   /* [N, C] */
    float *dbig;                        /* [N, 4C]: d fcg, then d qkv */
    float *datt;                        /* [max_batch, H, T, T] */
    float *dx_in;                       /* [N, C]: the input gradient when the core has no d_in */
} gpt_layer_t;

typedef struct {
    int T, C, H, V;
    int wte, wpe;
    int tied;
    float *emb;                         /* [N, C]: block 0's input */
    gpt_layer_t layers[ERASE_MAX_BLOCKS];
} gpt_t;

static gpt_t *gpt_of(const erase_network_t *net) { return net->model; }

/* ---- construction ------------------------------------------------------- */

/* a * b as an int count (per-sample widths, rows of a batch), or
 * ERASE_ERR_INVALID naming `what`. */
static erase_status_t int_product(const char *what, int64_t a, int64_t b, int *out)
{
    int64_t n;
    if (!erase_mul_i64(a, b, &n) || n > INT_MAX)
        return ERASE_ERROR(ERASE_ERR_INVALID, "gpt: %s, %lld x %lld, is more than %d", what, (long long)a,
                           (long long)b, INT_MAX);
    *out = (int)n;
    return ERASE_OK;
}

/* A dense parameter [rows, cols] of the given role (1-d when cols is 1). */
static erase_status_t add(erase_network_t *net, int b, const char *path, erase_param_role_t role, int64_t rows,
                          int64_t cols, int *index)
{
    ERASE_CHECK(erase_network_add_param(net, b, path, ERASE_PARAM_DENSE, role, rows, cols, cols == 1 ? 1 : 2,
                                        index));
    return ERASE_OK;
}

/* "<prefix>/weight" [rows, cols] of the given role (hidden or head) and
 * "<prefix>/bias" [rows] (bias: NULL index for none). */
static erase_status_t add_linear(erase_network_t *net, int b, const char *prefix, erase_param_role_t role,
                                 int64_t out, int64_t in, int *w, int *bias)
{
    char path[48];
    snprintf(path, sizeof path, "%s/weight", prefix);
    ERASE_CHECK(add(net, b, path, role, out, in, w));
    if (bias) {
        snprintf(path, sizeof path, "%s/bias", prefix);
        ERASE_CHECK(add(net, b, path, ERASE_ROLE_VECTOR, out, 1, bias));
    }
    return ERASE_OK;
}

static erase_status_t add_layernorm(erase_network_t *net, int b, const char *prefix, int C, int *w, int *bias)
{
    char path[48];
    snprintf(path, sizeof path, "%s/weight", prefix);
    ERASE_CHECK(add(net, b, path, ERASE_ROLE_VECTOR, C, 1, w));
    snprintf(path, sizeof path, "%s/bias", prefix);
    ERASE_CHECK(add(net, b, path, ERASE_ROLE_VECTOR, C, 1, bias));
    return ERASE_OK;
}

static erase_status_t gpt_build(erase_network_t *net)
{
    const erase_model_config_t *c = &net->cfg;
    gpt_t *g = calloc(1, sizeof *g);
    if (!g)
        return ERASE_ERROR(ERASE_ERR_NOMEM, "network: no memory");
    net->model = g;
    g->T = c->gpt.context;
    g->C = c->gpt.width;
    g->H = c->gpt.heads;
    g->V = c->gpt.vocab;
    if (g->T < 1 || g->C < 1 || g->H < 1 || g->V < 1 || g->C % g->H != 0)
        return ERASE_ERROR(ERASE_ERR_INVALID, "gpt: context %d, width %d, heads %d, vocab %d (each >= 1, "
                           "width a multiple of heads)", g->T, g->C, g->H, g->V);
    int n;
    /* every count the ops take as an int: rows N, per-sample widths */
    ERASE_CHECK(int_product("the rows of a batch (max batch x context)", net->max_batch, g->T, &n));
    ERASE_CHECK(int_product("the MLP width (4 x width)", 4, g->C, &n));
    ERASE_CHECK(int_product("a sample's MLP activations (context x 4 width)", g->T, 4 * (int64_t)g->C, &n));
    ERASE_CHECK(int_product("a sample's logits (context x vocab)", g->T, g->V, &n));
    ERASE_CHECK(int_product("a sample's attention (heads x context x context)", (int64_t)g->H * g->T, g->T, &n));
    ERASE_CHECK(erase_model_config_tied_head(c, &g->tied));
    g->wte = g->wpe = -1;
    net->nblocks = c->gpt.layers;
    int64_t C = g->C;
    for (int k = 0; k < net->nblocks; k++) {
        erase_block_t *blk = &net->blocks[k];
        gpt_layer_t *L = &g->layers[k];
        snprintf(blk->name, sizeof blk->name, "h%d", k);
        blk->in_width = k > 0 ? g->T * g->C : 0;
        blk->first_param = net->nparams;
        if (k == 0) {
            /* tied, wte is the output projection too: Muon's AdamW gives it the head's rate
             * (nanochat's unembedding_lr; the embedding rate diverged, docs/muon.md) */
            ERASE_CHECK(add(net, 0, "wte", g->tied ? ERASE_ROLE_HEAD : ERASE_ROLE_EMBEDDING, g->V, C, &g->wte));
            ERASE_CHECK(add(net, 0, "wpe", ERASE_ROLE_EMBEDDING, g->T, C, &g->wpe));
        }
        ERASE_CHECK(add_layernorm(net, k, "ln_1", g->C, &L->ln1_w, &L->ln1_b));
        ERASE_CHECK(add_linear(net, k, "attn/c_attn", ERASE_ROLE_HIDDEN, 3 * C, C, &L->qkv_w, &L->qkv_b));
        ERASE_CHECK(add_linear(net, k, "attn/c_proj", ERASE_ROLE_HIDDEN, C, C, &L->aproj_w, &L->aproj_b));
        ERASE_CHECK(add_layernorm(net, k, "ln_2", g->C, &L->ln2_w, &L->ln2_b));
        ERASE_CHECK(add_linear(net, k, "mlp/c_fc", ERASE_ROLE_HIDDEN, 4 * C, C, &L->fc_w, &L->fc_b));
        ERASE_CHECK(add_linear(net, k, "mlp/c_proj", ERASE_ROLE_HIDDEN, C, 4 * C, &L->mproj_w, &L->mproj_b));
        L->lnf_w = L->lnf_b = L->head_w = -1;
        int last = k == net->nblocks - 1;
        L->has_head = last || erase_network_is_cut(net, k + 1);
        blk->headless = !L->has_head;
        if (L->has_head) {
            ERASE_CHECK(add_layernorm(net, k, "ln_f", g->C, &L->lnf_w, &L->lnf_b));
            if (last && g->tied)
                L->head_w = g->wte;
            else
                ERASE_CHECK(add_linear(net, k, "lm_head", ERASE_ROLE_HEAD, g->V, C, &L->head_w, NULL));
        }
        blk->nparams = net->nparams - blk->first_param;
    }
    return ERASE_OK;
}

/* Initial values (docs/models.md): GPT-2's. */
static erase_status_t init_layer(erase_network_t *net, const gpt_layer_t *L)
{
    erase_param_t *p = net->params;
    double proj_std = 0.02 / sqrt(2.0 * net->nblocks);
    const int ones[] = { L->ln1_w, L->ln2_w, L->lnf_w };
    const int zeros[] = { L->ln1_b, L->qkv_b, L->aproj_b, L->ln2_b, L->fc_b, L->mproj_b, L->lnf_b };
    const int normal[] = { L->qkv_w, L->fc_w, L->head_w };
    for (size_t i = 0; i < sizeof ones / sizeof ones[0]; i++)
        if (ones[i] >= 0)
            ERASE_CHECK(erase_network_init_param(net, &p[ones[i]], ERASE_INIT_CONSTANT, 1.0));
    for (size_t i = 0; i < sizeof zeros / sizeof zeros[0]; i++)
        if (zeros[i] >= 0)
            ERASE_CHECK(erase_network_init_param(net, &p[zeros[i]], ERASE_INIT_CONSTANT, 0.0));
    for (size_t i = 0; i < sizeof normal / sizeof normal[0]; i++)
        if (normal[i] >= 0 && normal[i] != gpt_of(net)->wte)
            ERASE_CHECK(erase_network_init_param(net, &p[normal[i]], ERASE_INIT_NORMAL, 0.02));
    ERASE_CHECK(erase_network_init_param(net, &p[L->aproj_w], ERASE_INIT_NORMAL, proj_std));
    ERASE_CHECK(erase_network_init_param(net, &p[L->mproj_w], ERASE_INIT_NORMAL, proj_std));
    return ERASE_OK;
}

/* Activations of `rows` rows; `separate_out`: out its own buffer (else the
 * caller sets it to the layer input) and fcg separate from fch (training
 * keeps fch for the GELU backward). */
static erase_status_t alloc_acts(erase_network_t *net, int64_t rows, int64_t C, gpt_acts_t *a, int separate)
{
    ERASE_NET_ALLOC(net, a->ln1, sizeof(float), rows, C);
    ERASE_NET_ALLOC(net, a->ln1_mean, sizeof(float), rows, 1);
    ERASE_NET_ALLOC(net, a->ln1_rstd, sizeof(float), rows, 1);
    ERASE_NET_ALLOC(net, a->qkv, sizeof(float), rows, 3 * C);
    ERASE_NET_ALLOC(net, a->atty, sizeof(float), rows, C);
    ERASE_NET_ALLOC(net, a->x1, sizeof(float), rows, C);
    ERASE_NET_ALLOC(net, a->ln2, sizeof(float), rows, C);
    ERASE_NET_ALLOC(net, a->ln2_mean, sizeof(float), rows, 1);
    ERASE_NET_ALLOC(net, a->ln2_rstd, sizeof(float), rows, 1);
    ERASE_NET_ALLOC(net, a->fch, sizeof(float), rows, 4 * C);
    if (separate) {
        ERASE_NET_ALLOC(net, a->fcg, sizeof(float), rows, 4 * C);
        ERASE_NET_ALLOC(net, a->out, sizeof(float), rows, C);
    } else {
        a->fcg = a->fch;
    }
    return ERASE_OK;
}

static void free_acts(erase_network_t *net, gpt_acts_t *a)
{
    float *bufs[] = { a->ln1, a->ln1_mean, a->ln1_rstd, a->qkv, a->atty, a->x1, a->ln2, a->ln2_mean,
                      a->ln2_rstd, a->fch, a->fcg != a->fch ? a->fcg : NULL, a->out };
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++)
        erase_free(net->dev, bufs[i]);
    memset(a, 0, sizeof *a);
}

static erase_status_t alloc_head_acts(erase_network_t *net, int64_t rows, int64_t C, int64_t V, gpt_head_acts_t *h)
{
    ERASE_NET_ALLOC(net, h->lnf, sizeof(float), rows, C);
    ERASE_NET_ALLOC(net, h->lnf_mean, sizeof(float), rows, 1);
    ERASE_NET_ALLOC(net, h->lnf_rstd, sizeof(float), rows, 1);
    ERASE_NET_ALLOC(net, h->logits, sizeof(float), rows, V);
    return ERASE_OK;
}

static void free_head_acts(erase_network_t *net, gpt_head_acts_t *h)
{
    erase_free(net->dev, h->lnf);
    erase_free(net->dev, h->lnf_mean);
    erase_free(net->dev, h->lnf_rstd);
    erase_free(net->dev, h->logits);
    memset(h, 0, sizeof *h);
}

static erase_status_t gpt_allocate(erase_network_t *net)
{
    gpt_t *g = gpt_of(net);
    int64_t N = (int64_t)net->max_batch * g->T, C = g->C, att = (int64_t)g->H * g->T * g->T;
    ERASE_CHECK(erase_network_init_param(net, &net->params[g->wte], ERASE_INIT_NORMAL, 0.02));
    ERASE_CHECK(erase_network_init_param(net, &net->params[g->wpe], ERASE_INIT_NORMAL, 0.02));
    ERASE_NET_ALLOC(net, g->emb, sizeof(float), N, C);
    for (int k = 0; k < net->nblocks; k++) {
        gpt_layer_t *L = &g->layers[k];
        ERASE_CHECK(init_layer(net, L));
        ERASE_CHECK(alloc_acts(net, N, C, &L->a, 1));
        ERASE_NET_ALLOC(net, L->att, sizeof(float), net->max_batch, att);
        ERASE_NET_ALLOC(net, L->dx1, sizeof(float), N, C);
        ERASE_NET_ALLOC(net, L->dln, sizeof(float), N, C);
        ERASE_NET_ALLOC(net, L->dbig, sizeof(float), N, 4 * C);
        ERASE_NET_ALLOC(net, L->datt, sizeof(float), net->max_batch, att);
        if (!net->blocks[k].d_in)
            ERASE_NET_ALLOC(net, L->dx_in, sizeof(float), N, C);
        if (L->has_head) {
            ERASE_CHECK(alloc_head_acts(net, N, C, g->V, &L->h));
            ERASE_NET_ALLOC(net, L->dlogits, sizeof(float), N, g->V);
            ERASE_NET_ALLOC(net, L->dout, sizeof(float), N, C);
        }
    }
    return ERASE_OK;
}

static void gpt_destroy(erase_network_t *net)
{
    gpt_t *g = gpt_of(net);
    erase_free(net->dev, g->emb);
    for (int k = 0; k < net->nblocks; k++) {
        gpt_layer_t *L = &g->layers[k];
        free_acts(net, &L->a);
        free_head_acts(net, &L->h);
        float *bufs[] = { L->att, L->dlogits, L->dout, L->dx1, L->dln, L->dbig, L->datt, L->dx_in };
        for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++)
            erase_free(net->dev, bufs[i]);
    }
    free(g);
}

static const float *gpt_body_output(const erase_network_t *net, int b, int *width)
{
    const gpt_t *g = gpt_of(net);
    *width = g->T * g->C;
    return g->layers[b].a.out;
}

static const float *gpt_head_output(const erase_network_t *net, int b, int *width)
{
    const gpt_t *g = gpt_of(net);
    *width = g->layers[b].has_head ? g->T * g->V : 0;
    return g->layers[b].h.logits;
}

erase_status_t erase_gpt_layer(erase_network_t *net, int k, erase_gpt_layer_t *out)
{
    if (net->cfg.kind != ERASE_MODEL_GPT)
        return ERASE_ERROR(ERASE_ERR_INVALID, "gpt: the network is a %s model", erase_model_config_name(&net->cfg));
    if (k < 0 || k >= net->nblocks)
        return ERASE_ERROR(ERASE_ERR_INVALID, "gpt: layer %d of %d", k, net->nblocks);
    const gpt_t *g = gpt_of(net);
    const gpt_layer_t *L = &g->layers[k];
    erase_param_t *p = net->params;
#define P(i) ((i) >= 0 ? &p[i] : NULL)
    *out = (erase_gpt_layer_t){
        .wte = P(g->wte), .wpe = P(g->wpe),
        .ln1_w = P(L->ln1_w), .ln1_b = P(L->ln1_b), .qkv_w = P(L->qkv_w), .qkv_b = P(L->qkv_b),
        .attn_proj_w = P(L->aproj_w), .attn_proj_b = P(L->aproj_b),
        .ln2_w = P(L->ln2_w), .ln2_b = P(L->ln2_b), .fc_w = P(L->fc_w), .fc_b = P(L->fc_b),
        .mlp_proj_w = P(L->mproj_w), .mlp_proj_b = P(L->mproj_b),
        .lnf_w = P(L->lnf_w), .lnf_b = P(L->lnf_b), .head_w = P(L->head_w),
    };
#undef P
    return ERASE_OK;
}

/* ---- forward and backward ------------------------------------------------ */

/* Block b's input: the embeddings for block 0, else block b-1's output. */
static const float *block_input(const gpt_t *g, int b)
{
    return b > 0 ? g->layers[b - 1].a.out : g->emb;
}

/* The layer up to the attention, on `rows` rows: a->qkv = c_attn(ln_1(x)). */
static erase_status_t attention_in(erase_network_t *net, const gpt_layer_t *L, erase_stream_t *s, int rows,
                                   const float *x, gpt_acts_t *a)
{
    const erase_param_t *p = net->params;
    int C = gpt_of(net)->C;
    ERASE_CHECK(erase_layernorm_forward(s, rows, C, ERASE_GPT_LN_EPS, x, p[L->ln1_w].value, p[L->ln1_b].value,
                                        a->ln1, a->ln1_mean, a->ln1_rstd));
    ERASE_CHECK(erase_linear_forward(s, rows, C, 3 * C, a->ln1, p[L->qkv_w].value, p[L->qkv_b].value, a->qkv));
    return ERASE_OK;
}

/* The layer from the attention output a->atty on: x1 = x + c_proj(atty);
 * a->out = x1 + mlp.c_proj(gelu(c_fc(ln_2(x1)))) (a->out may be x). */
static erase_status_t attention_out(erase_network_t *net, const gpt_layer_t *L, erase_stream_t *s, int rows,
                                    const float *x, gpt_acts_t *a)
{
    const erase_param_t *p = net->params;
    int C = gpt_of(net)->C;
    size_t n = (size_t)rows * (size_t)C;
    ERASE_CHECK(erase_linear_forward(s, rows, C, C, a->atty, p[L->aproj_w].value, p[L->aproj_b].value, a->x1));
    ERASE_CHECK(erase_axpy(s, n, 1.0f, x, a->x1));
    ERASE_CHECK(erase_layernorm_forward(s, rows, C, ERASE_GPT_LN_EPS, a->x1, p[L->ln2_w].value, p[L->ln2_b].value,
                                        a->ln2, a->ln2_mean, a->ln2_rstd));
    ERASE_CHECK(erase_linear_forward(s, rows, C, 4 * C, a->ln2, p[L->fc_w].value, p[L->fc_b].value, a->fch));
    ERASE_CHECK(erase_gelu_tanh_forward(s, n * 4, a->fch, a->fcg));
    ERASE_CHECK(erase_linear_forward(s, rows, 4 * C, C, a->fcg, p[L->mproj_w].value, p[L->mproj_b].value, a->out));
    ERASE_CHECK(erase_axpy(s, n, 1.0f, a->x1, a->out));
    return ERASE_OK;
}

/* A head on `rows` rows of x: h->logits = lm_head(ln_f(x)). */
static erase_status_t head_forward(erase_network_t *net, const gpt_layer_t *L, erase_stream_t *s, int rows,
                                   const float *x, gpt_head_acts_t *h)
{
    const gpt_t *g = gpt_of(net);
    const erase_param_t *p = net->params;
    ERASE_CHECK(erase_layernorm_forward(s, rows, g->C, ERASE_GPT_LN_EPS, x, p[L->lnf_w].value, p[L->lnf_b].value,
                                        h->lnf, h->lnf_mean, h->lnf_rstd));
    ERASE_CHECK(erase_linear_forward(s, rows, g->C, g->V, h->lnf, p[L->head_w].value, NULL, h->logits));
    return ERASE_OK;
}

/* Block b's body on the batch's N = size x T rows (block 0: from the
 * embeddings of its tokens). */
static erase_status_t body_forward(erase_network_t *net, int b, erase_stream_t *s, const erase_batch_t *batch)
{
    gpt_t *g = gpt_of(net);
    gpt_layer_t *L = &g->layers[b];
    const erase_param_t *p = net->params;
    int n = batch->size, N = n * g->T;
    if (b == 0)
        ERASE_CHECK(erase_token_embedding_forward(s, n, g->T, g->C, g->V, batch->tokens, p[g->wte].value,
                                                  p[g->wpe].value, g->emb));
    const float *x = block_input(g, b);
    ERASE_CHECK(attention_in(net, L, s, N, x, &L->a));
    ERASE_CHECK(erase_attention_forward(s, n, g->T, g->H, g->C, L->a.qkv, L->att, L->a.atty));
    ERASE_CHECK(attention_out(net, L, s, N, x, &L->a));
    return ERASE_OK;
}

static erase_status_t gpt_forward_block(erase_network_t *net, int b, erase_stream_t *s, const erase_batch_t *batch)
{
    gpt_t *g = gpt_of(net);
    gpt_layer_t *L = &g->layers[b];
    ERASE_CHECK(erase_network_check_tokens("gpt", batch, L->has_head));
    ERASE_CHECK(body_forward(net, b, s, batch));
    if (!L->has_head)
        return ERASE_OK;
    ERASE_CHECK(head_forward(net, L, s, batch->size * g->T, L->a.out, &L->h));
    ERASE_CHECK(erase_softmax_xent(s, batch->size * g->T, g->V, L->h.logits, batch->targets,
                                   net->blocks[b].weight, &net->losses[b], L->dlogits));
    return ERASE_OK;
}

static erase_status_t gpt_forward_predict(erase_network_t *net, erase_stream_t *s, const erase_batch_t *batch)
{
    ERASE_CHECK(erase_network_check_tokens("gpt", batch, 0));
    for (int b = 0; b < net->nblocks; b++)
        ERASE_CHECK(body_forward(net, b, s, batch));
    gpt_layer_t *last = &gpt_of(net)->layers[net->nblocks - 1];
    ERASE_CHECK(head_forward(net, last, s, batch->size * gpt_of(net)->T, last->a.out, &last->h));
    return ERASE_OK;
}

static erase_status_t gpt_backward_block(erase_network_t *net, int b, erase_stream_t *s, const erase_batch_t *batch)
{
    gpt_t *g = gpt_of(net);
    gpt_layer_t *L = &g->layers[b];
    erase_param_t *p = net->params;
    ERASE_CHECK(erase_network_check_tokens("gpt", batch, L->has_head));
    int n = batch->size, N = n * g->T, C = g->C;
    size_t NC = (size_t)N * (size_t)C;
    int attached = b + 1 < net->nblocks && !erase_network_is_cut(net, b + 1);
    /* the gradient at the body output: the head's, plus the next block's
     * input gradient when boundary b+1 is attached */
    const float *dres;
    if (L->has_head) {
        ERASE_CHECK(erase_linear_backward(s, N, C, g->V, L->h.lnf, p[L->head_w].value, L->dlogits, L->dln,
                                          p[L->head_w].grad, NULL));
        ERASE_CHECK(erase_layernorm_backward(s, N, C, L->a.out, p[L->lnf_w].value, L->h.lnf_mean, L->h.lnf_rstd,
                                             L->dln, L->dout, p[L->lnf_w].grad, p[L->lnf_b].grad));
        if (attached)
            ERASE_CHECK(erase_axpy(s, NC, 1.0f, net->blocks[b + 1].d_in, L->dout));
        dres = L->dout;
    } else {
        dres = net->blocks[b + 1].d_in; /* headless: boundary b+1 is attached */
    }
    /* MLP branch, then the residual */
    ERASE_CHECK(erase_linear_backward(s, N, 4 * C, C, L->a.fcg, p[L->mproj_w].value, dres, L->dbig,
                                      p[L->mproj_w].grad, p[L->mproj_b].grad));
    ERASE_CHECK(erase_gelu_tanh_backward(s, NC * 4, L->a.fch, L->dbig, L->dbig));
    ERASE_CHECK(erase_linear_backward(s, N, C, 4 * C, L->a.ln2, p[L->fc_w].value, L->dbig, L->dln,
                                      p[L->fc_w].grad, p[L->fc_b].grad));
    ERASE_CHECK(erase_layernorm_backward(s, N, C, L->a.x1, p[L->ln2_w].value, L->a.ln2_mean, L->a.ln2_rstd, L->dln,
                                         L->dx1, p[L->ln2_w].grad, p[L->ln2_b].grad));
    ERASE_CHECK(erase_axpy(s, NC, 1.0f, dres, L->dx1));
    /* attention branch, then the residual */
    const float *x = block_input(g, b);
    float *dx = net->blocks[b].d_in ? net->blocks[b].d_in : L->dx_in;
    ERASE_CHECK(erase_linear_backward(s, N, C, C, L->a.atty, p[L->aproj_w].value, L->dx1, L->dln,
                                      p[L->aproj_w].grad, p[L->aproj_b].grad));
    ERASE_CHECK(erase_attention_backward(s, n, g->T, g->H, C, L->a.qkv, L->att, L->dln, L->datt, L->dbig));
    ERASE_CHECK(erase_linear_backward(s, N, C, 3 * C, L->a.ln1, p[L->qkv_w].value, L->dbig, L->dln,
                                      p[L->qkv_w].grad, p[L->qkv_b].grad));
    ERASE_CHECK(erase_layernorm_backward(s, N, C, x, p[L->ln1_w].value, L->a.ln1_mean, L->a.ln1_rstd, L->dln, dx,
                                         p[L->ln1_w].grad, p[L->ln1_b].grad));
    ERASE_CHECK(erase_axpy(s, NC, 1.0f, L->dx1, dx));
    /* block 0: the embeddings; wte's gradient adds to the tied head's */
    if (b == 0)
        ERASE_CHECK(erase_token_embedding_backward(s, n, g->T, C, g->V, batch->tokens, dx, p[g->wte].grad,
                                                   p[g->wpe].grad, g->tied));
    return ERASE_OK;
}

/* ---- generation: one position at a time against key/value caches ---------- */

struct erase_gpt_decoder {
    erase_network_t *net;
    int batch;
    float *kcache[ERASE_MAX_BLOCKS], *vcache[ERASE_MAX_BLOCKS]; /* [batch, T, C] each */
    float *x;                           /* [batch, C]: the residual stream (each layer's out) */
    gpt_acts_t a;                       /* [batch] rows; a.out = x */
    float *scratch;                     /* [batch, H, T] */
    gpt_head_acts_t h;                  /* [batch] rows */
};

erase_status_t erase_gpt_decoder_create(erase_network_t *net, int batch, erase_gpt_decoder_t **out)
{
    if (net->cfg.kind != ERASE_MODEL_GPT)
        return ERASE_ERROR(ERASE_ERR_INVALID, "gpt decoder: the network is a %s model",
                           erase_model_config_name(&net->cfg));
    if (batch < 1)
        return ERASE_ERROR(ERASE_ERR_INVALID, "gpt decoder: batch %d < 1", batch);
    erase_gpt_decoder_t *d = calloc(1, sizeof *d);
    if (!d)
        return ERASE_ERROR(ERASE_ERR_NOMEM, "gpt decoder: no memory");
    d->net = net;
    d->batch = batch;
    const gpt_t *g = gpt_of(net);
    int64_t cache = (int64_t)g->T * g->C;
    erase_status_t st = ERASE_OK;
    for (int k = 0; k < net->nblocks && st == ERASE_OK; k++) {
        st = erase_network_alloc(net, (void **)&d->kcache[k], sizeof(float), batch, cache);
        if (st == ERASE_OK)
            st = erase_network_alloc(net, (void **)&d->vcache[k], sizeof(float), batch, cache);
    }
    if (st == ERASE_OK)
        st = erase_network_alloc(net, (void **)&d->x, sizeof(float), batch, g->C);
    if (st == ERASE_OK)
        st = alloc_acts(net, batch, g->C, &d->a, 0);
    if (st == ERASE_OK)
        st = erase_network_alloc(net, (void **)&d->scratch, sizeof(float), batch, (int64_t)g->H * g->T);
    if (st == ERASE_OK)
        st = alloc_head_acts(net, batch, g->C, g->V, &d->h);
    d->a.out = d->x;
    if (st != ERASE_OK) {
        erase_error_trail(__FILE__, __LINE__);
        erase_gpt_decoder_destroy(d);
        return st;
    }
    *out = d;
    return ERASE_OK;
}

void erase_gpt_decoder_destroy(erase_gpt_decoder_t *d)
{
    if (!d)
        return;
    erase_network_t *net = d->net;
    for (int k = 0; k < ERASE_MAX_BLOCKS; k++) {
        erase_free(net->dev, d->kcache[k]);
        erase_free(net->dev, d->vcache[k]);
    }
    d->a.out = NULL; /* d->x, freed here */
    free_acts(net, &d->a);
    erase_free(net->dev, d->x);
    erase_free(net->dev, d->scratch);
    free_head_acts(net, &d->h);
    free(d);
}

erase_status_t erase_gpt_decode_step(erase_gpt_decoder_t *d, erase_stream_t *s, int t, const int32_t *tokens,
                                     const float **logits)
{
    erase_network_t *net = d->net;
    const gpt_t *g = gpt_of(net);
    const erase_param_t *p = net->params;
    if (t < 0 || t >= g->T)
        return ERASE_ERROR(ERASE_ERR_INVALID, "gpt decoder: position %d outside the context 0..%d", t, g->T - 1);
    /* one position: wpe's row t is the whole position table of T = 1 */
    ERASE_CHECK(erase_token_embedding_forward(s, d->batch, 1, g->C, g->V, tokens, p[g->wte].value,
                                              p[g->wpe].value + (size_t)t * (size_t)g->C, d->x));
    for (int k = 0; k < net->nblocks; k++) {
        const gpt_layer_t *L = &g->layers[k];
        ERASE_CHECK(attention_in(net, L, s, d->batch, d->x, &d->a));
        ERASE_CHECK(erase_attention_decode(s, d->batch, t, g->T, g->H, g->C, d->a.qkv, d->kcache[k],
                                           d->vcache[k], d->scratch, d->a.atty));
        ERASE_CHECK(attention_out(net, L, s, d->batch, d->x, &d->a));
    }
    ERASE_CHECK(head_forward(net, &g->layers[net->nblocks - 1], s, d->batch, d->x, &d->h));
    *logits = d->h.logits;
    return ERASE_OK;
}

/* T x (6N + 12 L C T), N: every parameter but wpe (network.h). */
static double gpt_flops_per_sample(const erase_network_t *net)
{
    const gpt_t *g = gpt_of(net);
    return erase_network_transformer_flops(net, g->wpe, g->T, g->C);
}

/* The decoder behind the model table (erase_network_decoder_*). */
static erase_status_t gpt_decoder_create(erase_network_t *net, int batch, void **state)
{
    ERASE_CHECK(erase_gpt_decoder_create(net, batch, (erase_gpt_decoder_t **)state));
    return ERASE_OK;
}

static erase_status_t gpt_decode_step(void *state, erase_stream_t *s, int t, const int32_t *tokens,
                                      const float **logits)
{
    ERASE_CHECK(erase_gpt_decode_step(state, s, t, tokens, logits));
    return ERASE_OK;
}

static void gpt_decoder_destroy(void *state) { erase_gpt_decoder_destroy(state); }

const erase_model_impl_t erase_model_gpt = {
    .build = gpt_build,
    .allocate = gpt_allocate,
    .forward_block = gpt_forward_block,
    .backward_block = gpt_backward_block,
    .forward_predict = gpt_forward_predict,
    .body_output = gpt_body_output,
    .head_output = gpt_head_output,
    .flops_per_sample = gpt_flops_per_sample,
    .destroy = gpt_destroy,
    .decoder_create = gpt_decoder_create,
    .decode_step = gpt_decode_step,
    .decoder_destroy = gpt_decoder_destroy,
};
