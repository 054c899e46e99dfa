#include "apps/train/ctr_vocab.h"

#include "io/ctr_index.h"
#include "io/vocab.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

/*
 * The vocabulary tags of the shards of a comma-separated list, each checked
 * the same as the first shard's (*tag, *first: set by the first shard seen,
 * *n counts them; a mismatch in *st). 1 when the list or a shard cannot be
 * read (its error recorded).
 */
static int add_tags(const char *opt, const char *text, char *first, size_t size, erase_vocab_tag_t *tag, int *n,
                    erase_status_t *st)
{
    char buf[1024];
    const char *in[MAX_INPUTS];
    int k;
    erase_ctr_list_t list;
    if (split_inputs(opt, text, buf, sizeof buf, in, &k) != ERASE_OK ||
        erase_ctr_list_resolve(in, k, &list) != ERASE_OK) {
        return 1;
    }
    int unread = 0;
    for (int i = 0; *st == ERASE_OK && i < list.count; i++) {
        erase_vocab_tag_t t;
        if (erase_vocab_tag_read(list.paths[i], &t) != ERASE_OK) {
            unread = 1;
            break;
        }
        if ((*n)++ == 0) {
            *tag = t;
            snprintf(first, size, "%s", list.paths[i]);
        } else {
            *st = erase_vocab_tag_same(list.paths[i], &t, first, tag);
        }
    }
    erase_ctr_list_free(&list);
    return unread;
}

erase_status_t ctr_vocab_tables(run_t *r)
{
    return ctr_vocab_tables_of(r, &r->cfg);
}

erase_status_t ctr_vocab_tables_of(const run_t *r, erase_model_config_t *cfg)
{
    const train_options_t *o = r->o;
    const char *train = o->train[0] ? o->train : o->eval;
    const char *opt = run_data_option(r, !o->train[0]);
    if (!train[0])
        return ERASE_OK; /* no data named: the options' own check reports it */
    char first[4200] = "";
    erase_vocab_tag_t tag = {0};
    erase_status_t st = ERASE_OK;
    int n = 0;
    if (add_tags(opt, train, first, sizeof first, &tag, &n, &st) ||
        (st == ERASE_OK && o->train[0] && o->eval[0] &&
         add_tags(run_data_option(r, 1), o->eval, first, sizeof first, &tag, &n, &st))) {
        if (!cfg->ctr.table_rows_from_data) {
            erase_error_clear(); /* the reader names unreadable data better, with its option */
            return ERASE_OK;
        }
        char why[2048];
        snprintf(why, sizeof why, "%s", erase_error_reason());
        return ERASE_ERROR(ERASE_ERR_INVALID, "%s %s: %s.table_rows = \"data\": %s", opt, train,
                           erase_model_config_name(cfg), why);
    }
    ERASE_CHECK(st);
    if (cfg->ctr.table_rows_from_data) {
        if (!tag.present)
            return ERASE_ERROR(ERASE_ERR_INVALID,
                               "%s %s: %s.table_rows = \"data\": the data has no "
                               "vocabulary (converted without "
                               "erase-convert criteo --vocab); give the table sizes",
                               opt, train, erase_model_config_name(cfg));
        for (int f = 0; f < ERASE_CTR_FIELDS; f++)
            cfg->ctr.table_rows[f] = (uint32_t)tag.table_rows[f];
        cfg->ctr.table_rows_from_data = 0;
        return ERASE_OK;
    }
    for (int f = 0; tag.present && f < ERASE_CTR_FIELDS; f++)
        if ((int64_t)cfg->ctr.table_rows[f] < tag.table_rows[f])
            return ERASE_ERROR(ERASE_ERR_INVALID,
                               "%s %s: table C%d has %" PRIu32 " rows, the data's vocabulary %s (threshold %" PRId64
                               ") needs %" PRId64 " (its frequent ids + 1): set %s.table_rows = \"data\" in the "
                               "model file",
                               opt, train, f + 1, cfg->ctr.table_rows[f], tag.digest, tag.threshold, tag.table_rows[f],
                               erase_model_config_name(cfg));
    return ERASE_OK;
}
