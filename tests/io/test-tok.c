/*
 * Token shards (io/tok_shard.h), their writer, the token-window row format
 * of the reader (io/tok_reader.h) and the converters (io/tok_convert.h).
 *
 * Data: 2,500 generated tokens (vocab 300) in shards of 1,000, 1,000 and
 * 500 tokens; windows of T+1 = 9 tokens at stride 8: 124 + 124 + 62 = 310
 * windows. Checked: the shard's attributes and tokens; every window the
 * reader delivers (unshuffled: in file order) is tokens [k*T, k*T + T + 1)
 * of its shard; shuffled, the parts of 2 and 3 ranks concatenated are the
 * 1-rank sequence over 2 epochs; a cursor taken mid-epoch and restored
 * continues exactly; the eval part is the same windows in the same order
 * on 1 and 2 ranks; a classification shard and a model with a smaller
 * vocab are refused with exact messages. The converters: text split
 * (bytes of train and eval, the `bytes` attribute), llm.c and raw token
 * files imported, and each broken file refused with its message and no
 * dataset left behind.
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
#include <sys/stat.h>

#include <cmocka.h>

#include "io/cls_shard_write.h"
#include "io/tok_convert.h"
#include "io/tok_reader.h"
#include "io/tok_shard_write.h"
#include "tests/io/io_util.h"

#define N 2500
#define V 300
#define SHARD 1000
#define T 8
#define WINDOWS (2 * ((SHARD - 1) / T) + (N - 2 * SHARD - 1) / T)
#define G 32

static char *scratch;
static const char *data;
static uint16_t tokens[N];
static const int context = T;
static erase_row_format_t fmt;

static erase_reader_options_t opts(int rank, int size)
{
    erase_reader_options_t o = erase_reader_options_default();
    o.global_batch = G;
    o.dp_rank = rank;
    o.dp_size = size;
    o.seed = 11;
    o.block_rows = 20;
    o.drop_last = 0;
    return o;
}

static erase_reader_t *open_reader(const erase_reader_options_t *o)
{
    erase_reader_t *r;
    const char *in[1] = { data };
    MUST(erase_reader_open(&fmt, in, 1, o, &r));
    return r;
}

/* The first token of window `id` (row id over all shards, file order) in `tokens`. */
static int64_t window_start(int64_t id)
{
    const int64_t per = (SHARD - 1) / T;
    int64_t shard = id / per < 2 ? id / per : 2;
    return shard * SHARD + (id - shard * per) * T;
}

static void test_shard(void **state)
{
    (void)state;
    erase_tok_shard_t *s;
    MUST(erase_tok_shard_open(io_path(data, "part-00002.h5"), &s));
    assert_int_equal(erase_tok_shard_count(s), N - 2 * SHARD);
    assert_int_equal(erase_tok_shard_vocab(s), V);
    assert_int_equal(erase_tok_shard_bytes(s), -1);
    assert_int_equal(erase_tok_shard_chunk_tokens(s), 100);
    assert_true(erase_tok_shard_checksummed(s));
    char text[64];
    erase_tok_shard_attr_text(s, "source", text, sizeof text);
    assert_string_equal(text, "generated");
    uint16_t got[N - 2 * SHARD];
    MUST(erase_tok_shard_read(s, 0, N - 2 * SHARD, got));
    assert_memory_equal(got, tokens + 2 * SHARD, sizeof got);
    erase_tok_shard_close(s);
    assert_true(erase_tok_shard_probe(io_path(data, "part-00000.h5")));
    print_message("shard 2: 500 tokens of vocab 300 as written, 100-token chunks with checksums\n");
}

