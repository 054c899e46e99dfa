#!/bin/sh
# The file-system exchange of NCCL ids (fake ids, no GPU) on 2 ranks.
. "$(dirname "$0")/mpi.sh"
need tests/comm/test-id-exchange
workdir
ERASE_TEST_DIR=$dir ERASE_JOB_ID=id-np2-$$ ERASE_WATCHDOG_SECONDS=60
export ERASE_TEST_DIR ERASE_JOB_ID ERASE_WATCHDOG_SECONDS
timeout -k 5 120 "$MPIRUN" $MPI_FLAGS -np 2 tests/comm/test-id-exchange --pp 1
