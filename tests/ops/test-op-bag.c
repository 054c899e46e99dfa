/*
 * Multi-hot embedding bags (lib/ops/ops.h, issue 35) on the CPU backend:
 * erase_embedding_bag_forward / _backward against torch.nn.EmbeddingBag
 * with offsets (tests/data/reference/embedding_bag.h5, made by
 * tests/reference/make_embedding_bag_reference.py) within 1e-6, sum and
 * mean; against a direct reference of the documented order (pooling in
 * column order, gradient sums in (sample, column) order, chunked) bit for
 * bit, with rows touched by hundreds of ids; the double-precision kernels
 * against central finite differences; the one-hot layout bitwise equal to
 * erase_embedding_forward / _backward; erase_embedding_pool of the looked
 * up rows bitwise equal to the lookup; erase_shard_route_bag's round trip
 * over 2 ranks (route, look up at the owner, gather, pool) bitwise equal
 * to the replicated lookup, padding columns routed nowhere; the failures
 * with their exact text.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "lib/device/device.h"
#include "lib/ops/cpu/kernels.h"
#include "lib/ops/ops.h"
#include "tests/cpu_device.h"
#include "tests/expect_error.h"
#include "tests/nn/h5ref.h"

#define MUST(call) assert_int_equal((call), ERASE_OK)
#define MISSING 0xFFFFFFFFu
#define MAXF 8

static erase_device_t *dev;
static erase_stream_t *stream;
static erase_test_arena_t arena;

static void *dmalloc(size_t bytes, int fill) { return erase_test_arena_alloc(&arena, bytes, fill); }


/* A case: fields, their hotness and tables, a batch of ids and lengths,
 * the output gradient; all in (CPU device) memory of the arena. */
typedef struct {
    int batch, fields, dim, H;
    erase_bag_t bag;
    uint32_t rows[MAXF];
    uint32_t *ids, *lengths;
    float *tables[MAXF], *dout;
} bag_case_t;

static uint64_t rng_state;

static uint32_t next_u32(void)
{
    rng_state = rng_state * 6364136223846793005ull + 1442695040888963407ull;
    return (uint32_t)(rng_state >> 32);
}

static float next_float(void) { return (float)(next_u32() >> 8) / 16777216.0f - 0.5f; }

/* A random case: lengths 1 .. hotness (sample 0 full, sample 1 one id),
 * ids random with ~1/8 missing and ~1/8 repeats of the bag's first id;
 * padding columns hold 0xAAAAAAAA (a value the op must never read: tables
 * of 3 rows would map it to a row, so a read shows). */
static bag_case_t random_case(int batch, int fields, int dim, const int *hotness, const uint32_t *rows,
                              erase_bag_pooling_t pooling, uint64_t seed)
{
    bag_case_t c;
    memset(&c, 0, sizeof c);
    rng_state = seed;
    c.batch = batch, c.fields = fields, c.dim = dim;
    for (int f = 0; f < fields; f++) {
        c.bag.hotness[f] = hotness[f];
        c.rows[f] = rows[f];
        c.H += hotness[f];
        c.tables[f] = dmalloc(sizeof(float) * rows[f] * (size_t)dim, 0);
        for (size_t i = 0; i < rows[f] * (size_t)dim; i++)
            c.tables[f][i] = next_float();
    }
    c.bag.pooling = pooling;
    c.ids = dmalloc(sizeof(uint32_t) * (size_t)batch * c.H, 0xAA);
    c.lengths = dmalloc(sizeof(uint32_t) * (size_t)batch * fields, 0);
    c.dout = dmalloc(sizeof(float) * (size_t)batch * fields * dim, 0);
    for (int r = 0; r < batch; r++)
        for (int f = 0, off = 0; f < fields; off += hotness[f], f++) {
            uint32_t n = r == 0 ? (uint32_t)hotness[f] : r == 1 ? 1 : 1 + next_u32() % (uint32_t)hotness[f];
            c.lengths[r * fields + f] = n;
            uint32_t *at = c.ids + (size_t)r * c.H + off;
            for (uint32_t j = 0; j < n; j++) {
                uint32_t pick = next_u32() % 8;
                at[j] = pick == 0 ? MISSING : pick == 1 && j > 0 ? at[0] : next_u32();
            }
        }
    for (size_t i = 0; i < (size_t)batch * fields * dim; i++)
        c.dout[i] = next_float();
    c.bag.lengths = c.lengths;
    return c;
}

