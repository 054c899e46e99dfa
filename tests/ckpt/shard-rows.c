/*
 * Sharded tensors in one checkpoint file (io/checkpoint.h, Sharded
 * tensors) under mpirun -np 3, any placement, at the io level: rank 0
 * writes the file (the sharded datasets without data) and, in the gate,
 * every rank writes its rows with erase_ckpt_write_rows: row-wise parts of
 * uneven sizes, a table of which rank 1 holds no row (its empty selection
 * still takes part), a table whole on rank 2 (table-wise), a 1-d state.
 * Read back: whole (erase_ckpt_open, every row verified), and by every
 * rank for another placement (LAZY_ALL: only its rows read), also a
 * whole-checksummed tensor of two streaming chunks read by rows; a damaged
 * row fails only the rank that reads it, naming file, dataset and row; a
 * rank that cannot write its rows makes the checkpoint fail with nothing
 * published. Rank 0 prints TAP.
 */
#include <fcntl.h>
#include <hdf5.h>
#include <inttypes.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "io/checkpoint.h"

#define RANKS 3
#define NT 5   /* params emb/0, emb/1, emb/2, fc/weight, big; optim emb/0/adagrad_sum */
#define BIG_ROWS 70000 /* [70000, 4] floats: more than one 1 MiB streaming chunk */

static int rank, failures, tests;

/* TAP from rank 0: `ok` is this rank's; the test passes when every rank's did. */
static void tap(int ok, const char *what)
{
    int all = 0;
    MPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    tests++;
    failures += !all;
    if (rank == 0) {
        printf("%s %d - %s\n", all ? "ok" : "not ok", tests, what);
        fflush(stdout);
    }
}

static float value(int t, int64_t row, int64_t col)
{
    return (float)t * 1000.0f + (float)row * 0.25f + (float)col + 0.5f;
}

/* A tensor's shape, placement and rows of each rank. */
typedef struct {
    const char *name;
    int ndim;
    int64_t rows, cols;
    int64_t first[RANKS + 1]; /* rank r holds [first[r], first[r + 1]); NULL sharding when whole */
    const char *sharding;
} spec_t;

static const spec_t specs[NT + 1] = {
    { "emb/0", 2, 10, 3, { 0, 3, 6, 10 }, "row-wise over 3 ranks: [0, 3) on rank 0, [3, 6) on rank 1, [6, 10) on rank 2" },
    { "emb/1", 2, 5, 2, { 0, 2, 2, 5 }, "row-wise over 3 ranks: [0, 2) on rank 0, [2, 5) on rank 2" },
    { "emb/2", 2, 7, 2, { 0, 0, 0, 7 }, "table-wise on rank 2 of 3" },
    { "fc/weight", 2, 2, 2, { 0 }, NULL },
    { "big", 2, BIG_ROWS, 4, { 0 }, NULL },
    { "emb/0/adagrad_sum", 1, 10, 1, { 0, 3, 6, 10 }, "row-wise over 3 ranks: [0, 3) on rank 0, [3, 6) on rank 1, [6, 10) on rank 2" },
};

/* Tensor k as rank r holds it under placement `first` (NULL: whole). */
static void make(erase_ckpt_tensor_t *t, int k, const int64_t *first, int r)
{
    const spec_t *s = &specs[k];
    memset(t, 0, sizeof *t);
    snprintf(t->name, sizeof t->name, "%s", s->name);
    t->ndim = s->ndim;
    t->dims[0] = s->rows;
    t->dims[1] = s->cols;
    t->row0 = first ? first[r] : 0;
    t->held = first ? first[r + 1] - first[r] : s->rows;
    t->sharding = first ? s->sharding : NULL;
    t->data = malloc(sizeof(float) * (size_t)(t->held * s->cols + 1));
    for (int64_t i = 0; i < t->held; i++)
        for (int64_t c = 0; c < s->cols; c++)
            t->data[i * s->cols + c] = value(k, t->row0 + i, c);
}

/* Whether t's data hold its rows' values. */
static int holds(const erase_ckpt_tensor_t *t, int k)
{
    for (int64_t i = 0; i < t->held; i++)
        for (int64_t c = 0; c < specs[k].cols; c++)
            if (t->data[i * specs[k].cols + c] != value(k, t->row0 + i, c))
                return 0;
    return 1;
}

static erase_ckpt_tensor_t params[NT], optim[1];

static void build(void)
{
    for (int k = 0; k < NT; k++)
        make(&params[k], k, specs[k].sharding ? specs[k].first : NULL, rank);
    make(&optim[0], NT, specs[NT].first, rank);
}

static void release(erase_ckpt_tensor_t *t, int n)
{
    for (int i = 0; i < n; i++)
        free(t[i].data);
}

