/*
 * IDX files (the MNIST format), plain or gzip (zlib's gzopen reads both).
 *
 * An IDX file is a big-endian header, then the items, row-major:
 *   images  magic 0x00000803 (uint8, 3 dimensions), N, rows, cols (uint32 each; 16 bytes),
 *           then N * rows * cols bytes of pixels 0..255
 *   labels  magic 0x00000801 (uint8, 1 dimension), N (8 bytes), then N bytes
 * Only these two kinds are read (what MNIST and Fashion-MNIST ship). The
 * data must be exactly as long as the header says: a short file and bytes
 * after the data are errors.
 */
#ifndef ERASE_IO_IDX_H
#define ERASE_IO_IDX_H

#include <stdint.h>

#include "lib/core/status.h"

#define ERASE_IDX_IMAGES_MAGIC 0x00000803u
#define ERASE_IDX_LABELS_MAGIC 0x00000801u

/* An IDX file read into memory. */
typedef struct {
    int64_t count;  /* N: images or labels */
    int64_t rows;   /* image height (1 for labels) */
    int64_t cols;   /* image width (1 for labels) */
    uint8_t *data;  /* [count, rows, cols] bytes, row-major */
} erase_idx_t;

/*
 * Read an image file (`want_magic` ERASE_IDX_IMAGES_MAGIC) or a label file
 * (ERASE_IDX_LABELS_MAGIC) whole. Errors, each naming the file F:
 *   ERASE_ERR_IO      "F: cannot open: No such file or directory"
 *                     "F: gzip: <zlib's reason>"
 *                     "F is a FIFO, expected a regular file" (or a device, a directory:
 *                     refused before it is opened, lib/core/fs.h)
 *   ERASE_ERR_FORMAT  "F: not an IDX image file: magic 0x00000801, expected 0x00000803 (uint8, 3 dimensions)"
 *                     "F: not an IDX label file: magic ..., expected 0x00000801 (uint8, 1 dimension)"
 *                     "F: short file: 10 bytes, expected a 16-byte header"
 *                     "F: short file: 3 of 10 images (2352 of 7840 bytes after the 16-byte header)"
 *                     (of a gzip file cut short: "...header); gzip: unexpected end of file")
 *                     "F: gzip: unexpected end of file (the file is truncated?)" (all data, no trailer)
 *                     "F: 5 bytes after the 10 labels the header announces"
 *                     "F: images of 0 x 28 pixels: expected at least 1 x 1"
 *                     "F: the header announces 4294967295 images of 65536 x 65536 bytes: too large"
 *   ERASE_ERR_NOMEM
 * On success the caller frees with erase_idx_free.
 */
erase_status_t erase_idx_read(const char *path, uint32_t want_magic, erase_idx_t *out);

/* Free what erase_idx_read returned (and zero it); a zeroed one is allowed. */
void erase_idx_free(erase_idx_t *idx);

/*
 * Read an image file and its label file and check that they belong
 * together: the same count and every label < `classes` (1..256). Errors:
 * those of erase_idx_read, and ERASE_ERR_FORMAT
 *   "IMAGES has 10000 images but LABELS has 9999 labels"
 *   "LABELS: label 17 (0-based) is 12, expected 0..9"
 *   ERASE_ERR_INVALID classes outside 1..256.
 * On success the caller frees both.
 */
erase_status_t erase_idx_read_pair(const char *images_path, const char *labels_path, int classes,
                                   erase_idx_t *images, erase_idx_t *labels);

#endif
