/*
 * The reader at scale (issue 35): data in several directories, one per
 * day, as erase-train --train takes them.
 *   - the days read together are the days concatenated in the order given
 *     (file order: every row of every day, with its stored values); each
 *     shuffled epoch is a permutation of all their rows, the same on every
 *     open (rank splits under mpirun: test-ctr-reader-days.sh);
 *   - opening reads no row: a row format that counts its reads sees none
 *     at open, and a day whose every chunk of every dataset is overwritten
 *     still opens; the first batch fails naming the shard, the dataset and
 *     the rows, with HDF5's Fletcher32 reason;
 *   - the reader's own accounting of its memory (erase_reader_info): the
 *     buffers are the same for one day and for three; the index grows by
 *     40 bytes per block plus the shard's path and 24 bytes per shard.
 */
#include <inttypes.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <cmocka.h>
#include <hdf5.h>

#include "io/ctr_reader.h"
#include "io/synth.h"
#include "tests/io/io_util.h"

#define DAYS 3
static const int64_t day_rows[DAYS] = { 3000, 2500, 4100 }; /* shards of 1000 rows, blocks of 500 */
static char *scratch;
static char days[DAYS][4096];
static const char *inputs[DAYS];

/* A CTR row format that counts the rows it reads. */
static erase_row_format_t counting;
static int64_t reads, rows_read;

static erase_status_t counting_read(void *shard, int64_t begin, int64_t count, void *const *raw)
{
    reads++;
    rows_read += count;
    return erase_ctr_rows.read(shard, begin, count, raw);
}

static erase_reader_options_t opts(int shuffle)
{
    erase_reader_options_t o = erase_reader_options_default();
    o.global_batch = 100;
    o.block_rows = 500;
    o.seed = 3;
    o.shuffle = shuffle;
    o.prefetch = 0;
    return o;
}

static erase_reader_t *open_days(const erase_row_format_t *fmt, int n, int shuffle)
{
    erase_reader_options_t o = opts(shuffle);
    erase_reader_t *r;
    if (erase_reader_open(fmt, inputs, n, &o, &r) != ERASE_OK)
        fail_msg("open: %s", erase_error_reason());
    return r;
}

/* File order over the days is the days concatenated; a shuffled epoch is
 * a permutation of all rows, drawn again identically by a second open. */
static void test_days_in_order(void **state)
{
    (void)state;
    io_rows_t day[DAYS];
    int64_t total = 0;
    for (int d = 0; d < DAYS; d++) {
        MUST(io_rows_load(days[d], &day[d]));
        assert_int_equal(day[d].n, day_rows[d]);
        total += day_rows[d];
    }
    erase_reader_t *r = open_days(&erase_ctr_rows, DAYS, 0);
    assert_int_equal(erase_reader_info(r).total_rows, total);
    int64_t seen = 0, wrong = 0;
    for (;;) {
        erase_reader_batch_t b;
        MUST(erase_reader_next(r, &b));
        if (b.end_of_epoch)
            break;
        erase_ctr_batch_t c = erase_ctr_batch(&b);
        for (int64_t i = 0; i < c.size; i++, seen++) {
            int d = 0;
            int64_t k = seen;
            while (k >= day_rows[d])
                k -= day_rows[d++];
            wrong += c.row_id[i] != seen || c.label[i] != (float)day[d].label[k] ||
                     memcmp(c.sparse + i * 26, day[d].sparse + k * 26, 26 * sizeof(uint32_t)) != 0;
        }
    }
    erase_reader_close(r);
    assert_int_equal(seen, total / 100 * 100); /* the last partial batch dropped */
    assert_int_equal(wrong, 0);

    int64_t *order[2];
    for (int k = 0; k < 2; k++) {
        order[k] = calloc((size_t)total, sizeof(int64_t));
        r = open_days(&erase_ctr_rows, DAYS, 1);
        erase_reader_batch_t b;
        int64_t at = 0;
        for (;;) {
            MUST(erase_reader_next(r, &b));
            if (b.end_of_epoch)
                break;
            for (int64_t i = 0; i < b.size; i++)
                order[k][at++] = b.row_id[i];
        }
        erase_reader_close(r);
        assert_int_equal(at, total / 100 * 100);
    }
    char *hit = calloc((size_t)total, 1);
    int64_t repeats = 0, from_day[DAYS] = { 0 };
    for (int64_t i = 0; i < total / 100 * 100; i++) {
        repeats += hit[order[0][i]]++ != 0;
        from_day[order[0][i] < day_rows[0] ? 0 : order[0][i] < day_rows[0] + day_rows[1] ? 1 : 2]++;
    }
    assert_int_equal(repeats, 0);
    assert_memory_equal(order[0], order[1], sizeof(int64_t) * (size_t)(total / 100 * 100));
    for (int d = 0; d < DAYS; d++) /* every day is in the epoch (at most 99 rows dropped) */
        assert_true(from_day[d] > day_rows[d] - 100);
    print_message("%d days, %" PRId64 " rows: file order = the days concatenated; a shuffled epoch a permutation "
                  "(rows per day %" PRId64 ", %" PRId64 ", %" PRId64 "), the same on a second open\n",
                  DAYS, total, from_day[0], from_day[1], from_day[2]);
    free(hit);
    free(order[0]);
    free(order[1]);
    for (int d = 0; d < DAYS; d++)
        io_rows_free(&day[d]);
}

