/* Helpers of the io/ tests: scratch directories, error text, whole datasets. */
#ifndef ERASE_TESTS_IO_UTIL_H
#define ERASE_TESTS_IO_UTIL_H

#include <stdint.h>

#include "lib/core/status.h"

#ifndef ERASE_DATA_DIR
#error "ERASE_DATA_DIR (the data directory of the source tree) must be defined"
#endif

/* MUST(call): a cmocka failure naming the call and the error when an
 * erase_status_t call fails (the test includes cmocka.h). */
#define MUST(call)                                                                         \
    do {                                                                                   \
        erase_status_t must_s_ = (call);                                                   \
        if (must_s_ != ERASE_OK)                                                           \
            fail_msg("%s failed: %s", #call, erase_error_message());                       \
    } while (0)

/* A sample of data/criteo by name, e.g. "kaggle-train-first9999.tsv". */
const char *io_sample(const char *name);

/* A fresh scratch directory under the current directory (the build tree);
 * io_scratch_remove deletes it and everything in it. */
char *io_scratch_make(const char *tag);
void io_scratch_remove(char *dir);

/* "DIR/name" in a static buffer (one of 8 rotating). */
const char *io_path(const char *dir, const char *name);

/* Number of directory entries of `dir` whose name ends with `suffix`. */
int io_count_files(const char *dir, const char *suffix);

/* Rows of a dataset (directory or shard file) as stored, in file order;
 * free with io_rows_free. */
typedef struct {
    int64_t n;
    uint8_t *label;
    float *dense;     /* [n, 13] */
    uint32_t *sparse; /* [n, 26] */
} io_rows_t;
erase_status_t io_rows_load(const char *input, io_rows_t *rows);
void io_rows_free(io_rows_t *rows);

/* File offset and stored size (bytes) of the first chunk of `dataset` in
 * the HDF5 file `path` (to damage it on purpose); 0 or -1. */
int io_first_chunk(const char *path, const char *dataset, uint64_t *addr, uint64_t *size);

/* Write `text` to a file; 0 or -1. */
int io_write_text(const char *path, const char *text);

#endif
