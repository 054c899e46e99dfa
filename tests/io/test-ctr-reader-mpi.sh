#!/bin/sh
# The CTR reader under mpirun (3 ranks): converts the Kaggle sample with
# erase-convert, then runs tests/io/test-ctr-reader-mpi, whose rank 0
# compares the gathered rank parts with a 1-rank reader. TAP: test 1 from
# the program, test 2 = mpirun's exit status. Run from the top build
# directory by make check (srcdir and MPIRUN from the harness).
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
if ! apps/erase-convert criteo -q -o "$dir/data" --shard-rows 3000 --chunk-rows 500 \
        "$srcdir/data/criteo/kaggle-train-first9999.tsv" >"$dir/convert.log" 2>&1; then
    sed 's/^/# /' "$dir/convert.log"
    echo "not ok 1 - erase-convert failed"
    echo "not ok 2 - not run"
    exit 0
fi
timeout 120 "$MPIRUN" --oversubscribe --bind-to none -np 3 tests/io/test-ctr-reader-mpi "$dir/data" \
    >"$dir/out" 2>"$dir/err"
rc=$?
grep -E '^(ok|not ok) 1 ' "$dir/out" || echo "not ok 1 - no result from rank 0"
if [ $rc -eq 0 ]; then
    echo "ok 2 - mpirun -np 3 exited with status 0"
else
    sed 's/^/# /' "$dir/err" | tail -20
    echo "not ok 2 - mpirun -np 3 exited with status $rc"
fi
exit 0
