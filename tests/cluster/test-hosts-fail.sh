#!/bin/sh
# A host failing, the NCCL-id exchange and shaped links across hosts
# (tests/cluster/hosts.sh, issue 18), on 2 hosts x 2 ranks of erase-train
# ctr (the shipped Criteo sample, 16 steps, checkpoints every 4):
#  - every process of h2 killed (SIGKILL) while rank 0 writes ckpt-8: Open
#    MPI ends the job (its launch agent and daemon on h2 are gone), before
#    erase's watchdog would; --resume auto then ends bitwise equal to an
#    uninterrupted run;
#  - h2 cut off (its link down, no connection closed): the job ends too,
#    through the out-of-band channel's TCP keepalive (hosts.sh mpirun sets
#    it; at Open MPI's defaults mpirun waits minutes for the lost daemon);
#    --resume auto again;
#  - the file exchange of NCCL ids (ERASE_NCCL_ID_DIR, no GPU needed:
#    tests/comm/test-id-exchange) with its groups across the hosts, and with
#    a folder per host (not shared): the documented error;
#  - links shaped to 1 Gbit/s and 100 Mbit/s (htb; this kernel may have no
#    tc netem for a delay): bitwise equal, the watchdog (5 s) not fired;
#  - down after an up that tc refused leaves nothing behind.
# Skipped where namespaces cannot be made (not root, no veth or bridge).
# the hosts, the skips, the data (tests/cluster/cluster.sh)
. "$(dirname "$0")/cluster.sh"
need tests/comm/test-id-exchange
unset ERASE_WATCHDOG_SECONDS
cluster_up erase-k
echo "1..17"
criteo_sample

# cluster NAME ARGS...: erase-train on 2 hosts x 2 ranks, 16 steps of 64
# samples per rank, checkpoints every 4 in $dir/NAME (unless ARGS name
# another), output in $dir/NAME.out; rc = exit status. cluster_bg: the same
# in the background ($job: pid of timeout).
cluster_cmd() {
    name=$1; shift
    # shellcheck disable=SC2086 # $MPI_FLAGS are words
    MPIRUN=$MPIRUN timeout -k 5 120 "$hosts" mpirun $MPI_FLAGS --host h1:2,h2:2 \
        apps/erase-train --train "$dir/data" --model "$dir/model.cfg" --device cpu --quiet --batch 64 --steps 16 \
        --checkpoint-every 4 --checkpoint-dir "$dir/$name" "$@" >"$dir/$name.out" 2>&1
}
cluster() { cluster_cmd "$@"; rc=$?; }
cluster_bg() { cluster_cmd "$@" & job=$!; }

# left: the pids left in the hosts' namespaces (none: empty).
left() { ip netns pids "$p-h1"; ip netns pids "$p-h2"; }
none_left() { [ -z "$(left)" ]; }

# writing NAME: ckpt-4 is published and a later checkpoint is being written
# (rank 0 sleeps ERASE_DEBUG_CKPT_SLEEP_MS inside the write: the window in
# which a host fails, found without timing).
writing() { [ "$(cat "$dir/$1/latest" 2>/dev/null)" = ckpt-4.h5 ] && ls "$dir/$1"/.ckpt-*.tmp >/dev/null 2>&1; }

# fail_h2 NAME WATCHDOG CMD...: cluster NAME with --watchdog WATCHDOG, the
# checkpoint writes slowed to 3 s; once `writing NAME`, CMD fails h2; then
# waits for mpirun: rc its status, ms the milliseconds from CMD to its end
# (-1, and the output shown, if no write began within 60 s).
fail_h2() {
    name=$1 wd=$2; shift 2
    ERASE_DEBUG_CKPT_SLEEP_MS=3000; export ERASE_DEBUG_CKPT_SLEEP_MS
    cluster_bg "$name" --watchdog "$wd"
    unset ERASE_DEBUG_CKPT_SLEEP_MS
    if wait_for 60 writing "$name"; then
        t0=$(now_ms)
        "$@"
        wait "$job"; rc=$?
        ms=$(($(now_ms) - t0))
    else
        kill "$job" 2>/dev/null; wait "$job"; rc=$?; ms=-1
        tap_report "$dir/$name.out"
    fi
}

