#!/usr/bin/env bash
# Sharded embeddings against replicated at the reference sizes
# (bench/RESULTS.md, "Sharded embeddings"): erase-train ctr (docs/models.md
# reference sizes: 26 tables of 10,007 rows, dimension 16, six cuts, early
# backward graph) on NP ranks on the shipped Criteo sample, --embeddings
# replicated, table, row and auto, STEPS steps of BATCH samples per rank.
# The runs are interleaved (every kind once, then again: ROUNDS rounds);
# the table gives min / median / max over the rounds of the summary's QPS
# p50 (samples/s, after its warm-up steps), and of the sharded runs'
# all-to-all bytes sent per step per rank and milliseconds per step inside
# the all-to-alls (the slowest rank's; the summary's metrics record), with
# the median QPS's ratio to replicated's.
# Usage: bench/shard-throughput.sh [BUILD_DIR]   (env NP, default 2;
#        ROUNDS, default 3; STEPS, default 60; BATCH, default 512;
#        KINDS, default "replicated table row auto"; MODEL, default ctr;
#        DATA, default _data/criteo-sample; about 2 minutes)
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$top/_build}
np=${NP:-2}
rounds=${ROUNDS:-3}
steps=${STEPS:-60}
batch=${BATCH:-512}
kinds=${KINDS:-replicated table row auto}
model=${MODEL:-ctr}
data=${DATA:-$top/_data/criteo-sample}
work=$(mktemp -d "${TMPDIR:-/tmp}/erase-shard-throughput.XXXXXX")
trap 'rm -rf "$work"' EXIT
mpi=(mpirun --oversubscribe --bind-to none -np "$np")
[ "$(id -u)" = 0 ] && mpi+=(--allow-run-as-root)

# field NAME FILE: a number of the summary record of a metrics file
field() { grep '"type":"summary"' "$2" | sed -n "s/.*\"$1\":\\([0-9.e+-]*\\).*/\\1/p"; }
for round in $(seq "$rounds"); do
    for kind in $kinds; do
        "${mpi[@]}" "$build/apps/erase-train" --train "$data" --model "$model" --embeddings "$kind" \
            --steps "$steps" --batch "$batch" --eval-every 0 --quiet --metrics "$work/$kind.$round.jsonl" \
            >"$work/$kind.$round.out" 2>&1 || { cat "$work/$kind.$round.out" >&2; exit 1; }
        echo "$(field qps_p50 "$work/$kind.$round.jsonl") $(field alltoall_bytes_per_step "$work/$kind.$round.jsonl")" \
            "$(field alltoall_ms_per_step "$work/$kind.$round.jsonl")" >>"$work/$kind.fig"
    done
done
# stats COLUMN FILE: min / median / max of a column
stats() { cut -d' ' -f"$1" "$2" | grep . | sort -g | awk '{ v[NR] = $1 } END { if (NR) printf "%.6g %.6g %.6g", v[1], v[int((NR + 1) / 2)], v[NR]; else printf "- - -" }'; }
echo "ctr ($model) on $np ranks, batch $batch per rank, $steps steps, $rounds interleaved rounds; min / median / max"
printf '%-11s %-26s %-9s %-32s %s\n' embeddings "QPS p50 (samples/s)" "vs repl." "all-to-all bytes/step/rank" "all-to-all ms/step"
ref=$(stats 1 "$work/replicated.fig" | cut -d' ' -f2 2>/dev/null || echo 0)
for kind in $kinds; do
    q=$(stats 1 "$work/$kind.fig")
    med=$(echo "$q" | cut -d' ' -f2)
    ratio=$(awk -v a="$med" -v b="$ref" 'BEGIN { if (b > 0) printf "%.2fx", a / b; else print "-" }')
    printf '%-11s %-26s %-9s %-32s %s\n' "$kind" "$q" "$ratio" "$(stats 2 "$work/$kind.fig")" "$(stats 3 "$work/$kind.fig")"
done
