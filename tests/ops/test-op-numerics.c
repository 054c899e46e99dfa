/*
 * Numerics of the ops that must hold exactly rather than to a tolerance:
 * Philox4x32-10 against Random123's published known-answer vectors (its
 * tests/kat_vectors), the dropout mask (reproducible for a (seed, offset),
 * the drop rate p, different for another offset or seed), and the losses
 * at extreme logits (finite and equal to the exact value, with gradients
 * within [-1, 1] / batch), and causal attention: one position, scores of
 * +-1e4 (finite, exact probabilities), masked positions exactly 0 whatever
 * their score, and the decode step equal to the forward's row t.
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

#include "lib/core/philox.h"
#include "lib/core/rng.h"
#include "lib/device/device.h"
#include "lib/ops/cpu/kernels.h"

/* ---- Philox ---------------------------------------------------------------- */

static void test_philox_known_answers(void **state)
{
    /* Random123 kat_vectors lines "philox4x32 10 ctr0..ctr3 key0 key1 out0..out3";
     * key word 0 is the low half of erase's 64-bit key. */
    static const struct {
        uint32_t ctr[4];
        uint64_t key;
        uint32_t out[4];
    } kat[] = {
        { { 0, 0, 0, 0 }, 0, { 0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8 } },
        { { 0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff }, 0xffffffffffffffffULL,
          { 0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd } },
        { { 0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344 }, 0x299f31d0a4093822ULL,
          { 0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1 } },
    };
    int bad = 0;
    for (size_t t = 0; t < sizeof kat / sizeof kat[0]; t++) {
        uint32_t out[4];
        erase_philox4x32(kat[t].key, kat[t].ctr, out);
        print_message("philox4x32-10 key %016llx ctr %08x %08x %08x %08x -> %08x %08x %08x %08x "
                      "(Random123: %08x %08x %08x %08x)\n",
                      (unsigned long long)kat[t].key, kat[t].ctr[0], kat[t].ctr[1], kat[t].ctr[2],
                      kat[t].ctr[3], out[0], out[1], out[2], out[3], kat[t].out[0], kat[t].out[1],
                      kat[t].out[2], kat[t].out[3]);
        bad += memcmp(out, kat[t].out, sizeof out) != 0;
    }
    assert_int_equal(bad, 0);
}

/* The uniform of element i is word i mod 4 of block offset + i/4, top 24 bits. */
static void test_philox_uniform_layout(void **state)
{
    static const uint64_t offsets[] = { 0, 5, 0xffffffffULL, 0x123456789abULL };
    static const uint64_t indices[] = { 0, 1, 3, 4, 7, 1000001, 0x400000002ULL };
    const uint64_t key = 0x0123456789abcdefULL;
    for (size_t o = 0; o < sizeof offsets / sizeof offsets[0]; o++)
        for (size_t k = 0; k < sizeof indices / sizeof indices[0]; k++) {
            uint64_t block = offsets[o] + indices[k] / 4;
            uint32_t ctr[4] = { (uint32_t)block, (uint32_t)(block >> 32), 0, 0 }, out[4];
            erase_philox4x32(key, ctr, out);
            float want = (float)(out[indices[k] % 4] >> 8) / 16777216.0f;
            float got = erase_philox_uniform(key, offsets[o], indices[k]);
            assert_true(got == want);
            assert_true(got >= 0.0f && got < 1.0f);
        }
    print_message("erase_philox_uniform(key, offset, i) = word i%%4 of block offset + i/4, "
                  "top 24 bits / 2^24 (28 cases)\n");
}

/* ---- dropout -------------------------------------------------------------- */

enum { DROP_N = 1000000 };

static size_t count_differences(const float *a, const float *b, size_t n)
{
    size_t d = 0;
    for (size_t i = 0; i < n; i++)
        d += (a[i] == 0) != (b[i] == 0);
    return d;
}

