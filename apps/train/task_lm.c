/*
 * The lm task (apps/train/task.h): token shards read as windows of T+1
 * tokens (io/tok_reader.h; T = the model's context), the gpt model.
 * load() splits each window into the inputs tokens [n, T] (positions
 * 0..T-1) and the targets [n, T] (positions 1..T) on the device
 * (lib/nn/batch.h). The metrics are those of classification
 * (lib/nn/metrics_cls.h) over the positions: every position is a sample
 * whose classes are the vocab and whose class is its target, so the
 * sums are exact int64 words (positions, non-finite, cross-entropy in
 * double, summed in the whole + fraction fixed point of lib/nn/metrics.h)
 * and add up alike on any number of ranks. Printed: loss (mean
 * cross-entropy per token, nats), perplexity = exp(loss) and bits per
 * byte = loss / ln 2 x tokens / bytes. BPE data (a tokenizer in its
 * shards, io/tok_data_tokenizer.h): bytes = the text bytes of the very
 * target tokens evaluated (each id's decoded length; <|bos|> none), an
 * int64 word summed over ranks with the metrics; otherwise the
 * bytes per token of the shards' `bytes` attributes (byte-level text: 1,
 * so bits per byte = loss / ln 2); data without either (imported tokens)
 * has no bits per byte (left out of the lines and the metrics file).
 * No scores (erase-score refuses the task): a window has no single label,
 * and the score hook gets no task state to cut z [n, T * vocab] into its
 * T positions; erase-train --eval-only gives the evaluation's metrics.
 */
#include "apps/train/task.h"

#include "apps/train/json.h"
#include "io/tok_reader.h"
#include "io/tokenizer.h"
#include "lib/core/checked.h"
#include "lib/nn/metrics_cls.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The metrics' sums and the text bytes of the targets added (BPE data):
 * int64 words, all summed over ranks. */
typedef struct {
    erase_cls_metrics_t m;
    int64_t bytes;
} lm_sums_t;

typedef struct {
    erase_device_t *dev;
    int T, vocab;
    int64_t rank_batch;
    erase_batch_t batch;         /* device buffers tokens, targets [rank_batch, T] */
    int32_t *stage[2];           /* host staging of the inputs and targets [rank_batch, T] */
    int32_t *targets;            /* host targets [rank_batch, T] for add() */
    double bytes_per_token[2];   /* of the train and the eval data; NaN: unknown */
    int32_t *token_bytes;        /* [tokenizer vocab]: the text bytes of each id (BPE data); NULL: none */
    int64_t token_ids;           /* entries of token_bytes */
    lm_sums_t window, eval;
    erase_cls_summary_t window_sum, last_eval;
    int64_t window_bytes, eval_bytes; /* the bytes of the summarized targets (BPE data) */
} lm_t;

static void lm_rows_for(const erase_model_config_t *cfg, erase_row_format_t *out)
{
    erase_tok_rows_init(out, erase_model_config_context(cfg));
}

static erase_status_t lm_check(const erase_reader_t *train, const erase_model_config_t *cfg)
{
    int64_t vocab = erase_model_config_vocab(cfg), T, V;
    double bpt;
    erase_status_t st = erase_tok_reader_check(train, vocab, *erase_model_config_context(cfg));
    if (st == ERASE_ERR_INVALID && erase_tok_reader_shape(train, &T, &V, &bpt) == ERASE_OK && V > vocab) {
        char why[512]; /* the check's line, then which key to change, and to what */
        snprintf(why, sizeof why, "%s", erase_error_reason());
        return ERASE_ERROR(st, "%s: set the model file's %s.vocab to %" PRId64 " or more", why,
                           erase_model_config_name(cfg), V);
    }
    return st;
}

static void lm_destroy(void *state)
{
    lm_t *t = state;
    if (!t)
        return;
    erase_free(t->dev, (void *)t->batch.tokens);
    erase_free(t->dev, (void *)t->batch.targets);
    for (int i = 0; i < 2; i++)
        erase_host_free(t->dev, t->stage[i]);
    free(t->targets);
    free(t->token_bytes);
    free(t);
}

