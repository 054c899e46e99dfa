#!/bin/sh
# erase-train's lm task on the gpt model (issue 15): a tiny GPT (2 layers,
# width 32, 4 heads, context 16, byte-level vocab 256, one cut) on the first
# 64 KiB of tinyshakespeare through the same run loop as ctr and mlp: the
# four early-backward modes end with bitwise-equal parameters, optimizer
# state and data cursor; a run killed (SIGKILL) after a random step and
# resumed with --resume auto ends bitwise equal to an uninterrupted one;
# 1, 2 and 4 ranks at the same global batch evaluate alike (the metrics are
# exact integer sums over the windows' positions); the progress, eval and
# metrics-file lines carry loss, perplexity, bits per byte, tokens/s and
# MFU; erase-sample generates from the trained checkpoint. ERASE_TEST_SEED
# replays the kill.
. "$(dirname "$0")/ckpt.sh"
: "${srcdir:=.}"
dir=$(mktemp -d "$PWD/tmp-lm-XXXXXX") || exit 99
if [ "${ERASE_KEEP_TEST_DIR:-0}" = 1 ]; then echo "# keeping $dir"; else trap 'rm -rf "$dir"' EXIT; fi
setup_gpt "$dir/model.cfg" "cuts = [1];"
mv "$dir/text/train" "$dir/data" # train() reads $dir/data
echo "1..14"
echo "# seed $seed (ERASE_TEST_SEED=$seed replays the kill)"
# 58982 train tokens: 3686 windows of 16, 115 steps of 32 per epoch; 40 steps
ARGS="--eval $dir/text/eval --global-batch 32 --steps 40 --log-every 5 --eval-every 20
      --optimizer adamw --lr 0.003 --grad-clip 1 --warmup-steps 4 --lr-decay cosine --checkpoint-every 6
      --keep-checkpoints 2"

# ---- the four early-backward modes
for mode in off blocking async graph; do
    out=$dir/$mode.out
    # shellcheck disable=SC2086 # ARGS are options
    train 2 $ARGS --early-backward $mode --checkpoint-dir "$dir/$mode" --metrics "$dir/$mode.jsonl"
    [ $rc = 0 ] && [ -f "$dir/$mode/ckpt-40.h5" ] && grep -q '^  model      gpt, 2 blocks, 1 cut' "$out" &&
        grep -q '^eval   step 40: loss [0-9.]*  perplexity [0-9.]*  bits per byte [0-9.]*  ([0-9]* tokens, [0-9]* windows) in ' "$out"
    tap $? "--early-backward $mode on 2 ranks: 40 steps, eval lines of loss, perplexity, bits per byte (status $rc)"
    [ $rc = 0 ] || show "$out"
done
grep -E '^(train  step 40|eval   step 40)' "$dir/graph.out" | sed 's/^/# /'
modes_equal

# the loss fell from that of a uniform guess over 256 bytes, ln 256 = 5.545
awk '/^eval   step 40:/ { exit !($5 < 4.5) }' "$dir/graph.out"
tap $? "the eval loss after 40 steps is below 4.5 nats (a uniform guess is 5.545)"

grep -q '"type":"train".*"tokens_per_s":[0-9.]*,"mfu":[0-9][0-9.e+-]*,.*"loss":.*"perplexity":.*"bits_per_byte":' "$dir/graph.jsonl" &&
    grep -q '^  MFU        p50 [0-9.]*%  p90 [0-9.]*% (0.0[0-9]* GFLOP per sample over 2 x ' "$dir/graph.out" &&
    grep -q '"type":"summary".*"tokens_per_s_p50":[0-9.]*,"tokens_per_s_p90":[0-9.]*,"mfu_p50":[0-9][0-9.e+-]*,"mfu_p90":' "$dir/graph.jsonl"
tap $? "the metrics file's train lines have tokens/s, MFU, loss, perplexity and bits per byte; the summary has MFU"

# ---- erase-sample on the trained checkpoint: the same seed gives the same text
for k in 1 2; do
    apps/erase-sample "$dir/graph/ckpt-40.h5" --prompt "ROMEO:" --tokens 10 --temperature 0.8 --top-k 20 --seed 7 \
        --quiet >"$dir/sample$k.out" 2>"$dir/sample$k.err"
    echo $? >"$dir/sample$k.rc"
done
[ "$(cat "$dir/sample1.rc")" = 0 ] && cmp -s "$dir/sample1.out" "$dir/sample2.out" &&
    [ "$(head -c 6 "$dir/sample1.out")" = "ROMEO:" ] && [ "$(wc -c <"$dir/sample1.out")" = 17 ]
tap $? "erase-sample of the trained checkpoint: the prompt and 10 bytes, the same twice with one seed"
sed 's/^/# sample: /' "$dir/sample1.out"; show "$dir/sample1.err"

# ---- evaluation data the model cannot read is refused before the first step
printf '\001\000%.0s' $(seq 40) >"$dir/ids.bin" # 40 raw uint16 tokens; imported as GPT-2's vocab 50257
apps/erase-convert tokens -q --raw "$dir/ids.bin" -o "$dir/gpt2" >/dev/null 2>&1
out=$dir/eval-vocab.out
train 1 --eval "$dir/gpt2" --steps 2 --global-batch 4 --checkpoint-dir "$dir/eval-vocab"
[ $rc = 2 ] && grep -q -- "--eval $dir/gpt2: the data's vocab 50257 is larger than the model's 256" "$out" &&
    [ ! -e "$dir/eval-vocab" ]
tap $? "--eval data of a larger vocab: status $rc before any step or checkpoint, naming the data and both vocabs"
[ $rc = 2 ] || show "$out"

# ---- kill after a random step, resume
kill_resume

# ---- 1 vs 2 vs 4 ranks at global batch 32
summary() { grep '"type":"summary"' "$1" | sed 's/.*\("loss":[^,]*\).*\("perplexity":[^,]*\).*/\1 \2/'; }
other_ranks
s1=$(summary "$dir/np1.jsonl") s2=$(summary "$dir/graph.jsonl") s4=$(summary "$dir/np4.jsonl")
echo "# 1 rank:  $s1"
echo "# 2 ranks: $s2"
echo "# 4 ranks: $s4"
ok=0
for s in "$s2" "$s4"; do
    [ -n "$s" ] && awk -v a="$(field "$s" loss)" -v b="$(field "$s1" loss)" 'BEGIN { d = a - b; exit !(d < 1e-4 && d > -1e-4) }' ||
        ok=1
done
tap $ok "1, 2 and 4 ranks: eval loss within 1e-4"
