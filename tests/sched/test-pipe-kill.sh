#!/bin/sh
# A killed stage brings a pipeline job down within the watchdog (issue
# 16): erase-train --pp 2 on 2 ranks, one rank SIGKILLs itself right after
# step 5 of 200 (ERASE_DEBUG_KILL_AT_STEP, apps/train/checkpoint.h) while
# its peer stage waits for its activations or gradients; the job must end
# non-zero, and not by this driver's timeout (status 124), within the
# watchdog (--watchdog 20) plus slack for start-up and Open MPI's clean-up.
# Once for each stage as the victim (the first stage under 1f1b, the last
# under paci), after the same run without a kill ends with status 0; under
# local (issue 17: the model cut everywhere, no gradient message) the
# first stage, whose successor then waits for activations, and the last,
# whose predecessor never waits for it but for its send buffers. A
# dead rank is seen by mpirun itself; a stage that stops without dying
# (SIGSTOP of the last stage once the metrics file shows training) is not:
# there the first stage's watchdog must name the operation it waits for
# and end the job.
. "$(dirname "$0")/../ckpt/ckpt.sh"
setup_data
WATCHDOG=20
SLACK=25
ARGS="--pp 2 --micro-batches 3 --batch 48 --watchdog $WATCHDOG"
echo "1..7"
out=$dir/whole.out
train 2 $ARGS --cuts none --schedule paci --steps 12
[ $rc = 0 ]; tap $? "erase-train --pp 2 --schedule paci, 12 steps, no kill: status $rc"
[ $rc = 0 ] || show "$out"
for victim in 0:1f1b 1:paci 0:local 1:local; do
    rank=${victim%%:*} schedule=${victim#*:}
    out=$dir/kill$rank-$schedule.out
    cuts=none
    [ "$schedule" = local ] && cuts=all
    t0=$(now_ms)
    ERASE_DEBUG_KILL_AT_STEP=5:$rank train 2 $ARGS --cuts $cuts --schedule "$schedule" --steps 200
    ms=$(($(now_ms) - t0))
    [ $rc = 137 ] && [ $ms -le $(((WATCHDOG + SLACK) * 1000)) ]
    tap $? "--schedule $schedule: stage $rank SIGKILLed itself after step 5 of 200: the job ended with status \
$rc (expected 137, mpirun's for a rank killed by SIGKILL: not a refusal's 2 nor the driver's timeout 124) after \
$ms ms (limit: watchdog $WATCHDOG s + $SLACK s)"
    show "$out" | tail -5
done

out=$dir/stop.out
train_bg 2 $ARGS --cuts none --schedule gpipe --steps 100000 --log-every 1 --metrics "$dir/stop.jsonl"
trained() { grep -q '"type":"train"' "$dir/stop.jsonl" 2>/dev/null; }
victim=
wait_for 60 trained && victim=$(rank_pid 1)
if [ -n "$victim" ]; then kill -STOP "$victim"; else kill "$job"; fi
t1=$(now_ms)
wait "$job"; rc=$?
ms=$(($(now_ms) - t1))
[ -n "$victim" ] && [ $rc != 0 ] && [ $rc != 124 ] && [ $ms -le $(((WATCHDOG + SLACK) * 1000)) ]
tap $? "--schedule gpipe: stage 1 (pid ${victim:-not found}) stopped (SIGSTOP) while training: the job ended \
with status $rc (124: the driver's timeout) $ms ms after the stop (limit: watchdog $WATCHDOG s + $SLACK s)"
stuck='watchdog: [a-z]+\(.*\) .*#[0-9]+ on (pp|world) has not completed after [0-9]+ s; last collectives issued:'
grep -Eq "^\\[rank 0 [^]]+\\] $stuck\$" "$out"
tap $? "stage 0's watchdog names the operation that waits for the stopped stage"
grep 'watchdog' "$out" | head -3 | sed 's/^/# /'
