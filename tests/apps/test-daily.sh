#!/bin/bash
# jobs/daily without Slurm (issue 36): three days of 3,000 rows cut from
# the shipped Criteo sample (day 4, its last 999 rows, is day 3's test), a
# tiny ctr on 2 ranks, batch 64 (23 steps a day), checkpoints every 5 steps:
#   day 1 trains from scratch and publishes models/day-1.h5, current -> it,
#     the record's NE that of erase-score's eval line on the same rows;
#   day 2 stopped after step 10 (the ranks' SIGUSR1, ERASE_DEBUG_KILL_AT_STEP):
#     status 3, nothing published; run again it resumes from ckpt-10 and
#     publishes /params bitwise equal to an uninterrupted day 2 (another work
#     directory); --keep 1 leaves day-2.h5 only; a third run is a no-op;
#   day 3 with a learning rate that ruins it, --max-ne-regression 0 and
#     --optimizer-state reset (parameters only): rejected, kept aside,
#     current unchanged, status 1, its line exact;
#   bad input, each one exact line, status 1, nothing published: the days'
#     directory or a day missing, the next day missing, clock skew, current
#     damaged, current of another model shape or kind, a corrupted day file; a
#     usage error (status 2); jobs/plot --list draws NE per day.
. "$(dirname "$0")/../comm/mpi.sh"
# shellcheck source=tests/apps/daily-days.sh
. "${srcdir:-.}/tests/apps/daily-days.sh"
daily_test_setup 19
cp "${srcdir:-.}/tests/slurm/tiny-ctr.cfg" "$dir/tiny.cfg"
# day N WORK [jobs/daily options...]: output in $dir/out, status in rc;
# $extra: more erase-train options
day() {
    n=$1
    local work=$2
    shift 2
    # shellcheck disable=SC2086 # $extra: words
    timeout -k 5 300 "$daily" --day "$n" --days-dir "$days" --work "$work" --model "$dir/tiny.cfg" --ranks 2 \
        --eval-rows 300 --checkpoint-every 5 "$@" -- --batch 64 ${extra:-} >"$dir/out" 2>&1
    rc=$?
}
w=$dir/work

day 1 "$w"
ne=$(record "$w" 1 ne)
score_ne=$(sed -n 's/^ *eval *NE \([0-9.]*\) .*/\1/p' "$w/logs/day-1.score.log")
[ $rc = 0 ] && [ "$(readlink "$w/models/current")" = day-1.h5 ] && [ "$(record "$w" 1 published)" = true ] &&
    [ "$(record "$w" 1 rows)" = 3000 ] && [ "$(record "$w" 1 eval_rows)" = 300 ] && [ -n "$score_ne" ] &&
    [ "$(printf %.4f "$ne")" = "$score_ne" ] &&
    [ "$(last)" = "jobs/daily: day 1: published models/day-1.h5, models/current -> day-1.h5 (NE $ne, AUC $(record "$w" 1 auc); first published model)" ]
tap $? "day 1 from scratch: status $rc, models/day-1.h5 published, current -> it, 3000 rows, 300 held out, NE $ne = erase-score's ${score_ne:-?}"
[ $rc = 0 ] || tap_report "$dir/out"
cp -a "$w" "$dir/straight"

ERASE_DEBUG_KILL_AT_STEP=10:0:usr1 day 2 "$w" --keep 1
[ $rc = 3 ] && [ ! -e "$w/models/day-2.h5" ] && [ "$(readlink "$w/models/current")" = day-1.h5 ] &&
    [ -f "$w/ckpt/day-2/ckpt-10.h5" ] && ! grep -q '"day":2,' "$w/metrics/days.jsonl" &&
    [ "$(last)" = "jobs/daily: day 2 stopped by SIGUSR1 while training: nothing published (run it again to resume; checkpoints in ckpt/day-2)" ]
tap $? "day 2 stopped after step 10: status $rc, ckpt-10.h5 written, nothing published or recorded, current -> day-1.h5"
[ $rc = 3 ] || tap_report "$dir/out"

day 2 "$w" --keep 1
[ $rc = 0 ] && grep -q "^resume from $w/ckpt/day-2/ckpt-10.h5: step 10," "$w/logs/day-2.train.log" &&
    [ "$(readlink "$w/models/current")" = day-2.h5 ] && [ "$(record "$w" 2 init)" = resumed ] && [ ! -e "$w/ckpt/day-2" ]
tap $? "day 2 run again: resumes from ckpt-10.h5, publishes, current -> day-2.h5, its checkpoints removed once recorded"
[ $rc = 0 ] || tap_report "$dir/out"

day 2 "$dir/straight"
[ $rc = 0 ] && [ "$(record "$dir/straight" 2 init)" = day-1.h5 ] &&
    grep -q "^init   from $dir/straight/models/day-1.h5 (step 23 of an earlier run): parameters and optimizer state loaded;" \
        "$dir/straight/logs/day-2.train.log" && params "$w/models/day-2.h5" >"$dir/p.stopped" &&
    params "$dir/straight/models/day-2.h5" >"$dir/p.straight" && [ -s "$dir/p.straight" ] && cmp -s "$dir/p.stopped" "$dir/p.straight"