# resume NAME: one TAP line: cluster NAME --resume auto continues from
# the newest checkpoint the failed run committed (ckpt-4, or ckpt-8 when
# the ranks on h2 had reported their parts written before they were lost:
# rank 0 publishes a checkpoint once every rank has, and the all-reduce
# of 4 ranks, recursive halving, gives rank 0 the result without a message
# back from h2) and ends bitwise equal to ref's ckpt-16.
resume() {
    left_ckpt=$(cd "$dir/$1" && ls ckpt-*.h5 | sort -t- -k2 -n | tail -n 1)
    cluster "$1" --resume auto
    tests/ckpt/ckpt-tool compare "$dir/ref/ckpt-16.h5" "$dir/$1/ckpt-16.h5" >"$dir/compare-$1.out" 2>&1
    c=$?
    case $left_ckpt in ckpt-4.h5 | ckpt-8.h5) ;; *) left_ckpt="(not ckpt-4 or ckpt-8: $left_ckpt)" ;; esac
    [ $rc = 0 ] && [ $c = 0 ] && grep -q "^resume from $dir/$1/$left_ckpt: " "$dir/$1.out"
    tap $? "after $1: --resume auto on 2 hosts x 2 ranks from $left_ckpt, ckpt-16 bitwise equal to the uninterrupted run's (status $rc)"
    grep '^resume from' "$dir/$1.out" | sed 's/^/# /'
    [ $rc = 0 ] || tap_report "$dir/$1.out"
    [ $c = 0 ] || tap_report "$dir/compare-$1.out"
}

# kill_h2: SIGKILL every process in h2 ($victims: their pids and names).
kill_h2() {
    victims=$(ip netns pids "$p-h2" | tr '\n' ' ')
    names=$(for v in $victims; do cat "/proc/$v/comm" 2>/dev/null; done | LC_ALL=C sort | tr '\n' ' ')
    # shellcheck disable=SC2086 # a list of pids
    kill -9 $victims
}

# 1. the reference: uninterrupted
cluster ref
[ $rc = 0 ] && [ -f "$dir/ref/ckpt-16.h5" ]
tap $? "uninterrupted run on 2 hosts x 2 ranks: ckpt-16 (status $rc)"
[ $rc = 0 ] || tap_report "$dir/ref.out"
grep '^  steps ' "$dir/ref.out" | sed 's/^/# unshaped:/'

# 2-4. every process of h2 (ranks 2 and 3, Open MPI's daemon, the launch
# agent's shell) SIGKILLed together while ckpt-8 is being written
fail_h2 kill 30 kill_h2
echo "# killed on h2: ${names:-}(pids ${victims:-}); mpirun ended ${ms} ms later, status $rc"
# Open MPI reports the daemon lost through its launch agent ("unable to
# reliably start") or through the out-of-band connection ("lost
# communication"), whichever it sees first; the watchdog (30 s) never fires
[ $ms -ge 0 ] && [ $rc != 0 ] && [ $rc != 124 ] && [ $rc != 137 ] &&
    grep -q -E '^ORTE (was unable to reliably start one or more daemons|has lost communication with a remote daemon)\.$' "$dir/kill.out" &&
    ! grep -q 'watchdog: ' "$dir/kill.out"
tap $? "h2's processes killed: Open MPI ends the job (status $rc), not the watchdog (30 s)"
grep -E '^ORTE |^  (HNP|Remote) daemon|watchdog: ' "$dir/kill.out" | sed 's/^/# /'
wait_for 10 none_left
tap $? "nothing left running in h1 or h2 ($(left | tr '\n' ' '))"

resume kill

