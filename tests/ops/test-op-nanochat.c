/*
 * The nanochat model's ops on the CPU backend (lib/ops/ops.h, issue 34):
 * parameter-free RMSNorm, rotary embedding, ReLU squared, logit softcap
 * and grouped-query attention.
 *
 * Each op runs through the public API on a CPU stream in float. Its
 * forward is compared with the op's formula evaluated here in double
 * (RMSNorm, rotary, ReLU^2, softcap) and its backward, with random output
 * weights c (J = sum_i c_i out_i), with central finite differences of
 * that double formula (h = 1e-6): per element |got - ref| / (|ref| +
 * mean|ref|) <= 1e-5 (float rounding, a few ulps of the terms). The GQA
 * attention's formula is its double kernel (kernels_impl.h's _f64, the
 * same arithmetic as the gpt attention's, which test-op-gradients checks
 * against finite differences); with kv_heads = heads the float op equals
 * erase_attention_forward/backward on the packed layout bitwise.
 */
#include <float.h>
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

#define MUST(call) assert_int_equal((call), ERASE_OK)
#define FD_H 1e-6
#define BOUND 1e-5

static erase_device_t *dev;
static erase_stream_t *stream;

/* A double formula of an op: out from in (ctx: the shape). */
typedef void (*formula_t)(const void *ctx, const double *in, double *out);

static void fill(uint64_t seed, float *x, size_t n, double lo, double hi)
{
    uint64_t rng = seed;
    for (size_t i = 0; i < n; i++)
        x[i] = erase_rng_uniform(&rng, (float)lo, (float)hi);
}

/* Worst |got - ref| / (|ref| + mean|ref|). */
static double rel_error(const float *got, const double *ref, size_t n)
{
    double mean = 0, worst = 0;
    for (size_t i = 0; i < n; i++)
        mean += fabs(ref[i]);
    mean = n ? mean / (double)n : 0;
    for (size_t i = 0; i < n; i++) {
        double e = fabs(got[i] - ref[i]) / (fabs(ref[i]) + mean + 1e-30);
        worst = e > worst || isnan(e) ? (isnan(e) ? INFINITY : e) : worst;
    }
    return worst;
}

/*
 * The op's float forward `fwd` [nout] and backward `dx` [nin] (of dy = c)
 * against `f` in double at x: the forward directly, the backward against
 * central finite differences of sum_i c_i f(x)_i.
 */
static void check_op(const char *name, formula_t f, const void *ctx, const float *x, size_t nin, const float *fwd,
                     size_t nout, const float *c, const float *dx)
{
    double *in = malloc(sizeof(double) * nin), *out = malloc(sizeof(double) * nout);
    double *plus = malloc(sizeof(double) * nout), *grad = malloc(sizeof(double) * nin);
    assert_true(in && out && plus && grad);
    for (size_t i = 0; i < nin; i++)
        in[i] = x[i];
    f(ctx, in, out);
    double ef = rel_error(fwd, out, nout);
    for (size_t k = 0; k < nin; k++) {
        double keep = in[k];
        in[k] = keep + FD_H;
        f(ctx, in, plus);
        in[k] = keep - FD_H;
        f(ctx, in, out);
        in[k] = keep;
        double s = 0;
        for (size_t i = 0; i < nout; i++)
            s += (double)c[i] * (plus[i] - out[i]);
        grad[k] = s / (2 * FD_H);
    }
    double eb = rel_error(dx, grad, nin);
    print_message("%-34s forward %.2e, backward vs finite differences %.2e (bound %.0e)\n", name, ef, eb, BOUND);
    assert_true(ef <= BOUND);
    assert_true(eb <= BOUND);
    free(in);
    free(out);
    free(plus);
    free(grad);
}

/* ---- RMSNorm ------------------------------------------------------------------ */

typedef struct {
    int rows, dim;
} rows_t;

