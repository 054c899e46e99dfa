#!/bin/sh
# erase-train --metrics: JSON lines, one object per log interval ("train"),
# evaluation, checkpoint and the run ("summary"), each with the time (unix
# seconds) and the training samples so far; a value JSON cannot hold (the
# NE and AUC of an evaluation set without a click are NaN) is null, with
# the reason, and a path is a JSON string. Predictions that are not finite
# (a diverged model) are counted and reported, NE and AUC undefined (they
# once indexed the AUC histogram out of range: a segmentation fault); a log
# window whose steps were all skipped says so. --trace: a path that cannot
# be written is refused before the first step; a run shorter than the
# warm-up plus --trace-steps traces the steps it has.
. "$(dirname "$0")/../comm/mpi.sh"
need apps/erase-train
need apps/erase-convert
workdir
echo "1..10"
sample=${srcdir:-.}/data/criteo/kaggle-train-first9999.tsv

# 1,000 lines of the sample with every label 0
head -n 1000 "$sample" | sed 's/^1\t/0\t/' >"$dir/noclick.tsv"
apps/erase-convert criteo -q -o "$dir/data" "$dir/noclick.tsv" >"$dir/convert.out" 2>&1 || tap_report "$dir/convert.out"
mkdir "$dir/ck\"pt" # a quote in the checkpoint path
# under mpirun, as every test of a whole run (LeakSanitizer's exit check
# fails in an Open MPI singleton)
t0=$(date +%s)
timeout -k 5 120 "$MPIRUN" $MPI_FLAGS -np 1 apps/erase-train --train "$dir/data" --batch 64 --steps 6 --log-every 2 --quiet \
    --checkpoint-dir "$dir/ck\"pt" --metrics "$dir/m.jsonl" >"$dir/out" 2>&1
rc=$?
t1=$(date +%s)
m=$dir/m.jsonl
[ $rc = 0 ] && [ "$(grep -c '^{"type":"train",' "$m")" = 3 ] && [ "$(grep -c '^{"type":"eval",' "$m")" = 1 ] &&
    [ "$(grep -c '^{"type":"checkpoint",' "$m")" = 1 ] && [ "$(grep -c '^{"type":"summary",' "$m")" = 1 ] &&
    [ "$(wc -l <"$m")" = 6 ] && ! grep -v -q '}$' "$m"
tap $? "6 steps, --log-every 2, a checkpoint: 3 train, 1 eval, 1 checkpoint, 1 summary line (status $rc)"
[ $rc = 0 ] || tap_report "$dir/out"

why='"ne":null,"auc":null,"log_loss":[0-9.]+,"calibration":null,"base_rate":0.000000,"undefined":"the evaluation set has no clicks",'
grep -q -E "^\{\"type\":\"eval\",.*,\"eval_samples\":200,\"nonfinite\":0,$why\"seconds\":[0-9.]+}\$" "$m" &&
    grep -q -E "^\{\"type\":\"summary\",.*,\"eval_samples\":200,\"nonfinite\":0,$why" "$m" &&
    ! grep -q -i -E '[:,[]-?(nan|inf)' "$m"
tap $? "an evaluation set without a click: NE and AUC are null in the eval and summary lines, with the reason; no nan or inf"
grep -E '"type":"(eval|summary)"' "$m" | sed 's/^/# /'

grep -q -E '^eval   step 6: NE and AUC undefined: the evaluation set has no clicks  log loss [0-9.]+  \(200 samples, base rate 0.0000\) in [0-9.]+ s$' "$dir/out" &&
    grep -q -E '^  eval       NE and AUC undefined: the evaluation set has no clicks  log loss [0-9.]+  \(200 samples, base rate 0.0000\)$' "$dir/out" &&
    grep -q -E '^  eval time  [0-9.]+ s in 1 evaluation \(not in the steps. time\)$' "$dir/out" && ! grep -q -i nan "$dir/out"
tap $? "the eval line and the summary say why NE and AUC are undefined, and the evaluation's time"
grep -E '^eval|^  eval' "$dir/out" | sed 's/^/# /'

# every line: "time" within the run, "samples" the training samples so far
# (64 a step on 1 rank; the evaluation and checkpoint at step 6)
bad=$(sed -E 's/^\{"type":"[a-z]+","step":([0-9]+),"time":([0-9]+)\.[0-9]{3},"samples":([0-9]+),.*/\1 \2 \3/' "$m" |
    while read -r step time samples; do
        [ "$samples" = $((step * 64)) ] && [ "$time" -ge "$t0" ] && [ "$time" -le "$t1" ] || echo "$step $time $samples"
    done)
[ -z "$bad" ] && [ "$(grep -c -E '^\{"type":"[a-z]+","step":[0-9]+,"time":[0-9.]+,"samples":[0-9]+,' "$m")" = 6 ]
tap $? "every metrics line has the time ($t0..$t1) and the training samples so far (step x 64)${bad:+; wrong: $bad}"

grep -q -F ",\"path\":\"$dir/ck\\\"pt/ckpt-6.h5\"," "$m"
tap $? "the checkpoint's path is a JSON string (its quote escaped)"
grep '"type":"checkpoint"' "$m" | sed 's/^/# /'

timeout -k 5 120 "$MPIRUN" $MPI_FLAGS -np 1 apps/erase-train --train "$dir/data" --batch 64 --steps 6 --log-every 1 \
    --trace "$dir/no/such/dir/t.json" >"$dir/out" 2>&1
