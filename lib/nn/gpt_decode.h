/*
 * Generation with a gpt network (docs/models.md, gpt): a decoder runs the
 * network's forward one position at a time against a key/value cache, so
 * that each new token costs one position's forward instead of the whole
 * window's. It reads the network's parameters (never writes them) and
 * computes with the ops of the training forward (linear, layernorm, GELU
 * tanh, token embedding with T = 1 at position t, erase_attention_decode
 * for attention), so that decoding positions 0 .. t of a window gives the
 * training forward's logits at position t (within float rounding). The
 * logits are those of the last block's head (its final LayerNorm and LM
 * head): the head generation uses, whatever cuts the model has.
 *
 * Caches: per layer, keys and values [batch, context, width] on the
 * network's device (2 x layers x batch x context x width floats).
 */
#ifndef ERASE_NN_GPT_DECODE_H
#define ERASE_NN_GPT_DECODE_H

#include "lib/nn/network.h"

typedef struct erase_gpt_decoder erase_gpt_decoder_t;

/*
 * A decoder of `batch` sequences for the gpt network `net` (which must
 * outlive it), with empty caches. Errors: ERASE_ERR_INVALID (not a gpt
 * network, batch < 1, a cache larger than memory can address, a parameter
 * of the network missing: the message names it), ERASE_ERR_NOMEM.
 */
erase_status_t erase_gpt_decoder_create(erase_network_t *net, int batch, erase_gpt_decoder_t **out);
void erase_gpt_decoder_destroy(erase_gpt_decoder_t *d);

/*
 * Enqueue on `s` (a stream of the network's device) the forward of
 * position t (0 <= t < the model's context) of every sequence: tokens, a
 * device array int32 [batch] in [0, vocab) (one outside fails when the op
 * runs: ERASE_ERR_INVALID naming it), is the token at position t of each
 * sequence. The keys and values of position t go to row t of the caches
 * (rows < t must hold positions 0 .. t-1 of the same sequences: decode
 * positions in order from 0; decoding position 0 again starts new
 * sequences); the logits [batch, vocab] (erase_gpt_decoder_logits) then
 * hold the next-token scores after position t. Errors: ERASE_ERR_INVALID
 * (t out of range: the message names t and the context), those of the ops.
 */
erase_status_t erase_gpt_decode(erase_gpt_decoder_t *d, erase_stream_t *s, int t, const int32_t *tokens);

/* Device array [batch, vocab]: the logits of the last erase_gpt_decode
 * (valid after its stream is synchronized; overwritten by the next). */
const float *erase_gpt_decoder_logits(const erase_gpt_decoder_t *d);

#endif
