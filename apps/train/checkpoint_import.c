/*
 * erase-train --init-from FILE.safetensors (issue 37; docs/export.md):
 * a new run's parameters from a safetensors file (io/safetensors.h) made
 * by erase-export or elsewhere (Hugging Face transformers'
 * save_pretrained, a PyTorch state dict saved with the safetensors
 * library), in the names and layouts of apps/export_names.h, the table
 * erase-export writes by: the format is the file's metadata `erase_format`
 * (erase-export writes it), else --init-format.
 *
 * Every parameter of this run must be in the file under its name in that
 * format, float32, with the format's shape (a Hugging Face Conv1D weight
 * [in, out], transposed back here); the file may hold nothing else but the
 * attention-mask buffers older transformers saved (transformer.h.<k>.attn.
 * bias and .attn.masked_bias in hf-gpt2, passed over). Otherwise one line
 * naming the file and the tensor, and nothing is trained.
 */
#include "apps/export_names.h"
#include "apps/train/checkpoint_internal.h"
#include "apps/train/checkpoint_model.h"
#include "io/safetensors.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int train_ckpt_is_safetensors(const char *path)
{
    size_t n = strlen(path), ext = strlen(".safetensors");
    return n > ext && !strcmp(path + n - ext, ".safetensors");
}

erase_status_t train_ckpt_import_model(const char *path, char **model)
{
    *model = NULL;
    erase_st_file_t *f;
    ERASE_CHECK(erase_st_open(path, &f));
    const char *text = erase_st_meta_get(f, "model");
    erase_status_t st = ERASE_OK;
    if (text && text[0] && !(*model = strdup(text)))
        st = ERASE_ERROR(ERASE_ERR_NOMEM, "%s: no memory for its model text", path);
    erase_st_close(f);
    return st;
}

/* The format of the file: its metadata's, else --init-format's. */
static erase_status_t file_format(const erase_st_file_t *f, const train_options_t *o, export_format_t *fmt)
{
    const char *meta = erase_st_meta_get(f, "erase_format"), *given = o->init_format;
    if (meta && given[0] && strcmp(meta, given))
        return ERASE_ERROR(ERASE_ERR_INVALID, "--init-format %s: the file %s says its format is %s", given,
                           erase_st_path(f), meta);
    const char *name = meta ? meta : given;
    if (!name[0])
        return ERASE_ERROR(ERASE_ERR_INVALID, "--init-from %s: the file does not say its format (it was not written "
                           "by erase-export): give --init-format erase|hf-gpt2|torch|nanochat", erase_st_path(f));
    if (export_format_parse(name, fmt) != 0)
        return ERASE_ERROR(ERASE_ERR_INVALID, "--init-from %s: format %s: expected erase, hf-gpt2, torch or nanochat",
                           erase_st_path(f), name);
    return ERASE_OK;
}

/* A tensor of the file this run does not take, but hf-gpt2's attention-mask buffers. */
static int passed_over(export_format_t fmt, const char *name)
{
    int k, used = 0;
    if (fmt != EXPORT_HF_GPT2 || sscanf(name, "transformer.h.%d.attn.%n", &k, &used) != 1 || !used)
        return 0;
    return !strcmp(name + used, "bias") || !strcmp(name + used, "masked_bias");
}

