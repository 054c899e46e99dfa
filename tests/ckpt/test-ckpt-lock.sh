#!/bin/sh
# A run owns its --checkpoint-dir (issue 32, item 1; the lock:
# apps/train/checkpoint_lock.h). Under mpirun -np 2:
#   - run A trains (checkpoint writes slowed, so that it lives a while); the
#     lock DIR/.lock names its host, rank 0's pid, Slurm ids and start time;
#   - run B, started in the same directory with --seed 2 while A trains, is
#     refused at once: status 2, one line on stderr naming A's pid and host,
#     no MPI_ABORT; A's checkpoints are not renamed, and A's last checkpoint
#     is bitwise equal to an uninterrupted run's; A's clean exit removes
#     the lock;
#   - a run killed with SIGKILL leaves its lock; --resume auto takes it over
#     with a note naming the dead owner, and finishes;
#   - two runs started together: one owns the directory and finishes, the
#     other is refused (before: both died at their first checkpoint);
#   - a lock of another host is refused while its heartbeat (mtime) is
#     fresh, taken over once it is older than ERASE_CKPT_LOCK_STALE_S;
#   - a Slurm requeue (the ranks' SLURM_JOB_ID that of the lock, its owner
#     a live process on this host): the run says it waits, then takes the
#     lock over when the old owner ends; with ERASE_CKPT_LOCK_WAIT_S=1 and
#     an owner that does not end, it is refused naming the wait; SIGTERM
#     to mpirun during that wait ends it at once with one line;
#   - a stopped run (SIGSTOP: alive, its heartbeat still) is never taken
#     over on its host, however old its heartbeat (ERASE_CKPT_LOCK_STALE_S=1):
#     a second run is refused naming it, and the first finishes;
#   - a run whose lock is replaced behind its back (the test rewrites .lock
#     while rank 0 is paused) stops at its next checkpoint with one line,
#     status 1, leaving every file of the directory as it was;
#   - an empty .lock is refused as such while fresh, taken over once stale;
#   - a lock whose pid now runs another process (its start time is not the
#     record's pid_start: the pid was reused) is taken over with a note.
# The Slurm job id is given to the ranks (mpirun -x) rather than through a
# real requeue; tests/slurm/test-sbatch.sh requeues real jobs (scontrol
# requeue) with --checkpoint-dir and --resume auto.
. "$(dirname "$0")/ckpt.sh"
setup_data
echo "1..23"
ARGS="--batch 16 --steps 24 --checkpoint-every 4 --keep-checkpoints 3"
host=$(hostname)

# own_lines FILE: FILE without Open MPI's banners (between dashed lines),
# blank lines and its runtime's log lines (as tests/apps/test-train-errors.sh)
own_lines() {
    sed -e '/^-\{20,\}$/,/^-\{20,\}$/d' -e '/^$/d' -e '/^\[[^]]*\] \[\[[0-9]*,[0-9]*\],[0-9]*\] ORTE_ERROR_LOG: /d' "$1"
}
# field FILE KEY: the value of line "KEY value" of a lock file
field() { sed -n "s/^$2 //p" "$1"; }
# train_err NP ARGS...: like train, stderr apart in $err
train_err() {
    np=$1; shift
    ERASE_VERBOSE=-1 timeout -k 5 120 "$MPIRUN" $MPI_FLAGS -np "$np" apps/erase-train --train "$dir/data" \
        --model "$dir/model.cfg" --device cpu --quiet "$@" >"$out" 2>"$err"
    rc=$?
}

out=$dir/ref.out
train 2 $ARGS --checkpoint-dir "$dir/ref"
[ $rc = 0 ] && [ -f "$dir/ref/ckpt-24.h5" ] && [ ! -e "$dir/ref/.lock" ] && ! ls "$dir"/ref/.lock.* >/dev/null 2>&1
tap $? "uninterrupted run: ckpt-24.h5, its lock removed at the end (status $rc)"
[ $rc = 0 ] || show "$out"

