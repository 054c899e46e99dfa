# Sourced by the jobs (jobs/job.sh, jobs/slurm-train.sh): erase_paths TOP
# sets, for the jobs of TOP (erase's source tree, or the share folder of an
# installed erase, $prefix/share/erase, which has the jobs and data
# folders of the source tree but not jobs/setup: its programs are built):
#   erase_installed   0 in a source tree, 1 installed (make install)
#   erase_bin         the folder of the erase programs: in a source tree the
#                     build's, $ERASE_BUILD/apps (default TOP/_build/apps);
#                     installed, the bin folder of the same prefix
#                     (TOP/../../bin), else that of the erase-train on the PATH
#   erase_data_root   where the jobs keep data, checkpoints and metrics:
#                     $ERASE_DATA_ROOT, else TOP/_data in a source tree, and
#                     _data in the folder the job was started in when installed
# Returns 1, with a line on stderr, when an installed erase finds no programs.
# shellcheck shell=bash
erase_paths() {
    local top=$1
    if [ -f "$top/jobs/setup" ]; then
        erase_installed=0
        erase_bin=${ERASE_BUILD:-$top/_build}/apps
        erase_data_root=${ERASE_DATA_ROOT:-$top/_data}
        return 0
    fi
    erase_installed=1
    erase_data_root=${ERASE_DATA_ROOT:-$PWD/_data}
    if [ -x "$top/../../bin/erase-train" ]; then
        erase_bin=$(cd "$top/../../bin" && pwd)
    elif erase_bin=$(command -v erase-train); then
        erase_bin=$(dirname "$erase_bin")
    else
        echo "erase: no erase-train in $top/../../bin or on the PATH: put erase's bin folder on the PATH" >&2
        return 1
    fi
}
