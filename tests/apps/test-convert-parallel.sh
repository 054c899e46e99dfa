#!/bin/sh
# mpirun -np N erase-convert criteo (issue 35): the ranks share whole gzip
# files and byte ranges of plain files (--split-bytes), and the dataset
# does not depend on N: np 1, 2 and 4 give the same index.txt and the same
# shard files (h5dump of every shard, attributes included); the rows, in
# index order, are the inputs' lines in input order, whatever the cut
# (ranges that start on a line, inside one, a range holding no line start).
# A failure on one rank publishes nothing, exits 1 and prints one line
# naming the file and line (and the byte, in a file cut into ranges): a
# line of 41 or 38 fields, a damaged gzip member in the middle of a day
# (named by its byte offset), a full disk (a tmpfs in a private mount
# namespace). Rank 0 prints the progress of all ranks. Multi-hot lines
# (erase-ctr-2) in some ranges only: each range's shards have the same
# format on 1, 2 and 4 ranks.
. "$(dirname "$0")/../comm/mpi.sh"
need apps/erase-convert
command -v h5dump >/dev/null 2>&1 || skip "no h5dump to compare shards"
workdir
echo "1..13"
sample=${srcdir:-.}/data/criteo/kaggle-train-first9999.tsv

# three inputs: plain, gzip, plain (3000 + 2000 + 6999 lines)
head -n 3000 "$sample" >"$dir/a.tsv"
sed -n 3001,5000p "$sample" | gzip -c >"$dir/b.gz"
sed -n 5001,9999p "$sample" >"$dir/c.tsv"
head -n 2000 "$sample" >>"$dir/c.tsv"

# convert NP OUT ARGS...: mpirun -np NP erase-convert criteo -q -o OUT ARGS...; sets rc
convert() {
    np=$1 out=$2; shift 2
    timeout -k 5 120 "$MPIRUN" $MPI_FLAGS -np "$np" apps/erase-convert criteo -q -o "$out" "$@" \
        >"$dir/out" 2>"$dir/err"
    rc=$?
}

# same_dataset A B: the same index and, shard by shard, the same h5dump
# (all datasets and attributes; the first line names the file)
same_dataset() {
    cmp -s "$1/index.txt" "$2/index.txt" || return 1
    for shard in $(awk '!/^#/ {print $1}' "$1/index.txt"); do
        h5dump "$1/$shard" | tail -n +2 >"$dir/dump1" && h5dump "$2/$shard" | tail -n +2 >"$dir/dump2" &&
            cmp -s "$dir/dump1" "$dir/dump2" || return 1
    done
}

# rows DIR: the /label of every shard in index order, then /dense, then /sparse, as bytes
rows() {
    for d in label dense sparse; do
        for shard in $(awk '!/^#/ {print $1}' "$1/index.txt"); do
            h5dump -d /$d -b LE -o "$dir/raw" "$1/$shard" >/dev/null && cat "$dir/raw"
        done
    done
}

# 1-3: np 1, 2, 4: the same dataset; plain files cut into 5 ranges of 200 kB
split="--split-bytes 200k --shard-rows 2000"
ok=0
convert 1 "$dir/np1" $split "$dir/a.tsv" "$dir/b.gz" "$dir/c.tsv" || ok=1
shards=$(grep -vc '^#' "$dir/np1/index.txt")
[ $ok = 0 ] && [ "$shards" -ge 9 ] && [ "$(awk '!/^#/ {n += $2} END {print n}' "$dir/np1/index.txt")" = 11999 ]
tap $? "np 1: 11999 rows in $shards shards (units: 4 + 1 + 5 ranges, shards of 2000 rows)"
tap_report "$dir/err"
for np in 2 4; do
    convert $np "$dir/np$np" $split "$dir/a.tsv" "$dir/b.gz" "$dir/c.tsv" && same_dataset "$dir/np1" "$dir/np$np"
    tap $? "np $np: the same index.txt and shard files as np 1"
    tap_report "$dir/err"
done

# 4: the rows are the lines in input order: the same bytes as one unit per
# file, and as cuts on a line start (byte of line 101), one byte after it,
# and ranges smaller than a line (a range with no line start is empty)
head -n 400 "$dir/a.tsv" >"$dir/a400.tsv"
convert 1 "$dir/whole" --shard-rows 100000 "$dir/a400.tsv" "$dir/b.gz"
rows "$dir/whole" >"$dir/rows.whole"
ok=0
at=$(head -n 100 "$dir/a400.tsv" | wc -c)
for cut in $at $((at + 1)); do
    convert 2 "$dir/cut$cut" --split-bytes $cut --shard-rows 100000 "$dir/a400.tsv" "$dir/b.gz" &&
        rows "$dir/cut$cut" | cmp -s - "$dir/rows.whole" || ok=1
