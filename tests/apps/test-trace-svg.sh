#!/bin/sh
# jobs/trace-svg (issues 15, 37): one SVG picture of an erase trace that a
# person reads: a time axis in ms, a lane per stream of each rank ("rank r
# · stream", in a pipeline "rank r · stage s · stream", grouped by rank and
# ordered by stage), step boundaries, a legend of the kinds of box present
# and only those, labels that fit their boxes by the tool's own width rule
# (text_width), in a pipeline each box numbered with its micro-batch.
# Synthetic traces fix the box widths (1 px per us) and so the labels; the
# traces of a 1-rank async run and of a 2-stage 1f1b on 2 ranks are
# checked for structure against their JSON (every box where its ts and dur
# put it on the axis, the lanes and kinds the JSON has, a boundary per
# step or update, a received activation or gradient of micro-batch k
# ending after the send of micro-batch k began), and rendered to PNG by
# rsvg-convert (librsvg2-bin) at the SVG's size.
. "$(dirname "$0")/../comm/mpi.sh"
need apps/erase-train
need apps/erase-convert
command -v python3 >/dev/null 2>&1 || skip "no python3 to run jobs/trace-svg"
svg=${srcdir:-.}/jobs/trace-svg
workdir
echo "1..6"

# check TRACE.json OUT.svg: the picture's structure against the trace; one
# line per fault, then "ok: SUMMARY"
check() {
    python3 - "$svg" "$1" "$2" <<'PY'
import importlib.machinery, json, re, sys
import xml.etree.ElementTree as ET
sys.dont_write_bytecode = True  # no jobs/__pycache__ in the source tree
tool = importlib.machinery.SourceFileLoader("trace_svg", sys.argv[1]).load_module()
events = json.load(open(sys.argv[2]))
root = ET.parse(sys.argv[3]).getroot()  # well-formed XML, or an exception
ns = "{http://www.w3.org/2000/svg}"
bad = []
names = {(e["pid"], e["tid"]): e["args"]["name"] for e in events if e.get("name") == "thread_name"}
stages = {e["pid"]: int(e["args"]["labels"].split()[1]) for e in events if e.get("name") == "process_labels"}
ranges = [e for e in events if e.get("ph") == "X"]
boxes = [e for e in ranges if e["name"] != "step"]
# the axis: ticks increasing in ms and in x, each label its value, x linear in ms
ticks = [(float(g.get("data-ms")), float(g.find(ns + "line").get("x1")), g.findall(ns + "text")) for g in root.iter(ns + "g") if g.get("class") == "tick"]
if len(ticks) < 3:
    bad.append("%d ticks" % len(ticks))
ms = [t[0] for t in ticks]
xs = [t[1] for t in ticks]
if ms != sorted(set(ms)) or xs != sorted(set(xs)):
    bad.append("ticks not increasing: %s at %s" % (ms, xs))
for v, x, texts in ticks:
    for t in texts:
        if not t.text.endswith(" ms") or abs(float(t.text[:-3]) - v) > 1e-9:
            bad.append("tick %g labelled %r" % (v, t.text))
a = xs[0]
b = (xs[-1] - xs[0]) / (ms[-1] - ms[0])  # px per ms
for v, x, _ in ticks:
    if abs(a + b * (v - ms[0]) - x) > 0.02:
        bad.append("tick %g ms at x %.2f, not on the axis's line" % (v, x))
def x_of(us):
    return a + b * (us / 1e3 - ms[0])
# the boxes: one per range, where its start and duration put it
drawn = [g for g in root.iter(ns + "g") if g.get("class") == "box"]
if len(drawn) != len(boxes):
    bad.append("%d boxes for %d ranges" % (len(drawn), len(boxes)))
for g, e in zip(drawn, boxes):  # drawn in the trace's order
    r = g.find(ns + "rect")
    x, w = float(r.get("x")), float(r.get("width"))
    if e["name"] not in g.find(ns + "title").text or abs(x - x_of(e["ts"])) > 0.02 or abs(w - max(b * e["dur"] / 1e3, 0.5)) > 0.02:
        bad.append("%s at %.2f..%.2f px, the axis puts it at %.2f..%.2f" % (e["name"], x, x + w, x_of(e["ts"]), x_of(e["ts"] + e["dur"])))
    text = g.find(ns + "text")
    if text is not None and tool.text_width(text.text) + 2 * tool.LABEL_PAD > w:
        bad.append("label %r (%.1f px) wider than its box (%.1f px)" % (text.text, tool.text_width(text.text), w))
# the lanes: one per stream with ranges, in stage then rank order
def lane(pid, tid):
    return " · ".join(["rank %d" % pid] + (["stage %d" % stages[pid]] if pid in stages else []) + [names[(pid, tid)]])
want = [lane(*l) for l in sorted({(e["pid"], e["tid"]) for e in boxes}, key=lambda l: (stages.get(l[0], 0), l[0], l[1]))]
got = [t.text for t in root.iter(ns + "text") if t.get("class") == "lane"]
if got != want:
    bad.append("lanes %s, the trace has %s" % (got, want))
# the legend: the kinds of the boxes, only those
kinds = {e["name"].rpartition("/")[2] for e in boxes}
legend = {g.get("data-kind") for g in root.iter(ns + "g") if g.get("class") == "legend"}
marks = "step-boundary" if any(e["name"] == "step" for e in ranges) else "update-boundary"
if legend != kinds | {marks}:
    bad.append("legend %s, the boxes' kinds %s and %s" % (sorted(legend), sorted(kinds), marks))
# step boundaries: each step's start and the rank's last end; else each update's end
for pid in {e["pid"] for e in ranges}:
    mine = [e for e in ranges if e["pid"] == pid]
    steps = sorted(e["ts"] for e in mine if e["name"] == "step")
    times = steps + [max(e["ts"] + e["dur"] for e in mine)] if steps else sorted(e["ts"] + e["dur"] for e in mine if e["name"] == "update")
    lines = sorted(float(l.get("x1")) for l in root.iter(ns + "line") if l.get("class") == "bound" and l.get("data-pid") == str(pid))
    if len(times) < 2 or len(lines) != len(times) or any(abs(x - x_of(t)) > 0.02 for x, t in zip(lines, times)):
        bad.append("rank %d: boundaries at %s px, the trace's steps or updates at %s" % (pid, lines, [round(x_of(t), 2) for t in times]))
# micro-batches: the receive of k ends after the send of k starts
titles = [g.find(ns + "title").text for g in drawn]
sent, recvd = {}, {}
for t in titles:
    m = re.match(r".*: (send|recv) (activation|gradient) of micro-batch (\d+), ([\d.]+) ms from ([\d.]+) ms$", t)
    if m:
        (sent if m.group(1) == "send" else recvd)[(m.group(2), int(m.group(3)))] = (float(m.group(5)), float(m.group(5)) + float(m.group(4)))
last = {kind: max([k for d, k in sent if d == kind] or [-1]) for kind, _ in recvd}
for key, (r0, r1) in recvd.items():
    if key not in sent and key[1] > last[key[0]]:
        continue  # the last sends may be in flight when the trace is written, and left out of it
    if key not in sent or r1 < sent[key][0]:
        bad.append("%s of micro-batch %d received by %.3f ms, sent from %s" % (key[0], key[1], r1, sent.get(key)))
if bad:  # what the trace held, to tell a drawing fault from a trace's
    count = {}
    for e in ranges:
        count["%d %s" % (e["pid"], e["name"])] = count.get("%d %s" % (e["pid"], e["name"]), 0) + 1
    bad.append("ranges by rank and name: %s" % ", ".join("%s %d" % kv for kv in sorted(count.items())))
for line in bad:
    print(line)
print("ok: %d boxes, %d lanes, %d ticks, %d numbered messages, %d labels" % (len(drawn), len(got), len(ticks), len(recvd), sum(g.find(ns + "text") is not None for g in drawn)) if not bad else "%d faults" % len(bad))
PY
}

