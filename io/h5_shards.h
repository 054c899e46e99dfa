/*
 * io internals: the shard files of a dataset being written into a
 * directory (the classification and token writers, io/cls_shard_write.h
 * and io/tok_shard_write.h): shard i is DIR/part-0000i.h5, written as
 * "part-0000i.h5.tmp" with its datasets of rows (io/h5_rows.h), finished
 * by the writer (attributes, format last: erase_h5_rows_finish), renamed
 * only by the commit, which then writes DIR/index.txt (io/ctr_index.h)
 * last. Freed without a commit, every file is deleted (and the directory
 * if it was created for the dataset). HDF5 calls take the lock themselves.
 */
#ifndef ERASE_IO_H5_SHARDS_H
#define ERASE_IO_H5_SHARDS_H

#include <hdf5.h>
#include <stdint.h>

#include "io/h5_rows.h"
#include "lib/core/status.h"

#define ERASE_H5_SHARD_MAX_DATASETS 4

/* One shard file; a writer's shard struct starts with it. */
typedef struct {
    char name[32];  /* part-00000.h5 */
    char path[4096], temp[4100];
    hid_t file;     /* open while written, -1 after */
    hid_t d[ERASE_H5_SHARD_MAX_DATASETS];
    int nd;         /* datasets */
    int64_t rows;   /* what the index records for it (set by the writer) */
    int published;  /* renamed to its final name */
} erase_h5_shard_t;

typedef struct {
    char *dir;
    erase_h5_shard_t **shards;
    const char **names; /* [count] the shards' names, for the index */
    int64_t *rows_of;   /* [count] their rows, for the index */
    int count, cap;
    int made_dir, committed;
    int force;          /* an old dataset in dir is replaced by the commit */
    void (*free_shard)(erase_h5_shard_t *shard); /* frees a writer's shard struct */
} erase_h5_shards_t;

/*
 * Prepare `dir` for a new dataset (erase_dataset_dir_prepare: created if
 * missing; an old dataset is an error unless `force`, then replaced by the
 * commit, not before) of shards
 * compressed (`compress` 1: shuffle + deflate) or not; `free_shard` frees
 * a writer's shard struct (after its files are closed). Errors: those of
 * erase_dataset_dir_prepare, ERASE_ERR_UNSUPPORTED ("DIR: this HDF5
 * library has no deflate or shuffle filter; write uncompressed shards"),
 * ERASE_ERR_NOMEM.
 */
erase_status_t erase_h5_shards_init(erase_h5_shards_t *set, const char *dir, int force, int compress,
                                    void (*free_shard)(erase_h5_shard_t *shard));

/*
 * Begin shard number set->count in `shard` (the caller's, zeroed, owned by
 * the set from now on, also on an error): create "<name>.tmp" and its
 * datasets specs[0..n) (n <= 4) of file_types[i] with `layout`. Errors:
 * ERASE_ERR_NOMEM, ERASE_ERR_IO "T: cannot create: <HDF5's reason>" or a
 * dataset's (erase_h5_rows_create).
 */
erase_status_t erase_h5_shards_begin(erase_h5_shards_t *set, erase_h5_shard_t *shard,
                                     const erase_h5_rows_spec_t *specs, const hid_t *file_types, int n,
                                     const erase_h5_rows_layout_t *layout);

/* Rename every (finished) shard to its final name and write DIR/index.txt,
 * after deleting the old dataset of a `force` init (erase_dataset_remove).
 * Errors: ERASE_ERR_STATE "DIR: committed twice", ERASE_ERR_IO. */
erase_status_t erase_h5_shards_commit(erase_h5_shards_t *set);

/* Close and free every shard; without a commit delete their files (and
 * the directory if init created it). */
void erase_h5_shards_free(erase_h5_shards_t *set);

#endif
