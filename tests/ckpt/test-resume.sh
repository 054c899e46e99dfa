#!/bin/sh
# Resuming erase-train (issue 7), beyond kills: damaged checkpoints are
# skipped with a message naming them and the previous one is used (and the
# run still ends bitwise equal), and renamed *.damaged so that keeping the
# newest K does not count them; the newest complete one is taken whatever
# `latest` names (and newer ones an abandoned run left are set aside as
# *.superseded when a run restarts from an older one); a different model or pipeline layout is
# refused with what differs; 2 ranks resumed on 1 and on 3 take the same
# global sample sequence, and with another global batch under --epochs
# the run still ends with its last epoch; SIGUSR1 (to mpirun) and SIGTERM (to
# a worker thread of one rank: the handler runs off the main thread) stop
# every rank after the same step with a checkpoint and status 0;
# attributes of /meta and /optim out of range are refused naming them, also
# with their checksum fixed up; --init-from starts a new run from a
# checkpoint's parameters; with --grad-clip a resumed run ends bitwise
# equal to the uninterrupted one; erase-inspect
# ckpt shows a checkpoint, or a checkpoint directory's newest usable one.
. "$(dirname "$0")/ckpt.sh"
setup_data
echo "1..29"
# global batch 24 = 2 x 12 = 1 x 24 = 3 x 8; checkpoints at 30, 36, 40 kept
ARGS="--steps 40 --log-every 5 --warmup-steps 5 --lr-decay cosine --checkpoint-every 6 --keep-checkpoints 3"
R=$dir/ref

out=$dir/ref.out
ERASE_DEBUG_SAMPLE_LOG=$dir/samples.ref train 2 $ARGS --batch 12 --checkpoint-dir "$R"
[ $rc = 0 ] && [ -f "$R/ckpt-30.h5" ] && [ -f "$R/ckpt-36.h5" ] && [ -f "$R/ckpt-40.h5" ]
tap $? "reference run on 2 ranks: checkpoints $(ls "$R" | tr '\n' ' ')"
[ $rc = 0 ] || show "$out"

# ---- damaged checkpoints: the newest truncated, the next with a flipped bit
D=$dir/damaged
cp -r "$R" "$D"
truncate -s 5000 "$D/ckpt-40.h5"
tests/ckpt/ckpt-tool flip "$D/ckpt-36.h5" /params/sub1/fc0/weight >/dev/null
out=$dir/damaged.out
train 2 $ARGS --batch 12 --checkpoint-dir "$D" --resume auto
grep -q "^erase-train: checkpoint $D/ckpt-40.h5 is damaged, skipping it: cannot open as HDF5 (truncated or not a checkpoint): truncated file: eof = 5000" "$out" &&
grep -q "^erase-train: checkpoint $D/ckpt-36.h5 is damaged, skipping it: dataset /params/sub1/fc0/weight: checksum [0-9a-f]* does not match the stored [0-9a-f]* (damaged data)$" "$out" &&
grep -q "^resume from $D/ckpt-30.h5: step 30, epoch 0 at sample 720 of the epoch, 720 samples seen" "$out"
tap $? "truncated ckpt-40.h5 and a flipped bit in ckpt-36.h5: both named and skipped, resumed from ckpt-30.h5"
grep -E '^(erase-train: checkpoint|resume from)' "$out" | sed 's/^/# /'
tests/ckpt/ckpt-tool compare "$R/ckpt-40.h5" "$D/ckpt-40.h5" >"$dir/compare.out" 2>&1
c=$?
[ $rc = 0 ] && [ $c = 0 ]; tap $? "that run ends bitwise equal to the reference (status $rc)"

# ---- the damaged ones set aside: keeping the newest 2 does not count them
E=$dir/aside
cp -r "$R" "$E"
truncate -s 5000 "$E/ckpt-40.h5"
tests/ckpt/ckpt-tool flip "$E/ckpt-36.h5" /params/sub1/fc0/weight >/dev/null
out=$dir/aside.out
train 2 --steps 39 --warmup-steps 5 --checkpoint-every 0 --keep-checkpoints 2 --batch 12 --checkpoint-dir "$E" \
    --resume auto
