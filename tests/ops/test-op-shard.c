/*
 * The sharded tables' exchange ops of lib/ops/ops.h on the CPU backend,
 * on hand cases whose expected entries are worked out in the comments:
 * erase_shard_route on a row-wise table over 3 ranks (ids at the ranges'
 * boundaries, the missing-value row, an id wrapping past R-1) beside a
 * table-wise one, every other entry padded, a rank without ids, n = 0;
 * erase_gather_rows unpacking with pos reproduces erase_embedding_forward
 * on the whole tables (the exchange's round trip); erase_sparse_split of
 * ascending rows over 3 ranks with the middle one empty; the failures found
 * when the ops run and at the call, with their exact text.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "lib/device/device.h"
#include "lib/ops/ops.h"
#include "tests/cpu_device.h"
#include "tests/expect_error.h"

#define MUST(call) assert_int_equal((call), ERASE_OK)
#define PAD ERASE_SHARD_PAD

static erase_device_t *dev;
static erase_stream_t *stream;

/* ---- the routing case: 2 tables, 3 ranks, tmax 2, capacity 6 ------------
 * table 0: R = 10, row-wise: rank 0 rows 0-3, rank 1 rows 4-6, rank 2 rows
 *          7-9 (9: the missing value); slot 0 on every rank;
 * table 1: R = 5, table-wise on rank 1 (slot 1 there), -1 elsewhere. */
#define RT 2
#define RR 3
#define TMAX 2
#define CAP 6
#define N 6
#define D 3
#define ENTRIES (RR * TMAX * CAP)

static const uint32_t table_rows[RT] = { 10, 5 };
static const int64_t bounds[RT][RR + 1] = { { 0, 4, 7, 10 }, { 0, 0, 5, 5 } };
static const int32_t slots[RT][RR] = { { 0, 0, 0 }, { -1, 1, -1 } };
/* ids [N][RT] and the rows they give (row = id mod, R-1 for missing):
 * sample  table 0                      table 1
 * 0       0 -> row 0 (rank 0, first)   7 -> row 3
 * 1       missing -> row 9 (rank 2)    missing -> row 4
 * 2       8 -> row 8 = R-2 (rank 2)    0 -> row 0
 * 3       13 -> row 4 (wraps; rank 1)  4 -> row 0 (wraps)
 * 4       3 -> row 3 (rank 0, last)    5 -> row 1
 * 5       6 -> row 6 (rank 1, last)    3 -> row 3 */
static const uint32_t ids[N][RT] = { { 0, 7 }, { UINT32_MAX, UINT32_MAX }, { 8, 0 },
                                     { 13, 4 }, { 3, 5 }, { 6, 3 } };

/* The slot of (rank r, slot k) starts at entry (r*TMAX + k)*CAP. */
#define AT(r, k, j) (((r) * TMAX + (k)) * CAP + (j))

/* Device memory filled with byte `fill` (an unwritten output shows); every
 * block of a case is freed after it, passed or failed (free_test). */
static erase_test_arena_t arena;

static void *dmalloc(size_t bytes, int fill) { return erase_test_arena_alloc(&arena, bytes, fill); }


/* Device copies of the routing case's inputs. */
typedef struct {
    uint32_t *ids, *rows, *send, *pos;
    int *cnt; /* send_counts [RR][TMAX] */
    int64_t *bounds;
    int32_t *slot;
} route_bufs_t;

static route_bufs_t route_bufs(void)
{
    route_bufs_t b;
    b.ids = dmalloc(sizeof ids, 0);
    memcpy(b.ids, ids, sizeof ids);
    b.rows = dmalloc(sizeof table_rows, 0);
    memcpy(b.rows, table_rows, sizeof table_rows);
    b.bounds = dmalloc(sizeof bounds, 0);
    memcpy(b.bounds, bounds, sizeof bounds);
    b.slot = dmalloc(sizeof slots, 0);
    memcpy(b.slot, slots, sizeof slots);
    b.send = dmalloc(sizeof(uint32_t) * ENTRIES, 0x5A); /* every entry must be written */
    b.pos = dmalloc(sizeof(uint32_t) * N * RT, 0x5A);
    b.cnt = dmalloc(sizeof(int) * RR * TMAX, 0x5A); /* every count too */
    return b;
}

