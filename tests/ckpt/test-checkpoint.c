/*
 * Checkpoint files (io/checkpoint.h) without MPI: what is written reads
 * back bitwise with its meta data; the directory keeps the K newest and
 * never touches newer ones, stale temporary files go, the candidates are
 * newest first whatever `latest` names; a truncated file, a flipped bit, a missing dataset
 * and a missing `format` are each refused with a message naming the file
 * and what is wrong; an attribute of /meta or /optim out of range is refused
 * naming it, also when its checksum was fixed up, and one changed in range
 * fails the attributes' checksum; loading into a different model lists the
 * differences; a pipeline checkpoint's stage files: stage 0's published
 * last and only on the gate's word, each needed to open it, pruned with it;
 * one file written at any path (erase_ckpt_write_file) reads back, an
 * existing one is kept unless overwritten.
 */
#include <fcntl.h>
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

#include "io/checkpoint.h"
#include "io/h5_util.h"
#include "tests/ckpt/ckpt_util.h"
#include "tests/io/io_util.h"

static char *scratch;

/* A small state: an embedding table, a weight, a bias; two optimizer slots. */
typedef struct {
    float emb[7 * 3], w[2 * 5], b[2], acc[7], m[2 * 5];
    erase_ckpt_tensor_t params[3], optim[2];
    erase_ckpt_rank_t ranks[2];
    erase_ckpt_meta_t meta;
} state_t;

static void make_state(state_t *s, int64_t step, float salt)
{
    memset(s, 0, sizeof *s);
    for (int i = 0; i < 21; i++)
        s->emb[i] = salt + 0.25f * (float)i - 1.0f / 3.0f;
    for (int i = 0; i < 10; i++)
        s->w[i] = -salt * (float)i, s->m[i] = 1e-7f * (float)i;
    s->b[0] = -0.0f; /* a negative zero must survive bitwise */
    s->b[1] = NAN;   /* so must a NaN */
    for (int i = 0; i < 7; i++)
        s->acc[i] = (float)i * 0.5f;
    erase_ckpt_tensor_t p[3] = { { .name = "input/emb/0", .ndim = 2, .dims = { 7, 3 }, .data = s->emb, .meaning = "table" },
                                 { .name = "sub1/fc0/weight", .ndim = 2, .dims = { 2, 5 }, .data = s->w },
                                 { .name = "sub1/fc0/bias", .ndim = 1, .dims = { 2, 1 }, .data = s->b } };
    erase_ckpt_tensor_t o[2] = { { .name = "input/emb/0/adagrad_sum", .ndim = 1, .dims = { 7, 1 }, .data = s->acc },
                                 { .name = "sub1/fc0/weight/exp_avg", .ndim = 2, .dims = { 2, 5 }, .data = s->m } };
    memcpy(s->params, p, sizeof p);
    memcpy(s->optim, o, sizeof o);
    for (int r = 0; r < 2; r++)
        s->ranks[r] = (erase_ckpt_rank_t){ .rng = { 42, (uint64_t)r }, .epoch = 1, .samples = 96 };
    s->meta = (erase_ckpt_meta_t){ .step = step, .samples_seen = 32 * step, .epoch = 1, .epoch_samples = 96,
                                   .global_batch = 32, .world_size = 2, .dp_size = 2, .pp_size = 1,
                                   .pp_layout = "1 stage", .schedule = "early_backward graph",
                                   .dense_optimizer = "adamw", .embedding_optimizer = "rowwise_adagrad",
                                   .seed = 42, .clock_step = step, .clock_lr = 0.00025f,
                                   .model = "model = \"ctr\";\n", .options = "batch = 16;\n" };
}

static void write_state(const char *dir, int64_t step, int keep)
{
    state_t s;
    make_state(&s, step, (float)step);
    erase_ckpt_report_t rep;
    MUST(erase_ckpt_write(dir, &s.meta, s.params, 3, s.optim, 2, s.ranks, 2, NULL, keep, &rep));
    assert_true(rep.bytes > 0);
    assert_int_equal(erase_ckpt_name_step(rep.path), step);
}

