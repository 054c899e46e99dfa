#!/bin/sh
# erase-inspect merge (issue 17): a pipeline checkpoint (one file per
# stage) as one checkpoint file of pp 1, which every data-parallel consumer
# takes. A drained --schedule local run holds the cut model trained on one
# rank (test-pipeline-local.sh), so ctr (4 blocks, every boundary a cut)
# --pp 2 --schedule local --micro-batches 1, merged, equals bitwise the
# one-rank run's checkpoint of step 12 (every tensor, step, samples, cursor,
# clock); erase-train --eval-only --resume MERGED prints the pipeline run's
# evaluation of step 12 and a one-rank run resumed from it continues
# bitwise as from the one-rank checkpoint, where the pipeline checkpoint
# itself is refused with a pointer to the merge; a missing stage file, a
# stage file of another optimizer clock, a checkpoint that is not a
# pipeline's, an existing OUT and a usage error fail with their
# messages and status, leaving OUT as it was.
. "$(dirname "$0")/ckpt.sh"
: "${srcdir:=.}"
setup_data # ctr data in $dir/data
sed 's/subarchs = 2;/subarchs = 3;/' "$dir/model.cfg" >"$dir/ctr.cfg" # 4 blocks, 3 cuts
echo "1..11"

# evals FILE: the evaluation lines' values (not their times).
evals() { grep '^eval   step ' "$1" | sed 's/ in [0-9.]* s$//'; }

O=$dir/one
out=$O.out
ptrain ctr 1 --pp 1 --schedule none --micro-batches 0 --eval-every 12 --checkpoint-every 12 --checkpoint-dir "$O"
orc=$rc
[ $rc = 0 ] || show "$out"
L=$dir/local
out=$L.out
ptrain ctr 2 --schedule local --micro-batches 1 --stages 0,2 --eval-every 12 --checkpoint-every 12 --checkpoint-dir "$L"
lrc=$rc
[ $rc = 0 ] || show "$out"

M=$dir/merged.h5
apps/erase-inspect merge "$L/ckpt-12.h5" "$M" >"$dir/merge.out" 2>&1
mrc=$?
tests/ckpt/ckpt-tool compare "$O/ckpt-12.h5" "$M" >"$dir/cmp.out" 2>&1
c=$?
[ $orc = 0 ] && [ $lrc = 0 ] && [ $mrc = 0 ] && [ $c = 0 ] &&
    grep -qx "merged $L/ckpt-12.h5 and its 1 stage file into $M: step 12, [0-9]* parameter and [0-9]* optimizer tensors, blocks 0-3, world 1 = dp 1 x pp 1" "$dir/merge.out"
tap $? "ctr --pp 2 --schedule local merged: bitwise the one-rank run's checkpoint of step 12 (status $orc, $lrc, merge $mrc, compare $c)"
show "$dir/merge.out"
[ $c = 0 ] || show "$dir/cmp.out"

apps/erase-inspect ckpt "$M" >"$dir/inspect.out" 2>&1
irc=$?
[ $irc = 0 ] && [ ! -e "$dir/.merged.h5.tmp" ] &&
    grep -qx '  sizes       world 1 = dp 1 x pp 1 (1 stage: stage 0 holds blocks 0-3)' "$dir/inspect.out" &&
    ! grep -q '^  schedule .*pipeline' "$dir/inspect.out"
tap $? "the merged file is of pp 1, one stage of blocks 0-3, no pipeline schedule, no temporary file left (status $irc)"
[ $irc = 0 ] || show "$dir/inspect.out"

out=$dir/eval.out
train 1 --model "$dir/ctr.cfg" --eval-only --resume "$M" # its model: another is refused (issue 32)
[ $rc = 0 ] && [ "$(evals "$L.out" | wc -l)" = 1 ] && [ "$(evals "$out")" = "$(evals "$L.out")" ]
tap $? "erase-train --eval-only --resume MERGED prints the pipeline run's evaluation of step 12 (status $rc)"
evals "$out" | sed 's/^/# /'
[ $rc = 0 ] || show "$out"

# a data-parallel run resumes from it: to step 16 on one rank, bitwise the
# one-rank run resumed from its own checkpoint of step 12 (--resume FILE
# checks the layout: "1 stage: stage 0 holds blocks 0-3")
out=$dir/cont-one.out
ptrain ctr 1 --pp 1 --schedule none --micro-batches 0 --steps 16 --checkpoint-every 16 --resume "$O/ckpt-12.h5" \
    --checkpoint-dir "$dir/cont-one"
orc=$rc
[ $rc = 0 ] || show "$out"
out=$dir/cont-merged.out
ptrain ctr 1 --pp 1 --schedule none --micro-batches 0 --steps 16 --checkpoint-every 16 --resume "$M" \
    --checkpoint-dir "$dir/cont-merged"
tests/ckpt/ckpt-tool compare "$dir/cont-one/ckpt-16.h5" "$dir/cont-merged/ckpt-16.h5" >"$dir/cmp16.out" 2>&1
c=$?
[ $orc = 0 ] && [ $rc = 0 ] && [ $c = 0 ] && grep -q "^resume from $M: step 12, " "$out"
tap $? "a one-rank run resumed from MERGED to step 16: bitwise the one-rank run resumed from its own step 12 (status $orc, $rc, compare $c)"
[ $rc = 0 ] || show "$out"
[ $c = 0 ] || show "$dir/cmp16.out"

