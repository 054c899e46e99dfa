/*
 * The CTR reader (io/ctr_reader.h) on the Kaggle sample converted into 4
 * shards: the model's inputs (log1p(max(x, 0)), missing -> 0) from the
 * stored values; the same global batches on 1, 2, 3 and 4 data-parallel
 * ranks (rank parts concatenated), every rank taking every step, the
 * last-partial-batch policy (dropped in training; split, possibly 0 rows,
 * in evaluation), each epoch a permutation, shuffled differently per
 * epoch; the cursor saved and restored continuing the exact sequence;
 * shuffle pools (issue 33): batches mixing K blocks, one pool a uniform
 * shuffle of every row, pools of 1 block the order before pools;
 * train/eval splits by fraction and by shard; shards that are truncated,
 * not HDF5, of another schema or damaged rejected with messages naming the
 * file and dataset; bad values in an uncompressed shard (a label not 0/1,
 * a dense +-inf) rejected naming the file, dataset, row and value; the
 * table check; the prefetch thread flushes subnormals to zero.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>
#include <hdf5.h>

#include "io/criteo_convert.h"
#include "io/ctr_reader.h"
#include "io/ctr_shard.h"
#include "tests/io/io_util.h"

#define ROWS 9999

static char *scratch;
static const char *data; /* the Kaggle sample in shards of 3000 rows */
static io_rows_t raw;    /* its rows as stored */

static erase_reader_options_t opts(int64_t G, int rank, int size)
{
    erase_reader_options_t o = erase_reader_options_default();
    o.global_batch = G;
    o.dp_rank = rank;
    o.dp_size = size;
    o.seed = 11;
    o.block_rows = 500;
    return o;
}

static erase_reader_t *open_reader(const char *input, const erase_reader_options_t *o)
{
    erase_reader_t *r;
    const char *in[1] = { input };
    MUST(erase_ctr_reader_open(in, 1, o, &r));
    return r;
}

/* A reader of `input` in file order, batches of 100, `prefetch` batches
 * decoded ahead by its thread (0: none, on the caller's thread). */
static erase_reader_t *open_in_order(const char *input, int prefetch)
{
    erase_reader_options_t o = opts(100, 0, 1);
    o.shuffle = 0;
    o.prefetch = prefetch;
    return open_reader(input, &o);
}

/* What the model must receive for stored value x. */
static float model_value(float x)
{
    return isnan(x) ? 0.0f : log1pf(x > 0 ? x : 0.0f);
}

static void test_model_inputs(void **state)
{
    erase_reader_options_t o = opts(ROWS, 0, 1);
    o.shuffle = 0;
    o.drop_last = 0;
    o.prefetch = 0;
    erase_reader_t *r = open_reader(data, &o);
    erase_reader_info_t info = erase_reader_info(r);
    assert_int_equal(info.shards, 4);
    assert_int_equal(info.total_rows, ROWS);
    assert_int_equal(info.samples, ROWS);
    assert_int_equal(info.steps_per_epoch, 1);
    assert_int_equal(info.blocks, 6 + 6 + 6 + 2); /* 3000 = 6 x 500; 999 = 500 + 499 */
    erase_ctr_batch_t b;
    MUST(erase_ctr_reader_next(r, &b));
    assert_int_equal(b.size, ROWS);
    assert_int_equal(b.end_of_epoch, 0);
    int64_t missing = 0, negative = 0;
    for (int64_t i = 0; i < ROWS; i++) {
        assert_int_equal(b.row_id[i], i);
        assert_true(b.label[i] == (float)raw.label[i]);
        for (int j = 0; j < 13; j++) {
            float x = raw.dense[i * 13 + j], want = model_value(x);
            missing += isnan(x);
            negative += x < 0;
            if (memcmp(&b.dense[i * 13 + j], &want, 4) != 0)
                fail_msg("row %lld I%d: stored %g, model gets %g, expected %g", (long long)i, j + 1, x,
                         b.dense[i * 13 + j], want);
        }
    }
    assert_memory_equal(b.sparse, raw.sparse, (size_t)ROWS * 26 * 4);
    MUST(erase_ctr_reader_next(r, &b));
    assert_int_equal(b.end_of_epoch, 1);
    assert_int_equal(b.size, 0);
    erase_reader_cursor_t c = erase_reader_cursor(r);
    assert_int_equal(c.epoch, 1);
    assert_int_equal(c.samples, 0);
    erase_reader_close(r);
    print_message("one batch of all %d rows in file order: dense = log1p(max(x,0)) (%lld missing -> 0, %lld "
                  "negative -> 0), ids and labels as stored\n",
                  ROWS, (long long)missing, (long long)negative);
}

/* ---- the same global batches on 1..4 ranks ---------------------------------- */

typedef struct {
    const char *name;
    int64_t G;
    int shuffle, drop_last;
    erase_reader_part_t part;
    double eval_fraction;
    int eval_shards;
    int64_t samples, steps;  /* expected per epoch */
    int64_t pool;            /* pool_blocks (0: the default) */
} rank_case_t;