# ---- two runs in one directory ----------------------------------------------------
D=$dir/shared
out=$dir/a.out
ERASE_DEBUG_CKPT_SLEEP_MS=400; export ERASE_DEBUG_CKPT_SLEEP_MS
train_bg 2 $ARGS --checkpoint-dir "$D"
unset ERASE_DEBUG_CKPT_SLEEP_MS
have_ckpt() { [ -f "$D/ckpt-4.h5" ]; }
wait_for 60 have_ckpt
p0=$(rank_pid 0)
[ -f "$D/.lock" ] && [ "$(head -1 "$D/.lock")" = "erase-train checkpoint directory lock" ] &&
    [ "$(field "$D/.lock" host)" = "$host" ] && [ "$(field "$D/.lock" pid)" = "$p0" ] &&
    [ "$(field "$D/.lock" slurm_job_id)" = - ] && [ "$(field "$D/.lock" slurm_step_id)" = - ] &&
    field "$D/.lock" started | grep -q -E '^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}Z$'
tap $? "run A holds $D/.lock: host $host, pid ${p0:-?} (rank 0), no Slurm job, start time"
sed 's/^/#   /' "$D/.lock"
started=$(field "$D/.lock" started)

out=$dir/b.out err=$dir/b.err
train_err 2 $ARGS --checkpoint-dir "$D" --seed 2
own_lines "$err" >"$err.own"
want="erase-train: --checkpoint-dir $D: in use by another run (erase-train pid $p0 on host $host, started $started; lock $D/.lock): give each run its own directory, or remove the lock if that run is gone"
[ $rc = 2 ] && [ "$(cat "$err.own")" = "$want" ] && ! grep -q MPI_ABORT "$err" && ! grep -q '^ckpt ' "$out"
ok=$?
tap $ok "run B (--seed 2) in A's directory is refused: status $rc, one line naming A, no abort, no checkpoint"
[ $ok = 0 ] || { echo "# want: $want"; show "$err"; show "$out"; }