tap $? "the stopped and resumed day 2's /params are bitwise those of an uninterrupted day 2 warm-started from day-1.h5 (parameters and optimizer state: --optimizer-state keep)"
[ $rc = 0 ] || tap_report "$dir/out"

# shellcheck disable=SC2012
[ "$(ls "$w/models" | tr '\n' ' ')" = "current day-2.h5 rejected " ] && [ -d "$dir/straight/data/day-1" ] && [ ! -d "$w/data/day-1" ]
tap $? "--keep 1: day-1.h5 and day 1's shards removed, day-2.h5 kept (the default --keep 7 keeps both)"

lines=$(wc -l <"$w/metrics/days.jsonl")
day 2 "$w" --keep 1
[ $rc = 0 ] && [ "$(last)" = "jobs/daily: day 2 is done: published models/day-2.h5 before (metrics/days.jsonl): nothing to do" ] &&
    [ "$(wc -l <"$w/metrics/days.jsonl")" = "$lines" ]
tap $? "day 2 a third time: a no-op that says so, status $rc, no new record"

extra="--lr 3 --embedding-lr 10" day 3 "$w" --keep 1 --max-ne-regression 0 --optimizer-state reset
ne=$(record "$w" 3 ne) base=$(record "$w" 3 current_ne)
[ $rc = 1 ] && [ -f "$w/models/rejected/day-3.h5" ] && [ ! -e "$w/models/day-3.h5" ] &&
    grep -q "^init   from $w/models/day-2.h5 (step 23 of an earlier run): parameters loaded; this run starts at step 0" \
        "$w/logs/day-3.train.log" && [ "$(record "$w" 3 optimizer_state)" = reset ] &&
    [ "$(readlink "$w/models/current")" = day-2.h5 ] && [ "$(record "$w" 3 published)" = false ] &&
    awk -v n="$ne" -v b="$base" 'BEGIN { exit !(n > b) }' &&
    [ "$(last)" = "jobs/daily: day 3: rejected: NE $ne is worse than current's (day-2.h5) $base by more than 0 (relative); kept aside as models/rejected/day-3.h5, models/current unchanged" ]
tap $? "day 3 ruined (lr 3), --max-ne-regression 0, --optimizer-state reset (parameters only): NE $ne > current's $base, rejected, kept aside, current unchanged, status $rc"
[ $rc = 1 ] || tap_report "$dir/out"

# models/current switched by hand while day 3 runs (a rollback to day-1.h5,
# made here by a launcher that switches it as the baseline's evaluation
# starts): the baseline is still the model the day started from, day-3.h5
# is written, current is left as the person set it, status 1
s=$dir/switched
mkdir -p "$s/models"
cp "$w/models/day-1.h5" "$w/models/day-2.h5" "$s/models/"
ln -s day-2.h5 "$s/models/current"
cat >"$dir/switch-mpirun" <<EOF
#!/bin/sh
case "\$*" in *day-3.baseline.jsonl*) ln -sfn day-1.h5 "$s/models/.c" && mv -T "$s/models/.c" "$s/models/current" ;; esac
exec ${MPIRUN:-mpirun} "\$@"
EOF
chmod +x "$dir/switch-mpirun"
ERASE_MPIRUN=$dir/switch-mpirun day 3 "$s"
last_line=$(last)
[ $rc = 1 ] && [ "$(readlink "$s/models/current")" = day-1.h5 ] && [ -f "$s/models/day-3.h5" ] &&
    [ "$(record "$s" 3 published)" = true ] &&
    case $last_line in "jobs/daily: day 3: wrote models/day-3.h5 (NE "*", but models/current was switched while the day ran (from day-2.h5 to day-1.h5): left as it is; to serve day 3: ln -sfn day-3.h5 $s/models/current") true ;; *) false ;; esac
tap $? "models/current switched by hand while day 3 ran: day-3.h5 written, current left at the person's day-1.h5, said, status $rc"
[ $rc = 1 ] || tap_report "$dir/out"

"${srcdir:-.}/jobs/plot" --list "$w/metrics/days.jsonl" >"$dir/plot" 2>&1
[ "$(head -n 1 "$dir/plot")" = "NE per day vs day: days.jsonl: 3 points, last at 3 day: $(printf %.6g "$ne")" ]
tap $? "jobs/plot --list: NE per day, 3 days, the last day's NE"
tap_report "$dir/plot"