/* Outputs of the op on the stream: out [batch, fields, dim], and each
 * field's sparse gradient (room for batch x hotness rows). */
typedef struct {
    float *out;
    uint32_t *grad_rows[MAXF];
    float *grad_values[MAXF];
    int *count;
} bag_result_t;

static bag_result_t run_case(const bag_case_t *c, const erase_bag_t *bag)
{
    bag_result_t res;
    res.out = dmalloc(sizeof(float) * (size_t)c->batch * c->fields * c->dim, 0x5A);
    res.count = dmalloc(sizeof(int) * MAXF, 0x5A);
    for (int f = 0; f < c->fields; f++) {
        size_t n = (size_t)c->batch * (bag ? (size_t)bag->hotness[f] : 1);
        res.grad_rows[f] = dmalloc(sizeof(uint32_t) * n, 0x5A);
        res.grad_values[f] = dmalloc(sizeof(float) * n * (size_t)c->dim, 0x5A);
    }
    MUST(erase_embedding_bag_forward(stream, c->batch, c->fields, c->dim, c->rows, bag, c->ids,
                                     (const float *const *)c->tables, res.out));
    MUST(erase_embedding_bag_backward(stream, c->batch, c->fields, c->dim, c->rows, bag, c->ids, c->dout,
                                      res.grad_rows, res.grad_values, res.count));
    MUST(erase_stream_synchronize(stream));
    return res;
}

static int first_column(const bag_case_t *c, int f)
{
    int off = 0;
    for (int g = 0; g < f; g++)
        off += c->bag.hotness[g];
    return off;
}

/* ---- the direct reference: the documented order, written out ---------- */

static void reference_forward(const bag_case_t *c, float *out)
{
    for (int r = 0; r < c->batch; r++)
        for (int f = 0; f < c->fields; f++) {
            const uint32_t *ids = c->ids + (size_t)r * c->H + first_column(c, f);
            int len = (int)c->lengths[r * c->fields + f];
            for (int d = 0; d < c->dim; d++) {
                float acc = 0;
                for (int j = 0; j < len; j++) {
                    float x = c->tables[f][(size_t)erase_embedding_row(ids[j], c->rows[f]) * c->dim + d];
                    acc = j == 0 ? x : acc + x;
                }
                if (c->bag.pooling == ERASE_BAG_MEAN && len > 1)
                    acc /= (float)len;
                out[((size_t)r * c->fields + f) * c->dim + d] = acc;
            }
        }
}

/* Row `row` of field f's gradient: its contributions in (sample, column)
 * order, chunks of ERASE_SPARSE_SUM_CHUNK summed from 0, then the chunk
 * sums from 0. Returns the contributions (0: the row is not touched). */
static int reference_row_grad(const bag_case_t *c, int f, uint32_t row, float *g)
{
    int n = 0;
    float part[64] = { 0 }, *total = g;
    for (int d = 0; d < c->dim; d++)
        total[d] = 0;
    for (int r = 0; r < c->batch; r++) {
        int len = (int)c->lengths[r * c->fields + f];
        const uint32_t *ids = c->ids + (size_t)r * c->H + first_column(c, f);
        for (int j = 0; j < len; j++) {
            if (erase_embedding_row(ids[j], c->rows[f]) != row)
                continue;
            if (n % ERASE_SPARSE_SUM_CHUNK == 0)
                for (int d = 0; d < c->dim; d++)
                    part[d] = 0;
            for (int d = 0; d < c->dim; d++) {
                float x = c->dout[((size_t)r * c->fields + f) * c->dim + d];
                part[d] += c->bag.pooling == ERASE_BAG_MEAN ? x / (float)len : x;
            }
            n++;
            if (n % ERASE_SPARSE_SUM_CHUNK == 0)
                for (int d = 0; d < c->dim; d++)
                    total[d] += part[d];
        }
    }
    if (n % ERASE_SPARSE_SUM_CHUNK)
        for (int d = 0; d < c->dim; d++)
            total[d] += part[d];
    return n;
}

