/*
 * Frequency-thresholded vocabularies of the 26 categorical features of
 * Criteo data (DESIGN.md, "Data and files"; docs/data.md, "Vocabularies
 * for daily data").
 *
 * A vocabulary is built from the counts of every 32-bit id of each feature
 * over some days (io/vocab_count.h): the ids of feature f seen at least T
 * times (the threshold) are its frequent ids, numbered 0 .. V_f - 1 in
 * DESCENDING COUNT, TIES BY ASCENDING ID (deterministic; the most frequent
 * id gets row 0). Every other id (rare, or unseen when the vocabulary was
 * counted) maps to ERASE_VOCAB_RARE = 0xFFFFFFFF, the id that
 * erase_embedding_row (lib/ops/ops.h) sends to a table's last row. A
 * converted feature therefore needs a table of V_f + 1 rows (at least 2:
 * a feature without frequent ids keeps a row 0 that no id uses). The
 * missing value (ERASE_CTR_SPARSE_MISSING, an empty field) is counted as a
 * token like any id: when it is frequent it gets its own row, otherwise it
 * shares the rare row.
 *
 * Reference: DLRM's Criteo preprocessing (facebookresearch/dlrm,
 * data_utils.py, getCriteoAdData) gives every distinct id of a feature its
 * own index (a dictionary filled in order of first appearance, missing
 * values read as the token "0"), i.e. threshold 1 in first-seen order;
 * the frequency threshold that gives ids seen fewer than T times one
 * shared index is the "frequency limit" of NVIDIA's DLRM preprocessing
 * (NVIDIA/DeepLearningExamples, DLRM_and_DCNv2, doc/criteo_dataset.md:
 * `prepare_dataset.sh DGX2 3`, 15, or 0 for none). erase follows both in
 * what is mapped, and chooses its own order (by count then id, so the same
 * counts give the same rows on any number of ranks), keeps the 32-bit
 * hashes (not the raw strings) and puts the shared index in the table's
 * LAST row (the rare row, the row erase_embedding_row gives 0xFFFFFFFF).
 *
 * File (HDF5, `format = "erase-vocab-1"`), written under a temporary name,
 * fsynced and renamed:
 *   root attributes  format = "erase-vocab-1"    (string, written last)
 *                    threshold = T               (int64 >= 1)
 *                    features = 26               (int64)
 *                    digest                      (string: 16 hex digits, FNV-1a
 * 64 of the threshold and every feature's ids, rows and counts: the
 * vocabulary's identity) source_files                (string, the counted
 * files, one per line) frequent = [V_1 .. V_26]    (int64 [26]) table_rows =
 * [max(V_f + 1, 2)] (int64 [26]) tokens = [..]               (int64 [26]: ids
 * counted per feature) distinct = [..]             (int64 [26]: distinct ids
 * counted) description                 (string, this layout in words) /C<f>/ids
 * uint32 [V_f]  the frequent ids, ascending (binary search) /C<f>/rows uint32
 * [V_f]  the row of each id /C<f>/counts  uint64 [V_f]  its count
 *
 * Shards converted with a vocabulary (io/criteo_convert.h) carry the root
 * attributes vocab_digest (string), vocab_threshold (int64) and
 * vocab_table_rows (int64 [26]).
 */
#ifndef ERASE_IO_VOCAB_H
#define ERASE_IO_VOCAB_H

#include <stdint.h>
#include <stdio.h>

#include "io/ctr_shard.h"
#include "lib/core/status.h"

#define ERASE_VOCAB_FORMAT "erase-vocab-1"
#define ERASE_VOCAB_FIELDS ERASE_CTR_SHARD_FIELDS /* 26 */
#define ERASE_VOCAB_RARE 0xFFFFFFFFu              /* the rare row's id (ERASE_CTR_SPARSE_MISSING) */
#define ERASE_VOCAB_DIGEST_CHARS 16

typedef struct {
    int64_t threshold;                    /* T >= 1 */
    int64_t frequent[ERASE_VOCAB_FIELDS]; /* V_f */
    int64_t tokens[ERASE_VOCAB_FIELDS];   /* ids counted per feature (missing
                                             included) */
    int64_t distinct[ERASE_VOCAB_FIELDS]; /* distinct ids counted per feature */
    uint32_t *ids[ERASE_VOCAB_FIELDS];    /* [V_f] frequent ids, ascending */
    uint32_t *rows[ERASE_VOCAB_FIELDS];   /* [V_f] their rows, a permutation of 0 ..
                                             V_f - 1 */
    uint64_t *counts[ERASE_VOCAB_FIELDS]; /* [V_f] their counts (>= T) */
    char digest[ERASE_VOCAB_DIGEST_CHARS + 1];
    char *sources; /* the counted files, one per line (malloc'ed; may be NULL) */
    /* Lookup tables of erase_vocab_map, built by erase_vocab_read: open
     * addressing (linear probing), at most half full, a slot
     * (id << 32) | (row + 1), 0 = empty; [index_mask[f] + 1] slots. */
    uint64_t *index[ERASE_VOCAB_FIELDS];
    uint64_t index_mask[ERASE_VOCAB_FIELDS];
} erase_vocab_t;

