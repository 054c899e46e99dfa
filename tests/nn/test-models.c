/*
 * Whole models against PyTorch: forward outputs, every loss and every
 * parameter gradient of ctr (no cuts, all cuts, cuts at 2 and 4), mlp
 * (all cuts, none) and gpt (no cuts: the LM head tied to wte; cuts at 1
 * and 2: every block a head of its own; no cuts with tie_head = false) on the weights and inputs of the reference files made
 * by tests/reference/make_reference.py, and nanochat (grouped-query
 * attention, cuts, T = 1) on those of make_nanochat_reference.py. Also: with a cut, a block's
 * gradients do not depend on later blocks (bitwise), and 100 training
 * steps are bitwise reproducible, and sizes too large to hold are an
 * error, not an overflow.
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
#include "lib/nn/train_step.h"
#include "tests/nn/h5ref.h"

#define MUST(call) assert_int_equal((call), ERASE_OK)
#define BOUND 1e-5

static erase_device_t *dev;
static erase_stream_t *stream;

/*
 * Worst |got - ref| / (|ref| + mean|ref|) over a tensor: relative error
 * with a floor at the tensor's typical magnitude, so that elements that
 * are tiny by cancellation do not dominate ("tol + |ref| eps", as llm.c).
 */
static double tensor_error(const float *got, const float *ref, size_t n)
{
    double mean = 0, worst = 0;
    for (size_t i = 0; i < n; i++)
        mean += fabs(ref[i]);
    mean = n ? mean / n : 0;
    for (size_t i = 0; i < n; i++) {
        double e = fabs((double)got[i] - ref[i]) / (fabs(ref[i]) + mean + 1e-30);
        if (!(e <= worst))
            worst = isnan(e) ? INFINITY : e;
    }
    return worst;
}

typedef struct {
    double worst;
    char where[160];
    int compared;
} tally_t;

static void tally(tally_t *t, const char *what, double e)
{
    t->compared++;
    if (!(e <= t->worst)) {
        t->worst = e;
        snprintf(t->where, sizeof t->where, "%s", what);
    }
}

static float *read_floats(hid_t f, const char *path, size_t n)
{
    float *v = malloc(n * sizeof(float) + 1);
    assert_non_null(v);
    if (h5ref_read(f, path, H5T_NATIVE_FLOAT, v, n) != 0)
        fail_msg("reference dataset %s missing or not %zu elements", path, n);
    return v;
}

