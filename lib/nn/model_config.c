/*
 * Model files (lib/nn/model_config.h): libconfig text -> erase_model_config_t
 * (the way back: model_config_format.c).
 *
 * Parsing works on a copy that starts from the reference defaults of the
 * chosen model; the caller's configuration is written only on success. Keys
 * are checked in a fixed order after the unknown-key scan, so that keys
 * depending on others (the last bottom_mlp width on embedding_dim, cuts on
 * the number of blocks) see their final values whatever the order in the
 * file.
 *
 * libconfig 1.5 note: a plain integer literal is 32-bit; larger values need
 * the `L` suffix (3000000000L), which erase_model_config_format writes; a
 * plain one beyond 32 bits, which libconfig would wrap, is refused before
 * libconfig reads the text (lib/core/config_text.h), as are NUL bytes and
 * @include of a directory.
 */
#include "lib/nn/model_config.h"
#include "lib/nn/model_config_internal.h"

#include "lib/core/config_text.h"

#include <errno.h>
#include <float.h>
#include <limits.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <libconfig.h>

static const char *const model_names[] = { "ctr", "mlp", "gpt", "nanochat", "dcn" };
/* The erase-train task (apps/train/task.h) each kind of model serves. */
static const char *const model_tasks[] = { "ctr", "classify", "lm", "lm", "ctr" };
#define MODEL_KINDS ((int)(sizeof model_names / sizeof model_names[0]))

/* model_config_internal.h */
uint32_t model_config_all_cuts(int blocks)
{
    if (blocks < 1)
        return 0;
    return (uint32_t)((((uint64_t)1 << blocks) - 1) & ~(uint64_t)1);
}

void erase_model_config_nanochat_depth(erase_model_config_t *cfg, int layers)
{
    cfg->nanochat.layers = layers;
    cfg->nanochat.width = 64 * layers;
    cfg->nanochat.heads = (cfg->nanochat.width + 127) / 128; /* ceil: at least 1 */
    cfg->nanochat.kv_heads = cfg->nanochat.heads;
}

erase_model_config_t erase_model_config_default(erase_model_kind_t kind)
{
    erase_model_config_t cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.kind = kind;
    cfg.seed = 1;
    cfg.local_loss_weight = 1.0f;
    if (kind == ERASE_MODEL_MLP) {
        cfg.mlp.inputs = 784;
        cfg.mlp.hidden_layers = 3;
        for (int i = 0; i < 3; i++)
            cfg.mlp.hidden[i] = 1024;
        cfg.mlp.classes = 10;
    } else if (kind == ERASE_MODEL_GPT) {
        /* nanoGPT's shakespeare-char size, no cuts (plain backpropagation) */
        cfg.gpt.layers = 6;
        cfg.gpt.heads = 6;
        cfg.gpt.width = 384;
        cfg.gpt.context = 256;
        cfg.gpt.vocab = 256;
        return cfg;
    } else if (kind == ERASE_MODEL_NANOCHAT) {
        erase_model_config_nanochat_depth(&cfg, 4);
        cfg.nanochat.context = 256;
        cfg.nanochat.vocab = 256;
        cfg.nanochat.softcap = 15.0f;
        return cfg;
    } else if (kind == ERASE_MODEL_DCN) {
        /* MLPerf DLRM-DCNv2 (mlcommons/training recommendation_v2/torchrec_dlrm,
         * its run command: --embedding_dim 128 --dense_arch_layer_sizes 512,256,128
         * --over_arch_layer_sizes 1024,1024,512,256,1 --interaction_type dcn
         * --dcn_num_layers 3 --dcn_low_rank_dim 512), tables of 10007 rows
         * (the reference caps Criteo 1TB's at 40M: docs/models.md), no cuts */
        static const int bottom[] = { 512, 256, 128 }, top[] = { 1024, 1024, 512, 256, 1 };
        cfg.ctr.embedding_dim = 128;
        for (int f = 0; f < ERASE_CTR_FIELDS; f++) {
            cfg.ctr.table_rows[f] = 10007;
            cfg.ctr.hotness[f] = 1;
        }
        cfg.ctr.bottom_layers = 3;
        memcpy(cfg.ctr.bottom_mlp, bottom, sizeof bottom);
        cfg.dcn.cross_layers = 3;
        cfg.dcn.cross_rank = 512;
        cfg.dcn.top_layers = 5;
        memcpy(cfg.dcn.top_mlp, top, sizeof top);
        return cfg;
    } else {
        cfg.ctr.embedding_dim = 16;
        for (int f = 0; f < ERASE_CTR_FIELDS; f++) {
            cfg.ctr.table_rows[f] = 10007;
            cfg.ctr.hotness[f] = 1;
        }
        cfg.ctr.bottom_layers = 2;
        cfg.ctr.bottom_mlp[0] = 64;
        cfg.ctr.bottom_mlp[1] = 16;
        cfg.ctr.subarch_width = 256;
        cfg.ctr.subarchs = 6;
        cfg.ctr.pooling = ERASE_POOLING_SUM;
    }
    cfg.cut_mask = model_config_all_cuts(erase_model_config_blocks(&cfg));
    return cfg;
}

