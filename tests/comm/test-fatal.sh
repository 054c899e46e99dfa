#!/bin/sh
# A rank that fails before a collective (it cannot open its input) ends the
# whole job at once through the fatal path, long before the watchdog would.
# So does a world that cannot be split as asked (pp_size 3 on 2 ranks).
. "$(dirname "$0")/mpi.sh"
need tests/comm/test-failures
workdir
LIMIT=15
ERASE_WATCHDOG_SECONDS=60; export ERASE_WATCHDOG_SECONDS
echo "1..6"
start_job 2 fatal
end_job
[ "$rc" != 0 ] && [ "$rc" != 124 ]; tap $? "the job failed (mpirun exit status $rc; 124 = timeout)"
[ "$ms" -le $((LIMIT * 1000)) ]
tap $? "it ended $ms ms after mpirun started (limit $LIMIT s; the watchdog is at 60 s)"
grep -Eq '^\[rank 1 [^]]+\] tests/comm/test-failures\.c:[0-9]+: open_input\(.*\) -> tests/comm/test-failures\.c:[0-9]+: cannot open /nonexistent/erase-test/input\.h5: No such file or directory$' "$dir/err"
tap $? "rank 1 says where and why: [rank 1 host] file:line: what -> why"
no_rank_done; tap $? "no rank finished its program"
tap_report "$dir/err"
rm -f "$dir"/rank*
start_job 2 pp3
end_job
[ "$rc" != 0 ] && [ "$rc" != 124 ] && [ "$ms" -le $((LIMIT * 1000)) ]
tap $? "pp_size 3 on 2 ranks: the job failed (status $rc) in $ms ms"
grep -Eq '^\[rank [01] [^]]+\] tests/comm/test-failures\.c:[0-9]+: erase_world_init\(.*\) -> lib/comm/world\.c:[0-9]+: world size 2 is not a multiple of pp_size 3 \(dp x pp must equal the number of ranks\)$' "$dir/err"
tap $? "and says why"
tap_report "$dir/err"
