/*
 * Summary statistics of classification rows (io/cls_shard.h): what
 * erase-inspect prints for a dataset of classification shards. Counts are
 * exact (64-bit).
 */
#ifndef ERASE_IO_CLS_STATS_H
#define ERASE_IO_CLS_STATS_H

#include <stdint.h>
#include <stdio.h>

#include "io/cls_shard.h"

typedef struct {
    int64_t rows;
    int64_t features;                        /* F */
    int classes;                             /* C */
    int64_t counts[ERASE_CLS_MAX_CLASSES];   /* rows per class */
    float min, max;                          /* over every feature value (+inf, -inf when no rows) */
    double sum;                              /* of every feature value */
} erase_cls_stats_t;

/* Empty statistics of rows of `features` values and `classes` classes. */
void erase_cls_stats_init(erase_cls_stats_t *s, int64_t features, int classes);

/* Add `n` rows: features [n, F], label [n] (each < C; others are not counted by class). */
void erase_cls_stats_add(erase_cls_stats_t *s, int64_t n, const float *features, const uint8_t *label);

/* Add `src` to `dst` (same F and C). */
void erase_cls_stats_merge(erase_cls_stats_t *dst, const erase_cls_stats_t *src);

/* Print rows, features, classes, the feature value range and mean, and
 * the rows of every class (count and share). Each line starts with `prefix`. */
void erase_cls_stats_print(const erase_cls_stats_t *s, FILE *out, const char *prefix);

#endif
