/*
 * MNIST data (io/idx.h, io/cls_shard.h, io/cls_shard_write.h,
 * io/mnist_convert.h): IDX files parse (plain and gzip) and every bad one
 * gives its exact message; a conversion of the shipped MNIST files
 * round-trips bitwise (features = byte / 255, labels equal), its
 * Fletcher32 checksums catch a changed byte, and a failed, refused or
 * interrupted conversion leaves no shard and no index.
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
#include <zlib.h>

#include "io/cls_shard.h"
#include "io/ctr_index.h"
#include "io/idx.h"
#include "io/mnist_convert.h"
#include "tests/io/io_util.h"

static char *scratch;

static const char *shipped(const char *name)
{
    static char path[2][4096];
    static int next;
    char *p = path[next++ % 2];
    snprintf(p, 4096, "%s/mnist/%s", ERASE_DATA_DIR, name);
    return p;
}
#define IMAGES shipped("t10k-images-idx3-ubyte.gz")
#define LABELS shipped("t10k-labels-idx1-ubyte.gz")

/* An IDX file of `len` bytes: header (magic, dims) then `data`; gzip if asked. */
static void write_idx(const char *path, int gz, uint32_t magic, const uint32_t *dims, int ndims, const uint8_t *data,
                      size_t len)
{
    uint8_t h[16];
    uint32_t words[4] = { magic, dims[0], ndims > 1 ? dims[1] : 0, ndims > 2 ? dims[2] : 0 };
    for (int i = 0; i < 4; i++)
        for (int b = 0; b < 4; b++)
            h[4 * i + b] = (uint8_t)(words[i] >> (24 - 8 * b));
    size_t hl = 4 + 4 * (size_t)ndims;
    if (gz) {
        gzFile f = gzopen(path, "wb");
        assert_non_null(f);
        assert_int_equal(gzwrite(f, h, (unsigned)hl), (int)hl);
        if (len)
            assert_int_equal(gzwrite(f, data, (unsigned)len), (int)len);
        assert_int_equal(gzclose(f), Z_OK);
    } else {
        FILE *f = fopen(path, "wb");
        assert_non_null(f);
        assert_int_equal(fwrite(h, 1, hl, f), hl);
        if (len)
            assert_int_equal(fwrite(data, 1, len, f), len);
        fclose(f);
    }
}

/* Raw bytes into a file. */
static void write_bytes(const char *path, const void *data, size_t len)
{
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(data, 1, len, f), len);
    fclose(f);
}

/* 3 images of 2 x 3 and their labels, plain and gzip. */
static void test_idx_parse(void **state)
{
    (void)state;
    uint8_t px[18], lab[3] = { 7, 0, 9 };
    for (int i = 0; i < 18; i++)
        px[i] = (uint8_t)(i * 15);
    uint32_t idims[3] = { 3, 2, 3 }, ldims[1] = { 3 };
    for (int gz = 0; gz <= 1; gz++) {
        const char *ip = io_path(scratch, gz ? "small-images.gz" : "small-images");
        const char *lp = io_path(scratch, gz ? "small-labels.gz" : "small-labels");
        write_idx(ip, gz, ERASE_IDX_IMAGES_MAGIC, idims, 3, px, sizeof px);
        write_idx(lp, gz, ERASE_IDX_LABELS_MAGIC, ldims, 1, lab, sizeof lab);
        erase_idx_t im, lb;
        MUST(erase_idx_read_pair(ip, lp, 10, &im, &lb));
        print_message("%s: %lld images of %lld x %lld\n", ip, (long long)im.count, (long long)im.rows,
                      (long long)im.cols);
        assert_int_equal(im.count, 3);
        assert_int_equal(im.rows, 2);
        assert_int_equal(im.cols, 3);
        assert_memory_equal(im.data, px, sizeof px);
        assert_int_equal(lb.count, 3);
        assert_memory_equal(lb.data, lab, sizeof lab);
        erase_idx_free(&im);
        erase_idx_free(&lb);
    }
}

/* `call` fails with `status` and exactly the message `want`. */
static void expect_error(erase_status_t got, erase_status_t status, const char *want)
{
    print_message("expect: %s\n", want);
    if (got != status || strcmp(erase_error_reason(), want) != 0)
        fail_msg("got status %d '%s', expected %d '%s'", (int)got, erase_error_reason(), (int)status, want);
}

