/*
 * Op gradients and precision of the CPU kernels (lib/ops/cpu/kernels_impl.h).
 *
 * 1. Every backward against central finite differences, in double
 *    precision (the _f64 kernels): for a scalar objective J = sum_i c_i
 *    out_i with random fixed weights c (|c_i| in [0.5, 1.5], random sign),
 *    the analytic gradient is the backward applied to dy = c (for the
 *    losses, whose output is one number, J = weight * loss and the kernel's
 *    dz already holds weight * dloss/dz). The numeric gradient of input k is
 *    sum_i c_i (out_i(p_k + h) - out_i(p_k - h)) / ((p_k + h) - (p_k - h))
 *    with h = 1e-6 (the difference of outputs is taken before the sum so
 *    that J's magnitude does not cost digits, and the step actually taken
 *    is the divisor). Per element, |analytic - numeric| /
 *    max(1e-8, |analytic| + |numeric|) is bounded by 1e-6: the truncation
 *    error is O(h^2) and the rounding error about 1e-16 |out| / h = 1e-10
 *    relative for the O(1) values used here.
 * 2. The _f32 kernels (what the CPU backend runs) against the _f64 kernels
 *    on the same inputs (floats widened exactly to double). Errors are
 *    measured relative to the magnitude of the terms that make each output:
 *    for the sums of products (linear, interaction, embedding gradient) the
 *    _f64 kernel run on the absolute values of the inputs gives exactly
 *    sum |terms|; elementwise results computed in double and rounded once
 *    are measured against |ref| + 1e-6. Bound: 1e-5 (float rounding of sums
 *    of at most 65 terms stays near 1e-7).
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

#include "lib/core/rng.h"
#include "lib/device/device.h"
#include "lib/ops/cpu/kernels.h"

#define H 1e-6
#define FD_BOUND 1e-6
#define F32_BOUND 1e-5

static erase_device_t *dev;

/* ---- allocation: every block of a test is freed at its end -------------- */

#define ARENA_MAX 256
static void *arena[ARENA_MAX];
static int arena_n;

static void *alloc(size_t bytes)
{
    assert_true(arena_n < ARENA_MAX);
    void *p = calloc(1, bytes ? bytes : 1);
    assert_non_null(p);
    arena[arena_n++] = p;
    return p;
}

static double *dalloc(size_t n) { return alloc(n * sizeof(double)); }
static float *falloc(size_t n) { return alloc(n * sizeof(float)); }

static void free_all(void)
{
    while (arena_n > 0)
        free(arena[--arena_n]);
}

static int free_test(void **state)
{
    free_all();
    return 0;
}

/* ---- random data --------------------------------------------------------- */

static void fill(uint64_t *rng, double *x, size_t n, double lo, double hi)
{
    for (size_t i = 0; i < n; i++)
        x[i] = erase_rng_uniform(rng, (float)lo, (float)hi);
}

static void fill_f(uint64_t *rng, float *x, size_t n, float lo, float hi)
{
    for (size_t i = 0; i < n; i++)
        x[i] = erase_rng_uniform(rng, lo, hi);
}

/* Nonzero weights: |c| in [0.5, 1.5], random sign. */
static void fill_weights(uint64_t *rng, double *c, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        double v = erase_rng_uniform(rng, 0.5f, 1.5f);
        c[i] = erase_rng_below(rng, 2) ? v : -v;
    }
}

static void fill_weights_f(uint64_t *rng, float *c, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        float v = erase_rng_uniform(rng, 0.5f, 1.5f);
        c[i] = erase_rng_below(rng, 2) ? v : -v;
    }
}

static double *widen(const float *x, size_t n)
{
    double *d = dalloc(n);
    for (size_t i = 0; i < n; i++)
        d[i] = x[i];
    return d;
}

static double *absolute(const double *x, size_t n)
{
    double *d = dalloc(n);
    for (size_t i = 0; i < n; i++)
        d[i] = fabs(x[i]);
    return d;
}

static int any_nonzero(const double *x, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (x[i] != 0)
            return 1;
    return 0;
}

/* ---- finite differences -------------------------------------------------- */

/* Forward of an op: all outputs (m of them) from the inputs held in ctx. */
typedef void (*forward_fn)(void *ctx, double *out);

/* Central differences of J = sum_i c_i out_i with respect to p[0..n). */
static void numeric_gradient(forward_fn fwd, void *ctx, size_t m, const double *c, double *p,
                             size_t n, double *numeric)
{
    double *op = malloc(m * sizeof(double)), *om = malloc(m * sizeof(double));
    assert_non_null(op);
    assert_non_null(om);
    for (size_t k = 0; k < n; k++) {
        double save = p[k], hp = save + H, hm = save - H;
        p[k] = hp;
        fwd(ctx, op);
        p[k] = hm;
        fwd(ctx, om);
        p[k] = save;
        double s = 0;
        for (size_t i = 0; i < m; i++)
            s += c[i] * (op[i] - om[i]);
        numeric[k] = s / (hp - hm);
    }
    free(op);
    free(om);
}

/* Worst per-element |a - n| / max(floor, |a| + |n|); NaN counts as the worst. */
static double max_rel_error(const double *analytic, const double *numeric, size_t n, double floor)
{
    double worst = 0;
    for (size_t i = 0; i < n; i++) {
        double den = fabs(analytic[i]) + fabs(numeric[i]);
        double err = fabs(analytic[i] - numeric[i]) / (den > floor ? den : floor);
        if (!(err <= worst))
            worst = isnan(err) ? INFINITY : err;
    }
    return worst;
}

/*
 * Compare the analytic gradient of p (n elements) with finite differences,
 * per element relative to max(floor_rel * the largest |analytic|, 1e-8).
 * The rounding error of a numeric gradient is absolute (about 1e-16 times
 * the sum of |c_i out_i| over h, from the m outputs): floor_rel > 0 keeps
 * it from counting as a relative error in elements far smaller than the
 * tensor's largest (an op with many outputs per input, as attention).
 */
static void check_gradient_floor(const char *what, forward_fn fwd, void *ctx, size_t m,
                                 const double *c, double *p, size_t n, const double *analytic,
                                 double floor_rel)
{
    double *numeric = dalloc(n), largest = 0;
    numeric_gradient(fwd, ctx, m, c, p, n, numeric);
    for (size_t i = 0; i < n; i++)
        largest = fabs(analytic[i]) > largest ? fabs(analytic[i]) : largest;
    double floor = floor_rel * largest > 1e-8 ? floor_rel * largest : 1e-8;
    double err = max_rel_error(analytic, numeric, n, floor);
    print_message("%-22s %4zu elements, max relative error vs finite differences %.3g "
                  "(bound %.0e)\n", what, n, err, FD_BOUND);
    assert_true(any_nonzero(analytic, n));
    assert_true(err <= FD_BOUND);
}