static void check_reference(const char *file)
{
    hid_t f = h5ref_open(file);
    char *model_file = h5ref_attr_string(f, "model_file");
    assert_non_null(model_file);
    int batch = (int)h5ref_attr_long(f, "batch");
    erase_model_config_t cfg;
    MUST(erase_model_config_parse(model_file, file, &cfg));
    erase_network_t *net;
    MUST(erase_network_create(dev, &cfg, batch, &net));

    int nparams;
    erase_param_t *params = erase_network_params(net, &nparams);
    for (int i = 0; i < nparams; i++) {
        char path[128];
        snprintf(path, sizeof path, "/params/%s", params[i].name);
        if (h5ref_read(f, path, H5T_NATIVE_FLOAT, params[i].value, (size_t)erase_param_numel(&params[i])))
            fail_msg("%s: parameter %s missing or of another size", file, params[i].name);
    }
    erase_batch_t in = { .size = batch };
    float *dense = NULL, *label = NULL, *features = NULL;
    uint32_t *sparse = NULL;
    int32_t *classes = NULL, *tokens = NULL, *targets = NULL;
    if (cfg.kind == ERASE_MODEL_GPT || cfg.kind == ERASE_MODEL_NANOCHAT) {
        int T = cfg.kind == ERASE_MODEL_GPT ? cfg.gpt.context : cfg.nanochat.context;
        size_t nt = (size_t)batch * (size_t)T;
        MUST(erase_malloc(dev, sizeof(int32_t) * nt, (void **)&tokens));
        MUST(erase_malloc(dev, sizeof(int32_t) * nt, (void **)&targets));
        assert_int_equal(h5ref_read(f, "/input/tokens", H5T_NATIVE_INT32, tokens, nt), 0);
        assert_int_equal(h5ref_read(f, "/input/targets", H5T_NATIVE_INT32, targets, nt), 0);
        in.tokens = tokens;
        in.targets = targets;
    } else if (erase_model_config_has_tables(&cfg)) {
        MUST(erase_malloc(dev, sizeof(float) * batch * ERASE_CTR_DENSE, (void **)&dense));
        MUST(erase_malloc(dev, sizeof(uint32_t) * batch * ERASE_CTR_FIELDS, (void **)&sparse));
        MUST(erase_malloc(dev, sizeof(float) * batch, (void **)&label));
        assert_int_equal(h5ref_read(f, "/input/dense", H5T_NATIVE_FLOAT, dense, (size_t)batch * ERASE_CTR_DENSE), 0);
        assert_int_equal(h5ref_read(f, "/input/sparse", H5T_NATIVE_UINT32, sparse, (size_t)batch * ERASE_CTR_FIELDS), 0);
        assert_int_equal(h5ref_read(f, "/input/label", H5T_NATIVE_FLOAT, label, (size_t)batch), 0);
        in.dense = dense;
        in.sparse = sparse;
        in.label = label;
    } else {
        MUST(erase_malloc(dev, sizeof(float) * batch * cfg.mlp.inputs, (void **)&features));
        MUST(erase_malloc(dev, sizeof(int32_t) * batch, (void **)&classes));
        assert_int_equal(h5ref_read(f, "/input/features", H5T_NATIVE_FLOAT, features, (size_t)batch * cfg.mlp.inputs), 0);
        assert_int_equal(h5ref_read(f, "/input/label", H5T_NATIVE_INT32, classes, (size_t)batch), 0);
        in.features = features;
        in.classes = classes;
    }

    MUST(erase_train_step_serial(net, NULL, stream, &in));
    MUST(erase_stream_synchronize(stream));

    tally_t t = { 0 };
    double total = 0;
    int blocks = erase_network_blocks(net);
    const float *losses = erase_network_losses(net);
    for (int b = 0; b < blocks; b++) {
        const char *name = erase_network_block_name(net, b);
        char path[128];
        int w;
        const float *body = erase_network_body_output(net, b, &w);
        snprintf(path, sizeof path, "/output/%s/body", name);
        float *ref = read_floats(f, path, (size_t)batch * w);
        tally(&t, path, tensor_error(body, ref, (size_t)batch * w));
        free(ref);
        const float *head = erase_network_head_output(net, b, &w);
        snprintf(path, sizeof path, "/output/%s/logits", name);
        if (w == 0) { /* a block without a head (gpt): no logits, loss 0 */
            assert_int_equal(h5ref_count(f, path), -1);
            assert_true(losses[b] == 0.0f);
        } else {
            ref = read_floats(f, path, (size_t)batch * w);
            tally(&t, path, tensor_error(head, ref, (size_t)batch * w));
            free(ref);
        }
        snprintf(path, sizeof path, "/output/%s/loss", name);
        ref = read_floats(f, path, 1);
        tally(&t, path, tensor_error(&losses[b], ref, 1));
        free(ref);
        total += (b == blocks - 1 ? 1.0 : cfg.local_loss_weight) * losses[b];
    }
    float total_f = (float)total, *ref_total = read_floats(f, "/output/total_loss", 1);
    tally(&t, "/output/total_loss", tensor_error(&total_f, ref_total, 1));
    free(ref_total);

    for (int i = 0; i < nparams; i++) {
        erase_param_t *p = &params[i];
        size_t n = (size_t)erase_param_numel(p);
        char path[128];
        snprintf(path, sizeof path, "/grad/%s", p->name);
        float *ref = read_floats(f, path, n), *got = p->grad;
        float *dense_grad = NULL;
        if (p->kind == ERASE_PARAM_EMBEDDING) { /* sparse rows -> dense table gradient */
            dense_grad = calloc(n, sizeof(float));
            for (int r = 0; r < *p->grad_count; r++)
                memcpy(dense_grad + (size_t)p->grad_rows[r] * p->cols,
                       p->grad_values + (size_t)r * p->cols, sizeof(float) * (size_t)p->cols);
            got = dense_grad;
        }
        tally(&t, path, tensor_error(got, ref, n));
        free(dense_grad);
        free(ref);
    }
    /* the forward of prediction leaves the same network output, bitwise */
    int ow;
    const float *out = erase_network_head_output(net, blocks - 1, &ow);
    float *trained = malloc(sizeof(float) * (size_t)batch * (size_t)ow);
    assert_non_null(trained);
    memcpy(trained, out, sizeof(float) * (size_t)batch * (size_t)ow);
    memset((void *)out, 0, sizeof(float) * (size_t)batch * (size_t)ow);
    MUST(erase_network_forward_predict(net, stream, &in));
    MUST(erase_stream_synchronize(stream));
    assert_memory_equal(out, trained, sizeof(float) * (size_t)batch * (size_t)ow);
    free(trained);
    print_message("%s: erase_network_forward_predict's output equals the training forward's, bitwise\n", file);
    print_message("%s: %d tensors (outputs, losses, %d parameter gradients) vs PyTorch: "
                  "worst relative error %.3g at %s (bound %.0e)\n",
                  file, t.compared, nparams, t.worst, t.where, BOUND);
    assert_true(t.worst <= BOUND);

    erase_free(dev, dense);
    erase_free(dev, sparse);
    erase_free(dev, label);
    erase_free(dev, features);
    erase_free(dev, classes);
    erase_free(dev, tokens);
    erase_free(dev, targets);
    erase_network_destroy(net);
    free(model_file);
    H5Fclose(f);
}

