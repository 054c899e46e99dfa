#!/bin/sh
# make install (issue 37; docs/install.md): `make install DESTDIR=D
# prefix=/usr/local` from the build tree, then the installed erase alone,
# from a folder outside the source and build trees with the installed bin
# first on the PATH: every program's --version and --help; a conversion of
# the installed Criteo sample and a short training run on it; the installed
# workstation job's --help and a run of it on 2 ranks, which finds the
# installed programs and data without a source tree; man -l and man NAME of
# every installed page; pkg-config's erase.pc (valid, its version) and a
# program built with `pkg-config --cflags --libs erase` alone that
# multiplies two matrices with the installed liberase.a (tests/apps/
# install-check.c: 58 64 139 154), and a file including every installed
# header; then make uninstall leaves no file behind.
. "$(dirname "$0")/../comm/mpi.sh"
srcdir=$(cd "$(dirname "$0")/../.." && pwd)
builddir=$PWD
need apps/erase-train
command -v pkg-config >/dev/null || skip "no pkg-config"
workdir
dest=$dir/root root=$dir/root/usr/local
programs=$(for p in apps/erase-*; do [ -f "$p" ] && [ -x "$p" ] && basename "$p"; done)
version=$(sed -n 's/^PACKAGE_VERSION = //p' Makefile)
cc=$(sed -n 's/^CC = //p' Makefile)
n=$(echo $programs | wc -w)
echo "1..$((n * 3 + 11))"

${MAKE:-make} install DESTDIR="$dest" prefix=/usr/local >"$dir/install.out" 2>&1
rc=$?; [ $rc = 0 ] || tail -20 "$dir/install.out" | tap_report /dev/stdin
tap $rc "make install DESTDIR=... prefix=/usr/local"

mkdir "$dir/away" && cd "$dir/away" || exit 99
PATH=$root/bin:$PATH; export PATH
for p in $programs; do
    out=$("$p" --version 2>&1); rc=$?
    [ "$(command -v "$p")" = "$root/bin/$p" ] && [ "$out" = "$p (erase) $version" ] || rc=1
    tap $rc "$p --version from the installed bin: '$out'"
    "$p" --help >"$dir/help" 2>&1; rc=$?
    grep -q "^usage: .*$p" "$dir/help" || rc=1
    tap $rc "$p --help: status 0, its usage line"
done

erase-convert criteo -q -o data "$root/share/erase/data/criteo/kaggle-train-first9999.tsv" >"$dir/convert.out" 2>&1 &&
    erase-train --train data --steps 3 --batch 64 --eval-fraction 0.2 --quiet >"$dir/train.out" 2>&1
rc=$?; tap_report "$dir/convert.out"; grep -q '^  steps  *3 ' "$dir/train.out" || { rc=1; tap_report "$dir/train.out"; }
tap $rc "the installed sample converted and trained on for 3 steps by the installed programs"

"$root/share/erase/jobs/workstation" --help >"$dir/job.help" 2>&1
rc=$?; grep -q '^The main job on a workstation' "$dir/job.help" || { rc=1; tap_report "$dir/job.help"; }
tap $rc "the installed jobs/workstation --help: its description, status 0"

ERASE_MPIRUN=$MPIRUN "$root/share/erase/jobs/workstation" --steps 3 --batch 64 >"$dir/job.out" 2>&1
rc=$?
{ grep -q '^  steps  *3 ' "$dir/job.out" && [ -f _data/criteo-sample/index.txt ]; } || { rc=1; tap_report "$dir/job.out"; }
tap $rc "the installed jobs/workstation trains on 2 ranks, its data in ./_data, without the source tree"

for p in $programs; do
    if ! command -v man >/dev/null; then
        echo "ok $((tap_n += 1)) # SKIP $p: no man (Debian: man-db, in jobs/debian-packages-test)"
        continue
    fi
    MANWIDTH=80 man -l "$root/share/man/man1/$p.1" >"$dir/man" 2>"$dir/man.err"
    rc=$?; [ -s "$dir/man.err" ] && { rc=1; tap_report "$dir/man.err"; }
    MANPATH=$root/share/man man "$p" 2>/dev/null | grep -q "^NAME" || rc=1
    grep -q "^EXAMPLES" "$dir/man" || rc=1
    tap $rc "man -l and man $p (MANPATH=\$prefix/share/man) render the installed page"
