#!/bin/sh
# erase-train --metrics: JSON lines, one object per log interval ("train"),
# evaluation, checkpoint and the run ("summary"); a value JSON cannot hold
# (the NE and AUC of an evaluation set without a click are NaN) is null,
# and a path is a JSON string. --trace: a path that cannot be written is
# refused before the first step; a run shorter than the warm-up plus
# --trace-steps traces the steps it has.
. "$(dirname "$0")/../comm/mpi.sh"
need apps/erase-train
need apps/erase-convert
workdir
echo "1..5"
sample=${srcdir:-.}/data/criteo/kaggle-train-first9999.tsv

# 1,000 lines of the sample with every label 0
head -n 1000 "$sample" | sed 's/^1\t/0\t/' >"$dir/noclick.tsv"
apps/erase-convert criteo -q -o "$dir/data" "$dir/noclick.tsv" >"$dir/convert.out" 2>&1 || tap_report "$dir/convert.out"
mkdir "$dir/ck\"pt" # a quote in the checkpoint path
# under mpirun, as every test of a whole run (LeakSanitizer's exit check
# fails in an Open MPI singleton)
timeout -k 5 120 "$MPIRUN" $MPI_FLAGS -np 1 apps/erase-train --train "$dir/data" --batch 64 --steps 6 --log-every 2 --quiet \
    --checkpoint-dir "$dir/ck\"pt" --metrics "$dir/m.jsonl" >"$dir/out" 2>&1
rc=$?
m=$dir/m.jsonl
[ $rc = 0 ] && [ "$(grep -c '^{"type":"train",' "$m")" = 3 ] && [ "$(grep -c '^{"type":"eval",' "$m")" = 1 ] &&
    [ "$(grep -c '^{"type":"checkpoint",' "$m")" = 1 ] && [ "$(grep -c '^{"type":"summary",' "$m")" = 1 ] &&
    [ "$(wc -l <"$m")" = 6 ] && ! grep -v -q '}$' "$m"
tap $? "6 steps, --log-every 2, a checkpoint: 3 train, 1 eval, 1 checkpoint, 1 summary line (status $rc)"
[ $rc = 0 ] || tap_report "$dir/out"

grep -q '^{"type":"eval",.*"ne":null,"auc":null,.*"base_rate":0.000000}$' "$m" &&
    grep -q '"ne":null,"auc":null,"ranks":1,' "$m" && ! grep -q -i -E '[:,[]-?(nan|inf)' "$m"
tap $? "an evaluation set without a click: NE and AUC are null in the eval and summary lines, no nan or inf"
grep -E '"type":"(eval|summary)"' "$m" | sed 's/^/# /'

grep -q -F "\"path\":\"$dir/ck\\\"pt/ckpt-6.h5\"," "$m"
tap $? "the checkpoint's path is a JSON string (its quote escaped)"
grep '"type":"checkpoint"' "$m" | sed 's/^/# /'

timeout -k 5 120 "$MPIRUN" $MPI_FLAGS -np 1 apps/erase-train --train "$dir/data" --batch 64 --steps 6 --log-every 1 \
    --trace "$dir/no/such/dir/t.json" >"$dir/out" 2>&1
rc=$?
[ $rc = 1 ] && grep -q -F -e "--trace $dir/no/such/dir/t.json: cannot write: No such file or directory" "$dir/out" &&
    ! grep -q '^train  step' "$dir/out"
tap $? "--trace into a missing directory: status $rc before the first step"
grep -e '--trace' "$dir/out" | sed 's/^/# /'

timeout -k 5 120 "$MPIRUN" $MPI_FLAGS -np 1 apps/erase-train --train "$dir/data" --batch 64 --steps 4 --quiet --trace "$dir/t.json" \
    >"$dir/out" 2>&1
rc=$?
[ $rc = 0 ] && [ "$(head -n 1 "$dir/t.json")" = "[" ] && [ "$(tail -n 1 "$dir/t.json")" = "]" ] && [ "$(grep -c '"ph":"X"' "$dir/t.json")" -gt 0 ] &&
    grep -q "^trace  $dir/t.json: 1 ranks, " "$dir/out"
tap $? "4 steps with --trace (warm-up 1 + 5 trace steps > 4): the trace of steps 2-4 is written (status $rc)"
[ $rc = 0 ] || tap_report "$dir/out"
exit 0
