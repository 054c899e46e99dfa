#!/usr/bin/env bash
# The lock of a --checkpoint-dir (apps/train/checkpoint_lock.h) through a
# real single-node Slurm cluster (tests/slurm/cluster.sh; issue 32, item 1).
# Submits jobs/train-1node.sbatch (2 ranks, srun --mpi=pmix):
#   1. a requeue: the job is submitted held; its directory gets a lock naming
#      that job id and a live process on this host (a sleep: the previous
#      allocation's rank, still alive); released, the job says it waits for
#      its previous allocation and does not train; once the sleep ends, it
#      takes the lock over with a note, trains, completes with the summary,
#      and leaves no lock;
#   2. a second job in the directory of a first one that trains until
#      signalled: refused with one line naming the first (its pid, host and
#      Slurm job id), status 2, before training; the first, signalled
#      (SIGUSR1 to its ranks), checkpoints, stops and completes, none of its
#      checkpoints renamed, its lock removed;
#   3. the wait's bound: with ERASE_CKPT_LOCK_WAIT_S=2, a lock of the same
#      job id whose owner stays alive makes the job fail with one line
#      saying so; the lock stays the owner's.
# Prints TAP; skips where Slurm or munge is not installed or not root. Every
# wait is bounded. tests/ckpt/test-ckpt-lock.sh covers the lock without
# Slurm (the job id given by mpirun -x).
# Run by make check from the top build directory (srcdir: the source tree).
set -uo pipefail

src=$(cd "${srcdir:-.}" && pwd)
build=$(pwd)
# shellcheck source=tests/slurm/jobs.sh
. "$src/tests/slurm/jobs.sh"
slurm_require

slurm_workdir erase-slurm-lock
host=$(hostname)
owner_pid=
# the test's own processes (the planted locks' owners) end with it
trap 'end_owner; slurm_cleanup' EXIT

echo "1..8"

# ---- the cluster ---------------------------------------------------------------
if ! cluster_start "$dir/cluster"; then
    tap 1 "a private Slurm cluster on localhost starts"
    exit 1
fi
tap 0 "a private Slurm cluster on localhost starts ($(now_s "$t_start") s)"
if ! timeout 30 srun --mpi=pmix -n 1 true >"$dir/pmix.log" 2>&1; then
    show "$dir/pmix.log"
    cluster_stop
    echo "# srun --mpi=pmix does not start a task: Slurm's PMIx plugin needs libpmix-dev (jobs/debian-packages)"
    for n in 2 3 4 5 6 7 8; do echo "ok $n # SKIP srun --mpi=pmix does not work here"; done
    exit 0
fi

slurm_data || exit 1

# lock_field FILE KEY: the value of line "KEY value" of a lock file
lock_field() { sed -n "s/^$2 //p" "$1" 2>/dev/null; }

# wait_line FILE REGEX JOBID SECONDS: until a line of FILE matches REGEX
# (grep -E), the job has ended, or SECONDS have passed; 0 if it matched.
wait_line() {
    local end=$((SECONDS + $4))
    while [ $SECONDS -lt $end ]; do
        grep -Eq "$2" "$1" 2>/dev/null && return 0
        case $(field "$3" JobState) in PENDING | CONFIGURING | RUNNING | COMPLETING) ;; *) break ;; esac
        sleep 0.2
    done
    grep -Eq "$2" "$1" 2>/dev/null
}

# plant_lock DIR JOBID: DIR/.lock as the rank 0 of job JOBID's previous
# allocation leaves it, owned by a process that is alive (a sleep the test
# started: $owner_pid); started: its start time.
plant_lock() {
    mkdir -p "$1"
    sleep 600 &
    owner_pid=$!
    started=$(date -u +%Y-%m-%dT%H:%M:%SZ)
    printf 'erase-train checkpoint directory lock\nhost %s\npid %s\nslurm_job_id %s\nslurm_step_id 0\nstarted %s\n' \
        "$host" "$owner_pid" "$2" "$started" >"$1/.lock"
}
# end_owner: the planted lock's owner ends (as the old allocation's rank would)
end_owner() {
    if [ -n "$owner_pid" ]; then
        kill "$owner_pid" 2>/dev/null
        wait "$owner_pid" 2>/dev/null
    fi
    owner_pid=
}