static void test_ctr_cuts_none(void **state) { check_reference("ctr_cuts_none.h5"); }
static void test_ctr_cuts_all(void **state) { check_reference("ctr_cuts_all.h5"); }
static void test_ctr_cuts_2_4(void **state) { check_reference("ctr_cuts_2_4.h5"); }
static void test_mlp_cuts_all(void **state) { check_reference("mlp_cuts_all.h5"); }
static void test_mlp_cuts_none(void **state) { check_reference("mlp_cuts_none.h5"); }
static void test_gpt_cuts_none(void **state) { check_reference("gpt_cuts_none.h5"); }
static void test_gpt_cuts_1_2(void **state) { check_reference("gpt_cuts_1_2.h5"); }
/* nanochat (tests/reference/make_nanochat_reference.py): 4 query heads on
 * 2 key/value heads without cuts; multi-head with every block its own
 * head; one position (T = 1) on 1 key/value head with a cut at 2. */
static void test_nanochat_gqa(void **state) { check_reference("nanochat_gqa.h5"); }
static void test_nanochat_cuts_1_2(void **state) { check_reference("nanochat_cuts_1_2.h5"); }
static void test_nanochat_t1(void **state) { check_reference("nanochat_t1.h5"); }
/* dcn (tests/reference/make_dcn_reference.py, issue 36): low rank 3 without
 * cuts (TorchRec's DLRM_DCN) and with every boundary cut; full rank with
 * cuts at 2 (between cross layers: x0 detached too) and 5. */
static void test_dcn_cuts_none(void **state) { check_reference("dcn_cuts_none.h5"); }
static void test_dcn_cuts_all(void **state) { check_reference("dcn_cuts_all.h5"); }
static void test_dcn_full_cuts_2_5(void **state) { check_reference("dcn_full_cuts_2_5.h5"); }

/* tie_head = false without cuts: the last block has its own
 * h2/lm_head/weight, and h0/wte's gradient is the embedding's alone (a head
 * still writing into wte, or one the key left tied, differs from PyTorch's
 * by the head's gradient, about as large as wte's own). */
static void test_gpt_untied(void **state)
{
    erase_model_config_t cfg;
    int tied = -1;
    MUST(erase_model_config_parse("model = \"gpt\"; gpt: { layers = 3; heads = 4; width = 32; context = 8; "
                                  "vocab = 50; tie_head = false; };", "untied", &cfg));
    MUST(erase_model_config_tied_head(&cfg, &tied));
    assert_int_equal(tied, 0);
    erase_network_t *net;
    MUST(erase_network_create(dev, &cfg, 3, &net));
    erase_gpt_layer_t last, first;
    MUST(erase_gpt_layer(net, 2, &last));
    MUST(erase_gpt_layer(net, 0, &first));
    assert_non_null(last.head_w);
    assert_ptr_not_equal(last.head_w, first.wte);
    assert_string_equal(last.head_w->name, "h2/lm_head/weight");
    erase_network_destroy(net);
    check_reference("gpt_untied.h5");
}

