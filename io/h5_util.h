/*
 * io internals: how io/ calls HDF5.
 *
 * The HDF5 library erase links (Debian's parallel build) is not built
 * thread-safe, yet the CTR reader calls it from its prefetch thread while
 * other readers or writers may run in the same process. Every sequence of
 * HDF5 calls in io/ is therefore bracketed by erase_h5_enter() and
 * erase_h5_leave(): one process-wide lock, and HDF5's automatic printing of
 * its error stack switched off (for good after the first call: io/h5_util.c
 * says why; errors are reported through erase_status_t instead, with the
 * innermost HDF5 message attached). Code
 * outside io/ that calls HDF5 while an io/ reader runs must take the same
 * lock.
 */
#ifndef ERASE_IO_H5_UTIL_H
#define ERASE_IO_H5_UTIL_H

#include <hdf5.h>
#include <stddef.h>
#include <stdint.h>

#include "lib/core/status.h"

/* Take the process-wide HDF5 lock and silence HDF5's error printing (the
 * first call: for good, io/h5_util.c says why). Not recursive: a thread
 * must call erase_h5_leave() before entering again. */
void erase_h5_enter(void);

/* Restore HDF5's error printing and release the lock. */
void erase_h5_leave(void);

/*
 * The innermost message of HDF5's current error stack (e.g. "truncated
 * file: eof = 1024, sblock->base_addr = 0, stored_eof = 4096"), copied into
 * `text` (at most `size` bytes, NUL-terminated); if the stack is empty, the
 * message kept by erase_h5_remember() ("" if none). The stack and the kept
 * message are cleared. Call with the lock held. Returns `text`.
 */
const char *erase_h5_detail(char *text, size_t size);

/*
 * Keep the innermost message of HDF5's current error stack for the next
 * erase_h5_detail(): call it right after a failing HDF5 call when cleanup
 * calls (which clear the stack) come before the message is built. The
 * attribute helpers below do it themselves. Call with the lock held.
 */
void erase_h5_remember(void);

/*
 * Whether the object at `path` (absolute, "/params/h0/attn/c_attn/weight",
 * or relative to `loc`) exists: 1; 0 when it, or a group on the way, is
 * missing; -1 when HDF5 cannot look a name up: the file is damaged (a
 * group's header fails its checksum), with HDF5's reason kept for
 * erase_h5_detail(). (H5Lexists alone fails alike for a missing group on
 * the way and for a damaged one, so each group is asked in turn.) Call with
 * the lock held.
 */
int erase_h5_exists(hid_t loc, const char *path);

/* Name of an HDF5 datatype for messages: "uint8", "int32", "float32",
 * "float64", "string", "compound", ... Call with the lock held. */
const char *erase_h5_type_name(hid_t type, char *text, size_t size);

/*
 * Root-group attributes. Write: a scalar string (fixed length), int64 or
 * uint32; a 1-D array of `n` uint32/float/double. Each returns 0, or -1 on
 * an HDF5 failure. Call with the lock held.
 */
int erase_h5_attr_write_string(hid_t loc, const char *name, const char *value);
int erase_h5_attr_write_int64(hid_t loc, const char *name, int64_t value);
int erase_h5_attr_write_array(hid_t loc, const char *name, hid_t mem_type, const void *values,
                              size_t n);

/* A 1-D dataset `name` of `n` elements (n may be 0) under `loc`, stored as
 * file_type, written from `data` of mem_type. Returns 0, or -1 on an HDF5
 * failure (its message kept by erase_h5_remember). Call with the lock held. */
int erase_h5_write_vector(hid_t loc, const char *name, hid_t file_type, hid_t mem_type, const void *data, size_t n);

/*
 * Read a scalar string attribute (fixed or variable length) into `text`
 * (truncated to `size` bytes). Returns 0, 1 when the attribute does not
 * exist, -1 when it exists but is not a string or cannot be read.
 * Call with the lock held.
 */
int erase_h5_attr_read_string(hid_t loc, const char *name, char *text, size_t size);

/* The same, of any length: a malloc'ed copy, or NULL with *rc = 1 (missing)
 * or -1 (not a scalar string, unreadable, no memory). Call with the lock held. */
char *erase_h5_attr_read_string_alloc(hid_t loc, const char *name, int *rc);

/*
 * Read a scalar integer attribute as int64. Returns 0, 1 when missing, -1
 * when it is not a scalar integer. Call with the lock held.
 */
int erase_h5_attr_read_int64(hid_t loc, const char *name, int64_t *value);

#endif