# 5-7. h2 cut off (its link down: its processes live on, no connection is
# closed) while ckpt-8 is being written: mpirun loses h2's daemon through
# the keepalive (within 11 s: 5 s idle, then 3 probes 2 s apart); without
# it, mpirun waited for the daemon even after the ranks' watchdogs called
# MPI_Abort, until the timeout (120 s) killed it. The ranks' watchdog is at
# 20 s, past the keepalive's 11 s: at 10 s it won the race once under a
# loaded CI (mpirun ended 11.4 s after the cut, the watchdog's MPI_Abort
# first, without Open MPI's message)
fail_h2 cut 20 ip -n "$p-h2" link set eth0 down
echo "# h2's link down; mpirun ended ${ms} ms later, status $rc"
[ $ms -ge 0 ] && [ $rc != 0 ] && [ $rc != 124 ] && [ $rc != 137 ] &&
    grep -q '^ORTE has lost communication with a remote daemon\.$' "$dir/cut.out" &&
    grep -q -E '^  Remote daemon: \[\[[0-9]+,0\],1\] on node h2$' "$dir/cut.out"
tap $? "h2 cut off: the job ends (status $rc), Open MPI names the daemon lost on h2"
grep -E '^ORTE |^  (HNP|Remote) daemon|watchdog: ' "$dir/cut.out" | sed 's/^/# /'
wait_for 30 none_left
tap $? "nothing left running in h1 or h2 ($(left | tr '\n' ' '))"
"$hosts" up 2 >/dev/null # h2's link up again
resume cut

# 8-9. the NCCL-id file exchange with ranks on both hosts (dp 2 x pp 2: the
# world and each dp group span h1 and h2), in a folder both hosts see, then
# in a folder per host
ERASE_TEST_DIR=$dir/id ERASE_JOB_ID=hosts-fail-$$
export ERASE_TEST_DIR ERASE_JOB_ID
mkdir "$dir/id"
# id_exchange MODE ARGS...: the program on 2 hosts x 2 ranks, output in
# $dir/id-MODE.out; its exit status
id_exchange() {
    mode=$1; shift
    # shellcheck disable=SC2086 # $MPI_FLAGS are words
    MPIRUN=$MPIRUN timeout -k 5 120 "$hosts" mpirun $MPI_FLAGS -x ERASE_TEST_DIR -x ERASE_JOB_ID \
        --host h1:2,h2:2 tests/comm/test-id-exchange --pp 2 "$@" >"$dir/id-$mode.out" 2>&1
}
id_exchange shared
rc_shared=$?
id_exchange unshared --unshared
rc_unshared=$?
unset ERASE_TEST_DIR ERASE_JOB_ID
[ "$rc_shared" = 0 ] && grep -q '^1\.\.6$' "$dir/id-shared.out" && [ "$(grep -c '^ok ' "$dir/id-shared.out")" = 6 ] &&
    ! grep -q '^not ok' "$dir/id-shared.out"
tap $? "NCCL-id exchange across hosts, a shared folder: tests/comm/test-id-exchange's 6 checks pass (status $rc_shared)"
grep -E '^(not )?ok ' "$dir/id-shared.out" | sed 's/^/# /'
[ "$rc_shared" = 0 ] || tap_report "$dir/id-shared.out"
# the program checks the exact message; here: h2's ranks got it for world
want="NCCL id exchange: no id file $dir/id/h2/erase-nccl-world-hosts-fail-$$.id after 1 s (rank 0 of group world writes it; ERASE_NCCL_ID_DIR must be a directory shared by every rank)"
[ "$rc_unshared" = 0 ] && grep -q '^1\.\.2$' "$dir/id-unshared.out" && [ "$(grep -c '^ok ' "$dir/id-unshared.out")" = 2 ] &&
    ! grep -q '^not ok' "$dir/id-unshared.out" &&
    [ "$(grep -c -F "on h2, group world (rank 0 on h1): lib/comm/nccl_id.c:" "$dir/id-unshared.out")" = 2 ] &&
    [ "$(grep -c -F ": $want" "$dir/id-unshared.out")" = 2 ]
