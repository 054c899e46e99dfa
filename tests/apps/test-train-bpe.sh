#!/bin/sh
# erase-train and erase-sample on BPE token shards (issue 33), on 2 ranks:
# two tokenizers of vocab 300 trained on the two halves of the shipped
# text (A and B: other merges, other identities), a gpt trained on text
# converted with A keeps A in its checkpoint; training or evaluating it on
# B's shards or on byte-level shards, --eval data of another tokenizer
# than --train's, and one dataset of shards of A and B are each refused
# in one line naming both identities and the shards; bits per byte is
# loss / ln 2 x tokens / bytes with the bytes of the very tokens evaluated
# (a single window of k targets after <|bos|>: the file's bytes; the ranks'
# byte counts summed), and loss / ln 2 on byte-level data; erase-sample
# decodes with the checkpoint's tokenizer: its text is the prompt
# (decode(encode(x)) = x) then the decoded ids that --prompt-tokens gives,
# and --tokenizer B is refused.
. "$(dirname "$0")/../comm/mpi.sh"
need apps/erase-train
need apps/erase-convert
need apps/erase-tokenizer
need apps/erase-sample
need apps/erase-inspect
workdir
echo "1..9"
text=${srcdir:-.}/data/text/tinyshakespeare.txt
head -c 500000 "$text" >"$dir/half1"
tail -c 500000 "$text" >"$dir/half2"
head -c 20000 "$text" >"$dir/t.txt"
printf 'ROMEO: my lord, the end.\n' >"$dir/e.txt"
tok() { apps/erase-tokenizer "$@" >>"$dir/setup" 2>&1 || tap_report "$dir/setup"; }
tok train "$dir/half1" --vocab 300 -o "$dir/tokA"
tok train "$dir/half2" --vocab 300 -o "$dir/tokB"
idA=$(apps/erase-tokenizer info "$dir/tokA" | sed -n 's/.*identity \([0-9a-f]*\)$/\1/p')
idB=$(apps/erase-tokenizer info "$dir/tokB" | sed -n 's/.*identity \([0-9a-f]*\)$/\1/p')
conv() { apps/erase-convert text "$@" >>"$dir/setup" 2>&1 || tap_report "$dir/setup"; }
conv "$dir/t.txt" --tokenizer "$dir/tokA" -o "$dir/dA"
conv "$dir/t.txt" --tokenizer "$dir/tokB" -o "$dir/dB"
conv "$dir/t.txt" -o "$dir/dbyte"
conv "$dir/e.txt" --tokenizer "$dir/tokA" --val-fraction 0 -o "$dir/dE"
conv "$dir/e.txt" --val-fraction 0 -o "$dir/dEbyte"
model() { printf 'model = "gpt";\nseed = 3;\ngpt: { layers = 1; heads = 2; width = 16; context = %s; vocab = %s; };\n' \
    "$2" "$3" >"$dir/$1"; }
model m.cfg 32 300

# train NP ARGS...: erase-train on NP ranks; output in $dir/out, status in rc
train() {
    np=$1; shift
    timeout -k 5 120 "$MPIRUN" $MPI_FLAGS -np "$np" apps/erase-train --quiet "$@" >"$dir/out" 2>&1
    rc=$?
}
# refused LINE: status 2 and the one line
refused() { [ $rc = 2 ] && grep -q -x -F -e "$1" "$dir/out"; }

train 2 --model "$dir/m.cfg" --train "$dir/dA/train" --eval "$dir/dA/eval" --steps 2 --global-batch 4 \
    --checkpoint-dir "$dir/ck"
