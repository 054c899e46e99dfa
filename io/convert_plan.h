/*
 * The work units of a parallel conversion (`mpirun -np N erase-convert
 * criteo`) and how they are dealt to ranks.
 *
 * A unit is a whole input file, or a byte range of a large plain one:
 *   - a gzip file (magic bytes 1f 8b) is one unit: a deflate stream cannot
 *     be entered in the middle;
 *   - a plain file of more than `split_bytes` bytes is cut into ranges
 *     [k * split_bytes, min((k + 1) * split_bytes, size)), k = 0, 1, ...;
 *     a range owns the lines that START inside it (the first range also
 *     the line at byte 0; a later one skips the end of the line it starts
 *     in, and reads its own last line to its end, past the range), so
 *     every line belongs to exactly one range whatever the cut (the rule
 *     of Hadoop's TextInputFormat);
 *   - any other file is one unit.
 * Units are numbered in input order (file order, then byte order): the
 * shards of unit u precede those of unit u + 1 in the dataset, so the
 * rows keep the order of the inputs. Neither the units nor that order
 * depend on the number of ranks (split_bytes is an option, not derived
 * from N).
 *
 * Dealing (erase_convert_plan_deal): units in decreasing size (ties: the
 * lower unit first) each go to the rank with the fewest bytes so far
 * (ties: the lower rank), the longest-processing-time rule (Graham 1969),
 * within 4/3 of the best balance. Deterministic: every rank computes the
 * same plan from the same files.
 */
#ifndef ERASE_IO_CONVERT_PLAN_H
#define ERASE_IO_CONVERT_PLAN_H

#include <stdint.h>

#include "lib/core/status.h"

#define ERASE_CONVERT_SPLIT_BYTES_DEFAULT 256000000 /* bytes per range of a plain file (256 MB) */

typedef struct {
    int file;         /* index in the inputs */
    int64_t start;    /* first byte of the range (0 for a whole file) */
    int64_t end;      /* one past its last byte (the file's size for a whole file) */
    int gzip;         /* the file is gzip (a whole-file unit) */
    int split;        /* the file is cut into several ranges */
    int rank;         /* the rank that converts it (erase_convert_plan_deal) */
} erase_convert_unit_t;

typedef struct {
    erase_convert_unit_t *units;
    int count;
    int64_t total_bytes; /* the inputs' sizes on disk (compressed for gzip) */
} erase_convert_plan_t;

/*
 * Plan the units of `n` inputs (stat and the first two bytes of each).
 * `split_bytes` >= 1. Errors: ERASE_ERR_IO "FILE: cannot open: <reason>",
 * "FILE: not a regular file"; ERASE_ERR_INVALID (split_bytes < 1);
 * ERASE_ERR_NOMEM.
 */
erase_status_t erase_convert_plan_make(const char *const *inputs, int n, int64_t split_bytes,
                                       erase_convert_plan_t *plan);

/* Set every unit's rank (0 .. ranks - 1) as described above. */
void erase_convert_plan_deal(erase_convert_plan_t *plan, int ranks);

void erase_convert_plan_free(erase_convert_plan_t *plan);

#endif
