/*
 * Optimizer ops and the learning-rate schedule against independent
 * double-precision implementations of their published update rules
 * (PyTorch's SGD and AdamW, torchrec's row-wise Adagrad), over several
 * steps with a warm-up; rows a sparse gradient does not touch must stay
 * bitwise unchanged. A network's optimizer decays its weight matrices
 * only, never its biases.
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
#include "lib/nn/optim.h"
#include "lib/ops/ops.h"

#define MUST(call) assert_int_equal((call), ERASE_OK)
#define N 37
#define STEPS 6

static erase_device_t *dev;
static erase_stream_t *stream;

static double rel(double got, double ref)
{
    return fabs(got - ref) / (fabs(ref) + 1e-6);
}

/* nanochat's scripts/base_train.py get_lr_multiplier, transcribed: `it`
 * 0-based, warm-up and warm-down lengths already rounded. */
static double nanochat_lr_multiplier(int64_t it, int64_t iterations, int64_t warmup, int64_t warmdown,
                                     double final_lr_frac)
{
    if (it < warmup)
        return (double)(it + 1) / (double)warmup;
    if (it <= iterations - warmdown)
        return 1.0;
    double progress = (double)(iterations - it) / (double)warmdown;
    return progress * 1.0 + (1 - progress) * final_lr_frac;
}

/* wsd against nanochat's multiplier at every step, warm-down lengths
 * rounded half to even as Python's round (0.25 x 10 = 2.5 -> 2, 0.25 x 14
 * = 3.5 -> 4), a total changed after creation (a resume with another
 * batch) recomputing the warm-down. */
static void test_schedule_wsd(void **state)
{
    (void)state;
    const int64_t totals[] = { 20, 10, 14, 1 };
    const int64_t warmdowns[] = { 5, 2, 4, 0 };
    for (int k = 0; k < 4; k++) {
        erase_lr_schedule_t s = { .base = 0.02, .warmup_steps = totals[k] > 3 ? 3 : 0, .decay = ERASE_LR_WSD,
                                  .min = 0.1 * 0.02, .warmdown_fraction = 0.25 };
        erase_lr_schedule_set_total(&s, 1000);
        erase_lr_schedule_set_total(&s, totals[k]);
        assert_int_equal(s.warmdown_steps, warmdowns[k]);
        for (int64_t step = 1; step <= totals[k]; step++) {
            double ref = 0.02 * nanochat_lr_multiplier(step - 1, totals[k], s.warmup_steps, s.warmdown_steps, 0.1);
            assert_true(fabs(erase_lr_at(&s, step) - ref) <= 1e-17);
        }
    }
    erase_lr_schedule_t s = { .base = 1, .decay = ERASE_LR_WSD, .warmdown_fraction = 0.5 };
    erase_lr_schedule_set_total(&s, 4); /* stable 1, 1, 1; then 2/2 -> 1, 1/2 */
    assert_true(erase_lr_at(&s, 2) == 1 && erase_lr_at(&s, 3) == 1 && erase_lr_at(&s, 4) == 0.5);
    assert_true(erase_lr_at(&s, 5) == 0); /* past the end: the floor, never below */
}

