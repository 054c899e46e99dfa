#!/bin/sh
# Table-wise sharded embeddings on 4 ranks (TAP from rank 0; the timeout bounds a hang).
. "$(dirname "$0")/../comm/mpi.sh"
need tests/sched/test-shard-mpi
ERASE_WATCHDOG_SECONDS=120 exec timeout -k 5 600 \
    "$MPIRUN" $MPI_FLAGS -np 4 tests/sched/test-shard-mpi
