#!/bin/sh
# erase-train --blas-threads N (lib/sched/sched.h): the reference ctr on
# one rank, 12 steps, ends with bitwise-equal checkpoints under
# --early-backward off and graph when both run 1 BLAS thread per stream,
# and each run's schedule line reports it. (Without the option off takes
# every core's BLAS threads and graph a share; OpenBLAS's AVX2 kernels then
# round differently: tests/sched/test-equivalence measures that case.)
. "$(dirname "$0")/ckpt.sh"
setup_data
echo "1..3"
for mode in off graph; do
    out=$dir/$mode.out
    train 1 --model ctr --batch 64 --steps 12 --early-backward $mode --blas-threads 1 --checkpoint-dir "$dir/$mode"
    case $mode in
    off) line='^  schedule   early backward off (one stream, backward at step end), 1 BLAS thread$' ;;
    *) line='^  schedule   early backward graph (reduce early, update early, 1 side stream), 1 BLAS thread per stream$' ;;
    esac
    [ $rc = 0 ] && [ -f "$dir/$mode/ckpt-12.h5" ] && grep -q "$line" "$out"
    tap $? "--early-backward $mode --blas-threads 1: 12 steps, the schedule line says 1 BLAS thread (status $rc)"
    [ $rc = 0 ] || show "$out"
done
tests/ckpt/ckpt-tool compare "$dir/off/ckpt-12.h5" "$dir/graph/ckpt-12.h5" >"$dir/compare.out" 2>&1
tap $? "off and graph with --blas-threads 1 end with bitwise-equal checkpoints (parameters, optimizer, cursor)"
show "$dir/compare.out"
