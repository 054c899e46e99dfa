#!/usr/bin/env bash
# The multi-host all-reduce figures of bench/RESULTS.md ("Several hosts
# (issue 18)"): erase-bench allreduce (nccl-tests columns) on hosts made by
# tests/cluster/hosts.sh (network namespaces on this machine, Open MPI over
# TCP between them, shared memory within one), for the layouts
#   1x2  one host, 2 ranks        1x4  one host, 4 ranks
#   2x1  2 hosts x 1 rank         2x2  2 hosts x 2 ranks
# and the link settings of RATES (hosts.sh up 2 --rate R on each host's
# egress, htb; "none": unshaped). One-host layouts run in h1 (its ranks
# talk through shared memory: no shaping applies). There is no --delay:
# this machine's kernel has no tc netem; where it has, add DELAY=200us.
# Every (rate, layout) runs once per round, ROUNDS rounds interleaved; the
# table gives per size the median over the rounds of each run's median
# time (slowest rank) and its busbw, and the latency alpha and inverse
# bandwidth beta of a flat ring fitted to it (t(S) = 2(n-1) alpha +
# 2(n-1)/n S beta, least squares over the sizes from FITMIN up, default
# 64 KiB: the sizes of ctr's block gradients): the link model erase-bench
# scale takes.
# Usage: bench/hosts-allreduce.sh [BUILD_DIR]   (root; env PREFIX, default
#        erase-ar$$: the hosts' namespace prefix; ROUNDS, default 3; RATES,
#        default "none 1gbit 100mbit"; LAYOUTS, default "1x2 1x4 2x1 2x2";
#        SAMPLES, default 3; MAXBYTES, default 4M; KEEP=1 keeps the raw
#        outputs; RAW=DIR: no measurement, the table of DIR's kept outputs;
#        about 20 minutes on 2 busy cores)
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$top/_build}
prefix=${PREFIX:-erase-ar$$}
rounds=${ROUNDS:-3}
rates=${RATES:-none 1gbit 100mbit}
layouts=${LAYOUTS:-1x2 1x4 2x1 2x2}
samples=${SAMPLES:-3}
maxbytes=${MAXBYTES:-4M}
hosts=$top/tests/cluster/hosts.sh
bench=$build/apps/erase-bench
[ -x "$bench" ] || { echo "hosts-allreduce.sh: $bench not built (make -C $build)" >&2; exit 1; }
work=${RAW:-$(mktemp -d "${TMPDIR:-/tmp}/erase-hosts-allreduce.XXXXXX")}
export ERASE_HOSTS_PREFIX=$prefix OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
cleanup() {
    [ -n "${RAW:-}" ] || "$hosts" down || true
    if [ -n "${RAW:-}" ]; then :; elif [ "${KEEP:-0}" = 1 ]; then echo "# raw outputs kept in $work"; else rm -rf "$work"; fi
}
trap cleanup EXIT

if [ -n "${RAW:-}" ]; then
    work=$RAW KEEP=1 rounds=0
else
    echo "# bench/hosts-allreduce.sh $(date -u '+%F %H:%M UTC') on $(nproc) cores; load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
    echo "# erase-bench allreduce --maxbytes $maxbytes --samples $samples; $rounds rounds of rates ($rates) x layouts ($layouts)"
fi
for r in $(seq "$rounds"); do
    for rate in $rates; do
        shape=()
        [ "$rate" = none ] || shape=(--rate "$rate")
        [ -z "${DELAY:-}" ] || shape+=(--delay "$DELAY")
        "$hosts" up 2 "${shape[@]}" >/dev/null
        for l in $layouts; do
            nh=${l%x*} per=${l#*x}
            # the one-host layouts are not shaped: measure them once per round
            [ "$nh" = 1 ] && [ "$rate" != "${rates%% *}" ] && continue
            hostlist=h1:$per
            [ "$nh" = 2 ] && hostlist=h1:$per,h2:$per
            "$hosts" mpirun --oversubscribe --bind-to none --host "$hostlist" \
                "$bench" allreduce --maxbytes "$maxbytes" --samples "$samples" \
                >"$work/$rate.$l.$r" 2>&1 || { cat "$work/$rate.$l.$r" >&2; exit 1; }
        done
    done
    echo "# round $r done $(date -u +%H:%M:%S); load average $(cut -d' ' -f1-3 /proc/loadavg)"
done

# the table: per rate, layout and size, the median over the rounds
for rate in $rates; do
    for l in $layouts; do
        nh=${l%x*} per=${l#*x}
        [ "$nh" = 1 ] && [ "$rate" != "${rates%% *}" ] && continue
        name=$l
        [ "$nh" = 2 ] && name="$l $rate"
        [ "$nh" = 1 ] && name="$l (shared memory)"
        cat "$work/$rate.$l".* | awk -v name="$name" -v n=$((nh * per)) -v fitmin="${FITMIN:-65536}" '
            function median(list,   k, m, v, i, j, t) {
                m = split(list, v, " ")
                for (i = 1; i <= m; i++) for (j = i + 1; j <= m; j++) if (v[j] < v[i]) { t = v[i]; v[i] = v[j]; v[j] = t }
                return m % 2 ? v[(m + 1) / 2] : (v[m / 2] + v[m / 2 + 1]) / 2
            }
            /^ *[0-9]+ +[0-9]+ +float/ { if (!($1 in t)) sizes[++ns] = $1; t[$1] = t[$1] " " $6; wrong += $10 }
            END {
                printf "%-24s %10s %11s %12s\n", name, "size(B)", "time(us)", "busbw(GB/s)"
                for (i = 1; i <= ns; i++) {
                    s = sizes[i]; m[i] = median(t[s])
                    printf "%-24s %10d %11.1f %12.4f\n", "", s, m[i], s / m[i] / 1e3 * 2 * (n - 1) / n
                }
                # least squares of t = 2(n-1) alpha + 2(n-1)/n S beta over the sizes >= fitmin
                for (i = 1; i <= ns; i++) if (sizes[i] >= fitmin) {
                    x = 2 * (n - 1) / n * sizes[i]; k++; sx += x; sy += m[i]; sxx += x * x; sxy += x * m[i]
                }
                beta = (k * sxy - sx * sy) / (k * sxx - sx * sx)
                alpha = (sy - beta * sx) / k / (2 * (n - 1))
                if (alpha < 0) { alpha = 0; beta = sxy / sxx }
                printf "%-24s fit (sizes >= %d B): alpha %.1f us, %.4f Gbit/s (beta %.3e us/B), n %d; #wrong %d\n", "", fitmin, alpha, 8e-3 / beta, beta, n, wrong
            }'
    done
done
