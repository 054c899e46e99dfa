#!/bin/sh
# erase-convert and erase-inspect on bad input: status 1, stderr exactly
# the tool, the subcommand and the reason naming the file (and line), with
# no source breadcrumbs; a failed conversion leaves no directory behind;
# erase-convert stopped by SIGINT exits 130 after the same cleanup, and
# under nohup ignores SIGHUP.
# erase-bench: an unknown model is a usage error (status 2).
# Issue 32: every tool's unknown option, option missing its value (or given
# one it does not take) and unexpected argument is one line naming it,
# status 2 (they said "unknown option, missing value or extra argument",
# or getopt's line and the whole usage); erase-score without -o says so.
. "$(dirname "$0")/../comm/mpi.sh"
need apps/erase-convert
need apps/erase-inspect
need apps/erase-bench
need apps/erase-score
need apps/erase-sample
workdir
echo "1..23"
sample=${srcdir:-.}/data/criteo/kaggle-train-first9999.tsv
images=${srcdir:-.}/data/mnist/t10k-images-idx3-ubyte.gz
labels=${srcdir:-.}/data/mnist/t10k-labels-idx1-ubyte.gz

# expect STATUS FILE LINE...: the last command exited STATUS and FILE holds
# exactly the given lines
expect() {
    want=$1 file=$2; shift 2
    [ "$rc" = "$want" ] && printf '%s\n' "$@" | cmp -s - "$file"
}

# convert_refused N INPUT LINES WHAT ERROR: erase-convert criteo of INPUT
# into $dir/outN exits 1 with exactly "error: ERROR" and "no dataset
# written to $dir/outN (LINES lines read)", and leaves no directory
convert_refused() {
    apps/erase-convert criteo -q -o "$dir/out$1" "$2" 2>"$dir/err"
    rc=$?
    expect 1 "$dir/err" "erase-convert criteo: error: $5" \
        "erase-convert criteo: no dataset written to $dir/out$1 ($3 lines read)" && [ ! -e "$dir/out$1" ]
    tap $? "erase-convert criteo, $4 (status $rc, no directory left)"
    [ $rc = 1 ] || tap_report "$dir/err"
}
convert_refused 1 "$dir/missing.tsv" 0 "a missing input: the file named" \
    "$dir/missing.tsv: cannot open: No such file or directory"
head -n 2 "$sample" >"$dir/bad.tsv"
printf '1\t2\n' >>"$dir/bad.tsv"
convert_refused 2 "$dir/bad.tsv" 3 "a short line 3: file:line and what was expected" \
    "$dir/bad.tsv:3: expected 40 tab-separated fields (label, I1-I13, C1-C26), got 2"
sed '2s/^0/x/; 2s/^1/x/' "$sample" | head -n 4 >"$dir/label.tsv"
convert_refused 3 "$dir/label.tsv" 2 "a bad label on line 2: file:line and the field" \
    "$dir/label.tsv:2: field label: expected 0 or 1, got 'x'"
: >"$dir/empty.tsv"
convert_refused 4 "$dir/empty.tsv" 0 "an empty input: the file named" \
    "$dir/empty.tsv: no rows to write: every line was bad or the input is empty"

mkdir "$dir/empty"
apps/erase-inspect data "$dir/empty" >/dev/null 2>"$dir/err"
rc=$?
expect 1 "$dir/err" \
    "erase-inspect data: error: $dir/empty: no index.txt: not a dataset written by erase-convert (or not complete)"
tap $? "erase-inspect data on an empty directory: status $rc, says what is missing"

echo junk >"$dir/junk.h5"
apps/erase-inspect ckpt "$dir/junk.h5" >/dev/null 2>"$dir/err"
rc=$?
expect 1 "$dir/err" \
    "erase-inspect ckpt: error: $dir/junk.h5: cannot open as HDF5 (truncated or not a checkpoint): file signature not found"
tap $? "erase-inspect ckpt on a file that is not HDF5: status $rc"

