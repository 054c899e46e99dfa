/*
 * The tokenizer of token data (issue 33): which BPE tokenizer made the
 * shards of a dataset (their `tokenizer` attribute, io/tok_shard.h), the
 * same for every shard, and its file text (/tokenizer_file), which
 * erase-train copies into its checkpoints so that erase-sample decodes
 * with it and later runs refuse data of another tokenizer.
 */
#ifndef ERASE_IO_TOK_DATA_TOKENIZER_H
#define ERASE_IO_TOK_DATA_TOKENIZER_H

#include "lib/core/status.h"

typedef struct {
    char identity[17]; /* 16 hex digits; "" when the shards have none (byte-level text, imported tokens) */
    char *path;        /* the first shard (malloc'ed) */
    char *file;        /* the tokenizer file text (malloc'ed); NULL when none */
} erase_tok_data_tokenizer_t;

/*
 * The tokenizer of the shards of `n` inputs (shard files or dataset
 * directories, as erase_reader_open takes them) into *out (free with
 * erase_tok_data_tokenizer_free; zeroed on failure). Errors: those of
 * erase_ctr_list_resolve and erase_tok_shard_open, and ERASE_ERR_FORMAT
 * for shards of mixed tokenizers, naming both:
 *   "F: tokenizer 0123456789abcdef, the first shard P has tokenizer none
 *    (byte-level or imported tokens): every shard must have the same
 *    (convert all the text with one tokenizer)"
 */
erase_status_t erase_tok_data_tokenizer(const char *const *inputs, int n, erase_tok_data_tokenizer_t *out);

void erase_tok_data_tokenizer_free(erase_tok_data_tokenizer_t *t);

/* "tokenizer 0123456789abcdef" or "tokenizer none (byte-level or imported
 * tokens)" for an identity (16 hex digits or "") into out. */
const char *erase_tok_tokenizer_name(const char *identity, char *out, size_t size);

/* FNV-1a 64 of a tokenizer file's text as 16 hex digits (its identity when
 * the text is canonical, as shards and checkpoints keep it); "" for NULL. */
void erase_tok_tokenizer_identity_of(const char *file, char hex[17]);

#endif
