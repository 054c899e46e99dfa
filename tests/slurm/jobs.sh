# shellcheck shell=bash
# shellcheck disable=SC2154,SC2034 # $src, $build, $dir come from the driver; results for it
# Sourced by tests/slurm drivers once $src (the source tree) and $build
# (the top build directory) are set; sources tests/comm/mpi.sh and
# tests/slurm/cluster.sh. What the drivers need (slurm_require), their
# directory $dir (slurm_workdir), their tiny data (slurm_data), submitting jobs/*.sbatch to the cluster, waiting for
# them, pre-empting them, and reading their output. Every Slurm client
# call goes through cluster_cmd (the cluster's head node) and is bounded by
# timeout, in case slurmctld stops answering.

# Open MPI as the MPI tests run it (MPIRUN, MPI_FLAGS, root, sanitizer
# suppressions for Open MPI's and PMIx's own allocations; the settings reach
# the ranks through sbatch's environment), and the cluster.
# shellcheck source=tests/comm/mpi.sh
. "$src/tests/comm/mpi.sh"
# shellcheck source=tests/slurm/cluster.sh
. "$src/tests/slurm/cluster.sh"

# slurm_workdir NAME: $dir, a new directory under $TMPDIR (or /tmp), and
# t_start; at exit the cluster stops and $dir is removed (kept with
# ERASE_KEEP_TEST_DIR=1).
slurm_workdir() {
    t_start=$(date +%s%N)
    dir=$(mktemp -d "${TMPDIR:-/tmp}/$1.XXXXXX") || exit 99
    trap slurm_cleanup EXIT
    trap 'exit 130' INT TERM
}
slurm_cleanup() {
    cluster_stop
    if [ "${ERASE_KEEP_TEST_DIR:-0}" = 1 ]; then echo "# keeping $dir"; else rm -rf "$dir"; fi
}

# slurm_require: skip (TAP) unless Slurm, munge, root and erase's programs
# are there; then clear the environment of a Slurm job around make check,
# which must not leak into this cluster's jobs.
slurm_require() {
    local c p v
    command -v timeout >/dev/null 2>&1 || skip "no timeout(1) to bound the waits"
    for c in munged slurmctld slurmd sbatch scontrol squeue sinfo scancel srun; do
        command -v "$c" >/dev/null 2>&1 || PATH=$PATH:/usr/sbin:/sbin
        command -v "$c" >/dev/null 2>&1 ||
            skip "no $c: install Debian's slurm-wlm and munge (jobs/debian-packages)"
    done
    [ "$(id -u)" = 0 ] || skip "needs root (slurmd starts jobs as their user)"
    for p in erase-train erase-convert; do [ -x "$build/apps/$p" ] || skip "$p was not built"; done
    [ -f "$src/jobs/train-1node.sbatch" ] || skip "no jobs/train-1node.sbatch in $src"
    while read -r v; do unset "$v"; done < <(compgen -e | grep -E '^(SLURM|SBATCH|SRUN|SALLOC)_')
}

# slurm_data: $dir/data, 2000 synthetic rows (1600 to train, 400 held out),
# $dir/tiny.cfg, a small ctr (tests/slurm/tiny-ctr.cfg), and $dir/tiny.run, a run file like
# jobs/criteo-sample.run with that model, frequent progress lines and a
# constant learning rate (the default cosine decays over the run's steps:
# a job that trains until signalled learns its last step only then, and
# its resumed part could not be bitwise a run that knew it from the
# start); $dir/tmp and $dir/shm for Open MPI (see submit).
slurm_data() {
    "$build/apps/erase-convert" synth --quiet --rows 2000 -o "$dir/data" >"$dir/convert.log" 2>&1 ||
        { show "$dir/convert.log"; return 1; }
    mkdir -p "$dir/tmp" "$dir/shm"
    cp "$src/tests/slurm/tiny-ctr.cfg" "$dir/tiny.cfg"
    printf 'model = "%s";\n' "$dir/tiny.cfg" >"$dir/tiny.run"
    cat >>"$dir/tiny.run" <<'RUN'
eval_fraction = 0.2;
batch = 64;
lr = 0.001;
embedding_lr = 0.005;
lr_decay = "constant";
early_backward = "graph";
log_every = 10;
RUN
}

# How long a job may take to end (JOB_WAIT) and to start training
# (START_WAIT): bounds for a job that hangs, not a measure of speed. A
# ThreadSanitizer build on a 2-core machine that runs other tests at the
# same time (make -j2 check) takes 30 to over 60 s for job 1's 100 steps,
# and a requeued job starts twice.
JOB_WAIT=300
START_WAIT=120

# now_s T0: seconds since T0 (date +%s%N), one decimal
now_s() { awk -v a="$1" -v b="$(date +%s%N)" 'BEGIN { printf "%.1f", (b - a) / 1e9 }'; }
tap_n=0
tap() {
    tap_n=$((tap_n + 1))
    if [ "$1" = 0 ]; then echo "ok $tap_n - $2"; else echo "not ok $tap_n - $2"; fi
}
show() { sed 's/^/#   /' "$@" 2>/dev/null; }
# field JOBID NAME: a field of scontrol show job
field() { cluster_cmd timeout 10 scontrol -o show job "$1" 2>/dev/null | tr ' ' '\n' | sed -n "s/^$2=//p"; }

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
    cluster_cmd timeout 10 scancel --quiet "$1" >/dev/null 2>&1 || true
    return 1
}

