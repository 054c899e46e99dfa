#!/usr/bin/env bash
# The repository's Slurm jobs (jobs/*.sbatch) on a real single-node Slurm
# cluster: a private munged, slurmctld and slurmd on localhost, everything
# under one temporary directory (tests/slurm/cluster.sh). Submits
#   1. jobs/train-1node.sbatch on tiny synthetic shards: the summary (QPS, NE);
#   2. the same job, training until signalled, then SIGUSR1 to its batch
#      shell once training runs (what #SBATCH --signal=B:USR1@T sends): the
#      ranks checkpoint and stop, the job requeues itself, resumes from the
#      checkpoint and finishes 30 steps later;
#   3. the same job, then `scontrol requeue` (SIGTERM to the whole job, then
#      Slurm requeues it, as pre-emption does): checkpoint, resume, finish;
#   4. jobs/train-multinode.sbatch on this one node, 4 ranks, launched with
#      mpirun inside the allocation;
#   5. an installed erase's train-1node.sbatch (make install DESTDIR=...;
#      ERASE_TOP its share folder): it runs the installed programs (issue 37);
# then stops every daemon it started. Prints TAP; skips where Slurm or munge
# is not installed or not root. Every wait is bounded.
# Run by make check from the top build directory (srcdir: the source tree).
set -uo pipefail

src=$(cd "${srcdir:-.}" && pwd)
build=$(pwd)
# the cluster (tests/slurm/cluster.sh), Open MPI's settings
# (tests/comm/mpi.sh), the jobs
# shellcheck source=tests/slurm/jobs.sh
. "$src/tests/slurm/jobs.sh"
slurm_require

slurm_workdir erase-slurm

echo "1..10"

# ---- the cluster ---------------------------------------------------------------
if ! cluster_start "$dir/cluster"; then
    tap 1 "a private Slurm cluster on localhost starts"
    exit 1
fi
tap 0 "a private Slurm cluster on localhost starts ($(now_s "$t_start") s: munged, slurmctld, slurmd; SLURM_CONF=$SLURM_CONF)"
if ! timeout 30 srun --mpi=pmix -n 1 true >"$dir/pmix.log" 2>&1; then
    show "$dir/pmix.log"
    cluster_stop
    echo "# srun --mpi=pmix does not start a task: Slurm's PMIx plugin needs libpmix-dev (jobs/debian-packages)"
    for n in 2 3 4 5 6 7 8 9 10; do echo "ok $n # SKIP srun --mpi=pmix does not work here"; done
    exit 0
fi

slurm_data || exit 1

# ---- a job runs to the end ----------------------------------------------------
t0=$(date +%s%N)
steps=100
jid=$(submit plain train-1node.sbatch --ntasks-per-node=2 --cpus-per-task=1 -- --steps $steps --eval-every $steps)
ok=1
if [ -n "$jid" ] && wait_job "$jid" "$JOB_WAIT" && [ "$state" = COMPLETED ] && [ "$(field "$jid" ExitCode)" = 0:0 ] &&
    check_summary "$dir/plain.out"; then ok=0; fi
[ $ok = 0 ] || { echo "# job ${jid:-?}: ${state:-not submitted}"; show "$dir/plain.out"; }
qps=$(sed -n 's/^ *QPS *\(p50 [0-9]* *p90 [0-9]*\).*/\1/p' "$dir/plain.out")
ne=$(sed -n 's/^ *eval *NE \([0-9.]*\).*/\1/p' "$dir/plain.out" | tail -1)
tap $ok "train-1node.sbatch (2 ranks, srun --mpi=pmix) completes with the summary: QPS ${qps:-?}, NE ${ne:-?} ($(now_s "$t0") s)"

# ---- an installed erase's job (make install; jobs/paths.sh) --------------------
t0=$(date +%s%N)
ok=1
if make install DESTDIR="$dir/inst" prefix=/usr/local >"$dir/install.log" 2>&1; then
    jid=$(top=$dir/inst/usr/local/share/erase submit installed train-1node.sbatch --ntasks-per-node=2 --cpus-per-task=1 \
        -- --steps 20 --eval-every 20)
    if [ -n "$jid" ] && wait_job "$jid" "$JOB_WAIT" && [ "$state" = COMPLETED ] && check_summary "$dir/installed.out"
    then ok=0; fi
    [ $ok = 0 ] || { echo "# job ${jid:-?}: ${state:-not submitted}"; show "$dir/installed.out"; }