out=$dir/refused.out
train 2 --model "$dir/ctr.cfg" --eval-only --resume "$L/ckpt-12.h5"
# on 2 ranks: one line from rank 0 and no abort (every rank has the status)
[ $rc = 1 ] && ! grep -q MPI_ABORT "$out" && [ "$(grep -c "a pipeline checkpoint" "$out")" = 1 ] &&
    grep -qF "erase-train: $L/ckpt-12.h5: a pipeline checkpoint (2 stages: stage 0 holds blocks 0-1, stage 1 holds blocks 2-3): erase-train --resume or --init-from with the same --pp and --stages continues from it; --eval-only, erase-score and erase-sample take data-parallel checkpoints only: erase-inspect merge $L/ckpt-12.h5 OUT makes one" "$out"
tap $? "--eval-only of the pipeline checkpoint itself on 2 ranks: refused in one line from rank 0, no abort, pointing to erase-inspect merge (status $rc)"
[ $rc = 1 ] || show "$out"

# erase-sample says the same of it (it had named 51 tensors "missing")
apps/erase-sample "$L/ckpt-12.h5" --prompt "a" --tokens 2 >"$dir/sample.out" 2>&1
src=$?
[ $src = 1 ] && [ "$(cat "$dir/sample.out")" = "erase-sample: $L/ckpt-12.h5: a pipeline checkpoint (2 stages: stage 0 holds blocks 0-1, stage 1 holds blocks 2-3): erase-train --resume or --init-from with the same --pp and --stages continues from it; --eval-only, erase-score and erase-sample take data-parallel checkpoints only: erase-inspect merge $L/ckpt-12.h5 OUT makes one" ]
tap $? "erase-sample of the pipeline checkpoint: refused with the same message (status $src)"
[ $src = 1 ] || show "$dir/sample.out"

# errors: OUT exists (kept as it was; --force replaces it)
cp "$M" "$dir/keep.h5"
apps/erase-inspect merge "$L/ckpt-12.h5" "$M" >"$dir/exists.out" 2>&1
erc=$?
cmp -s "$M" "$dir/keep.h5"
kept=$?
apps/erase-inspect merge --force "$L/ckpt-12.h5" "$M" >"$dir/force.out" 2>&1
frc=$?
tests/ckpt/ckpt-tool compare "$O/ckpt-12.h5" "$M" >"$dir/cmp.out" 2>&1
c=$?
[ $erc = 1 ] && [ $kept = 0 ] && [ "$(cat "$dir/exists.out")" = "erase-inspect merge: error: $M: exists (not overwritten)" ] &&
    [ $frc = 0 ] && [ $c = 0 ]
tap $? "merge to an existing OUT: status 1, 'exists (not overwritten)', OUT untouched; --force replaces it (status $erc, $frc, compare $c)"
show "$dir/exists.out"

# a missing stage file; a checkpoint that is not a pipeline's
mkdir "$dir/part"
cp "$L/ckpt-12.h5" "$dir/part/"
apps/erase-inspect merge "$dir/part/ckpt-12.h5" "$dir/part.h5" >"$dir/part.out" 2>&1
prc=$?
apps/erase-inspect merge "$O/ckpt-12.h5" "$dir/dp.h5" >"$dir/dp.out" 2>&1
drc=$?
[ $prc = 1 ] && [ ! -e "$dir/part.h5" ] &&
    [ "$(cat "$dir/part.out")" = "erase-inspect merge: error: $dir/part/ckpt-12.h5: stage 1 of 2: $dir/part/ckpt-12.h5.stage1: cannot read: No such file or directory" ]
tap $? "merge with stage 1's file missing: status 1, the message names it, no OUT (status $prc)"
show "$dir/part.out"
[ $drc = 1 ] && [ ! -e "$dir/dp.h5" ] &&
    [ "$(cat "$dir/dp.out")" = "erase-inspect merge: error: $O/ckpt-12.h5: not a pipeline checkpoint (pp 1): it is one data-parallel checkpoint already" ]
tap $? "merge of a data-parallel checkpoint: status 1, said so, no OUT (status $drc)"
show "$dir/dp.out"

# a stage file of another optimizer clock than stage 0's
mkdir "$dir/clock"
cp "$L"/ckpt-12.h5* "$dir/clock/"
tests/ckpt/ckpt-tool set "$dir/clock/ckpt-12.h5.stage1" --fix-sum /optim/step=11 >"$dir/set.out" 2>&1
src=$?
apps/erase-inspect merge "$dir/clock/ckpt-12.h5" "$dir/clock.h5" >"$dir/clock.out" 2>&1
crc=$?
# the lr of step 12 of 12 (cosine from --lr, not yet at --min-lr), the same in both clocks
lr=$(sed -n 's/.*optimizer clock step 11, lr \([0-9.e+-]*\):.*/\1/p' "$dir/clock.out")
[ $src = 0 ] && [ $crc = 1 ] && [ ! -e "$dir/clock.h5" ] && [ -n "$lr" ] && [ "$lr" != 0 ] &&
    [ "$(cat "$dir/clock.out")" = "erase-inspect merge: error: $dir/clock/ckpt-12.h5.stage1: optimizer clock step 11, lr $lr: expected stage 0's step 12, lr $lr ($dir/clock/ckpt-12.h5)" ]
tap $? "merge of a stage file with another optimizer clock: status 1, naming it and both clocks, no OUT (status $src, $crc)"
show "$dir/clock.out"
[ $src = 0 ] || show "$dir/set.out"

apps/erase-inspect merge "$L/ckpt-12.h5" >"$dir/usage.out" 2>&1
urc=$?
[ $urc = 2 ] && [ "$(cat "$dir/usage.out")" = "erase-inspect merge: expected a pipeline checkpoint and the output file, got one argument: erase-inspect merge [--force] CKPT OUT (--help lists the options)" ]
tap $? "merge without OUT: one line, status 2 (status $urc)"