static void test_schedule(void **state)
{
    erase_lr_schedule_t s = { .base = 0.1, .warmup_steps = 4, .decay = ERASE_LR_COSINE,
                              .total_steps = 14, .min = 0.01 };
    /* warm-up: 0.025, 0.05, 0.075, 0.1; cosine over the 10 steps after
     * it, counted from 0: step 5 at 0.1, step 14 at t = 0.9, 0.01 after */
    assert_true(fabs(erase_lr_at(&s, 1) - 0.025) < 1e-15);
    assert_true(fabs(erase_lr_at(&s, 4) - 0.1) < 1e-15);
    assert_true(fabs(erase_lr_at(&s, 5) - 0.1) < 1e-15);
    assert_true(fabs(erase_lr_at(&s, 10) - (0.01 + 0.09 * 0.5 * (1 + cos(M_PI * 0.5)))) < 1e-15);
    assert_true(fabs(erase_lr_at(&s, 14) - (0.01 + 0.09 * 0.5 * (1 + cos(M_PI * 0.9)))) < 1e-15);
    assert_true(erase_lr_at(&s, 14) > 0.01 + 1e-4);
    assert_true(fabs(erase_lr_at(&s, 15) - 0.01) < 1e-15);
    assert_true(fabs(erase_lr_at(&s, 100) - 0.01) < 1e-15);
    s.warmup_steps = 0; /* no warm-up: the first step at base, also of one step */
    assert_true(erase_lr_at(&s, 1) == 0.1);
    s.total_steps = 1;
    assert_true(erase_lr_at(&s, 1) == 0.1);
    s.warmup_steps = 4;
    s.total_steps = 14;
    s.decay = ERASE_LR_CONSTANT;
    assert_true(erase_lr_at(&s, 50) == 0.1);
    print_message("schedule: warm-up 4 steps to 0.1, cosine towards 0.01 after step 14: lr(10) = %.6f\n",
                  0.01 + 0.09 * 0.5 * (1 + cos(M_PI * 0.5)));

    erase_optim_clock_t *clock;
    MUST(erase_malloc(dev, sizeof *clock, (void **)&clock));
    memset(clock, 0, sizeof *clock);
    s.decay = ERASE_LR_COSINE;
    for (int i = 0; i < 9; i++)
        MUST(erase_optim_clock_advance(stream, clock, &s));
    MUST(erase_stream_synchronize(stream));
    assert_int_equal(clock->step, 9);
    assert_true(fabs(clock->lr - (float)erase_lr_at(&s, 9)) == 0);
    erase_free(dev, clock);
}

typedef struct {
    float *w, *g, *m, *v;
    double wd[N], md[N], vd[N];
    erase_optim_clock_t *clock;
} dense_case_t;

static void dense_init(dense_case_t *c, uint64_t seed)
{
    MUST(erase_malloc(dev, N * sizeof(float), (void **)&c->w));
    MUST(erase_malloc(dev, N * sizeof(float), (void **)&c->g));
    MUST(erase_malloc(dev, N * sizeof(float), (void **)&c->m));
    MUST(erase_malloc(dev, N * sizeof(float), (void **)&c->v));
    MUST(erase_malloc(dev, sizeof *c->clock, (void **)&c->clock));
    memset(c->clock, 0, sizeof *c->clock);
    uint64_t rng = seed;
    for (int i = 0; i < N; i++) {
        c->w[i] = erase_rng_uniform(&rng, -1.0f, 1.0f);
        c->wd[i] = c->w[i];
        c->m[i] = c->v[i] = 0.0f;
        c->md[i] = c->vd[i] = 0.0;
    }
}

static void dense_free(dense_case_t *c)
{
    erase_free(dev, c->w);
    erase_free(dev, c->g);
    erase_free(dev, c->m);
    erase_free(dev, c->v);
    erase_free(dev, c->clock);
}

static void new_gradient(dense_case_t *c, uint64_t *rng)
{
    for (int i = 0; i < N; i++)
        c->g[i] = erase_rng_uniform(rng, -2.0f, 2.0f);
}

static void test_adamw(void **state)
{
    const erase_lr_schedule_t sched = { .base = 0.01, .warmup_steps = 2 };
    const double b1 = 0.9, b2 = 0.99, eps = 1e-8, wd = 0.1;
    dense_case_t c;
    dense_init(&c, 3);
    uint64_t rng = 17;
    double worst = 0;
    for (int t = 1; t <= STEPS; t++) {
        new_gradient(&c, &rng);
        MUST(erase_optim_clock_advance(stream, c.clock, &sched));
        MUST(erase_adamw_update(stream, N, c.w, c.g, c.m, c.v, c.clock, 1.0f, (float)b1, (float)b2,
                                (float)eps, (float)wd));
        MUST(erase_stream_synchronize(stream));
        double lr = erase_lr_at(&sched, t);
        for (int i = 0; i < N; i++) { /* torch.optim.AdamW, documented algorithm */
            double g = c.g[i];
            c.wd[i] *= 1 - lr * wd;
            c.md[i] = b1 * c.md[i] + (1 - b1) * g;
            c.vd[i] = b2 * c.vd[i] + (1 - b2) * g * g;
            double mhat = c.md[i] / (1 - pow(b1, t)), vhat = c.vd[i] / (1 - pow(b2, t));
            c.wd[i] -= lr * mhat / (sqrt(vhat) + eps);
            double e = rel(c.w[i], c.wd[i]);
            if (e > worst)
                worst = e;
        }
    }
    print_message("AdamW, %d steps (warm-up 2, wd 0.1): max relative error vs double reference %.3g\n",
                  STEPS, worst);
    assert_true(worst < 1e-5);
    dense_free(&c);
}