# labels SVG: one line per box, "TOOLTIP|LABEL" (LABEL empty without one)
labels() {
    python3 - "$1" <<'PY'
import sys
import xml.etree.ElementTree as ET
ns = "{http://www.w3.org/2000/svg}"
for g in ET.parse(sys.argv[1]).getroot().iter(ns + "g"):
    if g.get("class") == "box":
        text = g.find(ns + "text")
        print("%s|%s" % (g.find(ns + "title").text, text.text if text is not None else ""))
PY
}

# 1,270 us over 1,270 px: the lane labels' column is 112 px (10 + 94, the
# width of "rank 0 · comm" rounded up, + 8), the right margin 10
cat >"$dir/synthetic.json" <<'JSON'
[{"name":"thread_name","ph":"M","pid":0,"tid":0,"args":{"name":"main"}},
{"name":"thread_name","ph":"M","pid":0,"tid":1,"args":{"name":"side0"}},
{"name":"thread_name","ph":"M","pid":0,"tid":2,"args":{"name":"comm"}},
{"name":"step","ph":"X","pid":0,"tid":0,"ts":0,"dur":600},
{"name":"h1/forward","ph":"X","pid":0,"tid":0,"ts":0,"dur":200},
{"name":"h1/backward","ph":"X","pid":0,"tid":1,"ts":200,"dur":40},
{"name":"h2/forward","ph":"X","pid":0,"tid":0,"ts":200,"dur":14},
{"name":"h1/allreduce","ph":"X","pid":0,"tid":2,"ts":240,"dur":5},
{"name":"step","ph":"X","pid":0,"tid":0,"ts":600,"dur":200},
{"name":"h2/optimizer","ph":"X","pid":0,"tid":1,"ts":1000,"dur":270}]
JSON
python3 "$svg" "$dir/synthetic.json" "$dir/synthetic.svg" --width 1392 >"$dir/svg.out" 2>&1 &&
    labels "$dir/synthetic.svg" >"$dir/labels" 2>&1 && check "$dir/synthetic.json" "$dir/synthetic.svg" >"$dir/check" 2>&1
