/*
 * The lm task (apps/train/task_lm.c) through the task table, on a CPU
 * device, without a model: the gpt model kind names it; its row format
 * reads windows of T+1 = 5 tokens of a byte-level dataset (11 bytes: 2
 * windows); load() puts the inputs (positions 0..3) and targets (1..4)
 * on the device; add() with known logits gives the loss, perplexity and
 * bits per byte in the lines and the metrics file, computed here from the
 * cross-entropy formula in double (each target's logit c_p, the other 255
 * logits 0: loss_p = log(255 + e^c_p) - c_p); imported tokens (no byte
 * count) print no bits per byte; a non-finite logit makes the loss
 * undefined; a model with a smaller vocab or another context is refused.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "apps/train/task.h"
#include "io/ctr_index.h"
#include "io/tok_reader.h"
#include "io/tok_shard_write.h"
#include "lib/device/device.h"
#include "lib/nn/model_config.h"
#include "tests/io/io_util.h"

#define T 4
#define V 256
#define N 11 /* floor((11 - 1) / 4) = 2 windows */

static const uint16_t text[N] = { 'h', 'e', 'l', 'l', 'o', ' ', 'w', 'o', 'r', 'l', 'd' };

/* A dataset of text[] in `dir`: byte-level (bytes = count) or imported. */
static void write_data(const char *dir, int byte_level)
{
    erase_tok_write_options_t w = erase_tok_write_options_default();
    w.byte_level = byte_level;
    erase_tok_dataset_writer_t *wr;
    MUST(erase_tok_dataset_writer_open(dir, V, 1000, &w, 1, &wr));
    MUST(erase_tok_dataset_writer_append(wr, N, text, "hello"));
    MUST(erase_tok_dataset_writer_commit(wr));
    erase_tok_dataset_writer_free(wr);
}

static erase_reader_t *open_data(const erase_row_format_t *fmt, const char *dir)
{
    erase_reader_options_t o = erase_reader_options_default();
    o.global_batch = 2;
    o.shuffle = 0;
    const char *in[1] = { dir };
    erase_reader_t *r;
    MUST(erase_reader_open(fmt, in, 1, &o, &r));
    return r;
}

/* Logits [2, T * V]: target logit c_p = 0.5 * (p + 1) at position p of
 * window i (p = 0..7 over both windows), 0 elsewhere; their mean loss. */
static double make_logits(float *z, const erase_reader_batch_t *b)
{
    const int32_t *w = b->field[ERASE_TOK_FIELD_TOKENS];
    memset(z, 0, sizeof(float) * 2 * T * V);
    double sum = 0;
    for (int i = 0; i < 2; i++)
        for (int p = 0; p < T; p++) {
            double c = 0.5 * (i * T + p + 1);
            z[(i * T + p) * V + w[i * (T + 1) + p + 1]] = (float)c;
            sum += log(255.0 + exp((double)(float)c)) - (double)(float)c;
        }
    return sum / (2 * T);
}

