# What jobs/*.sbatch run inside the allocation (sourced, after jobs/site.sh):
# erase_train_job [erase-train options...] launches erase-train on every task
# of the allocation with --checkpoint-dir and --resume auto, forwards the
# pre-emption signal to it, and requeues the job once the ranks have written
# their checkpoint.
#
# Signals (see jobs/README.md):
#   SIGUSR1 to the batch shell (#SBATCH --signal=B:USR1@SECONDS, or
#     `scancel --batch --signal=USR1 JOBID`): forwarded to the launcher (srun
#     and mpirun both pass SIGUSR1 on to every rank); each rank finishes its
#     step, they write a checkpoint together and exit 0; then this job runs
#     `scontrol requeue` on itself and, started again, resumes from it.
#   SIGTERM (pre-emption with PreemptMode=REQUEUE, scontrol requeue, scancel,
#     the time limit): slurmd sends it to every process of the job, the ranks
#     included, and SIGKILL KillWait seconds later; under srun the ranks
#     checkpoint the same way within that time (mpirun kills its ranks on
#     SIGTERM at once: only periodic checkpoints survive). Slurm itself
#     requeues a pre-empted or `scontrol requeue`d job; a cancelled or
#     timed-out one ends (submit again with the same ERASE_CHECKPOINT_DIR to
#     continue).
#
# Parameters (environment, with defaults):
#   ERASE_DATA             training shards (erase-convert)  [$ERASE_TOP/_data/criteo-sample
#                          (installed erase: ./_data/criteo-sample; ERASE_DATA_ROOT for _data),
#                          converted from the shipped sample on first use]
#   ERASE_EVAL             evaluation shards  [none: the run file's eval_fraction]
#   ERASE_RUN              run file (--config)  [$ERASE_TOP/jobs/criteo-sample.run]
#   ERASE_CHECKPOINT_DIR   checkpoints, shared by all nodes  [$SLURM_SUBMIT_DIR/checkpoints/JOBNAME-JOBID]
#   ERASE_CHECKPOINT_EVERY steps between periodic checkpoints (0: only on signals and at the end)  [1000]
#   ERASE_RANKS_PER_NODE   ranks on each node  [the allocation's --ntasks-per-node]
#   ERASE_METRICS          JSON-lines metrics file  [none]
#   ERASE_LAUNCHER         srun | mpirun  [srun, from jobs/site.sh]
# shellcheck shell=bash

erase_job_say() { printf 'erase job %s: %s\n' "${SLURM_JOB_ID:-?}" "$*"; }

# The rank launcher's pid (background), and the signal this shell got.
erase_job_pid=
erase_job_signal=

# The ranks stop on SIGUSR1 and SIGTERM alike (finish the step, checkpoint,
# exit 0). Whatever this shell got, the launcher gets SIGUSR1: srun and
# mpirun pass it on to every rank, while SIGTERM would make srun kill the step
# (after KillWait) and mpirun kill the ranks at once.
erase_job_forward() {
    erase_job_signal=$1
    erase_job_say "got SIG$1 at $(date +%T): passing SIGUSR1 to the ranks (they checkpoint and stop)"
    if [ -n "$erase_job_pid" ]; then kill -s USR1 "$erase_job_pid" 2>/dev/null || true; fi
}

