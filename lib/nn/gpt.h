/*
 * The gpt model's parameters by layer (docs/models.md, `gpt`), for code
 * that runs the model outside the network's block forward: the
 * key/value-cache decode path of generation. The network must be a gpt
 * one (erase_network_config(net)->kind == ERASE_MODEL_GPT).
 */
#ifndef ERASE_NN_GPT_H
#define ERASE_NN_GPT_H

#include "lib/nn/network.h"

/* Layer k's parameters (block k, "h<k>/..."): shapes with C = width. */
typedef struct {
    erase_param_t *wte;          /* [vocab, C] (block 0's, the same for every k) */
    erase_param_t *wpe;          /* [context, C] */
    erase_param_t *ln1_w, *ln1_b;             /* [C] */
    erase_param_t *qkv_w, *qkv_b;             /* [3C, C], [3C] */
    erase_param_t *attn_proj_w, *attn_proj_b; /* [C, C], [C] */
    erase_param_t *ln2_w, *ln2_b;             /* [C] */
    erase_param_t *fc_w, *fc_b;               /* [4C, C], [4C] */
    erase_param_t *mlp_proj_w, *mlp_proj_b;   /* [C, 4C], [C] */
    /* the block's LM head: NULL when the block has none (no cut after it
     * and not the last); head_w is wte when tied (tie_head) */
    erase_param_t *lnf_w, *lnf_b;             /* [C] */
    erase_param_t *head_w;                    /* [vocab, C] */
} erase_gpt_layer_t;

/* Layer k's parameters (0 <= k < layers). Errors: ERASE_ERR_INVALID (not
 * a gpt network, k out of range). */
erase_status_t erase_gpt_layer(erase_network_t *net, int k, erase_gpt_layer_t *out);

/*
 * Generation with a key/value cache: one position of `batch` sequences per
 * step, each costing one position's forward. The decoder holds, per layer,
 * the keys and values of the positions decoded so far (caches [layers]
 * [batch, context, C]) and the activations of one position.
 */
typedef struct erase_gpt_decoder erase_gpt_decoder_t;

/* A decoder of `batch` sequences (1 <= batch) for the gpt network `net`
 * (its parameters are read at every step: not while a stream writes
 * them). Errors: ERASE_ERR_INVALID (not a gpt network, batch < 1, sizes
 * past memory), ERASE_ERR_NOMEM. */
erase_status_t erase_gpt_decoder_create(erase_network_t *net, int batch, erase_gpt_decoder_t **out);
void erase_gpt_decoder_destroy(erase_gpt_decoder_t *d);

/*
 * Enqueue position t (0 <= t < context) of every sequence: tokens [batch]
 * int32 (device memory, in [0, vocab)) are the tokens at position t; their
 * keys and values enter the caches at row t, and *logits (device [batch,
 * vocab], the decoder's buffer, valid until the next step) is the last
 * block's head output for position t: what the training forward gives at
 * position t for the same tokens at 0..t. Positions 0..t-1 must have been
 * decoded before (in order; t = 0 starts new sequences). Errors:
 * ERASE_ERR_INVALID (t out of range), those of the ops.
 */
erase_status_t erase_gpt_decode_step(erase_gpt_decoder_t *d, erase_stream_t *s, int t, const int32_t *tokens,
                                     const float **logits);

/* LayerNorm epsilon of every LayerNorm of the model (GPT-2's). */
#define ERASE_GPT_LN_EPS 1e-5f

#endif
