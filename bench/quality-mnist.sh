#!/usr/bin/env bash
# The MNIST table of bench/RESULTS.md ("Quality"): evaluation accuracy, loss and
# top-5, mean and spread over 3 seeds, of the ERASE MLP (784-1024-1024-1024
# -10; jobs/mnist.run: 3 epochs, global batch 128, AdamW, early backward
# graph) with every layer detached (cuts all) and with plain backprop
# (--cuts none), on the shipped MNIST data (8,000 train, 2,000 eval images).
# Usage: bench/quality-mnist.sh [BUILD_DIR]   (2 ranks)
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$top/_build}
work=$(mktemp -d "${TMPDIR:-/tmp}/erase-quality-mnist.XXXXXX")
trap 'rm -rf "$work"' EXIT
mpi=(mpirun --oversubscribe --bind-to none -np 2)
[ "$(id -u)" = 0 ] && mpi+=(--allow-run-as-root)

"$build/apps/erase-convert" mnist --quiet -o "$work/mnist" "$top/data/mnist/t10k-images-idx3-ubyte.gz" \
    "$top/data/mnist/t10k-labels-idx1-ubyte.gz" >/dev/null

# run CUTS SEED -> "accuracy loss top5 p50-QPS"
run() {
    "${mpi[@]}" "$build/apps/erase-train" --config "$top/jobs/mnist.run" --train "$work/mnist/train" \
        --eval "$work/mnist/eval" --cuts "$1" --seed "$2" --quiet |
        awk '/^  eval +loss / {a = $5; l = $3; t = $7} /^  QPS / {q = $3} END {print a, l, t, q}'
}

echo "#### MNIST (8,000 train, 2,000 eval images; jobs/mnist.run: 3 epochs, global batch 128, 2 ranks)"
echo
echo "| model | eval accuracy (mean ± spread) | eval loss (mean ± spread) | top-5 | seeds 1, 2, 3: accuracy | QPS p50 |"
echo "| --- | --- | --- | --- | --- | --- |"
for cuts in none all; do
    res=()
    for seed in 1 2 3; do
        res+=("$(run "$cuts" "$seed")")
    done
    awk -v model="$([ "$cuts" = none ] && echo "no cuts (plain backprop)" || echo "every layer detached (2 cuts)")" \
        -v r="${res[*]}" 'BEGIN {
            n = split(r, R, " ");
            for (i = 0; i < 3; i++) { A[i+1] = R[4*i+1]; L[i+1] = R[4*i+2]; T[i+1] = R[4*i+3]; Q[i+1] = R[4*i+4] }
            for (i = 1; i <= 3; i++) { sa += A[i]; sl += L[i]; st += T[i]; sq += Q[i] }
            ma = sa / 3; ml = sl / 3; da = 0; dl = 0;
            for (i = 1; i <= 3; i++) { if ((A[i]-ma)^2 > da) da = (A[i]-ma)^2; if ((L[i]-ml)^2 > dl) dl = (L[i]-ml)^2 }
            printf "| %s | %.4f ± %.4f | %.4f ± %.4f | %.4f | %s, %s, %s | %.0f |\n", model, ma, sqrt(da), ml, sqrt(dl),
                st / 3, A[1], A[2], A[3], sq / 3 }'
done
echo
echo "Spread: the largest distance of a seed from the mean."