static char dir[256], temp[512];

/* The gate: rank 0's status shared, the rows written, every rank's status
 * agreed (as erase-train's gate does). */
static erase_status_t gate(void *ctx, erase_status_t st)
{
    (void)ctx;
    int code = st;
    MPI_Bcast(&code, 1, MPI_INT, 0, MPI_COMM_WORLD);
    if (code != ERASE_OK)
        return (erase_status_t)code;
    erase_status_t mine = erase_ckpt_write_rows(temp, MPI_COMM_WORLD, params, NT, optim, 1);
    int ok = mine == ERASE_OK, all = 0;
    MPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    return all ? ERASE_OK : mine != ERASE_OK ? mine : ERASE_ERR_IO;
}

/* Write the checkpoint of `step` (every rank); this rank's status. */
static erase_status_t write_step(int64_t step)
{
    erase_ckpt_meta_t m = { .step = step, .samples_seen = step * 3, .global_batch = 3, .world_size = RANKS,
                            .dp_size = RANKS, .pp_size = 1, .pp_layout = "1 stage", .schedule = "s",
                            .dense_optimizer = "sgd", .embedding_optimizer = "rowwise_adagrad", .model = "m",
                            .options = "o", .embeddings = "row" };
    erase_ckpt_rank_t ranks[RANKS];
    memset(ranks, 0, sizeof ranks);
    erase_ckpt_temp_path(dir, step, temp, sizeof temp);
    if (rank == 0)
        return erase_ckpt_write_part(dir, &m, 0, params, NT, optim, 1, ranks, RANKS, NULL, 3, gate, NULL, NULL);
    return gate(NULL, ERASE_OK);
}