static void check_gradient(const char *what, forward_fn fwd, void *ctx, size_t m, const double *c,
                           double *p, size_t n, const double *analytic)
{
    check_gradient_floor(what, fwd, ctx, m, c, p, n, analytic, 0);
}

/* ---- 1. gradients against finite differences (f64) ---------------------- */

typedef struct {
    int batch, in, out;
    double *x, *w, *b;
} linear_ctx_t;

static void linear_fwd(void *p, double *y)
{
    linear_ctx_t *a = p;
    erase_k_linear_forward_f64(a->batch, a->in, a->out, a->x, a->w, a->b, y);
}

static void test_grad_linear(void **state)
{
    uint64_t rng = 101;
    linear_ctx_t a = { .batch = 5, .in = 7, .out = 4 };
    size_t nx = (size_t)a.batch * a.in, nw = (size_t)a.out * a.in, ny = (size_t)a.batch * a.out;
    a.x = dalloc(nx);
    a.w = dalloc(nw);
    a.b = dalloc(a.out);
    double *c = dalloc(ny), *dx = dalloc(nx), *dw = dalloc(nw), *db = dalloc(a.out);
    fill(&rng, a.x, nx, -1, 1);
    fill(&rng, a.w, nw, -1, 1);
    fill(&rng, a.b, a.out, -1, 1);
    fill_weights(&rng, c, ny);
    erase_k_linear_backward_f64(a.batch, a.in, a.out, a.x, a.w, c, dx, dw, db);
    check_gradient("linear dx", linear_fwd, &a, ny, c, a.x, nx, dx);
    check_gradient("linear dw", linear_fwd, &a, ny, c, a.w, nw, dw);
    check_gradient("linear db", linear_fwd, &a, ny, c, a.b, a.out, db);
}

typedef struct {
    size_t n;
    double *x;
    float p;
    uint64_t seed, offset;
} eltwise_ctx_t;

static void relu_fwd(void *p, double *y)
{
    eltwise_ctx_t *a = p;
    erase_k_relu_forward_f64(a->n, a->x, y);
}

static void gelu_fwd(void *p, double *y)
{
    eltwise_ctx_t *a = p;
    erase_k_gelu_forward_f64(a->n, a->x, y);
}

static void dropout_fwd(void *p, double *y)
{
    eltwise_ctx_t *a = p;
    erase_k_dropout_f64(a->n, a->p, a->seed, a->offset, a->x, y);
}

static void test_grad_relu(void **state)
{
    uint64_t rng = 102;
    eltwise_ctx_t a = { .n = 64 };
    a.x = dalloc(a.n);
    double *c = dalloc(a.n), *y = dalloc(a.n), *dx = dalloc(a.n);
    /* |x| >= 0.01 >> h: the kink at 0 is never inside a difference */
    for (size_t i = 0; i < a.n; i++) {
        double v = erase_rng_uniform(&rng, 0.01f, 1.0f);
        a.x[i] = i % 2 ? v : -v;
    }
    fill_weights(&rng, c, a.n);
    erase_k_relu_forward_f64(a.n, a.x, y);
    erase_k_relu_backward_f64(a.n, y, c, dx);
    /* the gradient is exactly c where x > 0 and 0 elsewhere */
    for (size_t i = 0; i < a.n; i++)
        assert_true(dx[i] == (a.x[i] > 0 ? c[i] : 0.0));
    check_gradient("relu dx", relu_fwd, &a, a.n, c, a.x, a.n, dx);
}

static void test_grad_gelu(void **state)
{
    uint64_t rng = 103;
    eltwise_ctx_t a = { .n = 64 };
    a.x = dalloc(a.n);
    double *c = dalloc(a.n), *dx = dalloc(a.n);
    fill(&rng, a.x, a.n, -4, 4);
    fill_weights(&rng, c, a.n);
    erase_k_gelu_backward_f64(a.n, a.x, c, dx);
    check_gradient("gelu dx", gelu_fwd, &a, a.n, c, a.x, a.n, dx);
}

static void test_grad_dropout(void **state)
{
    uint64_t rng = 104;
    eltwise_ctx_t a = { .n = 256, .p = 0.3f, .seed = 0x1234abcdULL, .offset = 77 };
    a.x = dalloc(a.n);
    double *c = dalloc(a.n), *y = dalloc(a.n), *dx = dalloc(a.n);
    fill(&rng, a.x, a.n, -1, 1);
    for (size_t i = 0; i < a.n; i++)
        if (a.x[i] == 0)
            a.x[i] = 0.5;
    fill_weights(&rng, c, a.n);
    erase_k_dropout_f64(a.n, a.p, a.seed, a.offset, a.x, y);
    /* backward: the same op on dy with the same (seed, offset) */
    erase_k_dropout_f64(a.n, a.p, a.seed, a.offset, c, dx);
    double scale = 1.0 / (1.0 - (double)a.p);
    size_t kept = 0;
    for (size_t i = 0; i < a.n; i++) {
        if (y[i] != 0) {
            kept++;
            assert_true(fabs(dx[i] - c[i] * scale) <= 1e-15 * fabs(c[i] * scale));
            assert_true(fabs(y[i] - a.x[i] * scale) <= 1e-15 * fabs(a.x[i] * scale));
        } else {
            assert_true(dx[i] == 0);
        }
    }
    assert_true(kept > 0 && kept < a.n);
    check_gradient("dropout dx", dropout_fwd, &a, a.n, c, a.x, a.n, dx);
}

typedef struct {
    int batch, n;
    const int *widths;
    double *xs[3];
} concat_ctx_t;

static void concat_fwd(void *p, double *y)
{
    concat_ctx_t *a = p;
    erase_k_concat_forward_f64(a->batch, a->n, a->widths, (const double *const *)a->xs, y);
}

static void test_grad_concat(void **state)
{
    static const int widths[3] = { 2, 5, 1 };
    uint64_t rng = 105;
    concat_ctx_t a = { .batch = 3, .n = 3, .widths = widths };
    size_t ny = (size_t)a.batch * 8;
    double *c = dalloc(ny), *dxs[3];
    for (int i = 0; i < 3; i++) {
        a.xs[i] = dalloc((size_t)a.batch * widths[i]);
        dxs[i] = dalloc((size_t)a.batch * widths[i]);
        fill(&rng, a.xs[i], (size_t)a.batch * widths[i], -1, 1);
    }
    fill_weights(&rng, c, ny);
    erase_k_concat_backward_f64(a.batch, a.n, widths, c, dxs);
    static const char *const names[3] = { "concat dx0", "concat dx1", "concat dx2" };
    for (int i = 0; i < 3; i++)
        check_gradient(names[i], concat_fwd, &a, ny, c, a.xs[i], (size_t)a.batch * widths[i],
                       dxs[i]);
}

