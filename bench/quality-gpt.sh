#!/usr/bin/env bash
# The tinyshakespeare table of bench/RESULTS.md ("Quality"): eval loss (nats per
# byte), perplexity and bits per byte, mean and spread over 3 seeds, of the
# gpt model of nanoGPT's shakespeare-char size (jobs/gpt-shakespeare.cfg:
# 6 layers, 6 heads, width 384, context 256, byte-level vocab 256) without
# cuts (plain backprop, LM head tied) and with the ERASE NanoChat cuts
# (--cuts 2,4: three sub-graphs of two layers, local LM heads), for the
# token budget of jobs/shakespeare.run (one epoch: 1.0 M tokens, global
# batch 16), then 200 bytes sampled from each kind's seed-1 checkpoint.
# Usage: bench/quality-gpt.sh [BUILD_DIR]   (2 ranks; about 25 minutes on 2 cores)
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$top/_build}
work=$(mktemp -d "${TMPDIR:-/tmp}/erase-quality-gpt.XXXXXX")
trap 'rm -rf "$work"' EXIT
mpi=(mpirun --oversubscribe --bind-to none -np 2)
[ "$(id -u)" = 0 ] && mpi+=(--allow-run-as-root)

"$build/apps/erase-convert" text -o "$work/text" "$top/data/text/tinyshakespeare.txt" >/dev/null

# run CUTS SEED -> "loss perplexity bits-per-byte tokens/s-p50"
run() {
    "${mpi[@]}" "$build/apps/erase-train" --config "$top/jobs/shakespeare.run" --train "$work/text/train" \
        --eval "$work/text/eval" --cuts "$1" --seed "$2" --checkpoint-dir "$work/ckpt-$1-$2" --quiet |
        awk '/^  eval +loss / {l = $3; p = $5; b = $9} /^  tokens / {t = $3} END {print l, p, b, t}'
}

echo "#### tinyshakespeare (1.0 M tokens: one epoch of jobs/shakespeare.run, global batch 16 x 256 tokens, 2 ranks)"
echo
echo "| model | eval loss (mean ± spread) | perplexity | bits per byte | seeds 1, 2, 3: loss | tokens/s p50 |"
echo "| --- | --- | --- | --- | --- | --- |"
for cuts in none 2,4; do
    res=()
    for seed in 1 2 3; do
        res+=("$(run "$cuts" "$seed")")
    done
    awk -v model="$([ "$cuts" = none ] && echo "no cuts (plain backprop, tied head)" || echo "NanoChat cuts 2, 4 (three sub-graphs)")" \
        -v r="${res[*]}" 'BEGIN {
            n = split(r, R, " ");
            for (i = 0; i < 3; i++) { L[i+1] = R[4*i+1]; P[i+1] = R[4*i+2]; B[i+1] = R[4*i+3]; T[i+1] = R[4*i+4] }
            for (i = 1; i <= 3; i++) { sl += L[i]; sp += P[i]; sb += B[i]; st += T[i] }
            ml = sl / 3; dl = 0;
            for (i = 1; i <= 3; i++) if ((L[i]-ml)^2 > dl) dl = (L[i]-ml)^2;
            printf "| %s | %.4f ± %.4f | %.3f | %.4f | %s, %s, %s | %.0f |\n", model, ml, sqrt(dl), sp / 3,
                sb / 3, L[1], L[2], L[3], st / 3 }'
done
echo
echo "Spread: the largest distance of a seed from the mean."
for cuts in none 2,4; do
    echo
    echo "Sample, $([ "$cuts" = none ] && echo "no cuts" || echo "cuts 2, 4"), seed 1 (erase-sample --prompt 'ROMEO:' --tokens 200 --temperature 0.8 --top-k 40 --seed 1):"
    echo
    echo '```'
    "$build/apps/erase-sample" "$work/ckpt-$cuts-1" --prompt "ROMEO:" --tokens 200 --temperature 0.8 --top-k 40 \
        --seed 1 --quiet
    echo '```'
done
