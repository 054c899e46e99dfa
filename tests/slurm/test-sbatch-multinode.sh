#!/usr/bin/env bash
# jobs/train-multinode.sbatch on a real 2-node Slurm cluster (issue 18): the
# nodes h1 and h2 are hosts of tests/cluster/hosts.sh (network and UTS
# namespaces on this machine), one slurmd in each, slurmctld in h1 (the head
# node, where sbatch and the other clients run), a private munged
# (tests/slurm/cluster.sh). Then:
#   1. srun --mpi=pmix starts tasks on both nodes;
#   2. sbatch -N 2 --ntasks-per-node=2 jobs/train-multinode.sbatch (srun
#      across the nodes, Open MPI over TCP between them) completes: 4 ranks
#      on 2 hosts, local ranks 0-1 on each, and a final checkpoint bitwise
#      equal to 1 host x 4 ranks (mpirun here) with the same settings; and
#      with ERASE_LAUNCHER=mpirun (mpirun inside the allocation) the same;
#   3. the same job, training until signalled, is pre-empted (scontrol
#      requeue: SIGTERM to every process of the job on both nodes): the
#      ranks checkpoint together, Slurm requeues the job, it resumes from
#      the checkpoint and ends bitwise equal to an uninterrupted 1 x 4 run;
# A job that dies inside Open MPI's MPI_Init before erase-train starts
# (mpi_startup_crash in tests/slurm/jobs.sh: a race of Open MPI 4.1 and
# Slurm 22.05's PMIx, about once in 20 jobs here) runs once more, said in a
# TAP comment; a second such death, or any other failure, fails the case.
# Then every daemon stops and the hosts come down. Prints TAP; skips where
# Slurm, munge, root or network namespaces are missing. Every wait is
# bounded. Run by make check from the top build directory (srcdir: the
# source tree).
set -uo pipefail

src=$(cd "${srcdir:-.}" && pwd)
build=$(pwd)
# the cluster (tests/slurm/cluster.sh), Open MPI's settings
# (tests/comm/mpi.sh), the jobs
# shellcheck source=tests/slurm/jobs.sh
. "$src/tests/slurm/jobs.sh"
slurm_require
for c in ip unshare nsenter mount; do
    command -v $c >/dev/null 2>&1 || skip "no $c (Debian: iproute2, util-linux, mount)"
done
[ -x "$build/tests/ckpt/ckpt-tool" ] || skip "tests/ckpt/ckpt-tool was not built"
# Open MPI leaks at exit (tests/ckpt/ckpt.sh)
ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0"
export ASAN_OPTIONS
unset ERASE_VERBOSE

# a prefix of this run's own: other tests and users may have clusters up
ERASE_HOSTS_PREFIX=erase-s$$
export ERASE_HOSTS_PREFIX

slurm_workdir erase-slurm-mn

# ---- the cluster ---------------------------------------------------------------
if ! cluster_start "$dir/cluster" 2 >"$dir/start.log"; then
    cluster_stop
    grep -q 'cannot make 2 hosts' "$dir/start.log" && skip "$(sed -n 's/^# slurm: //p' "$dir/start.log" | head -1)"
    echo "1..1"
    show "$dir/start.log"
    tap 1 "a private Slurm cluster of 2 nodes on namespace hosts starts"
    exit 1
fi
echo "1..9"
tap 0 "a private Slurm cluster of 2 nodes starts ($(now_s "$t_start") s: slurmd in h1 and h2, slurmctld in h1; SLURM_CONF=$SLURM_CONF)"

# 2. srun across the nodes through the PMIx plugin (each node's slurmstepd
# makes its PMIx directory in the node's own TmpFS)
# shellcheck disable=SC2016 # expanded by the tasks' shells
cluster_cmd timeout 30 srun --mpi=pmix -N 2 --ntasks-per-node=2 sh -c 'echo "$SLURM_PROCID $(hostname)"' \
    >"$dir/srun.out" 2>&1
