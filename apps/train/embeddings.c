/*
 * erase-train's sharded embeddings (apps/train/embeddings.h).
 */
#include "apps/train/embeddings.h"

#include "lib/ops/ops.h"

#include <stdio.h>
#include <string.h>

erase_status_t train_embeddings_plan(const erase_model_config_t *cfg, const char *kind, const char *embedding_optimizer,
                                     int ranks, train_embeddings_t *out)
{
    memset(out, 0, sizeof *out);
    ERASE_CHECK(erase_shard_kind_parse("--embeddings", kind, &out->kind));
    if (out->kind == ERASE_SHARD_REPLICATED)
        return ERASE_OK;
    if (!erase_model_config_has_tables(cfg))
        return ERASE_ERROR(ERASE_ERR_INVALID, "--embeddings %s: the %s model has no per-field embedding tables to "
                           "shard (ctr has); use --embeddings replicated", kind, erase_model_config_name(cfg));
    int64_t rows[ERASE_CTR_FIELDS];
    for (int t = 0; t < ERASE_CTR_FIELDS; t++)
        rows[t] = cfg->ctr.table_rows[t];
    out->tables = ERASE_CTR_FIELDS;
    out->row_bytes = 4 * (int64_t)cfg->ctr.embedding_dim + (strcmp(embedding_optimizer, "rowwise_adagrad") ? 0 : 4);
    return erase_shard_plan(out->kind, out->tables, rows, NULL, out->row_bytes, ranks, 0, out->plan);
}

/* Append table t to a comma-separated list of `size` bytes. */
static void list_add(char *list, size_t size, int t)
{
    size_t len = strlen(list);
    snprintf(list + len, size - len, "%s%d", len ? "," : "", t);
}

void train_embeddings_kind_text(const train_embeddings_t *e, char *out, size_t size)
{
    int by_row = 0;
    for (int t = 0; t < e->tables; t++)
        by_row += e->plan[t].kind == ERASE_SHARD_ROW;
    if (e->kind == ERASE_SHARD_AUTO)
        snprintf(out, size, "auto (%d table%s row-wise, %d table-wise)", by_row, by_row == 1 ? "" : "s",
                 e->tables - by_row);
    else
        snprintf(out, size, "%s", by_row ? "row-wise" : "table-wise");
}

void train_embeddings_print(const train_embeddings_t *e, const erase_embed_shard_t *es, int ranks)
{
    char how[64];
    train_embeddings_kind_text(e, how, sizeof how);
    printf("  embed  %s over %d rank%s (%d tables; all-to-all at most %lld bytes per step per rank)\n", how, ranks,
           ranks == 1 ? "" : "s", e->tables, (long long)erase_embed_shard_bytes(es));
    for (int r = 0; r < ranks; r++) {
        char whole[4 * ERASE_FIELDS_MAX] = "", part[4 * ERASE_FIELDS_MAX] = "";
        int64_t held = 0;
        for (int t = 0; t < e->tables; t++) {
            int64_t n = erase_shard_rows_on(&e->plan[t], r);
            if (n == e->plan[t].rows)
                list_add(whole, sizeof whole, t);
            else if (n > 0)
                list_add(part, sizeof part, t);
            held += n;
        }
        double bytes = (double)held * (double)e->row_bytes;
        printf("  embed  rank %d: whole %s; part of %s; %lld rows, %.1f %s\n", r, whole[0] ? whole : "none",
               part[0] ? part : "none", (long long)held, bytes < (1 << 20) ? bytes / 1024 : bytes / (1 << 20),
               bytes < (1 << 20) ? "KiB" : "MiB");
    }
}
