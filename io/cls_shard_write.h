/*
 * Writing a dataset of classification shards (schema in io/cls_shard.h)
 * into a directory: shards of a fixed number of rows, each written under a
 * temporary name ("part-00000.h5.tmp", its `format` attribute last, closed
 * and fsynced), all renamed only by erase_cls_dataset_writer_commit(),
 * which then writes DIR/index.txt (io/ctr_index.h) last. A writer freed
 * without a commit deletes its temporary files (and the directory if it
 * created it): a failed or interrupted conversion leaves no shard and no
 * index.
 */
#ifndef ERASE_IO_CLS_SHARD_WRITE_H
#define ERASE_IO_CLS_SHARD_WRITE_H

#include <stdint.h>

#include "io/cls_shard.h"
#include "lib/core/status.h"

typedef struct {
    int64_t chunk_rows;    /* chunk length along N (default 1024, >= 1) */
    int compress;          /* 1: shuffle + deflate level 1 (default); 0: none */
    const char *converter; /* text of the `converter` attribute (default "erase <version>") */
} erase_cls_write_options_t;

typedef struct erase_cls_dataset_writer erase_cls_dataset_writer_t;

/* Defaults: 1024-row chunks, compressed. */
erase_cls_write_options_t erase_cls_write_options_default(void);

/*
 * Prepare `dir` (io/ctr_dataset_write.h, erase_dataset_dir_prepare: created
 * if missing; an old dataset is an error unless `force`) for shards of
 * `shard_rows` rows (>= 1) of `features` float32 values (>= 1) and a class
 * in 0..classes-1 (classes 1..256). `sources` (one path per line) goes into
 * every shard's source_files attribute. Errors: ERASE_ERR_INVALID (bad
 * sizes; "DIR: already holds a dataset (index.txt); remove it or replace
 * it (--force)"), ERASE_ERR_IO, ERASE_ERR_UNSUPPORTED (compression asked
 * for and this HDF5 has no deflate filter), ERASE_ERR_NOMEM.
 */
erase_status_t erase_cls_dataset_writer_open(const char *dir, int64_t features, int classes, int64_t shard_rows,
                                             const erase_cls_write_options_t *options, const char *sources,
                                             int force, erase_cls_dataset_writer_t **out);

/*
 * Append `n` rows: features [n, F] float32, label [n] uint8. Shards are
 * finished as they fill. Errors: ERASE_ERR_INVALID ("DIR: row 17 has label
 * 12, expected 0..9"), ERASE_ERR_STATE (after commit), ERASE_ERR_IO naming
 * the temporary file and dataset.
 */
erase_status_t erase_cls_dataset_writer_append(erase_cls_dataset_writer_t *w, int64_t n, const float *features,
                                               const uint8_t *label);

/* Shards begun so far; rows appended so far; rows of class c so far. */
int erase_cls_dataset_writer_shards(const erase_cls_dataset_writer_t *w);
int64_t erase_cls_dataset_writer_rows(const erase_cls_dataset_writer_t *w);
int64_t erase_cls_dataset_writer_class_rows(const erase_cls_dataset_writer_t *w, int c);

/*
 * Finish the last shard, rename every shard to its final name, write
 * DIR/index.txt. Errors: ERASE_ERR_FORMAT ("DIR: no rows to write"),
 * ERASE_ERR_STATE (twice), ERASE_ERR_IO.
 */
erase_status_t erase_cls_dataset_writer_commit(erase_cls_dataset_writer_t *w);

/* Release the writer; if it was not committed, every file it wrote is
 * deleted, and the directory too if it created it. NULL is allowed. */
void erase_cls_dataset_writer_free(erase_cls_dataset_writer_t *w);

#endif