rc=$?
printf '0 h1\n1 h1\n2 h2\n3 h2\n' >"$dir/srun.want"
LC_ALL=C sort "$dir/srun.out" | cmp -s "$dir/srun.want" -
ok=$?
[ $ok = 0 ] || show "$dir/srun.out"
tap $ok "srun --mpi=pmix -N 2 --ntasks-per-node=2 (status $rc): tasks 0-1 on h1, 2-3 on h2"

slurm_data || exit 1

# reference NAME STEPS: erase-train on 1 host x 4 ranks (mpirun here) with
# the jobs' settings for STEPS steps; its checkpoint $dir/NAME/ckpt-STEPS.h5
reference() {
    # shellcheck disable=SC2086 # $MPI_FLAGS are words
    OMP_NUM_THREADS=1 timeout -k 5 120 "$MPIRUN" $MPI_FLAGS -np 4 "$build/apps/erase-train" \
        --config "$dir/tiny.run" --train "$dir/data" --steps "$2" --eval-every "$2" --quiet \
        --checkpoint-dir "$dir/$1" >"$dir/$1.out" 2>&1 || show "$dir/$1.out"
}
# same CKPT REF: bitwise equal (parameters, optimizer, cursor)
same() {
    "$build/tests/ckpt/ckpt-tool" compare "$1" "$2" >"$dir/compare.out" 2>&1
    local r=$?
    show "$dir/compare.out"
    return $r
}

# ---- the multi-node job runs to the end ---------------------------------------
t0=$(date +%s%N)
steps=30
# once_more NAME: after a job NAME that died in Open MPI's start-up
# (mpi_startup_crash), say so: it runs once more as NAME-2
once_more() {
    echo "# job $jid died in Open MPI's MPI_Init before erase-train started (mpi_startup_crash: Open MPI/Slurm's race, docs/troubleshooting.md); once more as $1-2"
    grep -e 'Failing at address' -e 'PML add procs failed' "$out.last" | head -2 | sed 's/^/#   /'
}
# multinode_job NAME VAR=VALUE: train-multinode.sbatch on 2 nodes x 2 ranks
# for $steps steps as NAME, VAR=VALUE in its environment, waited for (jid,
# out, state); one that died in Open MPI's start-up runs once more as
# NAME-2. name: the job that ran last.
multinode_job() {
    name=$1
    local try
    for try in 1 2; do
        out=$dir/$name.out state=
        jid=$(export "$2"; submit "$name" train-multinode.sbatch -N 2 --ntasks-per-node=2 --cpus-per-task=1 \
            --gpus-per-node=0 -- --steps $steps --eval-every $steps)
        [ -n "$jid" ] && wait_job "$jid" "$JOB_WAIT"
        [ $try = 1 ] && [ "$state" != COMPLETED ] && mpi_startup_crash "$out" || return 0
        once_more "$name"
        name=$name-2
    done
}
multinode_job plain ERASE_VERBOSE=1
plain=$name
ok=1
if [ -n "$jid" ] && [ "$state" = COMPLETED ] && [ "$(field "$jid" ExitCode)" = 0:0 ] &&
    [ "$(field "$jid" NodeList)" = "h[1-2]" ] && check_summary "$out"; then ok=0; fi
[ $ok = 0 ] || { echo "# job ${jid:-?}: ${state:-not submitted}"; show "$out"; }
tap $ok "sbatch -N 2 --ntasks-per-node=2 train-multinode.sbatch completes on h[1-2] with the summary ($(now_s "$t0") s)"

cat >"$dir/plain.want" <<'LINES'
[rank 0 h1] erase: rank 0 of 4, local rank 0 of 2, dp rank 0 of 4
[rank 0 h1] erase: world of 4 ranks on 2 hosts (dp 4 x pp 1)
[rank 1 h1] erase: rank 1 of 4, local rank 1 of 2, dp rank 1 of 4
[rank 2 h2] erase: rank 2 of 4, local rank 0 of 2, dp rank 2 of 4
[rank 3 h2] erase: rank 3 of 4, local rank 1 of 2, dp rank 3 of 4
erase-train: 4 ranks on 2 hosts (rank 0 on h1)
LINES
grep -E '^(\[rank [0-9]+ [^]]*\] erase: (rank|world) |erase-train: [0-9]+ ranks? on )' "$out" | startup_lines >"$dir/plain.got"
cmp -s "$dir/plain.want" "$dir/plain.got"
ok=$?
show "$dir/plain.got"
tap $ok "its start-up lines: 4 ranks on 2 hosts, ranks 0-1 on h1 and 2-3 on h2 with local ranks 0-1"

