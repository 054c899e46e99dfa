/*
 * Writing a dataset of CTR shards into a directory: shards of a fixed
 * number of rows (io/ctr_shard_write.h), all kept under temporary names
 * until erase_ctr_dataset_writer_commit() renames them and writes the
 * index (io/ctr_index.h) last. Used by the Criteo converter and the
 * synthetic data generator.
 */
#ifndef ERASE_IO_CTR_DATASET_WRITE_H
#define ERASE_IO_CTR_DATASET_WRITE_H

#include <stdint.h>

#include "io/ctr_shard_write.h"
#include "lib/core/status.h"

typedef struct erase_ctr_dataset_writer erase_ctr_dataset_writer_t;

/*
 * Prepare `dir` (created if missing) for a new dataset of shards with
 * `shard_rows` rows (>= 1). If `dir` already holds a dataset (an
 * index.txt): ERASE_ERR_INVALID "DIR: already holds a dataset (index.txt);
 * remove it or replace it (--force)" unless `force`, in which case the old
 * index and the shards it lists are deleted first. Errors also:
 * ERASE_ERR_IO (cannot create the directory), ERASE_ERR_NOMEM.
 */
erase_status_t erase_ctr_dataset_writer_open(const char *dir, int64_t shard_rows,
                                             const erase_ctr_write_options_t *options, int force,
                                             erase_ctr_dataset_writer_t **out);

/*
 * Append `n` rows (layout of erase_ctr_writer_append) that came from
 * `source` (a file name or a description; recorded in the source_files
 * attribute of every shard they land in). Shards are finished as they
 * fill. Errors: those of io/ctr_shard_write.h.
 */
erase_status_t erase_ctr_dataset_writer_append(erase_ctr_dataset_writer_t *w, int64_t n, const uint8_t *label,
                                               const float *dense, const uint32_t *sparse, const char *source);

/* The same with rows whose categorical features may hold several ids
 * (layout of erase_ctr_writer_append_ids: lengths [n, 26] or NULL, ids
 * flat). A shard is written as "erase-ctr-2" from its first row with more
 * than one id in a feature, and every shard begun after it from its start;
 * the shards before it stay "erase-ctr-1" (readers take both). */
erase_status_t erase_ctr_dataset_writer_append_ids(erase_ctr_dataset_writer_t *w, int64_t n, const uint8_t *label,
                                                   const float *dense, const uint32_t *lengths, const uint32_t *ids,
                                                   const char *source);

/* Shards begun so far; rows appended so far. */
int erase_ctr_dataset_writer_shards(const erase_ctr_dataset_writer_t *w);
int64_t erase_ctr_dataset_writer_rows(const erase_ctr_dataset_writer_t *w);

/*
 * Finish the last shard, rename every shard to its final name and write
 * DIR/index.txt. Errors: ERASE_ERR_FORMAT (no rows were appended:
 * "DIR: no rows to write"), ERASE_ERR_IO.
 */
erase_status_t erase_ctr_dataset_writer_commit(erase_ctr_dataset_writer_t *w);

/*
 * Units (a parallel conversion, io/convert_plan.h): after
 * erase_ctr_dataset_writer_begin_unit(w, u) the rows appended go to new
 * shards of unit u only (the shard open before is finished), kept as
 * DIR/.unit-UUUUU-KKKKK.h5.tmp until erase_ctr_dataset_writer_publish_units
 * gives them their final names. Errors: those of io/ctr_shard_write.h.
 */
erase_status_t erase_ctr_dataset_writer_begin_unit(erase_ctr_dataset_writer_t *w, int unit);

/* Finish the shard still open (none: nothing to do), without publishing. */
erase_status_t erase_ctr_dataset_writer_finish(erase_ctr_dataset_writer_t *w);

/* Add the rows this writer holds of unit u to rows[u], u < units. */
erase_status_t erase_ctr_dataset_writer_unit_rows(const erase_ctr_dataset_writer_t *w, int64_t *rows, int units);

/* Shards of a unit of `rows` rows: ceil(rows / shard_rows). */
int64_t erase_ctr_unit_shards(int64_t rows, int64_t shard_rows);

/*
 * Rename this writer's finished unit shards to their final names
 * DIR/part-NNNNN.h5, numbered over all `units` in unit order:
 * unit_rows[u] is unit u's row count, whichever rank wrote it (every
 * unit's shards hold shard_rows rows but the last). Deletes no old
 * dataset (erase_dataset_remove, once, before any rank publishes).
 * Errors: ERASE_ERR_IO, ERASE_ERR_NOMEM.
 */
erase_status_t erase_ctr_dataset_writer_publish_units(erase_ctr_dataset_writer_t *w, const int64_t *unit_rows,
                                                      int units);

/* Write DIR/index.txt listing the shards of `units` (as named by
 * erase_ctr_dataset_writer_publish_units) with their rows. Errors:
 * ERASE_ERR_FORMAT (no rows at all), ERASE_ERR_IO, ERASE_ERR_NOMEM. */
erase_status_t erase_ctr_dataset_index_units(const char *dir, int64_t shard_rows, const int64_t *unit_rows,
                                             int units);

/* The dataset is whole (every rank published, the index is written): the
 * free keeps the published shards. */
void erase_ctr_dataset_writer_keep(erase_ctr_dataset_writer_t *w);

/* Release the writer; if it was not committed, every temporary file is
 * deleted, and the directory too if this writer created it. NULL is
 * allowed. */
void erase_ctr_dataset_writer_free(erase_ctr_dataset_writer_t *w);

/*
 * Make `dir` ready for a new dataset of any kind of shards: created if
 * missing (then *made_dir = 1, so that a failed writer can remove it
 * again); an old dataset in it (an index.txt) is an error unless `force`;
 * with `force` it is left as it is, for the writer's commit to replace
 * (erase_dataset_remove, once the new shards are whole: a conversion that
 * fails leaves the old dataset intact). Errors:
 *   ERASE_ERR_INVALID "DIR: already holds a dataset (index.txt); remove it or replace it (--force)",
 *                     "no output directory given"
 *   ERASE_ERR_IO      "DIR: cannot create the directory: <reason>", "DIR: not a directory"
 */
erase_status_t erase_dataset_dir_prepare(const char *dir, int force, int *made_dir);

/*
 * Delete the dataset in `dir`, if any: first the shards its index.txt
 * lists, then the index (a directory without a dataset is no error; the
 * directory itself stays). Errors: ERASE_ERR_IO "PATH: cannot delete: <reason>".
 */
erase_status_t erase_dataset_remove(const char *dir);

#endif
