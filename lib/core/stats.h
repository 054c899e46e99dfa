/* Order statistics for benchmark reports (medians, p90). */
#ifndef ERASE_CORE_STATS_H
#define ERASE_CORE_STATS_H

#include <stddef.h>

/*
 * The q-quantile (0 <= q <= 1) of n values by linear interpolation between
 * closest ranks (the "type 7" definition of R and numpy). Sorts `values` in
 * place. n == 0 gives 0.
 */
double erase_quantile(double *values, size_t n, double q);

#endif