static void test_route(void **state)
{
    route_bufs_t b = route_bufs();
    MUST(erase_shard_route(stream, N, RT, b.ids, b.rows, RR, b.bounds, b.slot, TMAX, CAP, b.send, b.cnt,
                           b.pos));
    MUST(erase_stream_synchronize(stream));
    uint32_t want[ENTRIES];
    for (int e = 0; e < ENTRIES; e++)
        want[e] = PAD;
    /* table 0 on rank 0 (slot 0): samples 0, 4: rows 0, 3 */
    want[AT(0, 0, 0)] = 0, want[AT(0, 0, 1)] = 3;
    /* table 0 on rank 1 (slot 0): samples 3, 5: rows 4, 6 -> local 0, 2 */
    want[AT(1, 0, 0)] = 0, want[AT(1, 0, 1)] = 2;
    /* table 1 on rank 1 (slot 1): every sample, rows 3 4 0 0 1 3 */
    const uint32_t t1[N] = { 3, 4, 0, 0, 1, 3 };
    for (int j = 0; j < N; j++)
        want[AT(1, 1, j)] = t1[j];
    /* table 0 on rank 2 (slot 0): samples 1, 2: rows 9, 8 -> local 2, 1 */
    want[AT(2, 0, 0)] = 2, want[AT(2, 0, 1)] = 1;
    for (int e = 0; e < ENTRIES; e++)
        if (b.send[e] != want[e])
            fail_msg("send_rows[%d] = %u, expected %u", e, b.send[e], want[e]);
    const uint32_t want_pos[N][RT] = {
        { AT(0, 0, 0), AT(1, 1, 0) }, { AT(2, 0, 0), AT(1, 1, 1) }, { AT(2, 0, 1), AT(1, 1, 2) },
        { AT(1, 0, 0), AT(1, 1, 3) }, { AT(0, 0, 1), AT(1, 1, 4) }, { AT(1, 0, 1), AT(1, 1, 5) },
    };
    for (int i = 0; i < N; i++)
        for (int t = 0; t < RT; t++)
            if (b.pos[i * RT + t] != want_pos[i][t])
                fail_msg("pos[%d][%d] = %u, expected %u", i, t, b.pos[i * RT + t], want_pos[i][t]);
    /* the counts: 2 rows of table 0 on each rank (slot 0), table 1's 6 on
     * rank 1 (slot 1), 0 for slot 1 of ranks 0 and 2 (no table) */
    const int want_cnt[RR][TMAX] = { { 2, 0 }, { 2, 6 }, { 2, 0 } };
    for (int r = 0; r < RR; r++)
        for (int k = 0; k < TMAX; k++)
            if (b.cnt[r * TMAX + k] != want_cnt[r][k])
                fail_msg("send_counts[%d][%d] = %d, expected %d", r, k, b.cnt[r * TMAX + k], want_cnt[r][k]);
}

/* The exchange's round trip: owners look their routed rows up in their parts
 * of the tables (gather by send_rows), the sender unpacks the returned
 * vectors with pos: equal to the lookup in the whole tables, bitwise. */
