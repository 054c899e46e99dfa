#!/bin/sh
# erase-convert synth --shape criteo-1tb (issue 35): Criteo-format TSV days
# shaped like Criteo Terabyte's. The same seed gives the same bytes twice,
# for a day written alone (--first-day) and on 1, 2 and 4 ranks (plain and
# gzip); every line has 40 fields of
# Criteo's formats; each feature's distinct ids stay within its scaled
# table size (MLPerf DLRM-DCNv2's, listed here again) and the small ones
# are all seen; the share of the most frequent id and the fraction of
# singletons follow Zipf's law at the sample size (computed here from the
# law); dense missing rates and the click rate are within 4 standard
# errors of their targets; multi-hot fields hold exactly their hotness;
# erase-convert criteo reads a day back with its rows and labels, and a
# multi-hot day with MLPerf's hotness as each feature's largest count; usage
# errors name the option (status 2); an existing day is refused, and a
# failure on one rank or a SIGTERM publishes nothing and leaves no
# temporary file.
. "$(dirname "$0")/../comm/mpi.sh"
need apps/erase-convert
workdir
echo "1..14"
mpi() { timeout -k 5 120 "$MPIRUN" $MPI_FLAGS -np "$@"; }
synth() { apps/erase-convert synth --shape criteo-1tb -q "$@"; }

# MLPerf DLRM-DCNv2's table sizes of C1..C26 (torchrec_dlrm's --num_embeddings_per_feature)
rows_1tb="40000000 39060 17295 7424 20265 3 7122 1543 63 40000000 3067956 405282 10 2209 11938 155 4 976 14 40000000 40000000 40000000 590152 12973 108 36"
mlperf_hot="3 2 1 2 6 1 1 1 1 7 3 8 1 6 9 5 1 1 1 12 100 27 10 3 1 1"
common="--scale 0.0001 --days 2 --rows 20000 --piece-rows 6000 --seed 7"

synth $common -o "$dir/a" >"$dir/out" 2>"$dir/err" &&
    synth $common -o "$dir/b" >>"$dir/out" 2>>"$dir/err" &&
    synth $common --seed 8 -o "$dir/c" >>"$dir/out" 2>>"$dir/err" &&
    synth $common --first-day 1 --days 1 -o "$dir/d1" >>"$dir/out" 2>>"$dir/err"
