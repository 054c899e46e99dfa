#!/usr/bin/env bash
# erase-score's speed against training's (issue 14): the reference ctr
# model (erase-train --model ctr, 6 cuts) on `erase-convert synth` rows, one
# rank, the CPU. A checkpoint is trained first; then, interleaved REPS
# times: a training run of STEPS steps (its summary's QPS p50: samples/s of
# a step, batch 256, early backward graph, the default) and one with
# --early-backward off (the one-stream baseline), erase-score of all
# rows at --batch 256 and at its default --batch 1024 (its summary line:
# rows over the wall time of the pass: reading, forward, writing the HDF5
# file). Prints min / median / max of each and the ratios of the medians.
# Usage: bench/score.sh [BUILD_DIR] [ROWS] [STEPS] [REPS]
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$top/_build}
rows=${2:-200000} steps=${3:-300} reps=${4:-3}
work=$(mktemp -d "${TMPDIR:-/tmp}/erase-score-bench.XXXXXX")
trap 'rm -rf "$work"' EXIT
"$build/apps/erase-convert" synth -q -o "$work/data" --rows "$rows" >/dev/null
"$build/apps/erase-train" --model ctr --train "$work/data" --eval-fraction 0.01 --steps 100 --quiet \
    --checkpoint-dir "$work/ck" >/dev/null
train() { # MODE
    "$build/apps/erase-train" --model ctr --train "$work/data" --eval-fraction 0.01 --steps "$steps" --quiet \
        --early-backward "$1" |
        awk '/^  QPS / {print $3}'
}
score() {
    "$build/apps/erase-score" "$work/ck" "$work/data" -o "$work/s.h5" --force -q --batch "$1" |
        awk '/^erase-score: [0-9]+ rows/ {print $(NF - 1)}'
}
t=() off=() s256=() s1024=()
for ((i = 0; i < reps; i++)); do
    t+=("$(train graph)")
    off+=("$(train off)")
    s256+=("$(score 256)")
    s1024+=("$(score 1024)")
    echo "# rep $((i + 1)): train ${t[-1]} (off: ${off[-1]}), score --batch 256 ${s256[-1]}, --batch 1024 ${s1024[-1]} samples/s" >&2
done
stats() { printf '%s\n' "$@" | sort -n | awk '{v[NR] = $1} END {printf "%.0f %.0f %.0f", v[1], v[int((NR + 1) / 2)], v[NR]}'; }
read -r tmin tmed tmax <<<"$(stats "${t[@]}")"
read -r omin omed omax <<<"$(stats "${off[@]}")"
read -r amin amed amax <<<"$(stats "${s256[@]}")"
read -r bmin bmed bmax <<<"$(stats "${s1024[@]}")"
echo "| run | samples/s min | median | max | / training |"
echo "| --- | --- | --- | --- | --- |"
echo "| erase-train, QPS p50 ($steps steps, batch 256) | $tmin | $tmed | $tmax | 1.00 |"
echo "| erase-train --early-backward off, QPS p50 | $omin | $omed | $omax | $(awk -v a="$omed" -v b="$tmed" 'BEGIN {printf "%.2f", a / b}') |"
echo "| erase-score --batch 256 ($rows rows, HDF5) | $amin | $amed | $amax | $(awk -v a="$amed" -v b="$tmed" 'BEGIN {printf "%.2f", a / b}') |"
echo "| erase-score --batch 1024 ($rows rows, HDF5) | $bmin | $bmed | $bmax | $(awk -v a="$bmed" -v b="$tmed" 'BEGIN {printf "%.2f", a / b}') |"
