#!/bin/sh
# NCCL collectives on CUDA streams on 1 rank(s), one GPU each (SKIP without
# 1 GPU(s) or without the CUDA backend); see tests/comm/test-nccl.c.
. "$(dirname "$0")/mpi.sh"
need tests/comm/test-nccl
ERASE_WATCHDOG_SECONDS=120 ERASE_VERBOSE=1 exec timeout -k 5 300 \
    "$MPIRUN" $MPI_FLAGS -np 1 tests/comm/test-nccl
