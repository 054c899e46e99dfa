#!/bin/sh
# Checkpoints of pipeline stages (issue 16; io/checkpoint.h, "Pipeline
# checkpoints"): one file per stage (ckpt-<step>.h5 is stage 0's,
# ckpt-<step>.h5.stage1 stage 1's). For gpipe, 1f1b and paci on ctr and
# gpt (tie_head = false), at pp 2 (2 ranks) and pp 2 x dp 2 (4 ranks), a run
# resumed from step 4 ends with both files bitwise equal to the
# uninterrupted run's (paci drains at every checkpoint: an uninterrupted
# run without that drain differs, so the comparison can fail); pp 2 x dp 1
# resumed on pp 2 x dp 2 at the same global batch takes the same samples;
# another --stages, another --pp, a data-parallel --resume or --init-from
# are refused with both layouts; a damaged or missing stage file makes its
# checkpoint damaged (named) and --resume auto takes the one before, the
# damaged and the superseded set aside with their stage files; a stage
# that cannot write stops every rank and nothing is published;
# SIGUSR1 (on stage 1's rank) under paci stops with a drained checkpoint
# from which the run continues bitwise, in a pipeline segment of the steps
# left.
. "$(dirname "$0")/ckpt.sh"
: "${srcdir:=.}"
setup_data # ctr data in $dir/data
sed 's/cuts = "all"/cuts = "none"/' "$dir/model.cfg" >"$dir/ctr.cfg" # stages 0 | 1-2 without cuts
setup_gpt "$dir/gpt.cfg" "tie_head = false;"
echo "1..27"

# ---- bitwise resume: every schedule, ctr and gpt, pp 2 and pp 2 x dp 2
for model in ctr gpt; do
    for np in 2 4; do
        for sched in gpipe 1f1b paci; do
            [ "$model" = gpt ] && [ $np = 4 ] && [ $sched != paci ] && continue
            R=$dir/$model-$sched-np$np
            out=$R.ref.out
            ptrain $model $np --schedule $sched --checkpoint-dir "$R"
            rrc=$rc
            [ $rc = 0 ] || show "$out"
            mkdir "$R.res"
            cp "$R/ckpt-4.h5" "$R/ckpt-4.h5.stage1" "$R.res/"
            out=$R.res.out
            ptrain $model $np --schedule $sched --checkpoint-dir "$R.res" --resume auto
            same "$R" "$R.res"
            c=$?
            [ $rrc = 0 ] && [ $rc = 0 ] && [ $c = 0 ] && [ -f "$R/ckpt-8.h5.stage1" ] &&
                grep -q "^ckpt   step 12: $R.res/ckpt-12.h5 and 1 stage file (.stage<s>), " "$out" &&
                grep -q "^resume from $R.res/ckpt-4.h5: step 4, " "$out"
            tap $? "$model $sched on $np ranks (pp 2): resumed from step 4, both stage files of step 12 bitwise equal to the uninterrupted run's (status $rrc, $rc, compare $c)"
            [ $rc = 0 ] || show "$out"
            [ $c = 0 ] || { show "$dir/cmp0.out"; show "$dir/cmp1.out"; }
        done
    done
done

# ---- the drain matters: paci without a checkpoint at 4 and 8 differs
R=$dir/ctr-paci-np2
out=$dir/nodrain.out
ptrain ctr 2 --schedule paci --checkpoint-every 12 --checkpoint-dir "$dir/nodrain"
same "$R" "$dir/nodrain"
c=$?
[ $rc = 0 ] && [ $c != 0 ]
tap $? "ctr paci with checkpoints (drains) only at 12 ends unlike the run drained at 4 and 8 (status $rc, compare $c)"
grep "^stage 0" "$R.ref.out" | sed 's/^/# /'

# ---- pp 2 x dp 1 resumed on pp 2 x dp 2 (global batch 24): the same samples
out=$dir/seq-ref.out
ERASE_DEBUG_SAMPLE_LOG=$dir/samples.ref ptrain ctr 2 --schedule 1f1b --checkpoint-dir "$dir/seq"
# stage 0's ranks read the global batch (stage 1's read the same samples)
awk '$2 >= 96' "$dir/samples.ref.0" | sort -n -k1 -k2 >"$dir/seq.ref"
out=$dir/seq-dp2.out
ERASE_DEBUG_SAMPLE_LOG=$dir/samples.dp2 ptrain ctr 4 --schedule 1f1b --checkpoint-dir "$dir/seq-dp2" \
    --resume "$dir/seq/ckpt-4.h5"
