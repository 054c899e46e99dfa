/*
 * A byte-level BPE tokenizer compatible with nanochat's (trained as the
 * PyPI package rustbpe trains, encoding as tiktoken encodes) (issue 33).
 *
 * Tokens. Ids 0..255 are the 256 bytes (id b is the byte b). Id 256 + k is
 * the k-th merge: the concatenation of two earlier tokens. After the merges
 * come the special tokens, in nanochat's order (erase_tokenizer_special_names:
 * "<|bos|>" then its chat tokens). vocab = 256 + merges + specials; the
 * vocab given to training counts the specials, as nanochat's does, so a
 * vocab V gives V - 265 merges (fewer when the text has no more pairs).
 * Tokens are stored as uint16 in token shards: vocab is at most 65,536.
 *
 * Pre-tokenization. Text is split into pieces by a split pattern before BPE;
 * merges never cross pieces. Supported patterns (stored in the file, checked
 * on load): GPT-4's (cl100k's) with numbers in runs of 1..K digits, K in
 * {1, 2, 3}; K = 3 is GPT-4's (ERASE_SPLIT_PATTERN_GPT4), K = 2 nanochat's
 * SPLIT_PATTERN (ERASE_SPLIT_PATTERN_NANOCHAT, the default). The splitter is
 * our own code (io/pretokenize.h): letters \p{L}, numbers \p{N} of Unicode
 * 16.0, the regex crate's in tiktoken 0.14 and rustbpe 0.1.0
 * (io/unicode_classes.c, made by io/gen_unicode_classes.py), \s = Unicode
 * White_Space. Bytes that are not
 * UTF-8 are each one "other" character (neither letter, number nor space):
 * any bytes encode, and decode(encode(x)) == x for every x.
 *
 * Training (erase_tokenizer_train): count the pieces of the text files, then
 * repeatedly merge the most frequent adjacent pair of tokens (counts weighted
 * by piece frequency, pairs never overlapping within a piece, left to right),
 * ties broken by the smallest pair (left id, then right id): rustbpe's order,
 * so the merges equal rustbpe's on the same text, vocab and pattern.
 *
 * Encoding (erase_tokenizer_encode): tiktoken's: each piece that is a token
 * whole is that token; otherwise its bytes are merged by rank, the adjacent
 * pair whose concatenation has the lowest rank first (the leftmost on ties).
 * Special tokens are recognized in the text only when asked (flags).
 *
 * The tokenizer file (docs/tokenizer.md), UTF-8 text, one item a line:
 *   #erase-tokenizer 1
 *   #vocab V                 256 + merges + specials
 *   #pattern PATTERN         the split pattern, verbatim
 *   #special NAME ID         one line per special token, ids after the merges
 *   BASE64 RANK              tiktoken's format: every token's bytes, base64,
 *                            and its id; ranks 0..V-specials-1 in order
 * `#` lines never start a base64 line, so tiktoken's loader reads the rest
 * (docs/tokenizer.md has the Python snippet that builds a tiktoken.Encoding).
 * The merges are implied, as in tiktoken: token r is the merge of the two
 * tokens that BPE with ranks below r makes of its bytes.
 *
 * Identity: FNV-1a 64 of the canonical file text (erase_tokenizer_identity),
 * written as 16 hex digits into token shards and checkpoints to tell
 * tokenizers apart.
 *
 * Thread safety: a loaded or trained tokenizer is read-only; encode and
 * decode may run on it from any number of threads at once.
 */
#ifndef ERASE_IO_TOKENIZER_H
#define ERASE_IO_TOKENIZER_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "lib/core/status.h"

#define ERASE_TOKENIZER_MAX_VOCAB 65536 /* token shards store uint16 */
#define ERASE_TOKENIZER_SPECIALS 9      /* nanochat's special tokens */
#define ERASE_TOKENIZER_MIN_VOCAB (256 + ERASE_TOKENIZER_SPECIALS)

