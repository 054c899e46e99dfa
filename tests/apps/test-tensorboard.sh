#!/bin/sh
# jobs/tensorboard (issue 37): the metrics of every task as TensorBoard
# scalars, read back with TensorBoard's own reader (EventAccumulator): for
# every number of every JSONL record a tag TYPE/FIELD (train/loss,
# eval/ne, train/block_losses/0) with the same steps, values (float32, as
# TensorBoard keeps them; compared exactly after rounding) and wall times
# as the records, and no other tag. Runs of 2 ranks: ctr on synthetic
# data, classify on 600 MNIST images, lm on 100 kB of text with a 1-block
# gpt, converted after the run (and the train records' mean step time,
# seconds_per_step, agrees with their qps); a ctr run followed live
# (--follow --pid: the follower starts before the metrics file exists and
# ends with the run); a file written by hand in pieces (--follow: an unfinished line is
# left until its newline comes, and the follower stops by itself after the
# summary record); bad input: a malformed line (one line naming
# file:line), a line without a step, a LOGDIR that cannot be made, a
# missing file, a followed process that ended without writing it (status
# 1), usage errors (status 2).
. "$(dirname "$0")/../comm/mpi.sh"
. "$(dirname "$0")/metrics-runs.sh"
need apps/erase-train
need apps/erase-convert
. "${srcdir:-.}/tests/venv.sh"
venv_need tensorboard tensorboardX
workdir
echo "1..12"
tb=${srcdir:-.}/jobs/tensorboard

# what the JSONL says against what TensorBoard reads from LOGDIR; the tags
# named after the files must be among them (the task's metrics)
cat >"$dir/check.py" <<'EOF'
import json, math, sys
import numpy as np
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

def flat(prefix, v):
    if v is None:
        yield prefix, math.nan
    elif isinstance(v, (bool, str)):
        return
    elif isinstance(v, (int, float)):
        yield prefix, float(v)
    elif isinstance(v, dict):
        for k, x in v.items():
            yield from flat(prefix + "/" + k, x)
    else:
        for i, x in enumerate(v):
            yield from flat("%s/%d" % (prefix, i), x)

jsonl, logdir, needed = sys.argv[1], sys.argv[2], sys.argv[3:]
want = {}
for line in open(jsonl):
    r = json.loads(line)
    for k, v in r.items():
        if k not in ("type", "step", "time"):
            for tag, x in flat(r["type"] + "/" + k, v):
                want.setdefault(tag, []).append((r["step"], float(np.float32(x)), r["time"]))
ea = EventAccumulator(logdir, size_guidance={"scalars": 0})
ea.Reload()
got = {t: [(e.step, e.value, e.wall_time) for e in ea.Scalars(t)] for t in ea.Tags()["scalars"]}
bad = [t for t in needed if t not in want]
bad += ["%s: only in the events" % t for t in sorted(set(got) - set(want))]
bad += ["%s: not in the events" % t for t in sorted(set(want) - set(got))]
for t in sorted(set(want) & set(got)):
    same = len(want[t]) == len(got[t]) and all(
        a[0] == b[0] and a[2] == b[2] and (a[1] == b[1] or (math.isnan(a[1]) and math.isnan(b[1])))
        for a, b in zip(want[t], got[t]))
    if not same:
        bad.append("%s: JSONL %s, events %s" % (t, want[t], got[t]))
for b in bad:
    print("# " + b)
print("%d tags, %d points; %d differences" % (len(got), sum(map(len, got.values())), len(bad)))
sys.exit(1 if bad else 0)
EOF

# same NAME LOGDIR TAG...: the events in LOGDIR hold NAME.jsonl's numbers, TAG... among them
same() {
    name=$1 logdir=$2; shift 2
    "$venv_python" "$dir/check.py" "$dir/$name.jsonl" "$logdir" "$@" >"$dir/check.out" 2>&1
    check_rc=$?
    tail -n 1 "$dir/check.out"
    return $check_rc
}

metrics_runs --checkpoint-dir "$dir/ckpt"

