#!/bin/sh
# Frequency-thresholded vocabularies (issue 35; io/vocab.h, docs/data.md
# "Vocabularies for daily data"), against a reference recomputed here with
# python3 from the TSV:
#   - erase-convert vocab's counts, frequent ids and rows (descending
#     count, ties by ascending id) of every feature, multi-hot fields
#     counted id by id and empty fields as the missing id: exact;
#   - the same vocabulary on 2 and 4 ranks (every dataset and attribute);
#   - a known frequent, rare and unseen id mapped to its row / the rare row;
#   - day 1 converted with day 0's vocabulary: every stored id is the
#     reference's mapping; the shards carry the vocabulary's tag;
#   - erase-inspect data's coverage against the reference's share;
#   - a ctr model with table_rows = "data" trains, its tables have
#     V_f + 1 rows (erase-inspect ckpt);
#   - the refusals' exact text and status, nothing published.
. "$(dirname "$0")/../comm/mpi.sh"
need apps/erase-convert
need apps/erase-inspect
need apps/erase-train
command -v python3 >/dev/null 2>&1 || skip "no python3 to recompute the vocabulary"
command -v h5dump >/dev/null 2>&1 || skip "no h5dump to read the vocabulary's datasets"
workdir
echo "1..18"
sample=${srcdir:-.}/data/criteo/kaggle-train-first9999.tsv
head -n 3000 "$sample" >"$dir/day0.tsv"
sed -n '3001,6000p' "$sample" | gzip -c >"$dir/day1.tsv.gz"
gzip -dc "$dir/day1.tsv.gz" >"$dir/day1.tsv"

# 400 multi-hot lines: C1 a list of 1..3 ids of 12, C2 empty or one of 5 ids,
# C3 an id that is ffffffff on every 7th line (stored as fffffffe)
python3 - "$dir/multihot.tsv" <<'PY'
import random, sys
r = random.Random(35)
with open(sys.argv[1], "w") as f:
    for i in range(400):
        c = [",".join("%08x" % r.randrange(12) for _ in range(r.randint(1, 3))),
             "" if i % 4 == 0 else "%x" % (0xabc0 + r.randrange(5)),
             "ffffffff" if i % 7 == 0 else "%08x" % r.randrange(3)]
        c += ["%08x" % r.randrange(40) for _ in range(23)]
        f.write("\t".join([str(i % 2)] + [str(i)] * 13 + c) + "\n")
PY

# The reference: python3 vocab.py T OUT TSV... writes OUT.arrays (per
# feature "C1 ids 1,2", "C1 rows ...", "C1 counts ...") and OUT.summary
# ("C1 tokens distinct frequent table_rows"), and with --map TSV... the
# mapped ids of those files (OUT.mapped, all values comma-separated, row by
# row, feature by feature, every id of a list) and the coverage per feature
# (mapped ids not rare / ids) in percent, 2 decimals (OUT.coverage).
cat >"$dir/vocab.py" <<'PY'
import sys
from collections import Counter
args = sys.argv[1:]
T, out = int(args[0]), args[1]
counted, mapped = (args[2:args.index("--map")], args[args.index("--map") + 1:]) if "--map" in args else (args[2:], [])
def ids(field):
    if field == "":
        return [0xFFFFFFFF]
    v = [int(t, 16) for t in field.split(",")]
    return [0xFFFFFFFE if x == 0xFFFFFFFF else x for x in v]
def rows_of(path):
    for line in open(path):
        yield [ids(x) for x in line.rstrip("\n").split("\t")[14:40]]
counts = [Counter() for _ in range(26)]
for p in counted:
    for row in rows_of(p):
        for f in range(26):
            counts[f].update(row[f])
number = []
with open(out + ".arrays", "w") as a, open(out + ".summary", "w") as s:
    for f in range(26):
        freq = sorted(i for i, c in counts[f].items() if c >= T)
        order = sorted(freq, key=lambda i: (-counts[f][i], i))
        row = {i: k for k, i in enumerate(order)}
        number.append(row)
        a.write("C%d ids %s\n" % (f + 1, ",".join(str(i) for i in freq)))
        a.write("C%d rows %s\n" % (f + 1, ",".join(str(row[i]) for i in freq)))
        a.write("C%d counts %s\n" % (f + 1, ",".join(str(counts[f][i]) for i in freq)))
        s.write("C%d %d %d %d %d\n" % (f + 1, sum(counts[f].values()), len(counts[f]), len(freq), max(len(freq) + 1, 2)))
