#!/bin/sh
# Gradient accumulation for data parallelism (issue 34, item 4):
# --accumulate A --batch B runs A micro-steps of B samples per rank for
# each optimizer step and sums their gradients, so that the update is that
# of one step over the A x B samples (--batch A x B).
#
# Not bitwise against --batch A x B: a weight's gradient is a sum over the
# samples of the batch inside one GEMM (and a bias's a sum over rows), which
# adds the 32 samples' terms in another order than four GEMMs of 8 whose
# results are then added; the embedding rows of samples that share a row
# are summed in another order too. So (a) asserts the parameters and
# optimizer state within 1e-6 of each tensor's largest magnitude after 6
# steps (ckpt-tool compare --within), where the run without accumulation
# but with --batch B must be further away. (a) trains with SGD: AdamW's
# division by sqrt(v) turns a 1-ulp difference of a gradient element near
# 0 into a different step (1.9e-6 relative after 6 steps of ctr), which
# says nothing about the sums. Bitwise, as for every step without
# accumulation: (b) the four --early-backward modes (equal --blas-threads),
# with clipping, reducing and updating early or at the end; (c) a resumed
# run, with and without the options given again. --nonfinite skip counts
# optimizer steps. (d) Settings that cannot accumulate are refused in one
# line with status 2.
. "$(dirname "$0")/ckpt.sh"
setup_data
ctr_model "$dir/ctr.cfg"
setup_gpt "$dir/gpt.cfg" "cuts = [1];"
setup_mnist "$dir/mlp.cfg"
echo "1..12"

# run MODEL NP ARGS...: 6 steps of MODEL (ctr, gpt, mlp) on NP ranks, one
# BLAS thread per stream (the same GEMM kernels in every run); $out, $rc
run() {
    model=$1 np=$2; shift 2
    model_data "$model"
    # shellcheck disable=SC2086
    timeout -k 5 120 "$MPIRUN" $MPI_FLAGS -np "$np" apps/erase-train --train "$data" --model "$dir/$model.cfg" \
        --device cpu --quiet --steps 6 --blas-threads 1 --lr 0.003 --warmup-steps 2 "$@" >"$out" 2>&1
    rc=$?
}

# ---- (a) --accumulate 4 --batch B against --batch 4B
for case in "ctr 1 8" "ctr 2 8" "gpt 1 2" "gpt 2 2" "mlp 1 8"; do
    # shellcheck disable=SC2086 # the case's words
    set -- $case
    model=$1 np=$2 b=$3 name=$1-np$2
    out=$dir/$name-acc.out
    sgd="--optimizer sgd --embedding-optimizer sgd"
    # shellcheck disable=SC2086 # $sgd: options
    run "$model" "$np" $sgd --batch "$b" --accumulate 4 --checkpoint-dir "$dir/$name-acc" --metrics "$dir/$name.jsonl"
    r1=$rc
    out=$dir/$name-big.out
    # shellcheck disable=SC2086
    run "$model" "$np" $sgd --batch $((4 * b)) --checkpoint-dir "$dir/$name-big"
    r2=$rc
    out=$dir/$name-small.out
    # shellcheck disable=SC2086
    run "$model" "$np" $sgd --batch "$b" --checkpoint-dir "$dir/$name-small"
    r3=$rc
    tests/ckpt/ckpt-tool compare --within 1e-6 "$dir/$name-acc/ckpt-6.h5" "$dir/$name-big/ckpt-6.h5" >"$dir/$name.cmp" 2>&1
    c=$?
    tests/ckpt/ckpt-tool compare --within 1e-6 "$dir/$name-small/ckpt-6.h5" "$dir/$name-big/ckpt-6.h5" \
        >"$dir/$name-small.cmp" 2>&1
    c_small=$?
    # the metrics count every micro-step's samples: 6 steps of 4 x B x NP
    samples=$(grep '^{"type":"train","step":6,' "$dir/$name.jsonl" | sed 's/.*"samples":\([0-9]*\),.*/\1/')
    [ $r1 = 0 ] && [ $r2 = 0 ] && [ $r3 = 0 ] && [ $c = 0 ] && [ $c_small = 1 ] && [ "$samples" = $((6 * 4 * b * np)) ]
    tap $? "$model on $np rank(s): --accumulate 4 --batch $b within 1e-6 of --batch $((4 * b)) after 6 steps, --batch $b alone not (status $r1 $r2 $r3, compare $c $c_small; $samples samples counted)"
    grep 'relative difference' "$dir/$name.cmp" | sed 's/.*relative difference \([0-9.e+-]*\).*/\1 &/' | sort -g |
        tail -n 1 | sed 's/^[^ ]* */# worst: /'
    [ $c = 0 ] || { show "$dir/$name.cmp"; show "$dir/$name-acc.out"; }
done

# ---- (b) every early-backward mode: bitwise the same parameters, with
# clipping, on 2 ranks, gpt with a cut (its first block's backward
# overlaps the second's forward)
# (graph-end: graph mode with --reduce end --update end)
for mode in off blocking async graph graph-end; do
    out=$dir/mode-$mode.out
    case $mode in
    *-end) set -- --early-backward "${mode%-end}" --reduce end --update end ;;
    *) set -- --early-backward "$mode" ;;
    esac
    run gpt 2 --batch 2 --accumulate 3 --grad-clip 0.05 "$@" --checkpoint-dir "$dir/mode-$mode"
    echo "$rc" >"$dir/mode-$mode.rc"
