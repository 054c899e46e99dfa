# shellcheck shell=bash
# Sourced by the jobs/daily tests (tests/apps/test-daily.sh, test-daily-vocab.sh,
# tests/slurm/test-sbatch-daily.sh; issue 36).
# daily_days DAYS SOURCE [corrupt|-] [gzip]: DAYS/day_1.tsv .. day_4.tsv of
# 3,000 rows (day 4 may have fewer), modified on 2026-01-01 .. 04 UTC.
# SOURCE: a TSV file (the shipped Criteo sample: its rows 1-3000, 3001-6000,
# ...), or the erase-convert program (synthetic days shaped like Criteo
# Terabyte's: synth --shape criteo-1tb --scale 0.0001, a planted model
# behind the clicks). With corrupt, day 3's line 1500 is "garbage<TAB>line"
# (2 fields), after the 300 rows day 2 holds out; with gzip, each day
# gzip'd (its modification time kept). Returns non-zero, the generator's
# output shown, when it fails.
daily_days() {
    local days=$1 source=$2 corrupt=${3:--} zip=${4:-} d
    mkdir -p "$days"
    case $source in
    *.tsv)
        for d in 1 2 3 4; do
            sed -n "$(((d - 1) * 3000 + 1)),$((d * 3000))p" "$source" >"$days/day_$d.tsv"
        done ;;
    *)
        if ! "$source" synth --shape criteo-1tb --scale 0.0001 --days 4 --first-day 1 --rows 3000 -q -o "$days" \
            >"$days.log" 2>&1; then
            sed 's/^/# /' "$days.log"
            return 1
        fi ;;
    esac
    for d in 1 2 3 4; do
        [ $d != 3 ] || [ "$corrupt" = - ] || sed -i '1500s/.*/garbage\tline/' "$days/day_$d.tsv"
        touch -d "2026-01-0$d 00:00:00 UTC" "$days/day_$d.tsv"
        [ -z "$zip" ] || gzip "$days/day_$d.tsv"
    done
}
# record WORK N KEY: the value of KEY in day N's record of WORK/metrics/days.jsonl
record() { grep "^{\"day\":$2," "$1/metrics/days.jsonl" | sed -n "s/.*\"$3\":\"\\{0,1\\}\\([^,\"]*\\).*/\\1/p"; }
# params FILE: the /params datasets of a model as h5dump prints them
params() { h5dump -g /params "$1" | tail -n +2; }
# last: the last line of a job's output ($dir/out)
last() { tail -n 1 "$dir/out"; }
# bad WHAT WANT: a TAP line: the job's last line is WANT, its status ($rc) 1,
# no model of day $n or record made in work directory $b
bad() {
    [ "$rc" = 1 ] && [ "$(last)" = "$2" ] && [ ! -e "$b/metrics/days.jsonl" ] &&
        [ -z "$(find "$b" -name "day-$n.h5" 2>/dev/null)" ]
    tap $? "$1: status $rc, one line: $2"
    [ "$rc" = 1 ] || tap_report "$dir/out"
}
# daily_test_setup PLAN: what the jobs/daily tests need (the programs,
# h5dump, flock; tests/comm/mpi.sh's need and skip), their work directory
# ($dir), the TAP plan line 1..PLAN, $daily, the programs as built for
# jobs/daily, and $days: DAYS of daily_days cut from the shipped sample.
daily_test_setup() {
    local p
    for p in erase-train erase-convert erase-score erase-inspect; do need "apps/$p"; done
    command -v h5dump >/dev/null 2>&1 || skip "no h5dump to compare the models' parameters"
    command -v flock >/dev/null 2>&1 || skip "no flock(1) (util-linux) for jobs/daily's lock"
    workdir
    echo "1..$1"
    daily=${srcdir:-.}/jobs/daily
    ERASE_SKIP_SETUP=1 ERASE_BUILD=$PWD ERASE_MPIRUN=$MPIRUN
    export ERASE_SKIP_SETUP ERASE_BUILD ERASE_MPIRUN
    days=$dir/days
    daily_days "$days" "${srcdir:-.}/data/criteo/kaggle-train-first9999.tsv"
}