static void test_round_trip(void **unused)
{
    (void)unused;
    const char *dir = io_path(scratch, "rt");
    state_t s;
    make_state(&s, 10, 10.0f);
    erase_ckpt_report_t rep;
    MUST(erase_ckpt_write(dir, &s.meta, s.params, 3, s.optim, 2, s.ranks, 2, NULL, 3, &rep));
    char path[4096];
    snprintf(path, sizeof path, "%s/ckpt-10.h5", dir);
    assert_string_equal(rep.path, path);
    printf("# wrote %s: %lld bytes in %.4f s\n", rep.path, (long long)rep.bytes, rep.seconds);
    FILE *f = fopen(io_path(dir, "latest"), "r");
    char line[64] = "";
    assert_non_null(f);
    assert_non_null(fgets(line, sizeof line, f));
    fclose(f);
    assert_string_equal(line, "ckpt-10.h5\n");

    erase_ckpt_t *ck;
    MUST(erase_ckpt_open(path, &ck));
    const erase_ckpt_meta_t *m = erase_ckpt_meta(ck);
    assert_int_equal(m->step, 10);
    assert_int_equal(m->samples_seen, 320);
    assert_int_equal(m->epoch, 1);
    assert_int_equal(m->epoch_samples, 96);
    assert_int_equal(m->global_batch, 32);
    assert_int_equal(m->world_size, 2);
    assert_int_equal(m->dp_size, 2);
    assert_int_equal(m->pp_size, 1);
    assert_int_equal(m->seed, 42);
    assert_int_equal(m->clock_step, 10);
    assert_true(m->clock_lr == 0.00025f);
    assert_string_equal(m->pp_layout, "1 stage");
    assert_string_equal(m->schedule, "early_backward graph");
    assert_string_equal(m->dense_optimizer, "adamw");
    assert_string_equal(m->embedding_optimizer, "rowwise_adagrad");
    assert_string_equal(m->model, "model = \"ctr\";\n");
    assert_string_equal(m->options, "batch = 16;\n");
    assert_non_null(strstr(m->version, "erase "));
    assert_int_equal(erase_ckpt_count(ck, ERASE_CKPT_PARAMS), 3);
    assert_int_equal(erase_ckpt_count(ck, ERASE_CKPT_OPTIM), 2);
    for (int g = 0; g < 2; g++)
        for (int i = 0; i < (g ? 2 : 3); i++) {
            const erase_ckpt_tensor_t *want = g ? &s.optim[i] : &s.params[i];
            const erase_ckpt_tensor_t *got = erase_ckpt_tensor(ck, (erase_ckpt_group_t)g, i);
            assert_string_equal(got->name, want->name);
            assert_int_equal(got->ndim, want->ndim);
            assert_int_equal(got->dims[0], want->dims[0]);
            assert_int_equal(erase_ckpt_tensor_numel(got), erase_ckpt_tensor_numel(want));
            assert_memory_equal(got->data, want->data, sizeof(float) * (size_t)erase_ckpt_tensor_numel(want));
        }
    assert_int_equal(erase_ckpt_ranks(ck), 2);
    assert_int_equal(erase_ckpt_rank(ck, 1)->rng[0], 42);
    assert_int_equal(erase_ckpt_rank(ck, 1)->rng[1], 1);
    assert_int_equal(erase_ckpt_rank(ck, 1)->samples, 96);
    assert_null(erase_ckpt_find(ck, ERASE_CKPT_PARAMS, "nope"));

    /* loading into the same shapes copies bitwise */
    state_t t;
    make_state(&t, 10, 99.0f);
    MUST(erase_ckpt_load(ck, ERASE_CKPT_PARAMS, t.params, 3, "the model"));
    assert_memory_equal(t.emb, s.emb, sizeof s.emb);
    assert_memory_equal(t.b, s.b, sizeof s.b);
    /* a different model: every difference listed, nothing copied */
    float other[8 * 3];
    memset(other, 0, sizeof other);
    erase_ckpt_tensor_t want[3] = { { .name = "input/emb/0", .ndim = 2, .dims = { 8, 3 }, .data = other },
                                    { .name = "sub1/fc0/weight", .ndim = 2, .dims = { 2, 5 }, .data = t.w },
                                    { .name = "sub2/fc0/bias", .ndim = 1, .dims = { 2, 1 }, .data = t.b } };
    assert_int_equal(erase_ckpt_load(ck, ERASE_CKPT_PARAMS, want, 3, "the model"), ERASE_ERR_INVALID);
    char expect[8192];
    snprintf(expect, sizeof expect,
             "%s: the model differs from the checkpoint's in 3 tensors (checkpoint -> this run): "
             "params/input/emb/0 [7, 3] -> [8, 3]; params/sub2/fc0/bias missing -> [2]; "
             "params/sub1/fc0/bias [2] -> missing", path);
    assert_string_equal(erase_error_reason(), expect);
    assert_true(other[0] == 0.0f);
    /* a part of the model (a pipeline stage's blocks of a whole
     * checkpoint, issue 32): the tensors not asked for are no difference */
    float part[2] = { 1.0f, 1.0f };
    erase_ckpt_tensor_t one = { .name = "sub1/fc0/bias", .ndim = 1, .dims = { 2, 1 }, .data = part };
    assert_int_equal(erase_ckpt_load(ck, ERASE_CKPT_PARAMS, &one, 1, "the model"), ERASE_ERR_INVALID);
    assert_true(part[0] == 1.0f);
    MUST(erase_ckpt_load_part(ck, ERASE_CKPT_PARAMS, &one, 1, "the model"));
    assert_memory_equal(part, s.b, sizeof part);
    erase_ckpt_tensor_t gone = { .name = "sub2/fc0/bias", .ndim = 1, .dims = { 2, 1 }, .data = part };
    assert_int_equal(erase_ckpt_load_part(ck, ERASE_CKPT_PARAMS, &gone, 1, "the model"), ERASE_ERR_INVALID);
    snprintf(expect, sizeof expect,
             "%s: the model differs from the checkpoint's in 1 tensor (checkpoint -> this run): "
             "params/sub2/fc0/bias missing -> [2]", path);
    assert_string_equal(erase_error_reason(), expect);
    erase_ckpt_close(ck);
}

