#include "io/ctr_reader.h"

#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define DENSE ERASE_CTR_SHARD_DENSE
#define FIELDS ERASE_CTR_SHARD_FIELDS

/* A shard as the reader holds it: the file and the capacities it is read for. */
typedef struct {
    erase_ctr_shard_t *shard;
    const uint32_t *hotness; /* [26] capacities (the format's ctx) */
    int64_t width;           /* H: their sum (26: one-hot) */
} ctr_rows_t;

static const uint32_t one_each[FIELDS] = { 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
                                           1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1 };

static void ctr_close(void *shard);

static erase_status_t ctr_open(void *ctx, const char *path, void **out)
{
    *out = NULL;
    ctr_rows_t *r = calloc(1, sizeof *r);
    if (!r)
        return ERASE_ERROR(ERASE_ERR_NOMEM, "%s: out of memory", path);
    r->hotness = ctx ? ctx : one_each;
    for (int f = 0; f < FIELDS; f++) {
        if (r->hotness[f] < 1) {
            free(r);
            return ERASE_ERROR(ERASE_ERR_INVALID, "%s: hotness of C%d is 0, expected >= 1", path, f + 1);
        }
        r->width += r->hotness[f];
    }
    erase_status_t st = erase_ctr_shard_open(path, &r->shard);
    /* at open, from the attribute, rather than at the first row that does
     * not fit, perhaps hours into training */
    const uint32_t *most = st == ERASE_OK ? erase_ctr_shard_max_hotness(r->shard) : NULL;
    for (int f = 0; most && f < FIELDS && st == ERASE_OK; f++)
        if (most[f] > r->hotness[f])
            st = ERASE_ERROR(ERASE_ERR_FORMAT,
                             "%s: feature C%d has up to %" PRIu32 " ids a sample (attribute max_hotness), more than "
                             "its hotness %" PRIu32
                             " (a model file's hotness = [26 capacities] or \"mlperf\" raises it)",
                             path, f + 1, most[f], r->hotness[f]);
    if (st != ERASE_OK) {
        ctr_close(r);
        return st;
    }
    *out = r;
    return ERASE_OK;
}

static void ctr_close(void *shard)
{
    ctr_rows_t *r = shard;
    if (!r)
        return;
    erase_ctr_shard_close(r->shard);
    free(r);
}

static int64_t ctr_rows(const void *shard)
{
    return erase_ctr_shard_rows(((const ctr_rows_t *)shard)->shard);
}

static int64_t ctr_chunk_rows(const void *shard)
{
    return erase_ctr_shard_chunk_rows(((const ctr_rows_t *)shard)->shard);
}

/* Raw arrays: label, dense as erase_ctr_shard_read gives them; the ids
 * padded to the capacities and, for multi-hot capacities, their counts
 * (erase_ctr_shard_read_padded). */
enum { RAW_LABEL = 0, RAW_DENSE, RAW_SPARSE, RAW_LEN };

static void ctr_layout(const void *shard, erase_row_layout_t *l)
{
    int64_t width = ((const ctr_rows_t *)shard)->width;
    *l = (erase_row_layout_t){ .nfields = 3,
                               .field = { [ERASE_CTR_FIELD_DENSE] = { "dense", sizeof(float), DENSE },
                                          [ERASE_CTR_FIELD_SPARSE] = { "sparse", sizeof(uint32_t), width },
                                          [ERASE_CTR_FIELD_LABEL] = { "label", sizeof(float), 1 } },
                               .nraw = 3,
                               .raw = { [RAW_LABEL] = { sizeof(uint8_t), 1 },
                                        [RAW_DENSE] = { sizeof(float), DENSE },
                                        [RAW_SPARSE] = { sizeof(uint32_t), width } } };
    if (width != FIELDS) { /* some hotness > 1: the counts too */
        l->nfields = l->nraw = 4;
        l->field[ERASE_CTR_FIELD_SPARSE_LEN] = (typeof(l->field[0])){ "sparse_len", sizeof(uint32_t), FIELDS };
        l->raw[RAW_LEN].elem_bytes = sizeof(uint32_t);
        l->raw[RAW_LEN].width = FIELDS;
    }
}

static erase_status_t ctr_read(void *shard, int64_t begin, int64_t count, void *const *raw)
{
    ctr_rows_t *r = shard;
    int one_hot = r->width == FIELDS;
    int plain = one_hot && erase_ctr_shard_version(r->shard) == 1; /* /sparse is the batch's layout */
    ERASE_CHECK(erase_ctr_shard_read(r->shard, begin, count, raw[RAW_LABEL], raw[RAW_DENSE],
                                     plain ? raw[RAW_SPARSE] : NULL));
    if (plain)
        return ERASE_OK;
    return erase_ctr_shard_read_padded(r->shard, begin, count, r->hotness, r->width, raw[RAW_SPARSE],
                                       one_hot ? NULL : raw[RAW_LEN]);
}

/* The model's inputs: dense log1p(max(x, 0)), missing (NaN) -> 0; ids as
 * read (padded); their counts; the label as a float. */
static void ctr_decode(const erase_row_layout_t *layout, const void *const *raw, const uint32_t *index,
                       int64_t count, void *const *field)
{
    const uint8_t *label = raw[RAW_LABEL];
    const float *dense = raw[RAW_DENSE];
    const uint32_t *sparse = raw[RAW_SPARSE], *len = layout->nraw > RAW_LEN ? raw[RAW_LEN] : NULL;
    size_t width = (size_t)layout->field[ERASE_CTR_FIELD_SPARSE].width;
    float *d = field[ERASE_CTR_FIELD_DENSE], *l = field[ERASE_CTR_FIELD_LABEL];
    uint32_t *s = field[ERASE_CTR_FIELD_SPARSE], *n = len ? field[ERASE_CTR_FIELD_SPARSE_LEN] : NULL;
    for (int64_t t = 0; t < count; t++) {
        size_t src = index ? index[t] : (size_t)t;
        for (int j = 0; j < DENSE; j++) {
            float x = dense[src * DENSE + (size_t)j];
            d[t * DENSE + j] = isnan(x) ? 0.0f : log1pf(x > 0.0f ? x : 0.0f);
        }
        memcpy(s + (size_t)t * width, sparse + src * width, sizeof(uint32_t) * width);
        if (n)
            memcpy(n + t * FIELDS, len + src * FIELDS, sizeof(uint32_t) * FIELDS);
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

void erase_ctr_rows_init(erase_row_format_t *format, const uint32_t *hotness)
{
    *format = erase_ctr_rows;
    format->ctx = (void *)hotness;
}

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
                                .sparse_len = b->field[ERASE_CTR_FIELD_SPARSE_LEN],
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
    if (f->open != ctr_open)
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
