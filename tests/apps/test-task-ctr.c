/*
 * The ctr task's device batch for multi-hot data (issue 35), through the
 * task table on a CPU device, without a model: with the model file's
 * ctr.hotness (C1 3, C21 4, the others 1: H = 31) the task's row format
 * reads a dataset of 10 rows whose C1 holds 1..3 ids and C21 1..4, and
 * load() puts sparse [10, 31] (each feature's ids at the prefix sum of the
 * capacities, padded with 0xFFFFFFFF) and sparse_len [10, 26] on the
 * device, compared here with the layout built from the rows written; the
 * reference model (hotness all 1) gets sparse [n, 26] and no sparse_len
 * from one-hot data, and its reader refuses the multi-hot data at open;
 * the network's batch buffers of such a model carry sparse [n, 31] and
 * sparse_len through copies and views.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "apps/train/task.h"
#include "io/ctr_dataset_write.h"
#include "lib/device/device.h"
#include "lib/nn/model_config.h"
#include "lib/nn/network.h"
#include "tests/cpu_device.h"
#include "tests/io/io_util.h"

#define N 10
#define F 26
#define H 31

/* Ids per feature of row i: C1 1 + i % 3, C21 1 + i % 4 (one-hot: all 1). */
static uint32_t hot_of(int i, int f, int one_hot)
{
    return one_hot ? 1 : f == 0 ? 1 + (uint32_t)(i % 3) : f == 20 ? 1 + (uint32_t)(i % 4) : 1;
}

/* id k of feature f of row i */
static uint32_t id_of(int i, int f, uint32_t k)
{
    return (uint32_t)(1000000 * i + 1000 * f + k);
}

static void write_data(const char *dir, int one_hot)
{
    uint8_t label[N];
    float dense[N * 13];
    uint32_t lengths[N * F], ids[N * 64];
    size_t n = 0;
    for (int i = 0; i < N; i++) {
        label[i] = i % 2;
        for (int j = 0; j < 13; j++)
            dense[i * 13 + j] = (float)(i + j);
        for (int f = 0; f < F; f++) {
            lengths[i * F + f] = hot_of(i, f, one_hot);
            for (uint32_t k = 0; k < lengths[i * F + f]; k++)
                ids[n++] = id_of(i, f, k);
        }
    }
    erase_ctr_dataset_writer_t *w;
    MUST(erase_ctr_dataset_writer_open(dir, 1000, NULL, 1, &w));
    MUST(erase_ctr_dataset_writer_append_ids(w, N, label, dense, lengths, ids, "test"));
    MUST(erase_ctr_dataset_writer_commit(w));
    erase_ctr_dataset_writer_free(w);
}

static erase_status_t open_data(const erase_row_format_t *fmt, const char *dir, erase_reader_t **r)
{
    erase_reader_options_t o = erase_reader_options_default();
    o.global_batch = N;
    o.shuffle = 0;
    const char *in[1] = { dir };
    return erase_reader_open(fmt, in, 1, &o, r);
}

/* The task's device batch of the first N rows of `dir` for `cfg`; sparse
 * [N, width] and sparse_len [N, 26] (when the batch has it) copied back. */
static void load_batch(const erase_model_config_t *cfg, const char *dir, int64_t width, uint32_t *sparse,
                       uint32_t *len, int *has_len)
{
    const train_task_t *task = train_task_find("ctr");
    assert_non_null(task);
    erase_row_format_t fmt;
    task->rows_for(cfg, &fmt);
    erase_reader_t *r;
    MUST(open_data(&fmt, dir, &r));
    erase_device_t *dev;
    erase_stream_t *s;
    assert_int_equal(erase_test_cpu_open(1, 0, &dev), 0);
    MUST(erase_stream_create(dev, &s));
    void *ts;
    MUST(task->create(dev, cfg, N, &ts));
    erase_reader_batch_t b;
    MUST(erase_reader_next(r, &b));
    assert_int_equal(b.size, N);
    erase_batch_t db;
    MUST(task->load(ts, s, &b, &db));
    MUST(erase_stream_synchronize(s));
    assert_int_equal(db.size, N);
    MUST(erase_memcpy_sync(dev, sparse, db.sparse, sizeof *sparse * N * (size_t)width));
    *has_len = db.sparse_len != NULL;
    if (db.sparse_len)
        MUST(erase_memcpy_sync(dev, len, db.sparse_len, sizeof *len * N * F));
    task->destroy(ts);
    erase_stream_destroy(s);
    erase_device_close(dev);
    erase_reader_close(r);
}

