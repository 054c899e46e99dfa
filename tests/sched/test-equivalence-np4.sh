#!/bin/sh
# Schedule equivalence under data parallelism on 4 ranks (TAP from rank 0).
. "$(dirname "$0")/../comm/mpi.sh"
need tests/sched/test-equivalence-mpi
ERASE_WATCHDOG_SECONDS=120 exec timeout -k 5 600 \
    "$MPIRUN" $MPI_FLAGS -np 4 tests/sched/test-equivalence-mpi
