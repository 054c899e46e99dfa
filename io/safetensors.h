/*
 * safetensors files (issue 37): what erase-export writes and erase-train
 * --init-from reads, written and read here in C.
 *
 * Format (https://github.com/huggingface/safetensors, README "Format"):
 *
 *   8 bytes     N, an unsigned 64-bit little-endian integer: the header size
 *   N bytes     a UTF-8 JSON object: for each tensor NAME,
 *                 "NAME": {"dtype": "F32", "shape": [d0, d1, ...],
 *                          "data_offsets": [BEGIN, END]}
 *               (BEGIN, END: bytes relative to the start of the data,
 *               END - BEGIN = product of the shape x the dtype's size),
 *               and optionally "__metadata__": {"KEY": "VALUE", ...}, a
 *               map of strings to strings; may end with spaces (0x20)
 *   the rest    the data: every tensor's bytes, row-major, little-endian,
 *               the tensors side by side with no gap and nothing after
 *
 * Writing. The header is computed first from the names, dtypes and shapes
 * (erase_st_writer_open), padded with spaces to a multiple of 8 bytes (as
 * the safetensors library does); then the tensors' bytes are appended in
 * the order given, in as many pieces as the caller likes
 * (erase_st_writer_put: tables row-block by row-block), into a temporary
 * file <dir>/.<name>.tmp; erase_st_writer_commit checks that every byte
 * came, fsyncs, and renames it to the name asked for (then fsyncs the
 * directory), so the file named is never partly written.
 *
 * Reading. erase_st_open validates the whole layout before any tensor is
 * read: the header size (at least 2 bytes, at most ERASE_ST_HEADER_MAX
 * and inside the file), the JSON (strict RFC 8259; every key once), every
 * tensor's dtype (a safetensors dtype), shape (non-negative integers) and
 * data_offsets (BEGIN <= END, END - BEGIN = elements x dtype size, computed
 * without overflow), the offsets contiguous from 0 to the end of the file,
 * and the metadata (strings only). A failure is one line naming the file
 * and the tensor (or header part) at fault.
 */
#ifndef ERASE_IO_SAFETENSORS_H
#define ERASE_IO_SAFETENSORS_H

#include <stddef.h>
#include <stdint.h>

#include "lib/core/status.h"

#define ERASE_ST_HEADER_MAX 100000000 /* bytes: the safetensors library's own limit */
#define ERASE_ST_NAME_MAX 256         /* bytes of a tensor name, NUL included */
#define ERASE_ST_NDIM_MAX 8           /* dimensions of a tensor */

/* The dtypes of the format (its names: "F32", "BF16", ...). */
typedef enum {
    ERASE_ST_BOOL, ERASE_ST_U8, ERASE_ST_I8, ERASE_ST_F8_E5M2, ERASE_ST_F8_E4M3, ERASE_ST_I16, ERASE_ST_U16,
    ERASE_ST_F16, ERASE_ST_BF16, ERASE_ST_I32, ERASE_ST_U32, ERASE_ST_F32, ERASE_ST_F64, ERASE_ST_I64,
    ERASE_ST_U64, ERASE_ST_DTYPES
} erase_st_dtype_t;

/* The format's name of a dtype ("F32") and its size in bytes. */
const char *erase_st_dtype_name(erase_st_dtype_t t);
size_t erase_st_dtype_size(erase_st_dtype_t t);

/* One tensor of a file: its name, dtype and shape (ndim 0: a scalar). */
typedef struct {
    char name[ERASE_ST_NAME_MAX];
    erase_st_dtype_t dtype;
    int ndim;
    int64_t dims[ERASE_ST_NDIM_MAX];
    uint64_t begin, bytes; /* reading: its data's offset from the data start, and size */
} erase_st_tensor_t;

/* One metadata entry (key and value: NUL-terminated UTF-8). */
typedef struct {
    const char *key, *value;
} erase_st_meta_t;

/* ---- writing ----------------------------------------------------------------- */

typedef struct erase_st_writer erase_st_writer_t;

