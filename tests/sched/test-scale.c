/*
 * The cost model of data-parallel steps (lib/sched/scale.h) against hand
 * computations: the ring, tree and hierarchical all-reduce and the
 * hierarchical all-gather formulas; a block's reduction (dense all-reduce
 * plus all-gathers paying their latency each, the bytes once); the early
 * plan's step on a 2-block toy (cut and attached; compute concurrent and
 * shared; updates on the comm stream) against off's; one rank; the errors.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <math.h>
#include <string.h>

#include <cmocka.h>

#include "lib/sched/scale.h"

static void near(double a, double b) { assert_true(fabs(a - b) <= 1e-12 * fmax(1.0, fabs(b))); }

static erase_scale_cluster_t flat(int n, double alpha, double beta)
{
    return (erase_scale_cluster_t){ .nodes = n, .gpus = 1, .inter = { alpha, beta }, .algo = ERASE_SCALE_RING };
}

static void test_ring_and_tree(void **state)
{
    (void)state;
    erase_scale_cluster_t c = flat(4, 1e-6, 1e-9);
    /* 2(n-1) alpha + 2(n-1)/n S beta = 6 us + 1.5 ms */
    near(erase_scale_allreduce_s(&c, 1e6), 1.506e-3);
    c.nodes = 5;
    c.algo = ERASE_SCALE_TREE; /* 2 ceil(log2 5) alpha + 2 S beta = 6 us + 2 ms */
    near(erase_scale_allreduce_s(&c, 1e6), 2.006e-3);
    c.nodes = 2; /* 2 ranks: the tree carries 2 S, the ring S */
    near(erase_scale_allreduce_s(&c, 1e6), 2e-6 + 2e-3);
    c.algo = ERASE_SCALE_RING;
    near(erase_scale_allreduce_s(&c, 1e6), 2e-6 + 1e-3);
    /* ring all-gather of m per rank: (n-1)(alpha + m beta) */
    c.nodes = 4;
    near(erase_scale_allgather_s(&c, 1e6), 3 * (1e-6 + 1e-3));
    /* one rank, no bytes: nothing */
    c.nodes = 1;
    near(erase_scale_allreduce_s(&c, 1e6), 0);
    near(erase_scale_allgather_s(&c, 1e6), 0);
    c.nodes = 4;
    near(erase_scale_allreduce_s(&c, 0), 0);
}

static void test_hierarchical(void **state)
{
    (void)state;
    erase_scale_cluster_t c = { .nodes = 2, .gpus = 4, .intra = { 1e-6, 1e-10 }, .inter = { 1e-5, 1e-9 } };
    /* within: 2 x (3 alpha_i + 3/4 S beta_i) = 2 x (3 us + 600 us);
     * across: ring of 2 on S/4 = 2e6 B: 2 alpha_e + 2e6 beta_e = 20 us + 2 ms */
    near(erase_scale_allreduce_s(&c, 8e6), 1.206e-3 + 2.02e-3);
    c.algo = ERASE_SCALE_TREE; /* across: 2 alpha_e + 2 x 2e6 beta_e */
    near(erase_scale_allreduce_s(&c, 8e6), 1.206e-3 + 2e-5 + 4e-3);
    /* all-gather of 1e6 per rank: across (1)(alpha_e + m beta_e), within
     * 3 (alpha_i + 2 m beta_i) */
    near(erase_scale_allgather_s(&c, 1e6), 1.01e-3 + 3 * (1e-6 + 2e-4));
    /* one node of 4: the intra ring only */
    c.nodes = 1;
    near(erase_scale_allreduce_s(&c, 8e6), 1.206e-3);
    /* a block: dense all-reduce + 3 all-gathers, the bytes once */
    c.nodes = 2;
    erase_scale_block_t b = { .grad_bytes = 8e6, .gather_bytes = 1e6, .gathers = 3 };
    double latency = 1e-5 + 3 * 1e-6;
    near(erase_scale_reduce_s(&c, &b), 1.206e-3 + 2e-5 + 4e-3 + 1.01e-3 + 3 * (1e-6 + 2e-4) + 2 * latency);
}

/* Two blocks, forward 1 s, backward 2 s each; a ring of 2 ranks with
 * alpha 0 and beta 1 s/B: a block's all-reduce takes grad_bytes seconds. */
static void toy(erase_scale_block_t *b, double r, double u)
{
    for (int k = 0; k < 2; k++)
        b[k] = (erase_scale_block_t){ .forward_s = 1, .backward_s = 2, .update_s = u, .grad_bytes = r };
}