enum { EMB_BATCH = 12, EMB_FIELDS = 3, EMB_DIM = 4 };

typedef struct {
    const uint32_t *rows, *ids;
    double *tables[EMB_FIELDS];
} embedding_ctx_t;

static void embedding_fwd(void *p, double *out)
{
    embedding_ctx_t *a = p;
    erase_k_embedding_forward_f64(EMB_BATCH, EMB_FIELDS, EMB_DIM, a->rows, a->ids,
                                  (const double *const *)a->tables, out);
}

/* The documented row of an id: the last row for 0xFFFFFFFF, else id mod (rows - 1). */
static uint32_t row_of(uint32_t id, uint32_t rows)
{
    return id == 0xFFFFFFFFu ? rows - 1 : id % (rows - 1);
}

static void test_grad_embedding(void **state)
{
    /* field 1 has a single real row: every real id collides there */
    static const uint32_t rows[EMB_FIELDS] = { 5, 2, 9 };
    static const uint32_t ids[EMB_BATCH * EMB_FIELDS] = {
        3,           0,           0,
        7,           0xFFFFFFFFu, 8,          /* 7 = 3 + 4 collides with 3 in field 0 */
        0xFFFFFFFFu, 5,           0xFFFFFFFFu,
        1,           1,           16,         /* 16 mod 8 = 0, collides with id 0 */
        0xFFFFFFFEu, 0xFFFFFFFFu, 3,          /* 0xFFFFFFFE mod 4 = 2 */
        2,           123456,      0xFFFFFFFFu,
        3,           7,           11,         /* 11 mod 8 = 3 */
        0xFFFFFFFFu, 0xFFFFFFFEu, 0,
        11,          2,           3,          /* 11 mod 4 = 3 */
        6,           0xFFFFFFFFu, 0xFFFFFFFEu, /* 0xFFFFFFFE mod 8 = 6 */
        3,           9,           5,
        0,           4,           0xFFFFFFFFu,
    };
    uint64_t rng = 106;
    embedding_ctx_t a = { .rows = rows, .ids = ids };
    size_t nout = (size_t)EMB_BATCH * EMB_FIELDS * EMB_DIM;
    double *c = dalloc(nout);
    for (int f = 0; f < EMB_FIELDS; f++) {
        a.tables[f] = dalloc((size_t)rows[f] * EMB_DIM);
        fill(&rng, a.tables[f], (size_t)rows[f] * EMB_DIM, -1, 1);
    }
    fill_weights(&rng, c, nout);
    void *scratch = alloc(ERASE_EMBEDDING_SCRATCH_BYTES(EMB_BATCH));
    for (int f = 0; f < EMB_FIELDS; f++) {
        uint32_t *grows = alloc(EMB_BATCH * sizeof(uint32_t));
        double *gvals = dalloc((size_t)EMB_BATCH * EMB_DIM);
        int count = erase_k_embedding_backward_field_f64(EMB_BATCH, EMB_FIELDS, EMB_DIM, f, rows[f],
                                                         ids, c, scratch, grows, gvals);
        /* the rows are the distinct rows referenced, ascending */
        int referenced = 0;
        for (uint32_t row = 0; row < rows[f]; row++) {
            int used = 0;
            for (int r = 0; r < EMB_BATCH; r++)
                used |= row_of(ids[r * EMB_FIELDS + f], rows[f]) == row;
            referenced += used;
        }
        assert_int_equal(count, referenced);
        for (int i = 0; i < count; i++) {
            assert_true(grows[i] < rows[f]);
            if (i > 0)
                assert_true(grows[i] > grows[i - 1]);
        }
        /* dense analytic gradient of the table from the sparse rows */
        size_t n = (size_t)rows[f] * EMB_DIM;
        double *dense = dalloc(n);
        for (int i = 0; i < count; i++)
            memcpy(dense + (size_t)grows[i] * EMB_DIM, gvals + (size_t)i * EMB_DIM,
                   sizeof(double) * EMB_DIM);
        char name[64];
        snprintf(name, sizeof name, "embedding table %d", f);
        check_gradient(name, embedding_fwd, &a, nout, c, a.tables[f], n, dense);
        print_message("  (field %d: %u rows, %d distinct rows touched by %d samples)\n", f,
                      rows[f], count, EMB_BATCH);
    }
}

typedef struct {
    int batch, nvec, dim;
    double *dense, *emb;
} interaction_ctx_t;

static void interaction_fwd(void *p, double *out)
{
    interaction_ctx_t *a = p;
    erase_k_interaction_forward_f64(a->batch, a->nvec, a->dim, a->dense, a->emb, out);
}

static void test_grad_interaction(void **state)
{
    uint64_t rng = 107;
    interaction_ctx_t a = { .batch = 3, .nvec = 4, .dim = 5 };
    size_t nd = (size_t)a.batch * a.dim, ne = (size_t)a.batch * (a.nvec - 1) * a.dim;
    size_t ny = (size_t)a.batch * (a.dim + a.nvec * (a.nvec - 1) / 2);
    a.dense = dalloc(nd);
    a.emb = dalloc(ne);
    double *c = dalloc(ny), *ddense = dalloc(nd), *demb = dalloc(ne);
    fill(&rng, a.dense, nd, -1, 1);
    fill(&rng, a.emb, ne, -1, 1);
    fill_weights(&rng, c, ny);
    erase_k_interaction_backward_f64(a.batch, a.nvec, a.dim, a.dense, a.emb, c, ddense, demb);
    check_gradient("interaction ddense", interaction_fwd, &a, ny, c, a.dense, nd, ddense);
    check_gradient("interaction demb", interaction_fwd, &a, ny, c, a.emb, ne, demb);
}

typedef struct {
    int batch, classes;
    double *z;
    const double *y;
    const int32_t *labels;
} loss_ctx_t;

static void bce_fwd(void *p, double *loss)
{
    loss_ctx_t *a = p;
    *loss = erase_k_bce_with_logits_f64(a->batch, a->z, a->y, 1.0, NULL);
}

static void xent_fwd(void *p, double *loss)
{
    loss_ctx_t *a = p;
    *loss = erase_k_softmax_xent_f64(a->batch, a->classes, a->z, a->labels, 1.0, NULL);
}

static void test_grad_bce(void **state)
{
    uint64_t rng = 108;
    loss_ctx_t a = { .batch = 8 };
    a.z = dalloc(a.batch);
    double *y = dalloc(a.batch), *dz = dalloc(a.batch), weight;
    fill(&rng, a.z, a.batch, -4, 4);
    for (int r = 0; r < a.batch; r++) /* hard labels and two soft ones */
        y[r] = r == 3 ? 0.25 : r == 6 ? 0.8 : (double)erase_rng_below(&rng, 2);
    a.y = y;
    fill_weights(&rng, &weight, 1);
    erase_k_bce_with_logits_f64(a.batch, a.z, a.y, weight, dz);
    check_gradient("bce_with_logits dz", bce_fwd, &a, 1, &weight, a.z, a.batch, dz);
}

