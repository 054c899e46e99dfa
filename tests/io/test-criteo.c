/*
 * Criteo text -> CTR shards (io/criteo_parse.h, io/criteo_convert.h):
 * values of good lines; the exact message of every kind of bad line, in the
 * parser and with file and line from the converter; --skip-bad counts by
 * reason; the shipped samples converted (rows, clicks, every value against
 * the parser); the raw TSV and the CSV-with-header layouts give the same
 * values for the same rows (the 19 rows the DeepCTR sample shares with the
 * Kaggle sample, and a CSV written from the first 500 TSV lines); gzip input
 * gives the same shards as plain text, a truncated gzip is an error; failed,
 * interrupted and refused conversions leave no shard and no index.
 */
#include <math.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <cmocka.h>

#include "io/convert_plan.h"
#include "io/criteo_convert.h"
#include "io/ctr_index.h"
#include "tests/io/io_util.h"

static char *scratch;

/* ---- lines built from 40 fields ------------------------------------------- */

static const char *good_fields[40] = {
    "1",        "5",        "-2",       "260.0",    "",         "17668",    "0",        "1",
    "33",       "",         "",         "2",        "0",        "1618112",  "05db9164", "08D6D899",
    "9143c832", "f56b7dd5", "25c83c98", "7e0ccccf", "df5c2d18", "0b153874", "a73ee510", "8f48ce11",
    "a7b606c4", "ae1bb660", "eae197fd", "b28479f6", "bfef54b3", "bad5ee18", "e5ba7672", "87c6f83c",
    "",         "",         "0429f84b", "",         "3a171ecb", "c0d61a5c", "ffffffff", "1",
};

/* The good line with field `f` replaced by `value` (f < 0: none), `count`
 * fields, joined by `sep`. */
static char *make_line(char sep, int f, const char *value, int count)
{
    static char line[4096];
    size_t n = 0;
    for (int i = 0; i < count; i++) {
        const char *v = i == f ? value : good_fields[i % 40];
        n += (size_t)snprintf(line + n, sizeof line - n, "%s%s", i ? (sep == '\t' ? "\t" : ",") : "", v);
    }
    return line;
}

static void test_parse_good(void **state)
{
    erase_criteo_row_t row;
    char why[256];
    const char *line = make_line('\t', -1, NULL, 40);
    assert_int_equal(erase_criteo_parse_line(line, strlen(line), '\t', &row, why, sizeof why), ERASE_CRITEO_OK);
    assert_string_equal(why, "");
    assert_int_equal(row.label, 1);
    const float want_dense[13] = { 5, -2, 260, NAN, 17668, 0, 1, 33, NAN, NAN, 2, 0, 1618112 };
    for (int j = 0; j < 13; j++) {
        if (isnan(want_dense[j]))
            assert_true(isnan(row.dense[j]));
        else
            assert_true(row.dense[j] == want_dense[j]);
    }
    assert_int_equal(row.sparse[0], 0x05db9164u);
    assert_int_equal(row.sparse[1], 0x08d6d899u); /* upper case hex */
    assert_int_equal(row.sparse[18], ERASE_CTR_SPARSE_MISSING);
    assert_int_equal(row.sparse[19], ERASE_CTR_SPARSE_MISSING);
    assert_int_equal(row.sparse[20], 0x0429f84bu);
    assert_int_equal(row.sparse[24], 0xFFFFFFFEu); /* the token ffffffff */
    assert_int_equal(row.sparse[25], 0x1u);       /* one hex digit */
    assert_int_equal(row.remapped, 1);

    /* CRLF, comma-separated, label "0.0" */
    char crlf[4096];
    snprintf(crlf, sizeof crlf, "%s\r", make_line(',', 0, "0.0", 40));
    assert_int_equal(erase_criteo_parse_line(crlf, strlen(crlf), ',', &row, why, sizeof why), ERASE_CRITEO_OK);
    assert_int_equal(row.label, 0);
    assert_int_equal(row.sparse[25], 0x1u);

    /* the int32 limits */
    line = make_line('\t', 1, "-2147483648", 40);
    assert_int_equal(erase_criteo_parse_line(line, strlen(line), '\t', &row, why, sizeof why), ERASE_CRITEO_OK);
    assert_true(row.dense[0] == -2147483648.0f);
    line = make_line('\t', 1, "2147483647", 40);
    assert_int_equal(erase_criteo_parse_line(line, strlen(line), '\t', &row, why, sizeof why), ERASE_CRITEO_OK);
    assert_true(row.dense[0] == 2147483647.0f);

    const char *header = "label,I1,I2,I3,I4,I5,I6,I7,I8,I9,I10,I11,I12,I13,C1,C2,C3,C4,C5,C6,C7,C8,C9,C10,C11,"
                         "C12,C13,C14,C15,C16,C17,C18,C19,C20,C21,C22,C23,C24,C25,C26\r";
    assert_int_equal(erase_criteo_check_header(header, strlen(header), why, sizeof why), 0);
    assert_int_equal(erase_criteo_check_header(header, strlen(header) - 3, why, sizeof why), -1);
    const char *upper = "LABEL,i1,I2,I3,I4,I5,I6,I7,I8,I9,I10,I11,I12,I13,c1,C2,C3,C4,C5,C6,C7,C8,C9,C10,C11,"
                        "C12,C13,C14,C15,C16,C17,C18,C19,C20,C21,C22,C23,C24,C25,C26";
    assert_int_equal(erase_criteo_check_header(upper, strlen(upper), why, sizeof why), 0); /* any case */
    print_message("good lines: labels, counts (negative, 260.0, int32 limits), hex ids (case, 1 digit, "
                  "ffffffff -> fffffffe), missing values, CRLF\n");
}

