/*
 * The ctr task (apps/train/task.h): CTR shards (io/ctr_reader.h: dense,
 * sparse, label), the ctr model, NE / AUC / log loss / calibration
 * (lib/nn/metrics.h).
 */
#include "apps/train/task.h"

#include "apps/train/json.h"
#include "io/ctr_reader.h"
#include "lib/core/checked.h"
#include "lib/nn/metrics.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    erase_device_t *dev;
    erase_batch_t batch;           /* device buffers [rank_batch]: sparse [rank_batch, H], sparse_len when multi-hot */
    size_t width;                  /* H: the sum of the model's ctr.hotness (26: one-hot) */
    erase_ctr_metrics_t window;    /* only the first ERASE_CTR_METRICS_SUM_WORDS (no AUC) are used */
    erase_ctr_metrics_t eval;
    erase_ctr_summary_t window_sum, last_eval;
} ctr_t;

/* The model's ctr.hotness, or NULL (one id each) for a configuration
 * made without erase_model_config_default or a model file (all 0). */
static const uint32_t *model_hotness(const erase_model_config_t *cfg)
{
    return cfg->ctr.hotness[0] ? cfg->ctr.hotness : NULL;
}

/* The row format for the model's capacities (ctr.hotness): the reader
 * delivers sparse [n, H] padded and, multi-hot, sparse_len [n, 26]. */
static void ctr_rows_for(const erase_model_config_t *cfg, erase_row_format_t *out)
{
    erase_ctr_rows_init(out, model_hotness(cfg));
}

static erase_status_t ctr_check(const erase_reader_t *train, const erase_model_config_t *cfg)
{
    return erase_ctr_reader_check_tables(train, ERASE_CTR_DENSE, ERASE_CTR_FIELDS, cfg->ctr.table_rows);
}

static void ctr_destroy(void *state)
{
    ctr_t *t = state;
    if (!t)
        return;
    erase_free(t->dev, (void *)t->batch.dense);
    erase_free(t->dev, (void *)t->batch.sparse);
    erase_free(t->dev, (void *)t->batch.sparse_len);
    erase_free(t->dev, (void *)t->batch.label);
    free(t);
}

static erase_status_t ctr_create(erase_device_t *dev, const erase_model_config_t *cfg, int64_t rank_batch,
                                 void **state)
{
    ctr_t *t = calloc(1, sizeof *t);
    if (!t)
        return ERASE_ERROR(ERASE_ERR_NOMEM, "erase-train: no memory for the ctr task's metrics");
    t->dev = dev;
    *state = t;
    size_t n = (size_t)rank_batch;
    t->width = (size_t)erase_model_config_hot_width(cfg);
    size_t bytes;
    if (!erase_bytes(sizeof(uint32_t), rank_batch, (int64_t)t->width, &bytes))
        return ERASE_ERROR(ERASE_ERR_NOMEM, "erase-train: a batch of %zu samples with %zu ids each is too large", n,
                           t->width);
    ERASE_CHECK(erase_malloc(dev, n * ERASE_CTR_DENSE * sizeof(float), (void **)&t->batch.dense));
    ERASE_CHECK(erase_malloc(dev, bytes, (void **)&t->batch.sparse));
    if (t->width != ERASE_CTR_FIELDS)
        ERASE_CHECK(erase_malloc(dev, n * ERASE_CTR_FIELDS * sizeof(uint32_t), (void **)&t->batch.sparse_len));
    ERASE_CHECK(erase_malloc(dev, n * sizeof(float), (void **)&t->batch.label));
    return ERASE_OK;
}

static erase_status_t ctr_load(void *state, erase_stream_t *s, const erase_reader_batch_t *rb, erase_batch_t *out)
{
    ctr_t *t = state;
    erase_ctr_batch_t b = erase_ctr_batch(rb);
    size_t n = (size_t)b.size;
    t->batch.size = (int)b.size;
    ERASE_CHECK(erase_memcpy_async(s, (void *)t->batch.dense, b.dense, n * ERASE_CTR_DENSE * sizeof(float)));
    ERASE_CHECK(erase_memcpy_async(s, (void *)t->batch.sparse, b.sparse, n * t->width * sizeof(uint32_t)));
    if (t->batch.sparse_len)
        ERASE_CHECK(erase_memcpy_async(s, (void *)t->batch.sparse_len, b.sparse_len,
                                       n * ERASE_CTR_FIELDS * sizeof(uint32_t)));
    ERASE_CHECK(erase_memcpy_async(s, (void *)t->batch.label, b.label, n * sizeof(float)));
    *out = t->batch;
    return ERASE_OK;
}

static void ctr_clear(void *state, train_task_part_t part)
{
    ctr_t *t = state;
    if (part == TRAIN_TASK_WINDOW)
        memset(&t->window, 0, ERASE_CTR_METRICS_SUM_WORDS * sizeof(int64_t));
    else
        erase_ctr_metrics_clear(&t->eval);
}

static void ctr_add(void *state, train_task_part_t part, const float *z, int width, const erase_reader_batch_t *b)
{
    ctr_t *t = state;
    (void)width; /* one logit per sample */
    const float *label = b->field[ERASE_CTR_FIELD_LABEL];
    if (part == TRAIN_TASK_WINDOW)
        erase_ctr_metrics_add_sums(&t->window, z, label, (int)b->size);
    else
        erase_ctr_metrics_add(&t->eval, z, label, (int)b->size);
}