kept=$(ls "$E" | tr '\n' ' ')
[ $rc = 0 ] && [ "$kept" = "ckpt-30.h5 ckpt-36.h5.damaged ckpt-39.h5 ckpt-40.h5.damaged latest " ] &&
    grep -q "^resume damaged $E/ckpt-40.h5 renamed $E/ckpt-40.h5.damaged (not counted by --keep-checkpoints)$" "$out" &&
    grep -q "^resume damaged $E/ckpt-36.h5 renamed $E/ckpt-36.h5.damaged (not counted by --keep-checkpoints)$" "$out"
tap $? "resumed from ckpt-30.h5 past two damaged ones, ended at 39 keeping 2: $kept(status $rc)"
[ $rc = 0 ] || show "$out"

# ---- latest naming an older checkpoint than the newest complete one (the
# writer killed between publishing ckpt-40.h5 and updating latest): latest
# is only a hint, --resume auto and erase-inspect ckpt DIR take ckpt-40.h5
L=$dir/latest
cp -r "$R" "$L"
echo ckpt-36.h5 >"$L/latest"
out=$dir/latest.out
train 2 $ARGS --batch 12 --checkpoint-dir "$L" --resume auto
apps/erase-inspect ckpt "$L" >"$dir/inspect-latest.out" 2>&1
[ $rc = 0 ] && grep -q "^resume from $L/ckpt-40.h5: step 40, " "$out" &&
    [ "$(sed -n 1p "$dir/inspect-latest.out")" = "$L: newest usable checkpoint $L/ckpt-40.h5 (what erase-train --resume $L takes)" ]
tap $? "latest names ckpt-36.h5, ckpt-40.h5 is complete: --resume auto (status $rc) and erase-inspect ckpt DIR take ckpt-40.h5"
grep '^resume from' "$out" | sed 's/^/# /'

# ---- restarted from an older checkpoint in the same directory: the newer
# ones of the abandoned run are set aside (*.superseded), so that --resume
# auto afterwards continues the restarted run, not the abandoned one
S=$dir/superseded
cp -r "$R" "$S"
out=$dir/superseded.out
train 2 --steps 33 --warmup-steps 5 --checkpoint-every 0 --batch 12 --checkpoint-dir "$S" --resume "$S/ckpt-30.h5"
kept=$(ls "$S" | tr '\n' ' ')
out2=$dir/superseded-auto.out
out=$out2
train 2 --steps 34 --warmup-steps 5 --checkpoint-every 0 --batch 12 --checkpoint-dir "$S" --resume auto
[ $rc = 0 ] && [ "$kept" = "ckpt-30.h5 ckpt-33.h5 ckpt-36.h5.superseded ckpt-40.h5.superseded latest " ] &&
    grep -q "^note   $S/ckpt-40.h5 is newer than step 30, where this run starts: renamed $S/ckpt-40.h5.superseded (--resume auto continues this run)$" "$dir/superseded.out" &&
    grep -q "^resume from $S/ckpt-33.h5: step 33, " "$out2"
tap $? "--resume ckpt-30.h5 beside ckpt-36/40: they become *.superseded, ended at 33 ($kept); --resume auto then takes ckpt-33.h5 (status $rc)"
[ $rc = 0 ] || show "$out2"