static void test_directory(void **unused)
{
    (void)unused;
    const char *dir = io_path(scratch, "dir");
    for (int64_t step = 5; step <= 20; step += 5)
        write_state(dir, step, 2);
    assert_int_equal(io_count_files(dir, ".h5"), 2);
    char **paths;
    int n;
    MUST(erase_ckpt_candidates(dir, &paths, &n));
    assert_int_equal(n, 2);
    assert_int_equal(erase_ckpt_name_step(paths[0]), 20);
    assert_int_equal(erase_ckpt_name_step(paths[1]), 15);
    erase_ckpt_candidates_free(paths, n);
    /* `latest` naming an older one (the writer of ckpt-20 killed before it
     * updated latest) is only a hint: the newest complete one comes first */
    assert_int_equal(io_write_text(io_path(dir, "latest"), "ckpt-15.h5\n"), 0);
    MUST(erase_ckpt_candidates(dir, &paths, &n));
    assert_int_equal(n, 2);
    assert_int_equal(erase_ckpt_name_step(paths[0]), 20);
    assert_int_equal(erase_ckpt_name_step(paths[1]), 15);
    erase_ckpt_candidates_free(paths, n);
    erase_ckpt_t *ck;
    MUST(erase_ckpt_open_newest(dir, NULL, NULL, &ck));
    assert_non_null(ck);
    assert_int_equal(erase_ckpt_meta(ck)->step, 20);
    erase_ckpt_close(ck);
    /* an earlier step (a run restarted from an older checkpoint): newer
     * checkpoints stay, stale temporary files go */
    assert_int_equal(io_write_text(io_path(dir, ".ckpt-7.h5.tmp"), "half written"), 0);
    write_state(dir, 3, 1);
    assert_int_equal(io_count_files(dir, ".h5"), 3);
    assert_int_equal(io_count_files(dir, ".tmp"), 0);
    MUST(erase_ckpt_candidates(dir, &paths, &n));
    assert_int_equal(n, 3);
    assert_int_equal(erase_ckpt_name_step(paths[0]), 20);
    assert_int_equal(erase_ckpt_name_step(paths[1]), 15);
    assert_int_equal(erase_ckpt_name_step(paths[2]), 3);
    erase_ckpt_candidates_free(paths, n);
    /* nothing there: no candidates, no error */
    MUST(erase_ckpt_candidates(io_path(scratch, "none"), &paths, &n));
    assert_int_equal(n, 0);
    erase_ckpt_candidates_free(paths, n);

    assert_int_equal(erase_ckpt_name_step("d/ckpt-120.h5"), 120);
    assert_int_equal(erase_ckpt_name_step("ckpt-0.h5"), 0);
    assert_int_equal(erase_ckpt_name_step("ckpt-.h5"), -1);
    assert_int_equal(erase_ckpt_name_step("ckpt-12.h5.tmp"), -1);
    assert_int_equal(erase_ckpt_name_step(".ckpt-12.h5"), -1);
}

/* Copy src to dst. */
static void copy_file(const char *src, const char *dst)
{
    FILE *a = fopen(src, "rb"), *b = fopen(dst, "wb");
    assert_non_null(a);
    assert_non_null(b);
    char buf[65536];
    size_t k;
    while ((k = fread(buf, 1, sizeof buf, a)) > 0)
        assert_int_equal(fwrite(buf, 1, k, b), k);
    fclose(a);
    fclose(b);
}

static void expect_damage(const char *path, const char *why)
{
    erase_ckpt_t *ck = NULL;
    assert_int_equal(erase_ckpt_open(path, &ck), ERASE_ERR_FORMAT);
    assert_null(ck);
    char expect[8192];
    snprintf(expect, sizeof expect, "%s: %s", path, why);
    const char *got = erase_error_reason();
    printf("# %s\n", got);
    if (strncmp(got, expect, strlen(expect)) != 0)
        fail_msg("expected \"%s...\", got \"%s\"", expect, got);
}

/* Replace the dataset `path` of the checkpoint `file` by an empty chunked
 * float32 one of shape [rows, cols] (no storage written), listed so in
 * /index with the checksum of no bytes, as a crafted file would be. */