cat "$dir/samples.dp2.0" "$dir/samples.dp2.2" | sort -n -k1 -k2 >"$dir/seq.dp2"
[ $rc = 0 ] && cmp -s "$dir/seq.ref" "$dir/seq.dp2" && [ "$(wc -l <"$dir/seq.ref")" = 192 ] &&
    grep -q "^note   the checkpoint was written by 1 data-parallel rank, this run has 2: the data continue from global sample 96 of epoch 0" "$out"
tap $? "1f1b pp 2 x dp 1 resumed at step 4 on pp 2 x dp 2: samples 96..287 equal the uninterrupted run's (status $rc)"
[ $rc = 0 ] || show "$out"

# ---- another layout: refused naming both
C=$dir/ctr-paci-np2/ckpt-4.h5
lay2="2 stages: stage 0 holds blocks 0-0, stage 1 holds blocks 1-2"
why="a pipeline checkpoint is loaded by the same --pp and --stages"
out=$dir/stages.out
ptrain ctr 2 --schedule paci --stages 0,2 --resume "$C"
[ $rc != 0 ] && grep -q -F "$C: the pipeline layout differs: the checkpoint has 2 stages ($lay2), this run 2 (2 stages: stage 0 holds blocks 0-1, stage 1 holds blocks 2-2): $why" "$out"
tap $? "--stages 0,2 against stages 0 | 1-2: refused naming both layouts (status $rc)"
[ $rc != 0 ] || show "$out"
out=$dir/pp3.out
ptrain ctr 3 --schedule paci --pp 3 --resume "$C"
[ $rc != 0 ] && grep -q -F "$C: the pipeline layout differs: the checkpoint has 2 stages ($lay2), this run 3 (3 stages: stage 0 holds blocks 0-0, stage 1 holds blocks 1-1, stage 2 holds blocks 2-2): $why" "$out"
tap $? "--pp 3: refused naming both layouts (status $rc)"
[ $rc != 0 ] || show "$out"
for opt in resume init-from; do
    out=$dir/dp-$opt.out
    ptrain ctr 2 --pp 1 --schedule none --micro-batches 0 --$opt "$C"
    [ $rc != 0 ] && grep -q -F "$C: the pipeline layout differs: the checkpoint has 2 stages ($lay2), this run 1 (1 stage: stage 0 holds blocks 0-2): $why" "$out"
    tap $? "--$opt a pipeline checkpoint in a data-parallel run: refused naming both layouts (status $rc)"
    [ $rc != 0 ] || show "$out"
done
out=$dir/init.out
ptrain ctr 2 --schedule 1f1b --steps 4 --checkpoint-dir "$dir/init" --init-from "$C"
[ $rc = 0 ] && grep -q "^init   from $C (step 4 of an earlier run): parameters loaded; this run starts at step 0" "$out" &&
    tests/ckpt/ckpt-tool compare "$C.stage1" "$dir/init/ckpt-4.h5.stage1" >"$dir/cmp-init.out" 2>&1
c=$?
[ $rc = 0 ] && [ $c = 1 ]
tap $? "--init-from the same layout: parameters loaded, 4 steps trained on them (status $rc, compare $c: they moved)"
[ $rc = 0 ] || show "$out"

