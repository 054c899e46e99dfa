#!/usr/bin/env bash
# The measured P = 2 pipeline comparison of bench/RESULTS.md ("Pipelines
# (issue 16)"): erase-train --pp 2 on 2 ranks (one per core) under gpipe,
# 1f1b and paci (a = M) for M in 2, 4, 8, on
#   gpt: jobs/gpt-shakespeare-pp.cfg (8 layers, width 128, context 64,
#        tie_head = false) on tinyshakespeare, global batch 16 windows, 40 steps;
#   gpt-char: jobs/gpt-shakespeare-char-pp.cfg (nanoGPT's shakespeare-char
#        size: 6 layers, width 384, context 256), global batch 16, 15 steps
#        (only with MODELS="... gpt-char": about 25 s a run);
#   ctr: the shipped Criteo sample, no cuts, global batch 2048, 40 steps;
# stages split evenly (gpt 0-3 | 4-7, ctr 0-2 | 3-6: what
# erase-bench pipeline --simulate assumes). The runs are interleaved
# (every configuration once, then again: REPEATS rounds) and the table
# gives min / median / max over them of the QPS p50 (samples/s; tokens/s
# for gpt), each stage's measured bubble (the metrics file's "pipeline"
# record) beside the analytic (P-1)/(M+P-1), each stage's busy and wall
# ms per step (means), and erase-bench pipeline --simulate's prediction against
# the measured samples/s: from each run's own per-stage forward, backward
# and update times (--forward-ms etc. per stage; a free link, no host
# time), and from erase-bench's own timing of the model (--model-file /
# --model, one process) at the same split and micro-batch size.
# Then (PARTS containing "target") the time to a target validation loss
# on gpt: jobs/shakespeare.run's optimizer (adamw, lr 0.001, cosine, 20
# warm-up steps; no gradient clipping: paci refuses it) for STEPS (default
# 2000) steps of 16 windows, M = 4, 1f1b and paci, each with every seed of
# SEEDS (default "1 2 3"), evaluated every 50 steps on the last 32 KB of
# the text (inside the held-out 10%). The losses are deterministic (the
# schedules' arithmetic does not depend on timing; gpipe's equal 1f1b's
# step for step, tests/sched/test-pipe-np2.sh); the time to a loss is
# its step x 16 windows / the schedule's median samples/s at M = 4 in the
# interleaved throughput runs above (when they ran; else the run's own
# training time). The targets: TARGETS (default 2.1 2.0), losses both
# schedules pass on the way, and per seed the larger of the two final
# losses, the loss both reach; the ratio per target is the median over
# the seeds.
# Usage: bench/pipeline-p2.sh [BUILD_DIR]   (env REPEATS, default 5; KEEP=1 keeps the runs;
#        MODELS, default "gpt ctr" (add gpt-char for nanoGPT's size);
#        PARTS, default "throughput target"; about 45 minutes on 2 cores)
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$top/_build}
repeats=${REPEATS:-5}
models=${MODELS:-gpt ctr}
parts=${PARTS:-throughput target}
steps=${STEPS:-2000}
seeds=${SEEDS:-1 2 3}
work=$(mktemp -d "${TMPDIR:-/tmp}/erase-pipeline-p2.XXXXXX")
trap '[ -n "${KEEP:-}" ] || rm -rf "$work"' EXIT
# one stage per core, Open MPI's default for 2 ranks (what a user gets): a
# stage's comm streams share its core with its compute stream, and poll
# closely only while the compute stream waits for them (lib/comm/mpi_comm.c)
mpi=(mpirun --bind-to core --map-by core -np 2)
[ "$(id -u)" = 0 ] && mpi+=(--allow-run-as-root)

"$build/apps/erase-convert" text -o "$work/text" "$top/data/text/tinyshakespeare.txt" >/dev/null
"$build/apps/erase-convert" criteo --quiet -o "$work/criteo" "$top/data/criteo/kaggle-train-first9999.tsv" >/dev/null

args() { # MODEL -> erase-train's arguments; GLOBAL BATCH in $batch
    case $1 in
    gpt) batch=16; echo --model "$top/jobs/gpt-shakespeare-pp.cfg" --train "$work/text/train" --eval-fraction 0.02 \
        --batch 16 --steps 40 ;;
    gpt-char) batch=16; echo --model "$top/jobs/gpt-shakespeare-char-pp.cfg" --train "$work/text/train" \
        --eval-fraction 0.02 --batch 16 --steps 15 ;;
    ctr) batch=2048; echo --model ctr --cuts none --train "$work/criteo" --batch 2048 --steps 40 ;;
    esac
}

# run MODEL SCHEDULE M ROUND: one erase-train run; its metrics file
run() {
    local m="$work/$1-$2-$3-$4.jsonl"
    # shellcheck disable=SC2046
    "${mpi[@]}" "$build/apps/erase-train" $(args "$1") --pp 2 --stages even --schedule "$2" --micro-batches "$3" \
        --metrics "$m" --quiet >"$m.out" 2>&1 || { cat "$m.out" >&2; exit 1; }
}