static void set_huge_shape(const char *file, const char *path, hsize_t rows, hsize_t cols)
{
    erase_h5_enter();
    hid_t f = H5Fopen(file, H5F_ACC_RDWR, H5P_DEFAULT);
    assert_true(f >= 0);
    hid_t d = H5Dopen2(f, "/index", H5P_DEFAULT), t = H5Dget_type(d);
    size_t n = H5Tget_size(t);
    char *text = calloc(n + 1, 1), *out = calloc(n + 256, 1);
    assert_true(H5Dread(d, t, H5S_ALL, H5S_ALL, H5P_DEFAULT, text) >= 0);
    H5Tclose(t);
    H5Dclose(d);
    uint64_t empty = erase_ckpt_fnv1a64("", 0);
    size_t len = 0;
    for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n")) {
        if (!strncmp(line, path, strlen(path)) && line[strlen(path)] == ' ')
            len += (size_t)sprintf(out + len, "%s float32 [%llu, %llu] %016llx\n", path, (unsigned long long)rows,
                                   (unsigned long long)cols, (unsigned long long)empty);
        else
            len += (size_t)sprintf(out + len, "%s\n", line);
    }
    assert_true(H5Ldelete(f, path, H5P_DEFAULT) >= 0);
    hsize_t dims[2] = { rows, cols }, chunk[2] = { 1, 1 };
    hid_t sp = H5Screate_simple(2, dims, NULL), pl = H5Pcreate(H5P_DATASET_CREATE);
    H5Pset_chunk(pl, 2, chunk);
    d = H5Dcreate2(f, path, H5T_IEEE_F32LE, sp, H5P_DEFAULT, pl, H5P_DEFAULT);
    assert_true(d >= 0);
    H5Sclose(sp);
    H5Pclose(pl);
    sp = H5Screate(H5S_SCALAR);
    hid_t a = H5Acreate2(d, "fnv1a64", H5T_STD_U64LE, sp, H5P_DEFAULT, H5P_DEFAULT);
    H5Awrite(a, H5T_NATIVE_UINT64, &empty);
    H5Aclose(a);
    H5Dclose(d);
    assert_true(H5Ldelete(f, "/index", H5P_DEFAULT) >= 0);
    t = H5Tcopy(H5T_C_S1);
    H5Tset_size(t, len + 1);
    d = H5Dcreate2(f, "/index", t, sp, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    assert_true(H5Dwrite(d, t, H5S_ALL, H5S_ALL, H5P_DEFAULT, out) >= 0);
    H5Dclose(d);
    H5Tclose(t);
    uint64_t sum = erase_ckpt_fnv1a64(out, len);
    a = H5Aopen(f, "index_fnv1a64", H5P_DEFAULT);
    H5Awrite(a, H5T_NATIVE_UINT64, &sum);
    H5Aclose(a);
    H5Sclose(sp);
    H5Fclose(f);
    erase_h5_leave();
    free(text);
    free(out);
}

/* A checkpoint of step 10 in scratch/sub: its path in good, and the path
 * of a copy to damage, sub/bad.h5, in bad (both 4096 bytes). */
/* Remove the attribute meta_fnv1a64 (an older erase's checkpoint). */
static void drop_meta_sum(const char *path)
{
    erase_h5_enter();
    hid_t f = H5Fopen(path, H5F_ACC_RDWR, H5P_DEFAULT);
    assert_true(H5Adelete(f, "meta_fnv1a64") >= 0);
    H5Fclose(f);
    erase_h5_leave();
}

static void good_and_bad(const char *sub, char *good, char *bad)
{
    const char *dir = io_path(scratch, sub);
    write_state(dir, 10, 3);
    snprintf(good, 4096, "%s/ckpt-10.h5", dir);
    snprintf(bad, 4096, "%s/bad.h5", dir);
}

static void test_damage(void **unused)
{
    (void)unused;
    char good[4096], bad[4096];
    good_and_bad("dmg", good, bad);

    /* truncated */
    copy_file(good, bad);
    struct stat sb;
    assert_int_equal(stat(good, &sb), 0);
    assert_int_equal(truncate(bad, sb.st_size / 2), 0);
    expect_damage(bad, "cannot open as HDF5 (truncated or not a checkpoint): ");

    /* a flipped bit in a dataset's data */
    copy_file(good, bad);
    erase_h5_enter();
    hid_t f = H5Fopen(bad, H5F_ACC_RDONLY, H5P_DEFAULT);
    hid_t d = H5Dopen2(f, "/params/sub1/fc0/weight", H5P_DEFAULT);
    haddr_t off = H5Dget_offset(d);
    H5Dclose(d);
    H5Fclose(f);
    erase_h5_leave();
    assert_true(off != HADDR_UNDEF);
    int fd = open(bad, O_RDWR);
    unsigned char c;
    assert_int_equal(pread(fd, &c, 1, (off_t)off + 5), 1);
    c ^= 1;
    assert_int_equal(pwrite(fd, &c, 1, (off_t)off + 5), 1);
    close(fd);
    expect_damage(bad, "dataset /params/sub1/fc0/weight: checksum ");

    /* a dataset gone */
    copy_file(good, bad);
    erase_h5_enter();
    f = H5Fopen(bad, H5F_ACC_RDWR, H5P_DEFAULT);
    assert_true(H5Ldelete(f, "/optim/input/emb/0/adagrad_sum", H5P_DEFAULT) >= 0);
    H5Fclose(f);
    erase_h5_leave();
    expect_damage(bad, "dataset /optim/input/emb/0/adagrad_sum is missing (listed in /index)");

    /* never completed: no `format` */
    copy_file(good, bad);
    erase_h5_enter();
    f = H5Fopen(bad, H5F_ACC_RDWR, H5P_DEFAULT);
    assert_true(H5Adelete(f, "format") >= 0);
    H5Fclose(f);
    erase_h5_leave();
    expect_damage(bad, "no format attribute: not an erase checkpoint, or not completely written");

    /* a dataset of [2^32, 2^32] floats (2^66 bytes): its size overflowed
     * (to 0 bytes: loaded, then numel overflowed in erase-inspect) */
    copy_file(good, bad);
    set_huge_shape(bad, "/params/sub1/fc0/weight", (hsize_t)1 << 32, (hsize_t)1 << 32);
    expect_damage(bad, "dataset /params/sub1/fc0/weight: shape [4294967296, 4294967296] of 4-byte elements "
                       "is more than memory can address");

    /* not HDF5 at all */
    assert_int_equal(io_write_text(bad, "hello"), 0);
    expect_damage(bad, "cannot open as HDF5 (truncated or not a checkpoint)");

    /* the original is still fine */
    erase_ckpt_t *ck;
    MUST(erase_ckpt_open(good, &ck));
    erase_ckpt_close(ck);
}

