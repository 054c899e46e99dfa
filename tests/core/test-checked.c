/*
 * lib/core/checked.h: the overflow-checked size arithmetic, at the edges
 * of each type (the last value that fits and the first that does not).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "lib/core/checked.h"

static void test_i64(void **state)
{
    int64_t v;
    assert_true(erase_mul_i64(INT64_MAX / 2, 2, &v));
    assert_int_equal(v, INT64_MAX - 1);
    assert_false(erase_mul_i64(INT64_C(4611686018427387904), 2, &v)); /* 2^62 x 2 */
    assert_false(erase_mul_i64(INT64_C(4294967296), INT64_C(4294967296), &v)); /* [2^32, 2^32] */
    assert_true(erase_mul_i64(INT64_MIN / 2, 2, &v));
    assert_int_equal(v, INT64_MIN);
    assert_true(erase_add_i64(INT64_MAX - 1, 1, &v));
    assert_int_equal(v, INT64_MAX);
    assert_false(erase_add_i64(INT64_MAX, 1, &v)); /* the sample index + 1 of --batch 2^63-1 */
    int w;
    assert_true(erase_add_int(2147483647 - 351, 351, &w));
    assert_int_equal(w, 2147483647);
    assert_false(erase_add_int(2147483647, 351, &w)); /* embedding_dim + 351 */
}

static void test_bytes(void **state)
{
    size_t b;
    assert_true(erase_bytes(4, 1000, 13, &b));
    assert_int_equal(b, 52000);
    assert_true(erase_bytes(4, INT64_C(4294967296), INT64_C(1073741823), &b)); /* 2^64 - 2^34 */
    assert_int_equal(b, (size_t)0 - ((size_t)1 << 34));
    assert_false(erase_bytes(4, INT64_C(4294967296), INT64_C(1073741824), &b)); /* 2^64 */
    assert_false(erase_bytes(1, INT64_C(4294967296), INT64_C(4294967296), &b));
    assert_false(erase_bytes(4, -1, 1, &b));
    assert_false(erase_bytes(4, 1, -1, &b));
    assert_true(erase_bytes(8, 0, INT64_MAX, &b));
    assert_int_equal(b, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_i64),
        cmocka_unit_test(test_bytes),
    };
    return cmocka_run_group_tests_name("checked size arithmetic", tests, NULL, NULL);
}
