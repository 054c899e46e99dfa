#include "lib/nn/train_step.h"

#include "lib/core/checked.h"
#include "lib/core/rng.h"

#include <stdlib.h>
#include <string.h>

/* Forward of every block, backward in reverse, then the updates: one stream. */
erase_status_t erase_train_step_serial(erase_network_t *net, erase_optimizer_t *opt,
                                       erase_stream_t *s, const erase_batch_t *batch)
{
    int blocks = erase_network_blocks(net);
    for (int b = 0; b < blocks; b++)
        ERASE_CHECK(erase_network_forward_block(net, b, s, batch));
    for (int b = blocks - 1; b >= 0; b--)
        ERASE_CHECK(erase_network_backward_block(net, b, s, batch));
    if (opt) {
        ERASE_CHECK(erase_optimizer_begin_step(opt, s));
        for (int b = 0; b < blocks; b++)
            ERASE_CHECK(erase_optimizer_update_block(opt, b, s));
    }
    return ERASE_OK;
}

/* A new device array holding the `bytes` bytes of host memory `host`
 * (freed here, also on failure): one blocking copy. */
static erase_status_t upload(erase_device_t *dev, void *host, size_t bytes, const void **out)
{
    void *ptr = NULL;
    erase_status_t st = host ? erase_malloc(dev, bytes, &ptr)
                             : ERASE_ERROR(ERASE_ERR_NOMEM, "random batch: no host memory (%zu bytes)", bytes);
    if (st == ERASE_OK && (st = erase_memcpy_sync(dev, ptr, host, bytes)) != ERASE_OK) {
        erase_free(dev, ptr);
        ptr = NULL;
    }
    free(host);
    if (st != ERASE_OK)
        erase_error_trail(__FILE__, __LINE__);
    *out = ptr;
    return st;
}

/* Draw the inputs in host memory, in the order the documented stream
 * defines, then copy each array to the device. */
