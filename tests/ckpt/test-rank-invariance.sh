#!/bin/sh
# Data parallelism gives bitwise the same parameters on 1, 2 and 4 ranks
# (issue 34, item 3) when the global batch and its micro-batches are the
# same: 1 rank of --accumulate 4, 2 ranks of --accumulate 2 and 4 ranks of
# one micro-step each all compute the gradients of the same 4 micro-batches
# of G/4 samples (docs/accumulate.md: rank r takes samples [rG/D,
# (r+1)G/D) of a step, its micro-step m the m-th quarter of those). The
# sum over them is the same pairwise tree ((g0 + g1) + (g2 + g3)) in every
# run: a rank's accumulation sums its micro-batches pairwise
# (lib/sched/grad_accum.c) and the all-reduce of a power-of-two number of
# ranks continues the tree (recursive halving, lib/comm/mpi_collectives.c). So
# after 6 steps every parameter and optimizer tensor is bitwise equal
# (ckpt-tool compare): nanochat with Muon (and AdamW for its embedding,
# head and vectors) and with AdamW alone; gpt with a cut in graph mode
# with clipping; the mlp with SGD. One BLAS thread per stream in every run
# (the same GEMM kernels). A control shows that the comparison sees a
# difference: micro-batches of another size (1 rank, --accumulate 2) give
# other bits, though the same update in exact arithmetic. 8 micro-batches
# (1 x 8, 2 x 4, 4 x 2) hold the deeper stack of partial sums. A run
# stopped on 2 ranks and resumed on 4 ends as the one-rank run.
# ERASE_ALLREDUCE=ring, the ring on 4 ranks, sums in another order and
# ends elsewhere; a bad value of it is one line. ctr and dcn too: their
# embedding rows are merged as the same tree over micro-batches and ranks
# (erase_sparse_merge, lib/ops/ops.h), replicated or row-sharded over 4
# ranks (before, 2 x 2 summed (g0 + g1) + (g2 + g3) where 1 x 4 summed
# in order).
. "$(dirname "$0")/ckpt.sh"
setup_data
ctr_model "$dir/ctr.cfg"
cat >"$dir/dcn.cfg" <<'CFG'
model = "dcn";
dcn: { embedding_dim = 4; table_rows = 101; bottom_mlp = [8, 4]; cross_layers = 2; cross_rank = 4;
       top_mlp = [16, 8, 1]; cuts = [2, 3]; };
CFG
setup_gpt "$dir/gpt.cfg" "cuts = [1];"
setup_mnist "$dir/mlp.cfg"
printf 'model = "nanochat";\nseed = 3;\nnanochat: { layers = 2; width = 32; heads = 4; kv_heads = 2; context = 16; vocab = 256; cuts = [1]; };\n' \
    >"$dir/nanochat.cfg"
echo "1..12"

MUON="--optimizer muon --lr 0.02 --muon-momentum 0.9 --muon-momentum-warmup 4 --unembedding-lr 0.004 --vector-lr 0.005"
# run NAME MODEL NP A ARGS...: 6 steps of MODEL on NP ranks, --accumulate A
run() {
    name=$1 model=$2 np=$3 acc=$4; shift 4
    model_data "$model"
    [ "$model" = nanochat ] && data="$dir/text/train"
    [ "$model" = dcn ] && data="$dir/data"
    # shellcheck disable=SC2086
    timeout -k 5 120 "$MPIRUN" $MPI_FLAGS -np "$np" apps/erase-train --train "$data" --model "$dir/$model.cfg" \
        --device cpu --quiet --steps 6 --blas-threads 1 --warmup-steps 2 --accumulate "$acc" \
        --checkpoint-dir "$dir/$name" "$@" >"$dir/$name.out" 2>&1
    echo $? >"$dir/$name.rc"
}

# same CASE MODEL G ARGS...: the model on 1 x 4, 2 x 2 and 4 x 1 (ranks x
# micro-steps) with --global-batch G; 0 when all ran and the checkpoints
# of 2 and 4 ranks equal 1 rank's bitwise
same() {
    case=$1 model=$2 g=$3; shift 3
    run "$case-1x4" "$model" 1 4 --global-batch "$g" "$@"
    run "$case-2x2" "$model" 2 2 --global-batch "$g" "$@"
    run "$case-4x1" "$model" 4 1 --global-batch "$g" "$@"
    status="$(cat "$dir/$case"-*.rc | tr -d '\n')"
    ok=0
    [ "$status" = 000 ] || ok=1
    for other in 2x2 4x1; do
        tests/ckpt/ckpt-tool compare "$dir/$case-1x4/ckpt-6.h5" "$dir/$case-$other/ckpt-6.h5" \
            >"$dir/$case-$other.cmp" 2>&1 || { ok=1; show "$dir/$case-$other.cmp"; }
    done
    [ "$status" = 000 ] || for f in "$dir/$case"-*.out; do show "$f"; done
    return $ok
}

same nanochat-muon nanochat 8 $MUON --checkpoint-every 6
tap $? "nanochat (cut at 1), muon: 1 x 4, 2 x 2 and 4 x 1 micro-steps of 2 sequences: bitwise the same checkpoint (status $status)"

same nanochat-adamw nanochat 8 --optimizer adamw --lr 0.003 --checkpoint-every 6
tap $? "nanochat, adamw: 1, 2 and 4 ranks bitwise the same (status $status)"

same gpt gpt 8 --optimizer adamw --lr 0.003 --early-backward graph --grad-clip 0.05 --checkpoint-every 6
tap $? "gpt (cut at 1), adamw, graph mode, --grad-clip: 1, 2 and 4 ranks bitwise the same (status $status)"