rc=$?
cat >"$dir/expected" <<'EOF2'
rank 0 · main: h1/forward, 0.200 ms from 0.000 ms|h1 forward
rank 0 · side0: h1/backward, 0.040 ms from 0.200 ms|B h1
rank 0 · main: h2/forward, 0.014 ms from 0.200 ms|F
rank 0 · comm: h1/allreduce, 0.005 ms from 0.240 ms|
rank 0 · side0: h2/optimizer, 0.270 ms from 1.000 ms|h2 optimizer
EOF2
[ $rc = 0 ] && diff "$dir/expected" "$dir/labels" >"$dir/diff" 2>&1 && tail -n 1 "$dir/check" | grep -q '^ok: 5 boxes, 3 lanes'
tap $? "a synthetic trace: each box's label the longest that fits its 200, 40, 14, 5 and 270 px; axis, lanes, 3 step boundaries, a legend of forward, backward, all-reduce and optimizer only"
tap_report "$dir/svg.out"; tap_report "$dir/diff"; tap_report "$dir/check"

# a pipeline: rank 0 holds stage 1, rank 1 stage 0; its group comes first;
# the k-th range of a kind on a rank is micro-batch k ("forward 0", "F1"),
# of a kind with n ranges per forward k // n (two early backwards, E0 E0);
# a range that began before the origin (0) is the step before's, neither
# numbered nor counted; 550 us over 550 px (labels' column 197 px:
# 10 + 179 for "rank 1 · stage 0 · grad_out" + 8)
cat >"$dir/pipe.json" <<'JSON'
[{"name":"thread_name","ph":"M","pid":0,"tid":0,"args":{"name":"compute"}},
{"name":"thread_name","ph":"M","pid":0,"tid":3,"args":{"name":"grad_in"}},
{"name":"thread_name","ph":"M","pid":0,"tid":5,"args":{"name":"side"}},
{"name":"process_labels","ph":"M","pid":0,"args":{"labels":"stage 1"}},
{"name":"thread_name","ph":"M","pid":1,"tid":0,"args":{"name":"compute"}},
{"name":"thread_name","ph":"M","pid":1,"tid":4,"args":{"name":"grad_out"}},
{"name":"process_labels","ph":"M","pid":1,"args":{"labels":"stage 0"}},
{"name":"forward","ph":"X","pid":0,"tid":0,"ts":0,"dur":100},
{"name":"forward","ph":"X","pid":0,"tid":0,"ts":100,"dur":30},
{"name":"backward","ph":"X","pid":0,"tid":0,"ts":130,"dur":13},
{"name":"backward","ph":"X","pid":0,"tid":0,"ts":143,"dur":100},
{"name":"recv gradient","ph":"X","pid":0,"tid":3,"ts":0,"dur":300},
{"name":"update","ph":"X","pid":0,"tid":0,"ts":243,"dur":50},
{"name":"backward (early)","ph":"X","pid":0,"tid":5,"ts":0,"dur":60},
{"name":"backward (early)","ph":"X","pid":0,"tid":5,"ts":60,"dur":60},
{"name":"backward (early)","ph":"X","pid":0,"tid":5,"ts":120,"dur":60},
{"name":"backward (early)","ph":"X","pid":0,"tid":5,"ts":180,"dur":60},
{"name":"forward","ph":"X","pid":1,"tid":0,"ts":300,"dur":30},
{"name":"backward","ph":"X","pid":1,"tid":0,"ts":330,"dur":30},
{"name":"send gradient","ph":"X","pid":1,"tid":4,"ts":360,"dur":5},
{"name":"update","ph":"X","pid":1,"tid":0,"ts":400,"dur":100},
{"name":"recv gradient","ph":"X","pid":0,"tid":3,"ts":-50,"dur":30},
{"name":"recv gradient","ph":"X","pid":0,"tid":3,"ts":300,"dur":10}]
JSON
python3 "$svg" "$dir/pipe.json" "$dir/pipe.svg" --width 757 >"$dir/svg.out" 2>&1 && labels "$dir/pipe.svg" | sed 's/, [0-9.]* ms from -*[0-9.]* ms|/|/' >"$dir/labels" 2>&1
rc=$?
cat >"$dir/expected" <<'EOF2'
rank 0 · stage 1 · compute: forward of micro-batch 0|forward 0
rank 0 · stage 1 · compute: forward of micro-batch 1|F1
rank 0 · stage 1 · compute: backward of micro-batch 0|B
rank 0 · stage 1 · compute: backward of micro-batch 1|backward 1
rank 0 · stage 1 · grad_in: recv gradient of micro-batch 0|recv gradient 0
rank 0 · stage 1 · compute: update|update
rank 0 · stage 1 · side: backward (early) of micro-batch 0|E0
rank 0 · stage 1 · side: backward (early) of micro-batch 0|E0
rank 0 · stage 1 · side: backward (early) of micro-batch 1|E1
rank 0 · stage 1 · side: backward (early) of micro-batch 1|E1
rank 1 · stage 0 · compute: forward of micro-batch 0|F0
rank 1 · stage 0 · compute: backward of micro-batch 0|B0
rank 1 · stage 0 · grad_out: send gradient of micro-batch 0|
rank 1 · stage 0 · compute: update|update
rank 0 · stage 1 · grad_in: recv gradient|rG
rank 0 · stage 1 · grad_in: recv gradient of micro-batch 1|
EOF2
python3 - "$dir/pipe.svg" >"$dir/lanes" <<'PY'
import sys
import xml.etree.ElementTree as ET
for t in ET.parse(sys.argv[1]).getroot().iter("{http://www.w3.org/2000/svg}text"):
    if t.get("class") == "lane":
        print(t.text)
