/*
 * Checkpoints (io/checkpoint.h): the tensors' sizes, the FNV-1a 64
 * checksums of data and of the meta attributes, and the attributes'
 * ranges. Directories and names: checkpoint_dir.c; writing:
 * checkpoint_write.c; reading: checkpoint_read.c.
 */
#include "io/checkpoint_internal.h"

#include "config.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

int64_t erase_ckpt_tensor_numel(const erase_ckpt_tensor_t *t)
{
    return t->ndim == 2 ? t->dims[0] * t->dims[1] : t->dims[0];
}

uint64_t ckpt_fnv_add(uint64_t h, const void *data, size_t bytes)
{
    const unsigned char *p = data;
    for (size_t i = 0; i < bytes; i++) {
        h ^= p[i];
        h *= 0x100000001b3ull;
    }
    return h;
}

uint64_t erase_ckpt_fnv1a64(const void *data, size_t bytes)
{
    return ckpt_fnv_add(0xcbf29ce484222325ull, data, bytes);
}

const char *ckpt_nz(const char *s) { return s ? s : ""; }

/* "<name>=<length>:<value>\n" added to the sum h. */
static uint64_t fnv_add_string(uint64_t h, const char *name, const char *value)
{
    char head[96];
    size_t len = strlen(value);
    h = ckpt_fnv_add(h, head, (size_t)snprintf(head, sizeof head, "%s=%zu:", name, len));
    return ckpt_fnv_add(ckpt_fnv_add(h, value, len), "\n", 1);
}

uint64_t erase_ckpt_meta_fnv1a64(const erase_ckpt_meta_t *m)
{
    const struct {
        const char *name;
        int64_t value;
    } ints[] = { { "meta.step", m->step },         { "meta.samples_seen", m->samples_seen },
                 { "meta.epoch", m->epoch },       { "meta.global_batch", m->global_batch },
                 { "meta.world_size", m->world_size }, { "meta.dp_size", m->dp_size },
                 { "meta.pp_size", m->pp_size },   { "optim.step", m->clock_step } };
    const struct {
        const char *name, *value;
    } strs[] = { { "meta.pp_layout", m->pp_layout },
                 { "meta.schedule", m->schedule },
                 { "meta.dense_optimizer", m->dense_optimizer },
                 { "meta.embedding_optimizer", m->embedding_optimizer },
                 { "meta.model", m->model },
                 { "meta.options", m->options },
                 { "meta.version", m->version },
                 { "meta.created", m->created } };
    uint64_t h = erase_ckpt_fnv1a64("", 0);
    char line[96];
    for (size_t i = 0; i < sizeof ints / sizeof ints[0]; i++)
        h = ckpt_fnv_add(h, line, (size_t)snprintf(line, sizeof line, "%s=%" PRId64 "\n", ints[i].name, ints[i].value));
    h = ckpt_fnv_add(h, line, (size_t)snprintf(line, sizeof line, "meta.seed=%" PRIu64 "\n", m->seed));
    uint32_t bits;
    memcpy(&bits, &m->clock_lr, sizeof bits);
    h = ckpt_fnv_add(h, line, (size_t)snprintf(line, sizeof line, "optim.lr=%08" PRIx32 "\n", bits));
    for (size_t i = 0; i < sizeof strs / sizeof strs[0]; i++)
        h = fnv_add_string(h, strs[i].name, ckpt_nz(strs[i].value));
    /* the attributes added later, summed only when present: the files
     * written before each keep their sum */
    const struct {
        const char *name, *value;
    } later[] = { { "meta.embeddings", m->embeddings },
                  { "meta.tokenizer", m->tokenizer },
                  { "meta.data_vocab", m->data_vocab } };
    for (size_t i = 0; i < sizeof later / sizeof later[0]; i++)
        if (later[i].value && *later[i].value)
            h = fnv_add_string(h, later[i].name, later[i].value);
    return h;
}

