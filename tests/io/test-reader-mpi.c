/*
 * The data reader in a real MPI job (run by test-ctr-reader-mpi.sh and
 * test-cls-reader-mpi.sh under mpirun): every rank opens the shards
 * read-only with HDF5's default file access, reads its part of each
 * global batch, and rank 0 gathers the parts and compares them (row ids
 * and every field, bitwise) with the batches of a 1-rank reader (2 epochs,
 * shuffled, last partial batch kept). Prints "ok 1 - ..." or "not ok 1 -
 * ..." (the driver prints the plan).
 *
 *   test-reader-mpi ctr|ctr-mlperf|classify DATA_DIR ROWS GLOBAL_BATCH BLOCK_ROWS
 * (ctr-mlperf: CTR rows read for MLPerf DLRM-DCNv2's hotness, sparse
 * [n, 214] padded and sparse_len, io/ctr_reader.h; issue 35).
 *   test-reader-mpi lm DATA_DIR WINDOWS GLOBAL_BATCH BLOCK_ROWS CONTEXT
 * (lm: token windows of CONTEXT + 1 tokens, io/tok_reader.h). DATA_DIR
 * may be a comma-separated list (days in several directories). The
 * environment variable POOL_BLOCKS sets the shuffle pools' blocks (default:
 * the reader's).
 */
#include <inttypes.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "io/cls_reader.h"
#include "io/ctr_reader.h"
#include "io/tok_reader.h"
#include "lib/nn/model_config.h" /* ERASE_CTR_HOTNESS_MLPERF only: a macro */

static erase_reader_t *open_reader(const erase_row_format_t *fmt, const char *dir, int64_t G, int64_t block,
                                   int rank, int size)
{
    erase_reader_options_t o = erase_reader_options_default();
    o.global_batch = G;
    o.dp_rank = rank;
    o.dp_size = size;
    o.seed = 5;
    o.block_rows = block;
    if (getenv("POOL_BLOCKS"))
        o.pool_blocks = strtoll(getenv("POOL_BLOCKS"), NULL, 10);
    o.drop_last = 0;
    char list[4096];
    const char *in[16];
    int n = 0;
    snprintf(list, sizeof list, "%s", dir);
    for (char *save = NULL, *p = strtok_r(list, ",", &save); p && n < 16; p = strtok_r(NULL, ",", &save))
        in[n++] = p;
    erase_reader_t *r;
    ERASE_MUST(erase_reader_open(fmt, in, n, &o, &r));
    return r;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    static erase_row_format_t lm;
    static int context;
    context = argc == 7 ? atoi(argv[6]) : 0;
    erase_tok_rows_init(&lm, &context);
    static const uint32_t mlperf[26] = ERASE_CTR_HOTNESS_MLPERF;
    static erase_row_format_t ctr_mlperf;
    erase_ctr_rows_init(&ctr_mlperf, mlperf);
    const int lm_args = argc >= 2 && !strcmp(argv[1], "lm");
    const erase_row_format_t *fmt = argc < 2                       ? NULL
                                    : !strcmp(argv[1], "ctr")      ? &erase_ctr_rows
                                    : !strcmp(argv[1], "ctr-mlperf") ? &ctr_mlperf
                                    : !strcmp(argv[1], "classify") ? &erase_cls_rows
                                    : lm_args                      ? &lm
                                                                   : NULL;
    if (argc != 6 + lm_args || !fmt || size > 64) {
        if (rank == 0)
            printf("not ok 1 - usage: test-reader-mpi ctr|classify DATA_DIR ROWS GLOBAL_BATCH BLOCK_ROWS "
                   "| lm DATA_DIR WINDOWS GLOBAL_BATCH BLOCK_ROWS CONTEXT (at most 64 ranks)\n");
        MPI_Finalize();
        return 1;
    }
    const int64_t rows = strtoll(argv[3], NULL, 10), G = strtoll(argv[4], NULL, 10);
    const int64_t block = strtoll(argv[5], NULL, 10);
    erase_reader_t *mine = open_reader(fmt, argv[2], G, block, rank, size);
    erase_reader_t *ref = rank == 0 ? open_reader(fmt, argv[2], G, block, 0, 1) : NULL;
    const erase_row_layout_t layout = erase_reader_info(mine).layout;
    const int nf = layout.nfields;
    int row_bytes[ERASE_READER_MAX_FIELDS];
    void *got[ERASE_READER_MAX_FIELDS];
    for (int f = 0; f < nf; f++) {
        row_bytes[f] = (int)(layout.field[f].elem_bytes * (size_t)layout.field[f].width);
        got[f] = malloc((size_t)(G * row_bytes[f]));
    }
    int64_t *ids = malloc(sizeof(int64_t) * (size_t)G);
    int counts[64], displs[64], bytes[64], at_bytes[64];
    int64_t wrong = 0, compared = 0, steps = 0, disagree = 0;
    for (int epoch = 0; epoch < 2;) {
        erase_reader_batch_t b, rb;
        ERASE_MUST(erase_reader_next(mine, &b));
        int end = b.end_of_epoch, lo, hi;
        MPI_Allreduce(&end, &lo, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
        MPI_Allreduce(&end, &hi, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
        disagree += lo != hi;
        if (rank == 0) {
            ERASE_MUST(erase_reader_next(ref, &rb));
            disagree += rb.end_of_epoch != end;
        }
        if (hi) {
            epoch++;
            continue;
        }
        steps++;
        int n = (int)b.size;
        MPI_Gather(&n, 1, MPI_INT, counts, 1, MPI_INT, 0, MPI_COMM_WORLD);
        if (rank == 0)
            for (int r = 0, at = 0; r < size; at += counts[r], r++)
                displs[r] = at;
        MPI_Gatherv(b.row_id, n, MPI_INT64_T, ids, counts, displs, MPI_INT64_T, 0, MPI_COMM_WORLD);
        for (int f = 0; f < nf; f++) {
            if (rank == 0)
                for (int r = 0; r < size; r++)
                    bytes[r] = counts[r] * row_bytes[f], at_bytes[r] = displs[r] * row_bytes[f];
            MPI_Gatherv(b.field[f], n * row_bytes[f], MPI_BYTE, got[f], bytes, at_bytes, MPI_BYTE, 0,
                        MPI_COMM_WORLD);
        }
        if (rank == 0) {
            int total = displs[size - 1] + counts[size - 1];
            if (total != rb.size) {
                wrong += G;
                continue;
            }
            for (int i = 0; i < total; i++) {
                int bad = ids[i] != rb.row_id[i];
                for (int f = 0; f < nf; f++)
                    bad |= memcmp((char *)got[f] + (size_t)i * row_bytes[f],
                                  (const char *)rb.field[f] + (size_t)i * row_bytes[f], (size_t)row_bytes[f]) != 0;
                wrong += bad;
            }
            compared += total;
        }
    }
    if (rank == 0)
        printf("%s 1 - %s rows, %d ranks under mpirun, %" PRId64 " steps over 2 epochs: %" PRId64
               " rows gathered, #wrong %" PRId64 ", end-of-epoch disagreements %" PRId64 "\n",
               wrong == 0 && disagree == 0 && compared == 2 * rows ? "ok" : "not ok", fmt->name, size, steps,
               compared, wrong, disagree);
    fflush(stdout);
    erase_reader_close(mine);
    erase_reader_close(ref);
    free(ids);
    for (int f = 0; f < nf; f++)
        free(got[f]);
    MPI_Finalize();
    return 0;
}