/* A small gpt: 3 layers of width 16, 2 heads, context 6, vocab 20. */
static erase_model_config_t small_gpt(uint32_t cut_mask)
{
    erase_model_config_t c = erase_model_config_default(ERASE_MODEL_GPT);
    c.gpt.layers = 3;
    c.gpt.heads = 2;
    c.gpt.width = 16;
    c.gpt.context = 6;
    c.gpt.vocab = 20;
    c.cut_mask = cut_mask;
    return c;
}

/* Decoding positions 0..T-1 one at a time against the key/value caches
 * (erase_network_decoder_*) gives the logits of the prediction forward
 * over the whole window; position T is refused. */
static void decode_matches(const erase_model_config_t *cfg, const char *what)
{
    enum { BATCH = 3 };
    int T = *erase_model_config_context(cfg), V = erase_model_config_vocab(cfg);
    erase_network_t *net;
    erase_batch_t batch;
    erase_network_decoder_t *dec;
    MUST(erase_network_create(dev, cfg, BATCH, &net));
    /* every parameter random in +-1/sqrt(cols) (nanochat starts with zero
     * projections and heads, whose logits would all be 0) */
    int nparams;
    erase_param_t *params = erase_network_params(net, &nparams);
    uint64_t rng = 17;
    for (int i = 0; i < nparams; i++) {
        float a = 1.0f / sqrtf((float)params[i].cols);
        for (int64_t j = 0; j < erase_param_numel(&params[i]); j++)
            params[i].value[j] = erase_rng_uniform(&rng, -a, a);
    }
    MUST(erase_batch_random(net, BATCH, 5, &batch));
    MUST(erase_network_forward_predict(net, stream, &batch));
    MUST(erase_stream_synchronize(stream));
    int w;
    const float *full = erase_network_head_output(net, erase_network_blocks(net) - 1, &w);
    assert_int_equal(w, T * V);
    int32_t *column;
    MUST(erase_malloc(dev, sizeof(int32_t) * BATCH, (void **)&column));
    MUST(erase_network_decoder_create(net, BATCH, &dec));
    double worst = 0;
    for (int t = 0; t < T; t++) {
        for (int b = 0; b < BATCH; b++)
            column[b] = batch.tokens[b * T + t];
        const float *logits;
        MUST(erase_network_decode_step(dec, stream, t, column, &logits));
        MUST(erase_stream_synchronize(stream));
        for (int b = 0; b < BATCH; b++) {
            double e = tensor_error(logits + (size_t)b * V, full + ((size_t)b * T + t) * V, (size_t)V);
            worst = e > worst ? e : worst;
        }
    }
    double spread = 0; /* the logits are not all alike (a zero head would make the check empty) */
    for (size_t i = 1; i < (size_t)BATCH * T * V; i++)
        spread = fmax(spread, fabs(full[i] - full[0]));
    print_message("%s: decoding %d positions of %d sequences with the key/value caches vs the "
                  "forward over the window: worst relative error %.3g (bound %.0e), logits spread %.3g\n", what, T,
                  BATCH, worst, BOUND, spread);
    assert_true(spread > 0.1);
    assert_true(worst <= BOUND);
    const float *logits;
    char want[96];
    snprintf(want, sizeof want, "%s decoder: position %d outside the context 0..%d", erase_model_config_name(cfg), T,
             T - 1);
    assert_int_equal(erase_network_decode_step(dec, stream, T, column, &logits), ERASE_ERR_INVALID);
    assert_string_equal(erase_error_reason(), want);
    erase_network_decoder_destroy(dec);
    erase_free(dev, column);
    erase_batch_free_random(net, &batch);
    erase_network_destroy(net);
}

static void gpt_decode_matches(uint32_t cut_mask)
{
    erase_model_config_t cfg = small_gpt(cut_mask);
    char what[64];
    snprintf(what, sizeof what, "gpt (cuts 0x%x)", (unsigned)cut_mask);
    decode_matches(&cfg, what);
}