/* Random ids of 1 to 8 digits in either case, in every field and at the
 * line's end, parse to strtoul's values (the 8-digit fast path and the
 * digit-by-digit loop agree). */
static void test_parse_random_ids(void **state)
{
    (void)state;
    uint32_t x = 12345;
    char text[40][10];
    const char *fields[40];
    for (int line = 0; line < 2000; line++) {
        for (int i = 0; i < 40; i++)
            fields[i] = good_fields[i];
        for (int k = 0; k < 26; k++) {
            x = x * 1664525u + 1013904223u;
            int digits = 1 + (int)(x >> 29); /* 1..8, 8 the most common */
            digits = digits < 5 ? 8 : digits;
            for (int d = 0; d < digits; d++) {
                x = x * 1664525u + 1013904223u;
                text[14 + k][d] = "0123456789abcdefABCDEF"[(x >> 24) % 22];
            }
            text[14 + k][digits] = '\0';
            fields[14 + k] = text[14 + k];
        }
        char buf[1024];
        size_t n = 0;
        for (int i = 0; i < 40; i++)
            n += (size_t)snprintf(buf + n, sizeof buf - n, "%s%s", i ? "\t" : "", fields[i]);
        erase_criteo_row_t row;
        char why[256];
        assert_int_equal(erase_criteo_parse_line(buf, n, '\t', &row, why, sizeof why), ERASE_CRITEO_OK);
        for (int k = 0; k < 26; k++) {
            uint32_t want = (uint32_t)strtoul(fields[14 + k], NULL, 16);
            want = want == ERASE_CTR_SPARSE_MISSING ? ERASE_CTR_SPARSE_FFFFFFFF : want;
            if (row.sparse[k] != want)
                fail_msg("line %d: C%d '%s' parsed as %08x", line, k + 1, fields[14 + k], row.sparse[k]);
        }
    }
    print_message("2000 lines of random 1-8 digit ids (both cases) equal strtoul's values\n");
}

typedef struct {
    char sep;
    int field;          /* replace field `field` (-1: none) by `value` */
    const char *value;
    int count;          /* fields in the line */
    erase_criteo_bad_t why;
    const char *message;
} bad_case_t;

