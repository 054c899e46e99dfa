#!/usr/bin/env bash
# Issue 36 (quality): eval NE and AUC of dcn (DLRM-DCNv2) with six detached
# dense sub-architectures cut at 1..6 (the three cross layers, the first
# two over-arch layers, the over arch's rest with the main loss; the
# embeddings detached with a head on x0) against the same dcn without cuts,
# and of ctr with its default cuts (all six) and without, on
#   (a) a synthetic day shaped like Criteo Terabyte's with a planted model
#       (erase-convert synth --shape criteo-1tb --scale SCALE --days 2
#       --rows ROWS): trained one epoch on day 0, evaluated on the first
#       quarter of day 1 (the next day); the planted model's own NE on
#       these rows, printed by synth, is the floor;
#   (b) the shipped Criteo sample (jobs/criteo-sample.run: the last 20% in
#       file order held out, 2 epochs).
# Sizes, the same for every row (reduced from MLPerf's so that the whole
# runs in about 10 minutes on 2 cores): embedding dimension 16, tables of
# 10,007 rows (hashed ids), bottom MLP 13-64-16; dcn: 3 cross layers of
# rank 64 (width 27 x 16 = 432), over arch 256-256-128-64-1; ctr: six
# sub-architectures of width 256. Optimizer, learning rates, schedule and
# batch are jobs/criteo-sample.run's (AdamW lr 1e-3, embeddings 5e-3,
# cosine, early backward graph) on 2 ranks; (a) one epoch at a global
# batch of 512, (b) two at 128. Seeds 1, 2, 3, the five models interleaved
# within each seed. Per row: median and min..max of NE and AUC over the
# seeds; then the NE gap of the cut model over the uncut one (median of the
# per-seed gaps), next to the ERASE paper's about 1.4%. A fifth row moves
# dcn's six cuts one boundary on (2..7: the embeddings and the first cross
# layer one block, trained by that layer's head instead of x0's own), to
# see how much of the gap is the embeddings' detached head (the placement
# docs/models.md now recommends, after this comparison).
# Usage: bench/quality-dcn.sh [BUILD_DIR]   (ROWS=300000 SCALE=0.001)
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$top/_build}
rows=${ROWS:-300000} scale=${SCALE:-0.001}
work=$(mktemp -d "${TMPDIR:-/tmp}/erase-quality-dcn.XXXXXX")
trap 'rm -rf "$work"' EXIT
ranks=(mpirun --oversubscribe --bind-to none -np 2)
[ "$(id -u)" != 0 ] || ranks+=(--allow-run-as-root)
convert=$build/apps/erase-convert

cat >"$work/dcn.cfg" <<'EOF'
model = "dcn";
dcn: {
  embedding_dim = 16;
  table_rows = 10007;
  bottom_mlp = [64, 16];
  cross_layers = 3;
  cross_rank = 64;
  top_mlp = [256, 256, 128, 64, 1];
};
EOF
cat >"$work/ctr.cfg" <<'EOF'
model = "ctr";
ctr: {
  embedding_dim = 16;
  table_rows = 10007;
  bottom_mlp = [64, 16];
  subarch_width = 256;
  subarchs = 6;
};
EOF
# the rows of each table: "label|model file|--cuts"
models=("dcn, six detached sub-architectures|dcn|1,2,3,4,5,6" "dcn, no cuts|dcn|none"
    "ctr, six cuts (its default)|ctr|all" "ctr, no cuts|ctr|none"
    "dcn, cuts 2..7 (the embeddings attached to the first cross layer)|dcn|2,3,4,5,6,7")

