# Sourced by the drivers of MPI tests (tests/comm, tests/sched): how to run
# mpirun in `make check`, TAP helpers, sanitizer suppressions for Open MPI.
# MPIRUN comes from configure (AM_TESTS_ENVIRONMENT); the drivers run from
# the top build directory.

skip() { echo "1..0 # SKIP $*"; exit 0; }

: "${MPIRUN:=mpirun}"
command -v "$MPIRUN" >/dev/null 2>&1 || skip "no mpirun ($MPIRUN)"
command -v timeout >/dev/null 2>&1 || skip "no timeout(1) to bound the run"

# --oversubscribe: more ranks than cores (CI has 2); --bind-to none: a rank's
# stream workers and its host thread must not share one core.
MPI_FLAGS="--oversubscribe --bind-to none"
# CI runs as root; Open MPI refuses that unless told.
if [ "$(id -u)" = 0 ]; then
    OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
    export OMPI_ALLOW_RUN_AS_ROOT OMPI_ALLOW_RUN_AS_ROOT_CONFIRM
fi

# Sanitizer builds: Open MPI is not instrumented; these files suppress
# reports whose stacks are inside Open MPI only (see the files). Leaks are
# matched by the modules on their allocation stack, so unwind it fully
# (Open MPI has no frame pointers, and unloads its components at finalize).
# (This file's folder: drivers in other folders source it too.)
for comm_dir in "${srcdir:-.}/tests/comm" "$(dirname "$0")" "$(dirname "$0")/../comm"; do
    [ -f "$comm_dir/lsan.supp" ] && break
done
comm_dir=$(cd "$comm_dir" && pwd)
# history_size=7 (4M accesses a thread, 32 times the default): a race:
# entry of tsan.supp matches a report by the stack of the thread that
# copied a message in MPI, and that stack is rebuilt from the thread's
# history of its accesses. That thread goes on running erase's code after
# the copy, and when the owner of the buffer was scheduled late to read it,
# the copy had left the default history (128K accesses): TSan could not
# rebuild its stack ("[failed to restore the stack]"), nothing matched, and
# the race was reported. CI failed so (here 3 runs in 8; 0 in 7 with 7):
# tests/sched/test-shard-np2.sh, the dp all-reduce's reduce_f32 reading the
# chunk that another stream's worker, waiting in MPI, had received for it.
# (First, so that a history_size in the caller's TSAN_OPTIONS wins.)
TSAN_OPTIONS="history_size=7 ${TSAN_OPTIONS:+$TSAN_OPTIONS }suppressions=$comm_dir/tsan.supp"
# print_suppressions=0: every rank's LeakSanitizer used to print its
# "Suppressions used" table between dashed lines at exit; two ranks' tables
# and mpirun's dashed banner interleaved on stderr, so the one-line checks
# of tests/apps/test-train-errors.sh (which drop blocks between dashed
# lines) lost their pairing and failed now and then under ASan in CI
LSAN_OPTIONS="${LSAN_OPTIONS:+$LSAN_OPTIONS }suppressions=$comm_dir/lsan.supp print_suppressions=0"
ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS }fast_unwind_on_malloc=0"
export TSAN_OPTIONS LSAN_OPTIONS ASAN_OPTIONS

# need PROGRAM: skip unless the test program was built (cmocka missing).
need() { [ -x "$1" ] || skip "$1 was not built"; }

# wait_for SECONDS CMD...: poll CMD every 50 ms until it succeeds; 1 on timeout.
wait_for() {
    limit=$(( $1 * 20 )); shift
    i=0
    while ! "$@"; do
        i=$((i + 1))
        [ $i -ge $limit ] && return 1
        sleep 0.05
    done
    return 0
}

# now_ms: wall clock in milliseconds.
now_ms() { date +%s%3N; }

# startup_lines: erase's start-up lines on stdin (ERASE_VERBOSE=1: each
# rank's "[rank R HOST] erase: rank R of N, local rank L of M, dp rank D of
# E", rank 0's "... world of N ranks on H hosts (dp D x pp P)") cut after
# those words (what follows names the MPI library), sorted; other lines as
# they are.
startup_lines() {
    sed -E 's/^(\[rank [0-9]+ [^]]*\] erase: (rank [0-9]+ of [0-9]+, local rank [0-9]+ of [0-9]+, dp rank [0-9]+ of [0-9]+|world of [^)]*\))).*/\1/' |
        LC_ALL=C sort
}

# tap_report FILE: copy a rank log into the TAP stream as comments.
tap_report() { sed 's/^/# /' "$1"; }

# tap STATUS DESCRIPTION: the next TAP result, ok when STATUS is 0.
tap_n=0
tap() {
    tap_n=$((tap_n + 1))
    if [ "$1" = 0 ]; then echo "ok $tap_n - $2"; else echo "not ok $tap_n - $2"; fi
}

# workdir: a scratch directory $dir, removed at exit.
workdir() {
    dir=$(mktemp -d "${TMPDIR:-/tmp}/erase-comm.XXXXXX") || exit 99
    trap 'rm -rf "$dir"' EXIT
}

# start_job NP MODE: tests/comm/test-failures MODE on NP ranks in the
# background (pid $job, started at $t0 ms), output in $dir/out and $dir/err.
# The caller exports ERASE_* settings first.
start_job() {
    ERASE_TEST_DIR=$dir; export ERASE_TEST_DIR
    t0=$(now_ms)
    timeout -k 5 120 "$MPIRUN" $MPI_FLAGS -np "$1" tests/comm/test-failures "$2" \
        >"$dir/out" 2>"$dir/err" &
    job=$!
}

# end_job: wait for it; sets rc (mpirun's exit status) and ms (duration
# since $t0).
end_job() {
    wait "$job"
    rc=$?
    ms=$(($(now_ms) - t0))
}

# no_rank_done: 0 if no rank got to the end of its program.
no_rank_done() { ! ls "$dir"/rank*.done >/dev/null 2>&1; }
