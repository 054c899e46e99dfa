/*
 * Data-parallel gradient reduction of one block (internal to lib/sched):
 * the block's dense gradients (one contiguous buffer) are all-reduced to
 * their mean; its embedding tables' sparse gradients are packed into
 * fixed-size slots, all-gathered, and merged on every rank into the same
 * sorted rows with duplicates summed in rank order and scaled by 1/D.
 * Fixed sizes keep every collective's size independent of the data, so the
 * step can be captured as a graph. Identical on every rank, deterministic.
 */
#ifndef ERASE_SCHED_REDUCE_H
#define ERASE_SCHED_REDUCE_H

#include "lib/comm/comm.h"
#include "lib/nn/network.h"

typedef struct sched_reduce sched_reduce_t;

/* Buffers for `net` over the data-parallel group `dp` (size D > 1); grows
 * the network's sparse-gradient capacity to D x max_batch rows per table. */
erase_status_t sched_reduce_create(erase_network_t *net, erase_comm_t *dp, sched_reduce_t **out);
void sched_reduce_destroy(sched_reduce_t *r);

/* Enqueue block b's reduction on stream s. */
erase_status_t sched_reduce_block(sched_reduce_t *r, int b, erase_stream_t *s);

#endif