static void run_ranks(const rank_case_t *c, int epochs)
{
    erase_reader_t *rd[5][4] = { { 0 } };
    for (int D = 1; D <= 4; D++)
        for (int r = 0; r < D; r++) {
            erase_reader_options_t o = opts(c->G, r, D);
            o.shuffle = c->shuffle;
            o.drop_last = c->drop_last;
            o.part = c->part;
            o.eval_fraction = c->eval_fraction;
            o.eval_shards = c->eval_shards;
            if (c->pool)
                o.pool_blocks = c->pool;
            o.prefetch = (r + D) % 3; /* 0, 1 and 2 mixed */
            rd[D][r] = open_reader(data, &o);
            erase_reader_info_t info = erase_reader_info(rd[D][r]);
            assert_int_equal(info.samples, c->samples);
            assert_int_equal(info.steps_per_epoch, c->steps);
        }
    int64_t *seen = calloc(ROWS, sizeof *seen), *first_order = malloc(sizeof(int64_t) * ROWS);
    assert_true(seen && first_order);
    int64_t zero_parts = 0, compared = 0, epoch_rows = 0, order_changed = 0;
    int64_t lo_id = INT64_MAX, hi_id = -1;
    for (int e = 0; e < epochs;) {
        erase_ctr_batch_t ref;
        MUST(erase_ctr_reader_next(rd[1][0], &ref));
        for (int D = 2; D <= 4; D++) {
            int64_t at = 0;
            for (int r = 0; r < D; r++) {
                erase_ctr_batch_t b;
                MUST(erase_ctr_reader_next(rd[D][r], &b));
                if (b.end_of_epoch != ref.end_of_epoch || b.epoch != ref.epoch || b.step != ref.step)
                    fail_msg("%s: D=%d rank %d at epoch %lld step %lld: end %d epoch %lld step %lld", c->name, D, r,
                             (long long)ref.epoch, (long long)ref.step, b.end_of_epoch, (long long)b.epoch,
                             (long long)b.step);
                if (ref.end_of_epoch)
                    continue;
                int64_t m = ref.global_size, lo = r * m / D, hi = (r + 1) * m / D;
                assert_int_equal(b.global_size, m);
                assert_int_equal(b.size, hi - lo);
                assert_int_equal(b.first_sample, ref.first_sample + lo);
                assert_int_equal(at, lo);
                if (b.size == 0)
                    zero_parts++;
                if (b.size && (memcmp(b.dense, ref.dense + at * 13, sizeof(float) * (size_t)b.size * 13) ||
                               memcmp(b.sparse, ref.sparse + at * 26, sizeof(uint32_t) * (size_t)b.size * 26) ||
                               memcmp(b.label, ref.label + at, sizeof(float) * (size_t)b.size) ||
                               memcmp(b.row_id, ref.row_id + at, sizeof(int64_t) * (size_t)b.size)))
                    fail_msg("%s: D=%d rank %d differs from rows [%lld, %lld) of the 1-rank batch (epoch %lld "
                             "step %lld)", c->name, D, r, (long long)lo, (long long)hi, (long long)ref.epoch,
                             (long long)ref.step);
                at += b.size;
                compared += b.size;
            }
        }
        if (ref.end_of_epoch) {
            assert_int_equal(ref.step, c->steps);
            assert_int_equal(epoch_rows, c->drop_last ? c->steps * c->G : c->samples);
            erase_reader_cursor_t cur = erase_reader_cursor(rd[1][0]);
            assert_int_equal(cur.epoch, e + 1);
            assert_int_equal(cur.samples, 0);
            epoch_rows = 0;
            e++;
            continue;
        }
        assert_true(ref.size == (ref.step < c->samples / c->G ? c->G : c->samples % c->G));
        for (int64_t i = 0; i < ref.size; i++) {
            int64_t id = ref.row_id[i];
            assert_true(id >= 0 && id < ROWS);
            if (seen[id] == e + 1)
                fail_msg("%s: row %lld twice in epoch %d", c->name, (long long)id, e);
            seen[id] = e + 1;
            lo_id = id < lo_id ? id : lo_id;
            hi_id = id > hi_id ? id : hi_id;
            int64_t pos = ref.first_sample + i;
            if (e == 0)
                first_order[pos] = id;
            else if (first_order[pos] != id)
                order_changed++;
        }
        epoch_rows += ref.size;
    }
    if (c->shuffle)
        assert_true(order_changed > 0);
    else
        assert_int_equal(order_changed, 0);
    for (int D = 1; D <= 4; D++)
        for (int r = 0; r < D; r++)
            erase_reader_close(rd[D][r]);
    print_message("%s: G %lld, %lld samples, %lld steps/epoch x %d epochs on 1-4 ranks: %lld rank rows equal "
                  "to the 1-rank batches, %lld empty rank parts, rows %lld..%lld, %lld positions reordered in "
                  "epoch 1\n",
                  c->name, (long long)c->G, (long long)c->samples, (long long)c->steps, epochs, (long long)compared,
                  (long long)zero_parts, (long long)lo_id, (long long)hi_id, (long long)order_changed);
    free(seen);
    free(first_order);
}

static void test_ranks_drop_last(void **state)
{
    rank_case_t c = { "train, drop last", 1000, 1, 1, ERASE_READER_PART_ALL, 0, 0, ROWS, 9, 0 };
    run_ranks(&c, 2);
    rank_case_t small = { "train by shard, G 7", 7, 1, 1, ERASE_READER_PART_TRAIN, 0, 1, 9000, 1285, 0 };
    run_ranks(&small, 2);
    /* pools of 3 blocks (1500 rows): batches of 1000 straddle pools */
    rank_case_t pools = { "train, pools of 3 blocks", 1000, 1, 1, ERASE_READER_PART_ALL, 0, 0, ROWS, 9, 3 };
    run_ranks(&pools, 2);
    rank_case_t one = { "train, pools of 1 block, G 7", 7, 1, 1, ERASE_READER_PART_ALL, 0, 0, ROWS, 1428, 1 };
    run_ranks(&one, 2);
}

static void test_ranks_keep_last(void **state)
{
    rank_case_t c = { "all, keep last", 333, 1, 0, ERASE_READER_PART_ALL, 0, 0, ROWS, 31, 0 };
    run_ranks(&c, 2);
    rank_case_t plain = { "file order, keep last", 64, 0, 0, ERASE_READER_PART_ALL, 0, 0, ROWS, 157, 0 };
    run_ranks(&plain, 2);
}

/* Evaluation: 2000 held-out rows, G 666: the last step has 2 samples, so on
 * 3 and 4 ranks some ranks get none and still take the step. */
static void test_last_batch_split(void **state)
{
    rank_case_t c = { "eval 20%, keep last", 666, 1, 0, ERASE_READER_PART_EVAL, 0.2, 0, 2000, 4, 0 };
    run_ranks(&c, 2);
    const int64_t want[5][4] = { { 0 }, { 2 }, { 1, 1 }, { 0, 1, 1 }, { 0, 1, 0, 1 } };
    for (int D = 1; D <= 4; D++)
        for (int r = 0; r < D; r++) {
            erase_reader_options_t o = opts(666, r, D);
            o.drop_last = 0;
            o.part = ERASE_READER_PART_EVAL;
            o.eval_fraction = 0.2;
            erase_reader_t *rd = open_reader(data, &o);
            erase_ctr_batch_t b;
            for (int s = 0; s < 4; s++) {
                MUST(erase_ctr_reader_next(rd, &b));
                assert_int_equal(b.end_of_epoch, 0);
                assert_int_equal(b.step, s);
            }
            assert_int_equal(b.global_size, 2);
            assert_int_equal(b.size, want[D][r]);
            MUST(erase_ctr_reader_next(rd, &b));
            assert_int_equal(b.end_of_epoch, 1);
            erase_reader_close(rd);
        }
    /* the same data for training drops those 2 samples: 3 steps of 666 */
    erase_reader_options_t o = opts(666, 1, 3);
    o.part = ERASE_READER_PART_EVAL;
    o.eval_fraction = 0.2;
    erase_reader_t *rd = open_reader(data, &o);
    assert_int_equal(erase_reader_info(rd).steps_per_epoch, 3);
    erase_reader_close(rd);
    /* a global batch of INT64_MAX, last batch kept: one step of the whole
     * part, split over 2 ranks (its step count and each position + G
     * overflowed: UBSan; batch buffers were sized by G) */
    o = opts(INT64_MAX, 1, 2);
    o.drop_last = 0;
    o.part = ERASE_READER_PART_EVAL;
    o.eval_fraction = 0.2;
    rd = open_reader(data, &o);
    assert_int_equal(erase_reader_info(rd).steps_per_epoch, 1);
    assert_int_equal(erase_reader_info(rd).max_local, 1000);
    erase_ctr_batch_t b;
    MUST(erase_ctr_reader_next(rd, &b));
    assert_int_equal(b.end_of_epoch, 0);
    assert_int_equal(b.global_size, 2000);
    assert_int_equal(b.size, 1000);
    MUST(erase_ctr_reader_next(rd, &b));
    assert_int_equal(b.end_of_epoch, 1);
    erase_reader_close(rd);
    print_message("last step of 2 samples: sizes by rank (1..4 ranks) = 2 | 1 1 | 0 1 1 | 0 1 0 1; "
                  "dropped with drop_last (3 steps); global batch INT64_MAX: one step of 2000\n");
}