/* FLOPs per token as issue 15's anchors count them (6N + 12 L C T, N
 * without the position table): S (4 layers, width 128, context 64,
 * vocab 256) 5,349,888 = 5.35 M; M (6 layers, 384, 256) 71,553,024 =
 * 71.55 M; tied heads. An untied model counts its extra heads. */
static void check_flops(int layers, int width, int heads, int context, uint32_t cut_mask, double per_token)
{
    erase_model_config_t cfg = erase_model_config_default(ERASE_MODEL_GPT);
    cfg.gpt.layers = layers;
    cfg.gpt.width = width;
    cfg.gpt.heads = heads;
    cfg.gpt.context = context;
    cfg.gpt.vocab = 256;
    cfg.cut_mask = cut_mask;
    erase_network_t *net;
    assert_int_equal(erase_network_create(dev, &cfg, 1, &net), ERASE_OK);
    double got = erase_network_flops_per_sample(net);
    print_message("gpt %d layers, width %d, context %d, cuts 0x%x: %.0f FLOPs per token\n", layers, width, context,
                  (unsigned)cut_mask, got / context);
    assert_true(got == per_token * context);
    erase_network_destroy(net);
}

static void test_gpt_flops(void **state)
{
    (void)state;
    check_flops(4, 128, 4, 64, 0, 5349888.0);
    check_flops(6, 384, 6, 256, 0, 71553024.0);
    /* a cut at 2: the last head's own [256, 128] weight, the local head's weight and LayerNorm */
    check_flops(4, 128, 4, 64, 1u << 2, 5349888.0 + 6.0 * (2 * 256 * 128 + 2 * 128));
    /* nanochat's estimate_flops (no wte): 2 layers of width 32, 2 kv heads of 8, vocab 50, context 8:
     * N = 2 x (1024 + 512 + 512 + 1024 + 4096 + 4096) + 1600 = 24128; 6N + 12 x 2 x 32 x 8 = 150912 */
    erase_model_config_t nc;
    MUST(erase_model_config_parse("model = \"nanochat\"; nanochat: { layers = 2; width = 32; heads = 4; kv_heads = 2;"
                                  " context = 8; vocab = 50; };", "flops", &nc));
    erase_network_t *net;
    assert_int_equal(erase_network_create(dev, &nc, 1, &net), ERASE_OK);
    assert_true(erase_network_flops_per_sample(net) == 150912.0 * 8);
    erase_network_destroy(net);
    erase_model_config_t mlp = erase_model_config_default(ERASE_MODEL_MLP);
    assert_int_equal(erase_network_create(dev, &mlp, 1, &net), ERASE_OK);
    assert_true(erase_network_flops_per_sample(net) == 0); /* not counted */
    erase_network_destroy(net);
}

static void test_gpt_decode(void **state)
{
    gpt_decode_matches(0);                       /* the head tied to wte */
    gpt_decode_matches((1u << 1) | (1u << 2));   /* its own head */
}

/* nanochat (issue 34): the rotary angle of each decoded position, the
 * grouped key/value caches, the softcapped head; with cuts at 1 and 2 the
 * last block's head. */
static void test_nanochat_decode(void **state)
{
    (void)state;
    erase_model_config_t c;
    MUST(erase_model_config_parse("model = \"nanochat\"; nanochat: { layers = 3; width = 32; heads = 4; kv_heads = 2;"
                                  " context = 9; vocab = 20; softcap = 3; };", "gqa", &c));
    decode_matches(&c, "nanochat (4 heads on 2 kv heads)");
    MUST(erase_model_config_parse("model = \"nanochat\"; nanochat: { layers = 3; width = 24; heads = 2; kv_heads = 1;"
                                  " context = 7; vocab = 20; cuts = [1, 2]; };", "mqa", &c));
    decode_matches(&c, "nanochat (1 kv head, cuts 1, 2)");
    erase_model_config_t mlp = erase_model_config_default(ERASE_MODEL_MLP);
    erase_network_t *net;
    erase_network_decoder_t *dec;
    MUST(erase_network_create(dev, &mlp, 1, &net));
    assert_int_equal(erase_network_decoder_create(net, 1, &dec), ERASE_ERR_UNSUPPORTED);
    assert_string_equal(erase_error_reason(), "network: a mlp model has no key/value-cache decoder");
    erase_network_destroy(net);
}

