#!/bin/sh
# erase-convert text and tokens, and erase-inspect data of token shards
# (issue 15): tinyshakespeare into DIR/train (the first 90% of the bytes)
# and DIR/eval (the last 10%: 111,539 of 1,115,394), as erase-inspect
# reads them back (65 distinct bytes, the largest 'z' = 122, one byte per
# token); tokens imported from a raw uint16 file; broken token files and
# usage errors refused with their exact message (status 1 / 2) and no
# directory left; a FIFO refused, not waited on. Issue 32: a file without
# llm.c's header needs --raw (a text file was imported as 557,697 garbage
# tokens, status 0), and a near miss of the magic is named as a damaged
# header (it was read as a raw file, its header as 512 tokens).
. "$(dirname "$0")/../comm/mpi.sh"
need apps/erase-convert
need apps/erase-inspect
workdir
echo "1..12"
text=${srcdir:-.}/data/text/tinyshakespeare.txt

# expect STATUS FILE LINE...: the last command exited STATUS and FILE holds
# exactly the given lines
expect() {
    want=$1 file=$2; shift 2
    [ "$rc" = "$want" ] && printf '%s\n' "$@" | cmp -s - "$file"
}

apps/erase-convert text "$text" -o "$dir/shake" >"$dir/out" 2>"$dir/err"
rc=$?
[ $rc = 0 ] && grep -qx "  $dir/shake/train  1003855 tokens, 1 shard" "$dir/out" &&
    grep -qx "  $dir/shake/eval   111539 tokens, 1 shard" "$dir/out"
tap $? "erase-convert text tinyshakespeare: 1,003,855 tokens in train, the last 111,539 in eval"
cat "$dir/out" "$dir/err" | sed 's/^/# /'

apps/erase-inspect data "$dir/shake/train" "$dir/shake/eval" >"$dir/out" 2>"$dir/err"
rc=$?
[ $rc = 0 ] && grep -qx "2 shards, format erase-tok-1" "$dir/out" &&
    grep -qx "  tokens 1115394, vocab 256, ids used 65 (largest 122)" "$dir/out" &&
    grep -qx "  bytes 1115394 (1.0000 per token)" "$dir/out"
tap $? "erase-inspect data: 1,115,394 tokens of 65 distinct bytes, one byte per token"
cat "$dir/out" "$dir/err" | sed 's/^/# /'

# 4 raw uint16 tokens (little-endian 1, 2, 3, 50256; no llm.c header)
printf '\001\000\002\000\003\000\120\304' >"$dir/raw.bin"
apps/erase-convert tokens --raw "$dir/raw.bin" -o "$dir/tok" >"$dir/out" 2>"$dir/err" &&
    apps/erase-inspect data "$dir/tok" >"$dir/out" 2>>"$dir/err"
rc=$?
[ $rc = 0 ] && grep -qx "  tokens 4, vocab 50257, ids used 4 (largest 50256)" "$dir/out" &&
    grep -qx "  bytes: unknown (imported tokens): no bits per byte" "$dir/out"
tap $? "erase-convert tokens of a raw file: 4 tokens, vocab 50257 (GPT-2's), no byte count"
cat "$dir/out" "$dir/err" | sed 's/^/# /'

apps/erase-convert tokens --raw "$dir/raw.bin" -o "$dir/tok2" --vocab 50000 >/dev/null 2>"$dir/err"
rc=$?
expect 1 "$dir/err" \
    "erase-convert tokens: error: $dir/raw.bin: token 3 is 50256, expected < 50000 (the vocab; --vocab V)" \
    "erase-convert tokens: no dataset written to $dir/tok2" && [ ! -e "$dir/tok2" ]
tap $? "erase-convert tokens, a token >= --vocab: status $rc, the file and position named, no directory left"
tap_report "$dir/err"

printf 'abc' >"$dir/odd.bin"
apps/erase-convert tokens --raw "$dir/odd.bin" -o "$dir/tok3" >/dev/null 2>"$dir/err"
rc=$?
expect 1 "$dir/err" \
    "erase-convert tokens: error: $dir/odd.bin: 3 bytes: a raw token file (no llm.c header) holds uint16 tokens, an even number of bytes" \
    "erase-convert tokens: no dataset written to $dir/tok3" && [ ! -e "$dir/tok3" ]
tap $? "erase-convert tokens, an odd raw file: status $rc, the byte count named, no directory left"
tap_report "$dir/err"

