/*
 * CTR evaluation metrics (lib/nn/metrics.c) at the edges of the AUC
 * histogram: logits whose probability is exactly 0, exactly 1, 1/2 (from
 * -0), just below 1, and logits that are NaN or infinite, which must be
 * counted and kept out of every bin and sum (a NaN once indexed the
 * histogram far out of range). References are computed here in double
 * from the definitions (log loss, ROC AUC over pairs with ties one half).
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

#include "lib/nn/metrics.h"

static erase_ctr_metrics_t *metrics_new(void)
{
    erase_ctr_metrics_t *m = calloc(1, sizeof *m);
    assert_non_null(m);
    return m;
}

static int64_t bins_total(const erase_ctr_metrics_t *m)
{
    int64_t n = 0;
    for (int b = 0; b < ERASE_AUC_BINS; b++)
        n += m->pos_bins[b] + m->neg_bins[b];
    return n;
}

/* log loss of logit z for label y, in double from its definition */
static double ref_loss(double z, double y)
{
    double p = 1 / (1 + exp(-z));
    return -(y > 0.5 ? log(p) : log1p(-p));
}

/* z = -1000: p = 0 exactly (bin 0); -0: p = 1/2 (bin 32768); 40: p = 1
 * exactly in double (p * bins = bins: the last bin); 20: p just below 1
 * (the last bin too) */
static const float edge_z[] = { -1000.0f, -0.0f, 40.0f, 20.0f, -0.0f };
static const float edge_y[] = { 0, 0, 1, 1, 1 };
#define EDGES 5

static void test_edges(void **state)
{
    (void)state;
    erase_ctr_metrics_t *m = metrics_new();
    erase_ctr_metrics_add(m, edge_z, edge_y, EDGES);
    assert_int_equal(m->samples, 5);
    assert_int_equal(m->positives, 3);
    assert_int_equal(m->nonfinite, 0);
    assert_int_equal(m->neg_bins[0], 1);
    assert_int_equal(m->neg_bins[ERASE_AUC_BINS / 2], 1);
    assert_int_equal(m->pos_bins[ERASE_AUC_BINS / 2], 1);
    assert_int_equal(m->pos_bins[ERASE_AUC_BINS - 1], 2);
    assert_int_equal(bins_total(m), 5);

    erase_ctr_summary_t s = erase_ctr_metrics_summary(m);
    double loss = 0;
    for (int i = 0; i < EDGES; i++)
        loss += ref_loss(edge_z[i], edge_y[i]) / EDGES;
    /* pairs (pos, neg): the two last-bin positives beat both negatives,
     * the positive at 1/2 beats the one at 0 and ties the one at 1/2 */
    double auc = (2 * 2 + 1 + 0.5) / (3 * 2);
    double p = 0.6, ne = loss / -(p * log(p) + (1 - p) * log(1 - p));
    double mean_p = (0 + 0.5 + 1 + 1 / (1 + exp(-20.0)) + 0.5) / EDGES;
    print_message("edges: log loss %.9f (ref %.9f), NE %.9f (ref %.9f), AUC %.6f (ref %.6f)\n", s.log_loss, loss,
                  s.ne, ne, s.auc, auc);
    assert_int_equal(s.undefined, ERASE_CTR_DEFINED);
    assert_int_equal(s.samples, 5);
    assert_int_equal(s.nonfinite, 0);
    assert_true(fabs(s.log_loss - loss) < 1e-9); /* fixed point: 2^-33 per sample */
    assert_true(fabs(s.ne - ne) < 1e-9);
    assert_true(s.auc == auc);
    assert_true(s.base_rate == p);
    assert_true(fabs(s.calibration - mean_p / p) < 1e-9);
    free(m);
}

/* NaN and both infinities, each with either label, among the edges: counted
 * in samples, positives and nonfinite; bins and sums exactly those of the
 * finite logits alone; NE, AUC, log loss and calibration undefined. */
