#!/bin/sh
# Every collective of the MPI communicator on 4 ranks (dp 2 x pp 2) with
# ERASE_ALLREDUCE=ring: the all-reduce takes the ring's order instead of
# the pairwise tree (test-collectives checks the order it promises).
. "$(dirname "$0")/mpi.sh"
need tests/comm/test-collectives
ERASE_ALLREDUCE=ring ERASE_WATCHDOG_SECONDS=60 exec timeout -k 5 300 \
    "$MPIRUN" $MPI_FLAGS -np 4 tests/comm/test-collectives --pp 2
