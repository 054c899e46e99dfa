#!/bin/sh
# erase-convert --force replaces an old dataset only once the new one is
# written (issue 32: it deleted the old dataset before converting, so a
# failed conversion left nothing). Through both shard writers: criteo
# (io/ctr_dataset_write.c) and tokens (io/h5_shards.c). A conversion that
# fails leaves the old dataset whole (erase-inspect reads its rows) and no
# temporary file, and says it is kept; one that succeeds replaces it.
. "$(dirname "$0")/../comm/mpi.sh"
need apps/erase-convert
need apps/erase-inspect
workdir
echo "1..5"
sample=${srcdir:-.}/data/criteo/kaggle-train-first9999.tsv

# expect STATUS FILE LINE...: the last command exited STATUS and FILE holds
# exactly the given lines
expect() {
    want=$1 file=$2; shift 2
    [ "$rc" = "$want" ] && printf '%s\n' "$@" | cmp -s - "$file"
}
# only DIR FILE...: DIR holds exactly these files (no temporary one)
only() {
    d=$1; shift
    [ "$(cd "$d" && ls -A | LC_ALL=C sort | tr '\n' ' ')" = "$* " ]
}

head -n 300 "$sample" >"$dir/old.tsv"
head -n 100 "$sample" >"$dir/new.tsv"
head -n 2 "$sample" >"$dir/bad.tsv"
printf '1\t2\n' >>"$dir/bad.tsv"
apps/erase-convert criteo -q -o "$dir/ctr" "$dir/old.tsv" >/dev/null 2>"$dir/err"
apps/erase-convert criteo -q --force -o "$dir/ctr" "$dir/bad.tsv" >/dev/null 2>"$dir/err"
rc=$?
expect 1 "$dir/err" \
    "erase-convert criteo: error: $dir/bad.tsv:3: expected 40 tab-separated fields (label, I1-I13, C1-C26), got 2" \
    "erase-convert criteo: no dataset written to $dir/ctr (3 lines read); the dataset already there is kept"
tap $? "erase-convert criteo --force, a bad line 3: status $rc, says the old dataset is kept"
tap_report "$dir/err"

apps/erase-inspect data "$dir/ctr" >"$dir/out" 2>&1 && grep -qx 'rows 300, clicks .*' "$dir/out" &&
    only "$dir/ctr" index.txt part-00000.h5
tap $? "after the failed --force: the old 300 rows read back whole, no temporary file beside them"
tap_report "$dir/out"

apps/erase-convert criteo -q --force -o "$dir/ctr" "$dir/new.tsv" >/dev/null 2>"$dir/err" &&
    apps/erase-inspect data "$dir/ctr" >"$dir/out" 2>&1 && grep -qx 'rows 100, clicks .*' "$dir/out" &&
    only "$dir/ctr" index.txt part-00000.h5
tap $? "erase-convert criteo --force that succeeds: the new 100 rows replace the old"
tap_report "$dir/err"

# tokens: 3 raw uint16 tokens, then a file whose second token (60000) is not
# below the vocab: found while importing, after the first file is written
printf '\001\000\002\000\003\000' >"$dir/old.bin"
printf '\001\000\140\352' >"$dir/bad.bin"
apps/erase-convert tokens --raw -o "$dir/tok" "$dir/old.bin" >/dev/null 2>"$dir/err"
apps/erase-convert tokens --raw --force -o "$dir/tok" "$dir/old.bin" "$dir/bad.bin" >/dev/null 2>"$dir/err"
rc=$?
expect 1 "$dir/err" \
    "erase-convert tokens: error: $dir/bad.bin: token 1 is 60000, expected < 50257 (the vocab; --vocab V)" \
    "erase-convert tokens: no dataset written to $dir/tok; the dataset already there is kept"
tap $? "erase-convert tokens --force, a token out of the vocab: status $rc, says the old dataset is kept"
tap_report "$dir/err"

apps/erase-inspect data "$dir/tok" >"$dir/out" 2>&1 && grep -qx '  tokens 3, vocab 50257, .*' "$dir/out" &&
    only "$dir/tok" index.txt part-00000.h5
tap $? "after the failed --force: the old 3 tokens read back whole, no temporary file beside them"
tap_report "$dir/out"
