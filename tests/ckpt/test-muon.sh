#!/bin/sh
# erase-train --optimizer muon (issue 34, item 3) on ctr and gpt: the four
# early-backward modes end bitwise equal (parameters, Muon's momentum
# buffers, AdamW's moments); runs on 1, 2 and 4 ranks (oversubscribed)
# write their checkpoints, which refuse replicas that differ by a bit, so
# every rank holds the same parameters; a run resumed from a checkpoint
# ends bitwise equal to the uninterrupted one, taking the Muon options
# from it; the groups' slots are named in the checkpoint; a gpt pipeline
# (--pp 2) trains with it and resumes bitwise; --schedule local holds the
# one-rank run's tensors bitwise; options refused, naming the option.
. "$(dirname "$0")/ckpt.sh"
setup_data
echo "1..13"

MUON="--optimizer muon --lr 0.02 --muon-momentum 0.9 --muon-momentum-warmup 6 --unembedding-lr 0.003 --vector-lr 0.005"
ARGS="--steps 12 --global-batch 24 --checkpoint-every 4 --keep-checkpoints 3 $MUON"

# ---- ctr: the four modes on 2 ranks, bitwise equal
ok=0
for mode in off blocking async graph; do
    out=$dir/$mode.out
    # shellcheck disable=SC2086 # ARGS are options
    train 2 $ARGS --early-backward $mode --checkpoint-dir "$dir/$mode"
    [ $rc = 0 ] || { ok=1; echo "# --early-backward $mode: status $rc"; show "$out"; }
done
for mode in off blocking async; do
    tests/ckpt/ckpt-tool compare "$dir/graph/ckpt-12.h5" "$dir/$mode/ckpt-12.h5" >"$dir/cmp-$mode.out" 2>&1 ||
        { ok=1; echo "# $mode differs from graph:"; show "$dir/cmp-$mode.out"; }
done
tap $ok "ctr, muon, 2 ranks: off, blocking, async and graph end with bitwise-equal checkpoints"

# ---- the slots of each group, by the role the model gave the parameter
apps/erase-inspect ckpt "$dir/graph/ckpt-12.h5" >"$dir/inspect.out" 2>&1
grep -q '^  optimizer   muon (dense), rowwise_adagrad (embedding tables)$' "$dir/inspect.out" &&
    grep -q '^  sub1/fc0/weight/muon_momentum_buffer  *\[16, 355\]' "$dir/inspect.out" &&
    grep -q '^  sub1/head/weight/exp_avg  *\[1, 16\]' "$dir/inspect.out" &&
    grep -q '^  sub1/fc0/bias/exp_avg_sq  *\[16\]' "$dir/inspect.out" &&
    grep -q '^  input/emb/0/adagrad_sum ' "$dir/inspect.out" &&
    ! grep -q 'head/weight/muon_momentum_buffer\|bias/muon_momentum_buffer\|fc0/weight/exp_avg' "$dir/inspect.out"
tap $? "the checkpoint holds Muon's momentum for hidden weights, AdamW's moments for heads and biases, Adagrad's for tables"

# ---- Muon is what trained: the same run with adamw ends elsewhere
out=$dir/adamw.out
train 2 --steps 12 --global-batch 24 --checkpoint-every 4 --optimizer adamw --lr 0.02 --checkpoint-dir "$dir/adamw"
tests/ckpt/ckpt-tool compare "$dir/graph/ckpt-12.h5" "$dir/adamw/ckpt-12.h5" >"$dir/cmp-adamw.out" 2>&1
c=$?
grep -q '^  params/sub1/fc0/weight: differs' "$dir/cmp-adamw.out"
tap $? "adamw at the same lr trains other hidden weights (status $rc, compare $c)"

# ---- 1 and 4 ranks: every checkpoint compares the replicas' checksums
ok=0
for np in 1 4; do
    out=$dir/np$np.out
    # shellcheck disable=SC2086
    train $np $ARGS --early-backward graph --checkpoint-dir "$dir/np$np"
    [ $rc = 0 ] && [ -f "$dir/np$np/ckpt-12.h5" ] || { ok=1; echo "# $np rank(s): status $rc"; show "$out"; }
done
tap $ok "ctr, muon on 1 and 4 ranks: checkpoints at steps 4, 8, 12 written (replicas bitwise equal on every rank)"

# ---- resume: the Muon options come from the checkpoint, the end is bitwise the same
mkdir "$dir/resumed" && cp "$dir/graph/ckpt-4.h5" "$dir/resumed/"
out=$dir/resumed.out
train 2 --steps 12 --global-batch 24 --checkpoint-every 4 --checkpoint-dir "$dir/resumed" --resume auto
tests/ckpt/ckpt-tool compare "$dir/graph/ckpt-12.h5" "$dir/resumed/ckpt-12.h5" >"$dir/cmp-resumed.out" 2>&1
c=$?
[ $rc = 0 ] && [ $c = 0 ] &&
    grep -q '^note   taken from the run of .*optimizer muon; lr 0.02; .*muon-momentum 0.9; muon-momentum-warmup 6; unembedding-lr 0.003; vector-lr 0.005' "$out"
tap $? "resumed from ckpt-4.h5 without the options: Muon's taken from it, ckpt-12.h5 bitwise equal (status $rc, compare $c)"
[ $rc = 0 ] && [ $c = 0 ] || { show "$out"; show "$dir/cmp-resumed.out"; }

# ---- refused, naming the option (usage status 2)
refused "--muon-momentum: only with --optimizer muon (this run's is adamw)" --muon-momentum 0.9
tap $? "--muon-momentum with adamw: refused (status $rc)"
[ $rc = 2 ] || show "$out"
out=$dir/other.out
train 2 --steps 12 --global-batch 24 --optimizer adamw --checkpoint-dir "$dir/graph" --resume auto
[ $rc != 0 ] && grep -q "the optimizer differs: the checkpoint's is muon (dense) + rowwise_adagrad" "$out"
tap $? "a muon checkpoint resumed with --optimizer adamw: refused in one line (status $rc)"
[ $rc != 0 ] || show "$out"