/* Parameter t of this run from tensor s of the file, as format action a says. */
static erase_status_t read_param(const erase_st_file_t *f, const erase_st_tensor_t *s, export_action_t a,
                                 erase_ckpt_tensor_t *t)
{
    int64_t rows = t->dims[0], cols = t->ndim == 2 ? t->dims[1] : 1;
    int64_t want[2] = { a == EXPORT_TRANSPOSE ? cols : rows, a == EXPORT_TRANSPOSE ? rows : cols };
    char have[96] = "[", need[64];
    for (int d = 0; d < s->ndim; d++)
        snprintf(have + strlen(have), sizeof have - strlen(have), "%s%" PRId64, d ? ", " : "", s->dims[d]);
    snprintf(have + strlen(have), sizeof have - strlen(have), "]");
    if (t->ndim == 2)
        snprintf(need, sizeof need, "[%" PRId64 ", %" PRId64 "]", want[0], want[1]);
    else
        snprintf(need, sizeof need, "[%" PRId64 "]", want[0]);
    if (s->dtype != ERASE_ST_F32)
        return ERASE_ERROR(ERASE_ERR_INVALID, "--init-from %s: tensor %s: dtype %s, expected F32 (float32; this "
                           "run's %s)", erase_st_path(f), s->name, erase_st_dtype_name(s->dtype), t->name);
    if (s->ndim != t->ndim || s->dims[0] != want[0] || (t->ndim == 2 && s->dims[1] != want[1]))
        return ERASE_ERROR(ERASE_ERR_INVALID, "--init-from %s: tensor %s: shape %s, this run's %s needs %s",
                           erase_st_path(f), s->name, have, t->name, need);
    size_t bytes = sizeof(float) * (size_t)(rows * cols);
    if (a != EXPORT_TRANSPOSE)
        return erase_st_read(f, s, 0, t->data, bytes);
    float *buf = malloc(bytes ? bytes : 1);
    if (!buf)
        return ERASE_ERROR(ERASE_ERR_NOMEM, "--init-from %s: tensor %s: out of memory", erase_st_path(f), s->name);
    erase_status_t st = erase_st_read(f, s, 0, buf, bytes);
    for (int64_t r = 0; st == ERASE_OK && r < rows; r++) /* the file's [cols, rows] -> [rows, cols] */
        for (int64_t c = 0; c < cols; c++)
            t->data[r * cols + c] = buf[c * rows + r];
    free(buf);
    return st;
}

erase_status_t train_ckpt_import(train_ckpt_t *ck, const char *path)
{
    const train_options_t *o = ck->e.o;
    if (ck->e.w->pp_size > 1 || ck->sharded)
        return ERASE_ERROR(ERASE_ERR_INVALID, "--init-from %s: a safetensors file starts data-parallel runs with "
                           "replicated tables (this run: %s); start one, then resume it with --pp or --embeddings",
                           path, ck->sharded ? "sharded tables" : "--pp");
    if (o->init_from_optimizer)
        return ERASE_ERROR(ERASE_ERR_INVALID, "--init-from-optimizer: a safetensors file %s holds no optimizer "
                           "state", path);
    erase_st_file_t *f;
    ERASE_CHECK(erase_st_open(path, &f));
    export_format_t fmt;
    erase_status_t st = file_format(f, o, &fmt);
    if (st == ERASE_OK)
        st = export_format_fits(fmt, ck->e.cfg, "--init-format");
    int used = 0;
    for (int i = 0; st == ERASE_OK && i < ck->nmine[0]; i++) {
        erase_ckpt_tensor_t *t = &ck->mine[0][i];
        char name[ERASE_ST_NAME_MAX];
        export_action_t a;
        if ((st = export_name(fmt, ck->e.cfg, t->name, name, sizeof name, &a)) != ERASE_OK)
            break;
        const erase_st_tensor_t *s = erase_st_find(f, name);
        if (a == EXPORT_DROP)
            st = ERASE_ERROR(ERASE_ERR_INVALID, "--init-from %s: %s has no place for this run's local head %s (a "
                             "model without cuts takes it, or --init-format erase)", path, export_format_name(fmt),
                             t->name);
        else if (!s)
            st = ERASE_ERROR(ERASE_ERR_INVALID, "--init-from %s: tensor %s missing (this run's %s, %s names)", path,
                             name, t->name, export_format_name(fmt));
        else
            st = read_param(f, s, a, t);
        used++;
    }
    for (int i = 0; st == ERASE_OK && i < erase_st_count(f); i++) { /* tensors this run has no place for */
        const erase_st_tensor_t *s = erase_st_tensor(f, i);
        int found = passed_over(fmt, s->name);
        for (int j = 0; !found && j < ck->nmine[0]; j++) {
            char name[ERASE_ST_NAME_MAX];
            export_action_t a;
            found = export_name(fmt, ck->e.cfg, ck->mine[0][j].name, name, sizeof name, &a) == ERASE_OK &&
                    !strcmp(name, s->name);
        }
        if (!found)
            st = ERASE_ERROR(ERASE_ERR_INVALID, "--init-from %s: tensor %s: not a parameter of this run's %s model "
                             "in %s names", path, s->name, erase_model_config_name(ck->e.cfg),
                             export_format_name(fmt));
    }
    if (st == ERASE_OK) {
        const char *step = erase_st_meta_get(f, "step");
        printf("init   from %s (safetensors, %s names%s%s): %d parameters loaded; this run starts at step 0 on "
               "its own data\n", path, export_format_name(fmt), step ? ", step " : "", step ? step : "", used);
        fflush(stdout);
    }
    erase_st_close(f);
    return st;
}