# a FIFO named in index.txt (it hung erase-inspect data and erase-train
# forever): refused as not a regular file, under a time limit
mkdir "$dir/fifo"
mkfifo "$dir/fifo/part-00000.h5"
printf '# erase index\npart-00000.h5 100\n' >"$dir/fifo/index.txt"
timeout -k 5 60 apps/erase-inspect data "$dir/fifo" >/dev/null 2>"$dir/err"
rc=$?
expect 1 "$dir/err" "erase-inspect data: error: $dir/fifo/index.txt:2: part-00000.h5 is a FIFO, expected a regular file"
tap $? "erase-inspect data with a FIFO in index.txt: status $rc (124: it hung), the line and the file named"
tap_report "$dir/err"

apps/erase-inspect data "$dir/junk.h5" >/dev/null 2>"$dir/err"
rc=$?
expect 1 "$dir/err" "erase-inspect data: error: $dir/junk.h5: not an HDF5 file or damaged (truncated?): file signature not found"
tap $? "erase-inspect data on a file that is not HDF5: status $rc"

# SIGINT once the conversion runs (its handler is installed before the output
# directory is created): 128 + 2, the signal named, the directory removed.
# 1G rows would take hours; timeout kills it if the signal is lost (and
# passes SIGINT on to it).
timeout -s KILL 60 apps/erase-convert synth -q -o "$dir/out4" --rows 1G >/dev/null 2>"$dir/err" &
pid=$!
wait_for 30 test -d "$dir/out4"
sleep 0.3
kill -INT $pid
wait $pid
rc=$?
[ $rc = 130 ] && [ "$(wc -l <"$dir/err")" = 1 ] &&
    grep -Eq '^erase-convert synth: error: interrupted after [0-9]+ rows by SIGINT$' "$dir/err" && [ ! -e "$dir/out4" ]
tap $? "erase-convert synth stopped by SIGINT: status $rc (130 expected), the signal named, no directory left"
tap_report "$dir/err"

# erase-convert mnist: bad IDX files (status 1, the file named, no directory
# left) and usage errors (status 2, the reason on the first line)
apps/erase-convert mnist -q "$dir/missing-images" "$labels" -o "$dir/m1" 2>"$dir/err"
rc=$?
expect 1 "$dir/err" "erase-convert mnist: error: $dir/missing-images: cannot open: No such file or directory" \
    "erase-convert mnist: no dataset written to $dir/m1" && [ ! -e "$dir/m1" ]
tap $? "erase-convert mnist, a missing image file: status $rc, the file named, no directory left"
tap_report "$dir/err"

apps/erase-convert mnist -q "$labels" "$images" -o "$dir/m2" 2>"$dir/err"
rc=$?
expect 1 "$dir/err" \
    "erase-convert mnist: error: $labels: not an IDX image file: magic 0x00000801, expected 0x00000803 (uint8, 3 dimensions)" \
    "erase-convert mnist: no dataset written to $dir/m2" && [ ! -e "$dir/m2" ]
tap $? "erase-convert mnist, labels and images swapped: status $rc, the magic number named"
tap_report "$dir/err"

printf '\000\000\010\001\000\000\000\003\001\002' >"$dir/short-labels"
apps/erase-convert mnist -q "$images" "$dir/short-labels" -o "$dir/m3" 2>"$dir/err"
rc=$?
expect 1 "$dir/err" \
    "erase-convert mnist: error: $dir/short-labels: short file: 2 of 3 labels (2 of 3 bytes after the 8-byte header)" \
    "erase-convert mnist: no dataset written to $dir/m3" && [ ! -e "$dir/m3" ]
tap $? "erase-convert mnist, a short label file: status $rc, how many of how many"
tap_report "$dir/err"

printf '\000\000\010\001\000\000\000\003\001\002\003' >"$dir/three-labels"
apps/erase-convert mnist -q "$images" "$dir/three-labels" -o "$dir/m4" 2>"$dir/err"
rc=$?
expect 1 "$dir/err" "erase-convert mnist: error: $images has 10000 images but $dir/three-labels has 3 labels" \
    "erase-convert mnist: no dataset written to $dir/m4" && [ ! -e "$dir/m4" ]
tap $? "erase-convert mnist, counts that differ: status $rc, both files and counts named"
tap_report "$dir/err"

