#!/bin/sh
# The reader on CTR rows under mpirun (3 ranks): converts the Kaggle sample
# with erase-convert, then runs tests/io/test-reader-mpi, whose rank 0
# compares the gathered rank parts with a 1-rank reader (tests/io/reader-mpi.sh).
. "${srcdir:-.}/tests/io/reader-mpi.sh"
reader_mpi_convert apps/erase-convert criteo -q -o "$dir/data" --shard-rows 3000 --chunk-rows 500 \
    "$srcdir/data/criteo/kaggle-train-first9999.tsv"
reader_mpi_run 3 ctr "$dir/data" 9999 1000 500
exit 0
