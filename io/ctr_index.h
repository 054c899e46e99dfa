/*
 * Datasets of shards (CTR, classification): a directory written by erase-convert holds the
 * shards and an index, "index.txt":
 *
 *   # erase index: shards in global order, "FILE ROWS", FILE relative to this directory
 *   part-00000.h5 1048576
 *   part-00001.h5 524288
 *
 * The index is written last (atomically), so a directory without one is
 * not a complete dataset. The global sample order of a dataset starts from
 * the concatenation of its shards in index order.
 */
#ifndef ERASE_IO_CTR_INDEX_H
#define ERASE_IO_CTR_INDEX_H

#include <stdint.h>

#include "lib/core/status.h"

#define ERASE_CTR_INDEX_NAME "index.txt"

/* A resolved list of shard files in global order. */
typedef struct {
    int count;
    char **paths;   /* [count] file paths */
    int64_t *rows;  /* [count] rows the index promises; -1 for a file given directly */
} erase_ctr_list_t;

/*
 * Write DIR/index.txt atomically for `count` shards named `names` (relative
 * to DIR) with `rows` rows each. Errors: ERASE_ERR_IO, ERASE_ERR_NOMEM.
 */
erase_status_t erase_ctr_index_write(const char *dir, const char *const *names, const int64_t *rows,
                                     int count);

/*
 * Resolve `n` inputs, each a shard file or a directory with an index.txt,
 * into one list (inputs concatenated in the order given). Errors:
 *   ERASE_ERR_IO      "D: cannot open: No such file or directory"
 *                     "D/index.txt is a FIFO, expected a regular file"
 *   ERASE_ERR_FORMAT  "D: no index.txt: not a dataset written by erase-convert (or not complete)"
 *                     "D/index.txt:3: expected 'FILE ROWS', got 'x'"
 *                     "D/index.txt: lists no shards"
 *                     "D/index.txt:4: part-1.h5 is listed a second time (a shard is listed once)"
 *                     (it would be read twice an epoch)
 *                     "D/index.txt:2: part-1.h5 is a FIFO, expected a regular file"
 *                     (a FIFO, a directory or a device would hang or read
 *                     nothing; a symbolic link is followed)
 *                     "F is a FIFO, expected a shard file or a dataset directory"
 *                     "D/part-0.h5 (D/index.txt) and D/part-0.h5 are the same shard file:
 *                     a shard is listed once (it would be read twice an epoch)" (one
 *                     file by device and inode: a directory given twice, a file
 *                     and its directory, a symbolic link in an index)
 *   ERASE_ERR_NOMEM
 *   ERASE_ERR_INVALID no inputs
 * On success the caller frees the list with erase_ctr_list_free.
 */
erase_status_t erase_ctr_list_resolve(const char *const *inputs, int n, erase_ctr_list_t *list);

/* Free a resolved list (and zero it). */
void erase_ctr_list_free(erase_ctr_list_t *list);

#endif