static void test_toy_overlap(void **state)
{
    (void)state;
    erase_scale_cluster_t c = flat(2, 0, 1);
    erase_scale_block_t b[2];
    erase_scale_step_t s;
    int cut[2] = { 0, 1 }, attached[2] = { 0, 0 };

    /* concurrent: F0 0-1, F1 1-2 (main); B0 1-3, B1 3-5 (side); R0 3-4,
     * R1 5-6 (comm): 6; off: 6 compute + 2 = 8; alone: 5 */
    toy(b, 1, 0);
    assert_int_equal(erase_scale_step(b, 2, cut, &c, 1, &s), ERASE_OK);
    near(s.compute_s, 6);
    near(s.comm_s, 2);
    near(s.early_s, 6);
    near(s.off_s, 8);
    near(s.gain, 8.0 / 6);
    near(s.exposed_s, 1);
    near(s.efficiency, 5.0 / 6);
    /* shared: F0 0-1, B0 1-3, F1 3-4, B1 4-6; R0 3-4, R1 6-7: 7; alone 6 */
    assert_int_equal(erase_scale_step(b, 2, cut, &c, 0, &s), ERASE_OK);
    near(s.early_s, 7);
    near(s.gain, 8.0 / 7);
    near(s.exposed_s, 1);
    near(s.efficiency, 6.0 / 7);
    /* NULL cuts: every boundary a cut */
    assert_int_equal(erase_scale_step(b, 2, NULL, &c, 0, &s), ERASE_OK);
    near(s.early_s, 7);
    /* long reductions: R0 3-6, R1 6-9 in both */
    toy(b, 3, 0);
    assert_int_equal(erase_scale_step(b, 2, cut, &c, 1, &s), ERASE_OK);
    near(s.early_s, 9);
    near(s.off_s, 12);
    near(s.exposed_s, 4);
    /* attached: F0 F1 0-2, B1 2-4, B0 4-6; R1 4-5 first, then R0 6-7 */
    toy(b, 1, 0);
    assert_int_equal(erase_scale_step(b, 2, attached, &c, 1, &s), ERASE_OK);
    near(s.early_s, 7);
    near(s.off_s, 8);
    /* updates 0.5 s on the comm stream: R0 3-4 U0 4-4.5, R1 5-6 U1 6-6.5;
     * without communication: U0 3-3.5, U1 5-5.5 */
    toy(b, 1, 0.5);
    assert_int_equal(erase_scale_step(b, 2, cut, &c, 1, &s), ERASE_OK);
    near(s.early_s, 6.5);
    near(s.off_s, 9);
    near(s.exposed_s, 1);
    near(s.efficiency, 5.5 / 6.5);
    /* one rank: no communication, early = alone */
    c.nodes = 1;
    assert_int_equal(erase_scale_step(b, 2, cut, &c, 1, &s), ERASE_OK);
    near(s.comm_s, 0);
    near(s.early_s, 5.5);
    near(s.efficiency, 1);
}

/* Updates under shared compute take the compute resource too (no gain
 * without communication), and the exposed communication of a segment of
 * several blocks (attached) is never negative. */
static void test_toy_updates(void **state)
{
    (void)state;
    erase_scale_cluster_t c = flat(2, 0, 1);
    erase_scale_block_t b[2];
    erase_scale_step_t s;
    int cut[2] = { 0, 1 }, attached[2] = { 0, 0 };
    /* shared: F0 0-1, B0 1-3, F1 3-4, B1 4-6; R0 3-4, R1 6-7; U0 and U1
     * 0.5 each on the same resource: all compute takes 7, U1 follows R1:
     * 7.5; alone (R 0): 7, off 7 + 2 */
    toy(b, 1, 0.5);
    assert_int_equal(erase_scale_step(b, 2, cut, &c, 0, &s), ERASE_OK);
    near(s.early_s, 7.5);
    near(s.off_s, 9);
    near(s.exposed_s, 0.5);
    near(s.efficiency, 7 / 7.5);
    /* one rank: early = off = 7, no gain */
    c.nodes = 1;
    assert_int_equal(erase_scale_step(b, 2, cut, &c, 0, &s), ERASE_OK);
    near(s.early_s, 7);
    near(s.gain, 1);
    near(s.exposed_s, 0);
    /* attached, concurrent: F0 F1 0-2 (main), B1 2-4, B0 4-6 (side); comm:
     * R1 4-5 U1 5-5.5, R0 6-7 U0 7-7.5; alone: U1 4-4.5, U0 6-6.5 */
    c.nodes = 2;
    assert_int_equal(erase_scale_step(b, 2, attached, &c, 1, &s), ERASE_OK);
    near(s.early_s, 7.5);
    near(s.exposed_s, 1);
    /* the same shared: F0 F1 0-2, B1 2-4, B0 4-6; R1 4-5, R0 6-7; updates
     * after all compute (6 + 1 = 7) and U0 after R0: 7.5; alone 7 */
    assert_int_equal(erase_scale_step(b, 2, attached, &c, 0, &s), ERASE_OK);
    near(s.early_s, 7.5);
    near(s.exposed_s, 0.5);
}

static void test_errors(void **state)
{
    (void)state;
    erase_scale_cluster_t c = flat(2, 0, 1);
    erase_scale_block_t b[2];
    erase_scale_step_t s;
    toy(b, 1, 0);
    assert_int_equal(erase_scale_step(b, 0, NULL, &c, 1, &s), ERASE_ERR_INVALID);
    assert_string_equal(erase_error_reason(), "scale: 0 blocks (expected 1 .. 64)");
    c.gpus = 0;
    assert_int_equal(erase_scale_step(b, 2, NULL, &c, 1, &s), ERASE_ERR_INVALID);
    assert_string_equal(erase_error_reason(), "scale: 2 nodes x 0 ranks (expected at least 1 x 1)");
    c.gpus = 1;
    c.inter.alpha_s = -1;
    assert_int_equal(erase_scale_step(b, 2, NULL, &c, 1, &s), ERASE_ERR_INVALID);
    assert_string_equal(erase_error_reason(), "scale: a link's latency or seconds per byte is negative or not "
                                              "finite (intra 0 s, 0 s/B; inter -1 s, 1 s/B)");
    c.inter.alpha_s = 0;
    b[1].backward_s = NAN;
    assert_int_equal(erase_scale_step(b, 2, NULL, &c, 1, &s), ERASE_ERR_INVALID);
    assert_string_equal(erase_error_reason(), "scale: block 1: a time or byte count is negative or not finite "
                                              "(forward 1 s, backward nan s, update 0 s, 1 gradient bytes, 0 "
                                              "gathered bytes in 0 all-gathers)");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ring_and_tree),
        cmocka_unit_test(test_hierarchical),
        cmocka_unit_test(test_toy_overlap),
        cmocka_unit_test(test_toy_updates),
        cmocka_unit_test(test_errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