/* Field f's sparse gradient as the documented order gives it, bit for bit. */
static void check_gradient_bitwise(const bag_case_t *c, const bag_result_t *res, int f)
{
    float g[64];
    int k = 0;
    for (uint32_t row = 0; row < c->rows[f]; row++) {
        if (!reference_row_grad(c, f, row, g))
            continue;
        assert_true(k < res->count[f]);
        assert_int_equal(res->grad_rows[f][k], row);
        if (memcmp(g, res->grad_values[f] + (size_t)k * c->dim, sizeof(float) * (size_t)c->dim) != 0)
            fail_msg("field %d row %u: the gradient differs from the documented order's", f, row);
        k++;
    }
    assert_int_equal(k, res->count[f]);
}

static void direct(erase_bag_pooling_t pooling)
{
    /* field 2's 3 rows take ~B x 100 / 3 ids each: chunks of 64 and more */
    const int hotness[4] = { 2, 7, 100, 1 };
    const uint32_t rows[4] = { 50, 13, 3, 9 };
    bag_case_t c = random_case(16, 4, 5, hotness, rows, pooling, 11 + pooling);
    bag_result_t res = run_case(&c, &c.bag);
    float *want = malloc(sizeof(float) * (size_t)c.batch * c.fields * c.dim);
    reference_forward(&c, want);
    assert_memory_equal(want, res.out, sizeof(float) * (size_t)c.batch * c.fields * c.dim);
    for (int f = 0; f < c.fields; f++)
        check_gradient_bitwise(&c, &res, f);
    print_message("%s pooling: outputs and gradients bitwise the documented order's (field 2: %d rows, "
                  "up to %d ids)\n", pooling == ERASE_BAG_MEAN ? "mean" : "sum", res.count[2], 16 * 100);
    free(want);
}

static void test_direct_sum(void **state) { direct(ERASE_BAG_SUM); }
static void test_direct_mean(void **state) { direct(ERASE_BAG_MEAN); }

/* ---- PyTorch ------------------------------------------------------------- */

