#!/bin/sh
# Multi-hot Criteo TSV through the tools (issue 35): erase-convert criteo
# writes erase-ctr-2 shards for ','-separated lists of ids, and
# erase-inspect data's hotness table (most and mean ids per sample of
# C1..C26) equals a count of the TSV by awk; a list with an empty id
# (a trailing comma) at line 7 fails the conversion with status 1, the
# file, line and field named, and no directory left; the shipped Kaggle
# sample (one id per feature) still converts to erase-ctr-1 with no
# hotness table.
. "$(dirname "$0")/../comm/mpi.sh"
need apps/erase-convert
need apps/erase-inspect
workdir
echo "1..4"

# 600 lines: C1 holds 1..3 ids, C21 1..7, C5 is empty on every 10th line,
# every other feature one id
awk 'BEGIN {
    for (i = 1; i <= 600; i++) {
        line = (i % 4 == 0 ? 1 : 0)
        for (j = 1; j <= 13; j++) line = line "\t" (i * j) % 97
        for (c = 1; c <= 26; c++) {
            n = c == 1 ? 1 + i % 3 : c == 21 ? 1 + i % 7 : 1
            v = ""
            for (k = 0; k < n; k++) v = v (k ? "," : "") sprintf("%08x", (i * 7919 + c * 104729 + k * 15485863) % 4294967295)
            if (c == 5 && i % 10 == 0) v = ""
            line = line "\t" v
        }
        print line
    }
}' >"$dir/multi.tsv"

apps/erase-convert criteo -q -o "$dir/multi" --shard-rows 250 "$dir/multi.tsv" >"$dir/convert.out" 2>&1
rc=$?
apps/erase-inspect data "$dir/multi" >"$dir/inspect.out" 2>&1
rc2=$?
[ $rc = 0 ] && [ $rc2 = 0 ] && grep -q '^3 shards, format erase-ctr-2$' "$dir/inspect.out"
tap $? "erase-convert criteo of 600 multi-hot lines: status $rc, 3 shards of erase-ctr-2 (erase-inspect: status $rc2)"
[ $rc = 0 ] && [ $rc2 = 0 ] || { tap_report "$dir/convert.out"; tap_report "$dir/inspect.out"; }

# want: "C1 max mean" per feature counted from the TSV (an empty field: one id)
awk -F'\t' '{
    for (c = 1; c <= 26; c++) {
        n = $(14 + c) == "" ? 1 : split($(14 + c), parts, ",")
        sum[c] += n
        if (n > most[c]) most[c] = n
    }
} END { for (c = 1; c <= 26; c++) printf "C%d %d %.3f\n", c, most[c], sum[c] / NR }' "$dir/multi.tsv" >"$dir/want"
sed -n '/^multi-hot: ids per sample/,$p' "$dir/inspect.out" | awk '$1 ~ /^C[0-9]+$/ { print $1, $2, $3 }' >"$dir/got"
grep -q '^multi-hot: ids per sample (a missing feature counts as one id)$' "$dir/inspect.out" && cmp -s "$dir/want" "$dir/got"
tap $? "erase-inspect data: the hotness of C1..C26 (max, mean) equals the count of the TSV ($(grep '^C21 ' "$dir/got"))"
cmp -s "$dir/want" "$dir/got" || diff "$dir/want" "$dir/got" | sed 's/^/# /'

# line 7 with a trailing comma in C21
awk -F'\t' 'BEGIN { OFS = "\t" } NR == 7 { $35 = $35 "," } { print }' "$dir/multi.tsv" >"$dir/bad.tsv"
apps/erase-convert criteo -q -o "$dir/bad" "$dir/bad.tsv" >"$dir/bad.out" 2>&1
rc=$?
field=$(awk -F'\t' 'NR == 7 { print $35 }' "$dir/bad.tsv")
want="erase-convert criteo: error: $dir/bad.tsv:7: field C21: expected hexadecimal ids separated by single commas (an id is empty), got '$field'"
[ $rc = 1 ] && [ "$(head -1 "$dir/bad.out")" = "$want" ] && [ ! -e "$dir/bad" ]
tap $? "a trailing comma at line 7: status $rc, file, line and field named, no directory left"
[ $rc = 1 ] && [ "$(head -1 "$dir/bad.out")" = "$want" ] || { echo "# want: $want"; tap_report "$dir/bad.out"; }

sample=${srcdir:-.}/data/criteo/kaggle-train-first9999.tsv
apps/erase-convert criteo -q -o "$dir/kaggle" --shard-rows 5000 "$sample" >"$dir/kaggle.out" 2>&1 &&
    apps/erase-inspect data "$dir/kaggle" >"$dir/kaggle-inspect.out" 2>&1
rc=$?
[ $rc = 0 ] && grep -q '^2 shards, format erase-ctr-1$' "$dir/kaggle-inspect.out" &&
    ! grep -q '^multi-hot' "$dir/kaggle-inspect.out"
tap $? "the shipped Kaggle sample (one id per feature): still erase-ctr-1, no hotness table (status $rc)"
[ $rc = 0 ] || { tap_report "$dir/kaggle.out"; tap_report "$dir/kaggle-inspect.out"; }
