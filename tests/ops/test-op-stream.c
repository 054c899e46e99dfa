/*
 * The stream ops of lib/ops/ops.h on the CPU backend: the launch plumbing
 * (argument copies, per-field loops, the loss written to device memory)
 * gives bitwise the results of the _f32 kernels called directly; rows
 * touched more than 64 times are summed in the chunked order of ops.h; a failure
 * inside a kernel (a label out of range) is the stream's sticky error with
 * its message; impossible shapes fail at enqueue with a precise message and
 * enqueue nothing; the gpt model's ops likewise (a token out of range is the
 * stream's error naming it).
 */
#include <limits.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "lib/core/rng.h"
#include "lib/device/device.h"
#include "lib/ops/cpu/kernels.h"
#include "lib/ops/ops.h"
#include "tests/cpu_device.h"
#include "tests/expect_error.h"

#define MUST(call) assert_int_equal((call), ERASE_OK)

static erase_device_t *dev;
static erase_stream_t *stream;

/* ---- device memory: every block of a test is freed at its end ----------- */

static erase_test_arena_t arena;

/* Device memory filled with byte `fill` (so that an unwritten output shows). */
static void *dmalloc(size_t bytes, int fill) { return erase_test_arena_alloc(&arena, bytes, fill); }

static float *fbuf(size_t n, int fill) { return dmalloc(n * sizeof(float), fill); }

static void free_all(void) { erase_test_arena_free(&arena); }

static int free_test(void **state)
{
    free_all();
    return 0;
}

static void fill_f(uint64_t *rng, float *x, size_t n, float lo, float hi)
{
    for (size_t i = 0; i < n; i++)
        x[i] = erase_rng_uniform(rng, lo, hi);
}

/* ---- 3. stream ops give the kernels' results bitwise -------------------- */

static void test_linear_bitwise(void **state)
{
    const int B = 9, I = 33, O = 17;
    uint64_t rng = 301;
    size_t nx = (size_t)B * I, nw = (size_t)O * I, ny = (size_t)B * O;
    float *x = fbuf(nx, 0), *w = fbuf(nw, 0), *b = fbuf(O, 0), *dy = fbuf(ny, 0);
    fill_f(&rng, x, nx, -1, 1);
    fill_f(&rng, w, nw, -1, 1);
    fill_f(&rng, b, O, -1, 1);
    fill_f(&rng, dy, ny, -1, 1);
    /* stream outputs start as NaN bytes, direct ones as zeros */
    float *y = fbuf(ny, 0xff), *dx = fbuf(nx, 0xff), *dw = fbuf(nw, 0xff), *db = fbuf(O, 0xff);
    float *dw2 = fbuf(nw, 0xff), *ynb = fbuf(ny, 0xff);
    float *y_k = fbuf(ny, 0), *dx_k = fbuf(nx, 0), *dw_k = fbuf(nw, 0), *db_k = fbuf(O, 0);
    float *ynb_k = fbuf(ny, 0);
    MUST(erase_linear_forward(stream, B, I, O, x, w, b, y));
    MUST(erase_linear_forward(stream, B, I, O, x, w, NULL, ynb));
    MUST(erase_linear_backward(stream, B, I, O, x, w, dy, dx, dw, db));
    MUST(erase_linear_backward(stream, B, I, O, x, w, dy, NULL, dw2, NULL));
    MUST(erase_stream_synchronize(stream));
    erase_k_linear_forward_f32(B, I, O, x, w, b, y_k);
    erase_k_linear_forward_f32(B, I, O, x, w, NULL, ynb_k);
    erase_k_linear_backward_f32(B, I, O, x, w, dy, dx_k, dw_k, db_k);
    print_message("linear %dx%d -> %d: stream y, y (no bias), dx, dw, db, dw (dx = db = NULL) "
                  "compared bitwise with the f32 kernels\n", B, I, O);
    assert_memory_equal(y, y_k, ny * sizeof(float));
    assert_memory_equal(ynb, ynb_k, ny * sizeof(float));
    assert_memory_equal(dx, dx_k, nx * sizeof(float));
    assert_memory_equal(dw, dw_k, nw * sizeof(float));
    assert_memory_equal(db, db_k, O * sizeof(float));
    assert_memory_equal(dw2, dw_k, nw * sizeof(float));
    assert_true(isfinite(y[0]) && isfinite(dx[0]) && isfinite(dw[0]) && isfinite(db[0]));
}

