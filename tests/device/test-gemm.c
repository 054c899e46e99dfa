/*
 * SGEMM of the device layer against a naive double-precision reference:
 * random shapes including 1, 7, 129 and the degenerate 0, all four
 * transpose cases, padded leading dimensions, alpha/beta (beta = 0 must
 * ignore a NaN-poisoned C) and strided-batched calls. The error of each
 * element is measured relative to the magnitude of its terms,
 * |alpha| sum_p |a_ip b_pj| + |beta c_ij|, and bounded by 1e-5 (float
 * accumulation over k <= 257 terms stays well below).
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
#include "tests/device/gemm_case.h"

#define MUST(call) assert_int_equal((call), ERASE_OK)
#define BOUND 1e-5

static erase_device_t *dev;
static erase_stream_t *stream;


/* Run one case; returns the worst relative error. */
static double run_case(const gemm_case_t *g, uint64_t *rng)
{
    size_t asize, bsize, csize;
    gemm_case_sizes(g, &asize, &bsize, &csize);
    float *a, *b, *c, *c0 = malloc(csize * sizeof(float));
    MUST(erase_malloc(dev, asize * sizeof(float), (void **)&a));
    MUST(erase_malloc(dev, bsize * sizeof(float), (void **)&b));
    MUST(erase_malloc(dev, csize * sizeof(float), (void **)&c));
    assert_non_null(c0);
    for (size_t i = 0; i < asize; i++)
        a[i] = erase_rng_uniform(rng, -1.0f, 1.0f);
    for (size_t i = 0; i < bsize; i++)
        b[i] = erase_rng_uniform(rng, -1.0f, 1.0f);
    for (size_t i = 0; i < csize; i++)
        c0[i] = g->beta == 0.0f ? NAN : erase_rng_uniform(rng, -1.0f, 1.0f);
    memcpy(c, c0, csize * sizeof(float));
    MUST(erase_sgemm_strided_batched(stream, g->ta ? ERASE_TRANS : ERASE_NO_TRANS,
                                     g->tb ? ERASE_TRANS : ERASE_NO_TRANS, g->m, g->n, g->k,
                                     g->alpha, a, g->lda, g->sa, b, g->ldb, g->sb, g->beta, c,
                                     g->ldc, g->sc, g->batch));
    MUST(erase_stream_synchronize(stream));
    double worst = 0;
    for (int q = 0; q < g->batch; q++) {
        const float *aq = a + q * g->sa, *bq = b + q * g->sb;
        const float *cq = c + q * g->sc, *c0q = c0 + q * g->sc;
        for (int i = 0; i < g->m; i++)
            for (int j = 0; j < g->n; j++) {
                double s = 0, mag = 0;
                for (int p = 0; p < g->k; p++) {
                    double t = (double)elem(aq, g->lda, g->ta, i, p) * elem(bq, g->ldb, g->tb, p, j);
                    s += t;
                    mag += fabs(t);
                }
                double ref = g->alpha * s, scale = fabs(g->alpha) * mag;
                if (g->beta != 0.0f) {
                    ref += (double)g->beta * c0q[(size_t)i * g->ldc + j];
                    scale += fabs((double)g->beta * c0q[(size_t)i * g->ldc + j]);
                }
                double got = cq[(size_t)i * g->ldc + j];
                double err = fabs(got - ref) / (scale + 1e-30);
                if (!(err <= worst)) /* NaN counts as the worst */
                    worst = isnan(err) ? INFINITY : err;
            }
        /* padding beyond n in each row of C is untouched */
        for (int i = 0; i < g->m; i++)
            for (int j = g->n; j < g->ldc; j++)
                if (memcmp(&cq[(size_t)i * g->ldc + j], &c0q[(size_t)i * g->ldc + j], sizeof(float)))
                    worst = INFINITY;
    }
    erase_free(dev, a);
    erase_free(dev, b);
    erase_free(dev, c);
    free(c0);
    return worst;
}

static void test_random_shapes(void **state)
{
    static const int sizes[] = { 1, 7, 16, 33, 129 };
    uint64_t rng = 42;
    for (int t = 0; t < 4; t++) {
        double worst = 0;
        int cases = 0;
        for (int x = 0; x < 5; x++)
            for (int y = 0; y < 5; y++)
                for (int z = 0; z < 5; z++) {
                    gemm_case_t g = { .ta = t & 1, .tb = t >> 1, .m = sizes[x], .n = sizes[y],
                                      .k = sizes[z], .batch = 1 };
                    int acols = g.ta ? g.m : g.k, bcols = g.tb ? g.k : g.n;
                    g.lda = acols + (int)erase_rng_below(&rng, 4);
                    g.ldb = bcols + (int)erase_rng_below(&rng, 4);
                    g.ldc = g.n + (int)erase_rng_below(&rng, 4);
                    g.alpha = erase_rng_uniform(&rng, -2.0f, 2.0f);
                    g.beta = (x + y + z) % 3 == 0 ? 0.0f : erase_rng_uniform(&rng, -1.0f, 1.0f);
                    double e = run_case(&g, &rng);
                    if (!(e <= worst))
                        worst = e;
                    cases++;
                }
        print_message("op(A)=%s op(B)=%s: %d shapes, max relative error %.3g (bound %.0e)\n",
                      t & 1 ? "A^T" : "A", t >> 1 ? "B^T" : "B", cases, worst, BOUND);
        assert_true(worst <= BOUND);
    }
}

