#!/bin/sh
# kill -9 of one rank of 4 during a loop of all-reduces: the job must end,
# with no rank exiting 0, within the watchdog time plus a few seconds.
. "$(dirname "$0")/mpi.sh"
need tests/comm/test-failures
workdir
WATCHDOG=3
SLACK=10
ERASE_WATCHDOG_SECONDS=$WATCHDOG; export ERASE_WATCHDOG_SECONDS
echo "1..4"
start_job 4 loop
wait_for 60 test -s "$dir/rank2.pid"
victim=$(cat "$dir/rank2.pid" 2>/dev/null)
[ -n "$victim" ]; tap $? "rank 2 runs its all-reduce loop (pid ${victim:-none})"
t0=$(now_ms)
if [ -n "$victim" ]; then kill -9 "$victim"; else kill "$job"; fi
end_job
[ "$rc" != 0 ] && [ "$rc" != 124 ]; tap $? "the job failed (mpirun exit status $rc; 124 = timeout)"
[ "$ms" -le $(((WATCHDOG + SLACK) * 1000)) ]
tap $? "it ended $ms ms after the kill (limit: watchdog $WATCHDOG s + $SLACK s)"
no_rank_done; tap $? "no rank finished its program"
tap_report "$dir/err"