static void rmsnorm_formula(const void *p, const double *x, double *y)
{
    const rows_t *r = p;
    for (int i = 0; i < r->rows; i++) {
        double ss = 0;
        for (int j = 0; j < r->dim; j++)
            ss += x[i * r->dim + j] * x[i * r->dim + j];
        double rstd = 1.0 / sqrt(ss / r->dim + (double)FLT_EPSILON);
        for (int j = 0; j < r->dim; j++)
            y[i * r->dim + j] = x[i * r->dim + j] * rstd;
    }
}

static void test_rmsnorm(void **state)
{
    (void)state;
    rows_t r = { 5, 12 };
    size_t n = (size_t)r.rows * r.dim;
    float x[60], y[60], rstd[5], c[60], dx[60];
    fill(1, x, n, -2, 2);
    fill(2, c, n, -1.5, 1.5);
    MUST(erase_rmsnorm_forward(stream, r.rows, r.dim, FLT_EPSILON, x, y, rstd));
    memcpy(dx, c, sizeof c);
    MUST(erase_rmsnorm_backward(stream, r.rows, r.dim, x, rstd, dx, dx)); /* in place */
    MUST(erase_stream_synchronize(stream));
    check_op("rmsnorm (dx in place of dy)", rmsnorm_formula, &r, x, n, y, n, c, dx);
}

/* ---- rotary ----------------------------------------------------------------------- */

typedef struct {
    int batch, T, t0, heads, hd;
    float base;
} rotary_shape_t;

/* nanochat's rotation, the angles from float frequencies as torch makes them */
static void rotary_formula(const void *p, const double *x, double *y)
{
    const rotary_shape_t *r = p;
    int d = r->hd / 2;
    for (int b = 0; b < r->batch; b++)
        for (int t = 0; t < r->T; t++)
            for (int h = 0; h < r->heads; h++)
                for (int i = 0; i < d; i++) {
                    float inv = 1.0f / powf(r->base, (float)(2 * i) / (float)r->hd);
                    double a = (double)((float)(r->t0 + t) * inv);
                    size_t o = (((size_t)b * r->T + t) * r->heads + h) * r->hd;
                    y[o + i] = x[o + i] * cos(a) + x[o + i + d] * sin(a);
                    y[o + i + d] = -x[o + i] * sin(a) + x[o + i + d] * cos(a);
                }
}

static void check_rotary(int t0)
{
    rotary_shape_t r = { 2, 5, t0, 3, 8, 10000.0f };
    size_t n = (size_t)r.batch * r.T * r.heads * r.hd;
    float *x = malloc(sizeof(float) * n * 4), *y = x + n, *c = y + n, *dx = c + n;
    assert_non_null(x);
    fill(3, x, n, -1, 1);
    fill(4, c, n, -1.5, 1.5);
    MUST(erase_rotary(stream, r.batch, r.T, r.t0, r.heads, r.hd, r.base, 0, x, y));
    MUST(erase_rotary(stream, r.batch, r.T, r.t0, r.heads, r.hd, r.base, 1, c, dx));
    MUST(erase_stream_synchronize(stream));
    char name[64];
    snprintf(name, sizeof name, "rotary (positions %d..%d)", t0, t0 + r.T - 1);
    check_op(name, rotary_formula, &r, x, n, y, n, c, dx);
    free(x);
}

static void test_rotary(void **state)
{
    (void)state;
    check_rotary(0);
    check_rotary(37); /* a decode step's offset */
}

/* ---- ReLU^2 and softcap ----------------------------------------------------------- */

static void relu2_formula(const void *p, const double *x, double *y)
{
    for (size_t i = 0; i < *(const size_t *)p; i++)
        y[i] = x[i] > 0 ? x[i] * x[i] : 0;
}

typedef struct {
    size_t n;
    double cap;
} softcap_t;

static void softcap_formula(const void *p, const double *x, double *y)
{
    const softcap_t *s = p;
    for (size_t i = 0; i < s->n; i++)
        y[i] = s->cap * tanh(x[i] / s->cap);
}

