#!/bin/sh
# erase-bench's tables give the spread of every figure's samples (min,
# median, max) beside it: gemm with the FMA peak measured between its
# samples, streams, model and schedules (modes interleaved); any warning
# line is the one of bench_common.c; gpt's tokens/s, MFU and PyTorch
# columns (issue 15); nanochat's structure lines and rows (issue 34). Sizes are fixed and tiny: the figures
# are not checked, only that every row has its columns and numbers (on
# stdout: stderr has the start-up line and a sanitizer build's report).
. "$(dirname "$0")/../comm/mpi.sh"
need apps/erase-bench
workdir
echo "1..11"

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

# gpt (issue 15): a tiny size (2 layers, width 16, 2 heads, context 8,
# vocab 32); --torch through a stand-in python (ERASE_TORCH_PYTHON) that
# prints bench/gpt_torch.py's line with fixed figures: its min, median and
# max are the torch columns, x_torch the ratio of the medians
cat >"$dir/torch-stub" <<'EOF2'
#!/bin/sh
echo '{"framework": "pytorch", "torch": "stub", "model": "gpt", "tokens_per_s_median": 1000.0, "tokens_per_s_min": 900.0, "tokens_per_s_max": 1100.0}'
EOF2
chmod +x "$dir/torch-stub"
gpt_model="model size batch threads tok/s_min tok/s tok/s_max step_ms MFU torch_min torch torch_max torch_MFU x_torch"
ERASE_TORCH_PYTHON=$dir/torch-stub apps/erase-bench model --model gpt --size 2,16,2,8,32 --batch 2 --threads 1,2 \
    --steps 2 --warmup 0 --repeats 2 --torch >"$dir/gpt" 2>"$dir/gpt.err"
rc=$?
[ $rc = 0 ] && table "$dir/gpt" "$gpt_model" 10 && [ "$(grep -c '^gpt ' "$dir/gpt")" = 2 ] &&
    grep -q '^# FLOPs per token 6N + 12LCT = 45696 (N = 7104 parameters without the position embedding)$' "$dir/gpt" &&
    grep -q "^# torch: $dir/torch-stub .*/bench/gpt_torch.py, PyTorch stub " "$dir/gpt" &&
    grep '^gpt ' "$dir/gpt" | awk '
        $2 != "custom" || $3 != 2 || $10 != 900 || $11 != 1000 || $12 != 1100 { bad = 1 }
        # the ratio of the unrounded medians: within a rounding of the printed one
        { x = substr($14, 1, length($14) - 1) - $6 / 1000 }
        $14 !~ /x$/ || x > 0.0051 || x < -0.0051 { bad = 1 }
        # MFUs from the printed (rounded) figures: within the last digit of
        # the MFU and the error of the peak printed to 0.1 GFLOP/s (a loaded
        # machine measures a low peak, and so a high MFU)
        { mfu = 100 * 45696 * $6 / ($4 * peak * 1e9); d = substr($9, 1, length($9) - 1) - mfu; tol = 0.1 + mfu * 0.05 / peak }
        $5 > $6 || $6 > $7 || $9 !~ /%$/ || d > tol || d < -tol { bad = 1 }
        { mfu = 100 * 45696 * 1000 / ($4 * peak * 1e9); d = substr($13, 1, length($13) - 1) - mfu; tol = 0.1 + mfu * 0.05 / peak }
        $13 !~ /%$/ || d > tol || d < -tol { bad = 1 }
        END { exit bad }' peak="$(sed -n 's/^# peak: SGEMM 1024^3 on 1 thread \([0-9.]*\) GFLOP\/s .*/\1/p' "$dir/gpt")"
tap $? "erase-bench model --model gpt --torch: tokens/s min <= median <= max, MFU, PyTorch's min, median, max, MFU and the ratio (status $rc)"
tap_report "$dir/gpt"; [ $rc = 0 ] || tap_report "$dir/gpt.err"

printf '#!/bin/sh\nexit 0\n' >"$dir/torch-none"
chmod +x "$dir/torch-none"
ERASE_TORCH_PYTHON=$dir/torch-none apps/erase-bench model --model gpt --size 2,16,2,8,32 --batch 2 --threads 1 \
    --steps 2 --warmup 0 --repeats 1 --torch >"$dir/gpt" 2>"$dir/gpt.err"
rc=$?
[ $rc = 0 ] && table "$dir/gpt" "$gpt_model" 10 && grep '^gpt ' "$dir/gpt" | grep -q ' - *- *- *- *-$' &&
    grep -q "erase-bench model: --torch: $dir/torch-none [^ ]*bench/gpt_torch.py printed no tokens/s" "$dir/gpt.err" # the source path as built (relative in distcheck)
tap $? "erase-bench model --model gpt --torch with a python that prints nothing: said on stderr, the torch columns '-' (status $rc)"
tap_report "$dir/gpt.err"
# a python without torch: said at once, before erase's half runs (status 1, no table)
printf '#!/bin/sh\nexit 1\n' >"$dir/torch-missing"
chmod +x "$dir/torch-missing"
ERASE_TORCH_PYTHON=$dir/torch-missing apps/erase-bench model --model gpt --size 2,16,2,8,32 --batch 2 --threads 1 \
    --steps 2 --warmup 0 --repeats 1 --torch >"$dir/gpt" 2>"$dir/gpt.err"
