#include "lib/nn/metrics.h"

#include <math.h>
#include <string.h>

#define FIXED 4294967296.0 /* 2^32 */
#define LOSS_CLAMP 50.0

void erase_ctr_metrics_clear(erase_ctr_metrics_t *m)
{
    memset(m, 0, sizeof *m);
}

void erase_fixed_add(int64_t *whole, int64_t *fraction, double x)
{
    int64_t units = (int64_t)llround(x * FIXED); /* x <= 50 (callers clamp): < 2^38 */
    *fraction += units & 0xFFFFFFFF;
    *whole += (units >> 32) + (*fraction >> 32);
    *fraction &= 0xFFFFFFFF;
}

double erase_fixed_value(int64_t whole, int64_t fraction)
{
    return (double)whole + (double)fraction / FIXED;
}

/* Add one sample's counts and sums; returns its probability bin, or -1 for
 * a logit that is not finite (counted, and kept out of every sum: its
 * probability and loss have no fixed-point value and no bin). */
static int add_sample(erase_ctr_metrics_t *m, float z, float y)
{
    double v = z, t = y > 0.5f ? 1.0 : 0.0;
    m->samples++;
    m->positives += t > 0;
    if (!isfinite(v)) {
        m->nonfinite++;
        return -1;
    }
    double loss = (v > 0 ? v : 0) - v * t + log1p(exp(-fabs(v)));
    if (loss > LOSS_CLAMP)
        loss = LOSS_CLAMP;
    double p = v >= 0 ? 1.0 / (1.0 + exp(-v)) : exp(v) / (1.0 + exp(v));
    erase_fixed_add(&m->loss_whole, &m->loss_fraction, loss);
    erase_fixed_add(&m->prediction_whole, &m->prediction_fraction, p);
    int bin = (int)(p * ERASE_AUC_BINS); /* p in [0, 1]: bin in [0, ERASE_AUC_BINS] */
    return bin >= ERASE_AUC_BINS ? ERASE_AUC_BINS - 1 : bin;
}

void erase_ctr_metrics_add(erase_ctr_metrics_t *m, const float *z, const float *y, int n)
{
    for (int i = 0; i < n; i++) {
        int bin = add_sample(m, z[i], y[i]);
        if (bin < 0)
            continue;
        if (y[i] > 0.5f)
            m->pos_bins[bin]++;
        else
            m->neg_bins[bin]++;
    }
}

void erase_ctr_metrics_add_sums(erase_ctr_metrics_t *m, const float *z, const float *y, int n)
{
    for (int i = 0; i < n; i++)
        add_sample(m, z[i], y[i]);
}

erase_ctr_summary_t erase_ctr_metrics_summary(const erase_ctr_metrics_t *m)
{
    erase_ctr_summary_t s = { .samples = m->samples, .nonfinite = m->nonfinite, .ne = NAN, .auc = NAN,
                              .calibration = NAN, .log_loss = NAN, .base_rate = NAN,
                              .undefined = ERASE_CTR_NO_SAMPLES };
    if (m->samples == 0)
        return s;
    double n = (double)m->samples, p = (double)m->positives / n;
    s.base_rate = p;
    if (m->nonfinite > 0) {
        s.undefined = ERASE_CTR_NONFINITE;
        return s;
    }
    s.log_loss = erase_fixed_value(m->loss_whole, m->loss_fraction) / n;
    if (p == 0 || p == 1) {
        s.undefined = p == 0 ? ERASE_CTR_NO_CLICKS : ERASE_CTR_NO_NONCLICKS;
        return s;
    }
    s.undefined = ERASE_CTR_DEFINED;
    s.ne = s.log_loss / -(p * log(p) + (1 - p) * log(1 - p));
    s.calibration = erase_fixed_value(m->prediction_whole, m->prediction_fraction) / n / p;
    /* AUC = P(score_pos > score_neg) + P(tie) / 2, bins ascending */
    double neg_below = 0, area = 0;
    for (int b = 0; b < ERASE_AUC_BINS; b++) {
        area += (double)m->pos_bins[b] * (neg_below + 0.5 * (double)m->neg_bins[b]);
        neg_below += (double)m->neg_bins[b];
    }
    s.auc = area / ((double)m->positives * (double)(m->samples - m->positives));
    return s;
}