static void test_lm(void **state)
{
    (void)state;
    erase_model_config_t cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.kind = ERASE_MODEL_GPT;
    cfg.gpt.context = T;
    cfg.gpt.vocab = V;
    assert_string_equal(erase_model_config_task(&cfg), "lm");
    const train_task_t *task = train_task_find("lm");
    assert_non_null(task);
    assert_null(task->rows);
    erase_row_format_t fmt;
    task->rows_for(&cfg, &fmt);
    write_data("tmp-task-lm-text", 1);
    write_data("tmp-task-lm-bin", 0);
    erase_reader_t *r = open_data(&fmt, "tmp-task-lm-text"), *imported = open_data(&fmt, "tmp-task-lm-bin");
    MUST(task->check(r, &cfg));
    erase_model_config_t small = cfg;
    small.gpt.vocab = 128;
    assert_int_equal(task->check(r, &small), ERASE_ERR_INVALID);
    assert_string_equal(erase_error_reason(), "the data's vocab 256 is larger than the model's 128 (its embedding "
                                              "has 128 rows): set the model file's gpt.vocab to 256 or more");

    erase_device_options_t dopt = erase_device_options_default();
    dopt.kind = ERASE_DEVICE_CPU;
    dopt.blas_threads = 1;
    erase_device_t *dev;
    erase_stream_t *s;
    MUST(erase_device_open(&dopt, &dev));
    MUST(erase_stream_create(dev, &s));
    void *ts;
    MUST(task->create(dev, &cfg, 2, &ts));
    task->data(ts, r, r);

    erase_reader_batch_t b;
    MUST(erase_reader_next(r, &b));
    assert_int_equal(b.size, 2);
    erase_batch_t db;
    MUST(task->load(ts, s, &b, &db));
    MUST(erase_stream_synchronize(s));
    int32_t in[2 * T], tg[2 * T];
    MUST(erase_memcpy_sync(dev, in, db.tokens, sizeof in));
    MUST(erase_memcpy_sync(dev, tg, db.targets, sizeof tg));
    for (int i = 0; i < 2; i++)
        for (int p = 0; p < T; p++) {
            assert_int_equal(in[i * T + p], text[i * T + p]);
            assert_int_equal(tg[i * T + p], text[i * T + p + 1]);
        }

    static float z[2 * T * V];
    double loss = make_logits(z, &b);
    for (int part = TRAIN_TASK_WINDOW; part <= TRAIN_TASK_EVAL; part++) {
        task->clear(ts, (train_task_part_t)part);
        task->add(ts, (train_task_part_t)part, z, T * V, &b);
        size_t words;
        int64_t *m = task->sums(ts, (train_task_part_t)part, &words);
        assert_int_equal(m[0], 2 * T); /* positions */
        task->summarize(ts, (train_task_part_t)part);
    }
    train_task_counts_t c = task->window_counts(ts);
    assert_int_equal(c.samples, 2);
    assert_int_equal(c.nonfinite, 0);
    /* byte-level: one byte per token, bits per byte = loss / ln 2; the
     * fixed-point sum rounds each loss to 2^-32 */
    char got[256], want[256];
    task->window_text(ts, ",", got, sizeof got);
    snprintf(want, sizeof want, "loss %.4f, perplexity %.3f, bits/byte %.4f", loss, exp(loss), loss / log(2.0));
    assert_string_equal(got, want);
    print_message("window: %s\n", got);
    char *buf;
    size_t len;
    FILE *f = open_memstream(&buf, &len);
    task->eval_print(ts, f);
    fclose(f);
    snprintf(want, sizeof want, "loss %.4f  perplexity %.3f  bits per byte %.4f  (8 tokens, 2 windows)", loss,
             exp(loss), loss / log(2.0));
    assert_string_equal(buf, want);
    print_message("eval: %s\n", buf);
    free(buf);
    f = open_memstream(&buf, &len);
    task->eval_json(ts, f);
    fclose(f);
    snprintf(want, sizeof want,
             ",\"eval_samples\":2,\"eval_tokens\":8,\"nonfinite\":0,\"loss\":%.6f,\"perplexity\":%.6f,"
             "\"bits_per_byte\":%.6f",
             loss, exp(loss), loss / log(2.0));
    assert_string_equal(buf, want);
    free(buf);

    /* imported tokens: no byte count, no bits per byte */
    task->data(ts, imported, imported);
    task->window_text(ts, ",", got, sizeof got);
    snprintf(want, sizeof want, "loss %.4f, perplexity %.3f", loss, exp(loss));
    assert_string_equal(got, want);
    print_message("imported: %s\n", got);

    /* a non-finite logit */
    z[3 * V + 7] = NAN;
    task->clear(ts, TRAIN_TASK_WINDOW);
    task->add(ts, TRAIN_TASK_WINDOW, z, T * V, &b);
    task->summarize(ts, TRAIN_TASK_WINDOW);
    task->window_text(ts, ",", got, sizeof got);
    assert_string_equal(got, "loss undefined: 1 of 8 positions have a logit that is not finite");
    assert_int_equal(task->window_counts(ts).nonfinite, 1);
    print_message("non-finite: %s\n", got);

    task->destroy(ts);
    erase_stream_destroy(s);
    erase_device_close(dev);
    erase_reader_close(r);
    erase_reader_close(imported);
    assert_int_equal(system("rm -rf tmp-task-lm-text tmp-task-lm-bin"), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = { cmocka_unit_test(test_lm) };
    return cmocka_run_group_tests_name("lm task", tests, NULL, NULL);
}