static const bad_case_t bad_cases[] = {
    { '\t', -1, NULL, 39, ERASE_CRITEO_BAD_FIELDS,
      "expected 40 tab-separated fields (label, I1-I13, C1-C26), got 39" },
    { '\t', -1, NULL, 41, ERASE_CRITEO_BAD_FIELDS,
      "expected 40 tab-separated fields (label, I1-I13, C1-C26), got 41" },
    { ',', -1, NULL, 1, ERASE_CRITEO_BAD_FIELDS,
      "expected 40 comma-separated fields (label, I1-I13, C1-C26), got 1" },
    { '\t', 0, "2", 40, ERASE_CRITEO_BAD_LABEL, "field label: expected 0 or 1, got '2'" },
    { '\t', 0, "", 40, ERASE_CRITEO_BAD_LABEL, "field label: expected 0 or 1, got ''" },
    { '\t', 0, "yes", 40, ERASE_CRITEO_BAD_LABEL, "field label: expected 0 or 1, got 'yes'" },
    { '\t', 3, "12x", 40, ERASE_CRITEO_BAD_INTEGER, "field I3: expected an integer, got '12x'" },
    { '\t', 1, "1.5", 40, ERASE_CRITEO_BAD_INTEGER, "field I1: expected an integer, got '1.5'" },
    { ',', 13, "1e3", 40, ERASE_CRITEO_BAD_INTEGER, "field I13: expected an integer, got '1e3'" },
    { '\t', 7, "-", 40, ERASE_CRITEO_BAD_INTEGER, "field I7: expected an integer, got '-'" },
    { '\t', 2, "3.", 40, ERASE_CRITEO_BAD_INTEGER, "field I2: expected an integer, got '3.'" },
    { '\t', 5, "99999999999", 40, ERASE_CRITEO_BAD_RANGE,
      "field I5: value out of range -2147483648..2147483647, got '99999999999'" },
    { '\t', 2, "2147483648", 40, ERASE_CRITEO_BAD_RANGE,
      "field I2: value out of range -2147483648..2147483647, got '2147483648'" },
    /* 8 bytes, the last not a hex digit; 9 digits, the last field (the 8-digit fast path's edges) */
    { '\t', 16, "0123456g", 40, ERASE_CRITEO_BAD_HEX,
      "field C3: expected a hexadecimal id of up to 8 digits, got '0123456g'" },
    { '\t', 39, "abcdef01a", 40, ERASE_CRITEO_BAD_RANGE,
      "field C26: value out of range (more than 32 bits), got 'abcdef01a'" },
    { '\t', 18, "zz12", 40, ERASE_CRITEO_BAD_HEX,
      "field C5: expected a hexadecimal id of up to 8 digits, got 'zz12'" },
    { '\t', 14, "0x1234", 40, ERASE_CRITEO_BAD_HEX,
      "field C1: expected a hexadecimal id of up to 8 digits, got '0x1234'" },
    { '\t', 39, "123456789", 40, ERASE_CRITEO_BAD_RANGE,
      "field C26: value out of range (more than 32 bits), got '123456789'" },
    { '\t', 20, "abcdefabcdefabcdefabcdefabcdefabcdefabcdefabcdef", 40, ERASE_CRITEO_BAD_RANGE,
      "field C7: value out of range (more than 32 bits), got 'abcdefabcdefabcdefabcdefabcdefabcdefabcd...'" },
    { '\t', 22, "a\x01" "b", 40, ERASE_CRITEO_BAD_HEX,
      "field C9: expected a hexadecimal id of up to 8 digits, got 'a?b'" },
    /* a bad field after a bad field count: the count is reported */
    { '\t', 3, "12x", 39, ERASE_CRITEO_BAD_FIELDS,
      "expected 40 tab-separated fields (label, I1-I13, C1-C26), got 39" },
};

static void test_parse_bad_messages(void **state)
{
    int n = (int)(sizeof bad_cases / sizeof bad_cases[0]);
    for (int i = 0; i < n; i++) {
        const bad_case_t *c = &bad_cases[i];
        const char *line = make_line(c->sep, c->field, c->value, c->count);
        erase_criteo_row_t row;
        char why[256];
        erase_criteo_bad_t got = erase_criteo_parse_line(line, strlen(line), c->sep, &row, why, sizeof why);
        if (got != c->why || strcmp(why, c->message) != 0)
            fail_msg("case %d: got reason %d '%s', expected %d '%s'", i, got, why, c->why, c->message);
    }
    char why[256];
    assert_int_equal(erase_criteo_check_header("label,I1,I2", 11, why, sizeof why), -1);
    assert_string_equal(why, "expected the header label,I1..I13,C1..C26, got 'label,I1,I2'");
    assert_string_equal(erase_criteo_bad_name(ERASE_CRITEO_BAD_HEX), "bad hex id");
    print_message("%d bad lines: reason and exact message each\n", n);
}

/* ---- conversion ----------------------------------------------------------- */

static erase_criteo_convert_options_t options(const char *out)
{
    erase_criteo_convert_options_t o = erase_criteo_convert_options_default();
    o.out_dir = out;
    o.shard_rows = 4000;
    o.write.chunk_rows = 1000;
    return o;
}

static erase_criteo_convert_summary_t summary;

