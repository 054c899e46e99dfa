/*
 * Small deterministic random numbers for initialisation and tests:
 * SplitMix64 (Steele, Lea, Flood, "Fast splittable pseudorandom number
 * generators", OOPSLA 2014). The state is one uint64_t, so it is trivially
 * saved in checkpoints and reproducible across machines.
 */
#ifndef ERASE_CORE_RNG_H
#define ERASE_CORE_RNG_H

#include <math.h>
#include <stdint.h>

/* Next 64 random bits; advances *state. */
static inline uint64_t erase_rng_next(uint64_t *state)
{
    uint64_t z = (*state += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

/*
 * The start of an independent SplitMix64 stream for the key (a, b) of a
 * seed: distinct keys (epoch and block of a shuffle, a generator's part and
 * index) give unrelated streams. `salt` separates the users of one seed
 * (each caller passes its own constant), so the same (seed, a, b) in two
 * places does not give the same numbers.
 */
static inline uint64_t erase_rng_stream(uint64_t salt, uint64_t seed, uint64_t a, uint64_t b)
{
    uint64_t s = seed ^ salt;
    s = erase_rng_next(&s) ^ (a * 0x9e3779b97f4a7c15ULL);
    s = erase_rng_next(&s) ^ (b * 0xc2b2ae3d27d4eb4fULL);
    return erase_rng_next(&s);
}

/* Uniform float in [lo, hi) with 24 random bits. */
static inline float erase_rng_uniform(uint64_t *state, float lo, float hi)
{
    float u = (float)(erase_rng_next(state) >> 40) * (1.0f / 16777216.0f);
    return lo + (hi - lo) * u;
}

/*
 * Standard normal (mean 0, variance 1) by the Box-Muller transform: two
 * draws u1 in (0, 1] and u2 in [0, 1) of 53 bits each give
 * sqrt(-2 ln u1) cos(2 pi u2) (the sine half is not used, so every value
 * costs two draws and values do not depend on how many were drawn before
 * in pairs). Computed in double.
 */
static inline double erase_rng_normal(uint64_t *state)
{
    double u1 = (double)((erase_rng_next(state) >> 11) + 1) * (1.0 / 9007199254740992.0);
    double u2 = (double)(erase_rng_next(state) >> 11) * (1.0 / 9007199254740992.0);
    return sqrt(-2.0 * log(u1)) * cos(6.283185307179586476925 * u2);
}

/* Uniform integer in [0, n), n > 0 (slightly biased for huge n; fine here). */
static inline uint32_t erase_rng_below(uint64_t *state, uint32_t n)
{
    return (uint32_t)(erase_rng_next(state) % n);
}

#endif
