#!/usr/bin/env bash
# The local-parallelism figures of bench/RESULTS.md ("Local parallelism
# (issue 17)"): erase-train --pp 2 --schedule local against backprop
# pipelines and data parallelism on 2 ranks (one per core).
#
# PARTS containing "throughput": local, 1f1b, paci (a = M) and data
# parallel (2 ranks, no --pp) on the same model and even split, M = 4,
# interleaved (every configuration once, then again: REPEATS rounds), 40
# steps each, on
#   gpt: jobs/gpt-shakespeare-pp.cfg (8 layers, width 128, context 64,
#        tie_head = false) on tinyshakespeare, global batch 16 windows;
#   ctr: the shipped Criteo sample, global batch 2048;
# stages 0-3 | 4-7 (gpt), 0-2 | 3-6 (ctr); local's model is the same with
# a cut at the stage boundary (--cuts 4, --cuts 3: local's stages end at
# cuts), the others' without cuts. The table: min / median / max of the
# QPS p50 (samples/s; tokens/s for gpt), the ratio of medians over 1f1b,
# the bytes all stages send per step (the metrics file's "pipeline"
# record) and local's over 1f1b's (the issue's goal: <= 55%), each
# stage's bubble, and erase-bench pipeline --simulate's prediction from
# each run's own per-stage times (measured / simulated), the activation
# memory of each stage (its slots). Then erase-bench pipeline --simulate
# from its own timing of the same model (--model-file / --model ctr; the
# median of 21 repeats, the networks' repeats interleaved) at P = 2, 4, 8
# (ctr: 2, 4; 7 blocks).
#
# PARTS containing "quality": the figures of each model trained three ways
# for the same steps, evaluated every EVAL steps: local (--pp 2 --schedule
# local --stages even, the model with cuts), backprop (--cuts none --pp 2
# --schedule 1f1b) and the cut model on one rank (no --pp):
#   gpt: jobs/shakespeare.run's adamw (lr 1e-3 cosine, 20 warm-up steps,
#        --grad-clip 0 as in bench/pipeline-p2.sh) on gpt-shakespeare-pp.cfg
#        with NanoChat-like cuts every 2 layers (--cuts 2,4,6), GPT_STEPS
#        (default 300) steps of 16 windows, M = 4, validation loss on the
#        last 32 KB of the text;
#   ctr: jobs/criteo-sample.run (the default cuts: every boundary; global
#        batch 128, 2 epochs), M = 2, NE on the held-out 20%;
#   mlp: jobs/mnist.run (jobs/mnist-mlp.cfg: every boundary a cut; global
#        batch 128, 3 epochs), M = 2, accuracy on the 2,000 held-out images.
# Every way runs QREPEATS times, interleaved (each way once per round);
# the figures are the same every round (the runs are deterministic: the
# script says so or stops), the times are the medians over the rounds.
# "Equal steps" is each run's last evaluation; "equal wall time" each
# run's last evaluation within the shortest of the three ways' training
# time (the steps' time, summed from the metrics file's train records; not
# the evaluations).
# Usage: bench/local-p2.sh [BUILD_DIR]   (env REPEATS, default 3; QREPEATS, default 3;
#        KEEP=1 keeps the runs; MODELS, default "gpt ctr" (throughput); QMODELS, default
#        "gpt ctr mlp" (quality); PARTS, default "throughput quality"; EVAL, default 25;
#        about 20 minutes on 2 busy cores)
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$top/_build}
repeats=${REPEATS:-3}
qrepeats=${QREPEATS:-3}
models=${MODELS:-gpt ctr}
qmodels=${QMODELS:-gpt ctr mlp}
parts=${PARTS:-throughput quality}
gpt_steps=${GPT_STEPS:-300}
every=${EVAL:-25}
work=$(mktemp -d "${TMPDIR:-/tmp}/erase-local-p2.XXXXXX")
trap '[ -n "${KEEP:-}" ] || rm -rf "$work"' EXIT
mpi=(mpirun --oversubscribe --bind-to none)
[ "$(id -u)" = 0 ] && mpi+=(--allow-run-as-root)
M=4