rc=$?
[ $rc = 0 ] && [ "$(ls "$dir/a")" = "day_0.tsv
day_1.tsv" ] && cmp -s "$dir/a/day_0.tsv" "$dir/b/day_0.tsv" && cmp -s "$dir/a/day_1.tsv" "$dir/b/day_1.tsv" &&
    ! cmp -s "$dir/a/day_0.tsv" "$dir/c/day_0.tsv" && [ "$(wc -l <"$dir/a/day_1.tsv")" = 20000 ] &&
    [ "$(ls "$dir/d1")" = day_1.tsv ] && cmp -s "$dir/a/day_1.tsv" "$dir/d1/day_1.tsv" &&
    ! cmp -s "$dir/a/day_0.tsv" "$dir/a/day_1.tsv"
tap $? "one seed: the same bytes twice, and day_1 alone (--first-day 1) as in two days; another seed or day: others"
tap_report "$dir/err"

mpi 2 apps/erase-convert synth --shape criteo-1tb -q $common -o "$dir/np2" >"$dir/out" 2>"$dir/err"
rc=$?
[ $rc = 0 ] && cmp "$dir/a/day_0.tsv" "$dir/np2/day_0.tsv" && cmp "$dir/a/day_1.tsv" "$dir/np2/day_1.tsv" &&
    [ "$(ls -A "$dir/np2" | wc -l)" = 2 ]
tap $? "mpirun -np 2: the same bytes as one rank, no temporary file left"
tap_report "$dir/err"

gz="--scale 0.0001 --days 3 --rows 5000 --piece-rows 1500 --gzip --hotness mlperf"
synth $gz -o "$dir/g1" >"$dir/out" 2>"$dir/err" &&
    mpi 4 apps/erase-convert synth --shape criteo-1tb -q $gz -o "$dir/g4" >>"$dir/out" 2>>"$dir/err"
rc=$?
same=0
for d in 0 1 2; do cmp -s "$dir/g1/day_$d.tsv.gz" "$dir/g4/day_$d.tsv.gz" || same=1; done
[ $rc = 0 ] && [ $same = 0 ] && [ "$(gzip -dc "$dir/g4/day_2.tsv.gz" | wc -l)" = 5000 ] && gzip -t "$dir/g4/day_1.tsv.gz"
tap $? "gzip, multi-hot, mpirun -np 4: the same bytes as one rank; members of pieces read as one stream"
tap_report "$dir/err"

# every line: 40 tab-separated fields, label 0/1, counts or empty, one 8-hex id or empty
cat "$dir/a/day_0.tsv" "$dir/a/day_1.tsv" >"$dir/all.tsv"
awk -F'\t' 'NF != 40 || $1 !~ /^[01]$/ { bad++; next }
    { for (k = 2; k <= 14; k++) if ($k !~ /^([0-9]+)?$/) bad++
      for (k = 15; k <= 40; k++) if ($k != "" && (length($k) != 8 || $k ~ /[^0-9a-f]/)) bad++ }
    END { print NR, bad + 0 }' "$dir/all.tsv" >"$dir/formats"
[ "$(cat "$dir/formats")" = "40000 0" ]
tap $? "40,000 lines of 40 fields: label 0/1, I1..I13 integers or empty, C1..C26 8 hex digits or empty"
sed 's/^/# lines, bad fields: /' "$dir/formats"

# distinct ids per feature <= round(0.0001 x the table's size) (at least 2); features of <= 41 ids all seen
awk -F'\t' -v sizes="$rows_1tb" 'BEGIN { split(sizes, N, " ") }
    { for (f = 1; f <= 26; f++) if ($(14 + f) != "" && !seen[f, $(14 + f)]++) d[f]++ }
    END { for (f = 1; f <= 26; f++) { V = int(N[f] * 0.0001 + 0.5); if (V < 2) V = 2
            if (d[f] > V || (V <= 41 && d[f] != V)) { print "C" f ": " d[f] " distinct, table " V; bad++ } }
          print "distinct C1 " d[1] ", C11 " d[11] ", C12 " d[12]; exit bad > 0 }' "$dir/all.tsv" >"$dir/distinct"
tap $? "distinct ids of each feature within its scaled table size (C1: 4000), the small tables all seen"
tap_report "$dir/distinct"

# Zipf's law, s = 1.44, V = 4000 (C1 and C10, never missing, n = 40,000 each):
# the share of the top id, 1/H(V, s), within 4 standard errors; singletons
# over distinct ids, E[S]/E[D] with E[S] = sum n p (1-p)^(n-1), E[D] = sum 1 - (1-p)^n, within 8%
for col in 15 24; do
    cut -f "$col" "$dir/all.tsv" | awk -v V=4000 -v s=1.44 -v col=$col '{ c[$1]++; n++ }
        END { for (k = 1; k <= V; k++) { p[k] = k ^ -s; H += p[k] }
              for (k = 1; k <= V; k++) { q = p[k] / H; ES += n * q * (1 - q) ^ (n - 1); ED += 1 - (1 - q) ^ n }
              for (i in c) { D++; if (c[i] == 1) S++; if (c[i] > top) top = c[i] }
              share = top / n; want = 1 / H; se = sqrt(want * (1 - want) / n)
              r = S / D; er = ES / ED
              printf "column %d: top share %.4f (law %.4f), singletons/distinct %.4f (law %.4f)\n", col, share, want, r, er
              exit !((share - want) ^ 2 <= 16 * se * se && r > 0.92 * er && r < 1.08 * er) }'
done >"$dir/zipf"
tap $? "C1 and C10 follow Zipf's law (s = 1.44, 4000 ids): the top id's share and the singletons' fraction"
tap_report "$dir/zipf"

# missing rates of I1 (0.448), I12 (0.773), C22 (0.818) and the click rate (0.034) within 4 standard errors
awk -F'\t' '{ n++; y += $1; m1 += $2 == ""; m12 += $13 == ""; m22 += $36 == "" }
    function near(x, p) { return (x / n - p) ^ 2 <= 16 * p * (1 - p) / n }
    END { printf "I1 %.4f I12 %.4f C22 %.4f clicks %.4f\n", m1 / n, m12 / n, m22 / n, y / n
          exit !(near(m1, 0.448) && near(m12, 0.773) && near(m22, 0.818) && near(y, 0.034)) }' "$dir/all.tsv" >"$dir/rates"
tap $? "missing rates of I1, I12, C22 and the click rate within 4 standard errors of 0.448, 0.773, 0.818, 0.034"
tap_report "$dir/rates"

# --hotness mlperf: a present field holds exactly its hotness of ids; and a list of 26 counts
gzip -dc "$dir/g1/day_0.tsv.gz" | awk -F'\t' -v hot="$mlperf_hot" 'BEGIN { split(hot, h, " ") }
    { for (f = 1; f <= 26; f++) { v = $(14 + f); if (v == "") continue
        k = split(v, ids, ","); if (k != h[f]) bad++; for (i = 1; i <= k; i++) if (length(ids[i]) != 8 || ids[i] ~ /[^0-9a-f]/) bad++ } }
    END { exit bad > 0 || NR != 5000 }' &&
    synth --scale 0.001 --days 1 --rows 300 --hotness 2,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,4 \
        -o "$dir/h" >/dev/null 2>"$dir/err" &&
    awk -F'\t' '{ a = split($15, x, ","); b = split($40, y, ","); c = split($16, z, ",")
        if (a != 2 || ($40 != "" && b != 4) || c != 1) bad++ } END { exit bad > 0 }' "$dir/h/day_0.tsv"
