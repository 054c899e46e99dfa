#!/usr/bin/env bash
# The daily pipeline on a real single-node Slurm cluster (issue 36;
# tests/slurm/cluster.sh): four gzip'd synthetic days of 3,000 rows shaped
# like Criteo Terabyte's (tests/apps/daily-days.sh; day 4 is day 3's
# test), day 3 corrupted in its middle (a line of 2 fields at line 1500, after the 300
# rows day 2 holds out). jobs/daily-chain submits days 1..4 of
# jobs/daily.sbatch, each --dependency=afterok on the day before (a tiny
# ctr, 2 ranks by mpirun inside the allocation, batch 8: 375 steps a day,
# a checkpoint every 5). Once day 1 has written a checkpoint, it is
# pre-empted (scontrol requeue: SIGTERM to every process of the job, then
# Slurm requeues it); once day 2 has, SIGUSR1 goes to its batch shell (what
# #SBATCH --signal=B:USR1@T sends): the ranks checkpoint and stop, the job
# requeues itself. Either way nothing is published until the day, resumed
# from its checkpoint, is done. Checks: days 1 and 2 published, their /params bitwise those of
# an uninterrupted sequence run without Slurm (jobs/daily, mpirun, the same
# options); day 3 fails naming its file and line, current stays day 2's;
# day 4 never starts (DependencyNeverSatisfied). Prints TAP; skips where
# Slurm or munge is missing or not root. Every wait is bounded.
# Run by make check from the top build directory (srcdir: the source tree).
set -uo pipefail

src=$(cd "${srcdir:-.}" && pwd)
build=$(pwd)
# shellcheck source=tests/slurm/jobs.sh
. "$src/tests/slurm/jobs.sh"
slurm_require
for p in erase-score erase-inspect; do [ -x "$build/apps/$p" ] || skip "$p was not built"; done
command -v h5dump >/dev/null 2>&1 || skip "no h5dump to compare the models' parameters"
command -v flock >/dev/null 2>&1 || skip "no flock(1) (util-linux) for jobs/daily's lock"

slurm_workdir erase-slurm-daily
echo "1..9"

# ---- the days and the model ---------------------------------------------------------
days=$dir/days
mkdir -p "$dir/tmp" "$dir/shm"
# shellcheck source=tests/apps/daily-days.sh
. "$src/tests/apps/daily-days.sh"
daily_days "$days" "$build/apps/erase-convert" corrupt gzip || exit 1
cp "$src/tests/slurm/tiny-ctr.cfg" "$dir/tiny.cfg"
opts=(--days-dir "$days" --model "$dir/tiny.cfg" --eval-rows 300 --checkpoint-every 5 -- --batch 8)

# ---- the uninterrupted sequence, without Slurm (in the background) ----------------------
ref=$dir/ref
(
    export ERASE_SKIP_SETUP=1 ERASE_BUILD=$build ERASE_MPIRUN=$MPIRUN
    for d in 1 2; do
        timeout -k 5 300 "$src/jobs/daily" --day $d --work "$ref" --ranks 2 "${opts[@]}" || exit 1
    done
) >"$dir/ref.out" 2>&1 &
ref_pid=$!

# ---- the cluster and the chain --------------------------------------------------------------
if ! cluster_start "$dir/cluster"; then
    tap 1 "a private Slurm cluster on localhost starts"
    exit 1
fi
tap 0 "a private Slurm cluster on localhost starts ($(now_s "$t_start") s)"

t0=$(date +%s%N)
work=$dir/work
OMPI_MCA_mpi_yield_when_idle=1 TMPDIR=$dir/tmp OMPI_MCA_btl_vader_backing_directory=$dir/shm \
    ERASE_TOP=$src ERASE_BUILD=$build \
    cluster_cmd timeout 60 "$src/jobs/daily-chain" --first 1 --last 4 \
    --sbatch "--chdir=$dir --output=$dir/job-%j.out --ntasks-per-node=2 --cpus-per-task=1" \
    --work "$work" "${opts[@]}" >"$dir/chain" 2>&1
jid() { sed -n "s/^day $1: job \\([0-9]*\\)$/\\1/p" "$dir/chain"; }
j1=$(jid 1) j2=$(jid 2) j3=$(jid 3) j4=$(jid 4)
[ -n "$j1" ] && [ -n "$j4" ] && [ "$(field "$j2" Dependency)" = "afterok:${j1}(unfulfilled)" ]
tap $? "jobs/daily-chain submits days 1..4, each afterok on the day before (jobs ${j1:-?} .. ${j4:-?})"
show "$dir/chain"

# checkpointed DAY JOB: wait until day DAY's training has written its first
# checkpoint (0), or its job has ended (1)
checkpointed() {
    local end=$((SECONDS + START_WAIT + JOB_WAIT))
    while [ $SECONDS -lt $end ]; do
        grep -q '^ckpt   step 5:' "$work/logs/day-$1.train.log" 2>/dev/null && return 0
        case $(field "$2" JobState) in PENDING | CONFIGURING | RUNNING) ;; *) return 1 ;; esac
        sleep 0.1
    done
    return 1
}
# resumed_at DAY: the step day DAY's training resumed from (its last attempt's log)
resumed_at() { sed -n 's/^resume from .*ckpt-\([0-9]*\)\.h5: step \([0-9]*\),.*/\1/p' "$work/logs/day-$1.train.log"; }

