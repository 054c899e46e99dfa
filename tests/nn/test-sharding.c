/*
 * The placement of embedding tables over ranks (lib/nn/sharding.c):
 * table-wise greedy owners worked out by hand (sizes, then sizes x
 * lookups), row-wise parts and owners at the boundaries (first row, last
 * row = the missing-value row, a part's edges, fewer rows than ranks),
 * every row of small tables owned exactly once, auto's threshold, and the
 * errors' exact text.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "lib/nn/sharding.h"

static void owners_are(const erase_shard_t *s, int n, const int *want)
{
    for (int t = 0; t < n; t++) {
        assert_int_equal(s[t].kind, ERASE_SHARD_TABLE);
        assert_int_equal(s[t].owner, want[t]);
    }
}

static void test_table(void **state)
{
    (void)state;
    erase_shard_t s[5];
    /* weights 40, 28, 28, 12: 40 -> r0; 28 -> r1; 28 -> r1 (28 < 40); 12 -> r0 (40 < 56) */
    const int64_t rows[4] = { 10, 7, 7, 3 };
    assert_int_equal(erase_shard_plan(ERASE_SHARD_TABLE, 4, rows, NULL, 4, 2, 0, s), ERASE_OK);
    owners_are(s, 4, (const int[]){ 0, 1, 1, 0 });
    assert_int_equal(erase_shard_rows_on(&s[1], 1), 7);
    assert_int_equal(erase_shard_rows_on(&s[1], 0), 0);
    int64_t local = -1;
    assert_int_equal(erase_shard_owner(&s[2], 6, &local), 1);
    assert_int_equal(local, 6);
    /* lookups weigh: 10 x 1 against 7 x 3: the second table is heavier */
    assert_int_equal(erase_shard_plan(ERASE_SHARD_TABLE, 2, rows, (const double[]){ 1, 3 }, 4, 2, 0, s), ERASE_OK);
    owners_are(s, 2, (const int[]){ 1, 0 });
    /* more ranks than tables: each table a rank of its own, the rest none */
    assert_int_equal(erase_shard_plan(ERASE_SHARD_TABLE, 3, rows, NULL, 4, 5, 0, s), ERASE_OK);
    owners_are(s, 3, (const int[]){ 0, 1, 2 });
    /* equal tables: in order, round the ranks */
    const int64_t same[5] = { 5, 5, 5, 5, 5 };
    assert_int_equal(erase_shard_plan(ERASE_SHARD_TABLE, 5, same, NULL, 1, 2, 0, s), ERASE_OK);
    owners_are(s, 5, (const int[]){ 0, 1, 0, 1, 0 });
}

static void test_row(void **state)
{
    (void)state;
    erase_shard_t s;
    const int64_t rows = 10007; /* the reference table: row 10006 is the missing value's */
    assert_int_equal(erase_shard_plan(ERASE_SHARD_ROW, 1, &rows, NULL, 64, 4, 0, &s), ERASE_OK);
    assert_int_equal(s.kind, ERASE_SHARD_ROW);
    assert_int_equal(s.owner, -1);
    const int64_t first[4] = { 0, 2501, 5003, 7505 }, n[4] = { 2501, 2502, 2502, 2502 };
    for (int r = 0; r < 4; r++) {
        assert_int_equal(erase_shard_first_row(&s, r), first[r]);
        assert_int_equal(erase_shard_rows_on(&s, r), n[r]);
    }
    const int64_t row[6] = { 0, 2500, 2501, 5003, 7504, 10006 };
    const int owner[6] = { 0, 0, 1, 2, 2, 3 };
    const int64_t local[6] = { 0, 2500, 0, 0, 2501, 2501 };
    for (int i = 0; i < 6; i++) {
        int64_t l = -1;
        assert_int_equal(erase_shard_owner(&s, row[i], &l), owner[i]);
        assert_int_equal(l, local[i]);
    }
    /* fewer rows than ranks: 2 rows over 3 ranks, rank 0 holds none */
    const int64_t two = 2;
    assert_int_equal(erase_shard_plan(ERASE_SHARD_ROW, 1, &two, NULL, 4, 3, 0, &s), ERASE_OK);
    assert_int_equal(erase_shard_rows_on(&s, 0), 0);
    assert_int_equal(erase_shard_owner(&s, 0, NULL), 1);
    assert_int_equal(erase_shard_owner(&s, 1, NULL), 2);
}

/* Every row of every small table is owned exactly once, by a rank whose
 * part holds it at the local index given. */
static void test_row_cover(void **state)
{
    (void)state;
    for (int64_t R = 1; R <= 40; R++)
        for (int D = 1; D <= 9; D++) {
            erase_shard_t s;
            assert_int_equal(erase_shard_plan(ERASE_SHARD_ROW, 1, &R, NULL, 4, D, 0, &s), ERASE_OK);
            int64_t total = 0;
            for (int r = 0; r < D; r++) {
                total += erase_shard_rows_on(&s, r);
                assert_true(erase_shard_rows_on(&s, r) >= R / D && erase_shard_rows_on(&s, r) <= R / D + 1);
            }
            assert_int_equal(total, R);
            for (int64_t row = 0; row < R; row++) {
                int64_t l = -1;
                int r = erase_shard_owner(&s, row, &l);
                assert_true(r >= 0 && r < D);
                assert_true(l >= 0 && l < erase_shard_rows_on(&s, r));
                assert_int_equal(erase_shard_first_row(&s, r) + l, row);
            }
        }
}

