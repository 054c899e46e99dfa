#!/usr/bin/env bash
# Steps in flight (docs/pipelines.md): erase-train's host enqueues step
# t+1 before it waits for step t. This compares two builds, interleaved
# (every configuration with the old build, then the new, REPEATS rounds),
# on 2 ranks (one stage per core), P = 2:
#   gpt paci M 4 and gpt 1f1b M 4 (jobs/gpt-shakespeare-pp.cfg, 16
#   windows a step), ctr paci M 8 (the reference model without cuts,
#   2048 samples a step, stages auto), each without and with
#   --checkpoint-dir (which agrees on signals over all ranks every step;
#   --checkpoint-every 1000: no checkpoint is written in the run).
# Throughput: samples between the metrics file's train lines of step 10
# and the last step over the seconds between them (its "time" field): the
# wall clock of those steps with everything the host does between them
# (QPS p50 would leave the steps at log lines out). Printed per
# configuration: old and new min / median / max, the paired ratio new /
# old (median, range) and each stage's bubble (medians).
# Usage: bench/pipeline-ahead.sh OLD_BUILD [NEW_BUILD]   (env REPEATS, default 3; STEPS, default 80)
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
old=${1:?usage: bench/pipeline-ahead.sh OLD_BUILD [NEW_BUILD]}
new=${2:-$top/_build}
repeats=${REPEATS:-3}
steps=${STEPS:-80}
work=$(mktemp -d "${TMPDIR:-/tmp}/erase-pipeline-ahead.XXXXXX")
trap 'rm -rf "$work"' EXIT
mpi=(mpirun --bind-to core --map-by core -np 2)
[ "$(id -u)" = 0 ] && mpi+=(--allow-run-as-root)
"$new/apps/erase-convert" text -o "$work/text" "$top/data/text/tinyshakespeare.txt" >/dev/null
"$new/apps/erase-convert" criteo --quiet -o "$work/criteo" "$top/data/criteo/kaggle-train-first9999.tsv" >/dev/null

args() { # MODEL
    case $1 in
    gpt) echo --model "$top/jobs/gpt-shakespeare-pp.cfg" --train "$work/text/train" --eval-fraction 0.02 --batch 16 \
        --stages even ;;
    ctr) echo --model ctr --cuts none --train "$work/criteo" --batch 2048 --stages auto ;;
    esac
}

configs=("gpt paci 4 -" "gpt paci 4 ckpt" "gpt 1f1b 4 -" "gpt 1f1b 4 ckpt" "ctr paci 8 -" "ctr paci 8 ckpt")
for round in $(seq "$repeats"); do
    for c in "${configs[@]}"; do
        read -r model sched M ck <<<"$c"
        for build in old new; do
            dir=$old
            [ $build = new ] && dir=$new
            m="$work/$model-$sched-$M-$ck-$build-$round.jsonl"
            extra=()
            [ "$ck" = ckpt ] && extra=(--checkpoint-dir "$work/ck-$build" --checkpoint-every 1000)
            rm -rf "$work/ck-$build"
            # shellcheck disable=SC2046
            "${mpi[@]}" "$dir/apps/erase-train" $(args "$model") --steps "$steps" --pp 2 --schedule "$sched" \
                --micro-batches "$M" --log-every 10 --metrics "$m" --quiet "${extra[@]}" >"$m.out" 2>&1 ||
                { cat "$m.out" >&2; exit 1; }
        done
    done
done

python3 - "$work" "$repeats" "${configs[@]}" <<'EOF'
import json, statistics, sys
work, repeats, configs = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
def run(path):
    lines = [json.loads(l) for l in open(path)]
    train = [l for l in lines if l["type"] == "train"]
    a = next(l for l in train if l["step"] == 10)
    b = train[-1]
    pipe = [l for l in lines if l["type"] == "pipeline"][-1]
    return (b["samples"] - a["samples"]) / (b["time"] - a["time"]), [s["bubble"] for s in pipe["per_stage"]]
def fmt(v): return f"{v:.3g}" if v < 1000 else f"{v:.0f}"
print("| model | schedule | M | --checkpoint-dir | old samples/s: min / median / max | new | new / old (paired median, range) | bubble stage 0 / 1, old | new |")
print("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
for c in configs:
    model, sched, M, ck = c.split()
    r = {b: [run(f"{work}/{model}-{sched}-{M}-{ck}-{b}-{i}.jsonl") for i in range(1, repeats + 1)] for b in ("old", "new")}
    q = {b: [x[0] for x in r[b]] for b in r}
    ratio = [n / o for n, o in zip(q["new"], q["old"])]
    bub = {b: [statistics.median(x[1][s] for x in r[b]) * 100 for s in range(2)] for b in r}
    print(f"| {model} | {sched} | {M} | {'yes' if ck == 'ckpt' else 'no'} | "
          + " | ".join(" / ".join(fmt(v) for v in (min(q[b]), statistics.median(q[b]), max(q[b]))) for b in ("old", "new"))
          + f" | {statistics.median(ratio):.2f}x ({min(ratio):.2f}-{max(ratio):.2f}) | "
          + " | ".join(f"{bub[b][0]:.1f}% / {bub[b][1]:.1f}%" for b in ("old", "new")) + " |")
EOF