# check_summary FILE: the end of a run: erase-train's summary with QPS and NE.
check_summary() {
    grep -q '^erase-train summary' "$1" &&
        grep -Eq '^ +QPS +p50 [0-9]+ +p90 [0-9]+' "$1" &&
        grep -Eq '^ +eval +NE [0-9]+\.[0-9]+' "$1"
}

# submit NAME SBATCH [sbatch options] -- [erase-train options]: the job id;
# output in $dir/NAME.out, checkpoints in $ckpt if set, else
# $dir/NAME.ckpt; the run file is $run if set, else $dir/tiny.run; the jobs
# those of ERASE_TOP=$top if set (an installed erase's share folder, no
# ERASE_BUILD: its own programs), else of the source tree and its build.
submit() {
    local name=$1 job=$2 sb=() erase_build=$build
    [ -z "${top:-}" ] || erase_build=
    shift 2
    while [ $# -gt 0 ] && [ "$1" != -- ]; do sb+=("$1"); shift; done
    shift
    # The nodes advertise 4 CPUs on what may be 2 cores: Open MPI must yield
    # while it waits, as with mpirun --oversubscribe (busy polling makes
    # 4 ranks on 2 cores 30 times slower). Its session directory (TMPDIR)
    # and shared-memory segments (/dev/shm by default, left behind by a
    # crashed rank) go under this test's directory.
    OMPI_MCA_mpi_yield_when_idle=1 TMPDIR=$dir/tmp OMPI_MCA_btl_vader_backing_directory=$dir/shm \
        ERASE_TOP=${top:-$src} ERASE_BUILD=$erase_build ERASE_DATA=$dir/data ERASE_RUN=${run:-$dir/tiny.run} \
        ERASE_CHECKPOINT_DIR=${ckpt:-$dir/$name.ckpt} \
        cluster_cmd timeout 30 sbatch --parsable --chdir="$dir" --output="$dir/$name.out" --job-name="$name" \
        "${sb[@]}" "${top:-$src}/jobs/$job" "$@"
}

# mpi_startup_crash FILE: the job's last start (from its last "erase job
# J: start" line) died inside Open MPI's MPI_Init, before erase-train said
# anything (not even rank 0's "erase: world of" line, which follows a
# collective of every rank): a jump to address 0 in the TCP transport (a fragment of a peer
# that left MPI_Init reaching a rank whose receive callbacks are not yet
# registered) or "PML add procs failed". Seen about once in 20 jobs on
# these namespace hosts with Open MPI 4.1.4 and Slurm 22.05's PMIx plugin
# (docs/troubleshooting.md); not erase's: a test may run such a job once
# more, saying so.
mpi_startup_crash() {
    local start
    start=$(grep -n '^erase job [0-9]*: start ' "$1" | tail -1 | cut -d: -f1)
    [ -n "$start" ] || return 1
    tail -n +"$start" "$1" >"$1.last"
    ! grep -q -e '^erase-train: ' -e '^train ' -e '^resume from ' -e '\] erase: world of ' "$1.last" &&
        grep -q -e 'Failing at address: (nil)' -e 'PML add procs failed' "$1.last"
}

# Pre-emption: signal, checkpoint, requeue, resume, finish. Sized by no
# speed: the job trains "until signalled" (a run file with 100,000,000
# steps), the signal goes once a progress line shows it trains, and the job
# cannot end before it comes, however slow slurmctld is to pass it on.
# (Sizing the job from an earlier job's time per step failed on loaded
# machines, and on CPUs where training slows down as the model fits its
# 1,600 rows.) While the signal is on its way, the partition is DOWN, so
# the requeued job waits; once the ranks have stopped at step N, the run
# file says N + 30 steps, the partition comes UP, and the requeued job
# resumes and finishes 30 steps later. The run file is read at every start
# of the job; the command line (kept by the requeue) gives no --steps.
RESUMED_STEPS=30

# queue STATE: the partition UP or DOWN (jobs running go on; pending ones
# start only while UP).
queue() { cluster_cmd timeout 10 scontrol update PartitionName=debug State="$1"; }

# run_file FILE STEPS: tiny.run for STEPS steps, evaluated at the last.
run_file() {
    { cat "$dir/tiny.run"; printf 'steps = %d;\neval_every = %d;\n' "$2" "$2"; } >"$1"
}

# preempt NAME HOW SBATCH [sbatch options]: submit SBATCH to train until
# signalled, and once it trains, HOW it: usr1 (scancel --batch
# --signal=USR1: what #SBATCH --signal=B:USR1@T sends T s before the time
# limit) or requeue (scontrol requeue: SIGTERM to every process of the job,
# then Slurm requeues it, as pre-emption with PreemptMode=REQUEUE does);
# then, once the ranks stopped, let it resume for $RESUMED_STEPS more steps.
# Waits for the end; sets jid, out, sent (0:
# signalled), stop_sig and stop_step (from "erase-train: stopped by SIGNAL
# after step N": after scontrol requeue, slurmd sends SIGTERM to the ranks
# and the batch shell, which passes SIGUSR1 on, and the ranks name
# whichever came first), steps (the end: stop_step + $RESUMED_STEPS), t0.
preempt() {
    local name=$1 how=$2 job=$3 run=$dir/$1.run
    shift 3
    t0=$(date +%s%N)
    run_file "$run" 100000000
    jid=$(submit "$name" "$job" "$@" --)
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
            cluster_cmd timeout 30 scancel --batch --signal=USR1 "$jid" && sent=0
        else
            cluster_cmd timeout 30 scontrol requeue "$jid" && sent=0
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
