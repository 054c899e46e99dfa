/*
 * Table-wise sharded embeddings over a data-parallel group (DESIGN.md,
 * Sharded embeddings; issue 19): each table is looked up and updated by
 * its owner alone (lib/nn/sharding.h places them), as TorchRec's
 * table-wise sharding with its input and output distribution.
 *
 * Forward (the network's embedding provider, erase_network_set_embedding_
 * provider, on the stream of the block's forward, over the `emb`
 * communicator): the ids of the rank's batch [n, T] are split per table
 * into slots of max_batch ids (padded with the missing value 0xFFFFFFFF)
 * grouped by owner, Tmax slots per owner (Tmax: the most tables a rank
 * owns); one all-to-all of Tmax x max_batch ids; the owner looks every
 * (source rank, table) slot up (erase_embedding_forward); one all-to-all
 * of the vectors back; the rank gathers them into emb [n, T, dim]. Every
 * collective's size depends on the configuration alone, never on the
 * data or on n, so every rank takes part in every all-to-all (a rank with
 * an empty batch too) and the step stays capturable as a graph.
 *
 * Backward (erase_embed_shard_reduce, from lib/sched/reduce.c on the comm
 * stream over the dp communicator, in place of the replicated all-gather):
 * each rank's local sparse gradient of every table (the block's backward:
 * erase_embedding_backward, distinct rows summed in sample order) is
 * packed per owner (erase_sparse_pack, max_batch rows per table) and sent
 * to the owner (all-to-all of counts, rows and values); the owner merges
 * the D packs of each table it owns in rank order scaled by 1/D
 * (erase_sparse_merge): the very sums the replicated all-gather + merge
 * computes, so the owner's update is bitwise the replicated one. Other
 * ranks' gradients of the table count 0 rows (no update).
 *
 * Bytes each rank sends per step (its own share included):
 * 4 D Tmax B (ids) + 4 D Tmax B dim (vectors) + 4 D Tmax (1 + B + B dim)
 * (gradients), B = max_batch: erase_embed_shard_bytes.
 */
#ifndef ERASE_SCHED_EMBED_SHARD_H
#define ERASE_SCHED_EMBED_SHARD_H

#include "lib/comm/comm.h"
#include "lib/nn/network.h"
#include "lib/nn/sharding.h"

typedef struct erase_embed_shard erase_embed_shard_t;

/*
 * Shard the embedding tables of `net` (one block's, consecutive
 * parameters of one width: sched_block_tables) as plan[tables] says
 * (every entry ERASE_SHARD_TABLE, over ranks = the size of `emb`), and
 * register the forward as the network's embedding provider of that
 * block. `emb` carries the forward's all-to-alls; it must be a
 * communicator of the data-parallel group's ranks (in the same order)
 * whose collectives no other stream runs at the same time
 * (erase_emb_comm()). The network's max_batch fixes the slot size.
 * Errors: ERASE_ERR_INVALID ("sharded embeddings: ..." naming the
 * network without tables, a plan entry not table-wise or for another
 * number of ranks or rows, an owner outside [0, D)), ERASE_ERR_NOMEM, a
 * size that overflows.
 */
erase_status_t erase_embed_shard_create(erase_network_t *net, erase_comm_t *emb, const erase_shard_t *plan,
                                        int tables, erase_embed_shard_t **out);
/* Unregisters the provider; after every stream using it is synchronized. */
void erase_embed_shard_destroy(erase_embed_shard_t *es);

/* The block whose tables are sharded. */
int erase_embed_shard_block(const erase_embed_shard_t *es);

/* Bytes this rank sends per training step in the all-to-alls (formula
 * above; an evaluation batch: the ids and vectors terms). */
int64_t erase_embed_shard_bytes(const erase_embed_shard_t *es);

/*
 * Enqueue on s, over `dp` (the data-parallel group, size D, the ranks of
 * `emb` in the same order), the exchange of the sharded block's sparse
 * gradients (each table's grad_count / grad_rows / grad_values as the
 * block's backward wrote them): afterwards the owner's hold the mean of
 * the D ranks' gradients (room for D x max_batch rows:
 * erase_network_reserve_sparse_rows), the others' count 0.
 * Errors: those of the ops and collectives.
 */
erase_status_t erase_embed_shard_reduce(erase_embed_shard_t *es, erase_comm_t *dp, erase_stream_t *s);

#endif
