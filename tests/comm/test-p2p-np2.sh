#!/bin/sh
# Sends and receives on 2 ranks: a 16 MiB exchange on two streams in
# opposite orders completes, and a wait for a late peer (a receive, a
# send, a small all-reduce, a barrier) does not spin
# (TAP from rank 0).
. "$(dirname "$0")/mpi.sh"
need tests/comm/test-p2p
ERASE_WATCHDOG_SECONDS=60 exec timeout -k 5 300 \
    "$MPIRUN" $MPI_FLAGS -np 2 tests/comm/test-p2p
