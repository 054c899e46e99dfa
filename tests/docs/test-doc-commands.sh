#!/bin/sh
# The manual cannot rot (issue 37): every ```sh block of README.md and
# docs/*.md runs as written, in file order, one TAP line per block named
# FILE:LINE (failing with the block's exit status and its output's last
# lines); a block whose first line is "# not run by tests: REASON" is
# reported as a SKIP with its reason, and one without a reason fails. Each
# file's blocks share a scratch directory of their own, set up as a
# checkout (data/, jobs/, bench/, tests/ of the source tree, _build of this
# build) with the build's programs on the PATH, so a page's first blocks
# make the _data its later blocks use. Then, per file (and in jobs/README.md
# and bench/RESULTS.md), every relative link [text](target) must name an
# existing file and, with #anchor, a heading of it. The blocks and links
# are read by tests/docs/doc_blocks.py.
. "$(dirname "$0")/../comm/mpi.sh"
for program in erase-train erase-convert erase-inspect erase-score erase-sample erase-bench erase-tokenizer; do
    need "apps/$program"
done
command -v python3 >/dev/null 2>&1 || skip "no python3 to read the markdown"
build=$(pwd)
top=$(cd "${srcdir:-.}" && pwd)
workdir
mkdir "$dir/blocks" "$dir/run"

cd "$top" || exit 99
files="README.md $(ls docs/*.md)"
# shellcheck disable=SC2086 # the file names have no spaces
python3 tests/docs/doc_blocks.py blocks "$dir/blocks" $files >"$dir/list" || exit 99
# Links are checked in these files and in the other markdown a user reads.
link_files="$files jobs/README.md bench/RESULTS.md"
echo "1..$(($(wc -l <"$dir/list") + $(echo "$link_files" | wc -w)))"

# Commands are written for a workstation: mpirun -np 4 on 2 cores, as root in CI.
PATH="$build/apps:$PATH"
OMPI_MCA_rmaps_base_oversubscribe=1 OMPI_MCA_hwloc_base_binding_policy=none
export PATH OMPI_MCA_rmaps_base_oversubscribe OMPI_MCA_hwloc_base_binding_policy

# scratch FILE: the directory FILE's blocks run in, made on first use.
scratch() {
    s="$dir/run/$(echo "$1" | tr / _)"
    if [ ! -d "$s" ]; then
        mkdir "$s"
        for d in data jobs bench tests; do ln -s "$top/$d" "$s/$d"; done
        ln -s "$build" "$s/_build"
    fi
    echo "$s"
}

tab=$(printf '\t')
while IFS="$tab" read -r k where what; do
    case $what in
    run)
        s=$(scratch "${where%%:*}")
        t0=$(date +%s)
        (cd "$s" && timeout -k 5 300 sh -e "$dir/blocks/$k.sh") </dev/null >"$dir/out.$k" 2>&1
        rc=$?
        tap $rc "$where: the block runs"
        echo "# $(($(date +%s) - t0)) s"
        if [ $rc != 0 ]; then
            echo "# exit status $rc (124: past 300 s); the block:"
            sed 's/^/#   /' "$dir/blocks/$k.sh"
            echo "# its output's last lines:"
            tail -n 20 "$dir/out.$k" | sed 's/^/# /'
        fi
        ;;
    skip*)
        tap_n=$((tap_n + 1))
        echo "ok $tap_n - $where # SKIP ${what#skip }"
        ;;
    *)
        tap 1 "$where: ${what#bad }"
        ;;
    esac
done <"$dir/list"

for f in $link_files; do
    python3 tests/docs/doc_blocks.py links "$f" >"$dir/links" 2>&1
    rc=$?
    [ $rc = 0 ] && [ ! -s "$dir/links" ]
    tap $? "$f: every relative link names an existing file and heading"
    [ -s "$dir/links" ] && tap_report "$dir/links"
done
exit 0
