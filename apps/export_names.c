/*
 * erase's parameter names in other frameworks' safetensors files
 * (export_names.h).
 */
#include "apps/export_names.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const NAMES[] = { [EXPORT_ERASE] = "erase", [EXPORT_HF_GPT2] = "hf-gpt2",
                                     [EXPORT_TORCH] = "torch" };

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
        return ERASE_ERROR(ERASE_ERR_INVALID, "%s hf-gpt2: the model is %s; hf-gpt2 holds gpt models only (--format "
                           "erase holds any)", option, model);
    if (f == EXPORT_TORCH && cfg->kind == ERASE_MODEL_GPT)
        return ERASE_ERROR(ERASE_ERR_INVALID, "%s torch: the model is gpt; torch holds ctr and mlp models (gpt: "
                           "hf-gpt2 or erase)", option);
    return ERASE_OK;
}

/* The paths of a gpt layer's parameters below h<k>/ (docs/models.md) and
 * whether HF stores the weight as a Conv1D ([in, out]). */
static const struct {
    const char *path;
    int conv1d;
} GPT_LAYER[] = {
    { "ln_1/weight", 0 },       { "ln_1/bias", 0 },       { "attn/c_attn/weight", 1 }, { "attn/c_attn/bias", 0 },
    { "attn/c_proj/weight", 1 }, { "attn/c_proj/bias", 0 }, { "ln_2/weight", 0 },        { "ln_2/bias", 0 },
    { "mlp/c_fc/weight", 1 },    { "mlp/c_fc/bias", 0 },    { "mlp/c_proj/weight", 1 },  { "mlp/c_proj/bias", 0 },
};

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

static erase_status_t hf_gpt2_name(const erase_model_config_t *cfg, const char *name, char *out, size_t size,
                                   export_action_t *action)
{
    *action = EXPORT_KEEP;
    int k, used = 0;
    if (sscanf(name, "h%d/%n", &k, &used) == 1 && used > 0 && k >= 0 && k < cfg->gpt.layers) {
        const char *path = name + used;
        char prefix[48];
        snprintf(prefix, sizeof prefix, "transformer.h.%d.", k);
        if (k == 0 && (!strcmp(path, "wte") || !strcmp(path, "wpe")))
            return dotted("transformer.", path, ".weight", out, size) ? too_long(name)
                                                                       : ERASE_OK;
        for (size_t i = 0; i < sizeof GPT_LAYER / sizeof GPT_LAYER[0]; i++)
            if (!strcmp(path, GPT_LAYER[i].path)) {
                *action = GPT_LAYER[i].conv1d ? EXPORT_TRANSPOSE : EXPORT_KEEP;
                return dotted(prefix, path, "", out, size) ? too_long(name) : ERASE_OK;
            }
        int head = !strcmp(path, "ln_f/weight") || !strcmp(path, "ln_f/bias") || !strcmp(path, "lm_head/weight");
        if (head && k < cfg->gpt.layers - 1) {
            *action = EXPORT_DROP;
            snprintf(out, size, "%s", name);
            return ERASE_OK;
        }
        if (head && !strcmp(path, "lm_head/weight")) {
            snprintf(out, size, "lm_head.weight");
            return ERASE_OK;
        }
        if (head) {
            snprintf(out, size, "transformer.%s", !strcmp(path, "ln_f/weight") ? "ln_f.weight" : "ln_f.bias");
            return ERASE_OK;
        }
    }
    return ERASE_ERROR(ERASE_ERR_INVALID, "hf-gpt2: no Hugging Face name for parameter %s", name);
}

erase_status_t export_name(export_format_t f, const erase_model_config_t *cfg, const char *erase_name, char *out,
                           size_t size, export_action_t *action)
{
    *action = EXPORT_KEEP;
    if (f == EXPORT_HF_GPT2)
        return hf_gpt2_name(cfg, erase_name, out, size, action);
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
