/*
 * CUDA ops against the CPU oracle: every op of lib/ops/ops.h runs on both
 * devices on the same random nonzero inputs (fixed seeds). Outputs are
 * poisoned with 0xFF bytes (NaN) before each run, except in-out buffers
 * (optimizer state, axpy's y), which are reset to their initial contents.
 * fp32 outputs agree within 1e-5 relative: norm-wise ||a - b|| / ||b||,
 * and elementwise |a - b| <= 1e-5 * max(|b|, 1e-2 * max|b|) (the floor
 * keeps near-cancelled entries of GEMM results from failing on rounding);
 * integer outputs (rows, counts), the embedding / merge gradients, the
 * token embedding's forward and gradients (both devices add in the same
 * order), the decode's key/value caches and a clip by a given norm agree
 * bitwise; Muon's update (its Newton-Schulz products through cuBLAS) within
 * the fp32 bound. The
 * CUDA op runs twice and must give bitwise the same outputs (determinism).
 * A sparse pack over capacity, a token outside the vocabulary and the
 * sharded exchange's faults (a routed or split row whose owner has no
 * slot, a gather index past the source) must come back from
 * erase_stream_synchronize as ERASE_ERR_INVALID (on streams of
 * their own: a CPU stream's error is sticky). The gpt model's
 * cases (GELU tanh with the elementwise ops, token embedding, attention
 * and its decode, sum of squares and clip) take edge shapes: T = 1, T not a multiple of 32, one
 * head, batch above and below heads, a vocabulary not a multiple of 32, a
 * token at 3 positions in 4. The nanochat model's cases: RMSNorm, rotary
 * (forward, inverse, in place), ReLU squared, softcap, and the grouped-query
 * attention with its decode (groups of 1, 3 and 4 query heads, kv_heads
 * above and below batch). Without a GPU, main() prints every case as TAP
 * "ok # SKIP" with the reason itself (cmocka 1.1.5 prints a skipped case
 * as "not ok # SKIP", a failure for automake), as tests/device/test-cuda.
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

#include "tests/gpu_tap.h"

#include "lib/core/rng.h"
#include "lib/device/device.h"
#include "lib/ops/ops.h"

#define MUST(call) assert_int_equal((call), ERASE_OK)

static erase_device_t *dev[2];  /* 0: CPU, 1: CUDA */
static erase_stream_t *strm[2];
static char skip_reason[512];

/* ---- buffers present on both devices ------------------------------------ */

typedef enum { F32, U32, I32, BITS } kind_t; /* BITS: fp32 compared bitwise */

typedef struct {
    void *p[2];
    size_t n;          /* elements (4 bytes each) */
    kind_t kind;
    const void *init;  /* in-out: reset to this before each run; NULL: poisoned */
    int output;
} pair_t;

#define PAIRS_MAX 64
static pair_t pairs[PAIRS_MAX];
static int npairs;
static int side; /* device the op body is enqueued on */
#define P(pr) ((void *)(pr)->p[side])
#define S (strm[side])

/* A buffer of n 4-byte elements on both devices, holding `host` (if not
 * NULL); `output` marks it for comparison after the runs. */
static pair_t *pair_new(size_t n, kind_t kind, const void *host, int output)
{
    assert_true(npairs < PAIRS_MAX);
    pair_t *pr = &pairs[npairs++];
    memset(pr, 0, sizeof *pr);
    pr->n = n;
    pr->kind = kind;
    pr->output = output;
    for (int d = 0; d < 2; d++) {
        MUST(erase_malloc(dev[d], n * 4 + 4, &pr->p[d]));
        if (host)
            MUST(erase_memcpy_sync(dev[d], pr->p[d], host, n * 4));
        else
            MUST(erase_memset_sync(dev[d], pr->p[d], 0xFF, n * 4));
    }
    if (output && host)
        pr->init = host;
    return pr;
}

static void pairs_free(void)
{
    while (npairs > 0) {
        pair_t *pr = &pairs[--npairs];
        for (int d = 0; d < 2; d++)
            erase_free(dev[d], pr->p[d]);
    }
}

/* Host array of n uniform floats in [lo, hi), none zero. */
static float *rand_f32(size_t n, uint64_t seed, float lo, float hi)
{
    float *x = malloc(n * sizeof *x);
    assert_non_null(x);
    uint64_t rng = seed;
    for (size_t i = 0; i < n; i++) {
        do
            x[i] = erase_rng_uniform(&rng, lo, hi);
        while (x[i] == 0.0f);
    }
    return x;
}

/* Reset the outputs of device d: in-out buffers to their initial
 * contents, the others to 0xFF bytes. */
static void outputs_reset(int d)
{
    for (int i = 0; i < npairs; i++) {
        pair_t *pr = &pairs[i];
        if (!pr->output)
            continue;
        if (pr->init)
            MUST(erase_memcpy_sync(dev[d], pr->p[d], pr->init, pr->n * 4));
        else
            MUST(erase_memset_sync(dev[d], pr->p[d], 0xFF, pr->n * 4));
    }
}

/* Host copy of an output of device d. */
static void *fetch(pair_t *pr, int d)
{
    void *h = malloc(pr->n * 4 + 1);
    assert_non_null(h);
    MUST(erase_memcpy_sync(dev[d], h, pr->p[d], pr->n * 4));
    return h;
}

/* Compare the CUDA result a with the CPU result b of output `index`. */
static void compare(const char *what, int index, const pair_t *pr, const void *a, const void *b)
{
    if (pr->kind != F32) {
        size_t bad = 0, first = 0;
        for (size_t i = 0; i < pr->n; i++)
            if (((const uint32_t *)a)[i] != ((const uint32_t *)b)[i] && bad++ == 0)
                first = i;
        print_message("# %s output %d: %zu elements, %zu differ bitwise\n", what, index, pr->n, bad);
        if (bad)
            print_message("#   first at %zu: cuda 0x%08x cpu 0x%08x\n", first,
                          ((const uint32_t *)a)[first], ((const uint32_t *)b)[first]);
        assert_int_equal(bad, 0);
        return;
    }
    const float *fa = a, *fb = b;
    double diff2 = 0, norm2 = 0, bmax = 0;
    for (size_t i = 0; i < pr->n; i++) {
        if (memcmp(&fa[i], &fb[i], 4) == 0)
            continue; /* bitwise equal, NaN poison left alone included */
        diff2 += ((double)fa[i] - fb[i]) * ((double)fa[i] - fb[i]);
    }
    for (size_t i = 0; i < pr->n; i++)
        if (isfinite(fb[i])) {
            norm2 += (double)fb[i] * fb[i];
            if (fabs(fb[i]) > bmax)
                bmax = fabs(fb[i]);
        }
    size_t bad = 0;
    double worst = 0;
    for (size_t i = 0; i < pr->n; i++) {
        if (memcmp(&fa[i], &fb[i], 4) == 0)
            continue;
        double ref = fabs(fb[i]) > 1e-2 * bmax ? fabs(fb[i]) : 1e-2 * bmax;
        double rel = fabs((double)fa[i] - fb[i]) / ref;
        if (!(rel <= 1e-5))
            bad++;
        if (!(rel <= worst))
            worst = rel;
    }
    double rel_norm = norm2 > 0 ? sqrt(diff2 / norm2) : sqrt(diff2);
    print_message("# %s output %d: %zu floats, norm-wise rel %.3g, worst elementwise rel %.3g, %zu "
                  "above 1e-5\n",
                  what, index, pr->n, rel_norm, worst, bad);
    assert_true(rel_norm <= 1e-5);
    assert_int_equal(bad, 0);
}

/*
 * Run `body` on the CPU, then twice on CUDA; compare CUDA with CPU (kinds
 * above) and the two CUDA runs bitwise.
 */
static void run_both(const char *what, void (*body)(void *), void *ctx)
{
    outputs_reset(0);
    side = 0;
    body(ctx);
    MUST(erase_stream_synchronize(strm[0]));
    void *gpu[2][PAIRS_MAX] = { { 0 } };
    for (int rep = 0; rep < 2; rep++) {
        outputs_reset(1);
        side = 1;
        body(ctx);
        MUST(erase_stream_synchronize(strm[1]));
        for (int i = 0; i < npairs; i++)
            if (pairs[i].output)
                gpu[rep][i] = fetch(&pairs[i], 1);
    }
    for (int i = 0; i < npairs; i++) {
        if (!pairs[i].output)
            continue;
        void *cpu = fetch(&pairs[i], 0);
        compare(what, i, &pairs[i], gpu[0][i], cpu);
        assert_memory_equal(gpu[0][i], gpu[1][i], pairs[i].n * 4); /* deterministic */
        free(cpu);
        free(gpu[0][i]);
        free(gpu[1][i]);
    }
}

#define NEED_GPU()                                         \
    do {                                                   \
        if (!dev[1]) {                                     \
            print_message("# SKIP: %s\n", skip_reason);    \
            skip();                                        \
        }                                                  \
    } while (0)

/* ---- setup -------------------------------------------------------------- */

static int group_setup(void **state)
{
    erase_device_options_t o = erase_device_options_default();
    if (erase_device_open(&o, &dev[0]) != ERASE_OK || erase_stream_create(dev[0], &strm[0]) != ERASE_OK)
        return -1;
    o.kind = ERASE_DEVICE_CUDA;
    erase_status_t st = erase_device_open(&o, &dev[1]);
    if (st != ERASE_OK) {
        snprintf(skip_reason, sizeof skip_reason, "no CUDA device (%s: %s)", erase_status_name(st),
                 erase_error_message());
        dev[1] = NULL;
        return 0;
    }
    if (erase_stream_create(dev[1], &strm[1]) != ERASE_OK)
        return -1;
    return 0;
}

