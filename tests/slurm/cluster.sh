# shellcheck shell=bash
# Sourced by tests/slurm drivers: a private Slurm cluster (Debian's
# slurm-wlm 22.05 and munge), everything under one temporary directory,
# nothing from /etc/slurm or the system's munged. Either one node,
# "localhost", or N nodes h1..hN on the hosts of tests/cluster/hosts.sh
# (network and UTS namespaces, issue 18).
#   cluster_start DIR [N]
#                       start munged, slurmctld and slurmd under DIR; exports
#                       SLURM_CONF; returns non-zero (and says why) on failure.
#                       Without N: one node "localhost" (127.0.0.1), every
#                       daemon in this machine's namespaces. With N: brings
#                       up N hosts (hosts.sh up N, prefix $ERASE_HOSTS_PREFIX)
#                       and runs one slurmd in each (NodeName=hI
#                       NodeAddr=10.77.0.I), slurmctld in h1 (the head node:
#                       only the hosts reach it), munged here (its socket is
#                       a file every namespace sees)
#   cluster_cmd CMD...  run a Slurm client (sbatch, squeue, scontrol, ...)
#                       where it reaches slurmctld: here, or in h1
#   cluster_stop        stop every daemon cluster_start started, and take the
#                       hosts down (idempotent)
# Needs root (slurmd starts jobs as their user). Bounded: each wait gives up
# after a few seconds.

cluster_pids=()
# the nodes (localhost, or h1 .. hN) and hosts.sh (empty: one node here)
cluster_nodes=()
cluster_hosts=

# cluster_log MESSAGE: a TAP comment.
cluster_log() { echo "# slurm: $*"; }

