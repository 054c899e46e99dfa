/*
 * What the two synthetic CTR generators share: `erase-convert synth`
 * (io/synth.h: shards from Kaggle-sized vocabularies) and `erase-convert
 * synth --shape criteo-1tb` (io/synth_days.h: Criteo-format TSV days of
 * Terabyte shape). The statistics of Criteo's Kaggle sample
 * (data/criteo/kaggle-train-first9999.tsv, the 9,999 first lines of the
 * Display Advertising Challenge's train.txt) that both draw features from,
 * and the planted logistic model's small helpers.
 */
#ifndef ERASE_IO_SYNTH_COMMON_H
#define ERASE_IO_SYNTH_COMMON_H

#include <math.h>
#include <stdint.h>

#include "io/ctr_shard.h"

/* Missing rates of C1..C26 and I1..I13 in the Kaggle sample. */
extern const double erase_synth_sparse_missing[ERASE_CTR_SHARD_FIELDS];
extern const double erase_synth_dense_missing[ERASE_CTR_SHARD_DENSE];
/* Mean and standard deviation of log1p(max(I_k, 0)) over the present
 * values of I_k in that sample: a log-normal fit of each count. */
extern const double erase_synth_dense_mu[ERASE_CTR_SHARD_DENSE];
extern const double erase_synth_dense_sd[ERASE_CTR_SHARD_DENSE];

/* MurmurHash3's 32-bit finalizer (Appleby): a bijection of the 32-bit
 * integers that scatters neighbours. */
static inline uint32_t erase_synth_fmix32(uint32_t h)
{
    h ^= h >> 16;
    h *= 0x85ebca6bu;
    h ^= h >> 13;
    h *= 0xc2b2ae35u;
    h ^= h >> 16;
    return h;
}

/* log(1 + exp(x)) without overflow: the log loss of a logit x whose label
 * is 0 (and of -x for a label 1). */
static inline double erase_synth_softplus(double x)
{
    return x > 0 ? x + log1p(exp(-x)) : log1p(exp(x));
}

static inline double erase_synth_sigmoid(double x)
{
    return 1.0 / (1.0 + exp(-x));
}

/*
 * The bias b for which the mean of sigmoid(z[i] + b) over the n logits
 * z (without bias) is base_rate (in (0, 1)): bisection on [-30, 30], 100
 * steps. Deterministic: the same z give the same b.
 */
double erase_synth_bias_for_rate(const double *z, int64_t n, double base_rate);

#endif
