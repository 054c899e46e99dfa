/* Host copies of recent reader batches (batch_ring.h). */
#include "apps/train/batch_ring.h"

#include "lib/core/checked.h"

#include <stdlib.h>
#include <string.h>

struct train_batch_ring {
    erase_row_layout_t layout;
    int64_t rows;
    int depth, pushes;
    erase_reader_batch_t *batch;    /* [depth]: pointers into `store` */
    void **store;                   /* [depth][nfields + 1]: each field, then the row ids */
};

erase_status_t train_batch_ring_create(const erase_row_layout_t *layout, int64_t rows, int depth,
                                       train_batch_ring_t **out)
{
    *out = NULL;
    if (depth < 1 || rows < 1)
        return ERASE_ERROR(ERASE_ERR_INVALID, "batch ring: %d batches of %lld rows (expected >= 1 of each)", depth,
                           (long long)rows);
    train_batch_ring_t *r = calloc(1, sizeof *r);
    int per = layout->nfields + 1;
    if (!r || !(r->batch = calloc((size_t)depth, sizeof *r->batch)) ||
        !(r->store = calloc((size_t)depth * (size_t)per, sizeof *r->store))) {
        train_batch_ring_destroy(r);
        return ERASE_ERROR(ERASE_ERR_NOMEM, "batch ring: no memory for %d batches", depth);
    }
    r->layout = *layout;
    r->rows = rows;
    r->depth = depth;
    for (int d = 0; d < depth; d++)
        for (int f = 0; f < per; f++) {
            size_t bytes;
            int ok = f < layout->nfields ? erase_bytes(layout->field[f].elem_bytes, rows, layout->field[f].width, &bytes)
                                         : erase_bytes(sizeof(int64_t), rows, 1, &bytes);
            if (!ok) {
                train_batch_ring_destroy(r);
                return ERASE_ERROR(ERASE_ERR_INVALID, "batch ring: %lld rows of field %d overflow", (long long)rows, f);
            }
            if (!(r->store[d * per + f] = malloc(bytes))) {
                train_batch_ring_destroy(r);
                return ERASE_ERROR(ERASE_ERR_NOMEM, "batch ring: no memory for %lld rows", (long long)rows);
            }
        }
    *out = r;
    return ERASE_OK;
}

void train_batch_ring_destroy(train_batch_ring_t *r)
{
    if (!r)
        return;
    for (int i = 0; r->store && i < r->depth * (r->layout.nfields + 1); i++)
        free(r->store[i]);
    free(r->store);
    free(r->batch);
    free(r);
}

erase_status_t train_batch_ring_push(train_batch_ring_t *r, const erase_reader_batch_t *b)
{
    if (b->size > r->rows)
        return ERASE_ERROR(ERASE_ERR_INVALID, "batch ring: a batch of %lld rows (it holds %lld)", (long long)b->size,
                           (long long)r->rows);
    int d = r->pushes % r->depth, per = r->layout.nfields + 1;
    erase_reader_batch_t *to = &r->batch[d];
    *to = *b;
    for (int f = 0; f < r->layout.nfields; f++) {
        size_t bytes = r->layout.field[f].elem_bytes * (size_t)b->size * (size_t)r->layout.field[f].width;
        if (bytes)
            memcpy(r->store[d * per + f], b->field[f], bytes);
        to->field[f] = r->store[d * per + f];
    }
    if (b->row_id && b->size)
        memcpy(r->store[d * per + r->layout.nfields], b->row_id, sizeof(int64_t) * (size_t)b->size);
    to->row_id = b->row_id ? r->store[d * per + r->layout.nfields] : NULL;
    r->pushes++;
    return ERASE_OK;
}

const erase_reader_batch_t *train_batch_ring_get(const train_batch_ring_t *r, int ago)
{
    if (ago < 0 || ago >= r->depth || ago >= r->pushes)
        return NULL;
    return &r->batch[(r->pushes - 1 - ago) % r->depth];
}

void train_batch_ring_clear(train_batch_ring_t *r)
{
    r->pushes = 0;
}
