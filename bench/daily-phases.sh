#!/usr/bin/env bash
# Where a day of jobs/daily spends its time (issue 36): days of ROWS rows
# cut from the shipped Criteo sample (day 3 is day 2's test), the shipped
# run file's ctr (jobs/criteo-sample.run: batch 64 per rank) on 2 ranks.
# REPS times, each in a fresh work directory: day 1 (from scratch), then
# day 2 (warm-started, evaluated against day 1's model); prints min /
# median / max of day 2's wall seconds per phase, from its days.jsonl
# record: convert (day 2 and the head of day 3), train (one pass), eval
# (both models' --eval-only, erase-score, the publish), and the whole day.
# Usage: bench/daily-phases.sh [BUILD_DIR] [ROWS] [REPS]
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$top/_build}
rows=${2:-3000} reps=${3:-3}
work=$(mktemp -d "${TMPDIR:-/tmp}/erase-daily-bench.XXXXXX")
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/days"
for d in 1 2 3; do
    sed -n "$(((d - 1) * rows + 1)),$((d * rows))p" "$top/data/criteo/kaggle-train-first9999.tsv" >"$work/days/day_$d.tsv"
done
export ERASE_SKIP_SETUP=1 ERASE_BUILD=$build
[ "$(id -u)" != 0 ] || export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
for ((r = 1; r <= reps; r++)); do
    for d in 1 2; do
        "$top/jobs/daily" --day $d --days-dir "$work/days" --work "$work/w$r" --run "$top/jobs/criteo-sample.run" \
            --eval-rows $((rows / 10)) --max-ne-regression 1 >/dev/null
    done
    grep '^{"day":2,' "$work/w$r/metrics/days.jsonl"
    rm -rf "$work/w$r/data" "$work/w$r/models"
done >"$work/records"
echo "jobs/daily day 2 of $rows rows, 2 ranks, $reps runs; $(lscpu | sed -n 's/^Model name: *//p'), $(nproc) cores"
printf '%-8s %8s %8s %8s\n' phase min median max
for k in convert_s train_s eval_s; do
    sed -n "s/.*\"$k\":\\([0-9.]*\\).*/\\1/p" "$work/records" | sort -g |
        awk -v k="${k%_s}" '{ v[NR] = $1 } END { printf "%-8s %8.1f %8.1f %8.1f\n", k, v[1], v[int((NR + 1) / 2)], v[NR] }'
done
