#!/bin/sh
# erase-train --schedule local end to end (issue 17; docs/pipelines.md):
# stage s trains in step t the batch of step t-s on activations of stage
# s-1's weights of that batch's version (lag 0), so a drained local pipeline
# holds the parameters of the same cut model trained on one rank. For ctr (4
# blocks, every boundary a cut), mlp (3 blocks) and gpt (2 blocks, tie_head
# = false), --pp 2 on 2 ranks and, for ctr, --pp 4 on 4 (oversubscribed), 12
# steps with --micro-batches 1: the stage files of the checkpoints at steps
# 4 (mid-run: a drain) and 12 together hold every parameter and optimizer
# tensor of the one-rank run's checkpoint bitwise, with its step, cursor and
# clock, and the evaluations at steps 6 (another drain) and 12 print the
# one-rank run's values; the training records of local step t hold the
# one-rank run's loss and metrics of step t-(P-1) (the last stage scores its
# outputs against the right batch). The one-rank run is the same model file
# (same cuts) with no --pp, at the same global batch, with the default
# --early-backward: every mode is bitwise the same arithmetic
# (test-train-classify.sh), and a cut model's blocks are independent (each
# sees its input as a constant, its optimizer step is elementwise on its own
# tensors), so the order blocks run in changes nothing. What must match:
# --micro-batches 1 (M > 1 sums a batch's gradient over micro-batches, which
# rounds differently: the float bound of the pipeline tests, not bitwise)
# and the data-parallel replicas: pp 2 x dp 2 on 4 ranks holds bitwise the
# parameters of the cut model trained data-parallel on 2 ranks (not on one:
# the two halves' gradients are summed after, not inside, the GEMMs). The
# summary's stage lines report version lag 0 for every batch a stage
# received (none on stage 0) and 0 gradients received, stages s > 0 drained
# at each checkpoint and evaluation that found a batch left, and the metrics
# record moves no gradient byte (gpt's exact activation bytes); the ctr --pp
# 4 run resumed from its step-4 checkpoint ends bitwise equal to the
# uninterrupted one, with lag 0 after the resume.
. "$(dirname "$0")/ckpt.sh"
: "${srcdir:=.}"
setup_data # ctr data in $dir/data
sed 's/subarchs = 2;/subarchs = 3;/' "$dir/model.cfg" >"$dir/ctr.cfg" # 4 blocks, 3 cuts
setup_gpt "$dir/gpt.cfg" 'cuts = "all"; tie_head = false;'
setup_mnist "$dir/mlp.cfg"
echo "1..23"