static void test_embedding_bitwise(void **state)
{
    enum { B = 64, F = 3, D = 8 };
    static const uint32_t rows[F] = { 10, 2, 1000 };
    uint64_t rng = 302;
    uint32_t *ids = dmalloc(sizeof(uint32_t) * B * F, 0);
    for (int i = 0; i < B * F; i++) {
        uint32_t k = erase_rng_below(&rng, 8);
        ids[i] = k == 0 ? 0xFFFFFFFFu : k == 1 ? 0xFFFFFFFEu : erase_rng_below(&rng, 40);
    }
    float *tables[F];
    for (int f = 0; f < F; f++) {
        tables[f] = fbuf((size_t)rows[f] * D, 0);
        fill_f(&rng, tables[f], (size_t)rows[f] * D, -1, 1);
    }
    size_t nout = (size_t)B * F * D;
    float *out = fbuf(nout, 0xff), *out_k = fbuf(nout, 0), *dout = fbuf(nout, 0);
    fill_f(&rng, dout, nout, -1, 1);
    uint32_t *grows[F], *grows_k[F];
    float *gvals[F], *gvals_k[F];
    for (int f = 0; f < F; f++) {
        grows[f] = dmalloc(sizeof(uint32_t) * B, 0xff);
        gvals[f] = fbuf((size_t)B * D, 0xff);
        grows_k[f] = dmalloc(sizeof(uint32_t) * B, 0);
        gvals_k[f] = fbuf((size_t)B * D, 0);
    }
    int *count = dmalloc(sizeof(int) * F, 0xff);
    MUST(erase_embedding_forward(stream, B, F, D, rows, ids, (const float *const *)tables, out));
    MUST(erase_embedding_backward(stream, B, F, D, rows, ids, dout, grows, gvals, count));
    MUST(erase_stream_synchronize(stream));

    erase_k_embedding_forward_f32(B, F, D, rows, ids, (const float *const *)tables, out_k);
    assert_memory_equal(out, out_k, nout * sizeof(float));
    void *scratch = dmalloc(ERASE_EMBEDDING_SCRATCH_BYTES(B), 0);
    for (int f = 0; f < F; f++) {
        int n = erase_k_embedding_backward_field_f32(B, F, D, f, rows[f], ids, dout, scratch,
                                                     grows_k[f], gvals_k[f]);
        print_message("embedding field %d (%u rows): %d distinct rows; stream rows and values "
                      "compared bitwise with the f32 kernel\n", f, rows[f], n);
        assert_int_equal(count[f], n);
        assert_true(n >= 1 && n <= B);
        assert_memory_equal(grows[f], grows_k[f], sizeof(uint32_t) * (size_t)n);
        assert_memory_equal(gvals[f], gvals_k[f], sizeof(float) * (size_t)n * D);
    }
}

static void test_bce_bitwise(void **state)
{
    const int B = 100;
    uint64_t rng = 303;
    float *z = fbuf(B, 0), *y = fbuf(B, 0), *dz = fbuf(B, 0xff), *dz_k = fbuf(B, 0);
    float *loss = fbuf(1, 0xff), *loss2 = fbuf(1, 0xff);
    fill_f(&rng, z, B, -10, 10);
    for (int r = 0; r < B; r++)
        y[r] = (float)erase_rng_below(&rng, 2);
    MUST(erase_bce_with_logits(stream, B, z, y, 0.7f, loss, dz));
    MUST(erase_bce_with_logits(stream, B, z, y, 0.7f, loss2, NULL));
    MUST(erase_stream_synchronize(stream));
    float loss_k = (float)erase_k_bce_with_logits_f32(B, z, y, 0.7f, dz_k);
    print_message("bce batch %d: stream loss %.9g, kernel loss %.9g; dz compared bitwise\n", B,
                  (double)*loss, (double)loss_k);
    assert_true(isfinite(loss_k) && loss_k > 0);
    assert_memory_equal(loss, &loss_k, sizeof(float));
    assert_memory_equal(loss2, &loss_k, sizeof(float));
    assert_memory_equal(dz, dz_k, B * sizeof(float));
}