static void torch_reference(const char *mode, erase_bag_pooling_t pooling)
{
    hid_t h5 = h5ref_open("embedding_bag.h5");
    int hotness[MAXF];
    uint32_t rows[MAXF];
    long F = h5ref_count(h5, "hotness");
    assert_true(F > 0 && F <= MAXF);
    assert_int_equal(h5ref_read(h5, "hotness", H5T_NATIVE_INT, hotness, (size_t)F), 0);
    assert_int_equal(h5ref_read(h5, "rows", H5T_NATIVE_UINT32, rows, (size_t)F), 0);
    long B = h5ref_count(h5, "lengths") / F, D = h5ref_count(h5, "dout") / (B * F);
    bag_case_t c = random_case((int)B, (int)F, (int)D, hotness, rows, pooling, 1); /* shapes; data read below */
    assert_int_equal(h5ref_read(h5, "ids", H5T_NATIVE_UINT32, c.ids, (size_t)(B * c.H)), 0);
    assert_int_equal(h5ref_read(h5, "lengths", H5T_NATIVE_UINT32, c.lengths, (size_t)(B * F)), 0);
    assert_int_equal(h5ref_read(h5, "dout", H5T_NATIVE_FLOAT, c.dout, (size_t)(B * F * D)), 0);
    char path[64];
    for (int f = 0; f < F; f++) {
        snprintf(path, sizeof path, "table/%d", f);
        assert_int_equal(h5ref_read(h5, path, H5T_NATIVE_FLOAT, c.tables[f], rows[f] * (size_t)D), 0);
    }
    bag_result_t res = run_case(&c, &c.bag);
    size_t n = (size_t)(B * F * D);
    float *want = malloc(sizeof(float) * n);
    snprintf(path, sizeof path, "%s/out", mode);
    assert_int_equal(h5ref_read(h5, path, H5T_NATIVE_FLOAT, want, n), 0);
    double worst = 0;
    for (size_t i = 0; i < n; i++)
        worst = fmax(worst, fabs((double)res.out[i] - want[i]));
    free(want);
    double worst_grad = 0;
    for (int f = 0; f < F; f++) {
        size_t m = rows[f] * (size_t)D;
        float *dense = calloc(m, sizeof(float)), *tg = malloc(sizeof(float) * m);
        for (int k = 0; k < res.count[f]; k++)
            memcpy(dense + (size_t)res.grad_rows[f][k] * D, res.grad_values[f] + (size_t)k * D, sizeof(float) * D);
        snprintf(path, sizeof path, "%s/grad/%d", mode, f);
        assert_int_equal(h5ref_read(h5, path, H5T_NATIVE_FLOAT, tg, m), 0);
        for (size_t i = 0; i < m; i++)
            worst_grad = fmax(worst_grad, fabs((double)dense[i] - tg[i]));
        free(dense);
        free(tg);
    }
    H5Fclose(h5);
    print_message("torch.nn.EmbeddingBag mode %s: largest difference %.3g in the outputs, %.3g in the "
                  "gradients\n", mode, worst, worst_grad);
    assert_true(worst <= 1e-6);
    assert_true(worst_grad <= 1e-6);
}

static void test_torch_sum(void **state) { torch_reference("sum", ERASE_BAG_SUM); }
static void test_torch_mean(void **state) { torch_reference("mean", ERASE_BAG_MEAN); }

/* ---- finite differences (double-precision kernels) ------------------------ */

static void finite_differences(erase_bag_pooling_t pooling)
{
    const int hotness[3] = { 3, 1, 4 };
    const uint32_t rows[3] = { 5, 4, 3 };
    bag_case_t c = random_case(5, 3, 3, hotness, rows, pooling, 5 + pooling);
    double *tables[3], *dout = malloc(sizeof(double) * 5 * 3 * 3), *out = malloc(sizeof(double) * 5 * 3 * 3);
    for (int f = 0; f < 3; f++) {
        tables[f] = malloc(sizeof(double) * rows[f] * 3);
        for (size_t i = 0; i < rows[f] * 3; i++)
            tables[f][i] = c.tables[f][i];
    }
    for (int i = 0; i < 45; i++)
        dout[i] = c.dout[i];
    void *scratch = malloc(ERASE_EMBEDDING_SCRATCH_BYTES(5 * 4));
    double worst = 0;
    int checked = 0;
    for (int f = 0; f < 3; f++) {
        uint32_t grow[20];
        double gval[20 * 3];
        int n = erase_k_embedding_bag_backward_field_f64(5, 3, 3, f, rows[f], &c.bag, c.ids, dout, scratch, grow,
                                                         gval);
        for (uint32_t row = 0; row < rows[f]; row++)
            for (int d = 0; d < 3; d++) {
                double analytic = 0, loss[2], eps = 1e-6, keep = tables[f][row * 3 + d];
                for (int k = 0; k < n; k++)
                    analytic = grow[k] == row ? gval[k * 3 + d] : analytic;
                for (int side = 0; side < 2; side++) {
                    tables[f][row * 3 + d] = keep + (side ? eps : -eps);
                    erase_k_embedding_bag_forward_f64(5, 3, 3, c.rows, &c.bag, c.ids,
                                                      (const double *const *)tables, out);
                    loss[side] = 0;
                    for (int i = 0; i < 45; i++)
                        loss[side] += out[i] * dout[i];
                }
                tables[f][row * 3 + d] = keep;
                worst = fmax(worst, fabs((loss[1] - loss[0]) / (2 * eps) - analytic));
                checked++;
            }
    }
    print_message("%s pooling: %d table entries, largest |finite difference - gradient| %.3g\n",
                  pooling == ERASE_BAG_MEAN ? "mean" : "sum", checked, worst);
    assert_true(worst < 1e-7);
    for (int f = 0; f < 3; f++)
        free(tables[f]);
    free(dout);
    free(out);
    free(scratch);
}

