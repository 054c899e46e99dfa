/*
 * Data-parallel gradient reduction of one block (internal to lib/sched):
 * the block's dense gradients (one contiguous buffer) are all-reduced to
 * their mean; its embedding tables' sparse gradients are packed into
 * fixed-size slots, all-gathered, and merged on every rank into the same
 * sorted rows with duplicates summed as the pairwise tree over ranks
 * (erase_sparse_merge) and scaled by 1/D.
 * Fixed sizes keep every collective's size independent of the data, so the
 * step can be captured as a graph. Identical on every rank, deterministic.
 */
#ifndef ERASE_SCHED_REDUCE_H
#define ERASE_SCHED_REDUCE_H

#include "lib/comm/comm.h"
#include "lib/nn/optim.h"

typedef struct sched_reduce sched_reduce_t;

/* Buffers for `net` over the data-parallel group `dp` (size D > 1) for
 * sparse gradients of up to `capacity` samples' rows per table on each
 * rank (the network's max_batch; a pipeline stage: the rows of its
 * accumulated micro-batches), times erase_network_ids_per_sample for
 * multi-hot ids; grows the network's sparse-gradient capacity to D times
 * that many rows per table. */
erase_status_t sched_reduce_create(erase_network_t *net, erase_comm_t *dp, int capacity, sched_reduce_t **out);
void sched_reduce_destroy(sched_reduce_t *r);

/* Sharded embedding tables (lib/sched/embed_shard.h; NULL: replicated):
 * the block es shards exchanges its sparse gradients with the tables'
 * holders (erase_embed_shard_reduce) instead of all-gathering them (its
 * all-gather buffers are freed). */
struct erase_embed_shard;
void sched_reduce_set_shard(sched_reduce_t *r, struct erase_embed_shard *es);

/* Block b's embedding tables: parameters [*first, *first + *tables) of
 * width *dim (*tables 0: none). Errors: ERASE_ERR_INVALID (tables that are
 * not consecutive parameters of one width, more than ERASE_FIELDS_MAX). */
erase_status_t sched_block_tables(erase_network_t *net, int b, int *first, int *tables, int *dim);

/* Enqueue block b's reduction on stream s. */
erase_status_t sched_reduce_block(sched_reduce_t *r, int b, erase_stream_t *s);

/*
 * Block b's gradients: all-reduced over the data-parallel group (r NULL:
 * none), then checked: a non-finite value marks the step in opt's clock
 * (erase_optim_clock_t), so no update of it changes a parameter. Reduced
 * gradients are identical on every rank, so every rank takes the same
 * decision; sharded tables' are on their owners alone: the finding is
 * all-reduced (max) over the group, which every rank then shares (before
 * it every rank's clock holds the same finding, and a later one never
 * replaces it, so the max is what replicated tables would find).
 * Enqueued on s.
 */
erase_status_t sched_reduce_and_check(sched_reduce_t *r, erase_network_t *net, erase_optimizer_t *opt, int b,
                                      erase_stream_t *s);

#endif
