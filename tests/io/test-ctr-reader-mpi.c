/*
 * The CTR reader in a real MPI job (run by test-ctr-reader-mpi.sh under
 * mpirun): every rank opens the shards read-only with HDF5's default file
 * access, reads its part of each global batch, and rank 0 gathers the parts
 * and compares them with the batches of a 1-rank reader (2 epochs,
 * shuffled, last partial batch kept). Prints "ok 1 - ..." or "not ok 1 -
 * ..." (the driver prints the plan).
 */
#include <inttypes.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "io/ctr_reader.h"

#define G 1000

static erase_reader_t *open_reader(const char *dir, int rank, int size)
{
    erase_reader_options_t o = erase_reader_options_default();
    o.global_batch = G;
    o.dp_rank = rank;
    o.dp_size = size;
    o.seed = 5;
    o.block_rows = 500;
    o.drop_last = 0;
    const char *in[1] = { dir };
    erase_reader_t *r;
    ERASE_MUST(erase_ctr_reader_open(in, 1, &o, &r));
    return r;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (argc != 2) {
        if (rank == 0)
            printf("not ok 1 - usage: test-ctr-reader-mpi DATA_DIR\n");
        MPI_Finalize();
        return 1;
    }
    erase_reader_t *mine = open_reader(argv[1], rank, size), *ref = rank == 0 ? open_reader(argv[1], 0, 1) : NULL;
    int64_t *ids = malloc(sizeof(int64_t) * G);
    float *dense = malloc(sizeof(float) * G * 13), *label = malloc(sizeof(float) * G);
    uint32_t *sparse = malloc(sizeof(uint32_t) * G * 26);
    int counts[64], displs[64], c13[64], d13[64], c26[64], d26[64];
    int64_t wrong = 0, compared = 0, steps = 0, disagree = 0;
    for (int epoch = 0; epoch < 2;) {
        erase_ctr_batch_t b, rb;
        ERASE_MUST(erase_ctr_reader_next(mine, &b));
        int end = b.end_of_epoch, lo, hi;
        MPI_Allreduce(&end, &lo, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
        MPI_Allreduce(&end, &hi, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
        disagree += lo != hi;
        if (rank == 0) {
            ERASE_MUST(erase_ctr_reader_next(ref, &rb));
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
            for (int r = 0, at = 0; r < size; at += counts[r], r++) {
                displs[r] = at;
                c13[r] = counts[r] * 13, d13[r] = at * 13;
                c26[r] = counts[r] * 26, d26[r] = at * 26;
            }
        MPI_Gatherv(b.row_id, n, MPI_INT64_T, ids, counts, displs, MPI_INT64_T, 0, MPI_COMM_WORLD);
        MPI_Gatherv(b.label, n, MPI_FLOAT, label, counts, displs, MPI_FLOAT, 0, MPI_COMM_WORLD);
        MPI_Gatherv(b.dense, n * 13, MPI_FLOAT, dense, c13, d13, MPI_FLOAT, 0, MPI_COMM_WORLD);
        MPI_Gatherv(b.sparse, n * 26, MPI_UINT32_T, sparse, c26, d26, MPI_UINT32_T, 0, MPI_COMM_WORLD);
        if (rank == 0) {
            int total = displs[size - 1] + counts[size - 1];
            if (total != rb.size) {
                wrong += G;
                continue;
            }
            for (int i = 0; i < total; i++)
                wrong += ids[i] != rb.row_id[i] || label[i] != rb.label[i] ||
                         memcmp(dense + i * 13, rb.dense + i * 13, 13 * sizeof(float)) != 0 ||
                         memcmp(sparse + i * 26, rb.sparse + i * 26, 26 * sizeof(uint32_t)) != 0;
            compared += total;
        }
    }
    if (rank == 0)
        printf("%s 1 - %d ranks under mpirun, %" PRId64 " steps over 2 epochs: %" PRId64 " rows gathered, #wrong "
               "%" PRId64 ", end-of-epoch disagreements %" PRId64 "\n",
               wrong == 0 && disagree == 0 && compared == 2 * 9999 ? "ok" : "not ok", size, steps, compared, wrong,
               disagree);
    fflush(stdout);
    erase_reader_close(mine);
    erase_reader_close(ref);
    free(ids);
    free(dense);
    free(label);
    free(sparse);
    MPI_Finalize();
    return 0;
}
