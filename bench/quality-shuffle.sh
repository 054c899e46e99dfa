#!/usr/bin/env bash
# Issue 33: erase's gpt against a PyTorch reference that samples windows
# uniformly (bench/gpt_quality_torch.py), on tinyshakespeare: 4 layers,
# width 128, 4 heads, context 64, global batch 16, AdamW lr 1e-3 constant,
# weight decay 0, no warm-up, no clipping; eval loss (nats per byte) over
# the eval part at each of STEPS, for seeds 1, 2, 3; erase with the
# default shuffle pool (64 blocks: all 15,685 training windows, 16 blocks,
# in one pool: a uniform shuffle) and with --shuffle-pool 1 (the order
# before pools). Each seed runs erase (pool 1), erase (default) and
# PyTorch one after the other, each on one thread: the frameworks
# interleaved on a shared machine. Prints one line per run, then the
# medians. About 25 minutes on a quiet 2-core machine.
# Usage: bench/quality-shuffle.sh [BUILD_DIR] [STEPS (default 300,2000)] [SEEDS (default 1 2 3)]
#   TORCH_PY: the venv's python with torch, numpy and h5py (default /work/venv-torch/bin/python)
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$top/_build}
steps=${2:-300,2000}
seeds=${3:-1 2 3}
py=${TORCH_PY:-/work/venv-torch/bin/python}
work=$(mktemp -d "${TMPDIR:-/tmp}/erase-quality-shuffle.XXXXXX")
trap 'rm -rf "$work"' EXIT
"$build/apps/erase-convert" text -o "$work/text" "$top/data/text/tinyshakespeare.txt" >/dev/null
cat >"$work/gpt-s.cfg" <<'CFG'
model = "gpt";
gpt: { layers = 4; heads = 4; width = 128; context = 64; vocab = 256; cuts = "none"; local_loss_weight = 1.0; };
CFG
last=${steps##*,}
first=${steps%%,*}
# erase POOL SEED -> lines "erase-pool-POOL SEED STEP LOSS"
erase() {
    OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 "$build/apps/erase-train" --model "$work/gpt-s.cfg" \
        --train "$work/text/train" --eval "$work/text/eval" --global-batch 16 --optimizer adamw --lr 0.001 \
        --lr-decay constant --weight-decay 0 --epochs 1000 --steps "$last" --eval-every "$first" \
        $([ "$1" = default ] || echo "--shuffle-pool $1") --seed "$2" --blas-threads 1 --quiet |
        awk -v pool="$1" -v seed="$2" -v want=",$steps," '/^eval +step [0-9]+:/ { s = $3; sub(":", "", s)
            if (index(want, "," s ",")) print "erase-pool-" pool, seed, s, $5 }'
}
for seed in $seeds; do
    erase 1 "$seed"
    erase default "$seed"
    "$py" "$top/bench/gpt_quality_torch.py" --data "$work/text" --seed "$seed" --eval-at "$steps" |
        sed -E 's/.*"seed": ([0-9]+), "step": ([0-9]+), "eval_loss": ([0-9.]+).*/pytorch \1 \2 \3/'
done | tee "$work/runs"
echo
echo "| run | step | eval loss, seeds (median) |"
echo "| --- | --- | --- |"
sort -k1,1 -k3,3n -k2,2n "$work/runs" | awk '{k = $1 " | " $3; v[k] = v[k] (v[k] ? ", " : "") $4; n[k]++;
        x[k, n[k]] = $4 } END { for (k in v) { m = n[k]; for (i = 1; i <= m; i++) a[i] = x[k, i];
        for (i = 1; i <= m; i++) for (j = i + 1; j <= m; j++) if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t }
        printf "| %s | %s (%s) |\n", k, v[k], a[int((m + 1) / 2)] } }' | sort