static int group_teardown(void **state)
{
    for (int d = 1; d >= 0; d--)
        if (dev[d]) {
            erase_stream_destroy(strm[d]);
            erase_device_close(dev[d]);
        }
    return 0;
}

static int case_teardown(void **state)
{
    if (dev[1])
        pairs_free();
    return 0;
}

/* ---- cases -------------------------------------------------------------- */

typedef struct {
    int batch, in, out;
    pair_t *x, *w, *b, *y, *dy, *dx, *dw, *db;
} linear_ctx_t;

static void linear_body(void *p)
{
    linear_ctx_t *c = p;
    MUST(erase_linear_forward(S, c->batch, c->in, c->out, P(c->x), P(c->w), P(c->b), P(c->y)));
    MUST(erase_linear_backward(S, c->batch, c->in, c->out, P(c->x), P(c->w), P(c->dy), P(c->dx),
                               P(c->dw), P(c->db)));
}

static void test_linear(void **state)
{
    NEED_GPU();
    linear_ctx_t c = { .batch = 37, .in = 19, .out = 23 };
    float *x = rand_f32(37 * 19, 1, -1, 1), *w = rand_f32(23 * 19, 2, -1, 1),
          *b = rand_f32(23, 3, -1, 1), *dy = rand_f32(37 * 23, 4, -1, 1);
    c.x = pair_new(37 * 19, F32, x, 0);
    c.w = pair_new(23 * 19, F32, w, 0);
    c.b = pair_new(23, F32, b, 0);
    c.dy = pair_new(37 * 23, F32, dy, 0);
    c.y = pair_new(37 * 23, F32, NULL, 1);
    c.dx = pair_new(37 * 19, F32, NULL, 1);
    c.dw = pair_new(23 * 19, F32, NULL, 1);
    c.db = pair_new(23, F32, NULL, 1);
    run_both("linear", linear_body, &c);
    free(x), free(w), free(b), free(dy);
}

typedef struct {
    size_t n;
    pair_t *x, *dy, *y, *dx, *g, *dg, *drop, *acc;
    pair_t *xt, *gt, *dgt, *gt_in, *dgt_in; /* GELU tanh: finite input, out of and in place */
} eltwise_ctx_t;

static void eltwise_body(void *p)
{
    eltwise_ctx_t *c = p;
    MUST(erase_relu_forward(S, c->n, P(c->x), P(c->y)));
    MUST(erase_relu_backward(S, c->n, P(c->x), P(c->dy), P(c->dx)));
    MUST(erase_gelu_forward(S, c->n, P(c->x), P(c->g)));
    MUST(erase_gelu_backward(S, c->n, P(c->x), P(c->dy), P(c->dg)));
    MUST(erase_dropout(S, c->n, 0.3f, 1234, 77, P(c->x), P(c->drop)));
    MUST(erase_axpy(S, c->n, 0.75f, P(c->x), P(c->acc)));
    MUST(erase_gelu_tanh_forward(S, c->n, P(c->xt), P(c->gt)));
    MUST(erase_gelu_tanh_backward(S, c->n, P(c->xt), P(c->dy), P(c->dgt)));
    MUST(erase_gelu_tanh_forward(S, c->n, P(c->gt_in), P(c->gt_in)));
    MUST(erase_gelu_tanh_backward(S, c->n, P(c->xt), P(c->dgt_in), P(c->dgt_in)));
}

static void test_eltwise(void **state)
{
    NEED_GPU();
    size_t n = 1001; /* not a multiple of 4: a partial Philox block */
    eltwise_ctx_t c = { .n = n };
    float *x = rand_f32(n, 5, -3, 3), *dy = rand_f32(n, 6, -1, 1), *y0 = rand_f32(n, 7, -1, 1),
          *xt = rand_f32(n, 8, -6, 6);
    x[10] = NAN; /* relu keeps NaN */
    c.x = pair_new(n, F32, x, 0);
    c.dy = pair_new(n, F32, dy, 0);
    c.y = pair_new(n, F32, NULL, 1);
    c.dx = pair_new(n, F32, NULL, 1);
    c.g = pair_new(n, F32, NULL, 1);
    c.dg = pair_new(n, F32, NULL, 1);
    c.drop = pair_new(n, BITS, NULL, 1); /* same mask and scale: bitwise */
    c.acc = pair_new(n, F32, y0, 1);
    c.xt = pair_new(n, F32, xt, 0);
    c.gt = pair_new(n, F32, NULL, 1);
    c.dgt = pair_new(n, F32, NULL, 1);
    c.gt_in = pair_new(n, F32, xt, 1);
    c.dgt_in = pair_new(n, F32, dy, 1);
    run_both("eltwise", eltwise_body, &c);
    free(x), free(dy), free(y0), free(xt);
}

typedef struct {
    int batch, widths[3];
    pair_t *xs[3], *y, *dy, *dxs[3];
} concat_ctx_t;

static void concat_body(void *p)
{
    concat_ctx_t *c = p;
    const float *xs[3];
    float *dxs[3];
    for (int i = 0; i < 3; i++) {
        xs[i] = P(c->xs[i]);
        dxs[i] = i == 1 ? NULL : P(c->dxs[i]);
    }
    MUST(erase_concat_forward(S, c->batch, 3, c->widths, xs, P(c->y)));
    MUST(erase_concat_backward(S, c->batch, 3, c->widths, P(c->dy), dxs));
}

static void test_concat(void **state)
{
    NEED_GPU();
    concat_ctx_t c = { .batch = 9, .widths = { 3, 5, 2 } };
    float *h[4];
    for (int i = 0; i < 3; i++) {
        h[i] = rand_f32(9 * c.widths[i], 10 + i, -1, 1);
        c.xs[i] = pair_new(9 * c.widths[i], F32, h[i], 0);
        c.dxs[i] = pair_new(9 * c.widths[i], BITS, NULL, 1);
    }
    h[3] = rand_f32(9 * 10, 13, -1, 1);
    c.dy = pair_new(90, F32, h[3], 0);
    c.y = pair_new(90, BITS, NULL, 1);
    run_both("concat", concat_body, &c);
    for (int i = 0; i < 4; i++)
        free(h[i]);
}

#define EF 3
typedef struct {
    int batch, dim;
    uint32_t rows[EF];
    pair_t *ids, *tables[EF], *out, *dout, *grows[EF], *gvals[EF], *count;
} embedding_ctx_t;

static void embedding_body(void *p)
{
    embedding_ctx_t *c = p;
    const float *tables[EF];
    uint32_t *grows[EF];
    float *gvals[EF];
    for (int f = 0; f < EF; f++) {
        tables[f] = P(c->tables[f]);
        grows[f] = P(c->grows[f]);
        gvals[f] = P(c->gvals[f]);
    }
    MUST(erase_embedding_forward(S, c->batch, EF, c->dim, c->rows, P(c->ids), tables, P(c->out)));
    MUST(erase_embedding_backward(S, c->batch, EF, c->dim, c->rows, P(c->ids), P(c->dout), grows,
                                  gvals, P(c->count)));
}

static void test_embedding(void **state)
{
    NEED_GPU();
    embedding_ctx_t c = { .batch = 300, .dim = 7, .rows = { 2, 17, 100001 } };
    uint32_t *ids = malloc(sizeof *ids * 300 * EF);
    uint64_t rng = 20;
    for (int i = 0; i < 300 * EF; i++) /* repeats, large ids, missing ids */
        ids[i] = i % 11 == 0 ? UINT32_MAX
                             : (i % 2 ? erase_rng_below(&rng, 50) : erase_rng_below(&rng, 4000000000u));
    c.ids = pair_new(300 * EF, U32, ids, 0);
    float *t[EF];
    for (int f = 0; f < EF; f++) {
        t[f] = rand_f32((size_t)c.rows[f] * 7, 21 + f, -1, 1);
        c.tables[f] = pair_new((size_t)c.rows[f] * 7, F32, t[f], 0);
        c.grows[f] = pair_new(300, U32, NULL, 1);
        c.gvals[f] = pair_new(300 * 7, BITS, NULL, 1);
    }
    float *dout = rand_f32(300 * EF * 7, 25, -1, 1);
    c.dout = pair_new(300 * EF * 7, F32, dout, 0);
    c.out = pair_new(300 * EF * 7, BITS, NULL, 1);
    c.count = pair_new(EF, I32, NULL, 1);
    run_both("embedding", embedding_body, &c);
    free(ids), free(dout);
    for (int f = 0; f < EF; f++)
        free(t[f]);
}

/* Multi-hot bags (issue 35): fields of hotness 4, 1 and 100, lengths 1 ..
 * hotness, sum or mean pooling; the lookup, its gradient, the pooling of
 * given vectors and the multi-hot route over 2 ranks, row-wise. */
#define BAG_B 300
#define BAG_H (4 + 1 + 100)
#define BAG_CAP (BAG_B * 100)
typedef struct {
    int mean, bad;
    uint32_t rows[EF];
    pair_t *ids, *lengths, *tables[EF], *out, *dout, *grows[EF], *gvals[EF], *count, *vecs, *pooled;
    pair_t *trows, *bounds, *slot, *send, *cnt, *pos;
} bag_ctx_t;

static const int bag_hotness[EF] = { 4, 1, 100 };

static void expect_fault(const char *what, const char *needle, void (*body)(void *), void *ctx);

