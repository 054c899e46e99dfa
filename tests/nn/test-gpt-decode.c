/*
 * Key/value-cache decoding of the gpt model (lib/nn/gpt.c: erase_gpt_decode_step): for a
 * batch of two windows, decoding positions 0 .. T-1 one at a time gives
 * the training forward's logits (erase_network_forward_predict: the last
 * block's head over the whole window) at every position, within 1e-5
 * relative, on a model without cuts (LM head tied to wte) and on one with
 * cuts (local heads on earlier blocks; the last block's own head is the
 * one decoded); decoding position 0 again starts new sequences; errors
 * with their exact text.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "lib/core/rng.h"
#include "lib/nn/gpt.h"
#include "lib/ops/ops.h"

#define MUST(call) assert_int_equal((call), ERASE_OK)

enum { B = 2, L = 3, H = 2, C = 16, T = 9, V = 11 };

typedef struct {
    erase_device_t *dev;
    erase_stream_t *s;
    erase_network_t *net;
    erase_gpt_decoder_t *dec;
    int32_t *d_tokens;             /* [B, T] */
    int32_t *d_step;               /* [B] */
} fixture_t;

static erase_model_config_t gpt_config(uint32_t cut_mask)
{
    erase_model_config_t cfg = erase_model_config_default(ERASE_MODEL_GPT);
    cfg.gpt.layers = L;
    cfg.gpt.heads = H;
    cfg.gpt.width = C;
    cfg.gpt.context = T;
    cfg.gpt.vocab = V;
    cfg.cut_mask = cut_mask;
    cfg.seed = 5;
    return cfg;
}

static void setup(fixture_t *f, uint32_t cut_mask)
{
    erase_device_options_t o = erase_device_options_default();
    o.blas_threads = 1;
    MUST(erase_device_open(&o, &f->dev));
    MUST(erase_stream_create(f->dev, &f->s));
    erase_model_config_t cfg = gpt_config(cut_mask);
    MUST(erase_network_create(f->dev, &cfg, B, &f->net));
    /* GPT-2's initial weights give nearly flat logits: spread the
     * parameters so that the logits differ by units */
    int n;
    erase_param_t *p = erase_network_params(f->net, &n);
    for (int i = 0; i < n; i++) {
        size_t k = (size_t)erase_param_numel(&p[i]);
        float *v = malloc(sizeof(float) * k);
        assert_non_null(v);
        MUST(erase_network_read_param(f->net, &p[i], v));
        for (size_t j = 0; j < k; j++)
            v[j] = p[i].ndim == 2 ? v[j] * 10.0f : v[j] + 0.1f * (float)((int)(j % 7) - 3);
        MUST(erase_network_write_param(f->net, &p[i], v));
        free(v);
    }
    MUST(erase_gpt_decoder_create(f->net, B, &f->dec));
    MUST(erase_malloc(f->dev, sizeof(int32_t) * B * T, (void **)&f->d_tokens));
    MUST(erase_malloc(f->dev, sizeof(int32_t) * B, (void **)&f->d_step));
}

static void teardown(fixture_t *f)
{
    erase_free(f->dev, f->d_tokens);
    erase_free(f->dev, f->d_step);
    erase_gpt_decoder_destroy(f->dec);
    erase_network_destroy(f->net);
    erase_stream_destroy(f->s);
    erase_device_close(f->dev);
}

/* The training forward's logits [B, T, V] of the windows tokens[B, T]. */
static void forward_logits(fixture_t *f, const int32_t *tokens, float *out)
{
    MUST(erase_memcpy_sync(f->dev, f->d_tokens, tokens, sizeof(int32_t) * B * T));
    erase_batch_t batch = { .size = B, .tokens = f->d_tokens };
    MUST(erase_network_forward_predict(f->net, f->s, &batch));
    MUST(erase_stream_synchronize(f->s));
    int width;
    const float *z = erase_network_head_output(f->net, L - 1, &width);
    assert_int_equal(width, T * V);
    MUST(erase_memcpy_sync(f->dev, out, z, sizeof(float) * B * T * V));
}