done
head -n 30 "$dir/a.tsv" >"$dir/small.tsv"
convert 1 "$dir/small1" "$dir/small.tsv" || ok=1
rows "$dir/small1" >"$dir/rows.small"
convert 4 "$dir/small4" --split-bytes 150 "$dir/small.tsv" && rows "$dir/small4" | cmp -s - "$dir/rows.small" || ok=1
tap $ok "rows in input order whatever the cut: ranges of $at and $((at + 1)) bytes (np 2), of 150 bytes (np 4) = one unit per file"

# 5: the progress line of rank 0 covers all ranks
timeout -k 5 120 "$MPIRUN" $MPI_FLAGS -np 2 apps/erase-convert criteo -o "$dir/progress" $split \
    "$dir/a.tsv" "$dir/b.gz" "$dir/c.tsv" >"$dir/out" 2>"$dir/err"
mb=$(cat "$dir/a.tsv" "$dir/b.gz" "$dir/c.tsv" | wc -c | awk '{printf "%.1f", $1 / 1e6}')
grep -qx "erase-convert: 100% of $mb MB read (2 ranks), 11999 lines, [0-9]* lines/s, [0-9.]* MB/s, ETA 0 s" "$dir/err" &&
    grep -qx "rows written 11999 in $shards shards; skipped 0 bad lines" "$dir/out" &&
    apps/erase-convert criteo --force -o "$dir/progress" $split "$dir/a.tsv" "$dir/b.gz" "$dir/c.tsv" \
        >/dev/null 2>"$dir/err1" &&
    grep -qx "erase-convert: 100% of $mb MB read, 11999 lines, [0-9]* lines/s, [0-9.]* MB/s, ETA 0 s" "$dir/err1"
tap $? "progress: 'erase-convert: 100% of $mb MB read (2 ranks), 11999 lines, R lines/s, M MB/s, ETA 0 s' (1 rank: no '(1 ranks)')"
tap_report "$dir/err"
tap_report "$dir/err1"

# 6: multi-hot lines in the first half of a file only, cut where the
# one-hot lines begin (the second range, shorter: 2 units): the range of
# one-hot lines is erase-ctr-1 whether or not its rank converted the
# multi-hot range before it
# (C21, field 35, gets a second id in the first 300 lines of the sample)
head -n 600 "$sample" | awk -F '\t' -v OFS='\t' 'NR <= 300 {$35 = $35 == "" ? "0000abcd" : $35 ",0000abcd"} {print}' \
    >"$dir/multi.tsv"
mcut=$(head -n 300 "$dir/multi.tsv" | wc -c)
ok=0
for np in 1 2 4; do
    convert $np "$dir/multi$np" --split-bytes $mcut "$dir/multi.tsv" || ok=1
done
formats=$(for shard in $(awk '!/^#/ {print $1}' "$dir/multi1/index.txt"); do
    h5dump -a /format "$dir/multi1/$shard" | grep -o 'erase-ctr-[12]'
done | tr '\n' ' ')
[ $ok = 0 ] && [ "$formats" = "erase-ctr-2 erase-ctr-1 " ] &&
    same_dataset "$dir/multi1" "$dir/multi2" && same_dataset "$dir/multi1" "$dir/multi4"
tap $? "multi-hot lines in the first of 2 ranges: formats $formats on 1 rank; the same dataset on 2 and 4 ranks"
tap_report "$dir/err"

# expect_failure DESCRIPTION LINE: status 1, the one error line, nothing in
# $dir/fail (made by the run: removed) and no temporary file
expect_failure() {
    [ "$rc" = 1 ] && grep "error" "$dir/err" >"$dir/errors"
    [ "$rc" = 1 ] && [ -n "$2" ] && [ "$(grep -c . "$dir/errors")" = 1 ] && grep -qxF "$2" "$dir/errors" &&
        [ ! -e "$dir/fail" ]
    tap $? "$1"
    tap_report "$dir/err"
}

# 7-8: a line of 41 fields in a range read by rank 1, of 38 in rank 0's
sed '5500s/\t/\t\t/' "$dir/c.tsv" >"$dir/bad41.tsv"
byte=$(head -n 5499 "$dir/bad41.tsv" | wc -c)
convert 2 "$dir/fail" $split "$dir/a.tsv" "$dir/bad41.tsv"
expect_failure "41 fields at line 5500 of a cut file, np 2: status 1, file, line and byte named, nothing published" \
    "erase-convert criteo: error: $dir/bad41.tsv:5500 (byte $byte): expected 40 tab-separated fields (label, I1-I13, C1-C26), got 41"