static erase_status_t lm_create(erase_device_t *dev, const erase_model_config_t *cfg, int64_t rank_batch,
                                void **state)
{
    lm_t *t = calloc(1, sizeof *t);
    if (!t)
        return ERASE_ERROR(ERASE_ERR_NOMEM, "erase-train: no memory for the lm task's metrics");
    t->dev = dev;
    t->T = *erase_model_config_context(cfg);
    t->vocab = erase_model_config_vocab(cfg);
    t->rank_batch = rank_batch;
    t->bytes_per_token[0] = t->bytes_per_token[1] = NAN;
    *state = t;
    size_t bytes;
    if (!erase_bytes(sizeof(int32_t), rank_batch, t->T, &bytes))
        return ERASE_ERROR(ERASE_ERR_INVALID, "erase-train: %lld windows of %d tokens per rank overflow a size",
                           (long long)rank_batch, t->T);
    ERASE_CHECK(erase_malloc(dev, bytes, (void **)&t->batch.tokens));
    ERASE_CHECK(erase_malloc(dev, bytes, (void **)&t->batch.targets));
    for (int i = 0; i < 2; i++)
        ERASE_CHECK(erase_host_alloc(dev, bytes, (void **)&t->stage[i]));
    if (!(t->targets = malloc(bytes)))
        return ERASE_ERROR(ERASE_ERR_NOMEM, "erase-train: no memory for the targets of %lld windows",
                           (long long)rank_batch);
    return ERASE_OK;
}

static void lm_data(void *state, const erase_reader_t *train, const erase_reader_t *eval)
{
    lm_t *t = state;
    const erase_reader_t *r[2] = { train, eval };
    for (int i = 0; i < 2; i++) {
        int64_t T, V;
        if (!r[i] || erase_tok_reader_shape(r[i], &T, &V, &t->bytes_per_token[i]) != ERASE_OK)
            t->bytes_per_token[i] = NAN;
    }
}

/* BPE data: the byte length of each token id, from its tokenizer's file. */
static erase_status_t lm_tokenizer(void *state, const char *file)
{
    lm_t *t = state;
    if (!file)
        return ERASE_OK;
    erase_tokenizer_t *tok;
    ERASE_CHECK(erase_tokenizer_load_text("the data's tokenizer_file", file, strlen(file), &tok));
    t->token_ids = erase_tokenizer_vocab(tok);
    if (!(t->token_bytes = malloc(sizeof *t->token_bytes * (size_t)t->token_ids))) {
        erase_tokenizer_free(tok);
        return ERASE_ERROR(ERASE_ERR_NOMEM, "erase-train: no memory for the tokenizer's byte counts");
    }
    for (int64_t id = 0; id < t->token_ids; id++) {
        uint32_t one = (uint32_t)id;
        t->token_bytes[id] = (int32_t)erase_tokenizer_count_bytes(tok, &one, 1);
    }
    erase_tokenizer_free(tok);
    return ERASE_OK;
}

/* Windows w [n, T+1] -> the inputs [n, T] (positions 0..T-1) and/or the targets [n, T] (1..T). */
static void split_windows(const int32_t *w, int64_t n, int T, int32_t *inputs, int32_t *targets)
{
    for (int64_t i = 0; i < n; i++) {
        const int32_t *wi = w + i * (T + 1);
        if (inputs)
            memcpy(inputs + i * T, wi, sizeof(int32_t) * (size_t)T);
        if (targets)
            memcpy(targets + i * T, wi + 1, sizeof(int32_t) * (size_t)T);
    }
}

static erase_status_t lm_load(void *state, erase_stream_t *s, const erase_reader_batch_t *b, erase_batch_t *out)
{
    lm_t *t = state;
    size_t bytes = (size_t)b->size * (size_t)t->T * sizeof(int32_t); /* <= create's, checked there */
    t->batch.size = (int)b->size;
    split_windows(b->field[ERASE_TOK_FIELD_TOKENS], b->size, t->T, t->stage[0], t->stage[1]);
    ERASE_CHECK(erase_memcpy_async(s, (void *)t->batch.tokens, t->stage[0], bytes));
    ERASE_CHECK(erase_memcpy_async(s, (void *)t->batch.targets, t->stage[1], bytes));
    *out = t->batch;
    return ERASE_OK;
}