# day 1 pre-empted once it has a checkpoint: scontrol requeue
sent=1
checkpointed 1 "$j1" && cluster_cmd timeout 30 scontrol requeue "$j1" && sent=0
wait_job "$j1" "$JOB_WAIT"
out1=$dir/job-$j1.out
stop=$(resumed_at 1)
[ $sent = 0 ] && grep -q '^jobs/daily: day 1 stopped by SIGTERM while training: nothing published' "$out1" &&
    [ "$(field "$j1" Restarts)" -ge 1 ] && [ -n "$stop" ] && [ "$stop" -ge 5 ] &&
    grep -q '^jobs/daily: day 1: resuming its training from' "$out1" &&
    [ "$state" = COMPLETED ] && grep -q '^jobs/daily: day 1: published models/day-1.h5' "$out1"
tap $? "day 1 pre-empted while training (scontrol requeue): stopped, requeued by Slurm, resumed from step ${stop:-?}, published ($(now_s "$t0") s)"
show "$out1"

# day 2 signalled once it has a checkpoint: SIGUSR1 to its batch shell
sent=1
checkpointed 2 "$j2" && cluster_cmd timeout 30 scancel --batch --signal=USR1 "$j2" && sent=0
wait_job "$j2" "$JOB_WAIT"
out2=$dir/job-$j2.out
stop=$(resumed_at 2)
[ $sent = 0 ] && grep -q '^jobs/daily: day 2 stopped by SIGUSR1 while training: nothing published' "$out2" &&
    grep -q "^jobs/daily: requeueing Slurm job $j2 to resume day 2" "$out2" && [ "$(field "$j2" Restarts)" -ge 1 ] &&
    [ -n "$stop" ] && [ "$stop" -ge 5 ] && grep -q '^jobs/daily: day 2: resuming its training from' "$out2" &&
    [ "$state" = COMPLETED ] && grep -q '^jobs/daily: day 2: published models/day-2.h5' "$out2"
tap $? "day 2 signalled while training: stopped, requeued, resumed from step ${stop:-?}, published ($(now_s "$t0") s)"
show "$out2"

wait_job "$j3" "$JOB_WAIT"
out3=$dir/job-$j3.out
want="jobs/daily: day 3: converting $days/day_3.tsv.gz failed: erase-convert criteo: error: $days/day_3.tsv.gz:1500: expected 40 tab-separated fields (label, I1-I13, C1-C26), got 2"
[ "$state" = FAILED ] && [ "$(field "$j3" ExitCode)" = 1:0 ] && [ "$(grep '^jobs/daily: ' "$out3" | tail -n 1)" = "$want" ]
tap $? "day 3 (corrupted) fails, status 1, naming its file and line"
show "$out3"

reason=
end=$((SECONDS + 30))
while [ $SECONDS -lt $end ]; do
    reason=$(field "$j4" Reason)
    [ "$reason" = DependencyNeverSatisfied ] && break
    sleep 0.2
done
[ "$reason" = DependencyNeverSatisfied ] && [ "$(field "$j4" JobState)" = PENDING ] && [ ! -e "$dir/job-$j4.out" ]
tap $? "day 4 never starts: the chain stops at day 3 (${reason:-no reason})"
cluster_cmd timeout 10 scancel --quiet "$j4" >/dev/null 2>&1

# shellcheck disable=SC2012
[ "$(readlink "$work/models/current")" = day-2.h5 ] && [ "$(ls "$work/models" | tr '\n' ' ')" = "current day-1.h5 day-2.h5 rejected " ] &&
    [ "$(sed 's/^{"day":\([0-9]*\),.*"published":\([a-z]*\),.*/\1 \2/' "$work/metrics/days.jsonl" | tr '\n' ' ')" = "1 true 2 true " ]
tap $? "published: day-1.h5 and day-2.h5, current -> day-2.h5; days.jsonl records days 1 and 2"
show "$work/metrics/days.jsonl"

wait "$ref_pid"
ref_rc=$?
same=1
if [ $ref_rc = 0 ]; then
    same=0
    for d in 1 2; do
        h5dump -g /params "$work/models/day-$d.h5" | tail -n +2 >"$dir/p.chain" &&
            h5dump -g /params "$ref/models/day-$d.h5" | tail -n +2 >"$dir/p.ref" && [ -s "$dir/p.ref" ] &&
            cmp -s "$dir/p.chain" "$dir/p.ref" || same=1
    done
fi
tap $same "the chain's day-1.h5 and day-2.h5 (/params) are bitwise those of an uninterrupted jobs/daily sequence without Slurm"
[ $same = 0 ] || show "$dir/ref.out"

pids=("${cluster_pids[@]}")
cluster_stop
left=
for p in "${pids[@]}"; do cluster_alive "$p" && left="$left $p"; done
[ -z "$left" ]
tap $? "every daemon stopped${left:+ (still running:$left)} ($(now_s "$t_start") s in all)"
