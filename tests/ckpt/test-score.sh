#!/bin/sh
# erase-score (issue 14): the scores of a checkpoint on held-out data,
# written on 1 and 2 ranks (oversubscribed) into one file, reproduce the NE
# and AUC that erase-train's evaluation of that data printed (recomputed
# here from the TSV with python3: log loss over the base rate's entropy,
# the ROC AUC with ties counted half; to the printed 4 decimals, the AUC
# within 2e-4: evaluation bins the predictions in 2^16 bins), and erase-score's own eval line is
# that line; the rows are the data's, in order (row_id 0..N-1); the HDF5
# and TSV files hold the same values; 1 and 2 ranks agree (scores within
# 1e-6: a GEMM over another batch shape may round differently); classify
# (mlp) scores give the eval accuracy; a missing checkpoint, missing data
# and an existing -o FILE without --force are clear errors.
. "$(dirname "$0")/ckpt.sh"
: "${srcdir:=.}"
need apps/erase-score
command -v python3 >/dev/null 2>&1 || skip "no python3 to recompute the metrics"
setup_data
apps/erase-convert synth -q -o "$dir/held" --rows 1000 --seed 2 --chunk-rows 256 >"$dir/held.log" 2>&1 ||
    { show "$dir/held.log"; echo "Bail out! erase-convert synth failed"; exit 0; }
echo "1..16"
evline() { grep '^eval   step' "$1" | tail -1 | sed 's/ in [0-9.]* s$//'; }
# score NP ARGS...: erase-score on NP ranks; output in $out, status in rc
score() {
    np=$1; shift
    timeout -k 5 120 "$MPIRUN" $MPI_FLAGS -np "$np" apps/erase-score "$@" >"$out" 2>&1
    rc=$?
}
# metrics FILE.tsv: "NE x AUC y log_loss z" from a ctr score file
metrics() {
    python3 - "$1" <<'PY'
import math, sys
rows = [l.split('\t') for l in open(sys.argv[1]).read().splitlines()[1:]]
y = [float(r[1]) for r in rows]; p = [float(r[2]) for r in rows]
n = len(y); br = sum(y) / n
ll = -sum(math.log(q) if t > 0.5 else math.log(1 - q) for t, q in zip(y, p)) / n
ne = ll / -(br * math.log(br) + (1 - br) * math.log(1 - br))
pairs = sorted(zip(p, y)); neg = 0; area = 0.0; i = 0
while i < n:
    j = i; pos_t = neg_t = 0
    while j < n and pairs[j][0] == pairs[i][0]:
        if pairs[j][1] > 0.5: pos_t += 1
        else: neg_t += 1
        j += 1
    area += pos_t * (neg + neg_t / 2.0); neg += neg_t; i = j
npos = sum(1 for t in y if t > 0.5)
print("NE %.6f AUC %.6f log_loss %.6f" % (ne, area / (npos * (n - npos)), ll))
PY
}
# near A B TOL
near() { awk -v a="$1" -v b="$2" -v t="$3" 'BEGIN { d = a - b; exit !(d <= t && d >= -t) }'; }

out=$dir/train.out
train 2 --global-batch 64 --steps 30 --lr 0.01 --eval "$dir/held" --checkpoint-dir "$dir/ck"
want=$(evline "$out")
[ $rc = 0 ] && [ -n "$want" ]
tap $? "ctr: 30 steps on 2 ranks, evaluated on 1,000 held-out rows (status $rc)"
[ $rc = 0 ] || show "$out"
echo "# training:   $want"
ne=$(echo "$want" | sed 's/.*NE \([0-9.]*\) .*/\1/') auc=$(echo "$want" | sed 's/.*AUC \([0-9.]*\) .*/\1/')
ll=$(echo "$want" | sed 's/.*log loss \([0-9.]*\) .*/\1/')
for np in 1 2; do
    out=$dir/score$np.out
    score $np "$dir/ck" "$dir/held" -o "$dir/s$np.tsv" --format tsv --batch 96
    got=$(evline "$out")
    [ $rc = 0 ] && [ "$got" = "$want" ] && grep -q "^erase-score: 1000 rows to $dir/s$np.tsv (tsv)" "$out"
    tap $? "ctr: erase-score on $np rank(s) prints the training run's eval line (status $rc)"
    [ $rc = 0 ] || show "$out"
    m=$(metrics "$dir/s$np.tsv")
    echo "# from the scores of $np rank(s): $m"
    set -- $m
    near "$2" "$ne" 0.00011 && near "$4" "$auc" 0.0002 && near "$6" "$ll" 0.00011
    tap $? "ctr: NE, AUC and log loss recomputed from the $np-rank score file are the evaluation's"