# ---- a damaged and a missing stage file: those checkpoints are passed over
R=$dir/ctr-paci-np2
D=$dir/damaged
cp -r "$R" "$D"
rm "$D/ckpt-12.h5" "$D/ckpt-12.h5.stage1" "$D/latest" # the run writes them again
tests/ckpt/ckpt-tool flip "$D/ckpt-8.h5.stage1" /params/sub2/fc0/weight >/dev/null
cp "$R/ckpt-8.h5" "$D/ckpt-6.h5" # a step-6 checkpoint whose stage file is missing
tests/ckpt/ckpt-tool set "$D/ckpt-6.h5" --fix-sum /meta/step=6 >/dev/null
out=$dir/damaged.out
ptrain ctr 2 --schedule paci --checkpoint-dir "$D" --resume auto
same "$R" "$D"
c=$?
grep -q "^erase-train: checkpoint $D/ckpt-8.h5 is damaged, skipping it: stage 1 of 2: $D/ckpt-8.h5.stage1: dataset /params/sub2/fc0/weight: checksum [0-9a-f]* does not match the stored [0-9a-f]* (damaged data)$" "$out"
tap $? "a flipped bit in ckpt-8.h5.stage1: ckpt-8.h5 named damaged, with the stage file"
grep -q "^erase-train: checkpoint $D/ckpt-6.h5 is damaged, skipping it: stage 1 of 2: $D/ckpt-6.h5.stage1: cannot read: No such file or directory$" "$out"
tap $? "no ckpt-6.h5.stage1: ckpt-6.h5 named damaged, with the missing file"
[ $rc = 0 ] && [ $c = 0 ] && grep -q "^resume from $D/ckpt-4.h5: step 4, " "$out" &&
    [ "$(LC_ALL=C ls "$D" | tr '\n' ' ')" = "ckpt-12.h5 ckpt-12.h5.stage1 ckpt-4.h5 ckpt-4.h5.stage1 ckpt-6.h5.damaged ckpt-8.h5 ckpt-8.h5.damaged ckpt-8.h5.damaged.stage1 ckpt-8.h5.stage1 latest " ]
tap $? "--resume auto took ckpt-4.h5 and ended bitwise equal to the uninterrupted run; kept: $(LC_ALL=C ls "$D" | tr '\n' ' ')(status $rc, compare $c)"
[ $rc = 0 ] || show "$out"
# the damaged checkpoint is set aside with its stage file (the flipped one,
# which ckpt-tool refuses, not the step-8 file the resumed run wrote again)
tests/ckpt/ckpt-tool compare "$R/ckpt-8.h5.stage1" "$D/ckpt-8.h5.damaged.stage1" >"$dir/cmp-damaged.out" 2>&1
c=$?
[ $c = 2 ] && grep -q "$D/ckpt-8.h5.damaged.stage1: dataset /params/sub2/fc0/weight: checksum [0-9a-f]* does not match the stored [0-9a-f]* (damaged data)$" "$dir/cmp-damaged.out" &&
    grep -q "^resume damaged $D/ckpt-8.h5 renamed $D/ckpt-8.h5.damaged, with its stage file (not counted by --keep-checkpoints)$" "$out" &&
    grep -q "^resume damaged $D/ckpt-6.h5 renamed $D/ckpt-6.h5.damaged (not counted by --keep-checkpoints)$" "$out"
tap $? "ckpt-8.h5.damaged.stage1 is the damaged stage file, set aside with ckpt-8.h5 (compare $c)"

# ---- a run restarted from an older checkpoint in the same directory sets
# the newer ones aside (*.superseded) with their stage files: still a
# checkpoint that opens, and not overwritten when the run writes that step
S=$dir/superseded
cp -r "$R" "$S"
out=$dir/superseded.out
ptrain ctr 2 --schedule paci --checkpoint-dir "$S" --resume "$S/ckpt-4.h5"
tests/ckpt/ckpt-tool compare "$R/ckpt-12.h5.stage1" "$S/ckpt-12.h5.superseded.stage1" >"$dir/cmp-sup.out" 2>&1
c=$?
apps/erase-inspect ckpt "$S/ckpt-12.h5.superseded" >"$dir/inspect-sup.out" 2>&1
i=$?
[ $rc = 0 ] && [ $c = 0 ] && [ $i = 0 ] &&
    grep -q "^note   $S/ckpt-12.h5 is newer than step 4, where this run starts: renamed $S/ckpt-12.h5.superseded, with its stage file (--resume auto continues this run)$" "$out" &&
    [ "$(LC_ALL=C ls "$S" | tr '\n' ' ')" = "ckpt-12.h5 ckpt-12.h5.stage1 ckpt-12.h5.superseded ckpt-12.h5.superseded.stage1 ckpt-4.h5 ckpt-4.h5.stage1 ckpt-8.h5 ckpt-8.h5.stage1 ckpt-8.h5.superseded ckpt-8.h5.superseded.stage1 latest " ]
tap $? "--resume ckpt-4.h5 beside ckpt-8/12: set aside with their stage files, which erase-inspect opens; kept: $(LC_ALL=C ls "$S" | tr '\n' ' ')(status $rc, compare $c, inspect $i)"
[ $rc = 0 ] || show "$out"
[ $i = 0 ] || show "$dir/inspect-sup.out"

