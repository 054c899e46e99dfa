#!/bin/sh
# Several hosts on one machine (tests/cluster/hosts.sh, issue 18): 2 hosts
# as network and UTS namespaces, Open MPI launching across them without ssh
# and talking TCP between them. erase-train ctr on the shipped Criteo sample
# on 2 hosts x 2 ranks ends with parameters bitwise equal to 1 host x 4
# ranks, and its start-up lines show 2 hosts with local ranks 0-1 on each;
# so do mlp, gpt and a gpt pipeline (--pp 2 x dp 2).
# Skipped where namespaces cannot be made (not root, no veth or bridge).
# the hosts, the skips, the data (tests/cluster/cluster.sh)
. "$(dirname "$0")/cluster.sh"
cluster_up erase-t
echo "1..12"

# 1. the hosts: names, addresses, nothing in the root namespace; idempotent
ino=$(stat -L -c %i "/run/netns/$p-h1")
"$hosts" up 2 >"$dir/up2.out" 2>&1
printf 'h1 10.77.0.1 %s-h1\nh2 10.77.0.2 %s-h2\n' "$p" "$p" >"$dir/up.want"
"$hosts" exec h2 'echo $(hostname) $(ip -o -4 addr show dev eth0 | sed "s/.* inet \([^ ]*\) .*/\1/")' >"$dir/h2.out" 2>&1
cmp -s "$dir/up.want" "$dir/up.out" && cmp -s "$dir/up.want" "$dir/up2.out" &&
    [ "$(stat -L -c %i "/run/netns/$p-h1")" = "$ino" ] && [ "$(cat "$dir/h2.out")" = "h2 10.77.0.2/24" ] &&
    [ "$(hostname)" != h2 ] && ! ip -o addr show | grep -q ' 10\.77\.0\.'
tap $? "up 2 (twice: the same namespaces): h1 and h2 with their host names and addresses, none in the root namespace"
tap_report "$dir/up2.out"
tap_report "$dir/h2.out"

# 2. shaping: --rate alone is htb (a second up changes the rate); --delay
# is netem, or refused where the kernel has none; a later up without them
# removes it
"$hosts" up 2 --rate 100mbit >/dev/null 2>"$dir/rate.err"
"$hosts" up 2 --rate 1gbit >/dev/null 2>>"$dir/rate.err"
r1=$?
tc -n "$p-h1" class show dev eth0 >"$dir/rate.out" 2>&1
"$hosts" up 2 --delay 200us >/dev/null 2>"$dir/delay.err"
r2=$?
tc -n "$p-h2" qdisc show dev eth0 >"$dir/delay.out" 2>&1
"$hosts" up 2 >/dev/null 2>&1
tc -n "$p-h1" qdisc show dev eth0 >"$dir/none.out" 2>&1
if [ $r2 = 0 ]; then
    grep -q '^qdisc netem .* delay 200us' "$dir/delay.out"
else
    [ $r2 = 1 ] && [ "$(cat "$dir/delay.err")" = "hosts.sh: up: --delay 200us: this kernel has no tc netem (CONFIG_NET_SCH_NETEM); --rate alone works with htb" ]
fi
d=$?
[ $r1 = 0 ] && grep -q '^class htb 1:1 root .*rate 1Gbit ' "$dir/rate.out" && [ $d = 0 ] &&
    ! grep -q -E 'htb|netem' "$dir/none.out"
tap $? "up --rate 100mbit, then --rate 1gbit: htb at 1gbit on each host's link (status $r1); --delay 200us: netem or refused with the reason (status $r2); up alone: removed"
cat "$dir/rate.err" "$dir/rate.out" "$dir/delay.err" "$dir/delay.out" | sed 's/^/# /'

# 3. usage errors: status 2 and the reason
"$hosts" up 0 >/dev/null 2>"$dir/usage.err"
r1=$?
"$hosts" exec h3 true >/dev/null 2>>"$dir/usage.err"
r2=$?
cat >"$dir/usage.want" <<EOF
hosts.sh: up '0': expected a number of hosts in [1, 254]
usage: hosts.sh [--prefix P] up N [--delay D] [--rate R] | down | exec HOST CMD... | mpirun ARGS...
hosts.sh: exec: host h3 is not up (namespace $p-h3; run: hosts.sh --prefix $p up N)
EOF
[ $r1 = 2 ] && [ $r2 = 1 ] && cmp -s "$dir/usage.want" "$dir/usage.err"
tap $? "up 0: usage error (status $r1); exec on a host that is not up: status $r2, the host and how to make it"
tap_report "$dir/usage.err"

# 4-7. erase-train ctr, 10 steps of 64 samples per rank, on 1 host x 4 ranks
# and on 2 hosts x 2 ranks
criteo_sample
ERASE_VERBOSE=1 # the start-up line of every rank
export ERASE_VERBOSE
out=$dir/one.out
train 4 --batch 64 --steps 10 --checkpoint-dir "$dir/one"
[ $rc = 0 ] && grep -q '^\[rank 0 [^]]*\] erase: world of 4 ranks on 1 host (dp 4 x pp 1),' "$dir/one.out"
tap $? "1 host x 4 ranks (status $rc)"
[ $rc = 0 ] || tap_report "$dir/one.out"

# shellcheck disable=SC2086 # $MPI_FLAGS are words
MPIRUN=$MPIRUN timeout -k 5 120 "$hosts" mpirun $MPI_FLAGS --host h1:2,h2:2 \
    apps/erase-train --train "$dir/data" --model "$dir/model.cfg" --device cpu --quiet --batch 64 --steps 10 \
    --checkpoint-dir "$dir/two" >"$dir/two.out" 2>&1
