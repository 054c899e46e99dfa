#include "io/distinct.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define EMPTY 0xFFFFFFFFu              /* a free slot; the id EMPTY itself is kept in has_empty */
#define REGISTERS (1 << ERASE_DISTINCT_HLL_P)

struct erase_distinct {
    /* exact: a hash set (regs == NULL) */
    uint32_t *slots;    /* [cap], EMPTY = free; at most half full */
    int64_t cap, count; /* count: distinct ids in slots, plus has_empty */
    int has_empty;
    /* estimate: the HyperLogLog registers (slots == NULL) */
    uint8_t *regs;      /* [REGISTERS] */
};

/* splitmix64's finalizer (Steele, Lea, Flood, "Fast splittable pseudorandom
 * number generators", OOPSLA 2014): a 64-bit hash of the id. */
static uint64_t hash64(uint32_t id)
{
    uint64_t z = (uint64_t)id + 0x9E3779B97F4A7C15ull;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static void hll_add(uint8_t *regs, uint32_t id)
{
    uint64_t h = hash64(id);
    uint32_t j = (uint32_t)(h >> (64 - ERASE_DISTINCT_HLL_P)); /* the first P bits pick the register */
    uint64_t w = h << ERASE_DISTINCT_HLL_P;                     /* the other 64 - P bits */
    /* rho: position of the first 1 bit, 1-based; 64 - P + 1 when they are all 0 */
    uint8_t rho = w ? (uint8_t)(__builtin_clzll(w) + 1) : (uint8_t)(64 - ERASE_DISTINCT_HLL_P + 1);
    if (rho > regs[j])
        regs[j] = rho;
}

erase_status_t erase_distinct_create(erase_distinct_t **out)
{
    erase_distinct_t *d = calloc(1, sizeof *d);
    if (!d || !(d->slots = malloc(1024 * sizeof *d->slots))) {
        free(d);
        return ERASE_ERROR(ERASE_ERR_NOMEM, "distinct ids: no memory for a set of 1024 ids");
    }
    d->cap = 1024;
    memset(d->slots, 0xFF, (size_t)d->cap * sizeof *d->slots);
    *out = d;
    return ERASE_OK;
}

void erase_distinct_destroy(erase_distinct_t *d)
{
    if (!d)
        return;
    free(d->slots);
    free(d->regs);
    free(d);
}

/* Insert into a set of `cap` (a power of 2) slots; 1 if it was new. */
static int set_insert(uint32_t *slots, int64_t cap, uint32_t id)
{
    uint64_t mask = (uint64_t)cap - 1;
    for (uint64_t i = hash64(id) & mask;; i = (i + 1) & mask) {
        if (slots[i] == id)
            return 0;
        if (slots[i] == EMPTY) {
            slots[i] = id;
            return 1;
        }
    }
}

/* The set becomes a sketch of the same ids. */
static erase_status_t to_sketch(erase_distinct_t *d)
{
    uint8_t *regs = calloc(REGISTERS, 1);
    if (!regs)
        return ERASE_ERROR(ERASE_ERR_NOMEM, "distinct ids: no memory for %d HyperLogLog registers", REGISTERS);
    for (int64_t i = 0; i < d->cap; i++)
        if (d->slots[i] != EMPTY)
            hll_add(regs, d->slots[i]);
    if (d->has_empty)
        hll_add(regs, EMPTY);
    free(d->slots);
    d->slots = NULL;
    d->cap = d->count = 0;
    d->regs = regs;
    return ERASE_OK;
}

/* Twice the slots (the load stays at most 1/2). */
static erase_status_t grow(erase_distinct_t *d)
{
    int64_t cap = d->cap * 2; /* at most 2 * 2 * ERASE_DISTINCT_EXACT_MAX: no overflow */
    uint32_t *slots = malloc((size_t)cap * sizeof *slots);
    if (!slots)
        return ERASE_ERROR(ERASE_ERR_NOMEM, "distinct ids: no memory for a set of %lld ids", (long long)cap);
    memset(slots, 0xFF, (size_t)cap * sizeof *slots);
    for (int64_t i = 0; i < d->cap; i++)
        if (d->slots[i] != EMPTY)
            set_insert(slots, cap, d->slots[i]);
    free(d->slots);
    d->slots = slots;
    d->cap = cap;
    return ERASE_OK;
}

static erase_status_t add_one(erase_distinct_t *d, uint32_t id)
{
    if (d->regs) {
        hll_add(d->regs, id);
        return ERASE_OK;
    }
    if (id == EMPTY) {
        d->count += !d->has_empty;
        d->has_empty = 1;
    } else if (set_insert(d->slots, d->cap, id)) {
        d->count++;
    } else {
        return ERASE_OK;
    }
    if (d->count > ERASE_DISTINCT_EXACT_MAX)
        return to_sketch(d);
    if (2 * d->count > d->cap)
        return grow(d);
    return ERASE_OK;
}

erase_status_t erase_distinct_add(erase_distinct_t *d, const uint32_t *ids, int64_t n)
{
    for (int64_t i = 0; i < n; i++)
        ERASE_CHECK(add_one(d, ids[i]));
    return ERASE_OK;
}

erase_status_t erase_distinct_merge(erase_distinct_t *dst, const erase_distinct_t *src)
{
    if (src->regs) {
        if (!dst->regs)
            ERASE_CHECK(to_sketch(dst));
        for (int j = 0; j < REGISTERS; j++)
            dst->regs[j] = src->regs[j] > dst->regs[j] ? src->regs[j] : dst->regs[j];
        return ERASE_OK;
    }
    for (int64_t i = 0; i < src->cap; i++)
        if (src->slots[i] != EMPTY)
            ERASE_CHECK(add_one(dst, src->slots[i]));
    if (src->has_empty)
        ERASE_CHECK(add_one(dst, EMPTY));
    return ERASE_OK;
}

int64_t erase_distinct_count(const erase_distinct_t *d, int *estimated)
{
    *estimated = d->regs != NULL;
    if (!d->regs)
        return d->count;
    const double m = REGISTERS, alpha = 0.7213 / (1 + 1.079 / m); /* Flajolet et al. 2007, m >= 128 */
    double sum = 0;
    int zeros = 0;
    for (int j = 0; j < REGISTERS; j++) {
        sum += ldexp(1.0, -d->regs[j]);
        zeros += d->regs[j] == 0;
    }
    double e = alpha * m * m / sum;
    if (e <= 2.5 * m && zeros > 0)
        e = m * log(m / zeros); /* linear counting */
    return (int64_t)llround(e);
}