static void test_softmax_xent_bitwise(void **state)
{
    const int B = 12, C = 5;
    uint64_t rng = 304;
    float *z = fbuf((size_t)B * C, 0), *dz = fbuf((size_t)B * C, 0xff),
          *dz_k = fbuf((size_t)B * C, 0), *loss = fbuf(1, 0xff);
    int32_t *labels = dmalloc(sizeof(int32_t) * B, 0);
    fill_f(&rng, z, (size_t)B * C, -4, 4);
    for (int r = 0; r < B; r++)
        labels[r] = (int32_t)erase_rng_below(&rng, C);
    MUST(erase_softmax_xent(stream, B, C, z, labels, 0.5f, loss, dz));
    MUST(erase_stream_synchronize(stream));
    float loss_k = (float)erase_k_softmax_xent_f32(B, C, z, labels, 0.5f, dz_k);
    print_message("softmax_xent %dx%d: stream loss %.9g, kernel loss %.9g; dz compared bitwise\n",
                  B, C, (double)*loss, (double)loss_k);
    assert_true(isfinite(loss_k) && loss_k > 0);
    assert_memory_equal(loss, &loss_k, sizeof(float));
    assert_memory_equal(dz, dz_k, (size_t)B * C * sizeof(float));
}

/* ---- 6. a label out of range fails the stream --------------------------- */

static void xent_bad_label(int32_t bad, int sample, const char *expected)
{
    enum { B = 3, C = 5 };
    erase_stream_t *s;
    MUST(erase_stream_create(dev, &s));
    float *z = fbuf(B * C, 0), *dz = fbuf(B * C, 0), *loss = fbuf(1, 0), *loss2 = fbuf(1, 0);
    int32_t *labels = dmalloc(sizeof(int32_t) * B, 0);
    for (int i = 0; i < B * C; i++)
        z[i] = 0.1f * (float)i;
    labels[0] = 2;
    labels[1] = 4;
    labels[2] = 0;
    labels[sample] = bad;
    *loss = 123.0f;
    *loss2 = 456.0f;
    dz[0] = 789.0f;
    MUST(erase_softmax_xent(s, B, C, z, labels, 1.0f, loss, dz)); /* checked when it runs */
    /* after the failure the stream only drains: this valid op must not run */
    MUST(erase_bce_with_logits(s, B, z, z, 1.0f, loss2, NULL));
    erase_status_t st = erase_stream_synchronize(s);
    print_message("label %d of sample %d: synchronize -> %s: %s\n", bad, sample,
                  erase_status_name(st), erase_error_message());
    assert_int_equal(st, ERASE_ERR_INVALID);
    assert_non_null(strstr(erase_error_message(), expected));
    assert_true(*loss == 123.0f && *loss2 == 456.0f && dz[0] == 789.0f); /* nothing written */
    /* the error is sticky */
    assert_int_equal(erase_stream_synchronize(s), ERASE_ERR_INVALID);
    assert_non_null(strstr(erase_error_message(), expected));
    erase_stream_destroy(s);
}

static void test_softmax_label_out_of_range(void **state)
{
    xent_bad_label(7, 1, "softmax cross-entropy: label 7 of sample 1 outside [0, 5)");
    xent_bad_label(-1, 2, "softmax cross-entropy: label -1 of sample 2 outside [0, 5)");
    xent_bad_label(5, 0, "softmax cross-entropy: label 5 of sample 0 outside [0, 5)");
}

/* ---- 7. bad shapes fail at enqueue --------------------------------------- */

/* Sum of x[0..n) (stride `stride`) in ERASE_SPARSE_SUM_CHUNK chunks, each
 * from 0, then the chunk sums from 0 (lib/ops/ops.h), in float. */
static float chunked_sum(const float *x, int n, size_t stride)
{
    float total = 0;
    for (int c = 0; c < n; c += ERASE_SPARSE_SUM_CHUNK) {
        float part = 0;
        for (int i = c; i < n && i < c + ERASE_SPARSE_SUM_CHUNK; i++)
            part += x[(size_t)i * stride];
        total += part;
    }
    return total;
}

/* The pairwise tree of erase_sparse_merge (lib/ops/ops.h) over the
 * present entries of x[0..n) (stride `stride`), computed level by level
 * (not as the op's stack): at step 2^k entry i (a multiple of 2^(k+1))
 * takes entry i + 2^k, added when both hold a sum, moved when only the
 * right one does. */
