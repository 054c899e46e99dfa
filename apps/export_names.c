/*
 * erase's parameter names in other frameworks' safetensors files
 * (export_names.h).
 */
#include "apps/export_names.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const NAMES[] = { [EXPORT_ERASE] = "erase", [EXPORT_HF_GPT2] = "hf-gpt2",
                                     [EXPORT_TORCH] = "torch", [EXPORT_NANOCHAT] = "nanochat" };

int export_format_parse(const char *name, export_format_t *f)
{
    for (int i = 0; i < (int)(sizeof NAMES / sizeof NAMES[0]); i++)
        if (!strcmp(name, NAMES[i])) {
            *f = (export_format_t)i;
            return 0;
        }
    return -1;
}

const char *export_format_name(export_format_t f) { return NAMES[f]; }

erase_status_t export_format_fits(export_format_t f, const erase_model_config_t *cfg, const char *option)
{
    const char *model = erase_model_config_name(cfg);
    if (f == EXPORT_HF_GPT2 && cfg->kind != ERASE_MODEL_GPT)
        return ERASE_ERROR(ERASE_ERR_INVALID, "%s hf-gpt2: the model is %s; hf-gpt2 holds gpt models only (%s "
                           "erase holds any)", option, model, option);
    if (f == EXPORT_NANOCHAT && cfg->kind != ERASE_MODEL_NANOCHAT)
        return ERASE_ERROR(ERASE_ERR_INVALID, "%s nanochat: the model is %s; nanochat holds nanochat models only "
                           "(%s erase holds any)", option, model, option);
    if (f == EXPORT_TORCH && (cfg->kind == ERASE_MODEL_GPT || cfg->kind == ERASE_MODEL_NANOCHAT))
        return ERASE_ERROR(ERASE_ERR_INVALID, "%s torch: the model is %s; torch holds ctr, dcn and mlp models (%s: "
                           "%s or erase)", option, model, model, cfg->kind == ERASE_MODEL_GPT ? "hf-gpt2" : "nanochat");
    return ERASE_OK;
}

/* A layer parameter's path below h<k>/ (docs/models.md) and whether the
 * format stores its weight transposed (HF's Conv1D: [in, out]). */
typedef struct {
    const char *path;
    int transposed;
} layer_path_t;

static const layer_path_t GPT_LAYER[] = {
    { "ln_1/weight", 0 },       { "ln_1/bias", 0 },       { "attn/c_attn/weight", 1 }, { "attn/c_attn/bias", 0 },
    { "attn/c_proj/weight", 1 }, { "attn/c_proj/bias", 0 }, { "ln_2/weight", 0 },        { "ln_2/bias", 0 },
    { "mlp/c_fc/weight", 1 },    { "mlp/c_fc/bias", 0 },    { "mlp/c_proj/weight", 1 },  { "mlp/c_proj/bias", 0 },
    { NULL, 0 },
};

/* nanochat's Block (nanochat/gpt.py): Linear weights, no biases, as erase stores them. */
static const layer_path_t NANOCHAT_LAYER[] = {
    { "attn/c_q/weight", 0 },    { "attn/c_k/weight", 0 }, { "attn/c_v/weight", 0 }, { "attn/c_proj/weight", 0 },
    { "mlp/c_fc/weight", 0 },    { "mlp/c_proj/weight", 0 }, { NULL, 0 },
};

/* A transformer format (hf-gpt2, nanochat): the paths of block h0's
 * embeddings (transformer.<path>.<suffix>), of a layer and of a head
 * (the last block's: transformer.<path>, lm_head.weight as it is; a
 * local one's: dropped). */
typedef struct {
    const char *who; /* whose names, in messages */
    const char *const *embeddings;
    const char *embedding_suffix;
    const layer_path_t *layer;
    const char *const *head;
} transformer_names_t;

static const char *const GPT_EMBEDDINGS[] = { "wte", "wpe", NULL };
static const char *const GPT_HEAD[] = { "ln_f/weight", "ln_f/bias", "lm_head/weight", NULL };
static const char *const NANOCHAT_EMBEDDINGS[] = { "wte/weight", NULL };
static const char *const NANOCHAT_HEAD[] = { "lm_head/weight", NULL };

static const transformer_names_t HF_GPT2_NAMES = { "Hugging Face", GPT_EMBEDDINGS, ".weight", GPT_LAYER, GPT_HEAD };
static const transformer_names_t NANOCHAT_NAMES = { "nanochat", NANOCHAT_EMBEDDINGS, "", NANOCHAT_LAYER,
                                                    NANOCHAT_HEAD };

/* Whether `path` is one of the NULL-ended list. */
static int listed(const char *const *list, const char *path)
{
    for (; *list; list++)
        if (!strcmp(*list, path))
            return 1;
    return 0;
}

