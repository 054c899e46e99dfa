#!/bin/sh
# erase-bench scale (issue 18): with given block times the output is exact,
# checked here against a hand computation; the bytes come from the ctr
# model; --tflops derives the compute from the blocks' GEMM FLOPs; measured
# times give the same table with the same bytes; bad options exit 2 with
# their messages.
. "$(dirname "$0")/../comm/mpi.sh"
need apps/erase-bench
workdir
echo "1..4"
B="apps/erase-bench scale"

# 1. ctr at 4 samples per rank, every block forward 1 ms, backward 2 ms, no
# update; a ring with alpha 0 and 8 Gbit/s (1e-9 s/B). Bytes: input's dense
# gradients 2,304 floats (bottom 13-64-16: 896 + 1,040; head 367 + 1) =
# 9,216 B and its 26 tables' gathered rows 26 x 4 (counts) + 26 x 4 x 4
# (rows) + 26 x 4 x 16 x 4 (values) = 7,176 B; sub1 160,257 floats (367 x
# 256 + 256, 256 x 256 + 256, 257) = 641,028 B; sub2..6 131,841 floats =
# 527,364 B. At 2 ranks a ring all-reduce of S takes S x beta, the
# all-gather (n-1) m beta: input 16.392 us, sub1 0.641 ms, sub2..6 0.527 ms,
# 3.294 ms in all. Compute 7 x 3 = 21 ms; shared compute: F0 0-1 B0 1-3 F1
# 3-4 B1 4-6 ... B6 18-21; each reduction starts when its backward ends and
# ends before the next backward: the last, sub6's, 21-21.527: early
# 21.527 ms; off 21 + 3.294 = 24.294 ms; gain 1.129; exposed 0.527;
# efficiency 21 / 21.527 = 0.976.
$B --model ctr --batch 4 --nodes 1,2 --alpha-us 0 --gbps 8 --forward-ms 1 --backward-ms 2 \
    >"$dir/given" 2>"$dir/given.err"
rc=$?
cat >"$dir/given.want" <<'EOW'
# erase-bench scale: ctr, 7 blocks (cuts 0x7e), batch 4 per rank, shared compute
# compute: given (--forward-ms, --backward-ms, --update-ms)
# block       forward(ms) backward(ms)   update(ms)       dense(B)    gathered(B)
# input            1.0000       2.0000       0.0000           9216           7176
# sub1             1.0000       2.0000       0.0000         641028              0
# sub2             1.0000       2.0000       0.0000         527364              0
# sub3             1.0000       2.0000       0.0000         527364              0
# sub4             1.0000       2.0000       0.0000         527364              0
# sub5             1.0000       2.0000       0.0000         527364              0
# sub6             1.0000       2.0000       0.0000         527364              0
# link: between nodes ring, alpha 0 us, 8 Gbit/s per rank
 nodes  gpus  ranks compute(ms)    comm(ms)   early(ms)     off(ms)    gain  exposed(ms) efficiency
     1     1      1      21.000       0.000      21.000      21.000   1.000        0.000      1.000
     2     1      2      21.000       3.294      21.527      24.294   1.129        0.527      0.976
EOW
[ $rc = 0 ] && cmp -s "$dir/given.want" "$dir/given"
tap $? "given times: the exact table of a hand computation (status $rc)"
tap_report "$dir/given"; [ $rc = 0 ] || tap_report "$dir/given.err"

