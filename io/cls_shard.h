/*
 * Classification shards: HDF5 files of fixed-length feature vectors and a
 * class each (DESIGN.md, "Data and files"; MNIST through erase-convert
 * mnist), opened read-only and validated.
 *
 * Schema (format "erase-cls-1"), N rows of F features, C classes:
 *   root attributes  format = "erase-cls-1"          (string, written last)
 *                    rows = N, features = F, classes = C (int64)
 *                    class_counts                    (int64 [C], rows per class)
 *                    source_files                    (string, one path per line)
 *                    converter                       (string, e.g. "erase-convert mnist 0.1.0")
 *                    description                     (string, this schema in words)
 *   /features  float32 [N, F]  the model's input as is (MNIST: pixel / 255, in [0, 1])
 *   /label     uint8   [N]     the class, 0..C-1
 * Datasets are chunked along N (1024 rows by default), optionally
 * compressed (shuffle + deflate level 1), and every chunk carries a
 * Fletcher32 checksum (HDF5's filter, verified on every read). A
 * directory of shards has an index.txt (io/ctr_index.h) like CTR data.
 */
#ifndef ERASE_IO_CLS_SHARD_H
#define ERASE_IO_CLS_SHARD_H

#include <stdint.h>

#include "lib/core/status.h"

#define ERASE_CLS_FORMAT "erase-cls-1"
#define ERASE_CLS_MAX_CLASSES 256 /* labels are uint8 */

typedef struct erase_cls_shard erase_cls_shard_t;

/*
 * Open a shard read-only and validate it. Errors, each naming the file:
 *   ERASE_ERR_IO      "F: cannot open: No such file or directory"
 *   ERASE_ERR_FORMAT  "F: not an HDF5 file or damaged (truncated?): <HDF5's reason>"
 *                     "F: not an erase classification shard: no attribute 'format' on the root group"
 *                     "F: attribute format: expected \"erase-cls-1\", got \"erase-ctr-1\""
 *                     "F: attribute rows: expected an integer >= 0"
 *                     "F: attribute features: expected an integer >= 1"
 *                     "F: attribute classes: expected an integer in 1..256"
 *                     "F: dataset /features: expected shape [1000, 784] (rows = 1000), got [1000, 783]"
 *                     "F: dataset /label: expected uint8, got float32"
 *   ERASE_ERR_NOMEM
 */
erase_status_t erase_cls_shard_open(const char *path, erase_cls_shard_t **out);

/* 1 if `path` is an HDF5 file whose root attribute `format` is
 * "erase-cls-1", else 0 (no error recorded): for tools that take either
 * kind of shard (erase-inspect data). */
int erase_cls_shard_probe(const char *path);

/* Close a shard (NULL is allowed). */
void erase_cls_shard_close(erase_cls_shard_t *shard);

/* The path it was opened with; rows N, features F, classes C. */
const char *erase_cls_shard_path(const erase_cls_shard_t *shard);
int64_t erase_cls_shard_rows(const erase_cls_shard_t *shard);
int64_t erase_cls_shard_features(const erase_cls_shard_t *shard);
int erase_cls_shard_classes(const erase_cls_shard_t *shard);

/* Chunk length along N (0: not chunked); 1 if /features is compressed
 * (deflate); 1 if its chunks carry Fletcher32 checksums. */
int64_t erase_cls_shard_chunk_rows(const erase_cls_shard_t *shard);
int erase_cls_shard_compressed(const erase_cls_shard_t *shard);
int erase_cls_shard_checksummed(const erase_cls_shard_t *shard);

/* A root attribute as text (string as is, integer in decimal; "" when
 * absent), truncated to `size` bytes. For tools (erase-inspect). */
void erase_cls_shard_attr_text(erase_cls_shard_t *shard, const char *name, char *text, int size);

/*
 * Read rows [begin, begin + count): features [count, F] float32, label
 * [count] uint8; either may be NULL (not read). HDF5 verifies each chunk's
 * checksum; every label is also checked against C and every feature for
 * being finite. Errors:
 *   ERASE_ERR_INVALID  rows outside [0, N)
 *   ERASE_ERR_IO       "F: dataset /features: reading rows [a, b) failed: <HDF5's reason>" (e.g. a
 *                      checksum that does not match)
 *   ERASE_ERR_FORMAT   "F: dataset /label: row 17 is 12, expected 0..9 (damaged shard?)"
 *                      "F: dataset /features: row 17 feature 3 is nan, expected a finite value (damaged shard?)"
 * Not thread-safe for one shard; different shards may be read from
 * different threads.
 */
erase_status_t erase_cls_shard_read(erase_cls_shard_t *shard, int64_t begin, int64_t count, float *features,
                                    uint8_t *label);

#endif
