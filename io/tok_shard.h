/*
 * Token shards: HDF5 files of one token stream each (DESIGN.md, "Data and
 * files"; the gpt model's lm task), opened read-only and validated.
 *
 * Schema (format "erase-tok-1"), N tokens of a vocabulary of V ids:
 *   root attributes  format = "erase-tok-1"   (string, written last)
 *                    vocab = V                (uint32, 1..65536: ids 0..V-1)
 *                    count = N                (int64, tokens in /tokens)
 *                    bytes                    (int64, bytes of source text the N tokens encode;
 *                                              byte-level text: = N; absent for imported tokens)
 *                    tokenizer                (string, 16 hex digits: the identity of the BPE
 *                                              tokenizer (io/tokenizer.h) that made the tokens;
 *                                              absent: byte-level text or imported tokens)
 *                    source                   (string, the source files, one per line)
 *                    converter                (string, e.g. "erase 0.1.0")
 *                    description              (string, this schema in words)
 *   /tokens  uint16 [N]  the token ids, each < V
 *   /tokenizer_file  uint8 [n]  with `tokenizer` only: the tokenizer file's
 *                    text (docs/tokenizer.md; a dataset: attributes hold at
 *                    most 64 KiB here, a vocab of 65536 takes about 1 MB)
 * /tokens is chunked along N (65,536 tokens by default), optionally
 * compressed (shuffle + deflate level 1), and every chunk carries a
 * Fletcher32 checksum (HDF5's filter, verified on every read), as CTR and
 * classification shards (io/h5_rows.h). A directory of shards has an
 * index.txt (io/ctr_index.h) whose row counts are token counts.
 */
#ifndef ERASE_IO_TOK_SHARD_H
#define ERASE_IO_TOK_SHARD_H

#include <stdint.h>

#include "lib/core/status.h"

#define ERASE_TOK_FORMAT "erase-tok-1"
#define ERASE_TOK_MAX_VOCAB 65536 /* tokens are uint16 */

typedef struct erase_tok_shard erase_tok_shard_t;

/*
 * Open a shard read-only and validate it. Errors, each naming the file:
 *   ERASE_ERR_IO      "F: cannot open: No such file or directory"
 *   ERASE_ERR_FORMAT  "F: not an HDF5 file or damaged (truncated?): <HDF5's reason>"
 *                     "F: not an erase token shard: no attribute 'format' on the root group"
 *                     "F: attribute format: expected \"erase-tok-1\", got \"erase-ctr-1\""
 *                     "F: attribute count: expected an integer >= 0"
 *                     "F: attribute vocab: expected an integer in 1..65536"
 *                     "F: attribute bytes: expected an integer >= 0 (or no attribute)"
 *                     "F: attribute tokenizer: expected 16 hex digits (or no attribute)"
 *                     "F: dataset /tokens: expected shape [1000] (rows = 1000), got [999]"
 *                     "F: dataset /tokens: expected uint16, got float32"
 *   ERASE_ERR_NOMEM
 */
erase_status_t erase_tok_shard_open(const char *path, erase_tok_shard_t **out);

/* 1 if `path` is an HDF5 file whose root attribute `format` is
 * "erase-tok-1", else 0 (no error recorded): for tools (erase-inspect). */
int erase_tok_shard_probe(const char *path);

/* Close a shard (NULL is allowed). */
void erase_tok_shard_close(erase_tok_shard_t *shard);

/* The path it was opened with; tokens N; vocabulary V; bytes of source
 * text (-1: unknown, no `bytes` attribute). */
const char *erase_tok_shard_path(const erase_tok_shard_t *shard);
int64_t erase_tok_shard_count(const erase_tok_shard_t *shard);
int64_t erase_tok_shard_vocab(const erase_tok_shard_t *shard);
int64_t erase_tok_shard_bytes(const erase_tok_shard_t *shard);

/* The tokenizer's identity (16 hex digits), "" when the shard has none. */
const char *erase_tok_shard_tokenizer(const erase_tok_shard_t *shard);

/* Its file text into *text (malloc'ed; NULL when the shard has no
 * tokenizer). Errors: ERASE_ERR_FORMAT "F: dataset /tokenizer_file:
 * missing (a shard with a tokenizer carries its file)", ERASE_ERR_IO. Not
 * thread-safe for one shard. */
erase_status_t erase_tok_shard_tokenizer_file(erase_tok_shard_t *shard, char **text);

/* Chunk length along N (0: not chunked); 1 if compressed (deflate); 1 if
 * its chunks carry Fletcher32 checksums. */
int64_t erase_tok_shard_chunk_tokens(const erase_tok_shard_t *shard);
int erase_tok_shard_compressed(const erase_tok_shard_t *shard);
int erase_tok_shard_checksummed(const erase_tok_shard_t *shard);

/* A root attribute as text (string as is, integer in decimal; "" when
 * absent), truncated to `size` bytes. For tools (erase-inspect). */
void erase_tok_shard_attr_text(erase_tok_shard_t *shard, const char *name, char *text, int size);

/*
 * Read tokens [begin, begin + count) into out[count]. HDF5 verifies each
 * chunk's checksum; every token is checked against V. Errors:
 *   ERASE_ERR_INVALID  tokens outside [0, N)
 *   ERASE_ERR_IO       "F: dataset /tokens: reading rows [a, b) failed: <HDF5's reason>"
 *   ERASE_ERR_FORMAT   "F: dataset /tokens: token 17 is 300, expected 0..255 (damaged shard?)"
 * Not thread-safe for one shard; different shards may be read from
 * different threads.
 */
erase_status_t erase_tok_shard_read(erase_tok_shard_t *shard, int64_t begin, int64_t count, uint16_t *out);

#endif