/* A small ctr for the tests below. */
static erase_model_config_t small_ctr(uint32_t cut_mask)
{
    erase_model_config_t c = erase_model_config_default(ERASE_MODEL_CTR);
    c.ctr.embedding_dim = 4;
    for (int f = 0; f < ERASE_CTR_FIELDS; f++)
        c.ctr.table_rows[f] = 50 + (uint32_t)f;
    c.ctr.bottom_layers = 2;
    c.ctr.bottom_mlp[0] = 8;
    c.ctr.bottom_mlp[1] = 4;
    c.ctr.subarch_width = 16;
    c.cut_mask = cut_mask;
    return c;
}

/* Gradients of blocks 0 and 1 after changing every later block's weights:
 * bitwise unchanged when boundary 2 is a cut, changed when attached. */
static int early_grads_move(uint32_t cut_mask)
{
    erase_model_config_t cfg = small_ctr(cut_mask);
    erase_network_t *net;
    erase_batch_t batch;
    MUST(erase_network_create(dev, &cfg, 32, &net));
    MUST(erase_batch_random(net, 32, 11, &batch));
    MUST(erase_train_step_serial(net, NULL, stream, &batch));
    MUST(erase_stream_synchronize(stream));
    int first, count, n;
    erase_param_t *params = erase_network_params(net, &n);
    erase_network_block_params(net, 2, &first, &count);
    int early = first; /* params of blocks 0 and 1 come first */
    float **saved = calloc((size_t)early, sizeof *saved);
    for (int i = 0; i < early; i++)
        if (params[i].grad) {
            size_t bytes = sizeof(float) * (size_t)erase_param_numel(&params[i]);
            saved[i] = malloc(bytes);
            memcpy(saved[i], params[i].grad, bytes);
        }
    uint64_t rng = 99;
    for (int i = early; i < n; i++)
        for (int64_t k = 0; k < erase_param_numel(&params[i]); k++)
            params[i].value[k] += erase_rng_uniform(&rng, -0.5f, 0.5f);
    MUST(erase_train_step_serial(net, NULL, stream, &batch));
    MUST(erase_stream_synchronize(stream));
    int moved = 0;
    for (int i = 0; i < early; i++)
        if (saved[i]) {
            moved += memcmp(saved[i], params[i].grad, sizeof(float) * (size_t)erase_param_numel(&params[i])) != 0;
            free(saved[i]);
        }
    free(saved);
    erase_batch_free_random(net, &batch);
    erase_network_destroy(net);
    return moved;
}

static void test_cut_isolates_gradients(void **state)
{
    int with_cut = early_grads_move(1u << 2);
    int attached = early_grads_move(0);
    print_message("changing blocks 2..6: %d dense gradients of blocks 0-1 moved with boundary 2 cut, "
                  "%d moved with no cuts\n", with_cut, attached);
    assert_int_equal(with_cut, 0);
    assert_true(attached > 0);
}

/* Parameters after 100 optimizer steps on fixed random batches. */
static float *train_100(erase_model_config_t cfg, erase_optim_kind_t dense, size_t *total)
{
    erase_network_t *net;
    erase_optimizer_t *opt;
    erase_batch_t batch[4];
    erase_optim_config_t ocfg = erase_optim_config_default();
    ocfg.dense = dense;
    ocfg.schedule.warmup_steps = 10;
    ocfg.schedule.decay = ERASE_LR_COSINE;
    ocfg.schedule.total_steps = 100;
    MUST(erase_network_create(dev, &cfg, 64, &net));
    MUST(erase_optimizer_create(net, &ocfg, &opt));
    for (int i = 0; i < 4; i++)
        MUST(erase_batch_random(net, 64, 100 + (uint64_t)i, &batch[i]));
    for (int step = 0; step < 100; step++)
        MUST(erase_train_step_serial(net, opt, stream, &batch[step % 4]));
    MUST(erase_stream_synchronize(stream));
    assert_int_equal(erase_optimizer_clock(opt)->step, 100);
    *total = erase_network_copy_params(net, NULL);
    float *out = malloc(*total * sizeof(float));
    erase_network_copy_params(net, out);
    for (int i = 0; i < 4; i++)
        erase_batch_free_random(net, &batch[i]);
    erase_optimizer_destroy(opt);
    erase_network_destroy(net);
    return out;
}

