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
# then stops every daemon it started. Prints TAP; skips where Slurm or munge
# is not installed or not root. Every wait is bounded.
# Run by make check from the top build directory (srcdir: the source tree).
set -uo pipefail

skip() { echo "1..0 # SKIP $*"; exit 0; }

src=$(cd "${srcdir:-.}" && pwd)
build=$(pwd)
command -v timeout >/dev/null 2>&1 || skip "no timeout(1) to bound the waits"
for c in munged slurmctld slurmd sbatch scontrol squeue sinfo scancel srun; do
    command -v "$c" >/dev/null 2>&1 || PATH=$PATH:/usr/sbin:/sbin
    command -v "$c" >/dev/null 2>&1 ||
        skip "no $c: install Debian's slurm-wlm and munge (jobs/debian-packages)"
done
[ "$(id -u)" = 0 ] || skip "needs root (slurmd starts jobs as their user)"
for p in erase-train erase-convert; do [ -x "$build/apps/$p" ] || skip "$p was not built"; done
[ -f "$src/jobs/train-1node.sbatch" ] || skip "no jobs/train-1node.sbatch in $src"

# A job around make check must not leak into this cluster's jobs.
while read -r v; do unset "$v"; done < <(compgen -e | grep -E '^(SLURM|SBATCH|SRUN|SALLOC)_')

# Open MPI as the MPI tests run it (root, sanitizer suppressions for Open
# MPI's and PMIx's own allocations); the settings reach the ranks through
# sbatch's environment.
# shellcheck source=tests/comm/mpi.sh
. "$src/tests/comm/mpi.sh"
# shellcheck source=tests/slurm/cluster.sh
. "$src/tests/slurm/cluster.sh"

t_start=$(date +%s%N)
dir=$(mktemp -d "${TMPDIR:-/tmp}/erase-slurm.XXXXXX") || exit 99
cleanup() {
    cluster_stop
    rm -rf "$dir"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# now_s T0: seconds since T0 (date +%s%N), one decimal
now_s() { awk -v a="$1" -v b="$(date +%s%N)" 'BEGIN { printf "%.1f", (b - a) / 1e9 }'; }
tap_n=0
tap() {
    tap_n=$((tap_n + 1))
    if [ "$1" = 0 ]; then echo "ok $tap_n - $2"; else echo "not ok $tap_n - $2"; fi
}
show() { sed 's/^/#   /' "$@" 2>/dev/null; }
# field JOBID NAME: a field of scontrol show job (every Slurm client call is
# bounded by timeout, in case slurmctld stops answering)
field() { timeout 10 scontrol -o show job "$1" 2>/dev/null | tr ' ' '\n' | sed -n "s/^$2=//p"; }

# How long a job may take to end (JOB_WAIT) and to start training
# (START_WAIT): bounds for a job that hangs, not a measure of speed. A
# ThreadSanitizer build on a 2-core machine that runs other tests at the
# same time (make -j2 check) takes 30 to over 60 s for job 1's 100 steps,
# and a requeued job starts twice.
JOB_WAIT=300
START_WAIT=120

# wait_job JOBID SECONDS: until the job has ended for good (a requeued job
# passes through PENDING again); sets state. A job still running after
# SECONDS is cancelled, so that it does not hold the node's CPUs while the
# next jobs run.
wait_job() {
    local end=$((SECONDS + $2))
    while [ $SECONDS -lt $end ]; do
        state=$(field "$1" JobState)
        case $state in
        COMPLETED | FAILED | CANCELLED | TIMEOUT | NODE_FAIL | OUT_OF_MEMORY | BOOT_FAIL | DEADLINE) return 0 ;;
        esac
        sleep 0.2
    done
    echo "# job $1: still ${state:-?} after $2 s: cancelling it"
    timeout 10 scancel --quiet "$1" >/dev/null 2>&1 || true
    return 1
}

# check_summary FILE: the end of a run: erase-train's summary with QPS and NE.
check_summary() {
    grep -q '^erase-train summary' "$1" &&
        grep -Eq '^ +QPS +p50 [0-9]+ +p90 [0-9]+' "$1" &&
        grep -Eq '^ +eval +NE [0-9]+\.[0-9]+' "$1"
}

