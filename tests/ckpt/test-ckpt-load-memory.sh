#!/bin/sh
# Loading a checkpoint into a run with sharded tables holds the rank's own
# rows, never a whole table (issue 35; io/checkpoint.h, Sharded tensors;
# docs/checkpoints.md, Memory). A ctr model with one large table (T =
# 1,500,001 rows x 32 floats, 183 MiB) is trained 4 steps on 4 ranks with
# --embeddings row (checkpoint A, written row by row) and on 1 rank
# replicated (checkpoint B, written whole). Then --eval-only --init-from A
# and B, --eval-only --resume auto, --resume B and --init-from B
# --init-from-optimizer, all on 4 ranks with --embeddings row: each rank's
# peak resident memory (tests/ckpt/peak-rss) stays within that of the
# row-sharded training run plus T/8 (a rank holds T/4 of the table; reading
# the table whole, as erase-train did before, costs every rank T more);
# the evaluations print the eval line of a replicated evaluation of the
# same checkpoint on 1 rank, and the state the resume loaded (written at
# once: ERASE_DEBUG_CKPT_AFTER_RESUME) is bitwise checkpoint B.
. "$(dirname "$0")/ckpt.sh"
need tests/ckpt/peak-rss
setup_data
echo "1..8"
rows=1500001 D=32
table=$((rows * D * 4)) # bytes of the large table
cat >"$dir/big.cfg" <<CFG
model = "ctr";
ctr: {
  embedding_dim = $D;
  table_rows = [$rows, 101, 101, 101, 101, 101, 101, 101, 101, 101, 101, 101, 101, 101, 101, 101, 101, 101, 101, 101,
                101, 101, 101, 101, 101, 101];
  bottom_mlp = [16, $D];
  subarch_width = 16;
  subarchs = 2;
  cuts = "all";
};
CFG
# a sanitizer's shadow memory and quarantine are not the program's: the
# runs and the comparisons are made, the bounds not checked
measured=1
tests/ckpt/peak-rss --sanitized && measured=0

# mrun NAME NP ARGS...: erase-train on NP ranks on $dir/data, each rank's
# peak resident memory (KiB) in $dir/NAME.rss.<rank>; output in $out
# ($dir/NAME.out), status in $rc, the largest peak in $peak (KiB) and all
# of them in $peaks (MiB)
mrun() {
    name=$1 np=$2
    shift 2
    out=$dir/$name.out
    rm -f "$dir/$name.rss".*
    timeout -k 5 180 "$MPIRUN" $MPI_FLAGS -np "$np" tests/ckpt/peak-rss "$dir/$name.rss" apps/erase-train \
        --train "$dir/data" --device cpu --quiet "$@" >"$out" 2>&1
    rc=$?
    peak=$(cat "$dir/$name.rss".* 2>/dev/null | sort -n | tail -1)
    peaks=$(cat "$dir/$name.rss".* 2>/dev/null | awk '{ printf "%s%.0f", (NR > 1 ? " " : ""), $1 / 1024 }')
    : "${peak:=0}"
}
# within: every rank of the last mrun peaked at most at the bound
within() { [ $measured = 0 ] || [ "$peak" -le "$bound" ]; }
# evline FILE: the last eval line without its time
evline() { grep '^eval   step' "$1" | tail -1 | sed 's/ in [0-9.]* s$//'; }

ARGS="--model $dir/big.cfg --global-batch 64 --steps 4 --eval-every 4"
# shellcheck disable=SC2086 # ARGS are options
mrun train-row 4 $ARGS --embeddings row --checkpoint-dir "$dir/row"
rc_row=$rc ref=$peak
bound=$((ref + table / 8 / 1024))
echo "# T = $table bytes; row-sharded training on 4 ranks peaked at $peaks MiB: bound $((bound / 1024)) MiB a rank"
# shellcheck disable=SC2086
mrun train-rep 1 $ARGS --checkpoint-dir "$dir/rep"
[ $rc_row = 0 ] && [ $rc = 0 ] && [ -f "$dir/row/ckpt-4.h5" ] && [ -f "$dir/rep/ckpt-4.h5" ] && [ "$ref" -gt 0 ]
tap $? "the large table trained 4 steps on 4 ranks row-sharded (checkpoint A) and on 1 rank replicated (B) (status $rc_row, $rc)"
[ $rc = 0 ] || show "$out"
A=$dir/row/ckpt-4.h5 B=$dir/rep/ckpt-4.h5