/* Unshuffled: every window in file order, each the tokens of its shard. */
static void test_windows(void **state)
{
    (void)state;
    erase_reader_options_t o = opts(0, 1);
    o.shuffle = 0;
    erase_reader_t *r = open_reader(&o);
    erase_reader_info_t info = erase_reader_info(r);
    assert_int_equal(info.total_rows, WINDOWS);
    assert_int_equal(info.layout.field[ERASE_TOK_FIELD_TOKENS].width, T + 1);
    int64_t ctx, vocab;
    double bpt;
    MUST(erase_tok_reader_shape(r, &ctx, &vocab, &bpt));
    assert_int_equal(ctx, T);
    assert_int_equal(vocab, V);
    assert_true(isnan(bpt));
    int64_t seen = 0;
    for (;;) {
        erase_reader_batch_t b;
        MUST(erase_reader_next(r, &b));
        if (b.end_of_epoch)
            break;
        const int32_t *w = b.field[ERASE_TOK_FIELD_TOKENS];
        for (int64_t i = 0; i < b.size; i++, seen++) {
            assert_int_equal(b.row_id[i], seen);
            int64_t start = window_start(seen);
            for (int j = 0; j <= T; j++)
                if (w[i * (T + 1) + j] != tokens[start + j])
                    fail_msg("window %lld token %d: %d, expected %d", (long long)seen, j, w[i * (T + 1) + j],
                             tokens[start + j]);
        }
    }
    assert_int_equal(seen, WINDOWS);
    erase_reader_close(r);
    print_message("%d windows of %d tokens at stride %d (124 + 124 + 62 of shards of 1000, 1000, 500 tokens), "
                  "each its shard's tokens\n",
                  WINDOWS, T + 1, T);
}

/* The global sequence (row ids and tokens, ranks' parts concatenated) of 2 epochs on D ranks. */
static int64_t run(int D, const erase_reader_options_t *base, int64_t *ids, int32_t *toks)
{
    erase_reader_t *rd[3];
    for (int r = 0; r < D; r++) {
        erase_reader_options_t o = *base;
        o.dp_rank = r;
        o.dp_size = D;
        rd[r] = open_reader(&o);
    }
    int64_t n = 0;
    for (int e = 0; e < 2;) {
        int end = 0;
        for (int r = 0; r < D; r++) {
            erase_reader_batch_t b;
            MUST(erase_reader_next(rd[r], &b));
            end = b.end_of_epoch;
            memcpy(ids + n, b.row_id, sizeof(int64_t) * (size_t)b.size);
            memcpy(toks + n * (T + 1), b.field[0], sizeof(int32_t) * (size_t)(b.size * (T + 1)));
            n += b.size;
        }
        e += end;
    }
    for (int r = 0; r < D; r++)
        erase_reader_close(rd[r]);
    return n;
}

static void test_ranks(void **state)
{
    (void)state;
    static int64_t id1[2 * WINDOWS], idD[2 * WINDOWS];
    static int32_t tk1[2 * WINDOWS * (T + 1)], tkD[2 * WINDOWS * (T + 1)];
    erase_reader_options_t o = opts(0, 1);
    int64_t n = run(1, &o, id1, tk1);
    assert_int_equal(n, 2 * WINDOWS);
    int64_t moved = 0;
    for (int64_t i = 0; i < WINDOWS; i++)
        moved += id1[i] != i;
    assert_true(moved > WINDOWS / 2);
    for (int D = 2; D <= 3; D++) {
        assert_int_equal(run(D, &o, idD, tkD), n);
        assert_memory_equal(id1, idD, sizeof(int64_t) * (size_t)n);
        assert_memory_equal(tk1, tkD, sizeof(int32_t) * (size_t)(n * (T + 1)));
    }
    /* the eval part: the last windows in file order, unshuffled, alike on 1 and 2 ranks */
    o.part = ERASE_READER_PART_EVAL;
    o.eval_fraction = 0.1;
    o.shuffle = 0;
    int64_t e1 = run(1, &o, id1, tk1), e2 = run(2, &o, idD, tkD);
    assert_int_equal(e1, 2 * 31); /* round(0.1 * 310) per epoch */
    assert_int_equal(e2, e1);
    assert_memory_equal(id1, idD, sizeof(int64_t) * (size_t)e1);
    for (int64_t i = 0; i < 31; i++)
        assert_int_equal(id1[i], WINDOWS - 31 + i);
    print_message("shuffled: 2 epochs of %d windows (%lld moved); the parts of 2 and 3 ranks concatenated are "
                  "the 1-rank sequence; eval: windows %d..%d in order on 1 and 2 ranks\n",
                  WINDOWS, (long long)moved, WINDOWS - 31, WINDOWS - 1);
}

