#!/bin/sh
# erase-bench tokenizer (issue 33 item 5): its table has the training and
# the two encoding rows, each with min <= median <= max; with --reference
# (the venv of tests/venv.sh, when test-tokenizer-compat.sh or a run before
# made it) the reference columns and the ratios are there too, and
# bench/tokenizer_ref.py's tiktoken made erase's token count (no warning).
# Sizes are tiny: the figures are not judged.
. "$(dirname "$0")/../comm/mpi.sh"
need apps/erase-bench
workdir
echo "1..2"
head -c 100000 "${srcdir:-.}/data/text/tinyshakespeare.txt" >"$dir/text.txt"

# rows FILE COLUMNS: the table's 3 rows, each with COLUMNS 'a / b / c'
# spreads in order (a <= b <= c)
rows() {
    grep -E '^\| (training, vocab 300|encoding, 1 thread|encoding, 2 threads) ' "$1" | awk -F'|' -v n="$2" '
        { rows++
          for (c = 3; c < 3 + n; c++) {
              if (split($c, v, " / ") != 3 || v[1] + 0 > v[2] + 0 || v[2] + 0 > v[3] + 0 || v[1] + 0 <= 0) bad = 1
          } }
        END { exit bad || rows != 3 }'
}

apps/erase-bench tokenizer --text "$dir/text.txt" --vocab 300 --rounds 3 --repeat 1 >"$dir/out" 2>"$dir/err"
rc=$?
[ $rc = 0 ] && rows "$dir/out" 1 && grep -q '^# erase-bench tokenizer: .* (100000 bytes, [0-9]* tokens), vocab 300' "$dir/out"
tap $? "erase-bench tokenizer: status $rc, 3 rows of min / median / max"
tap_report "$dir/out"

: "${ERASE_VENV_DIR:=${XDG_CACHE_HOME:-${HOME:-/tmp}/.cache}/erase/venv}"
if "$ERASE_VENV_DIR/bin/python" -c 'import rustbpe, tiktoken' 2>/dev/null; then
    apps/erase-bench tokenizer --text "$dir/text.txt" --vocab 300 --rounds 2 --repeat 1 \
        --reference "$ERASE_VENV_DIR/bin/python" >"$dir/out" 2>"$dir/err"
    rc=$?
    [ $rc = 0 ] && rows "$dir/out" 2 && [ "$(grep -c -E '\*\*[0-9.]+x\*\* \([0-9.]+ · [0-9.]+\) \|$' "$dir/out")" = 3 ] &&
        [ ! -s "$dir/err" ]
    tap $? "erase-bench tokenizer --reference: status $rc, the references' spreads and the ratios, no warning"
    tap_report "$dir/out"; tap_report "$dir/err"
else
    echo "ok 2 # SKIP no venv with rustbpe and tiktoken at $ERASE_VENV_DIR (tests/io/test-tokenizer-compat.sh makes it)"
fi
