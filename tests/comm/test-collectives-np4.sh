#!/bin/sh
# Every collective of the MPI communicator on 4 ranks, oversubscribed, split
# into dp 2 x pp 2 (TAP from rank 0).
. "$(dirname "$0")/mpi.sh"
need tests/comm/test-collectives
ERASE_WATCHDOG_SECONDS=60 exec timeout -k 5 300 \
    "$MPIRUN" $MPI_FLAGS -np 4 tests/comm/test-collectives --pp 2