wait "$job"; rc=$?
[ $rc = 0 ] && ! ls "$D"/*.superseded >/dev/null 2>&1 && [ -f "$D/ckpt-24.h5" ]
tap $? "run A finishes (status $rc), none of its checkpoints renamed"
[ $rc = 0 ] || show "$dir/a.out"
tests/ckpt/ckpt-tool compare "$dir/ref/ckpt-24.h5" "$D/ckpt-24.h5" >"$dir/compare.out" 2>&1
tap $? "run A's last checkpoint is bitwise equal to the uninterrupted run's"
[ ! -e "$D/.lock" ] && ! ls "$D"/.lock.* >/dev/null 2>&1
tap $? "run A's clean exit removed its lock"

# ---- kill -9, then take-over ---------------------------------------------------------
K=$dir/killed
out=$dir/k.out
ERASE_DEBUG_CKPT_SLEEP_MS=400; export ERASE_DEBUG_CKPT_SLEEP_MS
train_bg 2 $ARGS --checkpoint-dir "$K"
unset ERASE_DEBUG_CKPT_SLEEP_MS
have_kckpt() { [ -f "$K/ckpt-4.h5" ]; }
wait_for 60 have_kckpt
k0=$(rank_pid 0) k1=$(rank_pid 1)
kill -9 $k0 $k1 2>/dev/null
wait "$job"
kstarted=$(field "$K/.lock" started)
[ "$(field "$K/.lock" pid)" = "$k0" ]
tap $? "a run killed with SIGKILL leaves its lock (pid ${k0:-?})"
out=$dir/k2.out
train 2 $ARGS --checkpoint-dir "$K" --resume auto
want="note   --checkpoint-dir $K: took over the lock of a run that is gone (erase-train pid $k0 on host $host, started $kstarted: pid $k0 is not running on this host)"
[ $rc = 0 ] && grep -q -x -F -e "$want" "$out" && grep -q '^resume from ' "$out" && ! ls "$K"/.lock* >/dev/null 2>&1
ok=$?
tap $ok "--resume auto takes the dead run's lock over with a note, resumes and finishes (status $rc), no lock file left"
[ $ok = 0 ] || { echo "# want: $want"; show "$out"; }

# ---- two runs started together: one owns the directory, the other is refused
# (each run's 6 checkpoints take 1.5 s each: the two surely overlap)
T=$dir/together
ERASE_DEBUG_CKPT_SLEEP_MS=1500; export ERASE_DEBUG_CKPT_SLEEP_MS
out=$dir/t1.out
train_bg 2 $ARGS --checkpoint-dir "$T"
j1=$job
out=$dir/t2.out
train_bg 2 $ARGS --checkpoint-dir "$T" --seed 2
j2=$job
unset ERASE_DEBUG_CKPT_SLEEP_MS
wait "$j1"; r1=$?
wait "$j2"; r2=$?
if [ $r1 = 0 ]; then won=$dir/t1.out lost=$dir/t2.out; else won=$dir/t2.out lost=$dir/t1.out; fi
[ "$r1$r2" = 02 ] || [ "$r1$r2" = 20 ]
ok=$?
[ $ok = 0 ] && grep -q "^erase-train: --checkpoint-dir $T: in use by another run (erase-train pid [0-9]* on host $host, started " "$lost" &&
    grep -q "^ckpt   step 24: $T/ckpt-24.h5" "$won" && ! ls "$T"/*.superseded >/dev/null 2>&1 &&
    apps/erase-inspect ckpt "$T/ckpt-24.h5" >"$dir/inspect-t.out" 2>&1
ok=$?
tap $ok "two runs started together: one finishes (its ckpt-24.h5 validates), the other is refused naming it (status $r1 and $r2)"
[ $ok = 0 ] || { show "$dir/t1.out"; show "$dir/t2.out"; }

# ---- a lock of another host: its heartbeat decides ------------------------------------
H=$dir/other-host
mkdir -p "$H"
printf 'erase-train checkpoint directory lock\nhost elsewhere-%s\npid 1\nslurm_job_id -\nslurm_step_id -\nstarted 2026-01-01T00:00:00Z\n' \
    "$host" >"$H/.lock"
out=$dir/h.out err=$dir/h.err
train_err 2 $ARGS --checkpoint-dir "$H"
own_lines "$err" >"$err.own"
want="erase-train: --checkpoint-dir $H: in use by another run (erase-train pid 1 on host elsewhere-$host, started 2026-01-01T00:00:00Z; lock $H/.lock): give each run its own directory, or remove the lock if that run is gone"
[ $rc = 2 ] && [ "$(cat "$err.own")" = "$want" ]
ok=$?
tap $ok "another host's lock with a fresh heartbeat: refused (status $rc)"
[ $ok = 0 ] || { echo "# want: $want"; show "$err"; }
touch -d '-700 seconds' "$H/.lock"
out=$dir/h2.out
ERASE_CKPT_LOCK_STALE_S=600 train 2 $ARGS --checkpoint-dir "$H"
[ $rc = 0 ] && grep -q -E "^note   --checkpoint-dir $H: took over the lock of a run that is gone \(erase-train pid 1 on host elsewhere-$host, started 2026-01-01T00:00:00Z: its heartbeat stopped (69[0-9]|7[0-9][0-9]) s ago, more than ERASE_CKPT_LOCK_STALE_S=600\)$" "$out"
ok=$?
tap $ok "another host's lock whose heartbeat is older than ERASE_CKPT_LOCK_STALE_S: taken over with a note (status $rc)"
[ $ok = 0 ] || show "$out"

# ---- a Slurm requeue of the same job id ---------------------------------------------
R=$dir/requeue
mkdir -p "$R"
sleep 5 &
old=$!
printf 'erase-train checkpoint directory lock\nhost %s\npid %s\nslurm_job_id 4242\nslurm_step_id 0\nstarted 2026-01-01T00:00:00Z\n' \
    "$host" "$old" >"$R/.lock"
out=$dir/r.out
MPI_FLAGS_SAVED=$MPI_FLAGS MPI_FLAGS="$MPI_FLAGS -x SLURM_JOB_ID=4242 -x SLURM_STEP_ID=0"
train 2 $ARGS --checkpoint-dir "$R"
wait "$old"
w1="note   --checkpoint-dir $R: held by this Slurm job's previous allocation (erase-train pid $old on host $host, Slurm job 4242 step 0, started 2026-01-01T00:00:00Z): waiting up to 120 s for its ranks to end"
w2="note   --checkpoint-dir $R: took over the lock of a run that is gone (erase-train pid $old on host $host, Slurm job 4242 step 0, started 2026-01-01T00:00:00Z: pid $old is not running on this host)"
[ $rc = 0 ] && grep -q -x -F -e "$w1" "$out" && grep -q -x -F -e "$w2" "$out" && [ -f "$R/ckpt-24.h5" ]
ok=$?
tap $ok "a requeue of Slurm job 4242 waits for the previous allocation's rank, then takes the lock over (status $rc)"
[ $ok = 0 ] || { echo "# want: $w1"; echo "# and:  $w2"; show "$out"; }

sleep 60 &
old=$!
printf 'erase-train checkpoint directory lock\nhost %s\npid %s\nslurm_job_id 4242\nslurm_step_id 0\nstarted 2026-01-01T00:00:00Z\n' \
    "$host" "$old" >"$R/.lock"
out=$dir/r2.out err=$dir/r2.err
ERASE_CKPT_LOCK_WAIT_S=1 train_err 2 $ARGS --checkpoint-dir "$R" --resume auto
kill "$old"; wait "$old" 2>/dev/null
MPI_FLAGS=$MPI_FLAGS_SAVED
own_lines "$err" >"$err.own"
want="erase-train: --checkpoint-dir $R: still in use after 1 s by this Slurm job's previous allocation (erase-train pid $old on host $host, Slurm job 4242 step 0, started 2026-01-01T00:00:00Z; lock $R/.lock): end its ranks, or raise ERASE_CKPT_LOCK_WAIT_S"
[ $rc = 2 ] && [ "$(cat "$err.own")" = "$want" ] && ! grep -q MPI_ABORT "$err"
ok=$?
tap $ok "a requeue whose previous allocation does not end within ERASE_CKPT_LOCK_WAIT_S=1: refused, one line (status $rc)"
[ $ok = 0 ] || { echo "# want: $want"; show "$err"; }
[ "$(field "$R/.lock" pid)" = "$old" ]
tap $? "the refused run left the other run's lock as it was"

# ---- SIGTERM during the requeue's wait (issue 32 review, finding 12) -----------------
sleep 60 &
old=$!
printf 'erase-train checkpoint directory lock\nhost %s\npid %s\nslurm_job_id 4242\nslurm_step_id 0\nstarted 2026-01-01T00:00:00Z\n' \
    "$host" "$old" >"$R/.lock"
out=$dir/r3.out
MPI_FLAGS="$MPI_FLAGS -x SLURM_JOB_ID=4242 -x SLURM_STEP_ID=0"
train_bg 2 $ARGS --checkpoint-dir "$R" --resume auto
MPI_FLAGS=$MPI_FLAGS_SAVED
waiting() { grep -q "^note   --checkpoint-dir $R: held by this Slurm job's previous allocation" "$out"; }
wait_for 60 waiting
kill -TERM "$(mpirun_pid)"
wait "$job"; rc=$?
kill "$old"; wait "$old" 2>/dev/null
want="erase-train: --checkpoint-dir $R: SIGTERM while waiting for this Slurm job's previous allocation (erase-train pid $old on host $host, Slurm job 4242 step 0, started 2026-01-01T00:00:00Z): stopped without taking the lock; nothing written"
[ $rc != 0 ] && [ "$(grep -c -x -F -e "$want" "$out")" = 1 ] && ! grep -q -e MPI_ABORT -e '^ckpt ' "$out" &&
    [ "$(field "$R/.lock" pid)" = "$old" ]
ok=$?
tap $ok "SIGTERM to mpirun during the requeue's wait ends it: one line, status $rc, the other run's lock as it was"
[ $ok = 0 ] || { echo "# want: $want"; show "$out"; }

# ---- a stopped run is alive: never taken over on its host (review, finding 1) ----------
P=$dir/paused
out=$dir/p.out
ERASE_DEBUG_KILL_AT_STEP=6:0:stop; export ERASE_DEBUG_KILL_AT_STEP
train_bg 2 $ARGS --checkpoint-dir "$P"
unset ERASE_DEBUG_KILL_AT_STEP
pjob=$job
p0=
has_p0() { p0=$(rank_pid 0); [ -n "$p0" ]; }
wait_for 60 has_p0
paused() { [ "$(sed 's/.*) \(.\).*/\1/' "/proc/$p0/stat" 2>/dev/null)" = T ]; }
wait_for 60 paused
sleep 2 # its heartbeat now older than ERASE_CKPT_LOCK_STALE_S=1
pstarted=$(field "$P/.lock" started)
[ "$(field "$P/.lock" pid_start)" = "$(sed 's/.*) //' "/proc/$p0/stat" | cut -d' ' -f20)" ]
tap $? "the lock records its owner's start time (pid_start: field 22 of /proc/$p0/stat)"
out=$dir/p2.out err=$dir/p2.err
ERASE_CKPT_LOCK_STALE_S=1 train_err 2 $ARGS --checkpoint-dir "$P" --seed 2
own_lines "$err" >"$err.own"
want="erase-train: --checkpoint-dir $P: in use by another run (erase-train pid $p0 on host $host, started $pstarted; lock $P/.lock): give each run its own directory, or remove the lock if that run is gone"
[ $rc = 2 ] && [ "$(cat "$err.own")" = "$want" ] && ! ls "$P"/*.superseded >/dev/null 2>&1
ok=$?
tap $ok "a stopped run's lock (pid alive on this host, heartbeat older than ERASE_CKPT_LOCK_STALE_S=1) is not taken over: status $rc"
[ $ok = 0 ] || { echo "# want: $want"; show "$err"; show "$out"; }
kill -CONT "$p0"
job=$pjob
wait "$job"; rc=$?
[ $rc = 0 ] && [ -f "$P/ckpt-24.h5" ] && [ ! -e "$P/.lock" ]
tap $? "continued, the stopped run finishes and releases its lock (status $rc)"
[ $rc = 0 ] || show "$dir/p.out"

# ---- a lock replaced behind the run's back: it writes nothing more ----------------------
X=$dir/replaced
out=$dir/x.out
ERASE_DEBUG_KILL_AT_STEP=6:0:stop; export ERASE_DEBUG_KILL_AT_STEP
train_bg 2 $ARGS --checkpoint-dir "$X"
unset ERASE_DEBUG_KILL_AT_STEP
x0=
has_rank0() { x0=$(rank_pid 0); [ -n "$x0" ]; }
wait_for 60 has_rank0
xpaused() { [ "$(sed 's/.*) \(.\).*/\1/' "/proc/$x0/stat" 2>/dev/null)" = T ]; }
wait_for 60 xpaused
printf 'erase-train checkpoint directory lock\nhost elsewhere-%s\npid 7\npid_start 1\nslurm_job_id -\nslurm_step_id -\nstarted 2026-02-02T00:00:00Z\n' \
    "$host" >"$X/.lock.new"