static float tree_sum(const float *x, const int *present, int n, size_t stride)
{
    float v[512];
    int has[512];
    for (int i = 0; i < n; i++) {
        v[i] = x[(size_t)i * stride];
        has[i] = present[i];
    }
    for (int step = 1; step < n; step *= 2)
        for (int i = 0; i + step < n; i += 2 * step)
            if (has[i + step]) {
                v[i] = has[i] ? v[i] + v[i + step] : v[i + step];
                has[i] = 1;
            }
    return v[0];
}

static float serial_sum(const float *x, int n, size_t stride)
{
    float total = 0;
    for (int i = 0; i < n; i++)
        total += x[(size_t)i * stride];
    return total;
}

/*
 * A row touched 300 times (embedding backward: every sample has the same
 * id) is summed in the chunked order of lib/ops/ops.h, bitwise; the data
 * are chosen so that the plain serial order gives other bits (the test
 * tells the orders apart). The sparse merge of 300 packs, of which every
 * fifth lacks the row, sums the pairwise tree over the pack index,
 * bitwise, which neither the chunked nor the serial order gives.
 */
static void test_sparse_sum_order(void **state)
{
    enum { N = 300, D = 3 };
    uint64_t rng = 4242;
    float *dout = fbuf((size_t)N * D, 0);
    for (size_t i = 0; i < (size_t)N * D; i++)
        dout[i] = erase_rng_uniform(&rng, -1.0f, 1.0f) * (float)(1 << (erase_rng_below(&rng, 20)));
    uint32_t rows[1] = { 11 };
    uint32_t *ids = dmalloc(N * sizeof(uint32_t), 0);
    for (int i = 0; i < N; i++)
        ids[i] = 7;
    uint32_t *grow = dmalloc(N * sizeof(uint32_t), 0xff);
    float *gval = fbuf((size_t)N * D, 0xff);
    int *count = dmalloc(sizeof(int), 0xff);
    MUST(erase_embedding_backward(stream, N, 1, D, rows, ids, dout, &grow, &gval, count));
    MUST(erase_stream_synchronize(stream));
    assert_int_equal(*count, 1);
    assert_int_equal(grow[0], 7);
    int order_matters = 0;
    for (int d = 0; d < D; d++) {
        float want = chunked_sum(dout + d, N, D);
        assert_memory_equal(&gval[d], &want, sizeof(float));
        order_matters |= want != serial_sum(dout + d, N, D);
    }
    assert_true(order_matters);

    /* the merge of 300 ranks' packs (capacity 1, one table), scale 0.5;
     * packs 2, 7, 12, ... are empty */
    int *all_counts = dmalloc(N * sizeof(int), 0);
    uint32_t *all_rows = dmalloc(N * sizeof(uint32_t), 0);
    int present[N];
    for (int r = 0; r < N; r++) {
        all_counts[r] = present[r] = r % 5 != 2;
        all_rows[r] = 5;
    }
    uint32_t *mrow = dmalloc(N * sizeof(uint32_t), 0xff);
    float *mval = fbuf((size_t)N * D, 0xff);
    int *mcount = dmalloc(sizeof(int), 0xff);
    MUST(erase_sparse_merge(stream, N, 1, 1, D, 0.5f, all_counts, all_rows, dout, &mcount, &mrow, &mval));
    MUST(erase_stream_synchronize(stream));
    assert_int_equal(*mcount, 1);
    assert_int_equal(mrow[0], 5);
    order_matters = 0;
    for (int d = 0; d < D; d++) {
        float want = tree_sum(dout + d, present, N, D) * 0.5f, serial = 0;
        assert_memory_equal(&mval[d], &want, sizeof(float));
        for (int r = 0; r < N; r++)
            serial += present[r] ? dout[(size_t)r * D + d] : 0.0f;
        order_matters |= want != serial * 0.5f && want != chunked_sum(dout + d, N, D) * 0.5f;
    }
    assert_true(order_matters);
}

static void expect_invalid(erase_status_t st, const char *expected)
{
    erase_test_expect_error(st, ERASE_ERR_INVALID, expected);
}

