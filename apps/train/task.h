/*
 * erase-train's tasks. A task supplies what is specific to a kind of data
 * and model; the run (apps/train/run_state.h: the loop, timing, progress
 * and ETA, trace, checkpoints, signals, the summary's frame), the
 * checkpoints (apps/train/checkpoint.c: the generic reader's cursor) and
 * the schedules (lib/sched) know no task. A task is:
 *   - a row format of the data reader (io/reader.h: the sample order
 *     independent of the world size, the rank split, the cursor kept in
 *     checkpoints), with which setup.c opens the --train and --eval inputs;
 *   - a check of the data against the model;
 *   - fixed device buffers of one rank's batch (lib/nn/batch.h) and the
 *     copy of a reader batch into them on a stream;
 *   - metrics as int64 words that add up exactly (integer counts and
 *     fixed-point sums), so that their sum over the data-parallel ranks,
 *     which evaluate.c takes, does not depend on the number of ranks: a
 *     running window of training steps (the progress line's part after
 *     "samples/s, " and the metrics file's fields) and an evaluation (the
 *     eval line, the summary's eval line and their fields).
 * An evaluation pass is evaluate.c's run_evaluate(): it needs only the
 * eval reader, the network and a task; --eval-only runs it alone, and
 * erase-score (apps/erase-score.c) with the task's per-sample prediction
 * (score).
 *
 * Tasks, one file each, listed in apps/train/tasks.c (one line each):
 *   ctr       task_ctr.c: CTR shards (io/ctr_reader.h), NE, AUC, log loss
 *   classify  task_classify.c: classification shards (io/cls_reader.h),
 *             loss, accuracy, top-5
 *   lm        task_lm.c: token shards read as windows of T+1 tokens
 *             (io/tok_reader.h), loss, perplexity, bits per byte
 * The model picks the task: erase_model_config_task (lib/nn/model_config.h)
 * names the task of each model kind (ctr -> ctr, mlp -> classify, gpt -> lm).
 */
#ifndef ERASE_APPS_TRAIN_TASK_H
#define ERASE_APPS_TRAIN_TASK_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "io/reader.h"
#include "lib/device/device.h"
#include "lib/core/status.h"
#include "lib/nn/batch.h"
#include "lib/nn/model_config.h"

/* Which metrics a call is about: the running window of training steps, or
 * the evaluation in progress (or last done). */
typedef enum { TRAIN_TASK_WINDOW = 0, TRAIN_TASK_EVAL = 1 } train_task_part_t;

/* Window counts every task has, for the metrics file's train line. */
typedef struct {
    int64_t samples;   /* samples of the window, all ranks */
    int64_t nonfinite; /* of them, with a non-finite model output */
} train_task_counts_t;

typedef struct train_task {
    const char *name; /* "ctr", "classify": what erase_model_config_task says */
    /* The shards' row format (the reader opens every input with it), or
     * NULL when it depends on the model: then rows_for fills a copy the
     * caller keeps while its readers are open (lm: windows of the model's
     * context + 1 tokens; the format points at cfg->gpt.context, so cfg
     * must outlive it too). */
    const erase_row_format_t *rows;
    void (*rows_for)(const erase_model_config_t *cfg, erase_row_format_t *out);
    /* Check the training data against the model; ERASE_ERR_INVALID
     * naming both sizes (e.g. "the data has 784 features, the model 100
     * inputs"). */
    erase_status_t (*check)(const erase_reader_t *train, const erase_model_config_t *cfg);
    /* The task's state for a network of `cfg` taking at most rank_batch
     * samples per step on `dev`: the device batch buffers, the metrics.
     * Errors: ERASE_ERR_NOMEM, the device's allocation errors. */
    erase_status_t (*create)(erase_device_t *dev, const erase_model_config_t *cfg, int64_t rank_batch,
                             void **state);
    void (*destroy)(void *state); /* NULL allowed */
    /* After create: facts of the training and evaluation data the metrics
     * need (lm: the bytes per token of each, for bits per byte); either
     * reader may be NULL. NULL allowed. */
    void (*data)(void *state, const erase_reader_t *train, const erase_reader_t *eval);
    /* After data: the data's tokenizer file text (lm on BPE shards,
     * io/tok_data_tokenizer.h; NULL: none): bits per byte from the bytes
     * each evaluated token stands for. Errors: the file's (damaged).
     * NULL allowed. */
    erase_status_t (*tokenizer)(void *state, const char *file);
    /* Enqueue on `s` the copy of reader batch b (its size <= rank_batch)
     * into the fixed device buffers, and set *out to them. The reader
     * reuses b's memory at its next call: callers synchronize s first. */
    erase_status_t (*load)(void *state, erase_stream_t *s, const erase_reader_batch_t *b, erase_batch_t *out);
    /* The metrics of `part` back to zero. */
    void (*clear)(void *state, train_task_part_t part);
    /* Add a batch: the last block's head output z [b->size, width] (host
     * memory) and b's labels. */
    void (*add)(void *state, train_task_part_t part, const float *z, int width, const erase_reader_batch_t *b);
    /* The int64 words of `part`'s metrics, summed in place over the
     * data-parallel ranks by the caller (*words of them). */
    int64_t *(*sums)(void *state, train_task_part_t part, size_t *words);
    /* After the sum: compute what the lines below print (for EVAL: the
     * evaluation's result, kept for the summary until the next). */
    void (*summarize)(void *state, train_task_part_t part);
    train_task_counts_t (*window_counts)(const void *state);
    /* The progress line's metrics, e.g. "loss 0.5123, NE 0.9876" (`sep`
     * between items: "," or " " on a terminal), or why undefined. */
    void (*window_text)(const void *state, const char *sep, char *buf, size_t size);
    /* The train line's metric fields (",\"loss\":...,\"ne\":..."): null
     * when undefined or when every step of the window was skipped. */
    void (*window_json)(const void *state, FILE *f, int all_skipped);
    /* The last evaluation as the eval and summary lines print it (no
     * newline), and its fields in the metrics file (eval and summary
     * lines; "undefined" gives the reason for nulls). */
    void (*eval_print)(const void *state, FILE *f);
    void (*eval_json)(const void *state, FILE *f);
    /* Scores (erase-score; NULL: the task has none, erase-score refuses
     * it): the per-sample prediction of head outputs z
     * [n, width] in out [n, score_width] (ctr: 1 column, the click
     * probability sigmoid(z); classify: width columns, the softmax's class
     * probabilities, computed in double), and each sample's label as a
     * float in labels [n] (ctr: the 0/1 label; classify: the true class). */
    void (*score)(const float *z, int width, const erase_reader_batch_t *b, float *out, float *labels);
    int (*score_width)(int width);
    int score_classes; /* 1: the columns are class probabilities (/class, /prob), 0: one probability (/p) */
    /* Throughput in the task's own unit besides samples/s: `unit` ("tokens")
     * and how many a sample holds (lm: the model's context T); NULL both
     * when a sample is the unit (ctr, classify). */
    const char *unit;
    int64_t (*units_per_sample)(const erase_model_config_t *cfg);
} train_task_t;

/* The task named `name` (apps/train/tasks.c), or NULL. */
const train_task_t *train_task_find(const char *name);

/* Every task's table, in apps/train/task_*.c. */
extern const train_task_t train_task_ctr;
extern const train_task_t train_task_classify;
extern const train_task_t train_task_lm;

#endif
