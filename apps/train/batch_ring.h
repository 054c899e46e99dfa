/*
 * Host copies of the last few batches a reader delivered, for a consumer
 * that is some steps behind the reader: under --schedule local the last
 * of P stages trains in step t the batch of step t - (P-1), and its head
 * outputs are scored against that batch's labels (the task's train
 * window).
 */
#ifndef ERASE_APPS_TRAIN_BATCH_RING_H
#define ERASE_APPS_TRAIN_BATCH_RING_H

#include "io/reader.h"

typedef struct train_batch_ring train_batch_ring_t;

/*
 * A ring of `depth` >= 1 batches of up to `rows` rows with `layout`'s
 * fields. Errors: ERASE_ERR_INVALID (sizes that overflow), ERASE_ERR_NOMEM.
 */
erase_status_t train_batch_ring_create(const erase_row_layout_t *layout, int64_t rows, int depth,
                                       train_batch_ring_t **out);
void train_batch_ring_destroy(train_batch_ring_t *ring);

/* Copy b (b->size <= rows: its fields and row ids) in as the newest
 * batch, dropping the oldest when full. Errors: ERASE_ERR_INVALID (more
 * rows than the ring holds). */
erase_status_t train_batch_ring_push(train_batch_ring_t *ring, const erase_reader_batch_t *b);

/* The batch pushed `ago` pushes before the newest (0: the newest), or
 * NULL when the ring does not hold it (fewer pushes so far, ago >= depth). */
const erase_reader_batch_t *train_batch_ring_get(const train_batch_ring_t *ring, int ago);

/* Forget every batch (a pipeline drained: the next push is the first). */
void train_batch_ring_clear(train_batch_ring_t *ring);

#endif
