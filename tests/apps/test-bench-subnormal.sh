#!/bin/sh
# erase-bench subnormal (what it reports, not how fast): a short run prints
# the device line with "flush-to-zero on", progress lines, the early and
# late windows and the late/early ratios; ERASE_FTZ=0 says
# "flush-to-zero off (ERASE_FTZ=0)"; ERASE_FTZ=yes is refused with the
# device's reason; an unreachable --min-ratio exits 1 naming it; bad
# options exit 2.
. "$(dirname "$0")/../comm/mpi.sh"
need apps/erase-bench
workdir
echo "1..5"
B="apps/erase-bench subnormal --model mlp --batch 8 --steps 40 --window 10"

# report FILE: every part of the report is there, no sign of a crash
report() {
    grep -q '^# device: cpu: .*, flush-to-zero' "$1" &&
        [ "$(grep -c -E '^ +[0-9]+ +[0-9.e+-]+ +[0-9]+ +[0-9.]+% +[0-9.]+%$' "$1")" = 10 ] &&
        grep -q -E '^early steps +10\.\.19 +samples/s +min' "$1" &&
        grep -q -E '^late +steps +40\.\.49 +samples/cpu_s +min' "$1" &&
        grep -q -E '^ratio late/early [0-9.]+ \(samples/s\), [0-9.]+ \(samples/cpu_s\) \(flush-to-zero' "$1" &&
        ! grep -q -i -E 'sanitizer|runtime error|core dumped' "$1"
}

timeout -k 5 120 env -u ERASE_FTZ $B >"$dir/on" 2>&1; rc=$?
[ $rc = 0 ] && report "$dir/on" && grep -q '^# device: .*, flush-to-zero on$' "$dir/on" &&
    grep -q '(flush-to-zero on)$' "$dir/on"
tap $? "default: the report, flush-to-zero on (exit $rc)"
[ $rc = 0 ] || sed 's/^/#   /' "$dir/on"

ERASE_FTZ=0 timeout -k 5 120 $B >"$dir/off" 2>&1; rc=$?
[ $rc = 0 ] && report "$dir/off" && grep -q '^# device: .*, flush-to-zero off (ERASE_FTZ=0)$' "$dir/off"
tap $? "ERASE_FTZ=0: the report, flush-to-zero off (exit $rc)"

ERASE_FTZ=yes timeout -k 5 60 $B >"$dir/bad" 2>&1; rc=$?
want="erase-bench subnormal: --device cpu: ERASE_FTZ must be 0 (keep subnormal floats) or 1 (flush them to zero, the default), got 'yes'"
[ $rc = 1 ] && [ "$(cat "$dir/bad")" = "$want" ]
tap $? "ERASE_FTZ=yes: exit $rc, '$(head -1 "$dir/bad")'"

timeout -k 5 120 env -u ERASE_FTZ $B --min-ratio 1000 >"$dir/min" 2>"$dir/min.err"; rc=$?
[ $rc = 1 ] && grep -q -E '^erase-bench subnormal: late/early [0-9.]+ \(samples per CPU second\) is below --min-ratio 1000\.00$' "$dir/min.err"
tap $? "--min-ratio 1000: exit $rc, '$(head -1 "$dir/min.err")'"

ok=0
for bad in "--model gpt" "--window 20" "--batch 0"; do
    # shellcheck disable=SC2086
    timeout -k 5 60 apps/erase-bench subnormal --steps 40 $bad >"$dir/usage" 2>&1
    rc=$?
    [ $rc = 2 ] && grep -q '^usage: erase-bench subnormal' "$dir/usage" || { ok=1; echo "# $bad: exit $rc"; }
done
# an extra argument and an unknown option: one line naming it (issue 32)
while IFS='|' read -r bad want; do
    # shellcheck disable=SC2086
    timeout -k 5 60 apps/erase-bench subnormal --steps 40 $bad >"$dir/usage" 2>&1
    rc=$?
    [ $rc = 2 ] && [ "$(cat "$dir/usage")" = "erase-bench subnormal: $want" ] || { ok=1; echo "# $bad: exit $rc"; }
done <<EOF
extra|unexpected argument 'extra'
--no-such-option|unknown option --no-such-option (erase-bench subnormal --help lists them)
EOF
tap $ok "bad options (--model gpt, a window over steps/4, --batch 0: usage; an extra argument, an unknown option: one line naming it), exit 2"