# stages_hold REF LOCAL STEP: LOCAL's ckpt-STEP.h5 and stage files hold
# the tensors of REF's bitwise (ckpt-tool compare's union), output in
# $dir/one.out.
stages_hold() {
    ref=$1/ckpt-$3.h5
    stages "$2/ckpt-$3.h5"
    set -- "$2/ckpt-$3.h5"
    while [ $# -lt $stages_n ]; do set -- "$@" "$1.stage$#"; done
    tests/ckpt/ckpt-tool compare "$ref" "$@" >"$dir/one.out" 2>&1
}

# evals FILE: the evaluation lines' values (not their times).
evals() { grep '^eval   step ' "$1" | sed 's/ in [0-9.]* s$//'; }

# scored FILE: "step metrics" of each train record of a metrics file
# (--log-every 1) whose window trained: its loss and task metrics. Under
# local the last stage scores in step t the batch of step t-(P-1), none in
# the P-1 fill steps of a segment (segments here: steps 1-4, 5-6, 7-8 and
# 9-12, between the drains: P = 2 scores 3+1+1+3 = 8 steps, P = 4 1+1).
scored() {
    grep '"type":"train"' "$1" | grep -v '"loss":null' | sed 's/.*"step":\([0-9]*\),.*\("loss":.*\),"lr":.*/\1 \2/'
}

# lags FILE P N D: every stage line of P stages reports lag 0 for its N
# received batches (stage 0: 0 of 0), no gradient received and, on s > 0,
# D drains (stage 0 never has a batch left to drain).
lags() {
    stage_n=0
    while [ $stage_n -lt "$2" ]; do
        if [ $stage_n = 0 ]; then
            grep -q "^  stage 0 .*, version lag none (no input from a stage), 0 gradients received, .*)$" "$1" &&
                ! grep "^  stage 0 " "$1" | grep -q " drain"
        else
            grep -q "^  stage $stage_n .*, version lag max 0 ($3 of $3 batches at lag 0), 0 gradients received, .*, $4 drains ([0-9.]* ms each)$" "$1"
        fi || return 1
        stage_n=$((stage_n + 1))
    done
}

for model in ctr mlp gpt; do
    O=$dir/$model-one
    out=$O.out
    ptrain "$model" 1 --pp 1 --schedule none --micro-batches 0 --eval-every 6 --checkpoint-dir "$O" \
        --log-every 1 --metrics "$O.jsonl"
    orc=$rc
    [ $rc = 0 ] || show "$out"
    for P in 2 4; do
        [ $P = 4 ] && [ "$model" != ctr ] && continue
        stages=even
        [ $P = 2 ] && [ "$model" = ctr ] && stages=auto
        L=$dir/$model-local$P
        out=$L.out
        ptrain "$model" $P --pp $P --schedule local --micro-batches 1 --stages $stages --eval-every 6 \
            --checkpoint-dir "$L" --log-every 1 --metrics "$L.jsonl"
        stages_hold "$O" "$L" 4
        c4=$?
        cp "$dir/one.out" "$dir/one4.out"
        stages_hold "$O" "$L" 12
        c12=$?
        [ $orc = 0 ] && [ $rc = 0 ] && [ $c4 = 0 ] && [ $c12 = 0 ] && grep -q "^  stages local, $P stages x 1 dp: " "$out"
        tap $? "$model --pp $P --schedule local --stages $stages: the stage files of steps 4 and 12 hold the one-rank run's tensors, step, cursor and clock bitwise (status $orc, $rc; compare $c4, $c12)"
        [ $rc = 0 ] || show "$out"
        [ $c4 = 0 ] || show "$dir/one4.out"
        [ $c12 = 0 ] || show "$dir/one.out"
        [ "$(evals "$O.out" | wc -l)" = 2 ] && [ "$(evals "$O.out")" = "$(evals "$out")" ]
        tap $? "$model --pp $P: the evaluations at steps 6 and 12 print the one-rank run's values"
        evals "$out" | sed 's/^/# /'
        scored "$O.jsonl" >"$dir/scored.one"
        scored "$L.jsonl" | awk -v d=$((P - 1)) '{ $1 -= d; print }' >"$dir/scored.local"
        n=$(wc -l <"$dir/scored.local")
        [ "$n" = $((P == 2 ? 8 : 2)) ] && ! grep -v -x -F -f "$dir/scored.one" "$dir/scored.local" >/dev/null
        tap $? "$model --pp $P: the last stage scores in step t the batch of step t-$((P - 1)): its $n train records with a window hold the one-rank run's loss and metrics of that step"
        head -2 "$dir/scored.local" | sed 's/^/# /'
        lags "$out" $P 12 4
        tap $? "$model --pp $P: every stage line reports version lag 0 for all 12 batches it received, 0 gradients received, 4 drains on stages > 0 (checkpoints 4, 8, 12, evaluation 6)"
        grep "^  stage " "$out" | sed 's/^/# /'
    done
done

# ---- ctr --pp 4's train records: samples/s counts the first stage's
# samples (24 a step) in every window, also where the last stage scored
# nothing (it fills for 3 steps after each drain: "loss":null), and a
# block whose stage trained nothing in the window has a null loss, not 0
# (stage s, block s, fills in the first s steps: step 1 trains block 0
# only, step 3 blocks 0-2)
recs=$dir/ctr-local4.jsonl
grep '"type":"train"' "$recs" | awk '
    { q = $0; sub(/.*"qps":/, "", q); sub(/,.*/, "", q); if (q + 0 <= 0) bad = 1 }
    /"loss":null/ { unscored++ }
    /"step":1,/ { if ($0 !~ /"block_losses":\[[0-9.]+,null,null,null\]/) bad = 1 }
    /"step":3,/ { if ($0 !~ /"block_losses":\[[0-9.]+,[0-9.]+,[0-9.]+,null\]/) bad = 1 }
    END { exit bad || unscored < 1 }'
tap $? "ctr --pp 4 metrics: samples/s > 0 in every train record (also the $(grep -c '"loss":null' "$recs") the last stage scored nothing in); block losses null in a stage's fill: step 1 all but block 0's, step 3 block 3's"
grep '"type":"train"' "$recs" | head -2 | sed 's/^/# /'

# ---- bytes: gpt's stage 0 sends each step one activation (16 sequences x
# 16 tokens x width 32 floats: 32768 bytes) and its 8-byte version; stage 1
# receives them; no gradient byte or message either way
rec=$(grep '"type":"pipeline"' "$dir/gpt-local2.jsonl")
want0='"bytes_sent_per_step":32776,"bytes_received_per_step":0,"activation_bytes_per_step":32768,"gradient_bytes_per_step":0,"gradients_received":0,'
want1='"bytes_sent_per_step":0,"bytes_received_per_step":32776,"activation_bytes_per_step":32768,"gradient_bytes_per_step":0,"gradients_received":0,'
case $rec in
*"\"stage\":0,"*"$want0"*"\"stage\":1,"*"$want1"*) r=0 ;;
*) r=1 ;;
esac
tap $r "gpt --pp 2 metrics: stage 0 sends 32768 + 8 bytes per step, stage 1 receives them, no gradient bytes or messages"
[ $r = 0 ] || echo "# $rec"

