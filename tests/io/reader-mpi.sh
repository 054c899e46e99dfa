# Sourced by the drivers of tests/io/test-reader-mpi (the reader under
# mpirun): skips without mpirun or timeout(1), prints the plan, makes the
# scratch directory $dir, and defines
#   reader_mpi_convert CMD...   run a converter into $dir (not ok 1 and 2 on failure)
#   reader_mpi_run NP ARGS...   mpirun -np NP tests/io/test-reader-mpi ARGS; TAP test 1
#                               from the program, test 2 = mpirun's exit status
# Run from the top build directory by make check (srcdir and MPIRUN from
# the harness).
set -u
: "${srcdir:=.}"
: "${MPIRUN:=mpirun}"
if ! command -v "$MPIRUN" >/dev/null 2>&1; then echo "1..0 # SKIP no mpirun ($MPIRUN)"; exit 0; fi
if ! command -v timeout >/dev/null 2>&1; then echo "1..0 # SKIP no timeout(1) to bound the run"; exit 0; fi
# Open MPI refuses root unless told (CI runs as root).
if [ "$(id -u)" = 0 ]; then
    OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
    export OMPI_ALLOW_RUN_AS_ROOT OMPI_ALLOW_RUN_AS_ROOT_CONFIRM
fi
# Sanitizer builds: Open MPI is not instrumented; io/'s leaks and races are
# checked by the single-process tests, so ignore what Open MPI does here.
ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0"
TSAN_OPTIONS="${TSAN_OPTIONS:+$TSAN_OPTIONS }report_signal_unsafe=0"
if [ -f "$srcdir/tests/comm/tsan.supp" ]; then
    TSAN_OPTIONS="$TSAN_OPTIONS suppressions=$srcdir/tests/comm/tsan.supp"
fi
export ASAN_OPTIONS TSAN_OPTIONS

echo "1..2"
dir=$(mktemp -d "tmp-io-mpi-XXXXXX") || { echo "not ok 1 - mktemp failed"; echo "not ok 2 - not run"; exit 0; }
trap 'rm -rf "$dir"' EXIT

reader_mpi_convert() {
    if ! "$@" >"$dir/convert.log" 2>&1; then
        sed 's/^/# /' "$dir/convert.log"
        echo "not ok 1 - $1 $2 failed"
        echo "not ok 2 - not run"
        exit 0
    fi
}

reader_mpi_run() {
    np=$1
    shift
    timeout 120 "$MPIRUN" --oversubscribe --bind-to none -np "$np" tests/io/test-reader-mpi "$@" \
        >"$dir/out" 2>"$dir/err"
    rc=$?
    grep -E '^(ok|not ok) 1 ' "$dir/out" || echo "not ok 1 - no result from rank 0"
    if [ $rc -eq 0 ]; then
        echo "ok 2 - mpirun -np $np exited with status 0"
    else
        sed 's/^/# /' "$dir/err" | tail -20
        echo "not ok 2 - mpirun -np $np exited with status $rc"
    fi
}
