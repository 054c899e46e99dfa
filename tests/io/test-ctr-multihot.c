/*
 * Multi-hot CTR data (issue 35): the parser's lists of ids and their bad
 * forms (exact messages); the statistics of one-hot rows with and without
 * lengths; shards of format erase-ctr-2 written through the
 * dataset writer (a shard that starts one-hot switches when the first list
 * comes; the shards after it start as version 2) and read back exactly
 * (lengths, ids, max_hotness); the reader's layout for a model's hotness
 * (ids padded with 0xFFFFFFFF at the prefix-sum columns, sparse_len), the
 * same rows in the same order as version 1 data with one id each on 1 and
 * 2 data-parallel ranks, version 1 and version 2 shards of the same one-hot
 * rows delivering the same bytes; a row over its feature's capacity refused
 * with the shard, row and feature named; a Criteo TSV with lists converted
 * and read back exactly, and a one-hot TSV still converted as version 1.
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

#include "io/criteo_convert.h"
#include "io/criteo_parse.h"
#include "io/ctr_dataset_write.h"
#include "io/ctr_reader.h"
#include "io/ctr_shard.h"
#include "io/ctr_stats.h"
#include "lib/nn/model_config.h"
#include "tests/io/io_util.h"

#define F ERASE_CTR_SHARD_FIELDS
#define ROWS 5000
#define SHARD_ROWS 2000
#define MISSING ERASE_CTR_SPARSE_MISSING

/* MLPerf DLRM-DCNv2's hotness (a macro of lib/nn/model_config.h: nothing to link) */
static const uint32_t mlperf[F] = ERASE_CTR_HOTNESS_MLPERF;

static char *scratch;

/* ROWS generated rows: the first 100 one id each, then 1..mlperf[f] ids
 * per feature (about 5% missing: one id 0xFFFFFFFF). */
typedef struct {
    uint8_t label[ROWS];
    float dense[ROWS * 13];
    uint32_t lengths[ROWS * F];
    uint32_t *ids;
    int64_t *first; /* [ROWS + 1]: index of each row's first id */
    int64_t nids;
} rows_t;
static rows_t g;

