#!/usr/bin/env bash
# One synthetic day shaped like Criteo Terabyte's, end to end on this
# machine (issue 35; bench/RESULTS.md "A Criteo-Terabyte-shaped day"):
#   generate  day 0 (ROWS rows) and the next day's first 1% (ROWS / 100 rows)
#             as Criteo TSV, gzip: mpirun -np RANKS erase-convert synth
#             --shape criteo-1tb --scale SCALE (docs/data.md);
#   convert   mpirun -np RANKS erase-convert criteo, one shard directory a day;
#   inspect   erase-inspect data on day 0's shards;
#   train     mpirun -np RANKS erase-train, the ctr model with the Terabyte
#             set's 26 tables at SCALE (embedding_dim DIM), --embeddings row,
#             one pass over day 0 (STEPS > 0: that many steps only), a
#             checkpoint at the end;
#   evaluate  mpirun -np RANKS erase-train --eval-only --init-from the
#             checkpoint on the next day's first 1% (the checkpoint read,
#             then NE and AUC).
# For each stage: wall time, rows/s, peak resident memory per rank
# (/usr/bin/time -v); the checkpoint's size and write time (erase-train's
# ckpt line) and read time (the evaluation stage's wall time less its
# evaluation and start-up, measured by an --eval-only run without the
# checkpoint's tables: see below).
# Tables: MLPerf DLRM-DCNv2's 26 Criteo Terabyte cardinalities, capped at
# 40 M rows (the MLPerf training reference, recommendation_v2/torchrec_dlrm,
# --num_embeddings_per_feature 40000000,39060,17295,7424,20265,3,7122,1543,
# 63,40000000,3067956,405282,10,2209,11938,155,4,976,14,40000000,40000000,
# 40000000,590152,12973,108,36), each times SCALE, + 1 row for the missing
# id. Memory of the tables: rows x 4 bytes x (DIM + 1) (the row and its
# row-wise Adagrad state, lib/nn/optim.h), split over RANKS by
# --embeddings row. Without SCALE the script uses the largest scale (at
# most 1) whose tables fit BUDGET_GB on all ranks together, and prints the
# computation; each rank's address space is limited to LIMIT (prlimit
# --as), so a run that does not fit fails with erase's allocation error
# instead of waking the kernel's OOM killer beside other work.
# Without `erase-convert synth --shape` (the generator not built yet) days
# are written as shards directly by the existing erase-convert synth
# (hashed planted-model rows; no TSV, no conversion stage).
# Usage: bench/criteo-day.sh [BUILD_DIR]   (env ROWS, default 10000000;
#        SCALE; BUDGET_GB, default 24; DIM, default 16; RANKS, default 2;
#        BATCH per rank, default 2048; STEPS, default 0 = one pass; LIMIT,
#        default 20G; WORK, default a new directory under /tmp, removed at
#        the end unless KEEP=1). At 10^5 rows: about a minute.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$top/_build}
rows=${ROWS:-10000000}
budget=${BUDGET_GB:-24}
dim=${DIM:-16}
ranks=${RANKS:-2}
batch=${BATCH:-2048}
steps=${STEPS:-0}
limit=${LIMIT:-20G}
export PATH="$build/apps:$PATH"
if [ "$(id -u)" = 0 ]; then export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1; fi
if [ -n "${WORK:-}" ]; then work=$WORK; mkdir -p "$work"; else
    work=$(mktemp -d "${TMPDIR:-/tmp}/erase-criteo-day.XXXXXX"); fi
[ "${KEEP:-0}" = 1 ] || [ -n "${WORK:-}" ] || trap 'rm -rf "$work"' EXIT
cards="40000000 39060 17295 7424 20265 3 7122 1543 63 40000000 3067956 405282 10 2209 11938 155 4 976 14 40000000 40000000 40000000 590152 12973 108 36"

# ---- the scale and the tables --------------------------------------------
full_bytes=$(echo "$cards" | awk -v d="$dim" '{ for (i = 1; i <= NF; i++) s += $i + 1; printf "%.0f", s * 4 * (d + 1) }')
if [ -z "${SCALE:-}" ]; then
    SCALE=$(awk -v b="$budget" -v f="$full_bytes" 'BEGIN { s = b * 1e9 / f; if (s > 1) s = 1; printf "%.4g", s }')
    chosen="the largest scale <= 1 whose tables fit ${budget} GB"
