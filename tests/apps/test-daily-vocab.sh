#!/bin/bash
# jobs/daily with a vocabulary (issue 36; beside tests/apps/test-daily.sh,
# which takes most of a minute alone): the days of test-daily.sh (3,000 rows
# each from the shipped Criteo sample), the tiny ctr with table_rows =
# "data", 2 ranks, batch 64 (23 steps a day), checkpoints every 5 steps:
#   --vocab-threshold 2 --vocab-from-day 1: day 1 counts WORK/vocab.h5 once;
#     days 1, 2 and 3 are converted with it (their shards carry its digest),
#     their models' 26 tables have its sizes on every day, every record names
#     it, and each day warm-starts from the day before;
#   day 2 stopped after step 10 and run again publishes /params bitwise
#     equal to an uninterrupted day 2 given the same file by --vocab;
#   refusals, one exact line each, nothing published: a day whose ids the
#     vocabulary knows too few of (--min-vocab-coverage; erase-convert's own
#     line, the day's file and the vocabulary named), a warm start across
#     another vocabulary (erase-train's line: the checkpoint's vocabulary and
#     the data's, both named), WORK/vocab.h5 of another
#     threshold; usage errors (status 2);
#   a work directory with its own vocab.h5: run without --vocab or
#     --vocab-threshold, or with --vocab of another file, refused, nothing
#     converted;
#   the kept conversions are derived data: day 3 converted without a
#     vocabulary (its training refused: the data has none), then run with
#     --vocab: refused while a checkpoint of day 3 exists (resuming would mix
#     the numberings), converted again (one line each for data/day-3 and
#     data/heldout-4) and published once it does not.
. "$(dirname "$0")/../comm/mpi.sh"
# shellcheck source=tests/apps/daily-days.sh
. "${srcdir:-.}/tests/apps/daily-days.sh"
command -v h5ls >/dev/null 2>&1 || skip "no h5ls to read the models' table sizes"
daily_test_setup 12
sed 's/table_rows = 1001/table_rows = "data"/' "${srcdir:-.}/tests/slurm/tiny-ctr.cfg" >"$dir/tiny.cfg"
# day N WORK [jobs/daily options...]: output in $dir/out, status in rc; a
# loose --max-ne-regression: publishing on NE is test-daily.sh's
day() {
    n=$1
    local work=$2
    shift 2
    timeout -k 5 300 "$daily" --day "$n" --days-dir "$days" --work "$work" --model "$dir/tiny.cfg" --ranks 2 \
        --eval-rows 300 --checkpoint-every 5 --max-ne-regression 1 "$@" -- --batch 64 >"$dir/out" 2>&1
    rc=$?
}
# tables MODEL: its 26 table sizes (rows of /params/input/emb/0 .. 25)
tables() { h5ls -r "$1" | sed -n 's|^/params/input/emb/\([0-9]*\) *Dataset {\([0-9]*\), .*|\1 \2|p' | sort -n | awk '{ printf "%s ", $2 }'; }
# vocab_rows VOCAB: the table rows erase-inspect vocab gives per feature
vocab_rows() { "$PWD/apps/erase-inspect" vocab "$1" | awk '/^C[0-9]+ / { printf "%s ", $5 }'; }
digest() { "$PWD/apps/erase-inspect" vocab "$1" | sed -n '1s/.*, digest \([0-9a-f]*\),.*/\1/p'; }
# shard_digest DIR: the vocabulary erase-inspect data names for converted shards
shard_digest() { "$PWD/apps/erase-inspect" data "$1" | sed -n 's/^vocabulary \([0-9a-f]*\) (threshold.*/\1/p'; }
w=$dir/work

