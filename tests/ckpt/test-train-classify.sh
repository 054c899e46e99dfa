#!/bin/sh
# erase-train's classify task (issue 14): a small mlp (784-64-64-64-10,
# every layer detached) on 512 MNIST rows (256 held out) through the same
# run loop as ctr: the four early-backward modes end with bitwise-equal
# parameters, optimizer state and data cursor; a run killed (SIGKILL) after
# a random step and resumed with --resume auto ends bitwise equal to an
# uninterrupted one; 1, 2 and 4 ranks at the same global batch give the
# same eval accuracy and top-5 and the eval loss within 1e-4 (the metrics
# are exact integer sums, so equal parameters evaluate identically on any
# number of ranks; the parameters themselves may differ in the last bits
# between rank counts, because the order of the gradient reduction
# changes). ERASE_TEST_SEED replays the kill.
. "$(dirname "$0")/ckpt.sh"
: "${srcdir:=.}"
dir=$(mktemp -d "$PWD/tmp-cls-XXXXXX") || exit 99
if [ "${ERASE_KEEP_TEST_DIR:-0}" = 1 ]; then echo "# keeping $dir"; else trap 'rm -rf "$dir"' EXIT; fi
setup_mnist "$dir/model.cfg"
mv "$dir/mnist/train" "$dir/data" # train() reads $dir/data
echo "1..10"
echo "# seed $seed (ERASE_TEST_SEED=$seed replays the kill)"
# 16 steps of 32 per epoch: 40 steps cross two epoch ends
ARGS="--eval $dir/mnist/eval --global-batch 32 --steps 40 --log-every 5 --eval-every 20 --optimizer adamw --lr 0.002
      --warmup-steps 4 --lr-decay cosine --checkpoint-every 6 --keep-checkpoints 2"

# ---- the four early-backward modes
for mode in off blocking async graph; do
    out=$dir/$mode.out
    # shellcheck disable=SC2086 # ARGS are options
    train 2 $ARGS --early-backward $mode --checkpoint-dir "$dir/$mode" --metrics "$dir/$mode.jsonl"
    [ $rc = 0 ] && [ -f "$dir/$mode/ckpt-40.h5" ] && grep -q '^  model      mlp, 3 blocks, 2 cuts' "$out" &&
        grep -q '^eval   step 40: loss [0-9.]*  accuracy [0-9.]*  top-5 [0-9.]*  (256 samples) in ' "$out"
    tap $? "--early-backward $mode on 2 ranks: 40 steps, eval lines of loss, accuracy, top-5 (status $rc)"
    [ $rc = 0 ] || show "$out"
done
grep -E '^(train  step 40|eval   step 40)' "$dir/graph.out" | sed 's/^/# /'
modes_equal

# ---- kill after a random step, resume
kill_resume

# ---- 1 vs 2 vs 4 ranks at global batch 32
summary() { grep '"type":"summary"' "$1" | sed 's/.*\("loss":[^,]*\).*\("accuracy":[^,]*\).*\("top5":[^,]*\).*/\1 \2 \3/'; }
other_ranks
s1=$(summary "$dir/np1.jsonl") s2=$(summary "$dir/graph.jsonl") s4=$(summary "$dir/np4.jsonl")
echo "# 1 rank:  $s1"
echo "# 2 ranks: $s2"
echo "# 4 ranks: $s4"
ok=0
for s in "$s2" "$s4"; do
    [ -n "$s" ] && [ "$(field "$s" accuracy)" = "$(field "$s1" accuracy)" ] &&
        [ "$(field "$s" top5)" = "$(field "$s1" top5)" ] &&
        awk -v a="$(field "$s" loss)" -v b="$(field "$s1" loss)" 'BEGIN { d = a - b; exit !(d < 1e-4 && d > -1e-4) }' ||
        ok=1
done
tap $ok "1, 2 and 4 ranks: equal eval accuracy and top-5, loss within 1e-4"
