#!/bin/sh
# erase-convert criteo against pyarrow.csv.read_csv (issue 35): rows/s and
# MB/s per core on 1 and 2 cores, plain TSV and gzip, on a Criteo-format
# day made by repeating data/criteo/kaggle-train-first9999.tsv. erase
# parses, hashes nothing (Criteo's ids are already hashes: the hex value is
# the id), gathers statistics and writes deflate-compressed HDF5 shards;
# pyarrow parses the same 40 columns (label uint8, I1..I13 int32, C1..C26
# strings: it keeps the hex text) into memory and writes nothing. Both run
# pinned to the same cores (taskset), pyarrow with its CPU and I/O thread
# pools set to the core count, erase with one rank per core (mpirun). The
# gzip input is two files (two days of half the rows, gzip -6) so that two
# ranks have two units; pyarrow reads them one after the other, each with
# its threads. Repeats are interleaved (erase, pyarrow, erase, ...); each
# time is the wall time of the whole command (start-up included), shown as
# min/median/max, and its CPU time (user + system of all its processes and
# threads), which a machine shared with other jobs disturbs less; MB are
# of uncompressed text. erase-raw: erase with
# --no-compress (parsing and writing without deflate), on the plain day.
#
# Then, once: a bad line near the end of the plain day, converted on 2
# ranks with byte ranges, must be named with its line and byte.
#
#   bench/convert-vs-pyarrow.sh [ROWS] [REPEATS]     (default 4000000 3)
#
# Start-up is in every time (mpirun's about 0.2 CPU s a run, Python's
# import of pyarrow about 0.15 s): the default 4M rows (970 MB of text)
# make it a few percent of either tool's CPU time.
#
# Needs erase-convert on the PATH (else ./_build/apps is used) and a
# Python with pyarrow: $PYTHON (default /work/venv-bench/bin/python;
# python -m venv V && V/bin/pip install pyarrow). Writes in
# ${TMPDIR:-/tmp}/erase-convert-bench (about 4.6 GB at 4M rows; removed at exit).
set -eu
rows=${1:-4000000}
repeats=${2:-3}
PYTHON=${PYTHON:-/work/venv-bench/bin/python}
top=$(cd "$(dirname "$0")/.." && pwd)
command -v erase-convert >/dev/null || PATH=$top/_build/apps:$PATH
command -v erase-convert >/dev/null || { echo "no erase-convert: build first" >&2; exit 2; }
"$PYTHON" -c "import pyarrow" || { echo "no pyarrow in $PYTHON" >&2; exit 2; }
if [ "$(id -u)" = 0 ]; then
    OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
    export OMPI_ALLOW_RUN_AS_ROOT OMPI_ALLOW_RUN_AS_ROOT_CONFIRM
fi
work=${TMPDIR:-/tmp}/erase-convert-bench
mkdir -p "$work"
trap 'rm -rf "$work"' EXIT
sample=$top/data/criteo/kaggle-train-first9999.tsv

trap 'rm -rf "$work"' EXIT INT TERM
echo "# CPU: $(lscpu | sed -n 's/^Model name: *//p' | head -n 1), $(nproc) cores; load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "# $(erase-convert --version | head -n 1); pyarrow $("$PYTHON" -c 'import pyarrow; print(pyarrow.__version__)')"

# the day: the sample repeated to ROWS lines; the gzip days: its two halves
day=$work/day.tsv
while cat "$sample"; do :; done 2>/dev/null | head -n "$rows" >"$day"
half=$((rows / 2))
head -n "$half" "$day" | gzip -6 >"$work/day_0.gz"
tail -n +$((half + 1)) "$day" | gzip -6 >"$work/day_1.gz"
text_mb=$(wc -c <"$day" | awk '{print $1 / 1e6}')
echo "# day: $rows rows, $text_mb MB of text; gzip: $(cat "$work/day_0.gz" "$work/day_1.gz" | wc -c | awk '{print $1 / 1e6}') MB in 2 files"

cat >"$work/pa.py" <<'EOF'
import sys
import pyarrow as pa
import pyarrow.csv as csv
threads = int(sys.argv[1])
pa.set_cpu_count(threads)
pa.set_io_thread_count(threads)
names = ["label"] + [f"I{i}" for i in range(1, 14)] + [f"C{i}" for i in range(1, 27)]
types = {"label": pa.uint8()}
types.update({f"I{i}": pa.int32() for i in range(1, 14)})
types.update({f"C{i}": pa.string() for i in range(1, 27)})
n = 0
for path in sys.argv[2:]:  # a .gz path is read through its gzip stream
    t = csv.read_csv(path, read_options=csv.ReadOptions(column_names=names, use_threads=True),
                     parse_options=csv.ParseOptions(delimiter="\t", quote_char=False),
                     convert_options=csv.ConvertOptions(column_types=types))
    n += t.num_rows