# 2. --tflops 0.001 (1 GFLOP/s): GEMM FLOPs at 4 samples: input 46,696
# (bottom 13,312 + 24,576, head 8,808), sub1 3,082,240 (cut: no input
# gradient), sub2..6 2,627,584 each: 16,266,856 FLOPs = 16.267 ms; input's
# forward a third of 46.696 us, its backward two thirds; --dense-only:
# no gathered bytes
$B --model ctr --batch 4 --nodes 1 --alpha-us 0 --gbps 8 --tflops 0.001 --dense-only >"$dir/flops" 2>"$dir/flops.err"
rc=$?
[ $rc = 0 ] && [ "$(head -1 "$dir/flops")" = "# erase-bench scale: ctr, 7 blocks (cuts 0x7e), batch 4 per rank, shared compute; dense gradients only (no all-gather of embedding rows)" ] && grep -q '^# compute: the blocks'"'"' GEMM FLOPs at 0.001 TFLOP/s (forward 1/3, backward 2/3), updates 0 ms$' "$dir/flops" &&
    grep -q '^# input            0.0156       0.0311       0.0000           9216              0$' "$dir/flops" &&
    [ "$(tail -1 "$dir/flops" | tr -s ' ')" = " 1 1 1 16.267 0.000 16.267 16.267 1.000 0.000 1.000" ]
tap $? "--tflops: the blocks' GEMM FLOPs at the given rate; --dense-only: no gathered bytes (status $rc)"
tap_report "$dir/flops"; [ $rc = 0 ] || tap_report "$dir/flops.err"

# 3. measured here: the same bytes, a row per node count
$B --model ctr --batch 4 --nodes 1,2,4 --alpha-us 5 --gbps 100 --measure --repeats 1 >"$dir/measured" 2>"$dir/measured.err"
rc=$?
[ $rc = 0 ] && grep -q '^# compute: measured here, one BLAS thread, median of 1 repeats$' "$dir/measured" &&
    [ "$(grep -c '^# \(input\|sub[1-6]\) .* [0-9.]* [0-9.]* [0-9.]* *\(9216 *7176\|641028 *0\|527364 *0\)$' "$dir/measured")" = 7 ] &&
    [ "$(grep -c '^ *[124] *1 *[124] ' "$dir/measured")" = 3 ]
tap $? "--measure: the model's bytes, a row per node count (status $rc)"
tap_report "$dir/measured"; [ $rc = 0 ] || tap_report "$dir/measured.err"

# 4. errors: status 2 and the reason
: >"$dir/errors"
bad=0
for args in "" "--model foo" "--model ctr" "--model ctr --alpha-us 1 --gbps 0" "--model ctr --alpha-us 1 --gbps 1 --gpus 8" \
    "--model ctr --alpha-us 1 --gbps 1 --forward-ms 1,2 --backward-ms 1" "--model ctr --alpha-us 1 --gbps 1 --measure --tflops 1" \
    "--model gpt --alpha-us 1 --gbps 1 --tflops 1" "--model ctr --alpha-us 1 --gbps 1 --algo star" \
    "--model ctr --alpha-us 1 --gbps 1 --backward-ms 1" "--model ctr --alpha-us 1 --gbps 1 --nodes 0"; do
    # shellcheck disable=SC2086 # the words of one case
    $B $args >/dev/null 2>>"$dir/errors"
    [ $? = 2 ] || bad=1
done
cat >"$dir/errors.want" <<'EOW'
erase-bench scale: --model ctr|gpt is required
erase-bench scale: --model foo: expected ctr or gpt
erase-bench scale: --alpha-us and --gbps are required (the link between nodes)
erase-bench scale: --gbps 0: expected Gbit/s > 0
erase-bench scale: --gpus 8: --intra-alpha-us and --intra-gbps are required (the link within a node)
erase-bench scale: --forward-ms 1,2: 2 values (expected one, or one per block: ctr has 7)
erase-bench scale: give one of --measure, --forward-ms/--backward-ms, --tflops
erase-bench scale: --tflops: the FLOPs of gpt's blocks are not counted (ctr only)
erase-bench scale: --algo star: expected ring or tree
erase-bench scale: --forward-ms and --backward-ms go together
erase-bench scale: --nodes 0: expected a list of up to 16 node counts >= 1
EOW
[ $bad = 0 ] && cmp -s "$dir/errors.want" "$dir/errors"
tap $? "bad options: status 2, each named with what was expected"
tap_report "$dir/errors"
