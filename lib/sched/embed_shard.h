/*
 * Sharded embeddings over a data-parallel group (DESIGN.md, Sharded
 * embeddings; issue 19): each row of a table is looked up and updated by
 * the rank that holds it alone (lib/nn/sharding.h places them: table-wise,
 * a whole table on one rank; row-wise, a table's rows in contiguous ranges
 * on every rank), as TorchRec's table-wise and row-wise sharding with its
 * input and output distribution. Table-wise is the case of one range.
 *
 * Slots. The exchanges' buffers are D blocks (one per peer rank, the
 * all-to-all's block r) of Tmax slots (slot k of block r: the k-th table,
 * in table order, of which rank r holds rows; Tmax: the most tables a rank
 * holds rows of), each of max_batch (B) entries.
 *
 * Forward (the network's embedding provider, erase_network_set_embedding_
 * provider, on the stream of the block's forward, over the `emb`
 * communicator): every id of the rank's batch [n, T] is mapped to its row
 * (erase_embedding_forward's rule, the missing value to the last row) and
 * routed to the rank that holds it (erase_shard_route: in sample order,
 * the row local to that rank's part, and each slot's count); one
 * all-to-all of the D x Tmax counts, then a counted all-to-all
 * (erase_alltoall_slots: TorchRec's all-to-all-v) of the routed rows;
 * each rank looks its slots up in its parts (erase_gather_rows; entries
 * not received are pads, zero vectors); a counted all-to-all of the
 * vectors back (the counts reversed); the rank gathers them into
 * emb [n, T, dim] by where it routed each id. The collectives' shapes
 * depend on the configuration alone, never on the data or on n, and the
 * counted all-to-alls read their counts when they run, so every rank takes
 * part in every all-to-all (a rank with an empty batch too) and the step
 * stays capturable as a graph, while only the routed entries move (MPI;
 * NCCL moves whole slots of B entries: comm.h).
 *
 * Backward (erase_embed_shard_reduce, from lib/sched/reduce.c on the comm
 * stream over the dp communicator, in place of the replicated all-gather):
 * each rank's local sparse gradient of every table (the block's backward:
 * erase_embedding_backward, distinct rows ascending, summed in sample
 * order) is split by holder (erase_sparse_split: a contiguous range of the
 * ascending rows each) and sent there (an all-to-all of the counts, then
 * counted all-to-alls of the rows and values); the holder merges the D
 * parts of each slot (the pairwise tree over ranks, erase_sparse_merge)
 * scaled by 1/D: the very sums the replicated all-gather + merge computes
 * for those rows, so the holder's update is bitwise the replicated one. A rank that holds no rows of a table counts 0 of them
 * (no update).
 *
 * Multi-hot ids (issue 35; the model's hotness, lib/nn/batch.h): every
 * present id of a bag is routed on its own (erase_shard_route_bag, in
 * (sample, column) order), its vector comes back, and the rank that asked
 * pools the vectors in column order (erase_embedding_pool): the
 * replicated lookup's arithmetic, so the parameters stay bitwise those of
 * replicated tables. Pooling at the owner would send one partial sum per
 * bag and owner instead of one vector per id (tests/sched/test-shard-mpi
 * measures both: 3.6x fewer vector bytes on 2 ranks, 2.6x on 4, for
 * MLPerf's hotness row-wise), but a bag split over owners would then be
 * summed in another order. Slots hold B = max_batch x the largest
 * hotness entries (one-hot: max_batch), as does each table's sparse
 * gradient.
 *
 * Bytes each rank sends per step to the other ranks, on the MPI path: the
 * counts, 4 (D-1) Tmax for each of the 2 count all-to-alls and for each
 * of the 4 counted ones (the counts again, which the receivers check),
 * plus 4 bytes per row it routes to another rank, 4 dim per vector it
 * sends back for the rows other ranks routed to it, and 4 (1 + dim) per
 * gradient row it sends another rank: measured by
 * erase_embed_shard_traffic. At most (every slot full, its own share
 * included) 4 D Tmax (2 + 2B + 2 B dim) + 16 (D-1) Tmax, B = the slot size:
 * erase_embed_shard_bytes (NCCL: the 4 D Tmax (2 + 2B + 2 B dim) it
 * moves).
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
 * (every entry table- or row-wise over ranks = the size of `emb`; net
 * built by erase_network_create_placed with that plan and this rank's
 * index in `emb`, so that each table holds this rank's rows), and
 * register the forward as the network's embedding provider of that
 * block. `emb` carries the forward's all-to-alls; it must be a
 * communicator of the data-parallel group's ranks (in the same order)
 * whose collectives no other stream runs at the same time
 * (erase_emb_comm()). The network's max_batch fixes the slot size.
 * Errors: ERASE_ERR_INVALID ("sharded embeddings: ..." naming the
 * network without tables, a plan entry replicated or for another
 * number of ranks or rows, an owner outside [0, D), a table that does not
 * hold the rows its placement gives this rank, more than 64 ranks),
 * ERASE_ERR_NOMEM, a size that overflows.
 */
erase_status_t erase_embed_shard_create(erase_network_t *net, erase_comm_t *emb, const erase_shard_t *plan,
                                        int tables, erase_embed_shard_t **out);
/* Unregisters the provider; after every stream using it is synchronized. */
void erase_embed_shard_destroy(erase_embed_shard_t *es);

/* The block whose tables are sharded. */
int erase_embed_shard_block(const erase_embed_shard_t *es);

/* Bytes this rank sends per training step in the all-to-alls at most
 * (formula above: every slot full; an evaluation batch: the forward's
 * terms). */
int64_t erase_embed_shard_bytes(const erase_embed_shard_t *es);

/*
 * What the exchange moved since the communicators' counters were last
 * reset (erase_comm_stats_reset of `emb` and of the dp communicator last
 * given to erase_embed_shard_reduce): the all-to-all bytes this rank sent
 * to other ranks and the seconds inside those all-to-alls, over both
 * (the dp communicator carries no other all-to-alls; before any reduce,
 * `emb` alone). Either output may be NULL. Errors: ERASE_ERR_INVALID (NULL
 * es).
 */
erase_status_t erase_embed_shard_traffic(const erase_embed_shard_t *es, int64_t *bytes_sent, double *seconds);

/*
 * Enqueue on s, over `dp` (the data-parallel group, size D, the ranks of
 * `emb` in the same order), the exchange of the sharded block's sparse
 * gradients (each table's grad_count / grad_rows / grad_values as the
 * block's backward wrote them): afterwards each table's gradient on this
 * rank is the mean of the D ranks' gradients of the rows it holds, rows
 * local to its part (0 .. held - 1; room for D x max_batch rows:
 * erase_network_reserve_sparse_rows); a table it holds none of counts 0.
 * Errors: those of the ops and collectives.
 */
erase_status_t erase_embed_shard_reduce(erase_embed_shard_t *es, erase_comm_t *dp, erase_stream_t *s);

#endif
