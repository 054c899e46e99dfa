/*
 * Synthetic data from a planted model (io/synth.h): the parameters recorded
 * in planted.h5 reproduce, from the shards as the reader delivers them, the
 * NE the generator reported; every id is a planted token; the base rate,
 * missing rates and Zipf popularity are those documented; the same seed
 * gives the same rows and another seed other rows. End to end: a small ctr
 * model trained on the train part through the reader reaches an eval NE
 * below 1 and not below the planted model's.
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
#include <hdf5.h>

#include "io/ctr_reader.h"
#include "io/synth.h"
#include "lib/nn/train_step.h"
#include "tests/io/io_util.h"

_Static_assert(ERASE_CTR_SHARD_DENSE == ERASE_CTR_DENSE, "shards and the ctr model disagree on dense features");
_Static_assert(ERASE_CTR_SHARD_FIELDS == ERASE_CTR_FIELDS, "shards and the ctr model disagree on fields");

#define ROWS 60000

static char *scratch;

static erase_synth_options_t options(const char *out, uint64_t seed)
{
    erase_synth_options_t o = erase_synth_options_default();
    o.out_dir = out;
    o.rows = ROWS;
    o.shard_rows = 25000;
    o.write.chunk_rows = 4096;
    o.max_vocab = 2000;
    o.seed = seed;
    return o;
}

typedef struct {
    uint32_t id;
    double weight;
    int64_t rank;
} token_t;

static int by_id(const void *a, const void *b)
{
    uint32_t x = ((const token_t *)a)->id, y = ((const token_t *)b)->id;
    return x < y ? -1 : x > y;
}

static double read_double_attr(hid_t f, const char *name)
{
    double v = NAN;
    hid_t a = H5Aopen(f, name, H5P_DEFAULT);
    assert_true(a >= 0);
    H5Aread(a, H5T_NATIVE_DOUBLE, &v);
    H5Aclose(a);
    return v;
}

static void read_vector(hid_t f, const char *path, hid_t type, void *out, size_t n)
{
    hid_t d = H5Dopen2(f, path, H5P_DEFAULT);
    assert_true(d >= 0);
    hid_t sp = H5Dget_space(d);
    assert_int_equal(H5Sget_simple_extent_npoints(sp), (hssize_t)n);
    assert_true(H5Dread(d, type, H5S_ALL, H5S_ALL, H5P_DEFAULT, out) >= 0);
    H5Sclose(sp);
    H5Dclose(d);
}

static void test_planted_model(void **state)
{
    const char *out = io_path(scratch, "synth");
    erase_synth_options_t o = options(out, 3);
    erase_synth_summary_t s;
    MUST(erase_synth_write(&o, &s));
    assert_int_equal(s.rows, ROWS);
    assert_int_equal(s.shards, 3);
    assert_true(fabs(s.base_rate - 0.25) < 0.015);
    assert_true(s.ne > 0.6 && s.ne < 0.9);
    assert_int_equal(io_count_files(out, ".tmp"), 0);

    /* the planted parameters, read independently */
    hid_t f = H5Fopen(io_path(out, ERASE_SYNTH_PLANTED_NAME), H5F_ACC_RDONLY, H5P_DEFAULT);
    assert_true(f >= 0);
    double bias = read_double_attr(f, "bias"), ne_attr = read_double_attr(f, "ne");
    assert_true(bias == s.bias);
    assert_true(ne_attr == s.ne);
    double dense_w[13];
    int64_t vocab[26];
    read_vector(f, "/dense/weight", H5T_NATIVE_DOUBLE, dense_w, 13);
    read_vector(f, "/sparse/vocab", H5T_NATIVE_INT64, vocab, 26);
    token_t *tokens[26];
    for (int k = 0; k < 26; k++) {
        assert_true(vocab[k] >= 3 && vocab[k] <= 2000);
        uint32_t *ids = malloc(sizeof(uint32_t) * (size_t)vocab[k]);
        double *w = malloc(sizeof(double) * (size_t)vocab[k]);
        char path[64];
        snprintf(path, sizeof path, "/sparse/C%d/id", k + 1);
        read_vector(f, path, H5T_NATIVE_UINT32, ids, (size_t)vocab[k]);
        snprintf(path, sizeof path, "/sparse/C%d/weight", k + 1);
        read_vector(f, path, H5T_NATIVE_DOUBLE, w, (size_t)vocab[k]);
        tokens[k] = malloc(sizeof(token_t) * (size_t)vocab[k]);
        for (int64_t j = 0; j < vocab[k]; j++)
            tokens[k][j] = (token_t){ ids[j], w[j], j };
        qsort(tokens[k], (size_t)vocab[k], sizeof(token_t), by_id);
        for (int64_t j = 1; j < vocab[k]; j++)
            assert_true(tokens[k][j].id != tokens[k][j - 1].id); /* ids never collide */
        free(ids);
        free(w);
    }
    H5Fclose(f);

    /* the NE of the planted model on the rows as the reader delivers them */
    erase_reader_options_t ro = erase_reader_options_default();
    ro.global_batch = ROWS;
    ro.shuffle = 0;
    ro.prefetch = 0;
    ro.drop_last = 0;
    const char *in[1] = { out };
    erase_reader_t *r;
    MUST(erase_ctr_reader_open(in, 1, &ro, &r));
    erase_ctr_batch_t b;
    MUST(erase_ctr_reader_next(r, &b));
    assert_int_equal(b.size, ROWS);
    double loss = 0, clicks = 0;
    int64_t count[26][2] = { { 0 } }, missing[26] = { 0 };
    for (int64_t i = 0; i < ROWS; i++) {
        double z = bias;
        for (int j = 0; j < 13; j++)
            z += dense_w[j] * b.dense[i * 13 + j];
        for (int k = 0; k < 26; k++) {
            uint32_t id = b.sparse[i * 26 + k];
            if (id == ERASE_CTR_SPARSE_MISSING) {
                missing[k]++;
                continue;
            }
            token_t key = { id, 0, 0 };
            token_t *t = bsearch(&key, tokens[k], (size_t)vocab[k], sizeof(token_t), by_id);
            if (!t)
                fail_msg("row %lld C%d: id %08x is not a planted token", (long long)i, k + 1, id);
            z += t->weight;
            if (t->rank < 2)
                count[k][t->rank]++;
        }
        double y = b.label[i];
        clicks += y;
        loss += y > 0 ? log1p(exp(-z)) : log1p(exp(z));
    }
    erase_reader_close(r);
    double p = clicks / ROWS, h = -(p * log(p) + (1 - p) * log(1 - p)), ne = loss / ROWS / h;
    print_message("planted model: NE %.6f reported, %.6f recomputed from planted.h5 and the reader's inputs; "
                  "base rate %.4f\n", s.ne, ne, p);
    assert_true(fabs(ne - s.ne) < 1e-5);
    assert_true(fabs(p - s.base_rate) < 1e-12);

    /* documented missing rates and Zipf popularity (s = 1.1: rank 0 / rank 1 = 2^1.1) */
    assert_int_equal(missing[0], 0);
    assert_true(fabs((double)missing[21] / ROWS - 0.818) < 0.01);  /* C22 */
    assert_true(fabs((double)missing[18] / ROWS - 0.45) < 0.01);   /* C19 */
    assert_true(fabs((double)s.stats.dense_missing[11] / ROWS - 0.773) < 0.01); /* I12 */
    assert_int_equal(s.stats.dense_missing[1], 0);                  /* I2 */
    double ratio = (double)count[2][0] / (double)count[2][1];       /* C3: 2000 tokens */
    print_message("C3: rank 0 drawn %lld times, rank 1 %lld: ratio %.3f (Zipf 1.1: %.3f)\n",
                  (long long)count[2][0], (long long)count[2][1], ratio, pow(2.0, 1.1));
    assert_true(fabs(ratio / pow(2.0, 1.1) - 1) < 0.1);
    for (int k = 0; k < 26; k++)
        free(tokens[k]);
}

