#!/bin/sh
# erase-bench schedules --feasibility --data DIR (issue 14): the ERASE MLP
# table on MNIST batches from classification shards (400 images converted
# here), on 1 and 2 ranks: the table's exact header, the paper's figures
# as reference lines, a row per mode with numbers (timings are not
# checked). A bad --data (a missing directory, a CTR dataset) is one line
# naming it and what was expected, status 1; --data without --feasibility
# is a usage error (status 2).
. "$(dirname "$0")/../comm/mpi.sh"
need apps/erase-convert
need apps/erase-bench
workdir
echo "1..5"
images=${srcdir:-.}/data/mnist/t10k-images-idx3-ubyte.gz
labels=${srcdir:-.}/data/mnist/t10k-labels-idx1-ubyte.gz
ERASE_VERBOSE=-1
export ERASE_VERBOSE
# every run under mpirun, one rank too (LeakSanitizer's exit check crashes
# in an Open MPI singleton)
mpi() { timeout -k 5 120 "$MPIRUN" $MPI_FLAGS -np "$@"; }

apps/erase-convert mnist -q "$images" "$labels" -o "$dir/mnist" --split 300,100 >"$dir/convert.out" 2>&1 ||
    { tap_report "$dir/convert.out"; echo "Bail out! erase-convert mnist failed"; exit 0; }
header="batch mode backward_ms bwd_vs exposed_ms min_ms step_ms max_ms step_vs overlap samples/s"
expected="expected classification shards (erase-cls-1: /features float [N, F], /label;"
expected="$expected erase-convert mnist IMAGES LABELS -o X, then --data X/train)"

# feasibility FILE: FILE holds the model line, the batches line naming
# the data, the paper's two reference lines, the header, and a row per
# mode (off, blocking, async, graph) of batch 32 ending in 9 figures (a
# number, a signed % change or '-' for off's changes); any other comment
# line after the header is a spread warning
feasibility() {
    grep -q '^# ERASE feasibility: MLP 784-1024-1024-1024-10, each layer detached' "$1" &&
        grep -q "^# batches: $dir/mnist/train, the classification reader's global order" "$1" &&
        grep -q '^# paper off    backward 23.5 ms          step 41.2 ms .*not measured here' "$1" &&
        grep -q '^# paper early  backward  9.9 ms (-58%)   step 28.8 ms (-30%) ' "$1" &&
        [ "$(grep -v '^#' "$1" | head -1 | tr -s ' ' | sed 's/^ //')" = "$header" ] &&
        [ "$(grep -v '^#' "$1" | sed 1d | awk '{ print $1, $2 }' | tr '\n' ' ')" = \
            "32 off 32 blocking 32 async 32 graph " ] &&
        grep -v '^#' "$1" | sed 1d | awk '
            NF != 11 { bad = 1 }
            { for (i = 3; i <= NF; i++) if ($i !~ /^([0-9]+(\.[0-9]+)?%?|[+-][0-9]+%|-)$/) bad = 1 }
            $2 == "off" && ($4 != "-" || $9 != "-") { bad = 1 }
            END { exit bad }' &&
        ! sed -n '/^ *batch /,$p' "$1" | grep '^#' | grep -v -q -E \
            '^# warning: batch 32, [a-z]+: samples spread [0-9]+% \(.* \.\. .*\): the machine was busy; '\
'figures are not reliable$'
}

mpi 1 apps/erase-bench schedules --feasibility --data "$dir/mnist/train" --batch 32 --steps 3 --warmup 1 \
    >"$dir/one" 2>"$dir/one.err"
rc=$?
[ $rc = 0 ] && feasibility "$dir/one"
tap $? "1 rank: the header, the paper's reference lines and a row per mode with numbers (status $rc)"
tap_report "$dir/one"; [ $rc = 0 ] || tap_report "$dir/one.err"

mpi 2 apps/erase-bench schedules --feasibility --data "$dir/mnist/train" --batch 32 --steps 3 --warmup 1 \
    >"$dir/two" 2>"$dir/two.err"
rc=$?
[ $rc = 0 ] && feasibility "$dir/two" && grep -q '^# batches: .*; global batch = 2 x batch$' "$dir/two"
tap $? "2 ranks (global batch 64): the same table once, from rank 0 (status $rc)"
tap_report "$dir/two"; [ $rc = 0 ] || tap_report "$dir/two.err"

# bad FILE LINE: status 1 and exactly one line of erase-bench in FILE
# (stderr): LINE (mpirun adds its note on the status, a sanitizer build
# its report)
bad() {
    [ "$rc" = 1 ] && [ "$(grep -c '^erase-bench' "$1")" = 1 ] && grep -q -x -F "$2" "$1"
}

mpi 1 apps/erase-bench schedules --feasibility --data "$dir/missing" --batch 32 --steps 1 >/dev/null 2>"$dir/err"
rc=$?
bad "$dir/err" \
    "erase-bench schedules: --data $dir/missing: $dir/missing: cannot open: No such file or directory; $expected"
tap $? "a missing --data directory: status $rc, the directory named and what was expected"
tap_report "$dir/err"

# a CTR dataset of the Criteo sample's first 300 lines
head -n 300 "${srcdir:-.}/data/criteo/kaggle-train-first9999.tsv" >"$dir/ctr.tsv"
apps/erase-convert criteo -q -o "$dir/ctr" "$dir/ctr.tsv" >"$dir/convert.out" 2>&1 || tap_report "$dir/convert.out"
mpi 2 apps/erase-bench schedules --feasibility --data "$dir/ctr" --batch 32 --steps 1 >/dev/null 2>"$dir/err"
rc=$?
bad "$dir/err" "erase-bench schedules: --data $dir/ctr: $dir/ctr/part-00000.h5: attribute format: \
expected \"erase-cls-1\", got \"erase-ctr-1\"; $expected"
tap $? "a CTR dataset as --data on 2 ranks: status $rc, one line naming the shard and both formats"
tap_report "$dir/err"

apps/erase-bench schedules --data "$dir/mnist/train" >/dev/null 2>"$dir/err"
rc=$?
[ $rc = 2 ] && grep -q -x 'erase-bench schedules: --data feeds --feasibility (the MLP); give both' "$dir/err"
tap $? "--data without --feasibility: a usage error (status $rc)"
[ $rc = 2 ] || tap_report "$dir/err"
exit 0
