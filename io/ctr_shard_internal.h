/*
 * io internals: the datasets of a CTR shard (io/ctr_shard.h), shared by
 * its reader (io/ctr_shard.c) and writer (io/ctr_shard_write.c).
 */
#ifndef ERASE_IO_CTR_SHARD_INTERNAL_H
#define ERASE_IO_CTR_SHARD_INTERNAL_H

#include "io/h5_rows.h"

/* The datasets, in the order of erase_ctr_specs: version 1 has the first
 * three, version 2 /label, /dense and the last three. */
enum {
    CTR_LABEL = 0,
    CTR_DENSE,
    CTR_SPARSE,  /* version 1: /sparse [N, 26] */
    CTR_LENGTHS, /* version 2: /sparse_lengths [N, 26] */
    CTR_OFFSETS, /* version 2: /sparse_offsets [N] */
    CTR_IDS,     /* version 2: /sparse_ids [T] */
    CTR_DATASETS
};

extern const erase_h5_rows_spec_t erase_ctr_specs[CTR_DATASETS];

/* 1 if dataset i belongs to a shard of format version `version`. */
static inline int erase_ctr_dataset_in(int i, int version)
{
    return i <= CTR_DENSE || (version == 1 ? i == CTR_SPARSE : i > CTR_SPARSE);
}

#endif