static void test_reproducible(void **state)
{
    erase_synth_options_t o = options(io_path(scratch, "same"), 3);
    o.rows = 20000;
    MUST(erase_synth_write(&o, NULL));
    o.out_dir = io_path(scratch, "same-again");
    o.write.compress = 0;
    o.shard_rows = 7000; /* layout does not change the rows */
    MUST(erase_synth_write(&o, NULL));
    o.out_dir = io_path(scratch, "other");
    o.seed = 4;
    MUST(erase_synth_write(&o, NULL));
    io_rows_t a, b, c;
    MUST(io_rows_load(io_path(scratch, "same"), &a));
    MUST(io_rows_load(io_path(scratch, "same-again"), &b));
    MUST(io_rows_load(io_path(scratch, "other"), &c));
    assert_int_equal(a.n, 20000);
    assert_int_equal(b.n, 20000);
    assert_memory_equal(a.label, b.label, 20000);
    assert_memory_equal(a.dense, b.dense, 20000 * 13 * 4);
    assert_memory_equal(a.sparse, b.sparse, 20000 * 26 * 4);
    assert_true(memcmp(a.sparse, c.sparse, 20000 * 26 * 4) != 0);
    io_rows_free(&a);
    io_rows_free(&b);
    io_rows_free(&c);

    o.rows = 0;
    assert_int_equal(erase_synth_write(&o, NULL), ERASE_ERR_INVALID);
    assert_string_equal(erase_error_reason(), "rows must be >= 1, got 0");
    print_message("seed 3 twice (other shard size, compression): identical rows; seed 4: other rows\n");
}

