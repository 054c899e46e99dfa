#!/bin/sh
# erase-convert text --tokenizer (issue 33): a tokenizer of vocab 300
# trained on the shipped text; two files, each a document, become
# <|bos|> (291) + the ids of the first + <|bos|> + the ids of the second
# (as erase-tokenizer encode gives them), the last 25% of the tokens in
# eval; every shard records vocab 300, bytes = the text bytes of its
# tokens (<|bos|> none), tokenizer = the identity erase-tokenizer info
# prints and the dataset /tokenizer_file = the tokenizer file (h5dump, when
# installed); erase-inspect data names the tokenizer; a tokenizer file
# that is truncated is refused in one line naming it, nothing written;
# without --tokenizer the shards stay byte-level, with no tokenizer.
. "$(dirname "$0")/../comm/mpi.sh"
need apps/erase-convert
need apps/erase-tokenizer
need apps/erase-inspect
workdir
echo "1..8"
text=${srcdir:-.}/data/text/tinyshakespeare.txt
printf 'hello world\n' >"$dir/a.txt"
printf 'the end\n' >"$dir/b.txt"
apps/erase-tokenizer train "$text" --vocab 300 -o "$dir/tok" >"$dir/out" 2>&1 || tap_report "$dir/out"
id=$(apps/erase-tokenizer info "$dir/tok" | sed -n 's/.*identity \([0-9a-f]*\)$/\1/p')
apps/erase-tokenizer encode --tokenizer "$dir/tok" "$dir/a.txt" "$dir/b.txt" >"$dir/ids"
# the whole stream: <|bos|> before each document
want=$(awk '{ printf "291 %s ", $0 }' "$dir/ids" | tr -s ' ' '\n' | grep -v '^$')
n=$(echo "$want" | wc -l)
n_eval=$(awk -v n="$n" 'BEGIN { printf "%d", n * 0.25 + 0.5 }')

apps/erase-convert text "$dir/a.txt" "$dir/b.txt" --tokenizer "$dir/tok" --val-fraction 0.25 -o "$dir/d" \
    >"$dir/out" 2>&1
