#!/bin/sh
# erase-train on multi-hot shards (issue 35): ctr with MLPerf's hotness
# (jobs/ctr-multihot.cfg, sum pooling; and mean pooling) on 2 ranks with
# --embeddings row and table evaluates and trains as --embeddings
# replicated, digit for digit, and its checkpoint's parameters are
# replicated's bit for bit (h5diff: 0 differences in every dataset). The
# shards come from erase-convert criteo on TSV whose categorical fields
# hold 1 to hotness ids separated by ','; a build whose converter does not
# write multi-hot shards skips.
. "$(dirname "$0")/../comm/mpi.sh"
need apps/erase-train
need apps/erase-convert
command -v h5diff >/dev/null 2>&1 || skip "no h5diff to compare the checkpoints"
workdir
# 600 rows: label, 13 counts (10% missing), 26 fields of 1 .. hotness ids (5% missing)
awk 'BEGIN { srand(35); split("3 2 1 2 6 1 1 1 1 7 3 8 1 6 9 5 1 1 1 12 100 27 10 3 1 1", hot, " ")
    for (i = 0; i < 600; i++) {
        line = (rand() < 0.25) ? 1 : 0
        for (j = 0; j < 13; j++) line = line "\t" (rand() < 0.1 ? "" : int(rand() * 50))
        for (f = 1; f <= 26; f++) {
            v = ""
            if (rand() >= 0.05) {
                n = 1 + int(rand() * hot[f])
                for (k = 0; k < n; k++) v = v (k ? "," : "") sprintf("%08x", int(rand() * 5000))
            }
            line = line "\t" v
        }
        print line
    } }' >"$dir/mh.tsv"
apps/erase-convert criteo -q -o "$dir/data" "$dir/mh.tsv" >"$dir/convert.out" 2>&1 ||
    skip "erase-convert does not write multi-hot shards in this build (issue 35's reader part)"
echo "1..6"

# run NAME ARGS...: erase-train on 2 ranks, stdout in $dir/NAME.out, a checkpoint at the last step in $dir/NAME
run() {
    name=$1; shift
    ERASE_WATCHDOG_SECONDS=120 timeout -k 5 300 "$MPIRUN" $MPI_FLAGS -np 2 apps/erase-train \
        --train "$dir/data" --quiet --log-every 4 --steps 8 --global-batch 48 --eval-every 4 \
        --checkpoint-dir "$dir/$name" --checkpoint-every 8 "$@" >"$dir/$name.out" 2>"$dir/$name.err"
    rc=$?
}
# lines LOG: the evaluations and training losses without their timings
lines() { sed -n -e 's/ in [0-9.]* s$//p' "$1" | grep '^eval'; grep -o 'loss [^,]*' "$1"; }
# differing A B: the datasets under /params of two checkpoints whose values differ (h5diff -r:
# the first count after each dataset line is its data's)
differing() {
    h5diff -r "$1" "$2" /params /params |
        awk '/^dataset:/ { d = $2; next } d != "" && /differences found/ { if ($1 != 0) print d; d = "" }'
}

printf 'model = "ctr";\nctr: { hotness = "mlperf"; pooling = "mean"; };\n' >"$dir/mean.cfg"
for pooling in sum mean; do
    model=${srcdir:-.}/jobs/ctr-multihot.cfg
    [ $pooling = mean ] && model=$dir/mean.cfg
    run rep-$pooling --model "$model" --embeddings replicated
    [ $rc = 0 ] || { tap_report "$dir/rep-$pooling.out"; tap_report "$dir/rep-$pooling.err"; }
    lines "$dir/rep-$pooling.out" >"$dir/rep-$pooling.lines"
    kinds="row table"
    [ $pooling = mean ] && kinds=row
    for kind in $kinds; do
        run $kind-$pooling --model "$model" --embeddings $kind
        lines "$dir/$kind-$pooling.out" >"$dir/$kind-$pooling.lines"
        [ $rc = 0 ] && [ "$(grep -c '^eval' "$dir/rep-$pooling.lines")" -ge 2 ] &&
            cmp -s "$dir/rep-$pooling.lines" "$dir/$kind-$pooling.lines"
        ok=$?
        tap $ok "multi-hot (mlperf, $pooling): --embeddings $kind evaluates and trains as replicated (status $rc)"
        [ $ok = 0 ] || { tap_report "$dir/$kind-$pooling.out"; tap_report "$dir/$kind-$pooling.err"; }
        differing "$dir/rep-$pooling/ckpt-8.h5" "$dir/$kind-$pooling/ckpt-8.h5" >"$dir/differ" 2>&1
        [ -f "$dir/$kind-$pooling/ckpt-8.h5" ] && [ ! -s "$dir/differ" ] &&
            h5diff -q "$dir/rep-$pooling/ckpt-8.h5" "$dir/$kind-$pooling/ckpt-8.h5" /params/sub6/head/weight /params/sub6/head/weight
        ok=$?
        tap $ok "multi-hot (mlperf, $pooling): --embeddings $kind's checkpoint holds replicated's parameters bit for bit"
        [ $ok = 0 ] || tap_report "$dir/differ"
    done
done