/* Mean main loss of `net` over one epoch of `r` (forward and backward
 * only); with `opt`, also trains. Returns the sum of labels in *clicks. */
static double run_epoch(erase_network_t *net, erase_optimizer_t *opt, erase_stream_t *s, erase_reader_t *r,
                        double *clicks, int64_t *rows)
{
    double loss = 0;
    *clicks = 0;
    *rows = 0;
    int blocks = erase_network_blocks(net);
    for (;;) {
        erase_ctr_batch_t b;
        MUST(erase_ctr_reader_next(r, &b));
        if (b.end_of_epoch)
            break;
        erase_batch_t in = { .size = (int)b.size, .dense = b.dense, .sparse = b.sparse, .label = b.label };
        MUST(erase_train_step_serial(net, opt, s, &in));
        MUST(erase_stream_synchronize(s));
        double main_loss = erase_network_losses(net)[blocks - 1];
        assert_true(isfinite(main_loss));
        loss += main_loss * (double)b.size;
        for (int64_t i = 0; i < b.size; i++)
            *clicks += b.label[i];
        *rows += b.size;
    }
    return loss / (double)*rows;
}

static void test_trains_a_model(void **state)
{
    const char *out = io_path(scratch, "train");
    erase_synth_options_t so = options(out, 9);
    so.max_vocab = 100;
    so.rows = 40000;
    erase_synth_summary_t sum;
    MUST(erase_synth_write(&so, &sum));

    erase_model_config_t cfg = erase_model_config_default(ERASE_MODEL_CTR);
    cfg.ctr.embedding_dim = 8;
    for (int f = 0; f < ERASE_CTR_FIELDS; f++)
        cfg.ctr.table_rows[f] = 1009;
    cfg.ctr.bottom_layers = 2;
    cfg.ctr.bottom_mlp[0] = 16;
    cfg.ctr.bottom_mlp[1] = 8;
    cfg.ctr.subarch_width = 32;
    cfg.ctr.subarchs = 2;
    cfg.cut_mask = 0;
    erase_device_options_t dopt = erase_device_options_default();
    dopt.blas_threads = 1;
    erase_device_t *dev;
    erase_stream_t *s;
    erase_network_t *net;
    erase_optimizer_t *opt;
    MUST(erase_device_open(&dopt, &dev));
    MUST(erase_stream_create(dev, &s));
    MUST(erase_network_create(dev, &cfg, 256, &net));
    erase_optim_config_t oc = erase_optim_config_default();
    MUST(erase_optimizer_create(net, &oc, &opt));

    erase_reader_options_t ro = erase_reader_options_default();
    ro.global_batch = 256;
    ro.part = ERASE_READER_PART_TRAIN;
    ro.eval_fraction = 0.25;
    const char *in[1] = { out };
    erase_reader_t *train, *eval;
    MUST(erase_ctr_reader_open(in, 1, &ro, &train));
    MUST(erase_ctr_reader_check_tables(train, ERASE_CTR_DENSE, ERASE_CTR_FIELDS, cfg.ctr.table_rows));
    ro.part = ERASE_READER_PART_EVAL;
    ro.drop_last = 0;
    ro.shuffle = 0;
    MUST(erase_ctr_reader_open(in, 1, &ro, &eval));
    double clicks, ne[3] = { 0 };
    int64_t rows;
    for (int e = 0; e < 3; e++) {
        if (e > 0)
            run_epoch(net, opt, s, train, &clicks, &rows);
        double loss = run_epoch(net, NULL, s, eval, &clicks, &rows);
        double p = clicks / (double)rows;
        ne[e] = loss / -(p * log(p) + (1 - p) * log(1 - p));
        assert_int_equal(rows, 10000);
    }
    print_message("ctr (D 8, tables 1009, 2 sub-architectures) on planted data, eval NE: %.4f untrained, %.4f "
                  "after 1 epoch, %.4f after 2 (planted model on all rows: %.4f)\n",
                  ne[0], ne[1], ne[2], sum.ne);
    assert_true(ne[1] < ne[0]);
    assert_true(ne[2] < 0.97);
    assert_true(ne[2] > sum.ne - 0.03);
    erase_reader_close(train);
    erase_reader_close(eval);
    erase_optimizer_destroy(opt);
    erase_network_destroy(net);
    erase_stream_destroy(s);
    erase_device_close(dev);
}

static int setup(void **state)
{
    scratch = io_scratch_make("synth");
    return scratch ? 0 : -1;
}

static int teardown(void **state)
{
    io_scratch_remove(scratch);
    return 0;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_planted_model),
        cmocka_unit_test(test_reproducible),
        cmocka_unit_test(test_trains_a_model),
    };
    return cmocka_run_group_tests_name("synthetic data from a planted model", tests, setup, teardown);
}