tap $? "--hotness mlperf: 3,2,1,...,100 ids per present field; --hotness 2,1,...,4: C1 2 ids, C26 4"
tap_report "$dir/err"

# --hotness-counts uniform: counts in 1..h; C21's (h = 100) mean within 4 standard errors of 50.5
synth --scale 0.001 --days 1 --rows 2000 --hotness mlperf --hotness-counts uniform -o "$dir/hu" >/dev/null 2>"$dir/err" &&
    awk -F'\t' -v hot="$mlperf_hot" 'BEGIN { split(hot, h, " ") }
        { for (f = 1; f <= 26; f++) { v = $(14 + f); if (v == "") continue
            k = split(v, ids, ","); if (k < 1 || k > h[f]) bad++; if (f == 21) { n++; s += k } } }
        END { printf "C21: %d fields, mean count %.2f\n", n, s / n
              exit bad > 0 || (s / n - 50.5) ^ 2 > 16 * (100 * 100 - 1) / 12 / n }' "$dir/hu/day_0.tsv" >"$dir/counts"
tap $? "--hotness-counts uniform: 1..h ids per present field, C21's mean count about 50.5"
tap_report "$dir/counts"

# the round trip: erase-convert criteo reads day_0 back, its rows and clicks, and the labels in order
apps/erase-convert criteo -q -o "$dir/shards" "$dir/a/day_0.tsv" >"$dir/out" 2>"$dir/err"
rc=$?
clicks=$(awk -F'\t' '{ c += $1 } END { print c }' "$dir/a/day_0.tsv")
if command -v h5dump >/dev/null 2>&1; then
    h5dump -d /label -y -w 1 "$dir/shards/part-00000.h5" | awk '/DATA {/ { on = 1; next } /}/ { on = 0 }
        on { gsub(/[ ,]/, ""); if ($0 != "") print }' >"$dir/labels"
    cut -f 1 "$dir/a/day_0.tsv" | cmp -s - "$dir/labels"
    same=$?
else
    same=0
fi
[ $rc = 0 ] && grep -qx "rows 20000, clicks $clicks, base rate .*" "$dir/out" && [ $same = 0 ]
tap $? "erase-convert criteo of day_0: 20,000 rows, $clicks clicks, the labels in the file's order"
tap_report "$dir/err"

# the multi-hot round trip: erase-convert criteo reads --hotness mlperf's lists; erase-inspect
# data's largest count of every feature is MLPerf's hotness
# (the gzip file as written: 4 members, one per piece)
apps/erase-convert criteo -q -o "$dir/mh" "$dir/g1/day_0.tsv.gz" >"$dir/out" 2>"$dir/err" &&
    apps/erase-inspect data "$dir/mh" >"$dir/inspect" 2>>"$dir/err"
rc=$?
awk '/^multi-hot: ids per sample/ { on = 1; next } on && /^C[0-9]/ { printf "%s%s", sep, $2; sep = " " }
    END { print "" }' "$dir/inspect" >"$dir/maxhot"
[ $rc = 0 ] && grep -qx "rows 5000, clicks .*" "$dir/out" && [ "$(cat "$dir/maxhot")" = "$mlperf_hot" ]
tap $? "erase-convert criteo of a gzip --hotness mlperf day of 4 members: 5,000 rows, each feature's largest count MLPerf's hotness"
sed 's/^/# largest ids per feature: /' "$dir/maxhot"
tap_report "$dir/err"