static void test_finite_differences(void **state)
{
    finite_differences(ERASE_BAG_SUM);
    finite_differences(ERASE_BAG_MEAN);
}

/* ---- one-hot and pooling equivalences ------------------------------------- */

/* Hotness all 1 with lengths of 1, and hotness 3 without lengths (the
 * first column only), give erase_embedding_forward / _backward's results
 * bit for bit. */
static void test_one_hot_bitwise(void **state)
{
    const int ones[4] = { 1, 1, 1, 1 }, three[4] = { 3, 3, 3, 3 };
    const uint32_t rows[4] = { 7, 3, 11, 2 };
    for (int variant = 0; variant < 2; variant++) {
        bag_case_t c = random_case(9, 4, 6, variant ? three : ones, rows, ERASE_BAG_MEAN, 21);
        bag_result_t bag;
        if (variant) {
            c.bag.lengths = NULL;
            bag = run_case(&c, &c.bag);
        } else {
            bag = run_case(&c, &c.bag);
        }
        bag_case_t plain = c; /* the first column of each field, one id per field */
        plain.ids = dmalloc(sizeof(uint32_t) * 9 * 4, 0);
        for (int r = 0; r < 9; r++)
            for (int f = 0; f < 4; f++)
                plain.ids[r * 4 + f] = c.ids[(size_t)r * c.H + first_column(&c, f)];
        bag_result_t one = run_case(&plain, NULL);
        assert_memory_equal(bag.out, one.out, sizeof(float) * 9 * 4 * 6);
        for (int f = 0; f < 4; f++) {
            assert_int_equal(bag.count[f], one.count[f]);
            assert_memory_equal(bag.grad_rows[f], one.grad_rows[f], sizeof(uint32_t) * (size_t)one.count[f]);
            assert_memory_equal(bag.grad_values[f], one.grad_values[f], sizeof(float) * (size_t)one.count[f] * 6);
        }
    }
}

/* The looked-up rows of every column, pooled by erase_embedding_pool: the
 * bag lookup's output bit for bit (the sharded path's pooling). */
static void test_pool_matches_lookup(void **state)
{
    const int hotness[3] = { 4, 2, 9 };
    const uint32_t rows[3] = { 6, 30, 5 };
    for (int p = ERASE_BAG_SUM; p <= ERASE_BAG_MEAN; p++) {
        bag_case_t c = random_case(7, 3, 5, hotness, rows, (erase_bag_pooling_t)p, 31);
        bag_result_t res = run_case(&c, &c.bag);
        float *vecs = dmalloc(sizeof(float) * 7 * (size_t)c.H * 5, 0x5A), *out = dmalloc(sizeof(float) * 7 * 3 * 5, 0);
        for (int r = 0; r < 7; r++)
            for (int f = 0; f < 3; f++)
                for (int j = 0; j < (int)c.lengths[r * 3 + f]; j++) {
                    size_t col = (size_t)r * c.H + first_column(&c, f) + j;
                    memcpy(vecs + col * 5, c.tables[f] + (size_t)erase_embedding_row(c.ids[col], rows[f]) * 5,
                           sizeof(float) * 5);
                }
        MUST(erase_embedding_pool(stream, 7, 3, 5, &c.bag, vecs, out));
        MUST(erase_stream_synchronize(stream));
        assert_memory_equal(out, res.out, sizeof(float) * 7 * 3 * 5);
    }
}