"$build/apps/erase-convert" text -o "$work/text" "$top/data/text/tinyshakespeare.txt" >/dev/null
"$build/apps/erase-convert" criteo --quiet -o "$work/criteo" "$top/data/criteo/kaggle-train-first9999.tsv" >/dev/null
"$build/apps/erase-convert" mnist --quiet -o "$work/mnist" "$top/data/mnist/t10k-images-idx3-ubyte.gz" \
    "$top/data/mnist/t10k-labels-idx1-ubyte.gz" >/dev/null
tail -c 32768 "$top/data/text/tinyshakespeare.txt" >"$work/heldout.txt"
"$build/apps/erase-convert" text -o "$work/heldout" "$work/heldout.txt" >/dev/null

# train NAME RANKS ARGS...: one erase-train run on RANKS ranks; its metrics file $work/NAME.jsonl
train() {
    local name=$1 ranks=$2
    shift 2
    "${mpi[@]}" -np "$ranks" "$build/apps/erase-train" "$@" --metrics "$work/$name.jsonl" --quiet \
        >"$work/$name.out" 2>&1 || { cat "$work/$name.out" >&2; exit 1; }
}

# throughput MODEL SCHEDULE ROUND
throughput() {
    local a=() pp=(--pp 2 --stages even --schedule "$2" --micro-batches $M)
    case $1 in
    gpt) a=(--model "$top/jobs/gpt-shakespeare-pp.cfg" --train "$work/text/train" --eval-fraction 0.02
        --global-batch 16 --steps 40) ;;
    ctr) a=(--model ctr --train "$work/criteo" --global-batch 2048 --steps 40) ;;
    esac
    case $2 in
    local) [ "$1" = gpt ] && a+=(--cuts 4) || a+=(--cuts 3) ;;
    *) a+=(--cuts none) ;;
    esac
    [ "$2" = dp ] && pp=()
    train "tp-$1-$2-$3" 2 "${a[@]}" "${pp[@]}"
}

case $parts in *throughput*) ;; *) repeats=0 models= ;; esac
for round in $(seq "$repeats"); do
    for model in $models; do
        for schedule in local 1f1b paci dp; do
            throughput "$model" "$schedule" "$round"
        done
    done
done
for model in $models; do
    if [ "$model" = gpt ]; then
        sim=(--model-file "$top/jobs/gpt-shakespeare-pp.cfg" --pp 2,4,8 --batch $((16 / M)))
    else
        sim=(--model ctr --pp 2,4 --batch $((2048 / M)))
    fi
    "$build/apps/erase-bench" pipeline --simulate "${sim[@]}" --micro-batches $M --steps 40 --repeats 21 \
        >"$work/sim-$model.txt"
done

[ -z "$models" ] || PYTHONPATH="$top/bench" python3 - "$work" "$repeats" "$models" "$build" "$M" <<'EOF'
import json, os, statistics, subprocess, sys
from p2 import fmt, spread, sim_rows
work, repeats, models, build, M = sys.argv[1], int(sys.argv[2]), sys.argv[3].split(), sys.argv[4], int(sys.argv[5])
batch = {"gpt": 16, "ctr": 2048}
def simulate(args):
    out = subprocess.run([os.path.join(build, "apps/erase-bench"), "pipeline", "--simulate", "--pp", "2",
                          "--micro-batches", str(M), "--steps", "40"] + args,
                         check=True, capture_output=True, text=True).stdout
    return sim_rows(out)
print("Measured, P = 2, M = %d, %d rounds interleaved (2 ranks on the 2 shared cores):" % (M, repeats))
print()
print("| model | schedule | samples/s: min / median / max | tokens/s (median) | vs 1f1b (medians) | bytes sent per step, all stages "
      "| vs 1f1b | bubble stage 0 / 1 (median) | activation slots MB, stage 0 / 1 | measured / simulated from the run's times |")