day 1 "$w" --vocab-threshold 2 --vocab-from-day 1
v=$w/vocab.h5
rows=$(vocab_rows "$v") dig=$(digest "$v")
[ $rc = 0 ] && [ -n "$dig" ] && [ "$(record "$w" 1 vocab)" = "$dig" ] && [ "$(shard_digest "$w/data/day-1")" = "$dig" ] &&
    [ "$(grep -c . <<<"${rows// /$'\n'}")" = 26 ] && [ "$(tables "$w/models/day-1.h5")" = "$rows" ] &&
    grep -qx "jobs/daily: day 1: counting the vocabulary of $days/day_1.tsv (threshold 2) into vocab.h5" "$dir/out"
tap $? "day 1: vocab.h5 counted from day 1 (digest $dig), day 1's shards carry it, the model's 26 tables have its sizes, the record names it"
[ $rc = 0 ] || tap_report "$dir/out"
cp -a "$w" "$dir/straight"

ERASE_DEBUG_KILL_AT_STEP=10:0:usr1 day 2 "$w" --vocab-threshold 2
[ $rc = 3 ] && [ -f "$w/ckpt/day-2/ckpt-10.h5" ] && [ ! -e "$w/models/day-2.h5" ]
s1=$?
day 2 "$w" --vocab-threshold 2
[ $s1 = 0 ] && [ $rc = 0 ] && grep -q "^resume from $w/ckpt/day-2/ckpt-10.h5: step 10," "$w/logs/day-2.train.log" &&
    ! grep -q 'counting the vocabulary' "$dir/out" && [ "$(record "$w" 2 vocab)" = "$dig" ] &&
    [ "$(shard_digest "$w/data/day-2")" = "$dig" ] && [ "$(tables "$w/models/day-2.h5")" = "$rows" ] &&
    [ "$(readlink "$w/models/current")" = day-2.h5 ]
tap $? "day 2 stopped after step 10 (status 3), run again: resumes, the same vocab.h5 (not counted again), publishes with its sizes"
[ $rc = 0 ] || tap_report "$dir/out"

day 2 "$dir/straight" --vocab "$dir/straight/vocab.h5"
[ $rc = 0 ] && [ "$(record "$dir/straight" 2 init)" = day-1.h5 ] && [ "$(record "$dir/straight" 2 vocab)" = "$dig" ] &&
    params "$w/models/day-2.h5" >"$dir/p.stopped" && params "$dir/straight/models/day-2.h5" >"$dir/p.straight" &&
    [ -s "$dir/p.straight" ] && cmp -s "$dir/p.stopped" "$dir/p.straight"
tap $? "the stopped and resumed day 2's /params are bitwise those of an uninterrupted day 2 given the same file by --vocab"
[ $rc = 0 ] || tap_report "$dir/out"

day 3 "$w" --vocab-threshold 2
[ $rc = 0 ] && [ "$(record "$w" 3 init)" = day-2.h5 ] && [ "$(record "$w" 3 vocab)" = "$dig" ] &&
    [ "$(shard_digest "$w/data/day-3")" = "$dig" ] && [ "$(tables "$w/models/day-3.h5")" = "$rows" ] &&
    [ "$(readlink "$w/models/current")" = day-3.h5 ] && [ "$(grep -c '"published":true' "$w/metrics/days.jsonl")" = 3 ]
tap $? "day 3 warm-started from day-2.h5: the chain of 3 days published, one vocabulary and the same table sizes on every day"
[ $rc = 0 ] || tap_report "$dir/out"

# ---- refusals: one line each, nothing published ------------------------------
b=$dir/bad
"$PWD/apps/erase-convert" criteo -q --vocab "$v" --min-vocab-coverage 0.99 -o "$dir/direct" "$days/day_3.tsv" \
    >"$dir/direct.out" 2>&1
why=$(grep -m1 "^erase-convert criteo: error: " "$dir/direct.out")
day 3 "$b" --vocab "$v" --min-vocab-coverage 0.99
bad "a day the vocabulary knows too few ids of" "jobs/daily: day 3: the vocabulary $v knows too few of the ids of $days/day_3.tsv (--min-vocab-coverage): ${why:-?}"

# current (day 2's model, tables of threshold 2) on days converted with a vocabulary of threshold 3
rm -rf "$b"
mkdir -p "$b/models"
cp "$w/models/day-2.h5" "$b/models/day-2.h5"
ln -s day-2.h5 "$b/models/current"
day 3 "$b" --vocab-threshold 3 --vocab-from-day 2
r3=$(vocab_rows "$b/vocab.h5")
want="jobs/daily: day 3: cannot warm-start from models/current -> day-2.h5: erase-train: --init-from $b/models/day-2.h5: the checkpoint was trained on data through vocabulary $dig; $b/data/day-3 was converted through vocabulary $(digest "$b/vocab.h5"): ids would mean other rows"
[ $rc = 1 ] && [ "$(last)" = "$want" ] && [ "$rows" != "$r3" ] &&
    [ ! -e "$b/metrics/days.jsonl" ] && [ ! -e "$b/models/day-3.h5" ] || { echo "# got:  $(last)"; echo "# want: $want"; false; }
tap $? "a warm start across another vocabulary (threshold 3): status $rc, erase-train's line naming both vocabularies"
[ $rc = 1 ] || tap_report "$dir/out"

day 3 "$dir/straight" --vocab-threshold 3
want="jobs/daily: day 3: $dir/straight/vocab.h5 was counted with threshold 2, not 3: the vocabulary is fixed from its first day (remove it and every day's model to start over)"
[ $rc = 1 ] && [ "$(last)" = "$want" ] && [ ! -e "$dir/straight/data/day-3" ] && [ ! -e "$dir/straight/models/day-3.h5" ] &&
    [ "$(digest "$dir/straight/vocab.h5")" = "$dig" ]
tap $? "WORK/vocab.h5 of another threshold: status $rc, nothing converted or published, vocab.h5 unchanged, one line: $want"
[ $rc = 1 ] || tap_report "$dir/out"

day 3 "$dir/u1" --vocab "$v" --vocab-threshold 2
o1=$(last) r1=$rc
day 3 "$dir/u2" --vocab-threshold 2 --vocab-from-day 4
[ $r1 = 2 ] && [ $rc = 2 ] &&
    [ "$o1" = "jobs/daily: --vocab FILE and --vocab-threshold T: one vocabulary (a given file, or WORK/vocab.h5 counted once)" ] &&
    [ "$(last)" = "jobs/daily: --vocab-from-day 4 is after --day 3: day 3's vocabulary comes from days up to 3 (day 4's rows are its test)" ]
tap $? "usage errors, status 2, one line each: --vocab with --vocab-threshold; --vocab-from-day after the day"

# ---- a work directory converts through one vocabulary ------------------------
day 3 "$dir/straight"
want="jobs/daily: day 3: $dir/straight/vocab.h5 exists: this work directory converts its days through a vocabulary; give --vocab-threshold T (the one it was counted with) or --vocab FILE"
[ $rc = 1 ] && [ "$(last)" = "$want" ] && [ ! -e "$dir/straight/data/day-3" ] || { echo "# got: $(last)"; false; }
tap $? "WORK/vocab.h5 and neither --vocab nor --vocab-threshold: status $rc, nothing converted, one line: $want"

other=$b/vocab.h5 d3=$(digest "$b/vocab.h5")
day 3 "$dir/straight" --vocab "$other"
want="jobs/daily: day 3: --vocab $other is vocabulary $d3, but this work directory's $dir/straight/vocab.h5 is $dig: its days' models number ids through it (give --vocab $dir/straight/vocab.h5, or use another --work)"
[ $rc = 1 ] && [ -n "$d3" ] && [ "$(last)" = "$want" ] && [ ! -e "$dir/straight/data/day-3" ] || { echo "# got: $(last)"; false; }
tap $? "--vocab of another file than WORK/vocab.h5: status $rc, nothing converted, one line naming both"

# ---- kept conversions of another vocabulary ----------------------------------
k=$dir/kept
day 3 "$k"
s1=$rc d1=$(shard_digest "$k/data/day-3")
mkdir -p "$k/ckpt/day-3" && : >"$k/ckpt/day-3/ckpt-5.h5" # as if its training had started
day 3 "$k" --vocab "$v"
want="jobs/daily: day 3: data/day-3 was converted without a vocabulary (hashed ids) and the day's training started on it (ckpt/day-3); this run converts through vocabulary $dig: resuming would mix the two (run it as it started, or remove ckpt/day-3 to start the day over)"
[ $s1 = 1 ] && [ -f "$k/data/day-3/index.txt" ] && [ -z "$d1" ] && [ $rc = 1 ] && [ "$(last)" = "$want" ] &&
    [ -z "$(shard_digest "$k/data/day-3")" ] && [ ! -e "$k/models/day-3.h5" ] || { echo "# got: $(last)"; false; }
tap $? "day 3 converted without a vocabulary, then run with --vocab while ckpt/day-3 holds a checkpoint: status $rc, one line naming both"

rm -rf "$k/ckpt/day-3"
day 3 "$k" --vocab "$v"
[ $rc = 0 ] && [ "$(shard_digest "$k/data/day-3")" = "$dig" ] &&
    grep -qx "jobs/daily: day 3: data/day-3 was converted without a vocabulary (hashed ids); this run converts through vocabulary $dig: converting it again" "$dir/out" &&
    grep -qx "jobs/daily: day 3: data/heldout-4 was converted without a vocabulary (hashed ids); this run converts through vocabulary $dig: converting it again" "$dir/out" &&
    [ "$(tables "$k/models/day-3.h5")" = "$rows" ] && [ "$(record "$k" 3 vocab)" = "$dig" ] ||
    { tap_report "$dir/out"; false; }
tap $? "run again with --vocab and no checkpoint: data/day-3 and data/heldout-4 converted again through it (one line each), day 3 published with its table sizes"
