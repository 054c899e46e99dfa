#!/bin/sh
# erase against TorchRec, training samples/s on this CPU (issue 36, item 4):
# MLPerf's DLRM-DCNv2 (erase's `dcn`, no cuts, against TorchRec's DLRM_DCN)
# and DLRM with dot interaction (erase's `ctr` without cuts, against
# TorchRec's DLRM with the same sizes), the same global batch, tables of
# $ROWS rows each (MLPerf's 40M-row tables do not fit: scaled down), one id
# per feature, the same synthetic distribution and optimizers on both sides
# (bench/dcn_torchrec.py's header: row-wise Adagrad lr 0.02 for the tables,
# AdamW lr 1e-3 for the rest). Three placements: 1 rank of 1 thread, 1 rank
# of 2 threads, 2 ranks of 1 thread (erase: mpirun -np 2, data parallel,
# tables replicated, half the batch per rank; TorchRec: DMP over gloo, its
# planner's table-wise sharding, DDP for the dense part). erase runs
# `erase-bench schedules` with its `off` and `graph` schedules interleaved
# step by step; TorchRec follows in the same repeat (erase, torchrec,
# erase, ...). A figure is one run's median samples/s over its timed steps
# (warm-up excluded); the table shows min / median / max over the repeats
# and the ratio of the medians.
#
#   bench/dcn-vs-torchrec.sh [speed]    the speed table (default)
#   bench/dcn-vs-torchrec.sh gemm       the GEMM report: share of erase's dcn
#        step (off) in SGEMM and the GEMMs' GFLOP/s against the SGEMM peak
#        (erase-bench gemm 2048^3, same threads). perf samples the whole
#        process at two step counts (STEPS_A, STEPS_B); the difference per
#        symbol is the cost of the extra steps alone (setup cancels out;
#        schedules runs STEPS untraced steps then STEPS / 3 + 1 traced ones,
#        so the extra steps are B - A + B / 3 - A / 3).
#        GEMM = OpenBLAS's sgemm kernels and packing (libopenblas, not its
#        idle threads); GEMM GFLOP/s = the extra steps' GEMM FLOP
#        (bench_step_gemm_flop) over the GEMM CPU-seconds, times the threads.
#
# Environment: ERASE_BENCH (default _build/apps/erase-bench), TORCHREC_PYTHON
# (default /work/venv-torchrec/bin/python: how to make it is in
# bench/dcn_torchrec.py), REPEATS (3), STEPS (6), WARMUP (2), ROWS (100000),
# DCN_BATCH (1024), CTR_BATCH (4096), MODELS ("dcn ctr"), BENCH_LOCK
# (/work/bench.lock: one benchmark at a time on a shared machine; every run
# holds it), STEPS_A / STEPS_B (gemm: 2 and 8).
set -eu
here=$(cd "$(dirname "$0")/.." && pwd)
what=${1:-speed}
bench=${ERASE_BENCH:-$here/_build/apps/erase-bench}
py=${TORCHREC_PYTHON:-/work/venv-torchrec/bin/python}
repeats=${REPEATS:-3} steps=${STEPS:-6} warmup=${WARMUP:-2} rows=${ROWS:-100000}
dcn_batch=${DCN_BATCH:-1024} ctr_batch=${CTR_BATCH:-4096} models=${MODELS:-dcn ctr}
lock=${BENCH_LOCK:-/work/bench.lock}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
tmp=$(mktemp -d "${TMPDIR:-/tmp}/dcn-vs-torchrec.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

load() { cut -d' ' -f1-3 /proc/loadavg; }
echo "# CPU: $(lscpu | sed -n 's/^Model name: *//p'), $(nproc) cores; $(uname -r)"
echo "# erase: $bench ($(git -C "$here" rev-parse --short HEAD 2>/dev/null || echo '?')); rows per table $rows"

# erase-bench schedules' samples/s for `mode` of one run's output
qps() { awk -v m="$2" '$3 == m && $1 !~ /^#/ { print $4 }' "$1"; }

# run_erase MODEL BATCH THREADS RANKS OUT: off and graph, interleaved
run_erase() {
    set -- "$1" "$2" "$3" "$4" "$5"
    if [ "$4" = 1 ]; then
        flock "$lock" "$bench" schedules --model "$1" --batch "$2" --modes off,graph --threads "$3" \
            --table-rows "$rows" --steps "$steps" --warmup "$warmup" >"$5" 2>"$5.err"
    else
        flock "$lock" mpirun -np "$4" --bind-to core "$bench" schedules --model "$1" --batch $(($2 / $4)) \
            --modes off,graph --threads "$3" --table-rows "$rows" --steps "$steps" --warmup "$warmup" \
            >"$5" 2>"$5.err"
    fi
}

# run_torchrec MODEL BATCH THREADS RANKS OUT
run_torchrec() {
    flock "$lock" "$py" "$here/bench/dcn_torchrec.py" --model "$1" --batch "$2" --threads "$3" --ranks "$4" \
        --rows "$rows" --steps "$steps" --warmup "$warmup" 2>"$5.err" | tail -n 1 >"$5"
}

speed() {
    echo "# models: $models; batch dcn $dcn_batch, ctr $ctr_batch (global); $repeats repeats of $steps steps after $warmup warm-up"
    results=$tmp/results.tsv
    : >"$results"
    r=1
    while [ "$r" -le "$repeats" ]; do
        for model in $models; do
            case $model in
            dcn) em=dcn tm=dcn batch=$dcn_batch ;;
            ctr) em=ctr-nocuts tm=dlrm batch=$ctr_batch ;;
            esac
            for place in 1x1 1x2 2x1; do
                ranks=${place%x*} threads=${place#*x}
                run_erase "$em" "$batch" "$threads" "$ranks" "$tmp/e"
                printf '%s\t%s\terase-off\t%s\t%s\n' "$model" "$place" "$(qps "$tmp/e" off)" "$(load)" >>"$results"
                printf '%s\t%s\terase-graph\t%s\t%s\n' "$model" "$place" "$(qps "$tmp/e" graph)" "$(load)" >>"$results"
                run_torchrec "$tm" "$batch" "$threads" "$ranks" "$tmp/t"
                t=$(sed -n 's/.*"samples_per_s_median": \([0-9.]*\).*/\1/p' "$tmp/t")
                [ -n "$t" ] || { echo "dcn-vs-torchrec: TorchRec $tm $place printed no figures:" >&2; tail -n 5 "$tmp/t.err" >&2; exit 1; }
                printf '%s\t%s\ttorchrec\t%s\t%s\n' "$model" "$place" "$t" "$(load)" >>"$results"
                [ "$r" = 1 ] && [ "$place" = 1x1 ] && echo "# torchrec ($model): $(cat "$tmp/t")"
                tail -n 3 "$results" | sed 's/^/# run '"$r"': /'
            done
        done
        r=$((r + 1))
    done
    echo "# placement RxT: R ranks of T threads; samples/s min/median/max over the repeats; x: erase median / TorchRec median"
    python3 - "$results" <<'EOF'
import statistics, sys
rows = [l.rstrip("\n").split("\t") for l in open(sys.argv[1]) if l.strip()]
fig, loads = {}, []
for model, place, side, v, ld in rows:
    fig.setdefault((model, place), {}).setdefault(side, []).append(float(v))
    loads.append(float(ld.split()[0]))
def mmm(v):
    return "%.0f / %.0f / %.0f" % (min(v), statistics.median(v), max(v))
print("| model | ranks x threads | erase off | erase graph | TorchRec | off / TorchRec | graph / TorchRec |")
print("| --- | --- | --- | --- | --- | --- | --- |")
for (model, place), s in fig.items():
    t = statistics.median(s["torchrec"])
    print("| %s | %s | %s | %s | %s | %.2fx | %.2fx |" % (
        model, place.replace("x", " x "), mmm(s["erase-off"]), mmm(s["erase-graph"]), mmm(s["torchrec"]),
        statistics.median(s["erase-off"]) / t, statistics.median(s["erase-graph"]) / t))
print("# load average (1 min) during the runs: %.2f .. %.2f" % (min(loads), max(loads)))
EOF
}