# ---- gradient-norm clipping (each block of this all-cut model by its own
# norm): resumed from ckpt-30.h5, the run ends bitwise equal to the
# uninterrupted clipped one, which differs from the unclipped reference
C=$dir/clip
out=$dir/clip.out
train 2 $ARGS --batch 12 --grad-clip 0.05 --checkpoint-dir "$C"
rc_ref=$rc
tests/ckpt/ckpt-tool compare "$R/ckpt-40.h5" "$C/ckpt-40.h5" >"$dir/compare-clip.out" 2>&1
c_unclipped=$?
[ $rc_ref = 0 ] && [ $c_unclipped != 0 ]
tap $? "--grad-clip 0.05 on 2 ranks (status $rc_ref): ckpt-40.h5 differs from the unclipped run's"
[ $rc_ref = 0 ] || show "$out"
CR=$dir/clip-resumed
mkdir "$CR"
cp "$C/ckpt-30.h5" "$CR/"
echo ckpt-30.h5 >"$CR/latest"
out=$dir/clip-resumed.out
train 2 $ARGS --batch 12 --grad-clip 0.05 --checkpoint-dir "$CR" --resume auto
tests/ckpt/ckpt-tool compare "$C/ckpt-40.h5" "$CR/ckpt-40.h5" >"$dir/compare-clip-resumed.out" 2>&1
c=$?
[ $rc = 0 ] && [ $c = 0 ] && grep -q "^resume from $CR/ckpt-30.h5: step 30, " "$out"
tap $? "--grad-clip 0.05 resumed from ckpt-30.h5 ends bitwise equal to the uninterrupted run (status $rc, compare $c)"
[ $c = 0 ] || show "$dir/compare-clip-resumed.out"

# ---- every checkpoint damaged: refused, not restarted from scratch
A=$dir/alldamaged
mkdir "$A"
cp "$R/ckpt-36.h5" "$A/"
tests/ckpt/ckpt-tool flip "$A/ckpt-36.h5" /optim/sub2/fc1/weight/exp_avg >/dev/null
out=$dir/alldamaged.out
train 2 $ARGS --batch 12 --checkpoint-dir "$A" --resume auto
[ $rc != 0 ] && grep -q "none of the 1 checkpoint in $A is usable (all damaged, see above)" "$out"
tap $? "only damaged checkpoints: --resume auto fails (status $rc)"

# ---- a different model: refused, listing what differs
sed 's/table_rows = 101/table_rows = 103/' "$dir/model.cfg" >"$dir/model2.cfg"
out=$dir/model.out
timeout -k 5 120 "$MPIRUN" $MPI_FLAGS -np 2 apps/erase-train --train "$dir/data" --model "$dir/model2.cfg" \
    --device cpu --quiet $ARGS --batch 12 --resume "$R/ckpt-30.h5" >"$out" 2>&1
rc=$?
[ $rc = 2 ] && grep -q -F -x "erase-train: --model $dir/model2.cfg: the checkpoint is ctr, 3 blocks, 2 cuts, table_rows = 101; this run asks for ctr, 3 blocks, 2 cuts, table_rows = 103 ($R/ckpt-30.h5; without --model and --cuts the run takes the checkpoint's model)" "$out"
tap $? "another model (tables of 103 rows): refused before work starts, naming both models (status $rc; issue 32)"
[ $rc = 2 ] || show "$out"

# ---- pp_size 2 in /meta without its stage file (.stage1): damaged, named
# (tests/ckpt/test-pipeline.sh refuses real pipeline checkpoints' layouts)
P=$dir/pp
mkdir "$P"
cp "$R/ckpt-30.h5" "$P/"
tests/ckpt/ckpt-tool set "$P/ckpt-30.h5" --fix-sum /meta/pp_size=2 /meta/dp_size=1 >/dev/null
out=$dir/pp.out
train 2 $ARGS --batch 12 --resume "$P/ckpt-30.h5"
[ $rc != 0 ] && grep -q ": --resume $P/ckpt-30.h5: $P/ckpt-30.h5: stage 1 of 2: $P/ckpt-30.h5.stage1: cannot read: No such file or directory" "$out"
tap $? "pp_size 2 in /meta and no stage file: refused naming the missing $P/ckpt-30.h5.stage1 (status $rc)"
[ $rc != 0 ] || show "$out"

