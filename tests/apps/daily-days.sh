# shellcheck shell=bash
# Sourced by the jobs/daily tests (tests/apps/test-daily.sh,
# tests/slurm/test-sbatch-daily.sh; issue 36).
# daily_days DAYS SAMPLE [corrupt|-] [gzip]: DAYS/day_1.tsv .. day_4.tsv,
# rows 1-3000, 3001-6000, 6001-9000 and 9001-9999 of SAMPLE (the shipped
# Criteo sample), modified on 2026-01-01 .. 04 UTC; with corrupt, day 3's
# line 1500 is "garbage<TAB>line" (2 fields), after the 300 rows day 2
# holds out; with gzip, each day gzip'd (its modification time kept).
daily_days() {
    local days=$1 sample=$2 corrupt=${3:--} zip=${4:-} d
    mkdir -p "$days"
    for d in 1 2 3 4; do
        sed -n "$(((d - 1) * 3000 + 1)),$((d * 3000))p" "$sample" >"$days/day_$d.tsv"
        [ $d != 3 ] || [ "$corrupt" = - ] || sed -i '1500s/.*/garbage\tline/' "$days/day_$d.tsv"
        touch -d "2026-01-0$d 00:00:00 UTC" "$days/day_$d.tsv"
        [ -z "$zip" ] || gzip "$days/day_$d.tsv"
    done
}
