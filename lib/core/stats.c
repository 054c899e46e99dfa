#include "lib/core/stats.h"

#include <stdlib.h>

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

double erase_quantile(double *values, size_t n, double q)
{
    if (n == 0)
        return 0.0;
    qsort(values, n, sizeof *values, cmp_double);
    if (q <= 0)
        return values[0];
    if (q >= 1)
        return values[n - 1];
    double pos = q * (double)(n - 1);
    size_t lo = (size_t)pos;
    double frac = pos - (double)lo;
    if (lo + 1 >= n)
        return values[n - 1];
    return values[lo] + frac * (values[lo + 1] - values[lo]);
}
