/*
 * The classify task (apps/train/task.h): classification shards
 * (io/cls_reader.h: features float [n, F], classes int32 [n]), the mlp
 * model, loss / accuracy / top-k with k = min(5, classes)
 * (lib/nn/metrics_cls.h).
 */
#include "apps/train/task.h"

#include "apps/train/json.h"
#include "io/cls_reader.h"
#include "lib/nn/metrics_cls.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    erase_device_t *dev;
    int inputs, classes, k;
    erase_batch_t batch; /* device buffers [rank_batch] */
    erase_cls_metrics_t window, eval;
    erase_cls_summary_t window_sum, last_eval;
} cls_t;

static erase_status_t cls_check(const erase_reader_t *train, const erase_model_config_t *cfg)
{
    int64_t features;
    int classes;
    ERASE_CHECK(erase_cls_reader_shape(train, &features, &classes));
    if (features != cfg->mlp.inputs)
        return ERASE_ERROR(ERASE_ERR_INVALID, "the --train data has %lld features, the model %d inputs (mlp.inputs)",
                           (long long)features, cfg->mlp.inputs);
    if (classes > cfg->mlp.classes)
        return ERASE_ERROR(ERASE_ERR_INVALID, "the --train data has %d classes, the model only %d (mlp.classes)", classes,
                           cfg->mlp.classes);
    return ERASE_OK;
}

static void cls_destroy(void *state)
{
    cls_t *t = state;
    if (!t)
        return;
    erase_free(t->dev, (void *)t->batch.features);
    erase_free(t->dev, (void *)t->batch.classes);
    free(t);
}

static erase_status_t cls_create(erase_device_t *dev, const erase_model_config_t *cfg, int64_t rank_batch,
                                 void **state)
{
    cls_t *t = calloc(1, sizeof *t);
    if (!t)
        return ERASE_ERROR(ERASE_ERR_NOMEM, "erase-train: no memory for the classify task's metrics");
    t->dev = dev;
    t->inputs = cfg->mlp.inputs;
    t->classes = cfg->mlp.classes;
    t->k = t->classes < 5 ? t->classes : 5;
    *state = t;
    size_t n = (size_t)rank_batch;
    ERASE_CHECK(erase_malloc(dev, n * (size_t)t->inputs * sizeof(float), (void **)&t->batch.features));
    ERASE_CHECK(erase_malloc(dev, n * sizeof(int32_t), (void **)&t->batch.classes));
    return ERASE_OK;
}

static erase_status_t cls_load(void *state, erase_stream_t *s, const erase_reader_batch_t *b, erase_batch_t *out)
{
    cls_t *t = state;
    size_t n = (size_t)b->size;
    t->batch.size = (int)b->size;
    ERASE_CHECK(erase_memcpy_async(s, (void *)t->batch.features, b->field[ERASE_CLS_FIELD_FEATURES],
                                   n * (size_t)t->inputs * sizeof(float)));
    ERASE_CHECK(erase_memcpy_async(s, (void *)t->batch.classes, b->field[ERASE_CLS_FIELD_CLASSES],
                                   n * sizeof(int32_t)));
    *out = t->batch;
    return ERASE_OK;
}

static void cls_clear(void *state, train_task_part_t part)
{
    cls_t *t = state;
    erase_cls_metrics_clear(part == TRAIN_TASK_WINDOW ? &t->window : &t->eval);
}

static void cls_add(void *state, train_task_part_t part, const float *z, int width, const erase_reader_batch_t *b)
{
    cls_t *t = state;
    erase_cls_metrics_add(part == TRAIN_TASK_WINDOW ? &t->window : &t->eval, z, b->field[ERASE_CLS_FIELD_CLASSES],
                          (int)b->size, width, t->k);
}

static int64_t *cls_sums(void *state, train_task_part_t part, size_t *words)
{
    cls_t *t = state;
    *words = ERASE_CLS_METRICS_WORDS;
    return part == TRAIN_TASK_WINDOW ? (int64_t *)&t->window : (int64_t *)&t->eval;
}

static void cls_summarize(void *state, train_task_part_t part)
{
    cls_t *t = state;
    if (part == TRAIN_TASK_WINDOW)
        t->window_sum = erase_cls_metrics_summary(&t->window);
    else
        t->last_eval = erase_cls_metrics_summary(&t->eval);
}

static train_task_counts_t cls_window_counts(const void *state)
{
    const cls_t *t = state;
    return (train_task_counts_t){ t->window.samples, t->window.nonfinite };
}

