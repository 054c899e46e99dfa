/*
 * Sampling the next token of a language model from its logits (host
 * memory): softmax(logits / temperature) restricted to the top_k most
 * likely tokens, drawn with a seeded SplitMix64 stream (lib/core/rng.h),
 * so that the same seed and logits give the same tokens on every machine.
 *
 *   temperature 0   greedy: the argmax (ties: the lowest token id); no
 *                   random number is drawn
 *   top_k 0         every token of the vocabulary; top_k >= vocab: the same
 *   top_k 1         the argmax, as temperature 0
 *
 * Ties at the k-th largest logit go to the lower token ids. The draw: the
 * k tokens in order of decreasing logit (ties: ascending id), weights
 * exp((z - z_max) / temperature) summed in double; u uniform in [0, 1)
 * from 53 random bits; the first token whose running sum exceeds u times
 * the total.
 */
#ifndef ERASE_NN_SAMPLER_H
#define ERASE_NN_SAMPLER_H

#include <stdint.h>

#include "lib/core/status.h"

typedef struct {
    int vocab;
    float temperature;  /* >= 0 */
    int top_k;          /* >= 0; 0 = the whole vocabulary */
    uint64_t rng;       /* SplitMix64 state */
    void *order;        /* [vocab] scratch: (logit, id) pairs */
} erase_sampler_t;

/*
 * Prepare a sampler for logits of `vocab` tokens; the random stream is the
 * seed's (erase_rng_stream with this file's salt). Errors:
 * ERASE_ERR_INVALID (vocab < 1, temperature < 0 or not finite, top_k < 0:
 * the message names the value), ERASE_ERR_NOMEM.
 */
erase_status_t erase_sampler_init(erase_sampler_t *s, int vocab, float temperature, int top_k,
                                  uint64_t seed);
void erase_sampler_free(erase_sampler_t *s);

/*
 * The next token, in [0, vocab), drawn from logits[vocab] (host memory) as
 * described above; advances the random stream by one draw (none at
 * temperature 0 or top_k 1). Errors: ERASE_ERR_INVALID when a logit is NaN
 * or infinite (the message names the token id and the value).
 */
erase_status_t erase_sampler_next(erase_sampler_t *s, const float *logits, int32_t *token);

#endif