case $parts in *throughput*) ;; *) repeats=0 models= ;; esac
for round in $(seq "$repeats"); do
    for model in $models; do
        for M in 2 4 8; do
            for schedule in gpipe 1f1b paci; do
                run "$model" "$schedule" "$M" "$round"
            done
        done
    done
done

# the simulator's prediction: the same model, split (even) and micro-batch
for model in $models; do
    args "$model" >/dev/null
    for M in 2 4 8; do
        case $model in
        gpt) sim=(--model-file "$top/jobs/gpt-shakespeare-pp.cfg") ;;
        gpt-char) sim=(--model-file "$top/jobs/gpt-shakespeare-char-pp.cfg") ;;
        *) sim=(--model ctr) ;;
        esac
        "$build/apps/erase-bench" pipeline --simulate "${sim[@]}" --pp 2 --micro-batches "$M" --steps 40 \
            --batch $((batch / M)) >"$work/sim-$model-$M.txt"
    done
done

[ -z "$models" ] || PYTHONPATH="$top/bench" python3 - "$work" "$repeats" "$models" "$build" <<'EOF'
import json, os, statistics, subprocess, sys
from p2 import fmt, spread, sim_rows
work, repeats, models, build = sys.argv[1], int(sys.argv[2]), sys.argv[3].split(), sys.argv[4]
batch = {"gpt": 16, "gpt-char": 16, "ctr": 2048}
def simulate(args, M):
    """erase-bench pipeline --simulate's samples/s per schedule for P = 2 and M"""
    out = subprocess.run([os.path.join(build, "apps/erase-bench"), "pipeline", "--simulate", "--pp", "2",
                          "--micro-batches", str(M), "--steps", "40"] + args,
                         check=True, capture_output=True, text=True).stdout
    return {k[0]: v[0] for k, v in sim_rows(out).items() if k[1] == 2}
print("| model | schedule | M | samples/s: min / median / max | tokens/s (median) | bubble stage 0 / 1 (median) "
      "| imbalance stage 0 / 1 | the schedule's own bubble: min / median / max | analytic "
      "| busy ms per step, stage 0 / 1 | wall ms per step, stage 0 / 1 "
      "| simulated from the run's times: measured / simulated | simulated from erase-bench's own timing: measured / simulated |")
