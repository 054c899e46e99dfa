#!/bin/bash
# tests/cluster/hosts.sh: a cluster of N "hosts" on this machine, for tests
# that need several hosts (issue 18). Host i (h1 .. hN) is a network namespace
# PREFIX-hI with its own UTS namespace (host name hI), one veth link "eth0"
# with the address 10.77.0.I/24, plugged into a bridge that lives in a
# namespace of its own, PREFIX-sw. Nothing is added to the root network
# namespace: the hosts reach each other and nothing else.
#
#   hosts.sh [--prefix P] up N [--delay D] [--rate R]
#       make (or bring to) N hosts; idempotent: what exists is kept, what is
#       missing is made, hosts beyond N from an earlier `up` are removed.
#       --delay D (e.g. 200us) adds a tc netem delay on each host's egress
#       (so D each way, 2 D per round trip; needs the kernel's sch_netem);
#       --rate R (e.g. 1gbit) limits each host's egress (netem with --delay,
#       else htb). Without them any earlier shaping is removed.
#       Prints one line per host: NAME ADDRESS NAMESPACE.
#   hosts.sh [--prefix P] down
#       end the processes left in the hosts' namespaces and remove every
#       namespace, link and file `up` made (idempotent).
#   hosts.sh [--prefix P] exec HOST CMD...
#       run CMD in HOST (hI or its address) as ssh or rsh would: the words
#       are joined by spaces and run by sh -c. This is also Open MPI's launch
#       agent (--mca plm_rsh_agent "$PWD/tests/cluster/hosts.sh exec", or
#       with ERASE_HOSTS_PREFIX set when the prefix is not the default).
#   hosts.sh [--prefix P] mpirun ARGS...
#       $MPIRUN (default mpirun) in h1 with ARGS (e.g. --host h1:2,h2:2
#       PROGRAM ...), launching on the other hosts through `exec` (no ssh),
#       TCP between hosts for Open MPI's out-of-band channel and messages
#       (shared memory within a host), and mpi_yield_when_idle 1: the hosts
#       share this machine's cores, so ranks outnumber cores although each
#       host's slots look free (busy polling is many times slower then).
#       TCP keepalive on the out-of-band channel (5 s idle, then 3 probes 2
#       s apart): a host cut off without its connections closing ends the
#       job within 11 s; at Open MPI's defaults (300 + 9 x 20 s) mpirun
#       waits 8 minutes for the lost daemon, even after erase's watchdog
#       called MPI_Abort (tests/cluster/test-hosts-fail.sh). As root
#       (the hosts need it) without --allow-run-as-root.
#
# PREFIX (default $ERASE_HOSTS_PREFIX, else "erase") names every namespace
# and file made, so clusters of several tests or users do not meet. Needs
# root, ip (iproute2), unshare and nsenter (util-linux); tc for shaping.
# Exit status: 0 done, 1 failure (message on stderr), 2 usage error.

set -u
prog=hosts.sh
net=10.77.0
prefix=${ERASE_HOSTS_PREFIX:-erase}
run_root=/run/erase-hosts

