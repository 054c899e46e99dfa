#!/bin/sh
# erase-train --eval-only (issue 14): the checkpoint a training run wrote
# at its end, evaluated without training on 1, 2 and 3 ranks
# (oversubscribed), prints the eval line of that run's last evaluation,
# character for character but the seconds (the metrics are exact integer
# sums, so the number of ranks changes nothing); the same for the classify
# task (mlp on MNIST rows); --resume auto evaluates the newest checkpoint
# and leaves the directory as it was; usage errors exit 2.
. "$(dirname "$0")/ckpt.sh"
: "${srcdir:=.}"
setup_data
echo "1..12"
# evline FILE: the eval line without its time
evline() { grep '^eval   step' "$1" | tail -1 | sed 's/ in [0-9.]* s$//'; }

out=$dir/train.out
train 2 --global-batch 64 --steps 30 --eval-every 10 --checkpoint-dir "$dir/ck"
want=$(evline "$out")
[ $rc = 0 ] && [ -f "$dir/ck/ckpt-30.h5" ] && [ -n "$want" ]
tap $? "ctr: 30 steps on 2 ranks, checkpoint at step 30 (status $rc)"
[ $rc = 0 ] || show "$out"
echo "# training:  $want"
for np in 1 2 3; do
    out=$dir/eval$np.out
    train $np --eval-only --init-from "$dir/ck/ckpt-30.h5" --metrics "$dir/eval$np.jsonl"
    got=$(evline "$out")
    echo "# $np rank(s): $got"
    [ $rc = 0 ] && [ "$got" = "$want" ] && grep -q '^erase-train summary (evaluation only' "$out" &&
        grep -q '"type":"eval","step":30' "$dir/eval$np.jsonl" && ! grep -q '"type":"train"' "$dir/eval$np.jsonl"
    tap $? "ctr: --eval-only --init-from on $np rank(s) prints the training run's eval line, no training (status $rc)"
    [ $rc = 0 ] || show "$out"
done
ls "$dir/ck" >"$dir/before"
out=$dir/auto.out
train 2 --eval-only --resume auto --checkpoint-dir "$dir/ck"
ls "$dir/ck" >"$dir/after"
[ $rc = 0 ] && [ "$(evline "$out")" = "$want" ] && cmp -s "$dir/before" "$dir/after"
tap $? "ctr: --eval-only --resume auto: the same line, the checkpoint directory untouched (status $rc)"
[ $rc = 0 ] || show "$out"

# the held-out part of --train is the one the checkpoint's run held out
# (its --eval-fraction 0.1), not this run's default 0.2: another fraction
# would evaluate on rows it trained on
out=$dir/frac.out
train 1 --global-batch 64 --steps 5 --eval-fraction 0.1 --checkpoint-dir "$dir/ckf"
wantf=$(evline "$out")
out=$dir/frac-eval.out
train 1 --eval-only --init-from "$dir/ckf"
[ $rc = 0 ] && [ -n "$wantf" ] && [ "$(evline "$out")" = "$wantf" ] &&
    grep -q "^note   evaluating the part of --train that .*ckpt-5.h5's run held out (eval_fraction 0.1), not --eval-fraction 0.2$" "$out"
tap $? "--eval-only without --eval: the part of --train the checkpoint's run held out (0.1, not 0.2), said so (status $rc)"
[ $rc = 0 ] || show "$out"

out=$dir/usage1.out
train 1 --eval-only
[ $rc = 2 ] && grep -q 'eval-only: needs a checkpoint' "$out"
tap $? "--eval-only without a checkpoint: usage error (status $rc)"
out=$dir/usage2.out
train 1 --eval-only --init-from "$dir/ck" --steps 5
[ $rc = 2 ] && grep -q 'eval-only and --steps 5' "$out"
tap $? "--eval-only with --steps: usage error (status $rc)"
out=$dir/bad.out
train 1 --eval-only --init-from "$dir/nothing.h5"
[ $rc = 1 ] && grep -q 'nothing.h5' "$out"
tap $? "--eval-only of a missing checkpoint: status 1 naming it (status $rc)"
[ $rc = 1 ] || show "$out"

# ---- classify: the mlp on 512 MNIST rows, 256 held out
apps/erase-convert mnist -q "$srcdir/data/mnist/t10k-images-idx3-ubyte.gz" "$srcdir/data/mnist/t10k-labels-idx1-ubyte.gz" \
    -o "$dir/mnist" --split 512,256 --chunk-rows 64 >"$dir/convert.log" 2>&1 ||
    { show "$dir/convert.log"; echo "Bail out! erase-convert mnist failed"; exit 0; }
mlp() {
    np=$1; shift
    timeout -k 5 120 "$MPIRUN" $MPI_FLAGS -np "$np" apps/erase-train --train "$dir/mnist/train" --eval "$dir/mnist/eval" \
        --model mlp --device cpu --quiet "$@" >"$out" 2>&1
    rc=$?
}
out=$dir/mlp.out
mlp 1 --global-batch 32 --steps 16 --checkpoint-dir "$dir/mlpck"
want=$(evline "$out")
[ $rc = 0 ] && [ -n "$want" ]
tap $? "classify: 16 steps on 1 rank (status $rc)"
[ $rc = 0 ] || show "$out"
echo "# training:  $want"
for np in 2 3; do
    out=$dir/mlp$np.out
    mlp $np --eval-only --init-from "$dir/mlpck"
    got=$(evline "$out")
    echo "# $np ranks: $got"
    [ $rc = 0 ] && [ "$got" = "$want" ]
    tap $? "classify: --eval-only on $np ranks prints the training run's eval line (status $rc)"
    [ $rc = 0 ] || show "$out"
done
