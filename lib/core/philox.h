/*
 * Philox4x32-10, the counter-based random number generator of Salmon,
 * Moraes, Dror and Shaw, "Parallel random numbers: as easy as 1, 2, 3"
 * (SC 2011); the generator cuRAND and PyTorch use for dropout. Output block
 * i of a stream is a pure function of (key, counter i): any element can be
 * drawn again without state, so dropout masks are recomputed in backward,
 * reproducible, and resumable from a checkpoint's (seed, offset).
 */
#ifndef ERASE_CORE_PHILOX_H
#define ERASE_CORE_PHILOX_H

#include <stdint.h>

#include "lib/core/hd.h"

/* Four 32-bit random words for 128-bit counter ctr[0..3] under a 64-bit key. */
ERASE_HD static inline void erase_philox4x32(uint64_t key, const uint32_t ctr_in[4], uint32_t out[4])
{
    uint32_t c0 = ctr_in[0], c1 = ctr_in[1], c2 = ctr_in[2], c3 = ctr_in[3];
    uint32_t k0 = (uint32_t)key, k1 = (uint32_t)(key >> 32);
    for (int r = 0; r < 10; r++) {
        uint64_t p0 = (uint64_t)0xD2511F53u * c0, p1 = (uint64_t)0xCD9E8D57u * c2;
        uint32_t n0 = (uint32_t)(p1 >> 32) ^ c1 ^ k0;
        uint32_t n2 = (uint32_t)(p0 >> 32) ^ c3 ^ k1;
        c1 = (uint32_t)p1;
        c3 = (uint32_t)p0;
        c0 = n0;
        c2 = n2;
        k0 += 0x9E3779B9u;
        k1 += 0xBB67AE85u;
    }
    out[0] = c0;
    out[1] = c1;
    out[2] = c2;
    out[3] = c3;
}

/* Uniform float in [0, 1) for element `index` of the stream (key, offset). */
ERASE_HD static inline float erase_philox_uniform(uint64_t key, uint64_t offset, uint64_t index)
{
    uint64_t block = offset + index / 4;
    uint32_t ctr[4] = { (uint32_t)block, (uint32_t)(block >> 32), 0, 0 }, out[4];
    erase_philox4x32(key, ctr, out);
    return (float)(out[index % 4] >> 8) * (1.0f / 16777216.0f);
}

#endif
