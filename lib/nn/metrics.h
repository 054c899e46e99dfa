/*
 * Evaluation metrics of CTR models, accumulated from counts and sums that
 * add up exactly (integers), so that reducing them across ranks in any
 * order gives the same NE and AUC for any number of ranks:
 *   - log loss: each sample's loss in fixed point (2^-32 units, clamped at
 *     50 nats), summed in 64-bit integers;
 *   - AUC: positives and negatives counted in 2^16 bins of the predicted
 *     probability (ties inside a bin count one half, as tied scores do in
 *     the ROC AUC); exact up to that resolution;
 *   - base rate, mean prediction (fixed point too).
 * NE (normalized entropy, as torchrec computes it): mean log loss divided
 * by the entropy of the base rate p, -(p log p + (1-p) log(1-p)).
 */
#ifndef ERASE_NN_METRICS_H
#define ERASE_NN_METRICS_H

#include <stdint.h>

#define ERASE_AUC_BINS 65536

typedef struct {
    int64_t samples;
    int64_t positives;
    int64_t loss_fixed;        /* sum of per-sample log loss * 2^32 */
    int64_t prediction_fixed;  /* sum of predicted probabilities * 2^32 */
    int64_t pos_bins[ERASE_AUC_BINS];
    int64_t neg_bins[ERASE_AUC_BINS];
} erase_ctr_metrics_t;

/* The int64 words of the struct, in order: what an all-reduce (sum) adds;
 * the first ERASE_CTR_METRICS_SUM_WORDS are the counts and sums alone. */
#define ERASE_CTR_METRICS_WORDS (sizeof(erase_ctr_metrics_t) / sizeof(int64_t))
#define ERASE_CTR_METRICS_SUM_WORDS 4

void erase_ctr_metrics_clear(erase_ctr_metrics_t *m);

/* Add n samples: logits z[n] (before the sigmoid) and labels y[n] in {0, 1}. */
void erase_ctr_metrics_add(erase_ctr_metrics_t *m, const float *z, const float *y, int n);

/* The same for the counts and sums only (samples, positives, log loss,
 * prediction): the AUC bins are untouched, for cheap running windows. */
void erase_ctr_metrics_add_sums(erase_ctr_metrics_t *m, const float *z, const float *y, int n);

typedef struct {
    int64_t samples;
    double base_rate;       /* positives / samples */
    double log_loss;        /* mean binary cross-entropy (nats) */
    double ne;              /* log_loss / entropy of the base rate; NaN if p is 0 or 1 */
    double auc;             /* ROC AUC; NaN without both classes */
    double calibration;     /* mean prediction / base rate */
} erase_ctr_summary_t;

erase_ctr_summary_t erase_ctr_metrics_summary(const erase_ctr_metrics_t *m);

#endif