/* ckpt_set_attrs of one attribute, or fail. */
static void set_attr(const char *path, const ckpt_attr_t *a, int fix)
{
    char why[4096];
    if (ckpt_set_attrs(path, a, 1, fix, why, sizeof why) != 0)
        fail_msg("%s", why);
}

static void test_meta_attributes(void **unused)
{
    (void)unused;
    char good[4096], bad[4096];
    good_and_bad("meta", good, bad);
    static const struct {
        const char *object, *attr;
        int64_t v;
        float lr;
        int fix;
        const char *why;
    } cases[] = {
        { "/meta", "step", -5, 0, 1, "attribute /meta step = -5: expected an integer >= 0" },
        { "/meta", "step", -5, 0, 0, "attribute /meta step = -5: expected an integer >= 0" },
        { "/meta", "step", (int64_t)1 << 62, 0, 1,
          "attribute /meta step = 4611686018427387904: expected an integer <= 1099511627776" },
        { "/meta", "step", 11, 0, 0, "the attributes of /meta and /optim: checksum " },
        { "/meta", "samples_seen", 5, 0, 1,
          "attribute /meta samples_seen = 5: expected an integer >= step 10 (a step takes at least one sample)" },
        { "/meta", "samples_seen", 321, 0, 0, "the attributes of /meta and /optim: checksum " },
        { "/meta", "epoch", -1, 0, 1, "attribute /meta epoch = -1: expected an integer >= 0" },
        { "/meta", "global_batch", 0, 0, 1, "attribute /meta global_batch = 0: expected an integer >= 1" },
        /* issue 32: INT64_MAX overflowed erase-train's sample count (UBSan) */
        { "/meta", "samples_seen", INT64_MAX, 0, 1,
          "attribute /meta samples_seen = 9223372036854775807: expected an integer <= 4611686018427387904" },
        { "/meta", "epoch", INT64_MAX, 0, 1,
          "attribute /meta epoch = 9223372036854775807: expected an integer <= 1099511627776" },
        { "/meta", "global_batch", INT64_MAX, 0, 1,
          "attribute /meta global_batch = 9223372036854775807: expected an integer <= 2147483648" },
        { "/meta", "dp_size", 0, 0, 1, "attribute /meta dp_size = 0: expected an integer >= 1" },
        { "/meta", "dp_size", (int64_t)1 << 32, 0, 0, "attribute /meta dp_size = 4294967296: expected an integer <= 1000000" },
        { "/meta", "world_size", 3, 0, 1, "attribute /meta world_size = 3: expected dp_size x pp_size = 2 x 1" },
        { "/optim", "step", -7, 0, 1, "attribute /optim step = -7: expected an integer >= 0" },
        { "/optim", "step", 9, 0, 0, "the attributes of /meta and /optim: checksum " },
        { "/optim", "lr", 0, NAN, 1, "attribute /optim lr = nan: expected a finite number >= 0" },
        { "/optim", "lr", 0, -1e-3f, 1, "attribute /optim lr = -0.001: expected a finite number >= 0" },
        { "/optim", "lr", 0, 1e-3f, 0, "the attributes of /meta and /optim: checksum " },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        copy_file(good, bad);
        set_attr(bad, &(ckpt_attr_t){ cases[i].object, cases[i].attr, cases[i].v, cases[i].lr, NULL, 0 }, cases[i].fix);
        printf("# %s %s%s\n", cases[i].object, cases[i].attr, cases[i].fix ? " (checksum fixed up)" : "");
        expect_damage(bad, cases[i].why);
    }
    /* in range with the checksum fixed up: accepted (so the fix-up above is right) */
    copy_file(good, bad);
    set_attr(bad, &(ckpt_attr_t){ "/meta", "step", 11, 0, NULL, 0 }, 1);
    erase_ckpt_t *ck;
    MUST(erase_ckpt_open(bad, &ck));
    assert_int_equal(erase_ckpt_meta(ck)->step, 11);
    erase_ckpt_close(ck);
    /* no checksum of the attributes (an older erase's checkpoint): loaded,
     * range-checked only, and said so; out of range still refused */
    copy_file(good, bad);
    drop_meta_sum(bad);
    MUST(erase_ckpt_open(bad, &ck));
    assert_int_equal(erase_ckpt_attributes_summed(ck), 0);
    erase_ckpt_close(ck);
    MUST(erase_ckpt_open(good, &ck));
    assert_int_equal(erase_ckpt_attributes_summed(ck), 1);
    erase_ckpt_close(ck);
    set_attr(bad, &(ckpt_attr_t){ "/meta", "step", -5, 0, NULL, 0 }, 0);
    expect_damage(bad, "attribute /meta step = -5: expected an integer >= 0");
    /* issue 32: the bounds hold on this path too */
    static const char *const unsummed[][2] = {
        { "samples_seen", "attribute /meta samples_seen = 9223372036854775807: expected an integer <= 4611686018427387904" },
        { "epoch", "attribute /meta epoch = 9223372036854775807: expected an integer <= 1099511627776" },
        { "global_batch", "attribute /meta global_batch = 9223372036854775807: expected an integer <= 2147483648" },
    };
    for (size_t i = 0; i < sizeof unsummed / sizeof unsummed[0]; i++) {
        copy_file(good, bad);
        drop_meta_sum(bad);
        set_attr(bad, &(ckpt_attr_t){ "/meta", unsummed[i][0], INT64_MAX, 0, NULL, 0 }, 0);
        printf("# /meta %s, no meta_fnv1a64\n", unsummed[i][0]);
        expect_damage(bad, unsummed[i][1]);
    }

    /* the canonical text the checksum covers (io/checkpoint.h) */
    state_t s;
    make_state(&s, 3, 1.0f);
    s.meta.version = "erase 9";
    s.meta.created = NULL;
    const char text[] = "meta.step=3\nmeta.samples_seen=96\nmeta.epoch=1\nmeta.global_batch=32\n"
                        "meta.world_size=2\nmeta.dp_size=2\nmeta.pp_size=1\noptim.step=3\nmeta.seed=42\n"
                        "optim.lr=3983126f\nmeta.pp_layout=7:1 stage\nmeta.schedule=20:early_backward graph\n"
                        "meta.dense_optimizer=5:adamw\nmeta.embedding_optimizer=15:rowwise_adagrad\n"
                        "meta.model=15:model = \"ctr\";\n\nmeta.options=12:batch = 16;\n\n"
                        "meta.version=7:erase 9\nmeta.created=0:\n";
    assert_true(erase_ckpt_meta_fnv1a64(&s.meta) == erase_ckpt_fnv1a64(text, strlen(text)));

    /* the writer refuses what the loader would */
    s.meta.step = -1;
    assert_int_equal(erase_ckpt_write(io_path(scratch, "meta-w"), &s.meta, s.params, 3, s.optim, 2, s.ranks, 2, NULL,
                                      1, NULL), ERASE_ERR_FORMAT);
    assert_non_null(strstr(erase_error_reason(), "ckpt--1.h5: attribute /meta step = -1: expected an integer >= 0"));
    assert_int_equal(io_count_files(io_path(scratch, "meta-w"), ".h5"), 0);
}

