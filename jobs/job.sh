# Sourced (without arguments) by the workstation jobs (jobs/workstation,
# jobs/mnist, jobs/shakespeare): sets top, build and ranks, takes a leading
# "--ranks N" off the job's arguments, sets erase up if needed (jobs/setup:
# quick when done) and defines job_mpirun ARGS... (mpirun with the flags a
# workstation needs, -np $ranks) and job_convert NAME LOG CMD... (run a
# conversion once, quietly, its log shown on failure).
top=$(cd "$(dirname "$0")/.." && pwd)
build=${ERASE_BUILD:-$top/_build}
ranks=2
if [ "${1:-}" = "--ranks" ]; then
    ranks=${2:-}
    case $ranks in '' | *[!0-9]* | 0) echo "jobs/$(basename "$0"): --ranks needs a number of ranks >= 1, got '$ranks'" >&2; exit 2 ;; esac
    shift 2
fi
ERASE_BUILD="$build" "$top/jobs/setup"

mpi_flags=(--oversubscribe --bind-to none)
if [ "$(id -u)" = 0 ]; then mpi_flags+=(--allow-run-as-root); fi
job_mpirun() { mpirun "${mpi_flags[@]}" -np "$ranks" "$@"; }

# job_convert WHAT LOG CMD...: "erase <job>: converting WHAT" on stderr, CMD
# with its output in LOG (shown, and the job stopped, when it fails).
job_convert() {
    local what=$1 log=$2
    shift 2
    mkdir -p "$top/_data"
    echo "erase $(basename "$0"): converting $what" >&2
    "$@" >"$log" 2>&1 || { cat "$log"; exit 1; }
}