rc=$?
[ $rc = 1 ] && ! grep -q "^gpt " "$dir/gpt" &&
    [ "$(cat "$dir/gpt.err")" = "erase-bench model: --torch: $dir/torch-missing cannot import torch (PyTorch 2.x from PyPI in a venv: activate it, or set ERASE_TORCH_PYTHON to its python; or drop --torch)" ]
tap $? "erase-bench model --torch with a python that cannot import torch: one line before any timing (status $rc)"
tap_report "$dir/gpt.err"

# nanochat (issue 34), without --torch: its sizes line, FLOPs per token
# 6N + 12LCT with N = 12 L C^2 + V C (no token embedding; here 2 layers,
# width 32, context 8, vocab 32: N = 25,600, 159,744 FLOPs), a row per
# thread count, the torch columns '-'
apps/erase-bench model --model nanochat --size 2,32,2,8,32 --batch 2 --threads 1,2 --steps 2 --warmup 0 \
    --repeats 1 >"$dir/nano" 2>"$dir/nano.err"
rc=$?
[ $rc = 0 ] && table "$dir/nano" "$gpt_model" 10 &&
    grep -q '^# nanochat custom: 2 layers, width 32, 2 heads, context 8, vocab 32, batch 2, no cuts, mode off$' "$dir/nano" &&
    grep -q '^# FLOPs per token 6N + 12LCT = 159744 (N = 25600 parameters without the token embedding)$' "$dir/nano" &&
    [ "$(grep -c -E '^nanochat +custom +2 +[12] .* - +- +- +- +-$' "$dir/nano")" = 2 ] && ! grep -q '^# torch' "$dir/nano"
tap $? "erase-bench model --model nanochat: its sizes, FLOPs per token and a row per thread count (status $rc)"
tap_report "$dir/nano"; [ $rc = 0 ] || tap_report "$dir/nano.err"

# --size DEPTH: nanochat's sizes of that depth (depth 1: width 64, 1 head,
# context 256, vocab 256; N = 12 * 64^2 + 256 * 64 = 65,536, 589,824 FLOPs)
apps/erase-bench model --model nanochat --size 1 --batch 1 --threads 1 --steps 1 --warmup 0 --repeats 1 \
    >"$dir/nano" 2>"$dir/nano.err"
rc=$?
[ $rc = 0 ] && table "$dir/nano" "$gpt_model" 10 &&
    grep -q '^# nanochat d1: 1 layers, width 64, 1 heads, context 256, vocab 256, batch 1, no cuts, mode off$' "$dir/nano" &&
    grep -q '^# FLOPs per token 6N + 12LCT = 589824 (N = 65536 parameters without the token embedding)$' "$dir/nano" &&
    [ "$(grep -c -E '^nanochat +d1 +1 +1 ' "$dir/nano")" = 1 ]
tap $? "erase-bench model --model nanochat --size 1: nanochat's sizes of depth 1 (status $rc)"
tap_report "$dir/nano"; [ $rc = 0 ] || tap_report "$dir/nano.err"

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

ERASE_VERBOSE=-1 timeout -k 5 120 "$MPIRUN" $MPI_FLAGS -np 1 apps/erase-bench schedules --model gpt --widths 16,32 \
    --context 8 --batch 2 --modes off,async --steps 2 --warmup 0 >"$dir/sched" 2>"$dir/sched.err"
rc=$?
[ $rc = 0 ] && table "$dir/sched" \
    "model batch mode qps_p50 qps_p90 x_off x_off90 min_ms step_ms max_ms overlap threads" 9 &&
    [ "$(grep -c -E '^gpt/w16 +2 (off|async) ' "$dir/sched")" = 2 ] && [ "$(grep -c -E '^gpt/w32 +2 (off|async) ' "$dir/sched")" = 2 ] &&
    grep -q '^# gpt: 6 layers cut at 2 and 4 (three sub-graphs), heads = width / 64, context 8, vocab 256; ' "$dir/sched"
tap $? "erase-bench schedules --model gpt: a row per width, batch and mode (status $rc)"
tap_report "$dir/sched"; [ $rc = 0 ] || tap_report "$dir/sched.err"

# the two-cut nanochat through the same path (issue 34): its sizes line, a
# row per width, batch and mode; off overlaps nothing (no backward on a
# side stream)
ERASE_VERBOSE=-1 timeout -k 5 120 "$MPIRUN" $MPI_FLAGS -np 1 apps/erase-bench schedules --model nanochat --widths 16,32 \
    --context 8 --batch 2 --modes off,async --steps 2 --warmup 0 >"$dir/sched" 2>"$dir/sched.err"
rc=$?
[ $rc = 0 ] && table "$dir/sched" \
    "model batch mode qps_p50 qps_p90 x_off x_off90 min_ms step_ms max_ms overlap threads" 9 &&
    [ "$(grep -c -E '^nanochat/w16 +2 (off|async) ' "$dir/sched")" = 2 ] &&
    [ "$(grep -c -E '^nanochat/w32 +2 (off|async) ' "$dir/sched")" = 2 ] &&
    [ "$(grep -c -E '^nanochat/w(16|32) +2 off .* 0% +[0-9]+$' "$dir/sched")" = 2 ] &&
    grep -q '^# nanochat: 4 layers cut at 1 and 3 (three sub-graphs), heads = ceil(width / 128), context 8, vocab 256; ' "$dir/sched"
tap $? "erase-bench schedules --model nanochat: a row per width, batch and mode, off's overlap 0% (status $rc)"
tap_report "$dir/sched"; [ $rc = 0 ] || tap_report "$dir/sched.err"
exit 0