/* Overwrite the middle half of every chunk of `dataset` in the HDF5 file
 * `path` (its metadata stays intact); the number of chunks damaged. */
static int damage_chunks(const char *path, const char *dataset)
{
    hid_t f = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
    hid_t d = f >= 0 ? H5Dopen2(f, dataset, H5P_DEFAULT) : -1;
    hid_t sp = d >= 0 ? H5Dget_space(d) : -1;
    hsize_t n = 0;
    if (sp < 0 || H5Dget_num_chunks(d, sp, &n) < 0)
        fail_msg("%s: cannot list the chunks of %s", path, dataset);
    haddr_t *at = calloc(n, sizeof *at);
    hsize_t *bytes = calloc(n, sizeof *bytes);
    for (hsize_t i = 0; i < n; i++) {
        hsize_t offset[2];
        unsigned mask;
        assert_true(H5Dget_chunk_info(d, sp, i, offset, &mask, &at[i], &bytes[i]) >= 0);
    }
    H5Sclose(sp);
    H5Dclose(d);
    H5Fclose(f);
    FILE *io = fopen(path, "r+b");
    assert_non_null(io);
    for (hsize_t i = 0; i < n; i++) {
        char junk[65536];
        size_t len = (size_t)bytes[i] / 2 < sizeof junk ? (size_t)bytes[i] / 2 : sizeof junk;
        memset(junk, 0x5a, len);
        assert_int_equal(fseek(io, (long)(at[i] + bytes[i] / 4), SEEK_SET), 0);
        assert_int_equal(fwrite(junk, 1, len, io), len);
    }
    fclose(io);
    free(at);
    free(bytes);
    return (int)n;
}

/* Open reads no row: no read at open; a day with every chunk damaged opens
 * and fails at its first read, naming the shard, dataset and rows. */