if mapped:
    flat, hit, total = [], [0] * 26, [0] * 26
    for p in mapped:
        for row in rows_of(p):
            for f in range(26):
                for i in row[f]:
                    m = number[f].get(i, 0xFFFFFFFF)
                    flat.append(str(m))
                    hit[f] += m != 0xFFFFFFFF
                    total[f] += 1
    open(out + ".mapped", "w").write(",".join(flat))
    open(out + ".coverage", "w").write("".join("C%d %.2f%%\n" % (f + 1, 100.0 * hit[f] / total[f]) for f in range(26)))
PY

# arrays FILE.h5: the vocabulary's datasets in the reference's layout
arrays() {
    f=1
    while [ $f -le 26 ]; do
        for d in ids rows counts; do
            h5dump -y -w 0 -d "/C$f/$d" -o "$dir/col" "$1" >/dev/null &&
                echo "C$f $d $(tr -d ' \n' <"$dir/col")"
        done
        f=$((f + 1))
    done
}
# dump FILE.h5: every dataset and attribute, without the file's name
dump() { h5dump "$1" | sed 1d; }

apps/erase-convert vocab --threshold 3 -o "$dir/v.h5" "$dir/day0.tsv" "$dir/multihot.tsv" >"$dir/v.out" 2>&1
rc=$?
python3 "$dir/vocab.py" 3 "$dir/ref" "$dir/day0.tsv" "$dir/multihot.tsv"
arrays "$dir/v.h5" >"$dir/got.arrays"
[ $rc = 0 ] && cmp -s "$dir/ref.arrays" "$dir/got.arrays"
tap $? "vocab --threshold 3 of 3000 Kaggle lines + 400 multi-hot ones: every feature's frequent ids, rows and counts equal python's (status $rc)"
[ $rc = 0 ] || tap_report "$dir/v.out"
cmp -s "$dir/ref.arrays" "$dir/got.arrays" || diff "$dir/ref.arrays" "$dir/got.arrays" | head -5 | sed 's/^/# /'

awk '$1 ~ /^C[0-9]+$/ { print $1, $2, $3, $4, $5 }' "$dir/v.out" >"$dir/got.summary"
cmp -s "$dir/ref.summary" "$dir/got.summary"
tap $? "its summary: tokens, distinct ids, frequent ids and table rows per feature equal python's"
echo "# C1 (multi-hot in part): $(grep '^C1 ' "$dir/ref.summary")"

timeout -k 5 120 "$MPIRUN" $MPI_FLAGS -np 2 apps/erase-convert vocab -q --threshold 3 -o "$dir/v2.h5" "$dir/day0.tsv" "$dir/multihot.tsv" \
    >"$dir/v2.out" 2>&1
rc2=$?
timeout -k 5 120 "$MPIRUN" $MPI_FLAGS -np 4 --oversubscribe apps/erase-convert vocab -q --threshold 3 -o "$dir/v4.h5" "$dir/day0.tsv" \
    "$dir/multihot.tsv" >"$dir/v4.out" 2>&1
rc4=$?
dump "$dir/v.h5" >"$dir/v.dump"
[ $rc2 = 0 ] && [ $rc4 = 0 ] && dump "$dir/v2.h5" | cmp -s - "$dir/v.dump" && dump "$dir/v4.h5" | cmp -s - "$dir/v.dump"
tap $? "the same vocabulary on 2 and 4 ranks: every dataset and attribute equal (status $rc2, $rc4)"
[ $rc2 = 0 ] || tap_report "$dir/v2.out"
[ $rc4 = 0 ] || tap_report "$dir/v4.out"

# a frequent id of C1 (the reference's most frequent: row 0), a rare one
# (counted once) and one never seen, on three lines
python3 - "$dir/day0.tsv" "$dir/ref.arrays" "$dir/probe.tsv" <<'PY'
import sys
from collections import Counter
c = Counter(l.split("\t")[14] for l in open(sys.argv[1]))
ids = {}
for line in open(sys.argv[2]):
    k, what, v = (line.rstrip("\n").split(" ") + [""])[:3]
    if k == "C1": ids[what] = [int(x) for x in v.split(",")] if v else []
top = ids["ids"][ids["rows"].index(0)]
rare = sorted(t for t, n in c.items() if n == 1 and t)[0]
rest = "\t".join(["1"] + ["2"] * 13) + "\t"
tail = "\t" + "\t".join(["0"] * 25) + "\n"
with open(sys.argv[3], "w") as f:
    for t in ("%08x" % top, rare, "0badf00d"):
        f.write(rest + t + tail)
