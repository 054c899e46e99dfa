#!/bin/sh
# jobs/trace-svg: every box of the SVG timeline is labelled with its block
# and pass, so the overlap of one block's backward with the next block's
# forward reads without tooltips: "h1 forward" where the box is wide
# enough, "B h1" (the pass's letter, the legend's) where narrower, "F"
# narrower still, nothing below one letter; every box keeps its tooltip.
# A synthetic trace fixes the box widths (1 px per us); the trace of a
# small early-backward run (blocks input, sub1..sub6, every boundary cut)
# has a box for each block's forward and backward, and every label names
# its box's block and pass (which labels fit depends on the speed: not
# checked).
. "$(dirname "$0")/../comm/mpi.sh"
need apps/erase-train
need apps/erase-convert
command -v python3 >/dev/null 2>&1 || skip "no python3 to run jobs/trace-svg"
svg=${srcdir:-.}/jobs/trace-svg
workdir
echo "1..3"

# boxes SVG: one line per box: "TITLE|LABEL" (LABEL empty without one),
# then one line per legend entry: "legend|TEXT"
boxes() {
    python3 - "$1" <<'PY'
import sys
import xml.etree.ElementTree as ET
ns = "{http://www.w3.org/2000/svg}"
root = ET.parse(sys.argv[1]).getroot()
for g in root.iter(ns + "g"):
    text = g.find(ns + "text")
    print("%s|%s" % (g.find(ns + "title").text, text.text if text is not None else ""))
for t in root.findall(ns + "text"):
    if t.text and t.text[1:2] == " " and t.text[0] in "FBRO":
        print("legend|" + t.text)
PY
}

# 1,270 us over the 1,270 px of the timeline: 1 px per us
cat >"$dir/synthetic.json" <<'JSON'
[{"name":"thread_name","ph":"M","pid":0,"tid":0,"args":{"name":"main"}},
{"name":"thread_name","ph":"M","pid":0,"tid":1,"args":{"name":"side0"}},
{"name":"thread_name","ph":"M","pid":0,"tid":2,"args":{"name":"comm"}},
{"name":"step","ph":"X","pid":0,"tid":0,"ts":0,"dur":1270},
{"name":"h1/forward","ph":"X","pid":0,"tid":0,"ts":0,"dur":200},
{"name":"h1/backward","ph":"X","pid":0,"tid":1,"ts":200,"dur":40},
{"name":"h2/forward","ph":"X","pid":0,"tid":0,"ts":200,"dur":12},
{"name":"h1/allreduce","ph":"X","pid":0,"tid":2,"ts":240,"dur":5},
{"name":"h2/optimizer","ph":"X","pid":0,"tid":1,"ts":1000,"dur":270}]
JSON
python3 "$svg" "$dir/synthetic.json" "$dir/synthetic.svg" >"$dir/svg.out" 2>&1 &&
    boxes "$dir/synthetic.svg" >"$dir/boxes" 2>&1
cat >"$dir/expected" <<'EOF2'
h1/forward 200.0 us|h1 forward
h1/backward 40.0 us|B h1
h2/forward 12.0 us|F
h1/allreduce 5.0 us|
h2/optimizer 270.0 us|h2 optimizer
legend|F forward
legend|B backward
legend|R all-reduce
legend|O optimizer
EOF2
diff "$dir/expected" "$dir/boxes" >"$dir/diff" 2>&1
tap $? "a synthetic trace: each box's label is the longest that fits its width (200, 40, 12, 5, 270 px), a legend of the passes"
tap_report "$dir/svg.out"; tap_report "$dir/diff"
grep -c '<title>step 1270.0 us</title>' "$dir/synthetic.svg" >"$dir/n" 2>&1
[ "$(cat "$dir/n")" = 1 ] && ! grep -q '>step<' "$dir/synthetic.svg"
tap $? "the step's outline keeps its tooltip and has no label"

sample=${srcdir:-.}/data/criteo/kaggle-train-first9999.tsv
head -n 1000 "$sample" >"$dir/s.tsv"
apps/erase-convert criteo -q -o "$dir/data" "$dir/s.tsv" >"$dir/convert.out" 2>&1 || tap_report "$dir/convert.out"
timeout -k 5 120 "$MPIRUN" $MPI_FLAGS -np 1 apps/erase-train --train "$dir/data" --batch 64 --steps 3 --quiet \
    --early-backward blocking --cuts all --trace "$dir/t.json" >"$dir/out" 2>&1
rc=$?
python3 "$svg" "$dir/t.json" "$dir/t.svg" >>"$dir/out" 2>&1 && boxes "$dir/t.svg" >"$dir/boxes" 2>>"$dir/out"
[ $rc = 0 ] && awk -F'|' '
    BEGIN { letter["forward"] = "F"; letter["backward"] = "B"; letter["allreduce"] = "R"; letter["optimizer"] = "O" }
    $1 == "legend" || $1 ~ /^step / { next }
    {
        split($1, a, " "); n = split(a[1], bp, "/"); block = bp[1]; pass = bp[2]; seen[block "/" pass] = 1
        if ($2 != "" && $2 != block " " pass && $2 != letter[pass] " " block && $2 != letter[pass]) { print "wrong label: " $0; bad = 1 }
        if ($2 != "") labelled++
    }
    END {
        split("input sub1 sub2 sub3 sub4 sub5 sub6", blocks, " ")
        for (i = 1; i <= 7; i++) for (p in letter) if (!((blocks[i] "/" p) in seen)) { print "no box: " blocks[i] "/" p; bad = 1 }
        print labelled + 0 " boxes labelled"
        exit bad
    }' "$dir/boxes" >"$dir/check"
tap $? "a 3-step run, every boundary cut, blocking: a box for each block and pass, each label names its box's block and pass (status $rc)"
tap_report "$dir/check"; [ $rc = 0 ] || tap_report "$dir/out"
exit 0