print(n)
EOF

# run NAME CORES CMD...: time CMD pinned to the first CORES cores; appends
# "NAME wall-seconds cpu-seconds" (user + system, the command and its
# children: mpirun's ranks, pyarrow's threads) to $work/times
run() {
    name=$1 cores=$2; shift 2
    cpus=0
    [ "$cores" = 2 ] && cpus=0,1
    /usr/bin/time -f "%e %U %S" -o "$work/time" taskset -c "$cpus" "$@" >"$work/out" 2>"$work/err" ||
        { cat "$work/err" >&2; exit 1; }
    awk -v n="$name" '{print n, $1, $2 + $3}' "$work/time" >>"$work/times"
}
: >"$work/times"
split=$(($(wc -c <"$day") / 8 + 1)) # 8 ranges: a 2-rank run deals 4 to each
for r in $(seq "$repeats"); do
    for cores in 1 2; do
        run "erase-plain-$cores" $cores mpirun --bind-to none -np $cores erase-convert criteo -q --force \
            --split-bytes $split -o "$work/out-plain" "$day"
        run "pyarrow-plain-$cores" $cores "$PYTHON" "$work/pa.py" $cores "$day"
        run "erase-raw-plain-$cores" $cores mpirun --bind-to none -np $cores erase-convert criteo -q --force \
            --no-compress --split-bytes $split -o "$work/out-plain" "$day"
        run "erase-gzip-$cores" $cores mpirun --bind-to none -np $cores erase-convert criteo -q --force \
            -o "$work/out-gzip" "$work/day_0.gz" "$work/day_1.gz"
        run "pyarrow-gzip-$cores" $cores "$PYTHON" "$work/pa.py" $cores "$work/day_0.gz" "$work/day_1.gz"
    done
done

# table COLUMN WHAT: min/median/max of the times in COLUMN (2: wall, 3: CPU),
# rows/s and MB/s per core of the median (wall: rows / time / cores; CPU:
# rows / CPU seconds), and pyarrow's median / erase's
table() {
    echo
    echo "$2"
    echo "input  cores  tool       seconds min/median/max   rows/s per core  MB/s per core  pyarrow/erase (time)"
    for input in plain gzip; do
        for cores in 1 2; do
            for tool in erase erase-raw pyarrow; do
                [ $tool = erase-raw ] && [ $input = gzip ] && continue
                awk -v n="$tool-$input-$cores" -v c="$1" '$1 == n {print $c}' "$work/times" | sort -g >"$work/t"
                k=$(wc -l <"$work/t")
                min=$(head -n 1 "$work/t") max=$(tail -n 1 "$work/t") med=$(sed -n "$(((k + 1) / 2))p" "$work/t")
                eval "med_$(echo $tool | tr - _)=$med"
                per=$cores
                [ "$1" = 3 ] && per=1
                printf "%-6s %5s  %-9s %6.2f / %6.2f / %6.2f %16.0f %14.1f" "$input" "$cores" "$tool" "$min" "$med" "$max" \
                    "$(echo "$rows / $med / $per" | bc -l)" "$(echo "$text_mb / $med / $per" | bc -l)"
                [ "$tool" = pyarrow ] && printf "  %6.2f" "$(echo "$med_pyarrow / $med_erase" | bc -l)"
                [ "$tool" = pyarrow ] && [ $input = plain ] &&
                    printf " (--no-compress: %.2f)" "$(echo "$med_pyarrow / $med_erase_raw" | bc -l)"
                echo
            done
        done
    done
}
table 2 "# wall time (on a machine shared with other jobs: see the load above)"
table 3 "# CPU time (user + system), rows/s per CPU second"
awk '{print "# run:", $0}' "$work/times"

# a bad line near the end of the day, found by the rank that reads that range
bad=$((rows - 10))
sed "${bad}s/\t/\t\t/" "$day" >"$work/bad.tsv"
byte=$(head -n $((bad - 1)) "$work/bad.tsv" | wc -c)
echo
echo "# a line of 41 fields at line $bad (byte $byte) of $work/bad.tsv, 2 ranks, ranges of $split bytes:"
set +e
mpirun --bind-to none -np 2 erase-convert criteo -q -o "$work/out-bad" --split-bytes $split "$work/bad.tsv" \
    2>&1 | grep '^erase-convert'
echo "# published: $(ls "$work/out-bad" 2>/dev/null | wc -l) files"
