#include "io/tok_reader.h"

#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* A shard and the window length it was opened for. */
typedef struct {
    erase_tok_shard_t *shard;
    int64_t T;
} tok_rows_t;

static erase_status_t tok_open(void *ctx, const char *path, void **out)
{
    *out = NULL;
    int64_t T = ctx ? *(const int *)ctx : 0;
    if (T < 1)
        return ERASE_ERROR(ERASE_ERR_INVALID, "%s: token windows need a context >= 1, got %" PRId64, path, T);
    tok_rows_t *t = calloc(1, sizeof *t);
    if (!t)
        return ERASE_ERROR(ERASE_ERR_NOMEM, "%s: out of memory", path);
    t->T = T;
    erase_status_t st = erase_tok_shard_open(path, &t->shard);
    if (st != ERASE_OK) {
        free(t);
        return st;
    }
    *out = t;
    return ERASE_OK;
}

static void tok_close(void *shard)
{
    tok_rows_t *t = shard;
    if (!t)
        return;
    erase_tok_shard_close(t->shard);
    free(t);
}

/* floor((N - 1) / T) windows of T+1 tokens at stride T. */
static int64_t tok_rows(const void *shard)
{
    const tok_rows_t *t = shard;
    int64_t n = erase_tok_shard_count(t->shard);
    return n > t->T ? (n - 1) / t->T : 0;
}

/* index.txt counts tokens. */
static int64_t tok_index_rows(const void *shard)
{
    return erase_tok_shard_count(((const tok_rows_t *)shard)->shard);
}

static int64_t tok_chunk_rows(const void *shard)
{
    const tok_rows_t *t = shard;
    int64_t c = erase_tok_shard_chunk_tokens(t->shard) / t->T;
    return c > 0 ? c : erase_tok_shard_chunk_tokens(t->shard) > 0;
}

static void tok_layout(const void *shard, erase_row_layout_t *l)
{
    const tok_rows_t *t = shard;
    int64_t count = erase_tok_shard_count(t->shard), bytes = erase_tok_shard_bytes(t->shard);
    /* BPE shards (a tokenizer): 0, their ratios differ; the lm task counts each token's bytes */
    int64_t per_mtoken = bytes < 0 || count == 0 || erase_tok_shard_tokenizer(t->shard)[0]
                             ? 0
                             : (int64_t)llround(1e6 * (double)bytes / (double)count);
    *l = (erase_row_layout_t){
        .nfields = 1,
        .field = { [ERASE_TOK_FIELD_TOKENS] = { "tokens", sizeof(int32_t), t->T + 1 } },
        .nraw = 1,
        .raw = { { sizeof(uint16_t), t->T + 1 } },
        .nparams = 2,
        .param = { [ERASE_TOK_PARAM_VOCAB] = { "vocab", erase_tok_shard_vocab(t->shard) },
                   [ERASE_TOK_PARAM_BYTES_PER_MTOKEN] = { "bytes_per_mtoken", per_mtoken } },
    };
}

/*
 * Windows [begin, begin + count): the tokens [begin*T, (begin+count)*T + 1)
 * they cover are read once into the tail of raw[0] (count*T + 1 of its
 * count*(T+1) slots), then spread in place into rows of T+1: row w moves
 * from offset (count-1) + w*T down to w*(T+1), which is never after it, and
 * row w's end never passes row w+1's start while w+1 < count, so moving the
 * rows in order 0, 1, ... reads every token before it is overwritten.
 */
static erase_status_t tok_read(void *shard, int64_t begin, int64_t count, void *const *raw)
{
    tok_rows_t *t = shard;
    if (count == 0)
        return ERASE_OK;
    const int64_t T = t->T, shift = count - 1;
    uint16_t *rows = raw[0];
    ERASE_CHECK(erase_tok_shard_read(t->shard, begin * T, count * T + 1, rows + shift));
    for (int64_t w = 0; w < count; w++)
        memmove(rows + w * (T + 1), rows + shift + w * T, sizeof(uint16_t) * (size_t)(T + 1));
    return ERASE_OK;
}

/* Tokens widened to int32. */
static void tok_decode(const erase_row_layout_t *layout, const void *const *raw, const uint32_t *index,
                       int64_t count, void *const *field)
{
    const size_t W = (size_t)layout->field[ERASE_TOK_FIELD_TOKENS].width;
    const uint16_t *x = raw[0];
    int32_t *tokens = field[ERASE_TOK_FIELD_TOKENS];
    for (int64_t r = 0; r < count; r++) {
        const uint16_t *src = x + (index ? index[r] : (size_t)r) * W;
        int32_t *dst = tokens + (size_t)r * W;
        for (size_t i = 0; i < W; i++)
            dst[i] = src[i];
    }
}

void erase_tok_rows_init(erase_row_format_t *format, const int *context)
{
    *format = (erase_row_format_t){ .name = "lm",
                                    .ctx = (void *)context,
                                    .open = tok_open,
                                    .close = tok_close,
                                    .rows = tok_rows,
                                    .chunk_rows = tok_chunk_rows,
                                    .index_rows = tok_index_rows,
                                    .layout = tok_layout,
                                    .read = tok_read,
                                    .decode = tok_decode };
}

int erase_tok_rows_is(const erase_row_format_t *format)
{
    return format && format->open == tok_open;
}

erase_status_t erase_tok_reader_shape(const erase_reader_t *r, int64_t *context, int64_t *vocab,
                                      double *bytes_per_token)
{
    const erase_row_format_t *f = erase_reader_format(r);
    if (!erase_tok_rows_is(f))
        return ERASE_ERROR(ERASE_ERR_INVALID, "the data is %s data, not token windows", f->name);
    erase_reader_info_t info = erase_reader_info(r);
    *context = info.layout.field[ERASE_TOK_FIELD_TOKENS].width - 1;
    *vocab = info.layout.param[ERASE_TOK_PARAM_VOCAB].value;
    int64_t per_mtoken = info.layout.param[ERASE_TOK_PARAM_BYTES_PER_MTOKEN].value;
    *bytes_per_token = per_mtoken > 0 ? (double)per_mtoken / 1e6 : NAN;
    return ERASE_OK;
}

erase_status_t erase_tok_reader_check(const erase_reader_t *r, int64_t vocab, int64_t context)
{
    int64_t T, V;
    double bpt;
    ERASE_CHECK(erase_tok_reader_shape(r, &T, &V, &bpt));
    if (V > vocab)
        return ERASE_ERROR(ERASE_ERR_INVALID,
                           "the data's vocab %" PRId64 " is larger than the model's %" PRId64
                           " (its embedding has %" PRId64 " rows)",
                           V, vocab, vocab);
    if (T != context)
        return ERASE_ERROR(ERASE_ERR_INVALID,
                           "the data was opened with windows of %" PRId64 " tokens, the model's context is %" PRId64,
                           T + 1, context);
    return ERASE_OK;
}
