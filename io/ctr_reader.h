/*
 * The CTR row format of the data reader (io/reader.h: order, rank split,
 * splits, epochs, cursor, prefetch) and a typed view of its batches.
 *
 * Fields of a batch of n rows, decoded from a CTR shard (io/ctr_shard.h,
 * either version), for a model whose feature f holds at most hotness[f]
 * ids (erase_ctr_rows: all 1), H = sum of hotness (lib/nn/batch.h):
 *   field 0  dense       float   [n, 13]  log1p(max(x, 0)); missing (NaN) -> 0
 *   field 1  sparse      uint32  [n, H]   feature f's ids at columns [o_f, o_f + len),
 *                                         o_f = hotness[0] + ... + hotness[f - 1], then
 *                                         0xFFFFFFFF up to o_f + hotness[f]; a missing
 *                                         feature is one id 0xFFFFFFFF. One-hot: [n, 26]
 *                                         as stored.
 *   field 2  label       float   [n]      0 or 1
 *   field 3  sparse_len  uint32  [n, 26]  ids of each feature (>= 1); only when some
 *                                         hotness is > 1 (absent for one-hot capacities)
 * A version 1 shard reads as one id per feature. A shard whose attribute
 * max_hotness exceeds a capacity is refused when the reader opens it
 * (ERASE_ERR_FORMAT "F: feature C21 has up to 120 ids a sample (attribute
 * max_hotness), more than its hotness 100 (a model file's hotness = [26 capacities] or "mlperf" raises it)"); a
 * row with more ids than its capacity (a shard whose attribute lies) fails
 * the read (erase_ctr_shard_read_padded: "F: row 17 feature C21 has 120
 * ids, more than its hotness 100 (a model file's hotness = [26 capacities] or "mlperf" raises it)"). Sample order,
 * rank split and cursor are the reader's (io/reader.h), whatever the
 * capacities and versions. A shuffle pool holds its rows padded: K *
 * block_rows * (4 H + 4 * 26 + 53) bytes, 66 MB with the default pools and
 * MLPerf's hotness (H = 214), against 10 MB one-hot.
 * No parameters: every CTR shard has 13 dense and 26 categorical features.
 */
#ifndef ERASE_IO_CTR_READER_H
#define ERASE_IO_CTR_READER_H

#include <stdint.h>

#include "io/ctr_shard.h"
#include "io/reader.h"
#include "lib/core/status.h"

/* The fields' indices in erase_reader_batch_t.field. */
enum { ERASE_CTR_FIELD_DENSE = 0, ERASE_CTR_FIELD_SPARSE, ERASE_CTR_FIELD_LABEL, ERASE_CTR_FIELD_SPARSE_LEN };

/* The CTR row format for one id per feature (reads through
 * erase_ctr_shard_read: its errors; a multi-hot row fails). */
extern const erase_row_format_t erase_ctr_rows;

/* The CTR row format for a model whose feature f holds at most hotness[f]
 * ids ([26], each >= 1; the array must outlive every reader opened with
 * the format): erase_ctr_rows with ctx = hotness. Opening a shard with a
 * hotness of 0 fails: ERASE_ERR_INVALID "F: hotness of C3 is 0, expected >= 1". */
void erase_ctr_rows_init(erase_row_format_t *format, const uint32_t *hotness);

/* A batch of a CTR reader, typed (erase_reader_batch_t with the fields
 * named). Pointers stay valid as those of the batch they come from. */
typedef struct {
    int64_t size;           /* n: this rank's rows (0 <= n <= ceil(G/D)) */
    const float *dense;     /* [n, 13]: log1p(max(x, 0)); missing -> 0 */
    const uint32_t *sparse; /* [n, H]: ids, padded with 0xFFFFFFFF (one-hot: [n, 26]) */
    const uint32_t *sparse_len; /* [n, 26]: ids of each feature; NULL for one-hot capacities */
    const float *label;     /* [n]: 0 or 1 */
    const int64_t *row_id;  /* [n]: each row's index in all shards concatenated, file order */
    int64_t epoch;          /* epoch of this batch */
    int64_t step;           /* step within the epoch, 0-based */
    int64_t first_sample;   /* position of this rank's first row in the epoch's global order */
    int64_t global_size;    /* m: rows of the whole global batch (all ranks) */
    int end_of_epoch;       /* 1: no data; epoch `epoch` is complete */
    double wait_s;          /* seconds this call waited for the batch */
} erase_ctr_batch_t;

/* erase_reader_open with the CTR format for one id per feature: its errors, and those of
 * erase_ctr_shard_open naming the file and dataset. */
erase_status_t erase_ctr_reader_open(const char *const *inputs, int n, const erase_reader_options_t *options,
                                     erase_reader_t **out);

/* erase_reader_next, typed: its errors, and ERASE_ERR_INVALID when `r`
 * was not opened with the CTR format. */
erase_status_t erase_ctr_reader_next(erase_reader_t *r, erase_ctr_batch_t *out);

/* The typed view of `b`, a batch of a reader opened with a CTR format
 * (of another format the pointers would be of other arrays). */
erase_ctr_batch_t erase_ctr_batch(const erase_reader_batch_t *b);

/*
 * Check that the data can feed a model: `dense` and `fields` must be the
 * shard's 13 and 26, and every table must have >= 2 rows (the model maps
 * a missing id to the last row and any other 32-bit id h to
 * h mod (rows - 1), docs/models.md), so every id the shards can hold maps
 * into its table. Errors: ERASE_ERR_INVALID, e.g.
 *   "the data has 26 categorical features, the model 20"
 *   "table C5 has 1 row: needs >= 2 (the missing-id row and one for ids)"
 *   "the data is classify data, not ctr" (a reader of another format)
 */
erase_status_t erase_ctr_reader_check_tables(const erase_reader_t *r, int dense, int fields,
                                             const uint32_t *table_rows);

#endif