static void test_seek(void **state)
{
    (void)state;
    erase_reader_options_t o = opts(0, 1);
    o.drop_last = 1;
    erase_reader_t *a = open_reader(&o);
    erase_reader_batch_t b;
    for (int k = 0; k < 12; k++) /* 9 steps + the end of epoch 0 + 2 of epoch 1 */
        MUST(erase_reader_next(a, &b));
    erase_reader_cursor_t cur = erase_reader_cursor(a);
    assert_int_equal(cur.epoch, 1);
    assert_int_equal(cur.samples, 2 * G);
    o.prefetch = 0;
    erase_reader_t *c = open_reader(&o);
    MUST(erase_reader_seek(c, cur));
    for (int k = 0; k < 10; k++) {
        erase_reader_batch_t x, y;
        MUST(erase_reader_next(a, &x));
        MUST(erase_reader_next(c, &y));
        assert_int_equal(x.end_of_epoch, y.end_of_epoch);
        assert_int_equal(x.size, y.size);
        assert_memory_equal(x.row_id, y.row_id, sizeof(int64_t) * (size_t)x.size);
        assert_memory_equal(x.field[0], y.field[0], sizeof(int32_t) * (size_t)(x.size * (T + 1)));
    }
    erase_reader_close(a);
    erase_reader_close(c);
    print_message("seek to (epoch 1, %d windows): the next 10 items equal those of the reader that got there\n",
                  2 * G);
}

static void test_refused(void **state)
{
    (void)state;
    /* a classification shard */
    const char *cls = io_path(scratch, "cls");
    erase_cls_dataset_writer_t *cw;
    MUST(erase_cls_dataset_writer_open(cls, 2, 2, 10, NULL, "generated", 0, &cw));
    float x[20] = { 0 };
    uint8_t y[10] = { 0 };
    MUST(erase_cls_dataset_writer_append(cw, 10, x, y));
    MUST(erase_cls_dataset_writer_commit(cw));
    erase_cls_dataset_writer_free(cw);
    erase_reader_options_t o = opts(0, 1);
    const char *in[1] = { cls };
    erase_reader_t *r = NULL;
    assert_int_equal(erase_reader_open(&fmt, in, 1, &o, &r), ERASE_ERR_FORMAT);
    char want[4200];
    snprintf(want, sizeof want, "%s/part-00000.h5: attribute format: expected \"erase-tok-1\", got \"erase-cls-1\"",
             cls);
    assert_string_equal(erase_error_reason(), want);
    print_message("%s\n", want);
    /* a model with a smaller vocab, or another context */
    r = open_reader(&o);
    MUST(erase_tok_reader_check(r, V, T));
    assert_int_equal(erase_tok_reader_check(r, 256, T), ERASE_ERR_INVALID);
    assert_string_equal(erase_error_reason(), "the data's vocab 300 is larger than the model's 256 (its embedding "
                                              "has 256 rows)");
    print_message("%s\n", erase_error_reason());
    assert_int_equal(erase_tok_reader_check(r, V, 16), ERASE_ERR_INVALID);
    assert_string_equal(erase_error_reason(), "the data was opened with windows of 9 tokens, the model's context is 16");
    erase_reader_close(r);
}

/* Write `bytes` bytes to a file. */
static void write_file(const char *path, const void *bytes, size_t n)
{
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(bytes, 1, n, f), n);
    assert_int_equal(fclose(f), 0);
}