# ---- gpt (wte, wpe and the heads AdamW, the attention and MLP matrices Muon)
# train() reads $dir/data with $dir/model.cfg: from here on gpt's
setup_gpt "$dir/model.cfg" "cuts = [1];"
rm -rf "$dir/data" && cp -r "$dir/text/train" "$dir/data"
GPT="--steps 8 --global-batch 16 --checkpoint-every 4 $MUON --embedding-matrix-lr 0.05"
ok=0
for mode in off graph; do
    out=$dir/gpt-$mode.out
    # shellcheck disable=SC2086
    train 2 $GPT --early-backward $mode --checkpoint-dir "$dir/gpt-$mode"
    [ $rc = 0 ] || { ok=1; show "$out"; }
done
tests/ckpt/ckpt-tool compare "$dir/gpt-graph/ckpt-8.h5" "$dir/gpt-off/ckpt-8.h5" >"$dir/cmp-gpt.out" 2>&1 ||
    { ok=1; show "$dir/cmp-gpt.out"; }
tap $ok "gpt, muon, 2 ranks: off and graph end with bitwise-equal checkpoints"

mkdir "$dir/gpt-resumed" && cp "$dir/gpt-graph/ckpt-4.h5" "$dir/gpt-resumed/"
out=$dir/gpt-resumed.out
train 2 --steps 8 --global-batch 16 --checkpoint-every 4 --checkpoint-dir "$dir/gpt-resumed" --resume auto
tests/ckpt/ckpt-tool compare "$dir/gpt-graph/ckpt-8.h5" "$dir/gpt-resumed/ckpt-8.h5" >"$dir/cmp-gpt-resumed.out" 2>&1
c=$?
[ $rc = 0 ] && [ $c = 0 ]
tap $? "gpt resumed from ckpt-4.h5: ckpt-8.h5 bitwise equal (status $rc, compare $c)"
[ $rc = 0 ] && [ $c = 0 ] || { show "$out"; show "$dir/cmp-gpt-resumed.out"; }
out=$dir/gpt-other.out
train 2 --steps 12 --global-batch 16 --optimizer adamw --embedding-optimizer sgd --checkpoint-dir "$dir/gpt-resumed" \
    --resume auto
[ $rc = 1 ] && grep -q -F "$dir/gpt-resumed/ckpt-8.h5: the optimizer differs: the checkpoint's is muon, this run's adamw (use the same one, or --init-from for the parameters only)" "$out"
tap $? "gpt (no tables) resumed with adamw: refused naming the dense optimizers only (status $rc)"
[ $rc = 1 ] || show "$out"

# ---- a pipeline: each stage's optimizer updates its own blocks (no cut:
# the stage boundary carries the gradient)
sed 's/cuts = \[1\];/cuts = "none"; tie_head = false;/' "$dir/model.cfg" >"$dir/gpt.cfg"
out=$dir/pp.out
# shellcheck disable=SC2086
ptrain gpt 2 --checkpoint-dir "$dir/pp" $MUON
apps/erase-inspect ckpt "$dir/pp/ckpt-12.h5" >"$dir/pp-inspect.out" 2>&1
[ $rc = 0 ] && grep -q '^  optimizer   muon (dense)' "$dir/pp-inspect.out"
tap $? "gpt, muon, --pp 2 (1f1b) on 2 ranks: 12 steps and stage checkpoints (status $rc)"
[ $rc = 0 ] || show "$out"

mkdir "$dir/pp-resumed" && cp "$dir/pp/ckpt-4.h5" "$dir/pp/ckpt-4.h5.stage1" "$dir/pp-resumed/"
out=$dir/pp-resumed.out
# shellcheck disable=SC2086
ptrain gpt 2 --checkpoint-dir "$dir/pp-resumed" --resume auto $MUON
same "$dir/pp" "$dir/pp-resumed"
c=$?
[ $rc = 0 ] && [ $c = 0 ]
tap $? "the pipeline resumed from ckpt-4.h5 and its stage file: ckpt-12.h5 and stage file bitwise equal (status $rc)"
[ $rc = 0 ] && [ $c = 0 ] || show "$out"

# ---- local parallelism: stages begin at cuts; each stage's Muon updates its
# own blocks, so the two stage files hold the one-rank run's tensors bitwise
# (as tests/ckpt/test-pipeline-local.sh shows for adamw)
sed 's/cuts = \[1\];/cuts = [1]; tie_head = false;/' "$dir/model.cfg" >"$dir/gpt.cfg"
out=$dir/one.out
# shellcheck disable=SC2086
ptrain gpt 1 --pp 1 --schedule none --micro-batches 0 --checkpoint-dir "$dir/one" $MUON
orc=$rc
out=$dir/local.out
# shellcheck disable=SC2086
ptrain gpt 2 --schedule local --micro-batches 1 --checkpoint-dir "$dir/local" $MUON
tests/ckpt/ckpt-tool compare "$dir/one/ckpt-12.h5" "$dir/local/ckpt-12.h5" "$dir/local/ckpt-12.h5.stage1" \
    >"$dir/cmp-local.out" 2>&1
c=$?
[ $orc = 0 ] && [ $rc = 0 ] && [ $c = 0 ]
tap $? "gpt, muon, --pp 2 --schedule local: the stage files hold the one-rank run's tensors bitwise (status $orc, $rc; compare $c)"
[ $c = 0 ] || { show "$out"; show "$dir/cmp-local.out"; }
