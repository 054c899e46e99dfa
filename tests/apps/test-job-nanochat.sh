#!/bin/sh
# jobs/nanochat (issue 34 item 5): one line trains a BPE tokenizer of vocab
# 300 on the shipped text, converts the text with it, pretrains a nanochat
# (the shipped run file: Muon, AdamW 0.8/0.95/1e-10, wsd; a 1-layer model of
# width 16 here, 2 steps, 2 ranks), evaluates in bits per byte and samples
# from "ROMEO:"; `--resume auto` then continues from step 2 to step 4;
# --help prints the job's comment; --vocab without a number is a usage
# error. Its data, checkpoints and metrics under a scratch ERASE_DATA_ROOT,
# the build's programs as they are (ERASE_SKIP_SETUP).
. "$(dirname "$0")/../comm/mpi.sh"
need apps/erase-train
need apps/erase-sample
need apps/erase-convert
need apps/erase-tokenizer
need apps/erase-inspect
command -v bash >/dev/null 2>&1 || skip "no bash for the job scripts"
workdir
echo "1..5"
printf 'model = "nanochat";\nseed = 3;\nnanochat: { layers = 1; heads = 2; width = 16; context = 256; vocab = 300; };\n' \
    >"$dir/tiny.cfg"
ERASE_SKIP_SETUP=1 ERASE_BUILD=$PWD ERASE_DATA_ROOT=$dir/data ERASE_MPIRUN=$MPIRUN
export ERASE_SKIP_SETUP ERASE_BUILD ERASE_DATA_ROOT ERASE_MPIRUN
name=$dir/data/nanochat-bpe300
ckpt=$name-ckpt

# job N ARGS...: jobs/nanochat ARGS; output in $dir/runN, status in rc
job() {
    n=$1; shift
    timeout -k 5 300 "${srcdir:-.}/jobs/nanochat" "$@" >"$dir/run$n" 2>&1
    rc=$?
}
# sampled FILE STEP: the sampling step of the output FILE read ckpt-STEP.h5
# of the default folder, a nanochat of vocab 300, and printed text from the prompt
sampled() {
    grep -a -q "^erase-sample: $ckpt/ckpt-$2.h5 (step $2): nanochat, 1 layers, .*, vocab 300\$" "$1" &&
        sed -n "\|^erase-sample $ckpt --prompt 'ROMEO:'|,\$p" "$1" | grep -a -q '^ROMEO:'
}

job 1 --vocab 300 --model "$dir/tiny.cfg" --steps 2 --resume auto
[ $rc = 0 ] && head -n 2 "$name.tokenizer" | grep -qx '#vocab 300' && [ -f "$name/train/index.txt" ] &&
    [ -f "$ckpt/ckpt-2.h5" ] && sampled "$dir/run1" 2
tap $? "jobs/nanochat --vocab 300 --steps 2: tokenizer, shards, ckpt-2.h5, a sample from 'ROMEO:' (status $rc)"
[ $rc = 0 ] || tap_report "$dir/run1"

apps/erase-inspect ckpt "$ckpt/ckpt-2.h5" >"$dir/ckpt" 2>&1
grep -a -q "^eval   step 2: loss [0-9.]*  perplexity [0-9.]*  bits per byte [0-9]*\.[0-9]*  (" "$dir/run1" &&
    [ "$(grep -E '^    (optimizer|beta1|beta2|eps|lr_decay) = ' "$dir/ckpt" | tr -d ' \n')" = \
      'optimizer="muon";beta1=0.8;beta2=0.95;eps=1e-10;lr_decay="wsd";' ]
tap $? "the evaluation prints bits per byte; the run file's muon, betas 0.8/0.95, eps 1e-10, wsd in the checkpoint"
grep -a "^eval" "$dir/run1" | tap_report /dev/stdin; tap_report "$dir/ckpt"

job 2 --vocab=300 --model "$dir/tiny.cfg" --steps 4 --resume auto
[ $rc = 0 ] && ! grep -q "converting" "$dir/run2" && grep -a -q "^resume from $ckpt/ckpt-2.h5: step 2," "$dir/run2" &&
    [ -f "$ckpt/ckpt-2.h5" ] && sampled "$dir/run2" 4
tap $? "--steps 4 --resume auto again: tokenizer and shards reused, resumes from ckpt-2.h5, samples ckpt-4.h5"
grep -a "^resume\|^ckpt\|^erase-sample: /\|convert" "$dir/run2" | tap_report /dev/stdin

job 3 --help
[ $rc = 0 ] && grep -qx 'nanochat on a workstation: set erase up if needed (jobs/setup), train a' "$dir/run3" &&
    grep -q '^--vocab V' "$dir/run3"
tap $? "--help: the job's comment (status $rc)"
tap_report "$dir/run3"

job 4 --vocab big
[ $rc = 2 ] && grep -qx "jobs/nanochat: --vocab needs a number (e.g. 4096), got 'big'" "$dir/run4"
tap $? "--vocab big: usage error (status $rc)"
tap_report "$dir/run4"
