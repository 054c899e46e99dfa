/*
 * io internals: appending rows to an HDF5 dataset of rows (io/h5_rows.h)
 * by whole chunks that erase filters itself and hands to HDF5's direct
 * chunk write (H5Dwrite_chunk, HDF5 >= 1.10.2), bypassing HDF5's filter
 * pipeline on the write side only. The dataset keeps its pipeline (shuffle
 * where the layout asks, deflate, Fletcher-32, as erase_h5_rows_create
 * sets it), so every reader (HDF5's filters, h5py, erase's reader) reads
 * the chunks unchanged; each stored chunk is exactly what that pipeline
 * produces and accepts:
 *   1. shuffle (HDF5's H5Zshuffle.c): byte j of element i goes to
 *      j * elements + i (a no-op for 1-byte elements);
 *   2. deflate: a zlib-format stream (RFC 1950), as HDF5's H5Zdeflate.c
 *      writes with zlib's compress2 and inflates on read, here made by
 *      libdeflate (libdeflate_zlib_compress) at the layout's level;
 *   3. Fletcher-32 (HDF5's H5checksum.c H5_checksum_fletcher32 over the
 *      filtered bytes, appended little-endian as H5Zfletcher32.c's
 *      UINT32ENCODE does).
 * The last, partial chunk is stored at full size padded with zero bytes
 * (HDF5 stores full-size edge chunks; the dataset's extent hides the
 * padding). Only where libdeflate was found (HAVE_LIBDEFLATE) and the host
 * is little-endian (memory bytes = the files' little-endian types);
 * erase_h5_chunks_available says so.
 */
#ifndef ERASE_IO_H5_CHUNKS_H
#define ERASE_IO_H5_CHUNKS_H

#include <hdf5.h>
#include <stddef.h>
#include <stdint.h>

#include "io/h5_rows.h"
#include "lib/core/status.h"

typedef struct erase_h5_chunks erase_h5_chunks_t;

/* 1 if this build can write chunks directly (libdeflate, HDF5 >= 1.10.2,
 * little-endian host), else 0. */
int erase_h5_chunks_available(void);

/*
 * HDF5's Fletcher-32 of `len` bytes (H5checksum.c, H5_checksum_fletcher32:
 * 16-bit big-endian words, sums folded every 360 words, an odd last byte
 * as the high byte of a word); the value H5Zfletcher32.c stores.
 */
uint32_t erase_h5_fletcher32(const void *data, size_t len);

/* HDF5's shuffle filter (H5Zshuffle.c) of `elements` values of `size`
 * bytes from src to dst (not overlapping). */
void erase_h5_shuffle(void *dst, const void *src, size_t elements, size_t size);

/*
 * A buffered appender of rows to the open, empty dataset `d` (created by
 * erase_h5_rows_create with `layout`, which must ask for deflate; `path`
 * names the file in messages) at libdeflate level `level` (1..12; HDF5's
 * pipeline uses zlib's level 1). Errors: ERASE_ERR_NOMEM "F: dataset
 * /label: out of memory for a chunk of N bytes"; ERASE_ERR_UNSUPPORTED
 * where erase_h5_chunks_available() is 0.
 */
erase_status_t erase_h5_chunks_open(hid_t d, const char *path, const erase_h5_rows_spec_t *spec,
                                    const erase_h5_rows_layout_t *layout, int level, erase_h5_chunks_t **out);

/*
 * Append `n` rows ([n, cols] values of spec->bytes bytes, in the file's
 * little-endian layout): the dataset's extent grows to every row given,
 * each chunk completed is written. The lock is held. Errors: ERASE_ERR_IO
 * "F: dataset /label: writing rows [a, b) failed: <HDF5's reason>" (a, b:
 * the chunk's rows).
 */
erase_status_t erase_h5_chunks_append(erase_h5_chunks_t *c, int64_t n, const void *data);

/*
 * Write the partial chunk buffered (padded with zeros), so that a read of
 * the dataset sees every row appended; appending more rewrites that chunk
 * when it fills. Nothing to do without a partial chunk. The lock is held.
 * Errors: those of erase_h5_chunks_append.
 */
erase_status_t erase_h5_chunks_flush(erase_h5_chunks_t *c);

/* Rows appended. */
int64_t erase_h5_chunks_rows(const erase_h5_chunks_t *c);

/* Free the appender (not the dataset); what was not flushed is lost. */
void erase_h5_chunks_free(erase_h5_chunks_t *c);

#endif