/* A gate (erase_ckpt_gate_fn) that returns *ctx: the agreement of the parts. */
static int gate_calls;
static erase_status_t gate(void *ctx, erase_status_t st)
{
    gate_calls++;
    erase_status_t verdict = *(erase_status_t *)ctx;
    return st != ERASE_OK ? st : verdict == ERASE_OK ? ERASE_OK : ERASE_ERROR(verdict, "another stage failed");
}

/* Write step's two parts (stage 1, then stage 0 with the gate's verdict). */
static erase_status_t write_parts(const char *dir, int64_t step, int keep, erase_status_t verdict)
{
    state_t s;
    make_state(&s, step, (float)step);
    s.meta.pp_size = 2;
    s.meta.dp_size = 1;
    s.meta.pp_layout = "2 stages: stage 0 holds blocks 0-0, stage 1 holds blocks 1-1";
    erase_ckpt_report_t rep;
    MUST(erase_ckpt_write_part(dir, &s.meta, 1, s.params + 1, 2, s.optim + 1, 1, s.ranks, 2, NULL, keep, NULL,
                               NULL, &rep));
    return erase_ckpt_write_part(dir, &s.meta, 0, s.params, 1, s.optim, 1, s.ranks, 2, NULL, keep, gate, &verdict,
                                 &rep);
}