static void test_bad_shapes_at_enqueue(void **state)
{
    float *buf = fbuf(4096, 0), *loss = fbuf(1, 0);
    uint32_t *ids = dmalloc(sizeof(uint32_t) * 64, 0);
    int32_t *labels = dmalloc(sizeof(int32_t) * 8, 0);
    int *count = dmalloc(sizeof(int) * ERASE_FIELDS_MAX, 0);
    const float *tables[ERASE_FIELDS_MAX + 1];
    float *grads[ERASE_FIELDS_MAX + 1];
    uint32_t *grows[ERASE_FIELDS_MAX + 1];
    uint32_t rows[ERASE_FIELDS_MAX + 1];
    for (int f = 0; f <= ERASE_FIELDS_MAX; f++) {
        tables[f] = buf;
        grads[f] = buf;
        grows[f] = ids;
        rows[f] = 4;
    }
    const float *xs[ERASE_CONCAT_MAX + 1];
    float *dxs[ERASE_CONCAT_MAX + 1];
    int widths[ERASE_CONCAT_MAX + 1];
    for (int i = 0; i <= ERASE_CONCAT_MAX; i++) {
        xs[i] = buf;
        dxs[i] = buf;
        widths[i] = 1;
    }
    uint64_t before = erase_stream_enqueued(stream);

    uint32_t one_row[1] = { 1 };
    expect_invalid(erase_embedding_forward(stream, 4, 1, 8, one_row, ids, tables, buf),
                   "embedding: table 0 has 1 rows (at least 2: one for missing ids)");
    rows[2] = 0;
    expect_invalid(erase_embedding_backward(stream, 4, 3, 8, rows, ids, buf, grows, grads, count),
                   "embedding: table 2 has 0 rows (at least 2: one for missing ids)");
    rows[2] = 4;
    expect_invalid(erase_embedding_forward(stream, 4, ERASE_FIELDS_MAX + 1, 8, rows, ids, tables,
                                           buf),
                   "embedding: 65 fields (1 to 64)");
    expect_invalid(erase_embedding_forward(stream, 4, 2, 0, rows, ids, tables, buf),
                   "embedding: bad shape batch=4 dim=0");
    expect_invalid(erase_concat_forward(stream, 2, ERASE_CONCAT_MAX + 1, widths, xs, buf),
                   "concat: 17 inputs (1 to 16)");
    widths[1] = 0;
    expect_invalid(erase_concat_backward(stream, 2, 3, widths, buf, dxs),
                   "concat: input 1 has width 0");
    widths[1] = 1;
    expect_invalid(erase_dropout(stream, 16, 1.0f, 1, 0, buf, buf),
                   "dropout: probability 1 outside [0, 1)");
    expect_invalid(erase_dropout(stream, 16, -0.5f, 1, 0, buf, buf),
                   "dropout: probability -0.5 outside [0, 1)");
    expect_invalid(erase_linear_forward(stream, 4, 3, 0, buf, buf, NULL, buf),
                   "linear forward: bad shape batch=4 in=3 out=0");
    expect_invalid(erase_linear_backward(stream, 4, 0, 3, buf, buf, buf, buf, buf, buf),
                   "linear backward: bad shape batch=4 in=0 out=3");
    expect_invalid(erase_interaction_forward(stream, 2, 1, 4, buf, buf, buf),
                   "interaction: bad shape batch=2 nvec=1 dim=4");
    expect_invalid(erase_softmax_xent(stream, 4, 1, buf, labels, 1.0f, loss, buf),
                   "softmax cross-entropy: bad batch 4, classes 1 or NULL loss");
    expect_invalid(erase_bce_with_logits(stream, -1, buf, buf, 1.0f, loss, buf),
                   "bce: bad batch -1 or NULL loss");
    expect_invalid(erase_layernorm_forward(stream, 2, 8, 0.0f, buf, buf, buf, buf, buf, buf),
                   "layer norm: bad batch=2 dim=8 eps=0");
    expect_invalid(erase_attention_forward(stream, 1, 4, 1, INT_MAX / 3 + 1, buf, buf, buf),
                   "attention: bad batch=1 T=4 heads=1 dim=715827883 (dim a multiple of heads, at most "
                   "INT_MAX/3)");
    expect_invalid(erase_attention_backward(stream, 1, 4, 3, 8, buf, buf, buf, buf, buf),
                   "attention backward: bad batch=1 T=4 heads=3 dim=8 (dim a multiple of heads, at "
                   "most INT_MAX/3)");
    expect_invalid(erase_attention_decode(stream, 1, 4, 4, 2, 8, buf, buf, buf, buf, buf),
                   "attention decode: bad batch=1 t=4 cache_len=4 heads=2 dim=8 (dim a multiple of "
                   "heads, at most INT_MAX/3; 0 <= t < cache_len)");

    /* nothing was enqueued and the stream is healthy */
    assert_int_equal(erase_stream_enqueued(stream), before);
    MUST(erase_stream_synchronize(stream));
}