rc=$?
unset ERASE_VERBOSE
grep -E '^\[rank [0-9] ' "$dir/two.out" | grep -v '\] device: ' >"$dir/two.lines"
cat >"$dir/two.want" <<'EOF'
[rank 0 h1] erase: rank 0 of 4, local rank 0 of 2, dp rank 0 of 4
[rank 0 h1] erase: world of 4 ranks on 2 hosts (dp 4 x pp 1)
[rank 1 h1] erase: rank 1 of 4, local rank 1 of 2, dp rank 1 of 4
[rank 2 h2] erase: rank 2 of 4, local rank 0 of 2, dp rank 2 of 4
[rank 3 h2] erase: rank 3 of 4, local rank 1 of 2, dp rank 3 of 4
EOF
startup_lines <"$dir/two.lines" >"$dir/two.got"
[ $rc = 0 ] && cmp -s "$dir/two.want" "$dir/two.got"
tap $? "2 hosts x 2 ranks (status $rc): the start-up lines show 2 hosts, ranks 0-1 on h1 and 2-3 on h2 with local ranks 0-1"
[ $rc = 0 ] || tap_report "$dir/two.out"
tap_report "$dir/two.lines"

grep -q '^erase-train: 4 ranks on 2 hosts (rank 0 on h1)$' "$dir/two.out"
tap $? "the summary's first line: 4 ranks on 2 hosts (rank 0 on h1)"
grep '^erase-train: ' "$dir/two.out" | sed 's/^/# /'

tests/ckpt/ckpt-tool compare "$dir/one/ckpt-10.h5" "$dir/two/ckpt-10.h5" >"$dir/compare.out" 2>&1
tap $? "2 hosts x 2 ranks end bitwise equal to 1 host x 4 ranks (parameters, optimizer, cursor)"
tap_report "$dir/compare.out"

# 8-10. every model and a pipeline: 1 host x 4 ranks against 2 hosts x 2
# ranks, the final checkpoints bitwise equal (mlp on MNIST, gpt on
# tinyshakespeare data parallel, gpt --pp 2 x dp 2 with 1f1b: the ranks
# mapped by node, h1 0 and 2, h2 1 and 3, so each stage group (consecutive
# ranks) spans both hosts: activations and gradients cross them)
setup_mnist "$dir/mlp.cfg"
setup_gpt "$dir/gpt.cfg" 'tie_head = false;'
# across MODEL DATA NAME ARGS...: both runs of ARGS, 8 steps, the check NAME
# ($map: mpirun's mapping of the 2-host run)
across() {
    model=$1 data=$2 name=$3; shift 3
    set -- --train "$data" --model "$dir/$model.cfg" --device cpu --quiet --steps 8 --checkpoint-every 8 "$@"
    # shellcheck disable=SC2086 # $MPI_FLAGS are words
    timeout -k 5 120 "$MPIRUN" $MPI_FLAGS -np 4 apps/erase-train "$@" --checkpoint-dir "$dir/$name-one" \
        >"$dir/$name-one.out" 2>&1
    r1=$?
    # shellcheck disable=SC2086
    MPIRUN=$MPIRUN timeout -k 5 120 "$hosts" mpirun $MPI_FLAGS --host h1:2,h2:2 $map apps/erase-train "$@" \
        --checkpoint-dir "$dir/$name-two" >"$dir/$name-two.out" 2>&1
    r2=$?
    files=ckpt-8.h5
    [ -e "$dir/$name-one/ckpt-8.h5.stage1" ] && files="$files ckpt-8.h5.stage1"
    ok=1
    for f in $files; do
        tests/ckpt/ckpt-tool compare "$dir/$name-one/$f" "$dir/$name-two/$f" >>"$dir/$name.compare" 2>&1 || ok=0
    done
    [ $r1 = 0 ] && [ $r2 = 0 ] && [ $ok = 1 ]
    tap $? "$name: 2 hosts x 2 ranks end bitwise equal to 1 host x 4 ranks ($files; status $r1, $r2)"
    [ $r1 = 0 ] || tap_report "$dir/$name-one.out"
    [ $r2 = 0 ] || tap_report "$dir/$name-two.out"
    tap_report "$dir/$name.compare"
}
map=
across mlp "$dir/mnist/train" mlp --batch 16 --optimizer adamw --lr 0.002
across gpt "$dir/text/train" gpt --batch 4 --optimizer adamw --lr 0.003
map="--map-by node"
ERASE_VERBOSE=1 across gpt "$dir/text/train" gpt-pp2 --pp 2 --schedule 1f1b --global-batch 16 --micro-batches 2 --optimizer adamw \
    --lr 0.003
grep -E '^\[rank [0-9] h[12]\] erase: rank [0-9] of 4, ' "$dir/gpt-pp2-two.out" | sed 's/^/# /'

# 11-12. down: nothing of this prefix left; idempotent
"$hosts" down >"$dir/down.out" 2>&1
r1=$?
"$hosts" down >>"$dir/down.out" 2>&1
r2=$?
[ $r1 = 0 ] && [ $r2 = 0 ] && ! ip netns list | grep -q "^$p-" && [ ! -e "/run/erase-hosts/$p" ] &&
    ! grep -q "/run/erase-hosts/$p" /proc/self/mountinfo
tap $? "down (twice: status $r1, $r2): no namespace, UTS file or mount of $p left"
tap_report "$dir/down.out"
"$hosts" exec h1 true 2>"$dir/gone.err"
[ $? = 1 ] && [ "$(cat "$dir/gone.err")" = "hosts.sh: exec: host h1 is not up (namespace $p-h1; run: hosts.sh --prefix $p up N)" ]
tap $? "exec after down: refused, the host named"
tap_report "$dir/gone.err"