static void test_open_reads_no_rows(void **state)
{
    (void)state;
    counting = erase_ctr_rows;
    counting.read = counting_read;
    reads = rows_read = 0;
    erase_reader_t *r = open_days(&counting, DAYS, 1);
    assert_int_equal(reads, 0);
    erase_reader_batch_t b;
    MUST(erase_reader_next(r, &b));
    /* the first batch reads its pool whole: every block (the 64-block pool holds all 20) */
    assert_int_equal(reads, erase_reader_info(r).blocks);
    assert_int_equal(rows_read, erase_reader_info(r).total_rows);
    erase_reader_close(r);

    char damaged[4096], shard[4200];
    snprintf(damaged, sizeof damaged, "%s/damaged", scratch);
    erase_synth_options_t o = erase_synth_options_default();
    o.out_dir = damaged;
    o.rows = 2000;
    o.shard_rows = 1000;
    o.write.chunk_rows = 500;
    MUST(erase_synth_write(&o, NULL));
    int chunks = 0;
    for (int s = 0; s < 2; s++) {
        snprintf(shard, sizeof shard, "%s/part-%05d.h5", damaged, s);
        chunks += damage_chunks(shard, "/label") + damage_chunks(shard, "/dense") + damage_chunks(shard, "/sparse");
    }
    assert_int_equal(chunks, 2 * 3 * 2);
    const char *in[2] = { damaged, days[0] };
    erase_reader_options_t ro = opts(0);
    MUST(erase_reader_open(&counting, in, 2, &ro, &r));
    assert_int_equal(erase_reader_info(r).total_rows, 2000 + day_rows[0]);
    erase_reader_batch_t b2;
    assert_int_equal(erase_reader_next(r, &b2), ERASE_ERR_IO);
    snprintf(shard, sizeof shard, "%s/part-00000.h5: dataset /label: reading rows [0, 100) failed: ", damaged);
    const char *m = erase_error_reason();
    if (strncmp(m, shard, strlen(shard)) != 0 || !strstr(m, "Fletcher32"))
        fail_msg("got '%s', expected '%s<HDF5's reason naming Fletcher32>'", m, shard);
    erase_reader_close(r);
    print_message("open reads no row; all %d chunks damaged, found at the first read: %s\n", chunks, m);
}

/* The buffers do not grow with the rows (beyond one pool: 4 blocks of
 * 500 rows here); the index grows by 40 bytes a block and 24 bytes + the
 * path a shard. */
static void test_memory_by_rows(void **state)
{
    (void)state;
    erase_reader_info_t info[2];
    for (int k = 0; k < 2; k++) {
        erase_reader_options_t o = opts(1);
        o.pool_blocks = 4;
        erase_reader_t *r;
        MUST(erase_reader_open(&erase_ctr_rows, inputs, k ? DAYS : 1, &o, &r));
        info[k] = erase_reader_info(r);
        erase_reader_close(r);
    }
    assert_true(info[1].total_rows > 3 * info[0].total_rows);
    assert_int_equal(info[0].buffer_bytes, info[1].buffer_bytes);
    size_t paths = 0;
    int shards = 0;
    for (int d = 1; d < DAYS; d++)
        for (int s = 0; s * 1000 < day_rows[d]; s++, shards++) {
            char shard[4200];
            snprintf(shard, sizeof shard, "%s/part-%05d.h5", days[d], s);
            paths += strlen(shard) + 1;
        }
    assert_int_equal(shards, info[1].shards - info[0].shards);
    assert_int_equal(info[1].index_bytes - info[0].index_bytes,
                     40 * (size_t)(info[1].blocks - info[0].blocks) + 24 * (size_t)shards + paths);
    print_message("%" PRId64 " and %" PRId64 " rows: buffers %zu and %zu bytes, index %zu and %zu bytes "
                  "(%" PRId64 " and %" PRId64 " blocks)\n",
                  info[0].total_rows, info[1].total_rows, info[0].buffer_bytes, info[1].buffer_bytes,
                  info[0].index_bytes, info[1].index_bytes, info[0].blocks, info[1].blocks);
}

static int setup(void **state)
{
    (void)state;
    scratch = io_scratch_make("reader-scale");
    if (!scratch)
        return -1;
    for (int d = 0; d < DAYS; d++) {
        snprintf(days[d], sizeof days[d], "%s/day_%d", scratch, d);
        inputs[d] = days[d];
        erase_synth_options_t o = erase_synth_options_default();
        o.out_dir = days[d];
        o.rows = day_rows[d];
        o.shard_rows = 1000;
        o.write.chunk_rows = 500;
        o.seed = (uint64_t)d + 1;
        if (erase_synth_write(&o, NULL) != ERASE_OK) {
            fprintf(stderr, "setup: %s\n", erase_error_message());
            return -1;
        }
    }
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    io_scratch_remove(scratch);
    return 0;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_days_in_order),
        cmocka_unit_test(test_open_reads_no_rows),
        cmocka_unit_test(test_memory_by_rows),
    };
    return cmocka_run_group_tests_name("reader at scale", tests, setup, teardown);
}
