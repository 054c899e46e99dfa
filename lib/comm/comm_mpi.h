/*
 * The MPI communicator under an erase communicator, for libraries that
 * take one (parallel HDF5's MPI-IO driver: io/checkpoint.h,
 * erase_ckpt_write_rows). Kept out of lib/comm/comm.h so that its users
 * need no mpi.h.
 */
#ifndef ERASE_COMM_COMM_MPI_H
#define ERASE_COMM_COMM_MPI_H

#include <mpi.h>

#include "lib/comm/comm.h"

/* c's MPI communicator of collectives (the same group and ranks as c).
 * The caller must not free it, and may use it only while no collective of
 * c runs (e.g. between steps, the streams synchronized); a library that
 * keeps it should duplicate it (HDF5 does). */
MPI_Comm erase_comm_mpi(const erase_comm_t *c);

#endif