static void test_grad_softmax_xent(void **state)
{
    uint64_t rng = 109;
    loss_ctx_t a = { .batch = 4, .classes = 5 };
    size_t n = (size_t)a.batch * a.classes;
    int32_t labels[4];
    a.z = dalloc(n);
    double *dz = dalloc(n), weight;
    fill(&rng, a.z, n, -3, 3);
    for (int r = 0; r < a.batch; r++)
        labels[r] = (int32_t)erase_rng_below(&rng, (uint32_t)a.classes);
    a.labels = labels;
    fill_weights(&rng, &weight, 1);
    erase_k_softmax_xent_f64(a.batch, a.classes, a.z, labels, weight, dz);
    check_gradient("softmax_xent dz", xent_fwd, &a, 1, &weight, a.z, n, dz);
}

typedef struct {
    int batch, dim;
    double eps;
    double *x, *gamma, *beta, *mean, *rstd;
} layernorm_ctx_t;

static void layernorm_fwd(void *p, double *y)
{
    layernorm_ctx_t *a = p;
    erase_k_layernorm_forward_f64(a->batch, a->dim, a->eps, a->x, a->gamma, a->beta, y, a->mean,
                                  a->rstd);
}

static void test_grad_layernorm(void **state)
{
    uint64_t rng = 110;
    layernorm_ctx_t a = { .batch = 3, .dim = 8, .eps = 1e-5 };
    size_t n = (size_t)a.batch * a.dim;
    a.x = dalloc(n);
    a.gamma = dalloc(a.dim);
    a.beta = dalloc(a.dim);
    a.mean = dalloc(a.batch);
    a.rstd = dalloc(a.batch);
    double *c = dalloc(n), *y = dalloc(n), *dx = dalloc(n), *dgamma = dalloc(a.dim),
           *dbeta = dalloc(a.dim);
    fill(&rng, a.x, n, -1, 1);
    fill_weights(&rng, a.gamma, a.dim);
    fill(&rng, a.beta, a.dim, -1, 1);
    fill_weights(&rng, c, n);
    layernorm_fwd(&a, y); /* mean and rstd of the unperturbed input, for backward */
    double *mean = dalloc(a.batch), *rstd = dalloc(a.batch);
    memcpy(mean, a.mean, sizeof(double) * a.batch);
    memcpy(rstd, a.rstd, sizeof(double) * a.batch);
    erase_k_layernorm_backward_f64(a.batch, a.dim, a.x, a.gamma, mean, rstd, c, dx, dgamma, dbeta);
    check_gradient("layernorm dx", layernorm_fwd, &a, n, c, a.x, n, dx);
    check_gradient("layernorm dgamma", layernorm_fwd, &a, n, c, a.gamma, a.dim, dgamma);
    check_gradient("layernorm dbeta", layernorm_fwd, &a, n, c, a.beta, a.dim, dbeta);
}

/* ---- the gpt model's ops ------------------------------------------------- */

static void gelu_tanh_fwd(void *p, double *y)
{
    eltwise_ctx_t *a = p;
    erase_k_gelu_tanh_forward_f64(a->n, a->x, y);
}

static void test_grad_gelu_tanh(void **state)
{
    uint64_t rng = 111;
    eltwise_ctx_t a = { .n = 64 };
    a.x = dalloc(a.n);
    double *c = dalloc(a.n), *y = dalloc(a.n), *dx = dalloc(a.n);
    fill(&rng, a.x, a.n - 2, -4, 4);
    a.x[a.n - 2] = -9; /* far in the tails: the gradient stays accurate there */
    a.x[a.n - 1] = 9;
    fill_weights(&rng, c, a.n);
    /* the forward is the formula of lib/ops/ops.h (its tanh form in double) */
    erase_k_gelu_tanh_forward_f64(a.n, a.x, y);
    double worst = 0;
    for (size_t i = 0; i < a.n - 2; i++) { /* the tanh form cancels in the far left tail */
        double v = a.x[i];
        double want = 0.5 * v * (1 + tanh(0.79788456080286535588 * (v + 0.044715 * v * v * v)));
        double err = fabs(y[i] - want) / (fabs(want) + 1e-300);
        worst = err > worst ? err : worst;
    }
    print_message("gelu tanh y vs 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))): max relative "
                  "error %.3g (bound 1e-12)\n", worst);
    assert_true(worst <= 1e-12);
    erase_k_gelu_tanh_backward_f64(a.n, a.x, c, dx);
    check_gradient("gelu tanh dx", gelu_tanh_fwd, &a, a.n, c, a.x, a.n, dx);
}

enum { TOK_BATCH = 3, TOK_T = 4, TOK_DIM = 5, TOK_VOCAB = 7, TOK_POS = 6 };

typedef struct {
    const int32_t *tokens;
    double *wte, *wpe;
} token_ctx_t;

static void token_fwd(void *p, double *out)
{
    token_ctx_t *a = p;
    erase_k_token_embedding_forward_f64(TOK_BATCH, TOK_T, TOK_DIM, a->tokens, a->wte, a->wpe, out);
}