static void test_dropout_mask(void **state)
{
    const float p = 0.3f;
    const uint64_t seed = 0x5eed5eed12345678ULL, offset = 1000;
    float *x = malloc(sizeof(float) * DROP_N), *y1 = malloc(sizeof(float) * DROP_N),
          *y2 = malloc(sizeof(float) * DROP_N);
    assert_non_null(x);
    assert_non_null(y1);
    assert_non_null(y2);
    for (size_t i = 0; i < DROP_N; i++)
        x[i] = 1.0f + (float)(i % 7);
    const float scale = (float)(1.0 / (1.0 - (double)p));

    erase_k_dropout_f32(DROP_N, p, seed, offset, x, y1);
    memset(y2, 0xff, sizeof(float) * DROP_N);
    erase_k_dropout_f32(DROP_N, p, seed, offset, x, y2);
    assert_memory_equal(y1, y2, sizeof(float) * DROP_N);
    print_message("dropout: the same (seed, offset) twice gives the same %d outputs bitwise\n",
                  DROP_N);

    size_t dropped = 0;
    for (size_t i = 0; i < DROP_N; i++) {
        if (y1[i] == 0)
            dropped++;
        else if (y1[i] != x[i] * scale)
            fail_msg("kept element %zu is %.9g, not x * 1/(1-p) = %.9g", i, (double)y1[i],
                     (double)(x[i] * scale));
    }
    double frac = (double)dropped / DROP_N;
    print_message("dropout p = %.1f over %d elements: dropped fraction %.5f, kept %.5f "
                  "(dropped must be within 0.3 +- 0.002)\n",
                  (double)p, DROP_N, frac, 1.0 - frac);
    assert_true(fabs(frac - 0.3) <= 0.002);

    /* another offset or seed: an independent mask differs in 2 p (1 - p) = 42% of places */
    erase_k_dropout_f32(DROP_N, p, seed, offset + 1, x, y2);
    double diff_offset = (double)count_differences(y1, y2, DROP_N) / DROP_N;
    erase_k_dropout_f32(DROP_N, p, seed + 1, offset, x, y2);
    double diff_seed = (double)count_differences(y1, y2, DROP_N) / DROP_N;
    print_message("dropout: mask differs from offset + 1 in %.4f, from seed + 1 in %.4f of places "
                  "(independent masks: 0.42 +- 0.005)\n",
                  diff_offset, diff_seed);
    assert_true(fabs(diff_offset - 0.42) <= 0.005);
    assert_true(fabs(diff_seed - 0.42) <= 0.005);

    /* p = 0 keeps everything unscaled */
    erase_k_dropout_f32(DROP_N, 0.0f, seed, offset, x, y2);
    assert_memory_equal(x, y2, sizeof(float) * DROP_N);
    free(x);
    free(y1);
    free(y2);
}

/* ---- losses at extreme logits ------------------------------------------- */

static void test_bce_extreme_logits(void **state)
{
    static const float logits[] = { 1e4f, -1e4f, 88.0f, -88.0f, 100.0f, -100.0f, 1e30f, -1e30f };
    enum { NZ = sizeof logits / sizeof logits[0], B = 2 * NZ };
    float z[B], y[B], dz[B];
    double z8[B], y8[B], dz8[B];
    for (int i = 0; i < NZ; i++)
        for (int t = 0; t < 2; t++) {
            z[2 * i + t] = logits[i];
            y[2 * i + t] = (float)t;
            z8[2 * i + t] = logits[i];
            y8[2 * i + t] = t;
        }
    double worst = 0, sum_exact = 0;
    for (int r = 0; r < B; r++) {
        /* exact: softplus(z) for y = 0, softplus(-z) for y = 1; at |z| >= 88
         * it is |z| on the wrong side and below 1e-38 on the right side */
        int wrong = (z[r] > 0) == (y[r] == 0);
        double exact = wrong ? fabs((double)z[r]) : 0.0;
        sum_exact += exact;
        float dz1;
        double dz1_8;
        double l32 = erase_k_bce_with_logits_f32(1, &z[r], &y[r], 1.0, &dz1);
        double l64 = erase_k_bce_with_logits_f64(1, &z8[r], &y8[r], 1.0, &dz1_8);
        float lf = (float)l32; /* as the stream op stores it */
        double tol = 1e-6 * (exact > 1 ? exact : 1);
        print_message("bce z = %-7g y = %g: loss f32 %.9g f64 %.17g (exact %g), dz f32 %g f64 %g\n",
                      (double)z[r], (double)y[r], (double)lf, l64, exact, (double)dz1, dz1_8);
        assert_true(isfinite(lf) && isfinite(l64));
        assert_true(lf >= 0 && l64 >= 0);
        assert_true(fabs(lf - exact) <= tol);
        assert_true(fabs(l64 - exact) <= tol);
        double e = fabs(l64 - exact) / (exact > 1 ? exact : 1);
        worst = e > worst ? e : worst;
        /* dz = sigmoid(z) - y: +-1 on the wrong side, 0 on the right side */
        double dz_exact = wrong ? (y[r] == 0 ? 1.0 : -1.0) : 0.0;
        assert_true(isfinite(dz1) && fabs(dz1 - dz_exact) <= 1e-6);
        assert_true(isfinite(dz1_8) && fabs(dz1_8 - dz_exact) <= 1e-6);
    }
    print_message("bce: %d extreme cases, worst relative loss error %.3g\n", B, worst);

    /* the whole batch: mean loss and dz within [-1, 1] / batch */
    double l32 = erase_k_bce_with_logits_f32(B, z, y, 1.0, dz);
    double l64 = erase_k_bce_with_logits_f64(B, z8, y8, 1.0, dz8);
    double mean_exact = sum_exact / B;
    print_message("bce batch of %d: mean loss f32 %.9g f64 %.17g (exact %.9g)\n", B, l32, l64,
                  mean_exact);
    assert_true(fabs((float)l32 - mean_exact) <= 1e-6 * mean_exact);
    assert_true(fabs(l64 - mean_exact) <= 1e-12 * mean_exact);
    for (int r = 0; r < B; r++) {
        assert_true(isfinite(dz[r]) && fabs(dz[r]) <= 1.0 / B * (1 + 1e-6));
        assert_true(isfinite(dz8[r]) && fabs(dz8[r]) <= 1.0 / B * (1 + 1e-12));
        int wrong = (z[r] > 0) == (y[r] == 0);
        double want = wrong ? (y[r] == 0 ? 1.0 : -1.0) / B : 0.0;
        assert_true(fabs(dz[r] - want) <= 1e-6 / B);
        assert_true(fabs(dz8[r] - want) <= 1e-12 / B);
    }
}

