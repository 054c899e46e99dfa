#!/usr/bin/env bash
# Issue 33: the main job's eval NE (jobs/criteo-sample.run on the shipped
# Criteo sample, 2 ranks; 7,999 train rows = 8 blocks of 1,024) with the
# default shuffle pool (one pool: a uniform shuffle) and with
# --shuffle-pool 1 (the order before pools), seeds 1, 2, 3 interleaved.
# Usage: bench/quality-shuffle-ctr.sh [BUILD_DIR]
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$top/_build}
mpi=(mpirun --oversubscribe --bind-to none -np 2)
[ "$(id -u)" = 0 ] && mpi+=(--allow-run-as-root)
sample=$top/_data/criteo-sample
[ -f "$sample/index.txt" ] || { mkdir -p "$top/_data"; "$build/apps/erase-convert" criteo --quiet -o "$sample" "$top/data/criteo/kaggle-train-first9999.tsv" >/dev/null; }
echo "| shuffle pool | eval NE, seeds 1, 2, 3 | median |"
echo "| --- | --- | --- |"
for pool in 1 256; do
    ne=()
    for seed in 1 2 3; do
        ne+=("$("${mpi[@]}" "$build/apps/erase-train" --config "$top/jobs/criteo-sample.run" --train "$sample" \
            --seed "$seed" --shuffle-pool "$pool" --quiet | awk '/^  eval +NE / {print $3}')")
    done
    med=$(printf '%s\n' "${ne[@]}" | sort -n | sed -n 2p)
    echo "| $pool | ${ne[0]}, ${ne[1]}, ${ne[2]} | $med |"
done
