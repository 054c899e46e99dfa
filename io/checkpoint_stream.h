/*
 * What io/checkpoint_read.c (opening, validating, loading) and
 * io/checkpoint_stream.c (reading rows STREAM_BYTES at a time, verified)
 * share: the open checkpoint and the checked opening of a dataset.
 * Private to io.
 */
#ifndef ERASE_IO_CHECKPOINT_STREAM_H
#define ERASE_IO_CHECKPOINT_STREAM_H

#include "io/checkpoint_internal.h"

#include <hdf5.h>

struct erase_ckpt {
    char *path;
    erase_ckpt_meta_t meta;
    char *text[10];                    /* owned strings of meta */
    erase_ckpt_tensor_t *t[2];         /* params, optim */
    int n[2], cap[2];
    struct tensor_info {               /* per tensor of t[g] */
        uint64_t sum;                  /* the whole dataset's fnv1a64 (not row-checksummed) */
        int rows;                      /* row-checksummed: written sharded (/row_fnv1a64/...) */
        char *sharding;                /* its `sharding` attribute (row-checksummed), owned */
        char *meaning;                 /* its `meaning` attribute ("" if none), owned */
    } *info[2];
    erase_ckpt_rank_t *ranks;
    int nranks;
    int attributes_summed;             /* meta_fnv1a64 present (and matching) */
    int flags;                         /* ERASE_CKPT_OPEN_* flags of the main file */
};
typedef struct tensor_info tensor_info_t;

/* Bytes of rows per read of a dataset streamed through its checksum: the
 * bounded buffer of every read that does not load a tensor whole. */
#define CKPT_STREAM_BYTES ((size_t)1 << 20)

/*
 * Open dataset `path` listed in /index and check its type ("float32",
 * "int64" or "uint64") and shape (ndim, dims) against the index's into *d
 * (closed by the caller); the element's memory type and size in bytes.
 * The HDF5 lock is held. Errors: ERASE_ERR_FORMAT naming the file and
 * dataset (missing, another type or shape, more bytes than memory can
 * address).
 */
erase_status_t ckpt_open_checked(const erase_ckpt_t *ck, hid_t file, const char *path, const char *type, int ndim,
                                 const int64_t *dims, hid_t *d, hid_t *mem_type, size_t *elem);

/*
 * Rows [row0, row0 + n) of tensor i of group g (float32, in range), read
 * from the open file CKPT_STREAM_BYTES at a time and passed to fn in
 * order, verified: a row-checksummed tensor's rows against their
 * /row_fnv1a64 checksums before fn sees them (only those rows are read),
 * a whole-checksummed one by streaming the whole dataset through FNV-1a
 * (only the rows asked for go to fn; n = 0 verifies it alone, fn unused),
 * its checksum compared after the last block. The lock is held (fn must
 * not call HDF5). Errors: ERASE_ERR_FORMAT naming the file, dataset (and
 * row), ERASE_ERR_NOMEM, fn's.
 */
erase_status_t ckpt_stream_rows(const erase_ckpt_t *ck, hid_t file, int g, int i, int64_t row0, int64_t n,
                                erase_ckpt_rows_fn fn, void *ctx);

/* Rows [row0, row0 + n) of tensor i of group g into out (n rows of the
 * tensor's row width), verified (ckpt_stream_rows). The lock is held.
 * Errors: those of ckpt_stream_rows. */
erase_status_t ckpt_read_rows(const erase_ckpt_t *ck, hid_t file, int g, int i, int64_t row0, int64_t n,
                              float *out);

#endif