static void bag_body(void *p)
{
    bag_ctx_t *c = p;
    erase_bag_t bag;
    memset(&bag, 0, sizeof bag);
    const float *tables[EF];
    uint32_t *grows[EF];
    float *gvals[EF];
    for (int f = 0; f < EF; f++) {
        bag.hotness[f] = bag_hotness[f];
        tables[f] = P(c->tables[f]);
        grows[f] = P(c->grows[f]);
        gvals[f] = P(c->gvals[f]);
    }
    bag.lengths = P(c->lengths);
    bag.pooling = c->mean ? ERASE_BAG_MEAN : ERASE_BAG_SUM;
    MUST(erase_embedding_bag_forward(S, BAG_B, EF, 7, c->rows, &bag, P(c->ids), tables, P(c->out)));
    if (c->bad)
        return;
    MUST(erase_embedding_bag_backward(S, BAG_B, EF, 7, c->rows, &bag, P(c->ids), P(c->dout), grows, gvals,
                                      P(c->count)));
    MUST(erase_embedding_pool(S, BAG_B, EF, 7, &bag, P(c->vecs), P(c->pooled)));
    MUST(erase_shard_route_bag(S, BAG_B, EF, &bag, P(c->ids), P(c->trows), 2, P(c->bounds), P(c->slot), EF,
                               BAG_CAP, P(c->send), P(c->cnt), P(c->pos)));
}

static void test_embedding_bag(void **state)
{
    NEED_GPU();
    bag_ctx_t c = { .rows = { 2, 17, 100001 } };
    uint32_t *ids = malloc(sizeof *ids * BAG_B * BAG_H), lengths[BAG_B * EF];
    uint64_t rng = 120;
    for (int i = 0; i < BAG_B * BAG_H; i++) /* repeats, large ids, missing ids */
        ids[i] = i % 11 == 0 ? UINT32_MAX
                             : (i % 2 ? erase_rng_below(&rng, 50) : erase_rng_below(&rng, 4000000000u));
    for (int i = 0; i < BAG_B * EF; i++)
        lengths[i] = 1 + erase_rng_below(&rng, (uint32_t)bag_hotness[i % EF]);
    c.ids = pair_new(BAG_B * BAG_H, U32, ids, 0);
    c.lengths = pair_new(BAG_B * EF, U32, lengths, 0);
    float *t[EF];
    for (int f = 0; f < EF; f++) {
        t[f] = rand_f32((size_t)c.rows[f] * 7, 121 + f, -1, 1);
        c.tables[f] = pair_new((size_t)c.rows[f] * 7, F32, t[f], 0);
        c.grows[f] = pair_new(BAG_B * bag_hotness[f], U32, NULL, 1);
        c.gvals[f] = pair_new(BAG_B * bag_hotness[f] * 7, BITS, NULL, 1);
    }
    float *dout = rand_f32(BAG_B * EF * 7, 125, -1, 1), *vecs = rand_f32(BAG_B * BAG_H * 7, 126, -1, 1);
    c.dout = pair_new(BAG_B * EF * 7, F32, dout, 0);
    c.vecs = pair_new(BAG_B * BAG_H * 7, F32, vecs, 0);
    c.out = pair_new(BAG_B * EF * 7, BITS, NULL, 1);
    c.pooled = pair_new(BAG_B * EF * 7, BITS, NULL, 1);
    c.count = pair_new(EF, I32, NULL, 1);
    /* route: every table row-wise over 2 ranks, split at half its rows */
    int64_t bounds[EF][3];
    int32_t slot[EF][2];
    for (int f = 0; f < EF; f++) {
        bounds[f][0] = 0, bounds[f][1] = c.rows[f] / 2, bounds[f][2] = c.rows[f];
        slot[f][0] = slot[f][1] = f;
    }
    c.trows = pair_new(EF, U32, c.rows, 0);
    c.bounds = pair_new(EF * 3 * 2, U32, bounds, 0);
    c.slot = pair_new(EF * 2, I32, slot, 0);
    c.send = pair_new(2 * EF * BAG_CAP, U32, NULL, 1);
    c.cnt = pair_new(2 * EF, I32, NULL, 1);
    c.pos = pair_new(BAG_B * BAG_H, U32, NULL, 1);
    run_both("embedding bag, sum: lookup, gradient, pool, route", bag_body, &c);
    c.mean = 1;
    run_both("embedding bag, mean: lookup, gradient, pool, route", bag_body, &c);
    /* a length of 0: a fault of the run on both */
    lengths[5] = 0;
    c.bad = 1;
    c.lengths = pair_new(BAG_B * EF, U32, lengths, 0);
    expect_fault("embedding bag, a length of 0", "embedding bag", bag_body, &c);
    free(ids), free(dout), free(vecs);
    for (int f = 0; f < EF; f++)
        free(t[f]);
}

typedef struct {
    int batch, nvec, dim;
    pair_t *dense, *emb, *out, *dout, *ddense, *demb;
} interaction_ctx_t;

static void interaction_body(void *p)
{
    interaction_ctx_t *c = p;
    MUST(erase_interaction_forward(S, c->batch, c->nvec, c->dim, P(c->dense), P(c->emb), P(c->out)));
    MUST(erase_interaction_backward(S, c->batch, c->nvec, c->dim, P(c->dense), P(c->emb),
                                    P(c->dout), P(c->ddense), P(c->demb)));
}

static void test_interaction(void **state)
{
    NEED_GPU();
    for (int nvec = 2; nvec <= 6; nvec += 4) {
        interaction_ctx_t c = { .batch = 13, .nvec = nvec, .dim = 8 };
        int width = 8 + nvec * (nvec - 1) / 2;
        float *d = rand_f32(13 * 8, 30, -1, 1), *e = rand_f32((size_t)13 * (nvec - 1) * 8, 31, -1, 1),
              *g = rand_f32((size_t)13 * width, 32, -1, 1);
        c.dense = pair_new(13 * 8, F32, d, 0);
        c.emb = pair_new((size_t)13 * (nvec - 1) * 8, F32, e, 0);
        c.dout = pair_new((size_t)13 * width, F32, g, 0);
        c.out = pair_new((size_t)13 * width, F32, NULL, 1);
        c.ddense = pair_new(13 * 8, F32, NULL, 1);
        c.demb = pair_new((size_t)13 * (nvec - 1) * 8, F32, NULL, 1);
        run_both(nvec == 2 ? "interaction nvec=2" : "interaction nvec=6", interaction_body, &c);
        pairs_free();
        free(d), free(e), free(g);
    }
}

typedef struct {
    int batch, classes;
    pair_t *z, *y, *loss, *dz, *zc, *labels, *xloss, *xdz;
} loss_ctx_t;

static void loss_body(void *p)
{
    loss_ctx_t *c = p;
    MUST(erase_bce_with_logits(S, c->batch, P(c->z), P(c->y), 0.5f, P(c->loss), P(c->dz)));
    MUST(erase_softmax_xent(S, c->batch, c->classes, P(c->zc), P(c->labels), 2.0f, P(c->xloss),
                            P(c->xdz)));
}

static void test_losses(void **state)
{
    NEED_GPU();
    loss_ctx_t c = { .batch = 2500, .classes = 45 };
    float *z = rand_f32(2500, 40, -8, 8), *y = rand_f32(2500, 41, 0, 1),
          *zc = rand_f32(2500 * 45, 42, -5, 5);
    z[0] = 1e4f, z[1] = -1e4f; /* exact at large |z| */
    int32_t *labels = malloc(sizeof *labels * 2500);
    for (int r = 0; r < 2500; r++)
        labels[r] = (r * 7) % 45;
    c.z = pair_new(2500, F32, z, 0);
    c.y = pair_new(2500, F32, y, 0);
    c.zc = pair_new(2500 * 45, F32, zc, 0);
    c.labels = pair_new(2500, I32, labels, 0);
    c.loss = pair_new(1, F32, NULL, 1);
    c.dz = pair_new(2500, F32, NULL, 1);
    c.xloss = pair_new(1, F32, NULL, 1);
    c.xdz = pair_new(2500 * 45, F32, NULL, 1);
    run_both("losses", loss_body, &c);
    free(z), free(y), free(zc), free(labels);
}

typedef struct {
    int batch, dim;
    pair_t *x, *gamma, *beta, *y, *mean, *rstd, *dy, *dx, *dgamma, *dbeta;
} layernorm_ctx_t;

static void layernorm_body(void *p)
{
    layernorm_ctx_t *c = p;
    MUST(erase_layernorm_forward(S, c->batch, c->dim, 1e-5f, P(c->x), P(c->gamma), P(c->beta),
                                 P(c->y), P(c->mean), P(c->rstd)));
    MUST(erase_layernorm_backward(S, c->batch, c->dim, P(c->x), P(c->gamma), P(c->mean),
                                  P(c->rstd), P(c->dy), P(c->dx), P(c->dgamma), P(c->dbeta)));
}

static void test_layernorm(void **state)
{
    NEED_GPU();
    layernorm_ctx_t c = { .batch = 41, .dim = 70 };
    float *x = rand_f32(41 * 70, 50, -2, 3), *g = rand_f32(70, 51, 0.5f, 1.5f),
          *b = rand_f32(70, 52, -1, 1), *dy = rand_f32(41 * 70, 53, -1, 1);
    c.x = pair_new(41 * 70, F32, x, 0);
    c.gamma = pair_new(70, F32, g, 0);
    c.beta = pair_new(70, F32, b, 0);
    c.dy = pair_new(41 * 70, F32, dy, 0);
    c.y = pair_new(41 * 70, F32, NULL, 1);
    c.mean = pair_new(41, F32, NULL, 1);
    c.rstd = pair_new(41, F32, NULL, 1);
    c.dx = pair_new(41 * 70, F32, NULL, 1);
    c.dgamma = pair_new(70, F32, NULL, 1);
    c.dbeta = pair_new(70, F32, NULL, 1);
    run_both("layer norm", layernorm_body, &c);
    free(x), free(g), free(b), free(dy);
}