/*
 * The row-wise exchange of one process's batch over 2 ranks, done by
 * hand: erase_shard_route_bag, each slot's rows looked up in its owner's
 * part (erase_gather_rows), the vectors unpacked by pos into [n, H], then
 * pooled: bitwise the replicated bag lookup; padding columns get pos =
 * pad and route nothing (the counts are the present ids each rank holds).
 */
static void test_route_bag_round_trip(void **state)
{
    enum { T = 2, R = 2, N = 6, DIM = 3 };
    const int hotness[T] = { 3, 2 };
    const uint32_t rows[T] = { 10, 7 };
    bag_case_t c = random_case(N, T, DIM, hotness, rows, ERASE_BAG_SUM, 41);
    int cap = N * 3;
    int64_t *bounds = dmalloc(sizeof(int64_t) * T * (R + 1), 0);
    const int64_t b[T][R + 1] = { { 0, 5, 10 }, { 0, 3, 7 } };
    memcpy(bounds, b, sizeof b);
    int32_t *slot = dmalloc(sizeof(int32_t) * T * R, 0);
    const int32_t sl[T][R] = { { 0, 0 }, { 1, 1 } };
    memcpy(slot, sl, sizeof sl);
    uint32_t *table_rows = dmalloc(sizeof rows, 0), *send = dmalloc(sizeof(uint32_t) * R * T * cap, 0x5A);
    memcpy(table_rows, rows, sizeof rows);
    uint32_t *pos = dmalloc(sizeof(uint32_t) * N * (size_t)c.H, 0x5A);
    int *cnt = dmalloc(sizeof(int) * R * T, 0x5A);
    MUST(erase_shard_route_bag(stream, N, T, &c.bag, c.ids, table_rows, R, bounds, slot, T, cap, send, cnt, pos));
    /* the owners' lookups, into the slots' vectors */
    float *vec = dmalloc(sizeof(float) * R * T * (size_t)cap * DIM, 0);
    for (int r = 0; r < R; r++)
        for (int t = 0; t < T; t++) {
            size_t q = (size_t)(r * T + sl[t][r]) * cap;
            MUST(erase_gather_rows(stream, cap, DIM, send + q, 1, c.tables[t] + b[t][r] * DIM, b[t][r + 1] - b[t][r],
                                   vec + q * DIM, DIM));
        }
    float *vecs = dmalloc(sizeof(float) * N * (size_t)c.H * DIM, 0x5A), *out = dmalloc(sizeof(float) * N * T * DIM, 0);
    MUST(erase_gather_rows(stream, N * c.H, DIM, pos, 1, vec, (int64_t)R * T * cap, vecs, DIM));
    MUST(erase_embedding_pool(stream, N, T, DIM, &c.bag, vecs, out));
    bag_result_t res = run_case(&c, &c.bag);
    assert_memory_equal(out, res.out, sizeof(float) * N * T * DIM);
    int want[R][T] = { { 0 } }, pads = 0, routed = 0;
    for (int i = 0; i < N; i++)
        for (int t = 0; t < T; t++)
            for (int j = 0; j < hotness[t]; j++) {
                size_t col = (size_t)i * c.H + first_column(&c, t) + j;
                if (j >= (int)c.lengths[i * T + t]) {
                    assert_int_equal(pos[col], ERASE_SHARD_PAD);
                    pads++;
                    continue;
                }
                int64_t row = erase_embedding_row(c.ids[col], rows[t]);
                want[row >= b[t][1]][t]++;
                routed++;
            }
    for (int r = 0; r < R; r++)
        for (int t = 0; t < T; t++)
            assert_int_equal(cnt[r * T + sl[t][r]], want[r][t]);
    print_message("route: %d ids routed, %d padding columns routed nowhere; the pooled round trip is the "
                  "replicated lookup bit for bit\n", routed, pads);
    assert_true(pads > 0);
}

/* ---- failures -------------------------------------------------------------- */

#define expect_run_failure erase_test_expect_run_failure

