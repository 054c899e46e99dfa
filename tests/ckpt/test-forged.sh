#!/bin/sh
# Forged and odd files (issue 32, items 14-18), each refused with one line
# naming the file and what was expected, never a hang (every tool runs
# under timeout: 124 means it waited):
#   14  a gpt model of 17-32 layers trains through its first checkpoint;
#   15  a FIFO where a file is read (erase-convert mnist, erase-inspect,
#       erase-sample, erase-score, --init-from, --resume auto's scan);
#   16  a checkpoint whose /meta samples_seen is INT64_MAX;
#   17  a checkpoint whose model text has @include (erase-sample,
#       --eval-only): embedded text includes nothing.
# erase-train runs under mpirun -np 2.
. "$(dirname "$0")/ckpt.sh"
need tests/apps/sample-tool
need apps/erase-score
: "${srcdir:=.}"
setup_data
setup_gpt "$dir/gpt.cfg" 'cuts = "none";'
echo "1..12"

# expect STATUS FILE LINE...: the last command exited STATUS and FILE holds
# exactly the given lines
expect() {
    want=$1 file=$2; shift 2
    [ "$rc" = "$want" ] && printf '%s\n' "$@" | cmp -s - "$file"
}
# has FILE LINE: FILE holds LINE exactly
has() { grep -qxF -- "$2" "$1"; }

# ---- 14: one bound on gpt layers (the writer's was 16, the parser's 32)
sed 's/layers = 2;/layers = 17;/' "$dir/gpt.cfg" >"$dir/gpt17.cfg"
out=$dir/gpt17.out
timeout -k 5 120 "$MPIRUN" $MPI_FLAGS -np 2 apps/erase-train --train "$dir/text/train" --model "$dir/gpt17.cfg" \
    --device cpu --quiet --global-batch 4 --steps 2 --checkpoint-every 1 --checkpoint-dir "$dir/gpt17" >"$out" 2>&1
rc=$?
[ $rc = 0 ] && [ -f "$dir/gpt17/ckpt-1.h5" ] && [ -f "$dir/gpt17/ckpt-2.h5" ] &&
    apps/erase-inspect ckpt "$dir/gpt17/ckpt-2.h5" | grep -qx '      layers = 17;'
tap $? "a gpt model of 17 layers trains through its checkpoints under mpirun -np 2 (status $rc)"
[ $rc = 0 ] || tap_report "$out"

# ---- 15: FIFOs are refused before they are opened
mkfifo "$dir/fifo.h5" "$dir/images"
F=$dir/fifo.h5
timeout -k 5 30 apps/erase-convert mnist -q "$dir/images" "$srcdir/data/mnist/t10k-labels-idx1-ubyte.gz" \
    -o "$dir/mnist-out" >/dev/null 2>"$dir/err"
rc=$?
expect 1 "$dir/err" "erase-convert mnist: error: $dir/images is a FIFO, expected a regular file" \
    "erase-convert mnist: no dataset written to $dir/mnist-out" && [ ! -e "$dir/mnist-out" ]
tap $? "erase-convert mnist, a FIFO of images: status $rc at once (124: it waited), the file named"
tap_report "$dir/err"

timeout -k 5 30 apps/erase-inspect ckpt "$F" >/dev/null 2>"$dir/err"
rc=$?
expect 1 "$dir/err" "erase-inspect ckpt: error: $F is a FIFO, expected a regular file"
tap $? "erase-inspect ckpt FIFO: status $rc, one line"
tap_report "$dir/err"

timeout -k 5 30 apps/erase-sample "$F" -q >/dev/null 2>"$dir/err"
rc=$?
expect 1 "$dir/err" "erase-sample: $F is a FIFO, expected a regular file"
tap $? "erase-sample FIFO: status $rc, one line"
tap_report "$dir/err"

timeout -k 5 30 apps/erase-score "$F" "$dir/data/eval" -o "$dir/scores.h5" >/dev/null 2>"$dir/err"
rc=$?
grep -v '^\[rank 0 ' "$dir/err" >"$dir/err1"
expect 1 "$dir/err1" "erase-score: $F is a FIFO, expected a regular file" && [ ! -e "$dir/scores.h5" ]
tap $? "erase-score FIFO: status $rc, one line, no output"
tap_report "$dir/err"

