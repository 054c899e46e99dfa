#include "lib/nn/train_step.h"

#include "lib/core/rng.h"

#include <string.h>

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

erase_status_t erase_batch_random(erase_network_t *net, int size, uint64_t seed, erase_batch_t *out)
{
    erase_device_t *dev = erase_network_device(net);
    const erase_model_config_t *cfg = erase_network_config(net);
    uint64_t rng = seed;
    memset(out, 0, sizeof *out);
    out->size = size;
    if (cfg->kind == ERASE_MODEL_CTR) {
        float *dense, *label;
        uint32_t *sparse;
        ERASE_CHECK(erase_malloc(dev, sizeof(float) * (size_t)size * ERASE_CTR_DENSE, (void **)&dense));
        ERASE_CHECK(erase_malloc(dev, sizeof(uint32_t) * (size_t)size * ERASE_CTR_FIELDS, (void **)&sparse));
        ERASE_CHECK(erase_malloc(dev, sizeof(float) * (size_t)size, (void **)&label));
        for (size_t i = 0; i < (size_t)size * ERASE_CTR_DENSE; i++)
            dense[i] = erase_rng_below(&rng, 10) == 0 ? 0.0f : erase_rng_uniform(&rng, 0.0f, 5.0f);
        for (size_t i = 0; i < (size_t)size * ERASE_CTR_FIELDS; i++)
            sparse[i] = erase_rng_below(&rng, 20) == 0 ? UINT32_MAX : (uint32_t)erase_rng_next(&rng);
        for (int i = 0; i < size; i++)
            label[i] = erase_rng_below(&rng, 4) == 0 ? 1.0f : 0.0f;
        out->dense = dense;
        out->sparse = sparse;
        out->label = label;
    } else {
        float *features;
        int32_t *classes;
        ERASE_CHECK(erase_malloc(dev, sizeof(float) * (size_t)size * cfg->mlp.inputs, (void **)&features));
        ERASE_CHECK(erase_malloc(dev, sizeof(int32_t) * (size_t)size, (void **)&classes));
        for (size_t i = 0; i < (size_t)size * cfg->mlp.inputs; i++)
            features[i] = erase_rng_uniform(&rng, -1.0f, 1.0f);
        for (int i = 0; i < size; i++)
            classes[i] = (int32_t)erase_rng_below(&rng, (uint32_t)cfg->mlp.classes);
        out->features = features;
        out->classes = classes;
    }
    return ERASE_OK;
}

void erase_batch_free_random(erase_network_t *net, erase_batch_t *batch)
{
    erase_device_t *dev = erase_network_device(net);
    erase_free(dev, (void *)batch->dense);
    erase_free(dev, (void *)batch->sparse);
    erase_free(dev, (void *)batch->label);
    erase_free(dev, (void *)batch->features);
    erase_free(dev, (void *)batch->classes);
    memset(batch, 0, sizeof *batch);
}
