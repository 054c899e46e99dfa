#!/usr/bin/env bash
# erase-convert synth --shape criteo-1tb's speed (bench/RESULTS.md,
# "Synthetic Criteo Terabyte days"): one day of ROWS rows at --scale SCALE,
# plain and gzip, on 1 and 2 ranks, the four runs interleaved ROUNDS
# times; the table gives min / median / max of rows/s and MB/s (of the
# file written) over the rounds, then the median's time for a day of
# DAY_ROWS rows (10 M, the issue's goal: minutes, not hours). With
# BIG=1, one day of DAY_ROWS rows is also written once per kind and timed.
# The CPU (lscpu's model name) and the load average head the output.
# Usage: bench/synth-days.sh [BUILD_DIR]   (env ROWS, default 2000000;
#        SCALE, default 0.001; ROUNDS, default 3; HOTNESS, default 1 for
#        one-hot, or mlperf; DAY_ROWS, default 10000000; BIG, default 0)
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$top/_build}
rows=${ROWS:-2000000}
scale=${SCALE:-0.001}
rounds=${ROUNDS:-3}
day_rows=${DAY_ROWS:-10000000}
hot=()
[ "${HOTNESS:-1}" = 1 ] || hot=(--hotness "$HOTNESS")
work=$(mktemp -d "${TMPDIR:-/tmp}/erase-synth-days.XXXXXX")
trap 'rm -rf "$work"' EXIT
mpi=(mpirun --oversubscribe --bind-to none)
[ "$(id -u)" = 0 ] && mpi+=(--allow-run-as-root)
echo "CPU: $(lscpu | sed -n 's/^Model name: *//p' | head -n 1), $(nproc) cores; load average $(cut -d' ' -f1-3 /proc/loadavg)"
echo "erase-convert synth --shape criteo-1tb --scale $scale --rows $rows ${hot[*]:-}; $rounds rounds"

# run KIND NP ROWS: one day; prints "seconds bytes"
run() {
    local kind=$1 np=$2 n=$3 gz=()
    [ "$kind" = gzip ] && gz=(--gzip)
    rm -rf "$work/out"
    local t0 t1
    t0=$(date +%s.%N)
    "${mpi[@]}" -np "$np" "$build/apps/erase-convert" synth --shape criteo-1tb --scale "$scale" --days 1 \
        --rows "$n" "${hot[@]}" "${gz[@]}" -q -o "$work/out" >"$work/log" 2>&1 || { cat "$work/log" >&2; exit 1; }
    t1=$(date +%s.%N)
    echo "$(echo "$t1 - $t0" | bc) $(stat -c %s "$work"/out/day_0.tsv*)"
}
kinds="plain:1 gzip:1 plain:2 gzip:2"
for round in $(seq "$rounds"); do
    for k in $kinds; do
        run "${k%:*}" "${k#*:}" "$rows" | awk -v n="$rows" '{ print n / $1, $2 / 1e6 / $1 }' >>"$work/${k/:/-}.fig"
    done
done
# stats COLUMN FILE: min / median / max
stats() { cut -d' ' -f"$1" "$2" | sort -g | awk '{ v[NR] = $1 } END { printf "%.0f / %.0f / %.0f", v[1], v[int((NR + 1) / 2)], v[NR] }'; }
printf '%-6s %5s  %-28s %-22s %s\n' kind ranks "rows/s (min / median / max)" "MB/s" "10 M rows at the median"
for k in $kinds; do
    f="$work/${k/:/-}.fig"
    med=$(cut -d' ' -f1 "$f" | sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }')
    printf '%-6s %5s  %-28s %-22s %.0f s\n' "${k%:*}" "${k#*:}" "$(stats 1 "$f")" "$(stats 2 "$f")" \
        "$(echo "$day_rows / $med" | bc -l)"
done
if [ "${BIG:-0}" = 1 ]; then
    for k in $kinds; do
        read -r s b < <(run "${k%:*}" "${k#*:}" "$day_rows")
        printf 'one day of %d rows, %s on %s rank(s): %.1f s, %.0f rows/s, %.0f MB\n' "$day_rows" "${k%:*}" "${k#*:}" \
            "$s" "$(echo "$day_rows / $s" | bc -l)" "$(echo "$b / 1000000" | bc -l)"
    done
fi