static void test_text(void **state)
{
    (void)state;
    char text[1000];
    for (int i = 0; i < 1000; i++)
        text[i] = (char)(32 + (i * 7) % 95);
    const char *a = strdup(io_path(scratch, "a.txt")), *b = strdup(io_path(scratch, "b.txt"));
    write_file(a, text, 600);
    write_file(b, text + 600, 400);
    erase_tok_convert_options_t o = erase_tok_convert_options_default();
    o.out_dir = strdup(io_path(scratch, "text"));
    o.eval_fraction = 0.25;
    o.shard_tokens = 500;
    const char *files[2] = { a, b };
    erase_tok_convert_summary_t s;
    MUST(erase_tok_convert_text(files, 2, &o, &s));
    assert_int_equal(s.tokens, 1000);
    assert_int_equal(s.train_tokens, 750);
    assert_int_equal(s.eval_tokens, 250);
    assert_int_equal(s.train_shards, 2);
    assert_int_equal(s.eval_shards, 1);
    erase_tok_shard_t *sh;
    MUST(erase_tok_shard_open(io_path(o.out_dir, "train/part-00001.h5"), &sh));
    assert_int_equal(erase_tok_shard_count(sh), 250);
    assert_int_equal(erase_tok_shard_bytes(sh), 250);
    assert_int_equal(erase_tok_shard_vocab(sh), 256);
    char src[4200], want[8400];
    erase_tok_shard_attr_text(sh, "source", src, sizeof src);
    snprintf(want, sizeof want, "%s\n%s", a, b); /* bytes 500..749: the end of a, the start of b */
    assert_string_equal(src, want);
    uint16_t got[250];
    MUST(erase_tok_shard_read(sh, 0, 250, got));
    for (int i = 0; i < 250; i++)
        assert_int_equal(got[i], (uint8_t)text[500 + i]);
    erase_tok_shard_close(sh);
    MUST(erase_tok_shard_open(io_path(o.out_dir, "eval/part-00000.h5"), &sh));
    MUST(erase_tok_shard_read(sh, 0, 250, got));
    for (int i = 0; i < 250; i++)
        assert_int_equal(got[i], (uint8_t)text[750 + i]);
    erase_tok_shard_close(sh);
    /* byte-level data: one byte per token */
    erase_reader_options_t ro = erase_reader_options_default();
    ro.global_batch = 4;
    const char *in[1] = { io_path(o.out_dir, "train") };
    erase_reader_t *r;
    MUST(erase_reader_open(&fmt, in, 1, &ro, &r));
    int64_t ctx, vocab;
    double bpt;
    MUST(erase_tok_reader_shape(r, &ctx, &vocab, &bpt));
    assert_true(bpt == 1.0);
    erase_reader_close(r);
    print_message("text: 600 + 400 bytes -> train 750 tokens (2 shards), eval the last 250; bytes = count; "
                  "1 byte per token\n");
    free((char *)o.out_dir);
    free((char *)a);
    free((char *)b);
}

/* A file in llm.c's format: header (magic, version, count) then `n` tokens. */
static void write_llmc(const char *path, int32_t version, int32_t count, const uint16_t *t, int64_t n)
{
    size_t bytes = 1024 + 2 * (size_t)n;
    uint8_t *buf = calloc(1, bytes);
    int32_t h[3] = { ERASE_LLMC_MAGIC, version, count };
    memcpy(buf, h, sizeof h);
    memcpy(buf + 1024, t, 2 * (size_t)n);
    write_file(path, buf, bytes);
    free(buf);
}

/* erase_tok_convert_tokens of one file (raw: headerless files allowed, --raw)
 * fails with `want` (%s: the file) and leaves no OUT. */
static void expect_refused(const char *file, int64_t vocab, int raw, const char *want_fmt)
{
    erase_tok_convert_options_t o = erase_tok_convert_options_default();
    o.out_dir = strdup(io_path(scratch, "refused"));
    o.vocab = vocab;
    o.raw = raw;
    const char *files[1] = { file };
    assert_int_equal(erase_tok_convert_tokens(files, 1, &o, NULL), ERASE_ERR_FORMAT);
    char want[8400];
    snprintf(want, sizeof want, want_fmt, file);
    assert_string_equal(erase_error_reason(), want);
    struct stat sb;
    assert_int_not_equal(stat(o.out_dir, &sb), 0);
    print_message("%s\n", want);
    free((char *)o.out_dir);
}

