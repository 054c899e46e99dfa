#!/bin/sh
# jobs/shakespeare keeps a user's checkpoints (issue 32: it ran rm -rf on
# its checkpoint directory every time, so `--resume auto` started again at
# step 0, and the sampling step read the default directory whatever
# --checkpoint-dir said). A 1-block gpt of width 16 for 2 then 4 steps on
# the shipped text, 2 ranks, its data, checkpoints and metrics under a
# scratch ERASE_DATA_ROOT, the build's programs as they are (ERASE_SKIP_SETUP):
# the second `--resume auto` continues from step 2 and samples step 4;
# --checkpoint-dir X (either spelling) trains into X and samples X, the
# default directory untouched; a run without --resume sets the old
# checkpoints aside (*.superseded), deleting none.
. "$(dirname "$0")/../comm/mpi.sh"
need apps/erase-train
need apps/erase-sample
need apps/erase-convert
command -v bash >/dev/null 2>&1 || skip "no bash for the job scripts"
workdir
echo "1..5"
printf 'model = "gpt";\nseed = 3;\ngpt: { layers = 1; heads = 2; width = 16; context = 256; vocab = 256; };\n' \
    >"$dir/tiny.cfg"
ERASE_SKIP_SETUP=1 ERASE_BUILD=$PWD ERASE_DATA_ROOT=$dir/data ERASE_MPIRUN=$MPIRUN
export ERASE_SKIP_SETUP ERASE_BUILD ERASE_DATA_ROOT ERASE_MPIRUN
ckpt=$dir/data/shakespeare-ckpt

# job N ARGS...: jobs/shakespeare ARGS with the tiny model; output in $dir/runN, status in rc
job() {
    n=$1; shift
    timeout -k 5 300 "${srcdir:-.}/jobs/shakespeare" --model "$dir/tiny.cfg" "$@" >"$dir/run$n" 2>&1
    rc=$?
}
# sampled FILE CKPT: the sampling step of the output FILE read checkpoint CKPT
sampled() { grep -a -q "^erase-sample: $2 (step [0-9]*): gpt, 1 layers" "$1"; }

job 1 --steps 2 --resume auto
[ $rc = 0 ] && [ -f "$ckpt/ckpt-2.h5" ] && sampled "$dir/run1" "$ckpt/ckpt-2.h5"
tap $? "jobs/shakespeare --steps 2 --resume auto, the first time: status $rc, ckpt-2.h5 written and sampled"
[ $rc = 0 ] || tap_report "$dir/run1"

job 2 --steps 4 --resume auto
[ $rc = 0 ] && grep -a -q "^resume from $ckpt/ckpt-2.h5: step 2," "$dir/run2" && [ -f "$ckpt/ckpt-2.h5" ] &&
    sampled "$dir/run2" "$ckpt/ckpt-4.h5"
tap $? "jobs/shakespeare --steps 4 --resume auto again: resumes from ckpt-2.h5 (kept), samples ckpt-4.h5"
grep -a "^resume\|^ckpt\|^erase-sample: /" "$dir/run2" | tap_report /dev/stdin

job 3 --steps 2 --checkpoint-dir "$dir/mine"
[ $rc = 0 ] && [ -f "$dir/mine/ckpt-2.h5" ] && sampled "$dir/run3" "$dir/mine/ckpt-2.h5" &&
    [ "$(cd "$ckpt" && ls)" = "$(printf 'ckpt-2.h5\nckpt-4.h5\nlatest')" ]
tap $? "--checkpoint-dir X: trains into X, the sampling step reads X, the default directory untouched"
[ $rc = 0 ] || tap_report "$dir/run3"

job 4 --steps 2 "--checkpoint-dir=$dir/mine2"
[ $rc = 0 ] && [ -f "$dir/mine2/ckpt-2.h5" ] && sampled "$dir/run4" "$dir/mine2/ckpt-2.h5"
tap $? "--checkpoint-dir=X: the same"
[ $rc = 0 ] || tap_report "$dir/run4"

job 5 --steps 2
[ $rc = 0 ] && [ -f "$ckpt/ckpt-4.h5.superseded" ] && [ -f "$ckpt/ckpt-2.h5.superseded" ] &&
    [ -f "$ckpt/ckpt-2.h5" ] && sampled "$dir/run5" "$ckpt/ckpt-2.h5"
tap $? "a new run without --resume: the old checkpoints set aside (*.superseded), none deleted"
ls "$ckpt" | tap_report /dev/stdin
