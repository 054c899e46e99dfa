#!/bin/sh
# Kill and resume (issue 7): erase-train on 2 ranks, killed with SIGKILL
# three times (a rank killing itself right after a random step; both ranks
# killed while rank 0 writes a checkpoint; a random rank at a random
# moment), resumed with --resume auto each time, must end with parameters,
# optimizer state, clock and data cursor BITWISE equal to an uninterrupted
# run's, with the same learning rate at every step. 130 steps cross an
# epoch boundary (3,200 samples = 100 steps of 32); checkpoints every 6
# steps, the 3 newest kept. ERASE_TEST_SEED replays a run's random choices.
. "$(dirname "$0")/ckpt.sh"
setup_data
echo "1..9"
echo "# seed $seed (ERASE_TEST_SEED=$seed replays these kills)"
ARGS="--batch 16 --steps 130 --log-every 1 --warmup-steps 10 --lr-decay cosine --checkpoint-every 6 --keep-checkpoints 3"
K=$dir/kill

out=$dir/ref.out
train 2 $ARGS --checkpoint-dir "$dir/ref" --metrics "$dir/ref.jsonl"
[ $rc = 0 ] && [ -f "$dir/ref/ckpt-130.h5" ]; tap $? "uninterrupted run: 130 steps, $dir/ref/ckpt-130.h5 (status $rc)"
[ $rc = 0 ] || show "$out"

# 1: a rank SIGKILLs itself right after a random step
random 50; step1=$((8 + r)); random 2; rank1=$r  # >= 8: ckpt-6 exists, so every later run resumes
out=$dir/run1.out
ERASE_DEBUG_KILL_AT_STEP=$step1:$rank1 train 2 $ARGS --checkpoint-dir "$K" --metrics "$dir/kill.jsonl" --resume auto
[ $rc != 0 ] && [ $rc != 124 ]; tap $? "run 1: rank $rank1 killed itself (SIGKILL) after step $step1 (mpirun status $rc)"

# 2: SIGKILL of both ranks while rank 0 writes a checkpoint (the write
# sleeps 3 s after the parameters, before the optimizer state and rename)
out=$dir/run2.out
ERASE_DEBUG_CKPT_SLEEP_MS=3000; export ERASE_DEBUG_CKPT_SLEEP_MS
train_bg 2 $ARGS --checkpoint-dir "$K" --metrics "$dir/kill.jsonl" --resume auto
unset ERASE_DEBUG_CKPT_SLEEP_MS
have_temp() { ls "$K"/.ckpt-*.tmp >/dev/null 2>&1; }
if wait_for 60 have_temp; then
    temp=$(cd "$K" && ls .ckpt-*.tmp | head -1)
    p0=$(rank_pid 0); p1=$(rank_pid 1)
    kill -9 $p0 $p1 2>/dev/null
    wait "$job"; rc=$?
    latest=$(cat "$K/latest" 2>/dev/null)
    if [ -z "$latest" ] || apps/erase-inspect ckpt "$K/$latest" >"$dir/inspect2.out" 2>&1; then ok=0; else ok=1; fi
    [ $rc != 0 ] && [ $ok = 0 ]
    tap $? "run 2: both ranks killed while $temp was being written; latest (${latest:-none yet}) still validates"
else
    kill "$job" 2>/dev/null; wait "$job"
    tap 1 "run 2: no checkpoint write started within 60 s"
    show "$out"
fi

# 3: a random rank at a random moment (checkpoint writes slowed to 200 ms
# to widen their window); the run may also finish first
out=$dir/run3.out
ERASE_DEBUG_CKPT_SLEEP_MS=200; export ERASE_DEBUG_CKPT_SLEEP_MS
train_bg 2 $ARGS --checkpoint-dir "$K" --metrics "$dir/kill.jsonl" --resume auto
unset ERASE_DEBUG_CKPT_SLEEP_MS
random 3000; ms=$((800 + r)); random 2; rank3=$r
sleep "$((ms / 1000)).$(printf %03d $((ms % 1000)))"
victim=$(rank_pid $rank3)
[ -n "$victim" ] && kill -9 "$victim" 2>/dev/null
wait "$job"; rc=$?
tap 0 "run 3: rank $rank3 (pid ${victim:-gone}) SIGKILLed after $ms ms (mpirun status $rc)"

# then resume until the run completes
runs=0
while [ $runs -lt 4 ]; do
    runs=$((runs + 1))
    out=$dir/final$runs.out
    train 2 $ARGS --checkpoint-dir "$K" --metrics "$dir/kill.jsonl" --resume auto
    [ $rc = 0 ] && break
done
[ $rc = 0 ]; tap $? "resumed to the end with --resume auto ($runs more run(s), last status $rc)"
[ $rc = 0 ] || show "$out"

resumes=$(cat "$dir"/run*.out "$dir"/final*.out | grep -c '^resume from ')
grep -h '^resume from ' "$dir"/run*.out "$dir"/final*.out | sed 's/^/# /'
[ "$resumes" -ge 2 ]; tap $? "the run was resumed $resumes times from a checkpoint (at least 2)"

tests/ckpt/ckpt-tool compare "$dir/ref/ckpt-130.h5" "$K/ckpt-130.h5" >"$dir/compare.out" 2>&1
c=$?; sed 's/^/# /' "$dir/compare.out"
[ $c = 0 ]; tap $? "final parameters, optimizer state, clock and cursor bitwise equal to the uninterrupted run"

lr_per_step "$dir/ref.jsonl" >"$dir/lr.ref"
lr_per_step "$dir/kill.jsonl" >"$dir/lr.kill"
n=$(wc -l <"$dir/lr.ref")
steps=$(cut -d' ' -f1 "$dir/lr.kill" | uniq | wc -l)
cmp -s "$dir/lr.ref" "$dir/lr.kill" && [ "$n" = 130 ] && [ "$steps" = 130 ]
tap $? "learning rate at each of the 130 steps equals the uninterrupted run's (metrics files, $steps steps logged)"
cmp -s "$dir/lr.ref" "$dir/lr.kill" || diff "$dir/lr.ref" "$dir/lr.kill" | head -10 | sed 's/^/# /'

temps=$(ls -A "$K" | grep -c '\.tmp$')
[ "$(cat "$K/latest")" = ckpt-130.h5 ] && [ "$temps" = 0 ] && [ "$(ls "$K" | grep -c '^ckpt-.*\.h5$')" -le 3 ]
tap $? "$K: latest = $(cat "$K/latest"), no temporary files left ($temps), at most 3 checkpoints ($(ls "$K" | tr '\n' ' '))"
exit 0
