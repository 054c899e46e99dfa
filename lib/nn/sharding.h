/*
 * Placement of embedding tables over the ranks of a data-parallel group
 * (sharded embeddings, issue 19): which rank holds which rows of each table.
 *
 *   replicated  every rank holds the whole table (erase's data parallelism
 *               until now: row gradients all-gathered, lib/sched/reduce.h)
 *   table       the whole table on one rank, its owner; tables placed
 *               greedily: by weight (bytes x expected lookups per sample)
 *               from the heaviest, each onto the rank with the least weight
 *               so far (ties: the lower table, the lower rank)
 *   row         every rank holds a contiguous part of the rows, split as
 *               the data is: rank r holds [floor(r R / D), floor((r+1) R / D))
 *               of R rows over D ranks (R < D leaves some ranks none)
 *   auto        row for a table of more bytes than a threshold (default: the
 *               tables' total bytes / D, a rank's fair share: such a table
 *               cannot be balanced whole), table for the others
 *
 * The kinds are TorchRec's table-wise and row-wise sharding
 * (torchrec.distributed.types.ShardingType TABLE_WISE, ROW_WISE); the
 * greedy placement is a simplified form of its planner's greedy
 * partitioner (largest first onto the least loaded rank).
 */
#ifndef ERASE_NN_SHARDING_H
#define ERASE_NN_SHARDING_H

#include "lib/core/status.h"

#include <stdint.h>

typedef enum {
    ERASE_SHARD_REPLICATED = 0,
    ERASE_SHARD_TABLE,
    ERASE_SHARD_ROW,
    ERASE_SHARD_AUTO                /* a request only: a plan's table is one of the three above */
} erase_shard_kind_t;

/* One table's placement. */
typedef struct {
    erase_shard_kind_t kind;        /* replicated, table or row */
    int owner;                      /* table: the rank that holds it; else -1 */
    int64_t rows;                   /* the table's rows, R */
    int ranks;                      /* D */
} erase_shard_t;

/* "replicated", "table", "row", "auto"; NULL for another value. */
const char *erase_shard_kind_name(erase_shard_kind_t kind);

/* The kind named by `name` (the names above) into *out. Errors:
 * ERASE_ERR_INVALID ("--embeddings 'x': expected replicated, table, row or
 * auto", with `what` in place of --embeddings). */
erase_status_t erase_shard_kind_parse(const char *what, const char *name, erase_shard_kind_t *out);

/*
 * The placement of `tables` tables of rows[t] rows of row_bytes bytes each
 * (a row's value and optimizer state), looked up lookups[t] times per
 * sample (NULL: once each), over `ranks` ranks, as `kind` asks; auto's
 * threshold in bytes (<= 0: the total / ranks). Into out[tables].
 * Errors: ERASE_ERR_INVALID (ranks < 1, a table of fewer than 1 row,
 * row_bytes < 1, a negative or non-finite lookup count, tables outside
 * [0, 64], bytes that overflow int64).
 */
erase_status_t erase_shard_plan(erase_shard_kind_t kind, int tables, const int64_t *rows, const double *lookups,
                                int64_t row_bytes, int ranks, int64_t threshold, erase_shard_t *out);

/* The first of the rows that rank r holds of table s, and how many
 * (replicated: all; table: all on the owner, none elsewhere). */
int64_t erase_shard_first_row(const erase_shard_t *s, int r);
int64_t erase_shard_rows_on(const erase_shard_t *s, int r);

/* The rank that holds row `row` (0 <= row < R) of table s, and the row's
 * index among that rank's rows into *local (may be NULL); replicated: -1
 * (every rank), *local = row. */
int erase_shard_owner(const erase_shard_t *s, int64_t row, int64_t *local);

#endif
