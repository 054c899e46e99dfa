/*
 * erase-inspect vocab FILE, and the vocabulary part of erase-inspect data
 * (io/vocab.h).
 */
#ifndef ERASE_APPS_INSPECT_VOCAB_H
#define ERASE_APPS_INSPECT_VOCAB_H

#include "io/ctr_index.h"
#include "io/ctr_stats.h"

/* `erase-inspect vocab VOCAB.h5` (argv[0] = "vocab"): the summary of a
 * vocabulary file (erase_vocab_print). Exit status: 0, 1, 2 (usage). */
int inspect_vocab_main(int argc, char **argv);

/* The summary of the vocabulary file `path`; 0, or 1 with the error printed
 * ("erase-inspect CMD: error: ..."). */
int inspect_vocab_file(const char *cmd, const char *path);

/*
 * When the dataset's shards carry a vocabulary (checked the same on every
 * shard: erase_vocab_tag_dataset), print per feature its table rows
 * (frequent ids + 1) and coverage: the share of the dataset's ids (every
 * id of a multi-hot feature) that are frequent (not the rare row
 * 0xFFFFFFFF), from the statistics `all` of every row. Nothing for a dataset without one. 0, or 1 with the error
 * printed.
 */
int inspect_vocab_dataset(const erase_ctr_list_t *list, const erase_ctr_stats_t *all);

#endif