static void test_softmax_xent_extreme_logits(void **state)
{
    /* rows of 3 logits far apart; loss = logsumexp - z[label] */
    static const float z[] = { 1e4f, 0.0f, -1e4f, 1e4f, 0.0f, -1e4f, -88.0f, 100.0f, 88.0f,
                               -1e30f, 1e30f, 0.0f };
    static const int32_t labels[] = { 0, 2, 1, 0 };
    static const double exact[] = { 0.0, 2e4, 12.0, 2e30 };
    double zd[12];
    for (int i = 0; i < 12; i++)
        zd[i] = z[i];
    for (int r = 0; r < 4; r++) {
        float dz[3];
        double dz8[3];
        double l32 = erase_k_softmax_xent_f32(1, 3, z + 3 * r, labels + r, 1.0, dz);
        double l64 = erase_k_softmax_xent_f64(1, 3, zd + 3 * r, labels + r, 1.0, dz8);
        double ex = exact[r];
        if (r == 2) /* logsumexp(-88, 100, 88) - 100 = log(1 + e^-12 + e^-188) */
            ex = log1p(exp(-12.0) + exp(-188.0));
        print_message("softmax_xent z = (%g, %g, %g) label %d: loss f32 %.9g f64 %.17g "
                      "(exact %.9g)\n",
                      (double)z[3 * r], (double)z[3 * r + 1], (double)z[3 * r + 2], labels[r],
                      (double)(float)l32, l64, ex);
        double tol = 1e-6 * (ex > 1 ? ex : 1e-5);
        assert_true(isfinite((float)l32) && fabs((float)l32 - ex) <= tol);
        assert_true(isfinite(l64) && fabs(l64 - ex) <= tol);
        double s = 0;
        for (int c = 0; c < 3; c++) {
            assert_true(isfinite(dz[c]) && dz[c] >= -1 && dz[c] <= 1);
            assert_true(isfinite(dz8[c]) && dz8[c] >= -1 && dz8[c] <= 1);
            s += dz8[c];
        }
        assert_true(fabs(s) <= 1e-12); /* softmax sums to one */
    }
}

/* ---- attention ------------------------------------------------------------ */

/* One position: its probability is exactly 1, out = v, and the backward
 * gives dv = dout and dq = dk = 0 exactly. */
