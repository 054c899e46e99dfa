/*
 * sample-tool: the checkpoints test-sample.sh runs erase-sample on, and
 * the greedy text it must print, computed without erase-sample's decoder.
 *
 *   sample-tool MODEL DIR [--spread] [--greedy PROMPT N]
 *
 * Builds the network of model file MODEL (its seed's initial weights; with
 * --spread every matrix times 10 (an all-zero one, as nanochat's
 * projections and heads start, a pattern in [-0.25, 0.25]) and every
 * vector plus a pattern in [-0.3, 0.3], so that the logits differ by
 * units instead of the nearly flat start) on the CPU and writes it as the step-0
 * checkpoint DIR/ckpt-0.h5 (format of io/checkpoint.h, model text of
 * erase_model_config_format). With --greedy (a gpt or nanochat model of vocab 256):
 * prints PROMPT and then the N tokens of the argmax chain, each computed
 * by the training forward of the whole window so far
 * (erase_network_forward_predict; no key/value cache), then a newline:
 * what erase-sample --temperature 0 must print.
 *
 * Exit status: 0 done, 2 error (message on stderr).
 */
#include "io/checkpoint.h"
#include "lib/nn/network.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MUST(call)                                                                   \
    do {                                                                             \
        if ((call) != ERASE_OK) {                                                    \
            fprintf(stderr, "sample-tool: %s -> %s\n", #call, erase_error_message()); \
            exit(2);                                                                 \
        }                                                                            \
    } while (0)

/* The argmax chain after `prompt`, by whole-window forwards. */
static void greedy(erase_device_t *dev, erase_network_t *net, const char *prompt, int n)
{
    const erase_model_config_t *cfg = erase_network_config(net);
    const int *context = erase_model_config_context(cfg);
    int T = context ? *context : 0, V = erase_model_config_vocab(cfg), np = (int)strlen(prompt);
    if (!context || V != 256 || np < 1 || np + n > T) {
        fprintf(stderr, "sample-tool: --greedy needs a byte-level gpt or nanochat model and 1 <= prompt + N <= "
                        "context\n");
        exit(2);
    }
    int32_t *tokens = calloc((size_t)T, sizeof *tokens), *d_tokens;
    float *logits = malloc(sizeof(float) * (size_t)T * (size_t)V);
    erase_stream_t *s;
    MUST(erase_stream_create(dev, &s));
    MUST(erase_malloc(dev, sizeof(int32_t) * (size_t)T, (void **)&d_tokens));
    for (int i = 0; i < np; i++)
        tokens[i] = (unsigned char)prompt[i];
    for (int len = np; len < np + n; len++) {
        /* positions >= len hold 0: causal attention keeps them out of position len-1 */
        MUST(erase_memcpy_sync(dev, d_tokens, tokens, sizeof(int32_t) * (size_t)T));
        erase_batch_t batch = { .size = 1, .tokens = d_tokens };
        MUST(erase_network_forward_predict(net, s, &batch));
        MUST(erase_stream_synchronize(s));
        int width;
        const float *z = erase_network_head_output(net, erase_network_blocks(net) - 1, &width);
        MUST(erase_memcpy_sync(dev, logits, z, sizeof(float) * (size_t)T * (size_t)V));
        const float *row = logits + (size_t)(len - 1) * (size_t)V;
        int best = 0;
        for (int v = 1; v < V; v++)
            best = row[v] > row[best] ? v : best;
        tokens[len] = best;
    }
    for (int i = 0; i < np + n; i++)
        putchar(tokens[i]);
    putchar('\n');
    erase_free(dev, d_tokens);
    erase_stream_destroy(s);
    free(tokens);
    free(logits);
}

int main(int argc, char **argv)
{
    const char *model = NULL, *dir = NULL, *prompt = NULL;
    int spread = 0, n = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--spread"))
            spread = 1;
        else if (!strcmp(argv[i], "--greedy") && i + 2 < argc) {
            prompt = argv[++i];
            n = atoi(argv[++i]);
        } else if (!model)
            model = argv[i];
        else if (!dir)
            dir = argv[i];
        else
            dir = NULL, i = argc;
    }
    if (!model || !dir) {
        fprintf(stderr, "usage: sample-tool MODEL DIR [--spread] [--greedy PROMPT N]\n");
        return 2;
    }
    erase_model_config_t cfg;
    MUST(erase_model_config_load(model, &cfg));
    erase_device_options_t o = erase_device_options_default();
    o.blas_threads = 1;
    erase_device_t *dev;
    erase_network_t *net;
    MUST(erase_device_open(&o, &dev));
    MUST(erase_network_create(dev, &cfg, 1, &net));
    int np;
    erase_param_t *p = erase_network_params(net, &np);
    size_t total = erase_network_copy_params(net, NULL);
    float *host = malloc(sizeof(float) * (total ? total : 1));
    erase_ckpt_tensor_t *t = calloc((size_t)np, sizeof *t);
    if (!host || !t || erase_network_copy_params(net, host) != total) {
        fprintf(stderr, "sample-tool: cannot copy the parameters: %s\n", erase_error_message());
        return 2;
    }
    size_t at = 0;
    for (int i = 0; i < np; i++) {
        size_t k = (size_t)erase_param_numel(&p[i]), nonzero = 0;
        for (size_t j = 0; j < k; j++)
            nonzero += host[at + j] != 0.0f;
        for (size_t j = 0; spread && j < k; j++) /* a zero matrix (nanochat's projections, heads): a pattern */
            host[at + j] = p[i].ndim == 2 && nonzero ? host[at + j] * 10.0f
                           : p[i].ndim == 2         ? 0.05f * (float)((int)(j % 11) - 5)
                                                    : host[at + j] + 0.1f * (float)((int)(j % 7) - 3);
        MUST(erase_network_write_param(net, &p[i], host + at));
        snprintf(t[i].name, sizeof t[i].name, "%s", p[i].name);
        t[i].ndim = p[i].ndim;
        t[i].dims[0] = p[i].rows;
        t[i].dims[1] = p[i].ndim == 2 ? p[i].cols : 1;
        t[i].data = host + at;
        at += k;
    }
    char text[4096];
    if (erase_model_config_format(&cfg, text, sizeof text) < 0) {
        fprintf(stderr, "sample-tool: the model text is longer than %zu bytes\n", sizeof text);
        return 2;
    }
    erase_ckpt_meta_t m = { .global_batch = 1, .world_size = 1, .dp_size = 1, .pp_size = 1,
                            .pp_layout = "1 stage", .schedule = "early_backward off",
                            .dense_optimizer = "adamw", .embedding_optimizer = "rowwise_adagrad",
                            .seed = cfg.seed, .model = text, .options = "" };
    erase_ckpt_rank_t rank = { .rng = { cfg.seed, 0 } };
    MUST(erase_ckpt_write(dir, &m, t, np, NULL, 0, &rank, 1, NULL, 1, NULL));
    if (prompt)
        greedy(dev, net, prompt, n);
    free(t);
    free(host);
    erase_network_destroy(net);
    erase_device_close(dev);
    return 0;
}
