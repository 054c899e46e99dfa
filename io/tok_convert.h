/*
 * Making token shards (io/tok_shard.h): the engines of `erase-convert text`
 * and `erase-convert tokens`.
 *
 * text: byte-level tokens (vocab 256, a token is a byte's value) of the
 * input files concatenated in the order given. The last
 * round(eval_fraction * B) of the B bytes (default 10%) go to OUT/eval,
 * the others to OUT/train, each a dataset with its own index.txt (like
 * erase-convert mnist): train with --train OUT/train --eval OUT/eval.
 * Every shard records bytes = count.
 * With a tokenizer (io/tokenizer.h, erase-tokenizer train): each input
 * file is a document: a <|bos|> token, then its text encoded in blocks of
 * text_block bytes cut where the ids of the parts are those of the whole
 * (erase_tokenizer_chunk_end), each on `threads` threads; the last
 * round(eval_fraction * N) of the N tokens go to OUT/eval. Every shard
 * records vocab = the tokenizer's, bytes = the text bytes of its tokens
 * (<|bos|> counts none), tokenizer = its identity and the dataset
 * /tokenizer_file = its file text (io/tok_shard_write.h): the data, and the
 * checkpoints trained on it, carry what decodes them.
 *
 * tokens: pre-tokenized files into OUT (one dataset, no split), in either
 *   llm.c's format: a header of 256 little-endian int32 (magic 20240520,
 *                   version 1, token count N, the rest unused) then N
 *                   uint16 tokens; the file must hold exactly 1024 + 2N bytes;
 *   nanoGPT's:      raw uint16 tokens, no header (told apart by the absence
 *                   of the magic); an even number of bytes; only with
 *                   `raw` (--raw): without it a file with no magic is
 *                   refused, as a damaged llm.c header (a near miss of the
 *                   magic), text, or a headerless file needing --raw.
 * Every token must be < vocab (default 50,257, GPT-2's). No `bytes`
 * attribute (the text they came from is unknown).
 *
 * Atomic output: every dataset is written under temporary names and renamed
 * only when all are complete (io/tok_shard_write.h; text: OUT/eval's index
 * first, OUT/train's last). A failed or interrupted conversion leaves no
 * shard and no index (and removes the directories it created).
 */
#ifndef ERASE_IO_TOK_CONVERT_H
#define ERASE_IO_TOK_CONVERT_H

#include <signal.h>
#include <stdint.h>
#include <stdio.h>

#include "io/tok_shard_write.h"
#include "lib/core/status.h"

#define ERASE_LLMC_MAGIC 20240520 /* llm.c's token file header */
#define ERASE_LLMC_VERSION 1
#define ERASE_GPT2_VOCAB 50257

typedef struct {
    const char *out_dir;              /* OUT: created if missing */
    int64_t shard_tokens;             /* tokens per shard (default 16,777,216, >= 2) */
    double eval_fraction;             /* text: the share of the bytes held out in OUT/eval (default 0.1; 0: none) */
    int64_t vocab;                    /* tokens: ids must be < vocab (default 50257; 1..65536) */
    erase_tok_write_options_t write;  /* chunk tokens, compression, converter attribute */
    int force;                        /* 1: replace datasets already in the output */
    int raw;                          /* tokens: 1: a file without llm.c's magic is raw uint16 (default 0: refused) */
    const volatile sig_atomic_t *cancel; /* if set and *cancel != 0: stop, clean up, ERASE_ERR_STATE */
    const erase_tokenizer_t *tokenizer; /* text: BPE tokens (below); NULL (default): byte-level */
    int threads;                     /* text with a tokenizer: encoding threads (default 2) */
    int64_t text_block;              /* text with a tokenizer: bytes read and encoded at once, cut where
                                      * erase_tokenizer_chunk_end says (default 16 MiB; >= 1) */
} erase_tok_convert_options_t;

typedef struct {
    int files;
    int64_t tokens;                  /* tokens read from the files */
    int64_t train_tokens, eval_tokens; /* text: tokens written to OUT/train, OUT/eval; tokens: all in train */
    int train_shards, eval_shards;
    int llmc_files, raw_files;       /* tokens: files with llm.c's header, raw files */
    double seconds;                  /* wall time */
} erase_tok_convert_summary_t;

/* Defaults as above; out_dir must be set. */
erase_tok_convert_options_t erase_tok_convert_options_default(void);

/*
 * Convert text files (any bytes) into OUT/train and OUT/eval. `summary`
 * (may be NULL) is filled as far as the conversion got. Errors:
 *   ERASE_ERR_IO      "F: cannot open: <reason>", "F: not a regular file", a shard not written
 *   ERASE_ERR_INVALID an eval fraction outside [0, 1); OUT/train or OUT/eval holds a dataset
 *                     and force is 0 ("OUT/train: already holds a dataset (index.txt); remove it or
 *                     replace it (--force)")
 *   ERASE_ERR_FORMAT  no bytes for training ("OUT/train: no tokens to write")
 *   ERASE_ERR_STATE   cancelled ("interrupted")
 */
erase_status_t erase_tok_convert_text(const char *const *files, int n, const erase_tok_convert_options_t *options,
                                      erase_tok_convert_summary_t *summary);

/*
 * Import token files (llm.c's or nanoGPT's format) into OUT. Errors, each
 * naming the file (ERASE_ERR_FORMAT unless said):
 *   "F: the header says 1000 tokens, the file holds 999"
 *   "F: llm.c header version 2, expected 1"
 *   "F: 1999 bytes: a raw token file (no llm.c header) holds uint16 tokens, an even number of bytes"
 *   without raw, a file with no magic:
 *   "F: llm.c magic 20240520 expected, got 20240521: damaged llm.c header?" (a near miss)
 *   "F: no llm.c header (magic 20240520) and the bytes look like text: erase-convert text converts
 *    text (--raw imports it as uint16 tokens anyway)"
 *   "F: no llm.c header (magic 20240520): a headerless file of uint16 tokens (nanoGPT's .bin) needs --raw"
 *   "F: token 17 is 50300, expected < 50257 (the vocab; --vocab V)"
 *   ERASE_ERR_IO (unreadable file, a shard not written), ERASE_ERR_INVALID (vocab, an old dataset),
 *   ERASE_ERR_STATE (cancelled)
 */
erase_status_t erase_tok_convert_tokens(const char *const *files, int n, const erase_tok_convert_options_t *options,
                                        erase_tok_convert_summary_t *summary);

/* Print a summary: files, tokens, the datasets and shards, speed. */
void erase_tok_convert_print(const erase_tok_convert_summary_t *s, const erase_tok_convert_options_t *options,
                             FILE *out);

#endif