# perf_profile STEPS THREADS RANKS OUT: perf samples of erase's dcn (off)
perf_profile() {
    if [ "$3" = 1 ]; then
        set -- "$1" "$2" "$3" "$4" "$bench" schedules --model dcn --batch "$dcn_batch"
    else
        set -- "$1" "$2" "$3" "$4" mpirun -np "$3" --bind-to core "$bench" schedules --model dcn --batch $((dcn_batch / $3))
    fi
    s=$1 t=$2 out=$4
    shift 4
    flock "$lock" perf record -q -F 499 -o "$out.data" -- "$@" --modes off --threads "$t" --table-rows "$rows" \
        --steps "$s" --warmup 1 >"$out.log" 2>&1
    perf report -i "$out.data" --no-children --sort dso,sym -n --stdio -g none 2>/dev/null |
        awk '$1 ~ /%$/ { n = $2; $1 = $2 = ""; sub(/^ +/, ""); print n "\t" $0 }' >"$out.tsv"
}

gemm() {
    a=${STEPS_A:-2} b=${STEPS_B:-8}
    echo "# SGEMM peak: erase-bench gemm --shapes 2048 (load $(load))"
    flock "$lock" "$bench" gemm --shapes 2048 --threads 1,2 --samples 3 | tee "$tmp/peak"
    flop=$("$bench" schedules --model dcn --batch 1 --modes off --threads 1 --table-rows 2 --steps 1 --warmup 0 \
        2>/dev/null | sed -n 's/^# dcn: GEMM FLOP per sample \([0-9]*\).*/\1/p')
    echo "# dcn: $flop GEMM FLOP per sample; batch $dcn_batch (global); perf at $a and $b steps (load $(load))"
    for place in 1x1 1x2 2x1; do
        ranks=${place%x*} threads=${place#*x}
        perf_profile "$a" "$threads" "$ranks" "$tmp/a"
        perf_profile "$b" "$threads" "$ranks" "$tmp/b"
        python3 - "$tmp/a.tsv" "$tmp/b.tsv" "$tmp/peak" "$flop" "$dcn_batch" "$((b - a + b / 3 - a / 3))" "$ranks" "$threads" "$place" "$(load)" <<'EOF'
import sys
a, b, peakf, flop, batch, steps, ranks, threads, place, ld = sys.argv[1:]
def read(p):
    d = {}
    for line in open(p):
        n, key = line.rstrip("\n").split("\t", 1)
        d[key] = d.get(key, 0) + int(n)
    return d
A, B = read(a), read(b)
diff = {k: B.get(k, 0) - A.get(k, 0) for k in set(A) | set(B)}
# the setup's own symbols (table initialisation; the kernel zeroing pages on
# first touch: no buffer is mapped or unmapped during the steps) do not
# cancel exactly between the two runs: left out of the steps' samples
SETUP = ("erase_network_init_param", "__cos_fma", "__sin_fma", "__ieee754_log_fma", "__log_fma", "clear_page_erms")
setup = sum(v for k, v in diff.items() if k.split()[-1] in SETUP)
diff = {k: v for k, v in diff.items() if k.split()[-1] not in SETUP}
total = sum(diff.values())
gemm = sum(v for k, v in diff.items() if "libopenblas" in k and "sgemm" in k)
idle = sum(v for k, v in diff.items() if "libopenblas" in k and "sgemm" not in k)
cores = int(ranks) * int(threads)
peak = None
for line in open(peakf):
    f = line.split()
    if len(f) >= 6 and f[0] == "2048x2048x2048" and int(f[1]) == cores:
        peak = float(f[5])
gemm_s = gemm / 499.0  # CPU-seconds in the GEMMs of the extra steps, all ranks
flop_steps = float(flop) * int(batch) * int(steps)
rate = flop_steps / gemm_s / 1e9 * cores if gemm_s > 0 else 0  # as if every core ran GEMMs together
print("%s: share of the step in SGEMM %.1f%% (%d of %d samples, %d setup samples left out; OpenBLAS outside sgemm %.1f%%); GEMM %.1f GFLOP/s"
      " on %d core%s, %s of the SGEMM 2048^3 peak %s GFLOP/s; load %s"
      % (place, 100.0 * gemm / total, gemm, total, setup, 100.0 * idle / total, rate, cores, "s" if cores > 1 else "",
         "%.0f%%" % (100 * rate / peak) if peak else "?", "%.1f" % peak if peak else "?", ld))
top = sorted(((v, k) for k, v in diff.items() if not ("libopenblas" in k and "sgemm" in k)), reverse=True)[:8]
print("  outside SGEMM: " + "; ".join("%s %.1f%%" % (k.split("]")[-1].strip(), 100.0 * v / total) for v, k in top))
EOF
    done
}

case $what in
speed) speed ;;
gemm) gemm ;;
*) echo "usage: bench/dcn-vs-torchrec.sh [speed|gemm]" >&2; exit 2 ;;
esac
