/*
 * erase-convert vocab: the counting pass of a frequency-thresholded
 * vocabulary (io/vocab.h, io/vocab_count.h), and the loading of one for
 * erase-convert criteo --vocab.
 */
#ifndef ERASE_APPS_CONVERT_VOCAB_H
#define ERASE_APPS_CONVERT_VOCAB_H

#include "io/criteo_convert.h"
#include "io/vocab.h"

/*
 * `erase-convert vocab --threshold T -o VOCAB.h5 [--force] [-q] FILE...`
 * (argv[0] = "vocab"); under mpirun the files are split over the ranks
 * (file i counted by rank i mod N), the counts merged exactly, rank 0
 * writes the file. Exit status: 0, 1 (failed: nothing written), 2 (usage).
 */
int convert_vocab_main(int argc, char **argv);

/*
 * Read the vocabulary `path` into `v` and point the options at it: o->vocab,
 * o->write.vocab_digest, vocab_threshold and vocab_table_rows (= `rows`
 * [26], filled here; `v` and `rows` must outlive the conversion). Errors:
 * those of erase_vocab_read.
 */
erase_status_t convert_vocab_use(const char *path, erase_vocab_t *v, int64_t *rows, erase_criteo_convert_options_t *o);

#endif