static void test_sgd_momentum(void **state)
{
    const erase_lr_schedule_t sched = { .base = 0.05 };
    const double mu = 0.9, wd = 0.01;
    dense_case_t c;
    dense_init(&c, 4);
    uint64_t rng = 18;
    double worst = 0;
    for (int t = 1; t <= STEPS; t++) {
        new_gradient(&c, &rng);
        MUST(erase_optim_clock_advance(stream, c.clock, &sched));
        MUST(erase_sgd_update(stream, N, c.w, c.g, c.m, c.clock, 1.0f, (float)mu, (float)wd));
        MUST(erase_stream_synchronize(stream));
        for (int i = 0; i < N; i++) { /* torch.optim.SGD: buf = g' at step 1 */
            double g = c.g[i] + wd * c.wd[i];
            c.md[i] = t == 1 ? g : mu * c.md[i] + g;
            c.wd[i] -= 0.05 * c.md[i];
            double e = rel(c.w[i], c.wd[i]);
            if (e > worst)
                worst = e;
        }
    }
    print_message("SGD momentum 0.9, wd 0.01, %d steps: max relative error %.3g\n", STEPS, worst);
    assert_true(worst < 1e-5);
    assert_int_equal(erase_sgd_update(stream, N, c.w, c.g, NULL, c.clock, 1.0f, 0.9f, 0.0f), ERASE_ERR_INVALID);
    assert_non_null(strstr(erase_error_message(), "sgd: momentum 0.9 needs a buffer"));
    dense_free(&c);
}

