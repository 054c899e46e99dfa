# Sourced by the drivers of tests/cluster (run from the top build directory):
# mpirun set-up, the tiny ctr model and train (tests/ckpt/ckpt.sh), a skip
# where namespaces cannot be made (not root, no ip, unshare, nsenter or tc),
# $hosts (tests/cluster/hosts.sh) and:
#   cluster_up NAME   2 hosts under the prefix NAME<pid> ($ERASE_HOSTS_PREFIX,
#                     also $p: other tests and users may have clusters up),
#                     `up`'s output in $dir/up.out, a scratch directory $dir;
#                     both removed at exit; skips (with up's message) where
#                     the hosts cannot be made (no veth or bridge)
#   criteo_sample     $dir/data (the shipped 9,999-line Criteo sample) and
#                     $dir/model.cfg (ctr_model); bails out if conversion fails
. "$(dirname "$0")/../ckpt/ckpt.sh"
[ "$(id -u)" = 0 ] || skip "needs root to make network namespaces (tests/cluster/hosts.sh)"
for c in ip unshare nsenter tc; do
    command -v $c >/dev/null 2>&1 || skip "no $c (Debian: iproute2, util-linux)"
done
unset ERASE_VERBOSE

hosts=$(cd "${srcdir:-.}/tests/cluster" && pwd)/hosts.sh

cluster_up() {
    ERASE_HOSTS_PREFIX=$1$$
    export ERASE_HOSTS_PREFIX
    # shellcheck disable=SC2034 # $p: for the drivers
    p=$ERASE_HOSTS_PREFIX
    workdir
    trap '"$hosts" down; rm -rf "$dir"' EXIT
    if ! "$hosts" up 2 >"$dir/up.out" 2>&1; then
        "$hosts" down
        skip "cannot make 2 hosts here: $(tr '\n' ' ' <"$dir/up.out")"
    fi
}

criteo_sample() {
    apps/erase-convert criteo -q -o "$dir/data" "${srcdir:-.}/data/criteo/kaggle-train-first9999.tsv" \
        >"$dir/convert.out" 2>&1 || { tap_report "$dir/convert.out"; echo "Bail out! erase-convert criteo failed"; exit 0; }
    ctr_model "$dir/model.cfg"
}