static void test_idx_errors(void **state)
{
    (void)state;
    uint8_t px[18] = { 0 }, lab[3] = { 1, 2, 3 };
    uint32_t idims[3] = { 3, 2, 3 }, ldims[1] = { 3 };
    char want[8192];
    erase_idx_t im, lb;
    const char *ip = io_path(scratch, "e-images"), *lp = io_path(scratch, "e-labels");
    write_idx(ip, 0, ERASE_IDX_IMAGES_MAGIC, idims, 3, px, sizeof px);
    write_idx(lp, 0, ERASE_IDX_LABELS_MAGIC, ldims, 1, lab, sizeof lab);

    /* missing file */
    const char *none = io_path(scratch, "no-such-file");
    snprintf(want, sizeof want, "%s: cannot open: No such file or directory", none);
    expect_error(erase_idx_read(none, ERASE_IDX_IMAGES_MAGIC, &im), ERASE_ERR_IO, want);

    /* wrong magic: the labels given as images and the other way round */
    snprintf(want, sizeof want, "%s: not an IDX image file: magic 0x00000801, expected 0x00000803 (uint8, 3 dimensions)", lp);
    expect_error(erase_idx_read_pair(lp, ip, 10, &im, &lb), ERASE_ERR_FORMAT, want);
    snprintf(want, sizeof want, "%s: not an IDX label file: magic 0x00000803, expected 0x00000801 (uint8, 1 dimension)", ip);
    expect_error(erase_idx_read(ip, ERASE_IDX_LABELS_MAGIC, &lb), ERASE_ERR_FORMAT, want);

    /* short header */
    const char *bad = io_path(scratch, "bad");
    uint8_t head[10] = { 0, 0, 8, 3, 0, 0, 0, 3, 0, 0 };
    write_bytes(bad, head, sizeof head);
    snprintf(want, sizeof want, "%s: short file: 10 bytes, expected a 16-byte header", bad);
    expect_error(erase_idx_read(bad, ERASE_IDX_IMAGES_MAGIC, &im), ERASE_ERR_FORMAT, want);
    write_bytes(bad, head, 2);
    snprintf(want, sizeof want, "%s: short file: 2 bytes, expected a 16-byte header", bad);
    expect_error(erase_idx_read(bad, ERASE_IDX_IMAGES_MAGIC, &im), ERASE_ERR_FORMAT, want);

    /* short data: 2 images and a half of 3 */
    write_idx(bad, 0, ERASE_IDX_IMAGES_MAGIC, idims, 3, px, 15);
    snprintf(want, sizeof want, "%s: short file: 2 of 3 images (15 of 18 bytes after the 16-byte header)", bad);
    expect_error(erase_idx_read(bad, ERASE_IDX_IMAGES_MAGIC, &im), ERASE_ERR_FORMAT, want);
    write_idx(bad, 0, ERASE_IDX_LABELS_MAGIC, ldims, 1, lab, 1);
    snprintf(want, sizeof want, "%s: short file: 1 of 3 labels (1 of 3 bytes after the 8-byte header)", bad);
    expect_error(erase_idx_read(bad, ERASE_IDX_LABELS_MAGIC, &lb), ERASE_ERR_FORMAT, want);

    /* a gzip stream cut short: in its trailer, in its data */
    const char *gz = io_path(scratch, "cut.gz");
    uint8_t noise[1000];
    for (int i = 0; i < 1000; i++)
        noise[i] = (uint8_t)(i * 7919 >> 3);
    uint32_t big[3] = { 10, 10, 10 };
    write_idx(gz, 1, ERASE_IDX_IMAGES_MAGIC, big, 3, noise, sizeof noise);
    struct stat sb;
    assert_int_equal(stat(gz, &sb), 0);
    assert_int_equal(truncate(gz, sb.st_size - 4), 0); /* half the trailer */
    snprintf(want, sizeof want, "%s: gzip: unexpected end of file (the file is truncated?)", gz);
    expect_error(erase_idx_read(gz, ERASE_IDX_IMAGES_MAGIC, &im), ERASE_ERR_FORMAT, want);
    assert_int_equal(truncate(gz, sb.st_size / 2), 0);
    assert_int_not_equal(erase_idx_read(gz, ERASE_IDX_IMAGES_MAGIC, &im), ERASE_OK);
    snprintf(want, sizeof want, "%s: short file: ", gz);
    if (strncmp(erase_error_reason(), want, strlen(want)) != 0 || !strstr(erase_error_reason(), "; gzip: "))
        fail_msg("got '%s', expected '%s... ; gzip: <zlib's reason>'", erase_error_reason(), want);
    print_message("cut gzip: %s\n", erase_error_reason());

    /* bytes after the data */
    uint8_t more[4] = { 1, 2, 3, 4 };
    uint32_t one[1] = { 2 };
    write_idx(bad, 0, ERASE_IDX_LABELS_MAGIC, one, 1, more, sizeof more);
    snprintf(want, sizeof want, "%s: 2 bytes after the 2 labels the header announces", bad);
    expect_error(erase_idx_read(bad, ERASE_IDX_LABELS_MAGIC, &lb), ERASE_ERR_FORMAT, want);

    /* empty images and an absurd size */
    uint32_t flat[3] = { 3, 0, 28 }, huge[3] = { 0xffffffffu, 0xffffffffu, 0xffffffffu };
    write_idx(bad, 0, ERASE_IDX_IMAGES_MAGIC, flat, 3, NULL, 0);
    snprintf(want, sizeof want, "%s: images of 0 x 28 pixels: expected at least 1 x 1", bad);
    expect_error(erase_idx_read(bad, ERASE_IDX_IMAGES_MAGIC, &im), ERASE_ERR_FORMAT, want);
    write_idx(bad, 0, ERASE_IDX_IMAGES_MAGIC, huge, 3, NULL, 0);
    snprintf(want, sizeof want,
             "%s: the header announces 4294967295 images of 4294967295 x 4294967295 bytes: too large", bad);
    expect_error(erase_idx_read(bad, ERASE_IDX_IMAGES_MAGIC, &im), ERASE_ERR_FORMAT, want);

    /* a header that promises far more than the file holds: "short", no huge allocation */
    uint32_t lying[3] = { 60000, 1000, 1000 };
    write_idx(bad, 0, ERASE_IDX_IMAGES_MAGIC, lying, 3, px, 10);
    snprintf(want, sizeof want,
             "%s: short file: 0 of 60000 images (10 of 60000000000 bytes after the 16-byte header)", bad);
    expect_error(erase_idx_read(bad, ERASE_IDX_IMAGES_MAGIC, &im), ERASE_ERR_FORMAT, want);

    /* counts that differ */
    uint32_t four[1] = { 4 };
    uint8_t lab4[4] = { 0, 1, 2, 3 };
    write_idx(bad, 0, ERASE_IDX_LABELS_MAGIC, four, 1, lab4, sizeof lab4);
    snprintf(want, sizeof want, "%s has 3 images but %s has 4 labels", ip, bad);
    expect_error(erase_idx_read_pair(ip, bad, 10, &im, &lb), ERASE_ERR_FORMAT, want);

    /* a label out of range */
    uint8_t lab_bad[3] = { 1, 10, 2 };
    write_idx(bad, 0, ERASE_IDX_LABELS_MAGIC, ldims, 1, lab_bad, sizeof lab_bad);
    snprintf(want, sizeof want, "%s: label 1 (0-based) is 10, expected 0..9", bad);
    expect_error(erase_idx_read_pair(ip, bad, 10, &im, &lb), ERASE_ERR_FORMAT, want);
    assert_null(im.data);
    assert_null(lb.data);
}

