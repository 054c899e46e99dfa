/*
 * Synthetic data from a planted model (io/synth.h): the parameters recorded
 * in planted.h5 reproduce, from the shards as the reader delivers them, the
 * NE the generator reported; every id is a planted token; the base rate,
 * missing rates and Zipf popularity are those documented; the same seed
 * gives the same rows and another seed other rows.
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
#include "tests/io/io_util.h"

#define MUST(call)                                                                         \
    do {                                                                                   \
        erase_status_t must_s_ = (call);                                                   \
        if (must_s_ != ERASE_OK)                                                           \
            fail_msg("%s failed: %s", #call, erase_error_message());                       \
    } while (0)

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
    erase_ctr_reader_options_t ro = erase_ctr_reader_options_default();
    ro.global_batch = ROWS;
    ro.shuffle = 0;
    ro.prefetch = 0;
    ro.drop_last = 0;
    const char *in[1] = { out };
    erase_ctr_reader_t *r;
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
    erase_ctr_reader_close(r);
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
    assert_string_equal(io_error_root(), "rows must be >= 1, got 0");
    print_message("seed 3 twice (other shard size, compression): identical rows; seed 4: other rows\n");
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
    };
    return cmocka_run_group_tests_name("synthetic data from a planted model", tests, setup, teardown);
}
