#!/bin/sh
# erase's BPE tokenizer against nanochat's references, the PyPI packages
# rustbpe (training) and tiktoken (encoding), in a venv (tests/venv.sh;
# skipped with the reason when PyPI cannot be reached) (issue 33 item 4):
# on the shipped text, V = 512 and 4096 with nanochat's split pattern and
# V = 512 with GPT-4's, erase's merges equal rustbpe's, and its ids equal
# tiktoken's built from erase's file (the snippet of docs/tokenizer.md) on
# held-out text, unicode, whitespace runs, digits, special tokens and
# seeded random strings (tests/io/tokenizer_compat.py); the Unicode letters
# and numbers agree with tiktoken's regex crate on 9,700 probe code points
# (tests/io/tokenizer_classes.py).
. "$(dirname "$0")/../comm/mpi.sh"
. "$(dirname "$0")/../venv.sh"
need apps/erase-tokenizer
venv_need rustbpe tiktoken
workdir
echo "1..22"
for run in "512 nanochat 1" "4096 nanochat 2" "512 gpt4 3"; do
    set -- $run
    "$venv_python" "${srcdir:-.}/tests/io/tokenizer_compat.py" apps/erase-tokenizer \
        "${srcdir:-.}/data/text/tinyshakespeare.txt" "${srcdir:-.}/docs/tokenizer.md" "$dir" "$1" "$2" "$3" \
        >"$dir/tap" 2>"$dir/err"
    rc=$?
    # renumber the script's results into this driver's sequence
    while IFS= read -r line; do
        case $line in
        "ok "*) tap 0 "${line#ok * - }" ;;
        "not ok "*) tap 1 "${line#not ok * - }" ;;
        *) echo "$line" ;;
        esac
    done <"$dir/tap"
    [ $rc = 0 ] || { echo "# tokenizer_compat.py V=$1 $2 exited $rc:"; tap_report "$dir/err"; }
done
"$venv_python" "${srcdir:-.}/tests/io/tokenizer_classes.py" apps/erase-tokenizer "${srcdir:-.}/io/unicode_classes.c" \
    "$dir" "${srcdir:-.}/docs/tokenizer.md" >"$dir/tap" 2>"$dir/err"
rc=$?
grep -q '^ok 1 - ' "$dir/tap"
tap $? "$(sed -n 's/^\(not \)*ok 1 - //p' "$dir/tap")"
grep '^#' "$dir/tap"
[ $rc = 0 ] || { echo "# tokenizer_classes.py exited $rc:"; tap_report "$dir/err"; }