static void test_tokens(void **state)
{
    (void)state;
    const char *llmc = strdup(io_path(scratch, "a.bin")), *raw = strdup(io_path(scratch, "b.bin"));
    write_llmc(llmc, 1, 1000, tokens, 1000);
    write_file(raw, tokens + 1000, 2 * 600);
    erase_tok_convert_options_t o = erase_tok_convert_options_default();
    o.out_dir = strdup(io_path(scratch, "tok"));
    o.vocab = V;
    o.raw = 1;
    const char *files[2] = { llmc, raw };
    erase_tok_convert_summary_t s;
    MUST(erase_tok_convert_tokens(files, 2, &o, &s));
    assert_int_equal(s.llmc_files, 1);
    assert_int_equal(s.raw_files, 1);
    assert_int_equal(s.train_tokens, 1600);
    erase_tok_shard_t *sh;
    MUST(erase_tok_shard_open(io_path(o.out_dir, "part-00000.h5"), &sh));
    assert_int_equal(erase_tok_shard_bytes(sh), -1);
    uint16_t got[1600];
    MUST(erase_tok_shard_read(sh, 0, 1600, got));
    assert_memory_equal(got, tokens, sizeof got);
    erase_tok_shard_close(sh);
    print_message("tokens: llm.c (1000) + raw (600) -> 1600 tokens as written, no bytes attribute\n");
    free((char *)o.out_dir);

    const char *bad = strdup(io_path(scratch, "bad.bin"));
    write_llmc(bad, 1, 1000, tokens, 999);
    expect_refused(bad, V, 0, "%s: the header says 1000 tokens, the file holds 999");
    write_llmc(bad, 2, 10, tokens, 10);
    expect_refused(bad, V, 0, "%s: llm.c header version 2, expected 1");
    write_file(bad, tokens, 21);
    expect_refused(bad, V, 1,
                   "%s: 21 bytes: a raw token file (no llm.c header) holds uint16 tokens, an even number of bytes");
    write_llmc(bad, 1, 100, tokens, 100);
    int at = -1;
    for (int i = 0; i < 100 && at < 0; i++)
        at = tokens[i] >= 256 ? i : -1;
    assert_true(at >= 0);
    char want[200];
    snprintf(want, sizeof want, "%%s: token %d is %u, expected < 256 (the vocab; --vocab V)", at, tokens[at]);
    expect_refused(bad, 256, 0, want);
    /* without raw a file with no magic is refused: a near miss of it is a
     * damaged header, text is text, anything else needs --raw */
    uint8_t damaged[1024 + 20] = { 0 };
    int32_t h[3] = { ERASE_LLMC_MAGIC + 1, 1, 10 }; /* one bit off: 20240521 */
    memcpy(damaged, h, sizeof h);
    memcpy(damaged + 1024, tokens, 20);
    write_file(bad, damaged, sizeof damaged);
    expect_refused(bad, V, 0, "%s: llm.c magic 20240520 expected, got 20240521: damaged llm.c header?");
    write_file(bad, "First Citizen:\nBefore we proceed any further, hear me speak.\n", 60);
    expect_refused(bad, V, 0, "%s: no llm.c header (magic 20240520) and the bytes look like text: erase-convert "
                              "text converts text (--raw imports it as uint16 tokens anyway)");
    write_file(bad, tokens, 20);
    expect_refused(bad, V, 0, "%s: no llm.c header (magic 20240520): a headerless file of uint16 tokens (nanoGPT's "
                              ".bin) needs --raw");
    free((char *)bad);
    free((char *)llmc);
    free((char *)raw);
}

static int setup(void **state)
{
    (void)state;
    erase_tok_rows_init(&fmt, &context);
    scratch = io_scratch_make("tok");
    if (!scratch)
        return -1;
    data = strdup(io_path(scratch, "data"));
    for (int i = 0; i < N; i++)
        tokens[i] = (uint16_t)((i * 37 + i / 7) % V);
    erase_tok_write_options_t w = erase_tok_write_options_default();
    w.chunk_tokens = 100;
    erase_tok_dataset_writer_t *wr;
    MUST(erase_tok_dataset_writer_open(data, V, SHARD, &w, 0, &wr));
    MUST(erase_tok_dataset_writer_append(wr, N, tokens, "generated"));
    MUST(erase_tok_dataset_writer_commit(wr));
    erase_tok_dataset_writer_free(wr);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    free((char *)data);
    io_scratch_remove(scratch);
    return 0;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_shard),  cmocka_unit_test(test_windows), cmocka_unit_test(test_ranks),
        cmocka_unit_test(test_seek),   cmocka_unit_test(test_refused), cmocka_unit_test(test_text),
        cmocka_unit_test(test_tokens),
    };
    return cmocka_run_group_tests_name("token shards and windows", tests, setup, teardown);
}