static void test_multi_hot_batch(void **state)
{
    (void)state;
    erase_model_config_t cfg = erase_model_config_default(ERASE_MODEL_CTR);
    MUST(erase_model_config_parse("model = \"ctr\";\nctr: { hotness = [3, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, "
                                  "1, 1, 1, 1, 1, 4, 1, 1, 1, 1, 1]; };\n",
                                  "multi.cfg", &cfg));
    write_data("tmp-task-ctr-multi", 0);
    write_data("tmp-task-ctr-one", 1);
    uint32_t sparse[N * H], len[N * F], want[N * H];
    int has_len;
    load_batch(&cfg, "tmp-task-ctr-multi", H, sparse, len, &has_len);
    assert_true(has_len);
    for (int i = 0; i < N; i++) {
        int col = 0;
        for (int f = 0; f < F; f++) {
            uint32_t cap = cfg.ctr.hotness[f];
            assert_int_equal(len[i * F + f], hot_of(i, f, 0));
            for (uint32_t k = 0; k < cap; k++)
                want[i * H + col + (int)k] = k < hot_of(i, f, 0) ? id_of(i, f, k) : 0xFFFFFFFFu;
            col += (int)cap;
        }
        assert_int_equal(col, H);
    }
    assert_memory_equal(sparse, want, sizeof want);
    print_message("multi-hot: sparse [10, 31] and sparse_len on the device as laid out here (row 2: C1 %u %u %u)\n",
                  sparse[2 * H], sparse[2 * H + 1], sparse[2 * H + 2]);

    /* the reference model: one id per feature */
    erase_model_config_t one = erase_model_config_default(ERASE_MODEL_CTR);
    uint32_t sparse1[N * F];
    load_batch(&one, "tmp-task-ctr-one", F, sparse1, len, &has_len);
    assert_false(has_len);
    for (int i = 0; i < N; i++)
        for (int f = 0; f < F; f++)
            assert_int_equal(sparse1[i * F + f], id_of(i, f, 0));
    const train_task_t *task = train_task_find("ctr");
    erase_row_format_t fmt;
    task->rows_for(&one, &fmt);
    erase_reader_t *r;
    assert_int_equal(open_data(&fmt, "tmp-task-ctr-multi", &r), ERASE_ERR_FORMAT);
    assert_string_equal(erase_error_reason(), "tmp-task-ctr-multi/part-00000.h5: feature C1 has up to 3 ids a sample "
                                              "(attribute max_hotness), more than its hotness 1 (a model file's "
                                              "hotness = [26 capacities] or \"mlperf\" raises it)");
    assert_int_equal(system("rm -rf tmp-task-ctr-multi tmp-task-ctr-one"), 0);
}

/* A multi-hot model's batch buffers (lib/nn/batch.c): sparse [n, 31] and
 * sparse_len [n, 26] allocated, copied by sample range (pipelines'
 * micro-batches) and viewed (--accumulate) with their widths. */
static void test_network_batch(void **state)
{
    (void)state;
    erase_model_config_t cfg = erase_model_config_default(ERASE_MODEL_CTR);
    MUST(erase_model_config_parse("model = \"ctr\";\nctr: { hotness = [3, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, "
                                  "1, 1, 1, 1, 1, 4, 1, 1, 1, 1, 1]; };\n",
                                  "multi.cfg", &cfg));
    erase_device_t *dev;
    erase_stream_t *s;
    assert_int_equal(erase_test_cpu_open(1, 0, &dev), 0);
    MUST(erase_stream_create(dev, &s));
    erase_network_t *net;
    MUST(erase_network_create(dev, &cfg, N, &net));
    erase_batch_t src, dst, view;
    MUST(erase_network_batch_alloc(net, N, &src));
    MUST(erase_network_batch_alloc(net, N, &dst));
    assert_non_null(src.sparse_len);
    uint32_t sparse[N * H], len[N * F], got[N * H], got_len[N * F];
    for (int k = 0; k < N * H; k++)
        sparse[k] = (uint32_t)k;
    for (int k = 0; k < N * F; k++)
        len[k] = 1 + (uint32_t)k % 3;
    MUST(erase_memcpy_sync(dev, (void *)src.sparse, sparse, sizeof sparse));
    MUST(erase_memcpy_sync(dev, (void *)src.sparse_len, len, sizeof len));
    MUST(erase_network_batch_copy(net, s, &src, 3, 4, &dst));
    MUST(erase_stream_synchronize(s));
    MUST(erase_memcpy_sync(dev, got, dst.sparse, sizeof *got * 4 * H));
    MUST(erase_memcpy_sync(dev, got_len, dst.sparse_len, sizeof *got_len * 4 * F));
    assert_memory_equal(got, sparse + 3 * H, sizeof *got * 4 * H);
    assert_memory_equal(got_len, len + 3 * F, sizeof *got_len * 4 * F);
    MUST(erase_network_batch_view(net, &src, 3, 4, &view));
    assert_ptr_equal(view.sparse, src.sparse + 3 * H);
    assert_ptr_equal(view.sparse_len, src.sparse_len + 3 * F);
    erase_network_batch_free(net, &src);
    erase_network_batch_free(net, &dst);
    erase_network_destroy(net);
    erase_stream_destroy(s);
    erase_device_close(dev);
    print_message("batch buffers of H = 31 and sparse_len: samples [3, 7) copied and viewed exactly\n");
}

int main(void)
{
    const struct CMUnitTest tests[] = { cmocka_unit_test(test_multi_hot_batch), cmocka_unit_test(test_network_batch) };
    return cmocka_run_group_tests_name("ctr task, multi-hot batches", tests, NULL, NULL);
}