apps/erase-convert text "$text" -o "$dir/shake2" --val-fraction 1 >/dev/null 2>"$dir/err"
rc=$?
[ $rc = 2 ] && head -n 1 "$dir/err" | grep -qx "erase-convert text: --val-fraction: bad value '1' (expected a number in \[0, 1))" && [ ! -e "$dir/shake2" ]
tap $? "erase-convert text --val-fraction 1: usage error (status $rc)"
tap_report "$dir/err"

# a FIFO (no writer) is refused at once: fopen would wait for a writer forever
mkfifo "$dir/fifo"
timeout -k 2 20 apps/erase-convert tokens "$dir/fifo" -o "$dir/tok4" >/dev/null 2>"$dir/err"
rc=$?
expect 1 "$dir/err" \
    "erase-convert tokens: error: $dir/fifo is a FIFO, expected a regular file" \
    "erase-convert tokens: no dataset written to $dir/tok4" && [ ! -e "$dir/tok4" ]
tap $? "erase-convert tokens of a FIFO: status $rc at once (124: it waited), not a regular file"
tap_report "$dir/err"

# 300 bytes with --val-fraction 0.999: no training token, said before anything is written
head -c 300 "$text" >"$dir/small.txt"
apps/erase-convert text "$dir/small.txt" -o "$dir/shake3" --val-fraction 0.999 >/dev/null 2>"$dir/err"
rc=$?
expect 1 "$dir/err" \
    "erase-convert text: error: the inputs' 300 bytes leave no training tokens with --val-fraction 0.999 (300 for evaluation)" \
    "erase-convert text: no dataset written to $dir/shake3" && [ ! -e "$dir/shake3" ]
tap $? "erase-convert text with no byte left for train: status $rc, the sizes named, no directory left"
tap_report "$dir/err"

# issue 32: without --raw a file with no llm.c magic is refused, saying
# what it looks like; with --raw the same raw file imports
apps/erase-convert tokens "$dir/raw.bin" -o "$dir/tok5" >/dev/null 2>"$dir/err"
rc=$?
expect 1 "$dir/err" \
    "erase-convert tokens: error: $dir/raw.bin: no llm.c header (magic 20240520): a headerless file of uint16 tokens (nanoGPT's .bin) needs --raw" \
    "erase-convert tokens: no dataset written to $dir/tok5" && [ ! -e "$dir/tok5" ]
tap $? "erase-convert tokens of a headerless file without --raw: status $rc, --raw named, no directory left"
tap_report "$dir/err"

apps/erase-convert tokens "$dir/small.txt" -o "$dir/tok6" >/dev/null 2>"$dir/err"
rc=$?
expect 1 "$dir/err" \
    "erase-convert tokens: error: $dir/small.txt: no llm.c header (magic 20240520) and the bytes look like text: erase-convert text converts text (--raw imports it as uint16 tokens anyway)" \
    "erase-convert tokens: no dataset written to $dir/tok6" && [ ! -e "$dir/tok6" ]
tap $? "erase-convert tokens of a text file: status $rc, erase-convert text named, no directory left"
tap_report "$dir/err"

# llm.c headers (256 little-endian int32: magic, version 1, 4 tokens) then
# the 4 tokens of raw.bin; one with the magic's first byte off by one
llmc_file() { # MAGIC-BYTE-0 FILE
    { printf "\\$1\\330\\064\\001\\001\\000\\000\\000\\004\\000\\000\\000"
      head -c 1012 /dev/zero; cat "$dir/raw.bin"; } >"$2"
}
llmc_file 210 "$dir/good.bin"
llmc_file 211 "$dir/damaged.bin"
apps/erase-convert tokens "$dir/good.bin" -o "$dir/tok7" >"$dir/out" 2>"$dir/err"
rc=$?
[ $rc = 0 ] && grep -qx "  files          1 (1 with llm.c's header, 0 raw uint16)" "$dir/out" &&
    grep -qx "  tokens         4 in .*" "$dir/out"
tap $? "erase-convert tokens of an llm.c file (magic 20240520): status $rc, 4 tokens, no --raw needed"
cat "$dir/out" "$dir/err" | sed 's/^/# /'

apps/erase-convert tokens "$dir/damaged.bin" -o "$dir/tok8" >/dev/null 2>"$dir/err"
rc=$?
expect 1 "$dir/err" \
    "erase-convert tokens: error: $dir/damaged.bin: llm.c magic 20240520 expected, got 20240521: damaged llm.c header?" \
    "erase-convert tokens: no dataset written to $dir/tok8" && [ ! -e "$dir/tok8" ]
tap $? "erase-convert tokens, an llm.c header with its magic one off: status $rc, named as a damaged header"
tap_report "$dir/err"