static void test_grad_token_embedding(void **state)
{
    /* token 3 five times (twice in one sequence), tokens 2 and 6 never: their rows get 0 */
    static const int32_t tokens[TOK_BATCH * TOK_T] = { 3, 0, 3, 1, 5, 3, 4, 0, 1, 3, 3, 5 };
    uint64_t rng = 112;
    token_ctx_t a = { .tokens = tokens };
    size_t nout = (size_t)TOK_BATCH * TOK_T * TOK_DIM, nte = (size_t)TOK_VOCAB * TOK_DIM;
    size_t npe = (size_t)TOK_POS * TOK_DIM; /* wpe has more rows than T */
    a.wte = dalloc(nte);
    a.wpe = dalloc(npe);
    double *c = dalloc(nout), *dwte = dalloc(nte), *dwpe = dalloc(npe), *out = dalloc(nout);
    fill(&rng, a.wte, nte, -1, 1);
    fill(&rng, a.wpe, npe, -1, 1);
    fill_weights(&rng, c, nout);
    token_fwd(&a, out);
    for (int i = 0; i < TOK_BATCH * TOK_T; i++)
        for (int d = 0; d < TOK_DIM; d++)
            assert_true(out[(size_t)i * TOK_DIM + d] ==
                        a.wte[(size_t)tokens[i] * TOK_DIM + d] + a.wpe[(size_t)(i % TOK_T) * TOK_DIM + d]);
    for (size_t i = 0; i < nte; i++)
        dwte[i] = NAN; /* accumulate = 0 writes every row */
    erase_k_token_embedding_backward_f64(TOK_BATCH, TOK_T, TOK_DIM, TOK_VOCAB, tokens, c, dwte,
                                         dwpe, 0);
    for (int d = 0; d < TOK_DIM; d++)
        assert_true(dwte[2 * TOK_DIM + d] == 0 && dwte[6 * TOK_DIM + d] == 0);
    check_gradient("token embedding dwte", token_fwd, &a, nout, c, a.wte, nte, dwte);
    check_gradient("token embedding dwpe", token_fwd, &a, nout, c, a.wpe,
                   (size_t)TOK_T * TOK_DIM, dwpe);

    /* accumulate = 1 adds the same sums to what dwte holds (a tied head's gradient) */
    double *held = dalloc(nte), *acc = dalloc(nte);
    fill(&rng, held, nte, -1, 1);
    memcpy(acc, held, sizeof(double) * nte);
    erase_k_token_embedding_backward_f64(TOK_BATCH, TOK_T, TOK_DIM, TOK_VOCAB, tokens, c, acc,
                                         NULL, 1);
    for (size_t i = 0; i < nte; i++)
        assert_true(fabs(acc[i] - (held[i] + dwte[i])) <= 1e-14);
    print_message("token embedding accumulate = 1: dwte = what it held + the sums (%zu elements)\n",
                  nte);
}

typedef struct {
    int batch, T, heads, dim;
    double *qkv, *att;
} attention_ctx_t;

static void attention_fwd(void *p, double *out)
{
    attention_ctx_t *a = p;
    erase_k_attention_forward_f64(a->batch, a->T, a->heads, a->dim, a->qkv, a->att, out);
}

/* Attention's dqkv against finite differences at sequence length T. */
static void grad_attention(int batch, int T, int heads, int dim, uint64_t seed)
{
    uint64_t rng = seed;
    attention_ctx_t a = { .batch = batch, .T = T, .heads = heads, .dim = dim };
    size_t nqkv = (size_t)batch * T * 3 * dim, natt = (size_t)batch * heads * T * T,
           nout = (size_t)batch * T * dim;
    a.qkv = dalloc(nqkv);
    a.att = dalloc(natt);
    double *c = dalloc(nout), *out = dalloc(nout), *att = dalloc(natt), *scratch = dalloc(natt),
           *dqkv = dalloc(nqkv);
    fill(&rng, a.qkv, nqkv, -1.5, 1.5);
    fill_weights(&rng, c, nout);
    erase_k_attention_forward_f64(batch, T, heads, dim, a.qkv, att, out);
    for (size_t i = 0; i < nqkv; i++)
        dqkv[i] = NAN; /* every element written */
    erase_k_attention_backward_f64(batch, T, heads, dim, a.qkv, att, c, scratch, dqkv);
    char name[64];
    snprintf(name, sizeof name, "attention dqkv T=%d", T);
    /* T * dim outputs per input: relative to 1e-3 of the largest element at least */
    check_gradient_floor(name, attention_fwd, &a, nout, c, a.qkv, nqkv, dqkv, 1e-3);
}

static void test_grad_attention(void **state)
{
    grad_attention(2, 5, 2, 6, 113);
    /* rows past the first block of ERASE_ATTENTION_BLOCK positions */
    grad_attention(1, ERASE_ATTENTION_BLOCK + 6, 2, 4, 114);
}

/* ---- 2. fp32 kernels against fp64 kernels ------------------------------- */

/* Worst |got - ref| / scale over n elements (scale from the terms). */
static double f32_error(const float *got, const double *ref, const double *scale, size_t n)
{
    double worst = 0;
    for (size_t i = 0; i < n; i++) {
        double err = fabs((double)got[i] - ref[i]) / (scale[i] + 1e-300);
        if (!(err <= worst))
            worst = isnan(err) ? INFINITY : err;
    }
    return worst;
}

/* Scale |ref| + 1e-6 for results computed in double and rounded once. */
static double *ref_scale(const double *ref, size_t n)
{
    double *s = dalloc(n);
    for (size_t i = 0; i < n; i++)
        s[i] = fabs(ref[i]) + 1e-6;
    return s;
}

static void report_f32(const char *what, size_t n, double err)
{
    print_message("%-24s %5zu elements, fp32 vs fp64 max relative error %.3g (bound %.0e)\n", what,
                  n, err, F32_BOUND);
    assert_true(err <= F32_BOUND);
}

static void check_f32(const char *what, const float *got, const double *ref, const double *scale,
                      size_t n)
{
    report_f32(what, n, f32_error(got, ref, scale, n));
}

static void check_f32_ref(const char *what, const float *got, const double *ref, size_t n)
{
    check_f32(what, got, ref, ref_scale(ref, n), n);
}

static void test_f32_linear(void **state)
{
    uint64_t rng = 201;
    const int B = 33, I = 65, O = 17;
    size_t nx = (size_t)B * I, nw = (size_t)O * I, ny = (size_t)B * O;
    float *x = falloc(nx), *w = falloc(nw), *b = falloc(O), *dy = falloc(ny);
    float *y = falloc(ny), *dx = falloc(nx), *dw = falloc(nw), *db = falloc(O);
    fill_f(&rng, x, nx, -1, 1);
    fill_f(&rng, w, nw, -1, 1);
    fill_f(&rng, b, O, -1, 1);
    fill_f(&rng, dy, ny, -1, 1);
    erase_k_linear_forward_f32(B, I, O, x, w, b, y);
    erase_k_linear_backward_f32(B, I, O, x, w, dy, dx, dw, db);
    double *x8 = widen(x, nx), *w8 = widen(w, nw), *b8 = widen(b, O), *dy8 = widen(dy, ny);
    double *y8 = dalloc(ny), *dx8 = dalloc(nx), *dw8 = dalloc(nw), *db8 = dalloc(O);
    erase_k_linear_forward_f64(B, I, O, x8, w8, b8, y8);
    erase_k_linear_backward_f64(B, I, O, x8, w8, dy8, dx8, dw8, db8);
    /* sum of |terms| of every output: the same kernels on |inputs| */
    double *ym = dalloc(ny), *dxm = dalloc(nx), *dwm = dalloc(nw), *dbm = dalloc(O);
    double *ax = absolute(x8, nx), *aw = absolute(w8, nw), *ady = absolute(dy8, ny);
    erase_k_linear_forward_f64(B, I, O, ax, aw, absolute(b8, O), ym);
    erase_k_linear_backward_f64(B, I, O, ax, aw, ady, dxm, dwm, dbm);
    check_f32("linear y", y, y8, ym, ny);
    check_f32("linear dx", dx, dx8, dxm, nx);
    check_f32("linear dw", dw, dw8, dwm, nw);
    check_f32("linear db", db, db8, dbm, O);
}

