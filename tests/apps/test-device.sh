#!/bin/sh
# --device of erase-train and erase-bench model / schedules: an unknown
# value is a usage error (exit 2); --device cuda on a build or machine
# without a CUDA device fails cleanly: a non-zero exit status and one line,
# the option as the program names it and erase_device_open's reason ("this
# build of erase has no CUDA backend (configured without CUDA)", or the
# CUDA backend's "no CUDA device visible: ..."), never a crash; --gemm
# tf32/bf16 on the CPU backend likewise.
# Skipped where a CUDA device can be opened.
. "$(dirname "$0")/../comm/mpi.sh"
need apps/erase-train
need apps/erase-bench
workdir
# a CUDA device that opens: the failure cases do not apply
if timeout -k 5 60 apps/erase-bench model --device cuda --model mlp --batch 8 --threads 1 --steps 1 \
    --warmup 0 >"$dir/probe" 2>&1; then
    skip "a CUDA device opens here"
fi
echo "1..7"

# REASON: what erase_device_open says when no CUDA device can be opened,
# after the program's "--device cuda" (and "(GPU n of this host)")
REASON='--device cuda( \(GPU [0-9]+ of this host\))?: (this build of erase has no CUDA backend \(configured without CUDA\)$|no CUDA device visible: )'

# one_line FILE: FILE has exactly one line naming --device cuda, it gives
# erase_device_open's reason, and no sign of a crash
one_line() {
    [ "$(grep -c -e '--device cuda' "$1")" = 1 ] &&
        grep -q -E -e "$REASON" "$1" &&
        ! grep -q -i -E 'segmentation|core dumped|sanitizer|signal 11' "$1"
}

timeout -k 5 120 "$MPIRUN" $MPI_FLAGS -np 2 apps/erase-train --train "$dir/none" --device cuda --quiet \
    >"$dir/train.out" 2>&1
rc=$?
[ $rc != 0 ] && [ $rc != 124 ] && [ "$(grep -c -E -e "$REASON" "$dir/train.out")" -ge 1 ] &&
    ! grep -q -i -E 'segmentation|core dumped|sanitizer|signal 11' "$dir/train.out"
tap $? "erase-train --device cuda on 2 ranks: exit $rc, every rank's message names --device cuda"
[ $rc != 0 ] && tap_report "$dir/train.out"

printf 'device = "cuda";\n' >"$dir/run.cfg"
timeout -k 5 60 apps/erase-train --config "$dir/run.cfg" --train "$dir/none" --quiet >"$dir/cfg.out" 2>&1
rc=$?
[ $rc != 0 ] && [ $rc != 124 ] && one_line "$dir/cfg.out"
tap $? "erase-train with device = \"cuda\" in the run file: exit $rc, one line naming --device cuda"

timeout -k 5 60 apps/erase-train --train "$dir/none" --device gpu >"$dir/bad.out" 2>&1
rc=$?
[ $rc = 2 ] && grep -q -e '--device gpu: expected one of cpu|cuda' "$dir/bad.out"
tap $? "erase-train --device gpu: usage error (exit $rc)"

timeout -k 5 60 apps/erase-bench model --device cuda >"$dir/model.out" 2>&1
rc=$?
[ $rc = 1 ] && one_line "$dir/model.out"
tap $? "erase-bench model --device cuda: exit $rc, one line naming --device cuda"
tap_report "$dir/model.out"

timeout -k 5 120 "$MPIRUN" $MPI_FLAGS -np 1 apps/erase-bench schedules --device cuda >"$dir/sched.out" 2>&1
rc=$?
[ $rc != 0 ] && [ $rc != 124 ] && one_line "$dir/sched.out"
tap $? "erase-bench schedules --device cuda: exit $rc, one line naming --device cuda"
tap_report "$dir/sched.out"

timeout -k 5 60 apps/erase-bench model --device tpu >"$dir/bad2.out" 2>&1
rc=$?
[ $rc = 2 ] && grep -q -e '--device tpu: expected cpu or cuda' "$dir/bad2.out"
tap $? "erase-bench model --device tpu: usage error (exit $rc)"

# tensor-core GEMMs are a CUDA mode: the CPU backend refuses them by name
timeout -k 5 60 apps/erase-train --train "$dir/none" --gemm bf16 --quiet >"$dir/gemm.out" 2>&1
rc=$?
[ $rc = 2 ] && grep -q -F -e '--device cpu --gemm bf16: the CPU backend computes GEMMs in fp32 only, not bf16 (tf32 and bf16 are tensor-core modes of the CUDA backend)' "$dir/gemm.out"
tap $? "erase-train --gemm bf16 on the CPU: exit $rc, the CPU backend's reason"
[ $rc != 2 ] && tap_report "$dir/gemm.out"
exit 0