static int exists(const char *dir, const char *name)
{
    return access(io_path(dir, name), F_OK) == 0;
}

/* Pipeline checkpoints: one file per stage, stage 0's published last and
 * only when the gate agrees; opening it needs every stage file; pruning
 * takes the stage files along. */
static void test_stage_parts(void **unused)
{
    (void)unused;
    char dir[ERASE_CKPT_PATH_MAX];
    snprintf(dir, sizeof dir, "%s", io_path(scratch, "parts"));
    gate_calls = 0;
    /* the gate says no: stage 1's file is there, the checkpoint is not */
    assert_int_equal(write_parts(dir, 4, 2, ERASE_ERR_IO), ERASE_ERR_IO);
    assert_int_equal(gate_calls, 1);
    assert_true(exists(dir, "ckpt-4.h5.stage1"));
    assert_false(exists(dir, "ckpt-4.h5"));
    assert_false(exists(dir, ".ckpt-4.h5.tmp"));
    MUST(write_parts(dir, 8, 2, ERASE_OK));
    assert_int_equal(gate_calls, 2);
    assert_false(exists(dir, "ckpt-4.h5.stage1")); /* an orphan stage file of an older step: pruned */
    erase_ckpt_t *ck;
    char path[ERASE_CKPT_PATH_MAX], stage1[ERASE_CKPT_PATH_MAX];
    snprintf(path, sizeof path, "%s", io_path(dir, "ckpt-8.h5"));
    assert_int_equal(erase_ckpt_stage_path(path, 1, stage1, sizeof stage1), 0);
    assert_string_equal(stage1 + strlen(path), ".stage1");
    MUST(erase_ckpt_open(path, &ck));
    assert_int_equal(erase_ckpt_count(ck, ERASE_CKPT_PARAMS), 1);
    assert_non_null(erase_ckpt_find(ck, ERASE_CKPT_PARAMS, "input/emb/0"));
    erase_ckpt_close(ck);
    MUST(erase_ckpt_open_stage(path, 1, &ck));
    assert_int_equal(erase_ckpt_count(ck, ERASE_CKPT_PARAMS), 2);
    assert_non_null(erase_ckpt_find(ck, ERASE_CKPT_PARAMS, "sub1/fc0/bias"));
    erase_ckpt_close(ck);
    /* a stage file of another step: the checkpoint is damaged */
    char keep[ERASE_CKPT_PATH_MAX];
    snprintf(keep, sizeof keep, "%s", io_path(dir, "keep"));
    copy_file(stage1, keep);
    MUST(write_parts(dir, 12, 5, ERASE_OK));
    copy_file(io_path(dir, "ckpt-12.h5.stage1"), stage1);
    char why[2 * ERASE_CKPT_PATH_MAX + 200];
    snprintf(why, sizeof why, "stage 1 of 2: %s is of step 12, 2 stages", stage1);
    expect_damage(path, why);
    /* missing: damaged, naming the file */
    assert_int_equal(unlink(stage1), 0);
    snprintf(why, sizeof why, "stage 1 of 2: %s: cannot read: No such file or directory", stage1);
    expect_damage(path, why);
    copy_file(keep, stage1);
    MUST(erase_ckpt_open(path, &ck));
    erase_ckpt_close(ck);
    /* keeping 1: ckpt-8's stage file goes with it */
    MUST(write_parts(dir, 16, 1, ERASE_OK));
    assert_false(exists(dir, "ckpt-8.h5"));
    assert_false(exists(dir, "ckpt-8.h5.stage1"));
    assert_false(exists(dir, "ckpt-12.h5.stage1"));
    assert_true(exists(dir, "ckpt-16.h5"));
    assert_true(exists(dir, "ckpt-16.h5.stage1"));
    /* a part out of range */
    state_t s;
    make_state(&s, 20, 1);
    assert_int_equal(erase_ckpt_write_part(dir, &s.meta, 1, s.params, 3, s.optim, 2, s.ranks, 2, NULL, 1, NULL, NULL,
                                           NULL), ERASE_ERR_INVALID);
    assert_string_equal(erase_error_reason(), "checkpoint: part 1: expected a stage of the 1 (0 to 0)");
}

/* erase_ckpt_write_file: one file at any path (what erase-inspect merge
 * writes): reads back bitwise, no temporary file or `latest` left; an
 * existing file is kept without `overwrite`, replaced with it; bad meta
 * or a path without a file name publishes nothing. */
