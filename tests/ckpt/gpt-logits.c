/*
 * gpt-logits CKPT ID,ID,...: the logits of the language model (gpt or
 * nanochat) of checkpoint CKPT (a data-parallel checkpoint file) on one prompt of token ids, by
 * erase's training forward (erase_network_forward_predict) on the CPU:
 * one line per prompt position, the vocab's logits separated by spaces
 * (%.9g: float32 exactly). The prompt is padded with 0 to the context;
 * causal attention keeps the padding out of the prompt's positions. For
 * bench/compat-export.py (issue 37), which compares them with
 * transformers' GPT2LMHeadModel (gpt) or the PyTorch nanochat reference
 * (nanochat) loaded from erase-export's file.
 *
 * Exit status: 0 done, 2 error (message on stderr).
 */
#include "io/checkpoint.h"
#include "lib/nn/network.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MUST(call)                                                                    \
    do {                                                                              \
        if ((call) != ERASE_OK) {                                                     \
            fprintf(stderr, "gpt-logits: %s -> %s\n", #call, erase_error_message()); \
            exit(2);                                                                  \
        }                                                                             \
    } while (0)

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: gpt-logits CKPT ID,ID,...\n");
        return 2;
    }
    erase_ckpt_t *ck;
    erase_model_config_t cfg;
    MUST(erase_ckpt_open(argv[1], &ck));
    MUST(erase_ckpt_need_whole(ck));
    MUST(erase_model_config_parse_embedded(erase_ckpt_meta(ck)->model, argv[1], &cfg));
    if (!erase_model_config_context(&cfg)) {
        fprintf(stderr, "gpt-logits: %s: not a language model's (gpt, nanochat) checkpoint\n", argv[1]);
        return 2;
    }
    int T = *erase_model_config_context(&cfg), V = erase_model_config_vocab(&cfg), n = 0;
    int32_t *tokens = calloc((size_t)T, sizeof *tokens);
    for (char *s = argv[2], *end; *s && n < T; s = *end ? end + 1 : end, n++) {
        long v = strtol(s, &end, 10);
        if (end == s || v < 0 || v >= V || (*end && *end != ',')) {
            fprintf(stderr, "gpt-logits: %s: expected token ids below %d, comma-separated\n", argv[2], V);
            return 2;
        }
        tokens[n] = (int32_t)v;
    }
    erase_device_options_t o = erase_device_options_default();
    o.blas_threads = 1;
    erase_device_t *dev;
    erase_network_t *net;
    MUST(erase_device_open(&o, &dev));
    MUST(erase_network_create(dev, &cfg, 1, &net));
    int np;
    erase_param_t *p = erase_network_params(net, &np);
    for (int i = 0; i < np; i++) {
        const erase_ckpt_tensor_t *t = erase_ckpt_find(ck, ERASE_CKPT_PARAMS, p[i].name);
        if (!t || erase_ckpt_tensor_numel(t) != erase_param_numel(&p[i])) {
            fprintf(stderr, "gpt-logits: %s: parameter %s missing or of another size\n", argv[1], p[i].name);
            return 2;
        }
        MUST(erase_network_write_param(net, &p[i], t->data));
    }
    int32_t *d_tokens;
    erase_stream_t *s;
    float *logits = malloc(sizeof(float) * (size_t)T * (size_t)V);
    MUST(erase_stream_create(dev, &s));
    MUST(erase_malloc(dev, sizeof(int32_t) * (size_t)T, (void **)&d_tokens));
    MUST(erase_memcpy_sync(dev, d_tokens, tokens, sizeof(int32_t) * (size_t)T));
    erase_batch_t batch = { .size = 1, .tokens = d_tokens };
    MUST(erase_network_forward_predict(net, s, &batch));
    MUST(erase_stream_synchronize(s));
    int width;
    const float *z = erase_network_head_output(net, erase_network_blocks(net) - 1, &width);
    MUST(erase_memcpy_sync(dev, logits, z, sizeof(float) * (size_t)T * (size_t)V));
    for (int t = 0; t < n; t++)
        for (int v = 0; v < V; v++)
            printf("%.9g%c", logits[(size_t)t * (size_t)V + (size_t)v], v + 1 < V ? ' ' : '\n');
    erase_free(dev, d_tokens);
    erase_stream_destroy(s);
    erase_network_destroy(net);
    erase_device_close(dev);
    erase_ckpt_close(ck);
    free(tokens);
    free(logits);
    return 0;
}
