#!/bin/sh
# Kill-and-resume soak (issue 7; not in make check, minutes): erase-train on
# 2 ranks over several epochs, SIGKILLed ERASE_SOAK_KILLS times (default 20)
# at random: right after a random step (a random rank kills itself), while
# rank 0 writes a checkpoint, or from outside at a random moment; resumed
# with --resume auto after each kill, each resume with a random
# early-backward mode (every mode computes bitwise the same step). The
# final checkpoint must be bitwise equal to an uninterrupted run's and the
# learning rate equal at every step.
#
#   cd _build && ../tests/ckpt/soak.sh
#   ERASE_SOAK_KILLS=50 ERASE_SOAK_STEPS=800 ERASE_TEST_SEED=1 ../tests/ckpt/soak.sh
. "$(dirname "$0")/ckpt.sh"
setup_data
KILLS=${ERASE_SOAK_KILLS:-20}
STEPS=${ERASE_SOAK_STEPS:-400}
echo "1..3"
echo "# seed $seed, $KILLS kills, $STEPS steps (3,200 samples = 100 steps per epoch)"
ARGS="--batch 16 --steps $STEPS --log-every 1 --warmup-steps 20 --lr-decay cosine --checkpoint-every 5 --keep-checkpoints 2 --eval-every 50"
K=$dir/kill
t0=$(now_ms)
out=$dir/ref.out
train 2 $ARGS --checkpoint-dir "$dir/ref" --metrics "$dir/ref.jsonl"
[ $rc = 0 ] || { show "$out"; echo "Bail out! the uninterrupted run failed"; exit 0; }
ref_ms=$(($(now_ms) - t0))
echo "# uninterrupted run: $ref_ms ms"

modes="off blocking async graph"
pick_mode() { random 4; set -- $modes; shift "$r"; mode=$1; }
kills=0 runs=0 during=0
while [ $kills -lt "$KILLS" ]; do
    runs=$((runs + 1))
    out=$dir/run$runs.out
    pick_mode
    random 3; how=$r
    case $how in
    0)  cur=$(sed -n 's/^ckpt-\([0-9]*\)\.h5$/\1/p' "$K/latest" 2>/dev/null)
        cur=${cur:-0}
        n=$((STEPS - cur - 1)); [ $n -lt 1 ] && n=1
        random $n; step=$((cur + 1 + r)); random 2; rank=$r
        ERASE_DEBUG_KILL_AT_STEP=$step:$rank train 2 $ARGS --early-backward "$mode" --checkpoint-dir "$K" \
            --metrics "$dir/kill.jsonl" --resume auto
        what="rank $rank after step $step" ;;
    1)  ERASE_DEBUG_CKPT_SLEEP_MS=1000; export ERASE_DEBUG_CKPT_SLEEP_MS
        train_bg 2 $ARGS --early-backward "$mode" --checkpoint-dir "$K" --metrics "$dir/kill.jsonl" --resume auto
        unset ERASE_DEBUG_CKPT_SLEEP_MS
        have_temp() { ls "$K"/.ckpt-*.tmp >/dev/null 2>&1; }
        if wait_for 60 have_temp; then
            random 900; sleep "0.$(printf %03d "$r")"
            kill -9 $(rank_pid 0) $(rank_pid 1) 2>/dev/null
            during=$((during + 1))
        fi
        wait "$job"; rc=$?
        what="both ranks during a checkpoint write" ;;
    2)  random 300; ERASE_DEBUG_CKPT_SLEEP_MS=$r; export ERASE_DEBUG_CKPT_SLEEP_MS
        train_bg 2 $ARGS --early-backward "$mode" --checkpoint-dir "$K" --metrics "$dir/kill.jsonl" --resume auto
        unset ERASE_DEBUG_CKPT_SLEEP_MS
        random 3000; ms=$((500 + r)); random 2; rank=$r
        sleep "$((ms / 1000)).$(printf %03d $((ms % 1000)))"
        victim=$(rank_pid "$rank")
        [ -n "$victim" ] && kill -9 "$victim" 2>/dev/null
        wait "$job"; rc=$?
        what="rank $rank after $ms ms" ;;
    esac
    from=$(grep -o '^resume from [^:]*' "$out" | sed 's/.*\///')
    echo "# run $runs ($mode, from ${from:-the start}): SIGKILL of $what: status $rc"
    if [ $rc = 0 ]; then
        rm -f "$K/ckpt-$STEPS.h5" "$K/latest" # finished first: go back to the newest earlier checkpoint
        continue
    fi
    grep -q 'Error\|erase-train.c' "$out" && grep -v '^\(ckpt\|eval\|train\)' "$out" | head -5 | sed 's/^/#   /'
    kills=$((kills + 1))
done
out=$dir/final.out
train 2 $ARGS --checkpoint-dir "$K" --metrics "$dir/kill.jsonl" --resume auto
[ $rc = 0 ]; tap $? "$kills kills ($during during checkpoint writes) in $runs runs, then resumed to the end (status $rc)"
tests/ckpt/ckpt-tool compare "$dir/ref/ckpt-$STEPS.h5" "$K/ckpt-$STEPS.h5" >"$dir/compare.out" 2>&1
c=$?; sed 's/^/# /' "$dir/compare.out"
[ $c = 0 ]; tap $? "final state bitwise equal to the uninterrupted run's"
lr_per_step "$dir/ref.jsonl" >"$dir/lr.ref"
lr_per_step "$dir/kill.jsonl" >"$dir/lr.kill"
cmp -s "$dir/lr.ref" "$dir/lr.kill"; tap $? "learning rate equal at all $STEPS steps"
echo "# $(($(now_ms) - t0)) ms in all"
exit 0