static void test_write_file(void **unused)
{
    (void)unused;
    char dir[ERASE_CKPT_PATH_MAX], path[ERASE_CKPT_PATH_MAX], why[ERASE_CKPT_PATH_MAX + 64];
    snprintf(dir, sizeof dir, "%s", io_path(scratch, "file"));
    assert_int_equal(mkdir(dir, 0777), 0);
    snprintf(path, sizeof path, "%s", io_path(dir, "merged.h5"));
    state_t a, b;
    make_state(&a, 6, 1.0f);
    make_state(&b, 6, 2.0f);
    MUST(erase_ckpt_write_file(path, &a.meta, a.params, 3, a.optim, 2, a.ranks, 2, 0));
    assert_true(exists(dir, "merged.h5"));
    assert_false(exists(dir, ".merged.h5.tmp"));
    assert_false(exists(dir, "latest"));
    assert_int_equal(erase_ckpt_write_file(path, &b.meta, b.params, 3, b.optim, 2, b.ranks, 2, 0), ERASE_ERR_INVALID);
    snprintf(why, sizeof why, "%s: exists (not overwritten)", path);
    assert_string_equal(erase_error_reason(), why);
    assert_false(exists(dir, ".merged.h5.tmp"));
    erase_ckpt_t *ck;
    MUST(erase_ckpt_open(path, &ck)); /* still a's */
    assert_int_equal(erase_ckpt_meta(ck)->step, 6);
    assert_int_equal(erase_ckpt_ranks(ck), 2);
    assert_memory_equal(erase_ckpt_find(ck, ERASE_CKPT_PARAMS, "input/emb/0")->data, a.emb, sizeof a.emb);
    assert_memory_equal(erase_ckpt_find(ck, ERASE_CKPT_OPTIM, "sub1/fc0/weight/exp_avg")->data, a.m, sizeof a.m);
    erase_ckpt_close(ck);
    MUST(erase_ckpt_write_file(path, &b.meta, b.params, 3, b.optim, 2, b.ranks, 2, 1));
    MUST(erase_ckpt_open(path, &ck)); /* now b's */
    assert_memory_equal(erase_ckpt_find(ck, ERASE_CKPT_PARAMS, "input/emb/0")->data, b.emb, sizeof b.emb);
    erase_ckpt_close(ck);
    /* bad meta, a path without a file name: nothing published */
    b.meta.step = -5;
    snprintf(path, sizeof path, "%s", io_path(dir, "bad.h5"));
    assert_int_equal(erase_ckpt_write_file(path, &b.meta, b.params, 3, b.optim, 2, b.ranks, 2, 0), ERASE_ERR_FORMAT);
    assert_false(exists(dir, "bad.h5"));
    snprintf(path, sizeof path, "%s", io_path(dir, ""));
    assert_int_equal(erase_ckpt_write_file(path, &a.meta, a.params, 3, a.optim, 2, a.ranks, 2, 0), ERASE_ERR_INVALID);
    snprintf(why, sizeof why, "%s: not a file name, or too long", path);
    assert_string_equal(erase_error_reason(), why);
    assert_int_equal(io_count_files(dir, ".h5"), 1);
}

static void test_bad_arguments(void **unused)
{
    (void)unused;
    state_t s;
    make_state(&s, 1, 1.0f);
    const char *dir = io_path(scratch, "args");
    assert_int_equal(erase_ckpt_write(dir, &s.meta, s.params, 3, s.optim, 2, s.ranks, 2, NULL, 0, NULL),
                     ERASE_ERR_INVALID);
    snprintf(s.params[1].name, sizeof s.params[1].name, "sub1//weight");
    assert_int_equal(erase_ckpt_write(dir, &s.meta, s.params, 3, s.optim, 2, s.ranks, 2, NULL, 1, NULL),
                     ERASE_ERR_INVALID);
    assert_non_null(strstr(erase_error_reason(), "bad name 'sub1//weight'"));
    snprintf(s.params[1].name, sizeof s.params[1].name, "input/emb/0");
    assert_int_equal(erase_ckpt_write(dir, &s.meta, s.params, 3, s.optim, 2, s.ranks, 2, NULL, 1, NULL),
                     ERASE_ERR_INVALID);
    assert_non_null(strstr(erase_error_reason(), "written twice"));
    assert_int_equal(io_count_files(dir, ".h5"), 0);
    erase_ckpt_t *ck;
    assert_int_equal(erase_ckpt_open(io_path(scratch, "missing.h5"), &ck), ERASE_ERR_IO);
    /* FNV-1a 64 reference values */
    assert_true(erase_ckpt_fnv1a64("", 0) == 0xcbf29ce484222325ull);
    assert_true(erase_ckpt_fnv1a64("a", 1) == 0xaf63dc4c8601ec8cull);
    assert_true(erase_ckpt_fnv1a64("foobar", 6) == 0x85944171f73967e8ull);
}

static int setup(void **unused)
{
    (void)unused;
    scratch = io_scratch_make("ckpt");
    return scratch ? 0 : -1;
}

static int teardown(void **unused)
{
    (void)unused;
    io_scratch_remove(scratch);
    return 0;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_round_trip),
        cmocka_unit_test(test_directory),
        cmocka_unit_test(test_damage),
        cmocka_unit_test(test_meta_attributes),
        cmocka_unit_test(test_bad_arguments),
        cmocka_unit_test(test_stage_parts),
        cmocka_unit_test(test_write_file),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