# none_in DIR PATTERN: no file of DIR (dot files too) is named PATTERN
none_in() { [ -d "$1" ] && [ -z "$(find "$1" -mindepth 1 -maxdepth 1 -name "$2")" ]; }
# list DIR: DIR's files, as TAP comments
list() { find "$1" -mindepth 1 -maxdepth 1 -printf '%M %s %f\n' 2>&1 | show; }

# job_line FILE LINE: FILE has LINE, whole
job_line() { grep -qxF -e "$2" "$1"; }

# ---- 1. a requeue waits for its previous allocation, then takes the lock over ----
t0=$(date +%s%N)
D=$dir/requeue.ckpt
out=$dir/requeue.out
jid=$(ERASE_CKPT_LOCK_WAIT_S=90 submit requeue train-1node.sbatch --hold --ntasks-per-node=2 --cpus-per-task=1 -- \
    --steps 30 --eval-every 30)
ok=1
if [ -n "$jid" ]; then
    plant_lock "$D" "$jid"
    owner="erase-train pid $owner_pid on host $host, Slurm job $jid step 0, started $started"
    want="note   --checkpoint-dir $D: held by this Slurm job's previous allocation ($owner): waiting up to 90 s for its ranks to end"
    cluster_cmd timeout 10 scontrol release "$jid" &&
        wait_line "$out" "^note   --checkpoint-dir .*: held by this Slurm job's previous allocation" "$jid" "$START_WAIT" &&
        job_line "$out" "$want" && [ "$(field "$jid" JobState)" = RUNNING ] && ! grep -q '^train ' "$out" &&
        [ "$(lock_field "$D/.lock" pid)" = "$owner_pid" ] && ok=0
fi
[ $ok = 0 ] || { echo "# job ${jid:-not submitted}: ${state:-?}; want: ${want:-?}"; show "$out"; }
tap $ok "a requeued job whose previous allocation's rank lives: says it waits for it (up to ERASE_CKPT_LOCK_WAIT_S=90 s), does not train"

gone_pid=$owner_pid
end_owner
ok=1
want="note   --checkpoint-dir $D: took over the lock of a run that is gone (${owner:-?}: pid $gone_pid is not running on this host)"
if [ -n "$jid" ] && wait_job "$jid" "$JOB_WAIT" && [ "$state" = COMPLETED ] && [ "$(field "$jid" ExitCode)" = 0:0 ] &&
    job_line "$out" "$want" && check_summary "$out" && grep -Eq '^ +steps +30 ' "$out"; then ok=0; fi
[ $ok = 0 ] || { echo "# job ${jid:-?}: ${state:-?}; want: $want"; show "$out"; }
tap $ok "once that rank ends, the job takes the lock over with a note, trains 30 steps and completes with the summary ($(now_s "$t0") s)"
ok=1
none_in "$D" '.lock*' && ok=0
[ $ok = 0 ] || list "$D"
tap $ok "the completed job left no lock in its --checkpoint-dir"

# ---- 2. a second job in a training job's directory is refused -----------------------
t0=$(date +%s%N)
D=$dir/shared.ckpt
run_file "$dir/long.run" 100000000 # trains until signalled
jid=$(run=$dir/long.run ckpt=$D submit first train-1node.sbatch --ntasks-per-node=2 --cpus-per-task=1 --)
first=$jid
out=$dir/first.out
ok=1
if [ -n "$jid" ] && wait_line "$out" '^train ' "$jid" "$START_WAIT"; then
    lpid=$(lock_field "$D/.lock" pid)
    lstarted=$(lock_field "$D/.lock" started)
    want="erase-train: --checkpoint-dir $D: in use by another run (erase-train pid $lpid on host $host, Slurm job $first step 0, started $lstarted; lock $D/.lock): give each run its own directory, or remove the lock if that run is gone"
    jid=$(run=$dir/long.run ckpt=$D submit second train-1node.sbatch --ntasks-per-node=2 --cpus-per-task=1 --)
    if [ -n "$jid" ] && wait_job "$jid" "$START_WAIT" && [ "$state" = FAILED ] &&
        [ "$(field "$jid" ExitCode)" = 2:0 ] && job_line "$dir/second.out" "$want" &&
        [ "$(grep -c 'in use by another run' "$dir/second.out")" = 1 ] && ! grep -q MPI_ABORT "$dir/second.out" &&
        ! grep -Eq '^(train|ckpt) ' "$dir/second.out" && [ "$(field "$first" JobState)" = RUNNING ] &&
        [ "$(lock_field "$D/.lock" pid)" = "$lpid" ]; then ok=0; fi
