#!/bin/sh
# Checkpoints of sharded tables (issue 19; io/checkpoint.h, Sharded
# tensors): erase-train --embeddings table on 4 ranks stopped at step 6,
# resumed on 2 ranks, stopped at 12, resumed on 3 ranks to 18 trains,
# evaluates and checkpoints as the same 4 -> 2 -> 3 sequence with
# --embeddings replicated, digit for digit and bitwise, and continues the
# global sample sequence of an uninterrupted run; a sharded checkpoint
# resumed replicated and a replicated one resumed sharded, a table-wise one
# resumed row-wise and a row-wise one resumed auto end bitwise equal to the
# uninterrupted run; the tables in the file (h5dump) are those of
# the replicated run's, each row written by its owner (the per-row
# checksum datasets hold a checksum for every row); a damaged row fails
# the resume naming the file, dataset and row; a rank that fails to write
# its rows leaves no checkpoint, and so does a rank that cannot see the
# checkpoint directory; erase-inspect ckpt shows the placement.
. "$(dirname "$0")/ckpt.sh"
setup_data
echo "1..16"
ARGS="--global-batch 24 --steps 18 --log-every 2 --eval-every 6 --warmup-steps 2 --lr-decay cosine
    --checkpoint-every 6 --keep-checkpoints 5"

# lines METRICS: the train and eval lines of a metrics file without their
# times and rates (seconds_per_step: issue 37)
lines() {
    grep -E '"type":"(train|eval)"' "$1" |
        sed -E 's/"time":[^,]*,//; s/"qps":[^,]*,//; s/,"seconds":[^}]*//; s/,"seconds_per_step":[^}]*//'
}

