/*
 * The counting pass of a vocabulary (io/vocab.h): every 32-bit id of each
 * categorical feature C1..C26 of Criteo TSV files, counted exactly, over
 * the ranks of an MPI communicator, then merged into one vocabulary.
 *
 * Input: Criteo TSV, plain or gzip (detected from the content), each line
 * parsed as erase-convert criteo parses it (erase_criteo_parse_line_ids,
 * io/criteo_parse.h: the same ids, the same messages): a categorical field
 * holds one or more ids separated by ',' (multi-hot; each counted); an
 * empty field is one missing id 0xFFFFFFFF, counted as a token. A bad line
 * is an error: "F:LINE: expected 40 tab-separated fields (label, I1-I13,
 * C1-C26), got 39".
 *
 * Memory: one open-addressing table per feature of 16 bytes a slot, kept
 * at most half full: about 32 bytes per distinct (feature, id) a rank
 * has seen (plus, while merging, the same again for the ids a rank owns),
 * so memory grows with the distinct ids of the files a rank counts, not
 * with their rows.
 *
 * Merge (erase_vocab_count_merge): each rank sends every (id, count) to
 * the id's owner (a hash of the id modulo the ranks; MPI_Alltoallv), the
 * owner sums them exactly (uint64) and keeps the ids with count >= T,
 * rank 0 gathers those (MPI_Gatherv) and numbers them (erase_vocab_number).
 * The result depends only on the multiset of ids counted: the same files on
 * any number of ranks give the same vocabulary.
 */
#ifndef ERASE_IO_VOCAB_COUNT_H
#define ERASE_IO_VOCAB_COUNT_H

#include <mpi.h>
#include <stdint.h>

#include "io/vocab.h"
#include "lib/core/status.h"

typedef struct erase_vocab_counter erase_vocab_counter_t;

/* Empty counts. Errors: ERASE_ERR_NOMEM. */
erase_status_t erase_vocab_counter_new(erase_vocab_counter_t **out);

/* Free (NULL is allowed). */
void erase_vocab_counter_free(erase_vocab_counter_t *c);

/* Count one id of feature f (0-based). Errors: ERASE_ERR_NOMEM. */
erase_status_t erase_vocab_counter_add(erase_vocab_counter_t *c, int f, uint32_t id, uint64_t count);

/* Lines counted so far (all files). */
int64_t erase_vocab_counter_lines(const erase_vocab_counter_t *c);

/*
 * Count the ids of one file (plain or gzip TSV, as above). Errors:
 * ERASE_ERR_IO ("F: cannot open: <reason>", "F: gzip: <zlib's reason>"),
 * ERASE_ERR_FORMAT (a bad line, as above; "F:LINE: line longer than
 * 4194304 bytes"), ERASE_ERR_NOMEM.
 */
erase_status_t erase_vocab_count_file(erase_vocab_counter_t *c, const char *path);

/*
 * Merge the counts of every rank of `comm` (collective: every rank calls
 * it) and, on rank 0, fill `out` (threshold, frequent ids, rows, counts,
 * tokens, distinct, digest; sources left NULL). On other ranks `out` is
 * zeroed. Errors: ERASE_ERR_NOMEM, ERASE_ERR_IO (an MPI failure); a rank's
 * failure is that rank's (the others may then hang: agree on failures
 * before calling it).
 */
erase_status_t erase_vocab_count_merge(erase_vocab_counter_t *c, MPI_Comm comm, int64_t threshold, erase_vocab_t *out);

#endif
