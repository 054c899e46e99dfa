# Sourced by tests/sched/test-pipe-np*.sh: runs of tests/sched/test-pipe
# under mpirun, their TAP lines numbered into one stream, a line for each
# run's exit status (a deadlock ends it through the watchdog: non-zero),
# the plan at the end.
. "$(dirname "$0")/../comm/mpi.sh"
need tests/sched/test-pipe
workdir
# the watchdog armed short: a stage that waits for a message never sent
# ends the job within a minute instead of the driver's timeout
ERASE_WATCHDOG_SECONDS=60; export ERASE_WATCHDOG_SECONDS
n=0

# pipe_run NP P: test-pipe on NP ranks as P stages x NP/P dp replicas.
pipe_run() {
    timeout -k 5 600 "$MPIRUN" $MPI_FLAGS -np "$1" tests/sched/test-pipe "$2" "$n" \
        >"$dir/out" 2>"$dir/err"
    rc=$?
    cat "$dir/out"
    n=$((n + $(grep -c -E '^(not )?ok ' "$dir/out")))
    [ $rc = 0 ]; ok=$?
    tap_n=$n; tap $ok "test-pipe on $1 rank(s) as $2 stage(s) ended with status $rc (124: timeout)"
    n=$tap_n
    [ $rc = 0 ] || tap_report "$dir/err"
}

# pipe_end: the plan.
pipe_end() { echo "1..$n"; }