PY
printf '%s\n' "rank 1 · stage 0 · compute" "rank 1 · stage 0 · grad_out" "rank 0 · stage 1 · compute" "rank 0 · stage 1 · grad_in" \
    "rank 0 · stage 1 · side" >"$dir/lanes.expected"
[ $rc = 0 ] && diff "$dir/expected" "$dir/labels" >"$dir/diff" 2>&1 && diff "$dir/lanes.expected" "$dir/lanes" >>"$dir/diff" 2>&1
tap $? "a synthetic pipeline: lanes \"rank r · stage s · stream\" grouped by rank, stage 0 first; boxes numbered by micro-batch (2 early backwards each; a receive before the origin not), the label the longest that fits"
tap_report "$dir/svg.out"; tap_report "$dir/diff"

# real traces: 3 steps of ctr on 1 rank, early backward async; 3 steps of
# a 2-stage 1f1b pipeline of 4 micro-batches on 2 ranks
sample=${srcdir:-.}/data/criteo/kaggle-train-first9999.tsv
head -n 1000 "$sample" >"$dir/s.tsv"
apps/erase-convert criteo -q -o "$dir/data" "$dir/s.tsv" >"$dir/convert.out" 2>&1 || tap_report "$dir/convert.out"
timeout -k 5 120 "$MPIRUN" $MPI_FLAGS -np 1 apps/erase-train --train "$dir/data" --batch 64 --steps 4 --quiet \
    --early-backward async --trace "$dir/async.json" --trace-steps 3 >"$dir/async.out" 2>&1