/* Why the loss and accuracies of s are undefined, as a phrase about `set`
 * in buf, or NULL when they are defined. */
static const char *undefined_reason(const erase_cls_summary_t *s, const char *set, char buf[128])
{
    switch (s->undefined) {
    case ERASE_CLS_DEFINED:
        return NULL;
    case ERASE_CLS_NONFINITE:
        snprintf(buf, 128, "%lld of %lld predictions are not finite", (long long)s->nonfinite, (long long)s->samples);
        break;
    case ERASE_CLS_NO_SAMPLES:
        snprintf(buf, 128, "%s is empty", set);
        break;
    }
    return buf;
}

/* "loss 0.3120, accuracy 0.9062" */
static void cls_window_text(const void *state, const char *sep, char *buf, size_t size)
{
    const cls_t *t = state;
    char why[128];
    if (undefined_reason(&t->window_sum, "this window", why))
        snprintf(buf, size, "loss and accuracy undefined: %s", why);
    else
        snprintf(buf, size, "loss %.4f%s accuracy %.4f", t->window_sum.loss, sep, t->window_sum.accuracy);
}

static void cls_window_json(const void *state, FILE *f, int all_skipped)
{
    const cls_t *t = state;
    char v[2][48];
    fprintf(f, ",\"loss\":%s,\"accuracy\":%s", json_number(v[0], "%.6f", all_skipped ? NAN : t->window_sum.loss),
            json_number(v[1], "%.6f", all_skipped ? NAN : t->window_sum.accuracy));
}

/* "loss 0.1234  accuracy 0.9650  top-5 0.9990  (2000 samples)" */
static void cls_eval_print(const void *state, FILE *f)
{
    const cls_t *t = state;
    const erase_cls_summary_t *e = &t->last_eval;
    char why[128];
    if (!undefined_reason(e, "the evaluation set", why))
        fprintf(f, "loss %.4f  accuracy %.4f  top-%d %.4f", e->loss, e->accuracy, t->k, e->topk);
    else
        fprintf(f, "loss and accuracy undefined: %s", why);
    fprintf(f, "  (%lld samples)", (long long)e->samples);
}

/* "eval_samples", "nonfinite", "loss", "accuracy", "top5" (top-k: "topK"),
 * null where undefined with "undefined" giving the reason */
static void cls_eval_json(const void *state, FILE *f)
{
    const cls_t *t = state;
    const erase_cls_summary_t *e = &t->last_eval;
    char v[3][48], why[128];
    fprintf(f, ",\"eval_samples\":%lld,\"nonfinite\":%lld,\"loss\":%s,\"accuracy\":%s,\"top%d\":%s",
            (long long)e->samples, (long long)e->nonfinite, json_number(v[0], "%.6f", e->loss),
            json_number(v[1], "%.6f", e->accuracy), t->k, json_number(v[2], "%.6f", e->topk));
    if (undefined_reason(e, "the evaluation set", why)) {
        fputs(",\"undefined\":", f);
        json_string(f, why);
    }
}

/* Softmax of each row of z [n, width] (the max subtracted first). */
static void cls_score(const float *z, int width, const erase_reader_batch_t *b, float *out, float *labels)
{
    const int32_t *cls = b->field[ERASE_CLS_FIELD_CLASSES];
    for (int64_t i = 0; i < b->size; i++) {
        const float *zi = z + i * width;
        float *pi = out + i * width;
        double max = zi[0], sum = 0;
        for (int c = 1; c < width; c++)
            max = zi[c] > max ? zi[c] : max;
        for (int c = 0; c < width; c++)
            sum += exp((double)zi[c] - max);
        for (int c = 0; c < width; c++)
            pi[c] = (float)(exp((double)zi[c] - max) / sum);
        labels[i] = (float)cls[i];
    }
}

static int cls_score_width(int width)
{
    return width;
}

const train_task_t train_task_classify = {
    .name = "classify",
    .rows = &erase_cls_rows,
    .check = cls_check,
    .create = cls_create,
    .destroy = cls_destroy,
    .load = cls_load,
    .clear = cls_clear,
    .add = cls_add,
    .sums = cls_sums,
    .summarize = cls_summarize,
    .window_counts = cls_window_counts,
    .window_text = cls_window_text,
    .window_json = cls_window_json,
    .eval_print = cls_eval_print,
    .eval_json = cls_eval_json,
    .score = cls_score,
    .score_width = cls_score_width,
    .score_classes = 1,
};