static void test_route_gather_round_trip(void **state)
{
    route_bufs_t b = route_bufs();
    float *table[RT];
    for (int t = 0; t < RT; t++) {
        table[t] = dmalloc(sizeof(float) * table_rows[t] * D, 0);
        for (uint32_t r = 0; r < table_rows[t]; r++)
            for (int c = 0; c < D; c++)
                table[t][r * D + c] = 100.0f * (float)t + (float)r + 0.25f * (float)c;
    }
    float *recv = dmalloc(sizeof(float) * ENTRIES * D, 0xFF); /* NaN: unwritten shows */
    float *emb = dmalloc(sizeof(float) * N * RT * D, 0xFF), *ref = dmalloc(sizeof(float) * N * RT * D, 0);
    MUST(erase_shard_route(stream, N, RT, b.ids, b.rows, RR, b.bounds, b.slot, TMAX, CAP, b.send, b.cnt,
                           b.pos));
    /* each owner's slots: its part of the table of the slot, or no table */
    for (int r = 0; r < RR; r++)
        for (int k = 0; k < TMAX; k++) {
            const float *part = NULL;
            int64_t held = 0;
            for (int t = 0; t < RT; t++)
                if (slots[t][r] == k) {
                    part = table[t] + bounds[t][r] * D;
                    held = bounds[t][r + 1] - bounds[t][r];
                }
            MUST(erase_gather_rows(stream, CAP, D, b.send + AT(r, k, 0), 1, part, held,
                                   recv + (size_t)AT(r, k, 0) * D, D));
        }
    for (int t = 0; t < RT; t++)
        MUST(erase_gather_rows(stream, N, D, b.pos + t, RT, recv, ENTRIES, emb + t * D, RT * D));
    MUST(erase_embedding_forward(stream, N, RT, D, table_rows, b.ids, (const float *const *)table, ref));
    MUST(erase_stream_synchronize(stream));
    assert_memory_equal(emb, ref, sizeof(float) * N * RT * D);
    for (int e = 0; e < ENTRIES; e++) /* a pad gathers a zero row */
        if (b.send[e] == PAD)
            for (int c = 0; c < D; c++)
                if (recv[e * D + c] != 0.0f)
                    fail_msg("recv[%d][%d] = %g under a pad, expected 0", e, c, (double)recv[e * D + c]);
}

/* Two samples, the ids of samples 0 and 4 above (table 0's rows 0 and 3:
 * both rank 0's): table 0's ranks 1 and 2 get no ids, their slots are all
 * pads; n = 0 pads everything and leaves pos alone. */
static void test_route_idle_ranks(void **state)
{
    route_bufs_t b = route_bufs();
    b.ids[0] = 0, b.ids[1] = 7;  /* sample 0: table 0 row 0, table 1 row 3 */
    b.ids[2] = 3, b.ids[3] = 5;  /* sample 1: table 0 row 3, table 1 row 1 */
    MUST(erase_shard_route(stream, 2, RT, b.ids, b.rows, RR, b.bounds, b.slot, TMAX, CAP, b.send, b.cnt,
                           b.pos));
    MUST(erase_stream_synchronize(stream));
    for (int e = 0; e < ENTRIES; e++) {
        uint32_t want = e == AT(0, 0, 0) ? 0 : e == AT(0, 0, 1) ? 3 : e == AT(1, 1, 0) ? 3
                      : e == AT(1, 1, 1) ? 1 : PAD;
        if (b.send[e] != want)
            fail_msg("send_rows[%d] = %u, expected %u", e, b.send[e], want);
    }
    assert_int_equal(b.pos[0], AT(0, 0, 0));
    assert_int_equal(b.pos[1], AT(1, 1, 0));
    assert_int_equal(b.pos[2], AT(0, 0, 1));
    assert_int_equal(b.pos[3], AT(1, 1, 1));
    assert_int_equal(b.pos[4], 0x5A5A5A5Au); /* sample 2 is not in the batch */
    const int want_cnt[RR * TMAX] = { 2, 0, 0, 2, 0, 0 }; /* ranks 1 and 2 get no row of table 0 */
    assert_memory_equal(b.cnt, want_cnt, sizeof want_cnt);

    memset(b.pos, 0x5A, sizeof(uint32_t) * N * RT);
    memset(b.send, 0x5A, sizeof(uint32_t) * ENTRIES);
    memset(b.cnt, 0x5A, sizeof(int) * RR * TMAX);
    MUST(erase_shard_route(stream, 0, RT, b.ids, b.rows, RR, b.bounds, b.slot, TMAX, CAP, b.send, b.cnt,
                           b.pos));
    MUST(erase_stream_synchronize(stream));
    for (int e = 0; e < ENTRIES; e++)
        assert_int_equal(b.send[e], PAD);
    for (int e = 0; e < N * RT; e++)
        assert_int_equal(b.pos[e], 0x5A5A5A5Au);
    for (int e = 0; e < RR * TMAX; e++)
        assert_int_equal(b.cnt[e], 0);
}