fi
[ $ok = 0 ] || { echo "# job ${jid:-?}: ${state:-?}; want: ${want:-?}"; show "$dir/second.out"; }
tap $ok "a second job in the directory of job $first, which trains: refused, one line naming it (status 2:0), no training"

# the first one stops (SIGUSR1 to its ranks: checkpoint, stop, no summary;
# the batch shell got no signal: no requeue) and completes, untouched
ok=1
stop_step=
if cluster_cmd timeout 30 scancel --signal=USR1 "$first" && wait_job "$first" "$JOB_WAIT" &&
    [ "$state" = COMPLETED ] && [ "$(field "$first" ExitCode)" = 0:0 ]; then
    stop_step=$(sed -n 's/^erase-train: stopped by SIGUSR1 after step \([0-9]*\).*/\1/p' "$out" | head -1)
    [ -n "$stop_step" ] &&
        grep -q "^ckpt   step $stop_step: $D/ckpt-$stop_step.h5" "$out" &&
        ! grep -q '^note   --checkpoint-dir' "$out" && none_in "$D" '*superseded*' && none_in "$D" '.lock*' &&
        "$build/apps/erase-inspect" ckpt "$D/ckpt-$stop_step.h5" >"$dir/inspect.out" 2>&1 && ok=0
fi
[ $ok = 0 ] || { echo "# job $first: ${state:-?}"; show "$out"; show "$dir/inspect.out"; list "$D"; }
tap $ok "job $first, signalled, checkpoints at step ${stop_step:-?} and completes: its checkpoint validates, none renamed, no lock left ($(now_s "$t0") s)"

# ---- 3. the wait is bounded ------------------------------------------------------------
t0=$(date +%s%N)
D=$dir/bound.ckpt
out=$dir/bound.out
jid=$(ERASE_CKPT_LOCK_WAIT_S=2 submit bound train-1node.sbatch --hold --ntasks-per-node=2 --cpus-per-task=1 -- \
    --steps 30 --eval-every 30)
ok=1
if [ -n "$jid" ]; then
    plant_lock "$D" "$jid"
    owner="erase-train pid $owner_pid on host $host, Slurm job $jid step 0, started $started"
    want="erase-train: --checkpoint-dir $D: still in use after 2 s by this Slurm job's previous allocation ($owner; lock $D/.lock): end its ranks, or raise ERASE_CKPT_LOCK_WAIT_S"
    if cluster_cmd timeout 10 scontrol release "$jid" && wait_job "$jid" "$JOB_WAIT" && [ "$state" = FAILED ] &&
        [ "$(field "$jid" ExitCode)" = 2:0 ] && job_line "$out" "$want" && ! grep -q '^train ' "$out" &&
        ! grep -q MPI_ABORT "$out" && [ "$(lock_field "$D/.lock" pid)" = "$owner_pid" ]; then ok=0; fi
fi
end_owner
[ $ok = 0 ] || { echo "# job ${jid:-?}: ${state:-?}; want: ${want:-?}"; show "$out"; }
tap $ok "ERASE_CKPT_LOCK_WAIT_S=2 and a previous allocation that does not end: the job fails with one line (status 2:0), the lock stays its owner's ($(now_s "$t0") s)"

# ---- nothing left running -----------------------------------------------------------
pids=("${cluster_pids[@]}")
cluster_stop
left=
for p in "${pids[@]}"; do cluster_alive "$p" && left="$left $p"; done
ok=1
[ -z "$left" ] && ok=0
tap $ok "every daemon stopped${left:+ (still running:$left)} ($(now_s "$t_start") s in all)"