# ---- attributes of /meta and /optim out of range, their checksum fixed up
# (io/checkpoint.h): --resume and erase-inspect ckpt refuse them naming the
# attribute (step -5 wrote past a buffer; /optim step -7 was blamed on a
# non-finite gradient; step 2^62 trained nothing and exited 0)
M=$dir/meta
mkdir "$M"
for bad in /meta/step=-5 /optim/step=-7 /meta/step=4611686018427387904; do
    cp "$R/ckpt-30.h5" "$M/ckpt-30.h5"
    tests/ckpt/ckpt-tool set "$M/ckpt-30.h5" --fix-sum "$bad" >/dev/null
    attr=$(echo "$bad" | sed 's|^\(/[a-z]*\)/\([a-z_]*\)=\(.*\)|\1 \2 = \3|')
    case $bad in */step=-*) want="expected an integer >= 0" ;; *) want="expected an integer <= 1099511627776" ;; esac
    out=$dir/meta.out
    train 2 $ARGS --batch 12 --resume "$M/ckpt-30.h5"
    apps/erase-inspect ckpt "$M/ckpt-30.h5" >"$dir/inspect-meta.out" 2>&1
    rc2=$?
    [ $rc = 1 ] && grep -q -F -e "--resume $M/ckpt-30.h5: $M/ckpt-30.h5: attribute $attr: $want" "$out" &&
        [ $rc2 = 1 ] && grep -q -F "$M/ckpt-30.h5: attribute $attr: $want" "$dir/inspect-meta.out"
    tap $? "$bad with its checksum fixed up: --resume (status $rc) and erase-inspect ckpt (status $rc2) refuse it: attribute $attr: $want"
    [ $rc = 1 ] || show "$out"
done
grep -o -e "--resume $M.*" "$out" | sed 's/^/# /'

# ---- 2 ranks -> 1 and 3 ranks: the same global sample sequence
awk '$2 >= 720 && $2 < 960' "$dir"/samples.ref.* | sort -n -k1 -k2 >"$dir/seq.ref"
for np in 1 3; do
    out=$dir/dp$np.out
    ERASE_DEBUG_SAMPLE_LOG=$dir/samples.dp$np train $np $ARGS --batch $((24 / np)) --checkpoint-dir "$dir/dp$np" \
        --resume "$R/ckpt-30.h5"
    cat "$dir"/samples.dp$np.* | sort -n -k1 -k2 >"$dir/seq.dp$np"
    [ $rc = 0 ] && cmp -s "$dir/seq.ref" "$dir/seq.dp$np" && [ "$(wc -l <"$dir/seq.ref")" = 240 ] &&
        grep -q "^note   the checkpoint was written by 2 data-parallel ranks, this run has $np: the data continue from global sample 720 of epoch 0 (the same sample sequence); the results are bitwise those of a run that kept 2 only with the same micro-batches, power-of-two rank counts and no embedding tables (docs/accumulate.md), else they differ in rounding$" "$out"
    tap $? "resumed from 2 ranks onto $np: samples 720..959 (epoch, position, row id) equal the 2-rank run's; the log says when bits are kept"
    [ $rc = 0 ] || show "$out"
done

# ---- another global batch under --epochs: 2 x 12 = 24 -> 3 x 12 = 36. The
# step number continues; the steps left are counted from the data cursor
# in batches of 36, so the run ends with epoch 2 (3,200 train samples).
out=$dir/ep2.out
train 2 --epochs 2 --batch 12 --checkpoint-every 50 --keep-checkpoints 10 --checkpoint-dir "$dir/ep"
[ $rc = 0 ] || show "$out"
out=$dir/ep3.out
train 3 --epochs 2 --batch 12 --resume "$dir/ep/ckpt-50.h5"
want=$((50 + (3200 - 50 * 24) / 36 + 3200 / 36))
[ $rc = 0 ] && grep -q "^  steps      $want (2.00 epochs)" "$out"
tap $? "2 ranks -> 3 with --epochs 2 (global batch 24 -> 36): ends at step $want, 2.00 epochs"
[ $rc = 0 ] && grep -q "^  steps      $want " "$out" || show "$out"