/* ---- cursor ------------------------------------------------------------------- */

/* Row ids of the next `items` results (-1 marks an end of epoch). */
static int64_t *collect(erase_reader_t *r, int items, int64_t per_item)
{
    int64_t *ids = malloc(sizeof(int64_t) * (size_t)(items * per_item));
    assert_non_null(ids);
    for (int k = 0; k < items; k++) {
        erase_ctr_batch_t b;
        MUST(erase_ctr_reader_next(r, &b));
        for (int64_t i = 0; i < per_item; i++)
            ids[k * per_item + i] = b.end_of_epoch ? -1 : i < b.size ? b.row_id[i] : -2;
    }
    return ids;
}

static void test_cursor(void **state)
{
    const int64_t G = 256; /* 39 steps per epoch */
    enum { ITEMS = 45 };   /* steps 30..38 of epoch 0, its end, steps 0..34 of epoch 1 */
    for (int D = 1; D <= 4; D++) { /* 3, 4: pools of 3 blocks (1500 rows), the cursor inside one */
        int rank = (D - 1) % 2, size = (D - 1) % 2 + 1;
        erase_reader_options_t o = opts(G, rank, size);
        if (D > 2)
            o.pool_blocks = 3;
        erase_reader_t *r = open_reader(data, &o);
        erase_ctr_batch_t b;
        for (int k = 0; k < 30; k++)
            MUST(erase_ctr_reader_next(r, &b));
        erase_reader_cursor_t saved = erase_reader_cursor(r);
        assert_int_equal(saved.epoch, 0);
        assert_int_equal(saved.samples, 30 * G);
        int64_t per = G / size;
        int64_t *want = collect(r, ITEMS, per); /* crosses the end of epoch 0 */
        MUST(erase_reader_seek(r, saved));
        int64_t *again = collect(r, ITEMS, per);
        assert_memory_equal(want, again, sizeof(int64_t) * (size_t)(ITEMS * per));
        /* a new reader, another prefetch depth, restored from the cursor */
        o.prefetch = 0;
        erase_reader_t *fresh = open_reader(data, &o);
        MUST(erase_reader_seek(fresh, saved));
        int64_t *restored = collect(fresh, ITEMS, per);
        assert_memory_equal(want, restored, sizeof(int64_t) * (size_t)(ITEMS * per));
        int ends = 0;
        for (int k = 0; k < ITEMS; k++)
            ends += want[k * per] == -1;
        assert_int_equal(ends, 1);
        erase_reader_cursor_t c = erase_reader_cursor(fresh);
        assert_int_equal(c.epoch, 1);
        assert_int_equal(c.samples, (ITEMS - 9 - 1) * G);
        /* into epoch 1 directly: the same as reading through epoch 0 */
        MUST(erase_reader_seek(fresh, (erase_reader_cursor_t){ 1, 5 * G }));
        int64_t *direct = collect(fresh, 10, per);
        assert_memory_equal(direct, want + (9 + 1 + 5) * per, sizeof(int64_t) * (size_t)(10 * per));
        free(want);
        free(again);
        free(restored);
        free(direct);
        erase_reader_close(fresh);
        /* a cursor outside the data */
        assert_int_equal(erase_reader_seek(r, (erase_reader_cursor_t){ 0, ROWS + 1 }), ERASE_ERR_INVALID);
        assert_string_equal(erase_error_reason(), "cursor (epoch 0, samples 10000) outside this data: epoch >= 0 and "
                                             "samples in [0, 9999] expected");
        erase_reader_close(r);
    }
    print_message("cursor (0, 7680) saved and restored (same reader, new reader with prefetch 0, rank 0 of 1 "
                  "and 1 of 2; the default pools and pools of 3 blocks): the same %d results across the end of "
                  "epoch 0\n",
                  ITEMS);
}

/* ---- shuffle pools ------------------------------------------------------------- */

/* The block (0..19) of row id `id`: shards of 3000 rows cut into blocks of 500. */
static int block_of(int64_t id)
{
    return (int)(id / 3000 * 6 + id % 3000 / 500);
}

/* Epoch `epoch` of a 1-rank reader with pools of `pool` blocks, batches of
 * G = 100 (last kept): its row ids in order into ids[ROWS], each row once;
 * the fewest and the mean distinct blocks of a full batch. */
static void pool_epoch(int64_t pool, int epoch, int64_t *ids, int *fewest, double *mean)
{
    erase_reader_options_t o = opts(100, 0, 1);
    o.pool_blocks = pool;
    o.drop_last = 0;
    erase_reader_t *r = open_reader(data, &o);
    MUST(erase_reader_seek(r, (erase_reader_cursor_t){ epoch, 0 }));
    char *seen = calloc(ROWS, 1);
    assert_non_null(seen);
    int64_t n = 0, batches = 0, blocks_total = 0;
    *fewest = 20;
    for (;;) {
        erase_ctr_batch_t b;
        MUST(erase_ctr_reader_next(r, &b));
        if (b.end_of_epoch)
            break;
        int hit[20] = { 0 }, distinct = 0;
        for (int64_t i = 0; i < b.size; i++) {
            int64_t id = b.row_id[i];
            assert_true(id >= 0 && id < ROWS && !seen[id]);
            seen[id] = 1;
            ids[n++] = id;
            distinct += !hit[block_of(id)]++;
        }
        if (b.size == 100) {
            *fewest = distinct < *fewest ? distinct : *fewest;
            blocks_total += distinct;
            batches++;
        }
    }
    assert_int_equal(n, ROWS);
    *mean = (double)blocks_total / (double)batches;
    free(seen);
    erase_reader_close(r);
}

/* The most positions between the first and the last row of one block in
 * the epoch order ids[ROWS]. */
static int64_t block_span(const int64_t *ids)
{
    int64_t first[20], last[20], most = 0;
    for (int k = 0; k < 20; k++)
        first[k] = -1;
    for (int64_t i = 0; i < ROWS; i++) {
        int k = block_of(ids[i]);
        if (first[k] < 0)
            first[k] = i;
        last[k] = i;
    }
    for (int k = 0; k < 20; k++)
        most = last[k] - first[k] > most ? last[k] - first[k] : most;
    return most;
}

/* The order of the pools (issue 33): batches of 100 rows of 9999 in 20
 * blocks of 500 (the last 499). Pools of 1 block: every block's rows
 * together (a batch from 1 or 2 blocks); of 3: a block's rows within 1500
 * positions, a batch from 2 blocks at least (the last pool has 2) and 2.5
 * to 4 on average (batches straddle pools); of 20 or more: one
 * pool, a uniform shuffle of all rows, the same for 20 and 256, every batch
 * from at least 15 of the 20 blocks; every row once per epoch, and epoch 1
 * in another order than epoch 0. */
