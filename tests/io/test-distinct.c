/*
 * Distinct ids (io/distinct.h, io/ctr_stats.h): exact counts while small
 * (duplicates, the ids 0 and 0xFFFFFFFF, exactly at the limit); past the
 * limit a HyperLogLog estimate of 1,000,000 distinct ids within 3 sigma,
 * 2.43% (the relative standard error with 2^14 registers is
 * 1.04/sqrt(2^14) = 0.81%), for each of 10 disjoint sets, and their mean
 * error within 3 sigma/sqrt(10) (the hash is fixed: the values are
 * deterministic; [0, 1M) is +2.27%, the others within 1.5%); merging two halves gives the count of the whole (exact
 * sets: exactly; sketches: the same estimate); per CTR feature the missing
 * value is not an id.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "io/ctr_stats.h"
#include "io/distinct.h"
#include "tests/io/io_util.h"

/* Count the ids lo, lo + step, ... (n of them) into d, each twice. */
static void add_range(erase_distinct_t *d, uint32_t lo, uint32_t step, int64_t n)
{
    uint32_t buf[1000];
    for (int64_t b = 0; b < n; b += 500) {
        int m = 0;
        for (int64_t i = b; i < n && i < b + 500; i++) {
            buf[m++] = lo + (uint32_t)i * step;
            buf[m++] = lo + (uint32_t)i * step;
        }
        MUST(erase_distinct_add(d, buf, m));
    }
}

static void test_exact(void **state)
{
    (void)state;
    erase_distinct_t *d;
    MUST(erase_distinct_create(&d));
    int est;
    assert_int_equal(erase_distinct_count(d, &est), 0);
    assert_int_equal(est, 0);
    const uint32_t ids[] = { 7, 0, 0xFFFFFFFFu, 7, 0xFFFFFFFEu, 0, 0xFFFFFFFFu, 12345 };
    MUST(erase_distinct_add(d, ids, 8));
    assert_int_equal(erase_distinct_count(d, &est), 5);
    assert_int_equal(est, 0);
    erase_distinct_destroy(d);

    /* exactly at the limit: still exact; one more: an estimate */
    MUST(erase_distinct_create(&d));
    add_range(d, 1000, 3, ERASE_DISTINCT_EXACT_MAX);
    assert_int_equal(erase_distinct_count(d, &est), ERASE_DISTINCT_EXACT_MAX);
    assert_int_equal(est, 0);
    uint32_t one = 2;
    MUST(erase_distinct_add(d, &one, 1));
    int64_t n = erase_distinct_count(d, &est);
    printf("# %d distinct ids exact; %d: estimate %lld\n", ERASE_DISTINCT_EXACT_MAX, ERASE_DISTINCT_EXACT_MAX + 1,
           (long long)n);
    assert_int_equal(est, 1);
    assert_true(n > 0.98 * (ERASE_DISTINCT_EXACT_MAX + 1) && n < 1.02 * (ERASE_DISTINCT_EXACT_MAX + 1));
    erase_distinct_destroy(d);
}

static void test_estimate_1m(void **state)
{
    (void)state;
    /* 10 disjoint sets of 1M ids: each estimate within 3 sigma (2.43%), their mean
     * error within 3 sigma / sqrt(10) (0.77%): the estimator is unbiased */
    double sum = 0;
    for (int t = 0; t < 10; t++) {
        erase_distinct_t *d;
        MUST(erase_distinct_create(&d));
        add_range(d, (uint32_t)t * 1000000u, 1, 1000000);
        int est;
        int64_t n = erase_distinct_count(d, &est);
        double err = (double)n / 1e6 - 1;
        printf("# ids [%d M, %d M): estimate %lld (%+.3f%%; bound 3 x 0.81%% = 2.43%%)\n", t, t + 1, (long long)n,
               100 * err);
        assert_int_equal(est, 1);
        assert_true(err > -0.0243 && err < 0.0243);
        sum += err;
        erase_distinct_destroy(d);
    }
    printf("# mean error %+.3f%% (bound 0.77%%)\n", 100 * sum / 10);
    assert_true(sum / 10 > -0.0077 && sum / 10 < 0.0077);
}

