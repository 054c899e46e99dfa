#include "io/tok_shard_write.h"

#include "config.h"
#include "io/ctr_dataset_write.h"
#include "io/ctr_index.h"
#include "io/h5_rows.h"
#include "io/h5_util.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef struct {
    char name[32]; /* part-00000.h5 */
    char path[4096], temp[4100];
    hid_t file, d; /* /tokens */
    int64_t count;
    char *source;  /* the source files, one per line */
    int published;
} shard_t;

struct erase_tok_dataset_writer {
    char *dir;
    int64_t vocab, shard_tokens, tokens;
    erase_tok_write_options_t o;
    shard_t **shards;
    const char **names; /* [count] the shards' names, for the index */
    int64_t *rows_of;   /* [count] their tokens, for the index */
    int count, cap;
    int committed, made_dir;
};

static const erase_h5_rows_spec_t tokens_spec = { "/tokens", 1, 1, H5T_INTEGER, H5T_SGN_NONE, 2, "uint16" };

static const char description[] =
    "erase token shard (format erase-tok-1). /tokens uint16 [count]: one stream of token ids, each < vocab "
    "(byte-level text: the bytes). Attributes: vocab, count, bytes (bytes of source text the tokens encode; "
    "absent for imported tokens), source (one file per line), converter.";

erase_tok_write_options_t erase_tok_write_options_default(void)
{
    erase_tok_write_options_t o = { .chunk_tokens = 65536, .compress = 1, .byte_level = 0, .converter = NULL };
    return o;
}

/* Close (and, if unpublished, delete) one shard's files. */
static void shard_free(shard_t *s, int delete_published)
{
    if (!s)
        return;
    if (s->file >= 0) {
        erase_h5_enter();
        if (s->d >= 0)
            H5Dclose(s->d);
        H5Fclose(s->file);
        erase_h5_leave();
    }
    if (!s->published)
        unlink(s->temp);
    else if (delete_published)
        unlink(s->path);
    free(s->source);
    free(s);
}

