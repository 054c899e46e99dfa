#!/bin/sh
# erase-inspect data's "distinct" column on the shipped Criteo sample: the
# exact count of every categorical feature C1..C26 equals the count of
# distinct non-empty tokens in its TSV column (cut | sort -u), over one
# directory of 4 shards and over the shards given one by one (merged);
# no estimate is shown (the sample has far fewer than 65,536 per feature).
# 70,000 distinct ids in C1 (made-up lines): shown as ~N within 3 sigma
# (2.43%) of 70,000, with the line that explains ~; C2 exact.
. "$(dirname "$0")/../comm/mpi.sh"
need apps/erase-convert
need apps/erase-inspect
workdir
echo "1..4"
sample=${srcdir:-.}/data/criteo/kaggle-train-first9999.tsv

apps/erase-convert criteo -q -o "$dir/data" --shard-rows 2500 "$sample" >"$dir/convert.out" 2>&1 ||
    { tap_report "$dir/convert.out"; echo "Bail out! erase-convert criteo failed"; exit 0; }

# want: "C1 N" per feature from the TSV (label, I1..I13, then C1..C26: columns 15..40)
k=1
while [ $k -le 26 ]; do
    echo "C$k $(cut -f $((14 + k)) "$sample" | grep -v '^$' | sort -u | wc -l)"
    k=$((k + 1))
done >"$dir/want"

# distinct OUT: "C1 N" per feature from erase-inspect's table (the third column)
distinct() { awk '$1 ~ /^C[0-9]+$/ { print $1, $3 }' "$1"; }

apps/erase-inspect data "$dir/data" >"$dir/dir.out" 2>&1
rc=$?
distinct "$dir/dir.out" >"$dir/got"
[ $rc = 0 ] && grep -q '^feature    missing   distinct  range of present values$' "$dir/dir.out" &&
    cmp -s "$dir/want" "$dir/got"
tap $? "a directory of 4 shards: distinct ids of C1..C26 equal cut | sort -u of the TSV (status $rc)"
[ $rc = 0 ] && cmp -s "$dir/want" "$dir/got" || { tap_report "$dir/dir.out"; diff "$dir/want" "$dir/got" | sed 's/^/# /'; }
echo "# $(tr '\n' ' ' <"$dir/got")"

apps/erase-inspect data "$dir"/data/part-*.h5 >"$dir/files.out" 2>&1
rc=$?
distinct "$dir/files.out" >"$dir/got2"
[ $rc = 0 ] && cmp -s "$dir/want" "$dir/got2"
tap $? "the 4 shard files given one by one: the same counts (status $rc)"

! grep -q '~' "$dir/dir.out" && ! grep -q 'HyperLogLog' "$dir/dir.out" &&
    grep -q '^I1 .*% \{13\}[-0-9(]' "$dir/dir.out"
tap $? "no estimate shown, I1..I13 have an empty distinct column"

# 70,000 lines: C1 = the line number in hex, the other features constant
awk 'BEGIN { for (i = 0; i < 70000; i++) { printf "%d", i % 2; for (j = 0; j < 13; j++) printf "\t1"
             printf "\t%08x", i; for (k = 2; k <= 26; k++) printf "\t%08x", k; printf "\n" } }' >"$dir/wide.tsv"
apps/erase-convert criteo -q -o "$dir/wide" "$dir/wide.tsv" >"$dir/convert.out" 2>&1 || tap_report "$dir/convert.out"
apps/erase-inspect data "$dir/wide" >"$dir/wide.out" 2>&1
rc=$?
c1=$(awk '$1 == "C1" { print $3 }' "$dir/wide.out")
n=${c1#\~}
[ $rc = 0 ] && [ "$c1" = "~$n" ] && [ "$n" -gt 68299 ] && [ "$n" -lt 71701 ] &&
    [ "$(awk '$1 == "C2" { print $3 }' "$dir/wide.out")" = 1 ] &&
    grep -q '^~N: a HyperLogLog estimate (more than 65536 distinct ids; relative standard error 0.8%)$' "$dir/wide.out"
tap $? "70,000 distinct ids in C1: shown as $c1 (status $rc), explained below the table"
