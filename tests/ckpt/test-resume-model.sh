#!/bin/sh
# A checkpoint carries its model and run options (issue 32, items 4-6),
# under mpirun -np 2: a gpt checkpoint resumed with no --model and no
# training options takes both and ends bitwise equal to the uninterrupted
# run; --init-from takes them too (the options given win); a --model or --cuts that changes
# the model (kind, sizes, cuts) is refused before work starts with one
# line naming both models (status 2), also with --eval-only; a whole
# (data-parallel) checkpoint loads into a pipeline (--pp 2): what each
# stage loaded, written at once (ERASE_DEBUG_CKPT_AFTER_RESUME), is
# bitwise the checkpoint (parameters, optimizer state, clock, cursor), for
# ctr under 1f1b and gpt under local, and --init-from starts a pipeline
# from it; resuming a finished run says there is nothing to do (status 0,
# no summary). The review of issue 32: a resume after a kill notes no
# --batch change when the global batch came from the checkpoint (finding
# 8); a model named by the run file alone yields to the checkpoint's on
# --resume and --eval-only with a note, one on the command line is still
# refused (finding 3); a pipeline checkpoint resumed with --resume auto
# alone takes its layout (--pp, --schedule) and ends bitwise as the
# uninterrupted run, and a layout error on a checkpoint's model advises
# what that model allows (finding 4).
. "$(dirname "$0")/ckpt.sh"
setup_data # ctr data in $dir/data, $dir/model.cfg: 3 blocks, 2 cuts
setup_gpt "$dir/gpt.cfg" "cuts = [1];" # 2 blocks, 1 cut (its LM head untied)
sed 's/cuts = "all"/cuts = "none"/' "$dir/model.cfg" >"$dir/ctr.cfg" # no cuts: a 1f1b pipeline
sed 's/width = 32/width = 64/' "$dir/gpt.cfg" >"$dir/gpt64.cfg"
echo "1..20"

# run2 ARGS...: erase-train on 2 ranks; output in $out, status in $rc
run2() {
    timeout -k 5 120 "$MPIRUN" $MPI_FLAGS -np 2 apps/erase-train --device cpu --quiet "$@" >"$out" 2>&1
    rc=$?
}
# says LINE: $out has LINE, whole
says() { grep -q -F -x -e "$1" "$out"; }

G=$dir/gpt
out=$dir/gpt.out
run2 --train "$dir/text/train" --model "$dir/gpt.cfg" --global-batch 16 --steps 6 --lr 0.003 --seed 5 \
    --checkpoint-every 3 --checkpoint-dir "$G"
[ $rc = 0 ] && [ -f "$G/ckpt-3.h5" ] && [ -f "$G/ckpt-6.h5" ]
tap $? "gpt (2 blocks, 1 cut) on 2 ranks: 6 steps, checkpoints at 3 and 6 (status $rc)"
[ $rc = 0 ] || show "$out"

# ---- item 4: --resume without --model or the run's options takes them
mkdir "$dir/res"
cp "$G/ckpt-3.h5" "$dir/res/"
out=$dir/res.out
run2 --train "$dir/text/train" --checkpoint-dir "$dir/res" --resume auto
tests/ckpt/ckpt-tool compare "$G/ckpt-6.h5" "$dir/res/ckpt-6.h5" >"$dir/cmp-res.out" 2>&1
c=$?
[ $rc = 0 ] && [ $c = 0 ] && grep -q "^resume from $dir/res/ckpt-3.h5: step 3, " "$out" &&
    says "note   taken from the run of $dir/res/ckpt-3.h5 (not given here): steps 6; lr 0.003; checkpoint-every 3; seed 5; global-batch 16"
tap $? "--resume auto with no --model and no options: the checkpoint's gpt and options, ckpt-6 bitwise the uninterrupted run's (status $rc, compare $c)"
[ $rc = 0 ] || show "$out"
[ $c = 0 ] || show "$dir/cmp-res.out"

