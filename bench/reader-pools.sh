#!/usr/bin/env bash
# Issue 33: the reader's samples/s (erase-bench data --lines 300000, the
# settings of the 2026-11 checksum figures in bench/RESULTS.md: global batch
# 4096, 1024-row chunks and blocks, one rank's samples/s) for shuffle pools
# of POOLS blocks, interleaved: each round runs every pool size once.
# Prints min / median / max over the rounds per shards, prefetch, dp, pool.
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
            awk -v k="$k" '/^(none|deflate) +[0-9]+ +[0-9]+ +[0-9]+/ { print $1, $2, $3, k, $4 }' >>"$out"
    done
done
echo "| shards | prefetch, dp | pool (blocks) | samples/s min / median / max ($rounds rounds) |"
echo "| --- | --- | --- | --- |"
sort -k1,1r -k2,2n -k3,3n -k4,4n -k5,5n "$out" | awk '{ k = $1 " | " $2 ", " $3 " | " $4; n[k]++; v[k, n[k]] = $5
        if (!(k in seen)) { seen[k] = 1; order[++m] = k } }
    END { for (i = 1; i <= m; i++) { k = order[i]; c = n[k]
        printf "| %s | %.2f M / %.2f M / %.2f M |\n", k, v[k, 1] / 1e6, v[k, int((c + 1) / 2)] / 1e6, v[k, c] / 1e6 } }'