sed '17s/\t[^\t]*\t[^\t]*$//' "$dir/a.tsv" >"$dir/bad38.tsv"
convert 4 "$dir/fail" --shard-rows 2000 "$dir/bad38.tsv" "$dir/b.gz" "$dir/c.tsv"
expect_failure "38 fields at line 17 of a whole file, np 4: status 1, file and line named, nothing published" \
    "erase-convert criteo: error: $dir/bad38.tsv:17: expected 40 tab-separated fields (label, I1-I13, C1-C26), got 38"

# 9: a day of three gzip members, the second cut short
head -n 1000 "$sample" | gzip -c >"$dir/m1.gz"
sed -n 1001,2000p "$sample" | gzip -c >"$dir/m2.gz"
sed -n 2001,3000p "$sample" | gzip -c >"$dir/m3.gz"
m1=$(wc -c <"$dir/m1.gz")
head -c $(($(wc -c <"$dir/m2.gz") / 2)) "$dir/m2.gz" | cat "$dir/m1.gz" - "$dir/m3.gz" >"$dir/day.gz"
convert 2 "$dir/fail" $split "$dir/a.tsv" "$dir/day.gz"
# (zlib's reason after the prefix: what the inflater met, e.g. "invalid code lengths set")
expect_failure "a damaged gzip member in the middle of a day, np 2: the member and its byte named, nothing published" \
    "$(grep -F "erase-convert criteo: error: $dir/day.gz: gzip member 2 (at byte $m1) is damaged or truncated: " "$dir/err")"

# 10: --force: a failed conversion keeps the old dataset whole
cp -r "$dir/np1" "$dir/old"
convert 2 "$dir/old" $split --force "$dir/a.tsv" "$dir/bad41.tsv"
[ "$rc" = 1 ] && same_dataset "$dir/np1" "$dir/old" && ! ls -a "$dir/old" | grep -q '\.tmp$'
tap $? "--force and a bad line on rank 1: status 1, the old dataset kept as it was, no temporary file"

# 11: --skip-bad: the bad line counted once, the first one named, on every N
convert 2 "$dir/skip2" $split --skip-bad "$dir/a.tsv" "$dir/bad41.tsv"
grep -qx "rows written 9998 in [0-9]* shards; skipped 1 bad line" "$dir/out" &&
    grep -qxF "  skipped, wrong field count  1 (first: $dir/bad41.tsv:5500 (byte $byte): expected 40 tab-separated fields (label, I1-I13, C1-C26), got 41)" "$dir/out" &&
    convert 1 "$dir/skip1" $split --skip-bad "$dir/a.tsv" "$dir/bad41.tsv" && same_dataset "$dir/skip1" "$dir/skip2"
tap $? "--skip-bad on 2 ranks: 9998 rows, the bad line named, the same dataset as 1 rank"
tap_report "$dir/out"

# 12-13: a disk that fills during the conversion (a 2 MB tmpfs), 2 ranks
if [ "$(id -u)" != 0 ]; then
    echo "ok 12 # SKIP not root: no tmpfs in a private mount namespace"
    echo "ok 13 # SKIP not root"
elif ! unshare -m true 2>/dev/null; then
    echo "ok 12 # SKIP unshare -m fails here (no private mount namespace)"
    echo "ok 13 # SKIP unshare -m fails"
else
    mkdir "$dir/full"
    unshare -m sh -c "mount -t tmpfs -o size=2m tmpfs '$dir/full' &&
        timeout -k 5 120 $MPIRUN $MPI_FLAGS -np 2 apps/erase-convert criteo -q --no-compress -o '$dir/full/out' \
            $split '$dir/a.tsv' '$dir/c.tsv' >'$dir/out' 2>'$dir/err'; echo \$? >'$dir/full.rc';
        ls -A '$dir/full' >'$dir/full.ls'"
    rc=$(cat "$dir/full.rc")
    grep "error" "$dir/err" >"$dir/errors"
    [ "$rc" = 1 ] && [ "$(grep -c . "$dir/errors")" = 1 ] &&
        grep -q "^erase-convert criteo: error: $dir/full/out/\.unit-[0-9]*-[0-9]*\.h5\.tmp: .*No space left on device" "$dir/errors"
    tap $? "a full disk: status 1, one line naming the shard being written and ENOSPC"
    tap_report "$dir/err"
    [ ! -s "$dir/full.ls" ]
    tap $? "a full disk: nothing left in the tmpfs (no shard, no index, no temporary file)"
fi