print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
for model in models:
    for M in (2, 4, 8):
        own = {k[0]: v[0] for k, v in sim_rows(open(os.path.join(work, "sim-%s-%d.txt" % (model, M))).read()).items()
               if k[1] == 2}
        for sched in ("gpipe", "1f1b", "paci"):
            qps, tok, b0, b1, i0, i1, sb, u0, u1, w0, w1, ratio = [], [], [], [], [], [], [], [], [], [], [], []
            for r in range(1, repeats + 1):
                recs = [json.loads(l) for l in open(os.path.join(work, "%s-%s-%d-%d.jsonl" % (model, sched, M, r)))]
                summ = next(x for x in recs if x["type"] == "summary")
                pipe = next(x for x in recs if x["type"] == "pipeline")
                qps.append(summ["qps_p50"])
                tok.append(summ.get("tokens_per_s_p50", 0))
                st = pipe["per_stage"]
                b0.append(100 * st[0]["bubble"]); b1.append(100 * st[1]["bubble"])
                i0.append(100 * st[0]["imbalance"]); i1.append(100 * st[1]["imbalance"])
                # bubble - imbalance: the idle the schedule adds to the split's (the same on every stage
                # in an ideal run: the busiest stage's bubble); the larger of the stages'
                sb.append(max(100 * (x["bubble"] - x["imbalance"]) for x in st))
                per_step = lambda x, key: x[key] / x["timed_steps"]
                u0.append(per_step(st[0], "busy_ms")); u1.append(per_step(st[1], "busy_ms"))
                w0.append(per_step(st[0], "wall_ms")); w1.append(per_step(st[1], "wall_ms"))
                # the run's own per-stage times: per micro-batch forward and backward, per update
                lst = lambda key, per: ",".join("%.4f" % (per_step(x, key) / per) for x in st)
                sim = simulate(["--forward-ms", lst("forward_ms", M), "--backward-ms", lst("backward_ms", M),
                                "--update-ms", lst("update_ms", 1), "--batch", str(batch[model] // M)], M)
                ratio.append(summ["qps_p50"] / sim[sched])
            med = statistics.median(qps)
            md = statistics.median
            print("| %s | %s | %d | %s | %s | %.1f%% / %.1f%% | %.1f%% / %.1f%% | %.1f%% / %.1f%% / %.1f%% | %s "
                  "| %.1f / %.1f | %.1f / %.1f | %.2f (%.2f-%.2f) | %.2f |" % (
                model, sched, M, spread(qps), fmt(md(tok)) if tok[0] else "-", md(b0), md(b1), md(i0), md(i1),
                min(sb), md(sb), max(sb), "-" if sched == "paci" else "%.1f%%" % (100.0 / (M + 1)), md(u0), md(u1),
                md(w0), md(w1), md(ratio), min(ratio), max(ratio), med / own[sched]))
EOF

case $parts in *target*) ;; *) exit 0 ;; esac
tail -c 32768 "$top/data/text/tinyshakespeare.txt" >"$work/heldout.txt"
"$build/apps/erase-convert" text -o "$work/heldout" "$work/heldout.txt" >/dev/null
for seed in $seeds; do
    for schedule in 1f1b paci; do
        "${mpi[@]}" "$build/apps/erase-train" --config "$top/jobs/shakespeare.run" --model "$top/jobs/gpt-shakespeare-pp.cfg" \
            --train "$work/text/train" --eval "$work/heldout/train,$work/heldout/eval" --steps "$steps" --grad-clip 0 \
            --seed "$seed" --eval-every 50 --log-every 50 --pp 2 --stages even --schedule "$schedule" --micro-batches 4 \
            --metrics "$work/target-$schedule-$seed.jsonl" --quiet >"$work/target-$schedule-$seed.out" 2>&1 ||
            { cat "$work/target-$schedule-$seed.out" >&2; exit 1; }
    done
done
echo
PYTHONPATH="$top/bench" python3 - "$work" "$repeats" "$seeds" "${TARGETS:-2.1 2.0}" <<'EOF'
import json, os, statistics, sys
from p2 import eval_curve
work, repeats, seeds, targets = sys.argv[1], int(sys.argv[2]), sys.argv[3].split(), sys.argv[4].split()
qps = {}
for sched in ("1f1b", "paci"):
    runs = [os.path.join(work, "gpt-%s-4-%d.jsonl" % (sched, r)) for r in range(1, repeats + 1)]
    if repeats and all(os.path.exists(f) for f in runs):
        qps[sched] = statistics.median(next(x for x in map(json.loads, open(f)) if x["type"] == "summary")["qps_p50"]
                                       for f in runs)
curves = {(s, seed): eval_curve(os.path.join(work, "target-%s-%s.jsonl" % (s, seed)), "loss")[0]
          for s in ("1f1b", "paci") for seed in seeds}
final = {s: statistics.mean(curves[(s, seed)][-1][2] for seed in seeds) for s in ("1f1b", "paci")}
steps = curves[("1f1b", seeds[0])][-1][0]
print("gpt, P = 2, M = 4, %d steps (%d tokens), seeds %s" % (steps, steps * 16 * 64, " ".join(seeds)))
print("final validation loss per seed: 1f1b %s, paci %s; mean 1f1b %.4f, paci %.4f (%+.2f%%)" % (
    " ".join("%.4f" % curves[("1f1b", x)][-1][2] for x in seeds), " ".join("%.4f" % curves[("paci", x)][-1][2] for x in seeds),
    final["1f1b"], final["paci"], 100 * (final["paci"] / final["1f1b"] - 1)))
print("targets: fixed losses both schedules pass on the way (TARGETS, default 2.1 and 2.0) and, per seed, the larger of the "
      "two final losses (the loss both reach); the time to a target is %s" % (
    "the first evaluation's step at or below it x 16 / the interleaved median samples/s at M = 4 (1f1b %.1f, paci %.1f)"
    % (qps["1f1b"], qps["paci"]) if len(qps) == 2 else "the run's own training seconds to that evaluation"))
print()
print("| target | seed | step reaching it: 1f1b / paci | seconds: 1f1b / paci | paci's time to target vs 1f1b's |")
print("| --- | --- | --- | --- | --- |")
ratios = {}
for kind in targets + ["final"]:
    for seed in seeds:
        f1, fp = curves[("1f1b", seed)][-1][2], curves[("paci", seed)][-1][2]
        target = max(f1, fp) if kind == "final" else float(kind)
        hit = {s: next((e for e in curves[(s, seed)] if e[2] <= target), None) for s in ("1f1b", "paci")}
        if not all(hit.values()):
            print("| %s | %s | not reached | - | - |" % (kind, seed))
            continue
        sec = {s: hit[s][0] * 16 / qps[s] if len(qps) == 2 else hit[s][1] for s in hit}
        ratios.setdefault(kind, []).append(sec["1f1b"] / sec["paci"])
        print("| %s | %s | %d / %d | %.1f / %.1f | %.2fx |" % ("%.4f (the larger final)" % target if kind == "final"
              else kind, seed, hit["1f1b"][0], hit["paci"][0], sec["1f1b"], sec["paci"], ratios[kind][-1]))
print()
for kind, r in ratios.items():
    print("paci's time to %s vs 1f1b's, median over %d seed%s: %.2fx (the bubble model (M+P-1)/M = 1.25x; 80%% of "
          "its gain: 1.20x)" % ("the larger final loss" if kind == "final" else kind, len(r), "" if len(r) == 1 else "s",
                                statistics.median(r)))
print()
print("validation loss by step, seed %s:" % seeds[0])
for s in ("1f1b", "paci"):
    print("  %-5s " % s + " ".join("%d:%.3f" % (e[0], e[2]) for e in curves[(s, seeds[0])][1::4]))
EOF