static void test_relu2_softcap(void **state)
{
    (void)state;
    size_t n = 64;
    float x[64], y[64], c[64], dx[64];
    fill(5, x, n, -2, 2);
    for (size_t i = 0; i < n; i++) /* away from the kink at 0, for the finite differences */
        if (fabsf(x[i]) < 1e-3f)
            x[i] = 0.5f;
    fill(6, c, n, -1.5, 1.5);
    MUST(erase_relu2_forward(stream, n, x, y));
    MUST(erase_relu2_backward(stream, n, x, c, dx));
    MUST(erase_stream_synchronize(stream));
    check_op("relu^2", relu2_formula, &n, x, n, y, n, c, dx);

    softcap_t s = { n, 1.5 };
    fill(7, x, n, -4, 4); /* well into tanh's bend */
    MUST(erase_softcap_forward(stream, n, 1.5f, x, y));
    MUST(erase_softcap_backward(stream, n, 1.5f, y, c, dx));
    MUST(erase_stream_synchronize(stream));
    check_op("softcap 1.5 (backward from y)", softcap_formula, &s, x, n, y, n, c, dx);
}

/* ---- grouped-query attention ------------------------------------------------------- */

typedef struct {
    int batch, T, heads, kv, hd;
} gqa_t;

/* in = q | k | v (double), out = the f64 kernel's output */
static void gqa_formula(const void *p, const double *in, double *out)
{
    const gqa_t *g = p;
    size_t nq = (size_t)g->batch * g->T * g->heads * g->hd, nk = (size_t)g->batch * g->T * g->kv * g->hd;
    double *att = malloc(sizeof(double) * (size_t)g->batch * g->heads * g->T * g->T);
    assert_non_null(att);
    erase_k_gqa_attention_forward_f64(g->batch, g->T, g->heads, g->kv, g->hd, in, g->heads * g->hd, in + nq,
                                      g->kv * g->hd, in + nq + nk, g->kv * g->hd, att, out);
    free(att);
}

static void check_gqa(int batch, int T, int heads, int kv, int hd, uint64_t seed)
{
    gqa_t g = { batch, T, heads, kv, hd };
    size_t nq = (size_t)batch * T * heads * hd, nk = (size_t)batch * T * kv * hd, nin = nq + 2 * nk, nout = nq;
    size_t natt = (size_t)batch * heads * T * T;
    float *in = malloc(sizeof(float) * nin), *out = malloc(sizeof(float) * nout), *c = malloc(sizeof(float) * nout);
    float *att = malloc(sizeof(float) * natt), *scratch = malloc(sizeof(float) * natt);
    float *din = malloc(sizeof(float) * nin);
    assert_true(in && out && c && att && scratch && din);
    fill(seed, in, nin, -1, 1);
    fill(seed + 1, c, nout, -1.5, 1.5);
    MUST(erase_gqa_attention_forward(stream, batch, T, heads, kv, hd, in, in + nq, in + nq + nk, att, out));
    MUST(erase_gqa_attention_backward(stream, batch, T, heads, kv, hd, in, in + nq, in + nq + nk, att, c, scratch,
                                      din, din + nq, din + nq + nk));
    MUST(erase_stream_synchronize(stream));
    char name[64];
    snprintf(name, sizeof name, "gqa attention %d heads on %d kv, T=%d", heads, kv, T);
    check_op(name, gqa_formula, &g, in, nin, out, nout, c, din);
    free(in);
    free(out);
    free(c);
    free(att);
    free(scratch);
    free(din);
}

static void test_gqa(void **state)
{
    (void)state;
    check_gqa(2, 5, 4, 2, 4, 11);
    check_gqa(1, 6, 3, 1, 4, 13);   /* multi-query */
    check_gqa(2, 4, 2, 2, 6, 15);   /* multi-head */
    check_gqa(1, ERASE_ATTENTION_BLOCK + 3, 2, 1, 2, 17); /* past one row block */
}

/* With kv_heads = heads on separate q, k, v: the packed gpt op's output
 * and gradients, bitwise (one kernel). */
