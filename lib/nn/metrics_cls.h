/*
 * Evaluation metrics of classification models (the classify task,
 * apps/train/task_classify.c), accumulated as integer counts and sums that
 * add up exactly, so that reducing them across ranks in any order gives the
 * same loss and accuracies for any number of ranks (as lib/nn/metrics.h
 * does for CTR):
 *   - loss: each sample's softmax cross-entropy, log sum_c exp(z_c) - z_y
 *     (nats, computed in double, clamped at 50), summed in fixed point as
 *     whole + fraction / 2^32 (erase_fixed_add);
 *   - top-1 and top-k correct: the rank of the true class y is the number
 *     of classes c with z_c > z_y, or z_c == z_y and c < y (ties go to the
 *     lower class index); top-1 correct when that rank is 0, top-k when it
 *     is below k;
 *   - samples whose logits are not all finite: counted in samples and
 *     nonfinite only; with any of them, loss and accuracies are undefined.
 */
#ifndef ERASE_NN_METRICS_CLS_H
#define ERASE_NN_METRICS_CLS_H

#include <stdint.h>

typedef struct {
    int64_t samples;
    int64_t nonfinite;                /* samples with a NaN or infinite logit */
    int64_t loss_whole, loss_fraction; /* sum of the finite samples' losses, whole + fraction / 2^32 */
    int64_t correct;                  /* top-1 correct */
    int64_t correct_topk;             /* top-k correct */
} erase_cls_metrics_t;

/* The int64 words of the struct: what an all-reduce (sum) adds. */
#define ERASE_CLS_METRICS_WORDS (sizeof(erase_cls_metrics_t) / sizeof(int64_t))

void erase_cls_metrics_clear(erase_cls_metrics_t *m);

/* Add n samples: logits z [n, classes] (row-major, before the softmax),
 * true classes y [n] in 0..classes-1, top-k with 1 <= k <= classes. */
void erase_cls_metrics_add(erase_cls_metrics_t *m, const float *z, const int32_t *y, int n, int classes, int k);

/* Why loss and accuracies are undefined (NaN), if they are. */
typedef enum {
    ERASE_CLS_DEFINED = 0,
    ERASE_CLS_NO_SAMPLES, /* nothing was added */
    ERASE_CLS_NONFINITE,  /* nonfinite > 0 */
} erase_cls_undefined_t;

typedef struct {
    int64_t samples;   /* all samples, non-finite ones included */
    int64_t nonfinite;
    double loss;       /* mean cross-entropy (nats); NaN unless defined */
    double accuracy;   /* top-1 correct / samples; NaN unless defined */
    double topk;       /* top-k correct / samples; NaN unless defined */
    erase_cls_undefined_t undefined;
} erase_cls_summary_t;

/* Loss and accuracies of what m holds (summed over ranks or not). Never fails. */
erase_cls_summary_t erase_cls_metrics_summary(const erase_cls_metrics_t *m);

#endif