erase_status_t erase_batch_random(erase_network_t *net, int size, uint64_t seed, erase_batch_t *out)
{
    erase_device_t *dev = erase_network_device(net);
    const erase_model_config_t *cfg = erase_network_config(net);
    uint64_t rng = seed;
    memset(out, 0, sizeof *out);
    out->size = size;
    erase_status_t st = ERASE_OK;
    if (erase_model_config_has_tables(cfg)) {
        erase_bag_t bag = erase_network_bag(net, NULL); /* hotness: the model's, each >= 1 */
        int H = erase_bag_columns(&bag, ERASE_CTR_FIELDS), multi = erase_model_config_max_hotness(cfg) > 1;
        size_t nd = (size_t)size * ERASE_CTR_DENSE, ns = (size_t)size * (size_t)H;
        size_t nl = multi ? (size_t)size * ERASE_CTR_FIELDS : 0;
        uint32_t *lengths = multi ? malloc(sizeof(uint32_t) * (nl ? nl : 1)) : NULL;
        float *dense = malloc(sizeof(float) * nd), *label = malloc(sizeof(float) * (size_t)size);
        uint32_t *sparse = malloc(sizeof(uint32_t) * ns);
        if (dense && label && sparse) {
            for (size_t i = 0; i < nd; i++)
                dense[i] = erase_rng_below(&rng, 10) == 0 ? 0.0f : erase_rng_uniform(&rng, 0.0f, 5.0f);
            for (size_t i = 0; i < ns; i++)
                sparse[i] = erase_rng_below(&rng, 20) == 0 ? UINT32_MAX : (uint32_t)erase_rng_next(&rng);
            for (int i = 0; i < size; i++)
                label[i] = erase_rng_below(&rng, 4) == 0 ? 1.0f : 0.0f;
            for (size_t i = 0; lengths && i < nl; i++) /* multi-hot: 1 .. hotness ids, the rest padding */
                lengths[i] = 1 + erase_rng_below(&rng, (uint32_t)bag.hotness[i % ERASE_CTR_FIELDS]);
            for (int i = 0; lengths && i < size; i++)
                for (int f = 0, c = 0; f < ERASE_CTR_FIELDS; c += bag.hotness[f], f++)
                    for (int j = (int)lengths[(size_t)i * ERASE_CTR_FIELDS + f]; j < bag.hotness[f]; j++)
                        sparse[(size_t)i * H + c + j] = UINT32_MAX;
        }
        st = upload(dev, dense && label && sparse ? dense : (free(dense), NULL), sizeof(float) * nd,
                    (const void **)&out->dense);
        if (st == ERASE_OK)
            st = upload(dev, sparse, sizeof(uint32_t) * ns, (const void **)&out->sparse);
        else
            free(sparse);
        if (st == ERASE_OK)
            st = upload(dev, label, sizeof(float) * (size_t)size, (const void **)&out->label);
        else
            free(label);
        if (st == ERASE_OK && multi)
            st = upload(dev, lengths, sizeof(uint32_t) * (nl ? nl : 1), (const void **)&out->sparse_len);
        else
            free(lengths);
    } else if (cfg->kind == ERASE_MODEL_GPT || cfg->kind == ERASE_MODEL_NANOCHAT) {
        int T = *erase_model_config_context(cfg), vocab = erase_model_config_vocab(cfg);
        size_t bytes = 0;
        int32_t *tokens = NULL, *targets = NULL;
        if (erase_bytes(sizeof(int32_t), size, T, &bytes)) {
            tokens = malloc(bytes ? bytes : 1);
            targets = malloc(bytes ? bytes : 1);
        }
        if (tokens && targets)
            for (int r = 0; r < size; r++) { /* a window of T+1 tokens */
                int32_t prev = (int32_t)erase_rng_below(&rng, (uint32_t)vocab);
                for (int t = 0; t < T; t++) {
                    tokens[(size_t)r * T + t] = prev;
                    prev = (int32_t)erase_rng_below(&rng, (uint32_t)vocab);
                    targets[(size_t)r * T + t] = prev;
                }
            }
        st = upload(dev, tokens && targets ? tokens : (free(tokens), NULL), bytes, (const void **)&out->tokens);
        if (st == ERASE_OK)
            st = upload(dev, targets, bytes, (const void **)&out->targets);
        else
            free(targets);
    } else {
        size_t nf = (size_t)size * (size_t)cfg->mlp.inputs;
        float *features = malloc(sizeof(float) * nf);
        int32_t *classes = malloc(sizeof(int32_t) * (size_t)size);
        if (features && classes) {
            for (size_t i = 0; i < nf; i++)
                features[i] = erase_rng_uniform(&rng, -1.0f, 1.0f);
            for (int i = 0; i < size; i++)
                classes[i] = (int32_t)erase_rng_below(&rng, (uint32_t)cfg->mlp.classes);
        }
        st = upload(dev, features && classes ? features : (free(features), NULL), sizeof(float) * nf,
                    (const void **)&out->features);
        if (st == ERASE_OK)
            st = upload(dev, classes, sizeof(int32_t) * (size_t)size, (const void **)&out->classes);
        else
            free(classes);
    }
    if (st != ERASE_OK) {
        erase_error_trail(__FILE__, __LINE__);
        erase_batch_free_random(net, out);
    }
    return st;
}

/* Free the device arrays of a random batch. */
void erase_batch_free_random(erase_network_t *net, erase_batch_t *batch)
{
    erase_device_t *dev = erase_network_device(net);
    erase_free(dev, (void *)batch->dense);
    erase_free(dev, (void *)batch->sparse);
    erase_free(dev, (void *)batch->sparse_len);
    erase_free(dev, (void *)batch->label);
    erase_free(dev, (void *)batch->features);
    erase_free(dev, (void *)batch->classes);
    erase_free(dev, (void *)batch->tokens);
    erase_free(dev, (void *)batch->targets);
    memset(batch, 0, sizeof *batch);
}