# usage errors: status 2, the option named
fails=0
try() { # WANT-LINE ARGS...: status 2 and the first line of stderr
    want=$1; shift
    apps/erase-convert synth "$@" >/dev/null 2>"$dir/err"
    st=$?
    [ $st = 2 ] && [ "$(head -n 1 "$dir/err")" = "$want" ] || { fails=1; echo "# status $st:"; tap_report "$dir/err"; }
}
try "erase-convert synth: --scale: bad value '0' (expected a number in (0, 1])" --shape criteo-1tb --scale 0 --days 1 --rows 10 -o "$dir/u"
try "erase-convert synth: --scale: bad value '2' (expected a number in (0, 1])" --shape criteo-1tb --scale 2 --days 1 --rows 10 -o "$dir/u"
try "erase-convert synth: --hotness: bad value '1,2' (expected mlperf or 26 comma-separated counts in [1, 1000])" --shape criteo-1tb --hotness 1,2 --scale 0.1 -o "$dir/u"
try "erase-convert synth: --hotness-counts: bad value 'some' (expected fixed or uniform)" --shape criteo-1tb --hotness-counts some -o "$dir/u"
try "erase-convert synth: --days: bad value '0' (expected an integer >= 1)" --shape criteo-1tb --days 0 --scale 0.1 -o "$dir/u"
try "erase-convert synth: --shape: expected criteo-1tb" --shape criteo-kaggle --scale 0.1 --days 1 --rows 1 -o "$dir/u"
try "erase-convert synth: no --days D" --shape criteo-1tb --scale 0.1 --rows 10 -o "$dir/u"
try "erase-convert synth: no --rows N" --shape=criteo-1tb --scale 0.1 --days 1 -o "$dir/u"
[ $fails = 0 ] && [ ! -e "$dir/u" ]
tap $? "usage errors: status 2, the option named (--scale, --hotness, --hotness-counts, --days, --shape, --rows), nothing written"

# an existing day is refused (status 1, unchanged); a piece that cannot be
# written on rank 1 of 2 (a directory in its place) publishes nothing
cp "$dir/a/day_1.tsv" "$dir/before"
synth $common -o "$dir/a" >/dev/null 2>"$dir/err"
rc=$?
[ $rc = 1 ] && grep -qx "erase-convert synth: error: $dir/a/day_0.tsv exists (--force replaces it)" "$dir/err" &&
    cmp -s "$dir/before" "$dir/a/day_1.tsv"
ok=$?
mkdir -p "$dir/f/.day_0.tsv.part-000001"
mpi 2 apps/erase-convert synth --shape criteo-1tb -q $common -o "$dir/f" >/dev/null 2>"$dir/err"
rc=$?
[ $ok = 0 ] && [ $rc = 1 ] &&
    grep -qx "erase-convert synth: error: $dir/f/.day_0.tsv.part-000001: cannot create: Is a directory" "$dir/err" &&
    grep -qx "erase-convert synth: no day file written to $dir/f" "$dir/err" &&
    [ "$(ls -A "$dir/f")" = ".day_0.tsv.part-000001" ]
tap $? "an existing day refused (status 1, kept); a piece failing on rank 1 of 2: status 1, nothing published or left"
tap_report "$dir/err"

# SIGTERM while the pieces are written: status 143, the piece and the signal named, nothing left
apps/erase-convert synth --shape criteo-1tb --scale 0.001 --days 1 --rows 50M --piece-rows 200k -o "$dir/t" \
    >/dev/null 2>"$dir/err" &
pid=$!
for i in $(seq 1200); do ls "$dir/t"/.day_0.tsv.part-* >/dev/null 2>&1 && break; sleep 0.1; done
kill -TERM $pid
wait $pid
rc=$?
[ $rc = 143 ] &&
    grep -q "^erase-convert synth: error: interrupted in $dir/t/.day_0.tsv.part-[0-9]* after [0-9]* rows by SIGTERM\$" \
        "$dir/err" &&
    grep -qx "erase-convert synth: no day file written to $dir/t" "$dir/err" && [ -z "$(ls -A "$dir/t")" ]
tap $? "SIGTERM while writing: status $rc (143), the piece named, no day file and no temporary file left"
tap_report "$dir/err"