#define ST 2   /* tables */
#define SR 3   /* ranks */
#define SCAP 40
#define SDIM 5
typedef struct {
    pair_t *counts[ST], *rows[ST], *vals[ST];
    pair_t *pc, *pr, *pv;             /* one rank's pack */
    pair_t *ac, *ar, *av;             /* all ranks' packs */
    pair_t *mc[ST], *mr[ST], *mv[ST]; /* merged */
} sparse_ctx_t;

static void sparse_body(void *p)
{
    sparse_ctx_t *c = p;
    const int *counts[ST];
    const uint32_t *rows[ST];
    const float *vals[ST];
    int *mc[ST];
    uint32_t *mr[ST];
    float *mv[ST];
    for (int t = 0; t < ST; t++) {
        counts[t] = P(c->counts[t]);
        rows[t] = P(c->rows[t]);
        vals[t] = P(c->vals[t]);
        mc[t] = P(c->mc[t]);
        mr[t] = P(c->mr[t]);
        mv[t] = P(c->mv[t]);
    }
    MUST(erase_sparse_pack(S, ST, SCAP, SDIM, counts, rows, vals, P(c->pc), P(c->pr), P(c->pv)));
    MUST(erase_sparse_merge(S, SR, ST, SCAP, SDIM, 1.0f / SR, P(c->ac), P(c->ar), P(c->av), mc, mr,
                            mv));
}

static void test_sparse(void **state)
{
    NEED_GPU();
    sparse_ctx_t c;
    int counts[ST] = { 17, SCAP };
    static uint32_t rows[ST][SCAP];
    float *vals[ST];
    for (int t = 0; t < ST; t++) {
        for (int i = 0; i < SCAP; i++)
            rows[t][i] = (uint32_t)(3 * i + t);
        vals[t] = rand_f32(SCAP * SDIM, 60 + t, -1, 1);
        c.counts[t] = pair_new(1, I32, &counts[t], 0);
        c.rows[t] = pair_new(SCAP, U32, rows[t], 0);
        c.vals[t] = pair_new(SCAP * SDIM, F32, vals[t], 0);
        c.mc[t] = pair_new(1, I32, NULL, 1);
        c.mr[t] = pair_new(SR * SCAP, U32, NULL, 1);
        c.mv[t] = pair_new(SR * SCAP * SDIM, BITS, NULL, 1);
    }
    c.pc = pair_new(ST, I32, NULL, 1);
    c.pr = pair_new(ST * SCAP, U32, NULL, 1);
    c.pv = pair_new(ST * SCAP * SDIM, BITS, NULL, 1);
    /* all ranks: ascending unique rows per (rank, table), overlapping */
    int ac[SR * ST];
    static uint32_t ar[SR * ST * SCAP];
    float *av = rand_f32(SR * ST * SCAP * SDIM, 63, -1, 1);
    for (int q = 0; q < SR; q++)
        for (int t = 0; t < ST; t++) {
            ac[q * ST + t] = (q == 1 && t == 0) ? 0 : 10 + 9 * q + 5 * t;
            for (int i = 0; i < SCAP; i++)
                ar[(q * ST + t) * SCAP + i] = (uint32_t)(i * (q + 1) + t * 1000);
        }
    c.ac = pair_new(SR * ST, I32, ac, 0);
    c.ar = pair_new(SR * ST * SCAP, U32, ar, 0);
    c.av = pair_new(SR * ST * SCAP * SDIM, F32, av, 0);
    run_both("sparse pack and merge", sparse_body, &c);
    free(av);
    for (int t = 0; t < ST; t++)
        free(vals[t]);
}

/*
 * Run `body` on a stream of its own on each device; its synchronize must
 * fail with ERASE_ERR_INVALID and a message holding `needle`. A second
 * synchronize: CUDA reported the kernel's fault once (the device's fault
 * word is read and cleared), a CPU stream keeps its error (sticky, as
 * lib/device/device.h says), hence the streams of their own: the shared
 * ones stay clean for the cases after this one.
 */
static void expect_fault(const char *what, const char *needle, void (*body)(void *), void *ctx)
{
    for (side = 0; side < 2; side++) {
        erase_stream_t *shared = strm[side], *own;
        MUST(erase_stream_create(dev[side], &own));
        strm[side] = own;
        body(ctx);
        strm[side] = shared;
        erase_status_t st = erase_stream_synchronize(own);
        char msg[1024];
        snprintf(msg, sizeof msg, "%s", erase_error_message());
        erase_status_t again = erase_stream_synchronize(own);
        erase_stream_destroy(own);
        print_message("# %s on %s: %s (%s); then %s\n", what, side ? "cuda" : "cpu",
                      erase_status_name(st), msg, erase_status_name(again));
        assert_int_equal(st, ERASE_ERR_INVALID);
        assert_non_null(strstr(msg, needle));
        assert_int_equal(again, side ? ERASE_OK : ERASE_ERR_INVALID);
    }
}

typedef struct {
    pair_t *count, *rows, *vals, *pc, *pr, *pv;
} pack_fault_ctx_t;

static void pack_fault_body(void *p)
{
    pack_fault_ctx_t *c = p;
    const int *counts[1] = { P(c->count) };
    const uint32_t *r[1] = { P(c->rows) };
    const float *v[1] = { P(c->vals) };
    MUST(erase_sparse_pack(S, 1, SCAP, SDIM, counts, r, v, P(c->pc), P(c->pr), P(c->pv)));
}

/* A pack count above capacity fails from the stream's synchronize. */
static void test_sparse_pack_fault(void **state)
{
    NEED_GPU();
    int big = SCAP + 1;
    pack_fault_ctx_t c = { pair_new(1, I32, &big, 0), pair_new(SCAP + 1, U32, NULL, 0),
                           pair_new((SCAP + 1) * SDIM, F32, NULL, 0), pair_new(1, I32, NULL, 0),
                           pair_new(SCAP, U32, NULL, 0), pair_new(SCAP * SDIM, F32, NULL, 0) };
    expect_fault("sparse pack over capacity", "capacity", pack_fault_body, &c);
}

/* ---- the sharded exchange: route, owners' gathers, unpack, split ---------
 * 3 tables over 4 ranks: table 0 (R = 2) table-wise on rank 3, table 1
 * (R = 17) row-wise, table 2 (R = 100001) row-wise with rank 1 empty. */
#define HT 3
#define HR 4
#define HTMAX 3
#define HCAP 300
#define HN 300
#define HD 7
#define HENTRIES (HR * HTMAX * HCAP)
static const uint32_t shard_rows[HT] = { 2, 17, 100001 };
static const int64_t shard_bounds[HT][HR + 1] = {
    { 0, 0, 0, 0, 2 }, { 0, 5, 10, 15, 17 }, { 0, 30000, 30000, 70000, 100001 }
};
static const int32_t shard_slots[HT][HR] = { { -1, -1, -1, 0 }, { 0, 0, 0, 1 }, { 1, -1, 1, 2 } };

typedef struct {
    pair_t *ids, *rows, *bounds, *slot, *tables[HT], *send, *cnt, *pos, *recv, *emb;
    pair_t *count, *grows, *gvals, *sbounds, *sq, *oc, *orows, *ovals; /* split of table 2 */
} shard_ctx_t;

static void shard_body(void *p)
{
    shard_ctx_t *c = p;
    MUST(erase_shard_route(S, HN, HT, P(c->ids), P(c->rows), HR, P(c->bounds), P(c->slot), HTMAX,
                           HCAP, P(c->send), P(c->cnt), P(c->pos)));
    for (int r = 0; r < HR; r++) /* each owner looks its slots up in its parts */
        for (int k = 0; k < HTMAX; k++) {
            const float *part = NULL;
            int64_t held = 0;
            for (int t = 0; t < HT; t++)
                if (shard_slots[t][r] == k) {
                    part = (const float *)P(c->tables[t]) + shard_bounds[t][r] * HD;
                    held = shard_bounds[t][r + 1] - shard_bounds[t][r];
                }
            size_t at = ((size_t)r * HTMAX + k) * HCAP;
            MUST(erase_gather_rows(S, HCAP, HD, (const uint32_t *)P(c->send) + at, 1, part, held,
                                   (float *)P(c->recv) + at * HD, HD));
        }
    for (int t = 0; t < HT; t++)
        MUST(erase_gather_rows(S, HN, HD, (const uint32_t *)P(c->pos) + t, HT, P(c->recv), HENTRIES,
                               (float *)P(c->emb) + t * HD, HT * HD));
    MUST(erase_sparse_split(S, HCAP, HD, P(c->count), P(c->grows), P(c->gvals), HR, P(c->sbounds),
                            P(c->sq), P(c->oc), P(c->orows), P(c->ovals)));
}