erase_train_job() {
    : "${SLURM_JOB_ID:?erase_train_job: not in a Slurm job (submit with sbatch)}"
    local name=${SLURM_JOB_NAME:-erase}
    # the programs and the data root: of the source tree, or installed (jobs/paths.sh)
    . "$ERASE_TOP/jobs/paths.sh"
    erase_paths "$ERASE_TOP" || return 1
    local data=${ERASE_DATA:-$erase_data_root/criteo-sample}
    local run=${ERASE_RUN:-$ERASE_TOP/jobs/criteo-sample.run}
    local ckdir=${ERASE_CHECKPOINT_DIR:-${SLURM_SUBMIT_DIR:-$PWD}/checkpoints/$name-$SLURM_JOB_ID}
    local every=${ERASE_CHECKPOINT_EVERY:-1000}
    local rpn=${ERASE_RANKS_PER_NODE:-${SLURM_NTASKS_PER_NODE:-1}}
    local nodes=${SLURM_JOB_NUM_NODES:-1}
    local train=$erase_bin/erase-train

    # Signals from here on: remembered, and passed to the ranks once they run
    # (bash runs a trap between commands, and at once in `wait`).
    trap 'erase_job_forward USR1' USR1
    trap 'erase_job_forward TERM' TERM
    trap 'erase_job_forward INT' INT

    [ -x "$train" ] || { erase_job_say "no $train: build erase first (jobs/setup), or set ERASE_BUILD (or install it: make install)"; return 1; }
    if [ ! -f "$data/index.txt" ] && [ -z "${ERASE_DATA:-}" ]; then
        erase_job_say "converting the shipped Criteo sample to $data"
        mkdir -p "$(dirname "$data")"
        "$erase_bin/erase-convert" criteo --quiet --force -o "$data" \
            "$ERASE_TOP/data/criteo/kaggle-train-first9999.tsv" >/dev/null
    fi
    [ -f "$data/index.txt" ] || { erase_job_say "no shards in $data (ERASE_DATA)"; return 1; }
    mkdir -p "$ckdir"

    # GPUs: --device cuda when the allocation gives this node GPUs
    # (--gpus-per-node), unless ERASE_DEVICE says otherwise; without either,
    # the run file decides (default cpu); options after the script win
    local device=${ERASE_DEVICE:-}
    if [ -z "$device" ] && [ -n "${SLURM_GPUS_ON_NODE:-}" ] && [ "$SLURM_GPUS_ON_NODE" != 0 ]; then
        device=cuda
    fi
    # --train / --eval after the script replace ERASE_DATA / ERASE_EVAL (repeated, they would add to them)
    local a data_args=(--train "$data") evl=()
    [ -n "${ERASE_EVAL:-}" ] && evl=(--eval "$ERASE_EVAL")
    for a in "$@"; do
        case $a in --train | --train=*) data_args=() ;; --eval | --eval=*) evl=() ;; esac
    done
    local args=(--config "$run" "${data_args[@]}" ${device:+--device "$device"} --checkpoint-dir "$ckdir" --resume auto)
    [ "$every" != 0 ] && args+=(--checkpoint-every "$every")
    args+=("${evl[@]}")
    [ -n "${ERASE_METRICS:-}" ] && args+=(--metrics "$ERASE_METRICS")
    args+=("$@")

    local launch
    case $ERASE_LAUNCHER in
    srun)
        # --cpus-per-task: Slurm 22.11+ no longer passes sbatch's value to srun
        # shellcheck disable=SC2206 # flags from site.sh, split on spaces
        launch=(srun $ERASE_SRUN_FLAGS --nodes="$nodes" --ntasks="$((nodes * rpn))"
            --ntasks-per-node="$rpn" --cpus-per-task="${SLURM_CPUS_PER_TASK:-1}") ;;
    mpirun)
        # shellcheck disable=SC2206
        launch=(mpirun $ERASE_MPIRUN_FLAGS -np "$((nodes * rpn))" --map-by "ppr:$rpn:node") ;;
    *) erase_job_say "ERASE_LAUNCHER=$ERASE_LAUNCHER: srun or mpirun"; return 1 ;;
    esac

    erase_job_say "start $(date +%T) on ${SLURM_JOB_NODELIST:-?} (restart ${SLURM_RESTART_COUNT:-0}): $nodes node(s) x $rpn ranks, $ERASE_LAUNCHER, checkpoints in $ckdir"
    if [ -n "$erase_job_signal" ]; then
        # stopped before training began: nothing new to checkpoint, and a
        # requeue now could loop (a --signal time longer than --time)
        erase_job_say "SIG$erase_job_signal came before training started: not starting, not requeueing"
        return 0
    fi
    # The launcher runs in the background so that this shell takes signals
    # while it waits.
    "${launch[@]}" "$train" "${args[@]}" </dev/null &
    erase_job_pid=$!
    if [ -n "$erase_job_signal" ]; then
        # trapped between the check above and $!: the launcher may not have
        # its handlers yet (SIGUSR1 would kill it), so it is stopped as if
        # training had not begun
        kill -s TERM "$erase_job_pid" 2>/dev/null || true
        wait "$erase_job_pid" 2>/dev/null || true
        trap - USR1 TERM INT
        erase_job_say "SIG$erase_job_signal came as training started: stopped it, not requeueing"
        return 0
    fi
    # wait returns early (status > 128) when a trap ran: wait again until the
    # launcher has exited, then once more for its exit status
    while kill -0 "$erase_job_pid" 2>/dev/null; do wait "$erase_job_pid" || true; done
    local rc=0
    wait "$erase_job_pid" || rc=$?
    trap - USR1 TERM INT
    erase_job_say "$ERASE_LAUNCHER exited with status $rc at $(date +%T)"

    if [ "$erase_job_signal" = USR1 ] && [ "$rc" = 0 ]; then
        # the checkpoint is written: start again from it (the same job id,
        # script and arguments; erase-train --resume auto finds it)
        erase_job_say "requeueing to resume from the checkpoint in $ckdir"
        if ! scontrol requeue "$SLURM_JOB_ID"; then
            erase_job_say "scontrol requeue failed: to continue, submit again with ERASE_CHECKPOINT_DIR=$ckdir"
        fi
        return 0
    fi
    return "$rc"
}
