#!/usr/bin/env bash
# The cost model's check of bench/RESULTS.md ("Several hosts (issue 18)"):
# erase-train ctr (reference sizes, six cuts) on 2 hosts x 2 ranks
# (tests/cluster/hosts.sh) under the link settings of RATES, with
# --early-backward graph (the default) and off, against erase-bench scale's
# prediction from
#   - the link: the 2x2 fit for that rate in ALLREDUCE (the output of
#     bench/hosts-allreduce.sh: alpha and Gbit/s of a flat ring of 4, which
#     is erase's MPI ring over the two hosts);
#   - the compute: each block's forward, backward and update measured by
#     erase-bench scale --measure, four copies at once launched like the
#     ranks (so they share the cores as the four ranks do), the median
#     over the copies and the rounds;
#   - the bytes: ctr's per-block gradients and gathered embedding rows.
# Every (rate, mode) runs once per round, then the compute measurement;
# ROUNDS rounds. Measured step time: the global batch over the summary's
# QPS p50 (erase-train's steps after its warm-up), median over the rounds
# (min and max beside it).
# Usage: bench/hosts-scale.sh ALLREDUCE_OUTPUT [BUILD_DIR]   (root; env
#        PREFIX, default erase-sc$$; ROUNDS, default 3; RATES, default
#        "1gbit 100mbit"; BATCH per rank, default 256; STEPS, default 16;
#        DATA, default _data/criteo-sample; about 3 minutes on the 2-core
#        machine of RESULTS.md)
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
if [ $# -lt 1 ]; then
    echo "usage: bench/hosts-scale.sh ALLREDUCE_OUTPUT [BUILD_DIR]   (ALLREDUCE_OUTPUT: what bench/hosts-allreduce.sh printed)" >&2
    exit 2
fi
table=$1
build=${2:-$top/_build}
prefix=${PREFIX:-erase-sc$$}
rounds=${ROUNDS:-3}
rates=${RATES:-1gbit 100mbit}
batch=${BATCH:-256}
steps=${STEPS:-16}
data=${DATA:-$top/_data/criteo-sample}
hosts=$top/tests/cluster/hosts.sh
work=$(mktemp -d "${TMPDIR:-/tmp}/erase-hosts-scale.XXXXXX")
export ERASE_HOSTS_PREFIX=$prefix OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
trap '"$hosts" down || true; [ "${KEEP:-0}" = 1 ] && echo "# kept $work" || rm -rf "$work"' EXIT

fit() { # fit RATE FIELD: alpha (us) or gbps of the 2x2 RATE fit line
    awk -v rate="$1" -v f="$2" '$1 == "2x2" && $2 == rate { on = 1; next }
        on && /fit/ { for (i = 1; i <= NF; i++) { if ($i == "alpha") a = $(i + 1); if ($i == "Gbit/s") g = $(i - 1) }
                      print f == "alpha" ? a : g; exit }' "$table"
}
for rate in $rates; do
    [ -n "$(fit "$rate" gbps)" ] || { echo "hosts-scale.sh: $table: no 2x2 $rate fit line" >&2; exit 1; }
done

echo "# bench/hosts-scale.sh $(date -u '+%F %H:%M UTC') on $(nproc) cores; load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "# erase-train ctr --batch $batch (per rank) --steps $steps on 2 hosts x 2 ranks; $rounds rounds"
for r in $(seq "$rounds"); do
    for rate in $rates; do
        "$hosts" up 2 --rate "$rate" >/dev/null
        for mode in graph off; do
            "$hosts" mpirun --oversubscribe --bind-to none --host h1:2,h2:2 \
                "$build/apps/erase-train" --train "$data" --model ctr --batch "$batch" --steps "$steps" \
                --early-backward "$mode" --quiet --metrics "$work/m.$rate.$mode.$r" >"$work/o.$rate.$mode.$r" 2>&1 ||
                { cat "$work/o.$rate.$mode.$r" >&2; exit 1; }
        done
    done
    "$hosts" up 2 >/dev/null
    "$hosts" mpirun --oversubscribe --bind-to none --host h1:2,h2:2 \
        "$build/apps/erase-bench" scale --model ctr --batch "$batch" --measure --nodes 1 --alpha-us 0 --gbps 1 \
        >"$work/c.$r" 2>&1 || { cat "$work/c.$r" >&2; exit 1; }
    echo "# round $r done $(date -u +%H:%M:%S); load average $(cut -d' ' -f1-3 /proc/loadavg)"
done

median() { tr ' ' '\n' | grep . | sort -g | awk '{ v[NR] = $1 } END { print NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
# per block (in order): the median over copies and rounds of forward, backward, update (ms)
blocks=$(awk '/^# [a-z0-9]+ +[0-9.]+ +[0-9.]+ +[0-9.]+ +[0-9]+ +[0-9]+$/ && $2 != "block" { print $2 }' "$work/c.1" | awk '!seen[$1]++')
lists=("" "" "")
for b in $blocks; do
    for k in 0 1 2; do
        v=$(cat "$work"/c.* | awk -v b="$b" -v k=$((k + 3)) '$1 == "#" && $2 == b { printf "%s ", $k }' | median)
        lists[k]=${lists[k]:+${lists[k]},}$v
    done
done
echo "# compute (ms per block $(echo $blocks | tr ' ' ','), median of 4 copies x $rounds rounds): forward ${lists[0]}; backward ${lists[1]}; update ${lists[2]}"
printf '%-8s %-6s %9s %9s %9s %11s %8s %14s\n' rate mode "min(ms)" "step(ms)" "max(ms)" "predicted" ratio "link fit"
for rate in $rates; do
    a=$(fit "$rate" alpha) g=$(fit "$rate" gbps)
    "$build/apps/erase-bench" scale --model ctr --batch "$batch" --nodes 4 --alpha-us "$a" --gbps "$g" \
        --forward-ms "${lists[0]}" --backward-ms "${lists[1]}" --update-ms "${lists[2]}" >"$work/p.$rate"
    for mode in graph off; do
        ms=$(for f in "$work/m.$rate.$mode".*; do
            grep '"summary"' "$f" | sed 's/.*"qps_p50":\([0-9.]*\).*/\1/' | awk -v n=$((4 * batch)) '{ printf "%s ", n / $1 * 1e3 }'
        done)
        col=$([ "$mode" = off ] && echo 7 || echo 6)
        pred=$(awk -v c="$col" '$1 == 4 { print $c }' "$work/p.$rate")
        med=$(echo "$ms" | median)
        printf '%-8s %-6s %9.1f %9.1f %9.1f %11.1f %8.3f %14s\n' "$rate" "$mode" \
            "$(echo "$ms" | tr ' ' '\n' | grep . | sort -g | head -1)" "$med" \
            "$(echo "$ms" | tr ' ' '\n' | grep . | sort -g | tail -1)" "$pred" "$(awk -v m="$med" -v p="$pred" 'BEGIN { print m / p }')" \
            "${a}us,${g}Gb/s"
    done
    sed 's/^/# /' "$work/p.$rate" | grep -v '^# # device'
done