static uint64_t next(uint64_t *s)
{
    uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static void generate(void)
{
    uint64_t s = 35;
    g.ids = malloc(sizeof *g.ids * ROWS * 214);
    g.first = malloc(sizeof *g.first * (ROWS + 1));
    assert_non_null(g.ids);
    for (int64_t i = 0; i < ROWS; i++) {
        g.first[i] = g.nids;
        g.label[i] = next(&s) % 4 == 0;
        for (int j = 0; j < 13; j++)
            g.dense[i * 13 + j] = (float)(next(&s) % 1000);
        for (int f = 0; f < F; f++) {
            uint32_t n = i < 100 ? 1 : 1 + (uint32_t)(next(&s) % mlperf[f]);
            int missing = n == 1 && next(&s) % 20 == 0;
            g.lengths[i * F + f] = n;
            for (uint32_t k = 0; k < n; k++)
                g.ids[g.nids++] = missing ? MISSING : (uint32_t)(next(&s) % 0xFFFFFFFEu);
        }
    }
    g.first[ROWS] = g.nids;
}

/* Write rows [0, ROWS) in appends of 100, 900, then 1000 rows: one-hot
 * rows (lengths NULL, ids = one per feature) when `one_hot`. */
static void write_dataset(const char *dir, int one_hot, int multi_hot_option)
{
    erase_ctr_write_options_t o = erase_ctr_write_options_default();
    o.chunk_rows = 256;
    o.multi_hot = multi_hot_option;
    erase_ctr_dataset_writer_t *w;
    MUST(erase_ctr_dataset_writer_open(dir, SHARD_ROWS, &o, 0, &w));
    uint32_t *first_ids = malloc(sizeof *first_ids * ROWS * F);
    for (int64_t i = 0; i < ROWS; i++)
        for (int f = 0, at = 0; f < F; at += (int)g.lengths[i * F + f], f++)
            first_ids[i * F + f] = g.ids[g.first[i] + at];
    for (int64_t b = 0; b < ROWS;) {
        int64_t n = b == 0 ? 100 : b == 100 ? 900 : 1000;
        if (one_hot)
            MUST(erase_ctr_dataset_writer_append(w, n, g.label + b, g.dense + b * 13, first_ids + b * F, "gen"));
        else
            MUST(erase_ctr_dataset_writer_append_ids(w, n, g.label + b, g.dense + b * 13, g.lengths + b * F,
                                                     g.ids + g.first[b], "gen"));
        b += n;
    }
    MUST(erase_ctr_dataset_writer_commit(w));
    erase_ctr_dataset_writer_free(w);
    free(first_ids);
}

static void test_parse_lists(void **state)
{
    (void)state;
    char line[1024], why[256];
    int n = snprintf(line, sizeof line, "1");
    for (int j = 0; j < 13; j++)
        n += snprintf(line + n, sizeof line - n, "\t%d", j);
    const char *cats[F] = { "1a,2b,3c", "", "ffffffff,01", "abc" };
    for (int f = 0; f < F; f++)
        n += snprintf(line + n, sizeof line - n, "\t%s", f < 4 ? cats[f] : "10");
    erase_criteo_row_t row;
    uint32_t ids[64];
    assert_int_equal(erase_criteo_parse_line_ids(line, strlen(line), '\t', &row, ids, 64, why, sizeof why),
                     ERASE_CRITEO_OK);
    const uint32_t want_len[4] = { 3, 1, 2, 1 };
    const uint32_t want_ids[7] = { 0x1a, 0x2b, 0x3c, MISSING, 0xFFFFFFFEu, 0x01, 0xabc };
    for (int f = 0; f < 4; f++)
        assert_int_equal(row.lengths[f], want_len[f]);
    for (int f = 4; f < F; f++)
        assert_int_equal(row.lengths[f], 1);
    assert_int_equal(row.nids, 7 + F - 4);
    for (int k = 0; k < 7; k++)
        assert_int_equal(ids[k], want_ids[k]);
    assert_int_equal(ids[7], 0x10);
    assert_int_equal(row.sparse[0], 0x1a);
    assert_int_equal(row.sparse[2], 0xFFFFFFFEu);
    assert_int_equal(row.remapped, 1);
    assert_int_equal(row.multi, 1);
    /* the one-id parser refuses the list */
    assert_int_equal(erase_criteo_parse_line(line, strlen(line), '\t', &row, why, sizeof why), ERASE_CRITEO_BAD_LIST);
    assert_string_equal(why, "field C1: expected one hexadecimal id, not a list, got '1a,2b,3c'");
    /* too many ids for the caller's array */
    assert_int_equal(erase_criteo_parse_line_ids(line, strlen(line), '\t', &row, ids, 27, why, sizeof why),
                     ERASE_CRITEO_BAD_LIST);
    assert_string_equal(why, "more than 27 ids in the line");
    /* empty elements */
    const char *bad[3] = { "a,,b", "a,", ",a" };
    for (int k = 0; k < 3; k++) {
        char text[1024], want[256];
        int m = snprintf(text, sizeof text, "0");
        for (int j = 0; j < 13; j++)
            m += snprintf(text + m, sizeof text - m, "\t");
        for (int f = 0; f < F; f++)
            m += snprintf(text + m, sizeof text - m, "\t%s", f == 4 ? bad[k] : "");
        assert_int_equal(erase_criteo_parse_line_ids(text, strlen(text), '\t', &row, ids, 64, why, sizeof why),
                         ERASE_CRITEO_BAD_LIST);
        snprintf(want, sizeof want,
                 "field C5: expected hexadecimal ids separated by single commas (an id is empty), got '%s'", bad[k]);
        assert_string_equal(why, want);
    }
    print_message("lists parsed (lengths 3,1,2,1, ids exact); 'a,,b', 'a,', ',a' refused, named\n");
}

/* Shard k's rows [begin, begin + count) read back equal the generated ones. */
static void check_shard_ids(erase_ctr_shard_t *sh, int64_t base, int64_t begin, int64_t count)
{
    uint32_t *len = malloc(sizeof *len * (size_t)count * F);
    const uint32_t *ids;
    int64_t nids;
    MUST(erase_ctr_shard_read_ids(sh, begin, count, len, &ids, &nids));
    assert_memory_equal(len, g.lengths + (base + begin) * F, sizeof *len * (size_t)count * F);
    assert_int_equal(nids, g.first[base + begin + count] - g.first[base + begin]);
    assert_memory_equal(ids, g.ids + g.first[base + begin], sizeof *ids * (size_t)nids);
    free(len);
}

static void test_write_read_ids(void **state)
{
    (void)state;
    const char *dir = io_path(scratch, "multi");
    write_dataset(dir, 0, 0);
    for (int k = 0; k < 3; k++) {
        char path[4200];
        snprintf(path, sizeof path, "%s/part-%05d.h5", dir, k);
        erase_ctr_shard_t *sh;
        MUST(erase_ctr_shard_open(path, &sh));
        int64_t base = (int64_t)k * SHARD_ROWS, n = erase_ctr_shard_rows(sh);
        assert_int_equal(n, k < 2 ? SHARD_ROWS : ROWS - 2 * SHARD_ROWS);
        assert_int_equal(erase_ctr_shard_version(sh), 2);
        assert_int_equal(erase_ctr_shard_ids(sh), g.first[base + n] - g.first[base]);
        uint32_t want[F] = { 0 };
        for (int64_t i = base; i < base + n; i++)
            for (int f = 0; f < F; f++)
                want[f] = g.lengths[i * F + f] > want[f] ? g.lengths[i * F + f] : want[f];
        assert_memory_equal(erase_ctr_shard_max_hotness(sh), want, sizeof want);
        char text[64];
        erase_ctr_shard_attr_text(sh, "format", text, sizeof text);
        assert_string_equal(text, "erase-ctr-2");
        check_shard_ids(sh, base, 0, n);
        check_shard_ids(sh, base, 17, 777);
        /* the one-id read refuses a multi-hot shard, naming the row */
        uint32_t sparse[F * 100];
        assert_int_equal(erase_ctr_shard_read(sh, 0, 100, NULL, NULL, sparse), k == 0 ? ERASE_OK : ERASE_ERR_FORMAT);
        if (k == 0) { /* its first 100 rows have one id each */
            for (int64_t t = 0; t < 100 * F; t++)
                assert_int_equal(sparse[t], g.ids[t]);
        } else {
            int64_t c = base * F;
            while (g.lengths[c] == 1)
                c++;
            char message[4400];
            snprintf(message, sizeof message,
                     "%s: row %" PRId64 " feature C%d has %" PRIu32 " ids: a multi-hot shard (erase-ctr-2); read it "
                     "with erase_ctr_shard_read_ids",
                     path, c / F - base, (int)(c % F) + 1, g.lengths[c]);
            assert_string_equal(erase_error_reason(), message);
        }
        erase_ctr_shard_close(sh);
    }
    print_message("3 shards of erase-ctr-2 (the first switched after 100 one-hot rows): lengths, ids, "
                  "max_hotness exact\n");
}

typedef struct {
    int64_t n;
    int64_t *row_id;
    uint32_t *sparse; /* [n, width] */
    uint32_t *len;    /* [n, 26] or NULL */
} epoch_t;

/* Epoch 0 of `dir` with capacities `hotness` (NULL: erase_ctr_rows) on
 * `ranks` data-parallel ranks, the parts of each step concatenated. */
static void read_epoch(const char *dir, const uint32_t *hotness, int ranks, epoch_t *e)
{
    erase_row_format_t fmt;
    if (hotness)
        erase_ctr_rows_init(&fmt, hotness);
    else
        fmt = erase_ctr_rows;
    int64_t width = 0;
    for (int f = 0; f < F; f++)
        width += hotness ? hotness[f] : 1;
    int multi = width != F;
    e->n = 0;
    e->row_id = malloc(sizeof *e->row_id * ROWS);
    e->sparse = malloc(sizeof *e->sparse * ROWS * (size_t)width);
    e->len = multi ? malloc(sizeof *e->len * ROWS * F) : NULL;
    erase_reader_t *r[2];
    const char *in[1] = { dir };
    for (int k = 0; k < ranks; k++) {
        erase_reader_options_t o = erase_reader_options_default();
        o.global_batch = 250;
        o.dp_rank = k;
        o.dp_size = ranks;
        o.seed = 7;
        o.block_rows = 256;
        o.pool_blocks = 4;
        MUST(erase_reader_open(&fmt, in, 1, &o, &r[k]));
    }
    for (;;) {
        int end = 0;
        for (int k = 0; k < ranks; k++) {
            erase_reader_batch_t b;
            MUST(erase_reader_next(r[k], &b));
            end = b.end_of_epoch;
            if (end)
                continue;
            erase_ctr_batch_t c = erase_ctr_batch(&b);
            assert_true(multi ? c.sparse_len != NULL : c.sparse_len == NULL);
            memcpy(e->row_id + e->n, c.row_id, sizeof *c.row_id * (size_t)c.size);
            memcpy(e->sparse + e->n * width, c.sparse, sizeof *c.sparse * (size_t)(c.size * width));
            if (multi)
                memcpy(e->len + e->n * F, c.sparse_len, sizeof *c.sparse_len * (size_t)(c.size * F));
            e->n += c.size;
        }
        if (end)
            break;
    }
    for (int k = 0; k < ranks; k++)
        erase_reader_close(r[k]);
}

static void epoch_free(epoch_t *e)
{
    free(e->row_id);
    free(e->sparse);
    free(e->len);
}

static void test_reader_layout(void **state)
{
    (void)state;
    const char *multi = io_path(scratch, "multi"); /* written by test_write_read_ids */
    char one[4096], one_v2[4096];
    snprintf(one, sizeof one, "%s", io_path(scratch, "one"));
    snprintf(one_v2, sizeof one_v2, "%s", io_path(scratch, "one-v2"));
    write_dataset(one, 1, 0);
    write_dataset(one_v2, 1, 1);
    for (int k = 0; k < 2; k++) { /* one-hot rows stay version 1 unless asked for version 2 */
        char path[4200];
        snprintf(path, sizeof path, "%s/part-00002.h5", k ? one_v2 : one);
        erase_ctr_shard_t *sh;
        MUST(erase_ctr_shard_open(path, &sh));
        assert_int_equal(erase_ctr_shard_version(sh), 1 + k);
        erase_ctr_shard_close(sh);
    }
    epoch_t ref;
    read_epoch(one, NULL, 1, &ref); /* version 1, one id each: the order of today */
    assert_int_equal(ref.n, ROWS);
    int64_t width = 214;
    for (int ranks = 1; ranks <= 2; ranks++) {
        epoch_t m, a, b;
        read_epoch(multi, mlperf, ranks, &m);
        read_epoch(one, mlperf, ranks, &a);
        read_epoch(one_v2, mlperf, ranks, &b);
        assert_int_equal(m.n, ROWS);
        assert_memory_equal(m.row_id, ref.row_id, sizeof *ref.row_id * ROWS);
        assert_memory_equal(a.row_id, ref.row_id, sizeof *ref.row_id * ROWS);
        assert_memory_equal(b.row_id, ref.row_id, sizeof *ref.row_id * ROWS);
        /* version 1 and version 2 of the same one-hot rows: the same bytes */
        assert_memory_equal(a.sparse, b.sparse, sizeof *a.sparse * ROWS * (size_t)width);
        assert_memory_equal(a.len, b.len, sizeof *a.len * ROWS * F);
        for (int64_t t = 0; t < ROWS; t++) {
            int64_t i = m.row_id[t];
            const uint32_t *ids = g.ids + g.first[i];
            int64_t col = 0;
            for (int f = 0; f < F; f++) {
                uint32_t n = g.lengths[i * F + f];
                assert_int_equal(m.len[t * F + f], n);
                assert_int_equal(a.len[t * F + f], 1);
                assert_int_equal(a.sparse[t * width + col], ref.sparse[t * F + f]);
                for (uint32_t k = 0; k < mlperf[f]; k++) {
                    assert_int_equal(m.sparse[t * width + col + k], k < n ? ids[k] : MISSING);
                    if (k > 0)
                        assert_int_equal(a.sparse[t * width + col + k], MISSING);
                }
                ids += n;
                col += mlperf[f];
            }
        }
        epoch_free(&m);
        epoch_free(&a);
        epoch_free(&b);
    }
    epoch_free(&ref);
    print_message("mlperf hotness (H = 214): ids at the prefix-sum columns, padding 0xFFFFFFFF, sparse_len exact; "
                  "the order of version 1 one-hot data on 1 and 2 ranks; v1 = v2 for one-hot rows\n");
}

/* The most ids of feature f in rows [0, SHARD_ROWS): shard 0's max_hotness. */
static uint32_t shard0_max(int f)
{
    uint32_t most = 0;
    for (int64_t i = 0; i < SHARD_ROWS; i++)
        most = g.lengths[i * F + f] > most ? g.lengths[i * F + f] : most;
    return most;
}

static void test_capacity_refusal(void **state)
{
    (void)state;
    const char *multi = io_path(scratch, "multi");
    char shard0[4200];
    snprintf(shard0, sizeof shard0, "%s/part-00000.h5", multi);
    uint32_t hot[F];
    memcpy(hot, mlperf, sizeof hot);
    hot[20] = 50; /* C21: MLPerf's 100 */
    /* the reader refuses at open, from the attribute max_hotness */
    erase_row_format_t fmt;
    erase_ctr_rows_init(&fmt, hot);
    erase_reader_options_t o = erase_reader_options_default();
    o.global_batch = 100;
    erase_reader_t *r;
    const char *in[1] = { multi };
    assert_int_equal(erase_reader_open(&fmt, in, 1, &o, &r), ERASE_ERR_FORMAT);
    char want[4400];
    snprintf(want, sizeof want,
             "%s: feature C21 has up to %" PRIu32 " ids a sample (attribute max_hotness), more than its hotness 50 "
             "(a model file's hotness = [26 capacities] or \"mlperf\" raises it)",
             shard0, shard0_max(20));
    assert_string_equal(erase_error_reason(), want);
    /* one-hot capacities: the first feature with lists */
    assert_int_equal(erase_ctr_reader_open(in, 1, &o, &r), ERASE_ERR_FORMAT);
    int f1 = 0;
    while (shard0_max(f1) == 1)
        f1++;
    snprintf(want, sizeof want,
             "%s: feature C%d has up to %" PRIu32 " ids a sample (attribute max_hotness), more than its hotness 1 "
             "(a model file's hotness = [26 capacities] or \"mlperf\" raises it)",
             shard0, f1 + 1, shard0_max(f1));
    assert_string_equal(erase_error_reason(), want);
    /* row by row (a shard whose attribute would lie): the first row over */
    int64_t bad = -1;
    for (int64_t i = 0; i < SHARD_ROWS && bad < 0; i++)
        if (g.lengths[i * F + 20] > 50)
            bad = i;
    erase_ctr_shard_t *sh;
    MUST(erase_ctr_shard_open(shard0, &sh));
    uint32_t *padded = malloc(sizeof *padded * SHARD_ROWS * 214), *len = malloc(sizeof *len * SHARD_ROWS * F);
    assert_int_equal(erase_ctr_shard_read_padded(sh, 0, SHARD_ROWS, hot, 214 - 50, padded, len), ERASE_ERR_FORMAT);
    snprintf(want, sizeof want,
             "%s: row %" PRId64 " feature C21 has %" PRIu32 " ids, more than its hotness 50 (a model file's hotness = [26 capacities] or \"mlperf\" raises it)",
             shard0, bad, g.lengths[bad * F + 20]);
    assert_string_equal(erase_error_reason(), want);
    MUST(erase_ctr_shard_read_padded(sh, 0, SHARD_ROWS, mlperf, 214, padded, len));
    free(padded);
    free(len);
    erase_ctr_shard_close(sh);
    print_message("'%s'\n", want);
}

static void test_convert_lists(void **state)
{
    (void)state;
    const char *tsv = io_path(scratch, "multi.tsv");
    FILE *f = fopen(tsv, "w");
    assert_non_null(f);
    for (int64_t i = 0; i < ROWS; i++) {
        fprintf(f, "%u", g.label[i]);
        for (int j = 0; j < 13; j++)
            fprintf(f, "\t%.0f", g.dense[i * 13 + j]);
        const uint32_t *ids = g.ids + g.first[i];
        for (int c = 0; c < F; c++) {
            uint32_t n = g.lengths[i * F + c];
            fputc('\t', f);
            for (uint32_t k = 0; k < n; k++)
                if (ids[k] != MISSING)
                    fprintf(f, "%s%08" PRIx32, k ? "," : "", ids[k]);
            ids += n;
        }
        fputc('\n', f);
    }
    fclose(f);
    erase_criteo_convert_options_t o = erase_criteo_convert_options_default();
    char out[4096];
    snprintf(out, sizeof out, "%s", io_path(scratch, "converted"));
    o.out_dir = out;
    o.shard_rows = SHARD_ROWS;
    erase_criteo_convert_summary_t s;
    const char *in[1] = { tsv };
    MUST(erase_criteo_convert(in, 1, &o, &s));
    assert_int_equal(s.rows, ROWS);
    for (int k = 0; k < 3; k++) {
        char path[4200];
        snprintf(path, sizeof path, "%s/part-%05d.h5", out, k);
        erase_ctr_shard_t *sh;
        MUST(erase_ctr_shard_open(path, &sh));
        assert_int_equal(erase_ctr_shard_version(sh), 2);
        check_shard_ids(sh, (int64_t)k * SHARD_ROWS, 0, erase_ctr_shard_rows(sh));
        erase_ctr_shard_close(sh);
    }
    /* hotness statistics: max and ids per feature as counted here */
    for (int c = 0; c < F; c++) {
        int64_t total = 0;
        uint32_t most = 0;
        for (int64_t i = 0; i < ROWS; i++) {
            total += g.lengths[i * F + c];
            most = g.lengths[i * F + c] > most ? g.lengths[i * F + c] : most;
        }
        assert_int_equal(s.stats.sparse_ids[c], total);
        assert_int_equal(s.stats.hot_max[c], most);
    }
    print_message("%d multi-hot TSV rows converted to 3 erase-ctr-2 shards, read back exactly\n", ROWS);
}

static int setup(void **state)
{
    (void)state;
    scratch = io_scratch_make("multihot");
    generate();
    return scratch ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    free(g.ids);
    free(g.first);
    io_scratch_remove(scratch);
    return 0;
}

/* Statistics of one id a feature: without lengths (the converter's
 * one-hot path) the same as with lengths of 1, and the values by hand:
 * missing ids counted and left out of the range, NaN dense values too. */
static void test_stats_one_hot(void **state)
{
    (void)state;
    enum { N = 3 };
    uint8_t label[N] = { 1, 0, 1 };
    float dense[N * 13];
    uint32_t ids[N * F], ones[N * F];
    for (int i = 0; i < N * 13; i++)
        dense[i] = (float)(i % 7) - 2.0f;
    dense[13 + 4] = NAN;
    for (int i = 0; i < N * F; i++) {
        ids[i] = 0x1000u * (uint32_t)(i % F) + (uint32_t)(i / F);
        ones[i] = 1;
    }
    ids[0] = MISSING;                 /* C1 row 0 */
    ids[F + 2] = ids[2 * F + 2] = MISSING; /* C3 rows 1, 2 */
    ids[2] = 0xFFFFFFFEu;             /* C3 row 0: the largest id present */
    erase_ctr_stats_t a, b;
    erase_ctr_stats_init(&a);
    erase_ctr_stats_init(&b);
    erase_ctr_stats_add_ids(&a, N, label, dense, NULL, ids);
    erase_ctr_stats_add_ids(&b, N, label, dense, ones, ids);
    assert_memory_equal(&a, &b, sizeof a);
    assert_int_equal(a.rows, 3);
    assert_int_equal(a.clicks, 2);
    assert_int_equal(a.dense_missing[4], 1);
    assert_int_equal(a.sparse_missing[0], 1);
    assert_int_equal(a.missing_rows[0], 1);
    assert_int_equal(a.sparse_min[0], 1);
    assert_int_equal(a.sparse_max[0], 2);
    assert_int_equal(a.sparse_missing[2], 2);
    assert_int_equal(a.sparse_min[2], 0xFFFFFFFEu);
    assert_int_equal(a.sparse_max[2], 0xFFFFFFFEu);
    assert_int_equal(a.sparse_ids[5], 3);
    assert_int_equal(a.hot_max[5], 1);
    assert_int_equal(a.sparse_min[5], 0x5000);
    assert_int_equal(a.sparse_max[5], 0x5002);
    print_message("one-hot statistics: without lengths equal with lengths of 1, and by hand\n");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse_lists),
        cmocka_unit_test(test_stats_one_hot),
        cmocka_unit_test(test_write_read_ids),
        cmocka_unit_test(test_reader_layout),
        cmocka_unit_test(test_capacity_refusal),
        cmocka_unit_test(test_convert_lists),
    };
    return cmocka_run_group_tests_name("multi-hot CTR data", tests, setup, teardown);
}
