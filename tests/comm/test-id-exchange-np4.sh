#!/bin/sh
# The file-system exchange of NCCL ids (fake ids, no GPU) on 4 ranks, dp 2 x
# pp 2: the groups world, dp0, dp1, pp0 and pp1 each exchange their own id.
. "$(dirname "$0")/mpi.sh"
need tests/comm/test-id-exchange
workdir
ERASE_TEST_DIR=$dir ERASE_JOB_ID=id-np4-$$ ERASE_WATCHDOG_SECONDS=60
export ERASE_TEST_DIR ERASE_JOB_ID ERASE_WATCHDOG_SECONDS
timeout -k 5 120 "$MPIRUN" $MPI_FLAGS -np 4 tests/comm/test-id-exchange --pp 2
