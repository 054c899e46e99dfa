#!/usr/bin/env bash
# Issue 34 item 7: erase's nanochat against the PyTorch reference model
# (tests/reference/make_nanochat_reference.py's Nanochat, through
# bench/gpt_quality_torch.py --model nanochat), on tinyshakespeare
# byte-level (vocab 256), with validation bits per byte at each of STEPS
# for seeds 1, 2, 3:
#   erase        no cuts, AdamW lr 1e-3 constant, weight decay 0
#   pytorch      the same model, sizes, initialisation and optimizer; the
#                same training windows (T + 1 tokens starting every T) in a
#                uniform shuffle each epoch, as erase's default shuffle pool
#                gives them here (one pool holds every window) -- the same
#                tokens and the same kind of order, not the same draws
#   erase-cuts   cut after layer 1 (h0 gets a local head and loss, weight 1)
#   erase-muon   no cuts, --optimizer muon --lr 0.02 (nanochat's
#                matrix_lr; its AdamW groups at erase's nanochat defaults)
# all at equal tokens: global batch 16 windows of context 64, STEPS
# steps (1000 steps: 1.02 M tokens, about one epoch of the 1.0 M training
# bytes). The model is small (depth 2, width 128, 1 head of 128, context
# 64: 0.46 M parameters) so the 12 runs fit in about 10 minutes on a
# 2-core machine, two runs at a time, each on one thread.
# Prints one line per run and evaluation, then a table of the medians and
# their ratios.
# Usage: bench/quality-nanochat.sh [BUILD_DIR] [STEPS (default 250,1000)] [SEEDS (default 1 2 3)]
#   TORCH_PY: a python with torch, numpy and h5py (default /work/venv-torch/bin/python)
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$top/_build}
steps=${2:-250,1000}
seeds=${3:-1 2 3}
py=${TORCH_PY:-/work/venv-torch/bin/python}
work=$(mktemp -d "${TMPDIR:-/tmp}/erase-quality-nanochat.XXXXXX")
trap 'rm -rf "$work"' EXIT
"$build/apps/erase-convert" text -o "$work/text" "$top/data/text/tinyshakespeare.txt" >/dev/null
for cuts in none 1; do
    printf 'model = "nanochat";\nnanochat: { layers = 2; width = 128; heads = 1; context = 64; vocab = 256; cuts = %s; };\n' \
        "$([ $cuts = none ] && echo '"none"' || echo "[$cuts]")" >"$work/cuts-$cuts.cfg"
done
last=${steps##*,}
first=${steps%%,*}
# run NAME SEED -> lines "NAME SEED STEP BITS_PER_BYTE"
run() {
    case $1 in
    pytorch)
        OMP_NUM_THREADS=1 "$py" "$top/bench/gpt_quality_torch.py" --model nanochat --layers 2 --width 128 --heads 1 \
            --context 64 --batch 16 --order windows --data "$work/text" --seed "$2" --eval-at "$steps" |
            sed -E 's/.*"seed": ([0-9]+), "step": ([0-9]+), .*"bits_per_byte": ([0-9]+\.[0-9]{0,4}).*/pytorch \1 \2 \3/' ;;
    erase*)
        cfg=$work/cuts-none.cfg opt="--optimizer adamw --lr 0.001"
        [ "$1" = erase-cuts ] && cfg=$work/cuts-1.cfg
        [ "$1" = erase-muon ] && opt="--optimizer muon --lr 0.02"
        OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 "$build/apps/erase-train" --model "$cfg" --train "$work/text/train" \
            --eval "$work/text/eval" --global-batch 16 $opt --lr-decay constant --weight-decay 0 --epochs 1000 \
            --steps "$last" --eval-every "$first" --seed "$2" --blas-threads 1 --quiet 2>/dev/null |
            awk -v name="$1" -v seed="$2" -v want=",$steps," '/^eval +step [0-9]+:/ { s = $3; sub(":", "", s)
                if (index(want, "," s ",")) print name, seed, s, $11 }' ;;
    esac
}
export -f run
export work top build py steps first last
for seed in $seeds; do
    for name in pytorch erase erase-cuts erase-muon; do echo "$name $seed"; done
done | xargs -P 2 -L 1 bash -c 'run "$0" "$1" >"$work/run-$0-$1"'
cat "$work"/run-* | sort -k1,1 -k2,2n -k3,3n | tee "$work/runs"
echo
echo "| run | step | bits per byte of the seeds (median) | median / erase's |"
echo "| --- | --- | --- | --- |"
sort -k1,1 -k3,3n -k2,2n "$work/runs" | awk '{ k = $1 SUBSEP $3; v[k] = v[k] (v[k] != "" ? ", " : "") $4; n[k]++; x[k, n[k]] = $4 }
    END { for (k in v) { m = n[k]; for (i = 1; i <= m; i++) a[i] = x[k, i]
            for (i = 1; i <= m; i++) for (j = i + 1; j <= m; j++) if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t }
            med[k] = a[int((m + 1) / 2)] }
          for (k in v) { split(k, p, SUBSEP); e = med["erase" SUBSEP p[2]]
            printf "| %s | %s | %s (%.4f) | %s |\n", p[1], p[2], v[k], med[k], e ? sprintf("%.4f", med[k] / e) : "-" } }' |
    sort -t'|' -k3,3n -k2,2