print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
for model in models:
    med, byts = {}, {}
    out = []
    for sched in ("local", "1f1b", "paci", "dp"):
        qps, tok, b0, b1, sent, ratio, mem = [], [], [], [], [], [], None
        for r in range(1, repeats + 1):
            recs = [json.loads(l) for l in open(os.path.join(work, "tp-%s-%s-%d.jsonl" % (model, sched, r)))]
            summ = next(x for x in recs if x["type"] == "summary")
            qps.append(summ["qps_p50"])
            tok.append(summ.get("tokens_per_s_p50", 0))
            pipe = next((x for x in recs if x["type"] == "pipeline"), None)
            if pipe is None:
                continue
            st = pipe["per_stage"]
            n = st[0]["timed_steps"]
            b0.append(100 * st[0]["bubble"]); b1.append(100 * st[1]["bubble"])
            sent.append(sum(x["bytes_sent_per_step"] for x in st))
            mem = "%.1f / %.1f" % (st[0]["slot_bytes"] / 1e6, st[1]["slot_bytes"] / 1e6)
            lst = lambda key, per: ",".join("%.4f" % (x[key] / x["timed_steps"] / per) for x in st)
            sim = simulate(["--forward-ms", lst("forward_ms", M), "--backward-ms", lst("backward_ms", M),
                            "--update-ms", lst("update_ms", 1), "--batch", str(batch[model] // M)])
            ratio.append(summ["qps_p50"] / sim[(sched, 2, M)][0])
        med[sched] = statistics.median(qps)
        byts[sched] = statistics.median(sent) if sent else None
        out.append((sched, qps, tok, b0, b1, ratio, mem))
    for sched, qps, tok, b0, b1, ratio, mem in out:
        print("| %s | %s | %s | %s | %.2fx | %s | %s | %s | %s | %s |" % (
            model, "data parallel" if sched == "dp" else sched, spread(qps),
            fmt(statistics.median(tok)) if tok[0] else "-", med[sched] / med["1f1b"],
            "%.0f" % byts[sched] if byts[sched] is not None else "- (all-reduce)",
            "%.1f%%" % (100 * byts[sched] / byts["1f1b"]) if byts[sched] is not None else "-",
            "%.1f%% / %.1f%%" % (statistics.median(b0), statistics.median(b1)) if b0 else "-", mem or "-",
            "%.2f (%.2f-%.2f)" % (statistics.median(ratio), min(ratio), max(ratio)) if ratio else "-"))
print()
for model in models:
    text = open(os.path.join(work, "sim-%s.txt" % model)).read()
    r = sim_rows(text)
    print("Simulated (%s, erase-bench's own timing, M = %d, 40 steps): samples/s and the largest stage bubble" % (model, M))
    print()
    print("| P | 1f1b | paci | local | local / 1f1b | local / paci | bubble 1f1b / paci / local |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for P in sorted({p for _, p, _ in r}):
        f, p, l = r[("1f1b", P, M)], r[("paci", P, M)], r[("local", P, M)]
        print("| %d | %s | %s | %s | %.2fx | %.2fx | %.1f%% / %.1f%% / %.1f%% |" % (
            P, fmt(f[0]), fmt(p[0]), fmt(l[0]), l[0] / f[0], l[0] / p[0], 100 * f[1], 100 * p[1], 100 * l[1]))
    print()
    for line in text.splitlines():
        if line.startswith("# P "):
            print("    " + line)
    print()
EOF

case $parts in *quality*) ;; *) exit 0 ;; esac
# quality MODEL WAY ROUND: WAY local | backprop | onerank
quality() {
    local a=() cuts=() pp=()
    case $1 in
    gpt) a=(--config "$top/jobs/shakespeare.run" --model "$top/jobs/gpt-shakespeare-pp.cfg" --train "$work/text/train"
        --eval "$work/heldout/train,$work/heldout/eval" --steps "$gpt_steps" --grad-clip 0)
        cuts=(--cuts 2,4,6) m=4 ;;
    ctr) a=(--config "$top/jobs/criteo-sample.run" --train "$work/criteo" --global-batch 128) cuts=() m=2 ;;
    mlp) a=(--config "$top/jobs/mnist.run" --train "$work/mnist/train" --eval "$work/mnist/eval" --global-batch 128)
        cuts=() m=2 ;;
    esac
    a+=(--eval-every "$every" --log-every "$every")
    case $2 in
    local) train "q-$1-$2-$3" 2 "${a[@]}" "${cuts[@]}" --pp 2 --stages even --schedule local --micro-batches $m ;;
    backprop) train "q-$1-$2-$3" 2 "${a[@]}" --cuts none --pp 2 --stages even --schedule 1f1b --micro-batches $m ;;
    onerank) train "q-$1-$2-$3" 1 "${a[@]}" "${cuts[@]}" ;;
    esac
}
for round in $(seq "$qrepeats"); do
    for model in $qmodels; do
        for way in local backprop onerank; do
            quality "$model" "$way" "$round"
        done
    done
