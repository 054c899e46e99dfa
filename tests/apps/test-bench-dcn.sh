#!/bin/sh
# erase-bench schedules --model dcn / dcn-cuts (issue 36, the TorchRec
# comparison's erase side): the GEMM FLOP per sample it prints for dcn and
# for the no-cut ctr equal a hand count from the models' sizes
# (docs/models.md); --threads sets the cores of a rank; dcn-cuts runs off and
# graph on 2 ranks; bad --threads / --table-rows / --model exit 2 with their
# messages. With $TORCHREC_PYTHON (a python that imports torchrec: see
# bench/dcn_torchrec.py), TorchRec's DLRM_DCN of bench/dcn_torchrec.py has
# the dense parameter count of the same hand count.
. "$(dirname "$0")/../comm/mpi.sh"
need apps/erase-bench
workdir
echo "1..5"
B="apps/erase-bench schedules"
small="--batch 8 --modes off --steps 1 --warmup 0 --table-rows 50"

# 1. dcn (D = 128, W = 27 x 128 = 3456, rank 512), 2 x multiply-adds x 3
# (forward, weight and input gradients; the dense arch's first layer has no
# input gradient: x 2): dense arch 13x512 (x2), 512x256, 256x128; three
# cross layers of V [512, 3456] and W [3456, 512]; over arch 3456x1024,
# 1024x1024, 1024x512, 512x256, 256x1.
want=$(( 2*(13*512*2 + 512*256*3 + 256*128*3) + 3*2*(2*3456*512*3) \
         + 2*3*(3456*1024 + 1024*1024 + 1024*512 + 512*256 + 256*1) ))
$B --model dcn $small --threads 1 >"$dir/dcn" 2>"$dir/dcn.err"
rc=$?
got=$(sed -n 's/^# dcn: GEMM FLOP per sample \([0-9]*\) .*/\1/p' "$dir/dcn")
[ $rc = 0 ] && [ "$got" = "$want" ] && grep -q '^# device: cpu: 1 core,' "$dir/dcn" &&
    awk '$1 == "dcn" && $2 == 8 && $3 == "off" && $4 > 0 { n++ } END { exit n != 1 }' "$dir/dcn"
tap $? "dcn: GEMM FLOP per sample $got, hand count $want; 1 core; one row (status $rc)"
tap_report "$dir/dcn"; [ $rc = 0 ] || tap_report "$dir/dcn.err"

# 2. ctr without cuts (D = 16, interaction 16 + 27 x 26 / 2 = 367): bottom
# 13x64 (x2), 64x16; sub1 367x256, 256x256; sub2..6 two 256x256 each; one
# head, the last block's 256x1 (no head where no cut follows).
want=$(( 2*(13*64*2 + 64*16*3) + 2*367*256*3 + 2*256*256*3 + 5*2*(2*256*256*3) + 2*256*1*3 ))
$B --model ctr-nocuts $small --threads 2 >"$dir/ctr" 2>"$dir/ctr.err"
rc=$?
got=$(sed -n 's/^# ctr-nocuts: GEMM FLOP per sample \([0-9]*\) .*/\1/p' "$dir/ctr")
[ $rc = 0 ] && [ "$got" = "$want" ] && grep -q '^# device: cpu: 2 cores,' "$dir/ctr"
tap $? "ctr-nocuts: GEMM FLOP per sample $got, hand count $want; --threads 2: 2 cores (status $rc)"
tap_report "$dir/ctr"; [ $rc = 0 ] || tap_report "$dir/ctr.err"

# 3. dcn-cuts (the paper's six cuts) on 2 ranks: off and graph, 2 x 4 samples
timeout 120 $MPIRUN $MPI_FLAGS -np 2 $B --model dcn-cuts --batch 4 --modes off,graph --steps 1 --warmup 0 \
    --table-rows 50 >"$dir/cuts" 2>"$dir/cuts.err"
rc=$?
[ $rc = 0 ] && grep -q '^# ranks: 2 ' "$dir/cuts" && ! grep -q 'GEMM FLOP' "$dir/cuts" &&
    awk '$1 == "dcn-cuts" && $2 == 4 && ($3 == "off" || $3 == "graph") && $4 > 0 { n++ } END { exit n != 2 }' \
        "$dir/cuts"
tap $? "dcn-cuts on 2 ranks: an off and a graph row, no FLOP line (local heads not counted) (status $rc)"
tap_report "$dir/cuts"; [ $rc = 0 ] || tap_report "$dir/cuts.err"

# 4. bad options
bad=0
: >"$dir/errors"
for args in "--model dcn --table-rows 1" "--model dcn --threads -1" "--model dcnv2"; do
    $B $args >/dev/null 2>>"$dir/errors"
    [ $? = 2 ] || bad=1
done
cat >"$dir/errors.want" <<'EOW'
erase-bench schedules: --threads 0 --table-rows 1: expected threads >= 1 and rows 2 .. 2147483647
erase-bench schedules: --threads -1 --table-rows 0: expected threads >= 1 and rows 2 .. 2147483647
erase-bench schedules: --model dcnv2: expected ctr, ctr-nocuts, mlp, all, gpt, nanochat, dcn or dcn-cuts
EOW
[ $bad = 0 ] && cmp -s "$dir/errors.want" "$dir/errors"
tap $? "bad options: status 2, each named with what was expected"
tap_report "$dir/errors"

# 5. TorchRec's DLRM_DCN as bench/dcn_torchrec.py builds it: 16,044,545 dense
# parameters by hand (weights and biases of the layers of 1., cross biases
# [3456] each), on 2 ranks of its table-wise sharding
py=${TORCHREC_PYTHON:-}
if [ -z "$py" ] || ! "$py" -c "import torchrec.models.dlrm" >/dev/null 2>&1; then
    echo "ok 5 # SKIP no TORCHREC_PYTHON that imports torchrec (bench/dcn_torchrec.py says how to make one)"
    exit 0
fi
want=$(( 13*512+512 + 512*256+256 + 256*128+128 + 3*(2*3456*512 + 3456) \
         + 3456*1024+1024 + 1024*1024+1024 + 1024*512+512 + 512*256+256 + 256+1 ))
timeout 300 "$py" "${srcdir:-.}/bench/dcn_torchrec.py" --model dcn --batch 8 --rows 50 --steps 1 --warmup 0 --ranks 2 \
    >"$dir/torchrec" 2>"$dir/torchrec.err"
rc=$?
[ $rc = 0 ] && grep -q "\"dense_parameters\": $want," "$dir/torchrec" && grep -q '"sharding": "fused,table_wise"' "$dir/torchrec"
tap $? "TorchRec DLRM_DCN: $want dense parameters, fused table-wise tables on 2 ranks (status $rc)"
tap_report "$dir/torchrec"; [ $rc = 0 ] || tail -n 5 "$dir/torchrec.err" | tap_report /dev/stdin
