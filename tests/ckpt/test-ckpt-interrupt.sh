#!/bin/sh
# A user's interrupt (issue 32, item 9), under mpirun -np 2 with
# --checkpoint-dir. mpirun turns Ctrl-C (SIGINT) into SIGTERM to the ranks
# T s later and SIGKILLs them T s after that (T: --mca
# odls_base_sigkill_timeout, 1 by default); a terminal's Ctrl-C to a run
# without mpirun reaches the ranks themselves as SIGINT.
#   1. SIGINT to mpirun while training (T = 1 s): rank 0
#      says at once what --resume auto takes until the run says "stopped
#      by"; the checkpoint after the step is written, the run says so, no
#      temporary file is left, the lock is removed, the checkpoint validates;
#   2. SIGINT to the ranks (a terminal's Ctrl-C): stopped by SIGINT with a
#      checkpoint, status 0 (before: killed at once, status 1, no message);
#   3. a checkpoint that cannot be written within the grace period (the
#      write sleeps 5 s, ERASE_DEBUG_CKPT_SLEEP_MS; mpirun kills 1 s after
#      its SIGTERM):
#      the notice names ckpt-4.h5, the one --resume auto takes, and there
#      is no "stopped by"; the next run removes the temporary file the
#      killed writer left, with a note, and resumes from ckpt-4.h5.
. "$(dirname "$0")/ckpt.sh"
setup_data
echo "1..9"
ARGS="--batch 16 --steps 100000"
# notice_re TAKES: rank 0's notice naming TAKES (an extended regex), on
# stderr: mpirun may print it inside a line of stdout
notice_re() {
    echo "erase-train: SIG(TERM|INT): writing a checkpoint after this step, then stopping; until erase-train says \"stopped by\", none is written and --resume auto takes $1 \(mpirun kills the ranks 1 s after its SIGTERM, Slurm after KillWait: to give them the time they need, stop a run with SIGUSR1\)$"
}
no_temp() { ! ls "$1"/.*.tmp >/dev/null 2>&1; }

# ---- 1: Ctrl-C to mpirun ----------------------------------------------------------
D=$dir/ctrl-c
out=$dir/ctrl-c.out
train_bg 2 $ARGS --checkpoint-every 4 --checkpoint-dir "$D"
have4() { [ -f "$D/ckpt-4.h5" ]; }
wait_for 60 have4
kill -INT "$(mpirun_pid)"
wait "$job"
step=$(sed -n 's/^erase-train: stopped by SIG[A-Z]* after step \([0-9]*\); checkpoint .*/\1/p' "$out")
grep -q -x -F "erase-train: stopped by SIGTERM after step $step; checkpoint $D/ckpt-$step.h5 (continue with --resume auto)" "$out" ||
    grep -q -x -F "erase-train: stopped by SIGINT after step $step; checkpoint $D/ckpt-$step.h5 (continue with --resume auto)" "$out"
ok=$?
tap $ok "SIGINT to mpirun: the ranks stop with a checkpoint of step ${step:-?} and say so"
[ $ok = 0 ] || show "$out"
grep -q -E "$(notice_re "$D/ckpt-[0-9]+\.h5( if its write, under way, ends, else $D/ckpt-[0-9]+\.h5)?")" "$out"
ok=$?
tap $ok "rank 0 said at once what --resume auto takes until then"
[ $ok = 0 ] || show "$out"
no_temp "$D" && [ ! -e "$D/.lock" ] && apps/erase-inspect ckpt "$D/ckpt-$step.h5" >"$dir/inspect1.out" 2>&1
tap $? "no temporary file, no lock left; ckpt-$step.h5 validates"

# ---- 2: Ctrl-C reaching the ranks themselves ----------------------------------
D=$dir/ranks
out=$dir/ranks.out
train_bg 2 $ARGS --checkpoint-every 4 --checkpoint-dir "$D"
have4r() { [ -f "$D/ckpt-4.h5" ]; }
wait_for 60 have4r
kill -INT "$(rank_pid 0)" "$(rank_pid 1)"
wait "$job"; rc=$?
step=$(sed -n 's/^erase-train: stopped by SIGINT after step \([0-9]*\); checkpoint .*/\1/p' "$out")
[ $rc = 0 ] && [ -n "$step" ] && grep -q -x -F "erase-train: stopped by SIGINT after step $step; checkpoint $D/ckpt-$step.h5 (continue with --resume auto)" "$out" &&
    no_temp "$D" && [ -f "$D/ckpt-$step.h5" ]
ok=$?
tap $ok "SIGINT to the ranks: stopped by SIGINT after step ${step:-?} with its checkpoint, status $rc"
[ $ok = 0 ] || show "$out"

# ---- 3: the checkpoint does not fit in mpirun's grace period ------------------------
D=$dir/slow
out=$dir/slow0.out
train 2 --batch 16 --steps 4 --checkpoint-dir "$D"
[ $rc = 0 ] && [ -f "$D/ckpt-4.h5" ]
tap $? "a first run writes ckpt-4.h5 (status $rc)"
out=$dir/slow.out
MPI_FLAGS_SAVED=$MPI_FLAGS MPI_FLAGS="$MPI_FLAGS --mca odls_base_sigkill_timeout 1"
ERASE_DEBUG_CKPT_SLEEP_MS=5000; export ERASE_DEBUG_CKPT_SLEEP_MS
train_bg 2 $ARGS --checkpoint-every 100000 --checkpoint-dir "$D" --resume auto
unset ERASE_DEBUG_CKPT_SLEEP_MS
MPI_FLAGS=$MPI_FLAGS_SAVED
resumed() { grep -q '^resume from ' "$out"; }
wait_for 60 resumed
kill -INT "$(mpirun_pid)"
wait "$job"
left=0; no_temp "$D" || left=1
grep -q -E "$(notice_re "$D/ckpt-4\.h5")" "$out" && ! grep -q '^erase-train: stopped by' "$out"
ok=$?
tap $ok "killed while writing: the notice names ckpt-4.h5, no \"stopped by\" (a temporary file left: $left)"
[ $ok = 0 ] || show "$out"
out=$dir/slow2.out
train 2 --batch 16 --steps 8 --checkpoint-dir "$D" --resume auto
[ $rc = 0 ] && grep -q "^resume from $D/ckpt-4.h5: step 4" "$out" && no_temp "$D" && [ -f "$D/ckpt-8.h5" ]
ok=$?
tap $ok "the next run resumes from ckpt-4.h5 and finishes (status $rc), no temporary file left"
[ $ok = 0 ] || show "$out"
want="note   --checkpoint-dir $D: removed 1 temporary file of a checkpoint that an interrupted run did not finish (.ckpt-*.tmp)"
if [ $left = 1 ]; then grep -q -x -F -e "$want" "$out"; else ! grep -q 'temporary file' "$out"; fi
tap $? "the temporary file the killed writer left is removed with a note"
grep -q "^note   --checkpoint-dir $D: took over the lock of a run that is gone" "$out" && ! ls "$D"/.lock* >/dev/null 2>&1
tap $? "the killed run's lock is taken over; none is left at the end"
