#include "apps/train/ctr_vocab.h"

#include "io/ctr_index.h"
#include "io/vocab.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

/* The shard paths of a comma-separated list, appended to *paths [*n]. */
static erase_status_t add_shards(const char *opt, const char *text, char ***paths, int *n)
{
    char buf[1024];
    const char *in[MAX_INPUTS];
    int k;
    ERASE_CHECK(split_inputs(opt, text, buf, sizeof buf, in, &k));
    erase_ctr_list_t list;
    ERASE_CHECK(erase_ctr_list_resolve(in, k, &list));
    char **more = realloc(*paths, sizeof **paths * (size_t)(*n + list.count));
    erase_status_t st = ERASE_OK;
    if (!more)
        st = ERASE_ERROR(ERASE_ERR_NOMEM, "out of memory for the list of shards");
    else
        *paths = more;
    for (int i = 0; st == ERASE_OK && i < list.count; i++)
        if (!((*paths)[(*n)++] = strdup(list.paths[i])))
            st = ERASE_ERROR(ERASE_ERR_NOMEM, "out of memory for the list of shards");
    erase_ctr_list_free(&list);
    return st;
}

erase_status_t ctr_vocab_tables(run_t *r)
{
    const train_options_t *o = r->o;
    const char *train = o->train[0] ? o->train : o->eval;
    const char *opt = run_data_option(r, !o->train[0]);
    if (!train[0])
        return ERASE_OK; /* no data named: the options' own check reports it */
    char **paths = NULL;
    int n = 0;
    erase_status_t st = add_shards(opt, train, &paths, &n);
    if (st == ERASE_OK && o->train[0] && o->eval[0])
        st = add_shards(run_data_option(r, 1), o->eval, &paths, &n);
    erase_vocab_tag_t tag;
    if (st == ERASE_OK)
        st = erase_vocab_tag_dataset((const char *const *)paths, n, &tag);
    for (int i = 0; i < n; i++)
        free(paths[i]);
    free(paths);
    ERASE_CHECK(st);
    erase_model_config_t *cfg = &r->cfg;
    if (cfg->ctr.table_rows_from_data) {
        if (!tag.present)
            return ERASE_ERROR(ERASE_ERR_INVALID,
                               "%s %s: ctr.table_rows = \"data\": the data has no "
                               "vocabulary (converted without "
                               "erase-convert criteo --vocab); give the table sizes",
                               opt, train);
        for (int f = 0; f < ERASE_CTR_FIELDS; f++)
            cfg->ctr.table_rows[f] = (uint32_t)tag.table_rows[f];
        cfg->ctr.table_rows_from_data = 0;
        return ERASE_OK;
    }
    for (int f = 0; tag.present && f < ERASE_CTR_FIELDS; f++)
        if ((int64_t)cfg->ctr.table_rows[f] < tag.table_rows[f])
            return ERASE_ERROR(ERASE_ERR_INVALID,
                               "%s %s: table C%d has %" PRIu32 " rows, the data's vocabulary %s (threshold %" PRId64
                               ") needs %" PRId64 " (its frequent ids + 1): set ctr.table_rows = \"data\" in the "
                               "model file",
                               opt, train, f + 1, cfg->ctr.table_rows[f], tag.digest, tag.threshold, tag.table_rows[f]);
    return ERASE_OK;
}
