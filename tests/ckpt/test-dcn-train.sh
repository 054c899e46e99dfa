#!/bin/sh
# The dcn model (DLRM-DCNv2, issue 36) under erase-train on the shipped
# Criteo sample, 2 ranks: jobs/dcn.cfg (MLPerf's sizes) trains and
# evaluates; a small dcn with cuts at 2 and 4 (x0 detached between cross
# layers) trains with --embeddings row as with replicated tables, digit for
# digit and with bitwise equal checkpoints (parameters, optimizer, cursor);
# stopped by SIGUSR1 at step 4 and resumed, it ends bitwise where the
# uninterrupted run ends. Exported with --format torch, it has TorchRec's
# DLRM_DCN names, its local heads dropped with one line.
. "$(dirname "$0")/ckpt.sh"
setup_dir
apps/erase-convert criteo -q -o "$dir/data" "${srcdir:-.}/data/criteo/kaggle-train-first9999.tsv" \
    >"$dir/convert.log" 2>&1 || { show "$dir/convert.log"; echo "Bail out! erase-convert criteo failed"; exit 0; }
cat >"$dir/model.cfg" <<'CFG'
model = "dcn";
dcn: {
  embedding_dim = 8;
  table_rows = 1009;
  bottom_mlp = [32, 8];
  cross_layers = 3;
  cross_rank = 16;
  top_mlp = [64, 32, 16, 1];
  cuts = [2, 4];
  local_loss_weight = 0.5;
};
CFG
echo "1..6"

# jobs/dcn.cfg: the reference sizes, 8 blocks without cuts
out=$dir/ref-sizes.out
timeout -k 5 120 "$MPIRUN" $MPI_FLAGS -np 2 apps/erase-train --train "$dir/data" --model "${srcdir:-.}/jobs/dcn.cfg" \
    --device cpu --steps 2 --batch 32 --eval-every 2 >"$out" 2>&1
rc=$?
ne=$(sed -n 's/^eval   step 2: NE \([0-9.]*\) .*/\1/p' "$out")
[ $rc = 0 ] && grep -q '^  model      dcn, 8 blocks, 0 cuts; 2 ranks (data parallel), global batch 64$' "$out" &&
    awk -v ne="$ne" 'BEGIN { exit !(ne > 0.5 && ne < 2) }'
ok=$?
tap $ok "jobs/dcn.cfg on 2 ranks: 8 blocks, no cuts, trains and evaluates (NE $ne, status $rc)"
[ $ok = 0 ] || show "$out"

ARGS="--global-batch 32 --steps 8 --log-every 2 --eval-every 4 --checkpoint-every 4 --keep-checkpoints 5"
lines() {
    grep -E '"type":"(train|eval)"' "$1" |
        sed -E 's/"time":[^,]*,//; s/"qps":[^,]*,//; s/"mfu":[^,]*,//; s/,"seconds":[^}]*//; s/,"seconds_per_step":[^}]*//'
}
for kind in replicated row; do
    out=$dir/$kind.out
    # shellcheck disable=SC2086 # ARGS are options
    train 2 $ARGS --embeddings $kind --checkpoint-dir "$dir/$kind" --metrics "$dir/$kind.jsonl"
    eval "rc_$kind=\$rc"
    lines "$dir/$kind.jsonl" >"$dir/$kind.lines"
done
[ "$rc_replicated$rc_row" = 00 ] && [ "$(grep -c '"type":"eval"' "$dir/row.lines")" = 2 ] &&
    cmp -s "$dir/replicated.lines" "$dir/row.lines"
ok=$?
tap $ok "cuts at 2 and 4: --embeddings row trains and evaluates as replicated, digit for digit (status $rc_replicated $rc_row)"
[ $ok = 0 ] || { show "$dir/replicated.out"; show "$dir/row.out"; diff "$dir/replicated.lines" "$dir/row.lines" | head -5 | sed 's/^/# /'; }
same=0
for step in 4 8; do
    tests/ckpt/ckpt-tool compare "$dir/replicated/ckpt-$step.h5" "$dir/row/ckpt-$step.h5" >"$dir/cmp$step.out" 2>&1 ||
        { same=1; show "$dir/cmp$step.out"; }
done
tap $same "its checkpoints at steps 4 and 8 are bitwise those of replicated (parameters, optimizer, cursor)"

# stopped at step 4 (SIGUSR1: finish the step, checkpoint, exit), resumed
out=$dir/stop.out
# shellcheck disable=SC2086
ERASE_DEBUG_KILL_AT_STEP=4:0:usr1 train 2 $ARGS --checkpoint-dir "$dir/resumed"
rc1=$rc
out=$dir/resume.out
# shellcheck disable=SC2086
train 2 $ARGS --checkpoint-dir "$dir/resumed" --resume auto
[ $rc1 = 0 ] && [ $rc = 0 ] && grep -q "^resume from $dir/resumed/ckpt-4.h5: step 4, " "$out"
ok=$?
tap $ok "stopped at step 4 and resumed from ckpt-4 (status $rc1 $rc)"
[ $ok = 0 ] || { show "$dir/stop.out"; show "$out"; }
tests/ckpt/ckpt-tool compare "$dir/replicated/ckpt-8.h5" "$dir/resumed/ckpt-8.h5" >"$dir/cmp.out" 2>&1
ok=$?
tap $ok "the resumed run's checkpoint at step 8 is bitwise the uninterrupted run's"
[ $ok = 0 ] || show "$dir/cmp.out"

# --format torch: TorchRec's DLRM_DCN state-dict names, the local heads of
# cross0 and cross2 (before the cuts) dropped
need apps/erase-export
apps/erase-export "$dir/replicated/ckpt-8.h5" -o "$dir/dcn.safetensors" --format torch >"$dir/export.out" 2>&1
rc=$?
names=$(head -c 65536 "$dir/dcn.safetensors" | grep -a -o '"[a-zA-Z_0-9.]*":{"dtype"' | sed 's/":{"dtype"//; s/^"//' | sort)
[ $rc = 0 ] && [ "$(echo "$names" | wc -l)" = 47 ] &&
    echo "$names" | grep -q -x 'sparse_arch.embedding_bag_collection.embedding_bags.t_cat_25.weight' &&
    echo "$names" | grep -q -x 'dense_arch.model._mlp.1._linear.weight' &&
    echo "$names" | grep -q -x 'inter_arch.crossnet.V_kernels.2' &&
    echo "$names" | grep -q -x 'over_arch.model.0._mlp.2._linear.bias' &&
    echo "$names" | grep -q -x 'over_arch.model.1.weight' && ! echo "$names" | grep -q 'head' &&
    grep -q -x -F "erase-export: note: 4 tensors of local heads dropped (torch has no place for them; --format erase keeps them): cross0/head/weight, cross0/head/bias, cross2/head/weight, cross2/head/bias" "$dir/export.out"
ok=$?
tap $ok "--format torch: 47 tensors in TorchRec's DLRM_DCN names, the 4 local-head tensors dropped with one line (status $rc)"
[ $ok = 0 ] || { show "$dir/export.out"; echo "$names" | head -50 | sed 's/^/#   /'; }