rc=$?
[ $rc = 0 ] && [ ${#id} = 16 ] &&
    grep -qx "  $dir/d/train  $((n - n_eval)) tokens, 1 shard" "$dir/out" &&
    grep -qx "  $dir/d/eval   $n_eval tokens, 1 shard" "$dir/out"
tap $? "two documents: $n tokens with their two <|bos|>, the last $n_eval in eval"
tap_report "$dir/out"

apps/erase-inspect data "$dir/d/train" "$dir/d/eval" >"$dir/out" 2>&1
grep -qx "  tokens $n, vocab 300, ids used [0-9]* (largest 291)" "$dir/out" &&
    grep -q "^  bytes 20 (" "$dir/out" &&
    grep -qx "  tokenizer $id (BPE; its file in every shard)" "$dir/out"
tap $? "erase-inspect data: vocab 300, 20 bytes (12 + 8, <|bos|> none), tokenizer $id"
tap_report "$dir/out"

if command -v h5dump >/dev/null 2>&1; then
    got=$( (for p in train eval; do
        h5dump -d /tokens -y -w 0 -o "$dir/col" "$dir/d/$p/part-00000.h5" >/dev/null && tr -d ' \n' <"$dir/col"
        echo ,
    done) | tr ',' '\n' | grep -v '^$')
    # the train shard's bytes: its tokens' text bytes
    train_bytes=$(echo "$want" | head -n $((n - n_eval)) | grep -v '^291$' |
        apps/erase-tokenizer decode --tokenizer "$dir/tok" | wc -c)
    h5dump -a /tokenizer "$dir/d/eval/part-00000.h5" | grep -q "\"$id\"" &&
        h5dump -a /vocab "$dir/d/train/part-00000.h5" | grep -q "(0): 300" &&
        h5dump -a /bytes "$dir/d/train/part-00000.h5" | grep -q "(0): $train_bytes\$" &&
        h5dump -H -d /tokenizer_file "$dir/d/train/part-00000.h5" | grep -q "( $(wc -c <"$dir/tok") ) / ( $(wc -c <"$dir/tok") )" &&
        [ "$got" = "$want" ]
    tap $? "the shards' tokens, vocab, bytes ($train_bytes in train), tokenizer attribute, the /tokenizer_file dataset of the file's size"
    echo $got | tap_report /dev/stdin
else
    tap 0 "# SKIP h5dump not installed"
fi

head -c 500 "$dir/tok" >"$dir/cut"
apps/erase-convert text "$dir/a.txt" --tokenizer "$dir/cut" -o "$dir/bad" >"$dir/out" 2>"$dir/err"
rc=$?
[ $rc = 1 ] && [ ! -e "$dir/bad" ] &&
    head -n 1 "$dir/err" | grep -qx "erase-convert text: error: $dir/cut: truncated: [0-9]* tokens, the header says 291 (the last line has no newline)"
tap $? "a truncated tokenizer file: status 1, one line naming it, nothing written"
tap_report "$dir/err"

apps/erase-convert text "$dir/a.txt" --tokenizer "$dir/none" -o "$dir/bad" >"$dir/out" 2>"$dir/err"
rc=$?
[ $rc = 1 ] && [ ! -e "$dir/bad" ] &&
    head -n 1 "$dir/err" | grep -qx "erase-convert text: error: $dir/none: cannot open: No such file or directory"
tap $? "a missing tokenizer file: status 1, named, nothing written"
tap_report "$dir/err"

apps/erase-convert text "$dir/a.txt" -o "$dir/bytes" >"$dir/out" 2>&1 &&
    apps/erase-inspect data "$dir/bytes/train" >"$dir/out" 2>&1 &&
    grep -qx "  bytes 11 (1.0000 per token)" "$dir/out" && ! grep -q tokenizer "$dir/out"
tap $? "without --tokenizer: byte-level shards, no tokenizer"
tap_report "$dir/out"

# a tokenizer file above HDF5's 64 KiB attribute limit (vocab 8000: about
# 115 KB; a vocab of 65536 takes about 1 MB) is kept whole in the shards
apps/erase-tokenizer train "$text" --vocab 8000 -o "$dir/big" >"$dir/out" 2>&1 &&
    apps/erase-convert text "$dir/a.txt" --tokenizer "$dir/big" -o "$dir/bigd" >>"$dir/out" 2>&1 &&
    apps/erase-inspect data "$dir/bigd/train" >>"$dir/out" 2>&1
rc=$?
big=$(wc -c <"$dir/big")
bid=$(apps/erase-tokenizer info "$dir/big" | sed -n 's/.*identity \([0-9a-f]*\)$/\1/p')
[ $rc = 0 ] && [ "$big" -gt 65536 ] && grep -qx "  tokenizer $bid (BPE; its file in every shard)" "$dir/out"
tap $? "a tokenizer file of $big bytes (> 64 KiB) goes into the shards"
tap_report "$dir/out"

# blocks of 1000 bytes (ERASE_DEBUG_TEXT_BLOCK), cut where erase_tokenizer_chunk_end
# says, and a line of 5000 letters with no such place (its block grows):
# the ids erase-tokenizer encode gives the files whole
awk 'BEGIN { for (i = 0; i < 5000; i++) printf "a"; print "" }' >"$dir/long.txt"
head -c 30000 "$text" >"$dir/part.txt"
ERASE_DEBUG_TEXT_BLOCK=1000 apps/erase-convert text "$dir/part.txt" "$dir/long.txt" --tokenizer "$dir/tok" \
    --val-fraction 0 -o "$dir/blocks" >"$dir/out" 2>&1
rc=$?
want=$(apps/erase-tokenizer encode --tokenizer "$dir/tok" "$dir/part.txt" "$dir/long.txt" |
    awk '{ printf "291 %s ", $0 }' | tr -s ' ' '\n' | grep -v '^$')
if [ $rc = 0 ] && command -v h5dump >/dev/null 2>&1; then
    h5dump -d /tokens -y -w 0 -o "$dir/col" "$dir/blocks/train/part-00000.h5" >/dev/null
    [ "$(tr -d ' \n' <"$dir/col" | tr ',' '\n')" = "$want" ]
    tap $? "blocks of 1000 bytes and a block grown past 5000 letters: the ids of the whole files"
else
    [ $rc = 0 ] && grep -qx "  $dir/blocks/train  $(echo "$want" | wc -l) tokens, 1 shard" "$dir/out"
    tap $? "blocks of 1000 bytes and a block grown past 5000 letters: as many tokens as the whole files"
fi
tap_report "$dir/out"