static void lm_clear(void *state, train_task_part_t part)
{
    lm_t *t = state;
    lm_sums_t *sums = part == TRAIN_TASK_WINDOW ? &t->window : &t->eval;
    erase_cls_metrics_clear(&sums->m);
    sums->bytes = 0;
}

/* z [n, T * vocab]: the logits of every position of every window. */
static void lm_add(void *state, train_task_part_t part, const float *z, int width, const erase_reader_batch_t *b)
{
    lm_t *t = state;
    (void)width; /* T * vocab */
    lm_sums_t *sums = part == TRAIN_TASK_WINDOW ? &t->window : &t->eval;
    const int n = (int)(b->size * t->T);
    split_windows(b->field[ERASE_TOK_FIELD_TOKENS], b->size, t->T, NULL, t->targets);
    erase_cls_metrics_add(&sums->m, z, t->targets, n, t->vocab, 1);
    for (int i = 0; t->token_bytes && i < n; i++)
        sums->bytes += t->targets[i] >= 0 && t->targets[i] < t->token_ids ? t->token_bytes[t->targets[i]] : 0;
}

static int64_t *lm_sums(void *state, train_task_part_t part, size_t *words)
{
    lm_t *t = state;
    _Static_assert(sizeof(lm_sums_t) == sizeof(int64_t) * (ERASE_CLS_METRICS_WORDS + 1), "int64 words only");
    *words = ERASE_CLS_METRICS_WORDS + 1;
    return part == TRAIN_TASK_WINDOW ? (int64_t *)&t->window : (int64_t *)&t->eval;
}

static void lm_summarize(void *state, train_task_part_t part)
{
    lm_t *t = state;
    if (part == TRAIN_TASK_WINDOW) {
        t->window_sum = erase_cls_metrics_summary(&t->window.m);
        t->window_bytes = t->window.bytes;
    } else {
        t->last_eval = erase_cls_metrics_summary(&t->eval.m);
        t->eval_bytes = t->eval.bytes;
    }
}

/* Windows (samples) and those with a non-finite logit: the counts are of
 * positions, T per window. */
static train_task_counts_t lm_window_counts(const void *state)
{
    const lm_t *t = state;
    return (train_task_counts_t){ t->window.m.samples / t->T, (t->window.m.nonfinite + t->T - 1) / t->T };
}

/* loss / ln 2 x tokens / bytes of the summarized window (part 0) or
 * evaluation (part 1): with a tokenizer the bytes of the targets counted,
 * else the data's bytes per token; NaN without a byte count or a loss. */
static double bits_per_byte(const lm_t *t, int part, double loss)
{
    if (!t->token_bytes)
        return loss / log(2.0) / t->bytes_per_token[part];
    const erase_cls_summary_t *s = part ? &t->last_eval : &t->window_sum;
    int64_t bytes = part ? t->eval_bytes : t->window_bytes;
    return bytes > 0 ? loss / log(2.0) * ((double)s->samples / (double)bytes) : NAN;
}

/* 1 when the data has a byte count (part 0: train, 1: eval). */
static int has_bytes(const lm_t *t, int part)
{
    return t->token_bytes || !isnan(t->bytes_per_token[part]);
}

/* Why the loss of s is undefined, as a phrase about `set` in buf, or NULL. */
static const char *undefined_reason(const erase_cls_summary_t *s, const char *set, char buf[128])
{
    switch (s->undefined) {
    case ERASE_CLS_DEFINED:
        return NULL;
    case ERASE_CLS_NONFINITE:
        snprintf(buf, 128, "%lld of %lld positions have a logit that is not finite", (long long)s->nonfinite,
                 (long long)s->samples);
        break;
    case ERASE_CLS_NO_SAMPLES:
        snprintf(buf, 128, "%s is empty", set);
        break;
    }
    return buf;
}

