/*
 * Direct chunk writes of CTR shards (issue 35, io/h5_chunks.h): the
 * Fletcher-32 and the shuffle erase computes are the bytes HDF5's own
 * filters store (raw chunks read with H5Dread_chunk from datasets written
 * through HDF5's pipeline, odd lengths included); shards written by the
 * direct path and by HDF5's pipeline (filter_pipeline = 1) from the same
 * rows in the same uneven appends, one-hot and switching to multi-hot
 * midway, hold bitwise equal datasets (H5Dread), the same chunking and
 * filters (ids, flags, parameters), the same values through erase's shard
 * reader, and the same decoded last chunk, zero padding included.
 */
#include <inttypes.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <hdf5.h>
#include <zlib.h>

#include "io/ctr_shard.h"
#include "io/ctr_shard_write.h"
#include "io/h5_chunks.h"
#include "io/h5_util.h"
#include "tests/io/io_util.h"

#define F ERASE_CTR_SHARD_FIELDS
#define ROWS 3000
#define CHUNK 128

/* The raw stored bytes of the chunk at row `row` of dataset `name`. */
static uint8_t *raw_chunk(hid_t file, const char *name, hsize_t row, size_t *size)
{
    hid_t d = H5Dopen2(file, name, H5P_DEFAULT);
    assert_true(d >= 0);
    hsize_t offset[2] = { row, 0 }, bytes = 0;
    assert_true(H5Dget_chunk_storage_size(d, offset, &bytes) >= 0);
    uint8_t *buf = malloc(bytes);
    uint32_t mask = 1;
    assert_true(H5Dread_chunk(d, H5P_DEFAULT, offset, &mask, buf) >= 0);
    assert_int_equal(mask, 0); /* every filter applied */
    H5Dclose(d);
    *size = (size_t)bytes;
    return buf;
}

/* A dataset [rows, cols] of `type` with chunks of `chunk` rows, shuffle
 * (or not) and Fletcher-32 but no deflate, written through HDF5's
 * pipeline; then its raw first chunk against erase's shuffle and sum. */
static void check_filters_like_hdf5(hid_t file, const char *name, hid_t type, size_t bytes, hsize_t cols,
                                    hsize_t chunk, int shuffle)
{
    hsize_t rows = 3 * chunk, dims[2] = { rows, cols }, cdims[2] = { chunk, cols };
    hid_t sp = H5Screate_simple(2, dims, NULL), dcpl = H5Pcreate(H5P_DATASET_CREATE);
    assert_true(H5Pset_chunk(dcpl, 2, cdims) >= 0);
    if (shuffle)
        assert_true(H5Pset_shuffle(dcpl) >= 0);
    assert_true(H5Pset_fletcher32(dcpl) >= 0);
    hid_t d = H5Dcreate2(file, name, type, sp, H5P_DEFAULT, dcpl, H5P_DEFAULT);
    assert_true(d >= 0);
    size_t n = (size_t)(rows * cols * bytes), chunk_bytes = (size_t)(chunk * cols * bytes);
    uint8_t *data = malloc(n), *want = malloc(chunk_bytes);
    for (size_t k = 0; k < n; k++)
        data[k] = (uint8_t)(k * 2654435761u >> 13); /* bytes of every value, high bits set */
    assert_true(H5Dwrite(d, type, H5S_ALL, H5S_ALL, H5P_DEFAULT, data) >= 0);
    H5Dclose(d);
    H5Pclose(dcpl);
    H5Sclose(sp);
    size_t size;
    uint8_t *raw = raw_chunk(file, name, 0, &size);
    assert_int_equal(size, chunk_bytes + 4);
    if (shuffle)
        erase_h5_shuffle(want, data, chunk_bytes / bytes, bytes);
    else
        memcpy(want, data, chunk_bytes);
    assert_memory_equal(raw, want, chunk_bytes);
    uint32_t sum = erase_h5_fletcher32(raw, chunk_bytes);
    uint8_t le[4] = { (uint8_t)sum, (uint8_t)(sum >> 8), (uint8_t)(sum >> 16), (uint8_t)(sum >> 24) };
    assert_memory_equal(raw + chunk_bytes, le, 4);
    free(raw);
    free(data);
    free(want);
}