/* Every line of a TSV file parsed, in order. */
static erase_criteo_row_t *parse_file(const char *path, int64_t *count)
{
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    erase_criteo_row_t *rows = NULL;
    int64_t n = 0, cap = 0;
    char line[8192];
    while (fgets(line, sizeof line, f)) {
        size_t len = strcspn(line, "\n");
        if (n == cap) {
            cap = cap ? 2 * cap : 1024;
            rows = realloc(rows, sizeof *rows * (size_t)cap);
            assert_non_null(rows);
        }
        char why[256];
        if (erase_criteo_parse_line(line, len, '\t', &rows[n], why, sizeof why) != ERASE_CRITEO_OK)
            fail_msg("%s:%lld: %s", path, (long long)n + 1, why);
        n++;
    }
    fclose(f);
    *count = n;
    return rows;
}

/* Stored rows equal the parsed rows (NaN where missing), bit for bit. */
static void expect_rows(const io_rows_t *got, const erase_criteo_row_t *want, int64_t n)
{
    assert_int_equal(got->n, n);
    for (int64_t i = 0; i < n; i++) {
        if (got->label[i] != want[i].label || memcmp(got->dense + i * 13, want[i].dense, sizeof want[i].dense) ||
            memcmp(got->sparse + i * 26, want[i].sparse, sizeof want[i].sparse))
            fail_msg("row %lld differs from its line", (long long)i);
    }
}

static void test_convert_kaggle(void **state)
{
    const char *in[1] = { io_sample("kaggle-train-first9999.tsv") };
    int64_t n;
    erase_criteo_row_t *want = parse_file(in[0], &n);
    assert_int_equal(n, 9999);
    for (int compress = 0; compress < 2; compress++) {
        const char *out = io_path(scratch, compress ? "kaggle-z" : "kaggle");
        erase_criteo_convert_options_t o = options(out);
        o.write.compress = compress;
        MUST(erase_criteo_convert(in, 1, &o, &summary));
        assert_int_equal(summary.lines, 9999);
        assert_int_equal(summary.rows, 9999);
        assert_int_equal(summary.skipped, 0);
        assert_int_equal(summary.shards, 3);
        assert_int_equal(summary.stats.rows, 9999);
        assert_int_equal(summary.stats.clicks, 2181);
        assert_int_equal(summary.stats.dense_missing[0], 4480); /* I1: 44.80% */
        assert_int_equal(summary.stats.dense_missing[1], 0);
        assert_true(summary.stats.dense_min[1] == -2.0f);
        assert_true(summary.stats.dense_max[4] == 1618112.0f);
        assert_int_equal(summary.stats.sparse_missing[21], 8181); /* C22: 81.82% */
        io_rows_t got;
        MUST(io_rows_load(out, &got));
        expect_rows(&got, want, n);
        io_rows_free(&got);
        erase_ctr_list_t list;
        const char *dir[1] = { out };
        MUST(erase_ctr_list_resolve(dir, 1, &list));
        assert_int_equal(list.count, 3);
        assert_int_equal(list.rows[0], 4000);
        assert_int_equal(list.rows[2], 1999);
        erase_ctr_list_free(&list);
        assert_int_equal(io_count_files(out, ".tmp"), 0);
    }
    free(want);

    const char *pin[1] = { io_sample("paddlerec-part0.tsv") };
    const char *out = io_path(scratch, "paddle");
    erase_criteo_convert_options_t o = options(out);
    MUST(erase_criteo_convert(pin, 1, &o, &summary));
    assert_int_equal(summary.rows, 100);
    assert_int_equal(summary.stats.clicks, 29);
    assert_int_equal(summary.shards, 1);
    erase_criteo_row_t *pw = parse_file(pin[0], &n);
    io_rows_t got;
    MUST(io_rows_load(out, &got));
    expect_rows(&got, pw, n);
    io_rows_free(&got);
    free(pw);
    print_message("kaggle sample: 9999 rows, 2181 clicks, 3 shards, every value as parsed (plain and "
                  "compressed); paddlerec: 100 rows, 29 clicks\n");
}

/* Index of the stored row equal to row i of `a` in `b` (by label, dense
 * bits and ids), or -1. */
static int64_t find_row(const io_rows_t *a, int64_t i, const io_rows_t *b)
{
    for (int64_t k = 0; k < b->n; k++)
        if (a->label[i] == b->label[k] && !memcmp(a->sparse + i * 26, b->sparse + k * 26, 26 * 4) &&
            !memcmp(a->dense + i * 13, b->dense + k * 13, 13 * 4))
            return k;
    return -1;
}