static void test_merge(void **state)
{
    (void)state;
    int est;
    /* exact: [0, 1000) and [500, 1500) -> 1500 */
    erase_distinct_t *a, *b;
    MUST(erase_distinct_create(&a));
    MUST(erase_distinct_create(&b));
    add_range(a, 0, 1, 1000);
    add_range(b, 500, 1, 1000);
    MUST(erase_distinct_merge(a, b));
    assert_int_equal(erase_distinct_count(a, &est), 1500);
    assert_int_equal(est, 0);
    erase_distinct_destroy(a);
    erase_distinct_destroy(b);

    /* sketches: two halves of 1M merged = the whole, to the unit */
    erase_distinct_t *whole, *lo, *hi;
    MUST(erase_distinct_create(&whole));
    MUST(erase_distinct_create(&lo));
    MUST(erase_distinct_create(&hi));
    add_range(whole, 0, 7, 1000000);
    add_range(lo, 0, 7, 500000);
    add_range(hi, 500000 * 7, 7, 500000);
    MUST(erase_distinct_merge(lo, hi));
    int64_t w = erase_distinct_count(whole, &est), m = erase_distinct_count(lo, &est);
    printf("# 1M ids: whole %lld, two halves merged %lld\n", (long long)w, (long long)m);
    assert_int_equal(est, 1);
    assert_int_equal(m, w);

    /* two exact sets whose union passes the limit, and an exact set into a sketch */
    erase_distinct_t *x, *y, *s;
    MUST(erase_distinct_create(&x));
    MUST(erase_distinct_create(&y));
    MUST(erase_distinct_create(&s));
    add_range(x, 0, 1, 40000);
    add_range(y, 40000, 1, 40000);
    add_range(s, 0, 1, 80000);
    MUST(erase_distinct_merge(x, y));
    int est_x, est_s;
    assert_int_equal(erase_distinct_count(x, &est_x), erase_distinct_count(s, &est_s));
    assert_int_equal(est_x, 1);
    assert_int_equal(est_s, 1);
    MUST(erase_distinct_merge(y, s)); /* exact dst, sketch src */
    assert_int_equal(erase_distinct_count(y, &est), erase_distinct_count(s, &est_s));
    assert_int_equal(est, 1);
    erase_distinct_destroy(x);
    erase_distinct_destroy(y);
    erase_distinct_destroy(s);
    erase_distinct_destroy(whole);
    erase_distinct_destroy(lo);
    erase_distinct_destroy(hi);
}

static void test_ctr_features(void **state)
{
    (void)state;
    enum { N = 600 };
    uint32_t *sparse = malloc(sizeof(uint32_t) * N * ERASE_CTR_SHARD_FIELDS);
    assert_non_null(sparse);
    /* feature k: ids i % (k + 1), missing on every third row; the last feature always missing */
    for (int i = 0; i < N; i++)
        for (int k = 0; k < ERASE_CTR_SHARD_FIELDS; k++)
            sparse[i * ERASE_CTR_SHARD_FIELDS + k] = (i % 3 == 2 || k == ERASE_CTR_SHARD_FIELDS - 1)
                ? ERASE_CTR_SPARSE_MISSING : (uint32_t)(i % (3 * (k + 1)));
    erase_ctr_distinct_t all, half;
    MUST(erase_ctr_distinct_init(&all));
    MUST(erase_ctr_distinct_init(&half));
    MUST(erase_ctr_distinct_add(&all, N / 2, sparse));
    MUST(erase_ctr_distinct_add(&half, N - N / 2, sparse + (N / 2) * ERASE_CTR_SHARD_FIELDS));
    MUST(erase_ctr_distinct_merge(&all, &half));
    for (int k = 0; k < ERASE_CTR_SHARD_FIELDS; k++) {
        int est;
        /* i % (3(k+1)) over i with i % 3 != 2: residues r with r % 3 != 2, 2(k + 1) of them */
        assert_int_equal(erase_distinct_count(all.field[k], &est), k == ERASE_CTR_SHARD_FIELDS - 1 ? 0 : 2 * (k + 1));
        assert_int_equal(est, 0);
    }
    erase_ctr_distinct_free(&all);
    erase_ctr_distinct_free(&half);
    erase_ctr_distinct_free(&all); /* freed ones: nothing */
    free(sparse);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_exact),
        cmocka_unit_test(test_estimate_1m),
        cmocka_unit_test(test_merge),
        cmocka_unit_test(test_ctr_features),
    };
    return cmocka_run_group_tests_name("distinct ids: exact sets and HyperLogLog", tests, NULL, NULL);
}
