#!/bin/sh
# erase-train's figures for the lm task and an evaluation-only run (issue
# 32): the progress line and the summary lead with tokens/s (a large
# model's samples/s printed "0 samples/s" and "QPS p50 0"); the first
# progress line comes soon after the first step whatever --log-every is,
# besides every --log-every steps (ERASE_DEBUG_FIRST_LOG_SECONDS=0 makes
# "soon" the first step, so that no check depends on timing); --eval-only's
# summary and metrics leave the training-only fields out. A tiny gpt on the
# first 64 KiB of tinyshakespeare, 2 ranks.
. "$(dirname "$0")/../comm/mpi.sh"
need apps/erase-train
need apps/erase-convert
workdir
head -c 65536 "${srcdir:-.}/data/text/tinyshakespeare.txt" >"$dir/s.txt"
apps/erase-convert text -q "$dir/s.txt" -o "$dir/text" >"$dir/convert.out" 2>&1 || { tap_report "$dir/convert.out"; exit 1; }
printf 'model = "gpt";\ngpt: { layers = 2; heads = 4; width = 32; context = 16; vocab = 256; };\n' >"$dir/gpt.cfg"
echo "1..7"

# train NAME ARGS...: erase-train on 2 ranks, the tiny gpt, global batch 16
train() {
    name=$1; shift
    timeout -k 5 120 "$MPIRUN" $MPI_FLAGS -np 2 apps/erase-train --model "$dir/gpt.cfg" --train "$dir/text/train" \
        --eval "$dir/text/eval" --global-batch 16 "$@" </dev/null >"$dir/$name.out" 2>"$dir/$name.err"
    rc=$?
}
# steps FILE: the steps of FILE's progress lines, e.g. "1 3 6 7"
steps() { sed -n 's|^train  step \([0-9]*\)/.*|\1|p' "$1" | tr '\n' ' ' | sed 's/ $//'; }
rate='[0-9]+(\.[0-9]+)?'

ERASE_DEBUG_FIRST_LOG_SECONDS=0 train first --steps 7 --log-every 3 --checkpoint-dir "$dir/ck"
[ $rc = 0 ] && [ "$(steps "$dir/first.out")" = "1 3 6 7" ]
tap $? "--log-every 3 for 7 steps: a first line after step 1 (its time came), then steps 3, 6 and 7 (status $rc; lines at: $(steps "$dir/first.out"))"
[ $rc = 0 ] || tap_report "$dir/first.err"

ERASE_DEBUG_FIRST_LOG_SECONDS=0 train huge --steps 4 --log-every 1000000
[ $rc = 0 ] && [ "$(steps "$dir/huge.out")" = "1 4" ]
tap $? "--log-every 1000000: the first progress line still comes, after step 1 (status $rc; lines at: $(steps "$dir/huge.out"))"

grep -q -x -E "train  step 1/7 epoch 0: $rate tokens/s \($rate samples/s(, MFU $rate%)?\), loss $rate, perplexity $rate, bits/byte $rate, lr [0-9.e-]+, ETA [0-9]+ s" \
    "$dir/first.out"
tap $? "the lm progress line leads with tokens/s, samples/s in brackets"
grep '^train ' "$dir/first.out" | sed 's/^/# /'

grep -q -x -E "  tokens     p50 $rate  p90 $rate tokens/s \(all ranks, after 1 warm-up step\)" "$dir/first.out" &&
    grep -q -x -E "  QPS        p50 $rate  p90 $rate samples/s \(a sample: 16 tokens\)" "$dir/first.out"
tap $? "the lm summary: tokens/s p50 and p90 first (with the warm-up), then QPS naming a sample's 16 tokens"
grep -E '^  (tokens|QPS) ' "$dir/first.out" | sed 's/^/# /'

train eval --eval-only --init-from "$dir/ck" --metrics "$dir/eval.jsonl"
[ $rc = 0 ] && grep -q -x -F "  model      gpt, 2 blocks, 0 cuts (the checkpoint's); 2 ranks" "$dir/eval.out" &&
    grep -q -x -E "  eval time  [0-9.]+ s \($rate tokens/s, $rate samples/s, all ranks\)" "$dir/eval.out"
tap $? "--eval-only's summary: the checkpoint's model and the ranks, the evaluation's tokens/s (status $rc)"
sed -n '/^erase-train summary/,$p' "$dir/eval.out" | sed 's/^/# /'

! grep -q -E 'global batch|QPS|^  steps |data wait|^  tokens |MFU|written' "$dir/eval.out"
tap $? "--eval-only's summary has no training figure (global batch, steps, QPS, tokens p50, MFU, data wait, checkpoints written)"

[ "$(grep -c '"type":"eval"' "$dir/eval.jsonl")" = 1 ] && ! grep -q '"epoch"' "$dir/eval.jsonl"
tap $? "--eval-only's metrics: one eval line, without the training's epoch"
tap_report "$dir/eval.jsonl"
exit 0