static void test_csv_equals_tsv(void **state)
{
    /* the DeepCTR sample (CSV with header, 260.0-style integers) */
    const char *cin[1] = { io_sample("deepctr-sample.csv") };
    const char *cout = io_path(scratch, "deepctr");
    erase_criteo_convert_options_t o = options(cout);
    MUST(erase_criteo_convert(cin, 1, &o, &summary));
    assert_int_equal(summary.lines, 200);
    assert_int_equal(summary.rows, 200);
    assert_int_equal(summary.stats.clicks, 49);
    io_rows_t csv, tsv;
    MUST(io_rows_load(cout, &csv));
    MUST(io_rows_load(io_path(scratch, "kaggle"), &tsv));
    int matched = 0, same_ids = 0;
    for (int64_t i = 0; i < csv.n; i++) {
        matched += find_row(&csv, i, &tsv) >= 0;
        for (int64_t k = 0; k < tsv.n; k++)
            if (!memcmp(csv.sparse + i * 26, tsv.sparse + k * 26, 26 * 4)) {
                same_ids++;
                break;
            }
    }
    /* every row whose 26 ids occur in the Kaggle sample is that row, value for value */
    assert_int_equal(same_ids, 19);
    assert_int_equal(matched, 19);
    io_rows_free(&csv);

    /* a CSV with header written from the first 500 TSV lines, integers as "N.0";
     * its header "Label,...", as some exports write it (auto-detected as CSV) */
    const char *src = io_sample("kaggle-train-first9999.tsv");
    FILE *in = fopen(src, "rb");
    const char *csv_path = io_path(scratch, "first500.csv"), *tsv_path = io_path(scratch, "first500.tsv");
    FILE *c = fopen(csv_path, "wb"), *t = fopen(tsv_path, "wb");
    assert_true(in && c && t);
    fprintf(c, "Label,I1,I2,I3,I4,I5,I6,I7,I8,I9,I10,I11,I12,I13,C1,C2,C3,C4,C5,C6,C7,C8,C9,C10,C11,C12,C13,C14,"
               "C15,C16,C17,C18,C19,C20,C21,C22,C23,C24,C25,C26\r\n");
    char line[8192];
    for (int i = 0; i < 500 && fgets(line, sizeof line, in); i++) {
        fputs(line, t);
        line[strcspn(line, "\n")] = '\0';
        int f = 0;
        for (char *p = line;; f++) {
            char *q = strchr(p, '\t');
            if (q)
                *q = '\0';
            fprintf(c, "%s%s%s", f ? "," : "", p, f >= 1 && f <= 13 && *p && f != 2 ? ".0" : "");
            if (!q)
                break;
            p = q + 1;
        }
        fputs("\r\n", c);
    }
    fclose(in);
    fclose(c);
    fclose(t);
    const char *a[1] = { csv_path }, *b[1] = { tsv_path };
    o = options(io_path(scratch, "first500-csv"));
    MUST(erase_criteo_convert(a, 1, &o, &summary));
    assert_int_equal(summary.rows, 500);
    o = options(io_path(scratch, "first500-tsv"));
    MUST(erase_criteo_convert(b, 1, &o, &summary));
    MUST(io_rows_load(io_path(scratch, "first500-csv"), &csv));
    io_rows_t tsv500;
    MUST(io_rows_load(io_path(scratch, "first500-tsv"), &tsv500));
    assert_int_equal(csv.n, 500);
    assert_int_equal(tsv500.n, 500);
    assert_memory_equal(csv.label, tsv500.label, 500);
    assert_memory_equal(csv.dense, tsv500.dense, 500 * 13 * 4);
    assert_memory_equal(csv.sparse, tsv500.sparse, 500 * 26 * 4);
    assert_memory_equal(csv.sparse, tsv.sparse, 500 * 26 * 4); /* and the first rows of the full conversion */
    io_rows_free(&csv);
    io_rows_free(&tsv500);
    io_rows_free(&tsv);
    print_message("CSV with header = raw TSV: 19 of 19 shared DeepCTR/Kaggle rows identical; 500 rows "
                  "rewritten as CSV (N.0, CRLF) identical\n");
}

/* Write lines [0, n) of a file (n < 0: all) through zlib; `cut` > 0 keeps
 * only that many compressed bytes. */
static void write_gzip(const char *src, const char *dst, int n, long cut)
{
    FILE *in = fopen(src, "rb");
    gzFile z = gzopen(dst, "wb6");
    assert_true(in && z);
    char line[8192];
    for (int i = 0; (n < 0 || i < n) && fgets(line, sizeof line, in); i++)
        gzputs(z, line);
    fclose(in);
    gzclose(z);
    if (cut > 0)
        assert_int_equal(truncate(dst, cut), 0);
}