done
awk -F '\t' 'NR == 1 { ok = $0 == "row_id\tlabel\tp" } NR > 1 && $1 != NR - 2 { ok = 0 } END { exit !(ok && NR == 1001) }' \
    "$dir/s2.tsv"
tap $? "the TSV has a header and rows 0..999 in order"
awk -F '\t' 'NR == FNR { p[FNR] = $3; l[FNR] = $2; next }
             FNR > 1 { d = $3 - p[FNR]; if ($1 != FNR - 2 || $2 != l[FNR] || d > 1e-6 || d < -1e-6) bad = 1 }
             END { exit bad }' "$dir/s1.tsv" "$dir/s2.tsv"
tap $? "1 and 2 ranks: the same rows and labels, scores within 1e-6"

out=$dir/h5.out
score 2 "$dir/ck" "$dir/held" -o "$dir/s2.h5" --batch 96
[ $rc = 0 ] && [ "$(evline "$out")" = "$want" ]
tap $? "ctr: the HDF5 file on 2 ranks (status $rc)"
[ $rc = 0 ] || show "$out"
if command -v h5dump >/dev/null 2>&1; then
    col() { h5dump -d "/$2" -y -w 0 -m %.9g -o "$dir/col" "$1" >/dev/null && tr -d ' \n' <"$dir/col" | tr ',' '\n'; }
    col "$dir/s2.h5" row_id >"$dir/h5.row"; col "$dir/s2.h5" label >"$dir/h5.label"; col "$dir/s2.h5" p >"$dir/h5.p"
    paste "$dir/h5.row" "$dir/h5.label" "$dir/h5.p" | awk -F '\t' 'NR == FNR { r[FNR] = $0; next }
        FNR > 1 && ($1 != (split(r[FNR - 1], a, "\t") ? a[1] : "") || $2 + 0 != a[2] + 0 || $3 + 0 != a[3] + 0) { bad = 1 }
        END { exit bad || FNR != 1001 }' - "$dir/s2.tsv"
    hd=$?
    h5dump -a /format "$dir/s2.h5" | grep -q '"erase-score-1"' && h5dump -a /step "$dir/s2.h5" | grep -q '30' || hd=1
    tap $hd "the HDF5 file holds the TSV's rows, labels and scores; format erase-score-1, step 30"
else
    echo "ok 7 # SKIP no h5dump"; tap_n=$((tap_n + 1))
fi

out=$dir/exists.out
score 1 "$dir/ck" "$dir/held" -o "$dir/s2.h5"
[ $rc = 2 ] && grep -q "s2.h5: the file exists (--force replaces it)" "$out"
tap $? "an existing -o FILE without --force: usage error (status $rc)"
out=$dir/force.out
score 1 "$dir/ck" "$dir/held" -o "$dir/s2.h5" --force
[ $rc = 0 ]; tap $? "--force replaces it (status $rc)"
out=$dir/nockpt.out
score 1 "$dir/nothing.h5" "$dir/held" -o "$dir/x.h5"
[ $rc = 1 ] && grep -q 'nothing.h5' "$out" && [ ! -e "$dir/x.h5" ]
tap $? "a missing checkpoint: status 1 naming it, no output (status $rc)"
[ $rc = 1 ] || show "$out"
out=$dir/nodata.out
score 2 "$dir/ck" "$dir/nodata" -o "$dir/x.h5"
[ $rc != 0 ] && grep -q 'nodata' "$out" && [ ! -e "$dir/x.h5" ] && ! ls "$dir"/x.h5.tmp-* >/dev/null 2>&1
tap $? "missing data: a failure naming it, no output left (status $rc)"
[ $rc != 0 ] || show "$out"