static void test_shard(void **state)
{
    NEED_GPU();
    shard_ctx_t c;
    uint32_t *ids = malloc(sizeof *ids * HN * HT);
    uint64_t rng = 90;
    for (int i = 0; i < HN * HT; i++) /* repeats, large ids, missing ids */
        ids[i] = i % 13 == 0 ? UINT32_MAX
                             : (i % 2 ? erase_rng_below(&rng, 50) : erase_rng_below(&rng, 4000000000u));
    c.ids = pair_new(HN * HT, U32, ids, 0);
    c.rows = pair_new(HT, U32, shard_rows, 0);
    c.bounds = pair_new(HT * (HR + 1) * 2, U32, shard_bounds, 0);
    c.slot = pair_new(HT * HR, I32, shard_slots, 0);
    float *t[HT];
    for (int f = 0; f < HT; f++) {
        t[f] = rand_f32((size_t)shard_rows[f] * HD, 91 + f, -1, 1);
        c.tables[f] = pair_new((size_t)shard_rows[f] * HD, F32, t[f], 0);
    }
    c.send = pair_new(HENTRIES, U32, NULL, 1);
    c.cnt = pair_new(HR * HTMAX, I32, NULL, 1);
    c.pos = pair_new(HN * HT, U32, NULL, 1);
    c.recv = pair_new(HENTRIES * HD, BITS, NULL, 1);
    c.emb = pair_new(HN * HT * HD, BITS, NULL, 1);
    /* table 2's gradient: 250 ascending rows over its ranges (none on rank 1) */
    int count = 250;
    uint32_t grows[HCAP];
    for (int i = 0; i < count; i++)
        grows[i] = (uint32_t)(i * 400 + (i % 3));
    float *gvals = rand_f32(HCAP * HD, 95, -1, 1);
    const int32_t sq[HR] = { 1, -1, 7, 11 }; /* slot k of rank r: r * HTMAX + k */
    c.count = pair_new(1, I32, &count, 0);
    c.grows = pair_new(HCAP, U32, grows, 0);
    c.gvals = pair_new(HCAP * HD, F32, gvals, 0);
    c.sbounds = pair_new((HR + 1) * 2, U32, shard_bounds[2], 0);
    c.sq = pair_new(HR, I32, sq, 0);
    c.oc = pair_new(HR * HTMAX, I32, NULL, 1);
    c.orows = pair_new(HENTRIES, U32, NULL, 1);
    c.ovals = pair_new(HENTRIES * HD, BITS, NULL, 1);
    run_both("shard route, gather rows, sparse split", shard_body, &c);
    free(ids), free(gvals);
    for (int f = 0; f < HT; f++)
        free(t[f]);
}

typedef struct {
    int which; /* 0: route, 1: gather, 2: split */
    pair_t *ids, *rows, *bounds, *slot, *send, *cnt, *pos, *index, *src, *out;
    pair_t *count, *grows, *gvals, *sq, *oc, *orows, *ovals;
} shard_fault_ctx_t;

static void shard_fault_body(void *p)
{
    shard_fault_ctx_t *c = p;
    if (c->which == 0)
        MUST(erase_shard_route(S, 2, 1, P(c->ids), P(c->rows), 2, P(c->bounds), P(c->slot), 1, 2,
                               P(c->send), P(c->cnt), P(c->pos)));
    else if (c->which == 1)
        MUST(erase_gather_rows(S, 2, HD, P(c->index), 1, P(c->src), 4, P(c->out), HD));
    else
        MUST(erase_sparse_split(S, 2, HD, P(c->count), P(c->grows), P(c->gvals), 2, P(c->bounds),
                                P(c->sq), P(c->oc), P(c->orows), P(c->ovals)));
}

/* A routed row whose owner has no slot, a gather index at or above the
 * source's rows, a split row whose owner has no slot: faults of the run. */
static void test_shard_faults(void **state)
{
    NEED_GPU();
    const uint32_t ids[2] = { 1, 7 }, rows[1] = { 10 }, index[2] = { ERASE_SHARD_PAD, 4 };
    const int64_t bounds[3] = { 0, 5, 10 };
    const int32_t slot[2] = { 0, -1 }; /* rank 1 holds rows 5-9 but has no slot */
    const uint32_t grows[2] = { 2, 6 };
    int count = 2;
    shard_fault_ctx_t c = { 0 };
    c.ids = pair_new(2, U32, ids, 0);
    c.rows = pair_new(1, U32, rows, 0);
    c.bounds = pair_new(6, U32, bounds, 0);
    c.slot = pair_new(2, I32, slot, 0);
    c.send = pair_new(4, U32, NULL, 0);
    c.cnt = pair_new(2, I32, NULL, 0);
    c.pos = pair_new(2, U32, NULL, 0);
    c.index = pair_new(2, U32, index, 0);
    c.src = pair_new(4 * HD, F32, NULL, 0);
    c.out = pair_new(2 * HD, F32, NULL, 0);
    c.count = pair_new(1, I32, &count, 0);
    c.grows = pair_new(2, U32, grows, 0);
    c.gvals = pair_new(2 * HD, F32, NULL, 0);
    c.sq = pair_new(2, I32, slot, 0);
    c.oc = pair_new(2, I32, NULL, 0);
    c.orows = pair_new(4, U32, NULL, 0);
    c.ovals = pair_new(4 * HD, F32, NULL, 0);
    c.which = 0;
    expect_fault("shard route to a rank without a slot", "shard route", shard_fault_body, &c);
    c.which = 1;
    expect_fault("gather rows past the source", "gather rows", shard_fault_body, &c);
    c.which = 2;
    expect_fault("sparse split to a rank without a slot", "sparse split", shard_fault_body, &c);
}

typedef struct {
    pair_t *clock, *x, *w, *g, *buf, *w2, *m, *v, *table, *acc, *grows, *gvals, *count, *table2;
    size_t n;
    int dim;
    int bad; /* x holds an infinity */
} optim_ctx_t;

static const erase_lr_schedule_t schedule = { .base = 0.05, .warmup_steps = 2,
                                              .decay = ERASE_LR_COSINE, .total_steps = 40,
                                              .min = 0.001 };

static void optim_body(void *p)
{
    optim_ctx_t *c = p;
    MUST(erase_optim_clock_advance(S, P(c->clock), &schedule));
    MUST(erase_check_finite(S, P(c->x), c->n, NULL, 3, P(c->clock)));
    MUST(erase_check_finite(S, P(c->gvals), c->dim, P(c->count), 4, P(c->clock)));
    MUST(erase_sgd_update(S, c->n, P(c->w), P(c->g), P(c->buf), P(c->clock), 0.5f, 0.9f, 0.01f));
    MUST(erase_adamw_update(S, c->n, P(c->w2), P(c->g), P(c->m), P(c->v), P(c->clock), 1.0f, 0.9f,
                            0.999f, 1e-8f, 0.01f));
    MUST(erase_rowwise_adagrad_update(S, c->dim, P(c->table), P(c->acc), P(c->grows), P(c->gvals),
                                      P(c->count), P(c->clock), 1.0f, 1e-8f));
    MUST(erase_sparse_sgd_update(S, c->dim, P(c->table2), P(c->grows), P(c->gvals), P(c->count),
                                 P(c->clock), 2.0f));
}

/* One optimizer step from a clock at step 5; with bad = 1 every update is
 * skipped (nonfinite = 3) and the parameters must come back unchanged. */
static void optim_case(int bad)
{
    optim_ctx_t c = { .n = 777, .dim = 6, .bad = bad };
    size_t n = c.n;
    erase_optim_clock_t clk = { .step = 5, .lr = 0.f, .nonfinite = 7 };
    float *x = rand_f32(n, 70, -1, 1), *w = rand_f32(n, 71, -1, 1), *g = rand_f32(n, 72, -1, 1),
          *buf = rand_f32(n, 73, -1, 1), *m = rand_f32(n, 74, -1, 1), *v = rand_f32(n, 75, 0, 1),
          *table = rand_f32(50 * 6, 76, -1, 1), *acc = rand_f32(50, 77, 0, 1),
          *gvals = rand_f32(50 * 6, 78, -1, 1);
    if (bad)
        x[100] = INFINITY;
    uint32_t grows[50];
    for (int i = 0; i < 50; i++)
        grows[i] = (uint32_t)((i * 7) % 50);
    int count = 31;
    c.clock = pair_new(sizeof clk / 4, BITS, &clk, 1);
    c.x = pair_new(n, F32, x, 0);
    c.g = pair_new(n, F32, g, 0);
    c.w = pair_new(n, F32, w, 1);
    c.buf = pair_new(n, F32, buf, 1);
    c.w2 = pair_new(n, F32, w, 1);
    c.m = pair_new(n, F32, m, 1);
    c.v = pair_new(n, F32, v, 1);
    c.table = pair_new(50 * 6, F32, table, 1);
    c.table2 = pair_new(50 * 6, F32, table, 1);
    c.acc = pair_new(50, F32, acc, 1);
    c.grows = pair_new(50, U32, grows, 0);
    c.gvals = pair_new(50 * 6, F32, gvals, 0);
    c.count = pair_new(1, I32, &count, 0);
    run_both(bad ? "optimizers, non-finite step" : "optimizers", optim_body, &c);
    if (bad) {
        float *out = fetch(c.w, 1);
        assert_memory_equal(out, w, n * 4); /* skipped */
        free(out);
    }
    free(x), free(w), free(g), free(buf), free(m), free(v), free(table), free(acc), free(gvals);
}

static void test_optim(void **state)
{
    NEED_GPU();
    optim_case(0);
}

static void test_optim_nonfinite(void **state)
{
    NEED_GPU();
    optim_case(1);
}

typedef struct {
    int64_t rows[2], cols[2];
    pair_t *clock, *w[2], *g[2], *buf[2], *work;
} muon_ctx_t;