out=$dir/init.out
run2 --train "$dir/text/train" --init-from "$G/ckpt-6.h5" --lr 0.002
[ $rc = 0 ] && grep -q "^init   from $G/ckpt-6.h5 (step 6 of an earlier run): parameters loaded" "$out" &&
    says "note   taken from the run of $G/ckpt-6.h5 (not given here): steps 6; checkpoint-every 3; seed 5; global-batch 16" &&
    grep -q "^  model      gpt, 2 blocks, 1 cut; 2 ranks (data parallel), global batch 16" "$out" &&
    grep -q "^  steps      6 " "$out"
tap $? "--init-from without --model: the checkpoint's gpt model and its run's options but the --lr given (status $rc)"
[ $rc = 0 ] || show "$out"

# ---- item 4: a given option that changes the model: one line, status 2
take="without --model and --cuts the run takes the checkpoint's model"
out=$dir/mlp.out
run2 --train "$dir/data" --model mlp --resume "$dir/res/ckpt-6.h5"
[ $rc = 2 ] && says "erase-train: --model mlp: the checkpoint is gpt, 2 blocks, 1 cut; this run asks for mlp ($dir/res/ckpt-6.h5; $take)" &&
    ! grep -q "pipeline layout differs\|differs from the checkpoint's in" "$out"
tap $? "--resume a gpt checkpoint with --model mlp: refused naming both models (status $rc)"
[ $rc = 2 ] || show "$out"

mkdir "$dir/ctr"
out=$dir/ctr.out
run2 --train "$dir/data" --model "$dir/model.cfg" --global-batch 24 --steps 4 --checkpoint-dir "$dir/ctr"
out=$dir/ctr-mlp.out
run2 --train "$dir/data" --model mlp --init-from "$dir/ctr/ckpt-4.h5"
[ $rc = 2 ] && says "erase-train: --model mlp: the checkpoint is ctr, 3 blocks, 2 cuts; this run asks for mlp ($dir/ctr/ckpt-4.h5; $take)" &&
    ! grep -q "pipeline layout differs\|differs from the checkpoint's in" "$out"
tap $? "--init-from a ctr checkpoint into an mlp run: refused naming both models, no tensor list (status $rc)"
[ $rc = 2 ] || show "$out"

out=$dir/cuts.out
run2 --train "$dir/text/train" --cuts none --resume "$G/ckpt-3.h5"
[ $rc = 2 ] && says "erase-train: --cuts none: the checkpoint is gpt, 2 blocks, 1 cut; this run asks for gpt, 2 blocks, 0 cuts ($G/ckpt-3.h5; $take)"
tap $? "--resume with --cuts none: refused naming both (status $rc)"
[ $rc = 2 ] || show "$out"

out=$dir/width.out
run2 --train "$dir/text/train" --model "$dir/gpt64.cfg" --init-from "$G"
[ $rc = 2 ] && says "erase-train: --model $dir/gpt64.cfg: the checkpoint is gpt, 2 blocks, 1 cut, width = 32; this run asks for gpt, 2 blocks, 1 cut, width = 64 ($G/ckpt-6.h5; $take)"
tap $? "--init-from DIR with another width: refused naming the setting (status $rc)"
[ $rc = 2 ] || show "$out"

out=$dir/eval.out
run2 --eval "$dir/text/eval" --model ctr --eval-only --init-from "$G/ckpt-6.h5"
[ $rc = 2 ] && says "erase-train: --model ctr: the checkpoint is gpt, 2 blocks, 1 cut; this run asks for ctr ($G/ckpt-6.h5; $take)"
tap $? "--eval-only with --model ctr on a gpt checkpoint: refused naming both (status $rc)"
[ $rc = 2 ] || show "$out"