/* Decode the windows position by position; compare with want[B, T, V]. */
static void decode_and_compare(fixture_t *f, const int32_t *tokens, const float *want, const char *what)
{
    double worst = 0, scale = 0;
    for (int t = 0; t < T; t++) {
        int32_t step[B];
        float got[B * V];
        for (int b = 0; b < B; b++)
            step[b] = tokens[b * T + t];
        MUST(erase_memcpy_sync(f->dev, f->d_step, step, sizeof step));
        const float *logits;
        MUST(erase_gpt_decode_step(f->dec, f->s, t, f->d_step, &logits));
        MUST(erase_stream_synchronize(f->s));
        MUST(erase_memcpy_sync(f->dev, got, logits, sizeof got));
        for (int b = 0; b < B; b++)
            for (int v = 0; v < V; v++) {
                double w = want[((size_t)b * T + (size_t)t) * V + (size_t)v], g = got[b * V + v];
                double err = fabs(g - w) / (fabs(w) + 1e-3);
                worst = err > worst ? err : worst;
                scale = fabs(w) > scale ? fabs(w) : scale;
                if (err > 1e-5)
                    fail_msg("%s: sequence %d position %d token %d: decoded %.9g, forward %.9g", what, b, t, v, g, w);
            }
    }
    printf("# %s: %d positions x %d sequences, logits up to %.3g, worst relative difference %.3g\n", what, T, B,
           scale, worst);
}

static void random_tokens(uint64_t seed, int32_t *tokens)
{
    for (int i = 0; i < B * T; i++)
        tokens[i] = (int32_t)erase_rng_below(&seed, V);
}

static void check_model(uint32_t cut_mask, const char *what)
{
    fixture_t f = { 0 };
    setup(&f, cut_mask);
    int32_t a[B * T], b[B * T];
    static float want[B * T * V];
    random_tokens(1, a);
    random_tokens(2, b);
    forward_logits(&f, a, want);
    decode_and_compare(&f, a, want, what);
    /* position 0 again: new sequences, nothing left of the old ones */
    forward_logits(&f, b, want);
    decode_and_compare(&f, b, want, what);
    teardown(&f);
}

static void test_no_cuts(void **state)
{
    (void)state;
    check_model(0, "no cuts (head tied to wte)");
}

static void test_cuts(void **state)
{
    (void)state;
    check_model(1u << 1 | 1u << 2, "cuts at 1 and 2 (three heads)");
}

static void test_errors(void **state)
{
    (void)state;
    fixture_t f = { 0 };
    setup(&f, 0);
    const float *logits;
    assert_int_equal(erase_gpt_decode_step(f.dec, f.s, T, f.d_step, &logits), ERASE_ERR_INVALID);
    assert_string_equal(erase_error_reason(), "gpt decoder: position 9 outside the context 0..8");
    assert_int_equal(erase_gpt_decode_step(f.dec, f.s, -1, f.d_step, &logits), ERASE_ERR_INVALID);
    erase_gpt_decoder_t *d;
    assert_int_equal(erase_gpt_decoder_create(f.net, 0, &d), ERASE_ERR_INVALID);
    assert_string_equal(erase_error_reason(), "gpt decoder: batch 0 < 1");
    erase_model_config_t mlp = erase_model_config_default(ERASE_MODEL_MLP);
    erase_network_t *net;
    MUST(erase_network_create(f.dev, &mlp, 1, &net));
    assert_int_equal(erase_gpt_decoder_create(net, 1, &d), ERASE_ERR_INVALID);
    assert_string_equal(erase_error_reason(), "gpt decoder: the network is a mlp model");
    erase_network_destroy(net);
    teardown(&f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_no_cuts),
        cmocka_unit_test(test_cuts),
        cmocka_unit_test(test_errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
