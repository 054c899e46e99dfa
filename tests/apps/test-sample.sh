#!/bin/sh
# erase-sample on checkpoints of small gpt models that sample-tool writes:
# --temperature 0 and --top-k 1 print the argmax chain that sample-tool
# computes by whole-window training forwards (no key/value cache), with and
# without cuts; the same seed gives the same text, another seed another
# text (temperature 1 on GPT-2's nearly flat initial logits); a checkpoint
# directory gives its newest checkpoint's text; --prompt-tokens on a
# vocabulary other than bytes; bad input: the exact message and status (1
# for a file that cannot serve, 2 for usage). Issue 32: to a terminal (a
# pty of script(1)) control bytes and invalid UTF-8 are written as \xHH (a
# backslash as \\; they reached the terminal raw), bytes as they are with
# --raw. Issue 34: a nanochat checkpoint's greedy text too.
. "$(dirname "$0")/../comm/mpi.sh"
need apps/erase-sample
need tests/apps/sample-tool
workdir
echo "1..21"

# expect STATUS FILE LINE...: the last command exited STATUS and FILE holds
# exactly the given lines
expect() {
    want=$1 file=$2; shift 2
    [ "$rc" = "$want" ] && printf '%s\n' "$@" | cmp -s - "$file"
}

# gpt_model NAME SEED SIZES: the model file DIR/NAME.cfg
gpt_model() {
    printf 'model = "gpt";\nseed = %s;\ngpt: { %s };\n' "$2" "$3" >"$dir/$1.cfg"
}
gpt_model gpt 3 "layers = 2; heads = 2; width = 16; context = 32; vocab = 256;"
gpt_model gpt-cuts 4 "layers = 3; heads = 4; width = 16; context = 24; vocab = 256; cuts = [1, 2];"
gpt_model gpt-300 5 "layers = 1; heads = 1; width = 8; context = 16; vocab = 300;"
cat >"$dir/ctr.cfg" <<'EOF'
model = "ctr";
ctr: { table_rows = 5; bottom_mlp = [4, 16]; subarch_width = 8; subarchs = 2; };
EOF

tests/apps/sample-tool "$dir/gpt.cfg" "$dir/spread" --spread --greedy "To be" 20 >"$dir/greedy" &&
    apps/erase-sample "$dir/spread/ckpt-0.h5" --prompt "To be" --tokens 20 --temperature 0 -q >"$dir/t0" 2>"$dir/err"
rc=$?
[ $rc = 0 ] && cmp -s "$dir/greedy" "$dir/t0" && [ ! -s "$dir/err" ] && [ "$(wc -c <"$dir/t0")" = 26 ]
tap $? "--temperature 0: the argmax chain of whole-window forwards, 5 + 20 bytes and a newline"
od -c "$dir/greedy" | tap_report /dev/stdin
od -c "$dir/t0" | tap_report /dev/stdin

apps/erase-sample "$dir/spread/ckpt-0.h5" --prompt "To be" --tokens 20 --top-k 1 --temperature 1.5 --seed 9 -q \
    >"$dir/k1" 2>"$dir/err"
rc=$?
[ $rc = 0 ] && cmp -s "$dir/greedy" "$dir/k1"
tap $? "--top-k 1 at temperature 1.5: greedy too"

tests/apps/sample-tool "$dir/gpt-cuts.cfg" "$dir/cuts" --spread --greedy "ab" 22 >"$dir/greedy-cuts" &&
    apps/erase-sample "$dir/cuts" --prompt "ab" --tokens 22 --temperature 0 -q >"$dir/t0-cuts" 2>"$dir/err"
rc=$?
[ $rc = 0 ] && cmp -s "$dir/greedy-cuts" "$dir/t0-cuts"
tap $? "cuts at 1 and 2 (local heads on blocks 0 and 1): greedy text of the last block's head, prompt + N = context"
od -c "$dir/t0-cuts" | tap_report /dev/stdin

# nanochat (issue 34): the rotary angle of each decoded position, 2 kv heads for 4 query heads, the softcap
printf 'model = "nanochat";\nseed = 6;\nnanochat: { layers = 2; width = 32; heads = 4; kv_heads = 2; context = 30; vocab = 256; softcap = 4; };\n' \
    >"$dir/nanochat.cfg"
