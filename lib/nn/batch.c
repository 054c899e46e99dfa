/*
 * Batches as device arrays: which fields a model reads and their widths,
 * buffers for a batch, sample-range copies (pipelines' micro-batches) and
 * views (the data-parallel scheduler's --accumulate micro-batches).
 */
#include "lib/nn/network.h"

#include "lib/core/checked.h"

#include <stddef.h>
#include <stdint.h>
#include <string.h>

typedef struct {
    size_t offset;      /* of the field's pointer in erase_batch_t */
    size_t elem;        /* bytes of one element */
    int width;          /* elements per sample */
} field_t;

#define MAX_FIELDS 4

/* The fields `cfg`'s model reads (batch.h); returns how many. */
static int fields(const erase_model_config_t *cfg, field_t f[MAX_FIELDS])
{
    int64_t hot = 0;
    switch (cfg->kind) {
    case ERASE_MODEL_CTR:
    case ERASE_MODEL_DCN:
        /* sparse [n, H]; multi-hot (H > 26): sparse_len [n, 26] too */
        hot = erase_model_config_hot_width(cfg);
        f[0] = (field_t){ offsetof(erase_batch_t, dense), sizeof(float), ERASE_CTR_DENSE };
        f[1] = (field_t){ offsetof(erase_batch_t, sparse), sizeof(uint32_t), (int)hot };
        f[2] = (field_t){ offsetof(erase_batch_t, label), sizeof(float), 1 };
        f[3] = (field_t){ offsetof(erase_batch_t, sparse_len), sizeof(uint32_t), ERASE_CTR_FIELDS };
        return hot == ERASE_CTR_FIELDS ? 3 : 4;
    case ERASE_MODEL_MLP:
        f[0] = (field_t){ offsetof(erase_batch_t, features), sizeof(float), cfg->mlp.inputs };
        f[1] = (field_t){ offsetof(erase_batch_t, classes), sizeof(int32_t), 1 };
        return 2;
    case ERASE_MODEL_GPT:
    case ERASE_MODEL_NANOCHAT:
        f[0] = (field_t){ offsetof(erase_batch_t, tokens), sizeof(int32_t), *erase_model_config_context(cfg) };
        f[1] = (field_t){ offsetof(erase_batch_t, targets), sizeof(int32_t), *erase_model_config_context(cfg) };
        return 2;
    }
    return 0;
}

#define FIELD(batch, f) (*(void **)((char *)(batch) + (f).offset))
#define CFIELD(batch, f) (*(const void *const *)((const char *)(batch) + (f).offset))

erase_status_t erase_network_batch_alloc(erase_network_t *net, int size, erase_batch_t *out)
{
    memset(out, 0, sizeof *out);
    field_t f[MAX_FIELDS];
    int n = fields(erase_network_config(net), f);
    for (int i = 0; i < n; i++) {
        size_t bytes;
        void *p = NULL;
        erase_status_t st = erase_bytes(f[i].elem * (size_t)f[i].width, size, 1, &bytes)
                                ? erase_malloc(erase_network_device(net), bytes ? bytes : 1, &p)
                                : ERASE_ERROR(ERASE_ERR_INVALID, "batch: %d samples of %d values overflow",
                                              size, f[i].width);
        if (st != ERASE_OK) {
            erase_network_batch_free(net, out);
            ERASE_CHECK(st);
        }
        FIELD(out, f[i]) = p;
    }
    out->size = size;
    return ERASE_OK;
}

void erase_network_batch_free(erase_network_t *net, erase_batch_t *batch)
{
    field_t f[MAX_FIELDS];
    int n = fields(erase_network_config(net), f);
    for (int i = 0; i < n; i++)
        erase_free(erase_network_device(net), FIELD(batch, f[i]));
    memset(batch, 0, sizeof *batch);
}

/* Samples [first, first + count) of src: a range inside it, every field
 * the model reads present. */
static erase_status_t check_range(const erase_batch_t *src, int first, int count, const field_t *f, int n)
{
    if (first < 0 || count < 0 || first > src->size - count)
        return ERASE_ERROR(ERASE_ERR_INVALID, "batch: samples [%d, %d) of a batch of %d", first, first + count,
                           src->size);
    for (int i = 0; i < n; i++)
        if (!CFIELD(src, f[i]))
            return ERASE_ERROR(ERASE_ERR_INVALID, "batch: the source has no field at offset %zu", f[i].offset);
    return ERASE_OK;
}

erase_status_t erase_network_batch_copy(erase_network_t *net, erase_stream_t *s, const erase_batch_t *src,
                                        int first, int count, erase_batch_t *dst)
{
    field_t f[MAX_FIELDS];
    int n = fields(erase_network_config(net), f);
    ERASE_CHECK(check_range(src, first, count, f, n));
    for (int i = 0; i < n; i++) {
        size_t row = f[i].elem * (size_t)f[i].width;
        if (count)
            ERASE_CHECK(erase_memcpy_async(s, FIELD(dst, f[i]), (const char *)CFIELD(src, f[i]) + row * (size_t)first,
                                           row * (size_t)count));
    }
    dst->size = count;
    return ERASE_OK;
}

erase_status_t erase_network_batch_view(const erase_network_t *net, const erase_batch_t *src, int first, int count,
                                        erase_batch_t *dst)
{
    field_t f[MAX_FIELDS];
    int n = fields(erase_network_config(net), f);
    ERASE_CHECK(check_range(src, first, count, f, n));
    memset(dst, 0, sizeof *dst);
    for (int i = 0; i < n; i++)
        FIELD(dst, f[i]) = (void *)((const char *)CFIELD(src, f[i]) + f[i].elem * (size_t)f[i].width * (size_t)first);
    dst->size = count;
    return ERASE_OK;
}