static void test_rowwise_adagrad(void **state)
{
    enum { ROWS = 6, DIM = 5 };
    const erase_lr_schedule_t sched = { .base = 0.001 };
    float *table, *acc, *values;
    uint32_t *rows;
    int *count;
    erase_optim_clock_t *clock;
    MUST(erase_malloc(dev, sizeof(float) * ROWS * DIM, (void **)&table));
    MUST(erase_malloc(dev, sizeof(float) * ROWS, (void **)&acc));
    MUST(erase_malloc(dev, sizeof(float) * ROWS * DIM, (void **)&values));
    MUST(erase_malloc(dev, sizeof(uint32_t) * ROWS, (void **)&rows));
    MUST(erase_malloc(dev, sizeof(int), (void **)&count));
    MUST(erase_malloc(dev, sizeof *clock, (void **)&clock));
    memset(clock, 0, sizeof *clock);
    double ref[ROWS * DIM], acc_ref[ROWS] = { 0 };
    float before[ROWS * DIM];
    uint64_t rng = 5;
    for (int i = 0; i < ROWS * DIM; i++)
        ref[i] = table[i] = erase_rng_uniform(&rng, -1.0f, 1.0f);
    memset(acc, 0, sizeof(float) * ROWS);
    double worst = 0;
    const float lr_mult = 20.0f; /* embedding lr 0.02 over a dense lr of 0.001 */
    for (int t = 1; t <= STEPS; t++) {
        *count = 2;
        rows[0] = 1;
        rows[1] = (uint32_t)(3 + t % 2); /* rows 3 and 4 alternate */
        for (int i = 0; i < 2 * DIM; i++)
            values[i] = erase_rng_uniform(&rng, -1.0f, 1.0f);
        memcpy(before, table, sizeof before);
        MUST(erase_optim_clock_advance(stream, clock, &sched));
        MUST(erase_rowwise_adagrad_update(stream, DIM, table, acc, rows, values, count, clock, lr_mult, 1e-8f));
        MUST(erase_stream_synchronize(stream));
        for (int k = 0; k < 2; k++) { /* torchrec EXACT_ROWWISE_ADAGRAD */
            int r = (int)rows[k];
            double sq = 0;
            for (int d = 0; d < DIM; d++)
                sq += (double)values[k * DIM + d] * values[k * DIM + d];
            acc_ref[r] += sq / DIM;
            for (int d = 0; d < DIM; d++)
                ref[r * DIM + d] -= 0.02 * values[k * DIM + d] / (sqrt(acc_ref[r]) + 1e-8);
        }
        for (int r = 0; r < ROWS; r++) {
            int touched = r == (int)rows[0] || r == (int)rows[1];
            for (int d = 0; d < DIM; d++) {
                if (!touched)
                    assert_memory_equal(&table[r * DIM + d], &before[r * DIM + d], sizeof(float));
                double e = rel(table[r * DIM + d], ref[r * DIM + d]);
                if (e > worst)
                    worst = e;
            }
            if (!(rel(acc[r], acc_ref[r]) < 1e-5))
                fail_msg("accumulator of row %d: %g, expected %g", r, (double)acc[r], acc_ref[r]);
        }
    }
    print_message("row-wise Adagrad, %d steps on rows {1, 3|4} of 6: max relative error %.3g, "
                  "untouched rows bitwise unchanged\n", STEPS, worst);
    assert_true(worst < 1e-5);
    /* plain sparse SGD on the same rows */
    memcpy(before, table, sizeof before);
    MUST(erase_sparse_sgd_update(stream, DIM, table, rows, values, count, clock, lr_mult));
    MUST(erase_stream_synchronize(stream));
    for (int k = 0; k < 2; k++)
        for (int d = 0; d < DIM; d++) {
            int i = (int)rows[k] * DIM + d;
            assert_true(rel(table[i], before[i] - 0.02 * values[k * DIM + d]) < 1e-6);
        }
    assert_memory_equal(&table[0], &before[0], sizeof(float) * DIM); /* row 0 untouched */
    erase_free(dev, table);
    erase_free(dev, acc);
    erase_free(dev, values);
    erase_free(dev, rows);
    erase_free(dev, count);
    erase_free(dev, clock);
}

/* Gradient-norm clipping ops: erase_sum_squares over two arrays (1003 and
 * 5 floats, not multiples of a vector) into one float that held 0.5,
 * against the double sum in order; the same calls again give the same
 * bits; erase_clip_by_norm as torch.nn.utils.clip_grad_norm_. */
