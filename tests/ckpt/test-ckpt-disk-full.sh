#!/bin/sh
# A checkpoint that does not fit (issue 32, item 8): a small tmpfs (1 MiB,
# mounted for the test: root only, else skipped) holds the checkpoint
# directory; a first run writes ckpt-4.h5 and ckpt-8.h5 there, then a
# filler file leaves about 100 KB free. Under mpirun -np 2, --resume auto
# to step 16 (checkpoints every 4 steps):
#   - --checkpoint-failure stop (the default): status 1, one line on stderr
#     naming the directory, the bytes needed and free, no HDF5 error stack,
#     no MPI_ABORT; ckpt-8.h5 stays the latest and validates, no temporary
#     file is left;
#   - --checkpoint-failure continue: a warning naming what --resume auto
#     takes, the partial file removed; once the filler is removed (rank 0
#     waits, stopped, for it: ERASE_DEBUG_CKPT_FAILED_STOP), the next
#     checkpoint is written and the run finishes with status 0;
#   - --checkpoint-failure continue whose end state cannot be saved (the
#     filler back; to step 22: step 20's checkpoint and the final one of
#     step 22 fail): status 1, one line saying the end state is not saved
#     and that --resume auto takes ckpt-16.h5; the summary counts the
#     failed checkpoints; stopped by SIGUSR1 after step 18, whose
#     checkpoint fails, the same line names the signal.
. "$(dirname "$0")/ckpt.sh"
[ "$(id -u)" = 0 ] || skip "not root: cannot mount a small tmpfs to fill"
setup_data
M=$dir/small
mkdir -p "$M"
mount -t tmpfs -o size=1m tmpfs "$M" 2>"$dir/mount.err" || skip "cannot mount a tmpfs here: $(head -1 "$dir/mount.err")"
if [ "${ERASE_KEEP_TEST_DIR:-0}" = 1 ]; then trap 'umount "$M"' EXIT; else trap 'umount "$M"; rm -rf "$dir"' EXIT; fi
echo "1..11"
D=$M/ck

# own_lines FILE: FILE without Open MPI's banners (between dashed lines),
# blank lines and its runtime's log lines (as tests/apps/test-train-errors.sh)
own_lines() {
    sed -e '/^-\{20,\}$/,/^-\{20,\}$/d' -e '/^$/d' -e '/^\[[^]]*\] \[\[[0-9]*,[0-9]*\],[0-9]*\] ORTE_ERROR_LOG: /d' "$1"
}
no_temp() { ! ls "$D"/.*.tmp >/dev/null 2>&1; }

out=$dir/first.out
train 2 --batch 16 --steps 8 --checkpoint-every 4 --checkpoint-dir "$D"
[ $rc = 0 ] && [ -f "$D/ckpt-8.h5" ]
tap $? "a first run writes ckpt-4.h5 and ckpt-8.h5 on the 1 MiB tmpfs (status $rc)"
[ $rc = 0 ] || show "$out"
fill() {
    avail=$(df -B1 --output=avail "$M" | tail -1)
    head -c $((avail - 100000)) /dev/zero >"$M/filler" 2>/dev/null
    free=$(df -B1 --output=avail "$M" | tail -1)
}
fill
echo "# $free bytes free after the filler"

ARGS="--batch 16 --steps 16 --checkpoint-every 4 --checkpoint-dir $D --resume auto"
out=$dir/stop.out err=$dir/stop.err
ERASE_VERBOSE=-1 timeout -k 5 120 "$MPIRUN" $MPI_FLAGS -np 2 apps/erase-train --train "$dir/data" \
    --model "$dir/model.cfg" --device cpu --quiet $ARGS >"$out" 2>"$err"
rc=$?
own_lines "$err" >"$err.own"
line=$(cat "$err.own")
pattern="^erase-train: $D: no space for checkpoint ckpt-12\.h5: it needs about ([0-9]+) bytes, ([0-9]+) bytes are free there \(No space left on device\)$"
echo "$line" | grep -q -E "$pattern" && [ "$(wc -l <"$err.own")" = 1 ]
ok=$?
tap $ok "--checkpoint-failure stop: one line naming the directory, the bytes needed and free"
[ $ok = 0 ] || show "$err"
need=$(echo "$line" | sed -E "s|$pattern|\1|") have=$(echo "$line" | sed -E "s|$pattern|\2|")
[ $rc = 1 ] && [ "${need:-0}" -gt "${have:-0}" ] 2>/dev/null && ! grep -q -e MPI_ABORT -e HDF5-DIAG -e '#000:' "$err" &&
    ! grep -q '^ckpt ' "$out"
tap $? "status $rc, needed ${need:-?} > free ${have:-?} bytes, no HDF5 error stack, no MPI_ABORT, no checkpoint"
[ "$(cat "$D/latest")" = ckpt-8.h5 ] && no_temp && apps/erase-inspect ckpt "$D/ckpt-8.h5" >"$dir/inspect.out" 2>&1
tap $? "the last good checkpoint stays: latest = ckpt-8.h5, it validates, no temporary file left"
ls -a "$D" | sed 's/^/#   /'