/* ---- 8. the gpt model's ops on a stream ------------------------------------ */

/* Each op through the stream gives its _f32 kernel's result bitwise (and is
 * implemented on the CPU backend: not ERASE_ERR_UNSUPPORTED). */
static void test_gpt_ops_bitwise(void **state)
{
    enum { B = 2, T = 9, NH = 2, D = 8, V = 13, L = 12, TD = 5 };
    uint64_t rng = 306;
    size_t nqkv = (size_t)B * T * 3 * D, natt = (size_t)B * NH * T * T, nout = (size_t)B * T * D;
    float *qkv = fbuf(nqkv, 0), *dout = fbuf(nout, 0), *wte = fbuf((size_t)V * D, 0),
          *wpe = fbuf((size_t)T * D, 0);
    int32_t *tokens = dmalloc(sizeof(int32_t) * B * T, 0);
    fill_f(&rng, qkv, nqkv, -2, 2);
    fill_f(&rng, dout, nout, -1, 1);
    fill_f(&rng, wte, (size_t)V * D, -1, 1);
    fill_f(&rng, wpe, (size_t)T * D, -1, 1);
    for (int i = 0; i < B * T; i++)
        tokens[i] = (int32_t)erase_rng_below(&rng, V);
    /* stream outputs start as NaN bytes, direct ones as zeros */
    float *gy = fbuf(nqkv, 0xff), *gdx = fbuf(nqkv, 0xff), *gy_k = fbuf(nqkv, 0), *gdx_k = fbuf(nqkv, 0);
    float *emb = fbuf(nout, 0xff), *dwte = fbuf((size_t)V * D, 0xff), *dwpe = fbuf((size_t)T * D, 0xff);
    float *emb_k = fbuf(nout, 0), *dwte_k = fbuf((size_t)V * D, 0), *dwpe_k = fbuf((size_t)T * D, 0);
    float *att = fbuf(natt, 0xff), *out = fbuf(nout, 0xff), *scratch = fbuf(natt, 0xff),
          *dqkv = fbuf(nqkv, 0xff);
    float *att_k = fbuf(natt, 0), *out_k = fbuf(nout, 0), *scratch_k = fbuf(natt, 0),
          *dqkv_k = fbuf(nqkv, 0);
    float *kc = fbuf((size_t)B * L * D, 0), *vc = fbuf((size_t)B * L * D, 0),
          *dscr = fbuf((size_t)B * NH * L, 0xff), *dec = fbuf((size_t)B * D, 0xff);
    float *kc_k = fbuf((size_t)B * L * D, 0), *vc_k = fbuf((size_t)B * L * D, 0),
          *dscr_k = fbuf((size_t)B * NH * L, 0), *dec_k = fbuf((size_t)B * D, 0);
    const float *x = qkv + (size_t)3 * 3 * D; /* one position's q | k | v per sequence */
    MUST(erase_gelu_tanh_forward(stream, nqkv, qkv, gy));
    MUST(erase_gelu_tanh_backward(stream, nout, qkv, dout, gdx));
    MUST(erase_token_embedding_forward(stream, B, T, D, V, tokens, wte, wpe, emb));
    MUST(erase_token_embedding_backward(stream, B, T, D, V, tokens, dout, dwte, dwpe, 0));
    MUST(erase_attention_forward(stream, B, T, NH, D, qkv, att, out));
    MUST(erase_attention_backward(stream, B, T, NH, D, qkv, att, dout, scratch, dqkv));
    MUST(erase_attention_decode(stream, B, TD, L, NH, D, x, kc, vc, dscr, dec));
    MUST(erase_stream_synchronize(stream));
    erase_k_gelu_tanh_forward_f32(nqkv, qkv, gy_k);
    erase_k_gelu_tanh_backward_f32(nout, qkv, dout, gdx_k);
    erase_k_token_embedding_forward_f32(B, T, D, tokens, wte, wpe, emb_k);
    erase_k_token_embedding_backward_f32(B, T, D, V, tokens, dout, dwte_k, dwpe_k, 0);
    erase_k_attention_forward_f32(B, T, NH, D, qkv, att_k, out_k);
    erase_k_attention_backward_f32(B, T, NH, D, qkv, att_k, dout, scratch_k, dqkv_k);
    erase_k_attention_decode_f32(B, TD, L, NH, D, x, kc_k, vc_k, dscr_k, dec_k);
    print_message("gelu tanh, token embedding, attention forward/backward/decode: stream and "
                  "kernels compared bitwise\n");
    assert_memory_equal(gy, gy_k, nqkv * sizeof(float));
    assert_memory_equal(gdx, gdx_k, nout * sizeof(float));
    assert_memory_equal(emb, emb_k, nout * sizeof(float));
    assert_memory_equal(dwte, dwte_k, (size_t)V * D * sizeof(float));
    assert_memory_equal(dwpe, dwpe_k, (size_t)T * D * sizeof(float));
    assert_memory_equal(att, att_k, natt * sizeof(float));
    assert_memory_equal(out, out_k, nout * sizeof(float));
    assert_memory_equal(dqkv, dqkv_k, nqkv * sizeof(float));
    assert_memory_equal(kc, kc_k, (size_t)B * L * D * sizeof(float));
    assert_memory_equal(vc, vc_k, (size_t)B * L * D * sizeof(float));
    assert_memory_equal(dec, dec_k, (size_t)B * D * sizeof(float));
}

