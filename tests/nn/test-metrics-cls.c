/*
 * Classification metrics (lib/nn/metrics_cls.c): exact top-1 and top-k
 * with tied logits (the lower class index wins), non-finite logits counted
 * and kept out of every sum, the sums of two halves equal to those of the
 * whole (what the rank reduction relies on), and large sums without loss.
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

#include "lib/nn/metrics_cls.h"

/* cross-entropy of logits z [c] for class y, in double from its definition */
static double ref_loss(const float *z, int c, int y)
{
    double s = 0;
    for (int i = 0; i < c; i++)
        s += exp((double)z[i]);
    return log(s) - z[y];
}

static void test_top1_topk_ties(void **state)
{
    (void)state;
    /* 4 classes, k = 2 */
    const float z[] = {
        1, 3, 2, 0,   /* y=1: rank 0 */
        1, 3, 2, 0,   /* y=2: rank 1 (top-2 only) */
        1, 3, 2, 0,   /* y=0: rank 2 (neither) */
        2, 2, 2, 2,   /* y=0: all tied, the lowest index wins: rank 0 */
        2, 2, 2, 2,   /* y=1: one tied below it: rank 1 */
        2, 2, 2, 2,   /* y=3: rank 3 */
        0, 5, 5, 0,   /* y=2: tied with 1 below: rank 1 */
    };
    const int32_t y[] = { 1, 2, 0, 0, 1, 3, 2 };
    erase_cls_metrics_t m;
    erase_cls_metrics_clear(&m);
    erase_cls_metrics_add(&m, z, y, 7, 4, 2);
    assert_int_equal(m.samples, 7);
    assert_int_equal(m.nonfinite, 0);
    assert_int_equal(m.correct, 2);      /* rows 0, 3 */
    assert_int_equal(m.correct_topk, 5); /* rows 0, 1, 3, 4, 6 */
    double ref = 0;
    for (int i = 0; i < 7; i++)
        ref += ref_loss(z + 4 * i, 4, y[i]);
    erase_cls_summary_t s = erase_cls_metrics_summary(&m);
    assert_int_equal(s.undefined, ERASE_CLS_DEFINED);
    assert_true(fabs(s.loss - ref / 7) < 1e-9);
    assert_true(s.accuracy == 2.0 / 7 && s.topk == 5.0 / 7);
}

static void test_nonfinite(void **state)
{
    (void)state;
    const float z[] = { 0, 1, NAN, INFINITY, 0, -INFINITY, 0, 2, 1, 3, 0, 0 };
    const int32_t y[] = { 1, 0, 1, 0 };
    erase_cls_metrics_t m;
    erase_cls_metrics_clear(&m);
    erase_cls_metrics_add(&m, z, y, 4, 3, 1);
    assert_int_equal(m.samples, 4);
    assert_int_equal(m.nonfinite, 2); /* rows 0 (NaN) and 1 (+inf, -inf) */
    assert_int_equal(m.correct, 2);   /* rows 2 and 3, kept out for the others */
    erase_cls_summary_t s = erase_cls_metrics_summary(&m);
    assert_int_equal(s.undefined, ERASE_CLS_NONFINITE);
    assert_true(isnan(s.loss) && isnan(s.accuracy) && isnan(s.topk));
    erase_cls_metrics_clear(&m);
    s = erase_cls_metrics_summary(&m);
    assert_int_equal(s.undefined, ERASE_CLS_NO_SAMPLES);
    assert_true(isnan(s.loss));
}

/* two halves summed word by word (an all-reduce of two ranks) equal the
 * whole, bit for bit, for any cut */
static void test_halves(void **state)
{
    (void)state;
    enum { N = 1000, C = 10 };
    static float z[N * C];
    static int32_t y[N];
    srand(7);
    for (int i = 0; i < N * C; i++)
        z[i] = (float)(rand() % 2001 - 1000) / 100.0f;
    for (int i = 0; i < N; i++)
        y[i] = rand() % C;
    erase_cls_metrics_t whole;
    erase_cls_metrics_clear(&whole);
    erase_cls_metrics_add(&whole, z, y, N, C, 5);
    for (int cut = 0; cut <= N; cut += 137) {
        erase_cls_metrics_t a, b;
        erase_cls_metrics_clear(&a);
        erase_cls_metrics_clear(&b);
        erase_cls_metrics_add(&a, z, y, cut, C, 5);
        erase_cls_metrics_add(&b, z + (size_t)cut * C, y + cut, N - cut, C, 5);
        int64_t *wa = (int64_t *)&a, *wb = (int64_t *)&b;
        for (size_t w = 0; w < ERASE_CLS_METRICS_WORDS; w++)
            wa[w] += wb[w];
        erase_cls_summary_t s = erase_cls_metrics_summary(&a), t = erase_cls_metrics_summary(&whole);
        assert_true(s.loss == t.loss && s.accuracy == t.accuracy && s.topk == t.topk);
        /* the fractions of two ranks may carry into the whole */
        assert_true(a.correct == whole.correct && a.correct_topk == whole.correct_topk &&
                    a.loss_whole + (a.loss_fraction >> 32) == whole.loss_whole &&
                    (a.loss_fraction & 0xFFFFFFFF) == whole.loss_fraction);
    }
}

/* 10^6 samples of a loss near the 50-nat clamp: the sum keeps every unit */
static void test_large_sums(void **state)
{
    (void)state;
    const float z[] = { 0, 60 }; /* y = 0: loss 60 clamped to 50 */
    const int32_t y[] = { 0 };
    erase_cls_metrics_t m;
    erase_cls_metrics_clear(&m);
    for (int i = 0; i < 1000000; i++)
        erase_cls_metrics_add(&m, z, y, 1, 2, 1);
    assert_int_equal(m.loss_whole, 50000000);
    assert_int_equal(m.loss_fraction, 0);
    assert_int_equal(m.correct, 0);
    erase_cls_summary_t s = erase_cls_metrics_summary(&m);
    assert_true(s.loss == 50.0 && s.accuracy == 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_top1_topk_ties),
        cmocka_unit_test(test_nonfinite),
        cmocka_unit_test(test_halves),
        cmocka_unit_test(test_large_sums),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