# ---- bad input: one line each, nothing published ------------------------------------
b=$dir/bad
day 3 "$b" --days-dir "$dir/nowhere"
bad "the days' directory missing" "jobs/daily: --days-dir $dir/nowhere: no such directory"
day 6 "$b"
bad "the day missing" "jobs/daily: day 6: no $days/day_6.tsv or day_6.tsv.gz"
day 4 "$b"
bad "the next day missing" "jobs/daily: day 4: no $days/day_5.tsv or day_5.tsv.gz: day 4's model is evaluated on the first rows of day 5"
touch -d "2025-12-31 00:00:00 UTC" "$days/day_4.tsv"
day 3 "$b"
bad "clock skew" "jobs/daily: day 3: $days/day_4.tsv (modified 2025-12-31T00:00:00Z) is older than $days/day_3.tsv (modified 2026-01-03T00:00:00Z): clock skew or days out of order; nothing done"
touch -d "2026-01-04 00:00:00 UTC" "$days/day_4.tsv"
mkdir -p "$b/models"
cp "$w/models/day-2.h5" "$b/models/day-2.h5"
printf 'XXXXXXXX' | dd of="$b/models/day-2.h5" bs=1 seek=300000 conv=notrunc 2>/dev/null
ln -s day-2.h5 "$b/models/current"
day 3 "$b"
why=$("$PWD/apps/erase-inspect" ckpt "$b/models/current" 2>&1 >/dev/null)
bad "current damaged" "jobs/daily: day 3: models/current -> day-2.h5 is damaged: ${why#erase-inspect ckpt: error: }; not warm-starting from it (point current at a good model: ln -sfn day-M.h5 $b/models/current)"

# current of another shape (table_rows 1001, this run's model 2001): erase-train's line naming both
sed 's/table_rows = 1001/table_rows = 2001/' "$dir/tiny.cfg" >"$dir/tiny2k.cfg"
rm -rf "$b"
mkdir -p "$b/models"
cp "$w/models/day-2.h5" "$b/models/day-2.h5"
ln -s day-2.h5 "$b/models/current"
day 3 "$b" --model "$dir/tiny2k.cfg"
bad "current of another model shape" "jobs/daily: day 3: cannot warm-start from models/current -> day-2.h5: erase-train: --model $dir/tiny2k.cfg: the checkpoint is ctr, 3 blocks, 2 cuts, table_rows = 1001; this run asks for ctr, 3 blocks, 2 cuts, table_rows = 2001 ($b/models/day-2.h5; without --model and --cuts the run takes the checkpoint's model)"

# current of another kind (an mlp on MNIST) and no --model: the run takes current's model, which refuses the day's shards
rm -rf "$b"
mkdir -p "$b/models"
"$PWD/apps/erase-convert" mnist "${srcdir:-.}/data/mnist/t10k-images-idx3-ubyte.gz" \
    "${srcdir:-.}/data/mnist/t10k-labels-idx1-ubyte.gz" -o "$dir/mnist" >"$dir/mnist.log" 2>&1 &&
    "$PWD/apps/erase-train" --model mlp --train "$dir/mnist/train" --steps 1 --checkpoint-dir "$dir/mlp" >>"$dir/mnist.log" 2>&1
cp "$dir/mlp/ckpt-1.h5" "$b/models/day-2.h5"
ln -s day-2.h5 "$b/models/current"
n=3
timeout -k 5 300 "$daily" --day $n --days-dir "$days" --work "$b" --ranks 2 --eval-rows 300 >"$dir/out" 2>&1
rc=$?
bad "current of another kind, no --model" "jobs/daily: day 3: cannot warm-start from models/current -> day-2.h5 (a mlp model) on day 3's data: erase-train: --train $b/data/day-3: $b/data/day-3/part-00000.h5: attribute format: expected \"erase-cls-1\", got \"erase-ctr-1\"; these are CTR shards (models ctr and dcn), and the model mlp (of $b/models/day-2.h5) reads classification shards (model mlp)"

# a corrupted day file: a line of 2 fields in the middle of day 3
rm -rf "$b"
awk 'NR == 1500 { print "garbage\tline"; next } { print }' "$days/day_3.tsv" >"$dir/day_3.tsv"
touch -r "$days/day_3.tsv" "$dir/day_3.tsv"
mv "$dir/day_3.tsv" "$days/day_3.tsv"
day 3 "$b"
bad "a corrupted day file" "jobs/daily: day 3: converting $days/day_3.tsv failed: erase-convert criteo: error: $days/day_3.tsv:1500: expected 40 tab-separated fields (label, I1-I13, C1-C26), got 2"

day 3 "$b" --optimizer-state forget
[ $rc = 2 ] && [ "$(last)" = "jobs/daily: --optimizer-state needs keep or reset, got 'forget'" ]
tap $? "--optimizer-state forget: a usage error, status $rc, one line"

# jobs/daily-chain checks what every day needs before it submits anything
# (no sbatch is reached: these run without Slurm)
"${srcdir:-.}/jobs/daily-chain" --first 1 --last 2 --days-dir "$dir/nosuch" --work "$dir/w" >"$dir/chain.out" 2>&1
r1=$?
"${srcdir:-.}/jobs/daily-chain" --first 1 --last 2 --days-dir "$days" >>"$dir/chain.out" 2>&1
r2=$?
[ $r1 = 1 ] && [ $r2 = 2 ] && [ "$(cat "$dir/chain.out")" = "jobs/daily-chain: --days-dir $dir/nosuch: no such directory
jobs/daily-chain: --work WORK is needed (every day's jobs/daily works in it)" ]
tap $? "jobs/daily-chain refuses a missing --days-dir (status $r1) and no --work (status $r2) before submitting, one line each"
[ $r1 = 1 ] || tap_report "$dir/chain.out"
