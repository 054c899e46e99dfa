#!/bin/sh
# erase-bench pipeline --simulate (issues 16, 17): with given times the output
# is exact, and checked here against hand computations of the replay;
# the claim table at P = 8 against its closed form; measured times (a
# tiny ctr and gpt) give the same tables; bad options exit 2 naming them.
. "$(dirname "$0")/../comm/mpi.sh"
need apps/erase-bench
workdir
echo "1..6"
B="apps/erase-bench pipeline --simulate"

# rows FILE: the table rows of FILE (spaces squeezed), without the claim table
rows() { sed -n '/^schedule /,/^$/p' "$1" | sed '1d;/^$/d' | tr -s ' '; }

# exact NAME ARGS...: $B ARGS exits 0 (status in $rc) and its rows are
# $dir/NAME.want's; the output in $dir/NAME, stderr in $dir/NAME.err
exact() {
    name=$1; shift
    $B "$@" >"$dir/$name" 2>"$dir/$name.err"
    rc=$?
    rows "$dir/$name" >"$dir/$name.rows"
    [ $rc = 0 ] && cmp -s "$dir/$name.rows" "$dir/$name.want"
}

# P = 2, M = 2, 2 steps, forward 1 ms, backward 2 ms, free link, no update.
# gpipe, step 0: stage 0 F0 0-1 F1 1-2; stage 1 F0 1-2 F1 2-3 B0 3-5 B1 5-7;
# stage 0 B0 5-7 B1 7-9; step 1 the same from 9: makespan 18 ms, each stage
# busy 2 x 6 = 12 ms: bubble 1/3 = (P-1)/(M+P-1); 4 micro-batches / 18 ms =
# 222.22/s. 1f1b: stage 0 F0 0-1 F1 1-2, B0 after stage 1's F0 1-2 B0 2-4:
# 4-6; stage 1 F1 4-5 B1 5-7; stage 0 B1 7-9: also 9 ms a step, 18 ms.
# paci (a = 2, no flush): stage 0 F0 0-1 F1 1-2 B0 4-6 F2 6-7 B1 7-9 U F3
# 9-10 B2 10-12 B3 13-15 U; stage 1 F0 1-2 B0 2-4 F1 4-5 B1 5-7 U F2 7-8
# B2 8-10 F3 10-11 B3 11-13 U: makespan 15 ms, bubble 1 - 12/15 = 0.2,
# 266.67/s; stage 0's B2 follows F2 and the UPDATE after B1: drift 1.
# local (no gradient message; each stage F m, B m back to back): stage 0
# F0 0-1 B0 1-3 F1 3-4 B1 4-6 F2 6-7 B2 7-9 F3 9-10 B3 10-12; stage 1 the
# same from its F0's arrival at 1: 1-13: makespan 13 ms, each stage busy
# 12 ms: bubble 1/13 = 0.0769, 4 / 13 ms = 307.69/s.
cat >"$dir/small.want" <<'EOF'
gpipe 2 2 - 18.000 222.22 222.2 0.3333 0.3333 0.3333 -
1f1b 2 2 - 18.000 222.22 222.2 0.3333 0.3333 0.3333 -
paci 2 2 2 15.000 266.67 266.7 0.2000 0.2000 - 1,0
local 2 2 - 13.000 307.69 307.7 0.0769 0.0769 - -
EOF
exact small --pp 2 --micro-batches 2 --steps 2 --forward-ms 1 --backward-ms 2 &&
    grep -q '^# given: every stage.s forward 1 ms, backward 2 ms, update 0 ms per micro-batch of 1 sample$' "$dir/small" &&
    grep -q '^# P 2: link latency 0 us, bandwidth inf Gbit/s, activation 0 bytes$' "$dir/small"
tap $? "P 2, M 2, forward 1 ms, backward 2 ms: makespans 18, 18, 15, 13 ms and bubbles as computed by hand (status $rc)"
tap_report "$dir/small"; [ $rc = 0 ] || tap_report "$dir/small.err"

