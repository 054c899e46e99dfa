/*
 * Key/value-cache decoding of a gpt network (lib/nn/gpt_decode.h): the
 * block forward of lib/nn/gpt.c for one position of each sequence, with
 * erase_attention_decode in place of the whole window's attention.
 */
#include "lib/nn/gpt_decode.h"

#include "lib/core/checked.h"
#include "lib/nn/gpt.h"
#include "lib/ops/ops.h"

#include <stdlib.h>

struct erase_gpt_decoder {
    erase_network_t *net;
    erase_device_t *dev;
    int batch, layers, T, C, H, V;
    erase_gpt_layer_t p[ERASE_MAX_BLOCKS];
    const erase_param_t *lnf_w, *lnf_b, *head_w;  /* the last block's head */
    float *kcache[ERASE_MAX_BLOCKS], *vcache[ERASE_MAX_BLOCKS]; /* [batch, T, C] */
    float *x, *x1, *ln, *mean, *rstd;  /* [batch, C], [batch], [batch] */
    float *qkv;                        /* [batch, 3C] */
    float *atty, *branch;              /* [batch, C] */
    float *fc;                         /* [batch, 4C] */
    float *scratch;                    /* [batch, H, T] */
    float *logits;                     /* [batch, V] */
};

/* Device memory for a x b floats, the size overflow-checked. */
static erase_status_t alloc_floats(erase_gpt_decoder_t *d, float **ptr, int64_t a, int64_t b)
{
    size_t bytes;
    if (!erase_bytes(sizeof(float), a, b, &bytes))
        return ERASE_ERROR(ERASE_ERR_INVALID, "gpt decoder: a buffer of %lld x %lld floats is larger than memory "
                           "can address (batch %d)", (long long)a, (long long)b, d->batch);
    ERASE_CHECK(erase_malloc(d->dev, bytes, (void **)ptr));
    return ERASE_OK;
}

static erase_status_t decoder_init(erase_gpt_decoder_t *d)
{
    int64_t B = d->batch, C = d->C, rows;
    if (!erase_mul_i64(B, d->T, &rows))
        return ERASE_ERROR(ERASE_ERR_INVALID, "gpt decoder: batch %d x context %d is too large", d->batch, d->T);
    for (int k = 0; k < d->layers; k++) {
        ERASE_CHECK(erase_gpt_layer(d->net, k, &d->p[k]));
        ERASE_CHECK(alloc_floats(d, &d->kcache[k], rows, C));
        ERASE_CHECK(alloc_floats(d, &d->vcache[k], rows, C));
    }
    const erase_gpt_layer_t *last = &d->p[d->layers - 1];
    if (!last->lnf_w || !last->lnf_b || !last->head_w)
        return ERASE_ERROR(ERASE_ERR_INVALID, "gpt decoder: the last block, h%d, has no LM head", d->layers - 1);
    d->lnf_w = last->lnf_w;
    d->lnf_b = last->lnf_b;
    d->head_w = last->head_w;
    float **bc[] = { &d->x, &d->x1, &d->ln, &d->atty, &d->branch };
    for (size_t i = 0; i < sizeof bc / sizeof bc[0]; i++)
        ERASE_CHECK(alloc_floats(d, bc[i], B, C));
    ERASE_CHECK(alloc_floats(d, &d->mean, B, 1));
    ERASE_CHECK(alloc_floats(d, &d->rstd, B, 1));
    ERASE_CHECK(alloc_floats(d, &d->qkv, B, 3 * C));
    ERASE_CHECK(alloc_floats(d, &d->fc, B, 4 * C));
    ERASE_CHECK(alloc_floats(d, &d->scratch, B * d->H, d->T));
    ERASE_CHECK(alloc_floats(d, &d->logits, B, d->V));
    return ERASE_OK;
}

