#include "io/tok_shard_write.h"

#include "config.h"
#include "io/h5_rows.h"
#include "io/h5_shards.h"
#include "io/h5_util.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef struct {
    erase_h5_shard_t h; /* rows = tokens */
    char *source;       /* the source files, one per line */
    int64_t bytes;      /* with a tokenizer: the text bytes its tokens stand for */
} shard_t;

struct erase_tok_dataset_writer {
    erase_h5_shards_t set;
    int64_t vocab, shard_tokens, tokens;
    erase_tok_write_options_t o;
    char identity[17];  /* with a tokenizer: its identity, hex */
    char *tokenizer_file; /* with a tokenizer: its file text */
};

static const erase_h5_rows_spec_t tokens_spec = { "/tokens", 1, 1, H5T_INTEGER, H5T_SGN_NONE, 2, "uint16" };

static const char description[] =
    "erase token shard (format erase-tok-1). /tokens uint16 [count]: one stream of token ids, each < vocab "
    "(byte-level text: the bytes). Attributes: vocab, count, bytes (bytes of source text the tokens encode; "
    "absent for imported tokens), source (one file per line), converter; BPE text also tokenizer (its identity, "
    "16 hex digits) and the dataset /tokenizer_file (uint8, the tokenizer file's text, docs/tokenizer.md).";

erase_tok_write_options_t erase_tok_write_options_default(void)
{
    erase_tok_write_options_t o = { .chunk_tokens = 65536, .compress = 1, .byte_level = 0, .converter = NULL,
                                    .tokenizer = NULL };
    return o;
}

static void shard_free(erase_h5_shard_t *h)
{
    shard_t *s = (shard_t *)h;
    free(s->source);
    free(s);
}

/* Begin the next shard. */
static erase_status_t begin_shard(erase_tok_dataset_writer_t *w)
{
    shard_t *s = calloc(1, sizeof *s);
    if (!s)
        return ERASE_ERROR(ERASE_ERR_NOMEM, "%s: out of memory", w->set.dir);
    const hid_t file_type = H5T_STD_U16LE;
    erase_h5_rows_layout_t layout = { w->o.chunk_tokens, w->o.compress, w->o.compress };
    return erase_h5_shards_begin(&w->set, &s->h, &tokens_spec, &file_type, 1, &layout);
}

/* The dataset /tokenizer_file: uint8 [n], the tokenizer file's text (a
 * dataset, not an attribute: attributes of this file format hold at most
 * 64 KiB, a tokenizer of vocab 65536 takes about 1 MB). 0 or -1. */
static int write_tokenizer_file(hid_t f, const char *text)
{
    hsize_t n = strlen(text);
    hid_t space = H5Screate_simple(1, &n, NULL);
    hid_t d = space < 0 ? -1 : H5Dcreate2(f, "/tokenizer_file", H5T_STD_U8LE, space, H5P_DEFAULT, H5P_DEFAULT,
                                          H5P_DEFAULT);
    int rc = d < 0 || H5Dwrite(d, H5T_NATIVE_UCHAR, H5S_ALL, H5S_ALL, H5P_DEFAULT, text) < 0 ? -1 : 0;
    if (d >= 0)
        H5Dclose(d);
    if (space >= 0)
        H5Sclose(space);
    return rc;
}

/* Attributes, format last; the lock is held. Returns the failing name or NULL. */
static const char *write_attributes(const erase_tok_dataset_writer_t *w, const shard_t *s)
{
    char converter[128];
    snprintf(converter, sizeof converter, "%s", w->o.converter ? w->o.converter : "erase " PACKAGE_VERSION);
    hid_t f = s->h.file;
    uint32_t vocab = (uint32_t)w->vocab;
    if (erase_h5_attr_write_array(f, "vocab", H5T_NATIVE_UINT32, &vocab, 1)) return "vocab";
    if (erase_h5_attr_write_int64(f, "count", s->h.rows)) return "count";
    if (w->o.byte_level && erase_h5_attr_write_int64(f, "bytes", s->h.rows)) return "bytes";
    if (w->o.tokenizer) {
        if (erase_h5_attr_write_int64(f, "bytes", s->bytes)) return "bytes";
        if (erase_h5_attr_write_string(f, "tokenizer", w->identity)) return "tokenizer";
        if (write_tokenizer_file(f, w->tokenizer_file)) return "tokenizer_file";
    }
    if (erase_h5_attr_write_string(f, "source", s->source ? s->source : "")) return "source";
    if (erase_h5_attr_write_string(f, "converter", converter)) return "converter";
    if (erase_h5_attr_write_string(f, "description", description)) return "description";
    if (erase_h5_attr_write_string(f, "format", ERASE_TOK_FORMAT)) return "format";
    return NULL;
}

/* Attributes, close, fsync: the shard is complete under its temporary name. */
static erase_status_t finish_shard(erase_tok_dataset_writer_t *w, shard_t *s)
{
    erase_h5_enter();
    erase_status_t st = erase_h5_rows_finish(&s->h.file, s->h.d, &tokens_spec, 1, s->h.temp, write_attributes(w, s));
    erase_h5_leave();
    return st;
}

/* Add `source` to the shard's list unless it is already its last line. */
static erase_status_t note_source(erase_tok_dataset_writer_t *w, shard_t *s, const char *source)
{
    size_t have = s->source ? strlen(s->source) : 0, add = strlen(source);
    if (have) {
        const char *last = strrchr(s->source, '\n');
        last = last ? last + 1 : s->source;
        if (!strcmp(last, source))
            return ERASE_OK;
    }
    char *p = realloc(s->source, have + add + 2);
    if (!p)
        return ERASE_ERROR(ERASE_ERR_NOMEM, "%s: out of memory", w->set.dir);
    if (have)
        p[have++] = '\n';
    memcpy(p + have, source, add + 1);
    s->source = p;
    return ERASE_OK;
}