echo "# CPU: $(lscpu | sed -n 's/^Model name: *//p'), $(nproc) cores; load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
"$convert" synth --shape criteo-1tb --scale "$scale" --days 2 --first-day 0 --rows "$rows" -q -o "$work/days" >"$work/synth.log"
floor=$(sed -n 's/^planted model: .* NE \([0-9.]*\)$/\1/p' "$work/synth.log")
"$convert" criteo -q -o "$work/synth-train" "$work/days/day_0.tsv" >/dev/null
head -n $((rows / 4)) "$work/days/day_1.tsv" >"$work/next.tsv"
"$convert" criteo -q -o "$work/synth-eval" "$work/next.tsv" >/dev/null
"$convert" criteo -q -o "$work/sample" "$top/data/criteo/kaggle-train-first9999.tsv" >/dev/null

# train DATASET MODEL CUTS SEED: "NE AUC" of the evaluation at the end
train() {
    local data=(--train "$work/sample") more=()
    [ "$1" = sample ] || { data=(--train "$work/synth-train" --eval "$work/synth-eval"); more=(--epochs 1 --batch 256); }
    "${ranks[@]}" "$build/apps/erase-train" --config "$top/jobs/criteo-sample.run" --model "$work/$2.cfg" --cuts "$3" \
        "${data[@]}" "${more[@]}" --seed "$4" --quiet | awk '/^  eval +NE / { ne = $3; auc = $5 } END { print ne, auc }'
}
# spread UNIT V...: "median (min..max)" of the values, 4 decimals, each followed by UNIT
spread() {
    local unit=$1
    shift
    printf '%s\n' "$@" | sort -g |
        awk -v u="$unit" '{ v[NR] = $1 } END { printf "%.4f%s (%.4f%s..%.4f%s)", v[int((NR + 1) / 2)], u, v[1], u, v[NR], u }'
}

for dataset in synth sample; do
    declare -A ne=() auc=()
    for seed in 1 2 3; do
        for i in "${!models[@]}"; do
            IFS='|' read -r _ model cuts <<<"${models[i]}"
            read -r "ne[$i,$seed]" "auc[$i,$seed]" < <(train "$dataset" "$model" "$cuts" "$seed")
            echo "# $dataset seed $seed ${models[i]%%|*}: NE ${ne[$i,$seed]} AUC ${auc[$i,$seed]}" >&2
        done
    done
    if [ "$dataset" = synth ]; then
        echo "### (a) synthetic day, planted model (synth --shape criteo-1tb --scale $scale, $rows rows; eval: day 1's first $((rows / 4)))"
    else
        echo "### (b) Criteo sample (7,999 train rows, the last 2,000 held out; jobs/criteo-sample.run)"
    fi
    echo
    echo "| model | eval NE median (min..max) | eval AUC median (min..max) | NE seeds 1, 2, 3 |"
    echo "| --- | --- | --- | --- |"
    for i in "${!models[@]}"; do
        echo "| ${models[i]%%|*} | $(spread '' "${ne[$i,1]}" "${ne[$i,2]}" "${ne[$i,3]}") |" \
            "$(spread '' "${auc[$i,1]}" "${auc[$i,2]}" "${auc[$i,3]}") | ${ne[$i,1]}, ${ne[$i,2]}, ${ne[$i,3]} |"
    done
    echo
    # the NE gap of row CUT over row NONE, per seed in %: its median (min..max)
    for pair in "0 1 dcn" "2 3 ctr" "4 1 dcn-2..7"; do
        read -r cut none name <<<"$pair"
        gaps=()
        for seed in 1 2 3; do
            gaps+=("$(awk -v c="${ne[$cut,$seed]}" -v n="${ne[$none,$seed]}" 'BEGIN { printf "%.4f", 100 * (c / n - 1) }')")
        done
        echo "NE gap, $name with cuts over ${name%-*} without, per seed: $(spread % "${gaps[@]}") (ERASE paper: about 1.4%)"
    done
    [ "$dataset" != synth ] || echo "Planted model's own NE on both days' rows, as synth prints it (the floor): $floor"
    echo
    unset ne auc
done
echo "# load average at the end: $(cut -d' ' -f1-3 /proc/loadavg); $SECONDS s in all"
