/*
 * safetensors files (io/safetensors.h, issue 37): a file written in pieces
 * reads back with the same names, dtypes, shapes, metadata and bytes, its
 * exact bytes those the format prescribes; a writer given too few or too
 * many bytes publishes nothing; the header parser refuses every malformed
 * header below with one line naming the tensor or the byte at fault; a
 * truncated file is refused at open.
 */
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

#include "io/safetensors.h"
#include "tests/expect_error.h"

static char dir[] = "/tmp/erase-test-safetensors-XXXXXX";

static int setup(void **state)
{
    (void)state;
    return mkdtemp(dir) ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    return system(cmd) == 0 ? 0 : -1;
}

static erase_st_tensor_t tensor(const char *name, erase_st_dtype_t dtype, int ndim, int64_t d0, int64_t d1)
{
    erase_st_tensor_t t = { .dtype = dtype, .ndim = ndim, .dims = { d0, d1 } };
    snprintf(t.name, sizeof t.name, "%s", name);
    return t;
}

static int exists(const char *path)
{
    struct stat sb;
    return stat(path, &sb) == 0;
}

/* Two tensors and metadata, the data in three pieces that straddle the
 * tensors; read back; the file's bytes as the format prescribes. */
static void test_round_trip(void **state)
{
    (void)state;
    char path[256];
    snprintf(path, sizeof path, "%s/a.safetensors", dir);
    erase_st_tensor_t t[3] = { tensor("h0/wte", ERASE_ST_F32, 2, 2, 3), tensor("b\"q\\", ERASE_ST_F32, 1, 2, 0),
                               tensor("empty", ERASE_ST_F32, 2, 0, 4) };
    erase_st_meta_t meta[2] = { { "model", "gpt {\n  layers = 1;\n}\n" }, { "step", "7" } };
    float v[8] = { 1, 2, 3, 4, 5, 6, -7, 8.5f };
    erase_st_writer_t *w;
    assert_int_equal(erase_st_writer_open(path, t, 3, meta, 2, &w), ERASE_OK);
    assert_int_equal(erase_st_writer_put(w, v, 10), ERASE_OK);
    assert_int_equal(erase_st_writer_put(w, (char *)v + 10, 20), ERASE_OK);
    assert_false(exists(path)); /* not published before the commit */
    assert_int_equal(erase_st_writer_put(w, (char *)v + 30, 2), ERASE_OK);
    assert_int_equal(erase_st_writer_commit(w), ERASE_OK);

    erase_st_file_t *f;
    assert_int_equal(erase_st_open(path, &f), ERASE_OK);
    assert_int_equal(erase_st_count(f), 3);
    const erase_st_tensor_t *a = erase_st_find(f, "h0/wte"), *b = erase_st_find(f, "b\"q\\");
    assert_non_null(a);
    assert_non_null(b);
    assert_int_equal(a->dtype, ERASE_ST_F32);
    assert_int_equal(a->ndim, 2);
    assert_int_equal(a->dims[0], 2);
    assert_int_equal(a->dims[1], 3);
    assert_int_equal(b->ndim, 1);
    assert_int_equal(b->begin, 24);
    assert_string_equal(erase_st_meta_get(f, "model"), "gpt {\n  layers = 1;\n}\n");
    assert_string_equal(erase_st_meta_get(f, "step"), "7");
    assert_null(erase_st_meta_get(f, "other"));
    float back[8];
    assert_int_equal(erase_st_read(f, a, 0, back, 24), ERASE_OK);
    assert_int_equal(erase_st_read(f, b, 0, back + 6, 8), ERASE_OK);
    assert_memory_equal(back, v, sizeof v);
    erase_test_expect_error(erase_st_read(f, b, 4, back, 8), ERASE_ERR_INVALID, "tensor b\"q\\: bytes [4, +8) "
                            "asked of 8");
    erase_st_close(f);

    /* the bytes: size word, header padded with spaces to 8, the data */
    FILE *in = fopen(path, "rb");
    assert_non_null(in);
    unsigned char size[8];
    assert_int_equal(fread(size, 1, 8, in), 8);
    uint64_t n = 0;
    for (int i = 7; i >= 0; i--)
        n = n << 8 | size[i];
    assert_int_equal(n % 8, 0);
    char *header = calloc(1, (size_t)n + 1);
    assert_int_equal(fread(header, 1, (size_t)n, in), n);
    const char *want = "{\"__metadata__\":{\"model\":\"gpt {\\n  layers = 1;\\n}\\n\",\"step\":\"7\"},"
                       "\"h0/wte\":{\"dtype\":\"F32\",\"shape\":[2,3],\"data_offsets\":[0,24]},"
                       "\"b\\\"q\\\\\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[24,32]},"
                       "\"empty\":{\"dtype\":\"F32\",\"shape\":[0,4],\"data_offsets\":[32,32]}}";
    assert_memory_equal(header, want, strlen(want));
    for (size_t i = strlen(want); i < n; i++)
        assert_int_equal(header[i], ' ');
    free(header);
    assert_int_equal(fread(back, 1, sizeof back, in), sizeof back);
    assert_memory_equal(back, v, sizeof v);
    assert_int_equal(fgetc(in), EOF);
    fclose(in);
}

