#!/bin/sh
# Every collective of the MPI communicator on 3 ranks, oversubscribed: a
# rank count that is not a power of two, where the all-reduce is the ring
# (on 2 and 4 ranks the pairwise tree), TAP from rank 0.
. "$(dirname "$0")/mpi.sh"
need tests/comm/test-collectives
ERASE_WATCHDOG_SECONDS=60 exec timeout -k 5 300 \
    "$MPIRUN" $MPI_FLAGS -np 3 tests/comm/test-collectives