tests/apps/sample-tool "$dir/nanochat.cfg" "$dir/nc" --spread --greedy "To be" 25 >"$dir/greedy-nc" &&
    apps/erase-sample "$dir/nc" --prompt "To be" --tokens 25 --temperature 0 >"$dir/t0-nc" 2>"$dir/progress-nc"
rc=$?
[ $rc = 0 ] && cmp -s "$dir/greedy-nc" "$dir/t0-nc" && [ "$(wc -c <"$dir/t0-nc")" = 31 ] &&
    [ "$(od -An -c "$dir/t0-nc" | tr -d ' \n' | sed 's/\(.\)\1*/\1/g' | wc -c)" -gt 8 ] &&
    grep -q "^erase-sample: $dir/nc/ckpt-0.h5 (step 0): nanochat, 2 layers, width 32, 4 heads on 2 kv heads, context 30, vocab 256\$" \
        "$dir/progress-nc"
tap $? "nanochat: --temperature 0 gives the argmax chain of whole-window forwards (not one repeated byte)"
od -c "$dir/t0-nc" | tap_report /dev/stdin
tap_report "$dir/progress-nc"

tests/apps/sample-tool "$dir/gpt.cfg" "$dir/flat" >/dev/null &&
    apps/erase-sample "$dir/flat/ckpt-0.h5" --prompt "Q" --tokens 24 --seed 7 >"$dir/s7a" 2>"$dir/progress" &&
    apps/erase-sample "$dir/flat/ckpt-0.h5" --prompt "Q" --tokens 24 --seed 7 -q >"$dir/s7b" &&
    apps/erase-sample "$dir/flat" --prompt "Q" --tokens 24 --seed 7 -q >"$dir/s7dir" &&
    apps/erase-sample "$dir/flat/ckpt-0.h5" --prompt "Q" --tokens 24 --seed 8 -q >"$dir/s8"
rc=$?
[ $rc = 0 ] && cmp -s "$dir/s7a" "$dir/s7b"
tap $? "the same seed: the same text"
! cmp -s "$dir/s7a" "$dir/s8"
tap $? "another seed: another text (temperature 1, nearly flat logits)"
od -c "$dir/s7a" | tap_report /dev/stdin
od -c "$dir/s8" | tap_report /dev/stdin
cmp -s "$dir/s7a" "$dir/s7dir"
tap $? "a checkpoint directory: its newest checkpoint's text"
grep -q "^erase-sample: $dir/flat/ckpt-0.h5 (step 0): gpt, 2 layers, width 16, 2 heads, context 32, vocab 256\$" \
    "$dir/progress" &&
    grep -Eq '^erase-sample: prompt 1 tokens in [0-9.]+ s \([0-9.]+ tokens/s\), generated 24 tokens in [0-9.]+ s \([0-9.]+ tokens/s\)$' \
        "$dir/progress"
tap $? "stderr: the model, then the prompt's and the generation's tokens per second"
tap_report "$dir/progress"

tests/apps/sample-tool "$dir/gpt-300.cfg" "$dir/v300" >/dev/null &&
    apps/erase-sample "$dir/v300" --prompt-tokens 299,0,17 --tokens 5 -q >"$dir/ids"
rc=$?
[ $rc = 0 ] && grep -Eq '^299 0 17( [0-9]+){5}$' "$dir/ids" &&
    [ "$(tr ' ' '\n' <"$dir/ids" | awk '$1 >= 300' | wc -l)" = 0 ]
tap $? "vocab 300: --prompt-tokens in, 3 + 5 token ids out, each below 300"
tap_report "$dir/ids"

apps/erase-sample "$dir/v300" --prompt "hi" -q >/dev/null 2>"$dir/err"
rc=$?
expect 2 "$dir/err" "erase-sample: --prompt: the model's vocabulary has 300 tokens, not the 256 bytes of a byte-level model: give token ids with --prompt-tokens (or its BPE tokenizer with --tokenizer FILE)"
tap $? "vocab 300 and --prompt: status $rc, says to give token ids"

apps/erase-sample "$dir/missing.h5" -q >/dev/null 2>"$dir/err"
rc=$?
expect 1 "$dir/err" "erase-sample: $dir/missing.h5: cannot read: No such file or directory"
tap $? "a missing checkpoint: status $rc, the file named"

tests/apps/sample-tool "$dir/ctr.cfg" "$dir/ctr" >/dev/null &&
    apps/erase-sample "$dir/ctr" -q >/dev/null 2>"$dir/err"