static void test_degenerate(void **state)
{
    uint64_t rng = 5;
    /* k = 0: C = beta * C */
    gemm_case_t g = { .m = 7, .n = 5, .k = 0, .lda = 1, .ldb = 5, .ldc = 5, .alpha = 1.0f,
                      .beta = 0.5f, .batch = 1 };
    double e = run_case(&g, &rng);
    print_message("k = 0, beta = 0.5: max relative error %.3g\n", e);
    assert_true(e <= BOUND);
    /* m = 0 and n = 0: nothing to do, nothing touched */
    MUST(erase_sgemm(stream, ERASE_NO_TRANS, ERASE_NO_TRANS, 0, 5, 3, 1.0f, NULL, 3, NULL, 5, 0.0f,
                     NULL, 5));
    MUST(erase_sgemm(stream, ERASE_NO_TRANS, ERASE_NO_TRANS, 4, 0, 3, 1.0f, NULL, 3, NULL, 1, 0.0f,
                     NULL, 1));
    MUST(erase_stream_synchronize(stream));
}

static void test_strided_batched(void **state)
{
    uint64_t rng = 9;
    double worst = 0;
    for (int t = 0; t < 4; t++) {
        gemm_case_t g = { .ta = t & 1, .tb = t >> 1, .m = 17, .n = 9, .k = 33, .batch = 5,
                          .alpha = 0.75f, .beta = t == 2 ? 0.0f : -0.5f };
        g.lda = (g.ta ? g.m : g.k) + 1;
        g.ldb = g.tb ? g.k : g.n;
        g.ldc = g.n + 2;
        g.sa = (int64_t)(g.ta ? g.k : g.m) * g.lda + 3;
        g.sb = t == 3 ? 0 : (int64_t)(g.tb ? g.n : g.k) * g.ldb; /* stride 0 shares B */
        g.sc = (int64_t)g.m * g.ldc + 1;
        double e = run_case(&g, &rng);
        if (!(e <= worst))
            worst = e;
    }
    print_message("strided-batched (5 x 17x9x33, all transposes, shared B): max relative error %.3g\n", worst);
    assert_true(worst <= BOUND);
}

static void test_bad_arguments(void **state)
{
    float x[64] = { 0 };
    assert_int_equal(erase_sgemm(stream, ERASE_NO_TRANS, ERASE_NO_TRANS, 4, 4, 8, 1.0f, x, 7, x, 4,
                                 0.0f, x, 4), ERASE_ERR_INVALID);
    print_message("short lda: %s\n", erase_error_message());
    assert_non_null(strstr(erase_error_message(), "sgemm: lda=7 < 8 (columns of A as stored)"));
    assert_int_equal(erase_sgemm(stream, ERASE_NO_TRANS, ERASE_TRANS, 4, 4, 8, 1.0f, x, 8, x, 4,
                                 0.0f, x, 4), ERASE_ERR_INVALID);
    assert_non_null(strstr(erase_error_message(), "sgemm: ldb=4 < 8 (columns of B as stored)"));
    assert_int_equal(erase_sgemm(stream, ERASE_NO_TRANS, ERASE_NO_TRANS, -1, 4, 8, 1.0f, x, 8, x,
                                 4, 0.0f, x, 4), ERASE_ERR_INVALID);
    assert_non_null(strstr(erase_error_message(), "sgemm: negative size m=-1 n=4 k=8 batch=1"));
    assert_int_equal(erase_sgemm_strided_batched(stream, ERASE_NO_TRANS, ERASE_NO_TRANS, 2, 2, 2,
                                                 1.0f, x, 2, 4, x, 2, 4, 0.0f, x, 2, 0, 3),
                     ERASE_ERR_INVALID);
    assert_non_null(strstr(erase_error_message(), "sgemm: batched GEMM with stride_c == 0 would race on C"));
}

static int setup(void **state)
{
    erase_device_options_t o = erase_device_options_default();
    if (erase_device_open(&o, &dev) != ERASE_OK || erase_stream_create(dev, &stream) != ERASE_OK) {
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
    erase_stream_destroy(stream);
    erase_device_close(dev);
    return 0;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_random_shapes),
        cmocka_unit_test(test_degenerate),
        cmocka_unit_test(test_strided_batched),
        cmocka_unit_test(test_bad_arguments),
    };
    return cmocka_run_group_tests_name("device GEMM", tests, setup, teardown);
}