erase_status_t ckpt_int_in_range(const char *path, const char *attr, int64_t v, int64_t lo, int64_t hi)
{
    if (v < lo)
        return ERASE_ERROR(ERASE_ERR_FORMAT, "%s: attribute %s = %" PRId64 ": expected an integer >= %" PRId64, path,
                           attr, v, lo);
    if (v > hi)
        return ERASE_ERROR(ERASE_ERR_FORMAT, "%s: attribute %s = %" PRId64 ": expected an integer <= %" PRId64, path,
                           attr, v, hi);
    return ERASE_OK;
}

erase_status_t erase_ckpt_meta_check(const char *path, const erase_ckpt_meta_t *m)
{
    ERASE_CHECK(ckpt_int_in_range(path, "/meta step", m->step, 0, ERASE_CKPT_STEP_MAX));
    ERASE_CHECK(ckpt_int_in_range(path, "/meta samples_seen", m->samples_seen, 0, ERASE_CKPT_SAMPLES_MAX));
    if (m->step == 0 && m->samples_seen != 0)
        return ERASE_ERROR(ERASE_ERR_FORMAT, "%s: attribute /meta samples_seen = %" PRId64 ": expected 0 at step 0",
                           path, m->samples_seen);
    if (m->samples_seen < m->step)
        return ERASE_ERROR(ERASE_ERR_FORMAT, "%s: attribute /meta samples_seen = %" PRId64 ": expected an integer "
                           ">= step %" PRId64 " (a step takes at least one sample)", path, m->samples_seen, m->step);
    ERASE_CHECK(ckpt_int_in_range(path, "/meta epoch", m->epoch, 0, ERASE_CKPT_STEP_MAX));
    if (m->epoch_samples < 0 || m->epoch_samples > m->samples_seen)
        return ERASE_ERROR(ERASE_ERR_FORMAT, "%s: dataset /data/cursor: samples of the epoch %" PRId64 ": expected "
                           "an integer in [0, samples_seen %" PRId64 "]", path, m->epoch_samples, m->samples_seen);
    ERASE_CHECK(ckpt_int_in_range(path, "/meta global_batch", m->global_batch, 1, ERASE_CKPT_BATCH_MAX));
    ERASE_CHECK(ckpt_int_in_range(path, "/meta world_size", m->world_size, 1, ERASE_CKPT_RANKS_MAX));
    ERASE_CHECK(ckpt_int_in_range(path, "/meta dp_size", m->dp_size, 1, ERASE_CKPT_RANKS_MAX));
    ERASE_CHECK(ckpt_int_in_range(path, "/meta pp_size", m->pp_size, 1, ERASE_CKPT_RANKS_MAX));
    if ((int64_t)m->dp_size * m->pp_size != m->world_size)
        return ERASE_ERROR(ERASE_ERR_FORMAT, "%s: attribute /meta world_size = %d: expected dp_size x pp_size = %d x "
                           "%d", path, m->world_size, m->dp_size, m->pp_size);
    ERASE_CHECK(ckpt_int_in_range(path, "/optim step", m->clock_step, 0, ERASE_CKPT_STEP_MAX));
    if (!isfinite(m->clock_lr) || m->clock_lr < 0)
        return ERASE_ERROR(ERASE_ERR_FORMAT, "%s: attribute /optim lr = %g: expected a finite number >= 0", path,
                           (double)m->clock_lr);
    const char *v = m->data_vocab;
    if (v && *v && strcmp(v, ERASE_CKPT_DATA_VOCAB_NONE) &&
        (strlen(v) != 16 || strspn(v, "0123456789abcdef") != 16))
        return ERASE_ERROR(ERASE_ERR_FORMAT, "%s: attribute /meta data_vocab = \"%.40s\": expected a vocabulary "
                           "digest of 16 hex digits or \"" ERASE_CKPT_DATA_VOCAB_NONE "\"", path, v);
    return ERASE_OK;
}
