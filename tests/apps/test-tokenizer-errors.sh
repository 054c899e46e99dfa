#!/bin/sh
# erase-tokenizer on bad input (issue 33 item 6): a tokenizer file that is
# truncated (a line short, a line cut), has an out-of-range or duplicate
# merge, a token that is no merge, a vocab above what uint16 shards hold,
# is refused by one line naming the file and the fault (status 1) and
# nothing is written (encode prints no ids); train refuses --vocab above
# 65536 (status 2) and a missing text, writing no tokenizer file; decode
# refuses encode's options (status 2); bytes
# that are not UTF-8 go through encode and decode unchanged.
. "$(dirname "$0")/../comm/mpi.sh"
need apps/erase-tokenizer
workdir
echo "1..17"
text=${srcdir:-.}/data/text/tinyshakespeare.txt
tool=apps/erase-tokenizer

# expect STATUS FILE LINE...: the last command exited STATUS and FILE holds
# exactly the given lines
expect() {
    want=$1 file=$2; shift 2
    [ "$rc" = "$want" ] && printf '%s\n' "$@" | cmp -s - "$file"
}

# A tokenizer of vocab 300: 12 header lines, then ranks 0..290 on lines 13..303.
head -c 20000 "$text" >"$dir/small.txt"
$tool train -q "$dir/small.txt" --vocab 300 -o "$dir/good.tok" 2>"$dir/err"
rc=$?
[ $rc = 0 ] && [ "$(wc -l <"$dir/good.tok")" = 303 ] && $tool info "$dir/good.tok" >/dev/null
tap $? "a tokenizer of vocab 300 trained (status $rc) and read back"
tap_report "$dir/err"

# refused FILE DESCRIPTION MESSAGE: info and encode both refuse FILE with
# MESSAGE (after "erase-tokenizer CMD: error: "), encode writing nothing
refused() {
    $tool info "$1" >"$dir/out" 2>"$dir/err"
    rc=$?
    expect 1 "$dir/err" "erase-tokenizer info: error: $3" && [ ! -s "$dir/out" ] &&
        { printf 'x' | $tool encode --tokenizer "$1" - >"$dir/out" 2>"$dir/err"; rc=$?; } &&
        expect 1 "$dir/err" "erase-tokenizer encode: error: $3" && [ ! -s "$dir/out" ]
    tap $? "$2: status $rc, one line naming the file and the fault, no ids written"
    tap_report "$dir/err"
}

head -n 200 "$dir/good.tok" >"$dir/short.tok"
refused "$dir/short.tok" "truncated by lines" "$dir/short.tok: truncated: 188 tokens, the header says 291"

head -c $(( $(wc -c <"$dir/good.tok") - 3 )) "$dir/good.tok" >"$dir/cut.tok"
refused "$dir/cut.tok" "the last line cut" \
    "$dir/cut.tok: truncated: 290 tokens, the header says 291 (the last line has no newline)"

sed '303s/ 290$/ 400/' "$dir/good.tok" >"$dir/range.tok"
refused "$dir/range.tok" "a merge out of range" "$dir/range.tok: line 303: rank 400, expected 290 (ranks count up from 0)"

sed '303s/^.* 290$/YQ== 290/' "$dir/good.tok" >"$dir/dup.tok"
refused "$dir/dup.tok" "a duplicate merge" "$dir/dup.tok: line 303: token 290 duplicates token 97 ('a')"

sed '303s/^.* 290$/enF4 290/' "$dir/good.tok" >"$dir/nomerge.tok"
refused "$dir/nomerge.tok" "a token that is no merge" \
    "$dir/nomerge.tok: line 303: token 290 is not a merge of two earlier tokens"

sed '2s/.*/#vocab 70000/' "$dir/good.tok" >"$dir/big.tok"
refused "$dir/big.tok" "a vocab above uint16" \
    "$dir/big.tok: vocab 70000 is more than token shards hold (65536: tokens are stored as uint16)"

$tool train -q "$dir/small.txt" --vocab 70000 -o "$dir/big2.tok" 2>"$dir/err"
rc=$?
expect 2 "$dir/err" "erase-tokenizer train: --vocab 70000: at most 65536 (tokens are stored as uint16 in token shards)" &&
    [ ! -e "$dir/big2.tok" ]
tap $? "train --vocab 70000: status $rc, why, no file written"
tap_report "$dir/err"

$tool train -q "$dir/missing.txt" --vocab 300 -o "$dir/m.tok" 2>"$dir/err"
rc=$?
expect 1 "$dir/err" "erase-tokenizer train: error: $dir/missing.txt: cannot open: No such file or directory" &&
    [ ! -e "$dir/m.tok" ] && [ -z "$(ls "$dir" | grep '\.tmp')" ]