/*
 * Start writing `path`: the header of tensors[n] (names unique and not
 * "__metadata__", shapes with ndim <= ERASE_ST_NDIM_MAX, dims >= 0) and
 * meta[nmeta] (keys unique) is computed and written to the temporary file.
 * Errors: ERASE_ERR_INVALID (a duplicate or empty name, a bad shape, sizes
 * that overflow 64 bits, naming the tensor), ERASE_ERR_IO ("PATH: cannot
 * create: REASON": a directory that does not exist or is not writable),
 * ERASE_ERR_NOMEM. On error nothing is left on disk.
 */
erase_status_t erase_st_writer_open(const char *path, const erase_st_tensor_t *tensors, int n,
                                    const erase_st_meta_t *meta, int nmeta, erase_st_writer_t **out);

/*
 * Append `bytes` bytes of data (the current tensor's next bytes, or the
 * start of the next tensor's: the data is one stream in the order of
 * tensors[]). Errors: ERASE_ERR_INVALID (more bytes than the header
 * announced), ERASE_ERR_IO (naming the file and the reason).
 */
erase_status_t erase_st_writer_put(erase_st_writer_t *w, const void *data, size_t bytes);

/* Publish: every tensor's bytes written, fsync, rename to the path asked
 * for, fsync its directory; frees w. Errors: ERASE_ERR_INVALID ("PATH:
 * tensor NAME: B of its E bytes written"), ERASE_ERR_IO; on error the
 * temporary file is removed and nothing is published. */
erase_status_t erase_st_writer_commit(erase_st_writer_t *w);

/* Give up: remove the temporary file and free w (NULL: nothing). */
void erase_st_writer_abort(erase_st_writer_t *w);

/* ---- reading ----------------------------------------------------------------- */

typedef struct erase_st_file erase_st_file_t;

/*
 * Open and validate `path` (above). Errors: ERASE_ERR_IO (cannot open or
 * read it; not a regular file), ERASE_ERR_FORMAT (one line naming the file
 * and what is wrong: "F: header size 4294967296 bytes: more than the
 * 1000 bytes of the file", "F: header: byte 17: expected ':'", "F: tensor
 * h0/wte: dtype \"F33\" is not a safetensors dtype", "F: tensor h0/wte:
 * data_offsets [0, 12] hold 12 bytes, its shape [2, 3] of F32 needs 24",
 * "F: tensor h0/wpe: data starts at byte 8, expected 24 (where the tensor
 * before it ends)", "F: the data ends at byte 24 but the file has 40 bytes
 * of data (truncated or extended)"), ERASE_ERR_NOMEM.
 */
erase_status_t erase_st_open(const char *path, erase_st_file_t **out);

/* Open a header held in memory: header[n] (the JSON, without the size
 * word) for a file of `data_bytes` bytes of data (the cmocka tests of the
 * parser); `path` only names it in messages. Errors: those of
 * erase_st_open's header checks. */
erase_status_t erase_st_parse_header(const char *path, const char *header, size_t n, uint64_t data_bytes,
                                     erase_st_file_t **out);

void erase_st_close(erase_st_file_t *f);

/* The tensors in the order of their data, and one by name (NULL when absent). */
int erase_st_count(const erase_st_file_t *f);
const erase_st_tensor_t *erase_st_tensor(const erase_st_file_t *f, int i);
const erase_st_tensor_t *erase_st_find(const erase_st_file_t *f, const char *name);

/* A metadata value (NULL when the file has no such key) and the count. */
const char *erase_st_meta_get(const erase_st_file_t *f, const char *key);
int erase_st_meta_count(const erase_st_file_t *f);

/* Elements of a tensor (its shape's product; 1 for a scalar). */
int64_t erase_st_numel(const erase_st_tensor_t *t);

/*
 * Read bytes [offset, offset + bytes) of tensor t's data (of this file)
 * into out. Errors: ERASE_ERR_INVALID (outside the tensor), ERASE_ERR_IO
 * ("PATH: tensor NAME: cannot read: REASON"; a file truncated since it was
 * opened: "...: the file ends early").
 */
erase_status_t erase_st_read(const erase_st_file_t *f, const erase_st_tensor_t *t, uint64_t offset, void *out,
                             size_t bytes);

const char *erase_st_path(const erase_st_file_t *f);

#endif