static void test_f32_eltwise(void **state)
{
    uint64_t rng = 202;
    const size_t n = 4096;
    const float p = 0.3f;
    float *x = falloc(n), *dy = falloc(n), *y = falloc(n), *dx = falloc(n);
    double *y8 = dalloc(n), *dx8 = dalloc(n);
    fill_f(&rng, x, n, -5, 5);
    fill_weights_f(&rng, dy, n);
    double *x8 = widen(x, n), *dy8 = widen(dy, n);

    erase_k_relu_forward_f32(n, x, y);
    erase_k_relu_forward_f64(n, x8, y8);
    check_f32_ref("relu y", y, y8, n);
    erase_k_relu_backward_f32(n, y, dy, dx);
    erase_k_relu_backward_f64(n, y8, dy8, dx8);
    check_f32_ref("relu dx", dx, dx8, n);

    erase_k_gelu_forward_f32(n, x, y);
    erase_k_gelu_forward_f64(n, x8, y8);
    check_f32_ref("gelu y", y, y8, n);
    erase_k_gelu_backward_f32(n, x, dy, dx);
    erase_k_gelu_backward_f64(n, x8, dy8, dx8);
    check_f32_ref("gelu dx", dx, dx8, n);

    erase_k_gelu_tanh_forward_f32(n, x, y);
    erase_k_gelu_tanh_forward_f64(n, x8, y8);
    check_f32_ref("gelu tanh y", y, y8, n);
    erase_k_gelu_tanh_backward_f32(n, x, dy, dx);
    erase_k_gelu_tanh_backward_f64(n, x8, dy8, dx8);
    /* dx = dy (s + 2 x s (1 - s) u'(x)) changes sign: relative to its terms */
    double *gts = dalloc(n);
    for (size_t i = 0; i < n; i++) {
        double v = x8[i], u = 0.79788456080286535588 * (v + 0.044715 * v * v * v);
        double sg = 1 / (1 + exp(-2 * u)), du = 0.79788456080286535588 * (1 + 3 * 0.044715 * v * v);
        gts[i] = fabs(dy8[i]) * (sg + fabs(2 * v * sg * (1 - sg) * du)) + 1e-30;
    }
    check_f32("gelu tanh dx", dx, dx8, gts, n);

    erase_k_dropout_f32(n, p, 99, 5, x, y);
    erase_k_dropout_f64(n, p, 99, 5, x8, y8);
    for (size_t i = 0; i < n; i++) /* same mask */
        assert_int_equal(y[i] == 0, y8[i] == 0);
    check_f32_ref("dropout y", y, y8, n);
    erase_k_dropout_f32(n, p, 99, 5, dy, dx);
    erase_k_dropout_f64(n, p, 99, 5, dy8, dx8);
    check_f32_ref("dropout dx", dx, dx8, n);
}

static void test_f32_concat(void **state)
{
    static const int widths[3] = { 3, 8, 1 };
    uint64_t rng = 203;
    const int B = 9, W = 12;
    float *xs[3], *dxs[3], *y = falloc((size_t)B * W), *dy = falloc((size_t)B * W);
    double *xs8[3], *dxs8[3], *y8 = dalloc((size_t)B * W);
    for (int i = 0; i < 3; i++) {
        size_t n = (size_t)B * widths[i];
        xs[i] = falloc(n);
        dxs[i] = falloc(n);
        dxs8[i] = dalloc(n);
        fill_f(&rng, xs[i], n, -1, 1);
        xs8[i] = widen(xs[i], n);
    }
    fill_f(&rng, dy, (size_t)B * W, -1, 1);
    double *dy8 = widen(dy, (size_t)B * W);
    erase_k_concat_forward_f32(B, 3, widths, (const float *const *)xs, y);
    erase_k_concat_forward_f64(B, 3, widths, (const double *const *)xs8, y8);
    check_f32_ref("concat y", y, y8, (size_t)B * W);
    erase_k_concat_backward_f32(B, 3, widths, dy, dxs);
    erase_k_concat_backward_f64(B, 3, widths, dy8, dxs8);
    double worst = 0;
    for (int i = 0; i < 3; i++) {
        size_t n = (size_t)B * widths[i];
        double e = f32_error(dxs[i], dxs8[i], ref_scale(dxs8[i], n), n);
        worst = e > worst || isnan(e) ? e : worst;
    }
    report_f32("concat dxs", (size_t)B * W, worst);
}

static void test_f32_embedding(void **state)
{
    enum { B = 200, F = 3, D = 16 };
    static const uint32_t rows[F] = { 7, 2, 1000 };
    uint64_t rng = 204;
    uint32_t *ids = alloc(sizeof(uint32_t) * B * F);
    for (int i = 0; i < B * F; i++) {
        uint32_t k = erase_rng_below(&rng, 10);
        ids[i] = k == 0 ? 0xFFFFFFFFu : k == 1 ? 0xFFFFFFFEu : erase_rng_below(&rng, 3000);
    }
    float *tables[F];
    double *tables8[F];
    for (int f = 0; f < F; f++) {
        tables[f] = falloc((size_t)rows[f] * D);
        fill_f(&rng, tables[f], (size_t)rows[f] * D, -1, 1);
        tables8[f] = widen(tables[f], (size_t)rows[f] * D);
    }
    size_t nout = (size_t)B * F * D;
    float *out = falloc(nout), *dout = falloc(nout);
    double *out8 = dalloc(nout);
    erase_k_embedding_forward_f32(B, F, D, rows, ids, (const float *const *)tables, out);
    erase_k_embedding_forward_f64(B, F, D, rows, ids, (const double *const *)tables8, out8);
    check_f32_ref("embedding out", out, out8, nout);

    fill_f(&rng, dout, nout, -1, 1);
    double *dout8 = widen(dout, nout), *adout = absolute(dout8, nout);
    void *scratch = alloc(ERASE_EMBEDDING_SCRATCH_BYTES(B));
    double worst = 0;
    size_t total = 0;
    for (int f = 0; f < F; f++) {
        uint32_t *r32 = alloc(sizeof(uint32_t) * B), *r64 = alloc(sizeof(uint32_t) * B),
                 *rm = alloc(sizeof(uint32_t) * B);
        float *g32 = falloc((size_t)B * D);
        double *g64 = dalloc((size_t)B * D), *gm = dalloc((size_t)B * D);
        int n32 = erase_k_embedding_backward_field_f32(B, F, D, f, rows[f], ids, dout, scratch,
                                                       r32, g32);
        int n64 = erase_k_embedding_backward_field_f64(B, F, D, f, rows[f], ids, dout8, scratch,
                                                       r64, g64);
        int nm = erase_k_embedding_backward_field_f64(B, F, D, f, rows[f], ids, adout, scratch,
                                                      rm, gm);
        assert_int_equal(n32, n64);
        assert_int_equal(nm, n64);
        assert_memory_equal(r32, r64, sizeof(uint32_t) * (size_t)n64);
        double e = f32_error(g32, g64, gm, (size_t)n64 * D);
        worst = e > worst || isnan(e) ? e : worst;
        total += (size_t)n64 * D;
    }
    report_f32("embedding grad values", total, worst);
}

