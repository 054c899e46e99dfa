#!/bin/sh
# A checkpoint records the vocabulary of its data (issue 36: /meta
# data_vocab, io/checkpoint.h), and every load refuses data that numbers ids
# otherwise, one line naming both, status 1, nothing written:
#   the first 2,000 rows of the shipped Criteo sample converted three ways:
#   H hashed (no vocabulary), A through a vocabulary of threshold 2, B
#   through one of threshold 3 (fewer rows: the tables of A's model are
#   large enough for it, the case that used to pass); the tiny ctr of
#   tests/slurm (26 tables of 1,001 rows: enough for every vocabulary here),
#   4 steps on 2 ranks.
#   1 a run on A records A's digest, a run on H records "none", and
#     erase-inspect ckpt shows each;
#   2-7 --eval-only, --init-from (train data, eval data), --resume and
#     erase-score across the two numberings, and A's model onto B;
#   8 matching data loads as before: --init-from A's checkpoint onto A, and
#     from the same checkpoint without data_vocab (as an erase before it
#     wrote it: unknown, accepted) give bitwise equal models, and the
#     unknown one is accepted on H too.
. "$(dirname "$0")/ckpt.sh"
need apps/erase-score
command -v h5dump >/dev/null 2>&1 || skip "no h5dump to read /meta data_vocab"
setup_dir
echo "1..8"
cp "${srcdir:-.}/tests/slurm/tiny-ctr.cfg" "$dir/m.cfg"
head -2000 "${srcdir:-.}/data/criteo/kaggle-train-first9999.tsv" >"$dir/d.tsv"
{ apps/erase-convert vocab -q --threshold 2 -o "$dir/v2.h5" "$dir/d.tsv" &&
    apps/erase-convert vocab -q --threshold 3 -o "$dir/v3.h5" "$dir/d.tsv" &&
    apps/erase-convert criteo -q -o "$dir/H" "$dir/d.tsv" &&
    apps/erase-convert criteo -q --vocab "$dir/v2.h5" -o "$dir/A" "$dir/d.tsv" &&
    apps/erase-convert criteo -q --vocab "$dir/v3.h5" -o "$dir/B" "$dir/d.tsv"; } >"$dir/convert.log" 2>&1 ||
    { sed 's/^/# /' "$dir/convert.log"; echo "Bail out! erase-convert failed"; exit 0; }
digest() { apps/erase-inspect vocab "$1" | sed -n '1s/.*, digest \([0-9a-f]*\),.*/\1/p'; }
d2=$(digest "$dir/v2.h5") d3=$(digest "$dir/v3.h5")
# run ARGS...: erase-train on 2 ranks, output in $out, status in rc
out=$dir/out
run() {
    timeout -k 5 120 "$MPIRUN" $MPI_FLAGS -np 2 apps/erase-train --model "$dir/m.cfg" --device cpu --quiet \
        --global-batch 64 "$@" >"$out" 2>&1
    rc=$?
}
# data_vocab CKPT: its /meta data_vocab
data_vocab() { h5dump -a /meta/data_vocab "$1" | sed -n 's/^ *(0): "\(.*\)"$/\1/p'; }
# refused LINE: status 1 and LINE exactly among the output
refused() { [ "$rc" = 1 ] && grep -qxF -- "erase-train: $1" "$out" || { show "$out"; false; }; }

run --train "$dir/A" --steps 4 --checkpoint-every 4 --checkpoint-dir "$dir/ca"
s1=$rc
run --train "$dir/H" --steps 4 --checkpoint-every 4 --checkpoint-dir "$dir/ch"
[ $s1 = 0 ] && [ $rc = 0 ] && [ -n "$d2" ] && [ "$(data_vocab "$dir/ca/ckpt-4.h5")" = "$d2" ] &&
    [ "$(data_vocab "$dir/ch/ckpt-4.h5")" = none ] &&
    apps/erase-inspect ckpt "$dir/ca/ckpt-4.h5" | grep -qxF "  data vocab  $d2" &&
    apps/erase-inspect ckpt "$dir/ch/ckpt-4.h5" |
    grep -qxF "  data vocab  none (hashed ids: erase-convert criteo without --vocab)"
