/*
 * The data reader with the classification row format (io/cls_reader.h) on
 * generated rows (700 rows of 5 features, 10 classes) written by
 * io/cls_shard_write into 3 shards of 250, 250 and 200 rows: the rows of
 * every ranks' parts over two epochs, concatenated, are the 1-rank global
 * sequence for D = 1, 2, 3 (same rows, same order, same bytes); the order
 * does not depend on prefetch (0 vs 2); a cursor taken mid-epoch and
 * restored by seek continues exactly; the split by fraction (the last
 * round(f * 700) rows in file order are the eval part); every delivered
 * features row and class equals the shard's row (bitwise); a shard with
 * another feature or class count is named in the error with both values;
 * the typed views refuse a reader of another format.
 */
#include <inttypes.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "io/cls_reader.h"
#include "io/cls_shard_write.h"
#include "io/ctr_reader.h"
#include "tests/io/io_util.h"

#define ROWS 700
#define F 5
#define C 10
#define G 64

static char *scratch;
static const char *data; /* ROWS rows in shards of 250 */
static float features[ROWS * F];
static uint8_t label[ROWS];

/* Write `rows` generated rows of `nf` features and `nc` classes to `dir`. */
static void write_rows(const char *dir, int64_t rows, int64_t nf, int nc, int64_t shard_rows)
{
    erase_cls_write_options_t w = erase_cls_write_options_default();
    w.chunk_rows = 50;
    erase_cls_dataset_writer_t *wr;
    MUST(erase_cls_dataset_writer_open(dir, nf, nc, shard_rows, &w, "generated", 0, &wr));
    float *x = malloc(sizeof(float) * (size_t)(rows * nf));
    uint8_t *y = malloc((size_t)rows);
    assert_true(x && y);
    for (int64_t i = 0; i < rows; i++) {
        for (int64_t j = 0; j < nf; j++)
            x[i * nf + j] = (float)i + (float)j / 8.0f - 0.3f * (float)(i % 7); /* distinct per row */
        y[i] = (uint8_t)((i * 7 + 3) % nc);
    }
    MUST(erase_cls_dataset_writer_append(wr, rows, x, y));
    MUST(erase_cls_dataset_writer_commit(wr));
    erase_cls_dataset_writer_free(wr);
    if (nf == F && rows == ROWS) {
        memcpy(features, x, sizeof features);
        memcpy(label, y, sizeof label);
    }
    free(x);
    free(y);
}

static erase_reader_options_t opts(int rank, int size)
{
    erase_reader_options_t o = erase_reader_options_default();
    o.global_batch = G;
    o.dp_rank = rank;
    o.dp_size = size;
    o.seed = 3;
    o.block_rows = 50;
    o.drop_last = 0;
    return o;
}

static erase_reader_t *open_reader(const char *input, const erase_reader_options_t *o)
{
    erase_reader_t *r;
    const char *in[1] = { input };
    MUST(erase_cls_reader_open(in, 1, o, &r));
    return r;
}

/* The global sequence of `epochs` epochs on D ranks (parts concatenated
 * per step): row ids, features, classes; returns the rows. */
typedef struct {
    int64_t n;
    int64_t *id;
    float *x;
    int32_t *y;
} seq_t;

static void seq_free(seq_t *s)
{
    free(s->id);
    free(s->x);
    free(s->y);
}

static void seq_add(seq_t *s, const erase_cls_batch_t *b)
{
    memcpy(s->id + s->n, b->row_id, sizeof(int64_t) * (size_t)b->size);
    memcpy(s->x + s->n * F, b->features, sizeof(float) * (size_t)(b->size * F));
    memcpy(s->y + s->n, b->classes, sizeof(int32_t) * (size_t)b->size);
    s->n += b->size;
}

static seq_t run(int D, int prefetch, const erase_reader_options_t *base, int epochs)
{
    seq_t s = { 0, malloc(sizeof(int64_t) * ROWS * epochs), malloc(sizeof(float) * ROWS * F * epochs),
                malloc(sizeof(int32_t) * ROWS * epochs) };
    assert_true(s.id && s.x && s.y);
    erase_reader_t *rd[4];
    for (int r = 0; r < D; r++) {
        erase_reader_options_t o = *base;
        o.dp_rank = r;
        o.dp_size = D;
        o.prefetch = prefetch;
        rd[r] = open_reader(data, &o);
    }
    for (int e = 0; e < epochs;) {
        int end = -1;
        for (int r = 0; r < D; r++) {
            erase_cls_batch_t b;
            MUST(erase_cls_reader_next(rd[r], &b));
            assert_int_equal(b.features_per_row, F);
            if (end >= 0 && end != b.end_of_epoch)
                fail_msg("D=%d: rank %d disagrees on the end of epoch %d", D, r, e);
            end = b.end_of_epoch;
            seq_add(&s, &b);
        }
        e += end;
    }
    for (int r = 0; r < D; r++)
        erase_reader_close(rd[r]);
    return s;
}