static void test_gzip(void **state)
{
    const char *src = io_sample("kaggle-train-first9999.tsv");
    const char *gz = io_path(scratch, "kaggle.tsv.gz");
    write_gzip(src, gz, -1, 0);
    const char *in[1] = { gz };
    const char *out = io_path(scratch, "kaggle-gz");
    erase_criteo_convert_options_t o = options(out);
    MUST(erase_criteo_convert(in, 1, &o, &summary));
    assert_int_equal(summary.rows, 9999);
    io_rows_t a, b;
    MUST(io_rows_load(out, &a));
    MUST(io_rows_load(io_path(scratch, "kaggle"), &b));
    assert_int_equal(a.n, b.n);
    assert_memory_equal(a.label, b.label, (size_t)a.n);
    assert_memory_equal(a.dense, b.dense, (size_t)a.n * 13 * 4);
    assert_memory_equal(a.sparse, b.sparse, (size_t)a.n * 26 * 4);
    io_rows_free(&a);
    io_rows_free(&b);

    /* several inputs, gzip and plain mixed: one dataset, rows in input order */
    const char *two[2] = { gz, io_sample("paddlerec-part0.tsv") };
    out = io_path(scratch, "mixed");
    o = options(out);
    MUST(erase_criteo_convert(two, 2, &o, &summary));
    assert_int_equal(summary.rows, 10099);
    assert_int_equal(summary.stats.clicks, 2181 + 29);
    assert_int_equal(summary.shards, 4); /* 3 of the gzip file, 1 of paddlerec's: a shard holds one input's rows */

    /* a truncated gzip stream */
    const char *cut = io_path(scratch, "cut.tsv.gz");
    write_gzip(src, cut, 3000, 100000);
    const char *cin[1] = { cut };
    out = io_path(scratch, "cut");
    o = options(out);
    assert_int_equal(erase_criteo_convert(cin, 1, &o, &summary), ERASE_ERR_IO);
    char want[4096];
    snprintf(want, sizeof want, "%s: gzip member 1 (at byte 0) is damaged or truncated: unexpected end of file", cut);
    assert_string_equal(erase_error_reason(), want);
    assert_int_equal(io_count_files(out, ".h5"), 0);
    assert_int_equal(io_count_files(out, ".tmp"), 0);
    assert_int_equal(io_count_files(out, ".txt"), 0);
    print_message("gzip input = plain input (9999 rows); gzip + plain inputs in one dataset (10099 rows); "
                  "truncated gzip: '%s'\n", erase_error_reason());
}

