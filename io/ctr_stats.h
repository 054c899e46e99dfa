/*
 * Summary statistics of CTR rows in the shard layout (io/ctr_shard.h):
 * what erase-convert prints after a conversion and erase-inspect prints for
 * a dataset. Counts are exact (64-bit).
 */
#ifndef ERASE_IO_CTR_STATS_H
#define ERASE_IO_CTR_STATS_H

#include <stdint.h>
#include <stdio.h>

#include "io/ctr_shard.h"
#include "io/distinct.h"

typedef struct {
    int64_t rows;
    int64_t clicks;                                  /* rows with label 1 */
    int64_t dense_missing[ERASE_CTR_SHARD_DENSE];    /* NaN values per feature */
    float dense_min[ERASE_CTR_SHARD_DENSE];          /* over present values (+inf if none) */
    float dense_max[ERASE_CTR_SHARD_DENSE];          /* (-inf if none) */
    int64_t sparse_missing[ERASE_CTR_SHARD_FIELDS];  /* ERASE_CTR_SPARSE_MISSING values per field */
    uint32_t sparse_min[ERASE_CTR_SHARD_FIELDS];     /* over present ids (0xFFFFFFFF if none) */
    uint32_t sparse_max[ERASE_CTR_SHARD_FIELDS];     /* (0 if none) */
    int64_t sparse_ids[ERASE_CTR_SHARD_FIELDS];      /* ids per feature, the missing id included */
    uint32_t hot_max[ERASE_CTR_SHARD_FIELDS];        /* most ids of one row per feature (hotness) */
    int64_t missing_rows[ERASE_CTR_SHARD_FIELDS];   /* rows whose ids of the field are all 0xFFFFFFFF */
    /* 1: the ids went through a vocabulary (io/vocab.h), where 0xFFFFFFFF
     * is the rare row (missing, or not frequent): the printout says so */
    int rare_row;
} erase_ctr_stats_t;

/* Empty statistics. */
void erase_ctr_stats_init(erase_ctr_stats_t *s);

/* Add `n` rows: label [n], dense [n, 13] (NaN = missing), sparse [n, 26]. */
void erase_ctr_stats_add(erase_ctr_stats_t *s, int64_t n, const uint8_t *label, const float *dense,
                         const uint32_t *sparse);

/* Add `n` rows whose features may hold several ids (io/ctr_shard.h,
 * erase-ctr-2): lengths [n, 26] (NULL: one id each), ids flat, row by row
 * and feature by feature. sparse_missing counts the ids 0xFFFFFFFF,
 * missing_rows the rows whose ids of a field are all 0xFFFFFFFF (what the
 * printout's "missing" shows); the range is over every other id. */
void erase_ctr_stats_add_ids(erase_ctr_stats_t *s, int64_t n, const uint8_t *label, const float *dense,
                             const uint32_t *lengths, const uint32_t *ids);

/* 1 if some row had more than one id in a feature. */
int erase_ctr_stats_multi_hot(const erase_ctr_stats_t *s);

/* Add the counts of `src` to `dst`. */
void erase_ctr_stats_merge(erase_ctr_stats_t *dst, const erase_ctr_stats_t *src);

/* Clicks / rows (0 when there are no rows). */
double erase_ctr_stats_base_rate(const erase_ctr_stats_t *s);

/*
 * Print rows, clicks, base rate, and a table of every feature: missing
 * rate, and the value range (I1..I13: min..max of the counts; C1..C26:
 * min..max of the ids in hex); for multi-hot rows then a table of C1..C26's
 * hotness: the most ids of a row and the mean ids per row. Each line
 * starts with `prefix`.
 */
void erase_ctr_stats_print(const erase_ctr_stats_t *s, FILE *out, const char *prefix);

/* Distinct ids per categorical feature C1..C26 (io/distinct.h: exact up to
 * ERASE_DISTINCT_EXACT_MAX, then a HyperLogLog estimate); the missing
 * value ERASE_CTR_SPARSE_MISSING is not an id. */
typedef struct {
    erase_distinct_t *field[ERASE_CTR_SHARD_FIELDS];
} erase_ctr_distinct_t;

/* Empty counters. Errors: ERASE_ERR_NOMEM (nothing left allocated). */
erase_status_t erase_ctr_distinct_init(erase_ctr_distinct_t *d);

/* Free the counters (zeroed ones: nothing). */
void erase_ctr_distinct_free(erase_ctr_distinct_t *d);

/* Count the ids of `n` rows: sparse [n, 26]. Errors: ERASE_ERR_NOMEM. */
erase_status_t erase_ctr_distinct_add(erase_ctr_distinct_t *d, int64_t n, const uint32_t *sparse);

/* The same for rows of several ids per feature (lengths [n, 26] or NULL,
 * ids flat as erase_ctr_stats_add_ids takes them). Errors: ERASE_ERR_NOMEM. */
erase_status_t erase_ctr_distinct_add_ids(erase_ctr_distinct_t *d, int64_t n, const uint32_t *lengths,
                                          const uint32_t *ids);

/* Add the ids counted by `src` to `dst` (per feature, the union). Errors: ERASE_ERR_NOMEM. */
erase_status_t erase_ctr_distinct_merge(erase_ctr_distinct_t *dst, const erase_ctr_distinct_t *src);

/*
 * erase_ctr_stats_print with a "distinct" column (`d` NULL: without it,
 * which is erase_ctr_stats_print): C1..C26 show the number of distinct ids,
 * exact, or "~N" for a HyperLogLog estimate (relative standard error 0.8%),
 * explained below the table when one is shown.
 */
void erase_ctr_stats_print_distinct(const erase_ctr_stats_t *s, const erase_ctr_distinct_t *d, FILE *out,
                                    const char *prefix);

#endif