mv "$X/.lock.new" "$X/.lock"
listing() { (cd "$X" && for f in $(ls -A | grep -v '^\.lock\.'); do echo "$f $(cksum <"$f")"; done); }
listing >"$dir/x.before"
kill -CONT "$x0"
wait "$job"; rc=$?
listing >"$dir/x.after"
want="erase-train: --checkpoint-dir $X: this run's lock was taken over by erase-train pid 7 on host elsewhere-$host, started 2026-02-02T00:00:00Z: stopping without writing; the directory is that run's now (give each run its own directory)"
[ $rc = 1 ] && [ "$(grep -c -x -F -e "$want" "$out")" = 1 ] && ! grep -q -e MPI_ABORT -e '^ckpt   step 8' "$out"
ok=$?
tap $ok "a run whose lock was replaced stops at its next checkpoint: one line, status $rc"
[ $ok = 0 ] || { echo "# want: $want"; show "$out"; }
cmp -s "$dir/x.before" "$dir/x.after" && grep -q '^ckpt-4\.h5 ' "$dir/x.after"
ok=$?
tap $ok "it wrote, renamed and removed nothing in the directory (ckpt-4.h5 stays, no ckpt-8.h5, the new lock as written)"
[ $ok = 0 ] || { show "$dir/x.before"; show "$dir/x.after"; }

