# Sourced (without arguments) by the workstation jobs (jobs/workstation,
# jobs/mnist, jobs/shakespeare, jobs/nanochat): sets top, build, bin (where the programs
# are: jobs/paths.sh), data_root and ranks, takes the
# launcher options below off the front of the job's arguments, sets erase up
# if needed (jobs/setup: quick when done) and defines job_mpirun ARGS...
# (mpirun with the flags a workstation needs, -np $ranks, and the hosts)
# and job_convert NAME LOG CMD... (run a conversion once, quietly, its log
# shown on failure).
#   -h, --help         the job's comment (what it does, its options), exit 0
#   --ranks N          ranks (default 2, or the slots of --hosts/--hostfile)
#   --hosts LIST       mpirun --host LIST (node1:4,node2:4; a host without
#                      :N has one slot): the ranks across several hosts
#   --hostfile FILE    mpirun --hostfile FILE (lines "node1 slots=4")
#   --net CIDR         the network between the hosts (e.g. 10.0.0.0/24):
#                      Open MPI's TCP messages and out-of-band channel on it,
#                      shared memory within a host (not with hosts.sh mpirun
#                      as ERASE_MPIRUN: it names its network itself)
# ERASE_MPIRUN replaces the launcher command (default: mpirun), e.g.
# "tests/cluster/hosts.sh mpirun" for the namespace hosts of the tests.
# ERASE_DATA_ROOT: where the jobs keep their data, checkpoints and metrics
# ($data_root; default _data of the source tree, or of the current folder
# for an installed erase). ERASE_SKIP_SETUP=1: run the programs of
# $ERASE_BUILD as they are, without jobs/setup (the tests, inside make check).
top=$(cd "$(dirname "$0")/.." && pwd)
build=${ERASE_BUILD:-$top/_build}
. "$top/jobs/paths.sh"
erase_paths "$top" || exit 1
bin=$erase_bin data_root=$erase_data_root
job_usage() { echo "jobs/$(basename "$0"): $*" >&2; exit 2; }
ranks='' hosts_args=() net_args=()
while [ $# -gt 0 ]; do
    case $1 in
        -h | --help) # the job's own comment at its top, without the '#'s
            sed -n '2,/^[^#]/s/^# \{0,1\}//p' "$0"
            exit 0 ;;
        --ranks)
            ranks=${2:-}
            case $ranks in '' | *[!0-9]* | 0) job_usage "--ranks needs a number of ranks >= 1, got '$ranks'" ;; esac
            shift 2 ;;
        --hosts)
            [ ${#hosts_args[@]} = 0 ] || job_usage "give one of --hosts and --hostfile, once"
            [[ ${2:-} =~ ^[A-Za-z0-9][A-Za-z0-9._-]*(:[1-9][0-9]*)?(,[A-Za-z0-9][A-Za-z0-9._-]*(:[1-9][0-9]*)?)*$ ]] ||
                job_usage "--hosts needs HOST[:SLOTS],... (e.g. node1:4,node2:4), got '${2:-}'"
            hosts_args=(--host "$2")
            slots=0
            for h in ${2//,/ }; do
                case $h in *:*) slots=$((slots + ${h##*:})) ;; *) slots=$((slots + 1)) ;; esac
            done
            shift 2 ;;
        --hostfile)
            [ ${#hosts_args[@]} = 0 ] || job_usage "give one of --hosts and --hostfile, once"
            { [ -n "${2:-}" ] && [ -r "$2" ]; } || job_usage "--hostfile needs a readable hostfile, got '${2:-}'"
            hosts_args=(--hostfile "$2")
            # "node slots=N" (a line without slots= has one); comments and blank lines skipped
            slots=$(sed 's/#.*//' "$2" | awk 'NF { n = 1; for (i = 2; i <= NF; i++) if ($i ~ /^slots=[0-9]+$/) n = substr($i, 7); s += n } END { print s + 0 }')
            [ "$slots" -gt 0 ] || job_usage "--hostfile $2: no hosts in it"
            shift 2 ;;
        --net)
            [[ ${2:-} =~ ^[0-9]+\.[0-9]+\.[0-9]+\.[0-9]+/[0-9]+$ ]] ||
                job_usage "--net needs the hosts' network as ADDRESS/BITS (e.g. 10.0.0.0/24), got '${2:-}'"
            # shellcheck disable=SC2054 # tcp,self,vader is one word
            net_args=(--mca btl tcp,self,vader --mca btl_tcp_if_include "$2" --mca oob_tcp_if_include "$2")
            shift 2 ;;
        *) break ;;
    esac
done
[ -n "$ranks" ] || ranks=${slots:-2}
# an installed erase (make install) has no jobs/setup: its programs are built
[ "${ERASE_SKIP_SETUP:-0}" = 1 ] || [ "$erase_installed" = 1 ] || ERASE_BUILD="$build" "$top/jobs/setup"

mpi_flags=(--oversubscribe --bind-to none)
if [ "$(id -u)" = 0 ]; then mpi_flags+=(--allow-run-as-root); fi
# erase-train's usage errors (an unknown option, a bad value) are found
# before mpirun (ERASE_CHECK_OPTIONS: apps/erase-train.c): their one line,
# status 2, without Open MPI's banners around it
job_mpirun() {
    case ${1##*/} in erase-train) ERASE_CHECK_OPTIONS=$ranks "$@" || exit $? ;; esac
    job_launcher
    "${launcher[@]}" "$@"
}
# job_launcher: sets launcher, the words job_mpirun puts before the program
# (for a job that runs it in the background, e.g. to pass signals on)
job_launcher() {
    # shellcheck disable=SC2206 # ERASE_MPIRUN: a command and its words
    launcher=(${ERASE_MPIRUN:-mpirun} "${mpi_flags[@]}" -np "$ranks" "${hosts_args[@]}" "${net_args[@]}")
}

# job_convert WHAT LOG CMD...: "erase <job>: converting WHAT" on stderr, CMD
# with its output in LOG (shown, and the job stopped, when it fails).
job_convert() {
    local what=$1 log=$2
    shift 2
    mkdir -p "$data_root"
    echo "erase $(basename "$0"): converting $what" >&2
    "$@" >"$log" 2>&1 || { cat "$log"; exit 1; }
}

# job_data_args DATA CKPT ARGS...: the data and checkpoint options of a job
# whose shards are DATA/train and DATA/eval and whose checkpoints go to CKPT,
# given the erase-train ARGS of its command line: sets train_args and
# eval_args (empty when ARGS give --train or --eval: a repeated one would
# add to the shipped one), ckpt (the checkpoint folder the sampling step
# reads: ARGS' --checkpoint-dir, either spelling, else CKPT) and ckpt_args
# (--checkpoint-dir CKPT, or empty when ARGS give one).
job_data_args() {
    local data=$1 a prev=''
    ckpt=$2
    shift 2
    train_args=(--train "$data/train") eval_args=(--eval "$data/eval") ckpt_args=(--checkpoint-dir "$ckpt")
    for a in "$@"; do
        case $a in
            --train | --train=*) train_args=() ;;
            --eval | --eval=*) eval_args=() ;;
            --checkpoint-dir=*) ckpt=${a#--checkpoint-dir=} ckpt_args=() ;;
        esac
        if [ "$prev" = --checkpoint-dir ]; then ckpt=$a ckpt_args=(); fi
        prev=$a
    done
}