rc=$?
expect 1 "$dir/err" "erase-sample: $dir/ctr/ckpt-0.h5: the checkpoint of a ctr model: erase-sample generates with gpt and nanochat models only"
tap $? "a ctr checkpoint: status $rc, refused by its model kind"
tap_report "$dir/err"

apps/erase-sample "$dir/flat" --tokens 0 -q >/dev/null 2>"$dir/err"
rc=$?
expect 2 "$dir/err" "erase-sample: --tokens 0: expected a number of tokens >= 1"
tap $? "--tokens 0: status $rc"

apps/erase-sample "$dir/flat" --prompt "abc" --tokens 30 -q >/dev/null 2>"$dir/err"
rc=$?
expect 2 "$dir/err" "erase-sample: --tokens 30: the prompt's 3 tokens and 30 new ones do not fit the model's context of 32 positions (the window does not slide)"
tap $? "prompt + --tokens beyond the context: status $rc, both numbers and the context named"

for t in -0.5 1e40; do
    apps/erase-sample "$dir/flat" --temperature $t -q >/dev/null 2>"$dir/err"
    rc=$?
    expect 2 "$dir/err" "erase-sample: --temperature $t: expected a finite number >= 0 (0: greedy)"
    tap $? "--temperature $t: status $rc"
done

apps/erase-sample "$dir/flat" --prompt-tokens 1,2, -q >/dev/null 2>"$dir/err"
rc=$?
expect 2 "$dir/err" "erase-sample: --prompt-tokens 1,2,: expected token ids >= 0 separated by commas"
tap $? "--prompt-tokens with a trailing comma: status $rc"

apps/erase-sample "$dir/flat" --top-k -1 -q >/dev/null 2>"$dir/err"
rc=$?
expect 2 "$dir/err" "erase-sample: --top-k -1: expected an integer >= 0 (0: the whole vocabulary)"
tap $? "--top-k -1: status $rc"

apps/erase-sample "$dir/flat" --prompt "" -q >/dev/null 2>"$dir/err"
rc=$?
expect 2 "$dir/err" "erase-sample: --prompt is empty: give at least one token to start from"
tap $? "an empty --prompt: status $rc"

# issue 32: a prompt of 'A', ESC [2J (clear the screen), \001, \377 (not
# UTF-8), a backslash and U+00E9 (valid UTF-8) sampled to a pty: the
# prompt comes back escaped, and nothing after it reaches the terminal
# that is a control byte or invalid UTF-8; with --raw the bytes as they are
if command -v script >/dev/null 2>&1; then
    printf 'A\033[2J\001\377\\\303\251' >"$dir/prompt"
    for mode in escaped raw; do
        flag=''; [ $mode = raw ] && flag=--raw
        SHELL=/bin/sh timeout -k 5 60 script -qec "apps/erase-sample $dir/spread/ckpt-0.h5 --prompt \"\$(cat $dir/prompt)\" --tokens 4 --temperature 0 -q $flag" /dev/null </dev/null >"$dir/tty.$mode" 2>&1
        echo $? >"$dir/tty.$mode.rc"
    done
    printf 'A\\x1b[2J\\x01\\xff\\\\\303\251' >"$dir/want.escaped"
    n=$(wc -c <"$dir/want.escaped")
    [ "$(cat "$dir/tty.escaped.rc")" = 0 ] && [ "$(head -c "$n" "$dir/tty.escaped" | od -An -tx1)" = "$(od -An -tx1 <"$dir/want.escaped")" ] &&
        iconv -f UTF-8 -t UTF-8 <"$dir/tty.escaped" >/dev/null 2>&1 && ! tr -d '\r\n' <"$dir/tty.escaped" | LC_ALL=C grep -q '[[:cntrl:]]'
    tap $? "to a terminal: the prompt's ESC, bytes 1 and 255 and backslash escaped, U+00E9 as it is, no control byte or invalid UTF-8 after it"
    od -c "$dir/tty.escaped" | tap_report /dev/stdin
    [ "$(cat "$dir/tty.raw.rc")" = 0 ] && [ "$(head -c 10 "$dir/tty.raw" | od -An -tx1)" = "$(od -An -tx1 <"$dir/prompt")" ]
    tap $? "--raw to a terminal: the prompt's bytes as they are"
    od -c "$dir/tty.raw" | tap_report /dev/stdin
else
    for n in 19 20; do echo "ok $n # SKIP no script(1) for a pty"; done
fi
