#!/bin/sh
# Rank 1 issues a different collective from rank 0: with the sequence check
# on, the ranks report it by name and end the job instead of hanging.
. "$(dirname "$0")/mpi.sh"
need tests/comm/test-failures
workdir
LIMIT=15
ERASE_WATCHDOG_SECONDS=60 ERASE_CHECK_COLLECTIVES=1
export ERASE_WATCHDOG_SECONDS ERASE_CHECK_COLLECTIVES
echo "1..5"
start_job 2 mismatch
end_job
[ "$rc" != 0 ] && [ "$rc" != 124 ]; tap $? "the job failed (mpirun exit status $rc; 124 = timeout)"
[ "$ms" -le $((LIMIT * 1000)) ]
tap $? "it ended $ms ms after mpirun started (limit $LIMIT s; the watchdog is at 60 s)"
grep -Eq '^\[rank [01] [^]]+\] tests/comm/test-failures\.c:[0-9]+: erase_comm_check_sequence\(erase_world_comm\(\)\) -> lib/comm/check\.c:[0-9]+: rank 1 issued broadcast\(4 x f32, root 0\) as collective #4 where rank 0 issued allreduce\(4 x f32, sum\) \(communicator world\)$' "$dir/err"
tap $? "the message names the rank, both collectives and their number"
! grep -q 'watchdog:' "$dir/err"; tap $? "the check ended it, not the watchdog"
no_rank_done; tap $? "no rank finished its program"
tap_report "$dir/err"