/* A token outside [0, vocab) fails the stream when the op runs, naming it;
 * nothing is written. */
static void token_out_of_range(int backward, int32_t bad, int at, const char *expected)
{
    enum { B = 2, T = 3, D = 4, V = 5 };
    erase_stream_t *s;
    MUST(erase_stream_create(dev, &s));
    float *wte = fbuf((size_t)V * D, 0), *wpe = fbuf((size_t)T * D, 0), *out = fbuf((size_t)B * T * D, 0);
    int32_t *tokens = dmalloc(sizeof(int32_t) * B * T, 0);
    for (int i = 0; i < B * T; i++)
        tokens[i] = i % V;
    tokens[at] = bad;
    out[0] = 123.0f;
    wte[0] = 456.0f;
    if (backward)
        MUST(erase_token_embedding_backward(s, B, T, D, V, tokens, out, wte, wpe, 0));
    else
        MUST(erase_token_embedding_forward(s, B, T, D, V, tokens, wte, wpe, out));
    erase_status_t st = erase_stream_synchronize(s);
    print_message("token %d at index %d, %s: synchronize -> %s: %s\n", bad, at,
                  backward ? "backward" : "forward", erase_status_name(st), erase_error_message());
    assert_int_equal(st, ERASE_ERR_INVALID);
    assert_non_null(strstr(erase_error_message(), expected));
    assert_true(out[0] == 123.0f && wte[0] == 456.0f); /* nothing written */
    erase_stream_destroy(s);
}

static void test_token_out_of_range(void **state)
{
    token_out_of_range(0, 5, 4, "token embedding: token 5 at position 1 of sequence 1 outside [0, 5)");
    token_out_of_range(0, -1, 0, "token embedding: token -1 at position 0 of sequence 0 outside [0, 5)");
    token_out_of_range(1, 70000, 5,
                       "token embedding backward: token 70000 at position 2 of sequence 1 outside [0, 5)");
}

static int setup(void **state)
{
    /* the same BLAS threading for the stream and the direct calls */
    return erase_test_cpu_open_stream(1, 1, &dev, &stream, &arena);
}

static int teardown(void **state)
{
    erase_test_cpu_close_stream(dev, stream, &arena);
    return 0;
}

#define T(f) cmocka_unit_test_teardown(f, free_test)

int main(void)
{
    const struct CMUnitTest tests[] = {
        T(test_linear_bitwise),
        T(test_embedding_bitwise),
        T(test_sparse_sum_order),
        T(test_bce_bitwise),
        T(test_softmax_xent_bitwise),
        T(test_softmax_label_out_of_range),
        T(test_bad_shapes_at_enqueue),
        T(test_gpt_ops_bitwise),
        T(test_token_out_of_range),
    };
    return cmocka_run_group_tests_name("stream ops", tests, setup, teardown);
}