/* Run-time failures come back from synchronize as ERASE_ERR_INVALID with
 * `expected` (a stream of their own: a CPU stream's error is sticky). */
#define expect_run_failure erase_test_expect_run_failure

static void expect_invalid(erase_status_t st, const char *expected)
{
    erase_test_expect_error(st, ERASE_ERR_INVALID, expected);
}

static void test_route_failures(void **state)
{
    route_bufs_t b = route_bufs();
    erase_stream_t *s;
    /* table 1's owner, rank 1, loses its slot: sample 0's row 3 has none */
    b.slot[1 * RR + 1] = -1;
    MUST(erase_stream_create(dev, &s));
    MUST(erase_shard_route(s, N, RT, b.ids, b.rows, RR, b.bounds, b.slot, TMAX, CAP, b.send, b.cnt, b.pos));
    expect_run_failure(s, "shard route: table 1 sample 0: row 3's owner, rank 1, has slot -1 "
                          "(expected 0 to tmax-1 = 1)");
    b.slot[1 * RR + 1] = TMAX; /* a slot past tmax */
    MUST(erase_stream_create(dev, &s));
    MUST(erase_shard_route(s, N, RT, b.ids, b.rows, RR, b.bounds, b.slot, TMAX, CAP, b.send, b.cnt, b.pos));
    expect_run_failure(s, "shard route: table 1 sample 0: row 3's owner, rank 1, has slot 2 "
                          "(expected 0 to tmax-1 = 1)");
    b.slot[1 * RR + 1] = 1;
    /* bounds that end before R: the missing value's row 9 is nobody's */
    b.bounds[3] = 9;
    MUST(erase_stream_create(dev, &s));
    MUST(erase_shard_route(s, N, RT, b.ids, b.rows, RR, b.bounds, b.slot, TMAX, CAP, b.send, b.cnt, b.pos));
    expect_run_failure(s, "shard route: table 0 sample 1: row 9 is outside the bounds [0, 9)");
    /* at the call */
    expect_invalid(erase_shard_route(stream, CAP + 1, RT, b.ids, b.rows, RR, b.bounds, b.slot, TMAX,
                                     CAP, b.send, b.cnt, b.pos),
                   "shard route: 7 samples, expected 0 to capacity 6");
    expect_invalid(erase_shard_route(stream, -1, RT, b.ids, b.rows, RR, b.bounds, b.slot, TMAX, CAP,
                                     b.send, b.cnt, b.pos),
                   "shard route: -1 samples, expected 0 to capacity 6");
    expect_invalid(erase_shard_route(stream, N, RT, b.ids, b.rows, RR, b.bounds, b.slot, 0, CAP,
                                     b.send, b.cnt, b.pos),
                   "shard route: 2 tables, 3 ranks, tmax 0, capacity 6 (each at least 1)");
    expect_invalid(erase_shard_route(stream, 1, RT, b.ids, b.rows, 65536, b.bounds, b.slot, 256,
                                     256, b.send, b.cnt, b.pos),
                   "shard route: 65536 ranks x tmax 256 x capacity 256 entries (expected below 4294967295)");
    expect_invalid(erase_shard_route(stream, N, RT, b.ids, b.rows, RR, b.bounds, b.slot, TMAX, CAP,
                                     b.send, NULL, b.pos),
                   "shard route: NULL ids, table_rows, bounds, slot, send_rows, send_counts or pos");
}

