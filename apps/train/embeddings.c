/*
 * erase-train's sharded embeddings (apps/train/embeddings.h).
 */
#include "apps/train/embeddings.h"

#include "lib/nn/sharding.h"
#include "lib/ops/ops.h"

#include <stdio.h>
#include <string.h>

erase_status_t train_embeddings_shard(erase_network_t *net, erase_comm_t *group, const char *embedding_optimizer,
                                      int root, erase_embed_shard_t **out)
{
    int np, tables = 0;
    int64_t rows[ERASE_FIELDS_MAX], dim = 0;
    erase_param_t *params = erase_network_params(net, &np);
    for (int i = 0; i < np && tables < ERASE_FIELDS_MAX; i++) /* ctr's: consecutive (erase_embed_shard_create checks) */
        if (params[i].kind == ERASE_PARAM_EMBEDDING) {
            rows[tables++] = params[i].rows;
            dim = params[i].cols;
        }
    int64_t row_bytes = 4 * dim + (strcmp(embedding_optimizer, "rowwise_adagrad") ? 0 : 4);
    erase_shard_t plan[ERASE_FIELDS_MAX];
    int D = erase_comm_size(group);
    ERASE_CHECK(erase_shard_plan(ERASE_SHARD_TABLE, tables, rows, NULL, row_bytes, D, 0, plan));
    ERASE_CHECK(erase_embed_shard_create(net, group, plan, tables, out));
    if (!root)
        return ERASE_OK;
    printf("embed  table-wise over %d rank%s (%d tables; all-to-all %lld bytes per step per rank)\n", D,
           D == 1 ? "" : "s", tables, (long long)erase_embed_shard_bytes(*out));
    for (int k = 0; k < D; k++) {
        char list[4 * ERASE_FIELDS_MAX] = "";
        int n = 0;
        int64_t owned = 0;
        for (int t = 0; t < tables; t++)
            if (plan[t].owner == k) {
                snprintf(list + strlen(list), sizeof list - strlen(list), "%s%d", n++ ? "," : "", t);
                owned += rows[t];
            }
        printf("embed  rank %d: %d table%s (%s), %lld rows, %.1f MiB owned\n", k, n, n == 1 ? "" : "s",
               n ? list : "none", (long long)owned, (double)(owned * row_bytes) / (1 << 20));
    }
    fflush(stdout);
    return ERASE_OK;
}
