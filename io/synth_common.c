#include "io/synth_common.h"

const double erase_synth_sparse_missing[ERASE_CTR_SHARD_FIELDS] = {
    0, 0, 0.036, 0.036, 0, 0.133, 0, 0, 0, 0, 0, 0.036, 0,
    0, 0, 0.036, 0, 0, 0.45, 0.45, 0.036, 0.818, 0, 0.036, 0.45, 0.45,
};
const double erase_synth_dense_missing[ERASE_CTR_SHARD_DENSE] = {
    0.448, 0, 0.204, 0.198, 0.049, 0.251, 0.049, 0.001, 0.049, 0.448, 0.049, 0.773, 0.198,
};
const double erase_synth_dense_mu[ERASE_CTR_SHARD_DENSE] = { 0.80, 2.12, 2.25, 1.73, 7.24, 3.58, 1.54,
                                                             2.06, 3.61, 0.38, 0.85, 0.30, 1.88 };
const double erase_synth_dense_sd[ERASE_CTR_SHARD_DENSE] = { 0.98, 2.13, 1.28, 0.96, 2.90, 1.81, 1.36,
                                                             1.18, 1.69, 0.39, 0.74, 0.61, 1.06 };

double erase_synth_bias_for_rate(const double *z, int64_t n, double base_rate)
{
    double lo = -30, hi = 30;
    for (int it = 0; it < 100; it++) {
        double mid = 0.5 * (lo + hi), mean = 0;
        for (int64_t i = 0; i < n; i++)
            mean += erase_synth_sigmoid(z[i] + mid);
        mean /= (double)n;
        if (mean < base_rate)
            lo = mid;
        else
            hi = mid;
    }
    return 0.5 * (lo + hi);
}