/* `path` with '/' as '.' after `prefix` into out[size]: 0, or -1 when it does not fit. */
static int dotted(const char *prefix, const char *path, const char *suffix, char *out, size_t size)
{
    int n = snprintf(out, size, "%s%s%s", prefix, path, suffix);
    if (n < 0 || (size_t)n >= size)
        return -1;
    for (char *c = out + strlen(prefix); *c; c++)
        if (*c == '/')
            *c = '.';
    return 0;
}

static erase_status_t too_long(const char *name)
{
    return ERASE_ERROR(ERASE_ERR_INVALID, "parameter %s: its exported name is too long", name);
}

/* The name in format f (hf-gpt2 or nanochat, described by `names`) of
 * parameter `name` of a transformer of `layers` blocks. */
static erase_status_t transformer_name(export_format_t f, const transformer_names_t *names, int layers,
                                       const char *name, char *out, size_t size, export_action_t *action)
{
    *action = EXPORT_KEEP;
    int k, used = 0;
    if (sscanf(name, "h%d/%n", &k, &used) == 1 && used > 0 && k >= 0 && k < layers) {
        const char *path = name + used;
        char prefix[48];
        snprintf(prefix, sizeof prefix, "transformer.h.%d.", k);
        if (k == 0 && listed(names->embeddings, path))
            return dotted("transformer.", path, names->embedding_suffix, out, size) ? too_long(name) : ERASE_OK;
        for (const layer_path_t *l = names->layer; l->path; l++)
            if (!strcmp(path, l->path)) {
                *action = l->transposed ? EXPORT_TRANSPOSE : EXPORT_KEEP;
                return dotted(prefix, path, "", out, size) ? too_long(name) : ERASE_OK;
            }
        if (listed(names->head, path)) {
            if (k < layers - 1) {
                *action = EXPORT_DROP;
                snprintf(out, size, "%s", name);
                return ERASE_OK;
            }
            if (!strcmp(path, "lm_head/weight")) {
                snprintf(out, size, "lm_head.weight");
                return ERASE_OK;
            }
            return dotted("transformer.", path, "", out, size) ? too_long(name) : ERASE_OK;
        }
    }
    return ERASE_ERROR(ERASE_ERR_INVALID, "%s: no %s name for parameter %s", NAMES[f], names->who, name);
}

/* dcn in torch: TorchRec's DLRM_DCN state dict (torchrec/models/dlrm.py,
 * docs/models.md): "<block>/" dropped and '/' as '.', a table input/emb/<f>
 * as sparse_arch.embedding_bag_collection.embedding_bags.t_cat_<f>.weight
 * (torchrec_dlrm's table names), a local head dropped (DLRM_DCN has none). */
static erase_status_t torchrec_dcn_name(const char *name, char *out, size_t size, export_action_t *action)
{
    int table = -1, used = 0;
    const char *path = strchr(name, '/');
    if (sscanf(name, "input/emb/%d%n", &table, &used) == 1 && !name[used]) {
        if (snprintf(out, size, "sparse_arch.embedding_bag_collection.embedding_bags.t_cat_%d.weight", table) >=
            (int)size)
            return too_long(name);
        return ERASE_OK;
    }
    if (!path)
        return ERASE_ERROR(ERASE_ERR_INVALID, "torch: no TorchRec name for parameter %s", name);
    if (!strncmp(path + 1, "head/", 5)) {
        *action = EXPORT_DROP;
        snprintf(out, size, "%s", name);
        return ERASE_OK;
    }
    return dotted("", path + 1, "", out, size) ? too_long(name) : ERASE_OK;
}

erase_status_t export_name(export_format_t f, const erase_model_config_t *cfg, const char *erase_name, char *out,
                           size_t size, export_action_t *action)
{
    *action = EXPORT_KEEP;
    if (f == EXPORT_HF_GPT2)
        return transformer_name(f, &HF_GPT2_NAMES, cfg->gpt.layers, erase_name, out, size, action);
    if (f == EXPORT_NANOCHAT)
        return transformer_name(f, &NANOCHAT_NAMES, cfg->nanochat.layers, erase_name, out, size, action);
    if (f == EXPORT_TORCH && cfg->kind == ERASE_MODEL_DCN)
        return torchrec_dcn_name(erase_name, out, size, action);
    int table = -1, used = 0;
    const char *suffix = f == EXPORT_TORCH && cfg->kind == ERASE_MODEL_CTR &&
                                 sscanf(erase_name, "input/emb/%d%n", &table, &used) == 1 && !erase_name[used]
                             ? ".weight"
                             : "";
    if (f == EXPORT_ERASE ? snprintf(out, size, "%s", erase_name) >= (int)size
                          : dotted("", erase_name, suffix, out, size) != 0)
        return ERASE_ERROR(ERASE_ERR_INVALID, "%s: parameter %s: the name is too long", NAMES[f], erase_name);
    return ERASE_OK;
}