/* Begin shard number w->count as "<name>.tmp". */
static erase_status_t begin_shard(erase_tok_dataset_writer_t *w)
{
    if (w->count == w->cap) {
        int cap = w->cap ? 2 * w->cap : 16;
        shard_t **p = realloc(w->shards, sizeof *p * (size_t)cap);
        if (p)
            w->shards = p;
        const char **n = realloc(w->names, sizeof *n * (size_t)cap);
        if (n)
            w->names = n;
        int64_t *r = realloc(w->rows_of, sizeof *r * (size_t)cap);
        if (r)
            w->rows_of = r;
        if (!p || !n || !r)
            return ERASE_ERROR(ERASE_ERR_NOMEM, "%s: out of memory", w->dir);
        w->cap = cap;
    }
    shard_t *s = calloc(1, sizeof *s);
    if (!s)
        return ERASE_ERROR(ERASE_ERR_NOMEM, "%s: out of memory", w->dir);
    s->file = s->d = -1;
    snprintf(s->name, sizeof s->name, "part-%05d.h5", w->count);
    snprintf(s->path, sizeof s->path, "%s/%s", w->dir, s->name);
    snprintf(s->temp, sizeof s->temp, "%s.tmp", s->path);
    w->names[w->count] = s->name;
    w->shards[w->count++] = s;
    erase_h5_rows_layout_t layout = { w->o.chunk_tokens, w->o.compress, w->o.compress };
    erase_status_t st = ERASE_OK;
    erase_h5_enter();
    s->file = H5Fcreate(s->temp, H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
    if (s->file < 0) {
        char detail[256];
        st = ERASE_ERROR(ERASE_ERR_IO, "%s: cannot create: %s", s->temp, erase_h5_detail(detail, sizeof detail));
    } else {
        st = erase_h5_rows_create(s->file, s->temp, &tokens_spec, H5T_STD_U16LE, &layout, &s->d);
    }
    erase_h5_leave();
    ERASE_CHECK(st);
    return ERASE_OK;
}

/* Attributes, format last; the lock is held. Returns the failing name or NULL. */
static const char *write_attributes(const erase_tok_dataset_writer_t *w, const shard_t *s)
{
    char converter[128];
    snprintf(converter, sizeof converter, "%s", w->o.converter ? w->o.converter : "erase " PACKAGE_VERSION);
    hid_t f = s->file;
    uint32_t vocab = (uint32_t)w->vocab;
    if (erase_h5_attr_write_array(f, "vocab", H5T_NATIVE_UINT32, &vocab, 1)) return "vocab";
    if (erase_h5_attr_write_int64(f, "count", s->count)) return "count";
    if (w->o.byte_level && erase_h5_attr_write_int64(f, "bytes", s->count)) return "bytes";
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
    erase_status_t st = erase_h5_rows_finish(&s->file, &s->d, &tokens_spec, 1, s->temp, write_attributes(w, s));
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
        return ERASE_ERROR(ERASE_ERR_NOMEM, "%s: out of memory", w->dir);
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
    if (o.compress && (H5Zfilter_avail(H5Z_FILTER_DEFLATE) <= 0 || H5Zfilter_avail(H5Z_FILTER_SHUFFLE) <= 0))
        return ERASE_ERROR(ERASE_ERR_UNSUPPORTED, "%s: this HDF5 library has no deflate or shuffle filter; "
                           "write uncompressed shards", dir);
    int made_dir;
    ERASE_CHECK(erase_dataset_dir_prepare(dir, force, &made_dir));
    erase_tok_dataset_writer_t *w = calloc(1, sizeof *w);
    if (!w || !(w->dir = strdup(dir))) {
        free(w);
        if (made_dir)
            rmdir(dir);
        return ERASE_ERROR(ERASE_ERR_NOMEM, "%s: out of memory", dir);
    }
    w->made_dir = made_dir;
    w->vocab = vocab;
    w->shard_tokens = shard_tokens;
    w->o = o;
    if (w->o.chunk_tokens > shard_tokens) /* no chunk larger than a shard */
        w->o.chunk_tokens = shard_tokens;
    *out = w;
    return ERASE_OK;
}

erase_status_t erase_tok_dataset_writer_append(erase_tok_dataset_writer_t *w, int64_t n, const uint16_t *tokens,
                                               const char *source)
{
    if (w->committed)
        return ERASE_ERROR(ERASE_ERR_STATE, "%s: append after commit", w->dir);
    for (int64_t i = 0; i < n; i++)
        if (tokens[i] >= w->vocab)
            return ERASE_ERROR(ERASE_ERR_INVALID, "%s: token %" PRId64 " of %s is %u, expected 0..%" PRId64, w->dir,
                               i, source, (unsigned)tokens[i], w->vocab - 1);
    while (n > 0) {
        shard_t *s = w->count ? w->shards[w->count - 1] : NULL;
        if (!s || s->count == w->shard_tokens) {
            if (s)
                ERASE_CHECK(finish_shard(w, s));
            ERASE_CHECK(begin_shard(w));
            s = w->shards[w->count - 1];
        }
        ERASE_CHECK(note_source(w, s, source));
        int64_t k = w->shard_tokens - s->count < n ? w->shard_tokens - s->count : n;
        erase_h5_enter();
        erase_status_t st = erase_h5_rows_append(s->d, s->temp, &tokens_spec, H5T_NATIVE_UINT16, s->count, k, tokens);
        erase_h5_leave();
        ERASE_CHECK(st);
        s->count += k;
        w->tokens += k;
        n -= k;
        tokens += k;
    }
    return ERASE_OK;
}

int erase_tok_dataset_writer_shards(const erase_tok_dataset_writer_t *w) { return w->count; }
int64_t erase_tok_dataset_writer_tokens(const erase_tok_dataset_writer_t *w) { return w->tokens; }

erase_status_t erase_tok_dataset_writer_commit(erase_tok_dataset_writer_t *w)
{
    if (w->committed)
        return ERASE_ERROR(ERASE_ERR_STATE, "%s: committed twice", w->dir);
    if (w->tokens == 0)
        return ERASE_ERROR(ERASE_ERR_FORMAT, "%s: no tokens to write", w->dir);
    ERASE_CHECK(finish_shard(w, w->shards[w->count - 1]));
    for (int i = 0; i < w->count; i++) {
        shard_t *s = w->shards[i];
        ERASE_CHECK(erase_h5_rows_publish(s->temp, s->path, &s->published));
        w->rows_of[i] = s->count;
    }
    ERASE_CHECK(erase_ctr_index_write(w->dir, w->names, w->rows_of, w->count));
    w->committed = 1;
    return ERASE_OK;
}

void erase_tok_dataset_writer_free(erase_tok_dataset_writer_t *w)
{
    if (!w)
        return;
    for (int i = 0; i < w->count; i++)
        shard_free(w->shards[i], !w->committed);
    if (!w->committed && w->made_dir)
        rmdir(w->dir); /* the empty directory a failed conversion would leave */
    free(w->shards);
    free(w->names);
    free(w->rows_of);
    free(w->dir);
    free(w);
}