# seq3 KIND: the 4 -> 2 -> 3 sequence with --embeddings KIND in $dir/KIND
# (samples logged to $dir/samples.KIND.<rank>, metrics in $dir/KIND.jsonl);
# rc3 = the three statuses
seq3() {
    rc3=
    for seg in "4 6" "2 12" "3 18"; do
        np=${seg% *} stop=${seg#* }
        out=$dir/$1.$np.out
        # shellcheck disable=SC2086 # ARGS are options
        ERASE_DEBUG_KILL_AT_STEP=$stop:0:usr1 ERASE_DEBUG_SAMPLE_LOG=$dir/samples.$1 train $np $ARGS \
            --embeddings "$1" --checkpoint-dir "$dir/$1" --resume auto --metrics "$dir/$1.jsonl"
        rc3="$rc3$rc"
    done
}
seq3 table
seq3 replicated
lines "$dir/table.jsonl" >"$dir/table.lines"
lines "$dir/replicated.jsonl" >"$dir/replicated.lines"
[ "$rc3" = 000 ] && grep -q "^resume from $dir/table/ckpt-6.h5: step 6, " "$dir/table.2.out" &&
    grep -q "^resume from $dir/table/ckpt-12.h5: step 12, " "$dir/table.3.out" &&
    [ "$(grep -c '"type":"eval"' "$dir/table.lines")" = 3 ] && [ "$(grep -c '"type":"train"' "$dir/table.lines")" = 9 ] &&
    cmp -s "$dir/table.lines" "$dir/replicated.lines"
tap $? "table 4 -> 2 -> 3 ranks: the train and eval lines of replicated 4 -> 2 -> 3, digit for digit (status $rc3)"
[ "$rc3" = 000 ] || { show "$dir/table.4.out"; show "$dir/table.2.out"; show "$dir/table.3.out"; }
diff "$dir/table.lines" "$dir/replicated.lines" | head -5 | sed 's/^/# /'

same=0
for step in 6 12 18; do
    tests/ckpt/ckpt-tool compare "$dir/replicated/ckpt-$step.h5" "$dir/table/ckpt-$step.h5" >"$dir/cmp$step.out" 2>&1 ||
        { same=1; show "$dir/cmp$step.out"; }
done
tap $same "its checkpoints at steps 6 (4 ranks), 12 (2) and 18 (3) are bitwise those of replicated (parameters, optimizer, cursor)"

# the sample sequence: every global sample of the 18 steps once, as the
# uninterrupted run takes them
out=$dir/ref.out
# shellcheck disable=SC2086
ERASE_DEBUG_SAMPLE_LOG=$dir/samples.ref train 2 $ARGS --checkpoint-dir "$dir/ref"
sort -n -k1 -k2 "$dir"/samples.ref.* >"$dir/seq.ref"
sort -n -k1 -k2 "$dir"/samples.table.* >"$dir/seq.table"
[ $rc = 0 ] && [ "$(wc -l <"$dir/seq.ref")" = 432 ] && cmp -s "$dir/seq.ref" "$dir/seq.table"
tap $? "table 4 -> 2 -> 3 takes the 432 samples of the uninterrupted run, in order, each once"

# ---- replicated <-> sharded: equal to the uninterrupted run ($dir/ref, 2 ranks)
for pair in "table replicated" "replicated table" "table row" "row auto"; do
    a=${pair% *} b=${pair#* } X=$dir/$a-$b
    out=$dir/$a-$b.1.out
    # shellcheck disable=SC2086
    ERASE_DEBUG_KILL_AT_STEP=6:0:usr1 train 2 $ARGS --embeddings "$a" --checkpoint-dir "$X"
    rc1=$rc
    out=$dir/$a-$b.2.out
    # shellcheck disable=SC2086
    train 2 $ARGS --embeddings "$b" --checkpoint-dir "$X" --resume auto
    tests/ckpt/ckpt-tool compare "$dir/ref/ckpt-18.h5" "$X/ckpt-18.h5" >"$dir/cmp-$a-$b.out" 2>&1
    c=$?
    [ $rc1 = 0 ] && [ $rc = 0 ] && [ $c = 0 ] && grep -q "^resume from $X/ckpt-6.h5: step 6, " "$out" &&
        grep -q "^note   options that differ from the checkpoint's run: embeddings \"$a\" -> \"$b\"" "$out"
    tap $? "--embeddings $a stopped at step 6, resumed $b: bitwise the uninterrupted run (status $rc1, $rc)"
    [ $c = 0 ] || show "$dir/cmp-$a-$b.out"
    [ $rc = 0 ] || show "$out"
done

# ---- a resume that does not say --embeddings keeps the checkpoint's (tables
# that fit a rank only sharded stay sharded), and says it took it
X=$dir/row-kept
out=$dir/row-kept.1.out
# shellcheck disable=SC2086
ERASE_DEBUG_KILL_AT_STEP=6:0:usr1 train 2 $ARGS --embeddings row --checkpoint-dir "$X"
rc1=$rc
out=$dir/row-kept.2.out
# shellcheck disable=SC2086
train 2 $ARGS --checkpoint-dir "$X" --resume auto
tests/ckpt/ckpt-tool compare "$dir/ref/ckpt-18.h5" "$X/ckpt-18.h5" >"$dir/cmp-row-kept.out" 2>&1
c=$?
[ $rc1 = 0 ] && [ $rc = 0 ] && [ $c = 0 ] &&
    grep -q "^note   taken from the run of $X/ckpt-6.h5 (not given here): .*embeddings row" "$out" &&
    grep -q '^  embed  row-wise over 2 ranks' "$out" && ! grep -q '^note   options that differ.*embeddings' "$out"
tap $? "--embeddings row stopped at step 6, resumed without --embeddings: row-wise again, taken from the checkpoint, bitwise the uninterrupted run (status $rc1, $rc)"
[ $c = 0 ] || show "$dir/cmp-row-kept.out"
[ $rc = 0 ] || show "$out"

# ---- the file: the whole tables, as replicated writes them; a checksum
# per row, each written by the row's owner (none left unwritten: 0)
F=$dir/table/ckpt-18.h5
# data DATASET FILE: the dataset's shape and values (all digits), no attributes
data() { h5dump -A 0 -m %.9g -w 1 -y -d "$1" "$2" | sed 1d; }
data /params/input/emb/5 "$F" >"$dir/emb5.table"
data /params/input/emb/5 "$dir/replicated/ckpt-18.h5" >"$dir/emb5.replicated"
data /optim/input/emb/5/adagrad_sum "$F" >"$dir/sum5.table"
data /optim/input/emb/5/adagrad_sum "$dir/replicated/ckpt-18.h5" >"$dir/sum5.replicated"
grep -q 'DATASPACE  SIMPLE { ( 101, 4 ) / ( 101, 4 ) }' "$dir/emb5.table" &&
    [ "$(grep -c '^ *-*[0-9]' "$dir/emb5.table")" = 404 ] && cmp -s "$dir/emb5.table" "$dir/emb5.replicated" &&
    [ "$(grep -c '^ *[0-9]' "$dir/sum5.table")" = 101 ] && cmp -s "$dir/sum5.table" "$dir/sum5.replicated"
tap $? "h5dump: /params/input/emb/5 [101, 4] and its adagrad_sum in the sharded file are the replicated file's"
h5dump -d /row_fnv1a64/params/input/emb/5 -y -w 1 "$F" | grep -E '^ *[0-9]+,?$' | tr -d ' ,' >"$dir/rowsums"
h5dump -d /index "$F" | grep -o '/params/input/emb/5 float32 \[101, 4\] rows' >"$dir/index5"
[ "$(wc -l <"$dir/rowsums")" = 101 ] && ! grep -qx 0 "$dir/rowsums" && [ "$(sort -u "$dir/rowsums" | wc -l)" -gt 90 ] &&
    [ -s "$dir/index5" ]
tap $? "/row_fnv1a64/params/input/emb/5: 101 row checksums, none left unwritten; /index lists the table with checksums per row"

# ---- erase-inspect ckpt: the placement
apps/erase-inspect ckpt "$dir/table/ckpt-12.h5" >"$dir/inspect.out" 2>&1
c=$?
apps/erase-inspect ckpt "$dir/replicated/ckpt-12.h5" >"$dir/inspect-rep.out" 2>&1
[ $c = 0 ] && [ $? = 0 ] &&
    grep -qx '  embeddings  table: sharded tables, each row written once by the rank that held it (where: below)' "$dir/inspect.out" &&
    grep -qE '^  input/emb/3 +\[101, 4\] +L2 [0-9.e-]+  table-wise on rank 1 of 2$' "$dir/inspect.out" &&
    grep -qE '^  input/emb/4/adagrad_sum +\[101\] +L2 [0-9.e-]+  table-wise on rank 0 of 2$' "$dir/inspect.out" &&
    grep -qx '  embeddings  replicated' "$dir/inspect-rep.out" && ! grep -q 'table-wise' "$dir/inspect-rep.out"
tap $? "erase-inspect ckpt: the placement kind and each table's owner as written (table-wise on rank 1 of 2); replicated says so"
grep -E 'embeddings  |input/emb/3 ' "$dir/inspect.out" | sed 's/^/# /'

# ---- a damaged row: the rank that reads it names the file, dataset and row
cp "$dir/table/ckpt-6.h5" "$dir/damaged.h5"
tests/ckpt/ckpt-tool flip "$dir/damaged.h5" /params/input/emb/3 >/dev/null
out=$dir/damaged.out
# shellcheck disable=SC2086
train 3 $ARGS --embeddings table --resume "$dir/damaged.h5"
[ $rc != 0 ] && [ $rc != 124 ] &&
    grep -q "$dir/damaged.h5: dataset /params/input/emb/3: row 50: checksum [0-9a-f]* does not match the stored [0-9a-f]* (damaged data)$" "$out"
tap $? "a flipped bit in row 50 of emb/3: the resume fails naming $dir/damaged.h5, /params/input/emb/3 and row 50 (status $rc)"
grep 'row 50' "$out" | head -1 | sed 's/^/# /'
apps/erase-inspect ckpt "$dir/damaged.h5" >"$dir/inspect-damaged.out" 2>&1
c=$?
apps/erase-inspect ckpt "$dir/table/ckpt-6.h5" | grep -E '^  input/emb/[0-9]+ ' | sed 's/  table-wise.*//' >"$dir/l2.table"
apps/erase-inspect ckpt "$dir/replicated/ckpt-6.h5" | grep -E '^  input/emb/[0-9]+ ' >"$dir/l2.replicated"
[ $c = 1 ] && grep -q "^erase-inspect ckpt: error: $dir/damaged.h5: dataset /params/input/emb/3: row 50: checksum" \
    "$dir/inspect-damaged.out" && [ "$(wc -l <"$dir/l2.table")" = 26 ] && cmp -s "$dir/l2.table" "$dir/l2.replicated"
tap $? "erase-inspect ckpt reads a sharded table row by row: the L2 norms of the replicated file's; the damaged row named (status $c)"

# ---- a rank that cannot write its rows: no checkpoint, on any rank
out=$dir/fail.out
# shellcheck disable=SC2086
ERASE_DEBUG_CKPT_ROWS_FAIL=2 train 4 $ARGS --embeddings table --checkpoint-dir "$dir/fail"
left=$(ls -A "$dir/fail" | tr '\n' ' ')
[ $rc != 0 ] && [ $rc != 124 ] && [ -z "$left" ] &&
    grep -q "writing the checkpoint's sharded rows (rank 2): $dir/fail/.ckpt-6.h5.tmp: ERASE_DEBUG_CKPT_ROWS_FAIL: rank 2 does not write its rows$" "$out"
tap $? "rank 2 of 4 fails to write its rows: every rank fails, nothing left in the directory ($left) (status $rc)"
[ -z "$left" ] || show "$out"

# ---- a checkpoint directory rank 1 cannot see (each rank in a folder of
# its own, a relative --checkpoint-dir): every rank fails, naming rank 1,
# nothing published (Open MPI's collective MPI-IO open hung on it)
mkdir -p "$dir/w0/ck" "$dir/w1/ck"
out=$dir/apart.out
# shellcheck disable=SC2086
A="apps/erase-train --train $dir/data --model $dir/model.cfg --device cpu --quiet $ARGS --embeddings table --checkpoint-dir ck"
ERASE_WATCHDOG_SECONDS=60 timeout -k 5 120 "$MPIRUN" $MPI_FLAGS -x ERASE_WATCHDOG_SECONDS -np 1 --wdir "$dir/w0" \
    "$PWD/$(echo $A | cut -d' ' -f1)" $(echo $A | cut -d' ' -f2-) : -np 1 --wdir "$dir/w1" \
    "$PWD/$(echo $A | cut -d' ' -f1)" $(echo $A | cut -d' ' -f2-) >"$out" 2>&1
rc=$?
left=$(ls -A "$dir/w0/ck" "$dir/w1/ck" | grep -v ':$' | grep . | tr '\n' ' ')
[ $rc != 0 ] && [ $rc != 124 ] && [ -z "$left" ] &&
    grep -q "ck/.ckpt-6.h5.tmp: rank 1 cannot open the checkpoint being written: No such file or directory (every rank of a run with sharded tables writes its rows into it: the checkpoint directory must be the same on every rank)" "$out"
tap $? "a checkpoint directory rank 1 does not see: every rank fails naming rank 1, nothing published ($left) (status $rc)"
[ $rc != 0 ] && [ $rc != 124 ] || show "$out"

# ---- the uninterrupted sharded run writes the replicated run's checkpoint
out=$dir/tab2.out
# shellcheck disable=SC2086
train 2 $ARGS --embeddings table --checkpoint-dir "$dir/tab2"
tests/ckpt/ckpt-tool compare "$dir/ref/ckpt-18.h5" "$dir/tab2/ckpt-18.h5" >"$dir/cmp-tab2.out" 2>&1
c=$?
[ $rc = 0 ] && [ $c = 0 ]
tap $? "--embeddings table on 2 ranks, uninterrupted: its checkpoints are bitwise replicated's (status $rc)"
[ $c = 0 ] || show "$dir/cmp-tab2.out"