# ---- signals: SIGUSR1 to mpirun, then SIGTERM to one rank of the resumed run
S=$dir/sig
LONG="--batch 12 --steps 100000 --log-every 1 --checkpoint-dir $S"
out=$dir/sig1.out
train_bg 2 $LONG --metrics "$dir/sig1.jsonl"
trained() { [ -f "$1" ] && [ "$(grep -c '"type":"train"' "$1")" -ge "$2" ]; }
wait_for 60 trained "$dir/sig1.jsonl" 3 && kill -USR1 "$(mpirun_pid)"
wait "$job"; rc=$?
line=$(grep '^erase-train: stopped by SIGUSR1 after step ' "$out")
n1=$(echo "$line" | sed 's/.*after step \([0-9]*\);.*/\1/')
echo "# $line"
[ $rc = 0 ] && [ -n "$n1" ] && [ "$line" = "erase-train: stopped by SIGUSR1 after step $n1; checkpoint $S/ckpt-$n1.h5 (continue with --resume auto)" ] &&
    apps/erase-inspect ckpt "$S/ckpt-$n1.h5" | grep -q "^  step        $n1 "
tap $? "SIGUSR1 to mpirun: every rank stopped after step ${n1:-?}, wrote $S/ckpt-${n1:-?}.h5, status $rc"
[ $rc = 0 ] || show "$out"
out=$dir/sig2.out
train_bg 2 $LONG --metrics "$dir/sig2.jsonl" --resume auto
if wait_for 60 trained "$dir/sig2.jsonl" $((${n1:-0} + 3)); then
    p=$(rank_pid 1)
    # no worker thread to take it (never seen): the process, so the run still stops
    tests/ckpt/thread-kill 15 "$p" >"$dir/tk.out" || kill -TERM "$p"
    sed 's/^/# SIGTERM to /' "$dir/tk.out"
fi
wait "$job"; rc=$?
line=$(grep '^erase-train: stopped by SIGTERM after step ' "$out")
n2=$(echo "$line" | sed 's/.*after step \([0-9]*\);.*/\1/')
echo "# $line"
[ $rc = 0 ] && grep -q "^resume from $S/ckpt-$n1.h5: step $n1," "$out" && [ -n "$n2" ] && [ "$n2" -gt "$n1" ] &&
    [ -f "$S/ckpt-$n2.h5" ]
tap $? "resumed at step ${n1:-?}, SIGTERM to a worker thread of rank 1 only: both stopped after step ${n2:-?} with a checkpoint, status $rc"
[ $rc = 0 ] || show "$out"

# ---- a signal during start-up (a job pre-empted as it starts): caught from
# the start of main, it stops the run after its first step
out=$dir/early.out
ERASE_DEBUG_RAISE_AT_START=1 train 2 --batch 12 --steps 40 --checkpoint-dir "$dir/early"
[ $rc = 0 ] &&
    grep -q "^erase-train: stopped by SIGUSR1 after step 1; checkpoint $dir/early/ckpt-1.h5 (continue with --resume auto)" "$out"
tap $? "SIGUSR1 to every rank during start-up: all stop after step 1 with a checkpoint, status $rc"
[ $rc = 0 ] || show "$out"

# ---- warm start: --init-from (another seed, so nothing equals the reference by chance)
out=$dir/init.out
train 1 --batch 12 --steps 3 --seed 7 --checkpoint-dir "$dir/init" --init-from "$R/ckpt-40.h5"
same=$(tests/ckpt/ckpt-tool rows-equal "$R/ckpt-40.h5" "$dir/init/ckpt-3.h5" params/input/emb/0 | cut -d' ' -f1)
out0=$out; out=$dir/fresh.out
train 1 --batch 12 --steps 3 --seed 7 --checkpoint-dir "$dir/fresh"
fresh=$(tests/ckpt/ckpt-tool rows-equal "$R/ckpt-40.h5" "$dir/fresh/ckpt-3.h5" params/input/emb/0 | cut -d' ' -f1)
grep -q "^init   from $R/ckpt-40.h5 (step 40 of an earlier run): parameters loaded; this run starts at step 0" "$out0" &&
    apps/erase-inspect ckpt "$dir/init/ckpt-3.h5" | grep -q "^  step        3 (optimizer clock: step 3," &&
    [ "${same:-0}" -gt 50 ] && [ "${fresh:-1}" = 0 ]
