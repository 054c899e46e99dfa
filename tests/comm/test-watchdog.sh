#!/bin/sh
# A rank that stops issuing collectives: the others' watchdog prints the
# stuck collective and the last ones issued, then ends the job. The same for
# a receive whose sender never sends (p2p waits poll: lib/comm/mpi_comm.c).
. "$(dirname "$0")/mpi.sh"
need tests/comm/test-failures
workdir
WATCHDOG=2
SLACK=20
ERASE_WATCHDOG_SECONDS=$WATCHDOG; export ERASE_WATCHDOG_SECONDS
echo "1..10"

# run_stalled MODE PREFIX: the job of MODE on 2 ranks failed, within the
# watchdog's time (two TAP lines, PREFIX before each description).
run_stalled() {
    start_job 2 "$1"
    end_job
    [ "$rc" != 0 ] && [ "$rc" != 124 ]; tap $? "$2the job failed (mpirun exit status $rc; 124 = timeout)"
    [ "$ms" -le $(((WATCHDOG + SLACK) * 1000)) ]
    tap $? "$2it ended $ms ms after mpirun started (limit: watchdog $WATCHDOG s + $SLACK s)"
}

run_stalled stall ""
grep -Eq '^\[rank 0 [^]]+\] watchdog: allreduce\(1024 x f32, sum\) #4 on world has not completed after [0-9]+ s; last collectives issued:$' "$dir/err"
tap $? "rank 0 names the stuck collective"
grep -Eq '^\[rank 0 [^]]+\]   #1 allreduce\(1024 x f32, sum\), 4096 bytes, done$' "$dir/err" &&
    grep -Eq '^\[rank 0 [^]]+\]   #4 allreduce\(1024 x f32, sum\), 4096 bytes, running$' "$dir/err"
tap $? "and lists the last collectives (#1 done ... #4 running)"
grep -Eq '^\[rank 0 [^]]+\] lib/comm/watchdog\.c:[0-9]+: watchdog -> ' "$dir/err"
tap $? "then takes the fatal path"
no_rank_done; tap $? "no rank finished its program"
tap_report "$dir/err"

run_stalled p2p-stall "p2p: "
grep -Eq '^\[rank 0 [^]]+\] watchdog: recv\(1024 x f32, peer 1, tag 5\) p2p #[0-9]+ on world has not completed after [0-9]+ s; last collectives issued:$' "$dir/err"
tap $? "p2p: rank 0 names the stuck receive"
no_rank_done; tap $? "p2p: no rank finished its program"
tap_report "$dir/err"
