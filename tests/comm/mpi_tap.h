/*
 * TAP from a test program run under mpirun (tests/comm drivers): every rank
 * counts its own failures; rank 0 prints one line per check, "ok" only
 * when no rank counted one. Include once per program, after <mpi.h>; the
 * program sets mpi_tap_rank to its world rank.
 */
#ifndef ERASE_TESTS_COMM_MPI_TAP_H
#define ERASE_TESTS_COMM_MPI_TAP_H

#include <mpi.h>
#include <stdio.h>

#include "lib/core/status.h"

static int mpi_tap_rank; /* this process's rank in MPI_COMM_WORLD */
static int mpi_tap_n;    /* TAP lines printed so far */

/* Sum of a per-rank count over the world (MPI itself, not erase). */
static long world_sum(long local)
{
    long total = 0;
    if (MPI_Allreduce(&local, &total, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD) != MPI_SUCCESS)
        erase_fatal(__FILE__, __LINE__, "MPI_Allreduce", ERASE_ERR_COMM);
    return total;
}

/* One TAP line from rank 0 (collective): ok when no rank counted a failure;
 * otherwise "(N wrong over all ranks)". */
static void tap(long bad_local, const char *what)
{
    long bad = world_sum(bad_local);
    if (mpi_tap_rank == 0) {
        printf("%s %d - %s", bad ? "not ok" : "ok", ++mpi_tap_n, what);
        if (bad)
            printf(" (%ld wrong over all ranks)", bad);
        printf("\n");
        fflush(stdout);
    }
}

#endif
