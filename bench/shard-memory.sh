#!/usr/bin/env bash
# The largest tables trainable on this machine, replicated vs sharded
# (bench/RESULTS.md, "Sharded embeddings"): erase-train ctr with 26 tables
# of ROWS rows of dimension 16 (row-wise Adagrad: 68 bytes a row) on 2
# ranks, each rank's address space limited to LIMIT (prlimit --as: what a
# rank may allocate, so that a run that does not fit fails with erase's
# allocation error instead of waking the kernel's OOM killer beside other
# work), --embeddings replicated, table and row, STEPS steps of BATCH
# samples per rank on the Criteo sample. Prints each run's status, its
# first error line or its last train line, and each rank's peak resident
# memory (/usr/bin/time -v).
# Usage: bench/shard-memory.sh [BUILD_DIR]   (env ROWS, default 8000000;
#        LIMIT, default 10G; STEPS, default 20; BATCH, default 512;
#        DATA, default _data/criteo-sample; KINDS, default
#        "replicated table row"; about 3 minutes at 8M rows)
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$top/_build}
rows=${ROWS:-8000000}
limit=${LIMIT:-10G}
steps=${STEPS:-20}
batch=${BATCH:-512}
data=${DATA:-$top/_data/criteo-sample}
kinds=${KINDS:-replicated table row}
work=$(mktemp -d "${TMPDIR:-/tmp}/erase-shard-memory.XXXXXX")
trap 'rm -rf "$work"' EXIT
list=$rows
for _ in $(seq 25); do list="$list, $rows"; done
printf 'model = "ctr";\nctr: { embedding_dim = 16; table_rows = [%s]; };\n' "$list" >"$work/model.cfg"
need=$(( 26 * rows * 68 ))
echo "26 tables x $rows rows x 16 floats + 1 float of Adagrad state: $(( need >> 20 )) MiB in all;" \
     "each of 2 ranks limited to $limit of address space; $(free -g | awk '/^Mem:/ { print $2 }') GiB in this machine"
for kind in $kinds; do
    rc=0
    mpirun --allow-run-as-root --oversubscribe -np 2 \
        bash -c 'exec prlimit --as="$0" /usr/bin/time -v -o "$1.$OMPI_COMM_WORLD_RANK" "$2" "${@:3}"' \
        "$(numfmt --from=iec "$limit")" "$work/time" "$build/apps/erase-train" --train "$data" \
        --model "$work/model.cfg" --embeddings "$kind" --steps "$steps" --batch "$batch" --log-every "$steps" \
        --eval-every 0 >"$work/out" 2>"$work/err" || rc=$?
    peaks=$(for r in 0 1; do awk '/Maximum resident/ { printf "%.2f GiB", $NF / 1048576 }' "$work/time.$r" 2>/dev/null; echo; done |
        paste -sd' ' | sed 's/ $//')
    if [ $rc = 0 ]; then
        last=$(grep '^train' "$work/out" | tail -1)
    else
        last=$(grep -h -m1 -i 'error\|cannot\|erase-train:' "$work/err" "$work/out" | head -1 || true)
    fi
    printf '%-10s status %d; peak RSS per rank: %s\n    %s\n' "$kind" "$rc" "${peaks:-?}" "$last"
    grep '^  embed  rank' "$work/out" | sed 's/^/    /' || true
done
