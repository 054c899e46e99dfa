#!/usr/bin/env bash
# Issue 33: the reader's samples/s (erase-bench data --lines 300000, the
# settings of the 2026-11 checksum figures in bench/RESULTS.md: global batch
# 4096, 1024-row chunks and blocks, one rank's samples/s) for shuffle pools
# of POOLS blocks, interleaved: each round runs every pool size once.
# Prints min / median / max over the rounds per shards, prefetch, dp, pool,
# of samples/s and of samples per CPU second of the process (the figure
# other work on a shared machine disturbs least).
# Usage: bench/reader-pools.sh [BUILD_DIR] [ROUNDS (default 3)] [POOLS (default "1 16 64 256")]
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$top/_build}
rounds=${2:-3}
pools=${3:-1 16 64 256}
out=$(mktemp "${TMPDIR:-/tmp}/erase-reader-pools.XXXXXX")
trap 'rm -f "$out"' EXIT
for round in $(seq "$rounds"); do
    for k in $pools; do
        "$build/apps/erase-bench" data --lines 300000 --pool "$k" |
            awk -v k="$k" '/^(none|deflate) +[0-9]+ +[0-9]+ +[0-9]+/ { print $1, $2, $3, k, $4, $NF }' >>"$out"
    done
done
echo "| shards | prefetch, dp | pool (blocks) | samples/s min / median / max | samples per CPU s min / median / max |"
echo "| --- | --- | --- | --- | --- |"
sort -k1,1r -k2,2n -k3,3n -k4,4n "$out" | awk '
    function stats(list,   n, a, i, j, t) {
        n = split(list, a, " ")
        for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (a[j] + 0 < a[i] + 0) { t = a[i]; a[i] = a[j]; a[j] = t }
        return sprintf("%.2f M / %.2f M / %.2f M", a[1] / 1e6, a[int((n + 1) / 2)] / 1e6, a[n] / 1e6)
    }
    { k = $1 " | " $2 ", " $3 " | " $4; wall[k] = wall[k] " " $5; cpu[k] = cpu[k] " " $6
      if (!(k in seen)) { seen[k] = 1; order[++m] = k } }
    END { for (i = 1; i <= m; i++) { k = order[i]; printf "| %s | %s | %s |\n", k, stats(wall[k]), stats(cpu[k]) } }'
