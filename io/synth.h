/*
 * Synthetic CTR data with a known optimum (`erase-convert synth`): shards
 * in the erase-ctr-1 schema drawn from a planted logistic model, so that
 * the NE a trained model reaches can be compared with the best possible.
 *
 * The planted model (all draws from SplitMix64 streams of the seed):
 *   categorical field f = 1..26: a vocabulary of V_f tokens, V_f =
 *     min(Criteo Kaggle's cardinality of C_f, max_vocab). The token of
 *     popularity rank j = 0..V_f-1 has the id fmix32((f << 24 | j) XOR
 *     salt(seed)) (MurmurHash3's finalizer: a bijection, so ids never
 *     collide; an id 0xFFFFFFFF becomes 0xFFFFFFFE as in real data) and
 *     the weight w_f[j] = signal * N(0, 1). A row's token is missing with
 *     probability m_f (the rates of the Kaggle sample: C19, C20, C25, C26
 *     45%, C22 82%, C6 13%, ...), otherwise of rank j with probability
 *     proportional to (j + 1)^-zipf_s (Zipf's law).
 *   dense feature k = 1..13: missing with probability q_k (I1 45%, I12 77%,
 *     ... as in the Kaggle sample), otherwise the count x = floor(expm1(
 *     max(0, mu_k + sd_k * N(0, 1)))) with mu_k, sd_k those of log1p(I_k)
 *     in the sample. The model sees t_k = log1p(x) (0 when missing); its
 *     weight is v_k = dense_signal * N(0, 1).
 *   logit = bias + sum_k v_k t_k + sum_f w_f[token_f] (missing token: 0),
 *     label ~ Bernoulli(sigmoid(logit)); bias is set (by bisection on a
 *     separate sample of 20,000 rows) so that the mean click probability
 *     is base_rate.
 * Every parameter is recorded in OUT/planted.h5 (format
 * "erase-ctr-planted-1"): root attributes bias, seed, signal,
 * dense_signal, zipf_s, base_rate, rows, ne, log_loss; datasets
 * /dense/weight, /dense/mu, /dense/sd, /dense/missing (float64 [13]),
 * /sparse/vocab (int64 [26]), /sparse/missing (float64 [26]) and, per
 * field, /sparse/C<f>/id (uint32 [V_f], by rank) and /sparse/C<f>/weight
 * (float64 [V_f]).
 *
 * NE of the planted model on the generated rows: its mean log loss over
 * the rows divided by -(p log p + (1-p) log(1-p)), p the rows' click rate.
 */
#ifndef ERASE_IO_SYNTH_H
#define ERASE_IO_SYNTH_H

#include <signal.h>
#include <stdint.h>
#include <stdio.h>

#include "io/ctr_shard_write.h"
#include "io/ctr_stats.h"
#include "lib/core/status.h"

#define ERASE_SYNTH_PLANTED_NAME "planted.h5"
#define ERASE_SYNTH_FORMAT "erase-ctr-planted-1"

typedef struct {
    const char *out_dir;             /* created if missing */
    int64_t rows;                    /* rows to write (>= 1) */
    int64_t shard_rows;              /* rows per shard (default 1048576) */
    erase_ctr_write_options_t write; /* chunk rows, compression */
    uint64_t seed;                   /* default 1 */
    double base_rate;                /* mean click probability, in (0, 1) (default 0.25) */
    double signal;                   /* std of the categorical weights (default 0.3: the planted
                                        model's NE is then about 0.75, near the best on Criteo) */
    double dense_signal;             /* std of the dense weights (default 0.2) */
    double zipf_s;                   /* Zipf exponent (> 0, default 1.1) */
    int64_t max_vocab;               /* cap on a field's vocabulary (1..2^24, default 100000) */
    int force;                       /* replace a dataset already in out_dir */
    FILE *progress;                  /* progress lines, at most one per second (NULL: none) */
    const volatile sig_atomic_t *cancel; /* if set and *cancel != 0: stop, clean up, ERASE_ERR_STATE */
} erase_synth_options_t;

typedef struct {
    int64_t rows, clicks;
    double bias;       /* the calibrated bias */
    double base_rate;  /* clicks / rows */
    double log_loss;   /* mean log loss of the planted model over the rows (nats) */
    double entropy;    /* -(p log p + (1-p) log(1-p)) at the base rate */
    double ne;         /* log_loss / entropy */
    int shards;
    double seconds;
    erase_ctr_stats_t stats;
} erase_synth_summary_t;

/* Defaults as listed above; out_dir and rows must be set. */
erase_synth_options_t erase_synth_options_default(void);

/*
 * Write the dataset (shards, index.txt, then planted.h5), atomically as
 * the converter does (io/criteo_convert.h). `summary` may be NULL. Errors:
 * ERASE_ERR_INVALID (bad options, naming the option and value, or out_dir
 * holds a dataset and force is 0), ERASE_ERR_IO, ERASE_ERR_NOMEM,
 * ERASE_ERR_STATE (cancelled).
 */
erase_status_t erase_synth_write(const erase_synth_options_t *options, erase_synth_summary_t *summary);

/* Print the summary: rows, base rate, the planted model's log loss and NE,
 * speed, then the statistics (erase_ctr_stats_print). */
void erase_synth_print(const erase_synth_summary_t *s, FILE *out);

#endif
