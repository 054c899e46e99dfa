/*
 * A model configuration as the text of a model file
 * (erase_model_config_format, lib/nn/model_config.h): what
 * erase_model_config_parse reads back into the same configuration. Integers
 * beyond 32 bits get libconfig 1.5's L suffix; floats are written with 9
 * significant digits, which read back as the same float.
 */
#include "lib/nn/model_config.h"
#include "lib/nn/model_config_internal.h"

#include <limits.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

typedef struct {
    char *text;
    int size;
    long len; /* what the whole text needs, even past size */
} writer_t;

static void put(writer_t *w, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void put(writer_t *w, const char *fmt, ...)
{
    bool room = w->len < w->size;
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(room ? w->text + w->len : NULL, room ? (size_t)(w->size - w->len) : 0, fmt, ap);
    va_end(ap);
    w->len += n > 0 ? n : 0;
}

/* An integer libconfig 1.5 reads back: beyond 32 bits it needs the L suffix
 * (`wide`: write it anyway, as every element of an array must have the
 * same type). */
static void put_integer(writer_t *w, unsigned long long v, bool wide)
{
    put(w, wide || v > INT_MAX ? "%lluL" : "%llu", v);
}

static void put_int_list(writer_t *w, const int *v, int n)
{
    put(w, "[");
    for (int i = 0; i < n; i++)
        put(w, i ? ", %d" : "%d", v[i]);
    put(w, "]");
}

static void put_cuts(writer_t *w, uint32_t mask, int blocks)
{
    if (mask == model_config_all_cuts(blocks)) {
        put(w, "\"all\"");
    } else if (mask == 0) {
        put(w, "\"none\"");
    } else {
        const char *sep = "";
        put(w, "[");
        for (int c = 1; c < blocks; c++)
            if (mask & (UINT32_C(1) << c)) {
                put(w, "%s%d", sep, c);
                sep = ", ";
            }
        put(w, "]");
    }
}

/* A float that reads back as the same float, and as a float ("1.0", not "1"). */
static void put_float(writer_t *w, float x)
{
    char buf[48];
    snprintf(buf, sizeof buf, "%.9g", (double)x);
    put(w, strpbrk(buf, ".eni") ? "%s" : "%s.0", buf);
}

/* Whether the text of `cfg` can be written at all (kind, list lengths,
 * boundaries, the seed and gpt's tie_head within what the file format can
 * say). */
static bool formattable(const erase_model_config_t *cfg)
{
    if (cfg->kind != ERASE_MODEL_CTR && cfg->kind != ERASE_MODEL_MLP && cfg->kind != ERASE_MODEL_GPT &&
        cfg->kind != ERASE_MODEL_NANOCHAT && cfg->kind != ERASE_MODEL_DCN)
        return false;
    if (cfg->kind == ERASE_MODEL_DCN &&
        (cfg->dcn.cross_layers < 1 || cfg->dcn.cross_layers > ERASE_MAX_LAYERS || cfg->dcn.top_layers < 2 ||
         cfg->dcn.top_layers > ERASE_MAX_LAYERS))
        return false;
    if (cfg->seed > (uint64_t)LLONG_MAX)
        return false;
    int layers = erase_model_config_has_tables(cfg) ? cfg->ctr.bottom_layers
                 : cfg->kind == ERASE_MODEL_MLP ? cfg->mlp.hidden_layers
                 : cfg->kind == ERASE_MODEL_GPT ? cfg->gpt.layers
                                                : cfg->nanochat.layers;
    int most = cfg->kind == ERASE_MODEL_GPT || cfg->kind == ERASE_MODEL_NANOCHAT ? ERASE_MAX_GPT_LAYERS
                                                                                 : ERASE_MAX_LAYERS; /* the parser's */
    if (layers < 1 || layers > most)
        return false;
    int blocks = erase_model_config_blocks(cfg);
    if (blocks < 1 || blocks > ERASE_MAX_BLOCKS || (cfg->cut_mask & ~model_config_all_cuts(blocks)) != 0)
        return false;
    return model_config_resolve_tie(cfg) >= 0;
}

int erase_model_config_format(const erase_model_config_t *cfg, char *text, int size)
{
    if (!cfg || !text || size <= 0 || !formattable(cfg))
        return -1;
    writer_t w = { text, size, 0 };
    put(&w, "model = \"%s\";\nseed = ", erase_model_config_name(cfg));
    put_integer(&w, cfg->seed, false);
    put(&w, ";\n%s: {\n", erase_model_config_name(cfg));
    if (erase_model_config_has_tables(cfg)) {
        if (cfg->ctr.pooling == ERASE_POOLING_MEAN) /* the default, sum, is not written: older text stays */
            put(&w, "  pooling = \"mean\";\n");
        put(&w, "  embedding_dim = %d;\n  table_rows = ", cfg->ctr.embedding_dim);
        bool same = true, wide = false;
        for (int f = 0; f < ERASE_CTR_FIELDS; f++) {
            same = same && cfg->ctr.table_rows[f] == cfg->ctr.table_rows[0];
            wide = wide || cfg->ctr.table_rows[f] > INT_MAX;
        }
        if (cfg->ctr.table_rows_from_data) {
            put(&w, "\"data\"");
        } else if (same) {
            put_integer(&w, cfg->ctr.table_rows[0], false);
        } else {
            for (int f = 0; f < ERASE_CTR_FIELDS; f++) {
                put(&w, "%s", f ? ", " : "[");
                put_integer(&w, cfg->ctr.table_rows[f], wide);
            }
            put(&w, "]");
        }
        put(&w, ";\n  bottom_mlp = ");
        put_int_list(&w, cfg->ctr.bottom_mlp, cfg->ctr.bottom_layers);
        if (cfg->kind == ERASE_MODEL_DCN) {
            put(&w, ";\n  cross_layers = %d;\n  cross_rank = %d;\n  top_mlp = ", cfg->dcn.cross_layers,
                cfg->dcn.cross_rank);
            put_int_list(&w, cfg->dcn.top_mlp, cfg->dcn.top_layers);
            put(&w, ";\n");
        } else {
            put(&w, ";\n  subarch_width = %d;\n  subarchs = %d;\n", cfg->ctr.subarch_width, cfg->ctr.subarchs);
        }
        bool multi = false;
        for (int f = 0; f < ERASE_CTR_FIELDS; f++)
            multi = multi || cfg->ctr.hotness[f] != 1;
        for (int f = 0; multi && f < ERASE_CTR_FIELDS; f++)
            put(&w, "%s%u", f ? ", " : "  hotness = [", (unsigned)cfg->ctr.hotness[f]);
        if (multi)
            put(&w, "];\n");
    } else if (cfg->kind == ERASE_MODEL_GPT) {
        put(&w, "  layers = %d;\n  heads = %d;\n  width = %d;\n  context = %d;\n  vocab = %d;\n",
            cfg->gpt.layers, cfg->gpt.heads, cfg->gpt.width, cfg->gpt.context, cfg->gpt.vocab);
    } else if (cfg->kind == ERASE_MODEL_NANOCHAT) {
        put(&w, "  layers = %d;\n  heads = %d;\n  kv_heads = %d;\n  width = %d;\n  context = %d;\n  vocab = %d;\n",
            cfg->nanochat.layers, cfg->nanochat.heads, cfg->nanochat.kv_heads, cfg->nanochat.width,
            cfg->nanochat.context, cfg->nanochat.vocab);
        put(&w, "  softcap = ");
        put_float(&w, cfg->nanochat.softcap);
        put(&w, ";\n");
    } else {
        put(&w, "  inputs = %d;\n  hidden = ", cfg->mlp.inputs);
        put_int_list(&w, cfg->mlp.hidden, cfg->mlp.hidden_layers);
        put(&w, ";\n  classes = %d;\n", cfg->mlp.classes);
    }
    put(&w, "  cuts = ");
    put_cuts(&w, cfg->cut_mask, erase_model_config_blocks(cfg));
    put(&w, ";\n  local_loss_weight = ");
    put_float(&w, cfg->local_loss_weight);
    if (cfg->kind == ERASE_MODEL_GPT) {
        put(&w, ";\n  tie_head = %s", model_config_resolve_tie(cfg) ? "true" : "false");
    }
    put(&w, ";\n};\n");
    return w.len < size ? (int)w.len : -1;
}
