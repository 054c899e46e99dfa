/*
 * Test helpers for checkpoints (tests/ckpt/test-checkpoint.c and
 * ckpt-tool): change attributes of /meta and /optim in a checkpoint file,
 * as damage or as a forger who also fixes up their checksum.
 */
#ifndef ERASE_TESTS_CKPT_UTIL_H
#define ERASE_TESTS_CKPT_UTIL_H

#include <stddef.h>
#include <stdint.h>

/* One attribute: object "/meta" or "/optim", its name, the new value
 * (`lr` for /optim lr, `text` for a string attribute such as /meta model,
 * `v` for the integer attributes; `remove` to delete an optional one). */
typedef struct {
    const char *object, *attr;
    int64_t v;
    float lr;
    const char *text;
    int remove;                     /* 1: delete the attribute (an older erase's file had none) */
} ckpt_attr_t;

/*
 * Write attrs[n] into the checkpoint `path`. With `fix`, the file must be a
 * valid checkpoint first, and meta_fnv1a64 is rewritten to the checksum of
 * the changed values (erase_ckpt_meta_fnv1a64). Returns 0, or -1 with a
 * message in `why` (size bytes).
 */
int ckpt_set_attrs(const char *path, const ckpt_attr_t *attrs, int n, int fix, char *why, size_t size);

#endif