tap $? "train on a missing text: status $rc, the file named, no tokenizer file"
tap_report "$dir/err"

# -o: a file there is kept unless --force; a directory that is not there is
# said before the training (which can take minutes)
cp "$dir/good.tok" "$dir/kept.tok"
$tool train -q "$dir/small.txt" --vocab 300 -o "$dir/kept.tok" 2>"$dir/err"
rc=$?
expect 1 "$dir/err" "erase-tokenizer train: $dir/kept.tok: already exists; remove it or replace it (--force)" &&
    cmp -s "$dir/good.tok" "$dir/kept.tok" &&
    $tool train -q --force "$dir/small.txt" --vocab 290 -o "$dir/kept.tok" 2>"$dir/err2" && ! cmp -s "$dir/good.tok" "$dir/kept.tok"
tap $? "train -o an existing file: status $rc, kept; with --force replaced"
tap_report "$dir/err"
$tool train -q "$dir/small.txt" --vocab 300 -o "$dir/nowhere/t.tok" 2>"$dir/err"
rc=$?
expect 2 "$dir/err" "erase-tokenizer train: -o $dir/nowhere/t.tok: its directory $dir/nowhere does not exist"
tap $? "train -o into a directory that is not there: status $rc, said before training"
tap_report "$dir/err"
mkfifo "$dir/fifo.tok"
$tool train -q --force "$dir/small.txt" --vocab 300 -o "$dir/fifo.tok" 2>"$dir/err"
rc=$?
expect 2 "$dir/err" "erase-tokenizer train: -o $dir/fifo.tok: is a FIFO, expected a file name" && [ -p "$dir/fifo.tok" ]
tap $? "train -o a FIFO, even with --force: status $rc, refused, the FIFO left (a device likewise: never renamed over)"
tap_report "$dir/err"

# decode: an id past the vocab, a word that is no id: the file and the token (from 0) named
decode_refused() { # IDS WANT WHAT: status 1, the line WANT, nothing on stdout
    printf '%s\n' "$1" >"$dir/bad.ids"
    $tool decode --tokenizer "$dir/good.tok" "$dir/bad.ids" >"$dir/out" 2>"$dir/err"
    rc=$?
    expect 1 "$dir/err" "erase-tokenizer decode: error: $dir/bad.ids: $2" && [ ! -s "$dir/out" ]
    tap $? "decode of $3: status $rc, the file and the token named, nothing written"
    tap_report "$dir/err"
}
decode_refused "72 101 99999" "token 2 is 99999, expected < 300 (the vocab)" "an id past the vocab"
decode_refused "72 x 101" "token 1 is 'x', expected a number (the ids counted from 0)" "a word that is not an id"

printf 'caf\351 \377\376 \355\240\200 ok\302' >"$dir/bytes.bin"
$tool encode --tokenizer "$dir/good.tok" "$dir/bytes.bin" >"$dir/ids" 2>"$dir/err" &&
    $tool decode --tokenizer "$dir/good.tok" "$dir/ids" >"$dir/back.bin" 2>>"$dir/err" &&
    cmp -s "$dir/bytes.bin" "$dir/back.bin" && grep -qw 255 "$dir/ids"
tap $? "bytes that are not UTF-8: encode then decode gives them back (0xff its byte token)"
tap_report "$dir/err"

$tool decode --tokenizer "$dir/good.tok" --specials "$dir/ids" >"$dir/out" 2>"$dir/err"
rc=$?
expect 2 "$dir/err" "erase-tokenizer decode: --specials and --threads are options of encode (decode does nothing with them)" &&
    [ ! -s "$dir/out" ]
tap $? "decode --specials: status $rc, an option that would do nothing refused"
tap_report "$dir/err"

# a FIFO for the tokenizer file or the training text: refused before open()
# (which would wait for a writer), nothing written
mkfifo "$dir/fifo.tok"
timeout -k 5 30 $tool info "$dir/fifo.tok" >"$dir/out" 2>"$dir/err"
rc=$?
expect 1 "$dir/err" "erase-tokenizer info: error: $dir/fifo.tok is a FIFO, expected a regular file" &&
    timeout -k 5 30 $tool train -q "$dir/fifo.tok" --vocab 300 -o "$dir/fifo-out.tok" >"$dir/out" 2>"$dir/err"
rc=$?
expect 1 "$dir/err" "erase-tokenizer train: error: $dir/fifo.tok is a FIFO, expected a regular file" &&
    [ ! -e "$dir/fifo-out.tok" ]
tap $? "a FIFO as the tokenizer file and as the text to train on: status $rc, one line, no hang, nothing written"
tap_report "$dir/err"