const char *erase_model_config_name(const erase_model_config_t *cfg)
{
    return model_names[cfg->kind];
}

int erase_model_config_kind(const char *name, erase_model_kind_t *kind)
{
    for (int k = 0; k < MODEL_KINDS; k++)
        if (name && strcmp(name, model_names[k]) == 0) {
            *kind = (erase_model_kind_t)k;
            return 1;
        }
    return 0;
}

const char *erase_model_config_task(const erase_model_config_t *cfg)
{
    return model_tasks[cfg->kind];
}

/* Why tie_head = true cannot go with cfg's cuts: "true with cuts at
 * boundaries 2, 4: ...". */
static void tie_conflict(const erase_model_config_t *cfg, char *buf, size_t size)
{
    int n = snprintf(buf, size, "true with cuts at boundaries");
    const char *sep = " ";
    for (int c = 1; c < ERASE_MAX_BLOCKS && n > 0 && (size_t)n < size; c++)
        if (cfg->cut_mask & (UINT32_C(1) << c)) {
            n += snprintf(buf + n, size - (size_t)n, "%s%d", sep, c);
            sep = ", ";
        }
    if (n > 0 && (size_t)n < size)
        snprintf(buf + n, size - (size_t)n, ": the tie would carry the last block's gradient across the cuts "
                 "into h0/wte (set tie_head = false, or remove the cuts)");
}

/* model_config_internal.h */
int model_config_resolve_tie(const erase_model_config_t *cfg)
{
    if (cfg->kind != ERASE_MODEL_GPT)
        return 0;
    if (cfg->gpt.tie_head == ERASE_TIE_HEAD_TRUE)
        return cfg->cut_mask == 0 ? 1 : -1;
    return cfg->gpt.tie_head == ERASE_TIE_HEAD_AUTO && cfg->cut_mask == 0;
}

erase_status_t erase_model_config_tied_head(const erase_model_config_t *cfg, int *tied)
{
    int t = model_config_resolve_tie(cfg);
    *tied = t > 0;
    if (t < 0) {
        char why[512];
        tie_conflict(cfg, why, sizeof why);
        return ERASE_ERROR(ERASE_ERR_INVALID, "gpt.tie_head: %s", why);
    }
    return ERASE_OK;
}

const int *erase_model_config_context(const erase_model_config_t *cfg)
{
    return cfg->kind == ERASE_MODEL_GPT ? &cfg->gpt.context
           : cfg->kind == ERASE_MODEL_NANOCHAT ? &cfg->nanochat.context : NULL;
}

int erase_model_config_vocab(const erase_model_config_t *cfg)
{
    return cfg->kind == ERASE_MODEL_GPT ? cfg->gpt.vocab : cfg->kind == ERASE_MODEL_NANOCHAT ? cfg->nanochat.vocab : 0;
}

int erase_model_config_has_tables(const erase_model_config_t *cfg)
{
    return cfg->kind == ERASE_MODEL_CTR || cfg->kind == ERASE_MODEL_DCN;
}

int erase_model_config_max_hotness(const erase_model_config_t *cfg)
{
    int h = 0;
    for (int f = 0; erase_model_config_has_tables(cfg) && f < ERASE_CTR_FIELDS; f++)
        h = (int)cfg->ctr.hotness[f] > h ? (int)cfg->ctr.hotness[f] : h; /* at most ERASE_CTR_HOTNESS_MAX */
    return erase_model_config_has_tables(cfg) && h < 1 ? 1 : h;
}

int erase_model_config_blocks(const erase_model_config_t *cfg)
{
    if (cfg->kind == ERASE_MODEL_DCN)
        return 1 + cfg->dcn.cross_layers + cfg->dcn.top_layers - 1;
    if (cfg->kind == ERASE_MODEL_GPT)
        return cfg->gpt.layers;
    if (cfg->kind == ERASE_MODEL_NANOCHAT)
        return cfg->nanochat.layers;
    return cfg->kind == ERASE_MODEL_MLP ? cfg->mlp.hidden_layers : 1 + cfg->ctr.subarchs;
}

/* ---- parsing helpers ---------------------------------------------------- */

/* Pass a failure up without a breadcrumb: a mistake in the model file is
 * located by "name:line: key", not by the parser's call chain. */
#define TRY(call)                                                 \
    do {                                                          \
        erase_status_t try_s_ = (call);                           \
        if (try_s_ != ERASE_OK)                                   \
            return try_s_;                                        \
    } while (0)

/* Where a setting came from: the text's name, or the file an @include
 * pulled it from. */
static const char *origin(const char *name, const config_setting_t *s)
{
    const char *file = config_setting_source_file(s);
    return file ? file : name;
}