# The link and the update: P = 2, M = 1, 1 step, forward = backward = 1 ms,
# update 0.5 ms, latency 500 us, 1000 bytes at 0.008 Gbit/s (1e6 B/s: 1 ms):
# stage 0 F0 0-1, arrives 2.5; stage 1 F0 2.5-3.5 B0 3.5-4.5 U 4.5-5, the
# gradient arrives 6; stage 0 B0 6-7 U 7-7.5: makespan 7.5 ms, each stage
# busy 2.5 ms: bubble 2/3; 1 / 7.5 ms = 133.33 micro-batches/s, x 4 samples.
# local: stage 0 F0 0-1 B0 1-2 U 2-2.5; stage 1 F0 2.5-3.5 B0 3.5-4.5 U
# 4.5-5, no gradient back: makespan 5 ms, bubble 1/2, 200/s.
cat >"$dir/link.want" <<'EOF'
gpipe 2 1 - 7.500 133.33 533.3 0.6667 0.6667 0.5000 -
1f1b 2 1 - 7.500 133.33 533.3 0.6667 0.6667 0.5000 -
paci 2 1 1 7.500 133.33 533.3 0.6667 0.6667 - 0,0
local 2 1 - 5.000 200.00 800.0 0.5000 0.5000 - -
EOF
exact link --pp 2 --micro-batches 1 --steps 1 --forward-ms 1 --backward-ms 1 --update-ms 0.5 --latency-us 500 \
    --bandwidth-gbps 0.008 --activation-bytes 1000 --batch 4 &&
    grep -q '^# P 2: link latency 500 us, bandwidth 0.008 Gbit/s, activation 1000 bytes$' "$dir/link"
tap $? "latency + bytes / bandwidth per message and the update time: makespan 7.5 ms, local's 5 ms (status $rc)"
tap_report "$dir/link"; [ $rc = 0 ] || tap_report "$dir/link.err"

# Times per stage and the host between steps: P = 2, M = 1, 2 steps,
# forward = backward = 1 ms, host 0.5 ms on stage 0 and 3 ms on stage 1.
# 1f1b (= gpipe at M = 1): stage 0 F0 0-1; stage 1 F0 1-2 B0 2-3; stage 0
# B0 3-4; step 1: stage 0 F1 4.5-5.5; stage 1 F1 6-7 (3 + 3) B1 7-8; stage
# 0 B1 8-9: makespan 9 ms, busy 4 of 9. paci (a = 1): stage 0 F0 0-1, its
# step 1 F1 1.5-2.5, B0 3-4 U, B1 (stage 1's F1 6-7 B1 7-8) 8-9: also 9 ms;
# B1 follows the UPDATE after B0: drift 1. local: stage 0 F0 0-1 B0 1-2,
# its step 1 F1 2.5-3.5 B1 3.5-4.5; stage 1 (steps 1 and 2) F0 1-2 B0 2-3,
# its step 2 F1 6-7 (3 + 3) B1 7-8: makespan 8 ms, busy 4 of 8, 250/s.
# The claim table needs P = 8.
cat >"$dir/host.want" <<'EOF'
gpipe 2 1 - 9.000 222.22 222.2 0.5556 0.5556 0.5000 -
1f1b 2 1 - 9.000 222.22 222.2 0.5556 0.5556 0.5000 -
paci 2 1 1 9.000 222.22 222.2 0.5556 0.5556 - 1,0
local 2 1 - 8.000 250.00 250.0 0.5000 0.5000 - -
EOF
exact host --pp 2 --micro-batches 1 --steps 2 --forward-ms 1,1 --backward-ms 1 --host-ms 0.5,3 &&
    grep -q '^# P 2: link latency 0 us, bandwidth inf Gbit/s, activation 0 bytes; stage times (ms): forward 1.000,1.000 backward 1.000,1.000 update 0.000,0.000; host between steps (ms): 0.500,3.000$' "$dir/host" &&
    grep -q '^# (not simulated: the times are given per stage of P = 2)$' "$dir/host"
tap $? "times per stage and the host's time between steps: makespan 9 ms, local's 8 ms (status $rc)"
tap_report "$dir/host"; [ $rc = 0 ] || tap_report "$dir/host.err"