else
    chosen="SCALE given"
fi
table_rows=$(echo "$cards" | awk -v s="$SCALE" '{ for (i = 1; i <= NF; i++) { r = int($i * s + 0.999999); if (r < 1) r = 1
                                                   printf "%s%d", (i > 1 ? ", " : ""), r + 1 } }')
table_total=$(echo "$table_rows" | tr -d ' ' | tr , '\n' | awk '{ s += $1 } END { print s }')
printf 'model = "ctr";\nctr: { embedding_dim = %d; table_rows = [%s]; };\n' "$dim" "$table_rows" >"$work/model.cfg"
cpu=$(lscpu | awk -F: '/Model name/ { gsub(/^ +/, "", $2); print $2; exit }')
echo "# $cpu, $(nproc) CPUs, $(free -g | awk '/^Mem:/ { print $2 }') GiB; $ranks ranks; $(date -u +%Y-%m-%dT%H:%MZ)"
echo "# tables at scale 1: $(echo "$full_bytes" | awk '{ printf "%.2f", $1 / 1e9 }') GB (rows x 4 x (dim $dim + 1));" \
     "scale $SCALE ($chosen): $table_total rows, $(awk -v r="$table_total" -v d="$dim" -v n="$ranks" \
     'BEGIN { printf "%.2f GB in all, %.2f GB per rank", r * 4 * (d + 1) / 1e9, r * 4 * (d + 1) / 1e9 / n }')"
eval_rows=$((rows / 100))
mkdir -p "$work/shards"

# ---- helpers ---------------------------------------------------------------
summary="$work/summary"
: >"$summary"
now() { date +%s.%N; }
# peak RSS per rank of the files $1.* (GiB)
peaks() { for f in "$1".*; do awk '/Maximum resident/ { printf "%.2f ", $NF / 1048576 }' "$f"; done; }
# stage NAME ROWS SECONDS PEAKS [NOTE]
stage() {
    awk -v n="$1" -v r="$2" -v s="$3" -v p="$4" -v note="${5:-}" 'BEGIN {
        printf "%-9s %12d %10.1f %12.0f   %-22s %s\n", n, r, s, r / s, p, note }' | tee -a "$summary"
}
# run NAME NP COMMAND...: under mpirun (NP > 0) or alone, each rank under
# /usr/bin/time -v and prlimit; output in $work/NAME.out, times in $work/NAME.time.*
run() {
    local name=$1 np=$2
    shift 2
    rm -f "$work/$name.time".*
    if [ "$np" -gt 0 ]; then
        mpirun --oversubscribe --bind-to none -np "$np" bash -c \
            'exec prlimit --as="$0" /usr/bin/time -v -o "$1.$OMPI_COMM_WORLD_RANK" "${@:2}"' \
            "$(numfmt --from=iec "$limit")" "$work/$name.time" "$@" >"$work/$name.out" 2>&1
    else
        prlimit --as="$(numfmt --from=iec "$limit")" /usr/bin/time -v -o "$work/$name.time.0" "$@" \
            >"$work/$name.out" 2>&1
    fi || { echo "$name failed:"; tail -20 "$work/$name.out"; exit 1; }
}