/* Rows of a cls dataset directory (one shard) read back. */
static erase_cls_shard_t *open_only_shard(const char *dir, int64_t rows)
{
    erase_ctr_list_t list;
    const char *in[1] = { dir };
    MUST(erase_ctr_list_resolve(in, 1, &list));
    assert_int_equal(list.count, 1);
    assert_int_equal(list.rows[0], rows);
    erase_cls_shard_t *s;
    MUST(erase_cls_shard_open(list.paths[0], &s));
    erase_ctr_list_free(&list);
    return s;
}

static erase_mnist_convert_options_t options(const char *out, int64_t train, int64_t eval)
{
    erase_mnist_convert_options_t o = erase_mnist_convert_options_default();
    o.out_dir = out;
    o.train_rows = train;
    o.eval_rows = eval;
    return o;
}

/* The first 300 shipped images to train, the next 100 to eval; bitwise. */
static void test_convert_shipped(void **state)
{
    (void)state;
    erase_idx_t im, lb;
    MUST(erase_idx_read_pair(IMAGES, LABELS, 10, &im, &lb));
    assert_int_equal(im.count, 10000);
    assert_int_equal(im.rows * im.cols, 784);
    for (int compress = 0; compress <= 1; compress++) {
        const char *out = io_path(scratch, compress ? "mnist-z" : "mnist");
        erase_mnist_convert_options_t o = options(out, 300, 100);
        o.write.compress = compress;
        o.shard_rows = 1000;
        erase_mnist_convert_summary_t s;
        MUST(erase_mnist_convert(IMAGES, LABELS, &o, &s));
        erase_mnist_convert_print(&s, stdout);
        assert_int_equal(s.train_rows, 300);
        assert_int_equal(s.eval_rows, 100);
        for (int part = 0; part < 2; part++) {
            int64_t first = part ? 300 : 0, n = part ? 100 : 300;
            erase_cls_shard_t *sh = open_only_shard(io_path(out, part ? "eval" : "train"), n);
            assert_int_equal(erase_cls_shard_rows(sh), n);
            assert_int_equal(erase_cls_shard_features(sh), 784);
            assert_int_equal(erase_cls_shard_classes(sh), 10);
            assert_int_equal(erase_cls_shard_checksummed(sh), 1);
            assert_int_equal(erase_cls_shard_compressed(sh), compress);
            char fmt[64];
            erase_cls_shard_attr_text(sh, "format", fmt, sizeof fmt);
            assert_string_equal(fmt, "erase-cls-1");
            float *f = malloc(sizeof *f * (size_t)(n * 784)), *want = malloc(sizeof *want * (size_t)(n * 784));
            uint8_t *l = malloc((size_t)n);
            MUST(erase_cls_shard_read(sh, 0, n, f, l));
            int64_t counts[10] = { 0 }, got_counts[10] = { 0 };
            for (int64_t i = 0; i < n * 784; i++)
                want[i] = (float)im.data[first * 784 + i] / 255.0f;
            assert_memory_equal(f, want, sizeof *f * (size_t)(n * 784));
            assert_memory_equal(l, lb.data + first, (size_t)n);
            for (int64_t i = 0; i < n; i++)
                counts[l[i]]++;
            for (int c = 0; c < 10; c++)
                got_counts[c] = part ? s.eval_counts[c] : s.train_counts[c];
            assert_memory_equal(counts, got_counts, sizeof counts);
            assert_true(f[0] >= 0.0f);
            print_message("%s/%s: %lld rows bitwise equal to the IDX bytes / 255\n", out, part ? "eval" : "train",
                          (long long)n);
            free(f);
            free(want);
            free(l);
            erase_cls_shard_close(sh);
        }
    }
    /* 255 -> exactly 1, 0 -> exactly 0 */
    assert_true((float)255 / 255.0f == 1.0f);
    erase_idx_free(&im);
    erase_idx_free(&lb);
}

