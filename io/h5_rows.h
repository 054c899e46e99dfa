/*
 * io internals: HDF5 datasets of rows, the shape every erase shard stores
 * (CTR shards io/ctr_shard.h, classification shards io/cls_shard.h): 1-D
 * [N] or 2-D [N, cols], chunked along N, extended by appends, read by row
 * ranges. One place for the checks and messages they share. Every
 * function is called with the HDF5 lock held (io/h5_util.h) and names the
 * file `path` and the dataset in its messages.
 */
#ifndef ERASE_IO_H5_ROWS_H
#define ERASE_IO_H5_ROWS_H

#include <hdf5.h>
#include <stdint.h>

#include "lib/core/status.h"

/* What a dataset of rows must be. */
typedef struct {
    const char *name;  /* "/label" */
    int rank;          /* 1: [N]; 2: [N, cols] */
    int64_t cols;      /* second dimension (1 for rank 1) */
    H5T_class_t cls;   /* H5T_INTEGER or H5T_FLOAT */
    H5T_sign_t sign;   /* H5T_SGN_NONE for unsigned integers; ignored for floats */
    size_t bytes;      /* bytes per value */
    const char *type;  /* "uint8", for messages */
} erase_h5_rows_spec_t;

/* How a writer lays a dataset out. */
typedef struct {
    int64_t chunk_rows; /* chunk length along N (>= 1) */
    int shuffle;        /* 1: the byte-shuffle filter */
    int deflate;        /* 1: deflate level 1 */
} erase_h5_rows_layout_t;

/*
 * Open dataset spec->name of `file` and check its type and shape [rows] or
 * [rows, cols]. Errors (ERASE_ERR_FORMAT):
 *   "F: dataset /dense: missing" ("... missing (the name is not a dataset)")
 *   "F: dataset /label: expected uint8, got float32"
 *   "F: dataset /dense: expected shape [1000, 13] (rows = 1000), got [1000, 12]"
 * On success *out is the open dataset (the caller closes it); on a type or
 * shape error too (so that the caller's cleanup closes it), else -1.
 */
erase_status_t erase_h5_rows_open(hid_t file, const char *path, const erase_h5_rows_spec_t *spec, int64_t rows,
                                  hid_t *out);

/* Chunk length along N (0: not chunked), and whether the deflate and the
 * Fletcher32 filters are on (1 or 0) of an open dataset. */
void erase_h5_rows_layout(hid_t d, int64_t *chunk_rows, int *deflated, int *checksummed);

/*
 * Read rows [begin, begin + count) into `out` ([count, cols] of mem_type).
 * HDF5 verifies each chunk's checksum. Errors: ERASE_ERR_IO
 *   "F: dataset /dense: reading rows [a, b) failed: <HDF5's reason>"
 */
erase_status_t erase_h5_rows_read(hid_t d, const char *path, const erase_h5_rows_spec_t *spec, hid_t mem_type,
                                  int64_t begin, int64_t count, void *out);

/*
 * Create an empty, extendible dataset [0] / [0, cols] of `file_type` with
 * `layout`'s chunks and filters and a Fletcher32 checksum on every chunk.
 * Errors: ERASE_ERR_IO "F: dataset /label: cannot create: <HDF5's reason>".
 */
erase_status_t erase_h5_rows_create(hid_t file, const char *path, const erase_h5_rows_spec_t *spec,
                                    hid_t file_type, const erase_h5_rows_layout_t *layout, hid_t *out);

/*
 * Append `n` rows ([n, cols] of mem_type) after the first `rows`. Errors:
 * ERASE_ERR_IO "F: dataset /label: writing rows [a, b) failed: <HDF5's reason>".
 */
erase_status_t erase_h5_rows_append(hid_t d, const char *path, const erase_h5_rows_spec_t *spec, hid_t mem_type,
                                    int64_t rows, int64_t n, const void *data);

/*
 * Open the HDF5 file of a shard read-only into *file (default, non-MPI
 * file access: every rank may open the same file). Errors: ERASE_ERR_FORMAT
 * "F: not an HDF5 file or damaged (truncated?): <HDF5's reason>"; ERASE_ERR_IO
 * "F is a FIFO, expected a regular file" (erase_file_check_regular, before
 * HDF5 opens it; *file is -1).
 */
erase_status_t erase_h5_rows_open_file(const char *path, hid_t *file);

/*
 * Complete a shard written under the temporary name `temp` whose
 * attributes were written (`bad_attribute`: NULL, or the name of the one
 * whose write failed): close the datasets d[0..n) (each set to -1) and
 * `*file` (set to -1), flushing it first, then fsync the file. Errors:
 * ERASE_ERR_IO naming the attribute, dataset or file ("T: attribute rows:
 * cannot write: ...", "T: dataset /label: closing failed: ...", "T: fsync
 * failed: ..."). Everything is closed also on an error.
 */
erase_status_t erase_h5_rows_finish(hid_t *file, hid_t *d, const erase_h5_rows_spec_t *specs, int n,
                                    const char *temp, const char *bad_attribute);

/*
 * Check the root attribute `format` of an open shard file against `format`
 * (e.g. "erase-cls-1"); `kind` names the kind in the message ("CTR",
 * "classification", "token"). Errors (ERASE_ERR_FORMAT):
 *   "F: not an erase token shard: no attribute 'format' on the root group"
 *   "F: attribute format: expected \"erase-tok-1\", got a value that is not a string"
 *   "F: attribute format: expected \"erase-tok-1\", got \"erase-ctr-1\""
 */
erase_status_t erase_h5_rows_check_format(hid_t file, const char *path, const char *format, const char *kind);

/*
 * Open the shard file `path` read-only into *file and validate it:
 * readable (access(2)), then erase_h5_rows_open_file, then
 * validate(shard) (the kind's checks of attributes and datasets; on its
 * failure a breadcrumb is added), all with the HDF5 lock taken here.
 * Errors: ERASE_ERR_IO "F: cannot open: No such file or directory", those
 * of erase_h5_rows_open_file and of validate. The caller closes what was
 * opened (erase_h5_rows_close_shard) also on an error.
 */
erase_status_t erase_h5_rows_open_shard(const char *path, hid_t *file, erase_status_t (*validate)(void *shard),
                                        void *shard);

/* Close the datasets d[0..n) that are open (>= 0) and *file (if >= 0),
 * each set to -1, taking the HDF5 lock. */
void erase_h5_rows_close_shard(hid_t *file, hid_t *d, int n);

/* A root attribute of `file` as text (erase_h5_attr_text), taking the HDF5
 * lock. */
void erase_h5_rows_attr_text(hid_t file, const char *name, char *text, int size);

/* 1 if `path` is a readable HDF5 file whose root attribute `format` is
 * `format`, else 0 (no error recorded): for tools that take any kind of
 * shard (erase-inspect data). Takes the HDF5 lock itself. */
int erase_h5_rows_probe(const char *path, const char *format);

/* Rename a finished temporary file to `path` (then *renamed = 1) and fsync
 * its directory (no HDF5 call; no lock needed). Errors: ERASE_ERR_IO
 * "cannot rename T to P: <reason>", "P: fsync of the directory failed: <reason>". */
erase_status_t erase_h5_rows_publish(const char *temp, const char *path, int *renamed);

/* A root attribute of `loc` as text: a string as is, an integer in decimal;
 * "" when absent or of another kind. Truncated to `size` bytes (size <= 0:
 * nothing written). For tools (erase-inspect). */
void erase_h5_attr_text(hid_t loc, const char *name, char *text, int size);

#endif
