/*
 * erase-train's sharded embeddings (--embeddings, issue 19): the model's
 * tables placed over the data-parallel ranks and their exchanges set up.
 */
#ifndef ERASE_APPS_TRAIN_EMBEDDINGS_H
#define ERASE_APPS_TRAIN_EMBEDDINGS_H

#include "lib/comm/comm.h"
#include "lib/sched/embed_shard.h"

/*
 * --embeddings table: net's tables placed table-wise over the ranks of
 * `group` (lib/nn/sharding.h: greedy by bytes: a row's dim floats and,
 * with embedding_optimizer "rowwise_adagrad", its one float of state),
 * the exchanges set up on it (lib/sched/embed_shard.h: *out), and with
 * `root` the placement printed: a line for the exchange, then one per rank
 * with its tables, rows and bytes. Collective over `group`. Errors: those
 * of erase_shard_plan and erase_embed_shard_create (a model without tables).
 */
erase_status_t train_embeddings_shard(erase_network_t *net, erase_comm_t *group, const char *embedding_optimizer,
                                      int root, erase_embed_shard_t **out);

#endif
