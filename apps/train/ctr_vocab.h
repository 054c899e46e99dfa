/*
 * The ctr model's tables and the data's vocabulary (io/vocab.h, issue 35):
 * shards converted with erase-convert criteo --vocab hold ids 0 .. V_f - 1
 * and the rare id 0xFFFFFFFF, so table f needs V_f + 1 rows.
 */
#ifndef ERASE_APPS_TRAIN_CTR_VOCAB_H
#define ERASE_APPS_TRAIN_CTR_VOCAB_H

#include "apps/train/run_state.h"

/*
 * Read the vocabulary tags of every shard of --train and --eval (or the
 * data of erase-score); they must all be the same (erase_vocab_tag_dataset:
 * one line naming both shards). Then, for `table_rows = "data"`, take the
 * tables' sizes from the tag (an error when the data has no vocabulary);
 * otherwise refuse a table smaller than the vocabulary needs:
 *   "--train D: table C5 has 20 rows, the data's vocabulary 8d8c6b380d75d296
 * (threshold 3) needs 24 (its frequent ids + 1): set ctr.table_rows = \"data\"
 * in the model file"
 *   "--train D: ctr.table_rows = \"data\": the data has no vocabulary
 * (converted without erase-convert criteo --vocab); give the table sizes"
 * Errors: ERASE_ERR_INVALID as above; a mismatch of erase_vocab_tag_same.
 * Data that cannot be read is left to the reader to report (its messages
 * name the option), except with "data", which needs it: "--train D:
 * ctr.table_rows = \"data\": <why>".
 */
erase_status_t ctr_vocab_tables(run_t *r);

/* ctr_vocab_tables for the model `cfg` (not r's): the model a --model file
 * with table_rows = "data" asks for, resolved against the run's data before
 * it is compared with a checkpoint's (--init-from a model of a day converted
 * with the same vocabulary). Errors: those of ctr_vocab_tables. */
erase_status_t ctr_vocab_tables_of(const run_t *r, erase_model_config_t *cfg);

#endif