static void test_bad_lines_in_files(void **state)
{
    /* a bad line stops the conversion and leaves nothing */
    const char *path = io_path(scratch, "bad.tsv");
    char text[16384] = "";
    strcat(text, make_line('\t', -1, NULL, 40));
    strcat(text, "\n");
    strcat(text, make_line('\t', -1, NULL, 40));
    strcat(text, "\n");
    strcat(text, make_line('\t', 3, "12x", 40));
    strcat(text, "\n");
    assert_int_equal(io_write_text(path, text), 0);
    const char *in[1] = { path };
    const char *out = io_path(scratch, "bad-out");
    erase_criteo_convert_options_t o = options(out);
    assert_int_equal(erase_criteo_convert(in, 1, &o, &summary), ERASE_ERR_FORMAT);
    char want[4096];
    snprintf(want, sizeof want, "%s:3: field I3: expected an integer, got '12x'", path);
    assert_string_equal(erase_error_reason(), want);
    assert_int_equal(access(out, F_OK), -1); /* not even the directory it made */

    /* a CSV without its header */
    const char *csv = io_path(scratch, "noheader.csv");
    char body[8192];
    snprintf(body, sizeof body, "%s\n", make_line(',', -1, NULL, 40));
    assert_int_equal(io_write_text(csv, body), 0);
    const char *cin[1] = { csv };
    o = options(io_path(scratch, "noheader-out"));
    o.format = ERASE_CRITEO_CSV;
    assert_int_equal(erase_criteo_convert(cin, 1, &o, &summary), ERASE_ERR_FORMAT);
    snprintf(want, sizeof want,
             "%s:1: expected the header label,I1..I13,C1..C26, got '1,5,-2,260.0,,17668,0,1,33,,,2,0,1618112...'",
             csv);
    assert_string_equal(erase_error_reason(), want);

    /* --skip-bad: one bad line of each kind among good ones */
    text[0] = '\0';
    const char *bad[6][3] = { { NULL, NULL, "39" },        { "0", "7", NULL },
                              { "4", "4.5", NULL },        { "20", "xyz", NULL },
                              { "6", "5000000000", NULL }, { "18", "1a,,2b", NULL } }; /* (issue 35) a list */
    for (int k = 0; k < 6; k++) {
        strcat(text, make_line('\t', -1, NULL, 40));
        strcat(text, "\n");
        if (bad[k][2])
            strcat(text, make_line('\t', -1, NULL, 39));
        else
            strcat(text, make_line('\t', atoi(bad[k][0]), bad[k][1], 40));
        strcat(text, "\n");
    }
    strcat(text, make_line('\t', -1, NULL, 40)); /* a last line without '\n' */
    path = io_path(scratch, "skip.tsv");
    assert_int_equal(io_write_text(path, text), 0);
    in[0] = path;
    out = io_path(scratch, "skip-out");
    o = options(out);
    o.skip_bad = 1;
    MUST(erase_criteo_convert(in, 1, &o, &summary));
    assert_int_equal(summary.lines, 13);
    assert_int_equal(summary.rows, 7);
    assert_int_equal(summary.skipped, 6);
    for (int k = 1; k < ERASE_CRITEO_BAD_KINDS; k++)
        assert_int_equal(summary.bad[k], 1);
    assert_int_equal(summary.remapped, 7);
    const char *first[ERASE_CRITEO_BAD_KINDS] = {
        NULL,
        "%s:2: expected 40 tab-separated fields (label, I1-I13, C1-C26), got 39",
        "%s:4: field label: expected 0 or 1, got '7'",
        "%s:6: field I4: expected an integer, got '4.5'",
        "%s:8: field C7: expected a hexadecimal id of up to 8 digits, got 'xyz'",
        "%s:10: field I6: value out of range -2147483648..2147483647, got '5000000000'",
        "%s:12: field C5: expected hexadecimal ids separated by single commas (an id is empty), got '1a,,2b'",
    };
    for (int k = 1; k < ERASE_CRITEO_BAD_KINDS; k++) {
        snprintf(want, sizeof want, first[k], path);
        assert_string_equal(summary.first_bad[k], want);
    }
    io_rows_t got;
    MUST(io_rows_load(out, &got));
    assert_int_equal(got.n, 7);
    io_rows_free(&got);
    FILE *devnull = fopen("/dev/null", "w");
    erase_criteo_convert_print(&summary, devnull);
    fclose(devnull);
    print_message("bad line 3 -> '%s', nothing written; --skip-bad: 7 rows, 1 skipped per reason, each "
                  "first message exact\n", want);
}

static void test_refused_and_interrupted(void **state)
{
    const char *in[1] = { io_sample("kaggle-train-first9999.tsv") };
    const char *out = io_path(scratch, "kaggle");
    erase_criteo_convert_options_t o = options(out);
    assert_int_equal(erase_criteo_convert(in, 1, &o, &summary), ERASE_ERR_INVALID);
    char want[4096];
    snprintf(want, sizeof want, "%s: already holds a dataset (index.txt); remove it or replace it (--force)", out);
    assert_string_equal(erase_error_reason(), want);
    assert_int_equal(io_count_files(out, ".h5"), 3); /* untouched */

    /* --force replaces it (a bigger shard size: 2 shards, the old third removed) */
    o.force = 1;
    o.shard_rows = 5000;
    MUST(erase_criteo_convert(in, 1, &o, &summary));
    assert_int_equal(summary.shards, 2);
    assert_int_equal(io_count_files(out, ".h5"), 2);
    assert_int_equal(io_count_files(out, ".tmp"), 0);

    /* cancelled (as by SIGINT) after 4096 lines: nothing remains */
    static volatile sig_atomic_t cancel = 1;
    const char *cout = io_path(scratch, "cancelled");
    o = options(cout);
    o.cancel = &cancel;
    assert_int_equal(erase_criteo_convert(in, 1, &o, &summary), ERASE_ERR_STATE);
    snprintf(want, sizeof want, "%s:4096: interrupted", in[0]);
    assert_string_equal(erase_error_reason(), want);
    assert_int_equal(access(cout, F_OK), -1);

    /* an input that does not exist */
    const char *missing[1] = { io_path(scratch, "no-such-file.tsv") };
    o = options(io_path(scratch, "missing-out"));
    assert_int_equal(erase_criteo_convert(missing, 1, &o, &summary), ERASE_ERR_IO);
    snprintf(want, sizeof want, "%s: cannot open: No such file or directory", missing[0]);
    assert_string_equal(erase_error_reason(), want);
    assert_int_equal(access(io_path(scratch, "missing-out"), F_OK), -1);

    /* a failure in a directory that existed before: the directory stays, empty */
    const char *kept = io_path(scratch, "kept-out");
    assert_int_equal(mkdir(kept, 0777), 0);
    o = options(kept);
    assert_int_equal(erase_criteo_convert(missing, 1, &o, &summary), ERASE_ERR_IO);
    assert_int_equal(access(kept, F_OK), 0);
    assert_int_equal(io_count_files(kept, ""), 0);
    print_message("existing dataset refused, replaced with --force; interrupted and failed conversions "
                  "leave no file, nor a directory they made\n");
}