static void test_gather_failures(void **state)
{
    uint32_t *index = dmalloc(sizeof(uint32_t) * 3, 0);
    float *src = dmalloc(sizeof(float) * 4 * D, 0), *out = dmalloc(sizeof(float) * 3 * D, 0);
    index[0] = 3, index[1] = 4, index[2] = PAD;
    erase_stream_t *s;
    MUST(erase_stream_create(dev, &s));
    MUST(erase_gather_rows(s, 3, D, index, 1, src, 4, out, D));
    expect_run_failure(s, "gather rows: entry 1: index 4 is not below the source's 4 rows");
    expect_invalid(erase_gather_rows(stream, 3, D, index, 1, src, 4, out, D - 1),
                   "gather rows: n 3, dim 3, src_rows 4, index_stride 1 (at least 1), out_stride 2 "
                   "(at least dim)");
}

/* ---- sparse split: one table of R = 10 over 3 ranks (0-3, 4-6, 7-9), its
 * parts going to slots q = r*2 + 1 (slot 1 of each rank's block). -------- */
#define SCAP 4
#define SQ 6

typedef struct {
    int *count, *out_counts;
    uint32_t *rows, *out_rows;
    float *values, *out_values;
    int64_t *bounds;
    int32_t *slot_index;
} split_bufs_t;

static split_bufs_t split_bufs(int n, const uint32_t *rows, const int32_t *slot_index)
{
    split_bufs_t b;
    b.count = dmalloc(sizeof(int), 0);
    *b.count = n;
    b.rows = dmalloc(sizeof(uint32_t) * SCAP * RR, 0);
    memcpy(b.rows, rows, sizeof(uint32_t) * (size_t)n);
    b.values = dmalloc(sizeof(float) * SCAP * RR * D, 0);
    for (int i = 0; i < n * D; i++)
        b.values[i] = 1.0f + (float)i;
    b.bounds = dmalloc(sizeof(int64_t) * (RR + 1), 0);
    memcpy(b.bounds, bounds[0], sizeof(int64_t) * (RR + 1));
    b.slot_index = dmalloc(sizeof(int32_t) * RR, 0);
    memcpy(b.slot_index, slot_index, sizeof(int32_t) * RR);
    b.out_counts = dmalloc(sizeof(int) * SQ, 0x5A);
    b.out_rows = dmalloc(sizeof(uint32_t) * SQ * SCAP, 0x5A);
    b.out_values = dmalloc(sizeof(float) * SQ * SCAP * D, 0x5A);
    return b;
}

static erase_status_t split(erase_stream_t *s, split_bufs_t *b, int capacity)
{
    return erase_sparse_split(s, capacity, D, b->count, b->rows, b->values, RR, b->bounds,
                              b->slot_index, b->out_counts, b->out_rows, b->out_values);
}

/* Expect slot q to hold the rows `local` with the values of gradient rows
 * first, first+1, ... (row i's values: 1 + i*D + c). */
static void expect_slot(const split_bufs_t *b, int q, int n, const uint32_t *local, int first)
{
    assert_int_equal(b->out_counts[q], n);
    for (int j = 0; j < n; j++) {
        assert_int_equal(b->out_rows[q * SCAP + j], local[j]);
        for (int c = 0; c < D; c++)
            assert_true(b->out_values[(q * SCAP + j) * D + c] == 1.0f + (float)((first + j) * D + c));
    }
}

static void expect_untouched(const void *p, size_t bytes)
{
    for (size_t i = 0; i < bytes; i++)
        if (((const unsigned char *)p)[i] != 0x5A)
            fail_msg("byte %zu of an untouched slot was written", i);
}