same mlp mlp 32 --optimizer sgd --lr 0.05 --early-backward async --checkpoint-every 6
tap $? "mlp, sgd, async mode: 1, 2 and 4 ranks bitwise the same (status $status)"

same ctr ctr 32 --checkpoint-every 6
tap $? "ctr (every block cut), replicated tables: 1, 2 and 4 ranks bitwise the same (status $status)"

same dcn dcn 32 --checkpoint-every 6
tap $? "dcn (cuts 2 and 3): 1, 2 and 4 ranks bitwise the same (status $status)"

# sharded tables take no micro-steps: 4 ranks of one, rows merged by their holders
run ctr-row ctr 4 1 --global-batch 32 --embeddings row --checkpoint-every 6
tests/ckpt/ckpt-tool compare "$dir/ctr-1x4/ckpt-6.h5" "$dir/ctr-row/ckpt-6.h5" >"$dir/ctr-row.cmp" 2>&1
c=$?
[ "$(cat "$dir/ctr-row.rc")" = 0 ] && [ $c = 0 ]
tap $? "ctr, --embeddings row on 4 ranks: bitwise 1 rank's replicated run (compare $c)"
[ $c = 0 ] || { show "$dir/ctr-row.out"; show "$dir/ctr-row.cmp"; }

# ---- the control: micro-batches of 4 sequences instead of 2
run control nanochat 1 2 --global-batch 8 $MUON --checkpoint-every 6
tests/ckpt/ckpt-tool compare "$dir/nanochat-muon-1x4/ckpt-6.h5" "$dir/control/ckpt-6.h5" >"$dir/control.cmp" 2>&1
c=$?
[ "$(cat "$dir/control.rc")" = 0 ] && [ $c = 1 ] && grep -q '^  params/.*: differs' "$dir/control.cmp"
tap $? "control: 1 rank of 2 micro-steps of 4 sequences differs from 4 of 2 (compare status $c)"
[ $c = 1 ] || { show "$dir/control.out"; show "$dir/control.cmp"; }

# ---- 8 micro-batches: partial sums three deep on 1 rank
run deep-1x8 nanochat 1 8 --global-batch 16 $MUON --checkpoint-every 6
run deep-2x4 nanochat 2 4 --global-batch 16 $MUON --checkpoint-every 6
run deep-4x2 nanochat 4 2 --global-batch 16 $MUON --checkpoint-every 6
status="$(cat "$dir"/deep-*.rc | tr -d '\n')"
ok=0
for other in 2x4 4x2; do
    tests/ckpt/ckpt-tool compare "$dir/deep-1x8/ckpt-6.h5" "$dir/deep-$other/ckpt-6.h5" >"$dir/deep-$other.cmp" 2>&1 ||
        { ok=1; show "$dir/deep-$other.cmp"; }
done
[ "$status" = 000 ] && [ $ok = 0 ]
tap $? "nanochat, muon, 8 micro-batches of 2: 1 x 8, 2 x 4 and 4 x 2 bitwise the same (status $status)"

# ---- a run of 10 steps on 2 x 2, stopped at step 5 and resumed on 4 x 1,
# ends where the uninterrupted 1 x 4 run does (the log says when)
run whole nanochat 1 4 --global-batch 8 $MUON --checkpoint-every 5 --steps 10
run half nanochat 2 2 --global-batch 8 $MUON --checkpoint-every 5 --steps 10
mkdir "$dir/resumed" && cp "$dir/half/ckpt-5.h5" "$dir/resumed/"
run resumed nanochat 4 1 --global-batch 8 $MUON --checkpoint-every 5 --steps 10 --resume auto
tests/ckpt/ckpt-tool compare "$dir/whole/ckpt-10.h5" "$dir/resumed/ckpt-10.h5" >"$dir/resumed.cmp" 2>&1
c=$?
[ "$(cat "$dir/whole.rc" "$dir/half.rc" "$dir/resumed.rc" | tr -d '\n')" = 000 ] && [ $c = 0 ] &&
    grep -q '^note   the checkpoint was written by 2 data-parallel ranks, this run has 4: .*bitwise those of a run that kept 2 only with the same micro-batches' "$dir/resumed.out"
tap $? "nanochat, muon: 10 steps on 1 x 4 equal 5 on 2 x 2 resumed for 5 on 4 x 1, bitwise (compare $c)"
[ $c = 0 ] || { show "$dir/resumed.out"; show "$dir/resumed.cmp"; }

# ---- ERASE_ALLREDUCE=ring on 4 ranks: not the pairwise tree, other bits
(export ERASE_ALLREDUCE=ring; run ring nanochat 4 1 --global-batch 8 $MUON --checkpoint-every 6)
tests/ckpt/ckpt-tool compare "$dir/nanochat-muon-1x4/ckpt-6.h5" "$dir/ring/ckpt-6.h5" >"$dir/ring.cmp" 2>&1
c=$?
[ "$(cat "$dir/ring.rc")" = 0 ] && [ $c = 1 ]
tap $? "ERASE_ALLREDUCE=ring on 4 ranks: the ring's order, another checkpoint than 1 x 4 (compare status $c)"
[ $c = 1 ] || show "$dir/ring.out"

(export ERASE_ALLREDUCE=tree; run badenv nanochat 2 1 --global-batch 8)
[ "$(cat "$dir/badenv.rc")" != 0 ] &&
    grep -q "environment ERASE_ALLREDUCE='tree': expected ring or auto" "$dir/badenv.out"
tap $? "ERASE_ALLREDUCE=tree: refused, naming the variable and its values (status $(cat "$dir/badenv.rc"))"
grep -q "ERASE_ALLREDUCE" "$dir/badenv.out" || show "$dir/badenv.out"