# cluster_free_port: an unused TCP port on localhost (none listening).
# Below the kernel's ephemeral range (ip_local_port_range): other processes'
# connections and listeners (Open MPI's, of tests running at the same time)
# take ports there, and one could take this port between the check and the
# daemon's bind.
cluster_free_port() {
    local p lo=10000 hi
    hi=$(cut -f1 /proc/sys/net/ipv4/ip_local_port_range 2>/dev/null)
    [ "${hi:-0}" -gt $((lo + 1000)) ] 2>/dev/null || hi=32768
    for _ in $(seq 50); do
        p=$((lo + RANDOM % (hi - lo)))
        if ! (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then echo "$p"; return 0; fi
    done
    return 1
}

# cluster_wait_file FILE SECONDS: wait until FILE (or socket) exists.
cluster_wait_file() {
    local i
    for ((i = 0; i < $2 * 10; i++)); do
        [ -e "$1" ] && return 0
        sleep 0.1
    done
    return 1
}

# cluster_quote WORD...: the words quoted for sh -c (what hosts.sh exec runs).
cluster_quote() {
    local w
    for w in "$@"; do printf "'%s' " "${w//\'/\'\\\'\'}"; done
}

# cluster_cmd CMD...: CMD where slurmctld is reached (see the top); its status.
cluster_cmd() {
    if [ -n "$cluster_hosts" ]; then
        "$cluster_hosts" exec h1 "$(cluster_quote "$@")"
    else
        "$@"
    fi
}

# cluster_daemon NODE LOG CMD...: start CMD in the foreground on NODE (a
# child of this shell, stdout and stderr to LOG); adds it to cluster_pids.
cluster_daemon() {
    local node=$1 log=$2
    shift 2
    if [ -n "$cluster_hosts" ]; then
        # hosts.sh exec ends in nsenter and sh -c "exec CMD": the pid is CMD's
        "$cluster_hosts" exec "$node" "exec $(cluster_quote "$@")" >"$log" 2>&1 &
    else
        "$@" >"$log" 2>&1 &
    fi
    cluster_pids+=($!)
}

cluster_start() {
    local d=$1 n=${2:-} i
    if [ -n "$n" ]; then
        cluster_hosts=$(cd "$(dirname "${BASH_SOURCE[0]}")/../cluster" && pwd)/hosts.sh
        if ! "$cluster_hosts" up "$n" >"$d.hosts" 2>&1; then
            cluster_log "cannot make $n hosts (tests/cluster/hosts.sh up $n): $(tr '\n' ' ' <"$d.hosts")"
            rm -f "$d.hosts"
            return 1 # cluster_stop removes what was made
        fi
        rm -f "$d.hosts"
        for ((i = 1; i <= n; i++)); do cluster_nodes+=("h$i"); done
    else
        cluster_nodes=(localhost)
    fi
    mkdir -p "$d/munge" "$d/state" "$d/spool" "$d/tmp" "$d/etc"
    chmod 711 "$d/munge"

    # munged: its own key, socket, pid, seed and log under $d/munge.
    mungekey --create --keyfile="$d/munge/munge.key" --force >/dev/null 2>&1 ||
        dd if=/dev/urandom of="$d/munge/munge.key" bs=1024 count=1 2>/dev/null
    chmod 400 "$d/munge/munge.key"
    # The daemons run in the foreground as children of this shell, which
    # reaps them when they stop (daemonized, they would stay zombies where
    # init does not reap).
    munged --foreground --force --socket="$d/munge/munge.socket" --key-file="$d/munge/munge.key" \
        --pid-file="$d/munge/munged.pid" --seed-file="$d/munge/munged.seed" \
        --log-file="$d/munge/munged.log" >"$d/munge/munged.err" 2>&1 &
    cluster_pids+=($!)
    if ! cluster_wait_file "$d/munge/munge.socket" 5 || ! cluster_alive "${cluster_pids[0]}"; then
        cluster_log "munged did not start:"
        sed 's/^/#   /' "$d/munge/munged.err" "$d/munge/munged.log" 2>/dev/null
        return 1
    fi

    # slurmctld and the slurmds: tried up to 3 times, with other ports
    # when a daemon ended (a port taken after all)
    local base=${#cluster_pids[@]} attempt
    for attempt in 1 2 3; do
        cluster_slurm "$d" "$n"
        case $? in
        0) return 0 ;;
        3) [ $attempt -lt 3 ] || return 1
           cluster_log "a daemon ended (try $attempt of 3): again with other ports"
           for ((i = ${#cluster_pids[@]} - 1; i >= base; i--)); do
               kill -KILL "${cluster_pids[i]}" 2>/dev/null
               wait "${cluster_pids[i]}" 2>/dev/null
               unset "cluster_pids[i]"
           done ;;
        *) return 1 ;;
        esac
    done
}

# cluster_slurm DIR N: cluster_start's slurm.conf, slurmctld and slurmds;
# 0 when every node is idle, 3 when a daemon ended, 1 on another failure.
cluster_slurm() {
    local d=$1 n=$2 cpus mem ctld_port slurmd_port first_id ctld_host node_lines nodes i
    # slurm.conf: nodes that advertise 4 CPUs whatever the machine has
    # (config_overrides), so 4 ranks fit on a 2-core CI machine.
    cpus=4
    mem=$(awk '/MemTotal/ { printf "%d", $2 / 1024 / 2 }' /proc/meminfo)
    if ! ctld_port=$(cluster_free_port) || ! slurmd_port=$(cluster_free_port); then
        cluster_log "no free TCP port"; return 1
    fi
    # Job ids start at 1 on a fresh cluster, and much is named after them:
    # PMIx's per-job directories, Open MPI's job id under srun (a hash of the
    # PMIx namespace "slurm.pmix.JOB.STEP") and with it its session directory
    # and shared-memory segments. Two clusters (concurrent test runs, or the
    # leftovers of a crashed job) would share those: start at a random id.
    first_id=$((1000 + (RANDOM * 32768 + RANDOM) % 60000000))
    if [ -n "$cluster_hosts" ]; then
        # the head node h1 by its address on the hosts' network; each slurmd
        # has its own spool, pid and log file (%n: its node name)
        ctld_host="h1(10.77.0.1)"
        node_lines=
        for ((i = 1; i <= n; i++)); do
            node_lines+="NodeName=h$i NodeAddr=10.77.0.$i CPUs=$cpus RealMemory=$mem State=UNKNOWN"$'\n'
        done
        nodes="h[1-$n]"
        mkdir -p "${cluster_nodes[@]/#/$d/spool/}"
    else
        ctld_host=localhost
        node_lines="NodeName=localhost NodeAddr=127.0.0.1 CPUs=$cpus RealMemory=$mem State=UNKNOWN"$'\n'
        nodes=localhost
    fi
    local spool=$d/spool slurmd_file=$d/slurmd
    [ -n "$cluster_hosts" ] && spool=$d/spool/%n slurmd_file=$d/slurmd-%n
    cat >"$d/etc/slurm.conf" <<CONF
# erase tests/slurm: a private cluster (see tests/slurm/cluster.sh)
ClusterName=erase-test
FirstJobId=$first_id
SlurmctldHost=$ctld_host
SlurmctldPort=$ctld_port
SlurmdPort=$slurmd_port
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
# cred_expire: also how long a requeued job waits before it may start again
# (default 120 s).
AuthInfo=socket=$d/munge/munge.socket,cred_expire=5
StateSaveLocation=$d/state
SlurmdSpoolDir=$spool
SlurmctldPidFile=$d/slurmctld.pid
SlurmdPidFile=$slurmd_file.pid
SlurmctldLogFile=$d/slurmctld.log
SlurmdLogFile=$slurmd_file.log
SlurmctldDebug=info
SlurmdDebug=info
# PMIx's per-job directories live under TmpFS (and the spool): keep them
# here, not in /tmp.
TmpFS=$d/tmp
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
SchedulerType=sched/builtin
SchedulerParameters=sched_interval=1
AccountingStorageType=accounting_storage/none
JobAcctGatherType=jobacct_gather/none
JobCompType=jobcomp/none
MailProg=/bin/true
MpiDefault=none
ReturnToService=2
SlurmdParameters=config_overrides
JobRequeue=1
KillWait=10
MinJobAge=600
InactiveLimit=0
SlurmctldTimeout=30
SlurmdTimeout=30
${node_lines}PartitionName=debug Nodes=$nodes Default=YES MaxTime=INFINITE State=UP OverSubscribe=NO
CONF
    # slurmd 22.05 loads a cgroup plugin even with proctrack/linuxproc and
    # task/none, and its autodetection fails in containers: pin v1 (which
    # loads here without a v1 hierarchy; nothing uses it).
    printf 'CgroupPlugin=cgroup/v1\nCgroupAutomount=no\n' >"$d/etc/cgroup.conf"
    SLURM_CONF=$d/etc/slurm.conf
    export SLURM_CONF

    local node
    cluster_daemon "${cluster_nodes[0]}" "$d/slurmctld.err" slurmctld -D -i -f "$SLURM_CONF"
    for node in "${cluster_nodes[@]}"; do
        if [ -n "$cluster_hosts" ]; then
            # TmpFS is node-local, as on a real cluster: PMIx names its
            # directory there by job and step only (spmix_appdir_UID_JOB.STEP),
            # and a second node's slurmstepd fails to make it ("File exists")
            # when the nodes share one. Each slurmd gets a mount namespace
            # with its own directory mounted on $d/tmp.
            mkdir -p "$d/tmp-$node"
            # shellcheck disable=SC2016 # expanded by sh -c
            cluster_daemon "$node" "$d/slurmd-$node.err" unshare --mount --propagation private \
                sh -c 'mount --bind "$0" "$1" && shift && exec "$@"' "$d/tmp-$node" "$d/tmp" \
                slurmd -D -N "$node" -f "$SLURM_CONF"
        else
            cluster_daemon "$node" "$d/slurmd.err" slurmd -D -N "$node" -f "$SLURM_CONF"
        fi
    done

    # every node registers and becomes idle
    local p f state want ended='' end=$((SECONDS + 30))
    want=$(printf '%s idle\n' "${cluster_nodes[@]}")
    while [ $SECONDS -lt $end ]; do
        state=$(cluster_cmd timeout 5 sinfo -h -N -o '%N %T' 2>/dev/null | sort || true)
        [ "$state" = "$want" ] && return 0
        for p in "${cluster_pids[@]}"; do cluster_alive "$p" || { ended=$p; break 2; }; done
        sleep 0.1
    done
    cluster_log "nodes not idle: $(echo "${state:-unknown}" | tr '\n' ' ')${ended:+ (process $ended ended)}"
    for f in "$d"/slurmctld.err "$d"/slurmctld.log "$d"/slurmd*.err "$d"/slurmd*.log; do
        [ -e "$f" ] || continue
        echo "#   $f ($(wc -c <"$f") bytes):"
        tail -20 "$f" | sed 's/^/#     /'
    done
    [ -n "$ended" ] && return 3
    return 1
}

# cluster_alive PID: the process runs (a daemon whose parent does not reap
# it stays a zombie after it exits: that counts as gone).
cluster_alive() {
    local st
    st=$(sed 's/.*) //' "/proc/$1/stat" 2>/dev/null | cut -d' ' -f1) || return 1
    [ -n "$st" ] && [ "$st" != Z ]
}

cluster_stop() {
    local i p alive
    [ ${#cluster_pids[@]} -gt 0 ] || [ -n "$cluster_hosts" ] || return 0
    # jobs first: slurmd kills their processes (slurmstepd leaves once its
    # job has ended), then the daemons, newest first
    # (clients bounded by timeout, in case slurmctld stops answering)
    if [ -n "$(cluster_cmd timeout 10 squeue -h -o %i 2>/dev/null)" ]; then
        cluster_cmd timeout 10 scancel --quiet --full --signal=KILL --user="$(id -un)" >/dev/null 2>&1 || true
        cluster_cmd timeout 10 scancel --quiet --user="$(id -un)" >/dev/null 2>&1 || true
        local end=$((SECONDS + 15))
        while [ $SECONDS -lt $end ]; do
            [ -z "$(cluster_cmd timeout 5 squeue -h -o %i 2>/dev/null)" ] && break
            sleep 0.1
        done
    fi
    for ((i = ${#cluster_pids[@]} - 1; i >= 0; i--)); do
        kill -TERM "${cluster_pids[i]}" 2>/dev/null || true
    done
    for ((i = 0; i < 50; i++)); do
        alive=
        for p in "${cluster_pids[@]}"; do cluster_alive "$p" && alive=1; done
        [ -z "$alive" ] && break
        sleep 0.1
    done
    for p in "${cluster_pids[@]}"; do
        if cluster_alive "$p"; then kill -KILL "$p" 2>/dev/null || true; fi
        wait "$p" 2>/dev/null || true
    done
    cluster_pids=()
    # the hosts, and whatever still runs in them (a job's processes)
    if [ -n "$cluster_hosts" ]; then
        "$cluster_hosts" down >/dev/null || true
        cluster_hosts=
    fi
    cluster_nodes=()
}