# ---- item 5: a whole checkpoint into a pipeline, each stage its blocks
out=$dir/dp-ctr.out
run2 --train "$dir/data" --model "$dir/ctr.cfg" --global-batch 24 --steps 8 --checkpoint-every 4 \
    --checkpoint-dir "$dir/dpctr"
P=$dir/pp-ctr
out=$dir/pp-ctr.out
ERASE_DEBUG_CKPT_AFTER_RESUME=1 run2 --train "$dir/data" --pp 2 --schedule 1f1b --checkpoint-dir "$P" \
    --resume "$dir/dpctr/ckpt-4.h5"
tests/ckpt/ckpt-tool compare "$dir/dpctr/ckpt-4.h5" "$P/ckpt-4.h5" "$P/ckpt-4.h5.stage1" >"$dir/cmp-pp-ctr.out" 2>&1
c=$?
[ $rc = 0 ] && [ $c = 0 ] && [ -f "$P/ckpt-8.h5.stage1" ]
tap $? "ctr: a data-parallel checkpoint resumed on --pp 2 (1f1b): both stages' state as loaded bitwise the checkpoint's, then trained to step 8 (status $rc, compare $c)"
[ $rc = 0 ] || show "$out"
[ $c = 0 ] || show "$dir/cmp-pp-ctr.out"

P=$dir/pp-gpt
out=$dir/pp-gpt.out
ERASE_DEBUG_CKPT_AFTER_RESUME=1 run2 --train "$dir/text/train" --pp 2 --schedule local --checkpoint-dir "$P" \
    --resume "$G/ckpt-3.h5"
tests/ckpt/ckpt-tool compare "$G/ckpt-3.h5" "$P/ckpt-3.h5" "$P/ckpt-3.h5.stage1" >"$dir/cmp-pp-gpt.out" 2>&1
c=$?
[ $rc = 0 ] && [ $c = 0 ] && [ -f "$P/ckpt-6.h5.stage1" ]
tap $? "gpt: a data-parallel checkpoint resumed on --pp 2 (local): bitwise as loaded, then trained to step 6 (status $rc, compare $c)"
[ $rc = 0 ] || show "$out"
[ $c = 0 ] || show "$dir/cmp-pp-gpt.out"

out=$dir/pp-init.out
run2 --train "$dir/data" --model "$dir/ctr.cfg" --global-batch 24 --steps 4 --pp 2 --init-from "$dir/dpctr/ckpt-8.h5" \
    --checkpoint-dir "$dir/pp-init"
[ $rc = 0 ] && grep -q "^init   from $dir/dpctr/ckpt-8.h5 (step 8 of an earlier run): parameters loaded; this run starts at step 0" "$out" &&
    [ -f "$dir/pp-init/ckpt-4.h5.stage1" ]
tap $? "--init-from a data-parallel checkpoint --pp 2: the pipeline starts from it (status $rc)"
[ $rc = 0 ] || show "$out"

# ---- item 6: a finished run resumed: nothing to do
ls -l "$dir/res" >"$dir/before"
out=$dir/done.out
run2 --train "$dir/text/train" --checkpoint-dir "$dir/res" --resume auto --metrics "$dir/done.jsonl"
ls -l "$dir/res" >"$dir/after"
[ $rc = 0 ] && says "resume nothing to do: $dir/res/ckpt-6.h5 is at step 6 and this run asks for 6 steps (--steps 6): give more --steps to train further" &&
    ! grep -q "erase-train summary\|s of steps\|QPS" "$out" && cmp -s "$dir/before" "$dir/after" && [ ! -s "$dir/done.jsonl" ]
tap $? "--resume auto of a finished run: one line, nothing to do, no summary, nothing written (status $rc)"
[ $rc = 0 ] || show "$out"