/* The units of a parallel conversion (issue 35): byte ranges of a large
 * plain file, a gzip file whole, and the longest-processing-time deal. */
static void test_convert_plan(void **state)
{
    char big[1001], small[101];
    memset(big, 'a', 1000);
    big[1000] = '\0';
    memset(small, 'b', 100);
    small[100] = '\0';
    const char *p = io_path(scratch, "plan-big.tsv");
    const char *s = io_path(scratch, "plan-small.tsv");
    const char *g = io_path(scratch, "plan.gz");
    assert_int_equal(io_write_text(p, big), 0);
    assert_int_equal(io_write_text(s, small), 0);
    small[0] = (char)0x1f, small[1] = (char)0x8b, small[50] = '\0'; /* gzip's magic; the plan reads no more */
    assert_int_equal(io_write_text(g, small), 0);
    const char *in[3] = { p, g, s };
    erase_convert_plan_t plan;
    MUST(erase_convert_plan_make(in, 3, 300, &plan));
    assert_int_equal(plan.count, 6);
    assert_int_equal(plan.total_bytes, 1150);
    static const struct {
        int file, gzip, split;
        int64_t start, end;
        int rank1, rank2, rank4;
    } want[6] = {
        { 0, 0, 1, 0, 300, 0, 0, 0 },   { 0, 0, 1, 300, 600, 0, 1, 1 }, { 0, 0, 1, 600, 900, 0, 0, 2 },
        { 0, 0, 1, 900, 1000, 0, 1, 3 }, { 1, 1, 0, 0, 50, 0, 1, 3 },    { 2, 0, 0, 0, 100, 0, 1, 3 },
    };
    for (int ranks = 1; ranks <= 4; ranks *= 2) {
        erase_convert_plan_deal(&plan, ranks);
        for (int u = 0; u < 6; u++) {
            const erase_convert_unit_t *x = &plan.units[u];
            assert_int_equal(x->file, want[u].file);
            assert_int_equal(x->gzip, want[u].gzip);
            assert_int_equal(x->split, want[u].split);
            assert_int_equal(x->start, want[u].start);
            assert_int_equal(x->end, want[u].end);
            assert_int_equal(x->rank, ranks == 1 ? want[u].rank1 : ranks == 2 ? want[u].rank2 : want[u].rank4);
        }
    }
    erase_convert_plan_free(&plan);
    const char *missing[1] = { io_path(scratch, "plan-missing.tsv") };
    assert_int_equal(erase_convert_plan_make(missing, 1, 300, &plan), ERASE_ERR_IO);
    char msg[4200];
    snprintf(msg, sizeof msg, "%s: cannot open: No such file or directory", missing[0]);
    assert_string_equal(erase_error_reason(), msg);
    print_message("plan: 4 ranges of 300 bytes + a gzip file + a small file; dealt to 1, 2, 4 ranks by size\n");
}

static int setup(void **state)
{
    scratch = io_scratch_make("criteo");
    return scratch ? 0 : -1;
}

static int teardown(void **state)
{
    io_scratch_remove(scratch);
    return 0;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse_good),
        cmocka_unit_test(test_parse_random_ids),
        cmocka_unit_test(test_parse_bad_messages),
        cmocka_unit_test(test_convert_kaggle),
        cmocka_unit_test(test_csv_equals_tsv),
        cmocka_unit_test(test_gzip),
        cmocka_unit_test(test_bad_lines_in_files),
        cmocka_unit_test(test_refused_and_interrupted),
        cmocka_unit_test(test_convert_plan),
    };
    return cmocka_run_group_tests_name("Criteo text to CTR shards", tests, setup, teardown);
}