/* "name:line: <message>" as ERASE_ERR_FORMAT. */
static erase_status_t fail_at(const char *name, const config_setting_t *s, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static erase_status_t fail_at(const char *name, const config_setting_t *s, const char *fmt, ...)
{
    char what[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    return ERASE_ERROR(ERASE_ERR_FORMAT, "%s:%u: %s", origin(name, s), config_setting_source_line(s),
                       what);
}

/* A setting's value as it reads in a message: 0, 2.5, "16", true, a list. */
static void describe(const config_setting_t *s, char *buf, size_t size)
{
    switch (config_setting_type(s)) {
    case CONFIG_TYPE_INT:
    case CONFIG_TYPE_INT64:
        snprintf(buf, size, "%lld", config_setting_get_int64(s));
        break;
    case CONFIG_TYPE_FLOAT:
        snprintf(buf, size, "%g", config_setting_get_float(s));
        if (!strpbrk(buf, ".eni")) /* 16.0 must not read as the integer 16 */
            strncat(buf, ".0", size - strlen(buf) - 1);
        break;
    case CONFIG_TYPE_STRING:
        snprintf(buf, size, "\"%s\"", config_setting_get_string(s));
        break;
    case CONFIG_TYPE_BOOL:
        snprintf(buf, size, "%s", config_setting_get_bool(s) ? "true" : "false");
        break;
    case CONFIG_TYPE_GROUP:
        snprintf(buf, size, "a group");
        break;
    default: /* [array] and (list) */
        snprintf(buf, size, "a list");
        break;
    }
}

/* "name:line: path: expected <what>, got <value>" */
static erase_status_t expected(const char *name, const config_setting_t *s, const char *path,
                               const char *what)
{
    char got[256];
    describe(s, got, sizeof got);
    return fail_at(name, s, "%s: expected %s, got %s", path, what, got);
}

static bool is_integer(const config_setting_t *s)
{
    return config_setting_type(s) == CONFIG_TYPE_INT || config_setting_type(s) == CONFIG_TYPE_INT64;
}

static bool is_list(const config_setting_t *s)
{
    return config_setting_is_array(s) || config_setting_is_list(s);
}

/*
 * An integer in min..max. The message names the range as "in min..max" when
 * `show_max` (a real limit of the model) or when the value is too large, and
 * as ">= min" otherwise (max is only the range of the C type).
 */
static erase_status_t get_integer(const char *name, const config_setting_t *s, const char *path,
                                  long long min, long long max, bool show_max, long long *out)
{
    long long v = is_integer(s) ? config_setting_get_int64(s) : 0;
    if (!is_integer(s) || v < min || v > max) {
        char what[96];
        if (show_max || (is_integer(s) && v > max))
            snprintf(what, sizeof what, "an integer in %lld..%lld", min, max);
        else
            snprintf(what, sizeof what, "an integer >= %lld", min);
        return expected(name, s, path, what);
    }
    *out = v;
    return ERASE_OK;
}

/* An int key of `group` (left unchanged when absent). */
static erase_status_t read_int(const char *name, config_setting_t *group, const char *prefix,
                               const char *key, int min, int max, bool show_max, int *out)
{
    config_setting_t *s = config_setting_get_member(group, key);
    if (!s)
        return ERASE_OK;
    char path[64];
    snprintf(path, sizeof path, "%s.%s", prefix, key);
    long long v;
    TRY(get_integer(name, s, path, min, max, show_max, &v));
    *out = (int)v;
    return ERASE_OK;
}

/*
 * A list of min_count..max_count integers, each >= elem_min (key absent:
 * out and count unchanged). `noun` names the elements in count messages
 * ("expected 1..16 widths, got 17").
 */
static erase_status_t read_int_list(const char *name, config_setting_t *group, const char *prefix,
                                    const char *key, int min_count, int max_count,
                                    const char *noun, int elem_min, int *out, int *count)
{
    config_setting_t *s = config_setting_get_member(group, key);
    if (!s)
        return ERASE_OK;
    char path[64], what[96];
    snprintf(path, sizeof path, "%s.%s", prefix, key);
    if (!is_list(s)) {
        snprintf(what, sizeof what, "a list of %d..%d %s", min_count, max_count, noun);
        return expected(name, s, path, what);
    }
    int n = config_setting_length(s);
    if (n < min_count || n > max_count)
        return fail_at(name, s, "%s: expected %d..%d %s, got %d", path, min_count, max_count, noun, n);
    for (int i = 0; i < n; i++) {
        char elem_path[80];
        snprintf(elem_path, sizeof elem_path, "%s[%d]", path, i);
        long long v;
        TRY(get_integer(name, config_setting_get_elem(s, (unsigned)i), elem_path, elem_min,
                                INT_MAX, false, &v));
        out[i] = (int)v;
    }
    *count = n;
    return ERASE_OK;
}

/* Number `key`: an int or a float >= 0 (`positive`: > 0) that fits a
 * float (left unchanged when absent). */
static erase_status_t read_number(const char *name, config_setting_t *group, const char *prefix, const char *key,
                                  bool positive, float *out)
{
    config_setting_t *s = config_setting_get_member(group, key);
    if (!s)
        return ERASE_OK;
    char path[64];
    snprintf(path, sizeof path, "%s.%s", prefix, key);
    const char *range = positive ? "a number > 0" : "a number >= 0";
    double v;
    if (is_integer(s))
        v = (double)config_setting_get_int64(s);
    else if (config_setting_type(s) == CONFIG_TYPE_FLOAT)
        v = config_setting_get_float(s);
    else
        return expected(name, s, path, range);
    if (!(positive ? v > 0 : v >= 0)) /* NaN fails too */
        return expected(name, s, path, range);
    if (v > FLT_MAX) {
        char what[64];
        snprintf(what, sizeof what, "a number <= %g", (double)FLT_MAX);
        return expected(name, s, path, what);
    }
    *out = (float)v;
    return ERASE_OK;
}

/* local_loss_weight: a number >= 0. */
static erase_status_t read_weight(const char *name, config_setting_t *group, const char *prefix, float *out)
{
    return read_number(name, group, prefix, "local_loss_weight", false, out);
}

/* cuts: "all", "none" or a list of distinct boundaries in 1..blocks-1;
 * absent: "all" when `all_by_default` (ctr, mlp), else "none" (gpt). */
static erase_status_t read_cuts(const char *name, config_setting_t *group, const char *prefix,
                                int blocks, bool all_by_default, uint32_t *mask)
{
    *mask = all_by_default ? model_config_all_cuts(blocks) : 0;
    config_setting_t *s = config_setting_get_member(group, "cuts");
    if (!s)
        return ERASE_OK;
    char path[64];
    snprintf(path, sizeof path, "%s.cuts", prefix);
    const char *text = config_setting_type(s) == CONFIG_TYPE_STRING ? config_setting_get_string(s) : NULL;
    if (text && strcmp(text, "all") == 0) {
        *mask = model_config_all_cuts(blocks);
        return ERASE_OK;
    }
    if (text && strcmp(text, "none") == 0) {
        *mask = 0;
        return ERASE_OK;
    }
    if (!is_list(s))
        return expected(name, s, path, "\"all\", \"none\" or a list of boundaries");
    *mask = 0;
    for (int i = 0; i < config_setting_length(s); i++) {
        config_setting_t *e = config_setting_get_elem(s, (unsigned)i);
        if (!is_integer(e)) {
            char elem_path[80];
            snprintf(elem_path, sizeof elem_path, "%s[%d]", path, i);
            return expected(name, e, elem_path, "a boundary number");
        }
        long long c = config_setting_get_int64(e);
        if (c < 1 || c > blocks - 1)
            return fail_at(name, e, "%s: boundary %lld outside 1..%d", path, c, blocks - 1);
        if (*mask & (UINT32_C(1) << c))
            return fail_at(name, e, "%s: boundary %lld listed twice", path, c);
        *mask |= UINT32_C(1) << c;
    }
    return ERASE_OK;
}

/* The first member of `group` that is not in `keys` (NULL-terminated):
 * "unknown key 'prefix.key'". */
/* ctr.pooling: "sum" (absent: the default) or "mean". */
static erase_status_t read_pooling(const char *name, config_setting_t *g, const char *prefix,
                                   erase_model_config_t *cfg)
{
    config_setting_t *p = config_setting_get_member(g, "pooling");
    if (!p)
        return ERASE_OK;
    const char *v = config_setting_type(p) == CONFIG_TYPE_STRING ? config_setting_get_string(p) : "";
    char key[64];
    snprintf(key, sizeof key, "%s.pooling", prefix);
    if (strcmp(v, "sum") == 0)
        cfg->ctr.pooling = ERASE_POOLING_SUM;
    else if (strcmp(v, "mean") == 0)
        cfg->ctr.pooling = ERASE_POOLING_MEAN;
    else
        return expected(name, p, key, "\"sum\" or \"mean\"");
    return ERASE_OK;
}

static erase_status_t check_keys(const char *name, config_setting_t *group, const char *prefix,
                                 const char *const *keys)
{
    for (int i = 0; i < config_setting_length(group); i++) {
        config_setting_t *s = config_setting_get_elem(group, (unsigned)i);
        bool known = false;
        for (const char *const *k = keys; *k && !known; k++)
            known = strcmp(*k, config_setting_name(s)) == 0;
        if (!known) {
            int n = 0;
            while (keys[n])
                n++;
            char hint[96];
            erase_config_suggest(config_setting_name(s), keys, n, hint, sizeof hint);
            return fail_at(name, s, "unknown key '%s.%s'%s", prefix, config_setting_name(s), hint);
        }
    }
    return ERASE_OK;
}

int64_t erase_model_config_hot_width(const erase_model_config_t *cfg)
{
    int64_t h = 0;
    for (int f = 0; f < ERASE_CTR_FIELDS; f++)
        h += cfg->ctr.hotness[f] ? cfg->ctr.hotness[f] : 1;
    return h;
}

/* <prefix>.hotness: "mlperf" or a list of 26 integers >= 1 (absent: all 1). */
static erase_status_t read_hotness(const char *name, config_setting_t *g, const char *prefix,
                                   erase_model_config_t *cfg)
{
    static const uint32_t mlperf[ERASE_CTR_FIELDS] = ERASE_CTR_HOTNESS_MLPERF;
    for (int f = 0; f < ERASE_CTR_FIELDS; f++)
        cfg->ctr.hotness[f] = 1;
    config_setting_t *h = config_setting_get_member(g, "hotness");
    if (!h)
        return ERASE_OK;
    char key[64];
    snprintf(key, sizeof key, "%s.hotness", prefix);
    const char *text = config_setting_type(h) == CONFIG_TYPE_STRING ? config_setting_get_string(h) : NULL;
    if (text && strcmp(text, "mlperf") == 0) {
        memcpy(cfg->ctr.hotness, mlperf, sizeof mlperf);
        return ERASE_OK;
    }
    if (!is_list(h))
        return expected(name, h, key, "\"mlperf\" or a list of 26 integers >= 1");
    if (config_setting_length(h) != ERASE_CTR_FIELDS)
        return fail_at(name, h, "%s: expected %d capacities, got %d", key, ERASE_CTR_FIELDS,
                       config_setting_length(h));
    for (int f = 0; f < ERASE_CTR_FIELDS; f++) {
        char path[80];
        snprintf(path, sizeof path, "%s[%d]", key, f);
        long long v;
        TRY(get_integer(name, config_setting_get_elem(h, (unsigned)f), path, 1, ERASE_CTR_HOTNESS_MAX, true, &v));
        cfg->ctr.hotness[f] = (uint32_t)v;
    }
    return ERASE_OK;
}

/* The embedding keys ctr and dcn share (cfg->ctr): hotness, embedding_dim,
 * table_rows, bottom_mlp (omitted: `bottom` with its last width
 * embedding_dim), named "<prefix>.<key>" in messages. */
static erase_status_t parse_tables(const char *name, config_setting_t *g, const char *prefix, const int *bottom,
                                   int bottom_layers, erase_model_config_t *cfg)
{
    char key[64];
    TRY(read_hotness(name, g, prefix, cfg));
    TRY(read_pooling(name, g, prefix, cfg));
    TRY(read_int(name, g, prefix, "embedding_dim", 1, INT_MAX, false, &cfg->ctr.embedding_dim));

    snprintf(key, sizeof key, "%s.table_rows", prefix);
    config_setting_t *rows = config_setting_get_member(g, "table_rows");
    if (rows && is_integer(rows)) {
        long long v;
        TRY(get_integer(name, rows, key, 2, UINT32_MAX, false, &v));
        for (int f = 0; f < ERASE_CTR_FIELDS; f++)
            cfg->ctr.table_rows[f] = (uint32_t)v;
    } else if (rows && is_list(rows)) {
        int n = config_setting_length(rows);
        if (n != ERASE_CTR_FIELDS)
            return fail_at(name, rows, "%s: expected %d table sizes, got %d", key, ERASE_CTR_FIELDS, n);
        for (int f = 0; f < n; f++) {
            char path[80];
            snprintf(path, sizeof path, "%s[%d]", key, f);
            long long v;
            TRY(get_integer(name, config_setting_get_elem(rows, (unsigned)f), path, 2,
                                    UINT32_MAX, false, &v));
            cfg->ctr.table_rows[f] = (uint32_t)v;
        }
    } else if (rows && config_setting_type(rows) == CONFIG_TYPE_STRING &&
               !strcmp(config_setting_get_string(rows), "data")) {
        cfg->ctr.table_rows_from_data = 1;
        memset(cfg->ctr.table_rows, 0, sizeof cfg->ctr.table_rows);
    } else if (rows) {
        return expected(name, rows, key, "an integer >= 2, a list of 26 table sizes or \"data\"");
    }

    cfg->ctr.bottom_layers = bottom_layers;
    memcpy(cfg->ctr.bottom_mlp, bottom, sizeof(int) * (size_t)bottom_layers);
    cfg->ctr.bottom_mlp[bottom_layers - 1] = cfg->ctr.embedding_dim;
    TRY(read_int_list(name, g, prefix, "bottom_mlp", 1, ERASE_MAX_LAYERS, "widths", 1,
                              cfg->ctr.bottom_mlp, &cfg->ctr.bottom_layers));
    int last = cfg->ctr.bottom_mlp[cfg->ctr.bottom_layers - 1];
    if (last != cfg->ctr.embedding_dim)
        return fail_at(name, config_setting_get_member(g, "bottom_mlp"),
                       "%s.bottom_mlp: the last width (%d) must equal embedding_dim (%d)", prefix, last,
                       cfg->ctr.embedding_dim);
    return ERASE_OK;
}

static erase_status_t parse_ctr(const char *name, config_setting_t *g, erase_model_config_t *cfg)
{
    static const char *const keys[] = { "embedding_dim", "table_rows", "bottom_mlp", "subarch_width",
                                        "subarchs", "cuts", "local_loss_weight", "hotness", "pooling", NULL };
    /* Omitted, the bottom MLP is the reference 13-64-D for this D. */
    static const int bottom[] = { 64, 0 };
    TRY(check_keys(name, g, "ctr", keys));
    TRY(parse_tables(name, g, "ctr", bottom, 2, cfg));
    TRY(read_int(name, g, "ctr", "subarch_width", 1, INT_MAX, false, &cfg->ctr.subarch_width));
    TRY(read_int(name, g, "ctr", "subarchs", 1, ERASE_MAX_BLOCKS - 1, true, &cfg->ctr.subarchs));
    TRY(read_cuts(name, g, "ctr", 1 + cfg->ctr.subarchs, true, &cfg->cut_mask));
    TRY(read_weight(name, g, "ctr", &cfg->local_loss_weight));
    return ERASE_OK;
}

/* dcn: the embedding keys as ctr's (omitted bottom_mlp: MLPerf's 512-256-D),
 * cross_layers, cross_rank (0: full rank), top_mlp ending at the one logit
 * (TorchRec's over_arch_layer_sizes), cuts "none" unless given. */
static erase_status_t parse_dcn(const char *name, config_setting_t *g, erase_model_config_t *cfg)
{
    static const char *const keys[] = { "embedding_dim", "table_rows", "bottom_mlp", "cross_layers", "cross_rank",
                                        "top_mlp", "cuts", "local_loss_weight", "hotness", "pooling", NULL };
    static const int bottom[] = { 512, 256, 0 };
    TRY(check_keys(name, g, "dcn", keys));
    TRY(parse_tables(name, g, "dcn", bottom, 3, cfg));
    TRY(read_int(name, g, "dcn", "cross_layers", 1, ERASE_MAX_LAYERS, true, &cfg->dcn.cross_layers));
    TRY(read_int(name, g, "dcn", "cross_rank", 0, INT_MAX, false, &cfg->dcn.cross_rank));
    TRY(read_int_list(name, g, "dcn", "top_mlp", 2, ERASE_MAX_LAYERS, "widths", 1, cfg->dcn.top_mlp,
                      &cfg->dcn.top_layers));
    if (cfg->dcn.top_mlp[cfg->dcn.top_layers - 1] != 1)
        return fail_at(name, config_setting_get_member(g, "top_mlp"),
                       "dcn.top_mlp: the last width (%d) must be 1 (the logit)", cfg->dcn.top_mlp[cfg->dcn.top_layers - 1]);
    TRY(read_cuts(name, g, "dcn", erase_model_config_blocks(cfg), false, &cfg->cut_mask));
    TRY(read_weight(name, g, "dcn", &cfg->local_loss_weight));
    return ERASE_OK;
}

static erase_status_t parse_mlp(const char *name, config_setting_t *g, erase_model_config_t *cfg)
{
    static const char *const keys[] = { "inputs", "hidden", "classes", "cuts", "local_loss_weight",
                                        NULL };
    TRY(check_keys(name, g, "mlp", keys));
    TRY(read_int(name, g, "mlp", "inputs", 1, INT_MAX, false, &cfg->mlp.inputs));
    TRY(read_int_list(name, g, "mlp", "hidden", 1, ERASE_MAX_LAYERS, "widths", 1,
                              cfg->mlp.hidden, &cfg->mlp.hidden_layers));
    TRY(read_int(name, g, "mlp", "classes", 2, INT_MAX, false, &cfg->mlp.classes));
    TRY(read_cuts(name, g, "mlp", cfg->mlp.hidden_layers, true, &cfg->cut_mask));
    TRY(read_weight(name, g, "mlp", &cfg->local_loss_weight));
    return ERASE_OK;
}

/* tie_head: true or false (absent: AUTO); true only without cuts. */
static erase_status_t read_tie_head(const char *name, config_setting_t *group, erase_model_config_t *cfg)
{
    config_setting_t *s = config_setting_get_member(group, "tie_head");
    if (!s)
        return ERASE_OK;
    if (config_setting_type(s) != CONFIG_TYPE_BOOL)
        return expected(name, s, "gpt.tie_head", "true or false");
    cfg->gpt.tie_head = config_setting_get_bool(s) ? ERASE_TIE_HEAD_TRUE : ERASE_TIE_HEAD_FALSE;
    if (model_config_resolve_tie(cfg) < 0) {
        char why[512];
        tie_conflict(cfg, why, sizeof why);
        return fail_at(name, s, "gpt.tie_head: %s", why);
    }
    return ERASE_OK;
}

/* gpt: the sizes (width a multiple of heads; whether the buffers they
 * make fit memory is the network's check), cuts "none" unless given,
 * tie_head (after cuts, which it depends on). */
static erase_status_t parse_gpt(const char *name, config_setting_t *g, erase_model_config_t *cfg)
{
    static const char *const keys[] = { "layers", "heads", "width", "context", "vocab", "cuts",
                                        "local_loss_weight", "tie_head", NULL };
    TRY(check_keys(name, g, "gpt", keys));
    TRY(read_int(name, g, "gpt", "layers", 1, ERASE_MAX_GPT_LAYERS, true, &cfg->gpt.layers));
    TRY(read_int(name, g, "gpt", "heads", 1, INT_MAX, false, &cfg->gpt.heads));
    TRY(read_int(name, g, "gpt", "width", 1, INT_MAX, false, &cfg->gpt.width));
    TRY(read_int(name, g, "gpt", "context", 1, INT_MAX, false, &cfg->gpt.context));
    TRY(read_int(name, g, "gpt", "vocab", 2, 65536, true, &cfg->gpt.vocab));
    if (cfg->gpt.width % cfg->gpt.heads != 0) {
        config_setting_t *s = config_setting_get_member(g, "width");
        if (!s)
            s = config_setting_get_member(g, "heads");
        return fail_at(name, s, "gpt.width: %d is not a multiple of heads (%d)", cfg->gpt.width,
                       cfg->gpt.heads);
    }
    TRY(read_cuts(name, g, "gpt", cfg->gpt.layers, false, &cfg->cut_mask));
    TRY(read_weight(name, g, "gpt", &cfg->local_loss_weight));
    TRY(read_tie_head(name, g, cfg));
    return ERASE_OK;
}

/* nanochat: layers first, the other sizes defaulting from it as nanochat's
 * base_train.py derives them; then the checks of nanochat's
 * CausalSelfAttention (width a multiple of heads, heads of kv_heads, an
 * even head dim for the rotary pairs) naming the key that breaks them. */
static erase_status_t parse_nanochat(const char *name, config_setting_t *g, erase_model_config_t *cfg)
{
    static const char *const keys[] = { "layers", "heads", "kv_heads", "width", "context", "vocab", "softcap",
                                        "cuts", "local_loss_weight", NULL };
    TRY(check_keys(name, g, "nanochat", keys));
    TRY(read_int(name, g, "nanochat", "layers", 1, ERASE_MAX_GPT_LAYERS, true, &cfg->nanochat.layers));
    erase_model_config_nanochat_depth(cfg, cfg->nanochat.layers);
    TRY(read_int(name, g, "nanochat", "width", 1, INT_MAX, false, &cfg->nanochat.width));
    if (!config_setting_get_member(g, "heads"))
        cfg->nanochat.heads = (cfg->nanochat.width + 127) / 128; /* ceil, >= 1 */
    TRY(read_int(name, g, "nanochat", "heads", 1, INT_MAX, false, &cfg->nanochat.heads));
    cfg->nanochat.kv_heads = cfg->nanochat.heads;
    TRY(read_int(name, g, "nanochat", "kv_heads", 1, INT_MAX, false, &cfg->nanochat.kv_heads));
    TRY(read_int(name, g, "nanochat", "context", 1, INT_MAX, false, &cfg->nanochat.context));
    TRY(read_int(name, g, "nanochat", "vocab", 2, 65536, true, &cfg->nanochat.vocab));
    TRY(read_number(name, g, "nanochat", "softcap", true, &cfg->nanochat.softcap));
    int W = cfg->nanochat.width, H = cfg->nanochat.heads, KV = cfg->nanochat.kv_heads;
    config_setting_t *at = config_setting_get_member(g, "heads") ? config_setting_get_member(g, "heads")
                           : config_setting_get_member(g, "width")   ? config_setting_get_member(g, "width")
                                                                     : g;
    if (W % H != 0)
        return fail_at(name, at, "nanochat.heads: %d does not divide width %d", H, W);
    if ((W / H) % 2 != 0)
        return fail_at(name, at, "nanochat.heads: head dim width/heads = %d/%d = %d is odd (rotary needs pairs)", W,
                       H, W / H);
    if (H % KV != 0) {
        config_setting_t *kv = config_setting_get_member(g, "kv_heads");
        return fail_at(name, kv ? kv : at, "nanochat.kv_heads: %d does not divide heads %d", KV, H);
    }
    TRY(read_cuts(name, g, "nanochat", cfg->nanochat.layers, false, &cfg->cut_mask));
    TRY(read_weight(name, g, "nanochat", &cfg->local_loss_weight));
    return ERASE_OK;
}

static erase_status_t parse_root(const char *name, config_setting_t *root, erase_model_config_t *cfg)
{
    config_setting_t *model = config_setting_get_member(root, "model");
    if (!model)
        return ERASE_ERROR(ERASE_ERR_FORMAT, "%s: missing key 'model' (\"ctr\", \"mlp\", \"gpt\", \"nanochat\" or \"dcn\")", name);
    const char *text = config_setting_type(model) == CONFIG_TYPE_STRING
                           ? config_setting_get_string(model) : "";
    erase_model_kind_t kind;
    if (!erase_model_config_kind(text, &kind)) {
        size_t tl = strlen(text);
        if (strchr(text, '/') || (tl > 4 && !strcmp(text + tl - 4, ".cfg"))) /* a run file's model key */
            return fail_at(name, model, "model: expected \"ctr\", \"mlp\", \"gpt\", \"nanochat\" or \"dcn\", "
                           "got \"%s\": a file name, as a run file names its model file; a run file is "
                           "erase-train's --config", text);
        return expected(name, model, "model", "\"ctr\", \"mlp\", \"gpt\", \"nanochat\" or \"dcn\"");
    }
    *cfg = erase_model_config_default(kind);
    const char *mine = model_names[kind];

    for (int i = 0; i < config_setting_length(root); i++) {
        config_setting_t *s = config_setting_get_elem(root, (unsigned)i);
        const char *key = config_setting_name(s);
        if (strcmp(key, "model") == 0 || strcmp(key, "seed") == 0 || strcmp(key, mine) == 0)
            continue;
        for (int k = 0; k < MODEL_KINDS; k++)
            if (strcmp(key, model_names[k]) == 0)
                return fail_at(name, s, "group '%s' does not apply to model \"%s\"", key, mine);
        const char *const top[] = { "model", "seed", mine };
        char hint[96];
        erase_config_suggest(key, top, 3, hint, sizeof hint);
        return fail_at(name, s, "unknown key '%s'%s", key, hint);
    }

    config_setting_t *seed = config_setting_get_member(root, "seed");
    if (seed) {
        long long v;
        TRY(get_integer(name, seed, "seed", 0, LLONG_MAX, false, &v));
        cfg->seed = (uint64_t)v;
        cfg->seed_given = 1;
    }

    config_setting_t *group = config_setting_get_member(root, mine);
    if (!group)
        return ERASE_OK;
    if (!config_setting_is_group(group))
        return expected(name, group, mine, "a group");
    if (kind == ERASE_MODEL_GPT)
        return parse_gpt(name, group, cfg);
    if (kind == ERASE_MODEL_NANOCHAT)
        return parse_nanochat(name, group, cfg);
    if (kind == ERASE_MODEL_DCN)
        return parse_dcn(name, group, cfg);
    return kind == ERASE_MODEL_CTR ? parse_ctr(name, group, cfg) : parse_mlp(name, group, cfg);
}

/* Parse model text; `embedded`: text stored in a file, which includes nothing. */
static erase_status_t parse_text(const char *text, const char *name, bool embedded, erase_model_config_t *cfg)
{
    if (!text || !cfg)
        return ERASE_ERROR(ERASE_ERR_INVALID, "model config: NULL %s", text ? "cfg" : "text");
    if (!name)
        name = "<string>";
    if (embedded)
        TRY(erase_config_text_check_embedded(text, strlen(text), name));
    else
        TRY(erase_config_text_check(text, strlen(text), name));
    config_t lc;
    config_init(&lc);
    erase_status_t status;
    if (!config_read_string(&lc, text)) {
        const char *file = config_error_file(&lc); /* set inside an @include */
        status = ERASE_ERROR(ERASE_ERR_FORMAT, "%s:%d: %s", file ? file : name,
                             config_error_line(&lc), config_error_text(&lc));
    } else {
        erase_model_config_t out;
        status = parse_root(name, config_root_setting(&lc), &out);
        if (status == ERASE_OK)
            *cfg = out;
    }
    config_destroy(&lc);
    return status;
}

erase_status_t erase_model_config_parse(const char *text, const char *name, erase_model_config_t *cfg)
{
    return parse_text(text, name, false, cfg);
}

erase_status_t erase_model_config_parse_embedded(const char *text, const char *name, erase_model_config_t *cfg)
{
    return parse_text(text, name, true, cfg);
}

erase_status_t erase_model_config_load(const char *path, erase_model_config_t *cfg)
{
    if (!path || !cfg)
        return ERASE_ERROR(ERASE_ERR_INVALID, "model config: NULL %s", path ? "cfg" : "path");
    char *text;
    ERASE_CHECK(erase_config_file_read(path, "model file", &text));
    erase_status_t status = erase_model_config_parse(text, path, cfg);
    if (status != ERASE_OK)
        erase_error_trail(__FILE__, __LINE__);
    free(text);
    return status;
}