out=$dir/continue.out
ERASE_DEBUG_CKPT_FAILED_STOP=1; export ERASE_DEBUG_CKPT_FAILED_STOP
train_bg 2 $ARGS --checkpoint-failure continue
unset ERASE_DEBUG_CKPT_FAILED_STOP
warned() { grep -q '^warn ' "$out"; }
wait_for 90 warned
stopped_temp=0; no_temp || stopped_temp=1
# the bytes: the options text differs (continue), the lock's two files take some of the free
want="warn   $D: no space for checkpoint ckpt-12.h5: it needs about [0-9]+ bytes, [0-9]+ bytes are free there \(No space left on device\) \(--checkpoint-failure continue: no checkpoint of step 12, the partial file removed; trying again at the next checkpoint; --resume auto takes $D/ckpt-8\.h5\)"
grep '^warn ' "$out" | grep -q -x -E "$want" && [ $stopped_temp = 0 ]
ok=$?
tap $ok "--checkpoint-failure continue: a warning naming what --resume auto takes, the partial file removed"
[ $ok = 0 ] || { echo "# want: $want"; show "$out"; }
rm -f "$M/filler"
p0=$(rank_pid 0)
[ -n "$p0" ] && kill -CONT "$p0"
wait "$job"; rc=$?
[ $rc = 0 ] && grep -q "^ckpt   step 16: $D/ckpt-16.h5" "$out" && [ "$(cat "$D/latest")" = ckpt-16.h5 ] && no_temp &&
    [ "$(grep -c '^warn ' "$out")" = 1 ]
ok=$?
tap $ok "with the space back, the next checkpoint (ckpt-16.h5) is written and the run finishes (status $rc)"
[ $ok = 0 ] || show "$out"
apps/erase-inspect ckpt "$D/ckpt-16.h5" >"$dir/inspect16.out" 2>&1
tap $? "ckpt-16.h5 validates"

fill
out=$dir/unsaved.out err=$dir/unsaved.err
ERASE_VERBOSE=-1 timeout -k 5 120 "$MPIRUN" $MPI_FLAGS -np 2 apps/erase-train --train "$dir/data" \
    --model "$dir/model.cfg" --device cpu --quiet --batch 16 --steps 22 --checkpoint-every 4 --checkpoint-dir "$D" \
    --resume auto --checkpoint-failure continue >"$out" 2>"$err"
rc=$?
own_lines "$err" >"$err.own"
want="erase-train: --checkpoint-dir $D: the end state (step 22) is not saved: its checkpoint failed (--checkpoint-failure continue); --resume auto takes $D/ckpt-16.h5"
[ $rc = 1 ] && [ "$(cat "$err.own")" = "$want" ] && [ "$(grep -c '^warn ' "$out")" = 2 ] &&
    [ "$(cat "$D/latest")" = ckpt-16.h5 ] && no_temp && ! grep -q MPI_ABORT "$err"
ok=$?
tap $ok "--checkpoint-failure continue, the end's checkpoint failed: one line naming what --resume auto takes, status $rc"
[ $ok = 0 ] || { echo "# want: $want"; show "$err"; show "$out"; }
grep -q -x '  checkpoint 0 written, 2 failed (--checkpoint-failure continue)' "$out"
ok=$?
tap $ok "the summary counts the failed checkpoints"
[ $ok = 0 ] || show "$out"

out=$dir/signal.out err=$dir/signal.err
ERASE_DEBUG_KILL_AT_STEP=18:0:usr1 ERASE_VERBOSE=-1 timeout -k 5 120 "$MPIRUN" $MPI_FLAGS -np 2 apps/erase-train \
    --train "$dir/data" --model "$dir/model.cfg" --device cpu --quiet --batch 16 --steps 22 --checkpoint-every 4 \
    --checkpoint-dir "$D" --resume auto --checkpoint-failure continue >"$out" 2>"$err"
rc=$?
own_lines "$err" >"$err.own"
want="erase-train: --checkpoint-dir $D: the end state (step 18, stopped by SIGUSR1) is not saved: its checkpoint failed (--checkpoint-failure continue); --resume auto takes $D/ckpt-16.h5"
[ $rc = 1 ] && [ "$(cat "$err.own")" = "$want" ] && ! grep -q 'stopped by' "$out" && [ "$(cat "$D/latest")" = ckpt-16.h5 ]
ok=$?
tap $ok "stopped by SIGUSR1, its checkpoint failed (continue): one line naming the signal and what --resume auto takes, status $rc"
[ $ok = 0 ] || { echo "# want: $want"; show "$err"; show "$out"; }

# --metrics and --trace on the full disk: by-products of the run, not the
# run: a warn line each, the metrics file cut back to its last whole record
# (every line a JSON object), no half trace left, training to its end
rm -f "$M/filler" "$M"/m.jsonl
avail=$(df -B1 --output=avail "$M" | tail -1)
head -c $((avail - 4096)) /dev/zero >"$M/filler" 2>/dev/null
out=$dir/byproducts.out
train 1 --batch 16 --steps 40 --log-every 1 --metrics "$M/m.jsonl" --trace "$M/t.json"
[ $rc = 0 ] && grep -q "^warn   --trace $M/t.json: cannot write the trace: No space left on device; the file is removed, training goes on\$" "$out" &&
    grep -q -E "^warn   --metrics $M/m.jsonl: cannot write: No space left on device; the file ends at its last whole record \(step [0-9]+ or before\), no more records are written; training goes on\$" "$out" &&
    [ ! -e "$M/t.json" ] && [ -s "$M/m.jsonl" ] &&
    [ "$(grep -c -v -E '^\{.*\}$' "$M/m.jsonl")" = 0 ] && [ "$(tail -c 1 "$M/m.jsonl" | od -An -c | tr -d ' ')" = '\n' ]
ok=$?
tap $ok "--metrics and --trace on a full disk: a warn line each, whole metrics records only, no trace left, status $rc"
[ $ok = 0 ] || show "$out"
rm -f "$M/filler"