# ---- data parallelism inside the stages: pp 2 x dp 2 on 4 ranks holds
# bitwise the parameters of the cut model trained data-parallel on 2 ranks
# (each replica of a stage takes the same half of the batch as that rank,
# a 2-rank all-reduce adds the same two gradients, the update is the same)
O=$dir/ctr-dp2
out=$O.out
ptrain ctr 2 --pp 1 --schedule none --micro-batches 0 --eval-every 6 --checkpoint-dir "$O"
orc=$rc
[ $rc = 0 ] || show "$out"
L=$dir/ctr-local2x2
out=$L.out
ptrain ctr 4 --schedule local --micro-batches 1 --stages 0,2 --eval-every 6 --checkpoint-dir "$L"
stages_hold "$O" "$L" 12
c=$?
[ $orc = 0 ] && [ $rc = 0 ] && [ $c = 0 ] && grep -q "^  stages local, 2 stages x 2 dp: blocks 0-1 | 2-3$" "$out" &&
    [ "$(evals "$O.out")" = "$(evals "$out")" ] && lags "$out" 2 12 4
tap $? "ctr --pp 2 x dp 2 local (4 ranks): bitwise the 2-rank data-parallel run's checkpoint of step 12 and evaluations; lag 0, no gradient (status $orc, $rc; compare $c)"
[ $rc = 0 ] || show "$out"
[ $c = 0 ] || show "$dir/one.out"

# ---- resume from the step-4 checkpoint (pp 4: stages 1-3 fill again
# after the resume, from an empty ring): bitwise the uninterrupted run
R=$dir/ctr-local4
mkdir "$R.res"
cp "$R"/ckpt-4.h5* "$R.res/" 2>/dev/null # none when the run failed (reported above)
out=$R.res.out
ptrain ctr 4 --pp 4 --schedule local --micro-batches 1 --eval-every 6 --checkpoint-dir "$R.res" --resume auto
same "$R" "$R.res"
c=$?
[ $rc = 0 ] && [ $c = 0 ] && grep -q "^resume from $R.res/ckpt-4.h5: step 4, " "$out" &&
    [ "$(evals "$R.out")" = "$(evals "$out")" ]
tap $? "ctr --pp 4 local resumed from step 4: the 4 files of step 12 and the evaluations at 6 and 12 equal the uninterrupted run's (status $rc, compare $c)"
[ $rc = 0 ] || show "$out"
[ $c = 0 ] || for f in "$dir"/cmp*.out; do show "$f"; done
lags "$out" 4 8 3
tap $? "ctr --pp 4 resumed: lag 0 for the 8 batches after the resume, 0 gradients received, 3 drains on stages > 0 (evaluation 6, checkpoints 8, 12)"
grep "^  stage " "$out" | sed 's/^/# /'

# ---- a non-finite gradient found by one stage ends the job at once with
# its message, from that stage (local and paci pass no gradient that would
# carry the NaN to the others; before, the stage stopped alone and the job
# hung in its pending sends until the watchdog, here 60 s)
for sch in local paci; do
    out=$dir/nonfinite-$sch.out
    cuts=
    [ $sch = paci ] && cuts="--cuts none"
    # shellcheck disable=SC2086
    ptrain ctr 2 --schedule $sch $cuts --lr 1e30 --embedding-lr 1e30 --watchdog 60
    n=$(grep -c 'step [0-9]*: non-finite gradient in block [a-z0-9]* (stage [01]); stopping the pipeline before any further update' "$out")
    [ $rc != 0 ] && [ $rc != 124 ] && [ "$n" -ge 1 ] && ! grep -v 'erase: world of' "$out" | grep -q watchdog
    tap $? "ctr --pp 2 --schedule $sch, --lr 1e30: the stage that found the non-finite gradient ends the job with its message, no watchdog (status $rc, $n message(s))"
    [ "$n" -ge 1 ] || show "$out"
done