/* Too few bytes, too many, a duplicate name, a missing directory: an
 * error naming the tensor or the file, and nothing at the path. */
static void test_writer_refuses(void **state)
{
    (void)state;
    char path[256], temp[256];
    snprintf(path, sizeof path, "%s/b.safetensors", dir);
    snprintf(temp, sizeof temp, "%s/.b.safetensors.tmp", dir);
    erase_st_tensor_t t[2] = { tensor("x", ERASE_ST_F32, 1, 3, 0), tensor("y", ERASE_ST_F32, 1, 1, 0) };
    float v[5] = { 0 };
    erase_st_writer_t *w;
    assert_int_equal(erase_st_writer_open(path, t, 2, NULL, 0, &w), ERASE_OK);
    assert_true(exists(temp));
    assert_int_equal(erase_st_writer_put(w, v, 8), ERASE_OK);
    erase_test_expect_error(erase_st_writer_commit(w), ERASE_ERR_INVALID, "b.safetensors: tensor x: 8 of its 12 "
                            "bytes written");
    assert_false(exists(path));
    assert_false(exists(temp));

    assert_int_equal(erase_st_writer_open(path, t, 2, NULL, 0, &w), ERASE_OK);
    erase_test_expect_error(erase_st_writer_put(w, v, 20), ERASE_ERR_INVALID, "4 bytes more than the header "
                            "announced");
    erase_st_writer_abort(w);
    assert_false(exists(path));
    assert_false(exists(temp));

    erase_st_tensor_t twice[2] = { tensor("x", ERASE_ST_F32, 1, 3, 0), tensor("x", ERASE_ST_F32, 1, 1, 0) };
    erase_test_expect_error(erase_st_writer_open(path, twice, 2, NULL, 0, &w), ERASE_ERR_INVALID,
                            "b.safetensors: tensor x: named twice");
    erase_test_expect_error(erase_st_writer_open("/nonexistent-erase/c.safetensors", t, 2, NULL, 0, &w),
                            ERASE_ERR_IO, "/nonexistent-erase/c.safetensors: cannot create: No such file");
    assert_false(exists(path));

    /* a directory at the path: the commit's rename fails, the message names
     * both files (it was once formatted from the freed writer), and the
     * temporary file is removed */
    char sub[256], subtemp[256], want[600];
    snprintf(sub, sizeof sub, "%s/d.safetensors", dir);
    snprintf(subtemp, sizeof subtemp, "%s/.d.safetensors.tmp", dir);
    assert_int_equal(mkdir(sub, 0755), 0);
    assert_int_equal(erase_st_writer_open(sub, t, 2, NULL, 0, &w), ERASE_OK);
    assert_int_equal(erase_st_writer_put(w, v, 16), ERASE_OK);
    snprintf(want, sizeof want, "%s: cannot rename %s to it: Is a directory", sub, subtemp);
    erase_test_expect_error(erase_st_writer_commit(w), ERASE_ERR_IO, want);
    assert_false(exists(subtemp));
    assert_int_equal(rmdir(sub), 0);
}

