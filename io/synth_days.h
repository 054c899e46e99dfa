/*
 * Synthetic days shaped like Criteo Terabyte's (`erase-convert synth
 * --shape criteo-1tb`): Criteo-format TSV day files (label, I1..I13,
 * C1..C26, tab-separated, one row a line, plain or gzip), drawn from a
 * planted logistic model, for tests and benchmarks of the path a cluster
 * runs on the real 24 days (about 195 M rows and 45 GB of TSV each).
 *
 * Shape (sources cited in io/synth_days.c beside each table):
 *   categorical feature f = 1..26: a vocabulary of V_f ids, V_f =
 *     max(2, round(scale * N_f)), N_f the row count of C_f's table in
 *     MLPerf DLRM-DCNv2 on Criteo 1TB (the feature's distinct ids, capped
 *     at 40 M). The id of popularity rank k = 1..V_f is drawn with
 *     probability k^-s / H(V_f, s) (Zipf's law, s = zipf_s, default 1.44
 *     fitted to the share of ids of Criteo 1TB that survive a frequency
 *     threshold of 3) by rejection-inversion (Hörmann and Derflinger
 *     1996), O(1) per id and no table; rank k is printed as the 8 hex
 *     digits of a bijective 32-bit scramble of k - 1 keyed by (seed, f),
 *     never ffffffff. A feature holds hotness[f] ids separated by ','
 *     (1: one-hot, Criteo's own layout), or with hotness_uniform a count
 *     uniform in 1..hotness[f] per row; each id drawn independently; it is
 *     missing (an empty field) with the rate of the Kaggle sample
 *     (io/synth_common.h).
 *   dense feature I_k: missing with the Kaggle sample's rate, otherwise
 *     the integer floor(expm1(max(0, mu_k + sd_k N(0, 1)))), a log-normal
 *     count (heavy tail) with mu_k, sd_k the sample's fit, capped at 2^24.
 *   label ~ Bernoulli(sigmoid(bias + sum_k v_k log1p(I_k) + sum_f mean
 *     over f's ids of w_f(rank))), missing terms 0; v_k = dense_signal *
 *     N(0, 1) per seed, w_f(rank) = signal * sqrt(3) * U(-1, 1) from a hash
 *     of (seed, f, rank) (no table); the bias set by bisection on a pilot
 *     of 50,000 rows so that the mean click probability is base_rate
 *     (default 0.034, about Criteo 1TB's click rate).
 *
 * Determinism: row r of day d is a pure function of (seed, d, r, the
 * options): its random numbers are Philox4x32-10 (lib/core/philox.h)
 * blocks with the key from the seed and the counter (r, d, block). The work
 * is cut in pieces of piece_rows rows of a day (a fixed size, not the
 * number of ranks); piece p of all days goes to rank p mod N; with gzip
 * every piece is one gzip member (RFC 1952 allows members to follow each
 * other; zcat and zlib read them as one stream). A day is assembled from
 * its pieces in order by rank (day mod N). So the bytes of every file are
 * the same whatever the number of ranks.
 *
 * Files: DIR/day_K.tsv (or .tsv.gz), K = first_day .. first_day + days - 1.
 * Pieces are written as DIR/.day_K.tsv[.gz].part-NNNNNN and assembled into
 * DIR/.day_K.tsv[.gz].tmp, fsynced; once every rank has succeeded, renamed
 * to their names (nothing is renamed when any rank failed; every rank
 * removes its temporary files).
 */
#ifndef ERASE_IO_SYNTH_DAYS_H
#define ERASE_IO_SYNTH_DAYS_H

#include <mpi.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>

#include "io/ctr_shard.h"
#include "lib/core/status.h"

#define ERASE_SYNTH_DAYS_MAX_HOTNESS 1000 /* ids of one feature in one row, at most */

typedef struct {
    const char *out_dir;   /* created if missing */
    const char *shape;     /* "criteo-1tb" (the only one) */
    double scale;          /* vocabulary sizes = scale * Criteo 1TB's, in (0, 1] */
    int64_t days;          /* >= 1 */
    int64_t rows;          /* rows per day, >= 1 */
    int64_t first_day;     /* K of the first file day_K, >= 0 (default 0) */
    uint64_t seed;         /* default 1 */
    int hotness[ERASE_CTR_SHARD_FIELDS]; /* ids per feature, 1..ERASE_SYNTH_DAYS_MAX_HOTNESS (default all 1) */
    int hotness_uniform;   /* 0 (default): a present field holds exactly hotness[f] ids, as MLPerf's
                              synthetic multi-hot; 1: a count uniform in 1..hotness[f], drawn per row and field */
    int gzip;              /* write day_K.tsv.gz (deflate level gzip_level) */
    int gzip_level;        /* 1..9 (default 1: fastest) */
    double base_rate;      /* mean click probability, in (0, 1) (default 0.034) */
    double signal;         /* std of the categorical weights (default 0.3: planted NE about 0.77) */
    double dense_signal;   /* std of the dense weights (default 0.2) */
    double zipf_s;         /* Zipf exponent, in (0, 10] (default 1.44) */
    int64_t piece_rows;    /* rows per piece of work (default 1048576) */
    int force;             /* replace day files already in out_dir */
    FILE *progress;        /* progress lines of rank 0 (at most one a second; NULL: none) */
    const volatile sig_atomic_t *cancel; /* if set and *cancel != 0: stop, clean up, ERASE_ERR_STATE */
} erase_synth_days_options_t;

typedef struct {
    int64_t days, rows, clicks; /* over all days and ranks */
    int64_t bytes;              /* of the files written */
    int64_t vocab[ERASE_CTR_SHARD_FIELDS];
    double bias;                /* the calibrated bias */
    double base_rate;           /* clicks / rows */
    double log_loss;            /* mean log loss of the planted model over the rows (nats) */
    double ne;                  /* log_loss / the base rate's entropy */
    double seconds;             /* wall time of the whole write */
    int ranks;
} erase_synth_days_summary_t;

/* Defaults as listed above; out_dir, scale, days and rows must be set. */
erase_synth_days_options_t erase_synth_days_options_default(void);

/* MLPerf DLRM-DCNv2's hotness of C1..C26 (the "mlperf" of --hotness). */
extern const int erase_synth_days_mlperf_hotness[ERASE_CTR_SHARD_FIELDS];

/*
 * Write the days, every rank of `comm` (MPI initialised) its pieces;
 * collective: every rank calls it with the same options. `summary` (may be
 * NULL) is filled on every rank. Errors: ERASE_ERR_INVALID (bad options,
 * naming the option and value; a day file exists and force is 0),
 * ERASE_ERR_IO (naming the file), ERASE_ERR_NOMEM, ERASE_ERR_STATE
 * (cancelled), ERASE_ERR_COMM ("another rank failed": this rank's own work
 * was fine). On any error no day file is published by any rank.
 */
erase_status_t erase_synth_days_write(const erase_synth_days_options_t *options, MPI_Comm comm,
                                      erase_synth_days_summary_t *summary);

/* The summary: files, rows, bytes, speed, vocabulary sizes, base rate and
 * the planted model's NE. */
void erase_synth_days_print(const erase_synth_days_summary_t *s, const erase_synth_days_options_t *o, FILE *out);

#endif