# ---- an empty lock record --------------------------------------------------------------
E=$dir/empty
mkdir -p "$E"
: >"$E/.lock"
out=$dir/e.out err=$dir/e.err
train_err 2 $ARGS --checkpoint-dir "$E"
own_lines "$err" >"$err.own"
want="^erase-train: --checkpoint-dir $E: $E/\.lock: an empty lock record \(a run that died while taking it\?\), written [0-9]+ s ago: taken over once older than ERASE_CKPT_LOCK_STALE_S=300 s; remove it if no run uses the directory$"
[ $rc = 2 ] && grep -q -E "$want" "$err.own" && [ "$(wc -l <"$err.own")" = 1 ]
ok=$?
tap $ok "a fresh empty .lock is refused as such (status $rc)"
[ $ok = 0 ] || { echo "# want: $want"; show "$err"; }
touch -d '-700 seconds' "$E/.lock"
out=$dir/e2.out
ERASE_CKPT_LOCK_STALE_S=600 train 2 $ARGS --checkpoint-dir "$E"
[ $rc = 0 ] && grep -q -E "^note   --checkpoint-dir $E: took over the lock of a run that is gone \($E/\.lock: an empty lock record \(a run that died while taking it\?\): its heartbeat stopped (69[0-9]|7[0-9][0-9]) s ago, more than ERASE_CKPT_LOCK_STALE_S=600\)$" "$out"
ok=$?
tap $ok "an empty .lock older than ERASE_CKPT_LOCK_STALE_S is taken over with a note (status $rc)"
[ $ok = 0 ] || show "$out"

# ---- a reused pid: alive, but not the owner ------------------------------------------
U=$dir/reused
mkdir -p "$U"
sleep 60 &
other=$!
printf 'erase-train checkpoint directory lock\nhost %s\npid %s\npid_start 1\nslurm_job_id -\nslurm_step_id -\nstarted 2026-01-01T00:00:00Z\n' \
    "$host" "$other" >"$U/.lock"
out=$dir/u.out
train 2 $ARGS --checkpoint-dir "$U"
kill "$other"; wait "$other" 2>/dev/null
[ $rc = 0 ] && grep -q -E "^note   --checkpoint-dir $U: took over the lock of a run that is gone \(erase-train pid $other on host $host, started 2026-01-01T00:00:00Z: pid $other is now another process \(started at tick [0-9]+, the owner at 1\)\)$" "$out"
ok=$?
tap $ok "a lock whose pid was reused by another process (start time not pid_start) is taken over with a note (status $rc)"
[ $ok = 0 ] || show "$out"