# the reference evaluations: replicated, on 1 rank (the whole table, as it must)
for c in A B; do
    eval "f=\$$c"
    mrun "eval-rep-$c" 1 --eval-only --init-from "$f"
    eval "want_$c=\$(evline \"\$out\")"
    [ $rc = 0 ] || show "$out"
done

# --eval-only --init-from A and B on 4 ranks, row-sharded
for c in A B; do
    eval "f=\$$c want=\$want_$c"
    mrun "eval-row-$c" 4 --eval-only --init-from "$f" --embeddings row
    got=$(evline "$out")
    echo "# --eval-only --init-from $c: peaks $peaks MiB; $got"
    [ $rc = 0 ] && [ -n "$want" ] && [ "$got" = "$want" ] && within
    tap $? "--eval-only --init-from $c (written $([ $c = A ] && echo row-sharded || echo whole)) on 4 ranks row-sharded: every rank within the bound, the replicated evaluation's eval line (status $rc)"
    [ $rc = 0 ] || show "$out"
done

# --eval-only --resume auto: the newest checkpoint of a directory
mrun eval-auto 4 --eval-only --resume auto --checkpoint-dir "$dir/row" --embeddings row
got=$(evline "$out")
echo "# --eval-only --resume auto: peaks $peaks MiB"
[ $rc = 0 ] && [ "$got" = "$want_A" ] && within
tap $? "--eval-only --resume auto (A's directory) on 4 ranks row-sharded: within the bound, the same eval line (status $rc)"
[ $rc = 0 ] || show "$out"

# --resume B (written whole) on 4 ranks row-sharded: the state loaded,
# written at once as the checkpoint of step 4, is B bitwise
# shellcheck disable=SC2086
ERASE_DEBUG_CKPT_AFTER_RESUME=1 mrun resume-row 4 $ARGS --steps 5 --embeddings row --checkpoint-dir "$dir/res" \
    --resume "$B"
echo "# --resume B: peaks $peaks MiB"
resumed=$out
[ $rc = 0 ] && within && grep -q "^resume from $B: step 4, " "$out"
tap $? "--resume B (written whole) on 4 ranks row-sharded: every rank within the bound, one step trained (status $rc)"
[ $rc = 0 ] || show "$out"
tests/ckpt/ckpt-tool compare "$B" "$dir/res/ckpt-4.h5" >"$dir/cmp.out" 2>&1
tap $? "the state --resume B loaded row by row, written back (ERASE_DEBUG_CKPT_AFTER_RESUME), is B bitwise (parameters, optimizer, cursor)"
[ -f "$dir/res/ckpt-4.h5" ] || show "$resumed"
show "$dir/cmp.out" | tail -3

# --init-from B with its optimizer state
# shellcheck disable=SC2086
mrun init-row 4 $ARGS --steps 2 --embeddings row --checkpoint-dir "$dir/init" --init-from "$B" --init-from-optimizer
echo "# --init-from B --init-from-optimizer: peaks $peaks MiB"
[ $rc = 0 ] && within && grep -q "^init   from $B (step 4 of an earlier run): parameters and optimizer state loaded" "$out" &&
    [ -f "$dir/init/ckpt-2.h5" ]
tap $? "--init-from B --init-from-optimizer on 4 ranks row-sharded: every rank within the bound, 2 steps trained (status $rc)"
[ $rc = 0 ] || show "$out"

# the bound can be missed: a replicated evaluation on 4 ranks holds the table whole on every rank
mrun eval-rep4 4 --eval-only --init-from "$A"
echo "# --eval-only replicated on 4 ranks: peaks $peaks MiB"
[ $rc = 0 ] && { [ $measured = 0 ] || [ "$peak" -gt "$bound" ]; } && [ "$(evline "$out")" = "$want_A" ]
tap $? "the bound is one that loading a whole table misses: --eval-only replicated on 4 ranks peaks above it (status $rc)"
[ $rc = 0 ] || show "$out"
[ $measured = 1 ] || echo "# a sanitizer build: the peaks were not compared with the bound"
