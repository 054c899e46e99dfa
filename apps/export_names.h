/*
 * The names and layouts of erase's parameters in other frameworks'
 * safetensors files (issue 37; docs/export.md): what erase-export writes
 * and erase-train --init-from FILE.safetensors reads back, one table for
 * both directions.
 *
 * Formats:
 *   erase    erase's own names (<block>/<path>, docs/models.md), shapes as
 *            in checkpoints; any model.
 *   hf-gpt2  Hugging Face transformers' GPT2LMHeadModel state dict
 *            (modeling_gpt2.py): transformer.wte.weight, transformer.wpe.weight,
 *            transformer.h.<k>.{ln_1,attn.c_attn,attn.c_proj,ln_2,mlp.c_fc,
 *            mlp.c_proj}.{weight,bias}, transformer.ln_f.{weight,bias} (the
 *            last block's head LayerNorm), lm_head.weight (only when untied:
 *            tied, GPT2LMHeadModel takes it from wte, and save_pretrained
 *            leaves it out). HF's attention and MLP projections are Conv1D
 *            modules whose weight is [in, out], the transpose of erase's
 *            (PyTorch Linear's) [out, in]: those are transposed. The local
 *            heads of a gpt with cuts (h<k>/ln_f, h<k>/lm_head for k below
 *            the last block) have no place in GPT2LMHeadModel: they are
 *            dropped (erase-export says so). gpt only.
 *   torch    a PyTorch state dict of modules named as erase's blocks and
 *            layers (bench/compat-export.py's DLRM and MLP modules): '/'
 *            becomes '.', and a ctr embedding table input/emb/<f> (an
 *            nn.Embedding in an nn.ModuleList) is input.emb.<f>.weight.
 *            ctr and mlp only.
 *   nanochat Karpathy's nanochat GPT state dict (nanochat/gpt.py; the
 *            PyTorch reference tests/reference/make_nanochat_reference.py):
 *            transformer.wte.weight, transformer.h.<k>.{attn.c_q,attn.c_k,
 *            attn.c_v,attn.c_proj,mlp.c_fc,mlp.c_proj}.weight (Linear
 *            weights [out, in], as erase's), lm_head.weight (the last
 *            block's head; never tied in nanochat). A local head of a
 *            nanochat with cuts (h<k>/lm_head/weight, k below the last
 *            block) has no place there: dropped, as for hf-gpt2. nanochat
 *            only.
 */
#ifndef ERASE_APPS_EXPORT_NAMES_H
#define ERASE_APPS_EXPORT_NAMES_H

#include <stddef.h>

#include "lib/core/status.h"
#include "lib/nn/model_config.h"

typedef enum { EXPORT_ERASE = 0, EXPORT_HF_GPT2 = 1, EXPORT_TORCH = 2, EXPORT_NANOCHAT = 3 } export_format_t;

/* The format named `name` ("erase", "hf-gpt2", "torch", "nanochat") into *f: 0, or -1. */
int export_format_parse(const char *name, export_format_t *f);
const char *export_format_name(export_format_t f);

/*
 * Whether `f` can hold a model of cfg's kind: ERASE_OK, else
 * ERASE_ERR_INVALID "--format hf-gpt2: the model is ctr; hf-gpt2 holds
 * gpt models only (--format erase holds any)". `option` names the
 * option in the message ("--format", "--init-format").
 */
erase_status_t export_format_fits(export_format_t f, const erase_model_config_t *cfg, const char *option);

/* What becomes of one parameter. */
typedef enum {
    EXPORT_KEEP = 0,      /* written under `name` */
    EXPORT_TRANSPOSE = 1, /* written under `name`, transposed ([out, in] -> [in, out]) */
    EXPORT_DROP = 2       /* no place in the format (a local head in hf-gpt2, nanochat or dcn's torch) */
} export_action_t;

/*
 * The name in format `f` of erase's parameter `erase_name` of a model of
 * config `cfg` (whose kind export_format_fits) into out[size], and what
 * becomes of it. Errors: ERASE_ERR_INVALID when the parameter is not one
 * of the format's model ("hf-gpt2: no Hugging Face name for parameter
 * h0/foo") or the name does not fit.
 */
erase_status_t export_name(export_format_t f, const erase_model_config_t *cfg, const char *erase_name, char *out,
                           size_t size, export_action_t *action);

#endif