static void test_failures(void **state)
{
    const int hotness[2] = { 3, 2 };
    const uint32_t rows[2] = { 5, 5 };
    bag_case_t c = random_case(3, 2, 2, hotness, rows, ERASE_BAG_SUM, 51);
    float *out = dmalloc(sizeof(float) * 3 * 2 * 2, 0);
    erase_stream_t *s;
    c.lengths[1 * 2 + 0] = 0;
    MUST(erase_stream_create(dev, &s));
    MUST(erase_embedding_bag_forward(s, 3, 2, 2, c.rows, &c.bag, c.ids, (const float *const *)c.tables, out));
    expect_run_failure(s, "embedding bag: sample 1 field 0 has 0 ids, expected 1 to 3");
    c.lengths[1 * 2 + 0] = 1;
    c.lengths[2 * 2 + 1] = 3;
    MUST(erase_stream_create(dev, &s));
    MUST(erase_embedding_pool(s, 3, 2, 2, &c.bag, out, out));
    expect_run_failure(s, "embedding bag: sample 2 field 1 has 3 ids, expected 1 to 2");
    uint32_t *send = dmalloc(sizeof(uint32_t) * 2 * 9, 0), *pos = dmalloc(sizeof(uint32_t) * 3 * 5, 0);
    int *cnt = dmalloc(sizeof(int) * 2, 0);
    int64_t *bounds = dmalloc(sizeof(int64_t) * 4, 0);
    int32_t *slot = dmalloc(sizeof(int32_t) * 2, 0);
    const int64_t bd[4] = { 0, 5, 0, 5 };
    memcpy(bounds, bd, sizeof bd);
    slot[0] = 0, slot[1] = 1;
    MUST(erase_stream_create(dev, &s));
    MUST(erase_shard_route_bag(s, 2, 2, &c.bag, c.ids, c.rows, 1, bounds, slot, 2, 6, send, cnt, pos));
    MUST(erase_stream_synchronize(s));
    MUST(erase_shard_route_bag(s, 3, 2, &c.bag, c.ids, c.rows, 1, bounds, slot, 2, 9, send, cnt, pos));
    expect_run_failure(s, "shard route: sample 2 table 1 has 3 ids, expected 1 to 2");
    /* at the call */
    erase_test_expect_error(erase_shard_route_bag(stream, 3, 2, &c.bag, c.ids, c.rows, 1, bounds, slot, 2, 8, send,
                                                  cnt, pos),
                            ERASE_ERR_INVALID, "shard route: 3 samples of up to 3 ids are 9 entries, expected 0 to "
                                               "capacity 8");
    c.bag.hotness[1] = 0;
    erase_test_expect_error(erase_embedding_bag_forward(stream, 3, 2, 2, c.rows, &c.bag, c.ids,
                                                        (const float *const *)c.tables, out),
                            ERASE_ERR_INVALID, "embedding bag: field 1 has hotness 0 (at least 1)");
    erase_test_expect_error(erase_embedding_pool(stream, 3, 2, 2, NULL, out, out), ERASE_ERR_INVALID,
                            "embedding pool: bad shape batch=3 fields=2 dim=2 or NULL layout");
}

ERASE_TEST_CPU_STREAM_FIXTURE(dev, stream, arena)

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_direct_sum, free_test),
        cmocka_unit_test_teardown(test_direct_mean, free_test),
        cmocka_unit_test_teardown(test_torch_sum, free_test),
        cmocka_unit_test_teardown(test_torch_mean, free_test),
        cmocka_unit_test_teardown(test_finite_differences, free_test),
        cmocka_unit_test_teardown(test_one_hot_bitwise, free_test),
        cmocka_unit_test_teardown(test_pool_matches_lookup, free_test),
        cmocka_unit_test_teardown(test_route_bag_round_trip, free_test),
        cmocka_unit_test_teardown(test_failures, free_test),
    };
    return cmocka_run_group_tests_name("embedding bag ops", tests, setup, teardown);
}