static void test_clip_ops(void **state)
{
    enum { NA = 1003, NB = 5 };
    float *a, *b, *acc, *acc2;
    MUST(erase_malloc(dev, NA * sizeof(float), (void **)&a));
    MUST(erase_malloc(dev, NB * sizeof(float), (void **)&b));
    MUST(erase_malloc(dev, sizeof(float), (void **)&acc));
    MUST(erase_malloc(dev, sizeof(float), (void **)&acc2));
    uint64_t rng = 7;
    double ref = 0.5;
    for (int i = 0; i < NA; i++) {
        a[i] = erase_rng_uniform(&rng, -3.0f, 3.0f);
        ref += (double)a[i] * a[i];
    }
    for (int i = 0; i < NB; i++) {
        b[i] = erase_rng_uniform(&rng, -3.0f, 3.0f);
        ref += (double)b[i] * b[i];
    }
    *acc = *acc2 = 0.5f;
    MUST(erase_sum_squares(stream, NA, a, acc));
    MUST(erase_sum_squares(stream, NB, b, acc));
    MUST(erase_sum_squares(stream, 0, NULL, acc));
    MUST(erase_sum_squares(stream, NA, a, acc2));
    MUST(erase_sum_squares(stream, NB, b, acc2));
    MUST(erase_stream_synchronize(stream));
    print_message("sum of squares of 1008 floats plus 0.5: %.9g, double reference %.9g (relative %.3g)\n",
                  (double)*acc, ref, rel(*acc, ref));
    assert_true(rel(*acc, ref) < 1e-6);
    assert_memory_equal(acc, acc2, sizeof(float));

    /* clip a to max norm 10 by the norm of a and b: scaled by 10 / (norm + 1e-6) */
    float before[NA];
    memcpy(before, a, sizeof before);
    MUST(erase_clip_by_norm(stream, NA, a, acc, 10.0f));
    MUST(erase_stream_synchronize(stream));
    double coef = 10.0 / (sqrt((double)*acc) + 1e-6), worst = 0, norm = 0;
    for (int i = 0; i < NA; i++) {
        double e = rel(a[i], before[i] * coef);
        if (e > worst)
            worst = e;
        norm += (double)a[i] * a[i];
    }
    print_message("clip by norm 10 of a gradient of norm %.6g: scale %.6g, max relative error %.3g\n",
                  sqrt((double)*acc), coef, worst);
    assert_true(coef < 0.2);
    assert_true(worst < 1e-6);
    /* a norm below max_norm leaves x bitwise as it is */
    memcpy(before, a, sizeof before);
    *acc2 = (float)norm;
    MUST(erase_clip_by_norm(stream, NA, a, acc2, 10.5f));
    MUST(erase_stream_synchronize(stream));
    assert_memory_equal(a, before, sizeof before);
    assert_int_equal(erase_clip_by_norm(stream, NA, a, acc, 0.0f), ERASE_ERR_INVALID);
    assert_non_null(strstr(erase_error_message(), "clip by norm: max_norm 0 is not > 0"));
    erase_free(dev, a);
    erase_free(dev, b);
    erase_free(dev, acc);
    erase_free(dev, acc2);
}

/* A small mlp (two blocks) whose every dense gradient is set from `seed`
 * before each of `steps` AdamW steps of weight decay `wd`; returns the
 * network (its parameters after the steps). */
static erase_network_t *small_mlp(void)
{
    erase_model_config_t cfg = erase_model_config_default(ERASE_MODEL_MLP);
    cfg.mlp.inputs = 5;
    cfg.mlp.hidden_layers = 2;
    cfg.mlp.hidden[0] = cfg.mlp.hidden[1] = 4;
    cfg.mlp.classes = 3;
    erase_network_t *net;
    MUST(erase_network_create(dev, &cfg, 8, &net));
    return net;
}

static erase_network_t *mlp_trained(float wd, int steps, erase_optimizer_t **opt_out)
{
    erase_network_t *net = small_mlp();
    erase_optim_config_t oc = erase_optim_config_default();
    oc.weight_decay = wd;
    oc.schedule.base = 0.05;
    erase_optimizer_t *opt;
    MUST(erase_optimizer_create(net, &oc, &opt));
    uint64_t rng = 99;
    for (int t = 0; t < steps; t++) {
        MUST(erase_optimizer_begin_step(opt, stream));
        for (int b = 0; b < erase_network_blocks(net); b++) {
            size_t count;
            float *g = erase_network_block_grads(net, b, &count);
            MUST(erase_stream_synchronize(stream));
            for (size_t i = 0; i < count; i++)
                g[i] = erase_rng_uniform(&rng, -1.0f, 1.0f);
            MUST(erase_optimizer_update_block(opt, b, stream));
        }
    }
    MUST(erase_stream_synchronize(stream));
    *opt_out = opt;
    return net;
}

/* Weight decay 0.1 vs none, same gradients: every bias (1-d) moves
 * bitwise as without decay; every weight matrix as torch.optim.AdamW with
 * decay (double reference from the same gradients). */
