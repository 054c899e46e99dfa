#include "lib/nn/metrics_cls.h"

#include "lib/nn/metrics.h"

#include <math.h>
#include <string.h>

#define LOSS_CLAMP 50.0

void erase_cls_metrics_clear(erase_cls_metrics_t *m)
{
    memset(m, 0, sizeof *m);
}

/* One sample's logits z [classes] and class y. */
static void add_sample(erase_cls_metrics_t *m, const float *z, int32_t y, int classes, int k)
{
    m->samples++;
    double max = -INFINITY;
    for (int c = 0; c < classes; c++) {
        if (!isfinite(z[c])) {
            m->nonfinite++;
            return;
        }
        if (z[c] > max)
            max = z[c];
    }
    double sum = 0, zy = z[y];
    int rank = 0;
    for (int c = 0; c < classes; c++) {
        sum += exp((double)z[c] - max);
        rank += z[c] > z[y] || (z[c] == z[y] && c < y);
    }
    double loss = max + log(sum) - zy;
    if (loss < 0)
        loss = 0; /* rounding of a certain prediction */
    if (loss > LOSS_CLAMP)
        loss = LOSS_CLAMP;
    erase_fixed_add(&m->loss_whole, &m->loss_fraction, loss);
    m->correct += rank == 0;
    m->correct_topk += rank < k;
}

void erase_cls_metrics_add(erase_cls_metrics_t *m, const float *z, const int32_t *y, int n, int classes, int k)
{
    for (int i = 0; i < n; i++)
        add_sample(m, z + (size_t)i * (size_t)classes, y[i], classes, k);
}

erase_cls_summary_t erase_cls_metrics_summary(const erase_cls_metrics_t *m)
{
    erase_cls_summary_t s = { .samples = m->samples, .nonfinite = m->nonfinite, .loss = NAN, .accuracy = NAN,
                              .topk = NAN, .undefined = ERASE_CLS_NO_SAMPLES };
    if (m->samples == 0)
        return s;
    if (m->nonfinite > 0) {
        s.undefined = ERASE_CLS_NONFINITE;
        return s;
    }
    double n = (double)m->samples;
    s.undefined = ERASE_CLS_DEFINED;
    s.loss = erase_fixed_value(m->loss_whole, m->loss_fraction) / n;
    s.accuracy = (double)m->correct / n;
    s.topk = (double)m->correct_topk / n;
    return s;
}