static int64_t *ctr_sums(void *state, train_task_part_t part, size_t *words)
{
    ctr_t *t = state;
    *words = part == TRAIN_TASK_WINDOW ? ERASE_CTR_METRICS_SUM_WORDS : ERASE_CTR_METRICS_WORDS;
    return part == TRAIN_TASK_WINDOW ? (int64_t *)&t->window : (int64_t *)&t->eval;
}

static void ctr_summarize(void *state, train_task_part_t part)
{
    ctr_t *t = state;
    if (part == TRAIN_TASK_WINDOW)
        t->window_sum = erase_ctr_metrics_summary(&t->window);
    else
        t->last_eval = erase_ctr_metrics_summary(&t->eval);
}

static train_task_counts_t ctr_window_counts(const void *state)
{
    const ctr_t *t = state;
    return (train_task_counts_t){ t->window.samples, t->window.nonfinite };
}

/* Why e's NE (and AUC) are undefined, as a phrase about `set` ("the
 * evaluation set", "this window") in buf, or NULL when they are defined. */
static const char *undefined_reason(const erase_ctr_summary_t *e, const char *set, char buf[128])
{
    switch (e->undefined) {
    case ERASE_CTR_DEFINED:
        return NULL;
    case ERASE_CTR_NONFINITE:
        snprintf(buf, 128, "%lld of %lld predictions are not finite", (long long)e->nonfinite, (long long)e->samples);
        break;
    case ERASE_CTR_NO_CLICKS:
        snprintf(buf, 128, "%s has no clicks", set);
        break;
    case ERASE_CTR_NO_NONCLICKS:
        snprintf(buf, 128, "%s has no non-clicks", set);
        break;
    case ERASE_CTR_NO_SAMPLES:
        snprintf(buf, 128, "%s is empty", set);
        break;
    }
    return buf;
}

/* "loss 0.5123, NE 0.9876"; undefined ones say why */
static void ctr_window_text(const void *state, const char *sep, char *buf, size_t size)
{
    const ctr_t *t = state;
    const erase_ctr_summary_t *sum = &t->window_sum;
    char why[128], l[48] = "loss undefined";
    if (isfinite(sum->log_loss))
        snprintf(l, sizeof l, "loss %.4f", sum->log_loss);
    if (undefined_reason(sum, "this window", why))
        snprintf(buf, size, "%s%s NE undefined: %s", l, sep, why);
    else
        snprintf(buf, size, "%s%s NE %.4f", l, sep, sum->ne);
}

static void ctr_window_json(const void *state, FILE *f, int all_skipped)
{
    const ctr_t *t = state;
    char v[2][48];
    fprintf(f, ",\"loss\":%s,\"ne\":%s", json_number(v[0], "%.6f", all_skipped ? NAN : t->window_sum.log_loss),
            json_number(v[1], "%.6f", all_skipped ? NAN : t->window_sum.ne));
}

/* An evaluation's result as the eval line and the summary print it. */
static void ctr_eval_print(const void *state, FILE *f)
{
    const erase_ctr_summary_t *e = &((const ctr_t *)state)->last_eval;
    char why[128], loss[48] = "";
    if (!undefined_reason(e, "the evaluation set", why)) {
        fprintf(f, "NE %.4f  AUC %.4f  log loss %.4f  calibration %.3f", e->ne, e->auc, e->log_loss, e->calibration);
    } else {
        if (isfinite(e->log_loss))
            snprintf(loss, sizeof loss, "  log loss %.4f", e->log_loss);
        fprintf(f, "NE and AUC undefined: %s%s", why, loss);
    }
    fprintf(f, "  (%lld samples, base rate %.4f)", (long long)e->samples, e->base_rate);
}

/* The NE, AUC... fields of an eval or summary line of the metrics file:
 * null where undefined, with "undefined" giving the reason. */
static void ctr_eval_json(const void *state, FILE *f)
{
    const erase_ctr_summary_t *e = &((const ctr_t *)state)->last_eval;
    char v[5][48], why[128];
    fprintf(f, ",\"eval_samples\":%lld,\"nonfinite\":%lld,\"ne\":%s,\"auc\":%s,\"log_loss\":%s,"
               "\"calibration\":%s,\"base_rate\":%s",
            (long long)e->samples, (long long)e->nonfinite, json_number(v[0], "%.6f", e->ne),
            json_number(v[1], "%.6f", e->auc), json_number(v[2], "%.6f", e->log_loss),
            json_number(v[3], "%.6f", e->calibration), json_number(v[4], "%.6f", e->base_rate));
    if (undefined_reason(e, "the evaluation set", why)) {
        fputs(",\"undefined\":", f);
        json_string(f, why);
    }
}

static void ctr_score(const float *z, int width, const erase_reader_batch_t *b, float *out, float *labels)
{
    (void)width;
    const float *label = b->field[ERASE_CTR_FIELD_LABEL];
    for (int64_t i = 0; i < b->size; i++) {
        out[i] = (float)(1 / (1 + exp(-(double)z[i])));
        labels[i] = label[i];
    }
}

static int ctr_score_width(int width)
{
    (void)width;
    return 1;
}

const train_task_t train_task_ctr = {
    .name = "ctr",
    .rows_for = ctr_rows_for,
    .check = ctr_check,
    .create = ctr_create,
    .destroy = ctr_destroy,
    .load = ctr_load,
    .clear = ctr_clear,
    .add = ctr_add,
    .sums = ctr_sums,
    .summarize = ctr_summarize,
    .window_counts = ctr_window_counts,
    .window_text = ctr_window_text,
    .window_json = ctr_window_json,
    .eval_print = ctr_eval_print,
    .eval_json = ctr_eval_json,
    .score = ctr_score,
    .score_width = ctr_score_width,
    .score_classes = 0,
};