static void test_decay_matrices_only(void **state)
{
    const int steps = 3;
    const double wd = 0.1, lr = 0.05, b1 = 0.9, b2 = 0.999, eps = 1e-8;
    erase_optimizer_t *opt_d, *opt_0, *opt_i;
    erase_network_t *decayed = mlp_trained((float)wd, steps, &opt_d);
    erase_network_t *plain = mlp_trained(0.0f, steps, &opt_0);
    erase_network_t *initial = mlp_trained((float)wd, 0, &opt_i);
    int n;
    erase_param_t *pd = erase_network_params(decayed, &n), *p0 = erase_network_params(plain, &n),
                  *pi = erase_network_params(initial, &n);
    int biases = 0, weights = 0;
    double worst = 0;
    for (int k = 0; k < n; k++) {
        size_t numel = (size_t)erase_param_numel(&pd[k]);
        if (pd[k].ndim == 1) {
            biases++;
            if (memcmp(pd[k].value, p0[k].value, numel * sizeof(float)) != 0)
                fail_msg("%s (1-d) moved differently with weight decay 0.1 than without", pd[k].name);
            continue;
        }
        weights++;
        /* the gradients the test gave: replay the generator in block order */
        for (size_t i = 0; i < numel; i++) {
            double w = pi[k].value[i], m = 0, v = 0;
            uint64_t rng = 99;
            for (int t = 1; t <= steps; t++) {
                double g = 0;
                for (int b = 0; b < erase_network_blocks(decayed); b++) {
                    size_t count;
                    float *gb = erase_network_block_grads(decayed, b, &count);
                    for (size_t j = 0; j < count; j++) {
                        float r = erase_rng_uniform(&rng, -1.0f, 1.0f);
                        if (gb + j == pd[k].grad + i)
                            g = r;
                    }
                }
                w *= 1 - lr * wd;
                m = b1 * m + (1 - b1) * g;
                v = b2 * v + (1 - b2) * g * g;
                w -= lr * (m / (1 - pow(b1, t))) / (sqrt(v / (1 - pow(b2, t))) + eps);
            }
            double e = rel(pd[k].value[i], w);
            if (e > worst)
                worst = e;
        }
        assert_true(memcmp(pd[k].value, p0[k].value, numel * sizeof(float)) != 0);
    }
    print_message("weight decay 0.1, %d AdamW steps of an mlp: %d biases bitwise as without decay, "
                  "%d weight matrices decayed: max relative error vs double reference %.3g\n",
                  steps, biases, weights, worst);
    assert_int_equal(biases, 4);
    assert_int_equal(weights, 4);
    assert_true(worst < 1e-5);
    erase_optimizer_destroy(opt_d);
    erase_optimizer_destroy(opt_0);
    erase_optimizer_destroy(opt_i);
    erase_network_destroy(decayed);
    erase_network_destroy(plain);
    erase_network_destroy(initial);
}

/* Block b's dense gradients set from rng (host copy in g, the block's
 * count in *count). */
static void set_grads(erase_network_t *net, int b, uint64_t *rng, float *g, size_t *count)
{
    float *dg = erase_network_block_grads(net, b, count);
    for (size_t i = 0; i < *count; i++)
        g[i] = dg[i] = erase_rng_uniform(rng, -1.0f, 1.0f);
}

/* SGD (lr 0.1, no momentum) with grad_clip 0.5 of a two-block mlp: over
 * both blocks (one sub-graph), w = w0 - lr * g * 0.5 / (norm + 1e-6) with
 * the norm of all the dense gradients (double reference); over block 1
 * alone, block 1 scales by its own norm and block 0 is left as it is. */