/* One changed byte in an uncompressed /features chunk: the read fails. */
static void test_checksum(void **state)
{
    (void)state;
    const char *out = io_path(scratch, "mnist-sum");
    erase_mnist_convert_options_t o = options(out, 200, 0);
    o.write.compress = 0;
    MUST(erase_mnist_convert(IMAGES, LABELS, &o, NULL));
    char path[4096];
    snprintf(path, sizeof path, "%s/train/part-00000.h5", out);
    uint64_t addr, size;
    assert_int_equal(io_first_chunk(path, "/features", &addr, &size), 0);
    FILE *f = fopen(path, "r+b");
    assert_non_null(f);
    uint8_t byte;
    assert_int_equal(fseek(f, (long)(addr + size / 2), SEEK_SET), 0);
    assert_int_equal(fread(&byte, 1, 1, f), 1);
    byte ^= 0x10;
    assert_int_equal(fseek(f, (long)(addr + size / 2), SEEK_SET), 0);
    assert_int_equal(fwrite(&byte, 1, 1, f), 1);
    fclose(f);
    erase_cls_shard_t *sh;
    MUST(erase_cls_shard_open(path, &sh));
    float *x = malloc(sizeof *x * 200 * 784);
    uint8_t l[200];
    MUST(erase_cls_shard_read(sh, 0, 200, NULL, l)); /* /label is intact */
    assert_int_equal(erase_cls_shard_read(sh, 0, 200, x, NULL), ERASE_ERR_IO);
    char want[4200];
    snprintf(want, sizeof want, "%s: dataset /features: reading rows [0, 200) failed: ", path);
    const char *m = erase_error_reason();
    print_message("changed byte: %s\n", m);
    if (strncmp(m, want, strlen(want)) != 0 || strlen(m) == strlen(want))
        fail_msg("got '%s', expected '%s<HDF5's reason>'", m, want);
    free(x);
    erase_cls_shard_close(sh);
}

