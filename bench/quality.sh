#!/usr/bin/env bash
# Model quality tables of bench/RESULTS.md ("Quality"): evaluation NE and AUC,
# mean and spread over 3 seeds, of plain backprop (no cuts, off), six cuts
# with off and six cuts with graph, on
#   1. the shipped Criteo sample (jobs/criteo-sample.run; the last 20% held out),
#   2. synthetic data from a planted logistic model (erase-convert synth),
#      whose own NE is the best achievable.
# The two six-cut runs of a seed must agree exactly: their metrics files are
# compared byte for byte. Usage: bench/quality.sh [BUILD_DIR]   (2 ranks)
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$top/_build}
work=$(mktemp -d "${TMPDIR:-/tmp}/erase-quality.XXXXXX")
trap 'rm -rf "$work"' EXIT
mpi=(mpirun --oversubscribe --bind-to none -np 2)
[ "$(id -u)" = 0 ] && mpi+=(--allow-run-as-root)

sample=$top/_data/criteo-sample
[ -f "$sample/index.txt" ] || { mkdir -p "$top/_data"; "$build/apps/erase-convert" criteo --quiet -o "$sample" "$top/data/criteo/kaggle-train-first9999.tsv" >/dev/null; }
"$build/apps/erase-convert" synth --quiet -o "$work/synth" --rows 400000 --seed 7 >"$work/synth.log"
planted=$(sed -n 's/.*NE \([0-9.]*\).*/\1/p' "$work/synth.log" | tail -1)

# run DATA CUTS MODE SEED EXTRA... -> "NE AUC" (metrics in $work/m-...)
run() {
    local data=$1 cuts=$2 mode=$3 seed=$4; shift 4
    local m
    m="$work/m-$(basename "$data")-$cuts-$mode-$seed.jsonl"
    "${mpi[@]}" "$build/apps/erase-train" --train "$data" --cuts "$cuts" --early-backward "$mode" \
        --seed "$seed" --metrics "$m" --quiet "$@" | awk '/^  eval +NE / {print $3, $5}'
}

# table NAME DATA EXTRA...
table() {
    local name=$1 data=$2; shift 2
    echo "### $name"
    echo
    echo "| model | schedule | eval NE (mean ± spread) | eval AUC (mean ± spread) | seeds 1, 2, 3: NE |"
    echo "| --- | --- | --- | --- | --- |"
    for cfg in "none off" "all off" "all graph"; do
        set -- $cfg "$@"
        local cuts=$1 mode=$2; shift 2
        local nes=() aucs=()
        for seed in 1 2 3; do
            read -r ne auc < <(run "$data" "$cuts" "$mode" "$seed" "$@")
            nes+=("$ne"); aucs+=("$auc")
        done
        awk -v model="$([ "$cuts" = none ] && echo "no cuts (plain backprop)" || echo "six cuts")" -v mode="$mode" \
            -v n="${nes[*]}" -v a="${aucs[*]}" 'BEGIN {
                split(n, N, " "); split(a, A, " ");
                for (i = 1; i <= 3; i++) { sn += N[i]; sa += A[i] }
                mn = sn / 3; ma = sa / 3; dn = 0; da = 0;
                for (i = 1; i <= 3; i++) { if ((N[i]-mn)^2 > dn) dn = (N[i]-mn)^2; if ((A[i]-ma)^2 > da) da = (A[i]-ma)^2 }
                printf "| %s | %s | %.4f ± %.4f | %.4f ± %.4f | %s, %s, %s |\n", model, mode, mn, sqrt(dn), ma, sqrt(da), N[1], N[2], N[3] }'
    done
    local same=0 f1 f2
    for seed in 1 2 3; do
        f1="$work/m-$(basename "$data")-all-off-$seed.jsonl"
        f2="$work/m-$(basename "$data")-all-graph-$seed.jsonl"
        # timing fields differ from run to run: compare everything else
        if cmp -s <(strip_timing "$f1") <(strip_timing "$f2"); then same=$((same + 1)); fi
    done
    echo
    echo "Six cuts, off vs graph: losses, NE, AUC and learning rate of every log interval and evaluation agree byte for byte in $same of 3 seeds."
    echo
    rm -f "$work"/m-*.jsonl
}

strip_timing() {
    sed 's/"time":[0-9.]*,//; s/"qps":[0-9.]*,//; s/"qps_p50":[0-9.]*,"qps_p90":[0-9.]*,//; s/,"mode":"[a-z]*"//;
        s/,"\(step_\|eval_\|checkpoint_\)\{0,1\}seconds":[0-9.]*//g' "$1"
}

table "Criteo sample (7,999 train, 2,000 eval rows; jobs/criteo-sample.run, 2 ranks)" "$sample" \
    --config "$top/jobs/criteo-sample.run"
table "Synthetic planted model (400,000 rows, the last 20% held out; 1 epoch, global batch 1024, 2 ranks)" \
    "$work/synth" --batch 512 --epochs 1
echo "Planted model's NE on the synthetic data (the best achievable): $planted"