static void test_pools(void **state)
{
    int64_t *ids = malloc(sizeof(int64_t) * ROWS), *all = malloc(sizeof(int64_t) * ROWS);
    int64_t *next = malloc(sizeof(int64_t) * ROWS);
    assert_true(ids && all && next);
    int fewest, fewest3;
    double mean1, mean3, mean20, mean;
    pool_epoch(1, 0, ids, &fewest, &mean1);
    assert_true(fewest >= 1);
    int64_t span1 = block_span(ids), blocks_of_run1 = 0;
    for (int64_t i = 1; i < ROWS; i++)
        blocks_of_run1 += block_of(ids[i]) != block_of(ids[i - 1]);
    assert_int_equal(blocks_of_run1, 19); /* 20 runs: each block's rows together */
    assert_true(span1 <= 499);
    pool_epoch(3, 0, ids, &fewest3, &mean3);
    assert_true(block_span(ids) <= 1499); /* a block's rows within its pool of at most 1500 */
    assert_true(fewest3 >= 2);            /* the last pool has 2 blocks (20 = 6 x 3 + 2) */
    pool_epoch(20, 0, all, &fewest, &mean20);
    pool_epoch(256, 0, ids, &fewest, &mean);
    assert_memory_equal(ids, all, sizeof(int64_t) * ROWS); /* K >= the blocks: one pool, the same order */
    assert_true(fewest >= 15);
    assert_true(mean1 < 2 && mean3 > 2.5 && mean3 < 4 && mean > 18);
    pool_epoch(256, 1, next, &fewest, &mean);
    int64_t moved = 0;
    for (int64_t i = 0; i < ROWS; i++)
        moved += next[i] != all[i];
    assert_true(moved > ROWS / 2);
    print_message("pools of 1, 3, 20, 256 blocks: distinct blocks of a batch of 100, mean %.2f, %.2f (fewest %d), "
                  "%.2f, %.2f (20 and 256: the same order; the fewest %d of 20); epoch 1: %lld of %d positions "
                  "moved\n",
                  mean1, mean3, fewest3, mean20, mean, fewest, (long long)moved, ROWS);
    free(ids);
    free(all);
    free(next);
}

/* ---- splits --------------------------------------------------------------------- */

/* Sorted row ids of one epoch of a part. */
static int64_t part_rows(erase_reader_part_t part, double fraction, int shards, int shuffle, int64_t *ids)
{
    erase_reader_options_t o = opts(100, 0, 1);
    o.drop_last = 0;
    o.part = part;
    o.eval_fraction = fraction;
    o.eval_shards = shards;
    o.shuffle = shuffle;
    erase_reader_t *r = open_reader(data, &o);
    int64_t n = 0;
    erase_ctr_batch_t b;
    for (;;) {
        MUST(erase_ctr_reader_next(r, &b));
        if (b.end_of_epoch)
            break;
        memcpy(ids + n, b.row_id, sizeof(int64_t) * (size_t)b.size);
        n += b.size;
    }
    erase_reader_close(r);
    int64_t *mark = calloc(ROWS, sizeof *mark);
    for (int64_t i = 0; i < n; i++)
        mark[ids[i]]++;
    int64_t k = 0;
    for (int64_t i = 0; i < ROWS; i++) {
        assert_true(mark[i] <= 1);
        if (mark[i])
            ids[k++] = i;
    }
    free(mark);
    return n;
}

static void test_splits(void **state)
{
    int64_t *a = malloc(sizeof(int64_t) * ROWS), *b = malloc(sizeof(int64_t) * ROWS);
    /* by fraction: the last round(0.2 * 9999) = 2000 rows */
    for (int shuffle = 0; shuffle < 2; shuffle++) {
        assert_int_equal(part_rows(ERASE_READER_PART_TRAIN, 0.2, 0, shuffle, a), 7999);
        assert_int_equal(part_rows(ERASE_READER_PART_EVAL, 0.2, 0, shuffle, b), 2000);
        for (int64_t i = 0; i < 7999; i++)
            assert_int_equal(a[i], i);
        for (int64_t i = 0; i < 2000; i++)
            assert_int_equal(b[i], 7999 + i);
    }
    /* by shard: the last shard (999 rows) */
    assert_int_equal(part_rows(ERASE_READER_PART_TRAIN, 0, 1, 1, a), 9000);
    assert_int_equal(part_rows(ERASE_READER_PART_EVAL, 0, 1, 1, b), 999);
    assert_int_equal(a[8999], 8999);
    assert_int_equal(b[0], 9000);
    assert_int_equal(part_rows(ERASE_READER_PART_EVAL, 0, 2, 1, b), 3999);
    assert_int_equal(b[0], 6000);
    free(a);
    free(b);

    /* bad options */
    const char *in[1] = { data };
    erase_reader_t *r = NULL;
    struct {
        erase_reader_options_t o;
        const char *message;
    } bad[7];
    for (int i = 0; i < 7; i++)
        bad[i].o = opts(100, 0, 1);
    bad[0].o.part = ERASE_READER_PART_TRAIN;
    bad[0].message = "part train needs a split: eval_fraction in (0, 1) or eval_shards >= 1, got 0 and 0";
    bad[1].o.part = ERASE_READER_PART_EVAL;
    bad[1].o.eval_shards = 5;
    bad[1].message = "eval_shards 5: the dataset has only 4 shards";
    bad[2].o.part = ERASE_READER_PART_TRAIN;
    bad[2].o.eval_shards = 4;
    bad[2].message = "the train part has no rows (9999 rows in 4 shards)";
    bad[3].o.global_batch = 10000;
    bad[3].message = "global batch 10000 is larger than the 9999 samples of the selected part: no step";
    bad[4].o.dp_rank = 4;
    bad[4].o.dp_size = 4;
    bad[4].message = "dp_rank 4 outside [0, dp_size = 4)";
    bad[5].o.global_batch = 0;
    bad[5].message = "global_batch must be >= 1, got 0";
    bad[6].o.global_batch = INT64_MAX; /* position + G overflowed (UBSan) */
    bad[6].message = "global batch 9223372036854775807 is larger than the 9999 samples of the selected part: "
                     "no step";
    for (int i = 0; i < 7; i++) {
        assert_int_equal(erase_ctr_reader_open(in, 1, &bad[i].o, &r), ERASE_ERR_INVALID);
        assert_null(r);
        assert_string_equal(erase_error_reason(), bad[i].message);
    }
    print_message("fraction 0.2: train = rows 0..7998, eval = 7999..9998 (shuffled or not); by shard: the "
                  "last 1 or 2 shards; 7 bad option sets refused with exact messages\n");
}

/* ---- rejected files --------------------------------------------------------------- */

typedef enum {
    V_OK, V_NO_FORMAT, V_FORMAT_OTHER, V_FORMAT_NUMBER, V_NO_ROWS, V_NO_DENSE, V_DENSE_GROUP,
    V_LABEL_FLOAT, V_SPARSE_SIGNED, V_DENSE_12, V_SPARSE_SHORT, V_MISSING_ZERO, V_VARIANTS
} variant_t;

