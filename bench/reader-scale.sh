#!/usr/bin/env bash
# The CTR reader's start-up and memory as the rows and shards grow (issue
# 35, bench/RESULTS.md "The reader at scale"): datasets written by
# erase-convert synth (deflate, chunks of 1,024 rows) of 10^5 .. 10^7 rows
# in 10 .. 500 shards, the largest as DAYS directories (one per day, read
# together as erase-train --train DAY0,DAY1,... reads them); for each,
# erase-bench data --open: seconds to open, the reader's own memory
# (index: per block and shard; buffers: set by the options), seconds to
# the first batch (its first 64-block pool read whole), samples/s over 20
# more batches of 4,096, and the process's peak resident memory. REPEATS
# interleaved runs of the whole list; min / median / max of each figure.
# Usage: bench/reader-scale.sh [BUILD_DIR]   (env WORK, default a new
#        directory under /tmp, kept when given; REPEATS, default 3; DAYS,
#        default 10; DAY_ROWS, default 1000000: the largest dataset has
#        DAYS x DAY_ROWS rows; about 3 minutes to generate 10^7 rows here)
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$top/_build}
repeats=${REPEATS:-3}
days=${DAYS:-10}
day_rows=${DAY_ROWS:-1000000}
if [ -n "${WORK:-}" ]; then work=$WORK; mkdir -p "$work"; else
    work=$(mktemp -d "${TMPDIR:-/tmp}/erase-reader-scale.XXXXXX"); trap 'rm -rf "$work"' EXIT; fi
convert=$build/apps/erase-convert
bench=$build/apps/erase-bench
synth() { # DIR ROWS SHARD_ROWS SEED
    [ -f "$1/index.txt" ] || "$convert" synth -q --force -o "$1" --rows "$2" --shard-rows "$3" --seed "$4" >/dev/null
}
synth "$work/r100k-10" 100k 10000 1
synth "$work/r100k-100" 100k 1000 1
synth "$work/r1m-10" 1M 100000 1
synth "$work/r1m-500" 1M 2000 1
day_list=
day_shard_rows=$((day_rows / 50))
for d in $(seq 0 $((days - 1))); do
    synth "$work/day_$d" "$day_rows" "$day_shard_rows" $((d + 1))
    day_list="$day_list${day_list:+ }$work/day_$d"
done
configs=("r100k-10" "r100k-100" "r1m-10" "r1m-500" "day_0" "days")
echo "# $(lscpu | awk -F: '/Model name/ { gsub(/^ +/, "", $2); print $2; exit }'), $(nproc) CPUs; $repeats interleaved repeats"
for rep in $(seq "$repeats"); do
    for c in "${configs[@]}"; do
        if [ "$c" = days ]; then set -- $day_list; else set -- "$work/$c"; fi
        "$bench" data --open --batch 4096 --batches 20 "$@" | awk -v c="$c" '
            NR == 2 { print c, $1, $3, $4, $5, $6, $7, $8, $9 }
            /peak RSS/ { print c, "rss", $4 }' >>"$work/figures"
    done
done
awk '
    $2 != "rss" { shards[$1] = $2; rows[$1] = $3; blocks[$1] = $4; open_s[$1] = open_s[$1] " " $5; ib[$1] = $6
                  buf[$1] = $7; first[$1] = first[$1] " " $8; sps[$1] = sps[$1] " " $9; order[++n] = $1 }
    $2 == "rss" { rss[$1] = rss[$1] " " $3 }
    function mmm(list,   a, k, i, j, t) {
        k = split(list, a, " ")
        for (i = 1; i <= k; i++) for (j = i + 1; j <= k; j++) if (a[j] + 0 < a[i] + 0) { t = a[i]; a[i] = a[j]; a[j] = t }
        return a[1] "/" a[int((k + 1) / 2)] "/" a[k]
    }
    END {
        printf "%-10s %6s %10s %8s %24s %10s %10s %22s %24s %22s\n", "data", "shards", "rows", "blocks", "open s min/med/max",
               "index B", "buffer MB", "1st batch s", "samples/s", "peak RSS MB"
        for (i = 1; i <= n; i++) { c = order[i]; if (done[c]++) continue
            printf "%-10s %6s %10s %8s %24s %10s %10s %22s %24s %22s\n", c, shards[c], rows[c], blocks[c], mmm(open_s[c]),
                   ib[c], buf[c], mmm(first[c]), mmm(sps[c]), mmm(rss[c]) }
    }' "$work/figures"
rm -f "$work/figures"