int main(int argc, char **argv)
{
    int provided;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    int size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (size != RANKS || argc != 2) {
        if (rank == 0)
            printf("Bail out! run on %d ranks with a scratch directory\n", RANKS);
        MPI_Finalize();
        return 0;
    }
    snprintf(dir, sizeof dir, "%s", argv[1]);
    if (rank == 0)
        printf("1..7\n");
    build();
    char path[512];
    snprintf(path, sizeof path, "%s/ckpt-4.h5", dir);

    /* written: every rank its rows */
    erase_status_t st = write_step(4);
    if (st != ERASE_OK)
        fprintf(stderr, "# rank %d: %s\n", rank, erase_error_message());
    MPI_Barrier(MPI_COMM_WORLD);
    tap(st == ERASE_OK && access(path, R_OK) == 0 && access(temp, F_OK) != 0,
        "every rank wrote its rows (rank 1 none of emb/1, ranks 0 and 1 none of emb/2); ckpt-4.h5 published");

    /* whole, every row verified; the placement as written */
    int ok = 1;
    if (rank == 0) {
        erase_ckpt_t *ck;
        ok = erase_ckpt_open(path, &ck) == ERASE_OK;
        for (int k = 0; ok && k <= NT; k++) {
            const erase_ckpt_tensor_t *t = erase_ckpt_find(ck, k < NT ? ERASE_CKPT_PARAMS : ERASE_CKPT_OPTIM,
                                                           specs[k].name);
            erase_ckpt_tensor_t whole = *t;
            whole.row0 = 0;
            whole.held = specs[k].rows;
            ok = t && t->dims[0] == specs[k].rows && holds(&whole, k) &&
                 (specs[k].sharding ? t->sharding && !strcmp(t->sharding, specs[k].sharding) : !t->sharding);
            if (!ok)
                printf("# %s: %s\n", specs[k].name, t && t->sharding ? t->sharding : "(whole)");
        }
        ok = ok && !strcmp(erase_ckpt_meta(ck)->embeddings, "row");
        erase_ckpt_close(ck);
    }
    tap(ok, "erase_ckpt_open: every tensor whole with its values, its `sharding` as written, /meta embeddings row");

    /* another placement: rank r holds the rows rank 2 - r wrote (reversed),
     * the whole tensors a third each (streamed through their checksum) */
    static const int64_t other[NT + 1][RANKS + 1] = {
        { 0, 4, 7, 10 }, { 0, 3, 5, 5 }, { 0, 7, 7, 7 }, { 0, 1, 1, 2 }, { 0, 20000, 45000, BIG_ROWS }, { 0, 4, 7, 10 }
    };
    erase_ckpt_tensor_t p2[NT], o2[1];
    for (int k = 0; k < NT; k++) {
        make(&p2[k], k, other[k], rank);
        p2[k].sharding = "this run's";
        memset(p2[k].data, 0, sizeof(float) * (size_t)(p2[k].held * specs[k].cols));
    }
    make(&o2[0], NT, other[NT], rank);
    o2[0].sharding = "this run's";
    memset(o2[0].data, 0, sizeof(float) * (size_t)o2[0].held);
    erase_ckpt_t *ck = NULL;
    ok = erase_ckpt_open_flags(path, ERASE_CKPT_OPEN_LAZY_ALL, &ck) == ERASE_OK &&
         erase_ckpt_load(ck, ERASE_CKPT_PARAMS, p2, NT, "the model") == ERASE_OK &&
         erase_ckpt_load(ck, ERASE_CKPT_OPTIM, o2, 1, "the optimizer state") == ERASE_OK;
    if (!ok)
        printf("# rank %d: %s\n", rank, erase_error_message());
    for (int k = 0; ok && k < NT; k++)
        ok = holds(&p2[k], k);
    ok = ok && holds(&o2[0], NT) && erase_ckpt_find(ck, ERASE_CKPT_PARAMS, "emb/0")->data == NULL;
    erase_ckpt_close(ck);
    tap(ok, "another placement (other parts, a rank with none, whole tensors by thirds over two 1 MiB chunks): "
            "each rank loads its rows, nothing else loaded");

    /* LAZY_ROWS: the sharded ones not read, the whole ones read and verified */
    ok = erase_ckpt_open_flags(path, ERASE_CKPT_OPEN_LAZY_ROWS, &ck) == ERASE_OK &&
         erase_ckpt_find(ck, ERASE_CKPT_PARAMS, "emb/0")->data == NULL &&
         erase_ckpt_find(ck, ERASE_CKPT_OPTIM, "emb/0/adagrad_sum")->data == NULL &&
         erase_ckpt_find(ck, ERASE_CKPT_PARAMS, "fc/weight")->data != NULL;
    erase_ckpt_close(ck);
    tap(ok, "ERASE_CKPT_OPEN_LAZY_ROWS: the sharded tensors' data not read, the whole ones' read");

    /* a damaged row: row 7 of emb/0 (rank 2's in the reversed placement) */
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) {
        hid_t f = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT), d = H5Dopen2(f, "/params/emb/0", H5P_DEFAULT);
        haddr_t at = H5Dget_offset(d) + 7 * 3 * sizeof(float) + 1;
        H5Dclose(d);
        H5Fclose(f);
        int fd = open(path, O_RDWR);
        unsigned char c = 0;
        if (pread(fd, &c, 1, (off_t)at) == 1) {
            c ^= 0x10;
            if (pwrite(fd, &c, 1, (off_t)at) != 1)
                printf("# cannot damage %s\n", path);
        }
        close(fd);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    st = erase_ckpt_open_flags(path, ERASE_CKPT_OPEN_LAZY_ALL, &ck);
    if (st == ERASE_OK)
        st = erase_ckpt_load(ck, ERASE_CKPT_PARAMS, p2, NT, "the model");
    erase_ckpt_close(ck);
    char want[1024];
    snprintf(want, sizeof want, "%s: dataset /params/emb/0: row 7: checksum ", path);
    ok = rank == 2 ? st == ERASE_ERR_FORMAT && !strncmp(erase_error_reason(), want, strlen(want)) &&
                         strstr(erase_error_reason(), " (damaged data)")
                   : st == ERASE_OK;
    if (rank == 2)
        printf("# rank 2: %s\n", erase_error_reason());
    tap(ok, "a flipped bit in row 7 of emb/0: rank 2, which reads it, fails naming file, dataset and row; the others "
            "load theirs");
    ok = 1;
    if (rank == 0) {
        erase_ckpt_t *whole;
        ok = erase_ckpt_open(path, &whole) == ERASE_ERR_FORMAT && strstr(erase_error_message(), "row 7: checksum");
    }
    tap(ok, "erase_ckpt_open of that file: ERASE_ERR_FORMAT at row 7");
    release(p2, NT);
    release(o2, 1);

    /* a rank that cannot write its rows: nothing published */
    setenv("ERASE_DEBUG_CKPT_ROWS_FAIL", "1", 1);
    st = write_step(8);
    unsetenv("ERASE_DEBUG_CKPT_ROWS_FAIL");
    MPI_Barrier(MPI_COMM_WORLD);
    snprintf(path, sizeof path, "%s/ckpt-8.h5", dir);
    ok = st != ERASE_OK && access(path, F_OK) != 0 && access(temp, F_OK) != 0;
    if (rank == 1)
        ok = ok && strstr(erase_error_message(), "ERASE_DEBUG_CKPT_ROWS_FAIL: rank 1 does not write its rows");
    tap(ok, "rank 1 cannot write its rows: the write fails on every rank, no ckpt-8.h5 and no temporary file");

    release(params, NT);
    release(optim, 1);
    MPI_Finalize();
    return 0;
}