erase_status_t erase_tok_dataset_writer_open(const char *dir, int64_t vocab, int64_t shard_tokens,
                                             const erase_tok_write_options_t *options, int force,
                                             erase_tok_dataset_writer_t **out)
{
    *out = NULL;
    erase_tok_write_options_t o = options ? *options : erase_tok_write_options_default();
    if (!dir || !dir[0])
        return ERASE_ERROR(ERASE_ERR_INVALID, "no output directory given");
    if (vocab < 1 || vocab > ERASE_TOK_MAX_VOCAB || shard_tokens < 2 || o.chunk_tokens < 1)
        return ERASE_ERROR(ERASE_ERR_INVALID,
                           "%s: vocab %" PRId64 ", %" PRId64 " tokens per shard, %" PRId64
                           " tokens per chunk: expected 1..%d, >= 2, >= 1",
                           dir, vocab, shard_tokens, o.chunk_tokens, ERASE_TOK_MAX_VOCAB);
    erase_tok_dataset_writer_t *w = calloc(1, sizeof *w);
    if (!w)
        return ERASE_ERROR(ERASE_ERR_NOMEM, "%s: out of memory", dir);
    erase_status_t st = erase_h5_shards_init(&w->set, dir, force, o.compress, shard_free);
    if (st != ERASE_OK) {
        free(w);
        return st;
    }
    w->vocab = vocab;
    w->shard_tokens = shard_tokens;
    if (o.tokenizer) {
        size_t n;
        erase_tokenizer_identity_hex(o.tokenizer, w->identity);
        if (!(w->tokenizer_file = erase_tokenizer_text(o.tokenizer, &n))) {
            erase_tok_dataset_writer_free(w);
            return ERASE_ERROR(ERASE_ERR_NOMEM, "%s: out of memory", dir);
        }
    }
    w->o = o;
    if (w->o.chunk_tokens > shard_tokens) /* no chunk larger than a shard */
        w->o.chunk_tokens = shard_tokens;
    *out = w;
    return ERASE_OK;
}

/* The text bytes tokens[n] stand for (special tokens none; ids < vocab, checked). */
static int64_t text_bytes(const erase_tokenizer_t *tok, const uint16_t *tokens, int64_t n)
{
    uint32_t ids[4096];
    int64_t bytes = 0;
    for (int64_t at = 0; at < n; at += 4096) {
        size_t k = n - at < 4096 ? (size_t)(n - at) : 4096;
        for (size_t i = 0; i < k; i++)
            ids[i] = tokens[at + (int64_t)i];
        bytes += erase_tokenizer_count_bytes(tok, ids, k);
    }
    return bytes;
}

erase_status_t erase_tok_dataset_writer_append(erase_tok_dataset_writer_t *w, int64_t n, const uint16_t *tokens,
                                               const char *source)
{
    if (w->set.committed)
        return ERASE_ERROR(ERASE_ERR_STATE, "%s: append after commit", w->set.dir);
    for (int64_t i = 0; i < n; i++)
        if (tokens[i] >= w->vocab)
            return ERASE_ERROR(ERASE_ERR_INVALID, "%s: token %" PRId64 " of %s is %u, expected 0..%" PRId64, w->set.dir,
                               i, source, (unsigned)tokens[i], w->vocab - 1);
    while (n > 0) {
        shard_t *s = w->set.count ? (shard_t *)w->set.shards[w->set.count - 1] : NULL;
        if (!s || s->h.rows == w->shard_tokens) {
            if (s)
                ERASE_CHECK(finish_shard(w, s));
            ERASE_CHECK(begin_shard(w));
            s = (shard_t *)w->set.shards[w->set.count - 1];
        }
        ERASE_CHECK(note_source(w, s, source));
        int64_t k = w->shard_tokens - s->h.rows < n ? w->shard_tokens - s->h.rows : n;
        erase_h5_enter();
        erase_status_t st =
            erase_h5_rows_append(s->h.d[0], s->h.temp, &tokens_spec, H5T_NATIVE_UINT16, s->h.rows, k, tokens);
        erase_h5_leave();
        ERASE_CHECK(st);
        if (w->o.tokenizer)
            s->bytes += text_bytes(w->o.tokenizer, tokens, k);
        s->h.rows += k;
        w->tokens += k;
        n -= k;
        tokens += k;
    }
    return ERASE_OK;
}

int erase_tok_dataset_writer_shards(const erase_tok_dataset_writer_t *w) { return w->set.count; }
int64_t erase_tok_dataset_writer_tokens(const erase_tok_dataset_writer_t *w) { return w->tokens; }

erase_status_t erase_tok_dataset_writer_commit(erase_tok_dataset_writer_t *w)
{
    if (w->set.committed)
        return ERASE_ERROR(ERASE_ERR_STATE, "%s: committed twice", w->set.dir);
    if (w->tokens == 0)
        return ERASE_ERROR(ERASE_ERR_FORMAT, "%s: no tokens to write", w->set.dir);
    ERASE_CHECK(finish_shard(w, (shard_t *)w->set.shards[w->set.count - 1]));
    return erase_h5_shards_commit(&w->set);
}

void erase_tok_dataset_writer_free(erase_tok_dataset_writer_t *w)
{
    if (!w)
        return;
    erase_h5_shards_free(&w->set);
    free(w->tokenizer_file);
    free(w);
}