# ---- review finding 8: a resume after a kill (ckpt-6 removed) whose
# global batch comes from the checkpoint (its run gave --batch 8) notes no
# --batch or --global-batch as changed
K=$dir/killed
out=$dir/killed.out
run2 --train "$dir/data" --model "$dir/model.cfg" --batch 8 --steps 6 --checkpoint-every 3 --checkpoint-dir "$K"
mv "$K/ckpt-6.h5" "$dir/killed-ckpt-6.h5"
out=$dir/killed-res.out
run2 --train "$dir/data" --checkpoint-dir "$K" --resume auto
tests/ckpt/ckpt-tool compare "$dir/killed-ckpt-6.h5" "$K/ckpt-6.h5" >"$dir/cmp-killed.out" 2>&1
c=$?
[ $rc = 0 ] && [ $c = 0 ] &&
    says "note   taken from the run of $K/ckpt-3.h5 (not given here): steps 6; checkpoint-every 3; global-batch 16" &&
    ! grep -q "^note   options that differ\|batch 8 -> \|global_batch 0 -> " "$out"
tap $? "--resume auto after a kill, the run gave --batch 8: the global batch taken, no option noted as changed, ckpt-6 bitwise (status $rc, compare $c)"
[ $rc = 0 ] || show "$out"
[ $c = 0 ] || show "$dir/cmp-killed.out"

# ---- review finding 3: a model named by the run file alone yields to the
# checkpoint's on --resume and --eval-only (a note); on the command line it
# is still refused (jobs/shakespeare's pattern: its run file names the
# model, a run gave --model on the command line)
printf 'model = "gpt.cfg";\n' >"$dir/gpt.run"
R=$dir/runfile
out=$dir/runfile.out
run2 --config "$dir/gpt.run" --model "$dir/gpt64.cfg" --train "$dir/text/train" --global-batch 16 --steps 3 \
    --checkpoint-dir "$R"
out=$dir/runfile-line.out
run2 --config "$dir/gpt.run" --model "$dir/gpt.cfg" --train "$dir/text/train" --checkpoint-dir "$R" --resume auto \
    --steps 6
[ $rc = 2 ] && [ ! -f "$R/ckpt-6.h5" ] &&
    says "erase-train: --model $dir/gpt.cfg: the checkpoint is gpt, 2 blocks, 1 cut, width = 64; this run asks for gpt, 2 blocks, 1 cut, width = 32 ($R/ckpt-3.h5; $take)"
tap $? "--resume auto with the run file's model also on the command line: refused naming both (status $rc)"
[ $rc = 2 ] || show "$out"

out=$dir/runfile-res.out
run2 --config "$dir/gpt.run" --train "$dir/text/train" --checkpoint-dir "$R" --resume auto --steps 6
[ $rc = 0 ] && [ -f "$R/ckpt-6.h5" ] && grep -q "^resume from $R/ckpt-3.h5: step 3, " "$out" &&
    says "note   the run file's model $dir/gpt.cfg differs from the checkpoint's ($R/ckpt-3.h5 is gpt, 2 blocks, 1 cut, width = 64; the run file's gpt, 2 blocks, 1 cut, width = 32): resuming the checkpoint's"
tap $? "--resume auto with the model named by the run file alone: the checkpoint's model, with a note (status $rc)"
[ $rc = 0 ] || show "$out"

out=$dir/runfile-eval.out
run2 --config "$dir/gpt.run" --eval "$dir/text/eval" --eval-only --init-from "$R/ckpt-6.h5"
[ $rc = 0 ] &&
    says "note   the run file's model $dir/gpt.cfg differs from the checkpoint's ($R/ckpt-6.h5 is gpt, 2 blocks, 1 cut, width = 64; the run file's gpt, 2 blocks, 1 cut, width = 32): evaluating the checkpoint's"
tap $? "--eval-only with the model named by the run file alone: the checkpoint's model, with a note (status $rc)"
[ $rc = 0 ] || show "$out"