static void deterministic(const char *what, erase_model_config_t cfg, erase_optim_kind_t dense)
{
    size_t n1, n2;
    float *a = train_100(cfg, dense, &n1), *b = train_100(cfg, dense, &n2);
    assert_int_equal(n1, n2);
    size_t differ = 0;
    for (size_t i = 0; i < n1; i++)
        differ += memcmp(&a[i], &b[i], sizeof(float)) != 0;
    print_message("%s, 100 steps run twice: %zu of %zu parameters differ\n", what, differ, n1);
    assert_int_equal(differ, 0);
    free(a);
    free(b);
}

static void test_deterministic_ctr(void **state)
{
    deterministic("ctr (six cuts, AdamW + row-wise Adagrad)", small_ctr(0x7e), ERASE_OPTIM_ADAMW);
}

static void test_deterministic_mlp(void **state)
{
    erase_model_config_t c = erase_model_config_default(ERASE_MODEL_MLP);
    c.mlp.inputs = 20;
    c.mlp.hidden[0] = c.mlp.hidden[1] = c.mlp.hidden[2] = 32;
    c.mlp.classes = 4;
    deterministic("mlp (three blocks, SGD with momentum)", c, ERASE_OPTIM_SGD);
}

/* A network placed over 3 ranks (erase_network_create_placed): each rank
 * holds, of every table, exactly the rows its placement gives (row-wise
 * parts; table-wise: all or none), with the values the replicated network
 * has at those rows (row i's initial values do not depend on where it is);
 * the dense parameters whole; a plan that does not fit refused. */
static void test_placed(void **state)
{
    erase_model_config_t cfg = small_ctr(0x7e);
    erase_network_t *whole, *part;
    MUST(erase_network_create(dev, &cfg, 4, &whole));
    int np, tables = ERASE_CTR_FIELDS;
    erase_param_t *wp = erase_network_params(whole, &np);
    int64_t rows[ERASE_CTR_FIELDS];
    for (int t = 0; t < tables; t++)
        rows[t] = cfg.ctr.table_rows[t];
    for (int kind = ERASE_SHARD_TABLE; kind <= ERASE_SHARD_ROW; kind++) {
        erase_shard_t plan[ERASE_CTR_FIELDS];
        MUST(erase_shard_plan((erase_shard_kind_t)kind, tables, rows, NULL, 20, 3, 0, plan));
        int64_t held[ERASE_CTR_FIELDS] = { 0 };
        for (int r = 0; r < 3; r++) {
            MUST(erase_network_create_placed(dev, &cfg, 4, plan, tables, r, &part));
            int n;
            erase_param_t *pp = erase_network_params(part, &n);
            assert_int_equal(n, np);
            for (int i = 0, t = 0; i < n; i++) {
                float *a = malloc(sizeof(float) * (size_t)erase_param_numel(&wp[i]));
                float *b = malloc(sizeof(float) * (size_t)(erase_param_numel(&pp[i]) + 1));
                MUST(erase_network_read_param(whole, &wp[i], a));
                MUST(erase_network_read_param(part, &pp[i], b));
                int64_t row0 = 0, count = wp[i].rows;
                if (wp[i].kind == ERASE_PARAM_EMBEDDING) {
                    row0 = erase_shard_first_row(&plan[t], r);
                    count = erase_shard_rows_on(&plan[t], r);
                    held[t++] += count;
                }
                assert_int_equal(pp[i].row0, row0);
                assert_int_equal(pp[i].held, count);
                assert_int_equal(pp[i].rows, wp[i].rows);
                assert_memory_equal(b, a + row0 * wp[i].cols, sizeof(float) * (size_t)(count * wp[i].cols));
                free(a);
                free(b);
            }
            erase_network_destroy(part);
        }
        for (int t = 0; t < tables; t++) /* every row held once */
            assert_int_equal(held[t], rows[t]);
    }
    erase_shard_t plan[3];
    MUST(erase_shard_plan(ERASE_SHARD_ROW, 3, rows, NULL, 20, 2, 0, plan));
    part = NULL;
    assert_int_equal(erase_network_create_placed(dev, &cfg, 4, plan, 3, 0, &part), ERASE_ERR_INVALID);
    assert_string_equal(erase_error_reason(), "network: a placement of 3 tables for rank 0 does not fit table "
                                              "input/emb/3 (53 rows)");
    assert_null(part);
    erase_network_destroy(whole);
}