tap $? "a folder per host: the ranks on h2 fail naming the path and that the folder must be shared (status $rc_unshared)"
grep -E '^(not )?ok |^# rank' "$dir/id-unshared.out" | sed 's/^/# /'
[ "$rc_unshared" = 0 ] || tap_report "$dir/id-unshared.out"

# 10-15. links shaped to 1 Gbit/s, then 100 Mbit/s (htb: --delay needs tc
# netem, which this kernel may lack); the watchdog at 5 s would show a
# collective held up by the shaping
sent() { tc -s -n "$p-h$1" class show dev eth0 | sed -n 's/^ Sent \([0-9]*\) bytes.*/\1/p' | head -1; }
for rates in 1gbit:1Gbit 100mbit:100Mbit; do # as given : as tc shows it
    rate=${rates%:*}
    "$hosts" up 2 --rate "$rate" >/dev/null 2>"$dir/$rate.err"
    r=$?
    tc -n "$p-h2" class show dev eth0 >"$dir/$rate.class" 2>&1
    [ $r = 0 ] && grep -q "^class htb 1:1 root .*rate ${rates#*:} " "$dir/$rate.class"
    tap $? "up 2 --rate $rate: htb on each host's link (status $r)"
    cat "$dir/$rate.err" "$dir/$rate.class" | sed 's/^/# /'

    cluster "$rate" --watchdog 5 --metrics "$dir/$rate.jsonl"
    s1=$(sent 1); s2=$(sent 2)
    [ $rc = 0 ] && ! grep -q 'watchdog: ' "$dir/$rate.out" && [ "${s1:-0}" -gt 100000 ] && [ "${s2:-0}" -gt 100000 ]
    tap $? "2 hosts x 2 ranks on $rate links (status $rc; $s1 and $s2 bytes through h1's and h2's htb class): no watchdog"
    [ $rc = 0 ] || tap_report "$dir/$rate.out"
    # the margin: rank 0's longest interval between metrics lines (a step,
    # or a checkpoint) bounds its collectives' waits in the steps
    awk -F'"time":' 'NF > 1 { split($2, a, ","); t = a[1] + 0; if (n++ && t - last > m) m = t - last; last = t }
        END { printf "# longest interval between metrics lines %.3f s: the watchdog (5 s) is %.0fx that\n", m, (m > 0 ? 5 / m : 0) }' \
        "$dir/$rate.jsonl"
    grep '^  steps ' "$dir/$rate.out" | sed "s/^/# $rate:/"

    tests/ckpt/ckpt-tool compare "$dir/ref/ckpt-16.h5" "$dir/$rate/ckpt-16.h5" >"$dir/compare-$rate.out" 2>&1
    tap $? "$rate links: ckpt-16 bitwise equal to the unshaped run's"
    tap_report "$dir/compare-$rate.out"
done

# 16-17. a failed up (tc refuses the rate), then down: nothing of this
# prefix left (no namespace, no UTS folder, no mount)
"$hosts" up 2 --rate 5furlongs >/dev/null 2>"$dir/bad.err"
r1=$?
"$hosts" down >"$dir/down.out" 2>&1
r2=$?
grep -q "^hosts.sh: up: --rate '5furlongs' (tc htb) on $p-h1: " "$dir/bad.err" && [ $r1 = 1 ]
tap $? "up 2 --rate 5furlongs: refused (status $r1), naming the rate and the host"
tap_report "$dir/bad.err"
[ $r2 = 0 ] && ! ip netns list | grep -q "^$p-" && [ ! -e "/run/erase-hosts/$p" ] &&
    ! grep -q "/run/erase-hosts/$p" /proc/self/mountinfo
tap $? "down after it (status $r2): no namespace, UTS folder or mount of $p left ($(find "/run/erase-hosts/$p" -mindepth 1 2>/dev/null | tr '\n' ' '))"
tap_report "$dir/down.out"
