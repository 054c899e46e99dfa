#!/bin/sh
# jobs/shakespeare --tokenizer bpe:V (issue 33 item 7): one line trains a
# BPE tokenizer of vocab 300 on the shipped text, converts the text with
# it, trains (a 1-block gpt of vocab 300, 2 steps, 2 ranks) and samples,
# decoded with the checkpoint's tokenizer (the text starts with the prompt
# "ROMEO:"); the shards carry the tokenizer file's identity; a second run
# reuses the tokenizer and the shards; --tokenizer without bpe:V is a usage
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
echo "1..4"
printf 'model = "gpt";\nseed = 3;\ngpt: { layers = 1; heads = 2; width = 16; context = 256; vocab = 300; };\n' \
    >"$dir/tiny.cfg"
ERASE_SKIP_SETUP=1 ERASE_BUILD=$PWD ERASE_DATA_ROOT=$dir/data ERASE_MPIRUN=$MPIRUN
export ERASE_SKIP_SETUP ERASE_BUILD ERASE_DATA_ROOT ERASE_MPIRUN
name=$dir/data/shakespeare-bpe300

job() {
    n=$1; shift
    timeout -k 5 300 "${srcdir:-.}/jobs/shakespeare" "$@" >"$dir/run$n" 2>&1
    rc=$?
}

job 1 --tokenizer bpe:300 --model "$dir/tiny.cfg" --steps 2
[ $rc = 0 ] && head -n 2 "$name.tokenizer" | grep -qx '#vocab 300' && [ -f "$name/train/index.txt" ] &&
    [ -f "$name-ckpt/ckpt-2.h5" ] &&
    grep -a -q "^erase-sample: $name-ckpt/ckpt-2.h5 (step 2): gpt, 1 layers, .*, vocab 300\$" "$dir/run1" &&
    sed -n "\|^erase-sample $name-ckpt --prompt 'ROMEO:'|,\$p" "$dir/run1" | grep -a -q '^ROMEO:'
tap $? "--tokenizer bpe:300: tokenizer, shards, ckpt-2.h5 in shakespeare-bpe300-ckpt, a sample decoded from 'ROMEO:'"
[ $rc = 0 ] || tap_report "$dir/run1"

id=$(apps/erase-tokenizer info "$name.tokenizer" | sed -n 's/.*identity \([0-9a-f]*\)$/\1/p')
apps/erase-inspect data "$name/train" "$name/eval" >"$dir/out" 2>&1
[ ${#id} = 16 ] && grep -qx "  tokenizer $id (BPE; its file in every shard)" "$dir/out"
tap $? "the shards carry the tokenizer's identity $id"
tap_report "$dir/out"

job 2 --tokenizer=bpe:300 --model "$dir/tiny.cfg" --steps 2
[ $rc = 0 ] && ! grep -q "converting" "$dir/run2" && [ -f "$name-ckpt/ckpt-2.h5.superseded" ]
tap $? "again (--tokenizer=bpe:300): the tokenizer and shards reused, nothing converted"
[ $rc = 0 ] || tap_report "$dir/run2"

job 3 --tokenizer word:12 --model "$dir/tiny.cfg"
[ $rc = 2 ] && grep -qx "jobs/shakespeare: --tokenizer needs bpe:V (e.g. bpe:4096), got 'word:12'" "$dir/run3"
tap $? "--tokenizer word:12: usage error (status $rc)"
tap_report "$dir/run3"