static void test_attention_one_position(void **state)
{
    enum { NH = 2, D = 6 };
    float qkv[3 * D], att[NH], out[D], dout[D], scratch[NH], dqkv[3 * D];
    double qkv8[3 * D], att8[NH], out8[D], dout8[D], scratch8[NH], dqkv8[3 * D];
    for (int i = 0; i < 3 * D; i++)
        qkv8[i] = qkv[i] = 0.25f * (float)(i - 7);
    for (int i = 0; i < D; i++)
        dout8[i] = dout[i] = 1.5f - 0.5f * (float)i;
    erase_k_attention_forward_f32(1, 1, NH, D, qkv, att, out);
    erase_k_attention_backward_f32(1, 1, NH, D, qkv, att, dout, scratch, dqkv);
    erase_k_attention_forward_f64(1, 1, NH, D, qkv8, att8, out8);
    erase_k_attention_backward_f64(1, 1, NH, D, qkv8, att8, dout8, scratch8, dqkv8);
    for (int h = 0; h < NH; h++)
        assert_true(att[h] == 1.0f && att8[h] == 1.0);
    for (int i = 0; i < D; i++) {
        assert_true(out[i] == qkv[2 * D + i] && out8[i] == qkv8[2 * D + i]);
        assert_true(dqkv[i] == 0 && dqkv[D + i] == 0 && dqkv[2 * D + i] == dout[i]);
        assert_true(dqkv8[i] == 0 && dqkv8[D + i] == 0 && dqkv8[2 * D + i] == dout8[i]);
    }
    print_message("attention T = 1: att = 1, out = v, dv = dout, dq = dk = 0 exactly (fp32 and fp64)\n");
}

/*
 * Scores q k / sqrt(hd) of +-1e4 (hd = 1, q = 100, k = +-100): without the
 * row maximum subtracted exp overflows. Keys 0, 2, 3 score 1e4 against every
 * query, key 1 scores -1e4: row 1 is (1, 0 | masked), row 2 (1/2, 0, 1/2),
 * row 3 (1/3, 0, 1/3, 1/3); the masked keys 2, 3 of rows 0, 1 score the
 * row's maximum and still get probability exactly 0.
 */
static void test_attention_large_scores(void **state)
{
    enum { T = 4 };
    static const float k[T] = { 100, -100, 100, 100 }, v[T] = { 1, 1000, 2, 4 };
    static const double want_att[T][T] = {
        { 1, 0, 0, 0 }, { 1, 0, 0, 0 }, { 0.5, 0, 0.5, 0 }, { 1 / 3.0, 0, 1 / 3.0, 1 / 3.0 },
    };
    static const double want_out[T] = { 1, 1, 1.5, 7 / 3.0 };
    float qkv[T * 3], att[T * T], out[T];
    double qkv8[T * 3], att8[T * T], out8[T];
    for (int t = 0; t < T; t++) {
        qkv8[3 * t] = qkv[3 * t] = 100;
        qkv8[3 * t + 1] = qkv[3 * t + 1] = k[t];
        qkv8[3 * t + 2] = qkv[3 * t + 2] = v[t];
    }
    erase_k_attention_forward_f32(1, T, 1, 1, qkv, att, out);
    erase_k_attention_forward_f64(1, T, 1, 1, qkv8, att8, out8);
    for (int t = 0; t < T; t++) {
        print_message("scores +-1e4 row %d: att f32 %.9g %.9g %.9g %.9g, out f32 %.9g f64 %.17g "
                      "(exact %.9g)\n", t, (double)att[t * T], (double)att[t * T + 1],
                      (double)att[t * T + 2], (double)att[t * T + 3], (double)out[t], out8[t],
                      want_out[t]);
        for (int s = 0; s < T; s++) {
            double w = want_att[t][s];
            if (w == 0 || w == 1 || w == 0.5) { /* exactly representable: exact */
                assert_true(att[t * T + s] == (float)w);
                assert_true(att8[t * T + s] == w);
            } else {
                assert_true(fabs(att[t * T + s] - w) <= 1e-7 * w);
                assert_true(fabs(att8[t * T + s] - w) <= 1e-15 * w);
            }
        }
        assert_true(isfinite(out[t]) && fabs(out[t] - want_out[t]) <= 1e-6 * want_out[t]);
        assert_true(isfinite(out8[t]) && fabs(out8[t] - want_out[t]) <= 1e-14 * want_out[t]);
    }
}

/* Random attention of `batch` sequences: decode at t = 0..T-1 against the
 * forward's rows (fp32 within 1e-6 of the output's sum |att v|, fp64 1e-14). */
