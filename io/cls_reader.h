/*
 * The classification row format of the data reader (io/reader.h: order,
 * rank split, splits, epochs, cursor, prefetch) and a typed view of its
 * batches.
 *
 * Fields of a batch of n rows, from classification shards
 * (io/cls_shard.h, erase-cls-1) of F features and C classes:
 *   field 0  features  float  [n, F]  as stored (MNIST: pixel / 255)
 *   field 1  classes   int32  [n]     the class, 0..C-1 (lib/nn/batch.h)
 * Parameters: "features" = F and "classes" = C; every shard of a dataset
 * must have the same (erase_reader_open names the shard and both values).
 */
#ifndef ERASE_IO_CLS_READER_H
#define ERASE_IO_CLS_READER_H

#include <stdint.h>

#include "io/cls_shard.h"
#include "io/reader.h"
#include "lib/core/status.h"

/* The fields' and parameters' indices (erase_reader_batch_t.field,
 * erase_row_layout_t.param). */
enum { ERASE_CLS_FIELD_FEATURES = 0, ERASE_CLS_FIELD_CLASSES };
enum { ERASE_CLS_PARAM_FEATURES = 0, ERASE_CLS_PARAM_CLASSES };

/* The classification row format (reads through erase_cls_shard_read: its
 * errors). */
extern const erase_row_format_t erase_cls_rows;

/* A batch of a classification reader, typed: the fields named, the rest
 * as in erase_reader_batch_t. Pointers stay valid as those of the batch
 * they come from. */
typedef struct {
    int64_t size;             /* n: this rank's rows */
    int64_t features_per_row; /* F */
    const float *features;    /* [n, F] */
    const int32_t *classes;   /* [n]: 0..C-1 */
    const int64_t *row_id;    /* [n] */
    int64_t epoch, step, first_sample, global_size;
    int end_of_epoch;
    double wait_s;
} erase_cls_batch_t;

/* erase_reader_open with the classification format: its errors, those of
 * erase_cls_shard_open naming the file and dataset, and a shard that
 * disagrees with the first (ERASE_ERR_FORMAT, "F: 783 features, the first
 * shard P has 784: every shard must have the same"; the same for classes). */
erase_status_t erase_cls_reader_open(const char *const *inputs, int n, const erase_reader_options_t *options,
                                     erase_reader_t **out);

/* erase_reader_next, typed: its errors, and ERASE_ERR_INVALID when `r`
 * was not opened with the classification format. */
erase_status_t erase_cls_reader_next(erase_reader_t *r, erase_cls_batch_t *out);

/* F (features per row) and C (classes) of the data; ERASE_ERR_INVALID
 * ("the data is ctr data, not classify") for a reader of another format. */
erase_status_t erase_cls_reader_shape(const erase_reader_t *r, int64_t *features, int *classes);

#endif
