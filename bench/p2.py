"""Helpers of the P = 2 benchmark scripts (bench/pipeline-p2.sh,
bench/local-p2.sh): number formats, erase-bench pipeline --simulate's
rows, and evaluation curves from erase-train's metrics files."""
import json
import statistics


def fmt(x):
    """3 significant figures or so: 1234, 12.3, 1.23"""
    return "%.0f" % x if abs(x) >= 100 else "%.2f" % x if abs(x) < 10 else "%.1f" % x


def spread(v):
    """min / median / max of the samples v"""
    return "%s / %s / %s" % tuple(fmt(x) for x in (min(v), statistics.median(v), max(v)))


def sim_rows(text):
    """erase-bench pipeline --simulate's rows: {(schedule, P, M): (samples/s, bubble_max)}"""
    return {(f[0], int(f[1]), int(f[2])): (float(f[6]), float(f[7])) for f in (l.split() for l in text.splitlines())
            if len(f) > 7 and f[0] in ("gpipe", "1f1b", "paci", "local") and f[1].isdigit()}


def eval_curve(path, key):
    """An erase-train metrics file's evaluations: [(step, training seconds so far, value of key, samples so far)] and the
    run's training seconds: the steps' time, summed over the train records' windows (not the evaluations)"""
    t, curve = 0.0, []
    for line in open(path):
        rec = json.loads(line)
        if rec["type"] == "train" and rec["qps"] > 0:
            t += rec["window_samples"] / rec["qps"]
        elif rec["type"] == "eval":
            curve.append((rec["step"], t, rec[key], rec["samples"]))
    return curve, t