# submit NAME SBATCH [sbatch options] -- [erase-train options]: the job id;
# output in $dir/NAME.out, checkpoints in $dir/NAME.ckpt; the run file is
# $run if set, else $dir/tiny.run.
submit() {
    local name=$1 job=$2 sb=()
    shift 2
    while [ $# -gt 0 ] && [ "$1" != -- ]; do sb+=("$1"); shift; done
    shift
    # The node advertises 4 CPUs on what may be 2 cores: Open MPI must yield
    # while it waits, as with mpirun --oversubscribe (busy polling makes
    # 4 ranks on 2 cores 30 times slower). Its session directory (TMPDIR)
    # and shared-memory segments (/dev/shm by default, left behind by a
    # crashed rank) go under this test's directory.
    OMPI_MCA_mpi_yield_when_idle=1 TMPDIR=$dir/tmp OMPI_MCA_btl_vader_backing_directory=$dir/shm \
        ERASE_TOP=$src ERASE_BUILD=$build ERASE_DATA=$dir/data ERASE_RUN=${run:-$dir/tiny.run} \
        ERASE_CHECKPOINT_DIR=$dir/$name.ckpt \
        timeout 30 sbatch --parsable --chdir="$dir" --output="$dir/$name.out" --job-name="$name" \
        "${sb[@]}" "$src/jobs/$job" "$@"
}

echo "1..9"

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
    for n in 2 3 4 5 6 7 8 9; do echo "ok $n # SKIP srun --mpi=pmix does not work here"; done
    exit 0
fi

# tiny data: 2000 synthetic rows (1600 to train, 400 held out); a run file
# like jobs/criteo-sample.run with frequent progress lines
"$build/apps/erase-convert" synth --quiet --rows 2000 -o "$dir/data" >"$dir/convert.log" 2>&1 ||
    { show "$dir/convert.log"; exit 1; }
mkdir -p "$dir/tmp" "$dir/shm"
cat >"$dir/tiny.run" <<'EOF'
model = "ctr";
eval_fraction = 0.2;
batch = 64;
lr = 0.001;
embedding_lr = 0.005;
early_backward = "graph";
log_every = 10;
EOF

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

# ---- pre-emption: signal, checkpoint, requeue, resume, finish ------------------
# Sized by no speed: the job trains "until signalled" (a run file with
# 100,000,000 steps), the signal goes once a progress line shows it trains,
# and the job cannot end before it comes, however slow slurmctld is to pass
# it on. (Sizing the job from job 1's time per step failed on loaded
# machines, and on CPUs where training slows down as the model fits its
# 1,600 rows.) While the signal is on its way, the partition is DOWN, so
# the requeued job waits; once the ranks have stopped at step N, the run
# file says N + 30 steps, the partition comes UP, and the requeued job
# resumes and finishes 30 steps later. The run file is read at every start
# of the job; the command line (kept by the requeue) gives no --steps.
RESUMED_STEPS=30

# queue STATE: the partition UP or DOWN (jobs running go on; pending ones
# start only while UP).
queue() { timeout 10 scontrol update PartitionName=debug State="$1"; }

# run_file FILE STEPS: tiny.run for STEPS steps, evaluated at the last.
run_file() {
    { cat "$dir/tiny.run"; printf 'steps = %d;\neval_every = %d;\n' "$2" "$2"; } >"$1"
}

# preempt NAME HOW: submit train-1node.sbatch to train until signalled, and
# once it trains, HOW it: usr1 (scancel --batch --signal=USR1: what
# #SBATCH --signal=B:USR1@T sends T s before the time limit) or requeue
# (scontrol requeue: SIGTERM to every process of the job, then Slurm requeues
# it, as pre-emption with PreemptMode=REQUEUE does); then, once the ranks
# stopped, let it resume for $RESUMED_STEPS more steps. Waits for the end;
# sets jid, out, sent (0: signalled), stop_sig and stop_step (from
# "erase-train: stopped by SIGNAL after step N": after scontrol requeue,
# slurmd sends SIGTERM to the ranks and the batch shell, which passes
# SIGUSR1 on, and the ranks name whichever came first), steps (the end:
# stop_step + $RESUMED_STEPS), t0.
preempt() {
    local name=$1 how=$2 run=$dir/$1.run
    t0=$(date +%s%N)
    run_file "$run" 100000000
    jid=$(submit "$name" train-1node.sbatch --ntasks-per-node=2 --cpus-per-task=1 --)
    out=$dir/$name.out
    local end=$((SECONDS + START_WAIT))
    while [ $SECONDS -lt $end ]; do
        grep -q '^train ' "$out" 2>/dev/null && break
        case $(field "$jid" JobState) in PENDING | CONFIGURING | RUNNING) ;; *) break ;; esac
        sleep 0.1
    done
    sent=1
    stop_step=
    if grep -q '^train ' "$out" 2>/dev/null && queue DOWN; then
        if [ "$how" = usr1 ]; then
            timeout 30 scancel --batch --signal=USR1 "$jid" && sent=0
        else
            timeout 30 scontrol requeue "$jid" && sent=0
        fi
        end=$((SECONDS + JOB_WAIT))
        while [ $sent = 0 ] && [ $SECONDS -lt $end ] && [ -z "$stop_step" ]; do
            stop_step=$(sed -n 's/^erase-train: stopped by SIG[A-Z0-9]* after step \([0-9]*\).*/\1/p' "$out" | head -1)
            sleep 0.2
        done
        steps=$((${stop_step:-0} + RESUMED_STEPS))
        run_file "$run" "$steps"
    fi
    queue UP
    wait_job "$jid" "$JOB_WAIT"
    stop_sig=$(sed -n 's/^erase-train: stopped by \(SIG[A-Z0-9]*\) after step [0-9]*.*/\1/p' "$out" | head -1)
    stop_step=$(sed -n 's/^erase-train: stopped by SIG[A-Z0-9]* after step \([0-9]*\).*/\1/p' "$out" | head -1)
}

# finished: the job ended well, after all $steps steps, with the summary
finished() {
    [ "$state" = COMPLETED ] && [ "$(field "$jid" ExitCode)" = 0:0 ] && check_summary "$out" &&
        grep -Eq "^ +steps +$steps " "$out"
}

preempt usr1 usr1
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

preempt requeue requeue
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
