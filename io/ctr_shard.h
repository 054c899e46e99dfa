/*
 * CTR shards: the HDF5 files of click data that erase trains on
 * (DESIGN.md, "Data and files"), opened read-only and validated.
 *
 * Schema (format "erase-ctr-1"), N rows:
 *   root attributes  format = "erase-ctr-1"          (string)
 *                    rows = N                        (int64)
 *                    clicks                          (int64, rows with label 1)
 *                    source_files                    (string, one path per line)
 *                    converter                       (string, e.g. "erase-convert 0.1.0")
 *                    dense_features = 13, sparse_features = 26 (int64)
 *                    sparse_missing = 0xFFFFFFFF     (int64)
 *                    description                     (string, this schema in words)
 *   /label   uint8   [N]      click 0/1
 *   /dense   float32 [N, 13]  raw integer counts I1..I13; missing = NaN.
 *                             The reader hands the model log1p(max(x, 0)),
 *                             missing -> 0.
 *   /sparse  uint32  [N, 26]  C1..C26: the 32-bit hex value of the token;
 *                             0xFFFFFFFF = missing (a real ffffffff token is
 *                             stored as 0xFFFFFFFE); reduced modulo each
 *                             table's size by the model.
 * Datasets are chunked along N (1024 rows by default), optionally
 * compressed (shuffle + deflate level 1; /sparse without shuffle), and
 * every chunk carries a Fletcher32 checksum (HDF5's filter, verified on
 * every read; shards written before it have none).
 *
 * The format attribute is written last, when the file is complete, and the
 * file is written under a temporary name and renamed (io/ctr_shard_write.h):
 * a file without it is never a shard.
 */
#ifndef ERASE_IO_CTR_SHARD_H
#define ERASE_IO_CTR_SHARD_H

#include <stdint.h>

#include "lib/core/status.h"

#define ERASE_CTR_FORMAT "erase-ctr-1"
#define ERASE_CTR_SHARD_DENSE 13          /* dense features I1..I13 (the model's ERASE_CTR_DENSE) */
#define ERASE_CTR_SHARD_FIELDS 26         /* categorical C1..C26 (the model's ERASE_CTR_FIELDS) */
#define ERASE_CTR_SPARSE_MISSING 0xFFFFFFFFu
#define ERASE_CTR_SPARSE_FFFFFFFF 0xFFFFFFFEu /* what a real token ffffffff is stored as */

typedef struct erase_ctr_shard erase_ctr_shard_t;

/*
 * Open a shard read-only (default, non-MPI file access: every rank of an
 * MPI job may open the same file) and validate it. Errors, each naming the
 * file and, where it applies, the dataset:
 *   ERASE_ERR_IO      "F: cannot open: No such file or directory"
 *   ERASE_ERR_FORMAT  "F: not an HDF5 file or damaged (truncated?): <HDF5's reason>"
 *                     "F: not an erase CTR shard: no attribute 'format' on the root group"
 *                     "F: attribute format: expected \"erase-ctr-1\", got \"x\""
 *                     "F: attribute rows: expected an integer >= 0"
 *                     "F: attribute sparse_missing: expected 4294967295 (0xFFFFFFFF)" (optional attribute)
 *                     "F: dataset /dense: missing"
 *                     "F: dataset /label: expected uint8, got float32"
 *                     "F: dataset /dense: expected shape [1000, 13] (rows = 1000), got [1000, 12]"
 *   ERASE_ERR_NOMEM
 */
erase_status_t erase_ctr_shard_open(const char *path, erase_ctr_shard_t **out);

/* Close a shard (NULL is allowed). */
void erase_ctr_shard_close(erase_ctr_shard_t *shard);

/* The path it was opened with; its number of rows N. */
const char *erase_ctr_shard_path(const erase_ctr_shard_t *shard);
int64_t erase_ctr_shard_rows(const erase_ctr_shard_t *shard);

/* Chunk length of /label along N (0: not chunked); 1 if /dense is
 * compressed (deflate); 1 if its chunks carry Fletcher32 checksums. */
int64_t erase_ctr_shard_chunk_rows(const erase_ctr_shard_t *shard);
int erase_ctr_shard_compressed(const erase_ctr_shard_t *shard);
int erase_ctr_shard_checksummed(const erase_ctr_shard_t *shard);

/*
 * A root attribute as text: a string as is, an integer in decimal; "" when
 * absent. Truncated to `size` bytes. For tools (erase-inspect).
 */
void erase_ctr_shard_attr_text(erase_ctr_shard_t *shard, const char *name, char *text, int size);

/*
 * Read rows [begin, begin + count) as stored: label [count] uint8, dense
 * [count, 13] float32 (NaN = missing), sparse [count, 26] uint32. Any
 * output may be NULL (not read). HDF5 verifies each chunk's Fletcher32
 * checksum (and deflate its own); every value read is also checked: each
 * label 0 or 1, each dense value finite or NaN; the first bad one, by its
 * row index in the shard (0-based) and feature column (0-based, I1..I13),
 * fails the read. Errors:
 *   ERASE_ERR_INVALID  rows outside [0, N)
 *   ERASE_ERR_IO       "F: dataset /dense: reading rows [a, b) failed: <HDF5's reason>" (e.g. a damaged
 *                      chunk: a checksum that does not match)
 *   ERASE_ERR_FORMAT   "F: dataset /label: row 17 is 7, expected 0 or 1 (damaged shard?)"
 *                      "F: dataset /dense: row 17 feature 3 (I4) is inf, expected a finite value or NaN =
 *                       missing (damaged shard?)" (or -inf)
 * On an error the outputs hold what was read. Not thread-safe for one shard;
 * different shards may be read from different threads.
 */
erase_status_t erase_ctr_shard_read(erase_ctr_shard_t *shard, int64_t begin, int64_t count,
                                    uint8_t *label, float *dense, uint32_t *sparse);

#endif
