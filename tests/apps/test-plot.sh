#!/bin/sh
# jobs/plot on the metrics of every task (issue 32: it died with KeyError
# 'ne' on those of jobs/mnist and jobs/shakespeare): small runs of 2 ranks
# (ctr on synthetic data, classify on 600 MNIST images, lm on 100 kB of
# text with a 1-block gpt) write --metrics files; --list names the panels
# each task gets (ctr: NE, AUC, QPS; classify: loss, accuracy; lm: loss,
# perplexity, bits per byte, tokens/s), each with as many points as the
# file has records of it, against samples seen (ctr, classify) or tokens
# seen (lm: samples x the window's tokens), the last x read from the file;
# then it draws all three into one PNG (skipped without matplotlib).
. "$(dirname "$0")/../comm/mpi.sh"
. "$(dirname "$0")/metrics-runs.sh"
need apps/erase-train
need apps/erase-convert
[ -x /usr/bin/python3 ] || skip "no /usr/bin/python3 for jobs/plot"
workdir
echo "1..5"
plot=${srcdir:-.}/jobs/plot
metrics_runs

# want NAME X TITLE|TYPE|KEY...: the --list lines jobs/plot should print for
# NAME.jsonl: per panel, the records of TYPE holding KEY (counted here),
# the last one's samples (times $tokens for lm) and its value (printf %.6g)
want() {
    name=$1 x=$2; shift 2
    for panel in "$@"; do
        title=${panel%%|*} rest=${panel#*|}
        type=${rest%%|*} key=${rest#*|}
        grep "\"type\":\"$type\"" "$dir/$name.jsonl" | grep "\"$key\":" >"$dir/rows"
        n=$(wc -l <"$dir/rows")
        last=$(tail -n 1 "$dir/rows")
        samples=$(echo "$last" | sed 's/.*"samples":\([0-9]*\).*/\1/')
        value=$(echo "$last" | sed "s/.*\"$key\":\\([-0-9.e]*\\).*/\\1/")
        echo "$title vs $x: $name.jsonl: $n points, last at $((samples * ${tokens:-1})) $x: $(printf %.6g "$value")"
    done
}

"$plot" --list "$dir/ctr.jsonl" >"$dir/list" 2>&1
want ctr samples "train NE (window)|train|ne" "eval NE|eval|ne" "eval AUC|eval|auc" "QPS (samples/s)|train|qps" >"$dir/want"
cmp -s "$dir/want" "$dir/list"
tap $? "ctr metrics: train NE, eval NE, eval AUC and QPS against samples seen"
diff "$dir/want" "$dir/list" | tap_report /dev/stdin

"$plot" --list "$dir/classify.jsonl" >"$dir/list" 2>&1
want classify samples "train loss (window)|train|loss" "eval loss|eval|loss" \
    "train accuracy (window)|train|accuracy" "eval accuracy|eval|accuracy" >"$dir/want"
cmp -s "$dir/want" "$dir/list"
tap $? "classify metrics (it raised KeyError 'ne'): loss and accuracy, train and eval, against samples seen"
diff "$dir/want" "$dir/list" | tap_report /dev/stdin

"$plot" --list "$dir/lm.jsonl" >"$dir/list" 2>&1
eval_line=$(grep '"type":"eval"' "$dir/lm.jsonl" | head -n 1)
tokens=$(( $(echo "$eval_line" | sed 's/.*"eval_tokens":\([0-9]*\).*/\1/') / \
    $(echo "$eval_line" | sed 's/.*"eval_samples":\([0-9]*\).*/\1/') ))
want lm tokens "train loss (window)|train|loss" "eval loss|eval|loss" "eval perplexity|eval|perplexity" \
    "eval bits per byte|eval|bits_per_byte" "tokens/s|train|tokens_per_s" >"$dir/want"
tokens=''
[ "$(wc -l <"$dir/want")" = 5 ] && cmp -s "$dir/want" "$dir/list"
tap $? "lm metrics (it raised KeyError 'ne'): loss, perplexity, bits per byte, tokens/s against tokens seen"
diff "$dir/want" "$dir/list" | tap_report /dev/stdin

"$plot" --list "$dir/ctr.jsonl" --bogus >"$dir/out" 2>&1
rc=$?
[ $rc = 2 ] && [ "$(cat "$dir/out")" = "jobs/plot: unknown option --bogus (jobs/plot --help lists them)" ]
tap $? "jobs/plot --bogus: status $rc, one line naming it"

"$plot" "$dir/ctr.jsonl" "$dir/classify.jsonl" "$dir/lm.jsonl" -o "$dir/all.png" >"$dir/out" 2>&1
rc=$?
if [ $rc = 1 ] && grep -q '^jobs/plot needs matplotlib' "$dir/out"; then
    echo "ok 5 # SKIP no matplotlib to draw with"
else
    [ $rc = 0 ] && [ "$(cat "$dir/out")" = "wrote $dir/all.png" ] &&
        [ "$(head -c 4 "$dir/all.png" | od -An -c | tr -d ' ')" = '211PNG' ]
    tap $? "the three tasks' metrics drawn into one PNG: status $rc"
    tap_report "$dir/out"
fi
