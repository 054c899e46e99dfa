/*
 * erase-train's sharded embeddings (--embeddings, issue 19): the model's
 * tables placed over the data-parallel ranks (setup.c builds the network with
 * only this rank's rows, erase_network_create_placed, and the exchanges,
 * erase_embed_shard_create), and the placement's words for the start-up
 * lines and the summary.
 */
#ifndef ERASE_APPS_TRAIN_EMBEDDINGS_H
#define ERASE_APPS_TRAIN_EMBEDDINGS_H

#include "lib/nn/model_config.h"
#include "lib/nn/sharding.h"
#include "lib/ops/ops.h"
#include "lib/sched/embed_shard.h"

/* A placement of a model's tables over `ranks` ranks. */
typedef struct {
    erase_shard_kind_t kind;           /* as asked (auto stays auto) */
    int tables;                        /* 0: replicated (no plan) */
    int64_t row_bytes;                 /* a row's value and optimizer state */
    erase_shard_t plan[ERASE_FIELDS_MAX];
} train_embeddings_t;

/*
 * The placement --embeddings `kind` ("replicated", "table", "row", "auto")
 * asks for cfg's tables (ctr's 26; other models have none and must ask for
 * replicated) over `ranks` ranks (lib/nn/sharding.h, erase_shard_plan; a
 * row's bytes are its dim floats and, with embedding_optimizer
 * "rowwise_adagrad", its one float of state; auto's threshold the total /
 * ranks), into *out (tables 0 for replicated). Errors: ERASE_ERR_INVALID
 * (a kind not named above; those of erase_shard_plan).
 */
erase_status_t train_embeddings_plan(const erase_model_config_t *cfg, const char *kind, const char *embedding_optimizer,
                                     int ranks, train_embeddings_t *out);

/* "table-wise", "row-wise" or "auto (1 table row-wise, 25 table-wise)":
 * what placement `e` is, into out[size]. */
void train_embeddings_kind_text(const train_embeddings_t *e, char *out, size_t size);

/* The start-up lines of placement `e` over `ranks` ranks (stdout): the
 * kind and the exchange's bytes at most per step (es), then per rank its
 * whole and partial tables, rows and bytes (values and optimizer state;
 * KiB below 1 MiB). */
void train_embeddings_print(const train_embeddings_t *e, const erase_embed_shard_t *es, int ranks);

#endif
