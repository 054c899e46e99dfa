#!/bin/sh
# The reader on multi-hot CTR rows under mpirun (2 ranks, issue 35): 3,000
# lines whose C1 holds 1..3 ids and C21 1..7 converted with erase-convert
# (erase-ctr-2), then tests/io/test-reader-mpi reads them for MLPerf's
# hotness (sparse [n, 214] padded, sparse_len) and rank 0 compares the
# gathered parts, bitwise, with a 1-rank reader (tests/io/reader-mpi.sh).
. "${srcdir:-.}/tests/io/reader-mpi.sh"
awk 'BEGIN {
    for (i = 1; i <= 3000; i++) {
        line = i % 4 == 0
        for (j = 1; j <= 13; j++) line = line "\t" (i * j) % 89
        for (c = 1; c <= 26; c++) {
            n = c == 1 ? 1 + i % 3 : c == 21 ? 1 + i % 7 : 1
            v = ""
            for (k = 0; k < n; k++) v = v (k ? "," : "") sprintf("%x", (i * 7919 + c * 104729 + k * 15485863) % 4294967295)
            line = line "\t" (c == 5 && i % 10 == 0 ? "" : v)
        }
        print line
    }
}' >"$dir/multi.tsv"
reader_mpi_convert apps/erase-convert criteo -q -o "$dir/data" --shard-rows 1000 --chunk-rows 250 "$dir/multi.tsv"
reader_mpi_run 2 ctr-mlperf "$dir/data" 3000 500 250
exit 0
