/*
 * What io/checkpoint.c, checkpoint_dir.c, checkpoint_write.c and
 * checkpoint_read.c share. Private to io.
 */
#ifndef ERASE_IO_CHECKPOINT_INTERNAL_H
#define ERASE_IO_CHECKPOINT_INTERNAL_H

#include "io/checkpoint.h"

#include <stddef.h>
#include <stdint.h>

/* FNV-1a 64 of `bytes` more bytes after the state h. */
uint64_t ckpt_fnv_add(uint64_t h, const void *data, size_t bytes);

/* s, or "" for NULL. */
const char *ckpt_nz(const char *s);

/* The integer attribute `attr` ("/meta step") of the checkpoint `path` is
 * in [lo, hi]. */
erase_status_t ckpt_int_in_range(const char *path, const char *attr, int64_t v, int64_t lo, int64_t hi);

/* "dir/name" into out (ERASE_CKPT_PATH_MAX). Returns -1 when too long. */
int ckpt_join(char *out, const char *dir, const char *name);

/* 1 when path is named as a stage file: "<checkpoint>.stage<s>", s >= 1
 * (ckpt-<step>.h5.stage1, or one set aside: ckpt-<step>.h5.damaged.stage1). */
int ckpt_named_as_stage_file(const char *path);

/* Keep the `keep` newest checkpoints of steps <= step; remove stale
 * temporary files. Returns how many checkpoints were removed. */
int ckpt_prune(const char *dir, int64_t step, int keep);

/* A shape of 1 or 2 dimensions as text, "[3, 4]", into text [size]. */
void ckpt_shape_text(int ndim, const int64_t *dims, char *text, size_t size);

/* The dataset of the per-row checksums of the sharded dataset `path`
 * ("/params/0/emb/3" -> "/row_fnv1a64/params/0/emb/3") into out [size]. */
void ckpt_rowsum_path(const char *path, char *out, size_t size);

/* Elements of a row of t. */
int64_t ckpt_row_elems(const erase_ckpt_tensor_t *t);

#endif