apps/erase-convert mnist -q "$images" -o "$dir/m5" 2>"$dir/err"
rc=$?
[ $rc = 2 ] && [ "$(head -n 1 "$dir/err")" = "erase-convert mnist: expected two files, IMAGES and LABELS" ] &&
    [ ! -e "$dir/m5" ]
tap $? "erase-convert mnist with one file: usage error (status $rc)"

apps/erase-convert mnist -q "$images" "$labels" -o "$dir/m6" --split 8000 2>"$dir/err"
rc=$?
expect 2 "$dir/err" "erase-convert mnist: --split: bad value '8000' (expected TRAIN,EVAL: two row counts, TRAIN >= 1)" && [ ! -e "$dir/m6" ]
tap $? "erase-convert mnist --split 8000: usage error (status $rc), the value named"
tap_report "$dir/err"

# a good conversion (the first 300 / next 100 images); erase-inspect data
# shows its class histogram, and refuses it mixed with CTR shards
apps/erase-convert mnist -q "$images" "$labels" -o "$dir/m7" --split 300,100 >"$dir/out" 2>"$dir/err"
rc=$?
[ $rc = 0 ] && [ -f "$dir/m7/train/index.txt" ] && [ -f "$dir/m7/eval/index.txt" ] &&
    apps/erase-inspect data "$dir/m7/train" "$dir/m7/eval" >"$dir/out" 2>"$dir/err" &&
    grep -q '^2 shards, format erase-cls-1$' "$dir/out" && grep -q '^rows 400, features 784, classes 10$' "$dir/out"
tap $? "erase-convert mnist --split 300,100, then erase-inspect data: 400 rows of 784 features, 10 classes"
tap_report "$dir/out"
tap_report "$dir/err"

apps/erase-convert criteo -q -o "$dir/ctr" "${srcdir:-.}/data/criteo/paddlerec-part0.tsv" >/dev/null 2>&1
apps/erase-inspect data "$dir/m7/train" "$dir/ctr" >/dev/null 2>"$dir/err"
rc=$?
expect 1 "$dir/err" \
    "erase-inspect data: error: $dir/ctr/part-00000.h5: attribute format: expected \"erase-cls-1\", got \"erase-ctr-1\""
tap $? "erase-inspect data on classification and CTR shards together: status $rc, the format named"
tap_report "$dir/err"

# under nohup SIGHUP stays ignored: the conversion goes on to the end
nohup apps/erase-convert synth -q -o "$dir/out5" --rows 200000 >/dev/null 2>"$dir/err" &
pid=$!
wait_for 30 test -d "$dir/out5"
kill -HUP $pid
wait $pid
rc=$?
[ $rc = 0 ] && [ -f "$dir/out5/index.txt" ]
tap $? "erase-convert synth under nohup, SIGHUP: ignored, the conversion completes (status $rc)"
[ $rc = 0 ] || tap_report "$dir/err"

apps/erase-bench schedules --model foo >/dev/null 2>"$dir/err"
rc=$?
expect 2 "$dir/err" "erase-bench schedules: --model foo: expected ctr, ctr-nocuts, mlp, all, gpt, nanochat, dcn or dcn-cuts"
tap $? "erase-bench schedules --model foo: usage error (status $rc) listing the models"

apps/erase-bench model --model gpt --size 2,16,3,8,32 >/dev/null 2>"$dir/err"
rc=$?
expect 2 "$dir/err" "erase-bench model: --size 2,16,3,8,32: expected S, M or layers,width,heads,context,vocab (positive, width a multiple of heads)"
tap $? "erase-bench model --model gpt --size with a width not a multiple of the heads: usage error (status $rc) saying what is expected"

apps/erase-bench model --model gpt --batch 8,16 >/dev/null 2>"$dir/err"
rc=$?
expect 2 "$dir/err" "erase-bench model: --batch 8,16: --model gpt takes one batch size"
tap $? "erase-bench model --model gpt --batch with two sizes: usage error (status $rc)"
# issue 32: one line naming the argument at fault, status 2, nothing written
ok=0
while IFS='|' read -r args want; do
    # shellcheck disable=SC2086 # $args: the words of the command line
    apps/$args >"$dir/out" 2>"$dir/err"
    rc=$?
    if [ $rc != 2 ] || [ "$(cat "$dir/err")" != "$want" ] || [ -s "$dir/out" ] || [ -e "$dir/o" ]; then
        ok=1
        echo "# apps/$args: status $rc, expected 2 and: $want"
        tap_report "$dir/err"
    fi
