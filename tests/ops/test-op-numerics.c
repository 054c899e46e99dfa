/*
 * Numerics of the ops that must hold exactly rather than to a tolerance:
 * Philox4x32-10 against Random123's published known-answer vectors (its
 * tests/kat_vectors), the dropout mask (reproducible for a (seed, offset),
 * the drop rate p, different for another offset or seed), and the losses
 * at extreme logits (finite and equal to the exact value, with gradients
 * within [-1, 1] / batch).
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

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_philox_known_answers),
        cmocka_unit_test(test_philox_uniform_layout),
        cmocka_unit_test(test_dropout_mask),
        cmocka_unit_test(test_bce_extreme_logits),
        cmocka_unit_test(test_softmax_xent_extreme_logits),
    };
    return cmocka_run_group_tests_name("op numerics", tests, NULL, NULL);
}