t0=$(date +%s%N)
reference one $steps
same "$dir/$plain.ckpt/ckpt-$steps.h5" "$dir/one/ckpt-$steps.h5"
tap $? "its final checkpoint (step $steps) is bitwise equal to 1 host x 4 ranks' ($(now_s "$t0") s)"

# ---- the same with mpirun inside the allocation (ERASE_LAUNCHER=mpirun) ----------
# Open MPI starts its daemon on h2 through Slurm (srun) and talks TCP to it
t0=$(date +%s%N)
multinode_job mpirun ERASE_LAUNCHER=mpirun
ok=1
if [ -n "$jid" ] && [ "$state" = COMPLETED ] && check_summary "$out" &&
    grep -q '^erase-train: 4 ranks on 2 hosts (rank 0 on h1)$' "$out" &&
    same "$dir/$name.ckpt/ckpt-$steps.h5" "$dir/one/ckpt-$steps.h5"; then ok=0; fi
[ $ok = 0 ] || { echo "# job ${jid:-?}: ${state:-not submitted}"; show "$out"; }
tap $ok "the same job with ERASE_LAUNCHER=mpirun: 4 ranks on 2 hosts, bitwise equal to 1 host x 4 ranks ($(now_s "$t0") s)"

# ---- pre-emption across the nodes: checkpoint, requeue, resume, finish ---------
name=requeue
for try in 1 2; do
    preempt $name requeue train-multinode.sbatch -N 2 --ntasks-per-node=2 --cpus-per-task=1 --gpus-per-node=0
    [ $try = 1 ] && [ "$state" != COMPLETED ] && mpi_startup_crash "$out" || break
    once_more requeue
    name=requeue-2
done
ok=1
if [ $sent = 0 ] && [ -n "$stop_step" ] && grep -q "^ckpt   step $stop_step:" "$out" &&
    [ "$(field "$jid" Restarts)" -ge 1 ] && grep -Eq "^resume from .*: step $stop_step," "$out" && finished &&
    [ "$(field "$jid" NodeList)" = "h[1-2]" ]; then
    ok=0
fi
[ $ok = 0 ] || { echo "# job $jid: requeued: $([ $sent = 0 ] && echo yes || echo no); state ${state:-?}"; show "$out";
    }
tap $ok "scontrol requeue of the 2-node job (SIGTERM on both nodes, as pre-emption): checkpoint at step ${stop_step:-?} (${stop_sig:-no signal}), requeued by Slurm, resumed on h[1-2], finished at step ${steps:-?} ($(now_s "$t0") s)"

t0=$(date +%s%N)
ok=1
if [ -n "$stop_step" ]; then
    reference uninterrupted "$steps"
    same "$dir/$name.ckpt/ckpt-$steps.h5" "$dir/uninterrupted/ckpt-$steps.h5" && ok=0
fi
tap $ok "the requeued job ends bitwise equal to an uninterrupted 1 host x 4 ranks run of $steps steps ($(now_s "$t0") s)"

# ---- nothing left ---------------------------------------------------------------
pids=("${cluster_pids[@]}")
cluster_stop
left=
for p in "${pids[@]}"; do cluster_alive "$p" && left="$left $p"; done
ip netns list | grep -q "^$ERASE_HOSTS_PREFIX-" && left="$left namespaces"
ok=1
[ -z "$left" ] && ok=0
tap $ok "every daemon stopped, the hosts are down${left:+ (still there:$left)} ($(now_s "$t_start") s in all)"
