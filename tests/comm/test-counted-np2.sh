#!/bin/sh
# The counted all-to-all and the traffic counters on 2 ranks (TAP from
# rank 0): exact bytes, counted prefixes, count errors, graph replays.
. "$(dirname "$0")/mpi.sh"
need tests/comm/test-counted
ERASE_WATCHDOG_SECONDS=60 exec timeout -k 5 300 \
    "$MPIRUN" $MPI_FLAGS -np 2 tests/comm/test-counted