# after the run: every task
for task in "ctr|train/loss train/ne train/qps train/seconds_per_step train/lr train/block_losses/6 eval/ne eval/auc checkpoint/seconds summary/qps_p50" \
    "classify|train/loss train/accuracy train/qps train/seconds_per_step train/lr eval/loss eval/accuracy summary/accuracy" \
    "lm|train/loss train/tokens_per_s train/seconds_per_step train/lr eval/loss eval/perplexity eval/bits_per_byte summary/tokens_per_s_p50"; do
    name=${task%%|*} tags=${task#*|}
    "$venv_python" "$tb" "$dir/$name.jsonl" "$dir/tb-$name" >"$dir/out" 2>&1
    rc=$?
    records=$(wc -l <"$dir/$name.jsonl")
    # shellcheck disable=SC2086 # tags: a list
    result=$(same "$name" "$dir/tb-$name" $tags)
    [ $? = 0 ] && [ $rc = 0 ] && [ "$records" -ge 5 ] &&
        [ "$(cat "$dir/out")" = "jobs/tensorboard: $records records of $dir/$name.jsonl as TensorBoard scalars in $dir/tb-$name" ]
    tap $? "$name after the run: $records records, $result, among them $tags"
    tap_report "$dir/check.out"
    [ $rc = 0 ] || tap_report "$dir/out"
done

# the train records' seconds_per_step: the window's seconds over its 2
# steps, whose samples over them are the qps (within the rounding of both)
"$venv_python" - "$dir/ctr.jsonl" >"$dir/out" 2>&1 <<'EOF'
import json, sys
rows = [r for r in map(json.loads, open(sys.argv[1])) if r["type"] == "train"]
bad = [r for r in rows if abs(r["window_samples"] / (2 * r["seconds_per_step"]) - r["qps"]) > 0.01 * r["qps"] + 0.1]
print("%d train records, %d off: %s" % (len(rows), len(bad), bad))
sys.exit(1 if bad or len(rows) != 3 else 0)
EOF
tap $? "train records' seconds_per_step x 2 steps = window_samples / qps: $(head -c 40 "$dir/out")"
tap_report "$dir/out"

# live: the follower waits for the metrics file of a run under mpirun -np 2
# that starts only once the follower's event file exists, and ends with it
(
    wait_for 60 sh -c "ls '$dir/tb-live' 2>/dev/null | grep -q tfevents" || exit 1
    exec timeout -k 5 120 "$MPIRUN" $MPI_FLAGS -np 2 apps/erase-train --train "$dir/ctr" --eval-fraction 0.2 \
        --batch 32 --steps 40 --log-every 2 --eval-every 10 --metrics "$dir/live.jsonl" --quiet
) >"$dir/live.out" 2>&1 &
run_pid=$!
timeout -k 5 180 "$venv_python" "$tb" "$dir/live.jsonl" "$dir/tb-live" --follow --pid $run_pid --poll 0.2 \
    >"$dir/follow.out" 2>&1
rc=$?
wait $run_pid
run_rc=$?
result=$(same live "$dir/tb-live" train/loss train/ne eval/auc summary/qps_p50)
[ $? = 0 ] && [ $rc = 0 ] && [ $run_rc = 0 ] && [ "$(grep -c '"type":"train"' "$dir/live.jsonl")" = 20 ]
tap $? "--follow --pid during a 2-rank run (status $rc, the run's $run_rc): $result"
tap_report "$dir/check.out"
tap_report "$dir/follow.out"
[ $run_rc = 0 ] || tap_report "$dir/live.out"

# by hand: the follower started before the file exists; the first line
# written in two pieces (the follower has read the first when it reaches
# its end: its file position in /proc), then the rest with the summary
fed=$dir/fed.jsonl
timeout -k 5 120 "$venv_python" "$tb" "$fed" "$dir/tb-fed" --follow --poll 0.1 >"$dir/fed.out" 2>&1 &
fed_pid=$!
read_40() { # the follower (timeout's child) has $fed open at position 40
    for fd in $(find /proc/[0-9]*/fd -maxdepth 1 -lname "$fed" 2>/dev/null); do
        sed -n 's/^pos:[[:space:]]*//p' "${fd%/fd/*}/fdinfo/${fd##*/}"
    done 2>/dev/null | grep -q -x 40
}
head -n 1 "$dir/ctr.jsonl" | head -c 40 >"$fed.tmp" && mv "$fed.tmp" "$fed"
wait_for 60 read_40
seen=$?
tail -c +41 "$dir/ctr.jsonl" >>"$fed"
wait $fed_pid
rc=$?
result=$(same fed "$dir/tb-fed" train/loss eval/ne summary/qps_p50)
[ $? = 0 ] && [ $rc = 0 ] && [ $seen = 0 ] && cmp -s "$fed" "$dir/ctr.jsonl"
tap $? "--follow: waits for the file, leaves a line's first 40 bytes (read: $seen) until its newline, stops after the summary by itself (status $rc): $result"
tap_report "$dir/check.out"
tap_report "$dir/fed.out"

# bad input: status 1, one line
# fails STATUS TEXT ARGS...: jobs/tensorboard ARGS exits STATUS printing just TEXT
fails() {
    want=$1 text=$2; shift 2
    timeout -k 5 60 "$venv_python" "$tb" "$@" >"$dir/out" 2>&1
    rc=$?
    [ $rc = "$want" ] && [ "$(cat "$dir/out")" = "$text" ]
}
head -n 2 "$dir/ctr.jsonl" >"$dir/bad.jsonl"
printf '{"type":"train","step":\n' >>"$dir/bad.jsonl"
tail -n 1 "$dir/ctr.jsonl" >>"$dir/bad.jsonl"
fails 1 "jobs/tensorboard: $dir/bad.jsonl:3: not a JSON object: Expecting value: line 1 column 24 (char 23)" \
    "$dir/bad.jsonl" "$dir/tb-bad"
tap $? "a malformed line: status $rc, one line naming file:line"
tap_report "$dir/out"

printf '{"type":"train","time":1.5,"loss":1}\n' >"$dir/nostep.jsonl"
fails 1 "jobs/tensorboard: $dir/nostep.jsonl:1: not an erase-train metrics record (a JSON object with \"type\" and an integer \"step\")" \
    "$dir/nostep.jsonl" "$dir/tb-nostep"
tap $? "a record without a step: status $rc, one line naming file:line"
tap_report "$dir/out"

: >"$dir/plain"
fails 1 "jobs/tensorboard: $dir/plain/tb: cannot write the event file there: Not a directory" \
    "$dir/ctr.jsonl" "$dir/plain/tb"
tap $? "a LOGDIR that cannot be made: status $rc, one line naming it"
tap_report "$dir/out"

fails 1 "jobs/tensorboard: $dir/none.jsonl: cannot read: No such file or directory" "$dir/none.jsonl" "$dir/tb-none" &&
    ! ls "$dir/tb-none" 2>/dev/null | grep -q tfevents
tap $? "a missing metrics file (without --follow): status $rc, one line, no event file"
tap_report "$dir/out"

sh -c 'exit 0' &
ended=$!
wait $ended
fails 1 "jobs/tensorboard: $dir/none.jsonl: not written: process $ended has ended" "$dir/none.jsonl" "$dir/tb-none" \
    --follow --pid $ended
tap $? "--follow --pid of a process that ended without writing the file: status $rc, one line"
tap_report "$dir/out"

fails 2 "jobs/tensorboard: --pid 1: only with --follow (jobs/tensorboard --help tells the usage)" \
    "$dir/ctr.jsonl" "$dir/tb-usage" --pid 1 &&
    fails 2 "jobs/tensorboard: expected METRICS.jsonl and LOGDIR, got 1 argument (jobs/tensorboard --help tells the usage)" \
        "$dir/ctr.jsonl"
tap $? "usage errors: status $rc, one line"
tap_report "$dir/out"