/* The table size that a feature of V frequent ids needs: max(V + 1, 2). */
int64_t erase_vocab_table_rows(int64_t frequent);

/*
 * Number the frequent ids of feature f: on entry ids [n] (ascending,
 * distinct) and counts [n]; assigns rows[k] (descending count, ties by
 * ascending id) into `rows` [n]. Errors: ERASE_ERR_NOMEM.
 */
erase_status_t erase_vocab_number(int64_t n, const uint32_t *ids, const uint64_t *counts, uint32_t *rows);

/* Compute v->digest from the threshold and the features' arrays. */
void erase_vocab_set_digest(erase_vocab_t *v);

/* Free the arrays of `v` and zero it (a zeroed one: nothing). */
void erase_vocab_free(erase_vocab_t *v);

/*
 * Write `v` to `path` atomically ("<path>.tmp", format last, fsync,
 * rename). Errors: ERASE_ERR_IO naming the temporary file ("P.tmp: cannot
 * create: <HDF5's reason>", "P.tmp: cannot write /C3/ids") or the rename.
 */
erase_status_t erase_vocab_write(const erase_vocab_t *v, const char *path);

/*
 * Read and validate a vocabulary file. Errors (ERASE_ERR_IO for a file that
 * cannot be opened, ERASE_ERR_FORMAT otherwise), one line naming the file:
 *   "F: not an HDF5 file or damaged (truncated?): expected an erase-vocab-1
 * vocabulary" "F: not a vocabulary: no attribute 'format', expected
 * \"erase-vocab-1\"" "F: attribute format: expected \"erase-vocab-1\", got
 * \"erase-ctr-1\"" "F: attribute features: expected 26 categorical features,
 * got 20" "F: attribute threshold: expected an integer >= 1" "F: dataset
 * /C3/ids: expected uint32 [V] with V = frequent[2] = 12" "F: dataset /C3/ids:
 * not ascending at index 5" "F: dataset /C3/rows: expected a permutation of 0
 * .. 11" "F: attribute digest: expected 0123456789abcdef (the content's), got
 * ..."
 */
erase_status_t erase_vocab_read(const char *path, erase_vocab_t *v);

/* The row of id `id` of feature f (0-based): its number if frequent, else
 * ERASE_VOCAB_RARE. A hash lookup (O(1) expected) in the tables that
 * erase_vocab_read builds: `v` must come from it. */
uint32_t erase_vocab_map(const erase_vocab_t *v, int f, uint32_t id);

/* Map the ids of one row in place: ids feature by feature, lengths[f] of
 * feature f (>= 1; one-hot: all 1), as a multi-hot row is stored
 * (io/ctr_shard.h). Returns how many of them are frequent (not mapped to
 * the rare row). */
int64_t erase_vocab_map_ids(const erase_vocab_t *v, const uint32_t *lengths, uint32_t *ids);

/* The share of the ids counted into `v` (its own days, every feature
 * together) that are frequent: sum of the frequent ids' counts / tokens;
 * 0 for an empty vocabulary. */
double erase_vocab_coverage(const erase_vocab_t *v);

/* Print the summary: file, digest, threshold, sources, and per feature
 * tokens, distinct ids, frequent ids V_f, table rows, and the share of the
 * counted tokens that the frequent ids cover. */
void erase_vocab_print(const erase_vocab_t *v, const char *path, FILE *out);

/* The vocabulary attributes of a shard (see above). */
typedef struct {
    int present; /* 0: the shard was converted without a vocabulary */
    char digest[ERASE_VOCAB_DIGEST_CHARS + 1];
    int64_t threshold;
    int64_t table_rows[ERASE_VOCAB_FIELDS];
} erase_vocab_tag_t;

/*
 * Read the vocabulary attributes of the CTR shard at `path`. Errors:
 * those of erase_ctr_shard_open; ERASE_ERR_FORMAT "F: attribute
 * vocab_table_rows: expected 26 integers >= 2" when present but bad.
 */
erase_status_t erase_vocab_tag_read(const char *path, erase_vocab_tag_t *tag);

/*
 * ERASE_OK when shard `path` (tag `t`) has the same vocabulary as the first
 * shard `first` (tag `f`), else ERASE_ERR_FORMAT naming both (below).
 */
erase_status_t erase_vocab_tag_same(const char *path, const erase_vocab_tag_t *t, const char *first,
                                    const erase_vocab_tag_t *f);

/*
 * The vocabulary of a dataset: the tag of its first shard `paths[0]`,
 * checked equal on every shard. Errors: those of erase_vocab_tag_read;
 * ERASE_ERR_FORMAT naming both shards:
 *   "B: converted with vocabulary 0123456789abcdef (threshold 2), the first
 * shard A with none: every shard of a dataset must use the same vocabulary"
 */
erase_status_t erase_vocab_tag_dataset(const char *const *paths, int n, erase_vocab_tag_t *tag);

#endif
