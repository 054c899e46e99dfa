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
 * Multi-hot shards (format "erase-ctr-2"): a categorical feature of a
 * sample may hold several ids (MLPerf DLRM-DCNv2's multi-hot Criteo;
 * TorchRec's KeyedJaggedTensor keeps them as values + lengths). /label and
 * /dense as above; /sparse is replaced by
 *   /sparse_lengths uint32 [N, 26]  ids of each (row, feature), >= 1: a
 *                                   missing feature is ONE id 0xFFFFFFFF
 *   /sparse_offsets int64  [N]      index in /sparse_ids of row i's first id:
 *                                   offsets[0] = 0, offsets[i + 1] =
 *                                   offsets[i] + sum_f lengths[i, f]
 *   /sparse_ids     uint32 [T]      every id, row after row, and within a
 *                                   row feature C1's ids, then C2's, ...,
 *                                   each feature's in the order of its input
 * with root attributes sparse_ids = T (int64) and max_hotness uint32 [26]
 * (the most ids one row has in each feature). Row-major with one offset
 * per row, rather than TorchRec's feature-major values, so that rows
 * [a, b) are three contiguous reads (lengths and offsets [a, b), ids
 * [offsets[a], offsets[b - 1] + sum_f lengths[b - 1, f])) instead of 26;
 * /sparse_lengths and /sparse_offsets compress to almost nothing (shuffle
 * + deflate), /sparse_ids as /sparse does (no shuffle), in chunks of
 * ERASE_CTR_IDS_CHUNK_PER_ROW ids per chunk row. A writer keeps writing
 * "erase-ctr-1" for rows that have one id in every feature; readers treat
 * a version 1 shard as lengths all 1.
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
#define ERASE_CTR_FORMAT_MULTI "erase-ctr-2" /* multi-hot: /sparse_lengths, /sparse_offsets, /sparse_ids */
#define ERASE_CTR_IDS_CHUNK_PER_ROW 32    /* /sparse_ids chunk: chunk_rows * 32 ids */
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
 *                         (either "erase-ctr-1" or "erase-ctr-2" is accepted)
 *                     "F: attribute rows: expected an integer >= 0"
 *                     "F: attribute sparse_missing: expected 4294967295 (0xFFFFFFFF)" (optional attribute)
 *                     "F: dataset /dense: missing"
 *                     "F: dataset /label: expected uint8, got float32"
 *                     "F: dataset /dense: expected shape [1000, 13] (rows = 1000), got [1000, 12]"
 *                     "F: attribute sparse_ids: expected an integer >= 0" (erase-ctr-2)
 *                     "F: attribute max_hotness: expected 26 integers >= 1" (erase-ctr-2)
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

/* 1 or 2: the format version ("erase-ctr-1", "erase-ctr-2"). */
int erase_ctr_shard_version(const erase_ctr_shard_t *shard);

/* The most ids a row holds in each feature C1..C26 ([26]; all 1 for a
 * version 1 shard), from the attribute max_hotness. */
const uint32_t *erase_ctr_shard_max_hotness(const erase_ctr_shard_t *shard);

/* T: ids stored in all rows (version 1: rows * 26). */
int64_t erase_ctr_shard_ids(const erase_ctr_shard_t *shard);

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
 * different shards may be read from different threads. `sparse` of a
 * version 2 shard is its one id per (row, feature) when every length is 1,
 * else ERASE_ERR_FORMAT "F: row 17 feature C3 has 4 ids: a multi-hot
 * shard (erase-ctr-2); read it with erase_ctr_shard_read_ids".
 */
erase_status_t erase_ctr_shard_read(erase_ctr_shard_t *shard, int64_t begin, int64_t count,
                                    uint8_t *label, float *dense, uint32_t *sparse);

/*
 * The categorical ids of rows [begin, begin + count), either version:
 * lengths [count, 26] (ids of each (row, feature), >= 1; all 1 for version
 * 1) and *ids pointing at the ids (*nids of them, in the order of
 * /sparse_ids: row by row, feature by feature), in memory of the shard
 * valid until its next read or close. Checks what a chunk checksum cannot:
 * every length >= 1, offsets that agree with the lengths, ids inside the
 * dataset. Errors: those of erase_ctr_shard_read, and ERASE_ERR_FORMAT
 *   "F: dataset /sparse_lengths: row 17 feature C3 has 0 ids, expected >= 1 (damaged shard?)"
 *   "F: dataset /sparse_offsets: row 17 starts at id 90, expected 88 (the lengths of the rows before it;
 *    damaged shard?)"
 *   "F: dataset /sparse_ids: rows [0, 100) end at id 5000, the dataset has 4000 (damaged shard?)"
 *   ERASE_ERR_NOMEM
 */
erase_status_t erase_ctr_shard_read_ids(erase_ctr_shard_t *shard, int64_t begin, int64_t count, uint32_t *lengths,
                                        const uint32_t **ids, int64_t *nids);

/*
 * The ids of rows [begin, begin + count) laid out for a model whose
 * feature f holds at most hotness[f] ids (lib/nn/batch.h): padded
 * [count, H], H = sum of hotness (`width` must be H), row i's ids of
 * feature f at columns [o_f, o_f + len) with o_f = hotness[0] + ... +
 * hotness[f - 1], the columns after them up to o_f + hotness[f] set to
 * 0xFFFFFFFF; and len [count, 26] (may be NULL). Errors: those of
 * erase_ctr_shard_read_ids, ERASE_ERR_INVALID (width is not the sum of
 * hotness, a hotness of 0), and ERASE_ERR_FORMAT naming the shard, row
 * and feature of the first row with more ids than its capacity:
 *   "F: row 17 feature C21 has 120 ids, more than its hotness 100 (a model file's hotness = [26 capacities] or "mlperf" raises it)"
 */
erase_status_t erase_ctr_shard_read_padded(erase_ctr_shard_t *shard, int64_t begin, int64_t count,
                                           const uint32_t *hotness, int64_t width, uint32_t *padded, uint32_t *len);

#endif
