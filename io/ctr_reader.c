#include "io/ctr_reader.h"

#include <inttypes.h>
#include <math.h>
#include <string.h>

#define DENSE ERASE_CTR_SHARD_DENSE
#define FIELDS ERASE_CTR_SHARD_FIELDS

static erase_status_t ctr_open(void *ctx, const char *path, void **shard)
{
    (void)ctx;
    return erase_ctr_shard_open(path, (erase_ctr_shard_t **)shard);
}

static void ctr_close(void *shard)
{
    erase_ctr_shard_close(shard);
}

static int64_t ctr_rows(const void *shard)
{
    return erase_ctr_shard_rows(shard);
}

static int64_t ctr_chunk_rows(const void *shard)
{
    return erase_ctr_shard_chunk_rows(shard);
}

/* Raw arrays: the rows as erase_ctr_shard_read gives them. */
enum { RAW_LABEL = 0, RAW_DENSE, RAW_SPARSE };

static void ctr_layout(const void *shard, erase_row_layout_t *l)
{
    (void)shard;
    *l = (erase_row_layout_t){ .nfields = 3,
                               .field = { [ERASE_CTR_FIELD_DENSE] = { "dense", sizeof(float), DENSE },
                                          [ERASE_CTR_FIELD_SPARSE] = { "sparse", sizeof(uint32_t), FIELDS },
                                          [ERASE_CTR_FIELD_LABEL] = { "label", sizeof(float), 1 } },
                               .nraw = 3,
                               .raw = { [RAW_LABEL] = { sizeof(uint8_t), 1 },
                                        [RAW_DENSE] = { sizeof(float), DENSE },
                                        [RAW_SPARSE] = { sizeof(uint32_t), FIELDS } } };
}

static erase_status_t ctr_read(void *shard, int64_t begin, int64_t count, void *const *raw)
{
    return erase_ctr_shard_read(shard, begin, count, raw[RAW_LABEL], raw[RAW_DENSE], raw[RAW_SPARSE]);
}

/* The model's inputs: dense log1p(max(x, 0)), missing (NaN) -> 0; ids as
 * stored; the label as a float. */
static void ctr_decode(const erase_row_layout_t *layout, const void *const *raw, const uint32_t *index,
                       int64_t count, void *const *field)
{
    (void)layout;
    const uint8_t *label = raw[RAW_LABEL];
    const float *dense = raw[RAW_DENSE];
    const uint32_t *sparse = raw[RAW_SPARSE];
    float *d = field[ERASE_CTR_FIELD_DENSE], *l = field[ERASE_CTR_FIELD_LABEL];
    uint32_t *s = field[ERASE_CTR_FIELD_SPARSE];
    for (int64_t t = 0; t < count; t++) {
        size_t src = index ? index[t] : (size_t)t;
        for (int j = 0; j < DENSE; j++) {
            float x = dense[src * DENSE + (size_t)j];
            d[t * DENSE + j] = isnan(x) ? 0.0f : log1pf(x > 0.0f ? x : 0.0f);
        }
        memcpy(s + t * FIELDS, sparse + src * FIELDS, sizeof(uint32_t) * FIELDS);
        l[t] = label[src] ? 1.0f : 0.0f;
    }
}

const erase_row_format_t erase_ctr_rows = { .name = "ctr",
                                            .open = ctr_open,
                                            .close = ctr_close,
                                            .rows = ctr_rows,
                                            .chunk_rows = ctr_chunk_rows,
                                            .layout = ctr_layout,
                                            .read = ctr_read,
                                            .decode = ctr_decode };

erase_status_t erase_ctr_reader_open(const char *const *inputs, int n, const erase_reader_options_t *options,
                                     erase_reader_t **out)
{
    return erase_reader_open(&erase_ctr_rows, inputs, n, options, out);
}

erase_ctr_batch_t erase_ctr_batch(const erase_reader_batch_t *b)
{
    return (erase_ctr_batch_t){ .size = b->size,
                                .dense = b->field[ERASE_CTR_FIELD_DENSE],
                                .sparse = b->field[ERASE_CTR_FIELD_SPARSE],
                                .label = b->field[ERASE_CTR_FIELD_LABEL],
                                .row_id = b->row_id,
                                .epoch = b->epoch,
                                .step = b->step,
                                .first_sample = b->first_sample,
                                .global_size = b->global_size,
                                .end_of_epoch = b->end_of_epoch,
                                .wait_s = b->wait_s };
}

/* ERASE_ERR_INVALID unless `r` reads CTR rows. */
static erase_status_t check_ctr(const erase_reader_t *r)
{
    const erase_row_format_t *f = erase_reader_format(r);
    if (f != &erase_ctr_rows)
        return ERASE_ERROR(ERASE_ERR_INVALID, "the data is %s data, not ctr", f->name);
    return ERASE_OK;
}

erase_status_t erase_ctr_reader_next(erase_reader_t *r, erase_ctr_batch_t *out)
{
    memset(out, 0, sizeof *out);
    ERASE_CHECK(check_ctr(r));
    erase_reader_batch_t b;
    erase_status_t st = erase_reader_next(r, &b);
    if (st == ERASE_OK)
        *out = erase_ctr_batch(&b);
    return st;
}

erase_status_t erase_ctr_reader_check_tables(const erase_reader_t *r, int dense, int fields,
                                             const uint32_t *table_rows)
{
    ERASE_CHECK(check_ctr(r));
    if (dense != DENSE)
        return ERASE_ERROR(ERASE_ERR_INVALID, "the data has %d dense features, the model %d", DENSE, dense);
    if (fields != FIELDS)
        return ERASE_ERROR(ERASE_ERR_INVALID, "the data has %d categorical features, the model %d", FIELDS, fields);
    for (int f = 0; f < FIELDS; f++)
        if (table_rows[f] < 2)
            return ERASE_ERROR(ERASE_ERR_INVALID,
                               "table C%d has %" PRIu32 " row%s: needs >= 2 (the missing-id row and one for ids)",
                               f + 1, table_rows[f], table_rows[f] == 1 ? "" : "s");
    return ERASE_OK;
}