tap $? "--init-from: a new run at step 0; after 3 steps ${same:-?} of 101 rows of table 0 are the checkpoint's (without --init-from: ${fresh:-?})"
out=$dir/initopt.out
train 1 --batch 12 --steps 3 --seed 7 --checkpoint-dir "$dir/initopt" --init-from "$R" --init-from-optimizer
accs=$(tests/ckpt/ckpt-tool rows-equal "$R/ckpt-40.h5" "$dir/initopt/ckpt-3.h5" optim/input/emb/0/adagrad_sum | cut -d' ' -f1)
grep -q "^init   from $R/ckpt-40.h5 (step 40 of an earlier run): parameters and optimizer state loaded" "$out" &&
    [ "${accs:-0}" -gt 50 ]
tap $? "--init-from DIR --init-from-optimizer: the newest checkpoint's optimizer state too (${accs:-?} of 101 Adagrad accumulators kept)"
out=$dir/initsgd.out
train 1 --batch 12 --steps 3 --init-from "$R" --init-from-optimizer --optimizer sgd
[ $rc = 1 ] && grep -q -F "$R/ckpt-40.h5: the optimizer differs: the checkpoint's is adamw (dense) + rowwise_adagrad (tables), this run's sgd + rowwise_adagrad (use the same ones, or drop --init-from-optimizer to load the parameters only)" "$out"
tap $? "--init-from-optimizer with another optimizer: refused (status $rc), advising to drop --init-from-optimizer"
[ $rc = 1 ] || show "$out"
apps/erase-convert synth -q -o "$dir/small" --rows 1000 --chunk-rows 256 >"$dir/small.log" 2>&1
out=$dir/small.out
# not train(): a second --train would add $dir/small to its $dir/data
timeout -k 5 120 "$MPIRUN" $MPI_FLAGS -np 2 apps/erase-train --train "$dir/small" --model "$dir/model.cfg" \
    --device cpu --quiet --batch 12 --steps 50 --resume "$R/ckpt-40.h5" >"$out" 2>&1
rc=$?
[ $rc = 1 ] && grep -q -F -e "--resume: the checkpoint's data cursor (epoch 0, sample 960 of the epoch) is not in --train $dir/small (800 training samples): resume on the same data, or start a new run from its parameters with --init-from" "$out"
tap $? "--resume on smaller data: refused (status $rc), the cursor and the data named, --init-from suggested"
[ $rc = 1 ] || show "$out"
out=$dir/notdir.out
train 1 --batch 12 --steps 3 --checkpoint-dir "$R/ckpt-40.h5"
[ $rc = 2 ] && grep -q -F -e "--checkpoint-dir $R/ckpt-40.h5: not a directory" "$out"
tap $? "--checkpoint-dir naming a file: a usage error (status $rc), not a directory"
[ $rc = 2 ] || show "$out"

# ---- erase-inspect ckpt
apps/erase-inspect ckpt "$R/ckpt-40.h5" >"$dir/inspect.out" 2>&1
rc=$?
[ $rc = 0 ] && grep -q "^  step        40 (optimizer clock: step 40, lr " "$dir/inspect.out" &&
    grep -q "^  sizes       world 2 = dp 2 x pp 1" "$dir/inspect.out" &&
    grep -q "^  samples     960 seen; epoch 0, data cursor at sample 960 of the epoch; global batch 24" "$dir/inspect.out" &&
    grep -q "^      table_rows = 101;" "$dir/inspect.out" &&
    grep -Eq "^  input/emb/0 +\[101, 4\] +L2 [0-9.]+" "$dir/inspect.out" &&
    grep -Eq "^  sub2/fc1/weight/exp_avg_sq +\[16, 16\] +L2 [0-9.e-]+" "$dir/inspect.out"
tap $? "erase-inspect ckpt: step, samples, sizes, model file, tensors with shape and L2 norm"
sed -n '1,6p' "$dir/inspect.out" | sed 's/^/# /'
apps/erase-inspect ckpt "$A/ckpt-36.h5" >"$dir/inspect-bad.out" 2>&1
rc=$?
[ $rc = 1 ] && grep -q "dataset /optim/sub2/fc1/weight/exp_avg: checksum .* does not match" "$dir/inspect-bad.out"
tap $? "erase-inspect ckpt of a damaged checkpoint: status $rc, the damage named"