# ---- review finding 4: a pipeline checkpoint resumed with --resume auto
# alone takes its --pp and --schedule (a note) and ends bitwise as the
# uninterrupted run; the ranks are checked against the --pp taken
P1=$dir/pp-local
out=$dir/pp-local.out
run2 --train "$dir/data" --model "$dir/model.cfg" --global-batch 24 --steps 8 --checkpoint-every 4 --pp 2 \
    --schedule local --checkpoint-dir "$P1"
mkdir "$dir/pp-res"
cp "$P1/ckpt-4.h5" "$P1/ckpt-4.h5.stage1" "$dir/pp-res/"
out=$dir/pp-res.out
run2 --train "$dir/data" --checkpoint-dir "$dir/pp-res" --resume auto
tests/ckpt/ckpt-tool compare "$P1/ckpt-8.h5" "$dir/pp-res/ckpt-8.h5" >"$dir/cmp-pp-res.out" 2>&1 &&
    tests/ckpt/ckpt-tool compare "$P1/ckpt-8.h5.stage1" "$dir/pp-res/ckpt-8.h5.stage1" >>"$dir/cmp-pp-res.out" 2>&1
c=$?
[ $rc = 0 ] && [ $c = 0 ] && grep -q "^resume from $dir/pp-res/ckpt-4.h5: step 4, " "$out" &&
    says "note   the pipeline layout taken from $dir/pp-res/ckpt-4.h5 (not given here): pp 2; schedule local"
tap $? "--resume auto of a --pp 2 --schedule local checkpoint with no layout options: the checkpoint's layout, ckpt-8 bitwise the uninterrupted run's (status $rc, compare $c)"
[ $rc = 0 ] || show "$out"
[ $c = 0 ] || show "$dir/cmp-pp-res.out"

out=$dir/pp-ranks.out
ERASE_CHECK_OPTIONS=3 apps/erase-train --train "$dir/data" --checkpoint-dir "$dir/pp-res" --resume auto >"$out" 2>&1
rc=$?
[ $rc = 2 ] && [ "$(wc -l <"$out")" = 1 ] &&
    says "erase-train: --pp 2 (taken from the checkpoint $dir/pp-res/ckpt-8.h5): this job has 3 ranks, not a multiple of the 2 stages (ranks = data-parallel replicas x --pp)"
tap $? "--resume auto of a --pp 2 checkpoint for a job of 3 ranks: one line naming the --pp taken (status $rc)"
[ $rc = 2 ] || show "$out"

# ---- review finding 4: a layout error from a checkpoint's model advises
# what that model allows, not a change of the model (--cuts, tie_head)
out=$dir/pp-advice.out
run2 --train "$dir/data" --init-from "$P1/ckpt-8.h5" --pp 2
[ $rc = 2 ] &&
    says "erase-train: --pp 2: the model of $P1/ckpt-8.h5 has 0 attached boundaries (stage boundaries carry the gradient): --pp at most 1, or --schedule local (at most 3 stages)"
tap $? "--init-from a ctr checkpoint of 2 cuts --pp 2 (1f1b): the advice keeps its model (status $rc)"
[ $rc = 2 ] || show "$out"

sed '/cuts = \[1\];/d' "$dir/gpt.cfg" >"$dir/gpt-tied.cfg" # no cuts: its LM head tied
out=$dir/tied.out
run2 --train "$dir/text/train" --model "$dir/gpt-tied.cfg" --global-batch 16 --steps 1 --checkpoint-dir "$dir/tied"
out=$dir/tied-pp.out
run2 --train "$dir/text/train" --init-from "$dir/tied/ckpt-1.h5" --pp 2
[ $rc = 2 ] &&
    says "erase-train: --pp 2: the gpt model of $dir/tied/ckpt-1.h5 ties its LM head to h0/wte, which would join stage 0 and stage 1: this checkpoint's model trains without --pp" &&
    ! grep -q "tie_head" "$out"
tap $? "--init-from a tied gpt checkpoint --pp 2: the advice keeps its model (status $rc)"
[ $rc = 2 ] || show "$out"