# The claim table, P = 8, forward 1 ms, backward 2 ms, 2 steps: 1f1b runs
# (M+7) x 3 ms a step (its bubble is exact here), paci (2M + 7) x 3 ms in
# all: 1f1b M / ((M+7) 3 ms), simulated 2(M+7)/(2M+7), bubble model (M+7)/M
$B --pp 8 --micro-batches 1 --steps 2 --forward-ms 1 --backward-ms 2 >"$dir/claim" 2>"$dir/claim.err"
rc=$?
[ $rc = 0 ] && [ "$(sed -n '/^ *M  *1f1b_mb\/s/,$p' "$dir/claim" | grep -c -E '^ +[0-9]+ ')" = 6 ] &&
    sed -n '/^ *M  *1f1b_mb\/s/,$p' "$dir/claim" | grep -E '^ +[0-9]+ ' | awk '
        function off(printed, want, digits) { d = printed - want; return d > digits || d < -digits }
        { M = $1; n++ }
        off($2, 1000 * M / (3 * (M + 7)), 0.005) || off($4 + 0, 2 * (M + 7) / (2 * M + 7), 0.000051) ||
        off($5 + 0, (M + 7) / M, 0.000051) || $4 !~ /x$/ || $5 !~ /x$/ { bad = 1 }
        END { exit bad || n != 6 || M != 32 }' &&
    grep -q '^# best flush configuration: 1f1b at M = 32, 273.50 mb/s; best paci 300.47 mb/s: 1.0986x' "$dir/claim" &&
    [ "$(rows "$dir/claim" | sed -n 3p)" = "paci 8 1 1 27.000 74.07 74.1 0.7778 0.7778 - 1,1,1,1,1,1,1,0" ]
tap $? "the claim table at P = 8: paci / 1f1b = 2(M+7)/(2M+7) beside (M+7)/M; paci's drift 1 with 2 micro-batches (status $rc)"
tap_report "$dir/claim"; [ $rc = 0 ] || tap_report "$dir/claim.err"

# Measured: ctr (7 blocks: no claim table at P = 8) and an 8-layer gpt model file
$B --model ctr --batch 8 --pp 2,7 --micro-batches 2 --steps 2 --repeats 1 >"$dir/ctr" 2>"$dir/ctr.err"
rc=$?
printf 'model = "gpt";\ngpt: {\n  layers = 8;\n  heads = 2;\n  width = 16;\n  context = 8;\n  vocab = 32;\n};\n' >"$dir/g8.cfg"
$B --model-file "$dir/g8.cfg" --batch 2 --pp 8 --micro-batches 1,3 --steps 2 --repeats 1 >"$dir/gpt" 2>"$dir/gpt.err"
rc2=$?
# the default --pp 2,4,8: those the model's blocks allow
$B --model ctr --batch 8 --micro-batches 1 --steps 1 --repeats 1 >"$dir/default" 2>"$dir/default.err"
rc3=$?
# every row: 7 numbers and a drift column; paci's drift per stage of P
# stages; local's rows (every fourth) without a, analytic bubble or drift
measured_rows() {
    rows "$1" | awk -v n="$2" '
        { for (i = 5; i <= 9; i++) if ($i !~ /^[0-9]+\.[0-9]+$/) bad = 1 }
        $1 == "paci" && split($11, d, ",") != $2 { bad = 1 }
        $1 == "local" && ($4 != "-" || $10 != "-" || $11 != "-" || NR % 4) { bad = 1 }
        $1 != "paci" && $1 != "local" && ($10 !~ /^[0-9]\.[0-9][0-9][0-9][0-9]$/ || $11 != "-") { bad = 1 }
        { rows++ }
        END { exit bad || rows != n }'
}
# the P line's stage times: gpipe/1f1b/paci's, then local's, P of each
stage_line() { # FILE P
    grep "^# P $2: " "$1" | awk -v P="$2" -v num='^[0-9]+\.[0-9][0-9][0-9]$' '
        { n = split($0, part, /; local.s \(ms\): /); if (n != 2) exit 1
          split(part[2], f, " ")
          if (f[1] != "forward" || f[3] != "backward" || f[5] != "update") exit 1
          for (i = 2; i <= 6; i += 2) { if (split(f[i], v, ",") != P) exit 1; for (k in v) if (v[k] !~ num) exit 1 }
          ok = 1 }
        END { exit !ok }'
}
[ $rc = 0 ] && [ $rc2 = 0 ] && measured_rows "$dir/ctr" 8 && measured_rows "$dir/gpt" 8 &&
    stage_line "$dir/ctr" 2 && stage_line "$dir/ctr" 7 && stage_line "$dir/gpt" 8 &&
    grep -q '^# measured: ctr, 7 blocks, micro-batch 8 samples, one BLAS thread, median of 1 repeats' "$dir/ctr" &&
    grep -q '^# (not simulated: the ctr model has 7 blocks, P = 8 needs at least 8)$' "$dir/ctr" &&
    grep -q -E '^# P 7: link latency 1 us, bandwidth [0-9.e+]+ Gbit/s, activation 11744 bytes; stage times \(ms\): forward ' \
        "$dir/ctr" &&
    grep -q '^# measured: gpt, 8 blocks, micro-batch 2 samples' "$dir/gpt" &&
    [ "$(sed -n '/^ *M  *1f1b_mb\/s/,$p' "$dir/gpt" | grep -c -E '^ +[0-9]+ ')" = 6 ] &&
    [ $rc3 = 0 ] && grep -q '^# --pp 2,4,8: the ctr model has 7 blocks: P > 7 left out$' "$dir/default" &&
    [ "$(rows "$dir/default" | cut -d' ' -f1,2 | tr '\n' ' ')" = "gpipe 2 1f1b 2 paci 2 local 2 gpipe 4 1f1b 4 paci 4 local 4 " ]