static void test_f32_interaction(void **state)
{
    const int B = 16, V = 27, D = 16;
    uint64_t rng = 205;
    size_t nd = (size_t)B * D, ne = (size_t)B * (V - 1) * D, ny = (size_t)B * (D + V * (V - 1) / 2);
    float *dense = falloc(nd), *emb = falloc(ne), *out = falloc(ny), *dout = falloc(ny);
    float *ddense = falloc(nd), *demb = falloc(ne);
    fill_f(&rng, dense, nd, -1, 1);
    fill_f(&rng, emb, ne, -1, 1);
    fill_f(&rng, dout, ny, -1, 1);
    double *dense8 = widen(dense, nd), *emb8 = widen(emb, ne), *dout8 = widen(dout, ny);
    double *out8 = dalloc(ny), *ddense8 = dalloc(nd), *demb8 = dalloc(ne);
    double *outm = dalloc(ny), *ddensem = dalloc(nd), *dembm = dalloc(ne);
    double *adense = absolute(dense8, nd), *aemb = absolute(emb8, ne);
    erase_k_interaction_forward_f32(B, V, D, dense, emb, out);
    erase_k_interaction_forward_f64(B, V, D, dense8, emb8, out8);
    erase_k_interaction_forward_f64(B, V, D, adense, aemb, outm);
    check_f32("interaction out", out, out8, outm, ny);
    erase_k_interaction_backward_f32(B, V, D, dense, emb, dout, ddense, demb);
    erase_k_interaction_backward_f64(B, V, D, dense8, emb8, dout8, ddense8, demb8);
    erase_k_interaction_backward_f64(B, V, D, adense, aemb, absolute(dout8, ny), ddensem, dembm);
    check_f32("interaction ddense", ddense, ddense8, ddensem, nd);
    check_f32("interaction demb", demb, demb8, dembm, ne);
}

static void test_f32_losses(void **state)
{
    const int B = 64, C = 10;
    uint64_t rng = 206;
    float *z = falloc(B), *y = falloc(B), *dz = falloc(B);
    fill_f(&rng, z, B, -8, 8);
    for (int r = 0; r < B; r++)
        y[r] = r % 5 == 0 ? erase_rng_uniform(&rng, 0, 1) : (float)erase_rng_below(&rng, 2);
    double *z8 = widen(z, B), *y8 = widen(y, B), *dz8 = dalloc(B);
    double l32 = erase_k_bce_with_logits_f32(B, z, y, 0.75, dz);
    double l64 = erase_k_bce_with_logits_f64(B, z8, y8, 0.75, dz8);
    float lf = (float)l32; /* what the stream op stores */
    check_f32_ref("bce loss", &lf, &l64, 1);
    check_f32_ref("bce dz", dz, dz8, B);

    size_t n = (size_t)B * C;
    float *zc = falloc(n), *dzc = falloc(n);
    int32_t *labels = alloc(sizeof(int32_t) * B);
    fill_f(&rng, zc, n, -6, 6);
    for (int r = 0; r < B; r++)
        labels[r] = (int32_t)erase_rng_below(&rng, C);
    double *zc8 = widen(zc, n), *dzc8 = dalloc(n);
    l32 = erase_k_softmax_xent_f32(B, C, zc, labels, 1.25, dzc);
    l64 = erase_k_softmax_xent_f64(B, C, zc8, labels, 1.25, dzc8);
    lf = (float)l32;
    check_f32_ref("softmax_xent loss", &lf, &l64, 1);
    check_f32_ref("softmax_xent dz", dzc, dzc8, n);
}

static void test_f32_layernorm(void **state)
{
    const int B = 16, D = 64;
    const float eps = 1e-5f;
    uint64_t rng = 207;
    size_t n = (size_t)B * D;
    float *x = falloc(n), *gamma = falloc(D), *beta = falloc(D), *dy = falloc(n);
    float *y = falloc(n), *mean = falloc(B), *rstd = falloc(B), *dx = falloc(n),
          *dgamma = falloc(D), *dbeta = falloc(D);
    fill_f(&rng, x, n, -2, 3);
    fill_weights_f(&rng, gamma, D);
    fill_f(&rng, beta, D, -1, 1);
    fill_f(&rng, dy, n, -1, 1);
    double *x8 = widen(x, n), *gamma8 = widen(gamma, D), *beta8 = widen(beta, D),
           *dy8 = widen(dy, n);
    double *y8 = dalloc(n), *mean8 = dalloc(B), *rstd8 = dalloc(B), *dx8 = dalloc(n),
           *dgamma8 = dalloc(D), *dbeta8 = dalloc(D);
    erase_k_layernorm_forward_f32(B, D, eps, x, gamma, beta, y, mean, rstd);
    erase_k_layernorm_forward_f64(B, D, eps, x8, gamma8, beta8, y8, mean8, rstd8);
    /* each pipeline's backward uses its own saved statistics */
    erase_k_layernorm_backward_f32(B, D, x, gamma, mean, rstd, dy, dx, dgamma, dbeta);
    erase_k_layernorm_backward_f64(B, D, x8, gamma8, mean8, rstd8, dy8, dx8, dgamma8, dbeta8);

    /* magnitudes of the terms of each result */
    double *ys = dalloc(n), *ms = dalloc(B), *dxs = dalloc(n), *dgs = dalloc(D), *dbs = dalloc(D);
    for (int r = 0; r < B; r++) {
        double sum_abs_x = 0, sum_g = 0, sum_gx = 0;
        for (int d = 0; d < D; d++) {
            size_t i = (size_t)r * D + d;
            double xhat = (x8[i] - mean8[r]) * rstd8[r];
            sum_abs_x += fabs(x8[i]);
            ys[i] = fabs(xhat * gamma8[d]) + fabs(beta8[d]);
            sum_g += fabs(dy8[i] * gamma8[d]);
            sum_gx += fabs(dy8[i] * gamma8[d] * xhat);
            dgs[d] += fabs(dy8[i] * xhat);
            dbs[d] += fabs(dy8[i]);
        }
        ms[r] = sum_abs_x / D;
        for (int d = 0; d < D; d++) {
            size_t i = (size_t)r * D + d;
            double xhat = (x8[i] - mean8[r]) * rstd8[r];
            dxs[i] = rstd8[r] * (fabs(dy8[i] * gamma8[d]) + (sum_g + fabs(xhat) * sum_gx) / D);
        }
    }
    check_f32("layernorm y", y, y8, ys, n);
    check_f32("layernorm mean", mean, mean8, ms, B);
    check_f32_ref("layernorm rstd", rstd, rstd8, B);
    check_f32("layernorm dx", dx, dx8, dxs, n);
    check_f32("layernorm dgamma", dgamma, dgamma8, dgs, D);
    check_f32("layernorm dbeta", dbeta, dbeta8, dbs, D);
}