# ---- classify: class and probabilities; the accuracy of the scores is the evaluation's
apps/erase-convert mnist -q "$srcdir/data/mnist/t10k-images-idx3-ubyte.gz" "$srcdir/data/mnist/t10k-labels-idx1-ubyte.gz" \
    -o "$dir/mnist" --split 512,256 --chunk-rows 64 >"$dir/convert.log" 2>&1 ||
    { show "$dir/convert.log"; echo "Bail out! erase-convert mnist failed"; exit 0; }
out=$dir/mlp.out
timeout -k 5 120 "$MPIRUN" $MPI_FLAGS -np 1 apps/erase-train --train "$dir/mnist/train" --eval "$dir/mnist/eval" \
    --model mlp --device cpu --quiet --global-batch 32 --steps 16 --checkpoint-dir "$dir/mlpck" >"$out" 2>&1
want=$(evline "$out")
out=$dir/mlpscore.out
score 2 "$dir/mlpck" "$dir/mnist/eval" -o "$dir/mlp.tsv" --format tsv --batch 50
acc=$(awk -F '\t' 'NR > 1 { n++; ok += $2 == $3; s = 0; for (c = 4; c <= NF; c++) s += $c; if (s < 0.999 || s > 1.001) bad = 1 }
                   END { if (!bad) printf "%.4f", ok / n }' "$dir/mlp.tsv")
echo "# training:   $want"
echo "# accuracy of the scores: $acc"
[ $rc = 0 ] && [ "$(evline "$out")" = "$want" ] && [ -n "$acc" ] && echo "$want" | grep -q "accuracy $acc " &&
    head -1 "$dir/mlp.tsv" | grep -q '^row_id	label	class	prob_0	.*	prob_9$'
tap $? "classify: 2-rank scores (class, 10 probabilities summing to 1) give the evaluation's accuracy (status $rc)"
[ $rc = 0 ] || show "$out"

# ---- a diverged model (non-finite outputs): class -1, probabilities "nan",
# never a made-up class 0
out=$dir/nan.out
timeout -k 5 120 "$MPIRUN" $MPI_FLAGS -np 1 apps/erase-train --train "$dir/mnist/train" --eval "$dir/mnist/eval" \
    --model mlp --device cpu --quiet --global-batch 32 --steps 3 --lr 1e30 --nonfinite skip --update end \
    --checkpoint-dir "$dir/nanck" >"$out" 2>&1
out=$dir/nanscore.out
score 1 "$dir/nanck" "$dir/mnist/eval" -o "$dir/nan.tsv" --format tsv
bad=$(awk -F '\t' 'NR > 1 && ($3 != -1 || $4 != "nan") { n++ } END { print n + 0 }' "$dir/nan.tsv")
rows=$(($(wc -l <"$dir/nan.tsv") - 1))
[ $rc = 0 ] && [ "$rows" = 256 ] && [ "$bad" = 0 ] && grep -q '256 of 256 predictions are not finite' "$out"
tap $? "classify, non-finite outputs: class -1 and nan in all $rows rows ($bad otherwise), the count in the eval line (status $rc)"
[ $rc = 0 ] || show "$out"

# ---- -o naming a directory: refused before any scoring
out=$dir/dir.out
score 1 "$dir/ck" "$dir/held" -o "$dir" --force
[ $rc = 2 ] && grep -q -F -- "-o $dir: not a file (a directory or a device): name the output file" "$out"
tap $? "-o DIR (with --force): usage error before scoring (status $rc)"
[ $rc = 2 ] || show "$out"