/* GPT-4's split pattern (numbers in runs of 1..3) and nanochat's (1..2). */
extern const char ERASE_SPLIT_PATTERN_GPT4[];
extern const char ERASE_SPLIT_PATTERN_NANOCHAT[];

/* nanochat's special tokens in id order: "<|bos|>", "<|user_start|>",
 * "<|user_end|>", "<|assistant_start|>", "<|assistant_end|>",
 * "<|python_start|>", "<|python_end|>", "<|output_start|>", "<|output_end|>". */
extern const char *const erase_tokenizer_special_names[ERASE_TOKENIZER_SPECIALS];

typedef struct erase_tokenizer erase_tokenizer_t;

/* A growing array of token ids (append-only; free with erase_token_ids_free). */
typedef struct {
    uint32_t *ids;
    size_t count, capacity;
} erase_token_ids_t;

void erase_token_ids_free(erase_token_ids_t *ids);

typedef struct {
    int64_t vocab;          /* V: 265..65536, counting the 9 special tokens (default 4096) */
    const char *pattern;    /* split pattern (default ERASE_SPLIT_PATTERN_NANOCHAT) */
    int threads;            /* threads of the counting pass (default 0: 2 or the CPUs, the fewer) */
    FILE *progress;         /* if set: a line per 10% of the merges and per phase */
} erase_tokenizer_train_options_t;

/* Defaults as above. */
erase_tokenizer_train_options_t erase_tokenizer_train_options_default(void);

/*
 * Train on the text files (any bytes; each file read whole, pieces never
 * cross files). *out is the new tokenizer (free with erase_tokenizer_free).
 * Errors: ERASE_ERR_INVALID "--vocab 70000: at most 65536 (tokens are stored
 * as uint16 in token shards)", "--vocab 100: at least 265 (256 bytes and 9
 * special tokens)", an unsupported pattern; ERASE_ERR_IO "F: cannot open:
 * <reason>"; ERASE_ERR_NOMEM.
 */
erase_status_t erase_tokenizer_train(const char *const *files, int n, const erase_tokenizer_train_options_t *options,
                                     erase_tokenizer_t **out);

/* Train on one buffer of text (the same rules; for tests and benchmarks). */
erase_status_t erase_tokenizer_train_buffer(const uint8_t *text, size_t bytes,
                                            const erase_tokenizer_train_options_t *options, erase_tokenizer_t **out);

/*
 * Read a tokenizer file. Nothing is kept on failure (*out stays NULL).
 * Errors, ERASE_ERR_FORMAT unless said, each "PATH: ..." naming the file and
 * the fault (line numbers count from 1):
 *   ERASE_ERR_IO "PATH: cannot open: <reason>"
 *   "PATH: not an erase tokenizer file (first line '#erase-tokenizer 1' expected)"
 *   "PATH: vocab 70000 is more than token shards hold (65536: tokens are stored as uint16)"
 *   "PATH: truncated: 300 tokens, the header says 4087" (also a last line without its newline)
 *   "PATH: line 9: rank 300, expected 7 (ranks count up from 0)"  (an out-of-range merge)
 *   "PATH: line 9: token 7 must be the byte 0x07"
 *   "PATH: line 400: token 391 duplicates token 300 ('the')"
 *   "PATH: line 400: token 391 is not a merge of two earlier tokens"
 *   "PATH: line 4: bad base64" / "bad line"; an unsupported pattern; special
 *   tokens missing, unknown or not numbered after the merges
 */
erase_status_t erase_tokenizer_load(const char *path, erase_tokenizer_t **out);

/* The same from the file's text text[n] (e.g. kept in a token shard or a
 * checkpoint); `name` stands for the file in the errors (e.g.
 * "CKPT: /meta tokenizer"). */
erase_status_t erase_tokenizer_load_text(const char *name, const char *text, size_t n, erase_tokenizer_t **out);