# a directory: the checkpoint --resume DIR takes; damaged ones named; none: one line
apps/erase-inspect ckpt "$R" >"$dir/inspect-dir.out" 2>"$dir/inspect-dir.err"
rc=$?
[ $rc = 0 ] && [ ! -s "$dir/inspect-dir.err" ] &&
    [ "$(sed -n 1p "$dir/inspect-dir.out")" = "$R: newest usable checkpoint $R/ckpt-40.h5 (what erase-train --resume $R takes)" ] &&
    sed -n 2p "$dir/inspect-dir.out" | grep -q "^checkpoint $R/ckpt-40.h5: format " &&
    grep -q "^  step        40 (optimizer clock: step 40, lr " "$dir/inspect-dir.out" && ok1=1
apps/erase-inspect ckpt "$A" >/dev/null 2>"$dir/inspect-dir.err"
rc2=$?
sed -n 1p "$dir/inspect-dir.err" | grep -q "^erase-inspect ckpt: checkpoint $A/ckpt-36.h5 is damaged, skipping it: dataset /optim/sub2/fc1/weight/exp_avg: checksum [0-9a-f]* does not match the stored [0-9a-f]* (damaged data)$" &&
    [ "$(sed -n '2,$p' "$dir/inspect-dir.err")" = "erase-inspect ckpt: error: none of the 1 checkpoint in $A is usable (all damaged, see above)" ] &&
    ok2=1
mkdir "$dir/nockpt"
apps/erase-inspect ckpt "$dir/nockpt" >"$dir/inspect-none.out" 2>"$dir/inspect-none.err"
rc3=$?
[ "${ok1:-0}" = 1 ] && [ $rc2 = 1 ] && [ "${ok2:-0}" = 1 ] && [ $rc3 = 1 ] && [ ! -s "$dir/inspect-none.out" ] &&
    [ "$(cat "$dir/inspect-none.err")" = "erase-inspect ckpt: error: $dir/nockpt: no checkpoint (ckpt-<step>.h5) in this directory" ]
tap $? "erase-inspect ckpt DIR: the newest usable checkpoint, named (status $rc); all damaged: each named, one error (status $rc2); none: one line (status $rc3)"
sed -n 1p "$dir/inspect-dir.out" | sed 's/^/# /'
sed 's/^/# /' "$dir/inspect-dir.err" "$dir/inspect-none.err"
# erase-score passes over a damaged newest checkpoint naming itself (the
# line said erase-train)
cp -r "$R" "$dir/score-dmg"
truncate -s 5000 "$dir/score-dmg/ckpt-40.h5"
echo partial >"$dir/scores.h5.tmp-$(hostname)-99999999" # a killed erase-score's (no such pid)
echo other >"$dir/scores.h5.tmp-another-host-1" # another host's: left alone
timeout -k 5 60 apps/erase-score "$dir/score-dmg" "$dir/data" -o "$dir/scores.h5" >"$dir/score-dir.out" 2>&1
rc=$?
[ $rc = 0 ] && grep -q "^erase-score: checkpoint $dir/score-dmg/ckpt-40.h5 is damaged, skipping it: " "$dir/score-dir.out" &&
    ! grep -q '^erase-train' "$dir/score-dir.out" && [ -s "$dir/scores.h5" ] &&
    [ ! -e "$dir/scores.h5.tmp-$(hostname)-99999999" ] && [ -e "$dir/scores.h5.tmp-another-host-1" ] &&
    grep -q -x "note   removed $dir/scores.h5.tmp-$(hostname)-99999999, left by an erase-score that was stopped (pid 99999999 is not running on $(hostname))" "$dir/score-dir.out"
tap $? "erase-score DIR whose newest checkpoint is damaged: passed over in a line naming erase-score, the next one scored; a killed run's temporary output removed with a note (status $rc)"
[ $? = 0 ] || tap_report "$dir/score-dir.out"
exit 0