tap $? "the checkpoint of a run on A records /meta data_vocab $d2 (A's vocabulary), of a run on H \"none\"; erase-inspect ckpt shows both"
ca=$dir/ca/ckpt-4.h5 ch=$dir/ch/ckpt-4.h5
hashed="$dir/H was converted without a vocabulary (hashed ids): ids would mean other rows"

run --eval-only --init-from "$ca" --eval "$dir/H"
refused "--init-from $ca: the checkpoint was trained on data through vocabulary $d2; $hashed"
tap $? "--eval-only of A's model on H: refused naming both"

run --eval-only --init-from "$ch" --eval "$dir/A"
refused "--init-from $ch: the checkpoint was trained on data converted without a vocabulary (hashed ids); $dir/A was converted through vocabulary $d2: ids would mean other rows"
tap $? "--eval-only of H's model on A: refused naming both"

run --init-from "$ca" --train "$dir/H" --steps 4 --checkpoint-every 4 --checkpoint-dir "$dir/n1"
refused "--init-from $ca: the checkpoint was trained on data through vocabulary $d2; $hashed" && [ ! -e "$dir/n1" ]
tap $? "--init-from A's model, training on H: refused, no checkpoint directory"

run --resume "$dir/ca" --train "$dir/H" --steps 8 --checkpoint-every 4 --checkpoint-dir "$dir/ca"
refused "--resume $dir/ca: the checkpoint $ca was trained on data through vocabulary $d2; $hashed" &&
    [ "$(ls "$dir/ca" | grep -c '^ckpt-')" = 1 ]
tap $? "--resume of A's run on H: refused naming the directory and its checkpoint, nothing written"

run --init-from "$dir/ca" --train "$dir/B" --steps 4 --checkpoint-every 4 --checkpoint-dir "$dir/n2"
refused "--init-from $dir/ca: the checkpoint $ca was trained on data through vocabulary $d2; $dir/B was converted through vocabulary $d3: ids would mean other rows" &&
    [ -n "$d3" ] && [ ! -e "$dir/n2" ]
tap $? "--init-from A's model onto B (another vocabulary, smaller tables that fit): refused"

timeout -k 5 120 "$MPIRUN" $MPI_FLAGS -np 1 apps/erase-score "$ca" "$dir/H" -o "$dir/s.h5" >"$out" 2>&1
rc=$?
[ $rc = 1 ] && grep -qxF "erase-score: $ca: the checkpoint was trained on data through vocabulary $d2; $hashed" "$out" &&
    [ ! -e "$dir/s.h5" ] || show "$out"
tap $? "erase-score of A's model on H: refused naming both, no output file"

cp "$ca" "$dir/old.h5"
tests/ckpt/ckpt-tool set "$dir/old.h5" --fix-sum /meta/data_vocab= >"$dir/set.out" 2>&1
s1=$?
run --init-from "$ca" --train "$dir/A" --steps 4 --checkpoint-every 4 --checkpoint-dir "$dir/new"
s2=$rc
run --init-from "$dir/old.h5" --train "$dir/A" --steps 4 --checkpoint-every 4 --checkpoint-dir "$dir/unknown"
s3=$rc
run --eval-only --init-from "$dir/old.h5" --eval "$dir/H"
[ $s1 = 0 ] && [ $s2 = 0 ] && [ $s3 = 0 ] && [ $rc = 0 ] && [ -z "$(data_vocab "$dir/old.h5" 2>/dev/null)" ] &&
    [ "$(data_vocab "$dir/unknown/ckpt-4.h5")" = "$d2" ] &&
    tests/ckpt/ckpt-tool compare "$dir/new/ckpt-4.h5" "$dir/unknown/ckpt-4.h5" >"$dir/cmp.out" 2>&1 ||
    { show "$dir/set.out"; show "$out"; show "$dir/cmp.out" 2>/dev/null; false; }
tap $? "matching data loads: --init-from A's model onto A is bitwise the same as from it without data_vocab (an older file, accepted, also on H)"