/* The canonical file text (what erase_tokenizer_save writes; its FNV-1a 64
 * is the identity), malloc'ed and NUL-terminated, *n its length; NULL when
 * out of memory. */
char *erase_tokenizer_text(const erase_tokenizer_t *tok, size_t *n);

/* Write the tokenizer file to PATH atomically (a temporary file, synced,
 * renamed; on failure nothing is left at PATH and no temporary file).
 * Errors: ERASE_ERR_IO "PATH: cannot write: <reason>"; ERASE_ERR_NOMEM. */
erase_status_t erase_tokenizer_save(const erase_tokenizer_t *tok, const char *path);

void erase_tokenizer_free(erase_tokenizer_t *tok);

/* 256 + merges + specials. */
int64_t erase_tokenizer_vocab(const erase_tokenizer_t *tok);
/* The number of merges (learned tokens). */
int64_t erase_tokenizer_merges(const erase_tokenizer_t *tok);
/* The split pattern, verbatim. */
const char *erase_tokenizer_pattern(const erase_tokenizer_t *tok);
/* The identity: FNV-1a 64 of the canonical file text; as text, 16 lowercase
 * hex digits into hex[17]. Equal files, equal identity. */
uint64_t erase_tokenizer_identity(const erase_tokenizer_t *tok);
void erase_tokenizer_identity_hex(const erase_tokenizer_t *tok, char hex[17]);

/* The id of a special token by name ("<|bos|>"), or -1 if it has none. */
int32_t erase_tokenizer_special(const erase_tokenizer_t *tok, const char *name);

/* The bytes of token `id` (a special token: its name's bytes): *bytes set,
 * the length returned; -1 if id >= vocab. */
int64_t erase_tokenizer_token_bytes(const erase_tokenizer_t *tok, uint32_t id, const uint8_t **bytes);

/* The number of text bytes the ids stand for (special tokens count 0:
 * they are markup, not text); -1 if an id is >= vocab. For bits per byte. */
int64_t erase_tokenizer_count_bytes(const erase_tokenizer_t *tok, const uint32_t *ids, size_t n);

#define ERASE_ENCODE_SPECIALS 1 /* flags: the special tokens' names in the text become their ids */

/*
 * Encode n bytes of text (any bytes), appending the ids to *out (grown as
 * needed). threads > 1 splits the text at piece boundaries (a newline
 * before a letter) and encodes the parts at once: the same ids as one
 * thread (a text under 64 KiB: one thread). Errors: ERASE_ERR_NOMEM (out
 * may then hold some of the ids after what it had: discard them).
 */
erase_status_t erase_tokenizer_encode(const erase_tokenizer_t *tok, const uint8_t *text, size_t n, int flags,
                                      int threads, erase_token_ids_t *out);

/*
 * Where text[0..n) may be cut into chunks that encode separately to the ids
 * of the whole (for encoding a stream chunk by chunk): the first offset >=
 * from just after a newline followed by an ASCII letter (a piece always
 * ends there and no special token name straddles it); n if none, which is
 * a safe end only at the end of the input.
 */
size_t erase_tokenizer_chunk_end(const uint8_t *text, size_t n, size_t from);

/* The same into uint16 ids (vocab <= 65536): *out is malloc'ed, *count set. */
erase_status_t erase_tokenizer_encode16(const erase_tokenizer_t *tok, const uint8_t *text, size_t n, int flags,
                                        int threads, uint16_t **out, size_t *count);

/*
 * Decode ids to their bytes: *out malloc'ed (NUL-terminated, the NUL not
 * counted), *bytes its length. Special tokens decode to their names.
 * Errors: ERASE_ERR_INVALID "token 70000 at 12: expected < 4096 (the vocab)".
 */
erase_status_t erase_tokenizer_decode(const erase_tokenizer_t *tok, const uint32_t *ids, size_t n, uint8_t **out,
                                      size_t *bytes);

#endif