static void test_split(void **state)
{
    /* rows 0 3 (rank 0: its first and last), 7 9 (rank 2: first, missing
     * value's); rank 1 empty */
    const uint32_t rows[4] = { 0, 3, 7, 9 };
    const int32_t q[RR] = { 1, 3, 5 };
    split_bufs_t b = split_bufs(4, rows, q);
    MUST(split(stream, &b, SCAP));
    MUST(erase_stream_synchronize(stream));
    const uint32_t r0[2] = { 0, 3 }, r2[2] = { 0, 2 };
    expect_slot(&b, 1, 2, r0, 0);
    expect_slot(&b, 3, 0, NULL, 0);
    expect_slot(&b, 5, 2, r2, 2);
    for (int u = 0; u < SQ; u += 2) { /* slots 0, 2, 4 are not this table's */
        expect_untouched(&b.out_counts[u], sizeof(int));
        expect_untouched(&b.out_rows[u * SCAP], sizeof(uint32_t) * SCAP);
        expect_untouched(&b.out_values[u * SCAP * D], sizeof(float) * SCAP * D);
    }
    expect_untouched(&b.out_rows[3 * SCAP], sizeof(uint32_t) * SCAP); /* rank 1's: empty */
    /* rank 1 holding no slot is fine while it gets no rows */
    b.slot_index[1] = -1;
    memset(b.out_counts, 0x5A, sizeof(int) * SQ);
    MUST(split(stream, &b, SCAP));
    MUST(erase_stream_synchronize(stream));
    expect_slot(&b, 1, 2, r0, 0);
    expect_slot(&b, 5, 2, r2, 2);
    expect_untouched(&b.out_counts[3], sizeof(int));

    /* rows 4 6: rank 1's first and last only; count 0 */
    const uint32_t mid[2] = { 4, 6 }, m1[2] = { 0, 2 };
    b = split_bufs(2, mid, q);
    MUST(split(stream, &b, SCAP));
    MUST(erase_stream_synchronize(stream));
    expect_slot(&b, 1, 0, NULL, 0);
    expect_slot(&b, 3, 2, m1, 0);
    expect_slot(&b, 5, 0, NULL, 0);
    *b.count = 0;
    memset(b.out_counts, 0x5A, sizeof(int) * SQ);
    MUST(split(stream, &b, SCAP));
    MUST(erase_stream_synchronize(stream));
    for (int u = 1; u < SQ; u += 2)
        assert_int_equal(b.out_counts[u], 0);
}

static void test_split_failures(void **state)
{
    const uint32_t rows[4] = { 0, 3, 7, 9 };
    const int32_t q[RR] = { 1, 3, 5 }, no0[RR] = { -1, 3, 5 };
    erase_stream_t *s;
    split_bufs_t b = split_bufs(4, rows, no0);
    MUST(erase_stream_create(dev, &s));
    MUST(split(s, &b, SCAP));
    expect_run_failure(s, "sparse split: row 0 belongs to rank 0, which has no slot (-1)");

    b = split_bufs(4, rows, q);
    MUST(erase_stream_create(dev, &s));
    MUST(split(s, &b, 1));
    expect_run_failure(s, "sparse split: rank 0's rows (slot 1) are above the capacity 1");
    b.bounds[RR] = 9; /* row 9 outside */
    MUST(erase_stream_create(dev, &s));
    MUST(split(s, &b, SCAP));
    expect_run_failure(s, "sparse split: row 9 is outside the bounds [0, 9)");
    *b.count = -1;
    MUST(erase_stream_create(dev, &s));
    MUST(split(s, &b, SCAP));
    expect_run_failure(s, "sparse split: count -1 is negative");
    expect_invalid(split(stream, &b, 0), "sparse split: 3 ranks, capacity 0, dim 3 (each at least 1)");
}

ERASE_TEST_CPU_STREAM_FIXTURE(dev, stream, arena)

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_route, free_test),
        cmocka_unit_test_teardown(test_route_gather_round_trip, free_test),
        cmocka_unit_test_teardown(test_route_idle_ranks, free_test),
        cmocka_unit_test_teardown(test_route_failures, free_test),
        cmocka_unit_test_teardown(test_gather_failures, free_test),
        cmocka_unit_test_teardown(test_split, free_test),
        cmocka_unit_test_teardown(test_split_failures, free_test),
    };
    return cmocka_run_group_tests_name("shard ops", tests, setup, teardown);
}