static void expect_same(const seq_t *a, const seq_t *b, const char *what)
{
    assert_int_equal(a->n, b->n);
    if (memcmp(a->id, b->id, sizeof(int64_t) * (size_t)a->n) ||
        memcmp(a->x, b->x, sizeof(float) * (size_t)(a->n * F)) || memcmp(a->y, b->y, sizeof(int32_t) * (size_t)a->n))
        fail_msg("%s: the sequences differ", what);
}

/* Every delivered row equals the stored row of its id, bitwise. */
static void expect_stored(const seq_t *s)
{
    for (int64_t i = 0; i < s->n; i++) {
        int64_t id = s->id[i];
        assert_true(id >= 0 && id < ROWS);
        if (memcmp(s->x + i * F, features + id * F, sizeof(float) * F) != 0 || s->y[i] != label[id])
            fail_msg("position %lld: row %lld differs from the shard's row", (long long)i, (long long)id);
    }
}

static void test_ranks(void **state)
{
    (void)state;
    erase_reader_options_t o = opts(0, 1);
    for (int drop = 0; drop <= 1; drop++) {
        o.drop_last = drop;
        seq_t ref = run(1, 2, &o, 2);
        assert_int_equal(ref.n, drop ? 2 * (ROWS / G) * G : 2 * ROWS);
        expect_stored(&ref);
        int64_t moved = 0;
        for (int64_t i = 0; i < ref.n / 2; i++)
            moved += ref.id[i] != i;
        assert_true(moved > ROWS / 2); /* shuffled */
        for (int D = 2; D <= 3; D++) {
            seq_t s = run(D, 2, &o, 2);
            expect_same(&ref, &s, drop ? "D ranks, drop_last" : "D ranks, last batch kept");
            seq_free(&s);
        }
        print_message("drop_last %d: %lld rows over 2 epochs; the parts of 2 and 3 ranks concatenated are the "
                      "1-rank sequence, every row the shard's (%lld positions moved by the shuffle)\n",
                      drop, (long long)ref.n, (long long)moved);
        seq_free(&ref);
    }
}

static void test_prefetch(void **state)
{
    (void)state;
    erase_reader_options_t o = opts(0, 1);
    seq_t a = run(1, 0, &o, 2), b = run(1, 2, &o, 2), c = run(3, 0, &o, 2);
    expect_same(&a, &b, "prefetch 0 vs 2");
    expect_same(&a, &c, "1 rank prefetch 2 vs 3 ranks prefetch 0");
    o.shuffle = 0;
    seq_t d = run(1, 0, &o, 1);
    for (int64_t i = 0; i < d.n; i++)
        assert_int_equal(d.id[i], i);
    expect_stored(&d);
    print_message("prefetch 0 and 2 deliver the same %lld rows; unshuffled, the rows come in file order\n",
                  (long long)a.n);
    seq_free(&a);
    seq_free(&b);
    seq_free(&c);
    seq_free(&d);
}

static void test_seek(void **state)
{
    (void)state;
    erase_reader_options_t o = opts(0, 1);
    o.drop_last = 1;
    erase_reader_t *a = open_reader(data, &o);
    erase_cls_batch_t b;
    for (int k = 0; k < 14; k++) /* into epoch 1: 10 steps + the end of epoch 0 + 3 */
        MUST(erase_cls_reader_next(a, &b));
    erase_reader_cursor_t cur = erase_reader_cursor(a);
    assert_int_equal(cur.epoch, 1);
    assert_int_equal(cur.samples, 3 * G);
    o.prefetch = 0;
    erase_reader_t *c = open_reader(data, &o);
    MUST(erase_reader_seek(c, cur));
    int64_t rows = 0;
    for (int k = 0; k < 12; k++) {
        erase_cls_batch_t x, y;
        MUST(erase_cls_reader_next(a, &x));
        MUST(erase_cls_reader_next(c, &y));
        assert_int_equal(x.end_of_epoch, y.end_of_epoch);
        assert_int_equal(x.epoch, y.epoch);
        assert_int_equal(x.step, y.step);
        assert_int_equal(x.size, y.size);
        assert_memory_equal(x.row_id, y.row_id, sizeof(int64_t) * (size_t)x.size);
        assert_memory_equal(x.features, y.features, sizeof(float) * (size_t)(x.size * F));
        assert_memory_equal(x.classes, y.classes, sizeof(int32_t) * (size_t)x.size);
        rows += x.size;
    }
    assert_int_equal(erase_reader_cursor(a).epoch, erase_reader_cursor(c).epoch);
    assert_int_equal(erase_reader_cursor(a).samples, erase_reader_cursor(c).samples);
    erase_reader_close(a);
    erase_reader_close(c);
    print_message("seek to (epoch 1, %d samples): the next 12 items (%lld rows, "
                  "across the end of epoch 1) equal those of the reader that got there\n",
                  3 * G, (long long)rows);
}

