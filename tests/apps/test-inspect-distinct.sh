#!/bin/sh
# erase-inspect data's "distinct" column on the shipped Criteo sample: the
# exact count of every categorical feature C1..C26 equals the count of
# distinct non-empty tokens in its TSV column (cut | sort -u), over one
# directory of 4 shards and over the shards given one by one (merged);
# no estimate is shown (the sample has far fewer than 65,536 per feature).
. "$(dirname "$0")/../comm/mpi.sh"
need apps/erase-convert
need apps/erase-inspect
workdir
echo "1..3"
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