else
    show "$dir/install.log"
fi
tap $ok "an installed train-1node.sbatch (ERASE_TOP=PREFIX/share/erase) runs the installed programs to the summary ($(now_s "$t0") s)"

# ---- pre-emption: signal, checkpoint, requeue, resume, finish (jobs.sh) ------
preempt usr1 usr1 train-1node.sbatch --ntasks-per-node=2 --cpus-per-task=1
ok=1
if [ $sent = 0 ] && [ "$stop_sig" = SIGUSR1 ] && [ -n "$stop_step" ] && grep -q "^ckpt   step $stop_step:" "$out"; then
    ok=0
fi
[ $ok = 0 ] || { echo "# job $jid: signal sent: $([ $sent = 0 ] && echo yes || echo no); state ${state:-?}"; show "$out"; }
tap $ok "SIGUSR1 to the batch shell: the ranks, training until signalled, checkpoint at step ${stop_step:-?} and stop"
restarts=$(field "$jid" Restarts)
ok=1
grep -q "requeueing to resume" "$out" && [ "${restarts:-0}" -ge 1 ] && grep -q '(restart 1)' "$out" && ok=0
tap $ok "the job requeues itself (Restarts=${restarts:-?})"
ok=1
grep -Eq "^resume from .*: step ${stop_step:-x}," "$out" && ok=0
tap $ok "the requeued job resumes from the checkpoint (--resume auto, step ${stop_step:-?})"
ok=1
finished && ok=0
[ $ok = 0 ] || show "$out"
tap $ok "and finishes: $state, $steps steps ($RESUMED_STEPS after the resume), summary with QPS and NE ($(now_s "$t0") s in all)"

preempt requeue requeue train-1node.sbatch --ntasks-per-node=2 --cpus-per-task=1
ok=1
if [ $sent = 0 ] && [ -n "$stop_step" ] && grep -q "^ckpt   step $stop_step:" "$out" &&
    [ "$(field "$jid" Restarts)" -ge 1 ] && grep -Eq "^resume from .*: step $stop_step," "$out" && finished; then
    ok=0
fi
[ $ok = 0 ] || { echo "# job $jid: requeued: $([ $sent = 0 ] && echo yes || echo no); state ${state:-?}"; show "$out"; }
tap $ok "scontrol requeue (SIGTERM, as pre-emption): checkpoint at step ${stop_step:-?} (${stop_sig:-no signal}), requeued by Slurm, resumed, finished ($(now_s "$t0") s)"

# ---- train-multinode.sbatch on this node with mpirun in the allocation ---------
t0=$(date +%s%N)
jid=$(ERASE_LAUNCHER=mpirun submit mpirun train-multinode.sbatch --nodes=1 --ntasks-per-node=4 \
    --cpus-per-task=1 --gpus-per-node=0 -- --steps 30 --eval-every 30)
ok=1
if [ -n "$jid" ] && wait_job "$jid" "$JOB_WAIT" && [ "$state" = COMPLETED ] && check_summary "$dir/mpirun.out" &&
    grep -q '4 ranks' "$dir/mpirun.out"; then ok=0; fi
[ $ok = 0 ] || { echo "# job ${jid:-?}: ${state:-not submitted}"; show "$dir/mpirun.out"; }
tap $ok "train-multinode.sbatch (1 node here, 4 ranks, mpirun inside the allocation) completes ($(now_s "$t0") s)"

# ---- nothing left running -----------------------------------------------------------
pids=("${cluster_pids[@]}")
cluster_stop
left=
for p in "${pids[@]}"; do cluster_alive "$p" && left="$left $p"; done
ok=1
[ -z "$left" ] && ok=0
tap $ok "every daemon stopped${left:+ (still running:$left)} ($(now_s "$t_start") s in all)"
