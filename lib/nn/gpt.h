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
     * and not the last); head_w is wte when tied (no cuts) */
    erase_param_t *lnf_w, *lnf_b;             /* [C] */
    erase_param_t *head_w;                    /* [vocab, C] */
} erase_gpt_layer_t;

/* Layer k's parameters (0 <= k < layers). Errors: ERASE_ERR_INVALID (not
 * a gpt network, k out of range). */
erase_status_t erase_gpt_layer(erase_network_t *net, int k, erase_gpt_layer_t *out);

/* LayerNorm epsilon of every LayerNorm of the model (GPT-2's). */
#define ERASE_GPT_LN_EPS 1e-5f

#endif
