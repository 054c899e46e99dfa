#!/bin/sh
# erase-train --embeddings table | row | auto (lib/sched/embed_shard.h)
# under mpirun: on 2 ranks (graph and off) and 4 ranks the evaluations and
# the training losses are those of --embeddings replicated, digit for
# digit; on 4 ranks with a last evaluation batch of 1 sample (ranks 1-3
# have none: they still take part in the all-to-alls; the timeout bounds a
# hang); auto's mix; the placement lines (every row held once); the
# refusals' exact text (--pp, a model without tables). Checkpoints of
# sharded tables: tests/ckpt/test-shard-ckpt.sh.
. "$(dirname "$0")/../comm/mpi.sh"
need apps/erase-train
need apps/erase-convert
workdir
apps/erase-convert synth -q -o "$dir/data" --rows 2000 >"$dir/convert.out" 2>&1 || tap_report "$dir/convert.out"
echo "1..14"

# run NP NAME ARGS...: erase-train on NP ranks, stdout in $dir/NAME.out
run() {
    np=$1 name=$2; shift 2
    ERASE_WATCHDOG_SECONDS=120 timeout -k 5 300 "$MPIRUN" $MPI_FLAGS -np "$np" apps/erase-train \
        --train "$dir/data" --quiet --log-every 5 "$@" >"$dir/$name.out" 2>"$dir/$name.err"
    rc=$?
}
# lines LOG: the evaluations and training losses without their timings
lines() { sed -n -e 's/ in [0-9.]* s$//p' "$1" | grep '^eval' ; grep -o 'loss [^,]*' "$1"; }

# same NP KIND CASE WHAT ARGS...: replicated and KIND give the same lines
# (replicated's run once per CASE)
same() {
    np=$1 kind=$2 case=$3 what=$4; shift 4
    if [ ! -s "$dir/rep-$case.lines" ]; then
        run "$np" rep "$@" --embeddings replicated
        [ $rc = 0 ] || { tap_report "$dir/rep.out"; tap_report "$dir/rep.err"; }
        lines "$dir/rep.out" >"$dir/rep-$case.lines"
    fi
    run "$np" "$kind" "$@" --embeddings "$kind"
    lines "$dir/$kind.out" >"$dir/$kind.lines"
    [ $rc = 0 ] && [ "$(grep -c '^eval' "$dir/rep-$case.lines")" -ge 2 ] &&
        cmp -s "$dir/rep-$case.lines" "$dir/$kind.lines"
    ok=$?
    tap $ok "$what: --embeddings $kind evaluates and trains as replicated (status $rc)"
    [ $ok = 0 ] || { tap_report "$dir/$kind.out"; tap_report "$dir/$kind.err"; }
}

for kind in table row; do
    same 2 $kind graph "2 ranks, graph" --steps 12 --batch 32 --eval-every 6
    same 2 $kind off "2 ranks, off" --steps 12 --batch 32 --eval-every 6 --early-backward off
    # 400 evaluation samples in global batches of 57: the last has 1 sample
    same 4 $kind last1 "4 ranks, last eval batch of 1 sample" --steps 6 --global-batch 57 --eval-every 3
done
# auto on a model with one table above a rank's share: row-wise, the rest table-wise
rows="10007, 10007, 10007, 10007, 10007, 400000"
for _ in $(seq 20); do rows="$rows, 10007"; done
printf 'model = "ctr";\nctr: { table_rows = [%s]; };\n' "$rows" >"$dir/big5.cfg"
same 4 auto big5 "4 ranks, table 5 of 400,000 rows" --steps 6 --global-batch 57 --eval-every 3 --model "$dir/big5.cfg"
bytes=$(sed -n 's/.*all-to-all at most \([0-9]*\) bytes.*/\1/p' "$dir/auto.out")
grep -q -x -F "  embed  auto (1 table row-wise, 25 table-wise) over 4 ranks (26 tables; all-to-all at most $bytes bytes per step per rank)" "$dir/auto.out" &&
    [ "$(grep -c '^  embed  rank [0-3]: whole [0-9,]*; part of 5; ' "$dir/auto.out")" = 4 ]
ok=$?
tap $ok "auto: table 5 row-wise (a part on each of 4 ranks), the rest table-wise"
[ $ok = 0 ] || tap_report "$dir/auto.out"

