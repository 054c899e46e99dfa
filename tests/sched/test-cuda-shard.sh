#!/bin/sh
# Sharded embeddings on a GPU (a GPU test: tests/gpu/device-check.sh runs
# it first; SKIP without the CUDA backend or a visible GPU): erase-train
# --device cuda on 1 rank with --embeddings table and row (the CUDA route,
# gather and split ops; the NCCL emb and dp communicators' all-to-alls, to
# itself) evaluates and trains as --embeddings replicated, digit for digit,
# in graph mode and off. One GPU: more ranks need one GPU each.
. "$(dirname "$0")/../comm/mpi.sh"
need apps/erase-train
need apps/erase-convert
workdir
apps/erase-convert synth -q -o "$dir/data" --rows 2000 >"$dir/convert.out" 2>&1 || tap_report "$dir/convert.out"
if ! timeout -k 5 120 apps/erase-train --train "$dir/data" --device cuda --steps 1 --batch 8 --quiet \
    >"$dir/probe.out" 2>&1; then
    grep -q -E -e '--device cuda.*(no CUDA backend|no CUDA device visible)' "$dir/probe.out" &&
        skip "$(grep -m1 -o -E -e '(no CUDA backend|no CUDA device visible).*' "$dir/probe.out")"
fi
echo "1..4"
lines() { sed -n -e 's/ in [0-9.]* s$//p' "$1" | grep '^eval' ; grep -o 'loss [^,]*' "$1"; }
n=0
for mode in graph off; do
    ERASE_WATCHDOG_SECONDS=120 timeout -k 5 300 "$MPIRUN" $MPI_FLAGS -np 1 apps/erase-train --train "$dir/data" \
        --device cuda --quiet --log-every 5 --steps 12 --batch 32 --eval-every 6 --early-backward $mode \
        --embeddings replicated >"$dir/rep.out" 2>&1
    rc_rep=$?
    lines "$dir/rep.out" >"$dir/rep.lines"
    for kind in table row; do
        ERASE_WATCHDOG_SECONDS=120 timeout -k 5 300 "$MPIRUN" $MPI_FLAGS -np 1 apps/erase-train --train "$dir/data" \
            --device cuda --quiet --log-every 5 --steps 12 --batch 32 --eval-every 6 --early-backward $mode \
            --embeddings $kind >"$dir/$kind.out" 2>&1
        rc=$?
        lines "$dir/$kind.out" >"$dir/$kind.lines"
        [ $rc_rep = 0 ] && [ $rc = 0 ] && [ "$(grep -c '^eval' "$dir/rep.lines")" -ge 2 ] &&
            cmp -s "$dir/rep.lines" "$dir/$kind.lines"
        ok=$?
        tap $ok "--device cuda, $mode: --embeddings $kind evaluates and trains as replicated (status $rc_rep, $rc)"
        [ $ok = 0 ] || { tap_report "$dir/rep.out"; tap_report "$dir/$kind.out"; }
    done
done