[ $rc = 0 ] && [ -f "$dir/ck/ckpt-2.h5" ] && [ ${#idA} = 16 ] && [ ${#idB} = 16 ] && [ "$idA" != "$idB" ] &&
    apps/erase-inspect ckpt "$dir/ck" >>"$dir/out" 2>&1 &&
    grep -qx "  tokenizer   $idA (BPE, its file kept: erase-sample decodes with it)" "$dir/out"
tap $? "2 ranks train on tokenizer A's shards: ckpt-2.h5 keeps A (A $idA, B $idB)"
[ $rc = 0 ] || tap_report "$dir/out"

train 2 --train "$dir/dB/train" --resume "$dir/ck" --checkpoint-dir "$dir/ck" --steps 4
refused "erase-train: --resume $dir/ck: the checkpoint $dir/ck/ckpt-2.h5 was trained on tokenizer $idA, the data ($dir/dB/train/part-00000.h5) has tokenizer $idB: use shards converted with the checkpoint's tokenizer (erase-convert text --tokenizer)"
tap $? "--resume on tokenizer B's shards: refused (status $rc), both identities named"
tap_report "$dir/out"

train 2 --eval-only --init-from "$dir/ck" --eval "$dir/dbyte/eval"
refused "erase-train: --init-from $dir/ck: the checkpoint $dir/ck/ckpt-2.h5 was trained on tokenizer $idA, the data ($dir/dbyte/eval/part-00000.h5) has tokenizer none (byte-level or imported tokens): use shards converted with the checkpoint's tokenizer (erase-convert text --tokenizer)"
tap $? "--eval-only on byte-level shards: refused (status $rc)"
tap_report "$dir/out"

train 2 --model "$dir/m.cfg" --train "$dir/dA/train" --eval "$dir/dB/eval" --steps 1 --global-batch 4
refused "erase-train: --eval $dir/dB/eval: tokenizer $idB ($dir/dB/eval/part-00000.h5), the training data's is tokenizer $idA ($dir/dA/train/part-00000.h5): evaluate on data of the same tokenizer"
tap $? "--eval of tokenizer B, --train of A: refused (status $rc)"
tap_report "$dir/out"

train 2 --model "$dir/m.cfg" --train "$dir/dA/train,$dir/dB/train" --steps 1 --global-batch 4
refused "erase-train: --train $dir/dA/train,$dir/dB/train: $dir/dB/train/part-00000.h5: tokenizer $idB, the first shard $dir/dA/train/part-00000.h5 has tokenizer $idA: every shard must have the same (convert all the text with one tokenizer)"
tap $? "one dataset of A's and B's shards: refused (status $rc)"
tap_report "$dir/out"

# bits per byte: e.txt is <|bos|> and k tokens, one window of context k
# whose targets are the k tokens: the file's bytes (<|bos|> is the input only)
k=$(apps/erase-tokenizer encode --tokenizer "$dir/tokA" "$dir/e.txt" | wc -w)
bytes=$(wc -c <"$dir/e.txt")
model e.cfg "$k" 300
# check METRICS T BYTES: the last eval line's eval_tokens = T, bits_per_byte = loss / ln 2 x T / BYTES
check() {
    tail -n 1 "$1" | awk -v T="$2" -v B="$3" '{
        match($0, /"eval_tokens":[0-9]+/); t = substr($0, RSTART + 14, RLENGTH - 14)
        match($0, /"loss":[0-9.]+/); l = substr($0, RSTART + 7, RLENGTH - 7)
        match($0, /"bits_per_byte":[0-9.]+/); b = substr($0, RSTART + 16, RLENGTH - 16)
        want = l / log(2) * T / B; d = b - want
        printf "eval_tokens %s, loss %s, bits per byte %s, loss / ln 2 x %d / %d = %.6f\n", t, l, b, T, B, want
        exit !(t == T && l > 0 && (d < 0 ? -d : d) < 1e-5) }'
}
train 2 --model "$dir/e.cfg" --train "$dir/dA/train" --eval "$dir/dE/train" --steps 1 --global-batch 4 \
    --metrics "$dir/bpe.jsonl"
[ $rc = 0 ] && check "$dir/bpe.jsonl" "$k" "$bytes" >"$dir/why"
tap $? "BPE bits per byte on 2 ranks: loss / ln 2 x $k tokens / $bytes bytes"
cat "$dir/why" "$dir/out" | tap_report /dev/stdin

n=$((bytes - 1))
model b.cfg "$n" 256
train 2 --model "$dir/b.cfg" --train "$dir/dbyte/train" --eval "$dir/dEbyte/train" --steps 1 --global-batch 4 \
    --metrics "$dir/byte.jsonl"
[ $rc = 0 ] && check "$dir/byte.jsonl" "$n" "$n" >"$dir/why"
tap $? "byte-level bits per byte: loss / ln 2, as before"
cat "$dir/why" "$dir/out" | tap_report /dev/stdin

prompt=$(printf 'ROMEO: caf\303\251  42\tx')
apps/erase-sample "$dir/ck" --prompt "$prompt" --temperature 0 --tokens 6 --raw --quiet >"$dir/text" 2>"$dir/err"
ids=$(printf '%s' "$prompt" | apps/erase-tokenizer encode --tokenizer "$dir/tokA" | tr ' ' ',')
apps/erase-sample "$dir/ck" --prompt-tokens "291,$ids" --temperature 0 --tokens 6 --quiet >"$dir/ids" 2>>"$dir/err"
cut -d ' ' -f 2- "$dir/ids" | apps/erase-tokenizer decode --tokenizer "$dir/tokA" >"$dir/decoded"
echo >>"$dir/decoded"
[ "$(head -c ${#prompt} "$dir/text")" = "$prompt" ] && [ "$(wc -w <"$dir/ids")" -gt 6 ] &&
    cmp -s "$dir/text" "$dir/decoded"
tap $? "erase-sample: the prompt decodes to itself, then the decoded ids of --prompt-tokens"
cat "$dir/text" "$dir/ids" "$dir/err" | tap_report /dev/stdin

apps/erase-sample "$dir/ck" --tokenizer "$dir/tokB" --quiet >"$dir/out" 2>&1
rc=$?
[ $rc = 1 ] && grep -q -x -F -e "erase-sample: --tokenizer $dir/tokB: tokenizer $idB, the checkpoint $dir/ck/ckpt-2.h5 was trained on tokenizer $idA" "$dir/out"
tap $? "erase-sample --tokenizer B on A's checkpoint: refused (status $rc)"
tap_report "$dir/out"