static void muon_body(void *p)
{
    muon_ctx_t *c = p;
    for (int k = 0; k < 2; k++)
        MUST(erase_muon_update(S, c->rows[k], c->cols[k], P(c->w[k]), P(c->g[k]), P(c->buf[k]), P(c->work),
                               P(c->clock), 0.5f, 0.95f, 5 * k));
}

/* Muon (issue 34) on a wide [20, 33] and a tall [70, 24] matrix from a
 * nonzero momentum buffer: weights and buffers within 1e-5 of the CPU's. */
static void test_muon(void **state)
{
    NEED_GPU();
    muon_ctx_t c = { .rows = { 20, 70 }, .cols = { 33, 24 } };
    erase_optim_clock_t clk = { .step = 3, .lr = 0.02f, .nonfinite = 0 };
    c.clock = pair_new(sizeof clk / 4, BITS, &clk, 0);
    float *host[2][3];
    size_t most = 0;
    for (int k = 0; k < 2; k++) {
        size_t n = (size_t)(c.rows[k] * c.cols[k]);
        host[k][0] = rand_f32(n, 140 + k, -1, 1);
        host[k][1] = rand_f32(n, 142 + k, -1, 1);
        host[k][2] = rand_f32(n, 144 + k, -0.1f, 0.1f);
        c.w[k] = pair_new(n, F32, host[k][0], 1);
        c.g[k] = pair_new(n, F32, host[k][1], 0);
        c.buf[k] = pair_new(n, F32, host[k][2], 1);
        size_t need = erase_muon_work_floats(c.rows[k], c.cols[k]);
        most = need > most ? need : most;
    }
    c.work = pair_new(most, F32, NULL, 0);
    run_both("muon", muon_body, &c);
    for (int k = 0; k < 2; k++)
        free(host[k][0]), free(host[k][1]), free(host[k][2]);
}

/* ---- the gpt model's ops -------------------------------------------------- */

typedef struct {
    int batch, T, dim, vocab;
    pair_t *tokens, *wte, *wpe, *out, *dout, *dwte, *dwpe, *dwte_acc;
} tokemb_ctx_t;

static void tokemb_body(void *p)
{
    tokemb_ctx_t *c = p;
    MUST(erase_token_embedding_forward(S, c->batch, c->T, c->dim, c->vocab, P(c->tokens),
                                       P(c->wte), P(c->wpe), P(c->out)));
    MUST(erase_token_embedding_backward(S, c->batch, c->T, c->dim, c->vocab, P(c->tokens),
                                        P(c->dout), P(c->dwte), P(c->dwpe), 0));
    /* onto a gradient already there (a tied LM head's), without dwpe */
    MUST(erase_token_embedding_backward(S, c->batch, c->T, c->dim, c->vocab, P(c->tokens),
                                        P(c->dout), P(c->dwte_acc), NULL, 1));
}

/* batch x T positions; token (vocab - 5) / 2 at about 3 positions in 4 (a
 * run far longer than ERASE_SPARSE_SUM_CHUNK: the sum is one sum in order,
 * not chunked), the others random below vocab - 5 (the last rows
 * untouched: 0 written, or left as they are with accumulate). */
static void tokemb_case(int batch, int T, int dim, int vocab, const char *what)
{
    tokemb_ctx_t c = { .batch = batch, .T = T, .dim = dim, .vocab = vocab };
    size_t np = (size_t)batch * T;
    int32_t *tokens = malloc(sizeof *tokens * (np + 1));
    assert_non_null(tokens);
    uint64_t rng = 90;
    for (size_t i = 0; i < np; i++)
        tokens[i] = erase_rng_below(&rng, 4) ? (vocab - 5) / 2
                                             : (int32_t)erase_rng_below(&rng, (uint64_t)vocab - 5);
    float *wte = rand_f32((size_t)vocab * dim, 91, -1, 1), *wpe = rand_f32((size_t)(T + 3) * dim, 92, -1, 1),
          *dout = rand_f32(np * dim, 93, -1, 1), *g0 = rand_f32((size_t)vocab * dim, 94, -1, 1);
    c.tokens = pair_new(np, I32, tokens, 0);
    c.wte = pair_new((size_t)vocab * dim, F32, wte, 0);
    c.wpe = pair_new((size_t)(T + 3) * dim, F32, wpe, 0); /* more rows than T */
    c.dout = pair_new(np * dim, F32, dout, 0);
    c.out = pair_new(np * dim, BITS, NULL, 1);             /* one float addition */
    c.dwte = pair_new((size_t)vocab * dim, BITS, NULL, 1); /* the same order from 0 */
    c.dwpe = pair_new((size_t)T * dim, BITS, NULL, 1);
    c.dwte_acc = pair_new((size_t)vocab * dim, BITS, g0, 1); /* added one by one onto g0 */
    run_both(what, tokemb_body, &c);
    pairs_free();
    free(tokens), free(wte), free(wpe), free(dout), free(g0);
}

static void test_token_embedding(void **state)
{
    NEED_GPU();
    tokemb_case(3, 37, 20, 45, "token embedding T=37 dim=20 vocab=45");
    tokemb_case(4, 300, 70, 259, "token embedding T=300 dim=70 vocab=259");
    tokemb_case(5, 1, 33, 6, "token embedding T=1 dim=33 vocab=6");
}

typedef struct {
    int backward;
    pair_t *tok, *wte, *wpe, *out, *dwte, *dwpe;
} token_fault_ctx_t;

static void token_fault_body(void *p)
{
    token_fault_ctx_t *c = p;
    if (c->backward)
        MUST(erase_token_embedding_backward(S, 2, 3, 5, 4, P(c->tok), P(c->out), P(c->dwte),
                                            P(c->dwpe), 0));
    else
        MUST(erase_token_embedding_forward(S, 2, 3, 5, 4, P(c->tok), P(c->wte), P(c->wpe),
                                           P(c->out)));
}

/* A token outside [0, vocab) fails from the stream's synchronize, naming
 * the token embedding, forward and backward, on both devices. */
static void test_token_embedding_fault(void **state)
{
    NEED_GPU();
    int32_t tokens[6] = { 1, 2, 0, 3, 4, 1 };
    float *w = rand_f32(4 * 5, 95, -1, 1), *pos = rand_f32(3 * 5, 96, -1, 1);
    token_fault_ctx_t c = { 0, pair_new(6, I32, tokens, 0), pair_new(4 * 5, F32, w, 0),
                            pair_new(3 * 5, F32, pos, 0), pair_new(6 * 5, F32, NULL, 0),
                            pair_new(4 * 5, F32, NULL, 0), pair_new(3 * 5, F32, NULL, 0) };
    free(w), free(pos); /* copied to both devices */
    expect_fault("token 4 of vocab 4, forward", "token", token_fault_body, &c);
    c.backward = 1;
    expect_fault("token 4 of vocab 4, backward", "token", token_fault_body, &c);
}

typedef struct {
    int batch, T, heads, dim;
    pair_t *qkv, *att, *out, *dout, *scratch, *dqkv;
} attention_ctx_t;

static void attention_body(void *p)
{
    attention_ctx_t *c = p;
    MUST(erase_attention_forward(S, c->batch, c->T, c->heads, c->dim, P(c->qkv), P(c->att),
                                 P(c->out)));
    MUST(erase_attention_backward(S, c->batch, c->T, c->heads, c->dim, P(c->qkv), P(c->att),
                                  P(c->dout), P(c->scratch), P(c->dqkv)));
}

static void attention_case(int batch, int T, int heads, int dim)
{
    attention_ctx_t c = { .batch = batch, .T = T, .heads = heads, .dim = dim };
    size_t nqkv = (size_t)batch * T * 3 * dim, natt = (size_t)batch * heads * T * T,
           nout = (size_t)batch * T * dim;
    float *qkv = rand_f32(nqkv, 100 + T, -2, 2), *dout = rand_f32(nout, 101 + T, -1, 1);
    c.qkv = pair_new(nqkv, F32, qkv, 0);
    c.dout = pair_new(nout, F32, dout, 0);
    c.scratch = pair_new(natt, F32, NULL, 0);
    c.att = pair_new(natt, F32, NULL, 1);
    c.out = pair_new(nout, F32, NULL, 1);
    c.dqkv = pair_new(nqkv, F32, NULL, 1);
    char what[96];
    snprintf(what, sizeof what, "attention batch=%d T=%d heads=%d dim=%d", batch, T, heads, dim);
    run_both(what, attention_body, &c);
    pairs_free();
    free(qkv), free(dout);
}

static void test_attention(void **state)
{
    NEED_GPU();
    attention_case(2, 1, 1, 8);   /* one position */
    attention_case(3, 37, 3, 24); /* T not a multiple of 32; heads >= batch: a GEMM per sequence */
    attention_case(1, 70, 1, 16); /* one head, rows of three warp passes */
    attention_case(5, 33, 2, 10); /* batch > heads: a GEMM per head; head size 5 */
}

typedef struct {
    int batch, t, len, heads, dim;
    pair_t *qkv, *kc, *vc, *scratch, *out;
} decode_ctx_t;

static void decode_body(void *p)
{
    decode_ctx_t *c = p;
    MUST(erase_attention_decode(S, c->batch, c->t, c->len, c->heads, c->dim, P(c->qkv), P(c->kc),
                                P(c->vc), P(c->scratch), P(c->out)));
}

