#include "io/tok_shard.h"

#include "io/h5_rows.h"
#include "io/h5_util.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct erase_tok_shard {
    char *path;
    hid_t file, d; /* /tokens */
    int64_t count, vocab, bytes, chunk_tokens;
    int compressed, checksummed;
    char tokenizer[17]; /* the `tokenizer` attribute; "" when absent */
};

static const erase_h5_rows_spec_t tokens_spec = { "/tokens", 1, 1, H5T_INTEGER, H5T_SGN_NONE, 2, "uint16" };

/* The checks of erase_tok_shard_open after the file is open; the lock is held. */
static erase_status_t validate(void *shard)
{
    erase_tok_shard_t *s = shard;
    ERASE_CHECK(erase_h5_rows_check_format(s->file, s->path, ERASE_TOK_FORMAT, "token"));
    if (erase_h5_attr_read_int64(s->file, "count", &s->count) != 0 || s->count < 0)
        return ERASE_ERROR(ERASE_ERR_FORMAT, "%s: attribute count: expected an integer >= 0", s->path);
    if (erase_h5_attr_read_int64(s->file, "vocab", &s->vocab) != 0 || s->vocab < 1 || s->vocab > ERASE_TOK_MAX_VOCAB)
        return ERASE_ERROR(ERASE_ERR_FORMAT, "%s: attribute vocab: expected an integer in 1..%d", s->path,
                           ERASE_TOK_MAX_VOCAB);
    int rc = erase_h5_attr_read_int64(s->file, "bytes", &s->bytes);
    if (rc == 1)
        s->bytes = -1;
    else if (rc != 0 || s->bytes < 0)
        return ERASE_ERROR(ERASE_ERR_FORMAT, "%s: attribute bytes: expected an integer >= 0 (or no attribute)",
                           s->path);
    char id[64];
    rc = erase_h5_attr_read_string(s->file, "tokenizer", id, sizeof id);
    size_t len = rc == 0 ? strlen(id) : 0;
    if (rc < 0 || (rc == 0 && (len != 16 || strspn(id, "0123456789abcdef") != 16)))
        return ERASE_ERROR(ERASE_ERR_FORMAT, "%s: attribute tokenizer: expected 16 hex digits (or no attribute)",
                           s->path);
    if (rc == 0)
        memcpy(s->tokenizer, id, 17);
    ERASE_CHECK(erase_h5_rows_open(s->file, s->path, &tokens_spec, s->count, &s->d));
    erase_h5_rows_layout(s->d, &s->chunk_tokens, &s->compressed, &s->checksummed);
    return ERASE_OK;
}

erase_status_t erase_tok_shard_open(const char *path, erase_tok_shard_t **out)
{
    *out = NULL;
    erase_tok_shard_t *s = calloc(1, sizeof *s);
    if (!s || !(s->path = strdup(path))) {
        free(s);
        return ERASE_ERROR(ERASE_ERR_NOMEM, "%s: out of memory", path);
    }
    s->file = s->d = -1;
    erase_status_t st = erase_h5_rows_open_shard(path, &s->file, validate, s);
    if (st != ERASE_OK) {
        erase_tok_shard_close(s);
        return st;
    }
    *out = s;
    return ERASE_OK;
}

int erase_tok_shard_probe(const char *path)
{
    return erase_h5_rows_probe(path, ERASE_TOK_FORMAT);
}

void erase_tok_shard_close(erase_tok_shard_t *s)
{
    if (!s)
        return;
    erase_h5_rows_close_shard(&s->file, &s->d, 1);
    free(s->path);
    free(s);
}

const char *erase_tok_shard_path(const erase_tok_shard_t *s) { return s->path; }
int64_t erase_tok_shard_count(const erase_tok_shard_t *s) { return s->count; }
int64_t erase_tok_shard_vocab(const erase_tok_shard_t *s) { return s->vocab; }
int64_t erase_tok_shard_bytes(const erase_tok_shard_t *s) { return s->bytes; }
int64_t erase_tok_shard_chunk_tokens(const erase_tok_shard_t *s) { return s->chunk_tokens; }
int erase_tok_shard_compressed(const erase_tok_shard_t *s) { return s->compressed; }
int erase_tok_shard_checksummed(const erase_tok_shard_t *s) { return s->checksummed; }

const char *erase_tok_shard_tokenizer(const erase_tok_shard_t *s) { return s->tokenizer; }

erase_status_t erase_tok_shard_tokenizer_file(erase_tok_shard_t *s, char **text)
{
    *text = NULL;
    if (!s->tokenizer[0])
        return ERASE_OK;
    erase_h5_enter();
    int missing = H5Lexists(s->file, "/tokenizer_file", H5P_DEFAULT) <= 0, ok = 0;
    hid_t d = missing ? -1 : H5Dopen2(s->file, "/tokenizer_file", H5P_DEFAULT);
    hid_t space = d < 0 ? -1 : H5Dget_space(d);
    hsize_t n = 0;
    if (space >= 0 && H5Sget_simple_extent_ndims(space) == 1 && H5Sget_simple_extent_dims(space, &n, NULL) == 1 &&
        n < ((hsize_t)1 << 30) && (*text = malloc((size_t)n + 1)) != NULL) {
        ok = H5Dread(d, H5T_NATIVE_UCHAR, H5S_ALL, H5S_ALL, H5P_DEFAULT, *text) >= 0 && !memchr(*text, 0, (size_t)n);
        (*text)[n] = '\0';
    }
    if (space >= 0)
        H5Sclose(space);
    if (d >= 0)
        H5Dclose(d);
    erase_h5_leave();
    if (ok)
        return ERASE_OK;
    free(*text);
    *text = NULL;
    return ERASE_ERROR(missing ? ERASE_ERR_FORMAT : ERASE_ERR_IO,
                       "%s: dataset /tokenizer_file: %s (a shard with a tokenizer carries its file)", s->path,
                       missing ? "missing" : "not uint8 text [n] or unreadable");
}

void erase_tok_shard_attr_text(erase_tok_shard_t *s, const char *name, char *text, int size)
{
    erase_h5_rows_attr_text(s->file, name, text, size);
}

erase_status_t erase_tok_shard_read(erase_tok_shard_t *s, int64_t begin, int64_t count, uint16_t *out)
{
    if (begin < 0 || count < 0 || begin > s->count || count > s->count - begin)
        return ERASE_ERROR(ERASE_ERR_INVALID,
                           "%s: tokens [%" PRId64 ", %" PRId64 ") outside the shard's %" PRId64 " tokens", s->path,
                           begin, begin + count, s->count);
    if (count == 0)
        return ERASE_OK;
    erase_h5_enter();
    erase_status_t st = erase_h5_rows_read(s->d, s->path, &tokens_spec, H5T_NATIVE_UINT16, begin, count, out);
    erase_h5_leave();
    ERASE_CHECK(st);
    /* ids below V: a pass taking the maximum, a second one for the message */
    uint16_t max = 0;
    for (int64_t i = 0; i < count; i++)
        max = out[i] > max ? out[i] : max;
    if (max >= s->vocab)
        for (int64_t i = 0; i < count; i++)
            if (out[i] >= s->vocab)
                return ERASE_ERROR(ERASE_ERR_FORMAT,
                                   "%s: dataset /tokens: token %" PRId64 " is %u, expected 0..%" PRId64
                                   " (damaged shard?)",
                                   s->path, begin + i, (unsigned)out[i], s->vocab - 1);
    return ERASE_OK;
}
