/*
 * Writing a dataset of token shards (schema in io/tok_shard.h) into a
 * directory: shards of at most a fixed number of tokens, each written
 * under a temporary name ("part-00000.h5.tmp", its `format` attribute
 * last, closed and fsynced), all renamed only by
 * erase_tok_dataset_writer_commit(), which then writes DIR/index.txt
 * (io/ctr_index.h; its counts are tokens) last. A writer freed without a
 * commit deletes its temporary files (and the directory if it created
 * it): a failed or interrupted conversion leaves no shard and no index.
 */
#ifndef ERASE_IO_TOK_SHARD_WRITE_H
#define ERASE_IO_TOK_SHARD_WRITE_H

#include <stdint.h>

#include "io/tok_shard.h"
#include "io/tokenizer.h"
#include "lib/core/status.h"

typedef struct {
    int64_t chunk_tokens;  /* chunk length along N (default 65536, >= 1) */
    int compress;          /* 1: shuffle + deflate level 1 (default); 0: none */
    int byte_level;        /* 1: each token is one byte of source text: every shard gets bytes = count;
                            * 0 (default): no `bytes` attribute (imported tokens) */
    const char *converter; /* text of the `converter` attribute (default "erase <version>") */
    const erase_tokenizer_t *tokenizer; /* BPE text (io/tokenizer.h): every shard gets bytes = the text bytes of
                            * its tokens (erase_tokenizer_count_bytes), tokenizer = its identity (16 hex
                            * digits) and the dataset /tokenizer_file = its file text; NULL (default): none */
} erase_tok_write_options_t;

typedef struct erase_tok_dataset_writer erase_tok_dataset_writer_t;

/* Defaults: 65,536-token chunks, compressed, not byte-level. */
erase_tok_write_options_t erase_tok_write_options_default(void);

/*
 * Prepare `dir` (io/ctr_dataset_write.h, erase_dataset_dir_prepare: created
 * if missing; an old dataset is an error unless `force`) for shards of at
 * most `shard_tokens` tokens (>= 2) of ids 0..vocab-1 (vocab 1..65536).
 * Errors: ERASE_ERR_INVALID (bad sizes; "DIR: already holds a dataset
 * (index.txt); remove it or replace it (--force)"), ERASE_ERR_IO,
 * ERASE_ERR_UNSUPPORTED (compression asked for and this HDF5 has no
 * deflate filter), ERASE_ERR_NOMEM.
 */
erase_status_t erase_tok_dataset_writer_open(const char *dir, int64_t vocab, int64_t shard_tokens,
                                             const erase_tok_write_options_t *options, int force,
                                             erase_tok_dataset_writer_t **out);

/*
 * Append tokens[n] that came from the file `source` (recorded in the
 * `source` attribute of every shard they land in). Shards are finished as
 * they fill. Errors: ERASE_ERR_INVALID ("DIR: token 17 of SOURCE is 300,
 * expected 0..255"), ERASE_ERR_STATE (after commit), ERASE_ERR_IO naming
 * the temporary file and dataset, ERASE_ERR_NOMEM.
 */
erase_status_t erase_tok_dataset_writer_append(erase_tok_dataset_writer_t *w, int64_t n, const uint16_t *tokens,
                                               const char *source);

/* Shards begun so far; tokens appended so far. */
int erase_tok_dataset_writer_shards(const erase_tok_dataset_writer_t *w);
int64_t erase_tok_dataset_writer_tokens(const erase_tok_dataset_writer_t *w);

/*
 * Finish the last shard, rename every shard to its final name, write
 * DIR/index.txt. Errors: ERASE_ERR_FORMAT ("DIR: no tokens to write"),
 * ERASE_ERR_STATE (twice), ERASE_ERR_IO.
 */
erase_status_t erase_tok_dataset_writer_commit(erase_tok_dataset_writer_t *w);

/* Release the writer; if it was not committed, every file it wrote is
 * deleted, and the directory too if it created it. NULL is allowed. */
void erase_tok_dataset_writer_free(erase_tok_dataset_writer_t *w);

#endif