rc=$?
[ $rc = 2 ] && grep -q -F -e "--trace $dir/no/such/dir/t.json: cannot write: No such file or directory" "$dir/out" &&
    ! grep -q '^train  step' "$dir/out"
tap $? "--trace into a missing directory: status $rc before the first step"
grep -e '--trace' "$dir/out" | sed 's/^/# /'

timeout -k 5 120 "$MPIRUN" $MPI_FLAGS -np 1 apps/erase-train --train "$dir/data" --batch 64 --steps 4 --quiet --trace "$dir/t.json" \
    >"$dir/out" 2>&1
rc=$?
[ $rc = 0 ] && [ "$(head -n 1 "$dir/t.json")" = "[" ] && [ "$(tail -n 1 "$dir/t.json")" = "]" ] && [ "$(grep -c '"ph":"X"' "$dir/t.json")" -gt 0 ] &&
    grep -q "^trace  $dir/t.json: 1 rank, " "$dir/out"
tap $? "4 steps with --trace (warm-up 1 + 5 trace steps > 4): the trace of steps 2-4 is written (status $rc)"
[ $rc = 0 ] || tap_report "$dir/out"

# A diverged model (an outside trial's learning rate): the first step makes
# the embeddings overflow, every prediction after it is NaN. Two ranks: the
# counts are reduced. Its evaluation was a segmentation fault in
# erase_ctr_metrics_add.
head -n 1000 "$sample" >"$dir/some.tsv"
apps/erase-convert criteo -q -o "$dir/some" "$dir/some.tsv" >"$dir/convert.out" 2>&1 || tap_report "$dir/convert.out"
timeout -k 5 120 "$MPIRUN" $MPI_FLAGS -np 2 apps/erase-train --train "$dir/some" --batch 8 --steps 2 \
    --nonfinite skip --update end --embedding-lr 1e20 --metrics "$dir/nan.jsonl" >"$dir/out" 2>&1
rc=$?
[ $rc = 0 ] &&
    grep -q -x 'eval   step 2: NE and AUC undefined: 200 of 200 predictions are not finite  (200 samples, base rate 0.2300) in [0-9.]* s' "$dir/out" &&
    grep -q -x '  eval       NE and AUC undefined: 200 of 200 predictions are not finite  (200 samples, base rate 0.2300)' "$dir/out" &&
    grep -q -x -E 'train  step 2/2 epoch 0: [0-9.]+ samples/s, loss undefined, NE undefined: 16 of 32 predictions are not finite, lr [0-9.e-]+, ETA [0-9]+ s' "$dir/out"
tap $? "NaN predictions: counted over both ranks, NE and AUC undefined in the train and eval lines and the summary (status $rc)"
grep -E '^(eval|train|step|  eval|  skipped)' "$dir/out" | sed 's/^/# /'
[ $rc = 0 ] || tap_report "$dir/out"

e='"eval_samples":200,"nonfinite":200,"ne":null,"auc":null,"log_loss":null,"calibration":null,"base_rate":0.230000,"undefined":"200 of 200 predictions are not finite",'
[ "$(grep -c -F "$e" "$dir/nan.jsonl")" = 2 ] && grep -q -E '^\{"type":"eval",' "$dir/nan.jsonl" &&
    grep -q -E '^\{"type":"train","step":2,.*,"window_samples":32,"nonfinite":16,"skipped":1,"qps":[0-9.]+,"loss":null,"ne":null,' "$dir/nan.jsonl" &&
    ! grep -q -i -E '[:,[]-?(nan|inf)' "$dir/nan.jsonl"
tap $? "the metrics file: null NE and AUC, the count of non-finite predictions and the reason in the eval and summary lines"
sed 's/^/# /' "$dir/nan.jsonl"

# --lr 10 --embedding-lr 1000: every step after the first is skipped
timeout -k 5 120 "$MPIRUN" $MPI_FLAGS -np 2 apps/erase-train --train "$dir/some" --batch 8 --steps 6 --log-every 2 \
    --nonfinite skip --update end --lr 10 --embedding-lr 1000 --metrics "$dir/skip.jsonl" >"$dir/out" 2>&1
rc=$?
[ $rc = 0 ] &&
    grep -q -x -E 'train  step 4/6 epoch 0: [0-9.]+ samples/s, all 2 steps of this window skipped \(non-finite gradients\), lr [0-9.e-]+, ETA [0-9]+ s' "$dir/out" &&
    grep -q -x -E 'train  step 6/6 epoch 0: [0-9.]+ samples/s, all 2 steps of this window skipped \(non-finite gradients\), lr [0-9.e-]+, ETA [0-9]+ s' "$dir/out" &&
    ! grep -q -E '^train.*(loss 0\.0000|NE 0\.0000|nan)' "$dir/out" &&
    [ "$(grep -c -E '^\{"type":"train","step":[46],.*,"skipped":2,"qps":[0-9.]+,"loss":null,"ne":null,' "$dir/skip.jsonl")" = 2 ]
tap $? "a log window whose steps were all skipped says so, on screen and in the metrics file (status $rc)"
grep -E '^(train|step)' "$dir/out" | sed 's/^/# /'
[ $rc = 0 ] || tap_report "$dir/out"
exit 0