/* Malformed headers: each refused with its message. */
static void test_bad_headers(void **state)
{
    (void)state;
    static const struct {
        const char *header;
        uint64_t data;
        const char *expected;
    } cases[] = {
        { "", 0, "header: ends at byte 0, expected '{' (the header is a JSON object)" },
        { "[]", 0, "header: byte 0: expected '{' (the header is a JSON object)" },
        { "{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}", 8, "header: ends at byte 53, expected "
          "',' or '}'" },
        { "{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}} x", 8, "header: byte 55: text after "
          "the JSON object" },
        { "{\"a\":{\"dtype\":\"F33\",\"shape\":[2],\"data_offsets\":[0,8]}}", 8, "tensor a: dtype \"F33\" is not a "
          "safetensors dtype" },
        { "{\"a\":{\"dtype\":\"F32\",\"shape\":[2,3],\"data_offsets\":[0,12]}}", 12, "tensor a: data_offsets [0, "
          "12] hold 12 bytes, its shape [2, 3] of F32 needs 24" },
        { "{\"a\":{\"dtype\":\"F32\",\"shape\":[-2],\"data_offsets\":[0,8]}}", 8, "header: byte 29: expected a "
          "dimension (an integer >= 0)" },
        { "{\"a\":{\"dtype\":\"F32\",\"shape\":[2.5],\"data_offsets\":[0,8]}}", 8, "header: byte 29: expected a "
          "dimension (an integer >= 0)" },
        { "{\"a\":{\"dtype\":\"F32\",\"shape\":[99999999999999999999],\"data_offsets\":[0,8]}}", 8, "header: byte "
          "29: a dimension (an integer >= 0) does not fit 63 bits" },
        { "{\"a\":{\"dtype\":\"F64\",\"shape\":[4294967296,4294967296],\"data_offsets\":[0,8]}}", 8, "tensor a: "
          "shape [4294967296, 4294967296] of F64: more than 2^63 bytes" },
        { "{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[8,0]}}", 8, "tensor a: data_offsets [8, 0] "
          "end before they begin" },
        { "{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},\"b\":{\"dtype\":\"F32\",\"shape\":[1],"
          "\"data_offsets\":[12,16]}}", 16, "tensor b: data starts at byte 12, expected 8 (where the tensor before it "
          "ends)" },
        { "{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},\"b\":{\"dtype\":\"F32\",\"shape\":[1],"
          "\"data_offsets\":[4,8]}}", 8, "tensor b: data starts at byte 4, expected 8" },
        { "{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}}", 12, "the data ends at byte 8 but the "
          "file has 12 bytes of data (bytes no tensor holds)" },
        { "{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}}", 4, "tensor a: data [0, 8) past the "
          "end of the file's 4 bytes of data (truncated)" },
        { "{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},\"a\":{\"dtype\":\"F32\",\"shape\":[2],"
          "\"data_offsets\":[8,16]}}", 16, "tensor a: named twice in the header" },
        { "{\"a\":{\"dtype\":\"F32\",\"shape\":[2]}}", 8, "tensor a: no data_offsets" },
        { "{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8],\"x\":1}}", 8, "tensor a: unknown key "
          "\"x\" (expected dtype, shape, data_offsets)" },
        { "{\"a\":{\"dtype\":\"F32\",\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}}", 8, "tensor a: key "
          "\"dtype\" given twice" },
        { "{\"a\":[1,2]}", 0, "tensor a: byte 5: expected an object {dtype, shape, data_offsets}" },
        { "{\"__metadata__\":{\"step\":7}}", 0, "__metadata__ \"step\": the value is not a string" },
        { "{\"__metadata__\":{\"k\":\"v\",\"k\":\"w\"}}", 0, "__metadata__ key \"k\" given twice" },
        { "{\"__metadata__\":[]}", 0, "__metadata__: expected an object of strings" },
        { "{\"a\\q\":{}}", 0, "header: byte 4: expected an escape" },
        { "{\"a\\u0000\":{}}", 0, "header: byte 4: expected an escape" },
        { "{\"a\\ud800\":{}}", 0, "expected a low surrogate" },
        { "{\"a\nb\":{}}", 0, "header: byte 3: expected no control character in a string" },
        { "{\"a", 0, "header: ends at byte 3, expected '\"' (the end of a string)" },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        erase_st_file_t *f = NULL;
        erase_test_expect_error(erase_st_parse_header("H", cases[i].header, strlen(cases[i].header), cases[i].data,
                                                      &f),
                                ERASE_ERR_FORMAT, cases[i].expected);
        assert_null(f);
    }
    /* accepted: white space, escapes, a scalar, tensors listed out of data order */
    const char *good = " { \"b\\u00e9\\ud83d\\ude00\" : {\"shape\":[],\"dtype\":\"I64\",\"data_offsets\":[4,12]},"
                       "\"a\":{\"dtype\":\"BF16\",\"shape\":[2],\"data_offsets\":[0,4]},\"__metadata__\":{}}   ";
    erase_st_file_t *f;
    assert_int_equal(erase_st_parse_header("H", good, strlen(good), 12, &f), ERASE_OK);
    assert_int_equal(erase_st_count(f), 2);
    assert_string_equal(erase_st_tensor(f, 0)->name, "a");
    assert_string_equal(erase_st_tensor(f, 1)->name, "b\xc3\xa9\xf0\x9f\x98\x80");
    assert_int_equal(erase_st_tensor(f, 1)->ndim, 0);
    assert_int_equal(erase_st_numel(erase_st_tensor(f, 1)), 1);
    assert_int_equal(erase_st_meta_count(f), 0);
    erase_st_close(f);
}

