#!/bin/sh
# The manual pages (issue 37; man/local.mk): every program of apps/ has one,
# made from its --help, so that the options a page names are exactly those
# its program's --help prints (its commands' --help too, for erase-convert,
# erase-inspect, erase-tokenizer, erase-bench), examples included; each has
# the sections EXAMPLES, EXIT STATUS, ENVIRONMENT and FILES; mandoc -Tlint
# (warnings and above) and groff -ww report nothing; man -l renders it; and
# help2man makes the same page again from today's program. The comparison
# is shown to fail on a page with an option taken out.
. "$(dirname "$0")/../comm/mpi.sh"
srcdir=$(cd "$(dirname "$0")/../.." && pwd)
workdir
programs=$(for p in apps/erase-*; do [ -f "$p" ] && [ -x "$p" ] && basename "$p"; done)
[ -n "$programs" ] || skip "no programs built in apps/"
n=$(echo $programs | wc -w)
echo "1..$((n * 6 + 1))"

# options TEXT-FILE: the long options named in it, one a line, sorted
options() { grep -o -- '--[a-z0-9][a-z0-9-]*' "$1" | sed 's/-*$//' | sort -u; }
# help_text PROGRAM: its --help and each of its commands' --help
help_text() {
    "apps/$1" --help
    for c in $("apps/$1" --help | awk 'NR > 1 && /^  [a-z][a-z0-9-]*  +[^ ]/ { print $1 }'); do
        "apps/$1" "$c" --help
    done
}
# page_text PAGE: the roff source as text (\- and font changes undone)
page_text() { sed -e 's/\\-/-/g' -e 's/\\f[BIRP]//g' -e 's/\\(co//g' "$1"; }
# same_options PROGRAM PAGE: the page names exactly the options of the
# program's help; a difference is shown in $dir/diff
same_options() {
    help_text "$1" >"$dir/help" 2>&1 && page_text "$2" >"$dir/page" &&
        options "$dir/help" >"$dir/help.opts" && options "$dir/page" >"$dir/page.opts" &&
        diff "$dir/help.opts" "$dir/page.opts" >"$dir/diff"
}

for p in $programs; do
    page=man/$p.1
    if [ ! -f "$page" ]; then
        for i in 1 2 3 4 5 6; do tap 1 "$p: no page $page (add it to man/local.mk and write man/$p.h2m)"; done
        continue
    fi
    same_options "$p" "$page"
    rc=$?; [ $rc = 0 ] || { echo "# < only in --help, > only in the page:"; tap_report "$dir/diff"; }
    tap $rc "$p: the page names exactly the options of --help ($(wc -l <"$dir/help.opts") options)"

    missing=
    for s in NAME SYNOPSIS DESCRIPTION EXAMPLES "EXIT STATUS" ENVIRONMENT FILES "SEE ALSO"; do
        grep -q "^\.SH \"*$s\"*\$" "$page" || missing="$missing $s"
    done
    [ -z "$missing" ]; rc=$?; [ $rc = 0 ] || echo "# missing sections:$missing"
    tap $rc "$p: the page has every section"

    if command -v mandoc >/dev/null; then
        mandoc -Tlint -W warning "$page" >"$dir/lint" 2>&1
        [ ! -s "$dir/lint" ]; rc=$?; tap_report "$dir/lint"
        tap $rc "$p: mandoc -Tlint -W warning reports nothing"
    else
        echo "ok $((tap_n += 1)) # SKIP $p: no mandoc (Debian: mandoc, in jobs/debian-packages-test)"
    fi
    if command -v groff >/dev/null; then
        groff -ww -z -man "$page" >"$dir/groff" 2>&1
        [ ! -s "$dir/groff" ]; rc=$?; tap_report "$dir/groff"
        tap $rc "$p: groff -ww -z -man reports nothing"
    else
        echo "ok $((tap_n += 1)) # SKIP $p: no groff (Debian: groff-base, with man-db)"
    fi

    if command -v man >/dev/null; then
        MANWIDTH=80 man -l "$page" >"$dir/man" 2>"$dir/man.err"
        rc=$?; [ ! -s "$dir/man.err" ] || rc=1; tap_report "$dir/man.err"
        grep -q "^NAME" "$dir/man" && grep -q "^ *$p  *- " "$dir/man" || rc=1
        tap $rc "$p: man -l renders it (NAME: $(grep -m1 "^ *$p  *- " "$dir/man" | sed "s/^ *//; s/  */ /g"))"
    else
        echo "ok $((tap_n += 1)) # SKIP $p: no man (Debian: man-db, in jobs/debian-packages-test)"
    fi

    if command -v help2man >/dev/null; then
        help2man --no-info --section=1 --source=erase --manual='erase manual' \
            --include="$srcdir/man/$p.h2m" --include="$srcdir/man/common.h2m" \
            --output="$dir/again.1" "sh $srcdir/man/help-for-man apps/$p" >"$dir/h2m.err" 2>&1
        grep -v '^\.TH' "$page" >"$dir/built" && grep -v '^\.TH' "$dir/again.1" >"$dir/again"
        diff "$dir/built" "$dir/again" >"$dir/diff"; rc=$?; tap_report "$dir/h2m.err"; tap_report "$dir/diff"
        tap $rc "$p: help2man makes the same page from today's program"
    else
        echo "ok $((tap_n += 1)) # SKIP $p: no help2man"
    fi
done

# the comparison fails on a page without one of the options (--raw of erase-sample)
if [ -f man/erase-sample.1 ]; then
    grep -v -- 'raw' man/erase-sample.1 >"$dir/cut.1"
    same_options erase-sample "$dir/cut.1"
    rc=$?
    [ $rc != 0 ] && grep -qx '< --raw' "$dir/diff"
    tap $? "a page without erase-sample's --raw is found out (< --raw)"
else
    tap 1 "no man/erase-sample.1"
fi
