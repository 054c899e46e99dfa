#!/usr/bin/env bash
# gpt's time to a target validation loss at P = 4 and 8 (bench/RESULTS.md,
# "Pipelines, re-measured"), for 1f1b and paci (a = M): a machine with P
# cores per pipeline is not here, so the two halves come apart:
#   - the loss curve is measured: erase-train --pp P on P ranks,
#     oversubscribed on this machine's cores (a schedule's arithmetic does
#     not depend on timing, so the losses are those of P real stages):
#     jobs/gpt-shakespeare-pp.cfg (8 layers: P = 8 is a block a stage),
#     jobs/shakespeare.run's optimizer (adamw, lr 0.001, cosine, 20
#     warm-up steps, no clipping), STEPS (default 2000) steps of 16
#     windows, M = P (drift bound of paci at stage 0: ceil((P-1)/M) = 1),
#     seed SEED (1), evaluated every 50 steps on the last 32 KB of the text;
#   - the time per step is simulated: erase-bench pipeline --simulate from
#     this machine's block times (one process, one core; the P = 2 runs of
#     bench/pipeline-p2.sh measure how far that is from a real pipeline).
# The time to a target is the first evaluation's step at or below it x 16
# / the simulated samples/s; targets: TARGETS (default 2.1 2.0) and the
# larger of the two final losses.
# Usage: bench/pipeline-deep.sh [BUILD_DIR]  (env PPS, default "4 8"; KEEP=1;
#        about 12 minutes on 2 cores)
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$top/_build}
steps=${STEPS:-2000}
seed=${SEED:-1}
pps=${PPS:-4 8}
work=$(mktemp -d "${TMPDIR:-/tmp}/erase-pipeline-deep.XXXXXX")
trap '[ -n "${KEEP:-}" ] || rm -rf "$work"' EXIT
mpi=(mpirun --oversubscribe --bind-to none)
[ "$(id -u)" = 0 ] && mpi+=(--allow-run-as-root)

"$build/apps/erase-convert" text -o "$work/text" "$top/data/text/tinyshakespeare.txt" >/dev/null
tail -c 32768 "$top/data/text/tinyshakespeare.txt" >"$work/heldout.txt"
"$build/apps/erase-convert" text -o "$work/heldout" "$work/heldout.txt" >/dev/null
for P in $pps; do
    "$build/apps/erase-bench" pipeline --simulate --model-file "$top/jobs/gpt-shakespeare-pp.cfg" --pp "$P" \
        --micro-batches "$P" --batch $((16 / P)) >"$work/sim-$P.txt"
    for schedule in 1f1b paci; do
        "${mpi[@]}" -np "$P" "$build/apps/erase-train" --config "$top/jobs/shakespeare.run" \
            --model "$top/jobs/gpt-shakespeare-pp.cfg" --train "$work/text/train" \
            --eval "$work/heldout/train,$work/heldout/eval" --steps "$steps" --grad-clip 0 --seed "$seed" \
            --eval-every 50 --log-every 50 --pp "$P" --stages even --schedule "$schedule" --micro-batches "$P" \
            --metrics "$work/target-$P-$schedule.jsonl" --quiet >"$work/target-$P-$schedule.out" 2>&1 ||
            { cat "$work/target-$P-$schedule.out" >&2; exit 1; }
    done
done
PYTHONPATH="$top/bench" python3 - "$work" "$pps" "${TARGETS:-2.1 2.0}" <<'EOF'
import json, os, sys
from p2 import eval_curve, sim_rows
work, pps, targets = sys.argv[1], [int(p) for p in sys.argv[2].split()], sys.argv[3].split()
print("| P | M | schedule | final loss | vs 1f1b | paci's drift (max per stage) | simulated samples/s "
      "| target: step reaching it, simulated seconds | paci's time to target vs 1f1b's |")
print("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
for P in pps:
    sim = sim_rows(open(os.path.join(work, "sim-%d.txt" % P)).read())
    curves, qps, drift = {}, {}, {}
    for s in ("1f1b", "paci"):
        path = os.path.join(work, "target-%d-%s.jsonl" % (P, s))
        curves[s] = eval_curve(path, "loss")[0]
        qps[s] = sim[(s, P, P)][0]
        pipe = [json.loads(l) for l in open(path) if '"type":"pipeline"' in l][-1]
        drift[s] = ",".join("%d" % x["max_drift"] for x in pipe["per_stage"])
    final = {s: curves[s][-1][2] for s in curves}
    kinds = [(t, float(t)) for t in targets] + [("%.4f (the larger final)" % max(final.values()), max(final.values()))]
    for s in ("1f1b", "paci"):
        cells, ratios = [], []
        for name, target in kinds:
            hit = {x: next((e for e in curves[x] if e[2] <= target), None) for x in curves}
            if hit[s] is None:
                cells.append("%s: -" % name.split()[0])
                continue
            cells.append("%s: %d, %.1f s" % (name.split()[0], hit[s][0], hit[s][0] * 16 / qps[s]))
            if hit["1f1b"] and hit["paci"]:
                ratios.append("%s: %.2fx" % (name.split()[0], (hit["1f1b"][0] / qps["1f1b"]) / (hit["paci"][0] / qps["paci"])))
        print("| %d | %d | %s | %.4f | %+.2f%% | %s | %.1f | %s | %s |" % (
            P, P, s, final[s], 100 * (final[s] / final["1f1b"] - 1), drift[s] if s == "paci" else "-", qps[s],
            "; ".join(cells), "; ".join(ratios) if s == "paci" else "-"))
    print("# P = %d: the bubble model (M+P-1)/M = %.3fx; 80%% of its gain %.3fx" % (
        P, (2 * P - 1) / P, 1 + 0.8 * ((2 * P - 1) / P - 1)))
EOF