static void test_gqa_is_mha(void **state)
{
    (void)state;
    int B = 2, T = 7, NH = 3, hd = 4, C = NH * hd;
    size_t n = (size_t)B * T * C, natt = (size_t)B * NH * T * T;
    float *qkv = malloc(sizeof(float) * 3 * n), *q = malloc(sizeof(float) * 3 * n), *k = q + n, *v = k + n;
    float *o1 = malloc(sizeof(float) * n), *o2 = malloc(sizeof(float) * n), *dout = malloc(sizeof(float) * n);
    float *a1 = malloc(sizeof(float) * natt), *a2 = malloc(sizeof(float) * natt), *s = malloc(sizeof(float) * natt);
    float *dqkv = malloc(sizeof(float) * 3 * n), *d = malloc(sizeof(float) * 3 * n);
    assert_true(qkv && q && o1 && o2 && dout && a1 && a2 && s && dqkv && d);
    fill(21, qkv, 3 * n, -1, 1);
    fill(22, dout, n, -1, 1);
    for (size_t r = 0; r < (size_t)B * T; r++) {
        memcpy(q + r * C, qkv + r * 3 * C, sizeof(float) * C);
        memcpy(k + r * C, qkv + r * 3 * C + C, sizeof(float) * C);
        memcpy(v + r * C, qkv + r * 3 * C + 2 * C, sizeof(float) * C);
    }
    MUST(erase_attention_forward(stream, B, T, NH, C, qkv, a1, o1));
    MUST(erase_attention_backward(stream, B, T, NH, C, qkv, a1, dout, s, dqkv));
    MUST(erase_gqa_attention_forward(stream, B, T, NH, NH, hd, q, k, v, a2, o2));
    MUST(erase_gqa_attention_backward(stream, B, T, NH, NH, hd, q, k, v, a2, dout, s, d, d + n, d + 2 * n));
    MUST(erase_stream_synchronize(stream));
    assert_memory_equal(o1, o2, sizeof(float) * n);
    for (size_t r = 0; r < (size_t)B * T; r++)
        for (int part = 0; part < 3; part++)
            assert_memory_equal(dqkv + r * 3 * C + (size_t)part * C, d + (size_t)part * n + r * C,
                                sizeof(float) * C);
    print_message("gqa with kv_heads = heads: the gpt attention's output and gradients, bitwise\n");
    free(qkv), free(q), free(o1), free(o2), free(dout), free(a1), free(a2), free(s), free(dqkv), free(d);
}

/* Argument checks: one line naming the op and the shape. */
static void test_bad_arguments(void **state)
{
    (void)state;
    float x[8];
    erase_error_clear();
    assert_int_equal(erase_rotary(stream, 1, 1, 0, 1, 3, 10000.0f, 0, x, x), ERASE_ERR_INVALID);
    assert_non_null(strstr(erase_error_message(), "rotary: bad batch=1 T=1 t0=0 heads=1 hd=3 base=10000 (hd even"));
    erase_error_clear();
    assert_int_equal(erase_softcap_forward(stream, 8, 0.0f, x, x), ERASE_ERR_INVALID);
    assert_non_null(strstr(erase_error_message(), "softcap: cap 0 is not > 0"));
    erase_error_clear();
    assert_int_equal(erase_gqa_attention_forward(stream, 1, 2, 3, 2, 2, x, x, x, x, x), ERASE_ERR_INVALID);
    assert_non_null(strstr(erase_error_message(), "gqa attention: bad batch=1 T=2 heads=3 kv_heads=2 hd=2 (heads a "
                                                  "multiple of kv_heads)"));
}

static int setup(void **state)
{
    (void)state;
    if (erase_test_cpu_open(1, 0, &dev) != 0 || erase_stream_create(dev, &stream) != ERASE_OK)
        return -1;
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    erase_stream_destroy(stream);
    erase_device_close(dev);
    return 0;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rmsnorm),
        cmocka_unit_test(test_rotary),
        cmocka_unit_test(test_relu2_softcap),
        cmocka_unit_test(test_gqa),
        cmocka_unit_test(test_gqa_is_mha),
        cmocka_unit_test(test_bad_arguments),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
