/*
 * What the model file's parser (lib/nn/model_config.c) and its writer
 * (lib/nn/model_config_format.c) share; internal to lib/nn.
 */
#ifndef ERASE_NN_MODEL_CONFIG_INTERNAL_H
#define ERASE_NN_MODEL_CONFIG_INTERNAL_H

#include "lib/nn/model_config.h"

#include <stdint.h>

/* The cut mask with every boundary 1 .. blocks-1 set (0 for blocks < 1). */
uint32_t model_config_all_cuts(int blocks);

/* gpt's tie_head resolved: 1 the last head is tied to the token
 * embedding, 0 not (every other model), -1 tie_head = true with cuts (an
 * error: erase_model_config_tied_head says why). */
int model_config_resolve_tie(const erase_model_config_t *cfg);

#endif