static void write_dataset(hid_t f, const char *name, hid_t type, int rank, hsize_t n, hsize_t cols)
{
    hsize_t dims[2] = { n, cols };
    hid_t sp = H5Screate_simple(rank, dims, NULL);
    hid_t d = H5Dcreate2(f, name, type, sp, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    assert_true(d >= 0);
    size_t bytes = (size_t)(n * cols * 8);
    void *zero = calloc(1, bytes + 8);
    H5Dwrite(d, type, H5S_ALL, H5S_ALL, H5P_DEFAULT, zero);
    free(zero);
    H5Dclose(d);
    H5Sclose(sp);
}

static void write_string_attr(hid_t f, const char *name, const char *value)
{
    hid_t t = H5Tcopy(H5T_C_S1);
    H5Tset_size(t, strlen(value) + 1);
    hid_t sp = H5Screate(H5S_SCALAR);
    hid_t a = H5Acreate2(f, name, t, sp, H5P_DEFAULT, H5P_DEFAULT);
    H5Awrite(a, t, value);
    H5Aclose(a);
    H5Sclose(sp);
    H5Tclose(t);
}

/* A 100-row shard written by hand, right or wrong in one way. */
static void make_shard(const char *path, variant_t v)
{
    hid_t f = H5Fcreate(path, H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
    assert_true(f >= 0);
    if (v == V_FORMAT_NUMBER) {
        hid_t sp = H5Screate(H5S_SCALAR);
        hid_t a = H5Acreate2(f, "format", H5T_STD_I32LE, sp, H5P_DEFAULT, H5P_DEFAULT);
        int one = 1;
        H5Awrite(a, H5T_NATIVE_INT, &one);
        H5Aclose(a);
        H5Sclose(sp);
    } else if (v != V_NO_FORMAT) {
        write_string_attr(f, "format", v == V_FORMAT_OTHER ? "erase-ctr-0" : "erase-ctr-1");
    }
    if (v != V_NO_ROWS) {
        hid_t sp = H5Screate(H5S_SCALAR);
        hid_t a = H5Acreate2(f, "rows", H5T_STD_I64LE, sp, H5P_DEFAULT, H5P_DEFAULT);
        int64_t rows = 100;
        H5Awrite(a, H5T_NATIVE_INT64, &rows);
        H5Aclose(a);
        H5Sclose(sp);
    }
    if (v == V_MISSING_ZERO) {
        hid_t sp = H5Screate(H5S_SCALAR);
        hid_t a = H5Acreate2(f, "sparse_missing", H5T_STD_I64LE, sp, H5P_DEFAULT, H5P_DEFAULT);
        int64_t zero = 0;
        H5Awrite(a, H5T_NATIVE_INT64, &zero);
        H5Aclose(a);
        H5Sclose(sp);
    }
    write_dataset(f, "/label", v == V_LABEL_FLOAT ? H5T_IEEE_F32LE : H5T_STD_U8LE, 1, 100, 1);
    if (v == V_DENSE_GROUP)
        H5Gclose(H5Gcreate2(f, "/dense", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT));
    else if (v != V_NO_DENSE)
        write_dataset(f, "/dense", H5T_IEEE_F32LE, 2, 100, v == V_DENSE_12 ? 12 : 13);
    write_dataset(f, "/sparse", v == V_SPARSE_SIGNED ? H5T_STD_I32LE : H5T_STD_U32LE, 2,
                  v == V_SPARSE_SHORT ? 99 : 100, 26);
    H5Fclose(f);
}

static void expect_rejected(const char *input, erase_status_t status, const char *message)
{
    erase_reader_options_t o = opts(10, 0, 1);
    const char *in[1] = { input };
    erase_reader_t *r = NULL;
    erase_status_t got = erase_ctr_reader_open(in, 1, &o, &r);
    if (got != status || strcmp(erase_error_reason(), message) != 0)
        fail_msg("%s: got %s '%s', expected %s '%s'", input, erase_status_name(got), erase_error_reason(),
                 erase_status_name(status), message);
    assert_null(r);
}

static void test_rejected_files(void **state)
{
    static const char *const messages[V_VARIANTS] = {
        [V_NO_FORMAT] = "%s: not an erase CTR shard: no attribute 'format' on the root group",
        [V_FORMAT_OTHER] = "%s: attribute format: expected \"erase-ctr-1\", got \"erase-ctr-0\"",
        [V_FORMAT_NUMBER] = "%s: attribute format: expected \"erase-ctr-1\", got a value that is not a string",
        [V_NO_ROWS] = "%s: attribute rows: expected an integer >= 0",
        [V_NO_DENSE] = "%s: dataset /dense: missing",
        [V_DENSE_GROUP] = "%s: dataset /dense: missing (the name is not a dataset)",
        [V_LABEL_FLOAT] = "%s: dataset /label: expected uint8, got float32",
        [V_SPARSE_SIGNED] = "%s: dataset /sparse: expected uint32, got int32",
        [V_DENSE_12] = "%s: dataset /dense: expected shape [100, 13] (rows = 100), got [100, 12]",
        [V_SPARSE_SHORT] = "%s: dataset /sparse: expected shape [100, 26] (rows = 100), got [99, 26]",
        [V_MISSING_ZERO] = "%s: attribute sparse_missing: expected 4294967295 (0xFFFFFFFF)",
    };
    char want[4096];
    const char *ok = io_path(scratch, "ok.h5");
    make_shard(ok, V_OK);
    erase_reader_options_t o = opts(10, 0, 1);
    erase_reader_t *r = open_reader(ok, &o);
    assert_int_equal(erase_reader_info(r).samples, 100);
    erase_reader_close(r);
    for (int v = V_NO_FORMAT; v < V_VARIANTS; v++) {
        char name[32];
        snprintf(name, sizeof name, "bad-%d.h5", v);
        const char *path = io_path(scratch, name);
        make_shard(path, (variant_t)v);
        snprintf(want, sizeof want, messages[v], path);
        expect_rejected(path, ERASE_ERR_FORMAT, want);
    }

    /* truncated: the first half of a real shard */
    const char *shard = io_path(data, "part-00000.h5"), *cut = io_path(scratch, "truncated.h5");
    struct stat sb;
    assert_int_equal(stat(shard, &sb), 0);
    FILE *in = fopen(shard, "rb"), *out = fopen(cut, "wb");
    char *bytes = malloc((size_t)sb.st_size);
    assert_int_equal(fread(bytes, 1, (size_t)sb.st_size, in), (size_t)sb.st_size);
    fwrite(bytes, 1, (size_t)sb.st_size / 2, out);
    fclose(in);
    fclose(out);
    free(bytes);
    snprintf(want, sizeof want,
             "%s: not an HDF5 file or damaged (truncated?): truncated file: eof = %lld, sblock->base_addr = 0, "
             "stored_eof = %lld",
             cut, (long long)sb.st_size / 2, (long long)sb.st_size);
    expect_rejected(cut, ERASE_ERR_FORMAT, want);
    print_message("truncated: %s\n", erase_error_reason());

    /* not HDF5 at all; missing */
    const char *text = io_path(scratch, "text.h5");
    assert_int_equal(io_write_text(text, "label\tI1\n"), 0);
    snprintf(want, sizeof want, "%s: not an HDF5 file or damaged (truncated?): file signature not found", text);
    expect_rejected(text, ERASE_ERR_FORMAT, want);
    const char *none = io_path(scratch, "none.h5");
    snprintf(want, sizeof want, "%s: cannot open: No such file or directory", none);
    expect_rejected(none, ERASE_ERR_IO, want);

    /* directories: no index, an index that does not match, a bad index line */
    char *dir = io_scratch_make("reader-dir");
    snprintf(want, sizeof want, "%s: no index.txt: not a dataset written by erase-convert (or not complete)", dir);
    expect_rejected(dir, ERASE_ERR_FORMAT, want);
    make_shard(io_path(dir, "s.h5"), V_OK);
    assert_int_equal(io_write_text(io_path(dir, "index.txt"), "# index\ns.h5 200\n"), 0);
    snprintf(want, sizeof want, "%s/index.txt: %s/s.h5 has 100 rows, the index says 200", dir, dir);
    expect_rejected(dir, ERASE_ERR_FORMAT, want);
    assert_int_equal(io_write_text(io_path(dir, "index.txt"), "s.h5 100\ns.h5\n"), 0);
    snprintf(want, sizeof want, "%s/index.txt:2: expected 'FILE ROWS', got 's.h5'", dir);
    expect_rejected(dir, ERASE_ERR_FORMAT, want);
    /* issue 32: a shard listed twice would be read twice an epoch */
    assert_int_equal(io_write_text(io_path(dir, "index.txt"), "s.h5 100\n# again\ns.h5 100\n"), 0);
    snprintf(want, sizeof want, "%s/index.txt:3: s.h5 is listed a second time (a shard is listed once)", dir);
    expect_rejected(dir, ERASE_ERR_FORMAT, want);

    /* index entries that are not regular files: a FIFO (reading it waited
     * for a writer forever: the alarm fails the test instead), a directory,
     * a device through a symbolic link; the same given directly, and an
     * index.txt that is a FIFO */
    alarm(60);
    assert_int_equal(mkfifo(io_path(dir, "fifo.h5"), 0600), 0);
    assert_int_equal(mkdir(io_path(dir, "sub.h5"), 0700), 0);
    assert_int_equal(symlink("/dev/null", io_path(dir, "null.h5")), 0);
    static const char *const kinds[][2] = { { "fifo.h5", "a FIFO" },
                                            { "sub.h5", "a directory" },
                                            { "null.h5", "a character device" } };
    for (int k = 0; k < 3; k++) {
        char index[128];
        snprintf(index, sizeof index, "s.h5 100\n%s 100\n", kinds[k][0]);
        assert_int_equal(io_write_text(io_path(dir, "index.txt"), index), 0);
        snprintf(want, sizeof want, "%s/index.txt:2: %s is %s, expected a regular file", dir, kinds[k][0],
                 kinds[k][1]);
        expect_rejected(dir, ERASE_ERR_FORMAT, want);
    }
    snprintf(want, sizeof want, "%s/fifo.h5 is a FIFO, expected a shard file or a dataset directory", dir);
    expect_rejected(io_path(dir, "fifo.h5"), ERASE_ERR_FORMAT, want);
    snprintf(want, sizeof want, "%s/null.h5 is a character device, expected a shard file or a dataset directory", dir);
    expect_rejected(io_path(dir, "null.h5"), ERASE_ERR_FORMAT, want);
    assert_int_equal(unlink(io_path(dir, "index.txt")), 0);
    assert_int_equal(mkfifo(io_path(dir, "index.txt"), 0600), 0);
    snprintf(want, sizeof want, "%s/index.txt is a FIFO, expected a regular file", dir);
    expect_rejected(dir, ERASE_ERR_IO, want); /* erase_file_check_regular */
    alarm(0);
    io_scratch_remove(dir);
    print_message("%d wrong schemas, a truncated file, a text file, a missing file, 4 bad directories and 6 "
                  "inputs that are not regular files rejected at open with the file and dataset named\n",
                  V_VARIANTS - 1);
}

/* A shard whose first /dense chunk is overwritten: open succeeds (metadata
 * intact), the read fails in the prefetch thread and next() reports it. */
/* File address and stored size of the first chunk of `dataset` in `path`. */
static void test_damaged_chunk(void **state)
{
    const char *src = io_path(data, "part-00000.h5"), *dst = io_path(scratch, "damaged.h5");
    struct stat sb;
    assert_int_equal(stat(src, &sb), 0);
    FILE *in = fopen(src, "rb");
    char *bytes = malloc((size_t)sb.st_size);
    assert_int_equal(fread(bytes, 1, (size_t)sb.st_size, in), (size_t)sb.st_size);
    fclose(in);
    uint64_t addr, size;
    assert_int_equal(io_first_chunk(src, "/dense", &addr, &size), 0);
    memset(bytes + addr + size / 4, 0x5a, size / 2);
    FILE *out = fopen(dst, "wb");
    fwrite(bytes, 1, (size_t)sb.st_size, out);
    fclose(out);
    free(bytes);
    for (int prefetch = 0; prefetch <= 2; prefetch += 2) {
        erase_reader_t *r = open_in_order(dst, prefetch);
        erase_ctr_batch_t b;
        char want[4096];
        snprintf(want, sizeof want, "%s: dataset /dense: reading rows [0, 100) failed: ", dst);
        for (int k = 0; k < 2; k++) { /* and again: the failure sticks */
            assert_int_equal(erase_ctr_reader_next(r, &b), ERASE_ERR_IO);
            const char *m = erase_error_reason();
            if (strncmp(m, want, strlen(want)) != 0 || strlen(m) == strlen(want))
                fail_msg("prefetch %d: got '%s', expected '%s<HDF5's reason>'", prefetch, m, want);
        }
        print_message("damaged chunk, prefetch %d: %s\n", prefetch, erase_error_reason());
        erase_reader_close(r);
    }
}

/* Overwrite one value of an uncompressed shard in place: /label[row] =
 * label (dense NULL) or /dense[row, col] = *dense. */
static void poke(const char *path, int64_t row, int col, uint8_t label, const float *dense)
{
    hid_t f = H5Fopen(path, H5F_ACC_RDWR, H5P_DEFAULT);
    assert_true(f >= 0);
    hid_t d = H5Dopen2(f, dense ? "/dense" : "/label", H5P_DEFAULT);
    assert_true(d >= 0);
    hid_t fs = H5Dget_space(d);
    hsize_t start[2] = { (hsize_t)row, (hsize_t)col }, one[2] = { 1, 1 };
    hid_t ms = H5Screate_simple(dense ? 2 : 1, one, NULL);
    assert_true(H5Sselect_hyperslab(fs, H5S_SELECT_SET, start, NULL, one, NULL) >= 0);
    if (dense)
        assert_true(H5Dwrite(d, H5T_NATIVE_FLOAT, ms, fs, H5P_DEFAULT, dense) >= 0);
    else
        assert_true(H5Dwrite(d, H5T_NATIVE_UINT8, ms, fs, H5P_DEFAULT, &label) >= 0);
    H5Sclose(ms);
    H5Sclose(fs);
    H5Dclose(d);
    H5Fclose(f);
}

/* Read the whole dataset with the reader (shuffled, prefetch 2; or in file
 * order, prefetch 0) until a batch fails; expect `want`, twice (it sticks). */
static void expect_read_fails(const char *input, int shuffle, const char *want)
{
    erase_reader_options_t o = opts(100, 0, 1);
    o.shuffle = shuffle;
    o.prefetch = shuffle ? 2 : 0;
    erase_reader_t *r = open_reader(input, &o);
    erase_ctr_batch_t b;
    erase_status_t st;
    int64_t batches = 0;
    while ((st = erase_ctr_reader_next(r, &b)) == ERASE_OK && !b.end_of_epoch)
        batches++;
    for (int k = 0; k < 2; k++) {
        if (st != ERASE_ERR_FORMAT || strcmp(erase_error_reason(), want) != 0)
            fail_msg("shuffle %d, after %lld batches: got %s '%s', expected ERASE_ERR_FORMAT '%s'", shuffle,
                     (long long)batches, erase_status_name(st), erase_error_reason(), want);
        st = erase_ctr_reader_next(r, &b);
    }
    print_message("shuffle %d, after %lld batches: %s\n", shuffle, (long long)batches, erase_error_reason());
    erase_reader_close(r);
}

/* A shard read directly (erase-inspect data's path): rows [begin, begin +
 * count) fail with `want` (NULL: succeed). */
static void expect_shard_read(const char *path, int64_t begin, int64_t count, const char *want)
{
    erase_ctr_shard_t *sh;
    MUST(erase_ctr_shard_open(path, &sh));
    uint8_t label[100];
    float dense[100 * 13];
    uint32_t sparse[100 * 26];
    erase_status_t st = erase_ctr_shard_read(sh, begin, count, label, dense, sparse);
    erase_ctr_shard_close(sh);
    if (!want && st != ERASE_OK)
        fail_msg("%s rows [%lld, %lld): %s", path, (long long)begin, (long long)(begin + count),
                 erase_error_reason());
    if (want && (st != ERASE_ERR_FORMAT || strcmp(erase_error_reason(), want) != 0))
        fail_msg("%s rows [%lld, %lld): got %s '%s', expected ERASE_ERR_FORMAT '%s'", path, (long long)begin,
                 (long long)(begin + count), erase_status_name(st), st ? erase_error_reason() : "", want);
}

/* The Kaggle sample in uncompressed shards of 3000 rows (values can be
 * changed in place through HDF5) in a new scratch directory named by `tag`. */
static char *convert_uncompressed(const char *tag)
{
    char *dir = io_scratch_make(tag);
    assert_non_null(dir);
    erase_criteo_convert_options_t co = erase_criteo_convert_options_default();
    co.out_dir = dir;
    co.shard_rows = 3000;
    co.write.chunk_rows = 500;
    co.write.compress = 0;
    const char *in[1] = { io_sample("kaggle-train-first9999.tsv") };
    MUST(erase_criteo_convert(in, 1, &co, NULL));
    return dir;
}

/* An uncompressed dataset with a label 7, then a dense +inf, then a dense
 * -inf written through HDF5 (checksums still match): the reader (shuffled
 * and not) and a direct shard read reject the row with the file, dataset,
 * row in the shard and value; the rows around it and NaN (missing) read
 * fine. Then a byte of /sparse changed in the file: Fletcher32 says so. */
static void test_bad_values(void **state)
{
    char *dir = convert_uncompressed("reader-values");
    char shard0[4096], shard2[4096], want[8300];
    snprintf(shard0, sizeof shard0, "%s", io_path(dir, "part-00000.h5"));
    snprintf(shard2, sizeof shard2, "%s", io_path(dir, "part-00002.h5"));
    assert_true(isnan(raw.dense[0 * 13 + 11])); /* row 0 I12 is missing: NaN reads fine */
    expect_shard_read(shard0, 0, 100, NULL);

    poke(shard0, 17, 0, 7, NULL);
    snprintf(want, sizeof want, "%s: dataset /label: row 17 is 7, expected 0 or 1 (damaged shard?)", shard0);
    expect_read_fails(dir, 1, want);
    expect_read_fails(dir, 0, want);
    expect_shard_read(shard0, 10, 20, want);
    expect_shard_read(shard0, 18, 100, NULL);
    poke(shard0, 17, 0, raw.label[17], NULL);

    float inf = INFINITY, minus_inf = -INFINITY;
    poke(shard0, 17, 3, 0, &inf);
    snprintf(want, sizeof want,
             "%s: dataset /dense: row 17 feature 3 (I4) is inf, expected a finite value or NaN = missing "
             "(damaged shard?)", shard0);
    expect_read_fails(dir, 1, want);
    expect_read_fails(dir, 0, want);
    expect_shard_read(shard0, 17, 1, want);
    expect_shard_read(shard0, 0, 17, NULL);
    poke(shard0, 17, 3, 0, &raw.dense[17 * 13 + 3]);

    poke(shard2, 2999, 12, 0, &minus_inf); /* the last row of the shard, the last feature */
    snprintf(want, sizeof want,
             "%s: dataset /dense: row 2999 feature 12 (I13) is -inf, expected a finite value or NaN = missing "
             "(damaged shard?)", shard2);
    expect_read_fails(dir, 1, want);
    expect_read_fails(dir, 0, want);
    expect_shard_read(shard2, 2950, 50, want);
    poke(shard2, 2999, 12, 0, &raw.dense[(6000 + 2999) * 13 + 12]);
    expect_shard_read(shard2, 2950, 50, NULL);

    /* one id of /sparse changed in the file itself (as a bad disk would):
     * no range check can tell, the chunk's Fletcher32 checksum does */
    uint64_t addr, size;
    assert_int_equal(io_first_chunk(shard0, "/sparse", &addr, &size), 0);
    FILE *f = fopen(shard0, "r+b");
    assert_non_null(f);
    unsigned char byte;
    assert_int_equal(fseek(f, (long)(addr + size / 2), SEEK_SET), 0);
    assert_int_equal(fread(&byte, 1, 1, f), 1);
    byte ^= 0x10;
    assert_int_equal(fseek(f, (long)(addr + size / 2), SEEK_SET), 0);
    assert_int_equal(fwrite(&byte, 1, 1, f), 1);
    assert_int_equal(fclose(f), 0);
    erase_ctr_shard_t *sh;
    MUST(erase_ctr_shard_open(shard0, &sh));
    assert_int_equal(erase_ctr_shard_checksummed(sh), 1);
    assert_int_equal(erase_ctr_shard_compressed(sh), 0);
    uint32_t ids[100 * 26];
    assert_int_equal(erase_ctr_shard_read(sh, 0, 100, NULL, NULL, ids), ERASE_ERR_IO);
    snprintf(want, sizeof want, "%s: dataset /sparse: reading rows [0, 100) failed: ", shard0);
    const char *m = erase_error_reason();
    if (strncmp(m, want, strlen(want)) != 0 || !strstr(m, "Fletcher32"))
        fail_msg("got '%s', expected '%s<HDF5's reason naming Fletcher32>'", m, want);
    print_message("a changed /sparse byte: %s\n", m);
    uint8_t labels[100];
    MUST(erase_ctr_shard_read(sh, 0, 100, labels, NULL, NULL)); /* /label's chunk is intact */
    erase_ctr_shard_close(sh);
    io_scratch_remove(dir);
}

/* The prefetch thread decodes with flush-to-zero and denormals-are-zero
 * (lib/core/fpmode.h), as the compute threads do: a subnormal stored value
 * (1e-40) reaches the model as exactly 0 (read as zero, so max(x, 0) = 0),
 * where this test's own thread, which never set the mode, computes
 * log1p(1e-40) = 1e-40. Compared by bits: no float arithmetic. */
static void test_prefetch_thread_flushes(void **state)
{
    char *dir = convert_uncompressed("reader-fpmode");
    const float tiny = 1e-40f; /* subnormal */
    poke(io_path(dir, "part-00000.h5"), 5, 0, 0, &tiny);
    uint32_t bits[2];
    for (int prefetch = 0; prefetch <= 2; prefetch += 2) {
        erase_reader_t *r = open_in_order(dir, prefetch);
        erase_ctr_batch_t b;
        MUST(erase_ctr_reader_next(r, &b));
        assert_int_equal(b.row_id[5], 5);
        memcpy(&bits[prefetch / 2], &b.dense[5 * 13 + 0], 4);
        erase_reader_close(r);
    }
    uint32_t tiny_bits;
    memcpy(&tiny_bits, &tiny, 4);
    print_message("stored I1 = 1e-40 (bits %08x): model gets bits %08x on this thread (prefetch 0), "
                  "%08x from the prefetch thread\n", tiny_bits, bits[0], bits[1]);
    assert_int_equal(bits[0], tiny_bits);
    assert_int_equal(bits[1], 0);
    io_scratch_remove(dir);
}

static void test_check_tables(void **state)
{
    erase_reader_options_t o = opts(100, 0, 1);
    erase_reader_t *r = open_reader(data, &o);
    uint32_t rows[26];
    for (int f = 0; f < 26; f++)
        rows[f] = 10007;
    MUST(erase_ctr_reader_check_tables(r, 13, 26, rows));
    rows[4] = 1;
    assert_int_equal(erase_ctr_reader_check_tables(r, 13, 26, rows), ERASE_ERR_INVALID);
    assert_string_equal(erase_error_reason(), "table C5 has 1 row: needs >= 2 (the missing-id row and one for ids)");
    rows[4] = 2;
    MUST(erase_ctr_reader_check_tables(r, 13, 26, rows));
    assert_int_equal(erase_ctr_reader_check_tables(r, 13, 20, rows), ERASE_ERR_INVALID);
    assert_string_equal(erase_error_reason(), "the data has 26 categorical features, the model 20");
    assert_int_equal(erase_ctr_reader_check_tables(r, 12, 26, rows), ERASE_ERR_INVALID);
    assert_string_equal(erase_error_reason(), "the data has 13 dense features, the model 12");

    /* the time waited: the per-batch waits add up to the total */
    double sum = 0;
    erase_ctr_batch_t b;
    for (int k = 0; k < 120; k++) {
        MUST(erase_ctr_reader_next(r, &b));
        assert_true(b.wait_s >= 0);
        sum += b.wait_s;
    }
    assert_true(erase_reader_wait_seconds(r) == sum);
    erase_reader_close(r);
    print_message("tables of 10007 and 2 rows accepted, 1 row and wrong feature counts refused; waited %.6f s "
                  "over 120 batches\n", sum);
}

/* 20 shards (more than the reader keeps open): shuffled epochs read every
 * row once with the stored values; a shard replaced after open is refused
 * when it is reopened. */
static void test_many_shards(void **state)
{
    const char *many = io_path(scratch, "many");
    erase_criteo_convert_options_t co = erase_criteo_convert_options_default();
    co.out_dir = many;
    co.shard_rows = 500;
    co.write.chunk_rows = 250;
    const char *src[1] = { io_sample("kaggle-train-first9999.tsv") };
    MUST(erase_criteo_convert(src, 1, &co, NULL));
    erase_reader_options_t o = opts(300, 0, 1);
    o.drop_last = 0;
    o.block_rows = 250;
    erase_reader_t *r = open_reader(many, &o);
    assert_int_equal(erase_reader_info(r).shards, 20);
    int64_t *seen = calloc(ROWS, sizeof *seen);
    for (int e = 1; e <= 2;) {
        erase_ctr_batch_t b;
        MUST(erase_ctr_reader_next(r, &b));
        if (b.end_of_epoch) {
            for (int64_t i = 0; i < ROWS; i++)
                assert_int_equal(seen[i], e);
            e++;
            continue;
        }
        for (int64_t i = 0; i < b.size; i++) {
            int64_t id = b.row_id[i];
            assert_int_equal(seen[id], e - 1);
            seen[id] = e;
            assert_memory_equal(b.sparse + i * 26, raw.sparse + id * 26, 26 * 4);
            for (int j = 0; j < 13; j++) {
                float want = model_value(raw.dense[id * 13 + j]);
                assert_memory_equal(&b.dense[i * 13 + j], &want, 4);
            }
            assert_true(b.label[i] == (float)raw.label[id]);
        }
    }
    erase_reader_close(r);
    free(seen);

    o.shuffle = 0;
    o.prefetch = 0;
    r = open_reader(many, &o);
    const char *third = io_path(many, "part-00003.h5"), *last = io_path(many, "part-00019.h5");
    FILE *in = fopen(last, "rb"), *out = fopen(io_path(many, "swap.tmp"), "wb");
    assert_true(in && out);
    char buf[65536];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, in)) > 0)
        fwrite(buf, 1, n, out);
    fclose(in);
    fclose(out);
    assert_int_equal(rename(io_path(many, "swap.tmp"), third), 0);
    erase_ctr_batch_t b;
    erase_status_t st = ERASE_OK;
    for (int k = 0; k < 10 && st == ERASE_OK; k++)
        st = erase_ctr_reader_next(r, &b);
    assert_int_equal(st, ERASE_ERR_FORMAT);
    char want[4096];
    snprintf(want, sizeof want, "%s: has 499 rows now, 500 when the reader opened it", third);
    assert_string_equal(erase_error_reason(), want);
    erase_reader_close(r);
    print_message("20 shards, 2 shuffled epochs: every row once per epoch with its stored values; a shard "
                  "replaced after open: '%s'\n", want);
}

