/* One batch of model inputs, in device memory of the network's device. */
#ifndef ERASE_NN_BATCH_H
#define ERASE_NN_BATCH_H

#include <stdint.h>

typedef struct {
    int size;                 /* samples in the batch (<= the network's max_batch) */
    /* ctr */
    const float *dense;       /* [size, 13]: log1p(max(x, 0)), missing -> 0 */
    /* [size, H], H = sum of the model's hotness[f] (one-hot: all 1, H = 26):
     * feature f's ids at columns [hot_offset[f], hot_offset[f] + hotness[f]),
     * hot_offset the prefix sum of hotness, padded with 0xFFFFFFFF past its
     * sparse_len ids; 32-bit hashes, a missing feature is one id 0xFFFFFFFF */
    const uint32_t *sparse;
    const uint32_t *sparse_len; /* [size, 26]: ids present per feature (>= 1); NULL for one-hot data */
    const float *label;       /* [size]: 0 or 1 */
    /* mlp */
    const float *features;    /* [size, inputs] */
    const int32_t *classes;   /* [size]: 0 .. classes-1 */
    /* gpt (the lm task): a sample is a window of T+1 tokens, T = the
     * model's context */
    const int32_t *tokens;    /* [size, T]: window positions 0 .. T-1 */
    const int32_t *targets;   /* [size, T]: the next tokens, positions 1 .. T */
} erase_batch_t;

#endif