/* A width past what the code holds is an error saying what is too large,
 * not a signed overflow (UBSan: embedding_dim + 351). */
static void test_too_large(void **state)
{
    erase_model_config_t c = erase_model_config_default(ERASE_MODEL_CTR);
    c.ctr.embedding_dim = 2147483647;
    c.ctr.bottom_layers = 1;
    c.ctr.bottom_mlp[0] = 2147483647;
    erase_network_t *net = NULL;
    assert_int_equal(erase_network_create(dev, &c, 1, &net), ERASE_ERR_INVALID);
    printf("# embedding_dim 2147483647: %s\n", erase_error_reason());
    assert_string_equal(erase_error_reason(), "ctr: the interaction's width, embedding_dim 2147483647 + 351 "
                                              "pairwise dots, is more than 2147483647");
    assert_null(net);

    /* gpt: every count its ops take as an int is checked */
    erase_model_config_t g = erase_model_config_default(ERASE_MODEL_GPT);
    g.gpt.context = 65536;
    g.gpt.vocab = 65536;
    g.gpt.width = 8;
    g.gpt.heads = 2;
    assert_int_equal(erase_network_create(dev, &g, 1, &net), ERASE_ERR_INVALID);
    printf("# gpt context 65536, vocab 65536: %s\n", erase_error_reason());
    assert_string_equal(erase_error_reason(), "gpt: a sample's logits (context x vocab), 65536 x 65536, "
                                              "is more than 2147483647");
    g = erase_model_config_default(ERASE_MODEL_GPT);
    assert_int_equal(erase_network_create(dev, &g, 8388609, &net), ERASE_ERR_INVALID);
    printf("# gpt max batch 8388609 of context 256: %s\n", erase_error_reason());
    assert_string_equal(erase_error_reason(), "gpt: the rows of a batch (max batch x context), 8388609 x 256, "
                                              "is more than 2147483647");
    assert_null(net);
}

static int setup(void **state)
{
    erase_device_options_t o = erase_device_options_default();
    if (erase_device_open(&o, &dev) != ERASE_OK || erase_stream_create(dev, &stream) != ERASE_OK) {
        fprintf(stderr, "cannot open the CPU device: %s\n", erase_error_message());
        return -1;
    }
    return 0;
}

static int teardown(void **state)
{
    erase_stream_destroy(stream);
    erase_device_close(dev);
    return 0;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ctr_cuts_none),
        cmocka_unit_test(test_ctr_cuts_all),
        cmocka_unit_test(test_ctr_cuts_2_4),
        cmocka_unit_test(test_mlp_cuts_all),
        cmocka_unit_test(test_mlp_cuts_none),
        cmocka_unit_test(test_gpt_cuts_none),
        cmocka_unit_test(test_gpt_cuts_1_2),
        cmocka_unit_test(test_gpt_untied),
        cmocka_unit_test(test_nanochat_gqa),
        cmocka_unit_test(test_nanochat_cuts_1_2),
        cmocka_unit_test(test_nanochat_t1),
        cmocka_unit_test(test_dcn_cuts_none),
        cmocka_unit_test(test_dcn_cuts_all),
        cmocka_unit_test(test_dcn_full_cuts_2_5),
        cmocka_unit_test(test_gpt_decode),
        cmocka_unit_test(test_nanochat_decode),
        cmocka_unit_test(test_gpt_flops),
        cmocka_unit_test(test_cut_isolates_gradients),
        cmocka_unit_test(test_deterministic_ctr),
        cmocka_unit_test(test_deterministic_mlp),
        cmocka_unit_test(test_too_large),
        cmocka_unit_test(test_placed),
    };
    return cmocka_run_group_tests_name("models against PyTorch", tests, setup, teardown);
}