/* "loss 1.2345, perplexity 3.437, bits/byte 1.781" */
static void lm_window_text(const void *state, const char *sep, char *buf, size_t size)
{
    const lm_t *t = state;
    const erase_cls_summary_t *w = &t->window_sum;
    char why[128];
    if (undefined_reason(w, "this window", why)) {
        snprintf(buf, size, "loss undefined: %s", why);
        return;
    }
    int n = snprintf(buf, size, "loss %.4f%s perplexity %.3f", w->loss, sep, exp(w->loss));
    double bpb = bits_per_byte(t, 0, w->loss);
    if (!isnan(bpb) && n >= 0 && (size_t)n < size)
        snprintf(buf + n, size - (size_t)n, "%s bits/byte %.4f", sep, bpb);
}

static void lm_window_json(const void *state, FILE *f, int all_skipped)
{
    const lm_t *t = state;
    double loss = all_skipped ? NAN : t->window_sum.loss;
    char v[3][48];
    fprintf(f, ",\"loss\":%s,\"perplexity\":%s", json_number(v[0], "%.6f", loss), json_number(v[1], "%.6f", exp(loss)));
    if (has_bytes(t, 0))
        fprintf(f, ",\"bits_per_byte\":%s", json_number(v[2], "%.6f", bits_per_byte(t, 0, loss)));
}

/* "loss 1.4700  perplexity 4.349  bits per byte 2.1208  (111456 tokens, 1741 windows)" */
static void lm_eval_print(const void *state, FILE *f)
{
    const lm_t *t = state;
    const erase_cls_summary_t *e = &t->last_eval;
    char why[128];
    if (!undefined_reason(e, "the evaluation set", why)) {
        fprintf(f, "loss %.4f  perplexity %.3f", e->loss, exp(e->loss));
        if (has_bytes(t, 1))
            fprintf(f, "  bits per byte %.4f", bits_per_byte(t, 1, e->loss));
    } else {
        fprintf(f, "loss undefined: %s", why);
    }
    fprintf(f, "  (%lld tokens, %lld windows)", (long long)e->samples, (long long)(e->samples / t->T));
}

/* "eval_samples" (windows), "eval_tokens", "nonfinite" (positions), "loss",
 * "perplexity", "bits_per_byte" (left out without a byte count), null where
 * undefined with "undefined" giving the reason */
static void lm_eval_json(const void *state, FILE *f)
{
    const lm_t *t = state;
    const erase_cls_summary_t *e = &t->last_eval;
    char v[3][48], why[128];
    fprintf(f, ",\"eval_samples\":%lld,\"eval_tokens\":%lld,\"nonfinite\":%lld,\"loss\":%s,\"perplexity\":%s",
            (long long)(e->samples / t->T), (long long)e->samples, (long long)e->nonfinite,
            json_number(v[0], "%.6f", e->loss), json_number(v[1], "%.6f", exp(e->loss)));
    if (has_bytes(t, 1))
        fprintf(f, ",\"bits_per_byte\":%s", json_number(v[2], "%.6f", bits_per_byte(t, 1, e->loss)));
    if (undefined_reason(e, "the evaluation set", why)) {
        fputs(",\"undefined\":", f);
        json_string(f, why);
    }
}

/* A window's T positions each predict a token: throughput in tokens. */
static int64_t lm_tokens_per_sample(const erase_model_config_t *cfg) { return *erase_model_config_context(cfg); }

const train_task_t train_task_lm = {
    .name = "lm",
    .rows = NULL,
    .rows_for = lm_rows_for,
    .check = lm_check,
    .create = lm_create,
    .destroy = lm_destroy,
    .data = lm_data,
    .tokenizer = lm_tokenizer,
    .load = lm_load,
    .clear = lm_clear,
    .add = lm_add,
    .sums = lm_sums,
    .summarize = lm_summarize,
    .window_counts = lm_window_counts,
    .window_text = lm_window_text,
    .window_json = lm_window_json,
    .eval_print = lm_eval_print,
    .eval_json = lm_eval_json,
    .score = NULL, /* the hook gets no task state, so no T to cut z [n, T * vocab] into positions */
    .unit = "tokens",
    .units_per_sample = lm_tokens_per_sample,
};