usage() {
    [ $# -gt 0 ] && echo "$prog: $*" >&2
    echo "usage: $prog [--prefix P] up N [--delay D] [--rate R] | down | exec HOST CMD... | mpirun ARGS..." >&2
    exit 2
}
fail() { echo "$prog: $*" >&2; exit 1; }

if [ "${1:-}" = --prefix ]; then
    [ $# -ge 2 ] || usage "--prefix: expected a name"
    prefix=$2; shift 2
fi
case $prefix in
    '' | *[!A-Za-z0-9_.-]* | .*) usage "--prefix '$prefix': expected letters, digits, '_', '.' or '-' (not first '.')" ;;
esac
[ ${#prefix} -le 40 ] || usage "--prefix '$prefix': expected at most 40 characters"
uts_dir=$run_root/$prefix

# hosts: the host numbers of this prefix's namespaces, ascending.
hosts() {
    ip netns list 2>/dev/null | sed -n "s/^$prefix-h\([1-9][0-9]*\)\( .*\)\{0,1\}$/\1/p" | sort -n
}

# remove_host I: end the processes in host I and remove its namespaces and
# its switch port (the veth pair goes with the namespace).
remove_host() {
    local ns=$prefix-h$1 pids
    if [ -e "/run/netns/$ns" ]; then
        pids=$(ip netns pids "$ns" 2>/dev/null)
        if [ -n "$pids" ]; then
            # shellcheck disable=SC2086 # a list of pids
            kill -TERM $pids 2>/dev/null
            for _ in $(seq 20); do
                pids=$(ip netns pids "$ns" 2>/dev/null); [ -z "$pids" ] && break; sleep 0.1
            done
            # shellcheck disable=SC2086
            [ -n "$pids" ] && kill -KILL $pids 2>/dev/null
        fi
        ip netns delete "$ns" || return 1
    fi
    ip -n "$prefix-sw" link delete "h$1" >/dev/null 2>&1
    if [ -e "$uts_dir/h$1.uts" ]; then
        umount "$uts_dir/h$1.uts" 2>/dev/null
        rm -f "$uts_dir/h$1.uts"
    fi
    return 0
}

down() {
    local i
    for i in $(hosts); do remove_host "$i" || fail "down: cannot remove namespace $prefix-h$i"; done
    # UTS files whose network namespace is already gone
    for f in "$uts_dir"/h*.uts; do
        [ -e "$f" ] || continue
        umount "$f" 2>/dev/null; rm -f "$f"
    done
    if [ -e "/run/netns/$prefix-sw" ]; then
        ip netns delete "$prefix-sw" || fail "down: cannot remove namespace $prefix-sw"
    fi
    if [ -d "$uts_dir" ]; then
        umount "$uts_dir" 2>/dev/null
        rm -f "$uts_dir/tc.err" # left by an up that tc failed
        rmdir "$uts_dir" 2>/dev/null
        rmdir "$run_root" 2>/dev/null # only when no other prefix uses it
    fi
    return 0
}

# shape NS: this host's egress shaping from $delay and $rate (none: removed).
# What an earlier `up` set is removed first: tc cannot change an htb root in
# place ("Change operation not supported"), and the counters start at 0.
shape() {
    local ns=$1
    tc -n "$ns" qdisc del dev eth0 root >/dev/null 2>&1
    if [ -n "$delay" ]; then
        # shellcheck disable=SC2086 # $rate_args: zero or two words
        tc -n "$ns" qdisc add dev eth0 root netem delay "$delay" $rate_args 2>"$uts_dir/tc.err" || {
            grep -q 'qdisc kind is unknown' "$uts_dir/tc.err" &&
                fail "up: --delay $delay: this kernel has no tc netem (CONFIG_NET_SCH_NETEM); --rate alone works with htb"
            fail "up: tc netem delay '$delay' ${rate:+rate '$rate' }on $ns: $(cat "$uts_dir/tc.err")"
        }
    elif [ -n "$rate" ]; then
        tc -n "$ns" qdisc add dev eth0 root handle 1: htb default 1 2>"$uts_dir/tc.err" &&
            tc -n "$ns" class add dev eth0 parent 1: classid 1:1 htb rate "$rate" 2>"$uts_dir/tc.err" ||
            fail "up: --rate '$rate' (tc htb) on $ns: $(cat "$uts_dir/tc.err")"
    fi
    rm -f "$uts_dir/tc.err"
}

up() {
    local n=$1 i ns
    [ "$(id -u)" = 0 ] || fail "up: needs root (network namespaces, veth links, mounts)"
    for c in ip unshare nsenter; do
        command -v "$c" >/dev/null 2>&1 || fail "up: $c not found (Debian: iproute2, util-linux)"
    done
    # The UTS namespace files live in a private mount (as ip netns does with
    # /run/netns), so other mount namespaces do not keep them alive.
    mkdir -p "$uts_dir" || fail "up: cannot make $uts_dir"
    if ! mountpoint -q "$uts_dir"; then
        mount --bind "$uts_dir" "$uts_dir" && mount --make-private "$uts_dir" ||
            fail "up: cannot make $uts_dir a private mount"
    fi
    if [ ! -e "/run/netns/$prefix-sw" ]; then
        ip netns add "$prefix-sw" || fail "up: cannot make network namespace $prefix-sw"
    fi
    ip -n "$prefix-sw" link show br0 >/dev/null 2>&1 ||
        ip -n "$prefix-sw" link add br0 type bridge || fail "up: cannot make bridge br0 in $prefix-sw"
    ip -n "$prefix-sw" link set br0 up || fail "up: cannot bring br0 up in $prefix-sw"
    for i in $(hosts); do
        [ "$i" -le "$n" ] || remove_host "$i" || fail "up: cannot remove $prefix-h$i (beyond $n hosts)"
    done
    for i in $(seq "$n"); do
        ns=$prefix-h$i
        if [ ! -e "/run/netns/$ns" ]; then
            ip netns add "$ns" || fail "up: cannot make network namespace $ns"
        fi
        if ! mountpoint -q "$uts_dir/h$i.uts" 2>/dev/null; then
            touch "$uts_dir/h$i.uts" && unshare --uts="$uts_dir/h$i.uts" hostname "h$i" ||
                fail "up: cannot make the UTS namespace of h$i ($uts_dir/h$i.uts)"
        fi
        if ! ip -n "$ns" link show eth0 >/dev/null 2>&1; then
            ip -n "$prefix-sw" link delete "h$i" >/dev/null 2>&1 # a port left without its host
            ip -n "$ns" link add eth0 type veth peer name "h$i" netns "$prefix-sw" ||
                fail "up: cannot make the veth link of $ns"
        fi
        ip -n "$ns" addr replace "$net.$i/24" dev eth0 &&
            ip -n "$ns" link set lo up && ip -n "$ns" link set eth0 up &&
            ip -n "$prefix-sw" link set "h$i" master br0 up || fail "up: cannot configure the link of $ns"
        shape "$ns"
        echo "h$i $net.$i $ns"
    done
}

# host_number HOST: I for hI or 10.77.0.I; empty otherwise.
host_number() {
    case $1 in
        h[1-9]*) echo "${1#h}" ;;
        "$net".[1-9]*) echo "${1##*.}" ;;
    esac | grep -x '[1-9][0-9]*'
}

run_in() {
    local host=$1 i
    shift
    i=$(host_number "$host") || fail "exec: '$host': expected a host name h1, h2, ... or its address $net.I"
    [ -e "/run/netns/$prefix-h$i" ] && [ -e "$uts_dir/h$i.uts" ] ||
        fail "exec: host $host is not up (namespace $prefix-h$i; run: $prog${prefix:+ --prefix $prefix} up N)"
    [ $# -gt 0 ] || usage "exec $host: expected a command"
    exec nsenter --net="/run/netns/$prefix-h$i" --uts="$uts_dir/h$i.uts" sh -c "$*"
}

# run_mpirun ARGS...: $MPIRUN in h1 across the hosts (see the top).
run_mpirun() {
    local self line
    self=$(cd "$(dirname "$0")" && pwd)/$(basename "$0")
    case $self in *[[:space:]]*) fail "mpirun: the path of $prog ($self) has a space: Open MPI splits its launch agent at spaces" ;; esac
    line=$(printf '%q ' "${MPIRUN:-mpirun}" --mca plm_rsh_agent "$self --prefix $prefix exec" \
        --mca oob_tcp_if_include "$net.0/24" --mca btl tcp,self,vader --mca btl_tcp_if_include "$net.0/24" \
        --mca mpi_yield_when_idle 1 --mca oob_tcp_keepalive_time 5 --mca oob_tcp_keepalive_intvl 2 \
        --mca oob_tcp_keepalive_probes 3 "$@")
    # the hosts need root, so mpirun runs as root: allowed, as --allow-run-as-root would
    run_in h1 "OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 $line"
}

[ $# -ge 1 ] || usage
cmd=$1; shift
case $cmd in
    up)
        [ $# -ge 1 ] || usage "up: expected a number of hosts"
        n=$1; shift
        case $n in '' | *[!0-9]* | 0*) usage "up '$n': expected a number of hosts in [1, 254]" ;; esac
        [ "$n" -le 254 ] || usage "up $n: expected a number of hosts in [1, 254]"
        delay='' rate=''
        while [ $# -gt 0 ]; do
            case $1 in
                --delay) [ $# -ge 2 ] || usage "--delay: expected a time (e.g. 200us)"; delay=$2; shift 2 ;;
                --rate) [ $# -ge 2 ] || usage "--rate: expected a rate (e.g. 1gbit)"; rate=$2; shift 2 ;;
                *) usage "up: unknown option '$1'" ;;
            esac
        done
        rate_args=${rate:+rate $rate}
        up "$n"
        ;;
    down) [ $# = 0 ] || usage "down: expected no arguments"; down ;;
    exec) [ $# -ge 1 ] || usage "exec: expected a host and a command"; run_in "$@" ;;
    mpirun) run_mpirun "$@" ;;
    *) usage "unknown command '$cmd'" ;;
esac