static void test_clip_update(void **state)
{
    erase_network_t *net = small_mlp();
    erase_optim_config_t oc = erase_optim_config_default();
    oc.dense = ERASE_OPTIM_SGD;
    oc.momentum = 0.0f;
    oc.schedule.base = 0.1;
    oc.grad_clip = 0.5f;
    erase_optimizer_t *opt;
    MUST(erase_optimizer_create(net, &oc, &opt));
    assert_true(erase_optimizer_grad_clip(opt) == 0.5f);
    size_t n0, n1;
    erase_network_block_grads(net, 0, &n0);
    erase_network_block_grads(net, 1, &n1);
    float *g = malloc((n0 + n1) * sizeof(float)), *w0 = malloc((n0 + n1) * sizeof(float));
    uint64_t rng = 31;
    set_grads(net, 0, &rng, g, &n0);
    set_grads(net, 1, &rng, g + n0, &n1);
    double sq = 0;
    for (size_t i = 0; i < n0 + n1; i++)
        sq += (double)g[i] * g[i];
    double coef = 0.5 / (sqrt(sq) + 1e-6);
    int np;
    erase_param_t *params = erase_network_params(net, &np);
    /* the parameters' values before, in the order of the blocks' gradient buffers */
    for (int k = 0; k < np; k++) {
        const float *base = erase_network_block_grads(net, params[k].block, &(size_t){ 0 });
        size_t off = (size_t)(params[k].grad - base) + (params[k].block ? n0 : 0);
        memcpy(w0 + off, params[k].value, (size_t)erase_param_numel(&params[k]) * sizeof(float));
    }
    MUST(erase_optimizer_begin_step(opt, stream));
    MUST(erase_optimizer_clip_grads(opt, 0, 1, stream));
    MUST(erase_optimizer_update_block(opt, 0, stream));
    MUST(erase_optimizer_update_block(opt, 1, stream));
    MUST(erase_stream_synchronize(stream));
    double worst = 0;
    for (int k = 0; k < np; k++) {
        const float *base = erase_network_block_grads(net, params[k].block, &(size_t){ 0 });
        size_t off = (size_t)(params[k].grad - base) + (params[k].block ? n0 : 0);
        for (int64_t i = 0; i < erase_param_numel(&params[k]); i++) {
            double ref = w0[off + i] - 0.1 * g[off + i] * coef;
            double e = rel(params[k].value[i], ref);
            if (e > worst)
                worst = e;
        }
    }
    print_message("SGD with grad clip 0.5, one sub-graph of two blocks (%zu gradients, norm %.6g): "
                  "max relative error vs w - lr g 0.5/(norm + 1e-6) %.3g\n", n0 + n1, sqrt(sq), worst);
    assert_true(coef < 0.5);
    assert_true(worst < 1e-6);

    /* block 1 as its own sub-graph: block 0's gradients stay as they are */
    set_grads(net, 0, &rng, g, &n0);
    set_grads(net, 1, &rng, g + n0, &n1);
    sq = 0;
    for (size_t i = n0; i < n0 + n1; i++)
        sq += (double)g[i] * g[i];
    coef = 0.5 / (sqrt(sq) + 1e-6);
    MUST(erase_optimizer_clip_grads(opt, 1, 1, stream));
    MUST(erase_stream_synchronize(stream));
    const float *g0 = erase_network_block_grads(net, 0, &n0), *g1 = erase_network_block_grads(net, 1, &n1);
    assert_memory_equal(g0, g, n0 * sizeof(float));
    worst = 0;
    for (size_t i = 0; i < n1; i++) {
        double e = rel(g1[i], g[n0 + i] * coef);
        if (e > worst)
            worst = e;
    }
    print_message("clip of block 1 alone (norm %.6g): block 0 unchanged, block 1 max relative error %.3g\n",
                  sqrt(sq), worst);
    assert_true(worst < 1e-6);
    assert_int_equal(erase_optimizer_clip_grads(opt, 1, 2, stream), ERASE_ERR_INVALID);
    assert_non_null(strstr(erase_error_message(), "optimizer: clip of blocks 1..2 (the network has 2)"));
    erase_optimizer_destroy(opt);
    oc.grad_clip = -1.0f;
    assert_int_equal(erase_optimizer_create(net, &oc, &opt), ERASE_ERR_INVALID);
    assert_non_null(strstr(erase_error_message(), "optimizer: grad_clip -1 is not in [0, 3.40282e+38]"));
    free(g);
    free(w0);
    erase_network_destroy(net);
}

static int setup(void **state)
{
    erase_device_options_t o = erase_device_options_default();
    if (erase_device_open(&o, &dev) != ERASE_OK || erase_stream_create(dev, &stream) != ERASE_OK)
        return -1;
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
        cmocka_unit_test(test_schedule),
        cmocka_unit_test(test_schedule_wsd),
        cmocka_unit_test(test_adamw),
        cmocka_unit_test(test_sgd_momentum),
        cmocka_unit_test(test_rowwise_adagrad),
        cmocka_unit_test(test_decay_matrices_only),
        cmocka_unit_test(test_clip_ops),
        cmocka_unit_test(test_clip_update),
    };
    return cmocka_run_group_tests_name("optimizers", tests, setup, teardown);
}