PY
apps/erase-convert criteo -q --vocab "$dir/v.h5" -o "$dir/probe" "$dir/probe.tsv" >"$dir/probe.out" 2>&1
h5dump -y -w 0 -d /sparse -o "$dir/col" "$dir/probe/part-00000.h5" >/dev/null 2>&1
got=$(tr -d ' \n' <"$dir/col" | tr ',' '\n' | awk 'NR % 26 == 1' | tr '\n' ' ')
[ "$got" = "0 4294967295 4294967295 " ]
tap $? "C1's most frequent id maps to row 0, a rare one and an unseen one to the rare row 0xFFFFFFFF: $got"
[ "$got" = "0 4294967295 4294967295 " ] || tap_report "$dir/probe.out"

# day 1 converted with day 0's vocabulary
apps/erase-convert vocab -q --threshold 2 -o "$dir/day0.h5" "$dir/day0.tsv" >"$dir/d0.out" 2>&1 || tap_report "$dir/d0.out"
python3 "$dir/vocab.py" 2 "$dir/d0ref" "$dir/day0.tsv" --map "$dir/day1.tsv"
apps/erase-convert criteo -q --vocab "$dir/day0.h5" --shard-rows 1000 -o "$dir/day1" "$dir/day1.tsv.gz" \
    >"$dir/day1.out" 2>&1
rc=$?
for p in 0 1 2; do
    h5dump -y -w 0 -d /sparse -o "$dir/col" "$dir/day1/part-0000$p.h5" >/dev/null 2>&1 && tr -d ' \n' <"$dir/col"
    [ $p = 2 ] || printf ','
done >"$dir/day1.mapped"
[ $rc = 0 ] && cmp -s "$dir/d0ref.mapped" "$dir/day1.mapped"
tap $? "day 1 (gzip) converted with day 0's vocabulary (threshold 2): all 3000 x 26 stored ids are python's mapping (status $rc)"
[ $rc = 0 ] || tap_report "$dir/day1.out"

digest=$(apps/erase-inspect vocab "$dir/day0.h5" | awk 'NR == 1 { sub(",", "", $6); print $6 }')
rows=$(awk '{ printf "%s%s", (NR > 1 ? ", " : ""), $5 }' "$dir/d0ref.summary")
attr() { h5dump -w 0 -a "/$2" "$1" 2>/dev/null | sed -n 's/^ *(0): //p'; }
tagged=0
for p in 0 1 2; do
    s=$dir/day1/part-0000$p.h5
    [ -n "$digest" ] && [ "$(attr "$s" vocab_digest)" = "\"$digest\"" ] && [ "$(attr "$s" vocab_threshold)" = 2 ] &&
        [ "$(attr "$s" vocab_table_rows)" = "$rows" ] && tagged=$((tagged + 1))
done
[ $tagged = 3 ]
tap $? "all 3 shards carry the vocabulary's digest $digest, threshold 2 and table rows V_f + 1 ($tagged do)"

apps/erase-inspect data "$dir/day1" >"$dir/inspect.out" 2>&1
rc=$?
sed -n '/^vocabulary /,$p' "$dir/inspect.out" | awk '$1 ~ /^C[0-9]+$/ { print $1, $3 }' >"$dir/got.coverage"
[ $rc = 0 ] && cmp -s "$dir/d0ref.coverage" "$dir/got.coverage" &&
    grep -q "^vocabulary $digest (threshold 2): table rows = frequent ids + 1; coverage = ids not in the rare row$" \
        "$dir/inspect.out"
tap $? "erase-inspect data: coverage of every feature equals python's share of day 1's ids in day 0's vocabulary"
[ $rc = 0 ] || tap_report "$dir/inspect.out"
echo "# $(head -3 "$dir/got.coverage" | tr '\n' ' ')"