tap $? "measured times: ctr and an 8-layer gpt model file, a row per schedule (local's from its own stage times), the claim table where P = 8 fits; the default --pp without 8 for ctr (status $rc, $rc2, $rc3)"
tap_report "$dir/ctr"; tap_report "$dir/gpt"; tap_report "$dir/default"
[ $rc = 0 ] || tap_report "$dir/ctr.err"; [ $rc2 = 0 ] || tap_report "$dir/gpt.err"

# usage errors: exit 2 and the message
ok=0
expect() { # MESSAGE ARGS...: exit 2 with MESSAGE on stderr's first line
    want=$1; shift
    apps/erase-bench pipeline "$@" >"$dir/out" 2>"$dir/err"; rc=$?
    if [ $rc != 2 ] || [ "$(head -1 "$dir/err")" != "$want" ]; then
        echo "# $*: status $rc, stderr:"; tap_report "$dir/err"; ok=1
    fi
}
expect "erase-bench pipeline: --simulate is required (the measured pipelines: erase-train --pp)" --forward-ms 1 --backward-ms 1
expect "erase-bench pipeline: give --forward-ms and --backward-ms, or --model ctr|gpt (or --model-file) to measure them" \
    --simulate --forward-ms 1
expect "erase-bench pipeline: --forward-ms 0: expected milliseconds > 0, or a list of them, one per stage" \
    --simulate --forward-ms 0 --backward-ms 1
expect "erase-bench pipeline: --backward-ms x: expected milliseconds >= 0, or a list of them, one per stage" \
    --simulate --forward-ms 1 --backward-ms x
expect "erase-bench pipeline: --host-ms 1,: expected milliseconds >= 0, or a list of them, one per stage" \
    --simulate --forward-ms 1 --backward-ms 1 --host-ms 1,
expect "erase-bench pipeline: --forward-ms 1,2: 2 values (expected one, or one per stage of a single --pp)" \
    --simulate --pp 2,4 --forward-ms 1,2 --backward-ms 1
expect "erase-bench pipeline: --pp 2,65: expected a list of up to 16 stage counts 1 .. 64" --simulate --pp 2,65 \
    --forward-ms 1 --backward-ms 1
expect "erase-bench pipeline: --micro-batches 0: expected a list of up to 16 counts >= 1" --simulate --micro-batches 0 \
    --forward-ms 1 --backward-ms 1
expect "erase-bench pipeline: --steps 1.5: expected a whole number of steps >= 1" --simulate --steps 1.5 \
    --forward-ms 1 --backward-ms 1
expect "erase-bench pipeline: --bandwidth-gbps 0: expected Gbit/s > 0" --simulate --bandwidth-gbps 0 \
    --forward-ms 1 --backward-ms 1
expect "erase-bench pipeline: --model and --model-file measure the times: leave out --forward-ms, --backward-ms and --update-ms" \
    --simulate --model ctr --update-ms 1
expect "erase-bench pipeline: --model mlp: expected ctr or gpt" --simulate --model mlp
expect "erase-bench pipeline: --pp 8: the ctr model has 7 blocks (expected P <= blocks)" --simulate --model ctr --pp 2,8
expect "erase-bench pipeline: --model-file $dir/none.cfg: cannot read model file $dir/none.cfg: No such file or directory" \
    --simulate --model-file "$dir/none.cfg"
tap $ok "bad options exit 2 with a message naming the option and what it expects"