static int setup(void **state)
{
    scratch = io_scratch_make("reader");
    if (!scratch)
        return -1;
    static char dir[4096];
    snprintf(dir, sizeof dir, "%s/kaggle", scratch);
    data = dir;
    erase_criteo_convert_options_t o = erase_criteo_convert_options_default();
    o.out_dir = data;
    o.shard_rows = 3000;
    o.write.chunk_rows = 500;
    const char *in[1] = { io_sample("kaggle-train-first9999.tsv") };
    if (erase_criteo_convert(in, 1, &o, NULL) != ERASE_OK || io_rows_load(data, &raw) != ERASE_OK) {
        fprintf(stderr, "setup: %s\n", erase_error_message());
        return -1;
    }
    return 0;
}

static int teardown(void **state)
{
    io_rows_free(&raw);
    io_scratch_remove(scratch);
    return 0;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_model_inputs),
        cmocka_unit_test(test_ranks_drop_last),
        cmocka_unit_test(test_ranks_keep_last),
        cmocka_unit_test(test_last_batch_split),
        cmocka_unit_test(test_cursor),
        cmocka_unit_test(test_pools),
        cmocka_unit_test(test_splits),
        cmocka_unit_test(test_rejected_files),
        cmocka_unit_test(test_damaged_chunk),
        cmocka_unit_test(test_bad_values),
        cmocka_unit_test(test_prefetch_thread_flushes),
        cmocka_unit_test(test_check_tables),
        cmocka_unit_test(test_many_shards),
    };
    return cmocka_run_group_tests_name("CTR reader", tests, setup, teardown);
}