done
echo
PYTHONPATH="$top/bench" python3 - "$work" "$qmodels" "$qrepeats" <<'EOF'
import os, statistics, sys
from p2 import eval_curve
work, models, rounds = sys.argv[1], sys.argv[2].split(), int(sys.argv[3])
metric = {"gpt": ("loss", "validation loss", "%.4f"), "ctr": ("ne", "NE", "%.4f"),
          "mlp": ("accuracy", "accuracy", "%.4f")}
ways = (("local", "local (--pp 2 --schedule local)"), ("backprop", "backprop (no cuts, --pp 2 --schedule 1f1b)"),
        ("onerank", "the cut model on one rank"))
for model in models:
    key, name, form = metric[model]
    curves = {}
    for way, _ in ways:
        runs = []
        for r in range(1, rounds + 1):
            runs.append(eval_curve(os.path.join(work, "q-%s-%s-%d.jsonl" % (model, way, r)), key))
        if any([(e[0], e[2]) for e in c] != [(e[0], e[2]) for e in runs[0][0]] for c, _ in runs):
            sys.exit("%s %s: the rounds' evaluations differ (expected deterministic runs)" % (model, way))
        # the first round's figures, each evaluation at the median over the rounds of its training seconds
        curve = [(e[0], statistics.median(c[i][1] for c, _ in runs), e[2]) for i, e in enumerate(runs[0][0])]
        curves[way] = (curve, statistics.median(t for _, t in runs))
    budget = min(t for _, t in curves.values())
    print("%s: %s at equal steps (the last evaluation) and at equal wall time (the last evaluation within %.1f s "
          "of training, the shortest way's; training seconds: medians of %d rounds)" % (model, name, budget, rounds))
    print()
    print("| way | steps | training s | %s at equal steps | vs backprop | %s at %.1f s (step) |" % (name, name, budget))
    print("| --- | --- | --- | --- | --- | --- |")
    ref = curves["backprop"][0][-1][2]
    for way, label in ways:
        c, t = curves[way]
        within = [e for e in c if e[1] <= budget + 1e-9]
        at = within[-1] if within else None
        print("| %s | %d | %.1f | %s | %+.2f%% | %s |" % (label, c[-1][0], t, form % c[-1][2], 100 * (c[-1][2] / ref - 1),
              "%s (%d)" % (form % at[2], at[0]) if at else "- (no evaluation yet)"))
    print()
    print("%s by step (training seconds):" % name)
    for way, _ in ways:
        print("  %-8s " % way + " ".join(("%d:" + form + "(%.0fs)") % (e[0], e[2], e[1]) for e in curves[way][0]))
    print()
EOF
