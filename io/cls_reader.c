#include "io/cls_reader.h"

#include <string.h>

static erase_status_t cls_open(void *ctx, const char *path, void **shard)
{
    (void)ctx;
    return erase_cls_shard_open(path, (erase_cls_shard_t **)shard);
}

static void cls_close(void *shard)
{
    erase_cls_shard_close(shard);
}

static int64_t cls_rows(const void *shard)
{
    return erase_cls_shard_rows(shard);
}

static int64_t cls_chunk_rows(const void *shard)
{
    return erase_cls_shard_chunk_rows(shard);
}

/* Raw arrays: the rows as erase_cls_shard_read gives them. */
enum { RAW_FEATURES = 0, RAW_LABEL };

static void cls_layout(const void *shard, erase_row_layout_t *l)
{
    int64_t F = erase_cls_shard_features(shard);
    *l = (erase_row_layout_t){
        .nfields = 2,
        .field = { [ERASE_CLS_FIELD_FEATURES] = { "features", sizeof(float), F },
                   [ERASE_CLS_FIELD_CLASSES] = { "classes", sizeof(int32_t), 1 } },
        .nraw = 2,
        .raw = { [RAW_FEATURES] = { sizeof(float), F }, [RAW_LABEL] = { sizeof(uint8_t), 1 } },
        .nparams = 2,
        .param = { [ERASE_CLS_PARAM_FEATURES] = { "features", F },
                   [ERASE_CLS_PARAM_CLASSES] = { "classes", erase_cls_shard_classes(shard) } },
    };
}

static erase_status_t cls_read(void *shard, int64_t begin, int64_t count, void *const *raw)
{
    return erase_cls_shard_read(shard, begin, count, raw[RAW_FEATURES], raw[RAW_LABEL]);
}

/* Features as stored, the class widened to int32. */
static void cls_decode(const erase_row_layout_t *layout, const void *const *raw, const uint32_t *index,
                       int64_t count, void *const *field)
{
    const size_t F = (size_t)layout->field[ERASE_CLS_FIELD_FEATURES].width;
    const float *x = raw[RAW_FEATURES];
    const uint8_t *label = raw[RAW_LABEL];
    float *features = field[ERASE_CLS_FIELD_FEATURES];
    int32_t *classes = field[ERASE_CLS_FIELD_CLASSES];
    for (int64_t t = 0; t < count; t++) {
        size_t src = index ? index[t] : (size_t)t;
        memcpy(features + (size_t)t * F, x + src * F, sizeof(float) * F);
        classes[t] = label[src];
    }
}

const erase_row_format_t erase_cls_rows = { .name = "classify",
                                            .open = cls_open,
                                            .close = cls_close,
                                            .rows = cls_rows,
                                            .chunk_rows = cls_chunk_rows,
                                            .layout = cls_layout,
                                            .read = cls_read,
                                            .decode = cls_decode };

erase_status_t erase_cls_reader_open(const char *const *inputs, int n, const erase_reader_options_t *options,
                                     erase_reader_t **out)
{
    return erase_reader_open(&erase_cls_rows, inputs, n, options, out);
}

erase_status_t erase_cls_reader_shape(const erase_reader_t *r, int64_t *features, int *classes)
{
    const erase_row_format_t *f = erase_reader_format(r);
    if (f != &erase_cls_rows)
        return ERASE_ERROR(ERASE_ERR_INVALID, "the data is %s data, not classify", f->name);
    erase_reader_info_t info = erase_reader_info(r);
    *features = info.layout.param[ERASE_CLS_PARAM_FEATURES].value;
    *classes = (int)info.layout.param[ERASE_CLS_PARAM_CLASSES].value;
    return ERASE_OK;
}

erase_status_t erase_cls_reader_next(erase_reader_t *r, erase_cls_batch_t *out)
{
    memset(out, 0, sizeof *out);
    int64_t F = 0;
    int C = 0;
    ERASE_CHECK(erase_cls_reader_shape(r, &F, &C));
    erase_reader_batch_t b;
    ERASE_CHECK(erase_reader_next(r, &b));
    *out = (erase_cls_batch_t){ .size = b.size,
                                .features_per_row = F,
                                .features = b.field[ERASE_CLS_FIELD_FEATURES],
                                .classes = b.field[ERASE_CLS_FIELD_CLASSES],
                                .row_id = b.row_id,
                                .epoch = b.epoch,
                                .step = b.step,
                                .first_sample = b.first_sample,
                                .global_size = b.global_size,
                                .end_of_epoch = b.end_of_epoch,
                                .wait_s = b.wait_s };
    return ERASE_OK;
}