done

pkg() { pkg-config --define-variable=prefix="$root" "$@" erase; }
PKG_CONFIG_PATH=$root/lib/pkgconfig; export PKG_CONFIG_PATH
out=$(pkg --modversion 2>&1); rc=$?
[ "$out" = "$version" ] || rc=1
pkg-config --validate erase >"$dir/validate" 2>&1 || { rc=1; tap_report "$dir/validate"; }
grep -qx "prefix=/usr/local" "$root/lib/pkgconfig/erase.pc" || rc=1
tap $rc "pkg-config: erase.pc valid, version $out, prefix /usr/local"
(cd "$builddir" && ${MAKE:-make} install-data-local DESTDIR="$dir/other" prefix=/opt/erase) >"$dir/other.out" 2>&1
[ "$(PKG_CONFIG_PATH=$dir/other/opt/erase/lib/pkgconfig pkg-config --variable=libdir erase)" = /opt/erase/lib ] &&
    [ "$(PKG_CONFIG_PATH=$dir/other/opt/erase/lib/pkgconfig pkg-config --cflags-only-I erase | cut -d' ' -f1)" = -I/opt/erase/include/erase ]
rc=$?; [ $rc = 0 ] || tap_report "$dir/other.out"
tap $rc "make install prefix=/opt/erase after a build for /usr/local: erase.pc says /opt/erase"

# shellcheck disable=SC2046 # pkg-config's words
$cc -std=gnu11 -Wall -Wextra -Werror -o "$dir/install-check" "$srcdir/tests/apps/install-check.c" \
    $(pkg --cflags --libs) >"$dir/cc.out" 2>&1 && "$dir/install-check" >"$dir/check.out" 2>&1
rc=$?; tap_report "$dir/cc.out"; tap_report "$dir/check.out"
[ "$(cat "$dir/check.out")" = "58 64 139 154" ] || rc=1
tap $rc "a program built with pkg-config --cflags --libs erase alone multiplies with the installed library: $(cat "$dir/check.out")"

(cd "$root/include/erase" && find . -name '*.h' | sed 's|^\./|#include "|; s|$|"|') >"$dir/all.c"
echo 'int main(void) { return 0; }' >>"$dir/all.c"
count=$(grep -c include "$dir/all.c")
$cc -std=gnu11 -Wall -Wextra -Werror -o "$dir/all" "$dir/all.c" $(pkg --cflags --libs) >"$dir/all.out" 2>&1
rc=$?; tap_report "$dir/all.out"; [ "$count" -gt 10 ] || rc=1
tap $rc "every installed header ($count) compiles on its own include path"

cd "$builddir" || exit 99
${MAKE:-make} uninstall DESTDIR="$dest" prefix=/usr/local >"$dir/uninstall.out" 2>&1
rc=$?; find "$dest" -type f >"$dir/left"
[ -s "$dir/left" ] && { rc=1; tap_report "$dir/left"; }
tap $rc "make uninstall removes every file it installed"

# the job scripts in a source tree still run the build's programs
(. "$srcdir/jobs/paths.sh"; ERASE_BUILD=$builddir erase_paths "$srcdir" && echo "$erase_installed $erase_bin") >"$dir/paths" 2>&1
[ "$(cat "$dir/paths")" = "0 $builddir/apps" ]; rc=$?; tap_report "$dir/paths"
tap $rc "jobs/paths.sh in the source tree: the build's programs ($builddir/apps)"
(mkdir -p "$dir/share/erase/jobs" "$dir/bin" && cd "$dir/share/erase" && PATH=/usr/bin:/bin; . "$srcdir/jobs/paths.sh"; erase_paths "$dir/share/erase") >"$dir/paths" 2>&1
rc=$?; [ $rc != 0 ] && grep -q "no erase-train in $dir/share/erase/../../bin or on the PATH" "$dir/paths"
tap $? "jobs/paths.sh of an install without programs: status 1, one line saying where it looked"