done
bad=""
for mode in blocking async graph graph-end; do
    tests/ckpt/ckpt-tool compare "$dir/mode-off/ckpt-6.h5" "$dir/mode-$mode/ckpt-6.h5" >"$dir/mode-$mode.cmp" 2>&1 ||
        bad="$bad $mode"
done
[ "$(cat "$dir"/mode-*.rc | tr -d '\n')" = 00000 ] && [ -z "$bad" ]
tap $? "--accumulate 3 --grad-clip: off, blocking, async, graph and graph with --reduce end --update end bitwise equal on 2 ranks (different:${bad:- none})"
for mode in $bad; do show "$dir/mode-$mode.cmp"; done

# ---- (c) resume at an optimizer-step boundary: bitwise the whole run
ARGS="--steps 8 --batch 6 --accumulate 2 --checkpoint-every 4 --keep-checkpoints 3"
out=$dir/whole.out
# shellcheck disable=SC2086 # $ARGS: options
train 2 $ARGS --checkpoint-dir "$dir/whole"
r1=$rc
mkdir "$dir/resumed" && cp "$dir/whole/ckpt-4.h5" "$dir/resumed/"
out=$dir/resumed.out
# shellcheck disable=SC2086
train 2 $ARGS --checkpoint-dir "$dir/resumed" --resume auto
tests/ckpt/ckpt-tool compare "$dir/whole/ckpt-8.h5" "$dir/resumed/ckpt-8.h5" >"$dir/cmp-resumed.out" 2>&1
c=$?
[ $r1 = 0 ] && [ $rc = 0 ] && [ $c = 0 ]
tap $? "ctr on 2 ranks, --accumulate 2: resumed from step 4, ckpt-8.h5 bitwise equal to the uninterrupted run (status $r1 $rc, compare $c)"
[ $c = 0 ] || { show "$out"; show "$dir/cmp-resumed.out"; }

# the same resume without --batch and --accumulate: both taken from the
# checkpoint's run, the same micro-steps, bitwise the same end
mkdir "$dir/taken" && cp "$dir/whole/ckpt-4.h5" "$dir/taken/"
out=$dir/taken.out
train 2 --steps 8 --checkpoint-every 4 --keep-checkpoints 3 --checkpoint-dir "$dir/taken" --resume auto
tests/ckpt/ckpt-tool compare "$dir/whole/ckpt-8.h5" "$dir/taken/ckpt-8.h5" >"$dir/cmp-taken.out" 2>&1
c=$?
[ $rc = 0 ] && [ $c = 0 ] && grep -q "^note   taken from the run of .*: .*accumulate 2; global-batch 24$" "$out"
tap $? "resumed without --batch and --accumulate: taken from the checkpoint, ckpt-8.h5 bitwise equal (status $rc, compare $c)"
[ $rc = 0 ] && [ $c = 0 ] || { show "$out"; show "$dir/cmp-taken.out"; }

# ---- --nonfinite skip counts optimizer steps (the first step makes the
# embeddings overflow): each later step skipped once, the windows of 2
# steps hold 2 x 2 micro-steps x 4 samples x 2 ranks = 32 predictions,
# every one counted non-finite (the outputs of every micro-step scored)
out=$dir/skip.out
train 2 --batch 4 --accumulate 2 --steps 6 --log-every 2 --nonfinite skip --update end --lr 10 --embedding-lr 1e20 \
    --metrics "$dir/skip.jsonl"
[ $rc = 0 ] && [ "$(grep -c '^step [2-6] skipped: non-finite gradient in block input' "$out")" = 5 ] &&
    [ "$(grep -c -E '^\{"type":"train","step":[46],.*"window_samples":32,"nonfinite":32,"skipped":2,' "$dir/skip.jsonl")" = 2 ]
tap $? "--nonfinite skip with --accumulate 2: steps 2-6 skipped, windows of 2 optimizer steps (32 samples, all non-finite) (status $rc)"
[ $rc = 0 ] || { show "$out"; show "$dir/skip.jsonl"; }

# ---- (d) refusals, one line each, usage status 2
refused() {
    want=$1; shift
    out=$dir/refused.out
    train "$@"
    [ $rc = 2 ] && grep -q -x -F "erase-train: $want" "$out"
}
refused "--accumulate 2 with --schedule 1f1b: gpipe, 1f1b and local update once per step over their --micro-batches (--accumulate: paci's backwards per update, or data-parallel micro-steps without a pipeline)" \
    2 --steps 2 --pp 2 --accumulate 2
tap $? "--accumulate with --schedule 1f1b: refused (status $rc)"
[ $rc = 2 ] || show "$out"
refused "--accumulate 2 with --embeddings table: micro-steps over sharded tables are not built; use --embeddings replicated, or one step of the whole batch" \
    2 --steps 2 --embeddings table --accumulate 2
tap $? "--accumulate with sharded embeddings: refused (status $rc)"
[ $rc = 2 ] || show "$out"
refused "--accumulate 16: more micro-steps than the 4 samples of a data-parallel rank's share of each global batch (8 over 2 ranks): a micro-batch holds at least one" \
    2 --steps 2 --global-batch 8 --accumulate 16
tap $? "--accumulate above a rank's samples: refused (status $rc)"
[ $rc = 2 ] || show "$out"
exit 0