static void test_attention_decode(void **state)
{
    NEED_GPU();
    int ts[3] = { 0, 20, 36 };
    for (int i = 0; i < 3; i++) {
        decode_ctx_t c = { .batch = 2, .t = ts[i], .len = 37, .heads = 3, .dim = 24 };
        size_t ncache = (size_t)2 * 37 * 24;
        float *qkv = rand_f32(2 * 3 * 24, 110 + i, -2, 2), *kc = rand_f32(ncache, 113, -2, 2),
              *vc = rand_f32(ncache, 114, -2, 2);
        c.qkv = pair_new(2 * 3 * 24, F32, qkv, 0);
        c.scratch = pair_new((size_t)2 * 3 * 37, F32, NULL, 0);
        c.kc = pair_new(ncache, BITS, kc, 1); /* row t written, the others kept */
        c.vc = pair_new(ncache, BITS, vc, 1);
        c.out = pair_new(2 * 24, F32, NULL, 1);
        char what[64];
        snprintf(what, sizeof what, "attention decode t=%d of 37", ts[i]);
        run_both(what, decode_body, &c);
        pairs_free();
        free(qkv), free(kc), free(vc);
    }
}

/* On CUDA alone: decoding positions 0 .. T-1 one by one gives the rows of
 * the forward's output (the same keys and values, through the caches). */
static void test_attention_decode_rows(void **state)
{
    NEED_GPU();
    enum { B = 2, T = 35, H = 3, D = 24 };
    float *qkv = rand_f32((size_t)B * T * 3 * D, 120, -2, 2);
    side = 1;
    pair_t *q = pair_new((size_t)B * T * 3 * D, F32, qkv, 0), *att = pair_new((size_t)B * H * T * T, F32, NULL, 0),
           *out = pair_new((size_t)B * T * D, F32, NULL, 0), *row = pair_new((size_t)B * 3 * D, F32, NULL, 0),
           *kc = pair_new((size_t)B * T * D, F32, NULL, 0), *vc = pair_new((size_t)B * T * D, F32, NULL, 0),
           *scr = pair_new((size_t)B * H * T, F32, NULL, 0), *dec = pair_new((size_t)B * T * D, F32, NULL, 0);
    MUST(erase_attention_forward(S, B, T, H, D, P(q), P(att), P(out)));
    float *rowh = malloc(sizeof *rowh * B * 3 * D), *dech = malloc(sizeof *dech * B * D);
    float *decoded = malloc(sizeof *decoded * B * T * D);
    assert_true(rowh && dech && decoded);
    for (int t = 0; t < T; t++) {
        for (int b = 0; b < B; b++)
            memcpy(rowh + (size_t)b * 3 * D, qkv + ((size_t)b * T + t) * 3 * D, sizeof *rowh * 3 * D);
        MUST(erase_memcpy_sync(dev[1], P(row), rowh, sizeof *rowh * B * 3 * D));
        MUST(erase_attention_decode(S, B, t, T, H, D, P(row), P(kc), P(vc), P(scr), P(dec)));
        MUST(erase_stream_synchronize(S));
        MUST(erase_memcpy_sync(dev[1], dech, P(dec), sizeof *dech * B * D));
        for (int b = 0; b < B; b++)
            memcpy(decoded + ((size_t)b * T + t) * D, dech + (size_t)b * D, sizeof *dech * D);
    }
    float *forward = fetch(out, 1);
    compare("attention decode rows vs forward", 0, out, decoded, forward);
    free(forward), free(rowh), free(dech), free(decoded), free(qkv);
}

/* ---- the nanochat model's ops ------------------------------------------ */

typedef struct {
    int rows, dim, batch, T, t0, heads, hd;
    size_t n;
    pair_t *x, *dy, *y, *rstd, *dx, *dx_in;       /* RMSNorm [rows, dim]; dx_in: dy in place */
    pair_t *rx, *ry, *rinv, *r_in;                /* rotary [batch, T, heads, hd]; r_in in place */
    pair_t *px, *pdy, *r2, *dr2, *dr2_in, *sc, *dsc; /* pointwise [n] */
} nanochat_ctx_t;

static void nanochat_body(void *p)
{
    nanochat_ctx_t *c = p;
    MUST(erase_rmsnorm_forward(S, c->rows, c->dim, 1.1920929e-07f, P(c->x), P(c->y), P(c->rstd)));
    MUST(erase_rmsnorm_backward(S, c->rows, c->dim, P(c->x), P(c->rstd), P(c->dy), P(c->dx)));
    MUST(erase_rmsnorm_backward(S, c->rows, c->dim, P(c->x), P(c->rstd), P(c->dx_in), P(c->dx_in)));
    MUST(erase_rotary(S, c->batch, c->T, c->t0, c->heads, c->hd, 10000.0f, 0, P(c->rx), P(c->ry)));
    MUST(erase_rotary(S, c->batch, c->T, c->t0, c->heads, c->hd, 10000.0f, 1, P(c->rx), P(c->rinv)));
    MUST(erase_rotary(S, c->batch, c->T, c->t0, c->heads, c->hd, 10000.0f, 0, P(c->r_in), P(c->r_in)));
    MUST(erase_relu2_forward(S, c->n, P(c->px), P(c->r2)));
    MUST(erase_relu2_backward(S, c->n, P(c->px), P(c->pdy), P(c->dr2)));
    MUST(erase_relu2_backward(S, c->n, P(c->px), P(c->dr2_in), P(c->dr2_in))); /* as the model: in place */
    MUST(erase_softcap_forward(S, c->n, 15.0f, P(c->px), P(c->sc)));
    MUST(erase_softcap_backward(S, c->n, 15.0f, P(c->sc), P(c->pdy), P(c->dsc)));
}

/* RMSNorm (dim not a multiple of 32), the rotary embedding forward and
 * inverse at positions t0 = 1000 .. 1004 (argument reduction of cosf, sinf),
 * ReLU squared and the softcap, on the same inputs as the CPU. */
static void test_nanochat_ops(void **state)
{
    NEED_GPU();
    nanochat_ctx_t c = { .rows = 41, .dim = 70, .batch = 2, .T = 5, .t0 = 1000, .heads = 3, .hd = 12, .n = 1001 };
    size_t nr = (size_t)c.rows * c.dim, nrot = (size_t)c.batch * c.T * c.heads * c.hd;
    float *x = rand_f32(nr, 130, -2, 3), *dy = rand_f32(nr, 131, -1, 1), *rx = rand_f32(nrot, 132, -2, 2),
          *px = rand_f32(c.n, 133, -40, 40), *pdy = rand_f32(c.n, 134, -1, 1);
    c.x = pair_new(nr, F32, x, 0);
    c.dy = pair_new(nr, F32, dy, 0);
    c.y = pair_new(nr, F32, NULL, 1);
    c.rstd = pair_new((size_t)c.rows, F32, NULL, 1);
    c.dx = pair_new(nr, F32, NULL, 1);
    c.dx_in = pair_new(nr, F32, dy, 1);
    c.rx = pair_new(nrot, F32, rx, 0);
    c.ry = pair_new(nrot, F32, NULL, 1);
    c.rinv = pair_new(nrot, F32, NULL, 1);
    c.r_in = pair_new(nrot, F32, rx, 1);
    c.px = pair_new(c.n, F32, px, 0);
    c.pdy = pair_new(c.n, F32, pdy, 0);
    c.r2 = pair_new(c.n, F32, NULL, 1);
    c.dr2 = pair_new(c.n, F32, NULL, 1);
    c.dr2_in = pair_new(c.n, F32, pdy, 1);
    c.sc = pair_new(c.n, F32, NULL, 1);
    c.dsc = pair_new(c.n, F32, NULL, 1);
    run_both("nanochat ops", nanochat_body, &c);
    free(x), free(dy), free(rx), free(px), free(pdy);
}

/* ---- the dcn model's cross layer (issue 36) ------------------------------ */

typedef struct {
    size_t n;
    pair_t *x0, *u, *xl, *dy, *y, *du, *dx0, *du_in, *du_only;
} cross_ctx_t;

static void cross_body(void *p)
{
    cross_ctx_t *c = p;
    MUST(erase_cross_forward(S, c->n, P(c->x0), P(c->u), P(c->xl), P(c->y)));
    MUST(erase_cross_backward(S, c->n, P(c->x0), P(c->u), P(c->dy), P(c->du), P(c->dx0)));
    MUST(erase_cross_backward(S, c->n, P(c->x0), P(c->u), P(c->du_in), P(c->du_in), NULL)); /* du in place of dy */
    MUST(erase_cross_backward(S, c->n, P(c->x0), P(c->u), P(c->dy), P(c->du_only), NULL));
}

/* y = x0 * u + xl and its backward, dx0 given or not, du in place. */
static void test_cross(void **state)
{
    NEED_GPU();
    cross_ctx_t c = { .n = 3 * 1001 };
    float *x0 = rand_f32(c.n, 150, -2, 2), *u = rand_f32(c.n, 151, -2, 2), *xl = rand_f32(c.n, 152, -2, 2),
          *dy = rand_f32(c.n, 153, -1, 1);
    c.x0 = pair_new(c.n, F32, x0, 0);
    c.u = pair_new(c.n, F32, u, 0);
    c.xl = pair_new(c.n, F32, xl, 0);
    c.dy = pair_new(c.n, F32, dy, 0);
    c.y = pair_new(c.n, F32, NULL, 1);
    c.du = pair_new(c.n, F32, NULL, 1);
    c.dx0 = pair_new(c.n, F32, NULL, 1);
    c.du_in = pair_new(c.n, F32, dy, 1);
    c.du_only = pair_new(c.n, F32, NULL, 1);
    run_both("cross", cross_body, &c);
    free(x0), free(u), free(xl), free(dy);
}