static void test_shuffle_and_fletcher32_are_hdf5s(void **state)
{
    (void)state;
    char *dir = io_scratch_make("h5-chunks-filters");
    erase_h5_enter();
    hid_t file = H5Fcreate(io_path(dir, "f.h5"), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
    assert_true(file >= 0);
    check_filters_like_hdf5(file, "/u32", H5T_NATIVE_UINT32, 4, 3, 7, 1);  /* 84 bytes */
    check_filters_like_hdf5(file, "/f32", H5T_NATIVE_FLOAT, 4, 13, 360, 1); /* over 360 words */
    check_filters_like_hdf5(file, "/i64", H5T_NATIVE_INT64, 8, 1, 5, 1);
    check_filters_like_hdf5(file, "/odd", H5T_NATIVE_UINT8, 1, 1, 7, 0);   /* 7 bytes: an odd last byte */
    check_filters_like_hdf5(file, "/big", H5T_NATIVE_UINT8, 1, 1, 100001, 0);
    H5Fclose(file);
    erase_h5_leave();
    io_scratch_remove(dir);
}

/* The rows: values from their index; lengths > 1 from row `multi_from`
 * on (ROWS: one-hot). */
typedef struct {
    uint8_t label[ROWS];
    float dense[ROWS * 13];
    uint32_t lengths[ROWS * F];
    uint32_t *ids;
    int64_t nids;
    int64_t offsets[ROWS + 1]; /* first id of each row */
} rows_t;

static void make_rows(rows_t *r, int64_t multi_from)
{
    r->nids = 0;
    for (int64_t i = 0; i < ROWS; i++) {
        r->label[i] = (uint8_t)(i % 3 == 0);
        for (int j = 0; j < 13; j++)
            r->dense[i * 13 + j] = (i + j) % 11 == 0 ? NAN : (float)((i * 7 + j) % 1000);
        r->offsets[i] = r->nids;
        for (int f = 0; f < F; f++)
            r->nids += r->lengths[i * F + f] = i >= multi_from ? (uint32_t)(1 + (i + f) % 4) : 1;
    }
    r->offsets[ROWS] = r->nids;
    r->ids = malloc(sizeof *r->ids * (size_t)r->nids);
    for (int64_t k = 0; k < r->nids; k++)
        r->ids[k] = (uint32_t)(k * 2654435761u) | (k % 5 == 0 ? 0xFFFF0000u : 0);
}

/* Write the rows in uneven appends, through the pipeline or not. */
static void write_shard(const char *path, const rows_t *r, int pipeline, int multi)
{
    erase_ctr_write_options_t o = erase_ctr_write_options_default();
    o.chunk_rows = CHUNK;
    o.filter_pipeline = pipeline;
    erase_ctr_writer_t *w;
    MUST(erase_ctr_writer_open(path, &o, &w));
    static const int64_t sizes[] = { 1, 127, 500, 1, 1000, 129 };
    for (int64_t at = 0, k = 0; at < ROWS; k++) {
        int64_t n = sizes[k % 6] < ROWS - at ? sizes[k % 6] : ROWS - at;
        MUST(erase_ctr_writer_append_ids(w, n, r->label + at, r->dense + at * 13, multi ? r->lengths + at * F : NULL,
                                         r->ids + r->offsets[at]));
        at += n;
    }
    MUST(erase_ctr_writer_finish(w, "test"));
    MUST(erase_ctr_writer_publish(w));
    erase_ctr_writer_free(w);
}

/* Dataset `name` of both files: same shape, chunking, filters, bytes. */
static void compare_dataset(hid_t a, hid_t b, const char *name)
{
    hid_t d[2] = { H5Dopen2(a, name, H5P_DEFAULT), H5Dopen2(b, name, H5P_DEFAULT) };
    assert_true(d[0] >= 0 && d[1] >= 0);
    hsize_t dims[2][2] = { { 0, 1 }, { 0, 1 } }, chunk[2][2] = { { 0, 1 }, { 0, 1 } };
    size_t bytes[2];
    uint8_t *data[2];
    hsize_t last_row = 0;
    for (int k = 0; k < 2; k++) {
        hid_t sp = H5Dget_space(d[k]), t = H5Dget_type(d[k]), p = H5Dget_create_plist(d[k]);
        H5Sget_simple_extent_dims(sp, dims[k], NULL);
        H5Pget_chunk(p, 2, chunk[k]);
        bytes[k] = (size_t)(dims[k][0] * dims[k][1]) * H5Tget_size(t);
        data[k] = malloc(bytes[k] + 1);
        assert_true(H5Dread(d[k], t, H5S_ALL, H5S_ALL, H5P_DEFAULT, data[k]) >= 0);
        if (k == 1) {
            hid_t p0 = H5Dget_create_plist(d[0]);
            int n = H5Pget_nfilters(p);
            assert_int_equal(n, H5Pget_nfilters(p0));
            assert_int_equal(n, strcmp(name, "/sparse") && strcmp(name, "/sparse_ids") ? 3 : 2); /* shuffle but on ids */
            for (int i = 0; i < n; i++) {
                unsigned flags[2], cd[2][8], config;
                size_t nv[2] = { 8, 8 };
                H5Z_filter_t id0 = H5Pget_filter2(p0, (unsigned)i, &flags[0], &nv[0], cd[0], 0, NULL, &config);
                H5Z_filter_t id1 = H5Pget_filter2(p, (unsigned)i, &flags[1], &nv[1], cd[1], 0, NULL, &config);
                assert_int_equal(id0, id1);
                assert_int_equal(flags[0], flags[1]);
                assert_int_equal(nv[0], nv[1]);
                assert_memory_equal(cd[0], cd[1], nv[0] * sizeof(unsigned));
            }
            H5Pclose(p0);
        }
        H5Pclose(p);
        H5Tclose(t);
        H5Sclose(sp);
    }
    assert_memory_equal(dims[0], dims[1], sizeof dims[0]);
    assert_memory_equal(chunk[0], chunk[1], sizeof chunk[0]);
    assert_int_equal(bytes[0], bytes[1]);
    assert_memory_equal(data[0], data[1], bytes[0]);
    free(data[0]);
    free(data[1]);
    /* the last chunk decoded by hand (checksum, zlib, unshuffle): the same
     * bytes past the extent too (HDF5's zero padding) */
    last_row = (dims[0][0] - 1) / chunk[0][0] * chunk[0][0];
    hid_t t = H5Dget_type(d[0]);
    size_t esize = H5Tget_size(t), full = (size_t)(chunk[0][0] * chunk[0][1]) * esize;
    H5Tclose(t);
    uint8_t *plain[2];
    for (int k = 0; k < 2; k++) {
        size_t size;
        uint8_t *raw = raw_chunk(k ? b : a, name, last_row, &size);
        uint32_t sum = erase_h5_fletcher32(raw, size - 4);
        assert_int_equal(raw[size - 4] | raw[size - 3] << 8 | raw[size - 2] << 16 | (uint32_t)raw[size - 1] << 24, sum);
        uint8_t *inflated = malloc(full);
        uLongf n = full;
        assert_int_equal(uncompress(inflated, &n, raw, size - 4), Z_OK);
        assert_int_equal(n, full);
        plain[k] = inflated;
        free(raw);
    }
    assert_memory_equal(plain[0], plain[1], full);
    free(plain[0]);
    free(plain[1]);
    H5Dclose(d[0]);
    H5Dclose(d[1]);
}

static void check_paths_equal(int64_t multi_from)
{
    if (!erase_h5_chunks_available())
        skip();
    rows_t *r = calloc(1, sizeof *r);
    make_rows(r, multi_from);
    int multi = multi_from < ROWS;
    char *dir = io_scratch_make("h5-chunks-paths");
    char pipe[4096], direct[4096];
    snprintf(pipe, sizeof pipe, "%s", io_path(dir, "pipeline.h5"));
    snprintf(direct, sizeof direct, "%s", io_path(dir, "direct.h5"));
    write_shard(pipe, r, 1, multi);
    write_shard(direct, r, 0, multi);
    /* no erase_h5_enter here: a failed assertion would leave the lock
     * taken for the next test (one thread only) */
    hid_t a = H5Fopen(pipe, H5F_ACC_RDONLY, H5P_DEFAULT), b = H5Fopen(direct, H5F_ACC_RDONLY, H5P_DEFAULT);
    assert_true(a >= 0 && b >= 0);
    static const char *v1[] = { "/label", "/dense", "/sparse" };
    static const char *v2[] = { "/label", "/dense", "/sparse_lengths", "/sparse_offsets", "/sparse_ids" };
    for (int i = 0; i < (multi ? 5 : 3); i++)
        compare_dataset(a, b, multi ? v2[i] : v1[i]);
    if (multi)
        assert_int_equal(erase_h5_exists(b, "/sparse"), 0);
    H5Fclose(a);
    H5Fclose(b);
    /* erase's reader: the rows written */
    erase_ctr_shard_t *s;
    MUST(erase_ctr_shard_open(direct, &s));
    assert_int_equal(erase_ctr_shard_rows(s), ROWS);
    assert_int_equal(erase_ctr_shard_version(s), multi ? 2 : 1);
    uint8_t *label = malloc(ROWS);
    float *dense = malloc(sizeof *dense * ROWS * 13);
    uint32_t *lengths = malloc(sizeof *lengths * ROWS * F);
    const uint32_t *ids;
    int64_t nids;
    MUST(erase_ctr_shard_read_ids(s, 0, ROWS, lengths, &ids, &nids));
    assert_int_equal(nids, r->nids);
    assert_memory_equal(ids, r->ids, sizeof *ids * (size_t)nids);
    assert_memory_equal(lengths, r->lengths, sizeof *lengths * ROWS * F);
    if (!multi) {
        uint32_t *sparse = malloc(sizeof *sparse * ROWS * F);
        MUST(erase_ctr_shard_read(s, 0, ROWS, label, dense, sparse));
        assert_memory_equal(label, r->label, ROWS);
        assert_memory_equal(dense, r->dense, sizeof *dense * ROWS * 13);
        free(sparse);
    }
    erase_ctr_shard_close(s);
    free(label);
    free(dense);
    free(lengths);
    free(r->ids);
    free(r);
    io_scratch_remove(dir);
}

static void test_direct_equals_pipeline_one_hot(void **state)
{
    (void)state;
    check_paths_equal(ROWS);
}

static void test_direct_equals_pipeline_switch_to_multi_hot(void **state)
{
    (void)state;
    check_paths_equal(1700); /* inside the 14th chunk of 128 rows */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_shuffle_and_fletcher32_are_hdf5s),
        cmocka_unit_test(test_direct_equals_pipeline_one_hot),
        cmocka_unit_test(test_direct_equals_pipeline_switch_to_multi_hot),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