static void test_auto_and_replicated(void **state)
{
    (void)state;
    erase_shard_t s[4];
    /* 1030 rows x 64 B over 2 ranks: threshold 32,960 B; the 64,000 B table is row-wise */
    const int64_t rows[4] = { 1000, 10, 10, 10 };
    assert_int_equal(erase_shard_plan(ERASE_SHARD_AUTO, 4, rows, NULL, 64, 2, 0, s), ERASE_OK);
    assert_int_equal(s[0].kind, ERASE_SHARD_ROW);
    owners_are(s + 1, 3, (const int[]){ 0, 1, 0 });
    /* a threshold given: 640 B keeps the small tables whole, 639 B splits them all */
    assert_int_equal(erase_shard_plan(ERASE_SHARD_AUTO, 4, rows, NULL, 64, 2, 640, s), ERASE_OK);
    assert_int_equal(s[0].kind, ERASE_SHARD_ROW);
    assert_int_equal(s[3].kind, ERASE_SHARD_TABLE);
    assert_int_equal(erase_shard_plan(ERASE_SHARD_AUTO, 4, rows, NULL, 64, 2, 639, s), ERASE_OK);
    for (int t = 0; t < 4; t++)
        assert_int_equal(s[t].kind, ERASE_SHARD_ROW);
    assert_int_equal(erase_shard_plan(ERASE_SHARD_REPLICATED, 4, rows, NULL, 64, 2, 0, s), ERASE_OK);
    for (int t = 0; t < 4; t++) {
        int64_t l = -1;
        assert_int_equal(s[t].kind, ERASE_SHARD_REPLICATED);
        assert_int_equal(erase_shard_rows_on(&s[t], 1), rows[t]);
        assert_int_equal(erase_shard_owner(&s[t], 7, &l), -1);
        assert_int_equal(l, 7);
    }
}

static void test_errors(void **state)
{
    (void)state;
    erase_shard_t s[2];
    erase_shard_kind_t k;
    const int64_t rows[2] = { 10, 0 }, huge[2] = { INT64_MAX / 6, INT64_MAX / 6 };
    assert_int_equal(erase_shard_kind_parse("--embeddings", "rows", &k), ERASE_ERR_INVALID);
    assert_string_equal(erase_error_reason(), "--embeddings 'rows': expected replicated, table, row or auto");
    assert_int_equal(erase_shard_kind_parse("--embeddings", "row", &k), ERASE_OK);
    assert_int_equal(k, ERASE_SHARD_ROW);
    assert_string_equal(erase_shard_kind_name(ERASE_SHARD_AUTO), "auto");
    assert_null(erase_shard_kind_name((erase_shard_kind_t)4));
    assert_int_equal(erase_shard_plan(ERASE_SHARD_ROW, 1, rows, NULL, 4, 0, 0, s), ERASE_ERR_INVALID);
    assert_string_equal(erase_error_reason(), "embedding placement: 0 ranks (expected >= 1)");
    assert_int_equal(erase_shard_plan(ERASE_SHARD_ROW, 2, rows, NULL, 4, 2, 0, s), ERASE_ERR_INVALID);
    assert_string_equal(erase_error_reason(), "embedding placement: table 1 has 0 rows (expected >= 1)");
    assert_int_equal(erase_shard_plan(ERASE_SHARD_ROW, 1, rows, (const double[]){ NAN }, 4, 2, 0, s),
                     ERASE_ERR_INVALID);
    assert_string_equal(erase_error_reason(),
                        "embedding placement: table 0: nan lookups per sample (expected a finite number >= 0)");
    assert_int_equal(erase_shard_plan(ERASE_SHARD_ROW, 2, huge, NULL, 4, 2, 0, s), ERASE_ERR_INVALID);
    assert_string_equal(erase_error_reason(),
                        "embedding placement: table 1: 1537228672809129301 rows of 4 bytes overflow");
    assert_int_equal(erase_shard_plan(ERASE_SHARD_ROW, 1, rows, NULL, 0, 2, 0, s), ERASE_ERR_INVALID);
    assert_string_equal(erase_error_reason(), "embedding placement: rows of 0 bytes (expected >= 1)");
    assert_int_equal(erase_shard_plan(ERASE_SHARD_ROW, 65, rows, NULL, 4, 2, 0, s), ERASE_ERR_INVALID);
    assert_string_equal(erase_error_reason(), "embedding placement: 65 tables (expected 0 to 64)");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_table),
        cmocka_unit_test(test_row),
        cmocka_unit_test(test_row_cover),
        cmocka_unit_test(test_auto_and_replicated),
        cmocka_unit_test(test_errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
