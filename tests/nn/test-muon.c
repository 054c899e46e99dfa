/*
 * Muon (--optimizer muon, lib/nn/optim.h) against PyTorch: three steps of
 * an mlp's optimizer from given gradients, compared with
 * tests/data/reference/muon.h5 (tests/reference/make_muon_reference.py:
 * nanochat's Muon in single precision for the hidden matrices, one wide
 * [6, 10] and one tall [12, 6], torch.optim.AdamW for the heads and
 * biases, each group at its own rate; the momentum warmed up over 2 steps):
 * every parameter and momentum buffer within 1e-5. Also: the roles the models declare, and the
 * refusal of a network without a hidden matrix.
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

#include "lib/nn/optim.h"
#include "lib/ops/ops.h"
#include "tests/nn/h5ref.h"

#define MUST(call) assert_int_equal((call), ERASE_OK)
#define TOLERANCE 1e-5

static erase_device_t *dev;
static erase_stream_t *stream;

/* Largest |got - ref| over n floats of dataset `path`. */
static double worst_error(hid_t f, const char *path, const float *got, size_t n)
{
    float *ref = malloc(n * sizeof *ref);
    assert_non_null(ref);
    if (h5ref_read(f, path, H5T_NATIVE_FLOAT, ref, n) != 0)
        fail_msg("reference dataset %s missing or not %zu elements", path, n);
    double worst = 0;
    for (size_t i = 0; i < n; i++) {
        double e = fabs((double)got[i] - ref[i]);
        worst = e > worst || isnan(e) ? e : worst;
    }
    free(ref);
    return worst;
}

static void test_parity(void **state)
{
    (void)state;
    hid_t f = h5ref_open("muon.h5");
    char *model_file = h5ref_attr_string(f, "model_file");
    assert_non_null(model_file);
    erase_model_config_t cfg;
    MUST(erase_model_config_parse(model_file, "muon.h5", &cfg));
    erase_network_t *net;
    MUST(erase_network_create(dev, &cfg, 1, &net));
    int n;
    erase_param_t *params = erase_network_params(net, &n);
    for (int i = 0; i < n; i++) {
        char path[160];
        snprintf(path, sizeof path, "/params/%s", params[i].name);
        if (h5ref_read(f, path, H5T_NATIVE_FLOAT, params[i].value, (size_t)erase_param_numel(&params[i])))
            fail_msg("parameter %s missing or of another size", params[i].name);
    }
    erase_optim_config_t oc = erase_optim_config_default();
    oc.dense = ERASE_OPTIM_MUON;
    oc.schedule.base = h5ref_attr_double(f, "lr");
    oc.schedule.decay = ERASE_LR_CONSTANT;
    oc.muon_momentum = (float)h5ref_attr_double(f, "momentum");
    oc.muon_momentum_warmup = h5ref_attr_long(f, "momentum_warmup");
    assert_int_equal(oc.muon_momentum_warmup, 2); /* momenta 0.85, 0.90, 0.95 */
    oc.unembedding_lr = h5ref_attr_double(f, "unembedding_lr");
    oc.vector_lr = h5ref_attr_double(f, "vector_lr");
    oc.beta1 = (float)h5ref_attr_double(f, "beta1");
    oc.beta2 = (float)h5ref_attr_double(f, "beta2");
    oc.eps = (float)h5ref_attr_double(f, "eps");
    erase_optimizer_t *opt;
    MUST(erase_optimizer_create(net, &oc, &opt));
    long steps = h5ref_attr_long(f, "steps");
    assert_int_equal(steps, 3);
    for (long step = 1; step <= steps; step++) {
        for (int i = 0; i < n; i++) {
            char path[160];
            snprintf(path, sizeof path, "/grad/%ld/%s", step, params[i].name);
            if (h5ref_read(f, path, H5T_NATIVE_FLOAT, params[i].grad, (size_t)erase_param_numel(&params[i])))
                fail_msg("gradient %s missing or of another size", path);
        }
        MUST(erase_optimizer_begin_step(opt, stream));
        for (int b = 0; b < erase_network_blocks(net); b++)
            MUST(erase_optimizer_update_block(opt, b, stream));
        MUST(erase_stream_synchronize(stream));
    }
    int muon = 0;
    for (int i = 0; i < n; i++) {
        erase_param_t *p = &params[i];
        char path[160];
        snprintf(path, sizeof path, "/after/%s", p->name);
        double e = worst_error(f, path, p->value, (size_t)erase_param_numel(p));
        print_message("%-22s %-7s max |erase - torch| %.2e\n", p->name,
                      erase_optim_muon_updates(p) ? "muon" : "adamw", e);
        if (!(e <= TOLERANCE))
            fail_msg("%s after %ld steps: max error %g above %g", p->name, steps, e, TOLERANCE);
        if (erase_optim_muon_updates(p)) {
            muon++;
            snprintf(path, sizeof path, "/momentum/%s", p->name);
            e = worst_error(f, path, p->state[0], (size_t)erase_param_numel(p));
            if (!(e <= TOLERANCE))
                fail_msg("%s's momentum buffer: max error %g above %g", p->name, e, TOLERANCE);
            assert_null(p->state[1]);
        }
    }
    assert_int_equal(muon, 2); /* the two hidden matrices, wide and tall */
    erase_optimizer_destroy(opt);
    erase_network_destroy(net);
    free(model_file);
    H5Fclose(f);
}

