/*
 * Evaluation metrics of CTR models, accumulated from counts and sums that
 * add up exactly (integers), so that reducing them across ranks in any
 * order gives the same NE and AUC for any number of ranks:
 *   - log loss: each sample's loss in fixed point (2^-32 units, clamped at
 *     50 nats), summed exactly as whole units plus a fraction (two int64
 *     words: no overflow before 1.8e17 samples of 50 nats, where a single
 *     word of 2^-32 units overflowed after 4.3e7);
 *   - AUC: positives and negatives counted in 2^16 bins of the predicted
 *     probability (ties inside a bin count one half, as tied scores do in
 *     the ROC AUC); exact up to that resolution;
 *   - base rate, mean prediction (fixed point too, whole and fraction);
 *   - predictions (logits) that are not finite (NaN, +-inf): counted, and
 *     kept out of the sums and bins; with any of them, log loss, NE, AUC
 *     and calibration are undefined (a model that gives NaN for some
 *     samples has no meaningful score on the others either).
 * NE (normalized entropy, as torchrec computes it): mean log loss divided
 * by the entropy of the base rate p, -(p log p + (1-p) log(1-p)).
 */
#ifndef ERASE_NN_METRICS_H
#define ERASE_NN_METRICS_H

#include <stddef.h>
#include <stdint.h>

#define ERASE_AUC_BINS 65536

typedef struct {
    int64_t samples;
    int64_t positives;
    int64_t nonfinite;         /* samples whose logit is NaN or infinite */
    /* sums over finite logits of the per-sample log loss (nats) and
     * predicted probability, each = whole + fraction / 2^32 exactly; one
     * rank's fraction stays < 2^32 (carried into whole), so D ranks' sum
     * fits for D < 2^31 */
    int64_t loss_whole, loss_fraction;
    int64_t prediction_whole, prediction_fraction;
    int64_t pos_bins[ERASE_AUC_BINS];
    int64_t neg_bins[ERASE_AUC_BINS];
} erase_ctr_metrics_t;

/* The int64 words of the struct, in order: what an all-reduce (sum) adds;
 * the first ERASE_CTR_METRICS_SUM_WORDS are the counts and sums alone. */
#define ERASE_CTR_METRICS_WORDS (sizeof(erase_ctr_metrics_t) / sizeof(int64_t))
#define ERASE_CTR_METRICS_SUM_WORDS 7
_Static_assert(ERASE_CTR_METRICS_SUM_WORDS * sizeof(int64_t) == offsetof(erase_ctr_metrics_t, pos_bins),
               "the sums are the words before the AUC bins");

/* Add x (0 <= x <= 50, callers clamp; in 2^-32 units, rounded) to the
 * exact sum whole + fraction / 2^32, keeping fraction < 2^32: the
 * fixed-point sums of every task's metrics (lib/nn/metrics_cls.h too). */
void erase_fixed_add(int64_t *whole, int64_t *fraction, double x);

/* whole + fraction / 2^32 as a double. */
double erase_fixed_value(int64_t whole, int64_t fraction);

void erase_ctr_metrics_clear(erase_ctr_metrics_t *m);

/* Add n samples: logits z[n] (before the sigmoid) and labels y[n] in {0, 1}
 * (a label > 0.5 is a click). A logit that is NaN or infinite counts in
 * samples, positives and nonfinite only. */
void erase_ctr_metrics_add(erase_ctr_metrics_t *m, const float *z, const float *y, int n);

/* The same for the counts and sums only (samples, positives, nonfinite,
 * log loss, prediction): the AUC bins are untouched, for cheap running
 * windows. */
void erase_ctr_metrics_add_sums(erase_ctr_metrics_t *m, const float *z, const float *y, int n);

/* Why NE and AUC are undefined (NaN) in a summary, if they are. */
typedef enum {
    ERASE_CTR_DEFINED = 0,
    ERASE_CTR_NO_SAMPLES,   /* nothing was added */
    ERASE_CTR_NONFINITE,    /* nonfinite > 0: log loss and calibration are NaN too */
    ERASE_CTR_NO_CLICKS,    /* base rate 0 (log loss is defined) */
    ERASE_CTR_NO_NONCLICKS, /* base rate 1 (log loss is defined) */
} erase_ctr_undefined_t;

typedef struct {
    int64_t samples;        /* all samples, non-finite predictions included */
    int64_t nonfinite;      /* samples whose logit is NaN or infinite */
    double base_rate;       /* positives / samples; NaN without samples */
    double log_loss;        /* mean binary cross-entropy (nats); NaN without samples or with nonfinite > 0 */
    double ne;              /* log_loss / entropy of the base rate; NaN unless undefined == ERASE_CTR_DEFINED */
    double auc;             /* ROC AUC; NaN unless undefined == ERASE_CTR_DEFINED */
    double calibration;     /* mean prediction / base rate; NaN unless undefined == ERASE_CTR_DEFINED */
    erase_ctr_undefined_t undefined;
} erase_ctr_summary_t;

/* NE, AUC, log loss, calibration and base rate of what m holds (summed over
 * ranks or not); `undefined` says why NE and AUC are NaN. Never fails. */
erase_ctr_summary_t erase_ctr_metrics_summary(const erase_ctr_metrics_t *m);

#endif