# multi-hot lines converted with a vocabulary: every id of every list mapped
python3 "$dir/vocab.py" 3 "$dir/mhref" "$dir/day0.tsv" "$dir/multihot.tsv" --map "$dir/multihot.tsv"
apps/erase-convert criteo -q --vocab "$dir/v.h5" -o "$dir/mh" "$dir/multihot.tsv" >"$dir/mh.out" 2>&1
rc=$?
h5dump -y -w 0 -d /sparse_ids -o "$dir/col" "$dir/mh/part-00000.h5" >/dev/null 2>&1 && tr -d ' \n' <"$dir/col" >"$dir/mh.mapped"
apps/erase-inspect data "$dir/mh" >"$dir/mhi.out" 2>&1
sed -n '/^vocabulary /,$p' "$dir/mhi.out" | awk '$1 ~ /^C[0-9]+$/ { print $1, $3 }' >"$dir/mh.coverage"
[ $rc = 0 ] && cmp -s "$dir/mhref.mapped" "$dir/mh.mapped" && cmp -s "$dir/mhref.coverage" "$dir/mh.coverage"
tap $? "400 multi-hot lines (erase-ctr-2) through the vocabulary: every id of every list is python's mapping, coverage over ids too (status $rc)"
[ $rc = 0 ] || tap_report "$dir/mh.out"
echo "# C1 (lists of 1-3 ids): $(head -1 "$dir/mh.coverage")"
# its "missing" column: the share of rows whose ids all went to the rare
# row (at most 100%, once per row however many ids), and it says so
awk '$1 ~ /^C[0-9]+$/ && $2 ~ /%$/ && NF >= 3 { v = $2; sub(/%/, "", v); if (v + 0 > 100) bad++; n++ }
     END { exit !(n >= 26 && !bad) }' "$dir/mhi.out" &&
    grep -qxF 'C1-C26 went through a vocabulary: their "missing" counts the rows whose ids all map to its rare row (missing, or not frequent)' "$dir/mhi.out"
tap $? "erase-inspect data of multi-hot shards through a vocabulary: every feature's missing share a share of rows (<= 100%), the rare row named"

# a ctr model with the data's table sizes
printf 'model = "ctr";\nctr: { embedding_dim = 4; table_rows = "data"; bottom_mlp = [8, 4];\n  subarch_width = 16; subarchs = 2; };\n' \
    >"$dir/data.cfg"
apps/erase-convert criteo -q --vocab "$dir/day0.h5" -o "$dir/day0" "$dir/day0.tsv" >"$dir/day0.out" 2>&1 ||
    tap_report "$dir/day0.out"
timeout -k 5 120 apps/erase-train --model "$dir/data.cfg" --train "$dir/day0" --eval "$dir/day1" --batch 256 \
    --epochs 1 --checkpoint-dir "$dir/ck" --quiet >"$dir/train.out" 2>&1
rc=$?
apps/erase-inspect ckpt "$dir/ck" >"$dir/ckpt.out" 2>&1
awk '$1 ~ /^input\/emb\/[0-9]+$/ { sub(/^\[/, "", $2); sub(/,$/, "", $2); printf "%s%s", n++ ? ", " : "", $2 }' \
    "$dir/ckpt.out" >"$dir/got.rows"
[ $rc = 0 ] && [ "$(cat "$dir/got.rows")" = "$rows" ]
tap $? "table_rows = \"data\": erase-train runs, the checkpoint's 26 tables have V_f + 1 rows (status $rc)"
[ $rc = 0 ] || tap_report "$dir/train.out"
echo "# tables: $(cut -c 1-60 "$dir/got.rows")..."

# expect STATUS TEXT CMD...: CMD exits STATUS and its output holds the line TEXT
expect() {
    want_rc=$1 text=$2
    shift 2
    "$@" >"$dir/err.out" 2>&1
    got_rc=$?
    [ $got_rc = "$want_rc" ] && grep -qxF "$text" "$dir/err.out"
    r=$?
    [ $r = 0 ] || { echo "# status $got_rc, expected $want_rc; wanted: $text"; tap_report "$dir/err.out"; }
    return $r
}

c1=$(awk '{ print $5; exit }' "$dir/d0ref.summary")
printf 'model = "ctr";\nctr: { embedding_dim = 4; table_rows = 20; bottom_mlp = [8, 4];\n  subarch_width = 16; subarchs = 2; };\n' \
    >"$dir/small.cfg"
apps/erase-convert criteo -q -o "$dir/plain" "$dir/day1.tsv" >/dev/null 2>&1
expect 2 "erase-train: --train $dir/day0: table C1 has 20 rows, the data's vocabulary $digest (threshold 2) needs $c1 (its frequent ids + 1): set ctr.table_rows = \"data\" in the model file" \
    apps/erase-train --model "$dir/small.cfg" --train "$dir/day0" --batch 256 --epochs 1 --quiet &&
    expect 2 "erase-train: $dir/plain/part-00000.h5: converted with no vocabulary, the first shard $dir/day0/part-00000.h5 with vocabulary $digest (threshold 2): every shard of a dataset must use the same vocabulary" \
        apps/erase-train --model "$dir/data.cfg" --train "$dir/day0,$dir/plain" --batch 256 --epochs 1 --quiet &&
    expect 2 "erase-train: --train $dir/plain: ctr.table_rows = \"data\": the data has no vocabulary (converted without erase-convert criteo --vocab); give the table sizes" \
        apps/erase-train --model "$dir/data.cfg" --train "$dir/plain" --batch 256 --epochs 1 --quiet &&
    expect 1 "erase-inspect data: error: $dir/plain/part-00000.h5: converted with no vocabulary, the first shard $dir/day0/part-00000.h5 with vocabulary $digest (threshold 2): every shard of a dataset must use the same vocabulary" \
        apps/erase-inspect data "$dir/day0" "$dir/plain"
