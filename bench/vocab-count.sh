#!/usr/bin/env bash
# The vocabulary's counting pass and the conversion through it (issue 35,
# bench/RESULTS.md "Vocabularies"): erase-convert vocab on 1 and 2 ranks
# (the day split into 2 files), erase-convert criteo with and without
# --vocab, on a day of ROWS Criteo-format lines whose 26 features draw ids
# from power-law (Zipf-like, u^4 scaled) distributions over cardinalities
# 10 .. 10^6 (the day is generated here with awk unless DAY names a TSV).
# Prints, for REPEATS interleaved repeats, each stage's wall seconds and
# its peak resident memory (the largest rank's, /usr/bin/time -v), then the
# min / median / max of each, and the vocabulary's distinct and frequent
# ids. Usage: bench/vocab-count.sh [BUILD_DIR]   (env ROWS, default 2000000;
# THRESHOLD, default 3; REPEATS, default 3; DAY: a TSV to use instead;
# about 2 minutes per repeat at 2M rows on 2 cores)
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$top/_build}
rows=${ROWS:-2000000}
threshold=${THRESHOLD:-3}
repeats=${REPEATS:-3}
work=$(mktemp -d "${TMPDIR:-/tmp}/erase-vocab-count.XXXXXX")
trap 'rm -rf "$work"' EXIT
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
conv=$build/apps/erase-convert

if [ -n "${DAY:-}" ]; then
    cp "$DAY" "$work/day.tsv"
else
    awk -v rows="$rows" 'BEGIN {
        srand(35)
        for (k = 0; k < 26; k++) card[k] = int(10 ^ (1 + k % 6))
        for (i = 0; i < rows; i++) {
            line = (rand() < 0.25 ? 1 : 0)
            for (j = 0; j < 13; j++) line = line "\t" (rand() < 0.2 ? "" : int(100 * rand() ^ 3))
            for (k = 0; k < 26; k++) {
                if (rand() < 0.05) { line = line "\t"; continue }
                id = int(card[k] * rand() ^ 4)
                line = line "\t" sprintf("%08x", (id * 2654435761 + k * 40503) % 4294967296)
            }
            print line
        }
    }' >"$work/day.tsv"
fi
lines=$(wc -l <"$work/day.tsv")
half=$(( (lines + 1) / 2 ))
head -n "$half" "$work/day.tsv" >"$work/half0.tsv"
tail -n +"$((half + 1))" "$work/day.tsv" >"$work/half1.tsv"
mb=$(du -m "$work/day.tsv" | cut -f1)
echo "# $(lscpu | sed -n 's/^Model name: *//p'), $(nproc) cores; $lines lines, $mb MB of TSV; threshold $threshold"

# stage NAME CMD...: wall seconds and the largest peak RSS (MB) of its processes
stage() {
    name=$1
    shift
    rm -rf "$work/out" "$work/v-$name.h5" "$work"/time.*
    t0=$(date +%s.%N)
    "$@" >"$work/$name.out" 2>&1 || { cat "$work/$name.out"; exit 1; }
    t1=$(date +%s.%N)
    rss=$(cat "$work"/time.* 2>/dev/null | sed -n 's/.*Maximum resident set size (kbytes): //p' | sort -n | tail -1)
    printf '%s %.2f %d\n' "$name" "$(echo "$t1 - $t0" | bc)" "$(( ${rss:-0} / 1024 ))" >>"$work/results"
}

for r in $(seq "$repeats"); do
    stage vocab-np1 /usr/bin/time -v -o "$work/time.1" "$conv" vocab -q --threshold "$threshold" \
        -o "$work/v-vocab-np1.h5" "$work/day.tsv"
    cp "$work/v-vocab-np1.h5" "$work/vocab.h5"
    stage vocab-np2 mpirun -np 2 sh -c "/usr/bin/time -v -o $work/time.\$OMPI_COMM_WORLD_RANK $conv vocab -q \
        --threshold $threshold -o $work/v-vocab-np2.h5 $work/half0.tsv $work/half1.tsv"
    digest() { "$build/apps/erase-inspect" vocab "$1" | sed -n '1s/.*digest \([0-9a-f]*\),.*/\1/p'; }
    [ "$(digest "$work/vocab.h5")" = "$(digest "$work/v-vocab-np2.h5")" ] ||
        echo "# repeat $r: the 2-rank vocabulary's digest differs from the 1-rank one's"
    stage criteo /usr/bin/time -v -o "$work/time.1" "$conv" criteo -q -o "$work/out" "$work/day.tsv"
    stage criteo-vocab /usr/bin/time -v -o "$work/time.1" "$conv" criteo -q --vocab "$work/vocab.h5" \
        -o "$work/out" "$work/day.tsv"
done
echo "stage          repeats   wall s (min / median / max)   Mlines/s (median)   peak RSS MB (max)"
for name in vocab-np1 vocab-np2 criteo criteo-vocab; do
    awk -v n="$name" '$1 == n' "$work/results" | sort -k2,2n |
        awk -v n="$name" -v lines="$lines" '{ t[++k] = $2; if ($3 > m) m = $3 }
            END { med = t[int((k + 1) / 2)]
                  printf "%-14s %7d   %6.2f / %6.2f / %6.2f         %8.2f            %6d\n", n, k, t[1], med, t[k],
                         lines / med / 1e6, m }'
done
"$build/apps/erase-inspect" vocab "$work/vocab.h5" | awk '$1 == "feature" || $1 ~ /^C(1|6|7|12|26)$/'