done <<EOF
erase-convert criteo --bogus -o $dir/o $sample|erase-convert criteo: unknown option --bogus (erase-convert criteo --help lists them)
erase-convert criteo -q $sample -o|erase-convert criteo: option -o needs a value
erase-convert synth --rows 10 --out|erase-convert synth: option --out needs a value
erase-convert synth -o $dir/o --rows 10 extra|erase-convert synth: unexpected argument 'extra'
erase-convert synth -o $dir/o --rows 10 --force=1|erase-convert synth: option --force takes no value, got --force=1
erase-convert mnist $images $labels -o $dir/o --split|erase-convert mnist: option --split needs a value
erase-convert text --raw -o $dir/o $sample|erase-convert text: unknown option --raw (erase-convert text --help lists them)
erase-convert tokens -o $dir/o $sample --vocab|erase-convert tokens: option --vocab needs a value
erase-inspect data --bogus $dir/m7/train|erase-inspect data: unknown option --bogus (erase-inspect data --help lists them)
erase-inspect ckpt $dir/junk.h5 extra|erase-inspect ckpt: unexpected argument 'extra'
erase-inspect merge --force $dir/junk.h5 $dir/o extra|erase-inspect merge: unexpected argument 'extra'
erase-inspect merge --bogus $dir/junk.h5 $dir/o|erase-inspect merge: unknown option --bogus (erase-inspect merge --help lists them)
erase-score $dir/junk.h5 $dir/m7/eval|erase-score: no output file: give -o FILE (the scores are written there; --help lists the options)
erase-score $dir/junk.h5 $dir/m7/eval -o|erase-score: option -o needs a value
erase-score $dir/junk.h5 $dir/m7/eval extra -o $dir/o|erase-score: unexpected argument 'extra'
erase-score --bogus $dir/junk.h5 $dir/m7/eval -o $dir/o|erase-score: unknown option --bogus (erase-score --help lists them)
erase-sample $dir/junk.h5 --tokens|erase-sample: option --tokens needs a value
erase-sample $dir/junk.h5 extra|erase-sample: unexpected argument 'extra'
erase-sample --bogus $dir/junk.h5|erase-sample: unknown option --bogus (erase-sample --help lists them)
erase-bench gemm --shapes|erase-bench gemm: option --shapes needs a value
erase-bench model --bogus|erase-bench model: unknown option --bogus (erase-bench model --help lists them)
erase-bench pipeline --simulate=1|erase-bench pipeline: option --simulate takes no value, got --simulate=1
erase-bench streams extra|erase-bench streams: unexpected argument 'extra'
EOF
tap $ok "erase-convert, erase-inspect, erase-score, erase-sample, erase-bench: an unknown option, a missing value, an unexpected argument: status 2, one line naming it"
# erase-inspect ckpt and merge with too few arguments (issue 32): one line
# like the other tools, not the whole usage
ok=0
while IFS='|' read -r args want; do
    # shellcheck disable=SC2086 # $args: the words of the command
    apps/$args >"$dir/out" 2>"$dir/err"
    rc=$?
    if [ $rc != 2 ] || [ "$(cat "$dir/err")" != "$want" ] || [ -s "$dir/out" ]; then
        ok=1
        echo "# apps/$args: status $rc, expected 2 and: $want"
        tap_report "$dir/err"
    fi
done <<EOF
erase-inspect ckpt|erase-inspect ckpt: expected a checkpoint file or directory, got none: erase-inspect ckpt FILE|DIR (--help lists the options)
erase-inspect merge|erase-inspect merge: expected a pipeline checkpoint and the output file, got none: erase-inspect merge [--force] CKPT OUT (--help lists the options)
erase-inspect merge --force $dir/junk.h5|erase-inspect merge: expected a pipeline checkpoint and the output file, got one argument: erase-inspect merge [--force] CKPT OUT (--help lists the options)
EOF
tap $ok "erase-inspect ckpt, merge with too few arguments: status 2, one line saying what is expected"
exit 0
