/*
 * Converting MNIST-style IDX files (io/idx.h) into classification shards
 * (io/cls_shard.h): the engine of `erase-convert mnist`.
 *
 * The images (uint8 [N, rows, cols]) become /features float32
 * [N, rows * cols] = pixel / 255 (exactly the float nearest to each; 0 and
 * 1 exact), the labels /label uint8 [N]. The split is by position, so
 * that it is the same on every machine and needs no seed: the first
 * `train_rows` images go to OUT/train, the next `eval_rows` to OUT/eval
 * (both datasets with their own index.txt). Default: the last 2,000
 * images are held out and all the others train (the shipped MNIST test
 * split of 10,000: 8,000 / 2,000). With eval_rows = 0 only OUT/train is
 * written.
 *
 * Atomic output: both datasets are written under temporary names and
 * renamed only once both are complete (io/cls_shard_write.h): OUT/eval's
 * index first, OUT/train's last. A failed or interrupted conversion leaves
 * no shard and no index (and removes the directories it created).
 */
#ifndef ERASE_IO_MNIST_CONVERT_H
#define ERASE_IO_MNIST_CONVERT_H

#include <signal.h>
#include <stdint.h>
#include <stdio.h>

#include "io/cls_shard_write.h"
#include "lib/core/status.h"

typedef struct {
    const char *out_dir;              /* OUT: created if missing; gets OUT/train and OUT/eval */
    int64_t shard_rows;               /* rows per shard (default 1048576, >= 1) */
    int64_t train_rows;               /* -1 (default): every image not held out */
    int64_t eval_rows;                /* images held out for OUT/eval (default 2000; 0: none) */
    int classes;                      /* labels must be < classes (default 10) */
    erase_cls_write_options_t write;  /* chunk rows, compression, converter attribute */
    int force;                        /* 1: replace datasets already in OUT/train, OUT/eval */
    FILE *progress;                   /* progress lines (NULL: none) */
    const volatile sig_atomic_t *cancel; /* if set and *cancel != 0: stop, clean up, ERASE_ERR_STATE */
} erase_mnist_convert_options_t;

typedef struct {
    int64_t images;                   /* images in the files */
    int64_t rows, cols;               /* image size */
    int64_t train_rows, eval_rows;    /* rows written to OUT/train, OUT/eval */
    int64_t train_counts[ERASE_CLS_MAX_CLASSES], eval_counts[ERASE_CLS_MAX_CLASSES]; /* rows per class */
    int classes;
    int train_shards, eval_shards;
    int64_t bytes;                    /* bytes of the shards written */
    double seconds;                   /* wall time of the conversion */
} erase_mnist_convert_summary_t;

/* Defaults: 1048576-row shards, 1024-row chunks, compressed, 10 classes,
 * the last 2,000 images held out; no progress. out_dir must be set. */
erase_mnist_convert_options_t erase_mnist_convert_options_default(void);

/*
 * Convert an image file and its label file. `summary` (may be NULL) is
 * filled as far as the conversion got. Errors:
 *   those of erase_idx_read_pair (io/idx.h): unreadable files, wrong magic, short files,
 *                     "IMAGES has 10000 images but LABELS has 9999 labels", a label >= classes
 *   ERASE_ERR_INVALID a split larger than the files:
 *                     "8000 train + 3000 eval rows: the files have 10000 images",
 *                     OUT/train or OUT/eval holds a dataset and force is 0
 *                     ("OUT/train: already holds a dataset (index.txt); remove it or replace it (--force)")
 *   ERASE_ERR_FORMAT  no training rows ("OUT/train: no rows to write")
 *   ERASE_ERR_IO      a directory or shard cannot be written
 *   ERASE_ERR_STATE   cancelled ("interrupted")
 */
erase_status_t erase_mnist_convert(const char *images_path, const char *labels_path,
                                   const erase_mnist_convert_options_t *options,
                                   erase_mnist_convert_summary_t *summary);

/* Print a summary: images, the split with a class histogram of each part,
 * shards, bytes, speed. */
void erase_mnist_convert_print(const erase_mnist_convert_summary_t *s, FILE *out);

#endif