printf '%-9s %12s %10s %12s   %-22s %s\n' stage rows "wall s" "rows/s" "peak RSS GiB per rank" note | tee -a "$summary"
# ---- generate and convert ------------------------------------------------
if erase-convert synth --shape criteo-1tb --help 2>&1 | grep -q -- '--days'; then
    mkdir -p "$work/tsv"
    t0=$(now)
    run generate "$ranks" erase-convert synth --shape criteo-1tb --scale "$SCALE" --days 1 --rows "$rows" --gzip \
        --seed 1 -o "$work/tsv"
    run generate-eval "$ranks" erase-convert synth --shape criteo-1tb --scale "$SCALE" --days 1 --first-day 1 \
        --rows "$eval_rows" --gzip --seed 1 -o "$work/tsv"
    stage generate "$((rows + eval_rows))" "$(echo "$(now) - $t0" | bc)" "$(peaks "$work/generate.time")" \
        "$(du -b "$work/tsv/day_0.tsv.gz" | awk '{ printf "day 0: %.2f GB gzip", $1 / 1e9 }')"
    t0=$(now)
    run convert "$ranks" erase-convert criteo -q -o "$work/shards/day_0" "$work/tsv/day_0.tsv.gz"
    t=$(echo "$(now) - $t0" | bc)
    run convert-eval "$ranks" erase-convert criteo -q -o "$work/shards/day_1_head" "$work/tsv/day_1.tsv.gz"
    stage convert "$rows" "$t" "$(peaks "$work/convert.time")" \
        "$(du -sb "$work/shards/day_0" | awk -v r="$rows" '{ printf "%.2f GB of shards, %.1f bytes/row", $1 / 1e9, $1 / r }')"
    eval_data=(--eval "$work/shards/day_1_head")
else
    echo "# no erase-convert synth --shape in this build: one planted-model stream written as shards by"
    echo "# erase-convert synth (no TSV, no conversion); its last $eval_rows rows stand for the next day's first 1%"
    t0=$(now)
    run generate 0 erase-convert synth -q --force -o "$work/shards/day_0" --rows "$((rows + eval_rows))" --seed 1
    stage generate "$((rows + eval_rows))" "$(echo "$(now) - $t0" | bc)" "$(peaks "$work/generate.time")" "shards directly"
    eval_data=(--eval-fraction "$(awk -v e="$eval_rows" -v r="$rows" 'BEGIN { printf "%.12g", e / (r + e) }')")
fi
# ---- inspect -----------------------------------------------------------------
t0=$(now)
run inspect 0 erase-inspect data "$work/shards/day_0"
stage inspect "$rows" "$(echo "$(now) - $t0" | bc)" "$(peaks "$work/inspect.time")"
# ---- train one pass ------------------------------------------------------
passes=(--epochs 1)
[ "$steps" -gt 0 ] && passes=(--steps "$steps")
t0=$(now)
run train "$ranks" erase-train --train "$work/shards/day_0" "${eval_data[@]}" --model "$work/model.cfg" \
    --embeddings row --batch "$batch" "${passes[@]}" --log-every 200 --quiet --checkpoint-dir "$work/ckpt"
t=$(echo "$(now) - $t0" | bc)
trained=$(awk '/^  steps/ { print $2; exit }' "$work/train.out")
stage train "$((trained * batch * ranks))" "$t" "$(peaks "$work/train.time")" \
    "$(grep -m1 '^  QPS' "$work/train.out" | sed 's/^  QPS *//')"
ckpt=$(ls "$work"/ckpt/ckpt-*.h5 | head -1)
grep '^ckpt ' "$work/train.out" | sed 's/^/# /' | tee -a "$summary"
# ---- evaluate from the checkpoint ---------------------------------------
t0=$(now)
run evaluate "$ranks" erase-train --eval-only --init-from "$ckpt" --train "$work/shards/day_0" "${eval_data[@]}" \
    --embeddings row --batch "$batch"
t=$(echo "$(now) - $t0" | bc)
eval_s=$(awk '/^  eval time/ { print $3; exit }' "$work/evaluate.out")
stage evaluate "$eval_rows" "$t" "$(peaks "$work/evaluate.time")" "$(grep -m1 '^  eval  ' "$work/evaluate.out" |
    sed 's/^  eval *//; s/ *(.*//') ; eval ${eval_s:-?} s"
# start-up without the checkpoint: the same evaluation of a fresh model
t0=$(now)
run fresh "$ranks" erase-train --train "$work/shards/day_0" "${eval_data[@]}" --model "$work/model.cfg" \
    --embeddings row --batch "$batch" --steps 1 --quiet
t_fresh=$(echo "$(now) - $t0" | bc)
du -b "$ckpt" | awk -v t="$t" -v f="$t_fresh" '{ printf "# checkpoint %.2f GB: read + evaluation %.1f s; a fresh model'"'"'s start-up, one step and evaluation %.1f s: read about %.1f s\n", $1 / 1e9, t, f, t - f }' | tee -a "$summary"
echo "# summary in $summary"