# ---- stage 1 cannot write its file (its temporary name is a directory):
# every rank fails naming stage 1's file (rank 0 says it, in one line, no
# abort: issue 32), and stage 0's, written, is not published
# (ckpt-<step>.h5 is renamed only when every stage succeeded)
F=$dir/fail
mkdir -p "$F/.ckpt-4.h5.stage1.tmp"
out=$dir/fail.out
ptrain ctr 2 --schedule 1f1b --checkpoint-dir "$F"
[ $rc = 1 ] && [ "$(grep -c "^erase-train: writing the checkpoint (rank 1): $F/.ckpt-4.h5.stage1.tmp: cannot create: " "$out")" = 1 ] &&
    [ "$(grep -c ": $F/.ckpt-4.h5.stage1.tmp: cannot create: " "$out")" = 1 ] && ! grep -q MPI_ABORT "$out" &&
    [ "$(LC_ALL=C ls -A "$F" | tr '\n' ' ')" = ".ckpt-4.h5.stage1.tmp " ]
tap $? "stage 1's write fails: both ranks stop, rank 0 naming its file in one line, stage 0's file is not published (status $rc; left: $(LC_ALL=C ls -A "$F" | tr '\n' ' '))"
[ $rc != 0 ] || show "$out"

# ---- SIGUSR1 on stage 1's rank after step 6 under paci (periodic
# checkpoints every 12): every rank stops after step 6 with a drained
# checkpoint; resumed, the run ends bitwise equal to one checkpointed every 6
R=$dir/usr1-ref
out=$dir/usr1-ref.out
ptrain ctr 2 --schedule paci --checkpoint-every 6 --checkpoint-dir "$R"
rrc=$rc
S=$dir/usr1
out=$dir/usr1.out
ERASE_DEBUG_KILL_AT_STEP=6:1:usr1 ptrain ctr 2 --schedule paci --checkpoint-every 12 --checkpoint-dir "$S"
[ $rc = 0 ] && grep -q "^erase-train: stopped by SIGUSR1 after step 6; checkpoint $S/ckpt-6.h5 (continue with --resume auto)$" "$out" &&
    [ "$(LC_ALL=C ls "$S" | tr '\n' ' ')" = "ckpt-6.h5 ckpt-6.h5.stage1 latest " ]
tap $? "SIGUSR1 on rank 1 after step 6: stopped with ckpt-6.h5 and its stage file (status $rc)"
[ $rc = 0 ] || show "$out"
out=$dir/usr1-res.out
ptrain ctr 2 --schedule paci --checkpoint-every 12 --checkpoint-dir "$S" --resume auto
same "$R" "$S"
c=$?
[ $rrc = 0 ] && [ $rc = 0 ] && [ $c = 0 ]
tap $? "resumed: ends bitwise equal to the run drained at 6 (status $rrc, $rc, compare $c)"
# the resume started a segment of the 6 steps left: its schedule ends with
# the run, and the drain at the end finds nothing in flight (no "drains")
grep -q "^  stage 0    block 0: .*, 2 activation slots ([0-9.]* MB)$" "$out"
tap $? "resumed: the pipeline's segment is the 6 steps left (no drain at the end)"
grep "^  stage 0" "$out" | sed 's/^/# /' 
[ $rc = 0 ] || show "$out"
[ $c = 0 ] || { show "$dir/cmp0.out"; show "$dir/cmp1.out"; }

# ---- --stages auto resumed: the checkpoint's stages, not a new measurement
# (block times close to each other can split otherwise from run to run, and
# the checkpoint refuses another layout): a run split 0-1 | 2 by --stages
# 0,2, resumed with --stages auto
A=$dir/auto
out=$dir/auto.out
ptrain ctr 2 --schedule 1f1b --steps 4 --stages 0,2 --checkpoint-dir "$A"
arc=$rc
ptrain ctr 2 --schedule 1f1b --stages auto --checkpoint-dir "$A" --resume auto
[ $arc = 0 ] && [ $rc = 0 ] &&
    grep -q -F "  stages 1f1b, 2 stages x 1 dp: blocks 0-1 | 2 (auto: the resumed checkpoint's)" "$out"
tap $? "--stages auto with --resume takes the checkpoint's stages 0-1 | 2 (status $arc, $rc)"
[ $rc = 0 ] || show "$out"