static void test_attention_decode_rows(void **state)
{
    enum { B = 2, T = 70, NH = 2, D = 8 };
    uint64_t rng = 401;
    size_t nqkv = (size_t)B * T * 3 * D, natt = (size_t)B * NH * T * T, nout = (size_t)B * T * D;
    float *qkv = malloc(sizeof(float) * nqkv), *att = malloc(sizeof(float) * natt),
          *out = malloc(sizeof(float) * nout), *kc = malloc(sizeof(float) * nout),
          *vc = malloc(sizeof(float) * nout), *scratch = malloc(sizeof(float) * B * NH * T),
          *x = malloc(sizeof(float) * B * 3 * D), *o = malloc(sizeof(float) * B * D);
    double *qkv8 = malloc(sizeof(double) * nqkv), *att8 = malloc(sizeof(double) * natt),
           *out8 = malloc(sizeof(double) * nout), *kc8 = malloc(sizeof(double) * nout),
           *vc8 = malloc(sizeof(double) * nout), *scratch8 = malloc(sizeof(double) * B * NH * T),
           *x8 = malloc(sizeof(double) * B * 3 * D), *o8 = malloc(sizeof(double) * B * D);
    assert_true(qkv && att && out && kc && vc && scratch && x && o && qkv8 && att8 && out8 && kc8 &&
                vc8 && scratch8 && x8 && o8);
    for (size_t i = 0; i < nqkv; i++)
        qkv8[i] = qkv[i] = erase_rng_uniform(&rng, -2, 2);
    for (size_t i = 0; i < nout; i++) { /* rows past t must not be read: NaN */
        kc[i] = vc[i] = NAN;
        kc8[i] = vc8[i] = NAN;
    }
    erase_k_attention_forward_f32(B, T, NH, D, qkv, att, out);
    erase_k_attention_forward_f64(B, T, NH, D, qkv8, att8, out8);
    double worst = 0, worst8 = 0;
    for (int t = 0; t < T; t++) {
        for (int b = 0; b < B; b++)
            for (int i = 0; i < 3 * D; i++) {
                x[b * 3 * D + i] = qkv[((size_t)b * T + t) * 3 * D + i];
                x8[b * 3 * D + i] = qkv8[((size_t)b * T + t) * 3 * D + i];
            }
        erase_k_attention_decode_f32(B, t, T, NH, D, x, kc, vc, scratch, o);
        erase_k_attention_decode_f64(B, t, T, NH, D, x8, kc8, vc8, scratch8, o8);
        for (int b = 0; b < B; b++)
            for (int d = 0; d < D; d++) {
                size_t r = ((size_t)b * T + t) * D + d;
                assert_true(kc[r] == x[b * 3 * D + D + d] && vc[r] == x[b * 3 * D + 2 * D + d]);
                double mag = 0; /* sum over s <= t of |att v| for this output */
                for (int s = 0; s <= t; s++)
                    mag += att8[(((size_t)b * NH + d / (D / NH)) * T + t) * T + s] *
                           fabs(qkv8[((size_t)b * T + s) * 3 * D + 2 * D + d]);
                double e = fabs((double)o[b * D + d] - out[r]) / mag;
                double e8 = fabs(o8[b * D + d] - out8[r]) / mag;
                worst = e > worst || isnan(e) ? e : worst;
                worst8 = e8 > worst8 || isnan(e8) ? e8 : worst8;
            }
    }
    print_message("attention decode at t = 0..%d vs the forward's row t: max relative error "
                  "fp32 %.3g (bound 1e-6), fp64 %.3g (bound 1e-14)\n", T - 1, worst, worst8);
    assert_true(worst <= 1e-6);
    assert_true(worst8 <= 1e-14);
    free(qkv), free(att), free(out), free(kc), free(vc), free(scratch), free(x), free(o);
    free(qkv8), free(att8), free(out8), free(kc8), free(vc8), free(scratch8), free(x8), free(o8);
}

static erase_device_t *dev;

/* The attention kernels call the BLAS, which the first CPU device loads. */
static int setup(void **state)
{
    erase_device_options_t o = erase_device_options_default();
    o.blas_threads = 1;
    if (erase_device_open(&o, &dev) != ERASE_OK) {
        fprintf(stderr, "cannot open the CPU device: %s\n", erase_error_message());
        return -1;
    }
    return 0;
}

static int teardown(void **state)
{
    erase_device_close(dev);
    return 0;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_philox_known_answers),
        cmocka_unit_test(test_philox_uniform_layout),
        cmocka_unit_test(test_dropout_mask),
        cmocka_unit_test(test_bce_extreme_logits),
        cmocka_unit_test(test_softmax_xent_extreme_logits),
        cmocka_unit_test(test_attention_one_position),
        cmocka_unit_test(test_attention_large_scores),
        cmocka_unit_test(test_attention_decode_rows),
    };
    return cmocka_run_group_tests_name("op numerics", tests, setup, teardown);
}