static void test_split(void **state)
{
    (void)state;
    const int64_t eval_rows = 175; /* round(0.25 * 700) */
    int64_t *part = calloc(ROWS, sizeof *part);
    assert_true(part != NULL);
    for (int p = ERASE_READER_PART_TRAIN; p <= ERASE_READER_PART_EVAL; p++) {
        erase_reader_options_t o = opts(0, 1);
        o.part = (erase_reader_part_t)p;
        o.eval_fraction = 0.25;
        erase_reader_t *r = open_reader(data, &o);
        assert_int_equal(erase_reader_info(r).samples, p == ERASE_READER_PART_EVAL ? eval_rows : ROWS - eval_rows);
        for (;;) {
            erase_cls_batch_t b;
            MUST(erase_cls_reader_next(r, &b));
            if (b.end_of_epoch)
                break;
            for (int64_t i = 0; i < b.size; i++) {
                assert_int_equal(part[b.row_id[i]], 0);
                part[b.row_id[i]] = p;
            }
        }
        erase_reader_close(r);
    }
    for (int64_t i = 0; i < ROWS; i++)
        assert_int_equal(part[i], i < ROWS - eval_rows ? ERASE_READER_PART_TRAIN : ERASE_READER_PART_EVAL);
    free(part);
    print_message("eval_fraction 0.25: rows 0..%lld train, the last %lld eval, each once per epoch\n",
                  (long long)(ROWS - eval_rows - 1), (long long)eval_rows);
}

static void test_info(void **state)
{
    (void)state;
    erase_reader_options_t o = opts(0, 1);
    erase_reader_t *r = open_reader(data, &o);
    erase_reader_info_t info = erase_reader_info(r);
    assert_int_equal(info.shards, 3);
    assert_int_equal(info.total_rows, ROWS);
    assert_int_equal(info.chunk_rows, 50);
    assert_int_equal(info.layout.nfields, 2);
    assert_int_equal(info.layout.field[ERASE_CLS_FIELD_FEATURES].width, F);
    assert_int_equal(info.layout.field[ERASE_CLS_FIELD_CLASSES].elem_bytes, 4);
    int64_t nf;
    int nc;
    MUST(erase_cls_reader_shape(r, &nf, &nc));
    assert_int_equal(nf, F);
    assert_int_equal(nc, C);
    /* the CTR views refuse it */
    erase_ctr_batch_t b;
    assert_int_equal(erase_ctr_reader_next(r, &b), ERASE_ERR_INVALID);
    assert_string_equal(erase_error_reason(), "the data is classify data, not ctr");
    uint32_t rows[26] = { 0 };
    assert_int_equal(erase_ctr_reader_check_tables(r, 13, 26, rows), ERASE_ERR_INVALID);
    erase_reader_close(r);
}

/* A second dataset with other F or C after `data`: the first of its shards
 * is named with both values. */
static void expect_mismatch(const char *tag, int64_t nf, int nc, const char *what, int64_t got, int64_t want)
{
    const char *other = io_path(scratch, tag);
    write_rows(other, 100, nf, nc, 100);
    const char *in[2] = { data, other };
    erase_reader_options_t o = opts(0, 1);
    erase_reader_t *r = NULL;
    assert_int_equal(erase_cls_reader_open(in, 2, &o, &r), ERASE_ERR_FORMAT);
    assert_null(r);
    char want_msg[4096];
    snprintf(want_msg, sizeof want_msg,
             "%s/part-00000.h5: %" PRId64 " %s, the first shard %s/part-00000.h5 has %" PRId64
             ": every shard must have the same",
             other, got, what, data, want);
    assert_string_equal(erase_error_reason(), want_msg);
    print_message("%s\n", want_msg);
}

static void test_mismatch(void **state)
{
    (void)state;
    expect_mismatch("f6", F + 1, C, "features", F + 1, F);
    expect_mismatch("c3", F, 3, "classes", 3, C);
}

static int setup(void **state)
{
    (void)state;
    scratch = io_scratch_make("cls-reader");
    if (!scratch)
        return -1;
    data = strdup(io_path(scratch, "data"));
    write_rows(data, ROWS, F, C, 250);
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
        cmocka_unit_test(test_ranks),
        cmocka_unit_test(test_prefetch),
        cmocka_unit_test(test_seek),
        cmocka_unit_test(test_split),
        cmocka_unit_test(test_info),
        cmocka_unit_test(test_mismatch),
    };
    return cmocka_run_group_tests_name("classification reader", tests, setup, teardown);
}