static void test_nonfinite(void **state)
{
    (void)state;
    float z[EDGES + 6], y[EDGES + 6];
    const float bad[6] = { NAN, -NAN, INFINITY, -INFINITY, INFINITY, -INFINITY };
    for (int i = 0; i < 6; i++) {
        z[i] = bad[i];
        y[i] = (float)(i % 2);
    }
    for (int i = 0; i < EDGES; i++) {
        z[6 + i] = edge_z[i];
        y[6 + i] = edge_y[i];
    }
    erase_ctr_metrics_t *m = metrics_new(), *finite = metrics_new(), *sums = metrics_new();
    erase_ctr_metrics_add(m, z, y, EDGES + 6);
    erase_ctr_metrics_add(finite, edge_z, edge_y, EDGES);
    erase_ctr_metrics_add_sums(sums, z, y, EDGES + 6);
    assert_int_equal(m->samples, 11);
    assert_int_equal(m->positives, 6);
    assert_int_equal(m->nonfinite, 6);
    assert_int_equal(m->loss_whole, finite->loss_whole);
    assert_int_equal(m->loss_fraction, finite->loss_fraction);
    assert_int_equal(m->prediction_whole, finite->prediction_whole);
    assert_int_equal(m->prediction_fraction, finite->prediction_fraction);
    assert_memory_equal(m->pos_bins, finite->pos_bins, sizeof m->pos_bins);
    assert_memory_equal(m->neg_bins, finite->neg_bins, sizeof m->neg_bins);
    assert_memory_equal(sums, m, ERASE_CTR_METRICS_SUM_WORDS * sizeof(int64_t));
    assert_int_equal(bins_total(sums), 0);

    erase_ctr_summary_t s = erase_ctr_metrics_summary(m);
    print_message("6 non-finite of 11: undefined %d, NE %g, AUC %g, log loss %g, base rate %g\n", (int)s.undefined,
                  s.ne, s.auc, s.log_loss, s.base_rate);
    assert_int_equal(s.undefined, ERASE_CTR_NONFINITE);
    assert_int_equal(s.samples, 11);
    assert_int_equal(s.nonfinite, 6);
    assert_true(isnan(s.ne) && isnan(s.auc) && isnan(s.log_loss) && isnan(s.calibration));
    assert_true(s.base_rate == 6.0 / 11);
    free(m);
    free(finite);
    free(sums);
}

/* whole + fraction / 2^32 in 2^-32 units, exactly. */
static __int128 fixed_exact(int64_t whole, int64_t fraction)
{
    return (__int128)whole * ((__int128)1 << 32) + fraction;
}

/* 10^8 samples at the 50-nat loss clamp (a diverged model on a large
 * evaluation set) sum exactly: one int64 of 2^-32 units overflowed (UB)
 * after 4.3e7 of them. The sums are set as a rank holding 10^8 - 1 such
 * samples would have them, then one more sample is added. */
static void test_large_sums(void **state)
{
    (void)state;
    erase_ctr_metrics_t *m = metrics_new();
    const int64_t n = 100000000;
    const float z = -100.0f, y = 1.0f; /* loss 100 nats, clamped to 50; p = e^-100 */
    erase_ctr_metrics_add(m, &z, &y, 1);
    int64_t one_fraction = m->prediction_fraction; /* round(e^-100 * 2^32) = 0 */
    m->samples = n - 1;
    m->positives = n - 2;
    m->loss_whole = 50 * (n - 1);
    m->loss_fraction = 0;
    const float z2 = 3.0f, y2 = 0.0f; /* one negative, so NE is defined */
    erase_ctr_metrics_add(m, &z2, &y2, 1);
    double loss3 = 3.0 + log1p(exp(-3.0));
    assert_int_equal(m->samples, n);
    assert_true(m->loss_fraction >= 0 && m->loss_fraction < ((int64_t)1 << 32));
    assert_int_equal(m->loss_whole, 50 * (n - 1) + (int64_t)floor(loss3));
    assert_true(fixed_exact(m->loss_whole, m->loss_fraction) ==
                (__int128)50 * (n - 1) * ((__int128)1 << 32) + llround(loss3 * 4294967296.0));
    erase_ctr_summary_t s = erase_ctr_metrics_summary(m);
    double want = (50.0 * (double)(n - 1) + loss3) / (double)n;
    print_message("1e8 samples at the clamp: log loss %.9f (want %.9f), prediction fraction of e^-100: %lld\n",
                  s.log_loss, want, (long long)one_fraction);
    assert_true(fabs(s.log_loss - want) <= 1e-12 * want);
    assert_int_equal(s.undefined, ERASE_CTR_DEFINED);
    free(m);
}

