/*
 * Next-token sampling (lib/nn/sampler.c): greedy at temperature 0 and top-k
 * 1 (ties to the lower id, no random draw), only the top k tokens drawn,
 * in proportion to softmax(z / T) (frequencies of 40,000 draws against the
 * probabilities computed here in double), the same seed giving the same
 * tokens and another seed other ones, and the errors' exact text.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "lib/nn/sampler.h"

static void test_greedy(void **state)
{
    (void)state;
    const float z[6] = { 0.5f, 3.0f, -1.0f, 3.0f, 2.9f, -7.0f };
    erase_sampler_t s;
    int32_t tok = -1;
    for (int k = 0; k <= 6; k++) {
        assert_int_equal(erase_sampler_init(&s, 6, 0.0f, k, 1), ERASE_OK);
        uint64_t before = s.rng;
        assert_int_equal(erase_sampler_next(&s, z, &tok), ERASE_OK);
        assert_int_equal(tok, 1); /* 3.0 twice: the lower id */
        assert_true(s.rng == before); /* no draw */
        erase_sampler_free(&s);
    }
    assert_int_equal(erase_sampler_init(&s, 6, 5.0f, 1, 1), ERASE_OK);
    for (int i = 0; i < 10; i++) {
        assert_int_equal(erase_sampler_next(&s, z, &tok), ERASE_OK);
        assert_int_equal(tok, 1);
    }
    erase_sampler_free(&s);
}

/* Draw n tokens; counts[vocab]. */
static void draw(int vocab, const float *z, float t, int k, uint64_t seed, int n, int *counts, int32_t *seq)
{
    erase_sampler_t s;
    assert_int_equal(erase_sampler_init(&s, vocab, t, k, seed), ERASE_OK);
    memset(counts, 0, sizeof(int) * (size_t)vocab);
    for (int i = 0; i < n; i++) {
        int32_t tok = -1;
        assert_int_equal(erase_sampler_next(&s, z, &tok), ERASE_OK);
        assert_true(tok >= 0 && tok < vocab);
        counts[tok]++;
        if (seq)
            seq[i] = tok;
    }
    erase_sampler_free(&s);
}

static void test_top_k_frequencies(void **state)
{
    (void)state;
    enum { V = 5, N = 40000 };
    const float z[V] = { 1.0f, -0.5f, 2.0f, 0.25f, 1.0f };
    int counts[V];
    /* top 3: ids 2, 0, 4 (1.0 twice: 0 before 4 ranks first, both in) */
    const struct { int k; float t; } cases[] = { { 3, 1.0f }, { 3, 0.5f }, { 0, 2.0f }, { 2, 1.0f } };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        int k = cases[c].k ? cases[c].k : V;
        const int rank[V] = { 2, 0, 4, 3, 1 };
        double w[V] = { 0 }, total = 0;
        for (int i = 0; i < k; i++)
            total += w[rank[i]] = exp(((double)z[rank[i]] - 2.0) / cases[c].t);
        draw(V, z, cases[c].t, cases[c].k, 7, N, counts, NULL);
        for (int v = 0; v < V; v++) {
            double p = w[v] / total, f = (double)counts[v] / N;
            printf("# top-k %d, T %g: token %d drawn %.4f, softmax %.4f\n", cases[c].k, (double)cases[c].t, v, f, p);
            if (p == 0)
                assert_int_equal(counts[v], 0); /* outside the top k: never */
            else
                assert_true(fabs(f - p) < 0.01); /* 4 standard deviations at most */
        }
    }
}

static void test_seeds(void **state)
{
    (void)state;
    enum { V = 256, N = 64 };
    float flat[V];
    for (int v = 0; v < V; v++)
        flat[v] = 0.0f;
    int counts[V];
    int32_t a[N], b[N], c[N];
    draw(V, flat, 1.0f, 0, 42, N, counts, a);
    draw(V, flat, 1.0f, 0, 42, N, counts, b);
    draw(V, flat, 1.0f, 0, 43, N, counts, c);
    assert_memory_equal(a, b, sizeof a);
    int same = 0;
    for (int i = 0; i < N; i++)
        same += a[i] == c[i];
    printf("# seeds 42 and 43: %d of %d tokens equal\n", same, N);
    assert_true(same < 8);
}

static void test_errors(void **state)
{
    (void)state;
    erase_sampler_t s;
    assert_int_equal(erase_sampler_init(&s, 4, -0.5f, 0, 1), ERASE_ERR_INVALID);
    assert_string_equal(erase_error_reason(), "sampler: temperature -0.5: expected a finite number >= 0");
    assert_int_equal(erase_sampler_init(&s, 4, NAN, 0, 1), ERASE_ERR_INVALID);
    assert_string_equal(erase_error_reason(), "sampler: temperature nan: expected a finite number >= 0");
    assert_int_equal(erase_sampler_init(&s, 4, 1.0f, -2, 1), ERASE_ERR_INVALID);
    assert_string_equal(erase_error_reason(), "sampler: top-k -2: expected >= 0 (0: the whole vocabulary)");
    assert_int_equal(erase_sampler_init(&s, 0, 1.0f, 0, 1), ERASE_ERR_INVALID);
    assert_string_equal(erase_error_reason(), "sampler: a vocabulary of 0 tokens (expected >= 1)");
    const float z[4] = { 0.0f, 1.0f, NAN, 2.0f };
    int32_t tok;
    assert_int_equal(erase_sampler_init(&s, 4, 1.0f, 0, 1), ERASE_OK);
    assert_int_equal(erase_sampler_next(&s, z, &tok), ERASE_ERR_INVALID);
    assert_string_equal(erase_error_reason(), "sampler: the logit of token 2 is nan (expected a finite number)");
    erase_sampler_free(&s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_greedy),
        cmocka_unit_test(test_top_k_frequencies),
        cmocka_unit_test(test_seeds),
        cmocka_unit_test(test_errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