rc=$?
python3 "$svg" "$dir/async.json" >>"$dir/async.out" 2>&1 && check "$dir/async.json" "$dir/async.svg" >"$dir/check" 2>&1
[ $rc = 0 ] && tail -n 1 "$dir/check" | grep -q '^ok: ' && [ "$(grep -c 'class="bound"' "$dir/async.svg")" = 4 ]
tap $? "ctr on 1 rank, early backward async, 3 traced steps: boxes on the axis, a lane per stream, the legend of the kinds present, 4 step boundaries, labels that fit ($(tail -n 1 "$dir/check"))"
tap_report "$dir/check"; [ $rc = 0 ] || tap_report "$dir/async.out"

timeout -k 5 180 "$MPIRUN" $MPI_FLAGS -np 2 apps/erase-train --train "$dir/data" --batch 64 --steps 4 --quiet \
    --cuts none --pp 2 --schedule 1f1b --micro-batches 4 --trace "$dir/1f1b.json" --trace-steps 3 >"$dir/1f1b.out" 2>&1
rc=$?
python3 "$svg" "$dir/1f1b.json" >>"$dir/1f1b.out" 2>&1 && check "$dir/1f1b.json" "$dir/1f1b.svg" >"$dir/check" 2>&1
[ $rc = 0 ] && tail -n 1 "$dir/check" | grep -q '^ok: ' && grep -q '"labels":"stage 1"' "$dir/1f1b.json" &&
    [ "$(grep -c 'class="bound"' "$dir/1f1b.svg")" = 6 ]
tap $? "1f1b on 2 ranks, M 4, 3 traced steps: lanes \"rank r · stage s · stream\" by stage, an update boundary per update (3 a rank), every numbered receive after its send ($(tail -n 1 "$dir/check"))"
tap_report "$dir/check"; [ $rc = 0 ] || tap_report "$dir/1f1b.out"

python3 "$svg" "$dir/async.json" "$dir/bad.svg" --width x >"$dir/bad.out" 2>&1
rc=$?
[ $rc = 2 ] && [ "$(cat "$dir/bad.out")" = "jobs/trace-svg: --width takes a number" ] && [ ! -e "$dir/bad.svg" ]
tap $? "--width x: a usage error naming the option (status $rc), no picture"
tap_report "$dir/bad.out"

# PNG: rsvg-convert draws each picture at the SVG's size (a PNG's IHDR:
# width and height, big-endian, at bytes 16..23)
if ! command -v rsvg-convert >/dev/null 2>&1; then
    echo "ok 6 # SKIP no rsvg-convert (Debian package librsvg2-bin) to render the SVG to PNG"
    exit 0
fi
: >"$dir/png"
for name in synthetic pipe async 1f1b; do
    rsvg-convert "$dir/$name.svg" -o "$dir/$name.png" >>"$dir/png" 2>&1 &&
        python3 - "$dir/$name.svg" "$dir/$name.png" >>"$dir/png" 2>&1 <<'PY'
import struct, sys
import xml.etree.ElementTree as ET
root = ET.parse(sys.argv[1]).getroot()
png = open(sys.argv[2], "rb").read(24)
size = struct.unpack(">II", png[16:24])
want = (int(root.get("width")), int(root.get("height")))
print("%s: %dx%d, the SVG %dx%d" % (sys.argv[2].rsplit("/", 1)[-1], size[0], size[1], want[0], want[1]))
sys.exit(png[:8] != b"\x89PNG\r\n\x1a\n" or size != want)
PY
    [ $? = 0 ] || echo "$name: wrong" >>"$dir/png"
done
! grep -q wrong "$dir/png"
tap $? "rsvg-convert renders every picture to a PNG of the SVG's size"
tap_report "$dir/png"
exit 0