/* The count of non-finite logits is one of the words the ranks sum (the
 * window's reduction sums only the first ERASE_CTR_METRICS_SUM_WORDS): the
 * word-wise sum of two halves is the whole. */
static void test_reduce(void **state)
{
    (void)state;
    const float z[4] = { NAN, 0.5f, INFINITY, -2.0f }, y[4] = { 1, 0, 0, 1 };
    erase_ctr_metrics_t *a = metrics_new(), *b = metrics_new(), *all = metrics_new();
    erase_ctr_metrics_add_sums(a, z, y, 2);
    erase_ctr_metrics_add_sums(b, z + 2, y + 2, 2);
    erase_ctr_metrics_add_sums(all, z, y, 4);
    int64_t *wa = (int64_t *)a, *wb = (int64_t *)b;
    for (size_t i = 0; i < ERASE_CTR_METRICS_SUM_WORDS; i++)
        wa[i] += wb[i];
    /* the sums as exact values (a reduced fraction may exceed 2^32: the
     * representation differs, the value does not) */
    assert_true(fixed_exact(a->loss_whole, a->loss_fraction) == fixed_exact(all->loss_whole, all->loss_fraction));
    assert_true(fixed_exact(a->prediction_whole, a->prediction_fraction) ==
                fixed_exact(all->prediction_whole, all->prediction_fraction));
    assert_memory_equal(a, all, 3 * sizeof(int64_t)); /* samples, positives, nonfinite */
    assert_memory_equal(a->pos_bins, all->pos_bins, 2 * sizeof a->pos_bins);
    assert_int_equal(a->nonfinite, 2);
    free(a);
    free(b);
    free(all);
}

/* One class, or nothing: NE and AUC undefined, and the summary says why. */
static void test_one_class(void **state)
{
    (void)state;
    const float z[3] = { -1.0f, 0.0f, 2.0f }, zeros[3] = { 0, 0, 0 }, ones[3] = { 1, 1, 1 };
    erase_ctr_metrics_t *m = metrics_new();
    erase_ctr_summary_t s = erase_ctr_metrics_summary(m);
    assert_int_equal(s.undefined, ERASE_CTR_NO_SAMPLES);
    assert_true(isnan(s.ne) && isnan(s.auc) && isnan(s.log_loss) && isnan(s.base_rate));

    erase_ctr_metrics_add(m, z, zeros, 3);
    s = erase_ctr_metrics_summary(m);
    double loss = (ref_loss(-1, 0) + ref_loss(0, 0) + ref_loss(2, 0)) / 3;
    assert_int_equal(s.undefined, ERASE_CTR_NO_CLICKS);
    assert_true(isnan(s.ne) && isnan(s.auc) && isnan(s.calibration));
    assert_true(fabs(s.log_loss - loss) < 1e-9);
    assert_true(s.base_rate == 0);

    erase_ctr_metrics_clear(m);
    erase_ctr_metrics_add(m, z, ones, 3);
    s = erase_ctr_metrics_summary(m);
    assert_int_equal(s.undefined, ERASE_CTR_NO_NONCLICKS);
    assert_true(isnan(s.ne) && isnan(s.auc));
    assert_true(s.base_rate == 1);
    free(m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_edges),
        cmocka_unit_test(test_nonfinite),
        cmocka_unit_test(test_reduce),
        cmocka_unit_test(test_large_sums),
        cmocka_unit_test(test_one_class),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