tap $? "erase-train and erase-inspect refuse a table smaller than the vocabulary, mixed vocabularies, \"data\" without one"

head -c 3000 "$dir/v.h5" >"$dir/cut.h5"
expect 1 "erase-convert criteo: error: $dir/plain/part-00000.h5: attribute format: expected \"erase-vocab-1\", got \"erase-ctr-1\"" \
    apps/erase-convert criteo -q --vocab "$dir/plain/part-00000.h5" -o "$dir/bad" "$dir/day1.tsv" &&
    grep -qxF "erase-convert criteo: no dataset written to $dir/bad (0 lines read)" "$dir/err.out" &&
    expect 1 "erase-convert criteo: error: $dir/cut.h5: not an HDF5 file or damaged (truncated?): expected an erase-vocab-1 vocabulary" \
        apps/erase-convert criteo -q --vocab "$dir/cut.h5" -o "$dir/bad" "$dir/day1.tsv" &&
    expect 1 "erase-convert criteo: error: $dir/day0.tsv: not an HDF5 file or damaged (truncated?): expected an erase-vocab-1 vocabulary" \
        apps/erase-convert criteo -q --vocab "$dir/day0.tsv" -o "$dir/bad" "$dir/day1.tsv" &&
    [ ! -e "$dir/bad" ]
tap $? "erase-convert criteo --vocab of a CTR shard, a truncated file, a TSV: one line naming the file, status 1, nothing written"

# a vocabulary whose numbering was changed after it was written (a bit of
# /C13/rows flipped): the file named as damaged or changed
cp "$dir/v.h5" "$dir/flipped.h5"
tests/ckpt/ckpt-tool flip "$dir/flipped.h5" /C13/rows >/dev/null
expect 1 "erase-convert criteo: error: $dir/flipped.h5: dataset /C13/rows: expected rows 0 .. $(($(h5dump -H -d /C13/rows "$dir/v.h5" | sed -n 's/.*DATASPACE  SIMPLE { ( \([0-9]*\) ).*/\1/p') - 1)) by descending count, ties by ascending id (the vocabulary file is damaged or was changed after erase-convert vocab wrote it)" \
    apps/erase-convert criteo -q --vocab "$dir/flipped.h5" -o "$dir/bad" "$dir/day1.tsv" && [ ! -e "$dir/bad" ]
tap $? "a vocabulary with a bit of /C13/rows flipped: one line naming the file, the dataset and that it is damaged, status 1, nothing written"

# a vocabulary of another dataset: counted on synthetic Terabyte-shaped
# rows (another id space), it knows almost none of the Kaggle day's ids
apps/erase-convert synth --shape criteo-1tb --scale 0.001 --days 1 --rows 3000 -q -o "$dir/tb" >"$dir/tb.out" 2>&1 &&
    apps/erase-convert vocab -q --threshold 2 -o "$dir/tb.h5" "$dir/tb/day_0.tsv" >>"$dir/tb.out" 2>&1 || tap_report "$dir/tb.out"
apps/erase-convert criteo -q --vocab "$dir/tb.h5" -o "$dir/other" "$dir/day1.tsv" >"$dir/refused.out" 2>&1
rc=$?
pattern="^erase-convert criteo: error: $dir/tb.h5: knows [0-9.]+% of these inputs' ids as frequent, [0-9.]+% of its own days' \\(below 0.5 of it\\): a vocabulary of another dataset\\? \\(--min-vocab-coverage 0 converts anyway\\)\$"
[ $rc = 1 ] && grep -qE "$pattern" "$dir/refused.out" && [ ! -e "$dir/other" ] &&
    apps/erase-convert criteo -q --vocab "$dir/tb.h5" --min-vocab-coverage 0 -o "$dir/other" "$dir/day1.tsv" >"$dir/other.out" 2>&1 &&
    [ -e "$dir/other/index.txt" ] &&
    expect 2 "erase-convert criteo: --min-vocab-coverage: only with --vocab VOCAB.h5" \
        apps/erase-convert criteo -q --min-vocab-coverage 0.3 -o "$dir/other2" "$dir/day1.tsv" && [ ! -e "$dir/other2" ]