/* Nothing is left by a conversion that fails, is refused or interrupted. */
static void test_failed_leaves_nothing(void **state)
{
    (void)state;
    char want[8192];
    /* labels that do not match: OUT is not even created */
    const char *out = io_path(scratch, "mnist-fail");
    const char *lp = io_path(scratch, "f-labels");
    uint32_t n[1] = { 3 };
    uint8_t lab[3] = { 1, 2, 3 };
    write_idx(lp, 0, ERASE_IDX_LABELS_MAGIC, n, 1, lab, sizeof lab);
    erase_mnist_convert_options_t o = options(out, -1, 2000);
    snprintf(want, sizeof want, "%s has 10000 images but %s has 3 labels", IMAGES, lp);
    expect_error(erase_mnist_convert(IMAGES, lp, &o, NULL), ERASE_ERR_FORMAT, want);
    assert_int_equal(access(out, F_OK), -1);

    /* a split larger than the files */
    o = options(out, 9000, 2000);
    expect_error(erase_mnist_convert(IMAGES, LABELS, &o, NULL), ERASE_ERR_INVALID,
                 "9000 train + 2000 eval rows: the files have 10000 images");
    assert_int_equal(access(out, F_OK), -1);

    /* interrupted: the cancel flag set before the first block */
    volatile sig_atomic_t stop = 1;
    o = options(out, 500, 100);
    o.cancel = &stop;
    expect_error(erase_mnist_convert(IMAGES, LABELS, &o, NULL), ERASE_ERR_STATE, "interrupted");
    assert_int_equal(access(out, F_OK), -1);

    /* into an existing OUT: it stays, empty */
    assert_int_equal(mkdir(out, 0777), 0);
    expect_error(erase_mnist_convert(IMAGES, LABELS, &o, NULL), ERASE_ERR_STATE, "interrupted");
    assert_int_equal(access(out, F_OK), 0);
    assert_int_equal(access(io_path(out, "train"), F_OK), -1);
    assert_int_equal(access(io_path(out, "eval"), F_OK), -1);

    /* refused: a dataset already there (kept as it was) unless force */
    o.cancel = NULL;
    MUST(erase_mnist_convert(IMAGES, LABELS, &o, NULL));
    o = options(out, 400, 100);
    snprintf(want, sizeof want, "%s/train: already holds a dataset (index.txt); remove it or replace it (--force)", out);
    expect_error(erase_mnist_convert(IMAGES, LABELS, &o, NULL), ERASE_ERR_INVALID, want);
    erase_cls_shard_t *sh = open_only_shard(io_path(out, "train"), 500);
    erase_cls_shard_close(sh);
    o.force = 1;
    MUST(erase_mnist_convert(IMAGES, LABELS, &o, NULL));
    sh = open_only_shard(io_path(out, "train"), 400);
    erase_cls_shard_close(sh);

    /* OUT/eval cannot be made (a file of that name): OUT/train goes too */
    const char *out2 = io_path(scratch, "mnist-fail2");
    assert_int_equal(mkdir(out2, 0777), 0);
    assert_int_equal(io_write_text(io_path(out2, "eval"), "x"), 0);
    o = options(out2, 500, 100);
    snprintf(want, sizeof want, "%s/eval: not a directory", out2);
    expect_error(erase_mnist_convert(IMAGES, LABELS, &o, NULL), ERASE_ERR_IO, want);
    assert_int_equal(access(io_path(out2, "train"), F_OK), -1);
}

/* A CTR reader's file is not a classification shard, and the other way round. */
static void test_shard_open_errors(void **state)
{
    (void)state;
    char want[8192];
    const char *out = io_path(scratch, "mnist-open");
    erase_mnist_convert_options_t o = options(out, 50, 0);
    MUST(erase_mnist_convert(IMAGES, LABELS, &o, NULL));
    char path[4096];
    snprintf(path, sizeof path, "%s/train/part-00000.h5", out);
    hid_t f = H5Fopen(path, H5F_ACC_RDWR, H5P_DEFAULT);
    assert_true(f >= 0);
    assert_true(H5Adelete(f, "format") >= 0);
    H5Fclose(f);
    erase_cls_shard_t *sh = NULL;
    snprintf(want, sizeof want, "%s: not an erase classification shard: no attribute 'format' on the root group",
             path);
    expect_error(erase_cls_shard_open(path, &sh), ERASE_ERR_FORMAT, want);
    assert_null(sh);
    snprintf(want, sizeof want, "%s: cannot open: No such file or directory", io_path(out, "none.h5"));
    expect_error(erase_cls_shard_open(io_path(out, "none.h5"), &sh), ERASE_ERR_IO, want);
}

static int setup(void **state)
{
    (void)state;
    scratch = io_scratch_make("mnist");
    return scratch ? 0 : -1;
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
        cmocka_unit_test(test_idx_parse),
        cmocka_unit_test(test_idx_errors),
        cmocka_unit_test(test_convert_shipped),
        cmocka_unit_test(test_checksum),
        cmocka_unit_test(test_failed_leaves_nothing),
        cmocka_unit_test(test_shard_open_errors),
    };
    return cmocka_run_group_tests_name("MNIST data", tests, setup, teardown);
}
