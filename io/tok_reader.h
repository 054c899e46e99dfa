/*
 * The token-window row format of the data reader (io/reader.h: order, rank
 * split, splits, epochs, cursor, prefetch; "Windows") and a typed view of
 * its batches, for the lm task.
 *
 * A row is a window of T+1 tokens of one shard (T = the model's context,
 * given when the format is made): window k of a shard of N tokens holds
 * tokens [k*T, k*T + T + 1), so windows start every T tokens and the
 * inputs (the first T tokens) of two windows never overlap; the last token
 * of window k is the first of window k+1 (it is k's last target). A shard
 * has floor((N - 1) / T) windows (0 when N <= T); tokens after its last
 * window are not read, and no window crosses from one shard into the next.
 * The reader's blocks, shuffle (a seeded permutation of window starts per
 * epoch, independent of the number of ranks), rank split, train/eval
 * split and cursor apply to windows unchanged; evaluation reads the eval
 * part's windows in file order, the same on any number of ranks.
 *
 * Fields of a batch of n windows:
 *   field 0  tokens  int32  [n, T+1]  the window's token ids, 0..V-1
 * Parameters every shard must agree on: "vocab" = V, and
 * "bytes_per_mtoken": the bytes of source text per million tokens,
 * round(1e6 * bytes / count) (byte-level text: 1,000,000), 0 when the
 * shards have no `bytes` attribute (imported tokens) or have a tokenizer
 * (BPE text: each shard's ratio differs; the lm task counts the bytes of
 * each token evaluated, io/tok_data_tokenizer.h).
 */
#ifndef ERASE_IO_TOK_READER_H
#define ERASE_IO_TOK_READER_H

#include <stdint.h>

#include "io/reader.h"
#include "io/tok_shard.h"
#include "lib/core/status.h"

/* The field's and parameters' indices (erase_reader_batch_t.field,
 * erase_row_layout_t.param). */
enum { ERASE_TOK_FIELD_TOKENS = 0 };
enum { ERASE_TOK_PARAM_VOCAB = 0, ERASE_TOK_PARAM_BYTES_PER_MTOKEN };

/*
 * Make the token-window row format for windows of context + 1 tokens into
 * *format: `context` (T >= 1) must outlive the format, which must outlive
 * the readers opened with it (erase_reader_open). The format's open
 * (through erase_tok_shard_open: its errors) fails with ERASE_ERR_INVALID
 * when *context < 1.
 */
void erase_tok_rows_init(erase_row_format_t *format, const int *context);

/* 1 if `format` is a token-window format (made by erase_tok_rows_init). */
int erase_tok_rows_is(const erase_row_format_t *format);

/*
 * T, V and the bytes of source text per token (NaN when unknown) of a
 * reader opened with a token-window format; ERASE_ERR_INVALID ("the data
 * is ctr data, not token windows") for a reader of another format.
 */
erase_status_t erase_tok_reader_shape(const erase_reader_t *r, int64_t *context, int64_t *vocab,
                                      double *bytes_per_token);

/*
 * Check the data against a model of `vocab` token ids and a context of
 * `context` positions: ERASE_ERR_INVALID "the data's vocab 50257 is larger
 * than the model's 256 (its embedding has 256 rows)", "the data was opened
 * with windows of 65 tokens, the model's context is 128", or the error of
 * erase_tok_reader_shape.
 */
erase_status_t erase_tok_reader_check(const erase_reader_t *r, int64_t vocab, int64_t context);

#endif