erase_status_t erase_gpt_decoder_create(erase_network_t *net, int batch, erase_gpt_decoder_t **out)
{
    *out = NULL;
    const erase_model_config_t *cfg = erase_network_config(net);
    if (cfg->kind != ERASE_MODEL_GPT)
        return ERASE_ERROR(ERASE_ERR_INVALID, "gpt decoder: the network is a %s model, not gpt",
                           erase_model_config_name(cfg));
    if (batch < 1)
        return ERASE_ERROR(ERASE_ERR_INVALID, "gpt decoder: batch %d (expected >= 1)", batch);
    erase_gpt_decoder_t *d = calloc(1, sizeof *d);
    if (!d)
        return ERASE_ERROR(ERASE_ERR_NOMEM, "gpt decoder: no memory");
    *d = (erase_gpt_decoder_t){ .net = net, .dev = erase_network_device(net), .batch = batch,
                                .layers = erase_network_blocks(net), .T = cfg->gpt.context, .C = cfg->gpt.width,
                                .H = cfg->gpt.heads, .V = cfg->gpt.vocab };
    erase_status_t st = decoder_init(d);
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
    for (int k = 0; k < d->layers; k++) {
        erase_free(d->dev, d->kcache[k]);
        erase_free(d->dev, d->vcache[k]);
    }
    float *bufs[] = { d->x, d->x1, d->ln, d->mean, d->rstd, d->qkv, d->atty, d->branch, d->fc, d->scratch,
                      d->logits };
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++)
        erase_free(d->dev, bufs[i]);
    free(d);
}

const float *erase_gpt_decoder_logits(const erase_gpt_decoder_t *d)
{
    return d->logits;
}

/* Layer k at position t: x = x1 + MLP(ln_2(x1)), x1 = x + attention(ln_1(x)). */
static erase_status_t layer_step(erase_gpt_decoder_t *d, erase_stream_t *s, int k, int t)
{
    const erase_gpt_layer_t *p = &d->p[k];
    int B = d->batch, C = d->C;
    size_t BC = (size_t)B * (size_t)C;
    ERASE_CHECK(erase_layernorm_forward(s, B, C, ERASE_GPT_LN_EPS, d->x, p->ln1_w->value, p->ln1_b->value, d->ln,
                                        d->mean, d->rstd));
    ERASE_CHECK(erase_linear_forward(s, B, C, 3 * C, d->ln, p->qkv_w->value, p->qkv_b->value, d->qkv));
    ERASE_CHECK(erase_attention_decode(s, B, t, d->T, d->H, C, d->qkv, d->kcache[k], d->vcache[k], d->scratch,
                                       d->atty));
    ERASE_CHECK(erase_linear_forward(s, B, C, C, d->atty, p->attn_proj_w->value, p->attn_proj_b->value, d->x1));
    ERASE_CHECK(erase_axpy(s, BC, 1.0f, d->x, d->x1));
    ERASE_CHECK(erase_layernorm_forward(s, B, C, ERASE_GPT_LN_EPS, d->x1, p->ln2_w->value, p->ln2_b->value, d->ln,
                                        d->mean, d->rstd));
    ERASE_CHECK(erase_linear_forward(s, B, C, 4 * C, d->ln, p->fc_w->value, p->fc_b->value, d->fc));
    ERASE_CHECK(erase_gelu_tanh_forward(s, BC * 4, d->fc, d->fc));
    ERASE_CHECK(erase_linear_forward(s, B, 4 * C, C, d->fc, p->mlp_proj_w->value, p->mlp_proj_b->value, d->x));
    ERASE_CHECK(erase_axpy(s, BC, 1.0f, d->x1, d->x));
    return ERASE_OK;
}

erase_status_t erase_gpt_decode(erase_gpt_decoder_t *d, erase_stream_t *s, int t, const int32_t *tokens)
{
    if (t < 0 || t >= d->T)
        return ERASE_ERROR(ERASE_ERR_INVALID, "gpt decoder: position %d is outside the model's context of %d "
                           "positions (0 .. %d)", t, d->T, d->T - 1);
    int C = d->C;
    /* T = 1: wpe's row t is the position table of this one position */
    ERASE_CHECK(erase_token_embedding_forward(s, d->batch, 1, C, d->V, tokens, d->p[0].wte->value,
                                              d->p[0].wpe->value + (size_t)t * (size_t)C, d->x));
    for (int k = 0; k < d->layers; k++)
        ERASE_CHECK(layer_step(d, s, k, t));
    ERASE_CHECK(erase_layernorm_forward(s, d->batch, C, ERASE_GPT_LN_EPS, d->x, d->lnf_w->value, d->lnf_b->value,
                                        d->ln, d->mean, d->rstd));
    ERASE_CHECK(erase_linear_forward(s, d->batch, C, d->V, d->ln, d->head_w->value, NULL, d->logits));
    return ERASE_OK;
}
