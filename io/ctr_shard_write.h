/*
 * Writing one CTR shard (schema in io/ctr_shard.h) atomically.
 *
 * The file is written as "<path>.tmp"; erase_ctr_writer_finish() writes
 * the attributes, the `format` attribute last, closes and fsyncs it, and
 * erase_ctr_writer_publish() renames it to <path> and fsyncs the directory.
 * Until then no file named <path> exists, and the temporary file has no
 * `format` attribute until it is complete, so an interrupted conversion
 * never leaves a file that a reader accepts. erase_ctr_writer_free() of a
 * writer that was not published deletes its temporary file.
 *
 * Rows are appended in any number of calls; appending whole chunks
 * (multiples of chunk_rows) writes every chunk once.
 */
#ifndef ERASE_IO_CTR_SHARD_WRITE_H
#define ERASE_IO_CTR_SHARD_WRITE_H

#include <stdint.h>

#include "io/ctr_shard.h"
#include "lib/core/status.h"

typedef struct {
    int64_t chunk_rows;    /* chunk length along N (default 1024, >= 1; see reader.h on why small) */
    int compress;          /* 1: shuffle + deflate level 1 (default); 0: none */
    const char *converter; /* text of the `converter` attribute (default "erase <version>") */
    int multi_hot;         /* 1: write "erase-ctr-2" from the first row; 0 (default): "erase-ctr-1"
                            * until a row has more than one id in a feature (then the shard switches) */
    /* The vocabulary the ids were mapped through (io/vocab.h; NULL: none):
     * written as the attributes vocab_digest, vocab_threshold and
     * vocab_table_rows [26]. */
    const char *vocab_digest;
    int64_t vocab_threshold;
    const int64_t *vocab_table_rows;
} erase_ctr_write_options_t;

typedef struct erase_ctr_writer erase_ctr_writer_t;

/* Defaults: 1024-row chunks, compressed. */
erase_ctr_write_options_t erase_ctr_write_options_default(void);

/*
 * Create "<path>.tmp" (replacing a stale one) with empty, extendible
 * datasets. Errors: ERASE_ERR_INVALID (chunk_rows < 1), ERASE_ERR_IO
 * ("<path>.tmp: cannot create: <HDF5's reason>"), ERASE_ERR_UNSUPPORTED
 * (compression asked for but this HDF5 has no deflate filter),
 * ERASE_ERR_NOMEM.
 */
erase_status_t erase_ctr_writer_open(const char *path, const erase_ctr_write_options_t *options,
                                     erase_ctr_writer_t **out);

/*
 * Append `n` rows: label [n] (0/1), dense [n, 13] raw counts with NaN for
 * missing, sparse [n, 26] ids with ERASE_CTR_SPARSE_MISSING for missing.
 * Errors: ERASE_ERR_STATE (after finish), ERASE_ERR_IO (naming the
 * temporary file and dataset).
 */
erase_status_t erase_ctr_writer_append(erase_ctr_writer_t *w, int64_t n, const uint8_t *label,
                                       const float *dense, const uint32_t *sparse);

/*
 * Append `n` rows whose categorical features may hold several ids each:
 * lengths [n, 26] (ids of each (row, feature), >= 1; NULL: one id each),
 * ids flat, row by row and feature by feature (io/ctr_shard.h, format
 * erase-ctr-2). While every row has one id per feature the shard stays
 * "erase-ctr-1"; at the first row with more, the rows written so far are
 * moved into the version 2 datasets and the shard is finished as
 * "erase-ctr-2" (attributes sparse_ids and max_hotness). Errors: those of
 * erase_ctr_writer_append, ERASE_ERR_INVALID
 * ("T: row 5 feature C3 has 0 ids, expected >= 1"), ERASE_ERR_NOMEM.
 */
erase_status_t erase_ctr_writer_append_ids(erase_ctr_writer_t *w, int64_t n, const uint8_t *label,
                                           const float *dense, const uint32_t *lengths, const uint32_t *ids);

/* The format version the shard has so far: 1 or 2. */
int erase_ctr_writer_version(const erase_ctr_writer_t *w);

/* Rows appended so far. */
int64_t erase_ctr_writer_rows(const erase_ctr_writer_t *w);

/*
 * Complete the temporary file: attributes rows, clicks, source_files
 * (`sources`, one path per line), converter, dense_features,
 * sparse_features, sparse_missing, description, then format; close and
 * fsync it. Errors: ERASE_ERR_STATE (twice), ERASE_ERR_IO.
 */
erase_status_t erase_ctr_writer_finish(erase_ctr_writer_t *w, const char *sources);

/* Rename the finished temporary file to <path> and fsync its directory.
 * Errors: ERASE_ERR_STATE (not finished), ERASE_ERR_IO (naming both paths). */
erase_status_t erase_ctr_writer_publish(erase_ctr_writer_t *w);

/* erase_ctr_writer_publish to another final name, `path` (in the same
 * directory): a parallel conversion learns a shard's name only once every
 * rank is done. Errors: those of erase_ctr_writer_publish, ERASE_ERR_NOMEM. */
erase_status_t erase_ctr_writer_publish_as(erase_ctr_writer_t *w, const char *path);

/* Release a writer; an unpublished temporary file is closed and deleted.
 * NULL is allowed. */
void erase_ctr_writer_free(erase_ctr_writer_t *w);

/*
 * Write `text` to <path> atomically: "<path>.tmp", fsync, rename, fsync of
 * the directory (for index files and other small text). Errors:
 * ERASE_ERR_IO naming the path and the reason.
 */
erase_status_t erase_write_file_atomic(const char *path, const char *text, size_t len);

#endif