typedef struct {
    int batch, T, heads, kv_heads, hd;
    pair_t *q, *k, *v, *att, *out, *dout, *scratch, *dq, *dk, *dv;
} gqa_ctx_t;

static void gqa_body(void *p)
{
    gqa_ctx_t *c = p;
    MUST(erase_gqa_attention_forward(S, c->batch, c->T, c->heads, c->kv_heads, c->hd, P(c->q), P(c->k), P(c->v),
                                     P(c->att), P(c->out)));
    MUST(erase_gqa_attention_backward(S, c->batch, c->T, c->heads, c->kv_heads, c->hd, P(c->q), P(c->k), P(c->v),
                                      P(c->att), P(c->dout), P(c->scratch), P(c->dq), P(c->dk), P(c->dv)));
}

static void gqa_case(int batch, int T, int heads, int kv_heads, int hd)
{
    gqa_ctx_t c = { .batch = batch, .T = T, .heads = heads, .kv_heads = kv_heads, .hd = hd };
    size_t nq = (size_t)batch * T * heads * hd, nkv = (size_t)batch * T * kv_heads * hd,
           natt = (size_t)batch * heads * T * T;
    float *q = rand_f32(nq, 140 + T, -2, 2), *k = rand_f32(nkv, 141 + T, -2, 2), *v = rand_f32(nkv, 142 + T, -2, 2),
          *dout = rand_f32(nq, 143 + T, -1, 1);
    c.q = pair_new(nq, F32, q, 0);
    c.k = pair_new(nkv, F32, k, 0);
    c.v = pair_new(nkv, F32, v, 0);
    c.dout = pair_new(nq, F32, dout, 0);
    c.scratch = pair_new(natt, F32, NULL, 0);
    c.att = pair_new(natt, F32, NULL, 1);
    c.out = pair_new(nq, F32, NULL, 1);
    c.dq = pair_new(nq, F32, NULL, 1);
    c.dk = pair_new(nkv, F32, NULL, 1);
    c.dv = pair_new(nkv, F32, NULL, 1);
    char what[96];
    snprintf(what, sizeof what, "gqa attention batch=%d T=%d heads=%d kv_heads=%d hd=%d", batch, T, heads, kv_heads,
             hd);
    run_both(what, gqa_body, &c);
    pairs_free();
    free(q), free(k), free(v), free(dout);
}

static void test_gqa_attention(void **state)
{
    NEED_GPU();
    gqa_case(2, 1, 2, 1, 8);   /* one position */
    gqa_case(3, 37, 6, 2, 8);  /* groups of 3; kv_heads < batch: a GEMM per key/value head */
    gqa_case(1, 33, 4, 4, 5);  /* kv_heads = heads: multi-head, head size 5 */
    gqa_case(2, 35, 4, 1, 16); /* one key/value head for all four query heads */
}

typedef struct {
    int batch, t, len, heads, kv_heads, hd;
    pair_t *q, *k, *v, *kc, *vc, *scratch, *out;
} gqa_decode_ctx_t;

static void gqa_decode_body(void *p)
{
    gqa_decode_ctx_t *c = p;
    MUST(erase_gqa_attention_decode(S, c->batch, c->t, c->len, c->heads, c->kv_heads, c->hd, P(c->q), P(c->k),
                                    P(c->v), P(c->kc), P(c->vc), P(c->scratch), P(c->out)));
}

/* Groups of 3 query heads on 2 key/value heads at the first, a middle and
 * the last position of a 37-row cache. */
static void test_gqa_attention_decode(void **state)
{
    NEED_GPU();
    int ts[3] = { 0, 20, 36 };
    enum { DB = 2, DL = 37, DH = 6, DKV = 2, DHD = 8 };
    for (int i = 0; i < 3; i++) {
        gqa_decode_ctx_t c = { .batch = DB, .t = ts[i], .len = DL, .heads = DH, .kv_heads = DKV, .hd = DHD };
        size_t ncache = (size_t)DB * DL * DKV * DHD;
        float *q = rand_f32(DB * DH * DHD, 150 + i, -2, 2), *k = rand_f32(DB * DKV * DHD, 153 + i, -2, 2),
              *v = rand_f32(DB * DKV * DHD, 156 + i, -2, 2), *kc = rand_f32(ncache, 159, -2, 2),
              *vc = rand_f32(ncache, 160, -2, 2);
        c.q = pair_new(DB * DH * DHD, F32, q, 0);
        c.k = pair_new(DB * DKV * DHD, F32, k, 0);
        c.v = pair_new(DB * DKV * DHD, F32, v, 0);
        c.scratch = pair_new((size_t)DB * DH * DL, F32, NULL, 0);
        c.kc = pair_new(ncache, BITS, kc, 1); /* row t written, the others kept */
        c.vc = pair_new(ncache, BITS, vc, 1);
        c.out = pair_new(DB * DH * DHD, F32, NULL, 1);
        char what[64];
        snprintf(what, sizeof what, "gqa attention decode t=%d of %d", ts[i], DL);
        run_both(what, gqa_decode_body, &c);
        pairs_free();
        free(q), free(k), free(v), free(kc), free(vc);
    }
}

typedef struct {
    size_t n;
    pair_t *x, *acc, *acc2, *clipped, *kept, *chained, *big, *small, *chain_sq;
} clip_ctx_t;

static void clip_body(void *p)
{
    clip_ctx_t *c = p;
    MUST(erase_sum_squares(S, c->n, P(c->x), P(c->acc)));
    MUST(erase_sum_squares(S, 5, P(c->x), P(c->acc2)));
    MUST(erase_clip_by_norm(S, c->n, P(c->clipped), P(c->big), 1.5f));
    MUST(erase_clip_by_norm(S, c->n, P(c->kept), P(c->small), 1.0f));
    /* as a step does it: the norm of x, then x clipped by it */
    MUST(erase_sum_squares(S, c->n, P(c->chained), P(c->chain_sq)));
    MUST(erase_clip_by_norm(S, c->n, P(c->chained), P(c->chain_sq), 2.0f));
}

static void test_clip(void **state)
{
    NEED_GPU();
    size_t n = ((size_t)1 << 21) + 12345; /* above the largest grid's 8192 x 256 threads */
    clip_ctx_t c = { .n = n };
    float *x = rand_f32(n, 130, -1, 1);
    float acc0 = 0.5f, zero = 0.0f, big = 100.0f, small = 0.25f;
    c.x = pair_new(n, F32, x, 0);
    c.big = pair_new(1, F32, &big, 0);     /* norm 10: x * 1.5 / (10 + 1e-6) */
    c.small = pair_new(1, F32, &small, 0); /* norm 0.5 < 1: x unchanged */
    c.acc = pair_new(1, F32, &acc0, 1);    /* added to what it holds */
    c.acc2 = pair_new(1, F32, &zero, 1);
    c.chain_sq = pair_new(1, F32, &zero, 1);
    c.clipped = pair_new(n, BITS, x, 1); /* the same float arithmetic as the CPU */
    c.kept = pair_new(n, BITS, x, 1);
    c.chained = pair_new(n, F32, x, 1);
    run_both("sum of squares and clip by norm", clip_body, &c);
    float *kept = fetch(c.kept, 1);
    assert_memory_equal(kept, x, n * 4);
    free(kept), free(x);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_linear, case_teardown),
        cmocka_unit_test_teardown(test_eltwise, case_teardown),
        cmocka_unit_test_teardown(test_concat, case_teardown),
        cmocka_unit_test_teardown(test_embedding, case_teardown),
        cmocka_unit_test_teardown(test_embedding_bag, case_teardown),
        cmocka_unit_test_teardown(test_interaction, case_teardown),
        cmocka_unit_test_teardown(test_losses, case_teardown),
        cmocka_unit_test_teardown(test_layernorm, case_teardown),
        cmocka_unit_test_teardown(test_sparse, case_teardown),
        cmocka_unit_test_teardown(test_sparse_pack_fault, case_teardown),
        cmocka_unit_test_teardown(test_shard, case_teardown),
        cmocka_unit_test_teardown(test_shard_faults, case_teardown),
        cmocka_unit_test_teardown(test_optim, case_teardown),
        cmocka_unit_test_teardown(test_optim_nonfinite, case_teardown),
        cmocka_unit_test_teardown(test_muon, case_teardown),
        cmocka_unit_test_teardown(test_token_embedding, case_teardown),
        cmocka_unit_test_teardown(test_token_embedding_fault, case_teardown),
        cmocka_unit_test_teardown(test_attention, case_teardown),
        cmocka_unit_test_teardown(test_attention_decode, case_teardown),
        cmocka_unit_test_teardown(test_attention_decode_rows, case_teardown),
        cmocka_unit_test_teardown(test_clip, case_teardown),
        cmocka_unit_test_teardown(test_nanochat_ops, case_teardown),
        cmocka_unit_test_teardown(test_cross, case_teardown),
        cmocka_unit_test_teardown(test_gqa_attention, case_teardown),
        cmocka_unit_test_teardown(test_gqa_attention_decode, case_teardown),
    };
    const size_t ntests = sizeof tests / sizeof tests[0];
    if (group_setup(NULL) != 0) {
        printf("Bail out! cannot open the CPU device: %s\n", erase_error_message());
        return 1;
    }
    int failed = 0;
    if (dev[1]) {
        failed = cmocka_run_group_tests(tests, NULL, NULL);
    } else {
        gpu_tap_skip(tests, ntests, 0, skip_reason);
    }
    group_teardown(NULL);
    return failed ? 1 : 0;
}