/* max |ref| over the tensor for every element: the scale of results that are
 * differences of many terms (attention's gradients). */
static double *max_scale(const double *ref, size_t n)
{
    double m = 0, *s = dalloc(n);
    for (size_t i = 0; i < n; i++)
        m = fabs(ref[i]) > m ? fabs(ref[i]) : m;
    for (size_t i = 0; i < n; i++)
        s[i] = m;
    return s;
}

static void test_f32_token_embedding(void **state)
{
    enum { B = 4, T = 50, D = 8, V = 11 };
    uint64_t rng = 208;
    int32_t *tokens = alloc(sizeof(int32_t) * B * T);
    for (int i = 0; i < B * T; i++)
        tokens[i] = (int32_t)erase_rng_below(&rng, V);
    size_t nout = (size_t)B * T * D;
    float *wte = falloc((size_t)V * D), *wpe = falloc((size_t)T * D), *out = falloc(nout),
          *dout = falloc(nout), *dwte = falloc((size_t)V * D), *dwpe = falloc((size_t)T * D);
    fill_f(&rng, wte, (size_t)V * D, -1, 1);
    fill_f(&rng, wpe, (size_t)T * D, -1, 1);
    fill_f(&rng, dout, nout, -1, 1);
    erase_k_token_embedding_forward_f32(B, T, D, tokens, wte, wpe, out);
    erase_k_token_embedding_backward_f32(B, T, D, V, tokens, dout, dwte, dwpe, 0);
    /* exactly the float sums in ascending position order */
    int bad = 0;
    for (int i = 0; i < B * T; i++)
        for (int d = 0; d < D; d++)
            bad += out[(size_t)i * D + d] != wte[(size_t)tokens[i] * D + d] + wpe[(size_t)(i % T) * D + d];
    for (int v = 0; v < V; v++)
        for (int d = 0; d < D; d++) {
            float sum = 0;
            for (int i = 0; i < B * T; i++)
                if (tokens[i] == v)
                    sum += dout[(size_t)i * D + d];
            bad += memcmp(&sum, &dwte[(size_t)v * D + d], sizeof sum) != 0;
        }
    for (int t = 0; t < T; t++)
        for (int d = 0; d < D; d++) {
            float sum = 0;
            for (int b = 0; b < B; b++)
                sum += dout[((size_t)b * T + t) * D + d];
            bad += memcmp(&sum, &dwpe[(size_t)t * D + d], sizeof sum) != 0;
        }
    print_message("token embedding fp32: out, dwte (sums in ascending position order) and dwpe "
                  "bitwise as the plain loops: %d differences\n", bad);
    assert_int_equal(bad, 0);
}

static void test_f32_attention(void **state)
{
    enum { B = 2, T = ERASE_ATTENTION_BLOCK + 9, NH = 3, D = 24 };
    uint64_t rng = 209;
    size_t nqkv = (size_t)B * T * 3 * D, natt = (size_t)B * NH * T * T, nout = (size_t)B * T * D;
    float *qkv = falloc(nqkv), *att = falloc(natt), *out = falloc(nout), *dout = falloc(nout),
          *scratch = falloc(natt), *dqkv = falloc(nqkv);
    fill_f(&rng, qkv, nqkv, -1, 1);
    fill_f(&rng, dout, nout, -1, 1);
    double *qkv8 = widen(qkv, nqkv), *dout8 = widen(dout, nout), *att8 = dalloc(natt),
           *out8 = dalloc(nout), *scratch8 = dalloc(natt), *dqkv8 = dalloc(nqkv);
    erase_k_attention_forward_f32(B, T, NH, D, qkv, att, out);
    erase_k_attention_backward_f32(B, T, NH, D, qkv, att, dout, scratch, dqkv);
    erase_k_attention_forward_f64(B, T, NH, D, qkv8, att8, out8);
    erase_k_attention_backward_f64(B, T, NH, D, qkv8, att8, dout8, scratch8, dqkv8);
    /* out's terms: att |v| (the forward with |v|: the probabilities do not change) */
    double *qkvm = widen(qkv, nqkv), *attm = dalloc(natt), *outm = dalloc(nout);
    for (size_t r = 0; r < (size_t)B * T; r++)
        for (int d = 2 * D; d < 3 * D; d++)
            qkvm[r * 3 * D + d] = fabs(qkvm[r * 3 * D + d]);
    erase_k_attention_forward_f64(B, T, NH, D, qkvm, attm, outm);
    check_f32_ref("attention att", att, att8, natt);
    check_f32("attention out", out, out8, outm, nout);
    check_f32("attention dqkv", dqkv, dqkv8, max_scale(dqkv8, nqkv), nqkv);
}

static int setup(void **state)
{
    /* the linear kernels call the BLAS, which the first CPU device loads */
    erase_device_options_t o = erase_device_options_default();
    o.blas_threads = 1;
    if (erase_device_open(&o, &dev) != ERASE_OK) {
        fprintf(stderr, "cannot open the CPU device: %s\n", erase_error_message());
        return -1;
    }
    char text[512];
    erase_device_describe(dev, text, sizeof text);
    print_message("device: %s\n", text);
    return 0;
}

static int teardown(void **state)
{
    free_all();
    erase_device_close(dev);
    return 0;
}

#define T(f) cmocka_unit_test_teardown(f, free_test)

int main(void)
{
    const struct CMUnitTest tests[] = {
        T(test_grad_linear),      T(test_grad_relu),         T(test_grad_gelu),
        T(test_grad_dropout),     T(test_grad_concat),       T(test_grad_embedding),
        T(test_grad_interaction), T(test_grad_bce),          T(test_grad_softmax_xent),
        T(test_grad_layernorm),   T(test_f32_linear),        T(test_f32_eltwise),
        T(test_f32_concat),       T(test_f32_embedding),     T(test_f32_interaction),
        T(test_f32_losses),       T(test_f32_layernorm),
        T(test_grad_gelu_tanh),   T(test_grad_token_embedding), T(test_grad_attention),
        T(test_f32_token_embedding), T(test_f32_attention),
    };
    return cmocka_run_group_tests_name("op gradients and fp32 precision", tests, setup, teardown);
}