tap $? "a vocabulary counted on another dataset: refused with the coverages named, status $rc, nothing written; --min-vocab-coverage 0 converts; without --vocab it is a usage error"
[ $rc = 1 ] || tap_report "$dir/refused.out"

expect 2 "erase-convert vocab: --threshold: bad value '0' (expected an integer >= 1)" \
    apps/erase-convert vocab --threshold 0 -o "$dir/t.h5" "$dir/day0.tsv" &&
    expect 2 "erase-convert vocab: no threshold (--threshold T)" apps/erase-convert vocab -o "$dir/t.h5" "$dir/day0.tsv" &&
    expect 1 "erase-convert vocab: $dir/v.h5: already exists; remove it or replace it (--force)" \
        apps/erase-convert vocab --threshold 2 -o "$dir/v.h5" "$dir/day0.tsv" &&
    mkfifo "$dir/v.fifo" &&
    expect 2 "erase-convert vocab: -o $dir/v.fifo: is a FIFO, expected a file name" \
        apps/erase-convert vocab --force --threshold 2 -o "$dir/v.fifo" "$dir/day0.tsv" && [ -p "$dir/v.fifo" ]
tap $? "usage errors (threshold < 1, none) exit 2; an existing vocabulary is not replaced without --force; a FIFO never"

# a bad line in the second file of 2 ranks: named, nothing written
{ head -n 20 "$dir/day0.tsv"; printf '1\t2\t3\n'; } >"$dir/short.tsv"
timeout -k 5 120 "$MPIRUN" $MPI_FLAGS -np 2 apps/erase-convert vocab --threshold 2 -o "$dir/none.h5" "$dir/day0.tsv" "$dir/short.tsv" \
    >"$dir/err.out" 2>&1
rc=$?
[ $rc != 0 ] &&
    grep -qxF "erase-convert vocab: error: $dir/short.tsv:21: expected 40 tab-separated fields (label, I1-I13, C1-C26), got 3" "$dir/err.out" &&
    grep -qxF "erase-convert vocab: no vocabulary written to $dir/none.h5" "$dir/err.out" &&
    [ ! -e "$dir/none.h5" ] && [ ! -e "$dir/none.h5.tmp" ]
tap $? "a 3-field line on rank 1's file: named by file and line, no vocabulary written (status $rc)"
[ $rc != 0 ] || tap_report "$dir/err.out"

apps/erase-inspect vocab "$dir/v.h5" >"$dir/iv.out" 2>&1 && apps/erase-inspect data "$dir/v.h5" | cmp -s - "$dir/iv.out" &&
    sed -n '/^vocabulary /,$p' "$dir/v.out" | cmp -s - "$dir/iv.out"
tap $? "erase-inspect vocab (and data) of the file: the summary erase-convert vocab printed"

# the output's directory: made (one level) as criteo and synth make theirs, or the same line they print
apps/erase-convert criteo -q -o "$dir/no/such/d" "$dir/day0.tsv" >"$dir/criteo-dir.out" 2>&1
want=$(grep -m1 "cannot create the directory" "$dir/criteo-dir.out" | sed 's/^erase-convert criteo: error: //')
expect 1 "erase-convert vocab: error: $dir/no/such: cannot create the directory: No such file or directory" \
    apps/erase-convert vocab -q --threshold 2 -o "$dir/no/such/v.h5" "$dir/day0.tsv" &&
    [ "$want" = "$dir/no/such/d: cannot create the directory: No such file or directory" ] &&
    ! grep -q '\.tmp\|HDF5\|errno' "$dir/err.out" && [ ! -e "$dir/no" ] &&
    apps/erase-convert vocab -q --threshold 3 -o "$dir/made/v.h5" "$dir/day0.tsv" "$dir/multihot.tsv" >/dev/null 2>&1 &&
    [ "$(apps/erase-inspect vocab "$dir/made/v.h5" | sed -n '1s/.*digest //p')" = "$(apps/erase-inspect vocab "$dir/v.h5" | sed -n '1s/.*digest //p')" ]
tap $? "-o in a directory whose parent is missing: criteo's line (no HDF5 internals, no .tmp name), status 1; a missing last directory is made"