# the summary's all-to-all traffic of training steps (each step's own,
# after the warm-up): the same with 6 evaluations as with 1 (evaluations'
# all-to-alls are not counted), within the padded bound, a share of the
# step's time between 0 and 1, on the summary line and in the metrics file
field() { grep '"type":"summary"' "$2" | sed -n "s/.*\"$1\":\([0-9.]*\).*/\1/p"; }
run 2 ev6 --steps 12 --batch 32 --eval-every 2 --embeddings row --metrics "$dir/ev6.jsonl"
rc6=$rc
run 2 ev1 --steps 12 --batch 32 --eval-every 0 --embeddings row --metrics "$dir/ev1.jsonl"
b6=$(field alltoall_bytes_per_step "$dir/ev6.jsonl") b1=$(field alltoall_bytes_per_step "$dir/ev1.jsonl")
max=$(field alltoall_bytes_per_step_max "$dir/ev1.jsonl")
[ $rc6 = 0 ] && [ $rc = 0 ] && [ -n "$b1" ] && [ "$b1" = "$b6" ] && [ "$b1" -gt 0 ] && [ "$b1" -lt "$max" ] &&
    grep -q '"embeddings":"row"' "$dir/ev1.jsonl" &&
    awk -v f="$(field alltoall_step_fraction "$dir/ev1.jsonl")" 'BEGIN { exit !(f > 0 && f <= 1) }' &&
    grep -q "^  embed      row-wise: all-to-all [0-9.e+-]* MB sent per step per rank (at most [0-9.e+-]* MB), [0-9.]* ms per step in all-to-alls, [0-9.]*% of the step (after 3 warm-up steps; each the largest over the ranks)$" "$dir/ev1.out"
ok=$?
tap $ok "summary: the training steps' all-to-all bytes per step, $b1 with 1 evaluation and $b6 with 6 (at most $max)"
[ $ok = 0 ] || { tap_report "$dir/ev6.out"; tap_report "$dir/ev1.out"; }

# the placement: one line per rank, every table once; row-wise, every row once
run 2 row --steps 8 --batch 16 --embeddings row --trace "$dir/row.trace.json"
held=$(sed -n 's/^  embed  rank [01]: whole none; part of 0,1,2[0-9,]*; \([0-9]*\) rows, [0-9.]* [KM]iB$/\1/p' "$dir/row.out" |
    awk '{ s += $1 } END { print s }')
[ $rc = 0 ] && [ "$held" = $((26 * 10007)) ] &&
    grep -q '^  embed  row-wise over 2 ranks (26 tables; all-to-all at most [0-9]* bytes per step per rank)$' "$dir/row.out" &&
    grep -q '"input/allreduce+alltoall"' "$dir/row.trace.json" && ! grep -q '"input/allreduce"' "$dir/row.trace.json"
ok=$?
tap $ok "row-wise: each rank holds a part of every table, every row once ($held rows); the trace names the input block's gradient exchange allreduce+alltoall"
[ $ok = 0 ] || tap_report "$dir/row.out"
run 2 tab --steps 2 --batch 16 --embeddings table
grep '^  embed  rank' "$dir/tab.out" >"$dir/placement"
tables=$(sed -n 's/.*: whole \([0-9,]*\); part of none; [0-9]* rows, [0-9.]* [KM]iB$/\1/p' "$dir/placement" |
    tr ',' '\n' | sort -n | tr '\n' ' ')
[ $rc = 0 ] && [ "$(wc -l <"$dir/placement")" = 2 ] &&
    [ "$tables" = "0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 " ] &&
    grep -q '^  embed  table-wise over 2 ranks (26 tables; all-to-all at most [0-9]* bytes per step per rank)$' "$dir/tab.out"
ok=$?
tap $ok "the placement: a line per rank, each of the 26 tables on one rank"
[ $ok = 0 ] || tap_report "$dir/tab.out"

# refusals: usage errors (status 2), one line
for case in "--embeddings rows|--embeddings rows: expected one of replicated|table|row|auto" \
    "--embeddings row --pp 2|--embeddings row with a pipeline (--pp 2, --schedule 1f1b): sharded tables with pipelines are not built yet; drop --pp and --schedule, or use --embeddings replicated"; do
    args=${case%%|*} text=${case#*|}
    # shellcheck disable=SC2086 # args are words
    timeout -k 5 60 apps/erase-train --train "$dir/data" $args --quiet >"$dir/out" 2>&1
    rc=$?
    [ $rc = 2 ] && grep -q -F -e "$text" "$dir/out"
    ok=$?
    tap $ok "$args: status $rc, $text"
    [ $ok = 0 ] || tap_report "$dir/out"
done

# a model without tables: found after MPI start-up, alike on every rank:
# one line from rank 0, status 2, no abort
text="erase-train: --embeddings table: the mlp model has no per-field embedding tables to shard (ctr has); use --embeddings replicated"
ERASE_VERBOSE=-1 timeout -k 5 60 "$MPIRUN" $MPI_FLAGS -np 2 apps/erase-train --train "$dir/data" --model mlp \
    --embeddings table --quiet >"$dir/out" 2>"$dir/err"
rc=$?
[ $rc = 2 ] && [ ! -s "$dir/out" ] && ! grep -q MPI_ABORT "$dir/err" && [ "$(grep -c -F -x -e "$text" "$dir/err")" = 1 ]
ok=$?
tap $ok "--model mlp --embeddings table under mpirun -np 2: one line, status $rc, no abort"
[ $ok = 0 ] || tap_report "$dir/err"