/* nanochat's scripts/base_train.py get_muon_momentum, transcribed (it
 * 0-based, 300 steps from 0.85 to 0.95). */
static double nanochat_muon_momentum(int64_t it)
{
    double frac = it / 300.0 < 1 ? it / 300.0 : 1;
    return (1 - frac) * 0.85 + frac * 0.95;
}

/* The momentum warm-up (--muon-momentum-warmup) against nanochat's at
 * every step 1..400, and none without it. */
static void test_momentum_warmup(void **state)
{
    (void)state;
    for (int64_t step = 1; step <= 400; step++) {
        double got = erase_muon_momentum_at(0.95f, 300, step), want = nanochat_muon_momentum(step - 1);
        if (!(fabs(got - want) <= 1e-7))
            fail_msg("step %lld: momentum %.9g, nanochat's %.9g", (long long)step, got, want);
        assert_true(erase_muon_momentum_at(0.9f, 0, step) == 0.9f);
    }
    assert_true(erase_muon_momentum_at(0.95f, 300, 1) == 0.85f && erase_muon_momentum_at(0.95f, 300, 301) == 0.95f);
}

/* The roles gpt declares: wte and wpe embeddings, the untied lm_head a
 * head, c_attn / c_proj / c_fc hidden, LayerNorm gains and biases 1-D;
 * Muon updates exactly the hidden matrices. */
static void test_gpt_roles(void **state)
{
    (void)state;
    erase_model_config_t cfg;
    MUST(erase_model_config_parse("model = \"gpt\"; gpt: { layers = 2; heads = 2; width = 8; context = 4; "
                                  "vocab = 11; cuts = [1]; };", "roles", &cfg));
    erase_network_t *net;
    MUST(erase_network_create(dev, &cfg, 1, &net));
    int n, hidden = 0, heads = 0;
    erase_param_t *p = erase_network_params(net, &n);
    for (int i = 0; i < n; i++) {
        const char *leaf = strrchr(p[i].name, '/');
        if (!strcmp(p[i].name, "h0/wte") || !strcmp(p[i].name, "h0/wpe"))
            assert_int_equal(p[i].role, ERASE_ROLE_EMBEDDING);
        else if (strstr(p[i].name, "lm_head"))
            assert_int_equal(p[i].role, ERASE_ROLE_HEAD), heads++;
        else if (!strcmp(leaf, "/weight") && p[i].ndim == 2)
            assert_int_equal(p[i].role, ERASE_ROLE_HIDDEN);
        else
            assert_int_equal(p[i].role, ERASE_ROLE_VECTOR);
        hidden += erase_optim_muon_updates(&p[i]);
    }
    assert_int_equal(hidden, 2 * 4);
    assert_int_equal(heads, 2); /* a local head at the cut and the last */
    erase_network_destroy(net);
}

/* A network whose matrices are all embeddings or heads: Muon refused in
 * one line. */
static void test_no_hidden_matrix(void **state)
{
    (void)state;
    erase_model_config_t cfg;
    MUST(erase_model_config_parse("model = \"mlp\"; mlp: { inputs = 3; hidden = [4]; classes = 2; };", "flat",
                                  &cfg));
    erase_network_t *net;
    MUST(erase_network_create(dev, &cfg, 1, &net));
    int n;
    erase_param_t *p = erase_network_params(net, &n);
    for (int i = 0; i < n; i++)
        if (p[i].role == ERASE_ROLE_HIDDEN)
            p[i].role = ERASE_ROLE_EMBEDDING; /* as a model without hidden layers would declare */
    erase_optim_config_t oc = erase_optim_config_default();
    oc.dense = ERASE_OPTIM_MUON;
    erase_optimizer_t *opt = NULL;
    assert_int_equal(erase_optimizer_create(net, &oc, &opt), ERASE_ERR_INVALID);
    assert_string_equal(erase_error_reason(), "optimizer muon: the model has no hidden layer's weight matrix for "
                                              "Muon (embeddings, heads and 1-d parameters take AdamW): use adamw "
                                              "or sgd");
    assert_null(opt);
    erase_error_clear();
    erase_network_destroy(net);
}

static int setup(void **state)
{
    (void)state;
    erase_device_options_t o = erase_device_options_default();
    if (erase_device_open(&o, &dev) != ERASE_OK || erase_stream_create(dev, &stream) != ERASE_OK)
        return -1;
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    erase_stream_destroy(stream);
    erase_device_close(dev);
    return 0;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parity),
        cmocka_unit_test(test_gpt_roles),
        cmocka_unit_test(test_momentum_warmup),
        cmocka_unit_test(test_no_hidden_matrix),
    };
    return cmocka_run_group_tests_name("muon", tests, setup, teardown);
}
