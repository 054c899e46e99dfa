#!/bin/sh
# erase-bench's tables give the spread of every figure's samples (min,
# median, max) beside it: gemm with the FMA peak measured between its
# samples, streams, model and schedules (modes interleaved); any warning
# line is the one of bench_common.c. Sizes are fixed and tiny: the figures
# are not checked, only that every row has its columns and numbers (on
# stdout: stderr has the start-up line and a sanitizer build's report).
. "$(dirname "$0")/../comm/mpi.sh"
need apps/erase-bench
workdir
echo "1..4"

# table FILE HEADER N: FILE's first non-comment line is HEADER (spaces
# squeezed), it has rows, each ending in N numbers (or '-'), and every
# comment line after the header is a spread warning
table() {
    rows=$(grep -v '^#' "$1" | sed 1d)
    [ "$(grep -v '^#' "$1" | head -1 | tr -s ' ')" = "$2" ] && [ -n "$rows" ] &&
        echo "$rows" | awk -v n="$3" '
            NF < n { bad = 1 }
            { for (i = NF - n + 1; i <= NF; i++) if ($i !~ /^([0-9]+(\.[0-9]+)?[%x]?|-)$/) bad = 1 }
            END { exit bad }' &&
        ! sed -n '/^[^#]/,$p' "$1" | grep '^#' | grep -v -q -E \
            '^# warning: .*: samples spread [0-9]+% \(.* \.\. .*\): the machine was busy; figures are not reliable$'
}

apps/erase-bench gemm --shapes 32,16x8x4 --threads 1 --samples 3 >"$dir/gemm" 2>"$dir/gemm.err"
rc=$?
[ $rc = 0 ] && table "$dir/gemm" "shape(MxNxK) threads min_ms median_ms max_ms GFLOP/s peak_GF/s %peak" 7 &&
    grep -q '^# peak: .* loop on as many threads as the GEMM, a sample after each GEMM sample (median)$' "$dir/gemm"
tap $? "erase-bench gemm: min, median, max of the samples and the peak measured in between (status $rc)"
tap_report "$dir/gemm"; [ $rc = 0 ] || tap_report "$dir/gemm.err"

apps/erase-bench streams --shape 16x16x16 --jobs 2 --samples 2 >"$dir/streams" 2>"$dir/streams.err"
rc=$?
[ $rc = 0 ] && table "$dir/streams" "configuration min_ms median_ms max_ms GFLOP/s ratio" 5
tap $? "erase-bench streams: min, median, max of each configuration (status $rc)"
tap_report "$dir/streams"; [ $rc = 0 ] || tap_report "$dir/streams.err"

apps/erase-bench model --model mlp --batch 4 --threads 1 --steps 2 --warmup 0 >"$dir/model" 2>"$dir/model.err"
rc=$?
[ $rc = 0 ] && table "$dir/model" \
    "model batch threads samples/s p90 min_ms step_ms max_ms GEMM_GF/s %sgemm torch_s/s x_torch" 11
tap $? "erase-bench model: min, median, max of the step time (status $rc)"
tap_report "$dir/model"; [ $rc = 0 ] || tap_report "$dir/model.err"

# under mpirun, as every test of a whole run (LeakSanitizer's exit check
# crashes in an Open MPI singleton: the ASan build failed now and then)
ERASE_VERBOSE=-1 timeout -k 5 120 "$MPIRUN" $MPI_FLAGS -np 1 apps/erase-bench schedules --model mlp --batch 4 \
    --modes off,async --steps 2 --warmup 0 >"$dir/sched" 2>"$dir/sched.err"
rc=$?
[ $rc = 0 ] && table "$dir/sched" \
    "model batch mode qps_p50 qps_p90 x_off x_off90 min_ms step_ms max_ms overlap threads" 9 &&
    [ "$(grep -c '^mlp ' "$dir/sched")" = 2 ]
tap $? "erase-bench schedules: min, median, max of the step time of each mode (status $rc)"
tap_report "$dir/sched"; [ $rc = 0 ] || tap_report "$dir/sched.err"
exit 0
