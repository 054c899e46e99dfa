#!/bin/sh
# erase-train --shuffle-pool (issue 33), 2 ranks, a tiny gpt on the first
# 64 KiB of tinyshakespeare (3,686 training windows of 17 tokens: 4 blocks
# of 1,024): a pool size out of range is a usage error naming the option
# and the range; pools of 4 blocks (all of them) train exactly as the
# default of 64 (one pool either way: the same uniform shuffle), pools of 1
# block (the order before pools) otherwise; a run resumed from a checkpoint
# of a --shuffle-pool 1 run takes its pool size (noted) and continues with
# the losses of the run that was not interrupted.
. "$(dirname "$0")/../comm/mpi.sh"
need apps/erase-train
need apps/erase-convert
workdir
head -c 65536 "${srcdir:-.}/data/text/tinyshakespeare.txt" >"$dir/s.txt"
apps/erase-convert text -q "$dir/s.txt" -o "$dir/text" >"$dir/convert.out" 2>&1 || { tap_report "$dir/convert.out"; exit 1; }
printf 'model = "gpt";\ngpt: { layers = 2; heads = 4; width = 32; context = 16; vocab = 256; };\n' >"$dir/gpt.cfg"
echo "1..5"

# train NAME ARGS...: erase-train on 2 ranks, the tiny gpt, global batch 16, a constant learning rate (the
# same at a step whatever --steps), a progress line every step
train() {
    name=$1; shift
    timeout -k 5 120 "$MPIRUN" $MPI_FLAGS -np 2 apps/erase-train --model "$dir/gpt.cfg" --train "$dir/text/train" \
        --eval "$dir/text/eval" --global-batch 16 --lr-decay constant --log-every 1 "$@" </dev/null >"$dir/$name.out" 2>"$dir/$name.err"
    rc=$?
}
# losses FILE: "step loss" of FILE's progress lines, one a line
losses() { sed -n 's|^train  step \([0-9]*\)/.*, loss \([0-9.]*\),.*|\1 \2|p' "$1"; }

train range --shuffle-pool 0 --steps 1
[ $rc = 2 ] && grep -q -x -F "erase-train: --shuffle-pool 0: expected an integer in [1, 2097152]" "$dir/range.err" &&
    [ "$(grep -c 'shuffle-pool' "$dir/range.err")" = 1 ]
tap $? "--shuffle-pool 0: status $rc, one line naming the option and its range"
[ $rc = 2 ] || tap_report "$dir/range.err"

train default --steps 6
train all --steps 6 --shuffle-pool 4
[ $rc = 0 ] && [ "$(losses "$dir/default.out" | wc -l)" = 6 ] && [ "$(losses "$dir/all.out")" = "$(losses "$dir/default.out")" ]
tap $? "--shuffle-pool 4 (all 4 blocks) trains as the default 64: the same 6 losses ($(losses "$dir/all.out" | tail -1))"
[ $rc = 0 ] || tap_report "$dir/all.err"

train old --steps 6 --shuffle-pool 1
[ $rc = 0 ] && [ "$(losses "$dir/old.out" | wc -l)" = 6 ] && [ "$(losses "$dir/old.out")" != "$(losses "$dir/default.out")" ]
tap $? "--shuffle-pool 1 draws other batches: other losses ($(losses "$dir/old.out" | tail -1))"
[ $rc = 0 ] || tap_report "$dir/old.err"

train first --steps 3 --shuffle-pool 1 --checkpoint-dir "$dir/ck"
train resumed --steps 6 --resume auto --checkpoint-dir "$dir/ck"
[ $rc = 0 ] && grep -q -E "^note   taken from the run of .*: .*shuffle-pool 1" "$dir/resumed.out"
tap $? "resumed from a --shuffle-pool 1 checkpoint: its pool size taken and noted"
[ $rc = 0 ] || tap_report "$dir/resumed.err"

[ "$(losses "$dir/resumed.out")" = "$(losses "$dir/old.out" | sed -n '4,6p')" ] && [ "$(losses "$dir/resumed.out" | wc -l)" = 3 ]
tap $? "the resumed run's steps 4-6 have the losses of the run not interrupted"
exit 0