/* A file cut short, a header size past the end, a file too short. */
static void test_truncated(void **state)
{
    (void)state;
    char path[256], cut[256];
    snprintf(path, sizeof path, "%s/t.safetensors", dir);
    snprintf(cut, sizeof cut, "%s/cut.safetensors", dir);
    erase_st_tensor_t t[2] = { tensor("x", ERASE_ST_F32, 1, 4, 0), tensor("y", ERASE_ST_F32, 1, 4, 0) };
    float v[8] = { 0 };
    erase_st_writer_t *w;
    assert_int_equal(erase_st_writer_open(path, t, 2, NULL, 0, &w), ERASE_OK);
    assert_int_equal(erase_st_writer_put(w, v, sizeof v), ERASE_OK);
    assert_int_equal(erase_st_writer_commit(w), ERASE_OK);
    struct stat sb;
    assert_int_equal(stat(path, &sb), 0);
    char cmd[600];
    snprintf(cmd, sizeof cmd, "head -c %lld '%s' > '%s'", (long long)sb.st_size - 6, path, cut);
    assert_int_equal(system(cmd), 0);
    erase_st_file_t *f;
    erase_test_expect_error(erase_st_open(cut, &f), ERASE_ERR_FORMAT, "cut.safetensors: tensor y: data [16, 32) "
                            "past the end of the file's 26 bytes of data (truncated)");
    snprintf(cmd, sizeof cmd, "head -c 20 '%s' > '%s'", path, cut);
    assert_int_equal(system(cmd), 0);
    erase_test_expect_error(erase_st_open(cut, &f), ERASE_ERR_FORMAT, "cut.safetensors: header size ");
    erase_test_expect_error(erase_st_open(cut, &f), ERASE_ERR_FORMAT, "more than the file holds after its 8-byte "
                            "size (truncated, or not a safetensors file)");
    snprintf(cmd, sizeof cmd, "printf abc > '%s'", cut);
    assert_int_equal(system(cmd), 0);
    erase_test_expect_error(erase_st_open(cut, &f), ERASE_ERR_FORMAT, "cut.safetensors: 3 bytes: too short for a "
                            "safetensors file");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_round_trip),
        cmocka_unit_test(test_writer_refuses),
        cmocka_unit_test(test_bad_headers),
        cmocka_unit_test(test_truncated),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