out=$dir/init.out
train 2 --steps 2 --init-from "$F"
[ $rc != 0 ] && [ $rc != 124 ] && has "$out" "erase-train: --init-from $F: $F is a FIFO, expected a regular file"
tap $? "erase-train --init-from FIFO under mpirun -np 2: refused (status $rc), the file named"
[ $rc != 0 ] || tap_report "$out"

D=$dir/ck
out=$dir/first.out
train 2 --global-batch 64 --steps 2 --checkpoint-every 2 --checkpoint-dir "$D"
mkfifo "$D/ckpt-4.h5"
out=$dir/auto.out
train 2 --global-batch 64 --steps 3 --checkpoint-every 2 --checkpoint-dir "$D" --resume auto
[ $rc = 0 ] && [ -f "$D/ckpt-3.h5" ] &&
    has "$out" "erase-train: checkpoint $D/ckpt-4.h5 is damaged, skipping it: $D/ckpt-4.h5 is a FIFO, expected a regular file" &&
    grep -q "^resume .*$D/ckpt-2.h5" "$out"
tap $? "--resume auto under mpirun -np 2 skips a FIFO named ckpt-4.h5, resumes from ckpt-2.h5 (status $rc)"
[ $rc = 0 ] || tap_report "$out"

# ---- 16: every attribute has a bound (the range checks run with or without
# meta_fnv1a64; the file without it: tests/ckpt/test-checkpoint)
cp "$D/ckpt-2.h5" "$dir/seen.h5"
tests/ckpt/ckpt-tool set "$dir/seen.h5" --fix-sum /meta/samples_seen=9223372036854775807 >/dev/null
want="$dir/seen.h5: attribute /meta samples_seen = 9223372036854775807: expected an integer <= 4611686018427387904"
out=$dir/seen.out
train 2 --steps 3 --init-from "$dir/seen.h5"
[ $rc != 0 ] && [ $rc != 124 ] && has "$out" "erase-train: --init-from $dir/seen.h5: $want"
tap $? "--init-from a checkpoint of samples_seen INT64_MAX (checksum fixed up), mpirun -np 2: refused (status $rc)"
[ $rc != 0 ] || tap_report "$out"
timeout -k 5 30 apps/erase-inspect ckpt "$dir/seen.h5" >/dev/null 2>"$dir/err"
rc=$?
expect 1 "$dir/err" "erase-inspect ckpt: error: $want"
tap $? "erase-inspect ckpt: the same line (status $rc)"
tap_report "$dir/err"

# ---- 17: model text stored in a checkpoint includes nothing
tests/apps/sample-tool "$dir/gpt.cfg" "$dir/g" >/dev/null
printf 'model = "gpt";\n@include "/etc/passwd"\n' >"$dir/evil.cfg"
cp "$dir/g/ckpt-0.h5" "$dir/evil.h5"
tests/ckpt/ckpt-tool set "$dir/evil.h5" --fix-sum "/meta/model@$dir/evil.cfg" >/dev/null
why="$dir/evil.h5:2: @include: includes are not allowed in embedded text (it would read a file of its own choosing)"
timeout -k 5 30 apps/erase-sample "$dir/evil.h5" -q >"$dir/sample.out" 2>"$dir/err"
rc=$?
expect 1 "$dir/err" "erase-sample: $why" && [ ! -s "$dir/sample.out" ]
tap $? "erase-sample of a checkpoint whose model text has @include \"/etc/passwd\": refused (status $rc)"
tap_report "$dir/err"
out=$dir/evil.out
timeout -k 5 120 "$MPIRUN" $MPI_FLAGS -np 2 apps/erase-train --train "$dir/text/train" --device cpu --quiet \
    --eval-only --init-from "$dir/evil.h5" >"$out" 2>&1
rc=$?
[ $rc != 0 ] && [ $rc != 124 ] && has "$out" "erase-train: $why" && ! grep -q 'root:' "$out"
tap $? "--eval-only --init-from it under mpirun -np 2: refused (status $rc), /etc/passwd not read"
[ $rc != 0 ] || tap_report "$out"
timeout -k 5 120 "$MPIRUN" $MPI_FLAGS -np 2 apps/erase-train --train "$dir/text/train" --device cpu --quiet \
    --eval-only --init-from "$dir/g/ckpt-0.h5" >"$out" 2>&1
rc=$?
[ $rc = 0 ] && grep -q '^eval   step 0: loss' "$out"
tap $? "the checkpoint it was forged from evaluates (status $rc)"
[ $rc = 0 ] || tap_report "$out"
