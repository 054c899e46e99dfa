/*
 * Converting Criteo click logs (io/criteo_parse.h) into a dataset of CTR
 * shards (io/ctr_shard.h, io/ctr_index.h): the engine of `erase-convert
 * criteo`.
 *
 * Inputs are plain or gzip (detected from the content), each in the raw
 * TSV or the CSV-with-header layout. They are cut into units
 * (io/convert_plan.h: a whole file, or a byte range of `split_bytes` of a
 * large plain file), and the units are converted by the ranks of the MPI
 * job (io/convert_ranks.h; one rank without MPI). Each unit's rows go, in
 * input order, into its own shards of `shard_rows` rows (the unit's last
 * shard may be shorter; a shard holds rows of one input, named in its
 * `source_files` attribute), named OUT/part-00000.h5, part-00001.h5, ...
 * in unit order. The units, hence the shards' names, rows and bytes, and
 * the index, do not depend on the number of ranks.
 *
 * Atomic output: every shard is written under a temporary name
 * (.unit-UUUUU-KKKKK.h5.tmp: unit, shard in the unit) and all are renamed
 * only after every rank read its last unit without error (the ranks
 * agree, then rank 0 deletes an old dataset with `force`, every rank
 * renames its shards, and rank 0 writes OUT/index.txt, atomically, last).
 * A failure on any rank is every rank's: the message of the failure in
 * the first unit (input order) is relayed to every rank, and every rank
 * deletes its files. A failed
 * or interrupted conversion deletes its temporary files and leaves no
 * shard or index that looks valid (after a crash, only *.tmp files without
 * a `format` attribute remain; the next conversion replaces them).
 */
#ifndef ERASE_IO_CRITEO_CONVERT_H
#define ERASE_IO_CRITEO_CONVERT_H

#include <signal.h>
#include <stdint.h>
#include <stdio.h>

#include "io/criteo_parse.h"
#include "io/ctr_shard_write.h"
#include "io/ctr_stats.h"
#include "io/vocab.h"
#include "lib/core/status.h"

typedef struct {
    const char *out_dir;              /* created if missing */
    int64_t shard_rows;               /* rows per shard (default 1048576, >= 1) */
    int64_t split_bytes;              /* bytes per range of a large plain input (default 256 MB, >= 1) */
    erase_ctr_write_options_t write;  /* chunk rows, compression, converter attribute */
    erase_criteo_format_t format;     /* every input's layout (default: detect per file) */
    int skip_bad;                     /* 1: count and skip bad lines; 0: stop at the first (default) */
    int force;                        /* 1: replace a dataset already in out_dir */
    FILE *progress;                   /* rank 0's progress lines, at most one per second (NULL: none) */
    const volatile sig_atomic_t *cancel; /* if set and *cancel != 0: stop, clean up, ERASE_ERR_STATE */
    /* Map every id through this vocabulary (io/vocab.h; NULL: store the
     * ids as parsed); the caller also sets write.vocab_* (its tag). */
    const erase_vocab_t *vocab;
    const char *vocab_path; /* its file, named in messages */
    /* Refuse (nothing published) when the share of the inputs' ids that the
     * vocabulary knows as frequent is below min_vocab_coverage x the share
     * on the days it was counted from (erase_vocab_coverage): a vocabulary
     * of another dataset (another hash, another feature order) knows almost
     * none. Default 0.5; 0 never refuses. */
    double min_vocab_coverage;
} erase_criteo_convert_options_t;

#define ERASE_CRITEO_MESSAGE_MAX 512

typedef struct {
    int64_t lines;      /* data lines read (CSV headers not counted) */
    int64_t rows;       /* rows written */
    int64_t skipped;    /* bad lines skipped (skip_bad) */
    int64_t bad[ERASE_CRITEO_BAD_KINDS];  /* skipped lines by reason ([0] unused) */
    char first_bad[ERASE_CRITEO_BAD_KINDS][ERASE_CRITEO_MESSAGE_MAX]; /* first message per reason */
    int64_t remapped;   /* ffffffff tokens stored as fffffffe */
    int shards;
    int64_t input_bytes; /* bytes of text read (after decompression) */
    int64_t vocab_ids;      /* with a vocabulary: ids mapped ... */
    int64_t vocab_frequent; /* ... and of them frequent (not the rare row) */
    double seconds;     /* wall time of the conversion */
    erase_ctr_stats_t stats; /* of the rows written */
} erase_criteo_convert_summary_t;

/* Defaults: 1048576-row shards, 1024-row chunks, compressed, detect the
 * layout, stop at the first bad line, no progress. out_dir must be set. */
erase_criteo_convert_options_t erase_criteo_convert_options_default(void);

/*
 * Convert `n` input files. `summary` (may be NULL) is filled also on
 * failure, as far as the conversion got. Errors:
 *   ERASE_ERR_FORMAT  a bad line without skip_bad: "FILE:LINE: <the parser's message>",
 *                     e.g. "day_0.gz:1234: field I3: expected an integer, got '12x'"; in a
 *                     file cut into ranges also the byte where the line starts,
 *                     "day_0:1234 (byte 307812): ..." (the line number is counted
 *                     from the file's start once the line is found bad);
 *                     a CSV input whose first line is not the header:
 *                     "FILE:1: expected the header label,I1..I13,C1..C26, got '...'";
 *                     "FILE:LINE: line longer than 4194304 bytes";
 *                     no rows at all: "F: no rows to write: every line was bad or the input is empty"
 *                     (F the first input, " and the other inputs" after it when n > 1)
 *   ERASE_ERR_IO      an input cannot be opened or read ("FILE: cannot open: <reason>",
 *                     "FILE: gzip: <zlib's reason>"; a damaged or truncated member:
 *                     "FILE: gzip member 2 (at byte 5120) is damaged or truncated:
 *                     <zlib's reason>"), out_dir cannot be created,
 *                     a shard cannot be written
 *   ERASE_ERR_INVALID bad options; out_dir holds a dataset and force is 0:
 *                     "OUT: already holds a dataset (index.txt); remove it or replace it (--force)"
 *   ERASE_ERR_STATE   cancelled ("interrupted")
 */
erase_status_t erase_criteo_convert(const char *const *inputs, int n,
                                    const erase_criteo_convert_options_t *options,
                                    erase_criteo_convert_summary_t *summary);

/* Print a summary: rows, lines, skipped lines by reason (with the first
 * message of each), remapped ids, shards, speed, then the statistics
 * (erase_ctr_stats_print). */
void erase_criteo_convert_print(const erase_criteo_convert_summary_t *s, FILE *out);

#endif
