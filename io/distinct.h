/*
 * Distinct 32-bit ids, counted to size embedding tables (erase-inspect
 * data's "distinct" column, io/ctr_stats.h).
 *
 * Exact while small: the ids are kept in a hash set (open addressing,
 * linear probing) until more than ERASE_DISTINCT_EXACT_MAX distinct ids
 * were seen (a set of at most 2^17 slots = 512 KiB). Then the set is
 * turned into a HyperLogLog sketch (Flajolet, Fusy, Gandouet, Meunier,
 * "HyperLogLog: the analysis of a near-optimal cardinality estimation
 * algorithm", AofA 2007) of 2^ERASE_DISTINCT_HLL_P = 16,384 one-byte
 * registers over a 64-bit hash of the id (the splitmix64 finalizer), so no
 * large-range correction is needed, and small estimates (E <= 5m/2 with
 * empty registers) use linear counting, m ln(m / V), as Heule, Nunkesser,
 * Hall, "HyperLogLog in Practice" (EDBT 2013) do for their 64-bit hash.
 * Relative standard error of the estimate: 1.04 / sqrt(2^14) = 0.81%.
 *
 * Merging is exact: two sets merge into their union (itself turned into a
 * sketch above the limit); sketches merge by the register-wise maximum,
 * which is the sketch of the union, so the estimate of two merged halves
 * equals the estimate of the whole.
 */
#ifndef ERASE_IO_DISTINCT_H
#define ERASE_IO_DISTINCT_H

#include <stdint.h>

#include "lib/core/status.h"

#define ERASE_DISTINCT_EXACT_MAX 65536 /* distinct ids counted exactly (1 << 16) */
#define ERASE_DISTINCT_HLL_P 14        /* the sketch has 1 << P registers */

typedef struct erase_distinct erase_distinct_t;

/* An empty counter (exact). Errors: ERASE_ERR_NOMEM. */
erase_status_t erase_distinct_create(erase_distinct_t **out);

/* Free a counter (NULL: nothing). */
void erase_distinct_destroy(erase_distinct_t *d);

/* Count the ids ids [n] (any 32-bit value). Errors: ERASE_ERR_NOMEM (the
 * set could not grow, or the sketch be made; the counter is unchanged by
 * the id that failed and still usable). */
erase_status_t erase_distinct_add(erase_distinct_t *d, const uint32_t *ids, int64_t n);

/* Add the ids counted by `src` to `dst` (the union). Errors: ERASE_ERR_NOMEM. */
erase_status_t erase_distinct_merge(erase_distinct_t *dst, const erase_distinct_t *src);

/* The number of distinct ids counted: exact (*estimated = 0) or the
 * HyperLogLog estimate, rounded (*estimated = 1). */
int64_t erase_distinct_count(const erase_distinct_t *d, int *estimated);

#endif
